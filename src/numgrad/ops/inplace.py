"""In-place ops (``add_``, ``mul_``, ``+=`` …), guarded by version counters.

An in-place op computes its out-of-place twin, writes the result into the tensor's own storage,
bumps the version counter shared by the tensor and its views, and makes the twin's node the
tensor's ``grad_fn`` (so gradients flow through the old history). A node that saved the tensor
before the write sees the new version and refuses to run backward.
"""
from __future__ import annotations

import numpy as np

from .._dtype import FLOAT, bool_, from_numpy_dtype, torch_name
from ..autograd import grad_mode
from ..creation import check_scalar, zeros_like
from ..tensor import Tensor
from . import division, elementwise, exponents_and_rounding, logical_bitwise, registry
from . import special_functions, ternary, trigonometric
from . import _names
from ._names import alias, export
from ._promote import broadcast_shapes, number_as
from . import _jvp
from .registry import REGISTRY, Op, Sample, apply, kernels_for, kernels_of, register
from typing import TYPE_CHECKING
from ..creation import arange, full
from .indexing import write_view
from . import _OVERLAP

if TYPE_CHECKING:
    from .._typing import InplaceBinaryOp, Number, UnaryOp

_PARTIAL_OVERLAP = (
    "unsupported operation: some elements of the input tensor and the written-to tensor refer to "
    "a single memory location. Please clone() the tensor before performing the operation."
)
_LEAF = "a leaf Variable that requires grad is being used in an in-place operation."
_VIEW_OF_LEAF = (
    "a view of a leaf Variable that requires grad is being used in an in-place operation."
)


def _dense(a) -> bool:
    """Whether ``a``'s elements fill a span of memory once each, in some order of its dimensions
    (PyTorch's ``is_non_overlapping_and_dense``)."""
    expected = a.itemsize
    dims = sorted((abs(st), n) for n, st in zip(a.shape, a.strides) if n != 1)
    for stride, n in dims:
        if stride != expected:
            return False
        expected *= n
    return True


def _check_partial_overlap(t: Tensor, other) -> None:
    """PyTorch's refusal of an in-place op whose input shares only part of the written tensor's
    memory (``a[1:].add_(a[:-1])``): the result would depend on the order of the writes. As
    ``at::assert_no_partial_overlap``: the same memory with the same strides is allowed
    (``a.add_(a)``), and views that are not dense (``a[::2]``) are not judged."""
    if not isinstance(other, Tensor):
        return
    a, b = t._data, other._data
    if a is b or not a.size or not b.size:
        return
    K = kernels_of(a)
    if type(b) is not type(a) or not K.may_share_memory(a, b) or not _dense(a) or not _dense(b):
        return
    a0, b0 = _span(K, a), _span(K, b)
    if a0 == b0:
        if a.strides == b.strides:
            return  # (the same elements: as ``a.add_(a)``)
        raise RuntimeError(_PARTIAL_OVERLAP)
    if a0[0] < b0[1] and b0[0] < a0[1]:
        raise RuntimeError(_PARTIAL_OVERLAP)


def _span(K, a) -> tuple:
    """(first, last + 1) byte addresses of a dense array's elements."""
    low = K.address(a) + sum(st * (n - 1) for n, st in zip(a.shape, a.strides) if st < 0)
    return low, low + a.size * a.itemsize


def _requires_grad(x) -> bool:
    return isinstance(x, Tensor) and x._requires_grad


def _check_leaf(t: Tensor) -> None:
    if not grad_mode.state.enabled:
        return
    if t._requires_grad and t.grad_fn is None:
        raise RuntimeError(_LEAF if t._base is None else _VIEW_OF_LEAF)
    base = t._base
    if base is not None:
        if t._requires_grad:
            registry.check_multi_view(t)
        if base._requires_grad and base.grad_fn is None:
            raise RuntimeError(_VIEW_OF_LEAF)


