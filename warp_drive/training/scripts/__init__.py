"""2.7.1 compatibility path: ``warp_drive.training.scripts`` (its example training scripts)."""
