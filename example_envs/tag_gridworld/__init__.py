"""Tag (grid world): taggers chase one runner on an integer grid (TagGridWorld, TagGridWorldWithResetPool)."""
