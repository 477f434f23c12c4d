"""PyTorch's fused activation ops (``nn.functional``'s ``silu gelu leaky_relu elu selu celu softplus
hardtanh mish hardswish hardsigmoid logsigmoid``), each one node with PyTorch's name.

Each forward is one formula of the table (``kernels/formulas.py``); each backward is an op of its
own (``silu_backward``, ``gelu_backward`` ..., as ATen's), so that second derivatives work and the
node names are PyTorch's. Parameterless backward formulas are one fused kernel of ``(grad,
input)``; those with a parameter (``leaky_relu``'s slope, ``elu``'s alpha, softplus's beta and
threshold, hardtanh's bounds) compute the factor of ``grad`` in one kernel and multiply (two
passes; ``numgrad.compile`` fuses them). The in-place forms of ``leaky_relu``, ``elu``, ``selu``
and ``celu`` save their output, as PyTorch's (``LeakyReluBackward1`` ...).
"""
from __future__ import annotations

import numpy as np

from .. import dispatch
from ..creation import zeros_like
from ..tensor import Tensor
from ._names import export
from .elementwise import where
from .loss import _type_name
from .registry import Sample, apply
from ._formula import BinaryFormula, FormulaOp, UnaryFormula, formula_op
from ._formula import arg, by, call, number, select
from ._formula import make as make_formula_op
from typing import TYPE_CHECKING
from .elementwise import sigmoid_backward
from .inplace import _write

if TYPE_CHECKING:
    from .._typing import BackwardOp, UnaryOp

_one = ((3, 4),)
_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def _float_only(kernel: str, input: Tensor) -> None:
    """PyTorch's error for an integer or bool input (``"silu_cpu" not implemented for 'Long'``)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"{kernel}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    if input._data.dtype.kind not in "fV":  # ("V": bfloat16, numgrad._lowp)
        device = "cpu" if isinstance(input._data, np.ndarray) else "cuda"
        name = kernel if kernel == "GeluKernelImpl" else f"{kernel}_{device}"
        raise NotImplementedError(f"\"{name}\" not implemented for '{_type_name(input)}'")


def _param(a, value):
    return dispatch.number_array(value, a.dtype)


# ------------------------------------------------------------------ parameterless: one formula
class _Act(UnaryFormula):
    """``code`` forward, saving the input; the backward is the op ``bwd`` of (grad, input)."""

    save_inputs = (0,)
    bwd: type = None

    @classmethod
    def backward(cls, ctx, grad):
        (a,) = ctx.saved_tensors
        return (_fused(cls.bwd, grad, a),)


class _ActBackward(BinaryFormula):
    """A fused backward formula of (grad, input); ``second(a)`` is the derivative of the
    activation's derivative, for the gradient of the input."""

    save_inputs = (0, 1)

    @classmethod
    def backward(cls, ctx, grad):
        g, a = ctx.saved_tensors
        need_g, need_a = ctx.needs_input_grad
        grad_g = _fused(cls, grad, a) if need_g else None
        grad_a = grad * g * cls.second(a) if need_a else None
        return grad_g, grad_a


def _activation(cls_name: str, name: str, node: str, code: str, bwd: type, **declarations):
    """The activation op ``name`` (the formula ``code`` of one operand), whose backward is the op
    ``bwd``: made by the formula factory, as every formula op."""
    return make_formula_op(name, node, code, base=_Act, bwd=bwd, cls_name=cls_name,
                           module=__name__, **declarations)


def _activation_backward(cls_name: str, name: str, node: str, code: str, second=None,
                         **declarations):
    """The fused backward op ``name`` (the formula ``code`` of (grad, input)); ``second`` is the
    activation's second derivative (None: the declarations give the op's backward)."""
    if second is not None:
        declarations["second"] = staticmethod(second)
    return make_formula_op(name, node, code, arity=2, base=_ActBackward, cls_name=cls_name,
                           module=__name__, **declarations)


