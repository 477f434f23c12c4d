"""What the linear algebra ops share: PyTorch's ``LinAlgError``, the argument checks (a tensor, a
floating (batch of) square matrices), the conjugate transpose, the named-tuple results of the
``*_ex`` functions, the base op of a decomposition's outputs (``_Factor``), and the ``out=``
wrappers of ``torch.linalg``'s functions.
"""
from __future__ import annotations

import builtins
import functools

from ..autograd import grad_mode
from ..tensor import Tensor
from .reduction import _torch_name
from .registry import Op
from .._dtype import c_name
import numgrad
from .. import _out


class _LinAlgError(RuntimeError):
    """PyTorch's ``torch.linalg.LinAlgError``: a factorisation that failed (a singular matrix, one
    that is not positive-definite). A ``RuntimeError``, as PyTorch's."""


_LinAlgError.__module__ = "numgrad.linalg"


LinAlgError = _LinAlgError


def _ng():
    return numgrad


# ------------------------------------------------------------------ argument checks
def _check_tensor(fn: str, A, name: str = "A") -> Tensor:
    if not isinstance(A, Tensor):
        raise TypeError(f"{fn.split('.')[-1]}(): argument '{name}' (position 1) must be Tensor, "
                        f"not {type(A).__name__}")
    return A


def _check_float(fn: str, A: Tensor, low_precision: bool | None = None) -> None:
    """PyTorch's ``checkFloatingOrComplex``: a float or complex ``A``; ``low_precision`` says
    whether float16 and bfloat16 are taken (True) or refused with PyTorch's "Low precision dtypes
    not supported" (False). None, for the functions not yet compared with PyTorch on them:
    float16 taken, bfloat16 ("V") refused as not a float."""
    kind = A._data.dtype.kind
    if kind not in ("fcV" if low_precision is not None else "fc"):
        raise RuntimeError(f"{fn}: Expected a floating point or complex tensor as input. Got "
                           f"{_torch_name(A._data.dtype)}")
    if low_precision is False and A._data.dtype.itemsize == 2:  # (float16, bfloat16)
        raise RuntimeError(f"{fn}: Low precision dtypes not supported. Got "
                           f"{_torch_name(A._data.dtype)}")


def _check_matrix(fn: str, A: Tensor, square: bool = True,
                  low_precision: bool | None = None) -> None:
    """PyTorch's checks of a (batch of) matrices: at least 2-D, floating (``_check_float``'s
    ``low_precision``), square."""
    _check_tensor(fn, A)
    d = A._data
    if d.ndim < 2:
        raise RuntimeError(f"{fn}: The input tensor A must have at least 2 dimensions.")
    _check_float(fn, A, low_precision)
    if square and tuple(d.shape)[-1] != tuple(d.shape)[-2]:
        raise RuntimeError(f"{fn}: A must be batches of square matrices, but they are "
                           f"{tuple(d.shape)[-2]} by {tuple(d.shape)[-1]} matrices")


def _mH(t: Tensor) -> Tensor:
    """The conjugate transpose of the last two dimensions (of a real tensor, the transpose)."""
    t = t.transpose(-2, -1)
    return t.conj() if t._data.dtype.kind == "c" else t


def _diag(values: Tensor) -> Tensor:
    return _ng().diag_embed(values)


def _eye_like(A: Tensor) -> Tensor:
    n = A.shape[-1]
    return _ng().eye(n, dtype=A.dtype, device=A.device)


class _ExResult(tuple):
    """``torch.return_types.linalg_*_ex``: (result, info) under PyTorch's field names."""

    _fields = ("result", "info")
    _name = "linalg_inv_ex"

    def __new__(cls, *items):
        return super().__new__(cls, items)

    def __getattr__(self, name):
        try:
            return self[type(self)._fields.index(name)]
        except ValueError:
            raise AttributeError(name) from None

    def __repr__(self):
        body = ",\n".join(f"{f}={v!r}" for f, v in zip(self._fields, self))
        return f"torch.return_types.{self._name}(\n{body})"


class _renamed:
    """Renames the function a LinAlgError raised inside names (``linalg.inv`` as ``_ex``)."""

    def __init__(self, old: str, new: str):
        self.old, self.new = old, new

    def __enter__(self):
        return self

    def __exit__(self, kind, error, tb):
        if isinstance(error, _LinAlgError) and str(error).startswith(self.old + ":"):
            raise _LinAlgError(self.new + str(error)[len(self.old):]) from None
        return False


class _Factor(Op):
    """One output of a decomposition computed before the op runs (``forward`` passes it
    through); its backward is the decomposition's with this output's gradient alone."""

    save_inputs = (0,)
    index = 0

    @staticmethod
    def forward(K, factor, **params):
        return factor

    @classmethod
    def backward(cls, ctx, grad):
        (A,) = ctx.saved_tensors
        params = ctx.params
        if grad_mode.state.enabled:  # (a recorded backward: factors whose graph reaches A)
            factors = cls.recompute(A, params)
        else:
            factors = tuple(Tensor._wrap(f) for f in params["factors"])
        grads = [None] * len(factors)
        grads[cls.index] = grad
        return (cls.formula(grads, factors, params),)


def _with_out(fn, name: str, same_dtype: bool = True):
    """``fn`` taking PyTorch's ``out=`` (``name`` ATen's, as its messages say): the result written
    into ``out`` (of the result's dtype), which is returned; refused where autograd would record
    the call; ``same_dtype`` False: ``out`` of another dtype gets the result cast, where it can
    hold it."""
    @functools.wraps(fn)
    def call(*args, out=None, **kwargs):
        if out is None:
            return fn(*args, **kwargs)

        if not isinstance(out, Tensor):
            raise TypeError(f"{name}(): argument 'out' must be Tensor, not {type(out).__name__}")
        if grad_mode.state.enabled and (out._requires_grad or builtins.any(
                t._requires_grad for t in _out._tensors(args, kwargs))):
            raise RuntimeError(f"{name}(): functions with out=... arguments don't support "
                               "automatic differentiation, but one of the arguments requires grad.")
        result = fn(*args, **kwargs)
        if same_dtype and out._data.dtype != result._data.dtype:
            raise RuntimeError(f"Expected out tensor to have dtype {c_name(result._data.dtype)}, "
                               f"but got {c_name(out._data.dtype)} instead")
        _out.write(out, result)
        return out

    return call


def _no_out(fn, name: str):
    """``fn`` refusing ``out=`` (a tuple of results: not supported yet) with NotImplementedError."""
    @functools.wraps(fn)
    def call(*args, out=None, **kwargs):
        if out is not None:
            raise NotImplementedError(f"{name}: out= is not supported yet")
        return fn(*args, **kwargs)

    return call
