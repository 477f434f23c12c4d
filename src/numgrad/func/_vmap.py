"""``vmap``: a function of one example run on a batch, by batching rules.

Inside ``vmap(f)``, each batched input is a ``BatchedTensor``: a Tensor whose ``shape`` is one
example's (the logical shape) and whose ``_value`` is the whole batch (the physical tensor, the
batch dimension first). Every numgrad function called on one reaches ``BatchedTensor.
__torch_function__`` (numgrad's ``__torch_function__`` protocol, ``numgrad.overrides``), which runs
the op's batching rule: the same op, on the physical tensors, with its dimensions shifted past the
batch dimension (``sum(x, 0)`` runs as ``sum(v, 1)``), its operands aligned (``x + y`` with ``y``
unbatched broadcasts as it is), or a composition of batched ops (``linear`` as ``matmul`` plus
``add``). So a vmapped function runs the same kernels over one more dimension, not a Python loop.
An op without a rule falls back to a loop over the batch, with PyTorch's performance warning.

Levels nest: inside ``vmap(vmap(f))`` the value of a BatchedTensor of the inner (later) level is
a BatchedTensor of the outer level, so a rule that calls an op on that value reaches the outer
level's rule in turn.

The autograd engine never sees a BatchedTensor: the transforms that differentiate inside vmap
(``grad``, ``vjp``, ``jacrev``) differentiate the physical tensors, with the inputs they
differentiate batched (expanded) at every open level, so that the physical gradient of the
summed physical output is the batch of per-example gradients (the rules never mix two examples).
Forward-mode tangents live on the physical tensors too (``make_dual`` of a batched primal or
tangent duals their physical values).
"""
from __future__ import annotations

import functools
import inspect
import threading
import warnings

import numpy as np

from .. import arange, cat, matmul, ones_like, outer, overrides, stack
from .. import where as _where
from ..autograd import forward_ad
from ..autograd.function import Function
from ..overrides import TorchFunctionMode
from .._dtype import from_numpy_dtype
from ..creation import arange as _raw_arange  # (not numgrad.arange: no dispatch here)
from ..tensor import Size, Tensor
from . import _expanded, _pytree
import numgrad

# ------------------------------------------------------------------------------------- levels


class _Level:
    __slots__ = ("id", "size", "randomness")

    def __init__(self, id_: int, size: int, randomness: str):
        self.id = id_
        self.size = size
        self.randomness = randomness


_levels: list = []  # the open vmap levels, innermost last
_next_id = [1]


def active_levels() -> list:
    return list(_levels)


def _level(lid: int) -> _Level:
    for lvl in _levels:
        if lvl.id == lid:
            return lvl
    raise RuntimeError("vmap: a batched tensor escaped the vmap that made it; return it from the "
                       "vmapped function instead of storing it")


# ----------------------------------------------------------------------------- BatchedTensor
class BatchedTensor(Tensor):
    """One example's view of a batch inside ``vmap``: the logical tensor; ``_value`` holds the
    physical batch (batch dimension first), ``_level`` the vmap level."""

    __slots__ = ("_value", "_level", "_bsize", "_phys")

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        lid = _max_level(args, kwargs)
        lvl = _level(lid)
        name = _name(func)
        rule = RULES.get(name)
        if rule is not None:
            out = rule(func, lvl, args, kwargs)
            if out is not NotImplemented:
                return out
        return _unruled(func, lvl, args, kwargs, name)

    # The array (``_phys``) is the innermost physical value's, for the metadata only: code that
    # reaches for a batched tensor's array would compute with the whole batch as if it were one
    # example. A function run as a composition of ops (``_unruled``) that does is a primitive
    # without a rule: ``_Primitive``, and the loop; anything else (a function that does not
    # dispatch, as ``torch.ops.aten``'s) gets an error instead of wrong values.
    @property
    def _data(self):
        if getattr(_transparent, "depth", 0):
            raise _Primitive
        raise RuntimeError("vmap: a batched tensor reached a function that does not dispatch "
                           "on its arguments (no batching rule can run): call it outside vmap, "
                           "or once per example")

    def __iter__(self):
        if not self.ndim:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(len(self)))

    # (the metadata that reads the array, and ``unflatten``, a method that does not dispatch)
    @property
    def is_cuda(self) -> bool:
        return innermost(self).is_cuda

    @property
    def itemsize(self) -> int:
        return self._phys.dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self.numel() * self._phys.dtype.itemsize

    def unflatten(self, dim, sizes):
        return numgrad.unflatten(self, dim, sizes)

    @_data.setter
    def _data(self, value):
        self._phys = value

    @property
    def dtype(self):
        return from_numpy_dtype(self._phys.dtype)

    @property
    def device(self):
        return Tensor.device.fget(innermost(self))

    # (property getters are not dispatched: the logical metadata, here)
    @property
    def shape(self) -> Size:
        return Size(tuple(self._value.shape)[1:])

    def size(self, dim=None):
        shape = tuple(self._value.shape)[1:]
        if dim is None:
            return Size(shape)
        n = len(shape)
        if not -max(n, 1) <= dim < max(n, 1):
            raise IndexError(f"Dimension out of range (expected to be in range of "
                             f"[{-max(n, 1)}, {max(n, 1) - 1}], but got {dim})")
        return shape[dim % n]

    @property
    def ndim(self) -> int:
        return self._value.ndim - 1

    def dim(self) -> int:
        return self._value.ndim - 1

    def ndimension(self) -> int:
        return self._value.ndim - 1

    def numel(self) -> int:
        n = 1
        for s in tuple(self._value.shape)[1:]:
            n *= s
        return n

    nelement = numel

    def __len__(self) -> int:
        shape = tuple(self._value.shape)[1:]
        if not shape:
            raise TypeError("len() of a 0-d tensor")
        return shape[0]

    @property
    def requires_grad(self) -> bool:
        return self._value.requires_grad

    @property
    def grad_fn(self):
        return self._value.grad_fn

    @property
    def is_leaf(self) -> bool:
        return self._value.is_leaf

    @property
    def data(self):
        return _make(self._value.data, _level(self._level))

    def __repr__(self) -> str:
        return f"BatchedTensor(lvl={self._level}, bdim=0, value=\n{self._value!r}\n)"

    __str__ = __repr__

    def __hash__(self) -> int:
        return id(self)


def _make(value: Tensor, lvl: _Level) -> BatchedTensor:
    """A BatchedTensor of level ``lvl`` whose physical value is ``value`` (batch first)."""
    b = object.__new__(BatchedTensor)
    inner = value
    while type(inner) is BatchedTensor:
        inner = inner._value
    b._phys = inner._data  # (dtype and device; the shape is the logical one, above)
    b._requires_grad = inner._requires_grad
    b._grad = b._grad_fn = b._hooks = b._accumulator = b._base = None
    b._version_counter = inner._version_counter
    b._value = value
    b._level = lvl.id
    b._bsize = lvl.size
    return b


def _max_level(args, kwargs) -> int:
    best = 0
    for a in (*args, *kwargs.values()):
        if type(a) is BatchedTensor:
            best = max(best, a._level)
        elif type(a) in (list, tuple):
            for b in a:
                if type(b) is BatchedTensor:
                    best = max(best, b._level)
    return best


def _name(func) -> str:
    """The key of ``func``'s rule: PyTorch's name without its namespace (cached: a miss of
    ``resolve_name`` walks every public function)."""
    try:
        return _NAMES[func]
    except (KeyError, TypeError):
        pass
    name = overrides.resolve_name(func) or getattr(func, "__name__", "")
    for prefix in ("torch.Tensor.", "torch.nn.functional.", "torch.linalg.", "torch.special.",
                   "torch.fft.", "torch."):
        if name.startswith(prefix):
            name = name[len(prefix):]
            break
    try:
        _NAMES[func] = name
    except TypeError:  # (an unhashable callable)
        pass
    return name


_NAMES: dict = {}


def _value_at(x, lid: int):
    """The physical value of ``x`` if it is batched at level ``lid``, else None."""
    return x._value if type(x) is BatchedTensor and x._level == lid else None


def _batched(x, lvl: _Level) -> Tensor:
    """``x``'s physical value at ``lvl``: its own, or ``x`` expanded along a new first
    dimension."""
    if type(x) is BatchedTensor and x._level == lvl.id:
        return x._value
    return x.unsqueeze(0).expand((lvl.size, *tuple(x.shape)))


def innermost(x: Tensor) -> Tensor:
    while type(x) is BatchedTensor:
        x = x._value
    return x


def chain_of(x) -> list:
    """The levels ``x`` is batched at, from its outer wrapper (the innermost level) inwards."""
    out = []
    while type(x) is BatchedTensor:
        out.append(_level(x._level))
        x = x._value
    return out


def rewrap(physical: Tensor, chain: list) -> Tensor:
    """``physical`` wrapped at the levels of ``chain`` (``chain_of``'s order)."""
    for lvl in reversed(chain):
        physical = _make(physical, lvl)
    return physical


def batch_at_all_levels(x: Tensor) -> Tensor:
    """``x`` batched (its value expanded where it was not) at every open level: what a
    transform that differentiates inside vmap differentiates, so that each example has its
    own copy."""
    return _batch_all(x, list(_levels))


def batch_like(x: Tensor, like: Tensor) -> Tensor:
    """``x`` batched (expanded where it is not) at the levels ``like`` is batched at."""
    return _batch_all(x, list(reversed(chain_of(like))))


def _batch_all(x, levels):
    if not levels:
        return x
    lvl = levels[-1]
    if type(x) is BatchedTensor and x._level == lvl.id:
        return _make(_batch_all(x._value, levels[:-1]), lvl)
    y = _batch_all(x, levels[:-1])
    return _make(y.unsqueeze(0).expand((lvl.size, *tuple(y.shape))), lvl)


def _wrap_out(out, lvl: _Level):
    if isinstance(out, Tensor):
        return _make(out, lvl)
    if isinstance(out, tuple):
        items = [_wrap_out(o, lvl) for o in out]
        return tuple(items) if type(out) is tuple else type(out)(*items)
    if isinstance(out, list):
        return [_wrap_out(o, lvl) for o in out]
    return out


# --------------------------------------------------------------------------------- fallback
class _Primitive(BaseException):
    """A function run as a composition on batched tensors reached for their arrays (a kernel
    of its own): it runs once per example instead. (A BaseException: no ``except Exception``
    on the way takes it for the function's own error.)"""


def _numgrad():
    return numgrad


def _split_along(dim_of):
    def alias(x, sections, *rest, **kwargs):
        if rest or kwargs or x.ndim <= (0 if dim_of(x) == 0 else dim_of(x) - 1 + 1) - 1:
            return NotImplemented
        return _numgrad().tensor_split(x, sections, dim_of(x))
    return alias