def _fused(op, grad: Tensor, a: Tensor) -> Tensor:
    return apply(op, (grad, a), (grad._data, a._data))


def _sig(a):
    return a.sigmoid()


def _q(t):
    """``t`` rounded to quarters, detached: a piecewise-constant input for the samples of the
    backward ops PyTorch cannot differentiate (their gradient flows around them)."""
    return (t.detach() * 4).floor() / 4


def _silu_second(a):
    s = _sig(a)
    return s * (1 - s) * (2 + a * (1 - 2 * s))


# (PyTorch's silu_backward has no derivative of its own: its double backward is a composite, whose
# last node is a MulBackward0. The sample's gradient flows around it, on inputs rounded to
# quarters; silu's gradgradcheck and tests/test_activations.py check this op's derivative)
SiluBackward = _activation_backward(
    "SiluBackward", "silu_backward", "MulBackward0", "SILU_BWD", _silu_second,
    samples=(Sample(lambda m, g, a: m.ops.silu_backward(_q(g), _q(a)) + g * a,
                    ((3, 4), (3, 4))),))
Silu = _activation("Silu", "silu", "SiluBackward0", "SILU", SiluBackward,
                   samples=(Sample(lambda m, a: m.nn.functional.silu(a), _one),))


def _gelu_second(a):
    pdf = (a * a * -0.5).exp() * 0.3989422804014327
    return pdf * (2 - a * a)


GeluBackward = _activation_backward(
    "GeluBackward", "gelu_backward", "GeluBackwardBackward0", "GELU_BWD", _gelu_second,
    samples=(Sample(lambda m, g, a: m.ops.gelu_backward(g, a), ((3, 4), (3, 4))),))
Gelu = _activation("Gelu", "gelu", "GeluBackward0", "GELU", GeluBackward,
                   samples=(Sample(lambda m, a: m.nn.functional.gelu(a), _one),))


_BETA = 0.7978845608028654  # sqrt(2 / pi)
_KAPPA = 0.044715


def _gelu_tanh_second(a):
    t = ((a + a * a * a * _KAPPA) * _BETA).tanh()
    du = (a * a * (3 * _KAPPA) + 1) * _BETA
    return (1 - t * t) * (du + a * 0.5 * (a * (6 * _BETA * _KAPPA) - 2 * t * du * du))


GeluTanhBackward = _activation_backward(
    "GeluTanhBackward", "gelu_tanh_backward", "GeluBackwardBackward0", "GELU_TANH_BWD",
    _gelu_tanh_second,
    samples=(Sample(lambda m, g, a: m.ops.gelu_backward(g, a, approximate="tanh"),
                    ((3, 4), (3, 4))),))
GeluTanh = _activation(
    "GeluTanh", "gelu_tanh", "GeluBackward0", "GELU_TANH", GeluTanhBackward,
    samples=(Sample(lambda m, a: m.nn.functional.gelu(a, approximate="tanh"), _one),))


def _mish_second(a):
    s = _sig(a)
    t = softplus(a).tanh()
    return (1 - t * t) * s * (2 + a * ((1 - s) - 2 * t * s))


MishBackward = _activation_backward(
    "MishBackward", "mish_backward", "MulBackward0", "MISH_BWD", _mish_second,
    samples=(Sample(lambda m, g, a: m.ops.mish_backward(_q(g), _q(a)) + g * a,
                    ((3, 4), (3, 4))),))
Mish = _activation("Mish", "mish", "MishBackward0", "MISH", MishBackward,
                   samples=(Sample(lambda m, a: m.nn.functional.mish(a), _one),))


