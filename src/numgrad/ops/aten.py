"""ATen operators that PyTorch exposes only as ``torch.ops.aten.*`` (numgrad: ``numgrad.ops.*``):
``slice``, ``_softmax_backward_data``, ``_safe_softmax`` and ``native_dropout_backward``; and
the private ``torch._*`` ones (``_unsafe_masked_index``, ``_unsafe_masked_index_put_accumulate``,
``_chunk_cat``). Composed of numgrad's ops, so they are differentiable, twice."""
from __future__ import annotations

from ..tensor import Tensor
from ._names import export
from .elementwise import where
from .reduction import softmax
from .indexing import index_put
from .shape import cat
from .. import ops


@export(aten=True)
def slice(input: Tensor, dim: int = 0, start=None, end=None, step: int = 1) -> Tensor:  # noqa: A001
    """``input[start:end:step]`` along ``dim`` (a view)."""
    if step <= 0:
        raise RuntimeError("slice step must be positive")
    d = dim + input.ndim if dim < 0 else dim
    return input[(builtins_slice(None),) * d + (builtins_slice(start, end, step),)]


@export(aten=True)
def _softmax_backward_data(grad_output: Tensor, output: Tensor, dim: int, input_dtype) -> Tensor:
    """The gradient of ``softmax`` from its output: ``output * (grad - sum(grad * output))``."""
    g = output * (grad_output - (grad_output * output).sum(dim, keepdim=True))
    return g if g.dtype == input_dtype else g.to(input_dtype)


@export(aten=True)
def _safe_softmax(input: Tensor, dim: int, dtype=None) -> Tensor:
    """``softmax``, 0 (not NaN) where every element along ``dim`` is -inf."""
    masked = (input.detach() == float("-inf")).all(dim, keepdim=True)
    out = softmax(where(masked, 0.0, input), dim, dtype=dtype)
    return where(masked, 0.0, out)


@export(aten=True)
def native_dropout_backward(grad_output: Tensor, mask: Tensor, scale: float) -> Tensor:
    """The gradient of dropout: ``grad * mask * scale``."""
    return grad_output * mask.to(grad_output.dtype) * scale


def _clamped(input: Tensor, indices) -> tuple:
    """Index tensors clamped into their dimensions (positions that a mask hides may be out of
    range)."""
    return tuple(None if i is None else i.clamp(-input.shape[d], input.shape[d] - 1)
                 for d, i in enumerate(indices))


@export
def _unsafe_masked_index(input: Tensor, mask: Tensor, indices, fill) -> Tensor:
    """``input[indices]`` where ``mask``, ``fill`` elsewhere."""
    return where(mask, input[_clamped(input, indices)], fill)


@export
def _unsafe_masked_index_put_accumulate(input: Tensor, mask: Tensor, indices,
                                        values: Tensor) -> Tensor:
    """``input`` with ``values`` added at ``indices`` where ``mask``."""
    return index_put(input, _clamped(input, indices), where(mask, values, values.new_zeros(())),
                     True)


@export
def _chunk_cat(tensors, dim: int, num_chunks: int) -> Tensor:
    """Each tensor split along ``dim`` into ``num_chunks`` chunks (zero-padded to equal size),
    flattened after ``dim``; the ``i``-th chunks of all concatenated: ``(*lead, num_chunks, ...)``."""
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError("_chunk_cat expects a non-empty input tensor list")
    if num_chunks < 1:
        raise RuntimeError("_chunk_cat expects positive num_chunks")
    if any(t.numel() == 0 for t in tensors):
        raise RuntimeError("_chunk_cat expects non-empty tensor")
    ndims = {t.ndim for t in tensors}
    if dim < 0:
        if len(ndims) > 1:
            raise RuntimeError("_chunk_cat expects non-negative dim when input tensors have "
                               "different ndims")
        dim += tensors[0].ndim
    if any(dim >= t.ndim for t in tensors):
        raise RuntimeError("_chunk_cat expects dim < ndim for all input tensors")
    lead = tuple(tensors[0].shape[:dim])
    if any(tuple(t.shape[:dim]) != lead for t in tensors):
        raise RuntimeError("_chunk_cat expects same sizes of 0,...,dim-1 dimensions for all "
                           "tensors")
    parts = []
    for t in tensors:
        size = t.shape[dim]
        chunk = -(-size // num_chunks)
        if chunk * num_chunks != size:
            pad = t.new_zeros((*lead, chunk * num_chunks - size, *t.shape[dim + 1:]))
            t = cat([t, pad], dim)
        parts.append(t.reshape(*lead, num_chunks, -1))
    return cat(parts, dim + 1)


builtins_slice = __builtins__["slice"] if isinstance(__builtins__, dict) else __builtins__.slice


class _Overloads:
    """``torch.ops.aten.<name>``: callable, with its ``.default`` overload (the same function)."""

    def __init__(self, fn):
        self.default = fn
        self.__name__ = getattr(fn, "__name__", "op")

    def __call__(self, *args, **kwargs):
        return self.default(*args, **kwargs)


def __getattr__(name: str):
    """``numgrad.ops.aten.<name>`` for the ATen operators numgrad has (``numgrad.ops.<name>``),
    as ``torch.ops.aten.<name>`` (``.default`` included)."""
    fn = getattr(ops, name, None)
    if name.startswith("__") or fn is None or not callable(fn):
        raise AttributeError(f"module 'numgrad.ops.aten' has no attribute '{name}'")
    return _Overloads(fn)


for _fn in (slice, _softmax_backward_data, _safe_softmax, native_dropout_backward):
    _fn.default = _fn  # (torch.ops.aten.<name>.default)
