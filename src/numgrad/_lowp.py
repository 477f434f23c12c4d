"""The narrow dtypes (float16, bfloat16, uint8, int8, int16): stored in their own width, computed
in a wider one.

numgrad's kernels are compiled for float32, float64, int32, int64, bool and complex; a kernel
signature per narrow dtype would multiply Numba's compile time on a cold cache. So an op given a
narrow array (``registry.apply`` asks ``narrow_in``) runs on the arrays widened (float16 and
bfloat16 to float32, the small integers to int32), and a result of the widened dtype is rounded
back to the narrow one (``narrowed``). This is what PyTorch's CPU kernels do for Half and
BFloat16 (they compute in float, their ``opmath`` type, and round each op's result), and for the
integers the results of add, sub, mul, shifts and the bitwise ops are equal modulo 2**bits, so
wrapping the int32 result gives PyTorch's. Results of another dtype (comparisons' bool, argmax's
int64, an integer sum's int64) are left as they are, as PyTorch gives them.

NumPy has float16 but no bfloat16: a bfloat16 array is NumPy's opaque 2-byte type ("V2") whose
elements are the upper 16 bits of float32s; float32 to bfloat16 rounds to the nearest even, as
PyTorch's ``c10::BFloat16`` does (NaN becomes 0x7FC0).
"""
from __future__ import annotations

import functools
import warnings

import numpy as np

from . import _lazy

# Whether this process has made an array of a narrow dtype (``_dtype._NarrowDtype`` sets it):
# until then ``registry.apply`` skips its test of each op's arrays.
active = False

BF16 = np.dtype("V2")
_F32, _I32 = np.dtype(np.float32), np.dtype(np.int32)
_WIDE = {np.dtype(np.float16): _F32, BF16: _F32, np.dtype(np.uint8): _I32,
         np.dtype(np.int8): _I32, np.dtype(np.int16): _I32}
# NumPy's type numbers of the narrow dtypes: ``registry.apply``'s test, one set lookup an array
NARROW = frozenset(d.num for d in _WIDE)
NARROW_CHARS = frozenset(d.char for d in _WIDE)  # (and their codes: "e", "V", "B", "b", "h")


def bf16_to_f32(a: np.ndarray) -> np.ndarray:
    """The float32 values of a bfloat16 array (exact)."""
    bits = np.ascontiguousarray(a).reshape(-1).view(np.uint16).astype(np.uint32)
    return (bits << 16).view(np.float32).reshape(np.shape(a))


def f32_to_bf16(x) -> np.ndarray:
    """A float32 array rounded to bfloat16 (to the nearest, ties to even; NaN is 0x7FC0)."""
    x = np.asarray(x, np.float32)
    shape = x.shape
    x = np.ascontiguousarray(x).reshape(-1)
    bits = x.view(np.uint32)
    rounded = ((bits + (np.uint32(0x7FFF) + ((bits >> 16) & 1))) >> 16).astype(np.uint16)
    rounded[np.isnan(x)] = 0x7FC0
    return rounded.view(BF16).reshape(shape)


def cast(a, np_dtype) -> np.ndarray:
    """``a`` (an array) as ``np_dtype``, where either is bfloat16: through float32, as PyTorch
    converts (a float64 is rounded to float32 first, then to bfloat16)."""
    np_dtype = np.dtype(np_dtype)
    a = np.asarray(a)
    if a.dtype == BF16:
        if np_dtype == BF16:
            return a.copy()
        a = bf16_to_f32(a)
        return a if np_dtype == _F32 else a.astype(np_dtype)
    if a.dtype.kind == "c":
        warnings.warn("Casting complex values to real discards the imaginary part", UserWarning,
                      stacklevel=3)
        a = a.real
    return f32_to_bf16(a.astype(np.float32))


def to_float(a: np.ndarray) -> np.ndarray:
    """An array of numbers that Python and NumPy read: bfloat16 as float32, else ``a``."""
    return bf16_to_f32(a) if a.dtype == BF16 else a


def widened(K, arrays: tuple) -> tuple[tuple, dict]:
    """The arrays (and numbers) with each narrow one widened, and {wide dtype: narrow dtype}."""
    back = {}
    out = []
    for a in arrays:
        if isinstance(a, np.dtype) and a in _WIDE:  # (a dtype to make an array of: the wide one)
            back.setdefault(_WIDE[a], a)
            out.append(_WIDE[a])
            continue
        dt = getattr(a, "dtype", None)
        wide = _WIDE.get(dt) if dt is not None else None
        if wide is None:
            out.append(a)
            continue
        back.setdefault(wide, dt)
        if isinstance(a, np.generic):  # (a number of the narrow dtype)
            out.append(wide.type(to_float(np.asarray(a))[()]))
        elif dt == BF16:
            out.append(bf16_to_f32(a) if isinstance(a, np.ndarray) else _device_bf16(K, a))
        else:
            out.append(K.cast(a, wide))
    return tuple(out), back