def _hardswish_backward_backward(ctx, grad):
    # PyTorch's: where(-3 < x < 3, grad * grad_output / 3, 0) (a fill outside: no NaN there)
    g, a = ctx.saved_tensors
    need_g, need_a = ctx.needs_input_grad
    grad_g = _fused(HardswishBackward, grad, a) if need_g else None
    grad_a = None
    if need_a:
        x = a.detach()
        grad_a = where(x > -3.0, where(x < 3.0, grad * g / 3.0, 0.0), 0.0)
    return grad_g, grad_a


HardswishBackward = _activation_backward(
    "HardswishBackward", "hardswish_backward", "HardswishBackwardBackward0", "HARDSWISH_BWD",
    backward=_hardswish_backward_backward,
    samples=(Sample(lambda m, g, a: m.ops.hardswish_backward(g, a), ((3, 4), (3, 4)),
                    low=-4.0, high=4.0, gradgrad=False),))
Hardswish = _activation(
    "Hardswish", "hardswish", "HardswishBackward0", "HARDSWISH", HardswishBackward,
    samples=(Sample(lambda m, a: m.nn.functional.hardswish(a), _one, low=-4.0, high=4.0),))


def _hardsigmoid_backward_backward(ctx, grad):
    raise RuntimeError("derivative for aten::hardsigmoid_backward is not implemented")


HardsigmoidBackward = _activation_backward(
    "HardsigmoidBackward", "hardsigmoid_backward", "torch::autograd::NotImplemented",
    "HARDSIGMOID_BWD", backward=_hardsigmoid_backward_backward,
    doc="Its derivative is PyTorch's ``NotImplemented`` (backward raises).",
    samples=(Sample(lambda m, g, a: m.ops.hardsigmoid_backward(_q(g), _q(a)) + g * a,
                    ((3, 4), (3, 4)), low=-4.0, high=4.0),))
Hardsigmoid = _activation(
    "Hardsigmoid", "hardsigmoid", "HardsigmoidBackward0", "HARDSIGMOID", HardsigmoidBackward,
    samples=(Sample(lambda m, a: m.nn.functional.hardsigmoid(a), _one, low=-4.0, high=4.0,
                    gradgrad=False),))


def _log_sigmoid_second(a):
    s = _sig(a)
    return -(s * (1 - s))


LogSigmoidBackward = _activation_backward(
    "LogSigmoidBackward", "log_sigmoid_backward", "LogSigmoidBackwardBackward0", "LOGSIGMOID_BWD",
    _log_sigmoid_second,
    samples=(Sample(lambda m, g, a: m.ops.log_sigmoid_backward(g, a, (-a.detach().abs()).exp()),
                    ((3, 4), (3, 4))),))
LogSigmoid = _activation(
    "LogSigmoid", "log_sigmoid", "LogSigmoidBackward0", "LOGSIGMOID", LogSigmoidBackward,
    samples=(Sample(lambda m, a: m.nn.functional.logsigmoid(a), _one, low=-5.0, high=5.0),))


# ------------------------------------------------------------------ leaky_relu
@formula_op("leaky_relu_backward", "LeakyReluBackwardBackward0", arity=2,
            term=call("MUL", arg(0), call("LEAKY_RELU_GRAD", arg(1), number("slope"))),
            save_inputs=(1,),
            samples=(Sample(lambda m, g, a: m.ops.leaky_relu_backward(g, a, 0.2, False),
                            ((3, 4), (3, 4))),),
            doc="``grad`` where the input is positive, else ``grad * negative_slope``.")
def LeakyReluBackward(ctx, grad):
    (a,) = ctx.saved_tensors
    need_g, need_a = ctx.needs_input_grad
    slope = ctx.params["slope"]
    return ((leaky_relu_backward(grad, a, slope) if need_g else None),
            (zeros_like(a) if need_a else None))