def _write(t: Tensor, fn, *args, saves_self: bool = True, **kwargs) -> Tensor:
    """Runs ``fn(t, *args)`` out of place and stores the result in ``t``, autograd state included.
    Recorded, ``fn`` gets a snapshot of ``t`` (its own data, ``t``'s history) where its backward
    keeps its input (``saves_self``: ``sin_`` keeps it, ``relu_`` keeps its output, ``add_``
    nothing), else ``t`` itself: as PyTorch, what the backward needs is saved and nothing else.

    Recorded on a view (``t._base`` set), the write goes through the base, as PyTorch's
    CopySlices: the base's history becomes a node routing the gradient of the view's elements
    through ``fn``'s backward and the rest straight through, and the view (every view of the
    base) gets a history read off the base's new one on next use (``indexing.regenerate_view``).
    """
    _check_leaf(t)
    for a in args:
        _check_partial_overlap(t, a)
    tracked = grad_mode.state.enabled and (
        t._requires_grad or any(isinstance(a, Tensor) and a._requires_grad for a in args)
        or (t._base is not None and t._base._requires_grad)
    )
    if tracked and t._base is not None:
        registry.check_multi_view(t)
    source = t
    if tracked and saves_self:
        # The formula saves the old value: give it a snapshot with its own data and history.
        source = Tensor._wrap(kernels_of(t._data).copy(t._data), t._requires_grad)
        source.grad_fn = t.grad_fn
    if registry._forward_ad is not None and source is not t:  # (forward AD: and t's tangents)
        from ..autograd.forward_ad import copy_tangents
        copy_tangents(t, source)
    result = fn(source, *args, **kwargs)
    if registry._forward_ad is not None:  # (and t has the result's, as PyTorch's in-place ops)
        from ..autograd.forward_ad import copy_tangents
        copy_tangents(result, t)
    if tracked and t._base is not None:
        _check_store(t, result._data)
        if result._data.shape != t._data.shape:
            result = result.expand(t._data.shape)
        if result._data.dtype != t._data.dtype:
            result = result.to(t.dtype)

        write_view(t, None, result)
        t._version_counter.value += 1
        t.grad_fn  # noqa: B018 (the view's history, regenerated now: it requires grad from here)
        return t
    _store(t, result._data)
    if tracked:
        t.grad_fn = result.grad_fn
        t._requires_grad = result._requires_grad
    return t


def _store(t: Tensor, data) -> None:
    _check_store(t, data)
    K = kernels_of(t._data)
    K.assign(t._data, data)
    t._version_counter.value += 1


def _check_store(t: Tensor, data) -> None:
    """PyTorch's errors for a result that cannot be written into ``t``."""
    if from_numpy_dtype(data.dtype)._category > t.dtype._category:
        raise RuntimeError(
            f"result type {_type_name(data.dtype)} can't be cast to the desired output type "
            f"{_type_name(t._data.dtype)}"
        )
    if data.shape != t._data.shape and np.broadcast_shapes(data.shape, t._data.shape) != t._data.shape:
        raise RuntimeError(
            f"output with shape {list(t._data.shape)} doesn't match the broadcast shape "
            f"{list(np.broadcast_shapes(data.shape, t._data.shape))}"
        )
    if not kernels_of(t._data).is_writeable(t._data):
        raise RuntimeError(_OVERLAP)


def _type_name(np_dtype) -> str:
    return torch_name(np_dtype)


