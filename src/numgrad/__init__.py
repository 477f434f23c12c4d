"""numgrad: define-by-run automatic differentiation with PyTorch's API and Numba kernels.

``import numgrad as torch`` runs PyTorch code within numgrad's scope unchanged.
"""
from __future__ import annotations

import builtins as _builtins
import gc as _gc
import warnings as _warnings
from typing import TYPE_CHECKING as _TYPE_CHECKING

# Importing numgrad (NumPy, Numba and numgrad's own modules) makes ~100k objects. The cyclic
# collector is off while numgrad imports (its collections would traverse them again and again)
# and on again when the import ends, as the user had it. Nothing else process-wide is changed:
# gc.freeze, glibc's malloc thresholds and Numba's threading layer are the user's to opt in to
# (``set_runtime_defaults``, ``_runtime.py``).
_GC_ON = _gc.isenabled()
if _GC_ON:
    _gc.disable()
try:
    from . import _lazy, _runtime
    from .torch_version import internal_version as __version__  # ("0.1.0", PyTorch's type)

    _GC_FREEZE = _runtime.from_environment()  # (NUMGRAD_GC_FREEZE=1, NUMGRAD_MALLOC_TUNING=1)
    from ._runtime import set_runtime_defaults  # noqa: F401
    from ._pool import empty_cache  # noqa: F401  (the host's pool of large buffers)

    from . import autograd, cuda, ops  # noqa: F401
    from .kernels.cpu._cache import KernelCompileWarning  # noqa: F401
    from ._dtype import bool_ as bool  # noqa: A001
    from ._dtype import device, dtype, float32, float64, int32, int64  # noqa: F401
    from ._dtype import complex64, complex128  # noqa: F401
    from ._dtype import bfloat16, float16, int8, int16, uint8  # noqa: F401
    from ._dtype import channels_last, channels_last_3d, contiguous_format  # noqa: F401
    from ._dtype import layout, memory_format, preserve_format, sparse_coo, strided  # noqa: F401
    from ._dtype import get_default_dtype, set_default_dtype  # noqa: F401
    from .autograd import enable_grad, is_grad_enabled, no_grad, set_grad_enabled  # noqa: F401
    from .autograd import inference_mode, is_inference_mode_enabled  # noqa: F401
    from .autograd.anomaly_mode import (  # noqa: F401
        is_anomaly_check_nan_enabled, is_anomaly_enabled, set_anomaly_enabled,
    )
    from . import creation
    from .creation import *  # noqa: F401,F403
    from .ops import *  # noqa: F401,F403  (the ops families' __all__: imports them all)

    autograd._load()  # (backward, grad, Function ...: they need Tensor and the ops, now here)
    from . import _out

    _out.install(globals())  # (numgrad.add(..., out=t) …; the Tensor methods stay as they are)
    from .tensor import Size, Tensor  # noqa: F401
    from .tensor import BoolTensor, DoubleTensor, FloatTensor, IntTensor, LongTensor  # noqa: F401
    from .tensor import BFloat16Tensor, ByteTensor, CharTensor, HalfTensor, ShortTensor  # noqa: F401
    from . import random  # noqa: F401
    from ._tensor_str import get_printoptions, set_printoptions  # noqa: F401
    from .random import *  # noqa: F401,F403

    _out.install(globals())  # (numgrad.random's: bernoulli(..., out=t), multinomial)
    # (nn, optim, utils and viz: imported on first use, see _LAZY_SUBMODULES)
    from . import compiler  # noqa: F401
    from .compiler import compile  # noqa: F401,A001
    from ._as_torch import install_as_torch  # noqa: F401
    from . import linalg  # noqa: F401
    from .serialization import load, save  # noqa: F401
    from ._dlpack import from_dlpack  # noqa: F401
    from ._threads import get_num_threads, set_num_threads  # noqa: F401
    from ._typeinfo import can_cast, finfo, iinfo, promote_types, result_type  # noqa: F401
    from .backends import (  # noqa: F401  (the settings of programs' first lines)
        are_deterministic_algorithms_enabled, get_deterministic_debug_mode,
        get_float32_matmul_precision, is_deterministic_algorithms_warn_only_enabled,
        set_deterministic_debug_mode, set_float32_matmul_precision, use_deterministic_algorithms,
    )
