"""Complex tensors' own ops: their parts (``real``, ``imag``, ``view_as_real``,
``view_as_complex``), ``conj``, ``abs``, ``angle``, ``sgn``, and the constructors ``complex`` and
``polar``.

Gradients follow PyTorch's convention: the gradient of a real loss L with respect to z = x + iy is
the conjugate Wirtinger derivative scaled by 2, dL/dx + i dL/dy. A real input of a complex result
gets the real part of its gradient (the engine takes it, as PyTorch's ``handle_r_to_c``).
"""
from __future__ import annotations

from .._dtype import FLOAT, torch_name
from ..tensor import Tensor
from . import _jvp
from ._names import export
from .registry import Op, Sample, apply, register
from ._promote import broadcast_shapes
from .._dtype import from_numpy_dtype
import numgrad


def _ng():
    return numgrad


@export(method=True)
def is_complex(input: Tensor) -> bool:
    """Whether the tensor's dtype is a complex one."""
    return input.dtype.is_complex


_PAIR = ((3, 4), (3, 4))


@register
class Real(Op):
    name, node = "real", "SelectBackward0"  # (PyTorch's real is a select of view_as_real)
    jvp = _jvp.linear
    is_view = True
    samples = (Sample(lambda m, a, b: (m.complex(a, b) * m.complex(b, a)).real, _PAIR),)

    @staticmethod
    def forward(K, a):
        return K.complex_real(a)

    @staticmethod
    def backward(ctx, grad):
        return (grad,)  # (a real gradient of a complex input: the engine makes it complex)


@register
class Imag(Op):
    name, node = "imag", "SelectBackward0"
    jvp = _jvp.linear
    is_view = True
    samples = (Sample(lambda m, a, b: (m.complex(a, b) * (1 + 2j)).imag, _PAIR),)

    @staticmethod
    def forward(K, a):
        return K.complex_imag(a)

    @staticmethod
    def backward(ctx, grad):
        return (grad * 1j,)


@register
class ViewAsReal(Op):
    name, node = "view_as_real", "ViewAsRealBackward0"
    jvp = _jvp.linear
    is_view = True
    samples = (Sample(lambda m, a, b: m.view_as_real(m.complex(a, b) / m.complex(b, a)), _PAIR,
                      low=0.5),)

    @staticmethod
    def forward(K, a):
        return K.complex_pairs(a)

    @staticmethod
    def backward(ctx, grad):
        return (view_as_complex(grad.contiguous()),)


@register
class ViewAsComplex(Op):
    name, node = "view_as_complex", "ViewAsComplexBackward0"
    jvp = _jvp.linear
    is_view = True
    samples = (Sample(lambda m, a: (m.view_as_complex(a) * (1 - 2j)).imag, ((3, 2),)),
               Sample(lambda m, a: m.view_as_complex(a[1:]).abs(), ((3, 4, 2),), low=0.5))

    @staticmethod
    def forward(K, a):
        return K.complex_from_pairs(a)

    @staticmethod
    def backward(ctx, grad):
        return (view_as_real(grad),)


@register
class Conj(Op):
    """The complex conjugate, in memory (PyTorch's ``conj`` is a lazy view with the same
    values)."""

    name, node = "conj", "ConjBackward0"
    jvp = _jvp.linear
    samples = (Sample(lambda m, a, b: (m.complex(a, b).conj() * (2 - 1j)).imag, _PAIR),)

    @staticmethod
    def forward(K, a):
        return K.complex_conj(a)

    @staticmethod
    def backward(ctx, grad):
        return (conj(grad),)


@register
class AbsComplex(Op):
    name, node = "abs_complex", "AbsBackward0"
    samples = (Sample(lambda m, a, b: m.complex(a, b).abs(), _PAIR, low=0.5),
               Sample(lambda m, a, b: (m.complex(a, b) * (0.5 + 1j)).abs(), _PAIR, low=0.5))
    save_inputs = (0,)
    complex_ok = True

    @staticmethod
    def forward(K, a):
        return K.complex_abs(a)

    @staticmethod
    def backward(ctx, grad):
        (z,) = ctx.saved_tensors
        return (grad * sgn(z),)

    @staticmethod
    def jvp(ctx, t):  # d|z| = Re(conj(sgn z) dz)
        return None if t is None else real(conj(sgn(ctx.inputs[0])) * t)