# Functions that are others with other names or arguments (what their body would run)
_ALIASES = {
    "unsafe_split": lambda x, *a, **k: _numgrad().split(x, *a, **k),
    "unsafe_chunk": lambda x, *a, **k: _numgrad().chunk(x, *a, **k),
    "split_with_sizes": lambda x, sizes, dim=0: _numgrad().split(x, list(sizes), dim),
    "unsafe_split_with_sizes": lambda x, sizes, dim=0: _numgrad().split(x, list(sizes), dim),
    "hsplit": _split_along(lambda x: 1 if x.ndim > 1 else 0),
    "vsplit": _split_along(lambda x: 0),
    "dsplit": _split_along(lambda x: 2),
    "constant_pad_nd": lambda x, pad, value=0: _numgrad().nn.functional.pad(x, pad, value=value),
    "msort": lambda x: _numgrad().sort(x, 0).values,
}
_transparent = threading.local()  # depth > 0 while a function without a rule runs composed
_transparent.depth = 0
# In-place random fills, whose names without the underscore mean other functions
_RANDOM_IN_PLACE = frozenset(("uniform", "normal", "bernoulli", "random", "exponential",
                              "geometric", "log_normal", "cauchy"))
_PRIMITIVES: set = set()  # the names found to reach a kernel of their own: straight to the loop


def _unruled(func, lvl, args, kwargs, name):
    """A function without a batching rule: first run as what it may be, a composition of
    functions that have rules (its body on the batched tensors, each op it calls reaching its
    rule: the same kernels over the batch), else, where it reaches a kernel of its own or a
    vmap error of its body, once per example (``_fallback``)."""
    twin = name[:-1]
    if name.endswith("_") and not name.endswith("__") and twin in RULES and \
            twin not in _RANDOM_IN_PLACE and args and type(args[0]) is BatchedTensor and \
            hasattr(Tensor, twin):
        # (an in-place form: its out-of-place twin by its rule, copied in, as PyTorch's)
        self = args[0]
        return self.copy_(getattr(self, twin)(*args[1:], **kwargs))
    if name.endswith("_copy") and (name[:-5] in RULES or name[:-5] in _ALIASES):
        # (a view's copy: the view, copied)
        view = getattr(_numgrad(), name[:-5], None) or getattr(Tensor, name[:-5])
        return _pytree.tree_map(lambda t: t.clone() if isinstance(t, Tensor) else t,
                                view(*args, **kwargs))
    alias = _ALIASES.get(name)
    if alias is not None:
        out = alias(*args, **kwargs)
        if out is not NotImplemented:
            return out
    raw = overrides._unwrapped(func)
    if name not in _PRIMITIVES and raw is not func:
        _transparent.depth = getattr(_transparent, "depth", 0) + 1
        try:
            return raw(*args, **kwargs)
        except _Primitive:
            _PRIMITIVES.add(name)
        except RuntimeError as error:
            if not str(error).startswith("vmap"):
                raise
        finally:
            _transparent.depth -= 1
    return _fallback(func, lvl, args, kwargs, name)


_WARNED: set = set()


def _fallback(func, lvl, args, kwargs, name):
    """The op run once per example, the results stacked: PyTorch's performance warning."""
    if name not in _WARNED:
        _WARNED.add(name)
        warnings.warn(
            f"There is a performance drop because we have not yet implemented the batching rule "
            f"for {name}. Please file us an issue on GitHub so that we can prioritize its "
            "implementation.", UserWarning, stacklevel=4)
    lid = lvl.id
    if not lvl.size:
        raise RuntimeError(f"Batching rule not implemented for aten::{name}. The fallback path "
                           "does not support vmap over dims of size 0.")

    def pick(a, i):
        if type(a) is BatchedTensor and a._level == lid:
            return a._value[i]
        if type(a) in (list, tuple):
            return type(a)(pick(b, i) for b in a)
        return a

    results = []
    for i in range(lvl.size):
        results.append(func(*[pick(a, i) for a in args],
                            **{k: pick(v, i) for k, v in kwargs.items()}))
    return _stack_results(results, lvl)


def _stack_results(results, lvl):
    """The per-example results (tensors, or structures of them) stacked into batched ones;
    what is not a tensor is the first example's."""

    flat = [_pytree.tree_flatten(r)[0] for r in results]
    spec = _pytree.tree_flatten(results[0])[1]
    leaves = [_make(stack([f[j] for f in flat]), lvl) if isinstance(flat[0][j], Tensor)
              else flat[0][j] for j in range(len(flat[0]))]
    return _pytree.tree_unflatten(leaves, spec)


# ------------------------------------------------------------------------------------- rules
RULES: dict = {}


def _rule(*names):
    def register(fn):
        for n in names:
            RULES[n] = fn
        return fn
    return register


def _pointwise(func, lvl, args, kwargs):
    """Elementwise and broadcasting ops: batched operands get the batch dimension first and
    ones up to the largest logical rank, so that broadcasting lines up the rest."""
    lid = lvl.id
    rank = 0
    for a in (*args, *kwargs.values()):
        if isinstance(a, Tensor):
            rank = max(rank, a.ndim)

    def conv(a):
        if type(a) is BatchedTensor and a._level == lid:
            v = a._value
            for _ in range(rank - (v.ndim - 1)):
                v = v.unsqueeze(1)
            return v
        return a

    out = func(*[conv(a) for a in args], **{k: conv(v) for k, v in kwargs.items()})
    return _wrap_out(out, lvl)


_POINTWISE = """
add sub rsub mul div true_divide floor_divide remainder fmod pow float_power neg negative abs
absolute exp exp2 expm1 log log2 log10 log1p sqrt rsqrt reciprocal square sin cos tan asin acos
atan sinh cosh tanh asinh acosh atanh arcsin arccos arctan arcsinh arccosh arctanh atan2 arctan2
sigmoid relu relu6 elu selu celu gelu silu mish softplus softsign tanhshrink hardtanh hardsigmoid
hardswish leaky_relu logsigmoid log_sigmoid hardshrink softshrink threshold erf erfc erfinv sign
sgn floor ceil round trunc frac clamp clip clamp_min clamp_max maximum minimum fmax fmin where
lerp hypot logaddexp logaddexp2 xlogy addcmul addcdiv nan_to_num isnan isinf isfinite isposinf
isneginf signbit eq ne lt le gt ge equal logical_and logical_or logical_xor logical_not
bitwise_and bitwise_or bitwise_xor bitwise_not sinc deg2rad rad2deg heaviside copysign nextafter
subtract multiply divide float double half int long bool to type_as contiguous clone detach
zeros_like ones_like empty_like full_like masked_fill positive conj real imag angle
complex polar view_as_real conj_physical cfloat cdouble
__and__ __or__ __xor__ __invert__ __eq__ __pow__ __rpow__ __floordiv__ __rfloordiv__ __rsub__
__rtruediv__ __rmod__ __mod__ __lshift__ __rshift__ requires_grad_ cpu
add_ sub_ mul_ div_ pow_ clamp_ clamp_min_ clamp_max_ neg_ exp_ log_ sqrt_ tanh_ sigmoid_ relu_
abs_ sin_ cos_ zero_ fill_ copy_ masked_fill_ lerp_ addcmul_ addcdiv_ where_ detach_ nan_to_num_
leaky_relu_ elu_ selu_ celu_ threshold_ hardtanh_ rrelu rrelu_ relu6_ silu_ mish_ hardswish_
hardsigmoid_ logit special_logit xlog1py expit erfcx i0 digamma lgamma polygamma sign_ floor_
ceil_ round_ trunc_ frac_ reciprocal_ rsqrt_ square_ fill bitwise_left_shift bitwise_right_shift
zeta special_zeta chebyshev_polynomial_t chebyshev_polynomial_u chebyshev_polynomial_v
chebyshev_polynomial_w hermite_polynomial_h hermite_polynomial_he laguerre_polynomial_l
legendre_polynomial_p shifted_chebyshev_polynomial_t shifted_chebyshev_polynomial_u
shifted_chebyshev_polynomial_v shifted_chebyshev_polynomial_w gammaln psi multigammaln
expit ndtr entr i0e i1 i1e log_ndtr ndtri frexp gcd lcm ldexp mvlgamma igamma igammac gammainc
gammaincc modified_bessel_i0 modified_bessel_i1 spherical_bessel_j0
greater greater_equal less less_equal not_equal eq_ ne_ lt_ le_ gt_ ge_ greater_ greater_equal_
less_ less_equal_ not_equal_ absolute_ digamma_ lgamma_ erfinv_ i0_ logit_ sgn_ heaviside_
copysign_ nextafter_ float_power_ ldexp_ conj_physical_ polygamma_ mvlgamma_ subtract_ multiply_
divide_ true_divide_
"""
for _n in _POINTWISE.split():
    RULES[_n] = _pointwise


@_rule("masked_fill", "masked_fill_")
def _masked_fill(func, lvl, args, kwargs):
    """A batched value (each example's 0-d tensor): ``where(mask, value, input)``, the value cast
    to the input's dtype (copied into the input for ``masked_fill_``); else elementwise."""
    value, _ = _get(args, kwargs, 2, "value")
    if type(value) is not BatchedTensor or value._level != lvl.id:
        return _pointwise(func, lvl, args, kwargs)
    input, _ = _get(args, kwargs, 0, "input")
    mask, _ = _get(args, kwargs, 1, "mask")
    value = value.to(input.dtype)
    if _name(func) == "masked_fill_":
        return input.copy_(_pointwise(_numgrad().where, lvl, (mask, value, input), {}))
    return _pointwise(_numgrad().where, lvl, (mask, value, input), {})


# torch.fft's transforms of one dimension (``dim`` an int, -1 by default), of two (a pair, the
# last two by default) and of n (None: all, or the last ``len(s)``)
_FFT_DEFAULT_DIMS = {**{n: -1 for n in ("fft", "ifft", "rfft", "ihfft")},
                     **{n + "2": (-2, -1) for n in ("fft", "ifft", "rfft", "ihfft")},
                     **{n + "n": None for n in ("fft", "ifft", "rfft", "ihfft")}}


@_rule(*_FFT_DEFAULT_DIMS)
def _fft(func, lvl, args, kwargs):
    """The transform of the batch (first in the physical value) over the examples' dims, named
    from the end."""
    x = args[0]
    if type(x) is not BatchedTensor or x._level != lvl.id:
        return _fallback(func, lvl, args, kwargs, _name(func))
    n = x.ndim
    default = _FFT_DEFAULT_DIMS[_name(func)]
    dim, where = _get(args, kwargs, 2, "dim", default)
    if dim is None:
        size, _ = _get(args, kwargs, 1, "n" if isinstance(default, int) else "s")
        count = n if size is None else len(size)
        dim = tuple(range(-count, 0)) if count <= n else None  # (None: the function's error)
    if dim is not None:
        if n == 0 and (isinstance(dim, int) or dim):
            first = dim if isinstance(dim, int) else dim[0]
            raise IndexError(f"Dimension specified as {first} but tensor has no dimensions")
        dim = _norm(dim, n) - n if isinstance(dim, int) else tuple(_norm(d, n) - n for d in dim)
    args, kwargs = _put(args, kwargs, where, dim, "dim")
    args[0] = x._value
    return _wrap_out(overrides._unwrapped(func)(*args, **kwargs), lvl)


