"""Tag (continuous): taggers chase runners on a square (TagContinuous)."""
