"""The ops of ``nn.functional`` that PyTorch runs as one node of their own and that are neither
``numgrad.X`` functions nor Tensor methods: ``threshold`` (``ThresholdBackward0``),
``softshrink``, ``hardshrink``, ``prelu`` (``PreluKernelBackward0``), ``glu``,
``rrelu_with_noise``, ``soft_margin_loss``, ``multi_margin_loss`` and ``native_group_norm``
(``NativeGroupNormBackward0``).

Each forward is a few calls of the device's existing kernels (comparisons, ``where``, the
elementwise formulas, sums and batch normalisation's statistics), so no kernel is new and
``numgrad.compile`` traces them; each backward is a tensor formula, so second derivatives work.
"""
from __future__ import annotations

import numpy as np

from .. import dispatch
from ..creation import _C_NAMES
from ..autograd.graph import keep_given
from ..tensor import Tensor
from . import _jvp
from .registry import Op, Sample, apply, kernels_for, register
from ._formula import FormulaOp, arg, call, formula_op, number, select
from ._formula import make as make_formula_op

_one = ((3, 4),)


def _F(m):
    return m.nn.functional


def _param(a, value):
    return dispatch.number_array(value, a.dtype)


def _where(cond: Tensor, a, b) -> Tensor:
    from .elementwise import where

    return where(cond, a, b)


# ------------------------------------------------------------------ elementwise with a parameter
class _Masked(FormulaOp):
    """An elementwise op whose gradient is ``grad`` where ``passes(x)`` (a bool tensor), else 0
    (PyTorch's backward kernels' conditions, NaN included)."""

    save_inputs = (0,)

    @classmethod
    def backward(cls, ctx, grad):
        (x,) = ctx.saved_tensors
        return (_where(cls.passes(x.detach(), ctx.params), grad, 0.0),)


@formula_op("threshold", "ThresholdBackward0",
            term=select(call("LE", arg(0), number("threshold")), number("value"), arg(0)),
            save_inputs=(0,),
            samples=(Sample(lambda m, a: _F(m).threshold(a, 0.1, 20.0), _one),
                     Sample(lambda m, a: _F(m).threshold(a.t(), -0.5, 0.0), ((4, 3),))),
            doc="``x`` where ``x > threshold``, else ``value`` (NaN kept).")
def Threshold(ctx, grad):  # (threshold_backward: x <= threshold ? 0 : grad; NaN passes)
    (x,) = ctx.saved_tensors
    return (_where(x.detach() <= ctx.params["threshold"], 0.0, grad),)


ThresholdInplace = make_formula_op(
    "threshold_", "ThresholdBackward1", base=Threshold, save_inputs=(), save_output=True,
    samples=(Sample(lambda m, a: _F(m).threshold(a * 1, 0.1, -1.0, inplace=True), _one),),
    cls_name="ThresholdInplace", module=__name__,
    doc="""``threshold_``: saves its output, as PyTorch's ``ThresholdBackward1`` (whose gradient
    is then ``grad`` where the output is above the threshold).""")


_LAMBD = number("lambd")  # (made once)
Softshrink = make_formula_op(
    "softshrink", "SoftshrinkBackward0", base=_Masked, term=select(
        call("GT", arg(0), _LAMBD), call("SUB", arg(0), _LAMBD),
        select(call("LT", arg(0), number(lambda lambd: -lambd)), call("ADD", arg(0), _LAMBD),
               call("MUL", arg(0), number(0)))),  # (inside: 0, NaN kept)
    samples=(Sample(lambda m, a: _F(m).softshrink(a), _one),
             Sample(lambda m, a: _F(m).softshrink(a, 1.2), ((2, 3, 2),))),
    # (NaN: 0, as PyTorch's vectorised kernel)
    passes=staticmethod(lambda x, p: x.abs() > p["lambd"]),
    cls_name="Softshrink", module=__name__,
    doc="``x - lambd`` above ``lambd``, ``x + lambd`` below ``-lambd``, else 0 (NaN kept).")
Hardshrink = make_formula_op(
    "hardshrink", "HardshrinkBackward0", base=_Masked,
    term=select(call("LE", call("ABS", arg(0)), number("lambd")), number(0), arg(0)),
    samples=(Sample(lambda m, a: _F(m).hardshrink(a), _one),
             # (PyTorch's backward passes a NaN's gradient in its scalar loop, under 8 (float64)
             # or 16 (float32) elements, and gives 0 in its vectorised one, which numgrad follows)
             Sample(lambda m, a: _F(m).hardshrink(a, 1.0), ((2, 8),))),
    passes=staticmethod(lambda x, p: x.abs() > p["lambd"]),
    cls_name="Hardshrink", module=__name__, doc="``x`` where ``|x| > lambd``, else 0 (NaN kept).")


