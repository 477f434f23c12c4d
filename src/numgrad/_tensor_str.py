"""Format tensor values exactly like PyTorch's ``repr(tensor)``.

This is a NumPy re-implementation of the parts of ``torch/_tensor_str.py``
(PyTorch 2.13) that apply to dense, real-valued tensors, with PyTorch's
print options (``set_printoptions``: precision, threshold, edgeitems,
linewidth, profile, sci_mode).  The only intended difference is that dtypes are
spelled ``numgrad.float64`` where PyTorch prints ``torch.float64``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ._dtype import get_default_dtype
from ._lowp import to_float

__all__ = ["format_tensor", "set_printoptions", "get_printoptions"]



class _PrintOptions:
    """PyTorch's ``PRINT_OPTS``: what ``set_printoptions`` changes (its defaults: the
    "default" profile, scientific notation chosen per tensor)."""

    def __init__(self) -> None:
        self.precision = 4
        self.threshold = 1000
        self.edgeitems = 3
        self.linewidth = 80
        self.sci_mode = None


OPTS = _PrintOptions()
_PROFILES = {
    "default": dict(precision=4, threshold=1000, edgeitems=3, linewidth=80),
    "short": dict(precision=2, threshold=1000, edgeitems=2, linewidth=80),
    "full": dict(precision=4, threshold=math.inf, edgeitems=3, linewidth=80),
}


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None,
                     profile=None, sci_mode=None) -> None:
    """PyTorch's print options: digits after the point (``precision``), the element count
    beyond which a tensor is summarized (``threshold``) with ``edgeitems`` kept at each end,
    the line width, a ``profile`` ("default", "short", "full") applied first, and ``sci_mode``
    (True/False force scientific notation on or off; None, the default, chooses per tensor).
    As in PyTorch, ``sci_mode`` is set by every call (omitted: back to None)."""
    if profile is not None:
        for key, value in _PROFILES.get(profile, {}).items():
            setattr(OPTS, key, value)
    if precision is not None:
        OPTS.precision = precision
    if threshold is not None:
        OPTS.threshold = threshold
    if edgeitems is not None:
        OPTS.edgeitems = edgeitems
    if linewidth is not None:
        OPTS.linewidth = linewidth
    OPTS.sci_mode = sci_mode


def get_printoptions() -> dict:
    """The current print options, as keyword arguments of ``set_printoptions``."""
    return dict(precision=OPTS.precision, threshold=OPTS.threshold, edgeitems=OPTS.edgeitems,
                linewidth=OPTS.linewidth, sci_mode=OPTS.sci_mode)


_PREFIX = "tensor("


def _implicit_dtypes() -> tuple:
    """The default float dtype's name, and the dtypes whose name is not printed for a non-empty
    tensor: the default float dtype, its complex twin, int64 and bool (``set_default_dtype``
    changes the first two, as in PyTorch)."""
    default = get_default_dtype().name
    return default, (default, "complex128" if default == "float64" else "complex64", "int64",
                     "bool")


class _Formatter:
    """Chooses one common style and column width for all printed values."""

    def __init__(self, values: np.ndarray) -> None:
        self.floating = np.issubdtype(values.dtype, np.floating)
        self.int_mode = True
        self.sci_mode = False
        self.max_width = 1
        flat = values.reshape(-1)
        if self.floating:
            self._scan_floats(flat)
        else:
            self.max_width = max([1] + [len(f"{v}") for v in flat.tolist()])

    def _scan_floats(self, flat: np.ndarray) -> None:
        vals = flat[np.isfinite(flat) & (flat != 0)]
        if vals.size == 0:
            return
        magnitudes = np.abs(vals).astype(np.float64)
        vmin, vmax = float(magnitudes.min()), float(magnitudes.max())
        self.int_mode = bool(np.all(vals == np.ceil(vals)))
        self.sci_mode = (vmax / vmin > 1000.0 or vmax > 1.0e8 or vmin < 1.0e-4
                         if OPTS.sci_mode is None else bool(OPTS.sci_mode))
        self.max_width = max(self._width_of(v) for v in vals.tolist())

    def _width_of(self, value: float) -> int:
        if self.sci_mode:
            return len(f"{value:.{OPTS.precision}e}")
        if self.int_mode:
            return len(f"{value:.0f}") + 1  # room for the trailing "."
        return len(f"{value:.{OPTS.precision}f}")

    def format(self, value: float | int | bool) -> str:
        """Format one Python scalar, right-aligned to the common width."""
        if not self.floating:
            text = f"{value}"
        elif self.sci_mode:
            text = f"{value:{self.max_width}.{OPTS.precision}e}"
        elif self.int_mode:
            text = f"{value:.0f}"
            if math.isfinite(value):
                text += "."
        else:
            text = f"{value:.{OPTS.precision}f}"
        return text.rjust(self.max_width)


class _ComplexFormatter:
    """PyTorch's two formatters of complex values, one for the real parts and one for the
    imaginary parts, each element printed ``re+imj``."""

    def __init__(self, values: np.ndarray) -> None:
        self.real, self.imag = _Formatter(values.real), _Formatter(values.imag)
        self.max_width = self.real.max_width + self.imag.max_width + 1  # (and the "j")

    def format(self, value: complex) -> str:
        real = self.real.format(value.real)
        imag = (self.imag.format(value.imag) + "j").lstrip()
        return real + imag if imag[0] in "+-" else real + "+" + imag


def _edge_indices(size: int) -> np.ndarray:
    """Indices kept along one axis of a summarized tensor."""
    if size > 2 * OPTS.edgeitems:
        return np.r_[0:OPTS.edgeitems, size - OPTS.edgeitems : size]
    return np.arange(size)


def _summarized_data(values: np.ndarray) -> np.ndarray:
    """The values that remain visible once ``...`` replaces the middle."""
    if values.ndim == 0:
        return values
    return values[np.ix_(*[_edge_indices(n) for n in values.shape])]


def _vector_str(values: np.ndarray, indent: int, summarize: bool, fmt: _Formatter) -> str:
    element_length = fmt.max_width + 2  # value plus ", "
    per_line = max(1, (OPTS.linewidth - indent) // element_length)
    if summarize and values.shape[0] > 2 * OPTS.edgeitems:
        head = values[:OPTS.edgeitems].tolist()
        tail = values[-OPTS.edgeitems:].tolist()
        items = [fmt.format(v) for v in head] + [" ..."] + [fmt.format(v) for v in tail]
    else:
        items = [fmt.format(v) for v in values.tolist()]
    lines = [", ".join(items[i : i + per_line]) for i in range(0, len(items), per_line)]
    return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"


def _nested_str(values: np.ndarray, indent: int, summarize: bool, fmt: _Formatter) -> str:
    if values.ndim == 0:
        return fmt.format(values.item())
    if values.ndim == 1:
        return _vector_str(values, indent, summarize, fmt)
    n = values.shape[0]
    if summarize and n > 2 * OPTS.edgeitems:
        rows: list[int | None] = [*range(OPTS.edgeitems), None, *range(n - OPTS.edgeitems, n)]
    else:
        rows = list(range(n))
    parts = [
        "..." if i is None else _nested_str(values[i], indent + 1, summarize, fmt)
        for i in rows
    ]
    separator = "," + "\n" * (values.ndim - 1) + " " * (indent + 1)
    return "[" + separator.join(parts) + "]"


def _values_str(values: np.ndarray, indent: int) -> str:
    """The bracketed value listing (PyTorch's ``_tensor_str``)."""
    if values.size == 0:
        return "[]"
    summarize = values.size > OPTS.threshold
    shown = _summarized_data(values) if summarize else values
    fmt = _ComplexFormatter(shown) if values.dtype.kind == "c" else _Formatter(shown)
    return _nested_str(values, indent, summarize, fmt)


def _add_suffixes(text: str, suffixes: Sequence[str], indent: int) -> str:
    """Append ``, suffix`` items, wrapping any that would pass the linewidth."""
    pieces = [text]
    last_line_len = len(text) - text.rfind("\n") + 1  # mirrors PyTorch exactly
    for suffix in suffixes:
        if last_line_len + len(suffix) + 2 > OPTS.linewidth:
            pieces.append(",\n" + " " * indent + suffix)
            last_line_len = indent + len(suffix)
        else:
            pieces.append(", " + suffix)
            last_line_len += len(suffix) + 2
    pieces.append(")")
    return "".join(pieces)


def _metadata_suffixes(values: np.ndarray, dtype_name: str, device: str) -> list[str]:
    """The ``device=``, ``size=`` and ``dtype=`` items PyTorch would print."""
    suffixes = []
    if device != "cpu":
        suffixes.append(f"device='{device}'")
    default, implicit = _implicit_dtypes()
    if values.size == 0:
        if values.ndim != 1:
            suffixes.append(f"size={tuple(values.shape)}")
        if dtype_name != default:
            suffixes.append(f"dtype=numgrad.{dtype_name}")
    elif dtype_name not in implicit:
        suffixes.append(f"dtype=numgrad.{dtype_name}")
    return suffixes


def format_tensor(
    values: np.ndarray,
    dtype_name: str,
    *,
    device: str = "cpu",
    suffixes: Sequence[str] = (),
) -> str:
    """Return the ``repr`` PyTorch 2.13 would print for a tensor of ``values``.

    Args:
        values: The tensor's data, of any shape (0-d and empty included) and
            any memory layout.  It is cast to ``dtype_name`` if needed.
        dtype_name: numgrad's name of the dtype (``"float32"``, ``"bfloat16"``...).
        device: Device string; anything but ``"cpu"`` is printed as
            ``device='...'``.
        suffixes: Already-formatted trailing items such as
            ``"grad_fn=<AddBackward0>"`` or ``"requires_grad=True"``, printed
            after the device and dtype items.

    Returns:
        A string such as ``tensor([[3., 3.],\\n        [3., 3.]], grad_fn=<AddBackward0>)``.
    """
    if dtype_name == "bfloat16":  # (NumPy has none: printed from its float32 values)
        values = to_float(np.asarray(values))
    else:
        values = np.asarray(values, dtype=np.dtype(dtype_name))
    indent = len(_PREFIX)
    body = _PREFIX + _values_str(values, indent)
    items = _metadata_suffixes(values, dtype_name, device) + list(suffixes)
    return _add_suffixes(body, items, indent)
