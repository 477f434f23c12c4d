"""CUDA kernels (``numba.cuda``) with the interface of ``kernels.cpu``: the elementwise family
(``unary``, ``binary``, ``where``, ``binary_into``), reductions (``sum_dims``, ``reduce_dims``,
``arg_reduce_dims`` and the helpers of their backward formulas), matrix products (``matmul``,
``dot``), the losses' kernels (``loss``), plus the data movers (``cast``, ``copy``,
``reshape_view``, ``broadcast_to``, ``upload``, ``to_host``).

The op codes are the CPU's, and so are the scalar formulas: the kernels call the CPU module's
``binary_scalar`` and ``unary_portable`` (``numba.njit`` functions, which numba-cuda compiles as
device functions when a kernel calls them). Only exp, log, tanh and sigmoid have CUDA bodies of
their own, on libdevice's ``math`` functions, because the CPU's fast_* versions are built on CPU
LLVM intrinsics.

CUDA data is always a C-contiguous device array in this first slice: ``broadcast_to`` (expand)
materialises, so every kernel reads flat arrays and broadcasting needs only shapes.
"""
from ... import cuda as _numgrad_cuda

_numgrad_cuda._apply_numpy_shims()  # before numba-cuda is imported (numpy 2.5)

from ..cpu.elementwise import OP_CODES  # noqa: E402
from .elementwise import (  # noqa: E402,F401
    binary, binary_into, broadcast_to, cast, copy, reshape_view, to_host, unary, upload, where,
)
from .memory import empty  # noqa: E402,F401
from .linalg import dot, matmul  # noqa: E402,F401
from .reduction import (  # noqa: E402,F401
    ARGMAX, ARGMIN, MAX, MIN, PROD, any_equal, arg_reduce_dims, extreme_share, finite_or_zero,
    inf_where_zero, one_hot_dim, product_of_others, reduce_dims, sum_dims,
)
from . import loss  # noqa: E402,F401  (``K.loss``: nll_loss's kernels)

globals().update(OP_CODES)
DEVICE = "cuda"  # the device type whose kernels these are