@export(aten=True)
def leaky_relu_backward(grad: Tensor, input: Tensor, negative_slope: float,
                        self_is_result: bool = False) -> Tensor:
    """ATen's ``leaky_relu_backward``."""
    _float_only("leaky_relu_backward", grad)
    if self_is_result and negative_slope <= 0:
        raise RuntimeError(
            "In-place leakyReLu backward calculation is triggered with a negative slope which is "
            "not supported. This is caused by calling in-place forward function with a negative "
            "slope, please call out-of-place version instead. File an issue at "
            "https://github.com/pytorch/pytorch if you do require supporting in-place leakRelu "
            "backward calculation with negative slope")
    return apply(LeakyReluBackward, (grad, input), (grad._data, input._data),
                 slope=float(negative_slope))


# (the formula ops with a number parameter: the parameter is the formula's second operand)
def _leaky_relu(K, a, *, slope):
    return K.binary(K.LEAKY_RELU, a, _param(a, slope))


@formula_op("leaky_relu", "LeakyReluBackward0", "LEAKY_RELU", arity=2, forward=_leaky_relu,
            save_inputs=(0,),
            samples=(Sample(lambda m, a: m.nn.functional.leaky_relu(a), _one),
                     Sample(lambda m, a: m.nn.functional.leaky_relu(a, 0.3), ((5,),))))
def LeakyRelu(ctx, grad):
    (a,) = ctx.saved_tensors
    return (leaky_relu_backward(grad, a, ctx.params["slope"]),)


@formula_op("leaky_relu_", "LeakyReluBackward1", "LEAKY_RELU", arity=2, base=LeakyRelu,
            save_inputs=(), save_output=True,
            doc="``leaky_relu_``: saves its output (PyTorch's ``LeakyReluBackward1``).",
            samples=(Sample(lambda m, a: m.nn.functional.leaky_relu(a * 1, 0.2, inplace=True),
                            _one),))
def LeakyReluInplace(ctx, grad):
    (out,) = ctx.saved_tensors
    return (leaky_relu_backward(grad, out, ctx.params["slope"], True),)


def leaky_relu(input: Tensor, negative_slope: float = 0.01) -> Tensor:
    """``x`` where ``x > 0``, else ``negative_slope * x``."""
    _float_only("leaky_relu", input)
    return apply(LeakyRelu, (input,), (input._data,), slope=float(negative_slope))


def leaky_relu_(input: Tensor, negative_slope: float = 0.01) -> Tensor:
    """``leaky_relu`` written into ``input``."""
    _float_only("leaky_relu", input)
    return _write(input, lambda t: apply(LeakyReluInplace, (t,), (t._data,),
                                         slope=float(negative_slope)), saves_self=False)


# ------------------------------------------------------------------ elu, selu, celu
_ELU_KINDS = {"elu": ("ELU", "ELU_GRAD"), "celu": ("CELU", "CELU_GRAD"), "selu": ("SELU", "SELU_GRAD")}


@formula_op("elu_backward", "EluBackwardBackward0", arity=2, term=by("kind", {
    kind: call("MUL", arg(0), call(code, arg(1)) if kind == "selu" else
               call(code, arg(1), number("alpha")))
    for kind, (_, code) in _ELU_KINDS.items()}),
    save_inputs=(0, 1),
    samples=(Sample(lambda m, g, a: m.ops.elu_backward(g, 0.7, 1.0, 1.0, False, a),
                    ((3, 4), (3, 4))),),
    doc="""ATen's ``elu_backward`` from the input: ``grad`` times the derivative (one kernel), for
    elu, celu (alpha) and selu.""")
def EluBackward(ctx, grad):
    g, a = ctx.saved_tensors
    need_g, need_a = ctx.needs_input_grad
    kind, alpha = ctx.params["kind"], ctx.params["alpha"]
    grad_g = _elu_backward(grad, a, kind, alpha) if need_g else None
    grad_a = None
    if need_a:
        # PyTorch's elu_double_backward: elu_backward(grad * grad_output * input_scale) times
        # the mask of strictly negative inputs (multiplied: a NaN stays NaN)
        scale = 1.0 / float(np.float32(alpha)) if kind == "celu" else 1.0  # (1 / toFloat())
        mask = (a.detach() < 0).to(a.dtype)
        grad_a = _elu_backward(grad * g * scale, a, kind, alpha) * mask
    return grad_g, grad_a