def _untracked_arithmetic(code: str, t: Tensor, other, alpha=1) -> bool:
    """``t = t ⊕ alpha * other`` straight into ``t``'s storage, one pass and no copies, where
    nothing is recorded and no dtype or shape check can fail (what optimisers do under no_grad).
    Returns False where the general path must run instead."""
    if grad_mode.state.enabled and (
        t._requires_grad or (isinstance(other, Tensor) and other._requires_grad)
        or t._base is not None and t._base._requires_grad  # (recorded through the base)
    ) or registry._forward_ad is not None:  # (forward AD: the general path carries tangents)
        return False
    data = t._data
    host = isinstance(data, np.ndarray)
    if host:
        if data.dtype.kind != "f" or not data.flags.c_contiguous or not data.flags.writeable \
                or data.dtype.itemsize == 2:  # (float16: computed widened, the general path)
            return False
        K = kernels_of(data)
    else:  # CUDA: any view (the kernel writes through its strides), not an expanded one
        K = kernels_for((t, other))
        if data.dtype.kind != "f" or not K.is_writeable(data):
            return False
    if isinstance(other, Tensor):
        b = other._data
        if b.dtype != data.dtype or (b.shape != data.shape and b.ndim != 0):
            return False
        if host and not isinstance(b, np.ndarray):
            return False  # a device tensor into a host one: the general path's error
        if b is not data and K.may_share_memory(data, b):
            return False  # overlapping storage: the general path copies first
    elif isinstance(other, (int, float)) and not isinstance(other, bool):
        b = number_as(other, data.dtype)
    else:
        return False
    scale = None
    if alpha != 1:
        if b.ndim:
            scale = number_as(alpha, data.dtype)  # one pass: data ⊕= alpha * b
        else:
            b = number_as(b * alpha, data.dtype)
    K.binary_into(getattr(K, code), data, b, scale)
    t._version_counter.value += 1
    return True


@export(function=False, method=True)
def add_(input: Tensor, other, *, alpha=1) -> Tensor:
    """In-place ``input += alpha * other``."""
    if _untracked_arithmetic("ADD", input, other, alpha):
        return input
    return _write(input, elementwise.add, other, alpha=alpha, saves_self=False)


@export(function=False, method=True)
def sub_(input: Tensor, other, *, alpha=1) -> Tensor:
    """In-place ``input -= alpha * other``."""
    if _untracked_arithmetic("SUB", input, other, alpha):
        return input
    return _write(input, elementwise.sub, other, alpha=alpha, saves_self=False)


@export(function=False, method=True)
def mul_(input: Tensor, other) -> Tensor:
    """In-place ``input *= other``."""
    if _untracked_arithmetic("MUL", input, other):
        return input
    return _write(input, elementwise.mul, other, saves_self=_requires_grad(other))


@export(function=False, method=True)
def div_(input: Tensor, other, *, rounding_mode=None) -> Tensor:
    """In-place ``input /= other`` (true division, or rounded by ``rounding_mode``)."""
    if rounding_mode is not None:
        return _write(input, elementwise.div, other, rounding_mode=rounding_mode,
                      saves_self=_requires_grad(other))
    if _untracked_arithmetic("DIV", input, other):
        return input
    return _write(input, elementwise.div, other, saves_self=_requires_grad(other))


@export(function=False, method=True)
def floor_divide_(input: Tensor, other) -> Tensor:
    """In-place ``input //= other``."""
    return _write(input, division.floor_divide, other, saves_self=False)


@export(function=False, method=True)
def remainder_(input: Tensor, other) -> Tensor:
    """In-place ``input %= other``."""
    return _write(input, division.remainder, other, saves_self=_requires_grad(other))


@export(function=False, method=True)
def fmod_(input: Tensor, other) -> Tensor:
    """``fmod`` in place."""
    return _write(input, division.fmod, other, saves_self=_requires_grad(other))


@export(method=True)
def clamp_(input: Tensor, min=None, max=None) -> Tensor:
    """In-place clamp to ``[min, max]``."""
    return _write(input, elementwise.clamp, min, max)


@register
class Fill(Op):
    """The values replaced by a number: no gradient reaches the old values."""

    name, node = "fill_", "FillBackward2"
    complex_ok = True
    jvp = _jvp.zero
    on_cuda = True
    samples = (Sample(lambda m, a: (a * 1).fill_(2.5) * a, ((3, 4),)),)

    @staticmethod
    def forward(K, a, *, value):
        return K.full(a.shape, value, a.dtype)

    @staticmethod
    def backward(ctx, grad):
        return (zeros_like(grad),)  # (not grad * 0: that is NaN where grad is inf or NaN)


