"""ATen operators that PyTorch exposes only as ``torch.ops.aten.*`` (numgrad: ``numgrad.ops.*``):
``slice``, ``_softmax_backward_data``, ``_safe_softmax`` and ``native_dropout_backward``,
composed of numgrad's ops (so they are differentiable, twice)."""
from __future__ import annotations

from ..tensor import Tensor


def slice(input: Tensor, dim: int = 0, start=None, end=None, step: int = 1) -> Tensor:  # noqa: A001
    """``input[start:end:step]`` along ``dim`` (a view)."""
    if step <= 0:
        raise RuntimeError("slice step must be positive")
    d = dim + input.ndim if dim < 0 else dim
    return input[(builtins_slice(None),) * d + (builtins_slice(start, end, step),)]


def _softmax_backward_data(grad_output: Tensor, output: Tensor, dim: int, input_dtype) -> Tensor:
    """The gradient of ``softmax`` from its output: ``output * (grad - sum(grad * output))``."""
    g = output * (grad_output - (grad_output * output).sum(dim, keepdim=True))
    return g if g.dtype == input_dtype else g.to(input_dtype)


def _safe_softmax(input: Tensor, dim: int, dtype=None) -> Tensor:
    """``softmax``, 0 (not NaN) where every element along ``dim`` is -inf."""
    from .elementwise import where
    from .reduction import softmax

    masked = (input.detach() == float("-inf")).all(dim, keepdim=True)
    out = softmax(where(masked, 0.0, input), dim, dtype=dtype)
    return where(masked, 0.0, out)


def native_dropout_backward(grad_output: Tensor, mask: Tensor, scale: float) -> Tensor:
    """The gradient of dropout: ``grad * mask * scale``."""
    return grad_output * mask.to(grad_output.dtype) * scale


builtins_slice = __builtins__["slice"] if isinstance(__builtins__, dict) else __builtins__.slice
