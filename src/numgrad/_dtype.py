"""Dtypes, devices and PyTorch's type-promotion rules."""
from __future__ import annotations

import enum

import numpy as np

from . import _lowp


def float_number(np_dtype, value):
    """``value`` (a real number) as a NumPy scalar of the float dtype ``np_dtype``, beyond its
    range +-inf as PyTorch converts it, without NumPy's RuntimeWarning "overflow encountered in
    cast" (an error under ``filterwarnings = error``). Callers convert a number within +-65504,
    which every float dtype holds, themselves: ``dt.type(v) if -65504.0 <= v <= 65504.0 else
    float_number(dt, v)``."""
    with np.errstate(over="ignore"):
        return np_dtype.type(value)


class dtype:
    """A tensor element type, printed as PyTorch prints it (``numgrad.float32``)."""

    __slots__ = ("name", "np", "is_floating_point", "is_complex", "_category")

    def __init__(self, name: str, np_dtype, category: int):
        self.name = name
        self.np = np.dtype(np_dtype)
        self.is_floating_point = category == FLOAT
        self.is_complex = category == COMPLEX
        self._category = category

    @property
    def itemsize(self) -> int:
        return self.np.itemsize

    @property
    def is_signed(self) -> bool:
        return self._category != BOOL and self.name != "uint8"

    def to_complex(self) -> dtype:
        """The complex dtype of this floating-point dtype's precision (``float32.to_complex()``
        is ``complex64``); a complex dtype is its own."""
        if self._category == COMPLEX:
            return self
        if self._category != FLOAT:
            raise ValueError(f"to_complex is only supported for floating point types, got "
                             f"{self!r}".replace("numgrad.", "torch."))
        return _COMPLEX_OF[self.name]

    def to_real(self) -> dtype:
        """The real dtype of a complex dtype's parts (``complex64.to_real()`` is ``float32``);
        any other dtype is its own."""
        return _REAL_OF[self.name] if self._category == COMPLEX else self

    def __repr__(self) -> str:
        return f"numgrad.{self.name}"

    def __reduce__(self):
        return self.name


# Categories, ordered as PyTorch promotes them: bool < integer < floating point < complex.
BOOL, INT, FLOAT, COMPLEX = 0, 1, 2, 3

float32 = dtype("float32", np.float32, FLOAT)
float64 = dtype("float64", np.float64, FLOAT)
int64 = dtype("int64", np.int64, INT)
int32 = dtype("int32", np.int32, INT)
bool_ = dtype("bool", np.bool_, BOOL)
complex64 = dtype("complex64", np.complex64, COMPLEX)
complex128 = dtype("complex128", np.complex128, COMPLEX)


class _NarrowDtype(dtype):
    """A narrow dtype (``numgrad._lowp``): stored in its own width, computed in float32 or
    int32. Its NumPy dtype, which every way of making an array of it reads, switches on the
    ops' test for such arrays (``_lowp.active``), which a process that never makes one skips."""

    __slots__ = ("_np",)

    @property
    def np(self):
        _lowp.active = True
        return self._np

    @np.setter
    def np(self, value):
        self._np = value


float16 = _NarrowDtype("float16", np.float16, FLOAT)
# NumPy has no bfloat16: its elements are 2-byte opaque values (NumPy's "V2") holding the upper
# half of a float32's bits, so that NumPy's arithmetic and casts refuse them instead of reading
# them as integers; ``_lowp`` converts them to and from float32 as PyTorch rounds.
bfloat16 = _NarrowDtype("bfloat16", np.dtype("V2"), FLOAT)
uint8 = _NarrowDtype("uint8", np.uint8, INT)
int8 = _NarrowDtype("int8", np.int8, INT)
int16 = _NarrowDtype("int16", np.int16, INT)

_BY_NUMPY = {d.np: d for d in (float32, float64, int64, int32, bool_, complex64, complex128)}
# (apart: an array of one seen by ``from_numpy_dtype`` switches on ``_lowp.active``)
_NARROW_BY_NUMPY = {d._np: d for d in (float16, bfloat16, uint8, int8, int16)}
_lowp.active = False  # (``_BY_NAME`` below reads nothing; the lines above read ``np``)
_BY_NAME = {d.name: d for d in (*_BY_NUMPY.values(), *_NARROW_BY_NUMPY.values())}
_COMPLEX_OF = {"float32": complex64, "float64": complex128}