@register
class FillOut(Fill):
    """``torch.fill``: a new tensor of the number (PyTorch's out-of-place ``fill``)."""

    name, node = "fill", "FillBackward0"
    samples = (Sample(lambda m, a: m.fill(a, 0.5) * a, ((3,),)),)


@register
class Zero(Fill):
    name, node = "zero_", "ZeroBackward0"
    samples = (Sample(lambda m, a: (a * 1).zero_() + a, ((3, 4),)),)


@register
class Copy(Op):
    """``src`` broadcast and cast into the tensor: the gradient goes to ``src`` alone."""

    name, node = "copy_", "torch::autograd::CopyBackwards"
    complex_ok = True
    jvp = _jvp.linear
    on_cuda = True
    samples = (
        Sample(lambda m, a, b: (a * 1).copy_(b) * a, ((3, 4), (3, 4))),
        Sample(lambda m, a, b: (a * 1).copy_(b) * a, ((3, 4), (4,))),
    )

    @staticmethod
    def forward(K, a, src):
        return K.broadcast_copy(src, a.shape, a.dtype)

    @staticmethod
    def backward(ctx, grad):
        need_self, need_src = ctx.needs_input_grad
        return (zeros_like(grad) if need_self else None), (grad if need_src else None)


@export(method=True)
def fill_(input: Tensor, value) -> Tensor:
    """Fills with ``value``, in place."""
    if isinstance(value, Tensor):
        if value._data.ndim:
            raise RuntimeError(
                "fill_ only supports 0-dimension value tensor but got tensor with "
                f"{value._data.ndim} dimensions."
            )
        if not isinstance(value._data, np.ndarray) and not isinstance(input._data, np.ndarray):
            # A CUDA value stays on the device (``item()`` would wait for the GPU): PyTorch's
            # fill_ copies it too. (The node is then CopyBackwards, not FillBackward3.)
            return copy_(input, value)
        value = value.item()
    check_scalar(value, input._data.dtype)
    return _write(input, lambda t: apply(Fill, (t,), (t._data,), value=value), saves_self=False)


@export
def fill(input: Tensor, value) -> Tensor:
    """``torch.fill``: a tensor of ``input``'s shape and dtype filled with ``value`` (a number or
    a 0-d tensor, which gets the gradient summed); ``input``'s gradient is zero."""
    if isinstance(value, Tensor) and value.requires_grad:
        every = full(tuple(input.shape), True, dtype=bool_, device=input.device)
        return masked_fill(input, every, value)
    if isinstance(value, Tensor):
        if value._data.ndim:
            raise RuntimeError("fill only supports 0-dimension value tensor but got tensor with "
                               f"{value._data.ndim} dimensions.")
        value = value.item()
    check_scalar(value, input._data.dtype)
    return apply(FillOut, (input,), (input._data,), value=value)


@export(method=True)
def zero_(input: Tensor) -> Tensor:
    """Fills with zeros, in place."""
    return _write(input, lambda t: apply(Zero, (t,), (t._data,), value=0), saves_self=False)


@export(function=False, method=True)
def copy_(input: Tensor, src: Tensor) -> Tensor:
    """Copies ``src`` (broadcast to ``input``'s shape, cast to its dtype) into ``input``."""
    if not isinstance(src, Tensor):
        raise TypeError(f"copy_(): argument 'src' (position 1) must be Tensor, not {type(src).__name__}")
    broadcast_shapes(input._data.shape, src._data.shape)  # (PyTorch's error: the write checks)
    if isinstance(src._data, np.ndarray) != isinstance(input._data, np.ndarray):
        # a copy across devices, recorded (as PyTorch's copy_ does)
        src = src.to(input.device)
    return _write(input, lambda t, s: apply(Copy, (t, s), (t._data, s._data)), src,
                  saves_self=False)

def _unrecorded(t: Tensor) -> bool:
    """Whether an in-place op on ``t`` records nothing (no grad mode, or nothing requires grad)
    and carries no tangent (no forward-AD level open)."""
    return registry._forward_ad is None and (not grad_mode.state.enabled or not (
        t._requires_grad or (t._base is not None and t._base._requires_grad)))


