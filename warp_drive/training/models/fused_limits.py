"""The limits of the fused MLP kernels, read by the kernels' modules (which import Triton) and by
:mod:`~warp_drive.training.models.fused_mlp` (which decides, without Triton, whether a model fits them)."""

#: heads one launch takes (each head's softmax is one masked pass over the logits tile)
MAX_HEADS = 4
#: widest hidden layer taken (the backward unrolls one column chunk per 32 units) and widest logits tile
#: (heads + value, one tile of registers)
MAX_WIDTH = 256
MAX_OUTPUTS = 128
