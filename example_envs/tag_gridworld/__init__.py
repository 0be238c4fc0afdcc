"""Tag (grid world): taggers chase one runner on an integer grid (TagGridWorld, TagGridWorldWithResetPool;
2.7.1's names CUDATagGridWorld and CUDATagGridWorldWithResetPool are the same classes)."""