def _inplace_form(name: str):
    """``name_``: the op ``name`` computed out of place and written into the tensor (``_write``),
    its node PyTorch's (``ReluBackward0`` for ``relu_``), through a view's base where it is one.
    Where nothing is recorded, a float tensor is written in one pass by the op's own kernel
    (``unary_into``)."""
    module = next(m for m in _FORM_MODULES if hasattr(m, name))
    fn = getattr(module, name)
    op = REGISTRY.get(fn.__name__)  # (``negative`` is ``neg``, ``arcsin`` is ``asin`` ...)
    saves_self = op is None or 0 in op.save_inputs
    code = op.code if isinstance(op, type) and issubclass(op, elementwise._Unary) else None

    def inplace(input: Tensor, *args, **kwargs) -> Tensor:
        if name in ("abs", "absolute") and isinstance(input, Tensor) and \
                input._data.dtype.kind == "c":
            # (the modulus is real: PyTorch refuses to write it into the complex tensor)
            raise RuntimeError("In-place abs is not supported for complex tensors.")
        if code is not None and not args and not kwargs and isinstance(input, Tensor):
            data = input._data
            if data.dtype.kind == "f" and _unrecorded(input):
                K = kernels_of(data)
                if not K.is_writeable(data):
                    raise RuntimeError(_OVERLAP)
                K.unary_into(getattr(K, code), data)
                input._version_counter.value += 1
                return input
        return _write(input, fn, *args, saves_self=saves_self, **kwargs)

    inplace.__name__ = inplace.__qualname__ = name + "_"
    inplace.__doc__ = f"``{name}`` in place: the result is written into ``input``."
    return inplace


# Where the out-of-place twins of the forms below are: the in-place form of each op these modules
# declare with ``inplace=`` (``@export``, ``_names.py``) is made here (the arithmetic ones above
# are written out: they take the one-pass path of ``_untracked_arithmetic`` where nothing is
# recorded).
_FORM_MODULES = [elementwise, trigonometric, exponents_and_rounding, special_functions, ternary,
                 division, logical_bitwise]
for _module in _FORM_MODULES:
    for _name, _function in _names.inplace_forms(_module.__name__):
        globals()[_name + "_"] = export(_inplace_form(_name), _name + "_", method=True,
                                        function=_function)
if TYPE_CHECKING:
    # The forms the loop above makes, declared for type checkers (numgrad ships py.typed).
    abs_: UnaryOp; neg_: UnaryOp; exp_: UnaryOp; log_: UnaryOp; log1p_: UnaryOp; expm1_: UnaryOp
    sqrt_: UnaryOp; rsqrt_: UnaryOp; sin_: UnaryOp; cos_: UnaryOp; tan_: UnaryOp; tanh_: UnaryOp
    sigmoid_: UnaryOp; relu_: UnaryOp; sign_: UnaryOp; floor_: UnaryOp; ceil_: UnaryOp
    round_: UnaryOp; reciprocal_: UnaryOp; negative_: UnaryOp; pow_: InplaceBinaryOp
    asin_: UnaryOp; acos_: UnaryOp; atan_: UnaryOp; sinh_: UnaryOp; cosh_: UnaryOp
    asinh_: UnaryOp; acosh_: UnaryOp; atanh_: UnaryOp; arcsin_: UnaryOp; arccos_: UnaryOp
    arctan_: UnaryOp; arcsinh_: UnaryOp; arccosh_: UnaryOp; arctanh_: UnaryOp; log2_: UnaryOp
    log10_: UnaryOp; exp2_: UnaryOp; trunc_: UnaryOp; fix_: UnaryOp; frac_: UnaryOp
    sinc_: UnaryOp; deg2rad_: UnaryOp; rad2deg_: UnaryOp; square_: UnaryOp; erf_: UnaryOp
    erfc_: UnaryOp; logical_not_: UnaryOp; bitwise_not_: UnaryOp
    hypot_: InplaceBinaryOp; xlogy_: InplaceBinaryOp; atan2_: InplaceBinaryOp
    arctan2_: InplaceBinaryOp; logical_and_: InplaceBinaryOp; logical_or_: InplaceBinaryOp
    logical_xor_: InplaceBinaryOp; bitwise_and_: InplaceBinaryOp; bitwise_or_: InplaceBinaryOp
    bitwise_xor_: InplaceBinaryOp; bitwise_left_shift_: InplaceBinaryOp
    bitwise_right_shift_: InplaceBinaryOp
    absolute_: UnaryOp; conj_physical_: UnaryOp; lgamma_: UnaryOp; digamma_: UnaryOp
    erfinv_: UnaryOp; i0_: UnaryOp

    def logit_(input: Tensor, eps: float | None = None) -> Tensor: ...

    def lerp_(input: Tensor, end: Tensor, weight: Tensor | Number) -> Tensor: ...
    def addcmul_(input: Tensor, tensor1: Tensor, tensor2: Tensor, *,
                 value: Number = 1) -> Tensor: ...
    def addcdiv_(input: Tensor, tensor1: Tensor, tensor2: Tensor, *,
                 value: Number = 1) -> Tensor: ...


