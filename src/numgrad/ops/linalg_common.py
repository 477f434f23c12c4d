"""What the linear algebra ops share: PyTorch's ``LinAlgError``, the argument checks (a tensor, a
floating (batch of) square matrices; PyTorch's refusals of float16/bfloat16 ones, by function,
``_HALF_REFUSALS``), the conjugate transpose, the named-tuple results of the
``*_ex`` functions, the base op of a decomposition's outputs (``_Factor``), and the ``out=``
wrappers of ``torch.linalg``'s functions.
"""
from __future__ import annotations

import builtins
import functools
import weakref

import numpy as np

from ..autograd import grad_mode
from ..autograd.node import OpNode
from ..tensor import Tensor
from .reduction import _torch_name
from .registry import Op, apply
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
    float16 taken, bfloat16 ("V") refused as not a float. A function of ``_HALF_REFUSALS`` takes
    both, its refusal coming after its other checks (``_refuse_half``)."""
    if low_precision is None and fn in _HALF_REFUSALS:
        low_precision = True
    kind = A._data.dtype.kind
    if kind not in ("fcV" if low_precision is not None else "fc"):
        raise RuntimeError(f"{fn}: Expected a floating point or complex tensor as input. Got "
                           f"{_torch_name(A._data.dtype)}")
    if low_precision is False and A._data.dtype.itemsize == 2:  # (float16, bfloat16)
        raise RuntimeError(f"{fn}: Low precision dtypes not supported. Got "
                           f"{_torch_name(A._data.dtype)}")


def _check_matrix(fn: str, A: Tensor, square: bool = True,
                  low_precision: bool | None = None, refuse_half: bool = True) -> None:
    """PyTorch's checks of a (batch of) matrices: at least 2-D, floating (``_check_float``'s
    ``low_precision``), square; then, a float16/bfloat16 ``A``, ``fn``'s refusal of it
    (``_HALF_REFUSALS``), unless ``refuse_half`` is False: the caller refuses it after its
    checks of its other arguments, where PyTorch's kernel does (``_refuse_half``)."""
    _check_tensor(fn, A)
    d = A._data
    if d.ndim < 2:
        raise RuntimeError(f"{fn}: The input tensor A must have at least 2 dimensions.")
    _check_float(fn, A, low_precision)
    if square and tuple(d.shape)[-1] != tuple(d.shape)[-2]:
        raise RuntimeError(f"{fn}: A must be batches of square matrices, but they are "
                           f"{tuple(d.shape)[-2]} by {tuple(d.shape)[-1]} matrices")
    if refuse_half:
        _refuse_half(fn, A)


# ------------------------------------------------------------------ float16 and bfloat16
def _kernel(name: str, empty: bool = False) -> tuple:
    """The refusal of a CPU kernel PyTorch 2.13 has no float16/bfloat16 case of, its dispatch's
    NotImplementedError; ``empty``: an input without elements gets its (empty) result, the
    function returning before it dispatches."""
    return NotImplementedError, f'"{name}" not implemented for \'{{dtype}}\'', empty


_LU, _CHOLESKY, _SVD = _kernel("lu_cpu", True), _kernel("cholesky_cpu", True), \
    _kernel("linalg_svd_cpu", True)
_EIG, _GEQRF, _TRIANGULAR = _kernel("linalg_eig_out_cpu"), _kernel("geqrf_cpu"), \
    _kernel("triangular_solve_cpu")
_LOW_PRECISION = RuntimeError, "{fn}: Low precision dtypes not supported. Got {dtype}", False

