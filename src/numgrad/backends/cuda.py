"""``numgrad.backends.cuda``: PyTorch's CUDA switches (``matmul.allow_tf32`` ...). numgrad's CUDA
matmuls compute in the tensors' dtype, with no TF32 or reduced-precision reductions: the flags
hold what programs set and change nothing."""
from __future__ import annotations

from .. import cuda


class _Matmul:
    """``backends.cuda.matmul``: its flags, kept as set."""

    def __init__(self):
        self.allow_tf32 = False
        self.allow_fp16_reduced_precision_reduction = True
        self.allow_bf16_reduced_precision_reduction = True


matmul = _Matmul()


def is_built() -> bool:
    """Whether numgrad can use CUDA here (numba-cuda installed and a GPU, or its simulator)."""
    return cuda.is_available()