@register
class AngleComplex(Op):
    name, node = "angle_complex", "AngleBackward0"
    samples = (Sample(lambda m, a, b: m.complex(a, b).angle(), _PAIR, low=0.5),)
    save_inputs = (0,)
    complex_ok = True

    @staticmethod
    def forward(K, a):
        return K.complex_angle(a)

    @staticmethod
    def backward(ctx, grad):
        # d angle = (x dy - y dx) / |z|^2: the gradient grad * i z / |z|^2, 0 at z = 0
        (z,) = ctx.saved_tensors
        r2 = real(z * conj(z))
        zero = r2.detach() == 0
        return (_ng().where(zero, 0, grad * (z * 1j) / _ng().where(zero, 1, r2)),)

    @staticmethod
    def jvp(ctx, t):  # d angle = Im(conj(z) dz) / |z|^2, 0 at z = 0
        if t is None:
            return None
        z = ctx.inputs[0]
        r2 = real(z * conj(z))
        zero = r2.detach() == 0
        return _ng().where(zero, 0, imag(conj(z) * t) / _ng().where(zero, 1, r2))


@register
class Complex(Op):
    name, node = "complex", "ComplexBackward0"
    jvp = _jvp.linear
    samples = (Sample(lambda m, a, b: m.view_as_real(m.complex(a, b)), _PAIR),
               Sample(lambda m, a, b: (m.complex(a, b) * (0.5 - 1j)).real, ((4,), (3, 1))))

    @staticmethod
    def forward(K, re, im):
        return K.complex_from_parts(re, im, False)

    @staticmethod
    def backward(ctx, grad):
        need_re, need_im = ctx.needs_input_grad
        return (real(grad) if need_re else None), (imag(grad) if need_im else None)


@register
class Polar(Op):
    name, node = "polar", "PolarBackward0"
    samples = (Sample(lambda m, a, b: m.view_as_real(m.polar(a, b)), _PAIR, low=0.5),)
    save_inputs = (0,)
    save_output = True

    @staticmethod
    def forward(K, r, theta):
        return K.complex_from_parts(r, theta, True)

    @staticmethod
    def backward(ctx, grad):
        # z = r e^{i theta}: dL/dr = Re(conj(e^{i theta}) g), dL/dtheta = Re(conj(i z) g)
        r, z = ctx.saved_tensors
        need_r, need_t = ctx.needs_input_grad
        unit = polar(_ng().ones_like(r), angle(z)) if need_r else None
        g_r = real(grad * conj(unit)) if need_r else None
        g_t = real(grad * conj(z * 1j)) if need_t else None
        return g_r, g_t

    @staticmethod
    def jvp(ctx, t_r, t_theta):  # dz = e^{i theta} dr + i z dtheta
        r, theta = ctx.inputs
        out = None
        if t_r is not None:
            out = polar(_ng().ones_like(r), theta) * t_r
        if t_theta is not None:
            term = ctx.result * 1j * t_theta
            out = term if out is None else out + term
        return out


def _complex_only(input: Tensor, what: str) -> None:
    if not input.dtype.is_complex:
        raise RuntimeError(f"{what} is not implemented for tensors with non-complex dtypes.")


def real(input: Tensor) -> Tensor:
    """The real parts, a view of a complex tensor; a real tensor itself."""
    if not input.dtype.is_complex:
        return input
    return apply(Real, (input,), (input._data,))


@export
def imag(input: Tensor) -> Tensor:
    """The imaginary parts, a view of a complex tensor (PyTorch's error for a real one)."""
    _complex_only(input, "imag")
    return apply(Imag, (input,), (input._data,))


@export
def view_as_real(input: Tensor) -> Tensor:
    """A complex tensor as a real one with a last dimension of 2 (real and imaginary parts),
    sharing its memory."""
    if not input.dtype.is_complex:
        raise RuntimeError("view_as_real is only supported for complex tensors")
    return apply(ViewAsReal, (input,), (input._data,))


