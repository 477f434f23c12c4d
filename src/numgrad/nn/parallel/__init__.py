"""``numgrad.nn.parallel``: ``DataParallel`` and ``data_parallel``, for one device (numgrad uses
one GPU at most, or none); ``DistributedDataParallel``, over processes (``numgrad.distributed``,
on MPI)."""
from .data_parallel import DataParallel, data_parallel
from .distributed import DistributedDataParallel

__all__ = ["DataParallel", "DistributedDataParallel", "data_parallel"]
