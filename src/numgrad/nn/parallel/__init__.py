"""``numgrad.nn.parallel``: ``DataParallel`` and ``data_parallel``, for one device (numgrad uses
one GPU at most, or none)."""
from .data_parallel import DataParallel, data_parallel

__all__ = ["DataParallel", "data_parallel"]
