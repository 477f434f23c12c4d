"""Format tensor values exactly like PyTorch's ``repr(tensor)``.

This is a NumPy re-implementation of the parts of ``torch/_tensor_str.py``
(PyTorch 2.13) that apply to dense, real-valued tensors, using PyTorch's
default print options.  The only intended difference is that dtypes are
spelled ``numgrad.float64`` where PyTorch prints ``torch.float64``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

__all__ = ["format_tensor"]

# PyTorch's default print options (torch.set_printoptions(profile="default")).
PRECISION = 4
THRESHOLD = 1000
EDGEITEMS = 3
LINEWIDTH = 80

_PREFIX = "tensor("
_DEFAULT_DTYPE = "float32"
# Dtypes whose name is not printed for a non-empty tensor.
_IMPLICIT_DTYPES = ("float32", "int64", "bool")


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
        self.sci_mode = vmax / vmin > 1000.0 or vmax > 1.0e8 or vmin < 1.0e-4
        self.max_width = max(self._width_of(v) for v in vals.tolist())

    def _width_of(self, value: float) -> int:
        if self.sci_mode:
            return len(f"{value:.{PRECISION}e}")
        if self.int_mode:
            return len(f"{value:.0f}") + 1  # room for the trailing "."
        return len(f"{value:.{PRECISION}f}")

    def format(self, value: float | int | bool) -> str:
        """Format one Python scalar, right-aligned to the common width."""
        if not self.floating:
            text = f"{value}"
        elif self.sci_mode:
            text = f"{value:{self.max_width}.{PRECISION}e}"
        elif self.int_mode:
            text = f"{value:.0f}"
            if math.isfinite(value):
                text += "."
        else:
            text = f"{value:.{PRECISION}f}"
        return text.rjust(self.max_width)


def _edge_indices(size: int) -> np.ndarray:
    """Indices kept along one axis of a summarized tensor."""
    if size > 2 * EDGEITEMS:
        return np.r_[0:EDGEITEMS, size - EDGEITEMS : size]
    return np.arange(size)


def _summarized_data(values: np.ndarray) -> np.ndarray:
    """The values that remain visible once ``...`` replaces the middle."""
    if values.ndim == 0:
        return values
    return values[np.ix_(*[_edge_indices(n) for n in values.shape])]


def _vector_str(values: np.ndarray, indent: int, summarize: bool, fmt: _Formatter) -> str:
    element_length = fmt.max_width + 2  # value plus ", "
    per_line = max(1, (LINEWIDTH - indent) // element_length)
    if summarize and values.shape[0] > 2 * EDGEITEMS:
        head = values[:EDGEITEMS].tolist()
        tail = values[-EDGEITEMS:].tolist()
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
    if summarize and n > 2 * EDGEITEMS:
        rows: list[int | None] = [*range(EDGEITEMS), None, *range(n - EDGEITEMS, n)]
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
    summarize = values.size > THRESHOLD
    fmt = _Formatter(_summarized_data(values) if summarize else values)
    return _nested_str(values, indent, summarize, fmt)


def _add_suffixes(text: str, suffixes: Sequence[str], indent: int) -> str:
    """Append ``, suffix`` items, wrapping any that would pass the linewidth."""
    pieces = [text]
    last_line_len = len(text) - text.rfind("\n") + 1  # mirrors PyTorch exactly
    for suffix in suffixes:
        if last_line_len + len(suffix) + 2 > LINEWIDTH:
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
    if values.size == 0:
        if values.ndim != 1:
            suffixes.append(f"size={tuple(values.shape)}")
        if dtype_name != _DEFAULT_DTYPE:
            suffixes.append(f"dtype=numgrad.{dtype_name}")
    elif dtype_name not in _IMPLICIT_DTYPES:
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
        dtype_name: ``"float32"``, ``"float64"``, ``"int64"``, ``"int32"`` or
            ``"bool"``.
        device: Device string; anything but ``"cpu"`` is printed as
            ``device='...'``.
        suffixes: Already-formatted trailing items such as
            ``"grad_fn=<AddBackward0>"`` or ``"requires_grad=True"``, printed
            after the device and dtype items.

    Returns:
        A string such as ``tensor([[3., 3.],\\n        [3., 3.]], grad_fn=<AddBackward0>)``.
    """
    values = np.asarray(values, dtype=np.dtype(dtype_name))
    indent = len(_PREFIX)
    body = _PREFIX + _values_str(values, indent)
    items = _metadata_suffixes(values, dtype_name, device) + list(suffixes)
    return _add_suffixes(body, items, indent)
