"""Data and function managers, and the services built on them (sampler, reset, logging)."""