# PyTorch 2.13's error for a float16 or bfloat16 (batch of) matrices (on the CPU; measured with
# 3x3 matrices, batches of them, empty ones), by the name the function gives its checks (``fn``
# of ``_check_matrix``, ``_refuse_half``): (exception class, message, whether an empty input is
# computed instead). It comes after the checks of the shapes (its dimensions, square) and of the
# other arguments; pinv's before them.
_HALF_REFUSALS = {
    "linalg.det": _LU, "linalg.solve": _LU, "linalg.lu": _LU, "torch.lu_factor": _LU,
    "torch.linalg.lu_solve": _kernel("linalg.lu_solve_cpu", True),
    "linalg.cholesky": _CHOLESKY, "cholesky": _CHOLESKY,
    "cholesky_solve": _kernel("cholesky_solve_cpu"),
    "cholesky_inverse": _kernel("cholesky_inverse_out_cpu"),
    "linalg.svd": _SVD,
    "linalg.eig": _EIG, "linalg.eigvals": _EIG,
    "linalg.eigh": _kernel("linalg_eigh_cpu", True),
    "linalg.qr": _GEQRF, "torch.geqrf": _GEQRF,
    "torch.linalg.householder_product": _kernel("orgqr_cpu"),
    "torch.ormqr": _kernel("ormqr_cpu"),
    "linalg.solve_triangular": _TRIANGULAR, "triangular_solve": _TRIANGULAR,
    "torch.linalg.ldl_factor_ex": _kernel("ldl_factor_kernel_cpu", True),
    "torch.linalg.ldl_solve": _kernel("ldl_solve_kernel_cpu", True),
    "torch.linalg.lstsq": _kernel("linalg_lstsq_cpu"),  # (given rcond; without, _epsilon's)
    "linalg.inv": _LOW_PRECISION, "linalg.slogdet": _LOW_PRECISION, "logdet": _LOW_PRECISION,
    "linalg.pinv": (RuntimeError, "linalg.pinv({dtype}{{{shape}}}): expected a tensor with 2 or "
                    "more dimensions of float, double, cfloat or cdouble types", False),
}


def _is_half(A: Tensor) -> bool:
    d = A._data.dtype
    return d.itemsize == 2 and d.kind in "fV"  # (float16, bfloat16)


def _refuse_half(fn: str, A: Tensor) -> None:
    """``fn``'s refusal of a float16/bfloat16 ``A`` (``_HALF_REFUSALS``), if any; where it is a
    kernel's, of an integer or bool ``A`` as well (which the float checks before it refuse
    first, but in the functions PyTorch gives no such check: the triangular solves,
    ``cholesky_solve``, ``householder_product``, ``ormqr``)."""
    refusal = _HALF_REFUSALS.get(fn)
    if refusal is None:
        return
    error, message, empty = refusal
    if not _is_half(A) and (A._data.dtype.kind in "fc" or error is not NotImplementedError):
        return
    if empty and not A.numel():
        return
    raise error(message.format(fn=fn, dtype=_torch_name(A._data.dtype), shape=list(A.shape)))


def _epsilon(A: Tensor) -> float:
    """PyTorch's ``_get_epsilon`` of ``A``'s (real) dtype, for a default tolerance: float and
    double's; of float16, bfloat16 and integers, its refusal."""
    if _is_half(A) or A._data.dtype.kind not in "fc":
        raise RuntimeError("This function doesn't handle types other than float and double")
    return float(np.finfo(A._data.dtype).eps)


def _check_solve_inputs(b: Tensor, A: Tensor, name: str) -> None:
    """PyTorch's ``linearSolveCheckInputs`` (``cholesky_solve``, ``triangular_solve``): ``b`` and
    ``A`` of one dtype, ``A`` square, of ``b``'s rows; then a float16/bfloat16 ``A``'s refusal."""
    if b.dtype is not A.dtype:
        raise RuntimeError(f"Expected b and A to have the same dtype, but found b of type "
                           f"{_torch_name(b._data.dtype)} and A of type "
                           f"{_torch_name(A._data.dtype)} instead.")
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"A must be batches of square matrices, but they are {A.shape[-2]} by "
                           f"{A.shape[-1]} matrices")
    if A.shape[-1] != b.shape[-2]:
        raise RuntimeError(f"Incompatible matrix sizes for {name}: each A matrix is "
                           f"{A.shape[-1]} by {A.shape[-1]} but each b matrix is {b.shape[-2]} "
                           f"by {b.shape[-1]}")
    _refuse_half(name, A)


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


