"""``nn.functional.bilinear``: ``x1^T A x2 + b`` for each output feature, composed as ATen's
``bilinear`` (one ``einsum``-like product through ``matmul``), so its node is PyTorch's.
"""
from __future__ import annotations

from .. import _dtype as dtypes, ops
from .._dtype import c_name
from ..tensor import Tensor
from ..ops._names import export as _export


# ------------------------------------------------------------------ bilinear
@_export
def bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``y[..., o] = sum_ij input1[..., i] weight[o, i, j] input2[..., j] + bias[o]``, in the
    inputs' dtype (which must be one), as ATen's ``_trilinear``: an integer result wraps as
    PyTorch's integer products do (the same modulo 2**bits whatever width they are summed in)."""
    named = (("input1", input1), ("input2", input2), ("weight", weight)) + (
        (("bias", bias),) if bias is not None else ())
    if any(t.dtype != input1.dtype for _, t in named):
        raise RuntimeError("All tensors must have the same dtype, got " + ", ".join(
            f"{n}: {c_name(t._data.dtype)}" for n, t in named))
    if input1.dim() != input2.dim():
        raise RuntimeError(
            f"bilinear(): input dimensions do not match: got {input1.dim()} and {input2.dim()}")
    for i in range(input1.dim() - 1):
        if input1.shape[i] != input2.shape[i]:
            raise RuntimeError(
                "bilinear(): input batch dimensions do not match: got "
                f"{input1.shape[i]} and {input2.shape[i]}")
    if input1.shape[-1] != weight.shape[1]:
        raise RuntimeError(
            f"bilinear(): input1 size does not match weight size: got {input1.shape[-1]} but "
            f"expected {weight.shape[1]}")
    if input2.shape[-1] != weight.shape[2]:
        raise RuntimeError(
            f"bilinear(): input2 size does not match weight size: got {input2.shape[-1]} but "
            f"expected {weight.shape[2]}")
    if bias is not None and bias.shape[0] != weight.shape[0]:
        raise RuntimeError(
            f"bilinear(): bias size does not match weight size: got {bias.shape[0]} but "
            f"expected {weight.shape[0]}")
    if input1.dtype == dtypes.bool_:
        raise NotImplementedError("\"bmm\" not implemented for 'Bool'")
    lead = tuple(input1.shape[:-1])
    x1 = input1.reshape(-1, input1.shape[-1])
    x2 = input2.reshape(-1, input2.shape[-1])
    # (x1 W_o) . x2 for each output o: one matrix product, then a product summed
    o, i, j = weight.shape
    t = ops.matmul(x1, weight.permute(1, 0, 2).reshape(i, o * j)).reshape(-1, o, j)
    prod = t * x2.unsqueeze(1)
    integral = not (prod.is_floating_point() or prod.is_complex())
    # (an integer sum is int64: summed in the inputs' dtype instead, as PyTorch's bmm sums)
    out = (prod.sum(-1, dtype=prod.dtype) if integral else prod.sum(-1)).reshape(lead + (o,))
    return out if bias is None else out + bias
