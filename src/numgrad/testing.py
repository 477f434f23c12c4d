"""``numgrad.testing``: ``assert_close`` (and ``assert_allclose``'s successor's defaults), with
PyTorch's tolerances by dtype, its checks (shape, dtype, device) and its messages, word for word,
so that tests written against ``torch.testing`` run unchanged."""
from __future__ import annotations

import collections.abc
import numbers

import numpy as np

from .tensor import Tensor

# (rtol, atol) by dtype name; other dtypes (integers, bool) compare exactly.
_PRECISIONS = {"float16": (0.001, 1e-5), "float32": (1.3e-6, 1e-5), "float64": (1e-7, 1e-7),
               "complex64": (1.3e-6, 1e-5), "complex128": (1e-7, 1e-7)}


class _Failure(Exception):
    """A mismatch found inside nested containers: the exception to raise, and where."""

    def __init__(self, kind, message, path=()):
        super().__init__(message)
        self.kind, self.message, self.path = kind, message, path


def assert_close(actual, expected, *, allow_subclasses: bool = True, rtol=None, atol=None,
                 equal_nan: bool = False, check_device: bool = True, check_dtype: bool = True,
                 check_layout: bool = True, check_stride: bool = False, msg=None) -> None:
    """Asserts that ``actual`` and ``expected`` (tensors, NumPy arrays, Python numbers, or
    sequences and mappings of them) are close: ``|actual - expected| <= atol + rtol *
    |expected|`` elementwise, with the dtype's default tolerances unless both are given, after
    checking that shapes (and dtypes, devices) agree."""
    options = dict(rtol=rtol, atol=atol, equal_nan=equal_nan, check_device=check_device,
                   check_dtype=check_dtype, check_stride=check_stride)
    try:
        # As PyTorch: the containers are paired up first (their errors come first), then each
        # pair of leaves is compared.
        for a, e, path in _pairs(actual, expected):
            if (rtol is None) != (atol is None):
                raise _Failure(ValueError, "Both 'rtol' and 'atol' must be either specified or "
                               f"omitted, but got no {'atol' if atol is None else 'rtol'}.", path)
            if _is_array(a):
                _compare_arrays(a, e, options, path)
            else:
                _compare_numbers(a, e, options, path)
    except _Failure as failure:
        if msg is not None:
            text = msg(failure.message) if callable(msg) else msg
        else:
            text = failure.message
            if failure.path:
                text += "\n\nThe failure occurred for item " + "".join(
                    f"[{p!r}]" for p in failure.path)
        raise failure.kind(text) from None


def _is_number(x) -> bool:
    return isinstance(x, (numbers.Number, np.number, np.bool_))


def _is_array(x) -> bool:
    return isinstance(x, (Tensor, np.ndarray))


def _pairs(actual, expected, path=()):
    """The (actual, expected, path) leaves to compare: tensors and arrays, or numbers."""
    if (_is_array(actual) and _is_array(expected)) or (_is_number(actual)
                                                         and _is_number(expected)):
        return [(actual, expected, path)]
    if isinstance(actual, collections.abc.Mapping) and isinstance(expected,
                                                                  collections.abc.Mapping):
        missing, extra = sorted(set(expected) - set(actual)), sorted(set(actual) - set(expected))
        if missing or extra:
            raise _Failure(AssertionError, "The keys of the mappings do not match:\n"
                           f"Missing keys in the actual mapping: {missing}\n"
                           f"Additional keys in the actual mapping: {extra}", path)
        return [p for key in expected for p in _pairs(actual[key], expected[key], path + (key,))]
    if (isinstance(actual, collections.abc.Sequence) and not isinstance(actual, str)
            and isinstance(expected, collections.abc.Sequence)
            and not isinstance(expected, str)):
        if len(actual) != len(expected):
            raise _Failure(AssertionError, "The length of the sequences mismatch: "
                           f"{len(actual)} != {len(expected)}", path)
        return [p for i, (a, e) in enumerate(zip(actual, expected))
                for p in _pairs(a, e, path + (i,))]
    raise _Failure(TypeError, "No comparison pair was able to handle inputs of type "
                   f"{_torch_type(actual)} and {_torch_type(expected)}.", path)


def _torch_type(x) -> str:
    return "<class 'numgrad.Tensor'>" if isinstance(x, Tensor) else str(type(x))


def _tolerances(dtypes, options) -> tuple:
    if options["rtol"] is not None:
        return options["rtol"], options["atol"]
    pairs = [_PRECISIONS.get(np.dtype(d).name, (0.0, 0.0)) for d in dtypes]
    return max(p[0] for p in pairs), max(p[1] for p in pairs)


def _compare_numbers(actual, expected, options, path) -> None:
    kinds = [np.float64 if isinstance(x, (float, np.floating)) else
             np.complex128 if isinstance(x, complex) else np.int64 for x in (actual, expected)]
    rtol, atol = _tolerances(kinds, options)
    a, e = complex(actual) if isinstance(actual, complex) else actual, expected
    if _close(np.asarray(a), np.asarray(e), rtol, atol, options["equal_nan"]).all():
        return
    abs_diff = abs(actual - expected)
    rel_diff = float("inf") if expected == 0 else abs_diff / abs(expected)
    raise _Failure(AssertionError, _mismatch("Scalars", f"Expected {expected} but got {actual}.",
                                             abs_diff, None, atol, rel_diff, None, rtol), path)


