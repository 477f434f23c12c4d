"""``nn.functional.bilinear``: ``x1^T A x2 + b`` for each output feature, composed as ATen's
``bilinear`` (one ``einsum``-like product through ``matmul``), so its node is PyTorch's.
"""
from __future__ import annotations

from .. import ops
from ..tensor import Tensor
from ..ops._names import export as _export


# ------------------------------------------------------------------ bilinear
@_export
def bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``y[..., o] = sum_ij input1[..., i] weight[o, i, j] input2[..., j] + bias[o]``."""
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
    lead = tuple(input1.shape[:-1])
    x1 = input1.reshape(-1, input1.shape[-1])
    x2 = input2.reshape(-1, input2.shape[-1])
    # (x1 W_o) . x2 for each output o: one matrix product, then a product summed
    o, i, j = weight.shape
    t = ops.matmul(x1, weight.permute(1, 0, 2).reshape(i, o * j)).reshape(-1, o, j)
    out = (t * x2.unsqueeze(1)).sum(-1).reshape(lead + (o,))
    return out if bias is None else out + bias
