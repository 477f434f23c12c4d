"""``numgrad.distributed``: PyTorch's ``torch.distributed`` on MPI (mpi4py; ``pip install
'numgrad[distributed]'`` brings it and MPICH).

Start N processes with ``python -m numgrad.distributed.run --nproc-per-node N script.py`` (or
``mpiexec -n N python script.py``); in each, ``init_process_group()`` makes MPI's processes the
default group. The collectives (``all_reduce``, ``broadcast``, ``all_gather``,
``all_gather_into_tensor``, ``reduce_scatter_tensor``, ``reduce``, ``gather``, ``scatter``,
``barrier``, ``send``/``recv``, ``isend``/``irecv``, the ``*_object`` ones) take PyTorch's
arguments, ``async_op=True`` included. ``import numgrad.distributed`` does not import mpi4py:
that waits for the first call that needs MPI.
"""
from . import distributed_c10d
from .distributed_c10d import *  # noqa: F401,F403
from .distributed_c10d import __all__ as _c10d_all
from .distributed_c10d import default_pg_timeout  # noqa: F401


def is_available() -> bool:
    """Whether distributed support can run here: mpi4py (MPI) is installed."""
    return distributed_c10d.is_mpi_available()


__all__ = ["is_available", *_c10d_all]