@export(method=True)
def clamp_min_(input: Tensor, min) -> Tensor:
    """In-place clamp from below."""
    return _write(input, elementwise.clamp, min, None)


@export(method=True)
def clamp_max_(input: Tensor, max) -> Tensor:
    """In-place clamp from above."""
    return _write(input, elementwise.clamp, None, max)


@register
class MaskedFill(Op):
    """``value`` where ``mask`` (a bool tensor broadcasting to the input's shape) is True: the
    gradient reaches the input where it is False. The mask is a parameter, not an input: PyTorch's
    node has no edge for it."""

    name, node = "masked_fill", "MaskedFillBackward0"
    complex_ok = True
    jvp = _jvp.transposed_backward
    on_cuda = True
    samples = (
        Sample(lambda m, a, b: a.masked_fill(b > 0, 2.5), ((3, 4), (4,))),
        Sample(lambda m, a: (a * 1).masked_fill_(a > 0, 0.0), ((2, 3),)),
    )

    @staticmethod
    def forward(K, a, *, value, mask):
        return K.where(mask._data, K.full((), value, a.dtype), a)

    @staticmethod
    def backward(ctx, grad):
        return (masked_fill(grad, ctx.params["mask"], 0.0),)


@register
class MaskedFillTensor(Op):
    """``masked_fill`` with a 0-d tensor ``value`` (PyTorch's ``masked_fill.Tensor``,
    ``MaskedFillBackward1``): the value's gradient is the output's summed where ``mask`` is
    True."""

    name, node = "masked_fill_tensor", "MaskedFillBackward1"
    complex_ok = True
    jvp = _jvp.transposed_backward
    on_cuda = True
    samples = (
        Sample(lambda m, a, v, b: a.masked_fill(b > 0, v), ((3, 4), (), (4,))),
        Sample(lambda m, a, v: (a * 1).masked_fill_(a > 0, v.sum()), ((2, 3), (2,))),
    )

    @staticmethod
    def forward(K, a, value, *, mask):
        return K.where(mask._data, K.cast(value, a.dtype), a)

    @staticmethod
    def backward(ctx, grad):
        mask = ctx.params["mask"]
        needs = ctx.needs_input_grad
        return (masked_fill(grad, mask, 0.0) if needs[0] else None,
                masked_fill(grad, mask.logical_not(), 0.0).sum() if needs[1] else None)


