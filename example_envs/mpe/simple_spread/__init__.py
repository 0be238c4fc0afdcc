"""MPE simple_spread_v3 (cooperative navigation): MpeSimpleSpreadEnv."""
