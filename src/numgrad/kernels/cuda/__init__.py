"""CUDA kernels (``numba.cuda``) with the interface of ``kernels.cpu``: the elementwise family
(``unary``, ``binary``, ``where``, ``binary_into``), reductions (``sum_dims``, ``reduce_dims``,
``arg_reduce_dims`` and the helpers of their backward formulas), matrix products (``matmul``,
``dot``), the losses' kernels (``loss``), the data movers (``cast``, ``copy``, ``upload``,
``to_host``), layout (strided views: ``reshape_view``, ``broadcast_to``, ``permute``,
``view_index`` …; ``cat``, ``stack``, ``repeat``, ``assign``, ``full``) and indexing (``index``,
``index_put``, ``nonzero``, ``unravel_index``; index arrays stay on the device, bounds checked
there and reported by ``check_errors`` at the next sync).

The op ids and the scalar formulas are the CPU's: each elementwise op's kernels are generated
from its row of the formula table (``kernels/formulas.py``), which names the function the CUDA
kernels call: the CPU's own where it compiles for both devices (``kernels/scalar.py``, ``numba.njit``
functions that numba-cuda compiles as device functions), else a CUDA variant (``math``'s exp, log
and tanh for the CPU's vectorisable fast_* versions, which are built on CPU LLVM intrinsics;
libdevice's rounding in ``cuda/scalar.py``).

CUDA data is a device array that may be a strided view of another's memory, as on the CPU
(``layout.py``): views share memory, ``broadcast_to`` (expand) is a view with stride 0, and
every entry point reads strided operands through their strides or ``ascontiguous``.
"""
from . import _numpy_shims  # noqa: F401  (first: before numba-cuda is imported, numpy 2.5)
from ..formulas import OP_CODES
from .elementwise import (  # noqa: F401
    binary, binary_into, broadcast_to, cast, copy, reshape_view, to_device, to_host, unary,
    unary_into, upload, where,
)
from .indexing import (  # noqa: F401
    check_errors, index, index_put, nonzero, result_shape, unravel_index,
)
from .layout import (  # noqa: F401
    address, ascontiguous, assign, broadcast_copy, cat, full, is_contiguous, is_writeable,
    may_share_memory, permute, repeat, squeeze, stack, strided, transpose, unsqueeze, view_index,
    zeros,
)
from .memory import empty  # noqa: F401
from .linalg import ROW_BIAS_FUSED_MACS, dot, matmul, matmul_add_row  # noqa: F401
from .reduction import (  # noqa: F401
    any_equal, any_equal_device, arg_reduce_dims, extreme_share, finite_or_zero, inf_where_zero,
    one_hot_dim, product_of_others, reduce_dims, sum_dims,
)
from .softmax import log_softmax_backward_last, log_softmax_last  # noqa: F401
from . import loss  # noqa: F401  (``K.loss``: nll_loss's kernels)
from .normalization import (  # noqa: F401
    batch_norm_backward, batch_norm_forward, batch_norm_stats, layer_norm_backward,
    layer_norm_forward,
)
from .embedding import embedding_backward, embedding_forward  # noqa: F401
from .scan import cum_extreme, cumprod_backward, cumulative, logcumsumexp_dim  # noqa: F401
from .sorting import sort_dim, topk_dim  # noqa: F401
from .predicates import isclose, mode_dim, nan_to_num, order_dim  # noqa: F401
from .gather import gather_dim, index_select_dim, scatter_dim  # noqa: F401
from . import conv  # noqa: F401  (``K.conv``: convolution's kernels)
from . import pooling  # noqa: F401  (``K.pooling``: pooling's and padding's kernels)
from . import structure  # noqa: F401  (``K.structure``: tril/triu, diagonals, flip/roll)
from .custom import custom_call, custom_call_into  # noqa: F401  (numgrad.library's)
from .decompositions import (  # noqa: F401  (torch.linalg: LU, Cholesky, QR, Jacobi eigh/svd)
    linalg_cholesky, linalg_det, linalg_det_backward, linalg_eigh, linalg_inv, linalg_lstsq,
    linalg_pinv, linalg_qr, linalg_slogdet, linalg_solve, linalg_svd,
)
from .counting import bincount, histc, search_sorted  # noqa: F401  (searchsorted ...)
from .philox import (  # noqa: F401  (the Philox generator's draws)
    philox_bernoulli, philox_exponential, philox_integers, philox_multinomial, philox_normal,
    philox_permutation, philox_uniform,
)

globals().update(OP_CODES)
DEVICE = "cuda"  # the device type whose kernels these are
