"""DummyEnv: the smallest dual-mode env, for tutorials and framework tests."""
