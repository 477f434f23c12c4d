"""The one interface that both kernel modules implement: ``kernels.cpu`` (NumPy arrays) and
``kernels.cuda`` (device arrays). An op's forward gets the module of its inputs' device as ``K``
and calls only what is listed here, so no op branches on the device; tests/test_formulas.py
checks both modules against this Protocol, names and parameters.

"Array" below is the device's array type: ``numpy.ndarray`` on the CPU, a numba-cuda device array
(possibly a strided view of another's memory) on CUDA. Op ids (``K.EXP``, ``K.ADD``, ``K.MAX``...)
are the formula table's (``kernels/formulas.py``); both modules export every one of them.
"""
from __future__ import annotations

from types import ModuleType
from typing import Any, Protocol, runtime_checkable

Array = Any


@runtime_checkable
class Kernels(Protocol):
    DEVICE: str  # the device type of these kernels' arrays: "cpu" or "cuda"
    loss: ModuleType  # nll_loss_forward(x, target, weight, ignore_index, reduction) and backward
    conv: ModuleType  # conv_forward, conv_backward_input, conv_backward_weight (kernels/cpu/conv.py)
    pooling: ModuleType  # max/avg/adaptive pooling, reflection/replication padding (cpu/pooling.py)
    structure: ModuleType  # tri, remap (flip/roll), diagonal (a view), embed_diagonal (cpu/structure.py)

    # -- elementwise (kernels generated from the formula table)
    def unary(self, op: int, x: Array) -> Array:
        """``op`` of every element, a new C-contiguous array."""

    def unary_into(self, op: int, x: Array) -> None:
        """``x = op(x)`` in place (one pass over a contiguous ``x``)."""

    def binary(self, op: int, a: Array, b: Array, out_dtype=None) -> Array:
        """``op(a, b)`` broadcast; ``b`` may be a host number of ``a``'s dtype."""

    def binary_into(self, op: int, out: Array, b: Array, alpha=None) -> None:
        """``out = op(out, b)`` (``op(out, alpha * b)`` with ``alpha``) in place."""

    def where(self, cond: Array, a: Array, b: Array) -> Array:
        """``a`` where ``cond`` else ``b``, broadcast together."""

    # -- reductions and the helpers of their backward formulas
    def sum_dims(self, x: Array, dims: tuple, keepdim: bool) -> Array: ...
    def reduce_dims(self, op: int, x: Array, dims: tuple, keepdim: bool) -> Array: ...
    def arg_reduce_dims(self, op: int, x: Array, dims: tuple, keepdim: bool) -> Array: ...
    def one_hot_dim(self, indices: Array, shape: tuple, dim: int, dtype) -> Array: ...
    def extreme_share(self, x: Array, extreme: Array, dims: tuple, nan_equal: bool) -> Array:
        """1 / ties where ``x`` equals its slice's ``extreme``, else 0; NaN matches NaN only
        with ``nan_equal`` (max()/min(): one-hot at a NaN; amax/amin: NaN for the slice)."""
    def any_equal(self, x: Array, value) -> bool: ...

    def any_equal_device(self, x: Array, value) -> Array:
        """Whether an element equals ``value``, as a 0-d bool array of this device (no sync)."""

    def product_of_others(self, x: Array, dims: tuple) -> Array: ...
    def finite_or_zero(self, x: Array) -> Array: ...
    def inf_where_zero(self, x: Array) -> Array: ...

    # -- batch normalisation (x: (N, C, *); per-channel arrays (C,) of x's dtype)
    def batch_norm_stats(self, x: Array, eps: float) -> tuple:
        """(mean, biased variance, 1 / sqrt(var + eps)) of each channel over the others."""

    def batch_norm_forward(self, x: Array, mean: Array, invstd: Array, weight: Array,
                           bias: Array) -> Array: ...

    def batch_norm_backward(self, grad: Array, x: Array, mean: Array, invstd: Array,
                            weight: Array, training: bool) -> tuple:
        """(grad of x, of weight, of bias); ``training``: the statistics are x's own."""

    # -- layer normalisation over the last dimensions (``n`` elements; statistics (rows,))
    def layer_norm_forward(self, x: Array, weight: Array, bias: Array, eps: float,
                           n: int) -> tuple:
        """(output, mean, rstd) of each row of ``n`` elements."""

    def layer_norm_backward(self, grad: Array, x: Array, mean: Array, rstd: Array,
                            weight: Array, n: int, need_x: bool = True) -> tuple:
        """(grad of x or None, of weight, of bias), the weight's and bias's flattened (n,)."""

    # -- embedding: ``weight[indices]`` and its gradient (rows of ``grad``, one per index)
    def embedding_forward(self, weight: Array, indices: Array) -> Array:
        """``indices.shape + (D,)``: the rows named (IndexError "index out of range in self")."""

    def embedding_backward(self, grad: Array, indices: Array, num_weights: int,
                           padding_idx: int, scale_grad_by_freq: bool) -> Array:
        """(num_weights, D): each index's gradient row added into its row of the weight's,
        none for ``padding_idx`` (-1: none), divided by the index's count if
        ``scale_grad_by_freq``."""

    def log_softmax_last(self, a: Array) -> Array:
        """log_softmax along the last dimension of a C-contiguous, non-empty array."""

    def log_softmax_backward_last(self, grad: Array, out: Array) -> Array:
        """``grad - exp(out) * grad.sum(-1, keepdim=True)``, C-contiguous operands."""

    # -- matrix products
    def matmul(self, a: Array, b: Array, trans_a: bool = False, trans_b: bool = False) -> Array: ...
    # From how many multiply-adds ``matmul_add_row`` is the faster way to add a bias row to a
    # product (None: never; below it, ``binary(ADD, matmul(...), c)``, which compiled programs fuse)
    ROW_BIAS_FUSED_MACS: int | None

    def matmul_add_row(self, a: Array, b: Array, c: Array, trans_a: bool = False,
                       trans_b: bool = False) -> Array:
        """``op(a) @ op(b) + c``, ``c`` a row (n,) of the product's dtype added to each row:
        the sums of ``binary(ADD, matmul(a, b, ...), c)``, or (the CPU's float32 blocks) the
        row as GEMM's start value, to which it adds the product, as PyTorch's addmm."""

    def dot(self, a: Array, b: Array) -> Array: ...

    # -- data: allocation, conversion, movement between host and device
    def empty(self, shape: tuple, dtype) -> Array: ...
    def zeros(self, shape: tuple, dtype) -> Array: ...
    def full(self, shape: tuple, value, dtype) -> Array: ...
    def cast(self, a: Array, dtype) -> Array: ...
    def copy(self, a: Array) -> Array: ...
    def broadcast_copy(self, a: Array, shape: tuple, dtype) -> Array: ...

    def upload(self, a: Any) -> Array:
        """A copy of the host (NumPy) array ``a`` as an array of this device."""

    def to_device(self, a: Array, device: str) -> tuple:
        """A copy of ``a`` on ``device`` ("cpu" or "cuda"), and that device's kernel module."""

    def to_host(self, a: Array) -> Any:
        """The data as a NumPy array (a copy from a GPU, which syncs)."""

    def check_errors(self) -> None:
        """Raises an index that a kernel found out of range (a sync on CUDA; nothing on the CPU)."""

    # -- layout: views share memory
    def ascontiguous(self, a: Array) -> Array: ...
    def is_contiguous(self, a: Array) -> bool: ...
    def reshape_view(self, a: Array, shape: tuple) -> Array: ...
    def broadcast_to(self, a: Array, shape: tuple) -> Array: ...
    def permute(self, a: Array, dims: tuple) -> Array: ...
    def transpose(self, a: Array, dim0: int, dim1: int) -> Array: ...
    def squeeze(self, a: Array, dims: tuple) -> Array: ...
    def unsqueeze(self, a: Array, dim: int) -> Array: ...
    def view_index(self, a: Array, index: tuple) -> Array: ...
    def cat(self, arrays, dim: int) -> Array: ...
    def stack(self, arrays, dim: int) -> Array: ...
    def repeat(self, a: Array, repeats: tuple) -> Array: ...
    def assign(self, dst: Array, src) -> None: ...
    def address(self, a: Array) -> int: ...
    def may_share_memory(self, a, b) -> bool: ...
    def is_writeable(self, a: Array) -> bool: ...

    # -- indexing
    def index(self, a: Array, basic: tuple, adv: tuple) -> Array: ...
    def index_put(self, out: Array, basic: tuple, adv, values: Array, accumulate: bool) -> None: ...

    # -- along one dimension: scans, sorting, gather/scatter (kernels/*/scan.py, sorting.py,
    # gather.py)
    def cumulative(self, x: Array, dim: int, mul: bool, reverse: bool) -> Array:
        """The running sum (``mul``: product) along ``dim`` (from the end with ``reverse``)."""

    def cumprod_backward(self, x: Array, out: Array, grad: Array, dim: int) -> Array:
        """cumprod's gradient, exact where ``x`` holds zeros."""

    def sort_dim(self, x: Array, dim: int, descending: bool) -> tuple:
        """``(values, int64 indices)`` sorted along ``dim``: stable, NaN largest."""

    def topk_dim(self, x: Array, k: int, dim: int, largest: bool) -> tuple:
        """The first ``k`` of ``sort_dim(x, dim, largest)``."""

    def mode_dim(self, x: Array, dim: int) -> tuple:
        """``(values, int64 indices)``, ``dim`` kept as size 1: the most frequent value along
        ``dim`` (the smallest of equally frequent ones; NaN equal to NaN) and the last index of
        it (kernels/*/predicates.py)."""

    def order_dim(self, x: Array, dim: int) -> tuple:
        """``sort_dim(x, dim, False)``'s result (CUDA sorts long lines by a bitonic network)."""

    def nan_to_num(self, x: Array, nan, posinf, neginf) -> Array:
        """A copy of the float array ``x`` with NaN, +inf and -inf replaced by these numbers."""

    def isclose(self, a: Array, b: Array, rtol: float, atol: float, equal_nan: bool) -> Array:
        """PyTorch's ``isclose`` of float arrays of one dtype, broadcast together; bool."""

    def gather_dim(self, x: Array, dim: int, index: Array) -> Array: ...
    def index_select_dim(self, x: Array, dim: int, index: Array) -> Array: ...

    # -- linear algebra on batches of matrices (kernels/*/decompositions.py; ``check``: a failed
    # factorisation raises PyTorch's LinAlgError, else it is reported in the int32 ``info``)
    def linalg_det(self, a: Array) -> Array: ...
    def linalg_det_backward(self, a: Array, det: Array, grad: Array) -> Array: ...
    def linalg_slogdet(self, a: Array) -> tuple: ...
    def linalg_inv(self, a: Array, check: bool) -> tuple: ...
    def linalg_solve(self, a: Array, b: Array, left: bool, check: bool) -> tuple: ...
    def linalg_cholesky(self, a: Array, upper: bool, check: bool, name: str) -> tuple: ...
    def linalg_qr(self, a: Array, mode: str) -> tuple: ...
    def linalg_eigh(self, a: Array, upper: bool, compute_v: bool) -> tuple: ...
    def linalg_svd(self, a: Array, full_matrices: bool, compute_uv: bool) -> tuple: ...
    def linalg_pinv(self, a: Array, atol: float, rtol, hermitian: bool) -> Array: ...
    def linalg_lstsq(self, a: Array, b: Array, rcond) -> tuple: ...

    # -- scans with indices, searching and counting (kernels/*/scan.py, kernels/*/counting.py)
    def cum_extreme(self, x: Array, dim: int, take_max: bool) -> tuple:
        """``(values, int64 indices)`` of cummax (``take_max``) / cummin along ``dim``."""

    def logcumsumexp_dim(self, x: Array, dim: int) -> Array: ...

    def search_sorted(self, bounds: Array, values: Array, sorter, right: bool, out_dtype) -> Array:
        """searchsorted's positions (``bounds`` 1-D or one line per leading position)."""

    def bincount(self, x: Array, weights, length: int, out_dtype) -> Array: ...
    def histc(self, x: Array, bins: int, lo, hi) -> Array: ...

    def scatter_dim(self, x: Array, dim: int, index: Array, src: Array, mode: int) -> Array:
        """A copy of ``x`` with ``src`` written (mode 1: added, 2: multiplied) at ``index``."""

    def nonzero(self, mask: Array) -> tuple:
        """The coordinates of ``mask``'s True elements, one int64 array per dimension."""

    def unravel_index(self, positions: Array, shape: tuple) -> tuple:
        """Flat positions as one int64 array of coordinates per dimension of ``shape``."""