except BaseException:
    if _GC_ON:
        _gc.enable()
    raise

# Subpackages a fresh process need not pay for until it uses them (``numgrad.nn``'s ~40 modules
# took ~6 ms of the ~35 ms numgrad's own modules take to import): ``numgrad.nn`` imports
# ``numgrad.nn`` on first access (PEP 562), as ``import numgrad.nn`` does; ``dir(numgrad)`` lists
# them either way. (``from numgrad import *`` includes them only once they are imported;
# ``from torch import *`` never includes them.)
_LAZY_SUBMODULES = ("nn", "optim", "utils", "viz", "accelerator", "backends", "onnx", "testing",
                    "version", "func", "special", "signal", "fft", "masked", "distributions",
                    "amp", "cpu", "distributed")
# ``numgrad.autocast`` and its state's functions, from ``numgrad.amp.autocast_mode`` on first use
_AUTOCAST_NAMES = ("autocast", "is_autocast_enabled", "set_autocast_enabled",
                   "get_autocast_dtype", "set_autocast_dtype", "is_autocast_cpu_enabled",
                   "get_autocast_cpu_dtype", "is_autocast_cache_enabled",
                   "set_autocast_cache_enabled", "clear_autocast_cache",
                   "autocast_increment_nesting", "autocast_decrement_nesting")