@register
class RreluWithNoise(Op):
    """``x * noise`` where ``x <= 0``, else ``x``: ``noise`` (a param) holds the slopes drawn in
    training, or their mean in eval."""

    name, node = "rrelu_with_noise", "RreluWithNoiseBackward0"
    jvp = _jvp.transposed_backward
    on_cuda = True
    save_inputs = (0,)
    samples = (
        Sample(lambda m, a: _F(m).rrelu(a), _one),
        Sample(lambda m, a: _F(m).rrelu(a, 0.2, 0.6), ((2, 3),)),
    )

    @staticmethod
    def forward(K, a, *, noise, lower, upper, training):
        pos = K.binary(K.GT, a, _param(a, 0), np.bool_)
        if isinstance(noise, np.ndarray) and noise.dtype != a.dtype:
            noise = K.cast(noise, a.dtype)  # (float16's slopes: ``a`` is computed widened)
        return K.where(pos, a, K.binary(K.MUL, a, noise))

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        noise = ctx.params["noise"]
        slope = Tensor._wrap(noise) if not isinstance(noise, np.ndarray) or noise.ndim else \
            float(noise)
        return (_where(x.detach() > 0, grad, grad * slope),)


@register
class RreluWithNoiseInplace(RreluWithNoise):
    """``rrelu_``: saves its output, as PyTorch's ``RreluWithNoiseBackward1``."""

    name, node = "rrelu_with_noise_", "RreluWithNoiseBackward1"
    jvp = _jvp.elementwise
    save_inputs = ()
    save_output = True
    samples = (Sample(lambda m, a: _F(m).rrelu(a * 1, inplace=True), _one),)


# ------------------------------------------------------------------ prelu and glu
@formula_op("prelu", "PreluKernelBackward0", arity=2, term=select(
    call("GT", arg(0), number(0)), arg(0), call("MUL", arg(0), arg(1))),
    jvp=_jvp.prelu, save_inputs=(0, 1),
    samples=(Sample(lambda m, x, w: _F(m).prelu(x, w), ((2, 3, 4), (3,))),
             Sample(lambda m, x, w: _F(m).prelu(x, w), ((3, 4), (1,))),
             Sample(lambda m, x, w: _F(m).prelu(x, w), ((5,), (1,)))),
    doc="""``x`` where ``x > 0``, else ``weight * x``; ``weight`` comes shaped to broadcast (one
    value, or one per channel of dimension 1).""")
def Prelu(ctx, grad):
    x, w = ctx.saved_tensors
    need_x, need_w = ctx.needs_input_grad
    pos = x.detach() > 0
    grad_x = _where(pos, grad, grad * w) if need_x else None
    grad_w = _where(pos, 0.0, grad * x) if need_w else None  # (summed to w's shape)
    return grad_x, grad_w


@register
class Glu(Op):
    """``a * sigmoid(b)`` for the halves ``a``, ``b`` of ``x`` along ``dim``."""

    name, node = "glu", "GluBackward0"
    jvp = _jvp.transposed_backward
    on_cuda = True
    save_inputs = (0,)
    samples = (
        Sample(lambda m, a: _F(m).glu(a), _one),
        Sample(lambda m, a: _F(m).glu(a, 0), ((4, 3),)),
        Sample(lambda m, a: _F(m).glu(a.transpose(0, 1), 1), ((4, 2, 2),)),
    )

    @staticmethod
    def forward(K, x, *, dim):
        n = x.shape[dim] // 2
        lead = (slice(None),) * dim
        a = K.view_index(x, lead + (slice(0, n),))
        b = K.view_index(x, lead + (slice(n, 2 * n),))
        return K.binary(K.MUL, a, K.unary(K.SIGMOID, b))

    @staticmethod
    def backward(ctx, grad):
        from .shape import cat

        (x,) = ctx.saved_tensors
        dim = ctx.params["dim"]
        n = x.shape[dim] // 2
        lead = (slice(None),) * dim
        a, b = x[lead + (slice(0, n),)], x[lead + (slice(n, 2 * n),)]
        s = b.sigmoid()
        grad_a = grad * s
        return (cat([grad_a, grad_a * a * (1 - s)], dim),)