@_rule("view_as_complex")
def _view_as_complex(func, lvl, args, kwargs):
    """The batch's pairs as complex numbers: a view where the physical value's layout allows
    one (the pairs adjacent, the batch's stride even), else of a contiguous copy."""
    x = args[0]
    if type(x) is not BatchedTensor or x._level != lvl.id:
        return _fallback(func, lvl, args, kwargs, "view_as_complex")
    v = x._value
    if type(v) is BatchedTensor:  # (batched at an outer level too: its rule decides)
        v = v.contiguous()
    else:
        data = v._data
        if data.strides[-1] != data.itemsize or any((st // data.itemsize) % 2
                                                      for st in data.strides[:-1]):
            v = v.contiguous()
    return _wrap_out(func(v, *args[1:], **kwargs), lvl)


@_rule("type", "to")
def _to(func, lvl, args, kwargs):
    if func is not None and args and len(args) == 1 and not kwargs and _name(func) == "type":
        return args[0]._value.type()  # (the type name)
    return _pointwise(func, lvl, args, kwargs)


@_rule("type_as")
def _type_as(func, lvl, args, kwargs):
    """``x.type_as(other)``: ``x`` in ``other``'s dtype, batched as ``x`` is (``other`` gives
    only its dtype: an unbatched ``x`` stays unbatched, as PyTorch's)."""
    other = args[1] if len(args) > 1 else kwargs["other"]
    return args[0].to(other.dtype)


@_rule("new_zeros", "new_ones", "new_full", "new_empty", "new_tensor")
def _new(func, lvl, args, kwargs):
    """A new tensor of the given size: unbatched, as PyTorch's."""
    return func(innermost(args[0]), *args[1:], **kwargs)


def _no(message):
    def rule(func, lvl, args, kwargs):
        raise RuntimeError(message)
    return rule


RANDOMNESS_ERROR = ("vmap: called random operation while in randomness error mode. Please "
                    "either use the 'same' or 'different' randomness flags on vmap or perform "
                    "the randomness operation out of vmap")
_ITEM = ("vmap: It looks like you're calling .item() on a Tensor. We don't support vmap over "
         "calling .item() on a Tensor, please try to rewrite what you're doing with other "
         "operations. If error is occurring somewhere inside PyTorch internals, please file a "
         "bug report.")
_DATA_DEPENDENT = ("vmap: It looks like you're attempting to use a Tensor in some data-dependent "
                   "control flow. We don't support that yet, please shout over at "
                   "https://github.com/pytorch/functorch/issues/257 .")
for _n in ("item", "tolist", "__float__", "__int__", "__index__", "numpy"):
    RULES[_n] = _no(_ITEM)
RULES["__bool__"] = _no(_DATA_DEPENDENT)
RULES["is_nonzero"] = _no(_DATA_DEPENDENT)


@_rule("is_floating_point", "is_complex", "is_contiguous", "element_size", "data_ptr", "stride",
       "get_device", "is_signed", "dim_order", "untyped_storage")
def _meta(func, lvl, args, kwargs):
    """The physical value's metadata; the memory layout's (strides, addresses) only where no
    function without a rule is being composed, whose own arithmetic on them would read the batch
    as one example (it loops instead)."""
    if _name(func) in _LAYOUT and getattr(_transparent, "depth", 0):
        raise _Primitive
    return func(innermost(args[0]), *args[1:], **kwargs)


_LAYOUT = frozenset(("is_contiguous", "data_ptr", "stride", "dim_order", "untyped_storage"))


@_rule("__repr__", "__str__", "__format__")
def _repr(func, lvl, args, kwargs):
    return BatchedTensor.__repr__(args[0])


# --- dims
def _norm(d: int, n: int) -> int:
    m = max(n, 1)
    if not -m <= d < m:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-m}, {m - 1}], "
                         f"but got {d})")
    return d % m


def _get(args, kwargs, pos, name, default=None):
    if len(args) > pos:
        return args[pos], ("a", pos)
    if name in kwargs:
        return kwargs[name], ("k", name)
    return default, None


def _put(args, kwargs, where, value, name):
    args = list(args)
    kwargs = dict(kwargs)
    if where is None:
        kwargs[name] = value
    elif where[0] == "a":
        args[where[1]] = value
    else:
        kwargs[where[1]] = value
    return args, kwargs


def _bound(func, args, kwargs):
    """The call's arguments by name (the raw function's signature), or None."""
    try:
        return inspect.signature(overrides._unwrapped(func)).bind(*args, **kwargs).arguments
    except (TypeError, ValueError):
        return None


def _broadcast(shapes):
    """The shape that ``shapes`` broadcast to."""
    rank = max(len(s) for s in shapes)
    out = [1] * rank
    for s in shapes:
        for k, n in enumerate(s, rank - len(s)):
            if n != 1:
                out[k] = n
    return tuple(out)


def _shift(d, n):
    if isinstance(d, (tuple, list)):
        return type(d)(_norm(x, n) + 1 for x in d)
    return _norm(d, n) + 1


def _others_batched(values, lid) -> bool:
    for a in values:
        if type(a) is BatchedTensor and a._level == lid:
            return True
        if type(a) in (list, tuple) and any(
                type(b) is BatchedTensor and b._level == lid for b in a):
            return True
    return False


def _reduction(pos=1, name="dim", none_all=True, extra=0, default=None):
    """An op of ``dim`` (an int or a tuple; None: every dimension, flattened first, or
    ``default``)."""
    def rule(func, lvl, args, kwargs):
        v = _value_at(args[0], lvl.id)
        if v is None or _others_batched((*args[1:], *kwargs.values()), lvl.id):
            return NotImplemented
        n = v.ndim - 1 + extra
        d, where = _get(args, kwargs, pos, name)
        if d is None and default is not None:
            d = default
        if d is None:
            if not none_all:
                return NotImplemented
            flat = _flat(v)
            args, kwargs = _put(args, kwargs, where, 1, name)
            if kwargs.get("keepdim") or (len(args) > pos + 1 and args[pos + 1] is True):
                return NotImplemented
            return _wrap_out(func(flat, *args[1:], **kwargs), lvl)
        if n == 0 and not extra:  # (a 0-d example: its one dimension made, then dropped)
            args, kwargs = _put(args, kwargs, where, 1, name)
            out = func(v.unsqueeze(1), *args[1:], **kwargs)
            return _wrap_out(_drop_made(out, v.ndim + 1), lvl)
        args, kwargs = _put(args, kwargs, where, _shift(d, n), name)
        return _wrap_out(func(v, *args[1:], **kwargs), lvl)
    return rule


def _flat(v):
    """The physical ``v`` as (batch, the example's elements): a batch of none too."""
    n = 1
    for s in tuple(v.shape)[1:]:
        n *= s
    return v.reshape((v.shape[0], n))


def _drop_made(out, ndim):
    if isinstance(out, Tensor):
        return out.squeeze(1) if out.ndim == ndim else out
    if isinstance(out, tuple):
        items = [_drop_made(o, ndim) for o in out]
        return tuple(items) if type(out) is tuple else type(out)(*items)
    return out


for _n in ("sum", "mean", "nansum", "nanmean", "amax", "amin", "prod", "logsumexp", "all", "any",
           "count_nonzero", "argmax", "argmin", "aminmax"):
    RULES[_n] = _reduction()
_spread = _reduction()


@_rule("hash_tensor")
def _hash_tensor(func, lvl, args, kwargs):
    """``hash_tensor``'s ``dim=()`` (its default) is every dimension, as None is elsewhere."""
    d, where = _get(args, kwargs, 1, "dim", ())
    if d is None or isinstance(d, (tuple, list)) and len(d) == 0:
        args, kwargs = _put(args, kwargs, where, None, "dim")
    return _spread(func, lvl, args, kwargs)


@_rule("std", "var", "std_mean", "var_mean")
def _std_var(func, lvl, args, kwargs):
    """``var(x, unbiased)`` (a bool where the dim would be: all elements) or ``var(x, dim ...)``."""
    if len(args) > 1 and isinstance(args[1], bool):
        return _spread(func, lvl, (args[0],), {**kwargs, "unbiased": args[1]})
    return _spread(func, lvl, args, kwargs)
_median_dim = _reduction(none_all=False)


@_rule("median", "nanmedian")
def _median(func, lvl, args, kwargs):
    """With a dim, (values, indices) along it; without, the median of all values."""
    d, _ = _get(args, kwargs, 1, "dim")
    v = _value_at(args[0], lvl.id)
    if d is None and v is not None and len(args) == 1 and not kwargs:
        return _make(func(_flat(v), 1)[0], lvl)
    return _median_dim(func, lvl, args, kwargs)
for _n in ("softmax", "log_softmax", "cumsum", "cumprod", "logcumsumexp", "cummax", "cummin",
           "squeeze_dim"):
    RULES[_n] = _reduction(none_all=False)
RULES["unbind"] = _reduction(none_all=False, default=0)
for _n in ("sort", "argsort", "glu"):
    RULES[_n] = _reduction(none_all=False, default=-1)
_norm_dim = _reduction(pos=2)


@_rule("norm")
def _norm_rule(func, lvl, args, kwargs):
    """``norm``: a matrix norm ('fro', 'nuc') without a dim is over a matrix example's two
    dimensions; otherwise as a reduction of ``dim``."""
    p, _ = _get(args, kwargs, 1, "p", "fro")
    d, _ = _get(args, kwargs, 2, "dim")
    if isinstance(p, str) and d is None and args[0].ndim == 2 and len(args) <= 2:
        return func(args[0], p, dim=(0, 1), **{k: v for k, v in kwargs.items() if k != "p"})
    return _norm_dim(func, lvl, args, kwargs)
RULES["normalize"] = _reduction(pos=2, none_all=False)
RULES["topk"] = _reduction(pos=2, none_all=False, default=-1)
RULES["kthvalue"] = _reduction(pos=2, none_all=False, default=-1)
RULES["mode"] = _reduction(none_all=False, default=-1)
_unfold_dim = _reduction(none_all=False, name="dimension")


@_rule("unfold")
def _unfold(func, lvl, args, kwargs):
    """``Tensor.unfold(dimension, size, step)``, or ``nn.functional.unfold`` (im2col: per
    example of its batch, folded)."""
    if "functional" in (overrides.resolve_name(func) or ""):
        return _fold(func, lvl, args, kwargs)
    v = _value_at(args[0], lvl.id)
    if args[0].ndim == 0 and v is not None:
        # (a 0-d example: unfolded as one of one element, its one window's dimension kept, as
        # PyTorch's result for a 0-d tensor)
        _, size, step = (*args[1:], *kwargs.values())[:3]
        return _make(v.unsqueeze(1).unfold(1, size, step).squeeze(1), lvl)
    return _unfold_dim(func, lvl, args, kwargs)
