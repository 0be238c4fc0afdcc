"""Utilities: constants, DataFeed, env context and registry, Philox, device helpers."""
