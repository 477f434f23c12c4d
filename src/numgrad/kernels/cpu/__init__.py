"""CPU kernels (``numba.njit``, cached) and their array-level entry points."""
import os

import numba

# Large kernels run with parallel=True. Numba's default layer (workqueue) aborts the process when
# two Python threads enter parallel code at once; unless the user chose a layer, take a thread-safe
# one (TBB if installed, else OpenMP).
if "NUMBA_THREADING_LAYER" not in os.environ and numba.config.THREADING_LAYER == "default":
    numba.config.THREADING_LAYER = "threadsafe"

from ..formulas import OP_CODES  # noqa: E402
from ._cache import light_cache  # noqa: E402
from .elementwise import *  # noqa: F401,F403,E402  (entry points)
from .reduction import (  # noqa: F401,E402
    any_equal, any_equal_device, arg_reduce_dims, extreme_share, finite_or_zero, inf_where_zero,
    one_hot_dim, product_of_others, reduce_dims, sum_dims,
)
from .linalg import dot, matmul  # noqa: F401,E402
from .softmax import log_softmax_backward_last, log_softmax_last  # noqa: F401,E402
from . import loss  # noqa: F401,E402  (``K.loss``: nll_loss's kernels)
from . import conv  # noqa: F401,E402  (``K.conv``: convolution's kernels)
from . import pooling  # noqa: F401,E402  (``K.pooling``: pooling's and padding's kernels)
from . import structure  # noqa: F401,E402  (``K.structure``: tril/triu, diagonals, flip/roll)
from .indexing import index, index_add_flat, index_put, nonzero, unravel_index  # noqa: F401,E402
from .scan import cumprod_backward, cumulative  # noqa: F401,E402
from .sorting import sort_dim, topk_dim  # noqa: F401,E402
from .gather import gather_dim, index_select_dim, scatter_dim  # noqa: F401,E402
from .layout import *  # noqa: F401,F403,E402

globals().update(OP_CODES)  # K.EXP, K.ADD, K.MAX …
DEVICE = "cpu"  # the device type whose kernels these are


def _load_kernels_lightly() -> None:
    """Light cache loading for the dispatchers of this package's modules (all imported above)."""
    import sys

    for name, module in list(sys.modules.items()):
        if name.startswith(__name__ + "."):
            light_cache(module)


_load_kernels_lightly()