RULES["flip"] = _reduction(none_all=False, name="dims")
RULES["select"] = _reduction(none_all=False)
RULES["narrow"] = _reduction(none_all=False)
RULES["split"] = _reduction(pos=2, none_all=False, default=0)
RULES["chunk"] = _reduction(pos=2, none_all=False, default=0)
RULES["tensor_split"] = _reduction(pos=2, none_all=False, default=0)
RULES["unflatten"] = _reduction(none_all=False)
RULES["diff"] = _reduction(pos=2, none_all=False)


@_rule("max", "min")
def _max(func, lvl, args, kwargs):
    other, _ = _get(args, kwargs, 1, "other")
    if isinstance(other, Tensor):
        return _pointwise(func, lvl, args, kwargs)
    d, _ = _get(args, kwargs, 1, "dim")
    v = _value_at(args[0], lvl.id)
    if d is None and v is not None:
        flat = _flat(v)
        return _make(flat.amax(1) if _name(func) == "max" else flat.amin(1), lvl)
    return _reduction()(func, lvl, args, kwargs)


def _sizes(args, start=1):
    rest = args[start:]
    if len(rest) == 1 and isinstance(rest[0], (tuple, list, Size)):
        return tuple(rest[0])
    return tuple(rest)


@_rule("view", "reshape")
def _reshape(func, lvl, args, kwargs):
    v = _value_at(args[0], lvl.id)
    if v is None:
        return NotImplemented
    shape = _sizes(args) if len(args) > 1 else tuple(kwargs.get("shape", kwargs.get("size")))
    if shape and not isinstance(shape[0], int):  # (``view(dtype)``: elementwise where the
        dtype = shape[0]                           # element size stays)
        if len(shape) == 1 and getattr(dtype, "itemsize", None) == v.dtype.itemsize:
            return _make(func(v, dtype), lvl)
        return NotImplemented
    if -1 in shape and not v.shape[0]:  # (an empty batch: -1 from one example's elements)
        known = 1
        for n in shape:
            known *= n if n != -1 else 1
        if known:
            shape = tuple(args[0].numel() // known if n == -1 else n for n in shape)
    return _make(func(v, (v.shape[0], *shape)), lvl)


@_rule("view_as", "reshape_as")
def _reshape_as(func, lvl, args, kwargs):
    v = _value_at(args[0], lvl.id)
    if v is None:
        return NotImplemented
    return _make(v.reshape((v.shape[0], *tuple(args[1].shape))), lvl)


@_rule("flatten")
def _flatten(func, lvl, args, kwargs):
    v = _value_at(args[0], lvl.id)
    if v is None:
        return NotImplemented
    n = v.ndim - 1
    start, _ = _get(args, kwargs, 1, "start_dim", 0)
    end, _ = _get(args, kwargs, 2, "end_dim", -1)
    if n == 0:
        return _make(v.reshape((v.shape[0], 1)), lvl)
    return _make(v.flatten(_norm(start, n) + 1, _norm(end, n) + 1), lvl)


@_rule("unsqueeze")
def _unsqueeze(func, lvl, args, kwargs):
    v = _value_at(args[0], lvl.id)
    d, _ = _get(args, kwargs, 1, "dim")
    return _make(v.unsqueeze(_norm(d, v.ndim) + 1), lvl)


@_rule("squeeze")
def _squeeze(func, lvl, args, kwargs):
    v = _value_at(args[0], lvl.id)
    d, _ = _get(args, kwargs, 1, "dim")
    shape = tuple(v.shape)
    n = len(shape) - 1
    if d is None:
        return _make(v.reshape((shape[0], *[s for s in shape[1:] if s != 1])), lvl)
    dims = d if isinstance(d, (tuple, list)) else (d,)
    drop = {_norm(x, n) + 1 for x in dims}
    keep = [s for i, s in enumerate(shape) if i == 0 or i not in drop or s != 1]
    return _make(v.reshape(tuple(keep)), lvl)


@_rule("permute")
def _permute(func, lvl, args, kwargs):
    v = _value_at(args[0], lvl.id)
    dims = _sizes(args) if len(args) > 1 else tuple(kwargs["dims"])
    n = v.ndim - 1
    return _make(v.permute((0, *[_norm(d, n) + 1 for d in dims])), lvl)


@_rule("transpose", "swapaxes", "swapdims")
def _transpose(func, lvl, args, kwargs):
    v = _value_at(args[0], lvl.id)
    n = v.ndim - 1
    a, _ = _get(args, kwargs, 1, "dim0")
    b, _ = _get(args, kwargs, 2, "dim1")
    return _make(v.transpose(_norm(a, n) + 1, _norm(b, n) + 1), lvl)


@_rule("t_", "transpose_", "swapaxes_", "swapdims_", "squeeze_", "unsqueeze_")
def _inplace_view(func, lvl, args, kwargs):
    """An in-place view op (``t_``, ``squeeze_`` ...): the batched tensor itself becomes the
    view its out-of-place twin's rule gives (its physical value that view of the batch), as
    PyTorch's in-place view ops change the tensor's own shape."""
    self = args[0]
    twin = _name(func)[:-1]
    out = RULES[twin](getattr(Tensor, twin), lvl, args, kwargs)
    if out is self:  # (``t`` of an example of at most one dimension: itself)
        return self
    self._value, self._phys = out._value, out._phys
    return self


@_rule("movedim", "moveaxis")
def _movedim(func, lvl, args, kwargs):
    v = _value_at(args[0], lvl.id)
    n = v.ndim - 1
    src, _ = _get(args, kwargs, 1, "source")
    dst, _ = _get(args, kwargs, 2, "destination")
    return _make(v.movedim(_shift(src, n), _shift(dst, n)), lvl)


@_rule("t")
def _t(func, lvl, args, kwargs):
    v = _value_at(args[0], lvl.id)
    return args[0] if v.ndim < 3 else _make(v.transpose(1, 2), lvl)


@_rule("expand")
def _expand(func, lvl, args, kwargs):
    v = _value_at(args[0], lvl.id)
    if v is None:
        return NotImplemented
    sizes = _sizes(args) if len(args) > 1 else tuple(kwargs["size"])
    for _ in range(len(sizes) - (v.ndim - 1)):
        v = v.unsqueeze(1)
    return _make(v.expand((v.shape[0], *sizes)), lvl)


@_rule("expand_as")
def _expand_as(func, lvl, args, kwargs):
    if _value_at(args[0], lvl.id) is None:
        return NotImplemented
    return _expand(None, lvl, (args[0], tuple(args[1].shape)), {})


@_rule("repeat")
def _repeat(func, lvl, args, kwargs):
    v = _value_at(args[0], lvl.id)
    sizes = _sizes(args)
    for _ in range(len(sizes) - (v.ndim - 1)):
        v = v.unsqueeze(1)
    return _make(v.repeat((1, *sizes)), lvl)


@_rule("cat", "concat", "concatenate", "stack", "hstack", "vstack")
def _cat(func, lvl, args, kwargs):
    tensors, where = _get(args, kwargs, 0, "tensors")
    name = _name(func)
    if name in ("hstack", "vstack"):
        return NotImplemented
    d, dwhere = _get(args, kwargs, 1, "dim", 0)
    ref = next(t for t in tensors if type(t) is BatchedTensor and t._level == lvl.id)
    n = ref.ndim + (1 if name == "stack" else 0)
    phys = [_batched(t, lvl) for t in tensors]
    args, kwargs = _put(args, kwargs, where, phys, "tensors")
    args, kwargs = _put(args, kwargs, dwhere, _norm(d, n) + 1, "dim")
    return _make(func(*args, **kwargs), lvl)


@_rule("__getitem__")
def _getitem(func, lvl, args, kwargs):
    x, index = args
    v = _value_at(x, lvl.id)
    idx = index if isinstance(index, tuple) else (index,)
    if len(idx) == 1 and type(idx[0]) is BatchedTensor and idx[0]._level == lvl.id and \
            not idx[0].dtype.is_floating_point and idx[0].dtype.itemsize > 1:
        return _batched_index(x, v, idx[0]._value, lvl)
    if v is None or any(type(i) is BatchedTensor for i in idx):
        return NotImplemented
    if _advanced_apart(idx):
        return _apart_index(v, idx, lvl)
    return _make(v[(slice(None), *idx)], lvl)


def _apart_index(v, idx, lvl):
    """``x[idx]`` whose advanced parts are apart. As PyTorch, the ints (and 0-d index tensors)
    select first; if tensors or lists are still apart, their dimensions come first: the batch's
    own positions join them as one more advanced index in front (its dimension then leads the
    broadcast ones). Boolean parts loop."""
    def is_int(i):
        return type(i) is int or isinstance(i, Tensor) and i.ndim == 0 and \
            not i.dtype.is_floating_point and i.dtype.itemsize > 1

    if any(isinstance(i, bool) or isinstance(i, Tensor) and (
            i.dtype.is_floating_point or i.dtype.itemsize == 1) for i in idx):
        return NotImplemented
    if any(is_int(i) for i in idx):  # (the selects, then the rest at the dims left)
        v = v[(slice(None), *[i if is_int(i) else None if i is None else
                              i if i is Ellipsis else slice(None) for i in idx])]
        idx = tuple(slice(None) if i is None else i for i in idx if not is_int(i))
        if not _advanced_apart(idx):
            return _make(v[(slice(None), *idx)], lvl)
    ranks = [0] + [i.ndim if isinstance(i, Tensor) else np.ndim(i) for i in idx
                   if isinstance(i, (Tensor, list))]
    rows = arange(lvl.size, device=v.device).reshape((lvl.size, *([1] * max(ranks))))
    return _make(v[(rows, *idx)], lvl)


def _advanced_apart(idx) -> bool:
    """Whether the advanced parts of an index (tensors, lists, and with them ints and bools)
    are not side by side: NumPy's and PyTorch's results then put their dimensions first, and
    the batch dimension in front of them would move (``_apart_index``)."""
    arrays = [isinstance(i, (Tensor, list)) for i in idx]
    if not any(arrays):
        return False
    where = [k for k, i in enumerate(idx)
             if arrays[k] or isinstance(i, (bool, int)) and not isinstance(i, slice)]
    return where != list(range(where[0], where[-1] + 1))


def _batched_index(x, v, i, lvl):
    """``x[i]`` with an integer index batched: example b takes ``x[b][i[b]]`` (the batch's
    positions index the batch dimension alongside)."""
    if v is None:
        return _make(x[i], lvl)

    rows = arange(lvl.size).reshape((lvl.size, *([1] * (i.ndim - 1))))
    return _make(v[rows, i], lvl)


@_rule("__setitem__")
def _setitem(func, lvl, args, kwargs):
    x, index, value = args
    v = _value_at(x, lvl.id)
    idx = index if isinstance(index, tuple) else (index,)
    if v is None:
        raise RuntimeError("vmap: index_put_(self, *extra_args) is not possible because there "
                           "exists a Tensor `other` in extra_args that has more elements than "
                           "`self`. This happened due to `other` being vmapped over but `self` "
                           "not being vmapped over in a vmap. Please try to use out-of-place "
                           "operators instead of index_put_.")
    if any(type(i) is BatchedTensor for i in idx):
        return NotImplemented
    full = (slice(None), *idx)
    if type(value) is BatchedTensor and value._level == lvl.id:
        region = v[full].ndim - 1
        value = value._value
        for _ in range(region - (value.ndim - 1)):
            value = value.unsqueeze(1)
    v[full] = value
    return None


# --- matrix products
def _as_matrix_operands(a, b, lvl):
    """(A, B, la, lb) for ``matmul``: each operand's physical value (the batch first, ones to a
    common rank) with 1-D operands made matrices, and the logical ranks."""
    lid = lvl.id
    va, vb = _value_at(a, lid), _value_at(b, lid)
    la, lb = a.ndim, b.ndim
    A = va if va is not None else a
    B = vb if vb is not None else b
    if la == 1:
        A = A.unsqueeze(-2)
    if lb == 1:
        B = B.unsqueeze(-1)
    rank = max(max(la, 2), max(lb, 2))
    if va is not None:
        for _ in range(rank - max(la, 2)):
            A = A.unsqueeze(1)
    if vb is not None:
        for _ in range(rank - max(lb, 2)):
            B = B.unsqueeze(1)
    if va is None:  # (an unbatched operand: a leading one to line up with the batch)
        for _ in range(rank + 1 - max(la, 2)):
            A = A.unsqueeze(0)
    if vb is None:
        for _ in range(rank + 1 - max(lb, 2)):
            B = B.unsqueeze(0)
    return A, B, la, lb


@_rule("matmul", "__matmul__", "mm", "bmm", "mv", "dot")
def _matmul(func, lvl, args, kwargs):
    """Matrix products, whatever the operands' ranks and which of them is batched: one
    ``matmul`` over the aligned physical operands."""
    a = args[0]
    b = args[1] if len(args) > 1 else next(kwargs[k] for k in ("other", "mat2", "vec")
                                           if k in kwargs)

    A, B, la, lb = _as_matrix_operands(a, b, lvl)
    out = matmul(A, B)
    if la == 1:
        out = out.squeeze(-2)
    if lb == 1:
        out = out.squeeze(-1)
    return _make(out, lvl)


@_rule("__rmatmul__")
def _rmatmul(func, lvl, args, kwargs):
    return _matmul(None, lvl, (args[1], args[0]), {})


@_rule("linear")
def _linear(func, lvl, args, kwargs):
    x, _ = _get(args, kwargs, 0, "input")
    w, _ = _get(args, kwargs, 1, "weight")
    b, _ = _get(args, kwargs, 2, "bias")
    lid = lvl.id
    if _value_at(w, lid) is None and (b is None or _value_at(b, lid) is None):
        return _make(func(_value_at(x, lid), w, b), lvl)  # (the weights shared: one product)
    if _value_at(x, lid) is not None and _value_at(w, lid) is not None and \
            _value_at(w, lid).stride(0) == 0 and (b is None or _value_at(b, lid) is not None):
        out = _expanded.linear(_value_at(x, lid), _value_at(w, lid),
                               None if b is None else _value_at(b, lid))
        if out is not None:
            return _make(out, lvl)

    out = matmul(x, w.transpose(-1, -2))
    return out if b is None else out + b


@_rule("addmm")
def _addmm(func, lvl, args, kwargs):
    c, a, b = args[:3]
    beta, alpha = kwargs.get("beta", 1), kwargs.get("alpha", 1)

    prod = matmul(a, b)
    return (c * beta if beta != 1 else c) + (prod * alpha if alpha != 1 else prod)


@_rule("einsum")
def _einsum(func, lvl, args, kwargs):
    eq = args[0]
    ops = args[1:] if not (len(args) == 2 and isinstance(args[1], (list, tuple))) else args[1]
    if "..." in eq or "->" not in eq:
        return NotImplemented
    lhs, rhs = eq.replace(" ", "").split("->")
    terms = lhs.split(",")
    used = set(eq) - set(",->")
    letter = next(c for c in "ZYXWVUTSRQPONMLKJIHGFEDCBAzyxwvutsrqponmlkjihgfedcba"
                  if c not in used)
    phys = []
    for t, term in zip(ops, terms):
        v = _value_at(t, lvl.id)
        if v is not None:
            phys.append(v)
            terms[terms.index(term)] = letter + term
        else:
            phys.append(t)
    return _make(func(",".join(terms) + "->" + letter + rhs, *phys), lvl)


# --- nn.functional
def _grouped_conv(func, lvl, k, args, kwargs):
    """``conv(x, w, b)`` with the weight (and bias) batched, as per-example gradients make it:
    one convolution with the batch in the channels and one group per example (the classic
    trick), so the engine's backward of that one op gives each example its weight gradient."""
    transposed = _name(func).startswith("conv_transpose")
    names = ("input", "weight", "bias", "stride", "padding", "output_padding", "groups",
             "dilation") if transposed else ("input", "weight", "bias", "stride", "padding",
                                             "dilation", "groups")
    bound = dict(zip(names, args))
    bound.update(kwargs)
    if set(bound) - set(names) or _name(func) not in (
            "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
            "conv_transpose3d"):
        return NotImplemented
    x, w, b = bound["input"], bound["weight"], bound.get("bias")
    groups = bound.get("groups", 1)
    size = lvl.size
    vx = _batched(x, lvl)  # (B, [N,] C, *spatial)
    vw = _batched(w, lvl)  # (B, O, C / groups, *kernel); transposed: (B, C, O / groups, ...)
    unbatched_input = vx.ndim == k + 2
    if unbatched_input:
        vx = vx.unsqueeze(1)
    n = vx.shape[1]
    xs = vx.transpose(0, 1).reshape((n, -1, *tuple(vx.shape)[3:]))  # (N, B*C, *spatial)
    ws = vw.reshape((-1, *tuple(vw.shape)[2:]))  # (B*O, C / groups, *kernel)
    bs = None if b is None else _batched(b, lvl).reshape(-1)
    rest = {key: bound[key] for key in ("stride", "padding", "dilation", "output_padding")
            if key in bound}
    out = func(xs, ws, bs, groups=groups * size, **rest)  # (N, B*O, *out)
    out = out.reshape((n, size, -1, *tuple(out.shape)[2:])).transpose(0, 1)
    return _make(out.squeeze(1) if unbatched_input else out, lvl)


def _spatial(k):
    """Convolutions and pools over ``k`` trailing spatial dimensions: the batch folded into
    the examples' batch (or standing for it, for an unbatched input)."""
    def rule(func, lvl, args, kwargs):
        lid = lvl.id
        x = args[0]
        v = _value_at(x, lid)
        if _others_batched((*args[1:], *kwargs.values()), lid):
            if _name(func).startswith("conv"):
                return _grouped_conv(func, lvl, k, args, kwargs)
            return NotImplemented
        if v is None:
            return NotImplemented
        n = v.ndim - 1
        if n == k + 1:
            return _wrap_out(func(v, *args[1:], **kwargs), lvl)
        if n == k + 2:
            size = v.shape[0], v.shape[1]
            out = func(v.flatten(0, 1), *args[1:], **kwargs)
            return _wrap_out(_unflat(out, size), lvl)
        return NotImplemented
    return rule


def _unflat(out, size):
    if isinstance(out, Tensor):
        return out.reshape((*size, *tuple(out.shape)[1:]))
    return type(out)(_unflat(o, size) for o in out)


for _n, _k in (("conv1d", 1), ("conv2d", 2), ("conv3d", 3), ("max_pool1d", 1), ("max_pool2d", 2),
               ("max_pool3d", 3), ("avg_pool1d", 1), ("avg_pool2d", 2), ("avg_pool3d", 3),
               ("adaptive_avg_pool1d", 1), ("adaptive_avg_pool2d", 2), ("adaptive_max_pool2d", 2),
               ("adaptive_avg_pool3d", 3), ("adaptive_max_pool1d", 1), ("adaptive_max_pool3d", 3),
               ("conv_transpose1d", 1), ("conv_transpose2d", 2), ("conv_transpose3d", 3)):
    RULES[_n] = _spatial(_k)


@_rule("layer_norm", "native_layer_norm", "embedding", "one_hot", "pad", "tril", "triu",
       "dropout_eval")
def _trailing(func, lvl, args, kwargs):
    """Ops of the trailing dimensions (the others batch dimensions to them already)."""
    v = _value_at(args[0], lvl.id)
    if v is None or _others_batched((*args[1:], *kwargs.values()), lvl.id):
        return NotImplemented
    return _wrap_out(func(v, *args[1:], **kwargs), lvl)


@_rule("embedding")
def _embedding(func, lvl, args, kwargs):
    """``embedding(input, weight, ...)``: batched indices are leading dimensions of one lookup;
    a batched weight (a table per example) is one lookup in the tables stacked, each example's
    indices offset by its table's first row (so ``scale_grad_by_freq`` counts per example). With
    a ``padding_idx`` or ``max_norm`` and a batched weight: the loop."""
    bound = _bound(func, args, kwargs)
    if bound is None:
        return NotImplemented
    w = bound.get("weight")
    wv = _value_at(w, lvl.id)
    if wv is None:
        return _trailing(func, lvl, args, kwargs)
    rest = {k: v for k, v in bound.items() if k not in ("input", "weight")}
    if rest.get("padding_idx") is not None or rest.get("max_norm") is not None or \
            _others_batched(rest.values(), lvl.id) or wv.ndim != 3:
        return NotImplemented
    idx = _batched(bound["input"], lvl)
    size, rows = lvl.size, wv.shape[1]
    offsets = _raw_arange(size, device=wv.device).mul_(rows).reshape(
        (size,) + (1,) * (idx.ndim - 1))
    return _make(func(idx + offsets, wv.reshape(size * rows, wv.shape[2]), **rest), lvl)


@_rule("pad")
def _pad(func, lvl, args, kwargs):
    """``pad`` changes the trailing ``len(pad) // 2`` dimensions (and reads the one before for
    the reflect and replicate modes): every leading one, the batch included, is folded."""
    v = _value_at(args[0], lvl.id)
    pad, _ = _get(args, kwargs, 1, "pad")
    if v is None or _others_batched((*args[1:], *kwargs.values()), lvl.id):
        return NotImplemented
    keep = len(pad) // 2 + 1
    shape = tuple(v.shape)
    if len(shape) <= keep:
        return _make(func(v, *args[1:], **kwargs), lvl)
    out = func(v.reshape((-1, *shape[-keep:])), *args[1:], **kwargs)
    return _make(out.reshape((*shape[:-keep], *tuple(out.shape)[1:])), lvl)


@_rule("index_add", "index_copy", "index_fill")
def _index_write(func, lvl, args, kwargs):
    """``index_add(x, dim, index, source)`` and kin: ``x`` and ``source`` batched, the index
    shared, the dim shifted."""
    index, _ = _get(args, kwargs, 2, "index")
    value, _ = _get(args, kwargs, 3, "value")
    if type(index) is BatchedTensor or (_name(func) == "index_fill" and
                                        type(value) is BatchedTensor):
        return NotImplemented  # (a batched index, or index_fill's 0-d value: the loop)
    x = args[0]
    d, where = _get(args, kwargs, 1, "dim")
    if x.ndim == 0:  # (a 0-d example: as one of one element, PyTorch's reading; a 0-d source
        source = _name(func) != "index_fill"  # likewise, index_fill's value as it is)
        rest = [a.unsqueeze(0) if source and k == 2 and isinstance(a, Tensor) and not a.ndim
                else a for k, a in enumerate(args[1:])]
        out = func(x.unsqueeze(0), *rest, **kwargs)
        return out.squeeze(0)
    fill = value if _name(func) == "index_fill" else None  # (its 0-d value, as it is)
    args = [_batched(a, lvl) if isinstance(a, Tensor) and a is not index and a is not fill
            else a for a in args]
    kwargs = {k: _batched(a, lvl) if isinstance(a, Tensor) and a is not index and a is not fill
              else a for k, a in kwargs.items()}
    args, kwargs = _put(args, kwargs, where, _norm(d, x.ndim) + 1, "dim")
    return _make(func(*args, **kwargs), lvl)


@_rule("baddbmm", "addmv", "addbmm", "addr")
def _add_product(func, lvl, args, kwargs):
    """``beta * c + alpha * (a @ b)`` and kin, composed of batched ops."""
    c, a, b = args[:3]
    beta, alpha = kwargs.get("beta", 1), kwargs.get("alpha", 1)

    name = _name(func)
    prod = outer(a, b) if name == "addr" else matmul(a, b)
    if name == "addbmm":
        prod = prod.sum(0)
    return (c * beta if beta != 1 else c) + (prod * alpha if alpha != 1 else prod)


@_rule("dist")
def _dist(func, lvl, args, kwargs):
    p, _ = _get(args, kwargs, 2, "p", 2)
    return (args[0] - args[1]).flatten().norm(p)


@_rule("cdist", "searchsorted", "lstsq", "cross", "linalg_cross", "bucketize_batched")
def _both_batched(func, lvl, args, kwargs):
    """Ops that take batch dimensions on all their tensor operands (``cdist``,
    ``searchsorted``, ``linalg.solve`` …): each batched (expanded where it is not)."""
    name = _name(func)
    ranks = [a.ndim for a in args if isinstance(a, Tensor)]
    if name == "lstsq":
        if kwargs or len(args) != 2 or ranks[1] not in (ranks[0], ranks[0] - 1) or (
                ranks[0] > 2 and tuple(args[0].shape)[:-2] != tuple(args[1].shape)[:ranks[0] - 2]):
            return NotImplemented  # (broadcast batches, left=False: the loop)
    elif len(set(ranks)) != 1:
        return NotImplemented
    phys = [_batched(a, lvl) if isinstance(a, Tensor) else a for a in args]
    if name in ("cross", "linalg_cross"):
        d, where = _get(args, kwargs, 2, "dim", -1)
        phys, kwargs = _put(phys, kwargs, where, _norm(d, ranks[0]) + 1, "dim")
    return _wrap_out(func(*phys, **kwargs), lvl)


@_rule("det", "inv", "slogdet", "logdet", "cholesky", "qr", "eigh", "eigvalsh", "eig", "eigvals",
       "svd", "svdvals",
       "pinv", "matrix_exp", "inv_ex", "cholesky_ex", "cholesky_inverse", "matrix_norm",
       "inverse", "pinverse", "lu_factor", "lu_factor_ex", "matrix_rank", "cond", "lu",
       "ldl_factor", "ldl_factor_ex")
def _trailing_matrix(func, lvl, args, kwargs):
    """Ops of the trailing matrix dimensions, which batch over any leading ones."""
    return _trailing(func, lvl, args, kwargs)


@_rule("ldl_solve")
def _ldl_solve(func, lvl, args, kwargs):
    """``ldl_solve(LD, pivots, B)``: each operand batched (expanded where it is not), its
    example's batch dimensions padded with ones after the vmap batch to the most any operand
    has (the solve broadcasts the leading dimensions of all three, from the right)."""
    if kwargs.get("hermitian") or len(args) != 3:
        return NotImplemented
    core = (2, 1, 2)  # (the matrix's, the pivots' and the right-hand side's own dimensions)
    phys = [_batched(a, lvl) for a in args]
    most = max(p.ndim - 1 - c for p, c in zip(phys, core))
    for i, (p, c) in enumerate(zip(phys, core)):
        for _ in range(most - (p.ndim - 1 - c)):
            p = p.unsqueeze(1)
        phys[i] = p
    return _wrap_out(func(*phys, **kwargs), lvl)


RULES["vector_norm"] = _reduction(pos=2)


@_rule("group_norm", "instance_norm", "prelu", "local_response_norm", "batch_norm",
       "interpolate", "upsample", "upsample_nearest", "upsample_bilinear", "pixel_shuffle",
       "pixel_unshuffle", "fold")
def _fold(func, lvl, args, kwargs):
    """Ops of the examples' batch dimension N and what follows (statistics per example or per
    channel): the vmap batch folded into N. ``batch_norm`` only without batch statistics."""
    v = _value_at(args[0], lvl.id)
    if v is None or _others_batched((*args[1:], *kwargs.values()), lvl.id) or v.ndim < 3:
        return NotImplemented
    name = _name(func)
    if v.ndim == _BATCHED_RANK.get(name, 0):  # (one unbatched example: the vmap batch is N)
        return _wrap_out(func(v, *args[1:], **kwargs), lvl)
    if name == "batch_norm":
        training, _ = _get(args, kwargs, 5, "training", False)
        if training:
            return NotImplemented
    size = v.shape[0], v.shape[1]
    out = func(v.flatten(0, 1), *args[1:], **kwargs)
    return _wrap_out(_unflat(out, size), lvl)


# The ranks of a batched input of the ops that also take one unbatched example
_BATCHED_RANK = {"pixel_shuffle": 4, "pixel_unshuffle": 4, "unfold": 4, "fold": 3}


@_rule("gather", "scatter", "scatter_add", "scatter_reduce", "take_along_dim")
def _gather(func, lvl, args, kwargs):
    """``gather(x, dim, index)`` and the scatters: both tensors batched, the dim shifted."""
    x = args[0]
    d, where = _get(args, kwargs, 1, "dim")
    if not isinstance(d, int):
        return NotImplemented
    args = [_batched(a, lvl) if isinstance(a, Tensor) else a for a in args]
    kwargs = {k: _batched(a, lvl) if isinstance(a, Tensor) else a for k, a in kwargs.items()}
    args, kwargs = _put(args, kwargs, where, _norm(d, x.ndim) + 1, "dim")
    return _make(func(*args, **kwargs), lvl)


@_rule("take")
def _take(func, lvl, args, kwargs):
    """``take(x, index)``: each example's flat positions, a gather along its flattened
    values."""
    x, index = args[0], args[1] if len(args) > 1 else kwargs["index"]
    v, i = _batched(x, lvl), _batched(index, lvl)
    size = lvl.size
    flat = _flat(v)
    out = flat.gather(1, _flat(i) % max(flat.shape[1], 1))  # (negatives count back)
    return _make(out.reshape(tuple(i.shape)), lvl)


@_rule("index_select")
def _index_select(func, lvl, args, kwargs):
    if _others_batched((*args[1:], *kwargs.values()), lvl.id):
        return NotImplemented
    return _reduction(none_all=False)(func, lvl, args, kwargs)


@_rule("roll")
def _roll(func, lvl, args, kwargs):
    v = _value_at(args[0], lvl.id)
    shifts, _ = _get(args, kwargs, 1, "shifts")
    dims, _ = _get(args, kwargs, 2, "dims")
    if v is None:
        return NotImplemented
    if dims is None:
        return _make(_flat(v).roll(shifts, 1).reshape(tuple(v.shape)), lvl)
    return _make(v.roll(shifts, _shift(dims, v.ndim - 1)), lvl)


@_rule("diagonal", "diagonal_copy")
def _diagonal(func, lvl, args, kwargs):
    v = _value_at(args[0], lvl.id)
    matrix = (overrides.resolve_name(func) or "").startswith("torch.linalg.")  # (keywords,
    offset, _ = _get(args, kwargs, 1, "offset", 0)                            # the last two)
    d1, _ = _get(args, kwargs, 2, "dim1", -2 if matrix else 0)
    d2, _ = _get(args, kwargs, 3, "dim2", -1 if matrix else 1)
    if v is None:
        return NotImplemented
    n = v.ndim - 1
    if matrix:
        return _make(func(v, offset=offset, dim1=_norm(d1, n) + 1, dim2=_norm(d2, n) + 1), lvl)
    return _make(func(v, offset, _norm(d1, n) + 1, _norm(d2, n) + 1), lvl)


@_rule("diag_embed")
def _diag_embed(func, lvl, args, kwargs):
    v = _value_at(args[0], lvl.id)
    offset, _ = _get(args, kwargs, 1, "offset", 0)
    d1, _ = _get(args, kwargs, 2, "dim1", -2)
    d2, _ = _get(args, kwargs, 3, "dim2", -1)
    n = v.ndim
    return _make(func(v, offset, _norm(d1, n) + 1, _norm(d2, n) + 1), lvl)


@_rule("trace")
def _trace(func, lvl, args, kwargs):
    v = _value_at(args[0], lvl.id)
    return _make(v.diagonal(0, 1, 2).sum(-1), lvl)


@_rule("dropout", "alpha_dropout", "feature_alpha_dropout", "dropout1d", "dropout2d",
       "rand_like", "randn_like", "randint_like", "bernoulli", "normal", "multinomial", "poisson")
def _random(func, lvl, args, kwargs):
    name = _name(func)
    if name.startswith(("dropout", "alpha_dropout", "feature_alpha")):
        p, _ = _get(args, kwargs, 1, "p", 0.5)
        training, _ = _get(args, kwargs, 2, "training", True)
        if not training or p == 0:
            return args[0]
    if lvl.randomness == "error":
        raise RuntimeError(RANDOMNESS_ERROR)
    if lvl.randomness == "different" and name not in ("multinomial",):
        return _pointwise(func, lvl, args, kwargs)
    if lvl.randomness == "same" and name.startswith("dropout"):
        v = _value_at(args[0], lvl.id)

        mask = func(ones_like(v[0]), *args[1:], **kwargs)
        return args[0] * mask
    return NotImplemented


def _loss_reduction(out, reduction, n_logical):
    if reduction == "none":
        return out
    dims = tuple(range(1, out.ndim))
    if not dims:
        return out
    return out.mean(dims) if reduction == "mean" else out.sum(dims)


@_rule("mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "binary_cross_entropy",
       "binary_cross_entropy_with_logits", "soft_margin_loss", "kl_div")
def _pointwise_loss(func, lvl, args, kwargs):
    kwargs = dict(kwargs)
    reduction = kwargs.pop("reduction", "mean")
    if reduction not in ("none", "mean", "sum") or len(args) > 2 or \
            _others_batched(tuple(kwargs.values()), lvl.id):
        return NotImplemented
    a, b = args[0], args[1]
    if a.ndim != b.ndim:
        return NotImplemented
    out = func(_batched(a, lvl), _batched(b, lvl), reduction="none", **kwargs)
    return _make(_loss_reduction(out, reduction, a.ndim), lvl)


@_rule("cross_entropy", "nll_loss", "multi_margin_loss")
def _class_loss(func, lvl, args, kwargs):
    x, target = args[0], args[1]
    weight, _ = _get(args, kwargs, 2, "weight")
    reduction = kwargs.get("reduction", "mean")
    lid = lvl.id
    weighted_mean = weight is not None and reduction == "mean"
    if len(args) > 2 or reduction not in ("none", "mean", "sum") or \
            _value_at(x, lid) is None or type(weight) is BatchedTensor or weighted_mean and (
                _name(func) not in ("nll_loss", "cross_entropy") or
                kwargs.get("label_smoothing", 0.0)):
        return NotImplemented
    v = _value_at(x, lid)
    t = _batched(target, lvl)
    if t.dtype.is_floating_point:
        return NotImplemented  # (class probabilities)
    n = v.ndim - 1
    if n == 1 and _name(func) == "multi_margin_loss":  # (one example: (C,) and a target (1,))
        t = t.reshape((lvl.size,))
    if n == 1:  # (one example: (C,) and a 0-d target)
        out = func(v, t, **{**kwargs, "reduction": "none"})
    elif n == 2:
        size = v.shape[0], v.shape[1]
        out = func(v.flatten(0, 1), t.flatten(0, 1), **{**kwargs, "reduction": "none"})
        out = out.reshape(size)
    else:
        return NotImplemented
    if weighted_mean:  # (each example's losses over the weights of its targets)
        kept = t != kwargs.get("ignore_index", -100)
        taken = weight[_where(kept, t, 0)]
        total = _flat(taken * kept.to(taken.dtype)).sum(1)
        return _make(_flat(out).sum(1) / total, lvl)
    return _make(_loss_reduction(out, reduction, n), lvl)


# ----------------------------------------------------------------------------- autograd.grad
@_rule("grad")
def _autograd_grad(func, lvl, args, kwargs):
    """``autograd.grad`` inside vmap (what ``autograd.functional`` runs): the engine
    differentiates the physical tensors, the seeds batched like their outputs (ones for a
    logical scalar without one), and each gradient is batched like its input again."""
    names = ("outputs", "inputs", "grad_outputs")
    bound = dict(zip(names, args))
    rest = dict(kwargs)
    for k in names:
        if k in rest:
            bound[k] = rest.pop(k)
    outs = bound["outputs"]
    ins = bound["inputs"]
    seeds = bound.get("grad_outputs")
    single = isinstance(ins, Tensor)
    outs = (outs,) if isinstance(outs, Tensor) else tuple(outs)
    ins = (ins,) if single else tuple(ins)
    if seeds is None:
        seeds = (None,) * len(outs)
    elif isinstance(seeds, Tensor):
        seeds = (seeds,)
    if not any(type(t) is BatchedTensor for t in (*outs, *ins)) and all(
            type(g) is BatchedTensor and g._level == lvl.id and type(g._value) is not
            BatchedTensor for g in seeds) and "is_grads_batched" not in rest:
        # (a graph made outside this vmap, seeds batched by it: PyTorch's batched backward)
        grads = func(outs, ins, tuple(g._value for g in seeds), is_grads_batched=True, **rest)
        return tuple(None if g is None else _make(g, lvl) for g in grads)

    phys_seeds = []
    for o, g in zip(outs, seeds):
        chain = chain_of(o)
        if g is None:
            if o.numel() != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            phys_seeds.append(ones_like(innermost(o)))
        else:
            phys_seeds.append(innermost(batch_like(g, o)))
    grads = func(tuple(innermost(o) for o in outs), tuple(innermost(i) for i in ins),
                 tuple(phys_seeds), **rest)
    return tuple(None if g is None else rewrap(g, chain_of(i)) for g, i in zip(grads, ins))


# ------------------------------------------------------------------- custom autograd.Function
_EXTENDING = " For more details, please see https://pytorch.org/docs/main/notes/extending.func.html"


def function_apply(cls, args):
    """``cls.apply(*args)`` with batched arguments: one level at a time, a Function of the
    physical tensors whose forward runs the user's under this level (``generate_vmap_rule =
    True``) or the user's ``vmap`` staticmethod, and whose backward runs the user's under this
    level, its arguments and gradients batched again; the engine records the physical Function,
    so ``vmap(grad(...))`` and ``grad(vmap(...))`` reach its backward. PyTorch's errors for a
    Function without ``setup_context``, without vmap support, or with both kinds."""
    name = cls.__name__
    if cls.setup_context is Function.setup_context:
        raise RuntimeError("In order to use an autograd.Function with functorch transforms (vmap, "
                           "grad, jvp, jacrev, ...), it must override the setup_context "
                           "staticmethod." + _EXTENDING)
    custom = cls.vmap is not Function.vmap
    if custom and cls.generate_vmap_rule:
        raise RuntimeError(f"You tried to vmap over {name}, but it has both generate_vmap_rule="
                           "True and an overridden vmap staticmethod. Please set "
                           "generate_vmap_rule=False or delete the overridden vmap staticmethod "
                           "to avoid ambiguity." + _EXTENDING)
    if not custom and not cls.generate_vmap_rule:
        raise RuntimeError(f"You tried to vmap over {name}, but it does not have vmap support. "
                           "Please override and implement the vmap staticmethod or set "
                           "generate_vmap_rule=True." + _EXTENDING)
    lid = _max_level(args, {})
    lvl = _level(lid)
    mask = tuple(type(a) is BatchedTensor and a._level == lid for a in args)
    phys = [a._value if m else a for a, m in zip(args, mask)]
    out = _physical_function(cls).apply(lid, lvl.size, lvl.randomness, mask, *phys)
    return _wrap_out(out, lvl)


class _UserCtx:
    """The ``ctx`` the user's forward, setup_context and backward get under vmap."""

    def __init__(self, needs):
        self.needs_input_grad = needs
        self.to_save = ()
        self.materialize_grads = True

    def save_for_backward(self, *tensors):
        self.to_save = tensors

    def save_for_forward(self, *tensors):
        self.saved_for_forward = tensors

    @property
    def saved_tensors(self):
        return tuple(self.to_save)

    def mark_dirty(self, *tensors):
        self.dirty_tensors = tensors

    def mark_non_differentiable(self, *tensors):
        self.non_differentiable = tensors

    def set_materialize_grads(self, value):
        self.materialize_grads = bool(value)


class _TemporaryLevel:
    """The level ``lid`` open while a Function's backward runs after its vmap has returned
    (``grad(vmap(f))``): its batched values need it."""

    def __init__(self, lid, size, randomness):
        self.lvl = next((lv for lv in _levels if lv.id == lid), None)
        self.spec = lid, size, randomness
        self.pushed = False

    def __enter__(self):
        if self.lvl is None:
            self.lvl = _Level(*self.spec)
            _levels.append(self.lvl)
            self.pushed = True
        return self.lvl

    def __exit__(self, *exc):
        if self.pushed:
            _levels.remove(self.lvl)
        return False


_PHYSICAL: dict = {}


def _physical_function(cls):
    made = _PHYSICAL.get(cls)
    if made is not None:
        return made
    custom = cls.vmap is not Function.vmap

    class Physical(Function):
        @staticmethod
        def forward(ctx, lid, size, randomness, mask, *phys):
            with _TemporaryLevel(lid, size, randomness) as lvl:
                args = [_make(p, lvl) if m else p for p, m in zip(phys, mask)]
                user = _UserCtx(tuple(isinstance(a, Tensor) and a.requires_grad for a in args))
                out = _user_vmap(cls, lvl, mask, phys) if custom else cls.forward(*args)
                cls.setup_context(user, tuple(args), out)
                single = not isinstance(out, tuple)
                outs = (out,) if single else out
                ctx.user, ctx.spec, ctx.single = user, (lid, size, randomness), single
                phys_out = tuple(_batched(o, lvl) if isinstance(o, Tensor) else o for o in outs)
            return phys_out[0] if single else phys_out

        @staticmethod
        def backward(ctx, *grads):
            state = overrides._state  # (the engine runs backward with dispatch off: on here,
            off = state.no_all, state.no_subclass  # the user's formula sees batched values)
            state.no_all = state.no_subclass = 0
            try:
                with _TemporaryLevel(*ctx.spec) as lvl:
                    wrapped = [None if g is None else _make(g, lvl) for g in grads]
                    res = cls.backward(ctx.user, *wrapped)
                    res = (res,) if not isinstance(res, tuple) else res
                    phys = tuple(None if r is None else _batched(r, lvl) for r in res)
            finally:
                state.no_all, state.no_subclass = off
            return (None, None, None, None, *phys)

    Physical.__name__ = Physical.__qualname__ = cls.__name__
    _PHYSICAL[cls] = Physical
    return Physical


class VmapInfo:
    """What a Function's ``vmap`` staticmethod gets first: the batch's size and randomness."""

    __slots__ = ("batch_size", "randomness")

    def __init__(self, batch_size: int, randomness: str):
        self.batch_size = batch_size
        self.randomness = randomness


def _user_vmap(cls, lvl, mask, phys):
    """The user's ``vmap(info, in_dims, *args)`` on the physical arguments (batch dimension 0
    where batched); its outputs batched at this level along the ``out_dims`` it returns."""
    in_dims = tuple(0 if m else None for m in mask)
    result = cls.vmap(VmapInfo(lvl.size, lvl.randomness), in_dims, *phys)
    if not (isinstance(result, tuple) and len(result) == 2):
        raise RuntimeError(f"{cls.__name__}.vmap must return a tuple of two elements "
                           "(output, out_dims)")
    out, out_dims = result
    leaves, spec = _pytree.tree_flatten(out)
    dims = _pytree.broadcast_prefix(out_dims, out, "out_dims")
    moved = []
    for x, d in zip(leaves, dims):
        if not isinstance(x, Tensor):
            moved.append(x)
            continue
        v = x.unsqueeze(0).expand((lvl.size, *tuple(x.shape))) if d is None else x.movedim(d, 0)
        moved.append(_make(v, lvl))
    return _pytree.tree_unflatten(moved, spec)


# ------------------------------------------------------------------------------- forward AD
def make_dual(tensor, tangent, level):
    """``forward_ad.make_dual`` of a batched primal or tangent: the dual of their physical
    values, batched again (None where neither is batched)."""
    if type(tensor) is not BatchedTensor and type(tangent) is not BatchedTensor:
        return None
    lid = max(t._level for t in (tensor, tangent) if type(t) is BatchedTensor)
    lvl = _level(lid)
    return _make(forward_ad.make_dual(_batched(tensor, lvl), _batched(tangent, lvl),
                                      level=level), lvl)


def unpack_dual(tensor, level):
    if type(tensor) is not BatchedTensor:
        return None
    lvl = _level(tensor._level)
    primal, tangent = forward_ad.unpack_dual(tensor._value, level=level)
    return forward_ad.UnpackedDualTensor(
        _make(primal, lvl), None if tangent is None else _make(tangent, lvl))


# ---------------------------------------------------------------------------------- vmap
_RANDOMNESS = ("error", "different", "same")


def _fname(func) -> str:
    return getattr(func, "__name__", repr(func))


def vmap(func, in_dims=0, out_dims=0, randomness: str = "error", *, chunk_size=None):
    """``func`` mapped over a dimension of its inputs (``in_dims``: an int, None for an input
    not mapped, or a structure of them matching the inputs), its outputs stacked along
    ``out_dims``. ``randomness`` ('error', 'different', 'same') says what random ops do;
    ``chunk_size`` runs the batch that many examples at a time."""
    if randomness not in _RANDOMNESS:
        raise RuntimeError("Only allowed values for randomness are 'error', 'different', or "
                           f"'same'. Got {randomness}")
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size <= 0):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got {chunk_size})")

    @functools.wraps(func)
    def wrapped(*args, **kwargs):
        return _vmap_call(func, in_dims, out_dims, randomness, chunk_size, args, kwargs)

    return wrapped


