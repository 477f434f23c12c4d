"""numgrad: define-by-run automatic differentiation with PyTorch's API and Numba kernels.

``import numgrad as torch`` runs PyTorch code within numgrad's scope unchanged.
"""
from __future__ import annotations

import gc as _gc

# Importing numgrad (NumPy, Numba and numgrad's own modules) makes ~100k objects. The cyclic
# collector is off while numgrad imports (its collections would traverse them again and again)
# and on again when the import ends, as the user had it. Nothing else process-wide is changed:
# gc.freeze, glibc's malloc thresholds and Numba's threading layer are the user's to opt in to
# (``set_runtime_defaults``, ``_runtime.py``).
_GC_ON = _gc.isenabled()
if _GC_ON:
    _gc.disable()
try:
    from . import _runtime

    _GC_FREEZE = _runtime.from_environment()  # (NUMGRAD_GC_FREEZE=1, NUMGRAD_MALLOC_TUNING=1)
    from ._runtime import set_runtime_defaults  # noqa: F401

    from . import autograd, cuda, ops  # noqa: E402,F401
    from .kernels.cpu._cache import KernelCompileWarning  # noqa: E402,F401
    from ._dtype import bool_ as bool  # noqa: A001
    from ._dtype import device, dtype, float32, float64, int32, int64  # noqa: F401
    from ._dtype import channels_last, channels_last_3d, contiguous_format  # noqa: F401
    from ._dtype import layout, memory_format, preserve_format, sparse_coo, strided  # noqa: F401
    from ._dtype import get_default_dtype, set_default_dtype  # noqa: F401
    from .autograd import enable_grad, is_grad_enabled, no_grad, set_grad_enabled  # noqa: F401
    from .autograd import inference_mode, is_inference_mode_enabled  # noqa: F401
    from .autograd.anomaly_mode import (  # noqa: F401
        is_anomaly_check_nan_enabled, is_anomaly_enabled, set_anomaly_enabled,
    )
    from .creation import *  # noqa: F401,F403
    from .ops import *  # noqa: F401,F403  (the ops families' __all__)
    from . import _out  # noqa: E402

    _out.install(globals())  # (numgrad.add(..., out=t) …; the Tensor methods stay as they are)
    from .tensor import Size, Tensor  # noqa: F401
    from .tensor import BoolTensor, DoubleTensor, FloatTensor, IntTensor, LongTensor  # noqa: F401
    from . import random  # noqa: E402,F401
    from ._tensor_str import get_printoptions, set_printoptions  # noqa: E402,F401
    from .random import *  # noqa: E402,F401,F403
    # (nn, optim, utils and viz: imported on first use, see _LAZY_SUBMODULES)
    from . import compiler  # noqa: E402,F401
    from .compiler import compile  # noqa: E402,F401,A001
    from ._as_torch import install_as_torch  # noqa: E402,F401
    from . import linalg  # noqa: E402,F401
    from .serialization import load, save  # noqa: E402,F401
    from ._threads import get_num_threads, set_num_threads  # noqa: E402,F401
    from ._typeinfo import can_cast, finfo, iinfo, promote_types, result_type  # noqa: E402,F401
    from .backends import (  # noqa: E402,F401  (the settings of programs' first lines)
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
                    "version", "func", "special", "signal", "fft", "masked")


def __getattr__(name: str):
    if name in _LAZY_SUBMODULES:
        import importlib

        return importlib.import_module(f"{__name__}.{name}")  # (which binds it here too)
    if name == "vmap":  # (``torch.vmap``: ``torch.func.vmap``)
        from .func import vmap

        return vmap
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list:
    return sorted({*globals(), *_LAZY_SUBMODULES, "vmap"})


__version__ = "0.1.0"

float = float32  # noqa: A001
double = float64
long = int64
int = int32  # noqa: A001


def _bind_methods() -> None:
    """Binds the ops as Tensor methods and operators (one definition, two spellings)."""
    T = Tensor
    for name, fn in ops.METHODS.items():
        setattr(T, name, fn)
    for name in random.METHODS:
        setattr(T, name, getattr(random, name))
    from . import creation

    for name in creation.METHODS:  # (new_zeros, new_tensor ...)
        setattr(T, name, getattr(creation, name))
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
    T.real = property(ops.real)  # (numgrad's tensors are real: the tensor itself)
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
    T.cpu = lambda self: self.to("cpu")
    T.cuda = lambda self, *a, **k: self.to("cuda")
    for name in ("float", "double", "long", "int", "bool", "cpu", "cuda"):
        getattr(T, name).__name__ = name


_WARNED_ONCE: set = set()  # PyTorch's TORCH_WARN_ONCE: these warn once per process


def _warn_once(message: str) -> None:
    if message not in _WARNED_ONCE:
        _WARNED_ONCE.add(message)
        import warnings

        warnings.warn(message, UserWarning, stacklevel=3)


def _reversed_dims(self):
    """``x.T``: the dimensions reversed (the identity on a 0-d tensor, with PyTorch's warning,
    once)."""
    if not self.ndim:
        _warn_once("Tensor.T is deprecated on 0-D tensors. This function is the identity in "
                   "these cases.")
    return self.permute(tuple(reversed(range(self.ndim))))


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


def _imag(self):
    raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")


def _matrix_adjoint(self):
    """``x.mH``: the conjugate transpose of the last two dimensions (of a real tensor, ``mT``);
    PyTorch's warning and identity on a 0-d tensor, its error on a 1-D one."""
    if self.ndim < 2:
        if self.ndim:
            raise RuntimeError("tensor.mH is only supported on matrices or batches of matrices. "
                               f"Got {self.ndim}-D tensor.")
        _warn_once("Tensor.mH is deprecated on 0-D tensors. Consider using x.conj().")
        return self
    return self.transpose(-2, -1)


def _adjoint(self):
    """``x.H``: the conjugate transpose of a matrix (of a real one, ``T``)."""
    if self.ndim == 0:
        _warn_once("Tensor.H is deprecated on 0-D tensors. Consider using x.conj().")
        return self
    if self.ndim != 2:
        hint = " For batches of matrices, consider using tensor.mH" if self.ndim > 2 else ""
        raise RuntimeError("tensor.H is only supported on matrices (2-D tensors). Got "
                           f"{self.ndim}-D tensor.{hint}")
    return self.transpose(0, 1)


try:
    _bind_methods()
    from . import overrides  # noqa: E402  (__torch_function__: Tensor's side, as_subclass)

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
