"""2.7.1 compatibility path: ``DataFeed`` (:mod:`warp_drive.vocab.data_feed`)."""

from warp_drive.vocab.data_feed import DataFeed

__all__ = ["DataFeed"]