# ------------------------------------------------------------------ losses
def _signs(m, x):
    """A constant target of ``x``'s shape: 1, -1, -1, 1, 1, -1 ... (for the samples)."""
    values = [1.0 if (i // 2 + i) % 2 == 0 else -1.0 for i in range(x.numel())]
    return m.tensor(values, dtype=x.dtype, device=x.device).reshape(x.shape)


_REDUCTION = {"none": 0, "mean": 1, "sum": 2}


def _reduce(K, loss, reduction: str):
    if reduction == "none":
        return loss
    total = K.sum_dims(loss, tuple(range(loss.ndim)), False)
    if reduction == "sum":
        return total
    return K.binary(K.DIV, total, dispatch.number_array(loss.size, loss.dtype))


@register
class SoftMarginLoss(Op):
    """``log(1 + exp(-target * input))``, reduced."""

    name, node = "soft_margin_loss", "SoftMarginLossBackward0"
    jvp = _jvp.transposed_backward
    on_cuda = True
    save_inputs = (0, 1)
    samples = (
        # (the target is a constant: it takes no gradient, as in PyTorch)
        Sample(lambda m, x: _F(m).soft_margin_loss(x, _signs(m, x)), ((3, 4),)),
        Sample(lambda m, x: _F(m).soft_margin_loss(x, _signs(m, x) * 0.5, reduction="sum"),
               ((5,),)),
        Sample(lambda m, x: _F(m).soft_margin_loss(x, _signs(m, x), reduction="none"),
               ((2, 3),)),
    )

    @staticmethod
    def forward(K, x, t, *, reduction):
        z = K.binary(K.MUL, K.unary(K.NEG, x), t)
        return _reduce(K, K.unary(K.LOG1P, K.unary(K.EXP, z)), reduction)

    @staticmethod
    def backward(ctx, grad):
        x, t = ctx.saved_tensors
        # d/dx = -t * sigmoid(-t x), PyTorch's formula (the target takes no gradient)
        z = (-(x * t)).exp()
        s = z / (1 + z) * grad
        if ctx.params["reduction"] == "mean":
            s = s / x.numel()
        return -t * s, None


@register
class MultiMarginLoss(Op):
    """``sum_{j != y} max(0, margin - x[y] + x[j])**p * weight[y] / C`` per sample, reduced;
    ``target`` (int64) and ``weight`` are constants (params)."""

    name, node = "multi_margin_loss", "MultiMarginLossBackward0"
    jvp = _jvp.transposed_backward
    on_cuda = True
    save_inputs = (0,)
    samples = (
        Sample(lambda m, x: _F(m).multi_margin_loss(
            x, m.tensor([0, 3, 1], device=x.device)), ((3, 4),)),
        Sample(lambda m, x: _F(m).multi_margin_loss(
            x, m.tensor([2, 0], device=x.device), p=2, margin=0.5,
            weight=m.tensor([0.5, 1.0, 2.0], dtype=x.dtype, device=x.device),
            reduction="none"), ((2, 3),)),
        Sample(lambda m, x: _F(m).multi_margin_loss(
            x, m.tensor([1], device=x.device), reduction="sum"), ((4,),)),
    )

    @staticmethod
    def forward(K, x, *, target, weight, p, margin, reduction, shape):
        nframe, dim = shape
        x2 = K.reshape_view(K.ascontiguous(x), (nframe, dim))
        own = K.one_hot_dim(K.reshape_view(target, (nframe, 1)), (nframe, dim), 1, x.dtype)
        own = K.binary(K.NE, own, _param(x, 0), np.bool_)
        x_y = K.sum_dims(K.where(own, x2, K.full((), 0, x.dtype)), (1,), True)
        z = K.binary(K.ADD, K.binary(K.SUB, x2, x_y), _param(x, margin))
        zero = K.full((), 0, x.dtype)
        z = K.where(K.binary(K.GT, z, _param(x, 0), np.bool_), z, zero)
        if p == 2:
            z = K.binary(K.MUL, z, z)
        if weight is not None:
            w_y = K.sum_dims(K.where(own, K.reshape_view(weight, (1, dim)),
                                     K.full((), 0, x.dtype)), (1,), True)
            z = K.binary(K.MUL, z, w_y)
        z = K.where(own, K.full((), 0, x.dtype), z)
        loss = K.binary(K.DIV, K.sum_dims(z, (1,), False), _param(x, dim))
        if reduction == "none":
            return loss if x.ndim == 2 else K.reshape_view(loss, ())
        return _reduce(K, loss, reduction)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        pr = ctx.params
        nframe, dim = pr["shape"]
        target = Tensor._wrap(pr["target"]).reshape(nframe, 1)
        from ..creation import arange

        own = arange(dim, device=x.device).reshape(1, dim) == target
        x2 = x.reshape(nframe, dim)
        z = x2 - _where(own, x2, 0.0).sum(1, keepdim=True) + pr["margin"]
        active = _where(own, False, z.detach() > 0)  # (NaN: no term, as PyTorch's loop)
        g = grad.reshape(nframe, 1) if pr["reduction"] == "none" else grad
        scale = g / dim
        if pr["reduction"] == "mean":
            scale = scale / nframe
        if pr["weight"] is not None:
            scale = scale * Tensor._wrap(pr["weight"])[target]
        d = _where(active, 2 * z * scale if pr["p"] == 2 else scale, 0.0)
        # each active j: +d at j, -d at y
        grad_x = _where(own, -d.sum(1, keepdim=True), d)
        return (grad_x.reshape(x.shape),)


# ------------------------------------------------------------------ group normalisation
@register
class NativeGroupNorm(Op):
    """Each sample's ``num_groups`` groups of channels normalised (biased variance plus
    ``eps``), then ``* weight + bias`` per channel (None: 1 and 0)."""

    name, node = "native_group_norm", "NativeGroupNormBackward0"
    jvp = _jvp.transposed_backward
    on_cuda = True
    save_inputs = (0, 1)
    samples = (
        Sample(lambda m, x, w, b: _F(m).group_norm(x, 2, w, b), ((2, 4, 3), (4,), (4,))),
        Sample(lambda m, x: _F(m).group_norm(x, 3), ((2, 3, 2, 2),)),
        Sample(lambda m, x, w: _F(m).group_norm(x, 1, w, eps=1e-3), ((3, 2), (2,))),
    )

    @staticmethod
    def forward(K, x, weight, bias, *, num_groups, eps):
        # PyTorch's kernel: y = x * a + b per (sample, channel), a = invstd * weight and
        # b = bias - mean * a (so infinities and NaN in the affine parameters spread as there)
        n, c = x.shape[0], x.shape[1]
        g, per = num_groups, c // num_groups
        grouped = K.reshape_view(K.ascontiguous(x), (1, n * g, -1))
        mean, _, invstd = K.batch_norm_stats(grouped, float(eps))
        a = K.reshape_view(invstd, (n, g, 1))
        if weight is not None:
            a = K.binary(K.MUL, a, K.reshape_view(weight, (1, g, per)))
        else:
            a = K.broadcast_copy(a, (n, g, per), x.dtype)
        shift = K.unary(K.NEG, K.binary(K.MUL, K.reshape_view(mean, (n, g, 1)), a))
        if bias is not None:
            shift = K.binary(K.ADD, shift, K.reshape_view(bias, (1, g, per)))
        lanes = (n, c, -1)
        out = K.binary(K.ADD, K.binary(K.MUL, K.reshape_view(grouped, lanes),
                                        K.reshape_view(a, (n, c, 1))),
                       K.reshape_view(shift, (n, c, 1)))
        return K.reshape_view(out, x.shape)

    @staticmethod
    def backward(ctx, grad):
        x, weight = ctx.saved_tensors
        need_x, need_w, need_b = ctx.needs_input_grad
        p = ctx.params
        n, c, groups = x.shape[0], x.shape[1], p["num_groups"]
        view = (1, c) + (1,) * (x.ndim - 2)
        dims = (0,) + tuple(range(2, x.ndim))
        xr = x.reshape(n, groups, -1)
        centred = xr - xr.mean(-1, keepdim=True)
        invstd = ((centred * centred).mean(-1, keepdim=True) + p["eps"]).rsqrt()
        xhat = centred * invstd
        grad_x = grad_w = grad_b = None
        if need_x:
            gh = (grad if weight is None else grad * weight.reshape(view)).reshape(n, groups, -1)
            grad_x = (gh - gh.mean(-1, keepdim=True)
                      - xhat * (gh * xhat).mean(-1, keepdim=True)) * invstd
            grad_x = grad_x.reshape(x.shape)
        if need_w:
            grad_w = (grad * xhat.reshape(x.shape)).sum(dims)
        if need_b:
            grad_b = grad.sum(dims)
        return grad_x, grad_w, grad_b


# ------------------------------------------------------------------ the functions
def _check_numbers(input: Tensor, *numbers) -> None:
    """PyTorch's error for a number an integer ``input``'s dtype cannot hold (NaN, inf and
    values out of its range), where NumPy's cast would wrap it or raise in its own words."""
    dtype = input._data.dtype
    if dtype.kind not in "iu":
        return
    info = np.iinfo(dtype)
    for v in numbers:
        if isinstance(v, int) and not isinstance(v, bool) and v >= 2**64:
            raise OverflowError("int too big to convert")
        if not (v == v and info.min <= v <= info.max):
            raise RuntimeError(f"value cannot be converted to type {_C_NAMES[dtype.name]} "
                               "without overflow")


def threshold(input: Tensor, threshold: float, value: float) -> Tensor:
    _check_numbers(input, threshold, value)
    return apply(Threshold, (input,), (input._data,), threshold=threshold, value=value)


def threshold_(input: Tensor, threshold: float, value: float) -> Tensor:
    from .inplace import _write

    _check_numbers(input, threshold, value)
    return _write(input, lambda t: apply(ThresholdInplace, (t,), (t._data,),
                                         threshold=threshold, value=value), saves_self=False)


def softshrink(input: Tensor, lambd: float) -> Tensor:
    return apply(Softshrink, (input,), (input._data,), lambd=lambd)


def hardshrink(input: Tensor, lambd: float) -> Tensor:
    return apply(Hardshrink, (input,), (input._data,), lambd=lambd)


def _noise_array(noise, dtype) -> np.ndarray:
    """The slope ``noise`` (a number) as an array of the input's dtype (bfloat16's: float32)."""
    return np.asarray(noise, dtype if np.dtype(dtype).kind != "V" else np.float32)


def rrelu_with_noise(input: Tensor, noise, lower: float, upper: float,
                     training: bool) -> Tensor:
    """``noise``: an array of ``input``'s shape and device, or one number (eval's slope);
    ``lower``, ``upper`` and ``training`` kept for the node (PyTorch's ``_saved_*``)."""
    data = noise._data if isinstance(noise, Tensor) else _noise_array(noise, input._data.dtype)
    return apply(RreluWithNoise, (input,), (input._data,), noise=data, lower=lower, upper=upper,
                 training=training)


def rrelu_with_noise_(input: Tensor, noise, lower: float, upper: float,
                      training: bool) -> Tensor:
    from .inplace import _write

    data = noise._data if isinstance(noise, Tensor) else _noise_array(noise, input._data.dtype)
    return _write(input, lambda t: apply(RreluWithNoiseInplace, (t,), (t._data,), noise=data,
                                         lower=lower, upper=upper, training=training),
                  saves_self=False)


def prelu(input: Tensor, weight: Tensor) -> Tensor:
    return apply(Prelu, (input, weight), (input._data, weight._data))


def glu(input: Tensor, dim: int, given=None) -> Tensor:
    """``given``: ``dim`` as the caller wrote it, which PyTorch's node shows."""
    out = apply(Glu, (input,), (input._data,), dim=dim)
    if given is not None and given != dim:
        keep_given(out, dim=int(given))
    return out


def soft_margin_loss(input: Tensor, target: Tensor, reduction: str) -> Tensor:
    return apply(SoftMarginLoss, (input, target), (input._data, target._data),
                 reduction=reduction)


def multi_margin_loss(input: Tensor, target: Tensor, p: int, margin: float, weight,
                      reduction: str, nframe: int, dim: int) -> Tensor:
    K = kernels_for((input, target), MultiMarginLoss)
    w = None if weight is None else K.cast(weight._data, input._data.dtype)
    return apply(MultiMarginLoss, (input,), (input._data,), target=K.copy(target._data),
                 weight=w, p=int(p), margin=float(margin), reduction=reduction,
                 shape=(nframe, dim))


def native_group_norm(input: Tensor, weight, bias, num_groups: int, eps: float) -> Tensor:
    return apply(NativeGroupNorm, (input, weight, bias),
                 (input._data, None if weight is None else weight._data,
                  None if bias is None else bias._data), num_groups=int(num_groups),
                 eps=float(eps))