def _elu_backward(grad, a, kind, alpha):
    return apply(EluBackward, (grad, a), (grad._data, a._data), kind=kind, alpha=alpha)


class _EluOp(FormulaOp):
    """elu, celu (the formula of the input and ``alpha``) and selu (of the input alone)."""

    save_inputs = (0,)
    kind = "elu"

    @classmethod
    def forward(cls, K, a, *, alpha):
        code = getattr(K, cls.code)
        return K.unary(code, a) if cls.kind == "selu" else K.binary(code, a, _param(a, alpha))

    @classmethod
    def backward(cls, ctx, grad):
        (a,) = ctx.saved_tensors
        return (_elu_backward(grad, a, cls.kind, ctx.params["alpha"]),)


class _EluInplace(_EluOp):
    """The in-place forms save their output; the backward is PyTorch's from the result
    (``grad * input_scale * (result + alpha * scale)`` where it is not positive)."""

    save_inputs = ()
    save_output = True

    @classmethod
    def backward(cls, ctx, grad):
        (out,) = ctx.saved_tensors
        alpha = ctx.params["alpha"]
        if alpha < 0:
            raise RuntimeError(
                "In-place elu backward calculation is triggered with a negative slope which is "
                "not supported. This is caused by calling in-place forward function with a "
                "negative slope, please call out-of-place version instead.")
        if cls.kind == "elu":
            neg, pos = grad * (out + alpha), grad
        elif cls.kind == "celu":
            neg, pos = grad * (1.0 / float(np.float32(alpha))) * (out + alpha), grad
        else:
            neg, pos = grad * (out + _SELU_ALPHA * _SELU_SCALE), grad * _SELU_SCALE
        return (where(out.detach() <= 0, neg, pos),)


def _elu_op(cls_name: str, name: str, node: str, kind: str, base: type, **declarations):
    """The op ``name`` computing the formula of ``kind`` (elu, selu or celu), made by the formula
    factory on the family's ``base``."""
    return make_formula_op(name, node, _ELU_KINDS[kind][0], arity=1 if kind == "selu" else 2,
                           base=base, kind=kind, cls_name=cls_name, module=__name__,
                           **declarations)


Elu = _elu_op("Elu", "elu", "EluBackward0", "elu", _EluOp,
              samples=(Sample(lambda m, a: m.nn.functional.elu(a), _one),
                       Sample(lambda m, a: m.nn.functional.elu(a, 0.5), ((5,),))))
Selu = _elu_op("Selu", "selu", "EluBackward0", "selu", _EluOp,
               samples=(Sample(lambda m, a: m.selu(a), _one),))
Celu = _elu_op("Celu", "celu", "CeluBackward0", "celu", _EluOp,
               samples=(Sample(lambda m, a: m.nn.functional.celu(a, 0.7), _one),))
EluInplace = _elu_op(
    "EluInplace", "elu_", "EluBackward1", "elu", _EluInplace,
    samples=(Sample(lambda m, a: m.nn.functional.elu(a * 1, 0.8, inplace=True), _one),))
SeluInplace = _elu_op("SeluInplace", "selu_", "EluBackward1", "selu", _EluInplace,
                      samples=(Sample(lambda m, a: m.selu_(a * 1), _one),))
CeluInplace = _elu_op("CeluInplace", "celu_", "CeluBackward1", "celu", _EluInplace,
                      samples=(Sample(lambda m, a: m.celu_(a * 1, 1.5), _one),))


_ELU_OPS = {"elu": (Elu, EluInplace), "selu": (Selu, SeluInplace), "celu": (Celu, CeluInplace)}


