"""``embedding_bag``: the sum, mean or max of each bag of ``weight``'s rows picked by indices,
bags given by the rows of a 2-D input or by ``offsets`` into a 1-D one; entries equal to
``padding_idx`` left out (of the count too), empty bags zero.

On the CPU it is one op, ``ops/embedding_bag.py`` (one node, ``EmbeddingBagBackward0``, as
PyTorch's); on CUDA and under vmap it is still composed of ``embedding`` (its ``max_norm`` renormalisation and
``scale_grad_by_freq``), ``index_add`` and ``scatter_reduce``, whose gradient is PyTorch's too.
"""
from __future__ import annotations

import sys

from ..ops import embedding_bag as _op
from ..tensor import Tensor
import numgrad
from ..ops._names import export as _export


def _ng():
    return numgrad


def _type_name(t: Tensor) -> str:
    """PyTorch's legacy type name of ``t`` (``torch.FloatTensor``), as its argument checks say."""
    return "torch." + t.type().split(".", 1)[1]


@_export
def embedding_bag(input: Tensor, weight: Tensor, offsets=None, max_norm=None,
                  norm_type: float = 2, scale_grad_by_freq: bool = False, mode: str = "mean",
                  sparse: bool = False, per_sample_weights=None,
                  include_last_offset: bool = False, padding_idx=None) -> Tensor:
    """``(bags, embedding_dim)``: each bag's rows of ``weight`` reduced by ``mode``."""
    embedding = numgrad.nn.functional.embedding
    ng = _ng()
    if weight.ndim != 2:
        raise ValueError(f"weight has to be a 2D Tensor, but got Tensor of dimension "
                         f"{weight.ndim}")
    if input.ndim == 2:
        if offsets is not None:
            kind = "<class 'torch.Tensor'>" if isinstance(offsets, Tensor) else type(offsets)
            raise ValueError("if input is 2D, then offsets has to be None, as input is treated "
                             "is a mini-batch of fixed length sequences. However, found offsets "
                             f"of type {kind}")
        bags, length = input.shape
        seg = ng.arange(bags, device=input.device).repeat_interleave(length)
        idx = input.reshape(-1)
    elif input.ndim == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if offsets.ndim != 1:
            raise ValueError("offsets has to be a 1D Tensor")
        idx = input
        bags = offsets.shape[0] - (1 if include_last_offset else 0)
        positions = ng.arange(idx.shape[0], device=input.device)
        seg = ng.searchsorted(offsets[:bags].contiguous(), positions, right=True) - 1
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension "
                         f"{input.ndim}")
    if mode not in ("sum", "mean", "max"):
        raise ValueError("mode has to be one of sum, mean or max")
    if per_sample_weights is not None:
        if mode != "sum":
            raise NotImplementedError(
                "embedding_bag: per_sample_weights was not None. per_sample_weights is only "
                f"supported for mode='sum' (got mode='{mode}'). Please open a feature request on "
                "GitHub.")
        if tuple(per_sample_weights.shape) != tuple(input.shape):
            raise ValueError(f"embedding_bag: If per_sample_weights ({per_sample_weights.shape}) "
                             f"is not None, then it must have the same shape as the input "
                             f"({input.shape})")
    n = weight.shape[0]
    for t, k, what in ((input, 1, "indices"), (offsets, 1, "indices")):  # (PyTorch's, both)
        if isinstance(t, Tensor) and t.dtype not in (ng.int64, ng.int32):
            raise RuntimeError(f"Expected tensor for argument #{k} '{what}' to have one of the "
                               "following scalar types: Long, Int; but got "
                               f"{_type_name(t)} instead (while checking arguments for "
                               "embedding_bag)")
    if weight.dtype not in (ng.float16, ng.bfloat16, ng.float32, ng.float64):
        name = ("CUDABoolType" if weight.is_cuda else "CPUBoolType") if weight.dtype == ng.bool \
            else _type_name(weight)  # (PyTorch's own quirk for bool)
        raise RuntimeError("Expected tensor for argument #1 'weight' to have one of the following "
                           f"scalar types: Half, BFloat16, Float, Double; but got {name} instead "
                           "(while checking arguments for embedding_bag)")
    if per_sample_weights is not None and per_sample_weights.dtype != weight.dtype:
        raise RuntimeError("Expected tensor for argument #1 'weight' to have the same type as "
                           "tensor for argument #1 'per_sample_weights'; but type "
                           f"{_type_name(weight)} does not equal {_type_name(per_sample_weights)}"
                           " (while checking arguments for embedding_bag)")
    if idx.numel():
        bad = ((idx < 0) | (idx >= n)).detach()
        if bool(bad.any()):
            k = int(bad.nonzero()[0, 0])
            raise RuntimeError(f"Index {k} of input takes value {int(idx[k])} which is not in the "
                               f"valid range [0, {n})")
    if padding_idx is not None and padding_idx < 0:
        padding_idx += n
    vmap = sys.modules.get("numgrad.func._vmap")
    if not (weight.is_cuda or input.is_cuda or vmap is not None and vmap._levels):
        # (one op, one node: PyTorch's; under vmap its ops, whose batching rules merge the
        # examples, as ``lstm_layer``'s)
        if max_norm is not None:
            numgrad.nn.functional._embedding_renorm_(weight, idx, max_norm, norm_type)
        return _op.embedding_bag(weight, input, offsets if input.ndim == 1 else None, bags, mode,
                                 per_sample_weights, -1 if padding_idx is None else padding_idx,
                                 include_last_offset, scale_grad_by_freq, sparse)
    # (no padding_idx for embedding: ``keep`` leaves those entries out, value and gradient, and
    # embedding's batching rule has none for a padding row of a batched weight)
    rows = embedding(idx, weight, max_norm=max_norm, norm_type=norm_type,
                     scale_grad_by_freq=scale_grad_by_freq)
    keep = (idx != padding_idx) if padding_idx is not None else ng.ones_like(idx, dtype=ng.bool)
    keep = keep & (seg >= 0)
    seg = seg.clamp(0, max(bags - 1, 0))
    if per_sample_weights is not None:
        rows = rows * per_sample_weights.reshape(-1, 1).to(rows.dtype)
    dim = weight.shape[1]
    zeros = weight.new_zeros((bags, dim))
    if mode == "max":
        lowest = ng.where(keep.unsqueeze(1), rows, -float("inf"))
        out = zeros.scatter_reduce(0, seg.unsqueeze(1).expand(-1, dim), lowest, "amax",
                                   include_self=False)
        return ng.where(out == -float("inf"), 0.0, out)
    total = zeros.index_add(0, seg, ng.where(keep.unsqueeze(1), rows, 0.0))
    if mode == "sum":
        return total
    count = ng.zeros(bags, dtype=weight.dtype, device=weight.device).index_add(
        0, seg, keep.to(weight.dtype))
    return total / count.clamp_min(1).unsqueeze(1)