def _check_in_dims(func, in_dims, args):
    where = f"vmap({_fname(func)}, in_dims={in_dims}, ...)(<inputs>)"
    if not args:
        raise ValueError(f"vmap({_fname(func)})(<inputs>): got no inputs. Maybe you forgot to "
                         "add inputs, or you are trying to vmap over a function with no inputs. "
                         "The latter is unsupported.")
    if not isinstance(in_dims, (int, tuple)):
        raise ValueError(f"{where}: expected `in_dims` to be int or a (potentially nested) tuple "
                         f"matching the structure of inputs, got: {type(in_dims)}.")
    if isinstance(in_dims, tuple) and len(in_dims) != len(args):
        raise ValueError(f"{where}: in_dims is not compatible with the structure of `inputs`. "
                         f"in_dims has structure {_pytree.tree_flatten(in_dims)[1]} but inputs "
                         f"has structure {_pytree.tree_flatten(args)[1]}.")
    leaves, spec = _pytree.tree_flatten(args)
    dims = _pytree.broadcast_prefix(in_dims, args)
    size = None
    sizes = []
    for x, d in zip(leaves, dims):
        if d is None:
            continue
        if not isinstance(x, Tensor):
            raise ValueError(f"{where}: Got in_dim={d} for an input but the input is of type "
                             f"{type(x)}. We cannot vmap over non-Tensor arguments, please use "
                             "None as the respective in_dim")
        n = x.ndim
        if not isinstance(d, int) or not -n <= d < n:
            raise ValueError(f"{where}: Got in_dim={d} for some input, but that input is a Tensor "
                             f"of dimensionality {n} so expected in_dim to satisfy -{n} <= in_dim "
                             f"< {n}.")
        sizes.append(x.shape[d])
    if not sizes:
        raise ValueError("vmap: Expected at least one Tensor to vmap over")
    if len(set(sizes)) > 1:
        raise ValueError("vmap: Expected all tensors to have the same size in the mapped "
                         f"dimension, got sizes {sizes} for the mapped dimension")
    size = sizes[0]
    return leaves, spec, dims, size