def _close(a, e, rtol, atol, equal_nan):
    """PyTorch's ``isclose``: equal (inf included), or within ``atol + rtol * |e|``."""
    if a.dtype.kind in "biu" and e.dtype.kind in "biu" and rtol == 0 and atol == 0:
        return a == e
    return np.isclose(a, e, rtol=rtol, atol=atol, equal_nan=equal_nan)


def _attribute(name: str, a, e) -> _Failure:
    return _Failure(AssertionError,
                    f"The values for attribute '{name}' do not match: {a} != {e}.")


def _compare_arrays(actual, expected, options, path) -> None:
    def described(x):
        if isinstance(x, Tensor):
            return x.detach(), x.shape, x.dtype, x.device
        t = Tensor._wrap(x) if x.dtype.name in _SUPPORTED else None
        return t, x.shape, (t.dtype if t is not None else x.dtype), "cpu"

    ta, shape_a, dtype_a, device_a = described(actual)
    te, shape_e, dtype_e, device_e = described(expected)
    try:
        if tuple(shape_a) != tuple(shape_e):
            raise _attribute("shape", shape_a, shape_e)
        if options["check_device"] and str(device_a) != str(device_e):
            raise _attribute("device", device_a, device_e)
        if options["check_dtype"] and dtype_a != dtype_e:
            raise _attribute("dtype", dtype_a, dtype_e)
        if options["check_stride"] and ta is not None and te is not None and \
                ta.stride() != te.stride():
            raise _attribute("stride()", ta.stride(), te.stride())
    except _Failure as failure:
        failure.path = path
        raise
    a = ta._host() if ta is not None else actual
    e = te._host() if te is not None else expected
    rtol, atol = _tolerances((a.dtype, e.dtype), options)
    if a.dtype != e.dtype:  # (check_dtype=False: compared in the common dtype)
        common = np.promote_types(a.dtype, e.dtype)
        a, e = a.astype(common), e.astype(common)
    matches = _close(a, e, rtol, atol, options["equal_nan"])
    if matches.all():
        return
    if a.ndim == 0:
        x, y = a.item(), e.item()
        abs_diff = abs(x - y)
        rel_diff = float("inf") if y == 0 else abs_diff / abs(y)
        raise _Failure(AssertionError, _mismatch("Scalars", f"Expected {y} but got {x}.",
                                                 abs_diff, None, atol, rel_diff, None, rtol),
                       path)
    raise _Failure(AssertionError, _tensor_mismatch(a, e, matches, rtol, atol), path)


_SUPPORTED = ("float32", "float64", "int64", "int32", "bool")


def _tensor_mismatch(a, e, matches, rtol, atol) -> str:
    """PyTorch's statistics of the mismatched elements: how many, and the greatest absolute
    and relative differences with their indices (computed in the tensors' dtype, integers in
    int64 with a float32 ratio, as PyTorch computes them)."""
    total = matches.size
    mismatched = total - int(matches.sum())
    extra = f"Mismatched elements: {mismatched} / {total} ({mismatched / total:.1%})"
    a, e, ok = a.reshape(-1), e.reshape(-1), matches.reshape(-1)
    if a.dtype.kind not in "fc":
        a, e = a.astype(np.int64), e.astype(np.int64)
    with np.errstate(all="ignore"):
        abs_diff = np.abs(a - e)
        abs_diff[ok] = 0
        denominator = np.abs(e)
        if a.dtype.kind not in "fc":
            abs_f, denominator = abs_diff.astype(np.float32), denominator.astype(np.float32)
        else:
            abs_f = abs_diff
        rel_diff = abs_f / denominator
        rel_diff[ok] = 0
    abs_i, rel_i = _argmax(abs_diff), _argmax(rel_diff)
    return _mismatch("Tensor-likes", extra, abs_diff[abs_i].item(),
                     np.unravel_index(abs_i, matches.shape), atol, rel_diff[rel_i].item(),
                     np.unravel_index(rel_i, matches.shape), rtol)


def _argmax(x) -> int:
    """The index of the greatest element; of the first NaN if any (as ``torch.max``)."""
    nan = np.isnan(x) if x.dtype.kind in "fc" else None
    if nan is not None and nan.any():
        return int(np.argmax(nan))
    return int(np.argmax(x))


def _mismatch(identifier, extra, abs_diff, abs_idx, atol, rel_diff, rel_idx, rtol) -> str:
    equality = rtol == 0 and atol == 0
    lines = [f"{identifier} are not {'equal' if equality else 'close'}!", "", extra]
    for kind, diff, idx, tol in (("absolute", abs_diff, abs_idx, atol),
                                 ("relative", rel_diff, rel_idx, rtol)):
        if idx is None:
            line = f"{kind.title()} difference: {diff}"
        else:
            line = f"Greatest {kind} difference: {diff} at index {tuple(int(i) for i in idx)}"
        lines.append(line if equality else line + f" (up to {tol} allowed)")
    return "\n".join(lines)


__all__ = ["assert_close"]
