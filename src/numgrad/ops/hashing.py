"""``torch.hash_tensor``: the exclusive or (``mode=0``, the only one) of the elements' 64-bit
patterns over the reduced dimensions, each element first widened to its 64-bit float or integer
equivalent (float32 to float64, int32 and bool to int64), as PyTorch's. Not differentiable.

PyTorch's result is uint64, a dtype numgrad does not have yet: the result is those 64 bits as
int64 until it does (``result.view(torch.int64)`` is the same on both).
"""
from __future__ import annotations

import builtins

from ..tensor import Tensor
from ._names import export
from .predicates import _dims_listed
from .reduction import _torch_name
from .registry import Op, Sample, apply, kernels_for, register
import numgrad


@register
class HashTensor(Op):
    name, node = "hash_tensor", ""
    differentiable = False
    samples = (
        Sample(lambda m, x: m.hash_tensor(x).view(m.int64), ((3, 4),), grad=False),
        Sample(lambda m, x: m.hash_tensor(x.mT, (0,), keepdim=True).view(m.int64), ((2, 3, 4),),
               grad=False),
        Sample(lambda m, x: m.hash_tensor((x * 10).long(), dim=-1).view(m.int64), ((3, 5),),
               grad=False),
    )

    @staticmethod
    def forward(K, x, *, dims, keepdim):
        out = K.xor_rows(x, dims, keepdim)  # (the 64 bits, as int64)

        uint64 = getattr(numgrad, "uint64", None)
        return out if uint64 is None else out.view(uint64.np)


@export(method=True)
def hash_tensor(input: Tensor, dim=(), *, keepdim: bool = False, mode: int = 0) -> Tensor:
    """The exclusive or of the elements' 64-bit patterns over ``dim`` (all dimensions when
    ``()`` or None)."""
    if mode != 0:
        raise RuntimeError(f"Unknown hash_tensor mode: {mode}")
    x = input._data
    if x.dtype.kind == "c":
        raise NotImplementedError(f"\"xor_sum_cpu\" not implemented for '{_torch_name(x.dtype)}'")
    listed = dim is not None and not (isinstance(dim, (tuple, list)) and len(dim) == 0)
    dims = _dims_listed(dim if listed else None, x.ndim)
    if not listed and x.size == 0:
        raise RuntimeError("hash_tensor: Expected reduction dim to be specified for "
                           "input.numel() == 0. Specify the reduction dim with the 'dim' "
                           "argument.")
    for d in dims:
        if x.shape[d] == 0:
            raise IndexError(f"hash_tensor: Expected reduction dim {d} to have non-zero size.")
    kernels_for((input,), HashTensor)  # (CPU only: PyTorch's error for CUDA tensors)
    return apply(HashTensor, (input,), (x,), dims=dims, keepdim=builtins.bool(keepdim))