def _vmap_call(func, in_dims, out_dims, randomness, chunk_size, args, kwargs):
    overrides._activate()  # (BatchedTensor takes part in __torch_function__ dispatch)
    leaves, spec, dims, size = _check_in_dims(func, in_dims, args)
    if chunk_size is not None and chunk_size < size:
        return _chunked(func, in_dims, out_dims, randomness, chunk_size, leaves, spec, dims,
                        size, kwargs)
    return _run(func, out_dims, randomness, leaves, spec, dims, size, kwargs)


def _run(func, out_dims, randomness, leaves, spec, dims, size, kwargs):
    lvl = _Level(_next_id[0], size, randomness)
    _next_id[0] += 1
    _levels.append(lvl)
    try:
        batched = [x if d is None else _make(x.movedim(d, 0) if d % max(x.ndim, 1) else x, lvl)
                   for x, d in zip(leaves, dims)]
        with _randomness_mode(lvl):
            out = func(*_pytree.tree_unflatten(batched, spec), **kwargs)
        return _unbatch(func, out, out_dims, lvl)
    finally:
        _levels.remove(lvl)


# Random factories (no tensor argument, so no BatchedTensor to dispatch on): a mode sees them.
_RANDOM_FACTORIES = frozenset(("rand", "randn", "randint", "randperm", "normal"))
# In-place random fills of a tensor made inside the function (unbatched: no BatchedTensor to
# dispatch on either; a batched one's fill is _vmap_composite's rule)
_RANDOM_FILLS = frozenset(("uniform_", "normal_", "bernoulli_", "random_", "exponential_",
                           "geometric_", "log_normal_", "cauchy_"))
