"""MPE simple_speaker_listener_v4: MpeSimpleSpeakerListenerEnv."""