class _Outputs:
    """The outputs of one decomposition, shared by their nodes (``params["outputs"]`` of each):
    the op of each (None: an output that gets no node, QR's empty Q of mode 'r') and, for each
    one recorded, a weak reference to its node and its version counter.

    A recorded backward (``create_graph``) takes from it the forward's outputs, as PyTorch
    unpacks the outputs its one node saved: each rebuilt around the forward's array with its
    own node as ``grad_fn``, so that the second backward reaches every output at its node and
    sums there what flows into it (through the recorded backward and through the user's own
    functions of it: eig's phase check sees that sum, as PyTorch's). References are weak, as
    PyTorch saves an output without its ``grad_fn``: a node holds its params, so a strong one
    would make a cycle, and the group keeps no graph alive. An output whose node has died (not
    returned, eigvals' vectors; or dropped unused) or been freed gets a node over the input
    anew, the op applied to its array, as the one node of PyTorch would take its gradient."""

    __slots__ = ("ops", "nodes")

    def __init__(self, ops: tuple):
        self.ops = ops
        self.nodes = [None] * len(ops)  # (weak reference to the node, version counter) or None

    def note(self, index: int, result: Tensor) -> Tensor:
        """``result``, output ``index``: its node noted, if it has one."""
        node = result._grad_fn
        if node is not None:
            self.nodes[index] = (weakref.ref(node), result._version_counter)
        return result

    def tensors(self, node, index: int, A: Tensor, params: dict) -> tuple:
        """The outputs, for the recorded backward of ``node`` (output ``index``'s) over ``A``."""
        out = []
        for j, (op, array) in enumerate(zip(self.ops, params["factors"])):
            if op is None:
                out.append(Tensor._wrap(array))
                continue
            noted = self.nodes[j]
            fn = noted[0]() if noted is not None else None
            if j == index and fn is not node:  # (its own, made another way: a fresh counter)
                fn, noted = node, None
            if fn is None or fn._released:
                out.append(self.note(j, apply(op, (A,), (array,), **params)))
                continue
            t = Tensor._wrap(array, True)
            t._grad_fn = fn
            if noted is not None:
                t._version_counter = noted[1]
            out.append(t)
        return tuple(out)


def _factor_results(A: Tensor, ops: tuple, factors: tuple, wanted=None, **params) -> tuple:
    """The outputs ``wanted`` (indices; None: all) of a decomposition of ``A`` into the arrays
    ``factors``: for each, ``ops[j]`` applied to ``factors[j]``, the ops sharing ``factors`` and
    one ``_Outputs`` among their params."""
    outputs = _Outputs(ops)
    params.update(factors=factors, outputs=outputs)
    return tuple(outputs.note(j, apply(ops[j], (A,), (factors[j],), **params))
                 for j in (range(len(ops)) if wanted is None else wanted))


class _Factor(Op):
    """One output of a decomposition computed before the op runs (``forward`` passes it
    through; ``_factor_results`` applies the ops); its backward is the decomposition's with
    this output's gradient alone. Not recorded, the formula takes the arrays; recorded
    (``create_graph``), the forward's outputs, whose graph reaches the input
    (``_Outputs.tensors``); called by a forward rule (``transposed_backward``: a context, not a
    node), the decomposition recomputed from the input, so that the factors carry its tangents.
    """

    save_inputs = (0,)
    index = 0
    rebuilds_output = True  # (forward AD: its output rebuilt by a recorded backward has its
    #                          tangents, ``forward_ad._keep_for_saved_output``)

    @staticmethod
    def forward(K, factor, **params):
        return factor

    @classmethod
    def backward(cls, ctx, grad):
        (A,) = ctx.saved_tensors
        params = ctx.params
        if not grad_mode.state.enabled:
            factors = tuple(Tensor._wrap(f) for f in params["factors"])
        elif isinstance(ctx, OpNode):  # (a recorded backward: the forward's outputs)
            factors = params["outputs"].tensors(ctx, cls.index, A, params)
        else:
            factors = cls.recompute(A, params)
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