def _elu(kind: str, input: Tensor, alpha: float, inplace: bool) -> Tensor:
    if not isinstance(input, Tensor):
        raise TypeError(f"{kind}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    _float_only("elu", input)
    if kind == "celu" and alpha == 0:
        raise RuntimeError("ZeroDivisionError: alpha cannot be 0 for CELU")
    op, op_ = _ELU_OPS[kind]
    if not inplace:
        return apply(op, (input,), (input._data,), alpha=float(alpha))

    return _write(input, lambda t: apply(op_, (t,), (t._data,), alpha=float(alpha)),
                  saves_self=False)


def elu(input: Tensor, alpha: float = 1.0) -> Tensor:
    """``x`` where ``x > 0``, else ``alpha * (exp(x) - 1)``."""
    return _elu("elu", input, alpha, False)


def elu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    return _elu("elu", input, alpha, True)


@export
def selu(input: Tensor) -> Tensor:
    """``scale * elu(x, alpha)`` with SELU's constants."""
    return _elu("selu", input, _SELU_ALPHA, False)


@export
def selu_(input: Tensor) -> Tensor:
    return _elu("selu", input, _SELU_ALPHA, True)


@export
def celu(input: Tensor, alpha: float = 1.0) -> Tensor:
    """``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``."""
    return _elu("celu", input, alpha, False)


@export
def celu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    return _elu("celu", input, alpha, True)


# ------------------------------------------------------------------ softplus
@formula_op("softplus_backward", "SoftplusBackwardBackward0", arity=2, term=call(
    "MUL", arg(0), call("SOFTPLUS_GRAD", by(lambda beta: beta == 1, {
        True: arg(1), False: call("MUL", arg(1), number("beta"))}), number("threshold"))),
    save_inputs=(0, 1),
    samples=(Sample(lambda m, g, a: m.ops.softplus_backward(g, a, 2.0, 1.5), ((3, 4), (3, 4))),))
def SoftplusBackward(ctx, grad):
    g, a = ctx.saved_tensors
    need_g, need_a = ctx.needs_input_grad
    beta, threshold = ctx.params["beta"], ctx.params["threshold"]
    grad_g = softplus_backward(grad, a, beta, threshold) if need_g else None
    grad_a = None
    if need_a:
        # PyTorch's softplus_double_backward: sigmoid_backward(grad * grad_output,
        # sigmoid(z)) times the mask z < threshold (multiplied), times beta

        z = a * beta
        mask = (z.detach() < threshold).to(a.dtype)
        grad_a = sigmoid_backward(grad * g, z.sigmoid()) * mask * beta
    return grad_g, grad_a


@export(aten=True)
def softplus_backward(grad: Tensor, input: Tensor, beta: float, threshold: float) -> Tensor:
    """ATen's ``softplus_backward``."""
    _float_only("softplus_backward", grad)
    return apply(SoftplusBackward, (grad, input), (grad._data, input._data), beta=float(beta),
                 threshold=float(threshold))


def _softplus(K, a, *, beta, threshold):
    if beta == 1:
        return K.binary(K.SOFTPLUS, a, _param(a, threshold))
    z = K.binary(K.MUL, a, _param(a, beta))
    soft = K.binary(K.DIV, K.binary(K.SOFTPLUS, z, _param(a, np.inf)), _param(a, beta))
    return K.where(K.binary(K.GT, z, _param(a, threshold), np.bool_), a, soft)


@formula_op("softplus", "SoftplusBackward0", "SOFTPLUS", arity=2, forward=_softplus,
            save_inputs=(0,),
            samples=(Sample(lambda m, a: m.nn.functional.softplus(a), _one),
                     Sample(lambda m, a: m.nn.functional.softplus(a, 2.0, 1.5), ((5,),))))
def Softplus(ctx, grad):
    (a,) = ctx.saved_tensors
    return (softplus_backward(grad, a, ctx.params["beta"], ctx.params["threshold"]),)


def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """``log(1 + exp(beta x)) / beta``, and ``x`` where ``beta x > threshold``."""
    _float_only("softplus", input)
    return apply(Softplus, (input,), (input._data,), beta=float(beta), threshold=float(threshold))


# ------------------------------------------------------------------ hardtanh
_ZERO = number(0)  # (hardtanh_backward's 0, made once)


@formula_op("hardtanh_backward", "HardtanhBackwardBackward0", arity=2, term=select(
    call("GT", arg(1), number("lo")), select(call("LT", arg(1), number("hi")), arg(0), _ZERO),
    _ZERO), save_inputs=(1,),
    samples=(Sample(lambda m, g, a: m.ops.hardtanh_backward(g, a, -0.5, 1.0),
                    ((3, 4), (3, 4))),),
    doc="``grad`` strictly inside ``(min_val, max_val)``, else 0 (NaN inputs too, as PyTorch's).")
def HardtanhBackward(ctx, grad):
    (a,) = ctx.saved_tensors
    need_g, need_a = ctx.needs_input_grad
    lo, hi = ctx.params["lo"], ctx.params["hi"]
    return ((hardtanh_backward(grad, a, lo, hi) if need_g else None),
            (zeros_like(a) if need_a else None))


@export(aten=True)
def hardtanh_backward(grad: Tensor, input: Tensor, min_val: float, max_val: float) -> Tensor:
    """ATen's ``hardtanh_backward``."""
    _float_only("hardshrink_backward", grad)  # (PyTorch's kernel name)
    return apply(HardtanhBackward, (grad, input), (grad._data, input._data), lo=min_val,
                 hi=max_val)


@formula_op("hardtanh", "HardtanhBackward0",
            term=call("MINIMUM", call("MAXIMUM", arg(0), number("lo")), number("hi")),
            save_inputs=(0,),
            samples=(Sample(lambda m, a: m.nn.functional.hardtanh(a), _one),
                     # (PyTorch's hardtanh_backward passes a NaN input's gradient in its scalar
                     # loop, which takes tensors of under 8 elements, and gives 0 in its
                     # vectorised one, which numgrad's follows: samples of 8 elements and more)
                     Sample(lambda m, a: m.nn.functional.relu6(a * 4), ((4, 5),))))
def Hardtanh(ctx, grad):
    (a,) = ctx.saved_tensors
    return (hardtanh_backward(grad, a, ctx.params["lo"], ctx.params["hi"]),)


def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:
    """``input`` clamped to ``[min_val, max_val]`` (integers stay integers)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"hardtanh(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    if input._data.dtype == np.bool_:
        raise RuntimeError("Bool inputs not supported for hardtanh")
    return apply(Hardtanh, (input,), (input._data,), lo=min_val, hi=max_val)


def hardtanh_(input: Tensor, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:
    """``hardtanh`` written into ``input`` (PyTorch's node is still ``HardtanhBackward0``)."""
    return _write(input, hardtanh, min_val, max_val)


# ------------------------------------------------------------------ public parameterless forms
def _act(op, kernel: str, doc: str):
    def fn(input: Tensor) -> Tensor:
        _float_only(kernel, input)
        return apply(op, (input,), (input._data,))

    fn.__name__ = fn.__qualname__ = op.name
    fn.__doc__ = doc
    return fn


silu: UnaryOp = _act(Silu, "silu", "``x * sigmoid(x)``.")
mish: UnaryOp = _act(Mish, "mish", "``x * tanh(softplus(x))``.")
hardswish: UnaryOp = _act(Hardswish, "hardswish", "``x * relu6(x + 3) / 6``.")
hardsigmoid: UnaryOp = _act(Hardsigmoid, "hardsigmoid", "``relu6(x + 3) / 6``.")
log_sigmoid: UnaryOp = _act(LogSigmoid, "log_sigmoid", "``log(sigmoid(x))``, without overflow.")
_gelu: UnaryOp = _act(Gelu, "GeluKernelImpl", "")
_gelu_tanh: UnaryOp = _act(GeluTanh, "GeluKernelImpl", "")


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    """``x * Phi(x)`` (``approximate='tanh'``: PyTorch's tanh approximation)."""
    if approximate == "none":
        return _gelu(input)
    if approximate == "tanh":
        return _gelu_tanh(input)
    raise RuntimeError("approximate argument must be either none or tanh.")


def _backward_of(op, kernel):
    def fn(grad: Tensor, input: Tensor) -> Tensor:
        _float_only(kernel, input)
        return _fused(op, grad, input)

    fn.__name__ = fn.__qualname__ = op.name
    return fn


silu_backward: BackwardOp = export(
    _backward_of(SiluBackward, "silu_backward"),
    "silu_backward", aten=True)
mish_backward: BackwardOp = export(
    _backward_of(MishBackward, "mish_backward"),
    "mish_backward", aten=True)
hardswish_backward: BackwardOp = export(
    _backward_of(HardswishBackward, "hardswish_backward"),
    "hardswish_backward", aten=True)
hardsigmoid_backward: BackwardOp = export(
    _backward_of(HardsigmoidBackward, "hardsigmoid_backward"),
    "hardsigmoid_backward", aten=True)


@export(aten=True)
def gelu_backward(grad: Tensor, input: Tensor, approximate: str = "none") -> Tensor:
    """ATen's ``gelu_backward``."""
    return _fused(GeluTanhBackward if approximate == "tanh" else GeluBackward, grad, input)


@export(aten=True)
def log_sigmoid_backward(grad: Tensor, input: Tensor, buffer=None) -> Tensor:
    """ATen's ``log_sigmoid_backward`` (the buffer, ATen's scratch, is not used)."""
    if isinstance(buffer, Tensor) and buffer.dtype != input.dtype:
        raise RuntimeError(f"Found dtype {_type_name(buffer)} but expected {_type_name(input)}")
    _float_only("log_sigmoid_backward", input)
    return _fused(LogSigmoidBackward, grad, input)


@export(aten=True)
def elu_backward(grad: Tensor, alpha: float, scale: float, input_scale: float,
                 is_result: bool, self_or_result: Tensor) -> Tensor:
    """ATen's ``elu_backward``, for elu (``scale = input_scale = 1``), celu (``input_scale = 1 /
    alpha``) and selu's constants, from the input."""
    _float_only("elu_backward", grad)
    if is_result:
        raise NotImplementedError("elu_backward from the result: numgrad's in-place forms "
                                  "record their own backward")
    if scale == 1 and input_scale == 1:
        kind = "elu"
    elif scale == 1 and abs(input_scale * alpha - 1) < 1e-12:
        kind = "celu"
    elif abs(scale - _SELU_SCALE) < 1e-12 and abs(alpha - _SELU_ALPHA) < 1e-12 and input_scale == 1:
        kind = "selu"
    else:
        raise NotImplementedError("elu_backward: numgrad takes elu's, celu's and selu's "
                                  "scales only")
    return _elu_backward(grad, self_or_result, kind, float(alpha))


# ------------------------------------------------------------------ nn.functional's, as methods
@export(function=False, method=True)
def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """``nn.functional.hardshrink`` (PyTorch's ``Tensor.hardshrink``): ``x`` where
    ``|x| > lambd``, else 0."""
    from ..nn import functional

    return functional.hardshrink(input, lambd)


@export(function=False, method=True)
def prelu(input: Tensor, weight: Tensor) -> Tensor:
    """``nn.functional.prelu`` (PyTorch's ``Tensor.prelu``): ``x`` where ``x > 0``, else
    ``weight * x`` (one weight, or one per channel)."""
    from ..nn import functional

    return functional.prelu(input, weight)
