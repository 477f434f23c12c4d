"""CPU kernels (``numba.njit``, cached) and their array-level entry points."""
from .elementwise import *  # noqa: F401,F403  (op codes and entry points)
from .reduction import (  # noqa: F401
    ARGMAX, ARGMIN, MAX, MIN, PROD, arg_reduce_dims, reduce_dims, sum_dims,
)
from .indexing import index_add_flat  # noqa: F401