def _device_bf16(K, a):
    raise NotImplementedError("bfloat16 tensors are not implemented for CUDA tensors yet")


def narrowed(K, out, back: dict):
    """``out`` rounded back to the narrow dtype its widened dtype stands for, if it has one."""
    narrow = back.get(getattr(out, "dtype", None))
    if narrow is None:
        return out
    if narrow == BF16:
        return f32_to_bf16(out) if isinstance(out, np.ndarray) else _device_bf16(K, out)
    if narrow.kind == "f":
        return K.cast(out, narrow)
    # (int32 to a narrower integer: wraps, as PyTorch's integer arithmetic does)
    return K.cast(out, narrow)


def wider(fn, *args, **kwargs):
    """``fn(*args)`` (a kernel entry point: ``kernels.cpu.binary``, ``unary``, ``sum_dims``...)
    for narrow arrays among ``args``: on them widened, the result rounded back (what
    ``registry.apply`` does for ops, for the formulas and fast paths that call the kernels
    directly)."""
    K = _lazy.module("kernels.cpu")  # (they import _dtype, which imports this module)
    wide, back = widened(K, args)
    out_dtype = kwargs.get("out_dtype")
    if out_dtype is not None and np.dtype(out_dtype) in _WIDE:  # (a narrow result: widened too)
        back.setdefault(_WIDE[np.dtype(out_dtype)], np.dtype(out_dtype))
        kwargs["out_dtype"] = _WIDE[np.dtype(out_dtype)]
    out = fn(*wide, **kwargs)
    if isinstance(out, tuple):
        return tuple(narrowed(K, o, back) for o in out)
    return narrowed(K, out, back)


# The kernels that ops' backward formulas and the non-differentiable functions (argmax, sort)
# call directly on tensors' arrays, outside ``registry.apply``: run on narrow arrays widened, by
# ``install``. True: the kernel writes into its first argument (which then gets the result).
# {name: (the position of the argument whose dtype tells, whether it writes into argument 0)}
# (``kernels.cpu.sum_dims``, called on every gradient summed to a shape, tests its array itself:
# a wrapper's frame would cost more than the test.)
_DIRECT = {"arg_reduce_dims": (1, False), "extreme_share": (0, False), "sort_dim": (0, False),
           "topk_dim": (0, False), "index_put": (0, True), "one_hot_dim": (3, False),
           "order_dim": (0, False), "mode_dim": (0, False), "cum_extreme": (0, False),
           "cumprod_backward": (0, False), "any_equal": (0, False),
           "embedding_bag_backward": (0, False),
           "embedding_bag_per_sample_weights_backward": (0, False),
           "inf_where_zero": (0, False), "product_of_others": (0, False),
           "any_equal_device": (0, False)}


def install(K) -> None:
    """Wraps ``K``'s kernels of ``_DIRECT`` (``registry`` calls it on the CPU kernels once):
    arrays of other dtypes go straight through, at the cost of one test per array. A kernel of
    a module that ``K`` loads on first use (``_LAZY_FUNCTIONS``) is not loaded here: its wrapper
    loads it at its first call, so that ``import numgrad`` imports no more modules."""
    for name, (position, writes) in _DIRECT.items():
        fn = K.__dict__.get(name)
        if getattr(fn, "_lowp", False):
            continue
        setattr(K, name, _widening(K, name, fn, position, writes))


def _widening(K, name: str, fn, position: int, writes: bool):
    def kernel(*args, **kwargs):
        nonlocal fn
        if fn is None:  # (its module loaded now; the loader binds the plain kernel: ours again)
            fn = K.__getattr__(name)
            functools.update_wrapper(kernel, fn)
            setattr(K, name, kernel)
        tells = args[position]  # (an array, or the dtype of the array to make)
        if getattr(tells, "dtype", tells).num not in NARROW:
            return fn(*args, **kwargs)
        wide, back = widened(K, args)
        out = fn(*wide, **kwargs)
        if writes:
            K.assign(args[0], narrowed(K, wide[0], back))
        if isinstance(out, tuple):
            return tuple(narrowed(K, o, back) for o in out)
        return narrowed(K, out, back)

    if fn is not None:
        functools.update_wrapper(kernel, fn)  # (its name, doc and signature: ``fn``'s)
    else:
        kernel.__name__ = kernel.__qualname__ = name
    kernel._lowp = True
    return kernel