if _TYPE_CHECKING:
    # What the run-time code above binds by loops, spelled out for type checkers (mypy, pyright:
    # numgrad ships py.typed): the ops families' functions, which ``from .ops import *`` brings
    # from ops.__all__ (built in a loop, in this order: a later family's name wins; a family's
    # ``__all__`` is made by its ``@export`` flags, so a type checker takes its public names), and
    # the submodules that ``__getattr__`` imports on first use.
    from .ops.elementwise import *  # noqa: F401,F403
    from .ops.reduction import *  # noqa: F401,F403
    from .ops.shape import *  # noqa: F401,F403
    from .ops.linalg import *  # noqa: F401,F403
    from .ops.convert import *  # noqa: F401,F403
    from .ops.inplace import *  # noqa: F401,F403
    from .ops.indexing import *  # noqa: F401,F403
    from .ops.loss import *  # noqa: F401,F403
    from .ops.exponents_and_rounding import *  # noqa: F401,F403
    from .ops.trigonometric import *  # noqa: F401,F403
    from .ops.special_functions import *  # noqa: F401,F403
    from .ops.ternary import *  # noqa: F401,F403
    from .ops.division import *  # noqa: F401,F403
    from .ops.logical_bitwise import *  # noqa: F401,F403
    from .ops.signs_and_extrema import *  # noqa: F401,F403
    from .ops.conv import *  # noqa: F401,F403
    from .ops.scan import *  # noqa: F401,F403
    from .ops.sorting import *  # noqa: F401,F403
    from .ops.gather import *  # noqa: F401,F403
    from .ops.einsum import *  # noqa: F401,F403
    from .ops.pooling import *  # noqa: F401,F403
    from .ops.padding import *  # noqa: F401,F403
    from .ops.structure import *  # noqa: F401,F403
    from .ops.predicates import *  # noqa: F401,F403
    from .ops.data_dependent import *  # noqa: F401,F403
    from .ops.activation import *  # noqa: F401,F403
    from .ops.recurrent import *  # noqa: F401,F403
    from .ops.linalg_solve import *  # noqa: F401,F403
    from .ops.linalg_decompositions import *  # noqa: F401,F403
    from .ops.linalg_determinants import *  # noqa: F401,F403
    from .ops.linalg_norms import *  # noqa: F401,F403
    from .ops.linalg_compositions import *  # noqa: F401,F403
    from .ops.upsample import *  # noqa: F401,F403
    from .ops.index_views import *  # noqa: F401,F403
    from .ops.index_writes import *  # noqa: F401,F403
    from .ops.products import *  # noqa: F401,F403
    from .ops.cumulative_extremes import *  # noqa: F401,F403
    from .ops.counting import *  # noqa: F401,F403
    from .ops.utilities import *  # noqa: F401,F403
    from .ops.flat_index import *  # noqa: F401,F403
    from .ops.linalg_derived import *  # noqa: F401,F403
    from .ops.order_statistics import *  # noqa: F401,F403
    from .ops.scatter_views import *  # noqa: F401,F403
    from .ops.native_normalization import *  # noqa: F401,F403
    from .ops.aten import *  # noqa: F401,F403
    from .ops.linalg_lu import *  # noqa: F401,F403
    from .ops.scatter_reductions import *  # noqa: F401,F403
    from .ops.float_parts import *  # noqa: F401,F403
    from .ops.integer_math import *  # noqa: F401,F403
    from .ops.finite_differences import *  # noqa: F401,F403
    from .ops.histograms import *  # noqa: F401,F403
    from .ops.incomplete_gamma import *  # noqa: F401,F403
    from .ops.resize import *  # noqa: F401,F403
    from .ops.strided import *  # noqa: F401,F403
    from .ops.grid_sample import *  # noqa: F401,F403
    from .ops.shape import (  # noqa: F401  (made in a loop: named here)
        detach_copy, expand_copy, permute_copy, select_copy, split_copy, split_with_sizes_copy,
        squeeze_copy, t_copy, transpose_copy, unbind_copy, unfold_copy, unsqueeze_copy, view_copy,
    )
    from .ops.inplace import (  # noqa: F401  (made in a loop: named here)
        abs_, acos_, acosh_, addcdiv_, addcmul_, arccos_, arccosh_, arcsin_, arcsinh_, arctan2_,
        arctan_, arctanh_, asin_, asinh_, atan2_, atan_, atanh_, bitwise_and_, bitwise_left_shift_,
        bitwise_not_, bitwise_or_, bitwise_right_shift_, bitwise_xor_, ceil_, clamp_, clamp_max_,
        clamp_min_, clip_, cos_, cosh_, deg2rad_, erf_, erfc_, exp2_, exp_, expm1_, fill, fill_,
        fix_, floor_, frac_, hypot_, lerp_, log10_, log1p_, log2_, log_, logical_and_,
        logical_not_, logical_or_, logical_xor_, masked_fill, neg_, negative_, rad2deg_,
        reciprocal_, relu_, round_, rsqrt_, sigmoid_, sin_, sinc_, sinh_, sqrt_, square_, tan_,
        tanh_, trunc_, xlogy_, zero_,
    )
    from . import accelerator, backends, distributions, fft, func, masked, nn, onnx  # noqa: F401
    from . import optim  # noqa: F401
    from . import signal, special, testing, utils, version, viz  # noqa: F401
    from .func import vmap  # noqa: F401