@export(method=True)
def masked_fill(input: Tensor, mask: Tensor, value) -> Tensor:
    """A copy of ``input`` with ``value`` where ``mask`` is True."""
    if not isinstance(mask, Tensor) or mask.dtype.name != "bool":
        raise RuntimeError("masked_fill_ only supports boolean masks, but got mask with dtype "
                           f"{getattr(mask, 'dtype', type(mask).__name__)}")
    broadcast_shapes(mask._data.shape, input._data.shape)
    if isinstance(value, Tensor):
        if value._data.ndim:
            raise RuntimeError("masked_fill_ only supports a 0-dimensional value tensor, but got "
                               f"tensor with {value._data.ndim} dimension(s).")
        if (input.dtype.is_floating_point or input.dtype.is_complex) and (
                value.is_cuda == input.is_cuda):  # (a host 0-d value of a CUDA input: a number)
            return apply(MaskedFillTensor, (input, value), (input._data, value._data), mask=mask)
        value = value.item()
    check_scalar(value, input._data.dtype)
    return apply(MaskedFill, (input,), (input._data,), value=value, mask=mask)


@export(function=False, method=True)
def masked_fill_(input: Tensor, mask: Tensor, value) -> Tensor:
    """``value`` written where ``mask`` is True, in place."""
    return _write(input, masked_fill, mask, value, saves_self=False)


clip_ = alias(clamp_, "clip_")


# ------------------------------------------------------------------ comparisons in place
class _CompareInto(Op):
    """A comparison's result (``result``, a bool array) in the dtype of the tensor it is written
    into, as 0 and 1 (``eq_``, ``lt_`` ...). PyTorch records a node of its own for it, whose
    gradients are zero: ``EqBackward0`` where ``other`` is a number, ``EqBackward1`` where it is
    a tensor (which gets a zero gradient too)."""

    jvp = _jvp.zero
    complex_ok = narrow_ok = on_cuda = True

    @staticmethod
    def forward(K, a, *other, result):
        return K.cast(result, a.dtype)

    @staticmethod
    def backward(ctx, grad):
        return tuple(zeros_like(grad) if need else None for need in ctx.needs_input_grad)


def _compare_into(name: str, tensor: bool) -> type:
    """The registered op of ``<name>_`` with a number (``tensor`` False) or a tensor."""
    node = f"{name.capitalize()}Backward{int(tensor)}"
    if tensor:
        sample = Sample(lambda m, a, b, f=name + "_": getattr(a * 1, f)(b), ((3, 4), (4,)))
    else:
        sample = Sample(lambda m, a, f=name + "_": getattr(a * 1, f)(0.5), ((3, 4),))
    return register(type(node.replace("Backward", "Into"), (_CompareInto,), {
        "name": f"{name}_{'tensor' if tensor else 'scalar'}", "node": node,
        "samples": (sample,), "__module__": __name__}))


def _comparison_form(name: str):
    """``name_``: ``input`` set to ``name(input, other)`` as 0 and 1 of its own dtype (PyTorch's
    ``Tensor.eq_`` ...; the broadcast of ``other`` may not grow ``input``)."""
    compare = getattr(elementwise, name)
    nodes = (_compare_into(name, False), _compare_into(name, True))

    def result(t: Tensor, other) -> Tensor:
        out = compare(t, other)  # (a bool tensor, never recorded)
        if not (grad_mode.state.enabled and (_requires_grad(t) or _requires_grad(other))):
            return out
        if isinstance(other, Tensor):
            return apply(nodes[1], (t, other), (t._data, other._data), result=out._data)
        return apply(nodes[0], (t,), (t._data,), result=out._data)

    def inplace(input: Tensor, other) -> Tensor:
        return _write(input, result, other, saves_self=False)

    inplace.__name__ = inplace.__qualname__ = name + "_"
    inplace.__doc__ = (f"``{name}(input, other)`` written into ``input``, as 0 and 1 of its "
                       "dtype (a zero gradient, as PyTorch's).")
    return inplace