class _NoComplexHalf(dict):
    def __missing__(self, name):  # (float16, bfloat16: PyTorch's complex32, which numgrad lacks)
        raise TypeError(f"numgrad has no complex dtype of {name}'s precision (PyTorch's "
                        "complex32, ComplexHalf)")


_COMPLEX_OF = _NoComplexHalf(_COMPLEX_OF)
_REAL_OF = {"complex64": float32, "complex128": float64}

# PyTorch's names of the scalar types, in its messages and legacy tensor types (FloatTensor).
_TORCH_NAMES = {"float32": "Float", "float64": "Double", "int64": "Long", "int32": "Int",
                "bool": "Bool", "float16": "Half", "int16": "Short", "int8": "Char",
                "uint8": "Byte", "complex64": "ComplexFloat", "complex128": "ComplexDouble",
                "bfloat16": "BFloat16", "void16": "BFloat16"}


_C_NAMES = {"float32": "float", "float64": "double", "int64": "long int", "int32": "int",
            "bool": "bool", "complex64": "c10::complex<float>",
            "complex128": "c10::complex<double>", "float16": "c10::Half",
            "void16": "c10::BFloat16", "uint8": "unsigned char", "int8": "signed char",
            "int16": "short int"}


def c_name(np_dtype) -> str:
    """The C++ name of a NumPy dtype, as some of PyTorch's messages print it (``float``,
    ``double``, ``long int``)."""
    name = np.dtype(np_dtype).name
    return _C_NAMES.get(name, name)


def torch_name(np_dtype) -> str:
    """PyTorch's name of a NumPy dtype in messages: ``Float``, ``Long``...; NumPy's name for one
    PyTorch has no name for."""
    name = np.dtype(np_dtype).name
    return _TORCH_NAMES.get(name, name)
_DEFAULT_FOR_CATEGORY = {BOOL: bool_, INT: int64, FLOAT: float32, COMPLEX: complex64}


def from_numpy_dtype(np_dtype) -> dtype:
    """The numgrad dtype for a NumPy dtype (NumPy's "V2" is bfloat16's storage); uint16, uint32
    and uint64 are not supported."""
    try:
        return _BY_NUMPY[np.dtype(np_dtype)]
    except KeyError:
        narrow = _NARROW_BY_NUMPY.get(np.dtype(np_dtype))
        if narrow is not None:
            _lowp.active = True
            return narrow
        raise TypeError(
            f"can't convert np.ndarray of type numpy.{np.dtype(np_dtype).name}. The only "
            "supported types are: float64, float32, float16, complex64, complex128, int64, int32, "
            "int16, int8, uint8, and bool."
        ) from None


def to_dtype(d) -> dtype:
    """Accept a numgrad dtype, a NumPy dtype or a Python type (float, int, bool)."""
    if isinstance(d, dtype):
        return d
    if d is float:
        return float64
    if d is int:
        return int64
    if d is bool:
        return bool_
    if d is complex:
        return complex128
    return from_numpy_dtype(d)


def scalar_category(value) -> int:
    if isinstance(value, (bool, np.bool_)):
        return BOOL
    if isinstance(value, (int, np.integer)):
        return INT
    if isinstance(value, (float, np.floating)):
        return FLOAT
    if isinstance(value, (complex, np.complexfloating)):
        return COMPLEX
    raise TypeError(f"unsupported operand type: {type(value).__name__}")


def promote_types(a: dtype, b: dtype) -> dtype:
    """``torch.promote_types``: the smallest dtype that holds both."""
    if a is b:
        return a
    if a._category != b._category:
        high, low = (a, b) if a._category > b._category else (b, a)
        if high._category == COMPLEX and low._category == FLOAT and \
                low.itemsize * 2 > high.itemsize:
            return _COMPLEX_OF[low.name]  # (float64 with complex64: complex128)
        return high
    if a.itemsize == b.itemsize:  # (float16 with bfloat16: float32; uint8 with int8: int16)
        return float32 if a._category == FLOAT else int16
    return a if a.itemsize > b.itemsize else b


