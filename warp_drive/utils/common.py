"""2.7.1 compatibility path: ``get_project_root`` (see :func:`warp_drive.cuda.project_root`)."""

from warp_drive.cuda import project_root

get_project_root = project_root

__all__ = ["get_project_root"]