def __getattr__(name: str) -> object:
    if name in _LAZY_SUBMODULES:
        return _lazy.module(name)  # (which binds it here too)
    if name == "vmap":  # (``torch.vmap``: ``torch.func.vmap``)
        return _lazy.module("func").vmap
    if name in _AUTOCAST_NAMES:
        return getattr(_lazy.module("amp.autocast_mode"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list:
    return sorted({*globals(), *_LAZY_SUBMODULES, *_AUTOCAST_NAMES, "vmap"})



float = float32  # noqa: A001
double = float64
long = int64
int = int32  # noqa: A001
cfloat = complex64
cdouble = complex128
half = float16
short = int16


def _bind_methods() -> None:
    """Binds the ops as Tensor methods and operators (one definition, two spellings)."""
    T = Tensor
    for name, fn in ops.METHODS.items():
        setattr(T, name, fn)
    for module in (random, creation):  # (uniform_, bernoulli ...; new_zeros, new_tensor ...)
        for name in ops._names.methods(module.__name__):
            setattr(T, name, getattr(module, name))
    T.__add__ = T.__radd__ = ops.add
    T.__sub__ = ops.sub
    T.__rsub__ = ops.rsub
    T.__mul__ = T.__rmul__ = ops.mul
    T.__truediv__ = ops.div
    T.__rtruediv__ = lambda self, other: ops.div(other, self)
    T.__pow__ = ops.pow
    T.__rpow__ = lambda self, other: ops.pow(other, self)
    T.__neg__ = ops.neg
    T.__floordiv__ = ops.floor_divide
    T.__rfloordiv__ = lambda self, other: ops.floor_divide(other, self)
    T.__mod__ = ops.remainder
    T.__rmod__ = lambda self, other: ops.remainder(other, self)
    T.__ifloordiv__, T.__imod__ = ops.floor_divide_, ops.remainder_
    T.__iadd__, T.__isub__, T.__imul__, T.__itruediv__ = ops.add_, ops.sub_, ops.mul_, ops.div_
    T.__pos__ = lambda self: self
    T.__eq__, T.__ne__, T.__lt__, T.__le__, T.__gt__, T.__ge__ = (
        ops.eq, ops.ne, ops.lt, ops.le, ops.gt, ops.ge)
    T.__hash__ = object.__hash__
    T.__matmul__ = ops.matmul
    T.__rmatmul__ = lambda self, other: ops.matmul(other, self)
    T.T = property(_reversed_dims)
    T.mT = property(_matrix_transpose)
    T.mH = property(_matrix_adjoint)  # (real tensors: the adjoint is the transpose)
    T.H = property(_adjoint)
    T.__abs__ = ops.abs
    T.polygamma = lambda self, n: ops.polygamma(n, self)
    T.real = property(_real)  # (a view of a complex tensor's parts; a real tensor itself)
    T.imag = property(_imag)
    T.__and__ = T.__rand__ = ops.bitwise_and
    T.__or__ = T.__ror__ = ops.bitwise_or
    T.__xor__ = T.__rxor__ = ops.bitwise_xor
    T.__invert__ = ops.bitwise_not
    T.__lshift__ = ops.bitwise_left_shift
    T.__rlshift__ = lambda self, other: ops.bitwise_left_shift(other, self)
    T.__rshift__ = ops.bitwise_right_shift
    T.__rrshift__ = lambda self, other: ops.bitwise_right_shift(other, self)
    T.__iand__, T.__ior__, T.__ixor__ = ops.bitwise_and_, ops.bitwise_or_, ops.bitwise_xor_
    T.__ilshift__, T.__irshift__ = ops.bitwise_left_shift_, ops.bitwise_right_shift_
    T.__rdiv__ = T.__rtruediv__
    T.float = lambda self, memory_format=None: self.to(float32, memory_format=memory_format)
    T.double = lambda self, memory_format=None: self.to(float64, memory_format=memory_format)
    T.long = lambda self, memory_format=None: self.to(int64, memory_format=memory_format)
    T.int = lambda self, memory_format=None: self.to(int32, memory_format=memory_format)
    T.bool = lambda self, memory_format=None: self.to(bool, memory_format=memory_format)
    T.cfloat = lambda self, memory_format=None: self.to(complex64, memory_format=memory_format)
    T.cdouble = lambda self, memory_format=None: self.to(complex128,
                                                         memory_format=memory_format)
    T.cpu = lambda self: self.to("cpu")
    T.cuda = lambda self, *a, **k: self.to("cuda")
    for name in ("float", "double", "long", "int", "bool", "cfloat", "cdouble", "cpu", "cuda"):
        getattr(T, name).__name__ = name
    for name, dtype_name in (("half", "float16"), ("bfloat16", "bfloat16"), ("byte", "uint8"),
                             ("char", "int8"), ("short", "int16")):
        if not hasattr(T, name):
            setattr(T, name, _cast_to_missing_dtype(name, dtype_name))


def _cast_to_missing_dtype(method: str, dtype_name: str):
    """``Tensor.half()`` and the like, for dtypes numgrad may lack: a cast where ``numgrad``
    has the dtype, else PyTorch's kind of error, saying what numgrad has."""
    def cast(self, memory_format=None):
        target = globals().get(dtype_name)
        if isinstance(target, dtype):
            return self.to(target, memory_format=memory_format)
        raise TypeError(
            f"Tensor.{method}(): numgrad has no {dtype_name} dtype (PyTorch's "
            f"{_dtype._TORCH_NAMES.get(dtype_name, dtype_name)}); its dtypes are float32, "
            "float64, complex64, complex128, int64, int32 and bool: use .float(), .double(), "
            ".cfloat(), .cdouble(), .long(), .int() or .bool()"
        )

    cast.__name__ = method
    return cast


_WARNED_ONCE: set = set()  # PyTorch's TORCH_WARN_ONCE: these warn once per process
_WARN_ALWAYS = [False]  # (set_warn_always: every time instead)


def _warn_once(message: str) -> None:
    if message not in _WARNED_ONCE or _WARN_ALWAYS[0]:
        _WARNED_ONCE.add(message)
        _warnings.warn(message, UserWarning, stacklevel=3)


def set_warn_always(b: bool) -> None:
    """Whether the warnings PyTorch gives once per process (``TORCH_WARN_ONCE``) are given every
    time instead."""
    _WARN_ALWAYS[0] = True if b else False  # (``bool`` is numgrad's dtype here)


def is_warn_always_enabled() -> bool:
    """What ``set_warn_always`` set (False by default)."""
    return _WARN_ALWAYS[0]


def _reversed_dims(self):
    """``x.T``: the dimensions reversed (the identity on a 0-d tensor, with PyTorch's warning,
    once)."""
    if not self.ndim:
        _warn_once("Tensor.T is deprecated on 0-D tensors. This function is the identity in "
                   "these cases.")
    return self.permute(tuple(reversed(_builtins.range(self.ndim))))


def _matrix_transpose(self):
    """``x.mT``: the last two dimensions swapped; PyTorch's warning and identity on a 0-d tensor,
    its error on a 1-D one."""
    if self.ndim < 2:
        if self.ndim:
            raise RuntimeError("tensor.mT is only supported on matrices or batches of matrices. "
                               f"Got {self.ndim}-D tensor.")
        _warn_once("Tensor.mT is deprecated on 0-D tensors. This function is the identity in "
                   "these cases.")
        return self
    return self.transpose(-2, -1)


def _real(self):
    """``x.real``: ``numgrad.real(x)``, in its dispatching form (bound at the end of import)."""
    return real(self)


def _imag(self):
    """``x.imag``: ``numgrad.imag(x)``, in its dispatching form."""
    return imag(self)


def _matrix_adjoint(self):
    """``x.mH``: the conjugate transpose of the last two dimensions (of a real tensor, ``mT``);
    PyTorch's warning and identity on a 0-d tensor, its error on a 1-D one."""
    if self.ndim < 2:
        if self.ndim:
            raise RuntimeError("tensor.mH is only supported on matrices or batches of matrices. "
                               f"Got {self.ndim}-D tensor.")
        _warn_once("Tensor.mH is deprecated on 0-D tensors. Consider using x.conj().")
        return self.conj()
    return self.transpose(-2, -1).conj()


def _adjoint(self):
    """``x.H``: the conjugate transpose of a matrix (of a real one, ``T``)."""
    if self.ndim == 0:
        _warn_once("Tensor.H is deprecated on 0-D tensors. Consider using x.conj().")
        return self.conj()
    if self.ndim != 2:
        hint = " For batches of matrices, consider using tensor.mH" if self.ndim > 2 else ""
        raise RuntimeError("tensor.H is only supported on matrices (2-D tensors). Got "
                           f"{self.ndim}-D tensor.{hint}")
    return self.transpose(0, 1).conj()


try:
    _bind_methods()
    from . import overrides  # (__torch_function__: Tensor's side, as_subclass)

    overrides._install()
except BaseException:
    if _GC_ON:
        _gc.enable()
    raise
del _bind_methods
_C = overrides._C  # (torch._C.DisableTorchFunctionSubclass and its kin)
if _GC_ON:  # (the import is done: see the top)
    if _GC_FREEZE:
        _gc.freeze()
    _gc.enable()