def _lifted(result: dtype, category: int) -> dtype:
    """``result`` combined with a lower-priority operand of a higher ``category``, as PyTorch's
    ``combine_categories``: a floating-point result keeps its precision in the complex category
    (a float64 tensor with a complex number is complex128)."""
    if category == COMPLEX and result._category == FLOAT:
        return _COMPLEX_OF[result.name]
    return _DEFAULT_FOR_CATEGORY[category]


def result_type(dimensioned, zero_dim, scalars) -> dtype:
    """PyTorch's promotion: tensors with dimensions decide first, then 0-d tensors, then Python
    scalars, and a lower-priority group only counts when it is of a higher category (so a Python
    float never widens a float32 tensor, but makes an int64 tensor float32)."""
    result = None
    for group in (dimensioned, zero_dim):
        best = None
        for d in group:
            best = d if best is None else promote_types(best, d)
        if best is not None and (result is None or best._category > result._category):
            result = best if result is None or best._category != COMPLEX else \
                _lifted(result, COMPLEX) if result._category == FLOAT else best
    if scalars:
        category = max(scalar_category(s) for s in scalars)
        if result is None:
            result = _DEFAULT_FOR_CATEGORY[category]
        elif category > result._category:
            result = _lifted(result, category)
    return result


def default_for_category(category: int) -> dtype:
    return _DEFAULT_FOR_CATEGORY[category]


def set_default_dtype(d) -> None:
    """The dtype of floating-point tensors made without one (``tensor([1.5])``, ``zeros(2)``,
    ``int_tensor / 2``): ``float32`` unless set, as in PyTorch."""
    d = to_dtype(d)
    if d._category != FLOAT:
        raise TypeError("only floating-point types are supported as the default type")
    _DEFAULT_FOR_CATEGORY[FLOAT] = d
    _DEFAULT_FOR_CATEGORY[COMPLEX] = _COMPLEX_OF[d.name]


def get_default_dtype() -> dtype:
    """The default floating-point dtype (``set_default_dtype``)."""
    return _DEFAULT_FOR_CATEGORY[FLOAT]


class _Named:
    """A constant known by its name in ``numgrad``: shown as ``numgrad.<name>`` and pickled as
    that global (the same object when loaded)."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return f"numgrad.{self.name}"

    def __reduce__(self):
        return self.name


class memory_format(_Named):
    """A tensor's memory layout as PyTorch names it (``numgrad.contiguous_format``,
    ``channels_last`` ...), accepted where PyTorch takes ``memory_format=``."""

    __slots__ = ()


contiguous_format = memory_format("contiguous_format")
preserve_format = memory_format("preserve_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")


class layout(_Named):
    """A tensor's layout; numgrad's tensors are all ``numgrad.strided``."""

    __slots__ = ()


strided = layout("strided")
sparse_coo = layout("sparse_coo")  # (a name only: numgrad's functions refuse it, as PyTorch's may)


class DLDeviceType(enum.IntEnum):
    """DLPack's device types (the numbers of ``__dlpack_device__``), as PyTorch names them."""

    kDLCPU = 1
    kDLCUDA = 2
    kDLCUDAHost = 3
    kDLOpenCL = 4
    kDLVulkan = 7
    kDLMetal = 8
    kDLVPI = 9
    kDLROCM = 10
    kDLROCMHost = 11
    kDLExtDev = 12
    kDLCUDAManaged = 13
    kDLOneAPI = 14
    kDLWebGPU = 15
    kDLHexagon = 16
    kDLMAIA = 17


class device:
    """Where a tensor's data lives: ``device('cpu')`` or ``device('cuda', 0)``."""

    __slots__ = ("type", "index")

    def __init__(self, type_or_str="cpu", index: int | None = None):
        if isinstance(type_or_str, device):
            type_or_str, index = type_or_str.type, type_or_str.index
        kind, _, idx = str(type_or_str).partition(":")
        if kind not in ("cpu", "cuda"):
            raise RuntimeError(
                f"Expected one of cpu, cuda device type at start of device string: {type_or_str}"
            )
        self.type = kind
        self.index = int(idx) if idx else index

    def __eq__(self, other) -> bool:
        if isinstance(other, str):
            other = device(other)
        return isinstance(other, device) and (self.type, self.index) == (other.type, other.index)

    def __hash__(self) -> int:
        return hash((self.type, self.index))

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __repr__(self) -> str:
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"


CPU = device("cpu")
CUDA = device("cuda", 0)