_UNBATCHED_FILL = ("vmap: Cannot ask for different inplace randomness on an unbatched tensor. "
                   "This will appear like same randomness. If this is necessary for your usage, "
                   "please file an issue with functorch.")


class _RandomnessMode(TorchFunctionMode):
    """Inside vmap: random factories follow the level's ``randomness`` ('error' raises,
    'different' draws one value per example, 'same' one for all); every other call goes on
    unchanged."""

    def __init__(self, level):
        super().__init__()
        self.level = level
        if _FACTORIES[0] is None:  # (only these reach it: overrides._modes_pass)

            _FACTORIES[0] = frozenset(
                [overrides._unwrapped(getattr(numgrad, n)) for n in _RANDOM_FACTORIES]
                + [overrides._unwrapped(getattr(numgrad.Tensor, n)) for n in _RANDOM_FILLS])
        self._numgrad_overrides = _FACTORIES[0]

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = _name(func)
        if not types and name in _RANDOM_FILLS and args and type(args[0]) is not BatchedTensor:
            # (PyTorch's rules: 'error' refuses, 'different' cannot differ per example on a
            # tensor without the batch, 'same' fills it once)
            if self.level.randomness == "error":
                raise RuntimeError(RANDOMNESS_ERROR)
            if self.level.randomness == "different":
                raise RuntimeError(_UNBATCHED_FILL)
            return func(*args, **kwargs)
        if types or name not in _RANDOM_FACTORIES:
            return func(*args, **kwargs)
        return _random_factory(func, self.level, args, kwargs)