eq_ = export(_comparison_form("eq"), "eq_", function=False, method=True)
ne_ = export(_comparison_form("ne"), "ne_", function=False, method=True)
lt_ = export(_comparison_form("lt"), "lt_", function=False, method=True)
le_ = export(_comparison_form("le"), "le_", function=False, method=True)
gt_ = export(_comparison_form("gt"), "gt_", function=False, method=True)
ge_ = export(_comparison_form("ge"), "ge_", function=False, method=True)
greater_ = alias(gt_, "greater_")
greater_equal_ = alias(ge_, "greater_equal_")
less_ = alias(lt_, "less_")
less_equal_ = alias(le_, "less_equal_")
not_equal_ = alias(ne_, "not_equal_")
# (the in-place forms of the arithmetic ops' other names, as PyTorch's Tensor methods)
subtract_ = alias(sub_, "subtract_")
multiply_ = alias(mul_, "multiply_")
divide_ = alias(div_, "divide_")
true_divide_ = alias(div_, "true_divide_")


# ------------------------------------------------------------------ in-place forms with checks
@export(function=False, method=True)
def float_power_(input: Tensor, exponent) -> Tensor:
    """``float_power`` in place: as PyTorch's, only into a tensor of the result's dtype (float64,
    or complex128 where either operand is complex)."""
    complex_ = input.dtype.is_complex or isinstance(exponent, complex) or (
        isinstance(exponent, Tensor) and exponent.dtype.is_complex)
    wanted = np.dtype(np.complex128 if complex_ else np.float64)
    if input._data.dtype != wanted:
        raise RuntimeError(
            f"the base given to float_power_ has dtype {_type_name(input._data.dtype)} but the "
            f"operation's result requires dtype {_type_name(wanted)}")
    return _write(input, exponents_and_rounding.float_power, exponent)


@export(method=True)
def ldexp_(input: Tensor, other: Tensor) -> Tensor:
    """``ldexp`` in place: ``input * 2 ** other`` into a float or complex ``input`` (PyTorch's
    words for any other)."""
    if isinstance(input, Tensor) and isinstance(other, Tensor) and input.dtype._category < FLOAT:
        raise RuntimeError("ldexp can't be cast to the desired output type "
                           f"{_type_name(input._data.dtype)}")
    return _write(input, exponents_and_rounding.ldexp, other, saves_self=_requires_grad(other))


@export(function=False, method=True)
def polygamma_(input: Tensor, n: int) -> Tensor:
    """``polygamma(n, input)`` in place (``Tensor.polygamma_(n)``)."""
    return _write(input, lambda t: special_functions.polygamma(n, t))


@export(function=False, method=True)
def mvlgamma_(input: Tensor, p: int) -> Tensor:
    """``mvlgamma(input, p)`` in place, into a float tensor (PyTorch's words for any other)."""
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"mvlgamma: result type {_type_name(input._data.dtype)} can't be "
                           f"cast to the desired output type Float")
    return _write(input, special_functions.mvlgamma, p)


@export
def detach_(input: Tensor) -> Tensor:
    """``torch.detach_``: ``input.detach_()``."""
    return input.detach_()


@export(function=False, method=True)
def fill_diagonal_(input: Tensor, fill_value, wrap: bool = False) -> Tensor:
    """``fill_value`` written at ``input[i, i, ..., i]`` (every dimension of one length, or a
    matrix), in place; with ``wrap``, a tall matrix's diagonal starts again ``N + 1`` rows down
    (NumPy's ``fill_diagonal``), as PyTorch's. Written through a view of the diagonal, as
    PyTorch's: a leaf that requires grad is refused as a view of one."""
    shape = input._data.shape
    if len(shape) < 2:
        raise RuntimeError("dimensions must larger than 1")
    if len(shape) > 2 and len(set(shape)) != 1:
        raise RuntimeError("all dimensions of input must be of equal length")
    if grad_mode.state.enabled and input._requires_grad and input.grad_fn is None:
        raise RuntimeError(_VIEW_OF_LEAF)
    if len(shape) > 2:
        check_scalar(fill_value, input._data.dtype)
        index = arange(shape[0], device=input.device)
        value = full((), fill_value, dtype=input.dtype, device=input.device)
        return input.index_put_((index,) * len(shape), value)
    rows, cols = shape
    step = cols + 1 if wrap and rows > cols + 1 else max(rows, 1)
    for start in range(0, rows, step):
        input[start:start + step].diagonal().fill_(fill_value)
    return input
