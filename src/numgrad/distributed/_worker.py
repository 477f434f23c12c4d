"""One process of a job started by ``python -m numgrad.distributed.run`` (under ``mpiexec``):
sets torchrun's environment from MPI's, then runs the user's script, module or program.

MPI is initialised first, so that MPI's launcher knows every process: one that fails (an
uncaught exception ends it at once, ``distributed_c10d._fail``) or dies makes ``mpiexec`` stop
the others, instead of leaving them waiting in a collective.
"""
from __future__ import annotations

import os
import runpy
import sys

from .distributed_c10d import _fail
from .. import _lazy


def _environment() -> int:
    """torchrun's variables from MPICH's (``PMI_RANK``, ``PMI_SIZE``, ``MPI_LOCALRANKID``,
    ``MPI_LOCALNRANKS``); this process's rank."""
    rank = int(os.environ.get("PMI_RANK", os.environ.get("OMPI_COMM_WORLD_RANK", "0")))
    size = int(os.environ.get("PMI_SIZE", os.environ.get("OMPI_COMM_WORLD_SIZE", "1")))
    per_node = int(os.environ.get("NUMGRAD_NPROC_PER_NODE", size))
    local = int(os.environ.get("MPI_LOCALRANKID", rank % per_node))
    local_size = int(os.environ.get("MPI_LOCALNRANKS", per_node))
    os.environ.update(
        RANK=str(rank), WORLD_SIZE=str(size), LOCAL_RANK=str(local),
        LOCAL_WORLD_SIZE=str(local_size), GROUP_RANK=str(rank // max(per_node, 1)),
        GROUP_WORLD_SIZE=str(max(size // max(per_node, 1), 1)), ROLE_RANK=str(rank),
        ROLE_WORLD_SIZE=str(size), ROLE_NAME=os.environ.get("NUMGRAD_ROLE", "default"))
    _redirect(rank, local)
    return rank


def _redirect(rank: int, local: int) -> None:
    """torchrun's ``--redirects`` (into ``<log dir>/<rank>/stdout.log``, ``stderr.log``) and
    ``--local-ranks-filter`` (the other ranks' output dropped; a failure still reaches the
    launcher's summary)."""
    streams = []
    spec = os.environ.get("NUMGRAD_REDIRECTS")
    if spec:
        folder, which = spec.rsplit(":", 1)
        folder = os.path.join(folder, str(rank))
        os.makedirs(folder, exist_ok=True)
        for fd, name in ((1, "stdout"), (2, "stderr")):
            if int(which) & fd:
                streams.append((fd, os.path.join(folder, f"{name}.log")))
    shown = os.environ.get("NUMGRAD_LOCAL_RANKS_FILTER")
    if shown and str(local) not in shown.split(","):
        streams = [(1, os.devnull), (2, os.devnull)]
    for fd, path in streams:
        target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(target, fd)
        os.close(target)


def main(argv: list) -> None:
    how, target, args = argv[0], argv[1], argv[2:]
    rank = _environment()
    reports = os.environ.get("NUMGRAD_ERROR_DIR")
    if reports and os.path.isdir(reports):  # (the launcher names a killed rank by its PID)
        with open(os.path.join(reports, f"rank{rank}.pid"), "w") as f:
            f.write(str(os.getpid()))
    if how == "program":
        os.execvp(target, [target, *args])
    _lazy.optional("mpi4py.MPI")  # (MPI_Init: see the module's docstring)

    sys.argv = [target, *args]
    try:
        if how == "module":
            sys.path.insert(0, os.getcwd())
            runpy.run_module(target, run_name="__main__", alter_sys=True)
        else:
            sys.path.insert(0, os.path.dirname(os.path.abspath(target)))
            runpy.run_path(target, run_name="__main__")
    except SystemExit as stop:
        code = stop.code
        if code not in (None, 0):
            if not isinstance(code, int):
                print(code, file=sys.stderr)
                code = 1
            _fail(rank, type(stop), stop, stop.__traceback__, code)
    except BaseException:
        kind, value, trace = sys.exc_info()
        _fail(rank, kind, value, _user_frames(trace))


def _user_frames(trace):
    """The traceback from the user's code on (without this module's and runpy's frames)."""
    while trace is not None and trace.tb_next is not None and (
            trace.tb_frame.f_code.co_filename in (__file__, "<frozen runpy>")
            or trace.tb_frame.f_code.co_filename.endswith("runpy.py")):
        trace = trace.tb_next
    return trace


if __name__ == "__main__":
    main(sys.argv[1:])
