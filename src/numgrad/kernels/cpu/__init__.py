"""CPU kernels (``numba.njit``, cached) and their array-level entry points."""
import os

import numba

# Large kernels run with parallel=True. Numba's default layer (workqueue) aborts the process when
# two Python threads enter parallel code at once; unless the user chose a layer, take a thread-safe
# one (TBB if installed, else OpenMP).
if "NUMBA_THREADING_LAYER" not in os.environ and numba.config.THREADING_LAYER == "default":
    numba.config.THREADING_LAYER = "threadsafe"

from .elementwise import *  # noqa: F401,F403  (op codes and entry points)
from .reduction import (  # noqa: F401
    ARGMAX, ARGMIN, MAX, MIN, PROD, any_equal, arg_reduce_dims, extreme_share, finite_or_zero,
    inf_where_zero, one_hot_dim, product_of_others, reduce_dims, sum_dims,
)
from .linalg import dot, matmul  # noqa: F401
from . import loss  # noqa: F401  (``K.loss``: nll_loss's kernels)
from .indexing import index_add_flat  # noqa: F401

DEVICE = "cpu"  # the device type whose kernels these are
