"""2.7.1 compatibility path: ``warp_drive.training.trainers`` (its trainer package; the trainer is
:class:`warp_drive.training.trainer.Trainer`)."""
