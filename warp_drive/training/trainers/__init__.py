"""2.7.1 compatibility path: ``warp_drive.training.trainers`` (its trainer package; the trainer is
:class:`warp_drive.training.run.trainer271.Trainer271`)."""
