"""The env vocabulary: the words that envs, managers, services and configs share, with nothing of the
managers below them.

- :class:`~warp_drive.vocab.constants.Constants`: the reserved data names;
- :class:`~warp_drive.vocab.data_feed.DataFeed`: the named arrays an env gives the data manager;
- ``backends.py``: the backend names; ``schema.py``: :class:`~warp_drive.vocab.schema.ArraySpec`;
- :func:`~warp_drive.vocab.done.split_done`; ``start_state.py``: the start-state stream's keys;
- :class:`~warp_drive.vocab.registrar.EnvironmentRegistrar`: envs by name.

Env authors import these from :mod:`warp_drive.env`, which re-exports them. Importing this package imports
none of its modules.
"""