_FACTORIES = [None]  # (the random factories' raw functions, found once)
_randomness_mode = _RandomnessMode


def _random_factory(func, lvl, args, kwargs):
    if any(isinstance(a, Tensor) for a in (*args, *kwargs.values())):
        return func(*args, **kwargs)
    if lvl.randomness == "error":
        raise RuntimeError(RANDOMNESS_ERROR)
    if lvl.randomness == "same":
        return func(*args, **kwargs)

    name = _name(func)
    if name in ("rand", "randn"):
        size = _sizes(args, 0) if args else tuple(kwargs.pop("size"))
        return _make(func((lvl.size, *size), **kwargs), lvl)
    draws = [func(*args, **kwargs) for _ in range(lvl.size)]  # (randint, randperm, normal)
    return _make(stack(draws), lvl)


def _unbatch(func, out, out_dims, lvl):
    leaves, spec = _pytree.tree_flatten(out)
    if isinstance(out_dims, tuple) and not isinstance(out, tuple):
        raise ValueError(f"vmap({_fname(func)}, ...): out_dims is not compatible with the "
                         "structure of `outputs`.")
    try:
        dims = _pytree.broadcast_prefix(out_dims, out, "out_dims")
    except ValueError as error:
        if "must be an int" not in str(error):
            raise
        raise ValueError(f"vmap({_fname(func)}, ..., out_dims={out_dims}): `out_dims` must be an "
                         "int, None or a python collection of ints representing where in the "
                         "outputs the vmapped dimension should appear.") from None
    result = []
    for x, d in zip(leaves, dims):
        v = _value_at(x, lvl.id)
        if d is None:
            if v is not None:
                raise ValueError(f"vmap({_fname(func)}, ...): `{_fname(func)}` can not return a "
                                 "BatchedTensor when out_dim is None")
            result.append(x)
            continue
        if not isinstance(x, Tensor):
            raise ValueError(f"vmap({_fname(func)}, ...): `{_fname(func)}` must only return "
                             f"Tensors, got type {type(x)}. Did you mean to set out_dims= to None "
                             "for output?")
        if v is None:
            v = x.unsqueeze(0).expand((lvl.size, *tuple(x.shape)))
        n = v.ndim
        if not -n <= d < n:
            raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, "
                             f"{n - 1}], but got {d})")
        result.append(v.movedim(0, d % n) if d % n else v)
    return _pytree.tree_unflatten(result, spec)


def _chunked(func, in_dims, out_dims, randomness, chunk_size, leaves, spec, dims, size, kwargs):

    outs = []
    for start in range(0, size, chunk_size):
        part = [x if d is None else x.narrow(d, start, min(chunk_size, size - start))
                for x, d in zip(leaves, dims)]
        outs.append(_run(func, out_dims, randomness, part, spec, dims,
                         min(chunk_size, size - start), kwargs))
    flat = [_pytree.tree_flatten(o)[0] for o in outs]
    ospec = _pytree.tree_flatten(outs[0])[1]
    odims = _pytree.broadcast_prefix(out_dims, outs[0], "out_dims")
    joined = [cat([f[i] for f in flat], d) if d is not None else flat[0][i]
              for i, d in enumerate(odims)]
    return _pytree.tree_unflatten(joined, ospec)