@export
def view_as_complex(input: Tensor) -> Tensor:
    """A float tensor whose last dimension holds (real, imaginary) pairs as a complex tensor,
    sharing its memory, with PyTorch's checks of dtype and layout."""
    a = input._data
    if input.dtype._category != FLOAT or a.dtype.kind == "V":  # ("V": bfloat16)
        raise RuntimeError("view_as_complex is only supported for half, float and double "
                           f"tensors, but got a tensor of scalar type: {torch_name(a.dtype)}")
    if a.dtype.itemsize == 2:
        _no_complex32("view_as_complex")
    if a.ndim == 0 or a.shape[-1] != 2:
        raise RuntimeError("Tensor must have a last dimension of size 2")
    size = a.itemsize
    if not a.size:  # (an empty one, of any strides: NumPy's are 0)
        return apply(ViewAsComplex, (input,), (a,))
    if a.strides[-1] != size:
        raise RuntimeError("Tensor must have a last dimension with stride 1")
    if any((s // size) % 2 for s in a.strides[:-1]):
        raise RuntimeError("Tensor must have a stride divisible by 2 for all but last dimension")
    if input.storage_offset() % 2:
        raise RuntimeError("Tensor must have a storage_offset divisible by 2")
    return apply(ViewAsComplex, (input,), (a,))


def conj(input: Tensor) -> Tensor:
    """The complex conjugate; a real tensor itself, as in PyTorch."""
    if not input.dtype.is_complex:
        return input
    return apply(Conj, (input,), (input._data,))


def abs(input: Tensor) -> Tensor:  # noqa: A001
    """The modulus of each complex element, in the parts' dtype."""
    return apply(AbsComplex, (input,), (input._data,))


def angle(input: Tensor) -> Tensor:
    """The argument of each complex element, in (-pi, pi], in the parts' dtype."""
    return apply(AngleComplex, (input,), (input._data,))


def sgn(input: Tensor) -> Tensor:
    """``z / |z|`` of each complex element, 0 where it is 0."""
    r = abs(input)
    zero = r == 0
    return _ng().where(zero, 0, input / _ng().where(zero, 1, r))


@export
def complex(real: Tensor, imag: Tensor, *, out=None) -> Tensor:  # noqa: A001
    """The complex tensor ``real + i imag``, broadcast (both float32 or both float64)."""
    return _from_parts(Complex, "complex", real, imag, out)


@export
def polar(abs: Tensor, angle: Tensor, *, out=None) -> Tensor:  # noqa: A001
    """The complex tensor ``abs * (cos(angle) + i sin(angle))``, broadcast."""
    return _from_parts(Polar, "polar", abs, angle, out)


def _no_complex32(name: str):
    raise NotImplementedError(f"{name}() of float16 tensors makes a complex32 (torch.chalf) "
                              "tensor in PyTorch, a dtype numgrad does not have")


def _from_parts(op, name: str, a, b, out) -> Tensor:
    for arg, t in (("real" if name == "complex" else "abs", a),
                   ("imag" if name == "complex" else "angle", b)):
        if not isinstance(t, Tensor):
            raise TypeError(f"{name}(): argument '{arg}' (position "
                            f"{1 if t is a else 2}) must be Tensor, not {type(t).__name__}")
    da, db = a._data.dtype, b._data.dtype
    if da.kind != "f" or db.kind != "f":
        raise RuntimeError(f"Expected both inputs to be Half, Float or Double tensors but got "
                           f"{torch_name(da)} and {torch_name(db)}")
    if da != db:
        raise RuntimeError(f"Expected object of scalar type {torch_name(da)} but got scalar type "
                           f"{torch_name(db)} for second argument")
    if da.itemsize == 2 and name == "polar":
        raise NotImplementedError(f"\"polar_cpu\" not implemented for '{torch_name(da)}'")
    if da.itemsize == 2:  # (float16: PyTorch's complex32)
        _no_complex32(name)

    broadcast_shapes(a._data.shape, b._data.shape)
    result = apply(op, (a, b), (a._data, b._data))
    if out is not None:
        want = from_numpy_dtype(result._data.dtype)
        if out.dtype is not want:
            raise RuntimeError(f"Expected object of scalar type {torch_name(want.np)} but got "
                               f"scalar type {torch_name(out._data.dtype)} for argument 'out'")
        if tuple(out.shape) != tuple(result.shape):
            out.resize_(result.shape)
        out.copy_(result)
        return out
    return result
