"""PyTorch's ``torch.distributed`` collectives, on MPI (mpi4py).

Every process of a job is one MPI process (started by ``mpiexec``, or by
``python -m numgrad.distributed.run``, which runs it); the default process group is MPI's
``COMM_WORLD`` and ``new_group`` splits it. A CPU tensor's array is handed to MPI as the buffer
itself (no copy); a CUDA tensor is staged through a host copy and written back.

Never a hang: every collective is a non-blocking MPI call waited on with the group's timeout
(``init_process_group(timeout=...)``), and before its data moves each collective compares a
fingerprint (sequence number, operation, shape, dtype) across the ranks, so ranks that run
different collectives or tensors of different shapes or dtypes raise PyTorch's "Detected mismatch
between collectives" error instead of corrupting memory. A rank whose Python raises an uncaught
exception ends the whole job at once (its traceback printed with a ``[rankN]:`` prefix): MPI's
launcher then stops the others, as PyTorch's NCCL watchdog takes a failing job down.
"""
from __future__ import annotations

import enum
import faulthandler
import importlib.util
import os
import sys
import time
import traceback as tb
from concurrent.futures import Future
from datetime import timedelta

import numpy as np

from .. import _lazy, dispatch
from .._dtype import from_numpy_dtype
from ..tensor import Tensor
from ..compiler.traced import graph_break

__all__ = [
    "Backend", "DistBackendError", "DistError", "GroupMember", "ProcessGroup", "ReduceOp",
    "Work", "all_gather", "all_gather_into_tensor", "all_gather_object", "all_reduce",
    "barrier", "broadcast", "broadcast_object_list", "destroy_process_group", "gather",
    "gather_object", "get_backend", "get_global_rank", "get_group_rank", "get_process_group_ranks",
    "get_rank", "get_world_size", "group", "init_process_group", "irecv", "is_initialized",
    "is_mpi_available", "is_gloo_available", "is_nccl_available", "is_torchelastic_launched",
    "isend", "new_group", "recv", "reduce", "reduce_scatter_tensor", "scatter",
    "scatter_object_list", "send", "reduce_scatter", "all_to_all", "all_to_all_single",
]

default_pg_timeout = timedelta(minutes=30)  # PyTorch's default for CPU process groups


class DistError(RuntimeError):
    """PyTorch's base class of the errors of ``torch.distributed``."""


class DistBackendError(DistError):
    """An error of the communication backend (here MPI): a timed-out or failed collective."""


# (shown where users find them)
DistError.__module__ = DistBackendError.__module__ = "numgrad.distributed"


class Backend(str):
    """A backend's name. numgrad has one transport, MPI: ``"mpi"``; ``"gloo"`` and ``"nccl"``
    (and ``"cpu:gloo,cuda:nccl"``) are accepted so that PyTorch programs run unchanged, and run
    on MPI too."""

    MPI = "mpi"
    GLOO = "gloo"
    NCCL = "nccl"
    UNDEFINED = "undefined"

    def __new__(cls, name: str):
        if not isinstance(name, str):
            raise ValueError(f"Backend constructor parameter must be string-ish, but got: "
                             f"{type(name)}")
        value = name.lower()
        parts = [p.split(":")[-1] for p in value.split(",")]
        if any(p not in ("mpi", "gloo", "nccl", "undefined") for p in parts):
            raise ValueError(f"Invalid backend: '{name}'")
        return str.__new__(cls, value)


class ReduceOp(enum.Enum):
    """The reductions of ``all_reduce``, ``reduce`` and ``reduce_scatter_tensor``."""

    SUM = 0
    AVG = 1
    PRODUCT = 2
    MIN = 3
    MAX = 4
    BAND = 5
    BOR = 6
    BXOR = 7

    def __repr__(self) -> str:
        return f"<RedOpType.{self.name}: {self.value}>"

    __str__ = lambda self: f"RedOpType.{self.name}"  # noqa: E731


def _mpi():
    """mpi4py's MPI module, imported on first use (``import numgrad`` never imports it)."""
    MPI = _state.get("MPI")
    if MPI is None:
        try:
            MPI = _lazy.optional("mpi4py.MPI")
        except ImportError as error:
            raise RuntimeError(
                "numgrad.distributed runs on MPI, and mpi4py is not installed: "
                "pip install 'numgrad[distributed]' (mpi4py and MPICH)") from error
        _state["MPI"] = MPI
    return MPI


_MPI_OPS = {ReduceOp.SUM: "SUM", ReduceOp.AVG: "SUM", ReduceOp.PRODUCT: "PROD",
            ReduceOp.MIN: "MIN", ReduceOp.MAX: "MAX", ReduceOp.BAND: "BAND",
            ReduceOp.BOR: "BOR", ReduceOp.BXOR: "BXOR"}
# bool tensors: a sum is an "or" (PyTorch's), a product an "and"
_MPI_BOOL_OPS = {"SUM": "LOR", "PROD": "LAND", "MAX": "LOR", "MIN": "LAND", "BAND": "LAND",
                 "BOR": "LOR", "BXOR": "LXOR"}
# Fingerprint operation codes, in the names of PyTorch's OpType
_OPS = ("BROADCAST", "ALLREDUCE", "REDUCE", "ALLGATHER", "_ALLGATHER_BASE", "GATHER", "SCATTER",
        "_REDUCE_SCATTER_BASE", "BARRIER", "ALLGATHER_OBJECT", "BROADCAST_OBJECT",
        "SCATTER_OBJECT", "GATHER_OBJECT", "NEW_GROUP", "DUP", "REDUCE_SCATTER", "ALLTOALL_BASE",
        "ALLTOALL")
_MAX_DIMS = 6


class ProcessGroup:
    """A group of processes and its MPI communicator (``comm``); ``ranks``: the global ranks of
    its members in group-rank order."""

    def __init__(self, comm, ranks: list, timeout: timedelta, backend: str = "mpi"):
        self.comm = comm
        self.ranks = list(ranks)
        self.timeout = timeout
        self.backend = backend
        self.sequence = 0  # collectives run so far (the fingerprints' SequenceNumber)
        self._reducer_comm = None

    def rank(self) -> int:
        return self.comm.Get_rank()

    def size(self) -> int:
        return self.comm.Get_size()

    def name(self) -> str:
        return self.backend

    def reducer_comm(self):
        """A duplicate of the communicator, for DistributedDataParallel's gradient buckets:
        their reductions run beside the user's own collectives without being matched to them.
        (Made collectively: the ranks ask for it in the same order, when building the model.)"""
        if self._reducer_comm is None:
            _check_same(self, "DUP", None)  # (every rank there, within the timeout: Dup blocks)
            self._reducer_comm = self.comm.Dup()
        return self._reducer_comm

    def __repr__(self) -> str:
        return f"<numgrad.distributed.ProcessGroup ranks={self.ranks} backend={self.backend}>"


class GroupMember:
    """PyTorch's ``GroupMember``: ``WORLD`` (the default group, once initialised) and
    ``NON_GROUP_MEMBER`` (what ``new_group`` gives a rank outside the group)."""

    WORLD: ProcessGroup | None = None
    NON_GROUP_MEMBER = object()


group = GroupMember  # (``torch.distributed.group.WORLD``)
_state: dict = {"hook": None}


def is_mpi_available() -> bool:
    """Whether mpi4py (MPI) can be imported: numgrad's one backend."""
    return importlib.util.find_spec("mpi4py") is not None


def is_gloo_available() -> bool:
    return False


def is_nccl_available() -> bool:
    return False


def is_torchelastic_launched() -> bool:
    """Whether this process was started by the launcher (``numgrad.distributed.run``)."""
    return os.getenv("TORCHELASTIC_RUN_ID") is not None


def is_initialized() -> bool:
    """Whether the default process group has been initialised."""
    return GroupMember.WORLD is not None


def _default_group() -> ProcessGroup:
    if GroupMember.WORLD is None:
        raise ValueError("Default process group has not been initialized, please make sure to "
                         "call init_process_group.")
    return GroupMember.WORLD


def _env_int(name: str) -> int:
    value = os.environ.get(name)
    if value is None:
        raise ValueError(f"Error initializing torch.distributed using env:// rendezvous: "
                         f"environment variable {name} expected, but not set")
    return int(value)


def init_process_group(backend=None, init_method=None, timeout: timedelta | None = None,
                       world_size: int = -1, rank: int = -1, store=None, group_name: str = "",
                       pg_options=None, device_id=None) -> None:
    """Initialises the default process group: MPI's ``COMM_WORLD``. The processes are MPI's
    (``mpiexec -n N`` or ``python -m numgrad.distributed.run --nproc-per-node N``); ``env://``
    (the default) checks ``RANK`` and ``WORLD_SIZE`` where they are set against MPI's, as do
    ``rank`` and ``world_size``. ``timeout`` bounds every collective's wait (30 minutes by
    default): a rank that does not join raises ``DistBackendError`` instead of hanging."""
    if GroupMember.WORLD is not None:
        raise ValueError("trying to initialize the default process group twice!")
    backend = Backend(backend if backend is not None else "mpi")
    if timeout is not None and not isinstance(timeout, timedelta):
        raise TypeError(f"Expected timeout argument to be of type datetime.timedelta, got "
                        f"{type(timeout).__name__}")
    if init_method is not None and store is not None:
        raise ValueError("Cannot specify both init_method and store.")
    timeout = timeout or default_pg_timeout
    comm = _start_mpi(timeout).COMM_WORLD
    mpi_rank, mpi_size = comm.Get_rank(), comm.Get_size()
    # (``env://``, the default: RANK and WORLD_SIZE where set, as torchrun sets them; a job
    # that mpiexec started without them takes MPI's)
    want_rank = rank if rank >= 0 else int(os.environ.get("RANK", -1))
    want_size = world_size if world_size >= 0 else int(os.environ.get("WORLD_SIZE", -1))
    if mpi_size == 1 and str(init_method).startswith("env://"):
        for name, value in (("RANK", want_rank), ("WORLD_SIZE", want_size)):
            if value < 0:
                _env_int(name)
    if want_size >= 0 and want_size != mpi_size:
        raise ValueError(
            f"numgrad.distributed runs on MPI: world_size {want_size} was asked for, but MPI "
            f"started {mpi_size} process(es). Start the script with `python -m "
            f"numgrad.distributed.run --nproc-per-node {want_size} script.py` (or `mpiexec -n "
            f"{want_size} python script.py`)")
    if want_rank >= 0 and want_rank != mpi_rank:
        raise ValueError(f"numgrad.distributed runs on MPI: rank {want_rank} was asked for, but "
                         f"MPI gave this process rank {mpi_rank}")
    GroupMember.WORLD = ProcessGroup(comm, range(mpi_size), timeout, str(backend))
    if mpi_size > 1:
        _end_job_on_uncaught_errors(mpi_rank)


def _start_mpi(timeout: timedelta):
    """MPI, started within ``timeout``: its start-up waits for every process of the job, so a
    process that failed before reaching it would leave the others waiting for ever. It waits
    in C holding the GIL, so the watchdog is faulthandler's (a C thread): past the timeout it
    prints where this process waited ("Timeout ...", then ``init_process_group``'s stack) and
    ends it, as PyTorch's NCCL watchdog ends a process that waits too long."""
    if "mpi4py.MPI" in sys.modules:
        return _mpi()
    faulthandler.dump_traceback_later(timeout.total_seconds(), exit=True)
    try:
        return _mpi_start_up_waits_for_every_process_of_the_job()
    finally:
        faulthandler.cancel_dump_traceback_later()


def _mpi_start_up_waits_for_every_process_of_the_job():
    """(Named for the watchdog's stack dump: where a process waits for one that never came.)"""
    return _mpi()


def _end_job_on_uncaught_errors(rank: int) -> None:
    """An uncaught exception ends the process at once (``_fail``), without MPI's finalisation:
    ``mpiexec`` then stops the other ranks, which would otherwise wait in their next collective
    (or in MPI's finalisation) for this one."""
    previous = sys.excepthook

    def hook(kind, value, traceback):
        _fail(rank, kind, value, traceback)

    _state["hook"] = (previous, hook)
    sys.excepthook = hook


def _fail(rank: int, kind, value, traceback, status: int = 1) -> None:
    """Prints the traceback with ``[rankN]:`` before each line, leaves it where the launcher
    looks for it (its failure summary names the first rank that failed), and ends the process
    with ``status`` without running exit handlers."""
    text = "".join(tb.format_exception(kind, value, traceback))
    sys.stdout.flush()
    sys.stderr.write("".join(f"[rank{rank}]: {line}\n" for line in text.splitlines()))
    sys.stderr.flush()
    reports = os.environ.get("NUMGRAD_ERROR_DIR")
    if reports and os.path.isdir(reports):
        with open(os.path.join(reports, f"rank{rank}.err"), "w") as f:
            f.write(text)
    os._exit(status)


def destroy_process_group(group: ProcessGroup | None = None) -> None:
    """Destroys ``group``, or (``None``) every group and the default one."""
    if group is None or group is GroupMember.WORLD:
        _default_group()
        GroupMember.WORLD = None
        if _state["hook"] is not None and sys.excepthook is _state["hook"][1]:
            sys.excepthook = _state["hook"][0]
        _state["hook"] = None
    elif group is not GroupMember.NON_GROUP_MEMBER:
        group.comm.Free()


def _group(group) -> ProcessGroup | None:
    """The group a call runs in (``None``: the default), or None for a rank outside it."""
    if group is None or group is GroupMember.WORLD:
        return _default_group()
    _default_group()
    if group is GroupMember.NON_GROUP_MEMBER:
        return None
    return group


def get_rank(group=None) -> int:
    """This process's rank in ``group`` (the default group if None); -1 outside it."""
    pg = _group(group)
    return -1 if pg is None else pg.rank()


def get_world_size(group=None) -> int:
    """The number of processes in ``group``; -1 for a rank outside it."""
    pg = _group(group)
    return -1 if pg is None else pg.size()


def get_backend(group=None) -> str:
    """The backend's name (what ``init_process_group`` was given; the transport is MPI)."""
    pg = _group(group)
    if pg is None:
        raise ValueError("Invalid process group specified")
    return pg.backend


def get_process_group_ranks(group) -> list:
    """The global ranks of ``group``'s members, in group-rank order."""
    pg = _group(group)
    if pg is None:
        raise ValueError("Invalid process group specified")
    return list(pg.ranks)


def get_global_rank(group, group_rank: int) -> int:
    """The global rank of ``group``'s member ``group_rank``."""
    ranks = get_process_group_ranks(group)
    if not 0 <= group_rank < len(ranks):
        raise ValueError(f"Group rank {group_rank} is not part of group {group}")
    return ranks[group_rank]


def get_group_rank(group, global_rank: int) -> int:
    """The rank in ``group`` of the process of global rank ``global_rank``."""
    ranks = get_process_group_ranks(group)
    if global_rank not in ranks:
        raise ValueError(f"Global rank {global_rank} is not part of group {group}")
    return ranks.index(global_rank)


def new_group(ranks=None, timeout: timedelta | None = None, backend=None, pg_options=None,
              use_local_synchronization: bool = False, group_desc=None, device_id=None):
    """A new group of the global ``ranks`` (all of them if None), ordered by rank. Every process
    of the default group calls it (it splits MPI's communicator); one outside ``ranks`` gets
    ``GroupMember.NON_GROUP_MEMBER``."""
    world = _default_group()
    size = world.size()
    ranks = sorted(range(size) if ranks is None else ranks)
    for r in ranks:
        if not 0 <= r < size:
            raise ValueError("The new group's rank should be within the world_size set by "
                             "init_process_group")
    MPI = _mpi()
    member = world.rank() in ranks
    _check_same(world, "NEW_GROUP", None)  # (every rank there, within the timeout: Split blocks)
    comm = world.comm.Split(0 if member else MPI.UNDEFINED, world.rank())
    if not member:
        return GroupMember.NON_GROUP_MEMBER
    return ProcessGroup(comm, ranks, timeout or world.timeout,
                        str(Backend(backend)) if backend is not None else world.backend)


# ---------------------------------------------------------------------------------- buffers
class _Buffer:
    """A tensor's data as an MPI buffer: a contiguous CPU tensor's own array (no copy); a
    contiguous copy of a strided one's (gloo takes those), or a host copy of a (contiguous, as
    NCCL wants) CUDA tensor's, written back by ``done``."""

    __slots__ = ("tensor", "array", "staged")

    def __init__(self, tensor, writes: bool):
        if not isinstance(tensor, Tensor):
            raise TypeError(f"Invalid function argument: expected a Tensor, got "
                            f"{type(tensor).__name__}")
        self.tensor = tensor
        data = tensor._data
        if not isinstance(data, np.ndarray):
            if not data.is_c_contiguous():
                raise ValueError("Tensors must be contiguous")  # (NCCL's error)
            self.staged, self.array = "cuda", tensor._host()
        elif not data.flags.c_contiguous:
            self.staged, self.array = "strided", np.ascontiguousarray(data)
        else:
            self.staged, self.array = None, data
        if writes and self.staged != "cuda" and not data.flags.writeable:
            raise RuntimeError("the tensor's memory is read-only (a view of a read-only array)")

    def done(self) -> None:
        """The result is in ``array``: a staged tensor gets it back; the version counts a
        write."""
        if self.staged == "cuda":
            self.tensor._data.copy_to_device(self.array)
        elif self.staged == "strided":
            self.tensor._data[...] = self.array
        self.tensor._version_counter.value += 1


def _flat(array: np.ndarray) -> np.ndarray:
    return array.reshape(-1)


def _mpi_op(op, dtype: np.dtype):
    MPI = _mpi()
    if not isinstance(op, ReduceOp):
        raise ValueError(f"Invalid reduce operation: {op!r}")
    name = _MPI_OPS[op]
    if dtype == np.bool_:
        name = _MPI_BOOL_OPS[name]
    elif name in ("BAND", "BOR", "BXOR") and dtype.kind == "f":
        raise RuntimeError(f"Cannot use ReduceOp.{op.name} with float tensors")
    return getattr(MPI, name)


def _average(buffers, op, size: int) -> None:
    if op is ReduceOp.AVG:
        for b in buffers:
            if b.array.dtype.kind in "fc":
                b.array /= size
            else:
                b.array //= size


def _dtype_name(dtype: np.dtype) -> str:
    name = str(from_numpy_dtype(dtype)).split(".")[-1]
    return {"float32": "Float", "float64": "Double", "float16": "Half", "int64": "Long",
            "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte",
            "bool": "Bool", "complex64": "ComplexFloat",
            "complex128": "ComplexDouble"}.get(name, name)


# ---------------------------------------------------------------------------------- waiting
def _wait(requests: list, pg: ProcessGroup, op: str, numel_in: int, numel_out: int,
          statuses=None) -> None:
    """Waits for MPI ``requests`` within the group's timeout; past it, ``DistBackendError``
    (NCCL's watchdog's message): a rank that never joins must not hang the others."""
    MPI = _mpi()
    if MPI.Request.Testall(requests, statuses):
        return
    start = time.monotonic()
    limit = pg.timeout.total_seconds()
    spins = 0
    while not MPI.Request.Testall(requests, statuses):
        spins += 1
        if spins & 63 == 0:
            elapsed = time.monotonic() - start
            if elapsed > limit:
                raise DistBackendError(
                    f"Watchdog caught collective operation timeout: WorkMPI(SeqNum="
                    f"{pg.sequence}, OpType={op}, NumelIn={numel_in}, NumelOut={numel_out}, "
                    f"Timeout(ms)={int(limit * 1000)}) ran for {int(elapsed * 1000)} "
                    f"milliseconds before timing out. A rank of the group "
                    f"{pg.ranks} did not join it (it died, hangs, or runs other collectives).")
            os.sched_yield()  # (the ranks may share cores)


def _check_same(pg: ProcessGroup, op: str, array: np.ndarray | None,
                device: str = "cpu") -> None:
    """Compares this collective's fingerprint with every rank's (PyTorch's
    ``TORCH_DISTRIBUTED_DEBUG=DETAIL`` check, always on here): ranks running different
    collectives, or on tensors of different shapes or dtypes, raise before any data moves."""
    pg.sequence += 1
    print_ = np.zeros(5 + _MAX_DIMS, np.int64)
    print_[0], print_[1] = pg.sequence, _OPS.index(op)
    if array is not None:
        shape = array.shape
        print_[2] = ord(array.dtype.char)
        print_[3] = len(shape)
        print_[4] = 1 if device == "cuda" else 0
        print_[5:5 + min(len(shape), _MAX_DIMS)] = shape[:_MAX_DIMS]
        if len(shape) > _MAX_DIMS:
            print_[-1] = int(np.prod(shape[_MAX_DIMS - 1:]))
    every = np.empty((pg.size(), print_.size), np.int64)
    _wait([pg.comm.Iallgather(print_, every)], pg, op, 0, 0)
    differs = (every != print_).any(axis=1)
    if differs.any():
        other = int(differs.argmax())
        raise RuntimeError(_mismatch(pg, pg.rank(), print_, other, every[other]))


def _describe(fp: np.ndarray) -> tuple:
    op = _OPS[int(fp[1])] if 0 <= fp[1] < len(_OPS) else "UNKNOWN"
    ndim = int(fp[3])
    shape = [int(s) for s in fp[5:5 + min(ndim, _MAX_DIMS)]]
    dtype = _dtype_name(np.dtype(chr(int(fp[2])))) if fp[2] else "None"
    device = "cuda" if fp[4] else "cpu"
    return op, shape, dtype, device


def _mismatch(pg, mine: int, fp: np.ndarray, other: int, other_fp: np.ndarray) -> str:
    a, b = _describe(fp), _describe(other_fp)

    def text(rank, f, d):
        return (f"Rank {pg.ranks[rank]} is running collective: CollectiveFingerPrint("
                f"SequenceNumber={int(f[0])}, OpType={d[0]}, TensorShape={d[1]}, "
                f"TensorDtypes={d[2]}, TensorDeviceTypes={d[3]})")

    aspects = []
    if fp[0] != other_fp[0]:
        aspects.append(f"Sequence number: {int(fp[0])}vs {int(other_fp[0])}")
    if a[0] != b[0]:
        aspects.append(f"Op type: {a[0]}vs {b[0]}")
    if a[1] != b[1] or fp[-1] != other_fp[-1]:
        aspects.append(f"Tensor Tensor shapes: {a[1]}vs {b[1]}")
    if a[2] != b[2]:
        aspects.append(f"Tensor Tensor dtypes: {a[2]}vs {b[2]}")
    if a[3] != b[3]:
        aspects.append(f"Tensor Tensor devices: {a[3]}vs {b[3]}")
    return (f"Detected mismatch between collectives on ranks. {text(mine, fp, a)}, but "
            f"{text(other, other_fp, b)}.Collectives differ in the following aspects: \t "
            + ", ".join(aspects))


def _start(group, what: str) -> ProcessGroup | None:
    """The group a collective runs in (None: this rank is outside it, and the call does
    nothing), after stopping any ``numgrad.compile`` trace (``_not_traced``)."""
    pg = _group(group)
    if pg is not None:
        _not_traced(what)
    return pg


def _not_traced(what: str) -> None:
    """A collective inside ``numgrad.compile``: the trace stops here (the call runs eagerly,
    every time), so that no replay ever skips the communication."""
    if dispatch.current() is not None:  # (tracing, or a re-run call: rarely)
        graph_break(f"a collective communication ({what}), which every call must run")


# ---------------------------------------------------------------------------------- work
class Work:
    """The handle of a collective run with ``async_op=True``: ``wait()`` finishes it (within
    the group's timeout), ``is_completed()`` tests it without waiting."""

    def __init__(self, pg: ProcessGroup, requests: list, op: str, finish, numel: tuple = (0, 0),
                 result=None):
        self._pg, self._requests, self._op, self._finish = pg, requests, op, finish
        self._numel = numel
        self._done = False
        self._result = result
        self._exception = None

    def is_completed(self) -> bool:
        if not self._done and _mpi().Request.Testall(self._requests):
            self._complete()
        return self._done

    def is_success(self) -> bool:
        return self.is_completed() and self._exception is None

    def exception(self):
        return self._exception

    def wait(self, timeout: timedelta | None = None) -> bool:
        """Blocks until the collective has finished; True (PyTorch's)."""
        if not self._done:
            try:
                _wait(self._requests, self._pg, self._op, *self._numel)
            except DistBackendError as error:
                self._exception = error
                raise
            self._complete()
        return True

    def _complete(self) -> None:
        self._done = True
        if self._finish is not None:
            self._finish()

    def result(self) -> list:
        self.wait()
        return list(self._result or [])

    def get_future(self):
        """A completed future of the result (the collective waited on)."""
        self.wait()
        future: Future = Future()
        future.set_result(list(self._result or []))
        future.wait = future.result  # (PyTorch's Future.wait)
        future.value = future.result
        return future


def _run(pg, requests, op, finish, async_op: bool, numel=(0, 0), result=None):
    work = Work(pg, requests, op, finish, numel, result)
    if async_op:
        return work
    work.wait()
    return None


# ---------------------------------------------------------------------------------- collectives
def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op: bool = False):
    """Reduces ``tensor`` across every process of the group, in place: each holds the result."""
    pg = _start(group, "all_reduce")
    if pg is None:
        return None
    buf = _Buffer(tensor, True)
    mpi_op = _mpi_op(op, buf.array.dtype)
    _check_same(pg, "ALLREDUCE", buf.array, tensor.device.type)
    MPI = _mpi()
    request = pg.comm.Iallreduce(MPI.IN_PLACE, _flat(buf.array), mpi_op)

    def finish():
        _average([buf], op, pg.size())
        buf.done()

    return _run(pg, [request], "ALLREDUCE", finish, async_op, (buf.array.size,) * 2, [tensor])


def reduce(tensor, dst: int = 0, op=ReduceOp.SUM, group=None, async_op: bool = False,
           group_dst: int | None = None):
    """Reduces ``tensor`` across the group into the tensor of rank ``dst`` (a global rank)."""
    pg = _start(group, "reduce")
    if pg is None:
        return None
    root = _group_rank(pg, dst, group_dst)
    buf = _Buffer(tensor, pg.rank() == root)
    mpi_op = _mpi_op(op, buf.array.dtype)
    _check_same(pg, "REDUCE", buf.array, tensor.device.type)
    MPI = _mpi()
    if pg.rank() == root:
        request = pg.comm.Ireduce(MPI.IN_PLACE, _flat(buf.array), mpi_op, root)

        def finish():
            _average([buf], op, pg.size())
            buf.done()
    else:
        request, finish = pg.comm.Ireduce(_flat(buf.array), None, mpi_op, root), None
    return _run(pg, [request], "REDUCE", finish, async_op, (buf.array.size,) * 2, [tensor])


def _group_rank(pg: ProcessGroup, global_rank, group_rank) -> int:
    """The rank in ``pg`` of a peer named by its global rank, or by its group rank (PyTorch's
    ``group_src``/``group_dst``) where given."""
    if group_rank is not None:
        if not 0 <= group_rank < pg.size():
            raise ValueError(f"Group rank {group_rank} is not part of group {pg}")
        return group_rank
    if global_rank not in pg.ranks:
        raise ValueError(f"Global rank {global_rank} is not part of group {pg}")
    return pg.ranks.index(global_rank)


def broadcast(tensor, src: int = 0, group=None, async_op: bool = False,
              group_src: int | None = None):
    """Copies ``tensor`` of rank ``src`` (a global rank) into every other rank's ``tensor``."""
    pg = _start(group, "broadcast")
    if pg is None:
        return None
    root = _group_rank(pg, src, group_src)
    buf = _Buffer(tensor, pg.rank() != root)
    _check_same(pg, "BROADCAST", buf.array, tensor.device.type)
    request = pg.comm.Ibcast(_flat(buf.array), root)
    finish = buf.done if pg.rank() != root else None
    return _run(pg, [request], "BROADCAST", finish, async_op, (buf.array.size,) * 2, [tensor])


def all_gather(tensor_list: list, tensor, group=None, async_op: bool = False):
    """Gathers every rank's ``tensor`` into ``tensor_list`` (one tensor per rank, in rank
    order), on every rank."""
    pg = _start(group, "all_gather")
    if pg is None:
        return None
    src = _Buffer(tensor, False)
    if not isinstance(tensor_list, (list, tuple)) or len(tensor_list) != pg.size():
        raise RuntimeError(f"ProcessGroupMPI::allgather: invalid output tensor list at index 0 "
                           f"(expected length {pg.size()}, got "
                           f"{len(tensor_list) if isinstance(tensor_list, (list, tuple)) else 0})")
    outs = [_Buffer(t, True) for t in tensor_list]
    _expect_like(outs, src.array, "allgather")
    _check_same(pg, "ALLGATHER", src.array, tensor.device.type)
    gathered = np.empty((pg.size(),) + src.array.shape, src.array.dtype)
    request = pg.comm.Iallgather(_flat(src.array), _flat(gathered))

    finish = _rows_into(gathered, outs)
    return _run(pg, [request], "ALLGATHER", finish, async_op,
                (src.array.size, gathered.size), list(tensor_list))


def _rows_into(gathered: np.ndarray, buffers: list):
    """What finishes a gather: row k of ``gathered`` into the k-th buffer."""
    def finish():
        for row, b in zip(gathered, buffers):
            b.array[...] = row
            b.done()
    return finish


def _expect_like(buffers, like: np.ndarray, what: str) -> None:
    for k, b in enumerate(buffers):
        if b.array.shape != like.shape:
            raise RuntimeError(f"ProcessGroupMPI::{what}: invalid tensor size at index {k} "
                               f"(expected {tuple(like.shape)}, got {tuple(b.array.shape)})")
        if b.array.dtype != like.dtype:
            raise RuntimeError(f"ProcessGroupMPI::{what}: invalid tensor type at index {k} "
                               f"(expected {_dtype_name(like.dtype)}, got "
                               f"{_dtype_name(b.array.dtype)})")


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op: bool = False):
    """Gathers every rank's ``input_tensor`` into ``output_tensor``, concatenated along the
    first dimension (or stacked: an output of shape ``(world_size, *input.shape)``)."""
    pg = _start(group, "all_gather_into_tensor")
    if pg is None:
        return None
    src, out = _Buffer(input_tensor, False), _Buffer(output_tensor, True)
    if out.array.size != src.array.size * pg.size():
        raise ValueError("output tensor size must be equal to world_size times input tensor "
                         "size")
    if out.array.dtype != src.array.dtype:
        raise TypeError("output tensor must have the same type as input tensor")
    _check_same(pg, "_ALLGATHER_BASE", src.array, input_tensor.device.type)
    request = pg.comm.Iallgather(_flat(src.array), _flat(out.array))
    return _run(pg, [request], "_ALLGATHER_BASE", out.done, async_op,
                (src.array.size, out.array.size), [output_tensor])


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op: bool = False):
    """Reduces ``input`` across the ranks, and gives rank k the k-th of its ``world_size``
    equal parts along the first dimension, in ``output``."""
    pg = _start(group, "reduce_scatter_tensor")
    if pg is None:
        return None
    src, out = _Buffer(input, False), _Buffer(output, True)
    if src.array.size != out.array.size * pg.size():
        raise ValueError("input tensor must be the same size as output size times world size")
    if out.array.dtype != src.array.dtype:
        raise TypeError("input tensor must be the same type as the output tensor.")
    mpi_op = _mpi_op(op, src.array.dtype)
    _check_same(pg, "_REDUCE_SCATTER_BASE", src.array, input.device.type)
    request = pg.comm.Ireduce_scatter_block(_flat(src.array), _flat(out.array), mpi_op)

    def finish():
        _average([out], op, pg.size())
        out.done()

    return _run(pg, [request], "_REDUCE_SCATTER_BASE", finish, async_op,
                (src.array.size, out.array.size), [output])


def _root_list(pg: ProcessGroup, root: int, tensors, name: str, role: str, like: np.ndarray,
               writes: bool):
    """The buffers of ``gather_list`` or ``scatter_list``: given on rank ``root`` only (None on
    the others), one tensor per rank, each of ``like``'s shape and dtype."""
    if pg.rank() != root:
        if tensors:
            raise ValueError(f"Argument ``{name}`` must NOT be specified on non-{role} ranks.")
        return None
    if not tensors:
        raise ValueError(f"Argument ``{name}`` must be specified on {role} rank.")
    if len(tensors) != pg.size():
        raise ValueError(f"Argument ``{name}`` must have one tensor per rank ({pg.size()}), "
                         f"not {len(tensors)}")
    buffers = [_Buffer(t, writes) for t in tensors]
    _expect_like(buffers, like, name.split("_")[0])
    return buffers


def gather(tensor, gather_list=None, dst: int = 0, group=None, async_op: bool = False,
           group_dst: int | None = None):
    """Gathers every rank's ``tensor`` into ``gather_list`` on rank ``dst`` (a global rank)."""
    pg = _start(group, "gather")
    if pg is None:
        return None
    root = _group_rank(pg, dst, group_dst)
    src = _Buffer(tensor, False)
    outs = _root_list(pg, root, gather_list, "gather_list", "destination", src.array, True)
    _check_same(pg, "GATHER", src.array, tensor.device.type)
    if pg.rank() != root:
        return _run(pg, [pg.comm.Igather(_flat(src.array), None, root)], "GATHER", None,
                    async_op, (src.array.size, 0))
    gathered = np.empty((pg.size(),) + src.array.shape, src.array.dtype)
    request = pg.comm.Igather(_flat(src.array), _flat(gathered), root)

    finish = _rows_into(gathered, outs)
    return _run(pg, [request], "GATHER", finish, async_op, (src.array.size, gathered.size),
                list(gather_list))


def scatter(tensor, scatter_list=None, src: int = 0, group=None, async_op: bool = False,
            group_src: int | None = None):
    """Gives rank k the k-th tensor of ``scatter_list`` of rank ``src`` (a global rank), in
    ``tensor``."""
    pg = _start(group, "scatter")
    if pg is None:
        return None
    root = _group_rank(pg, src, group_src)
    out = _Buffer(tensor, True)
    ins = _root_list(pg, root, scatter_list, "scatter_list", "source", out.array, False)
    send = None if ins is None else np.stack([b.array for b in ins])
    _check_same(pg, "SCATTER", out.array, tensor.device.type)
    request = pg.comm.Iscatter(None if send is None else _flat(send), _flat(out.array), root)
    return _run(pg, [request], "SCATTER", out.done, async_op, (0, out.array.size), [tensor])


def reduce_scatter(output, input_list: list, op=ReduceOp.SUM, group=None,
                   async_op: bool = False):
    """Reduces the k-th tensors of every rank's ``input_list`` into rank k's ``output``."""
    pg = _start(group, "reduce_scatter")
    if pg is None:
        return None
    out = _Buffer(output, True)
    if len(input_list) != pg.size():
        raise ValueError(f"Argument ``input_list`` must have one tensor per rank ({pg.size()}), "
                         f"not {len(input_list)}")
    ins = [_Buffer(t, False) for t in input_list]
    _expect_like(ins, out.array, "reduce_scatter")
    mpi_op = _mpi_op(op, out.array.dtype)
    _check_same(pg, "REDUCE_SCATTER", out.array, output.device.type)
    send = np.stack([b.array for b in ins])
    request = pg.comm.Ireduce_scatter_block(_flat(send), _flat(out.array), mpi_op)

    def finish():
        _average([out], op, pg.size())
        out.done()

    return _run(pg, [request], "REDUCE_SCATTER", finish, async_op,
                (send.size, out.array.size), [output])


def _split_counts(sizes, array: np.ndarray, size: int, name: str) -> list:
    """Element counts of the parts along the first dimension: ``sizes`` (rows), or equal."""
    rows = array.shape[0] if array.ndim else 1
    row = array.size // rows if rows else 0
    if sizes is None or len(sizes) == 0:
        if rows % size:
            raise ValueError(f"Tensor's dim 0 does not divide equally across group size "
                             f"({rows} rows, {size} ranks)")
        return [rows // size * row] * size
    if len(sizes) != size or sum(sizes) != rows:
        raise ValueError(f"Split sizes doesn't match total dim 0 size ({name}: {list(sizes)}, "
                         f"{rows} rows, {size} ranks)")
    return [int(n) * row for n in sizes]


def _offsets(counts: list) -> list:
    return np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(int).tolist()


def _alltoall(pg: ProcessGroup, op: str, send: np.ndarray, send_counts: list,
              recv: np.ndarray, recv_counts: list, finish, async_op: bool, result: list):
    _check_same(pg, op, np.empty(0, send.dtype))  # (shapes may differ between ranks)
    if recv.dtype != send.dtype:
        raise RuntimeError(f"all_to_all: the output tensors' dtype ({_dtype_name(recv.dtype)}) "
                           f"is not the input's ({_dtype_name(send.dtype)})")
    request = pg.comm.Ialltoallv([_flat(send), (send_counts, _offsets(send_counts))],
                                 [_flat(recv), (recv_counts, _offsets(recv_counts))])
    return _run(pg, [request], op, finish, async_op, (send.size, recv.size), result)


def all_to_all_single(output, input, output_split_sizes=None, input_split_sizes=None,
                      group=None, async_op: bool = False):
    """Splits ``input`` along its first dimension (equally, or by ``input_split_sizes``) and
    sends part k to rank k; ``output`` receives rank k's part for this rank at part k."""
    pg = _start(group, "all_to_all_single")
    if pg is None:
        return None
    src, out = _Buffer(input, False), _Buffer(output, True)
    sends = _split_counts(input_split_sizes, src.array, pg.size(), "input_split_sizes")
    recvs = _split_counts(output_split_sizes, out.array, pg.size(), "output_split_sizes")
    return _alltoall(pg, "ALLTOALL_BASE", src.array, sends, out.array, recvs, out.done,
                     async_op, [output])


def all_to_all(output_tensor_list: list, input_tensor_list: list, group=None,
               async_op: bool = False):
    """Sends the k-th tensor of ``input_tensor_list`` to rank k; the k-th tensor of
    ``output_tensor_list`` receives rank k's tensor for this rank."""
    pg = _start(group, "all_to_all")
    if pg is None:
        return None
    for name, tensors in (("output_tensor_list", output_tensor_list),
                          ("input_tensor_list", input_tensor_list)):
        if len(tensors) != pg.size():
            raise ValueError(f"Argument ``{name}`` must have one tensor per rank "
                             f"({pg.size()}), not {len(tensors)}")
    ins = [_Buffer(t, False) for t in input_tensor_list]
    outs = [_Buffer(t, True) for t in output_tensor_list]
    send = np.concatenate([_flat(b.array) for b in ins])
    recv = np.empty(sum(b.array.size for b in outs), outs[0].array.dtype)
    recv_counts = [b.array.size for b in outs]

    def finish():
        start = 0
        for b in outs:
            b.array[...] = recv[start:start + b.array.size].reshape(b.array.shape)
            start += b.array.size
            b.done()

    return _alltoall(pg, "ALLTOALL", send, [b.array.size for b in ins], recv, recv_counts,
                     finish, async_op, list(output_tensor_list))


def barrier(group=None, async_op: bool = False, device_ids=None):
    """Waits until every rank of the group has reached it."""
    pg = _start(group, "barrier")
    if pg is None:
        return None
    _check_same(pg, "BARRIER", None)
    return _run(pg, [pg.comm.Ibarrier()], "BARRIER", None, async_op)


# ---------------------------------------------------------------------------------- point to point
def _header(array: np.ndarray) -> np.ndarray:
    """A tensor's dtype, number of elements, dimensions and sizes (the first ``_MAX_DIMS``)."""
    head = np.zeros(3 + _MAX_DIMS, np.int64)
    head[0], head[1], head[2] = ord(array.dtype.char), array.size, array.ndim
    head[3:3 + min(array.ndim, _MAX_DIMS)] = array.shape[:_MAX_DIMS]
    return head


def isend(tensor, dst: int, group=None, tag: int = 0, group_dst: int | None = None):
    """Sends ``tensor`` to rank ``dst`` (a global rank) without waiting: a ``Work``. A header
    (dtype and shape) goes first, which ``recv`` checks against its tensor."""
    pg = _start(group, "isend")
    if pg is None:
        return None
    peer = _group_rank(pg, dst, group_dst)
    if peer == pg.rank():
        raise ValueError("Invalid destination rank: should not be the same as the rank of the "
                         "current process.")
    buf = _Buffer(tensor, False)
    head = _header(buf.array)
    requests = [pg.comm.Isend(head, peer, 2 * tag), pg.comm.Isend(_flat(buf.array), peer,
                                                                 2 * tag + 1)]
    return Work(pg, requests, "SEND", lambda: head, (buf.array.size, 0))


def send(tensor, dst: int, group=None, tag: int = 0, group_dst: int | None = None) -> None:
    """Sends ``tensor`` to rank ``dst`` (a global rank), and waits until it has gone."""
    work = isend(tensor, dst, group, tag, group_dst)
    if work is not None:
        work.wait()


class _RecvWork(Work):
    """``irecv``'s handle: the header first (checked against the receiving tensor), then the
    data from the rank that sent it."""

    def __init__(self, pg: ProcessGroup, buf: _Buffer, peer: int, tag: int):
        super().__init__(pg, [], "RECV", None, (0, buf.array.size), [buf.tensor])
        self._buf, self._tag = buf, tag
        self._head = np.zeros(3 + _MAX_DIMS, np.int64)
        self._requests = [pg.comm.Irecv(self._head, peer, 2 * tag)]
        self.source = -1

    def is_completed(self) -> bool:
        return self._done

    def wait(self, timeout: timedelta | None = None) -> bool:
        if self._done:
            return True
        pg, buf, head = self._pg, self._buf, self._head
        status = _mpi().Status()
        _wait(self._requests, pg, "RECV", *self._numel, statuses=[status])
        source = status.Get_source()
        sent = np.dtype(chr(int(head[0])))
        same = np.array_equal(head, _header(buf.array))
        # (a tensor that does not fit is received into scratch memory, so that it is not left
        # for a later recv to take, and the error raised after)
        into = _flat(buf.array) if same else np.empty(int(head[1]), sent)
        _wait([pg.comm.Irecv(into, source, 2 * self._tag + 1)], pg, "RECV", *self._numel)
        if not same:
            got = [int(s) for s in head[3:3 + min(int(head[2]), _MAX_DIMS)]]
            raise RuntimeError(
                f"recv: the tensor sent by rank {pg.ranks[source]} (shape {got}, dtype "
                f"{_dtype_name(sent)}) does not match the receiving tensor (shape "
                f"{list(buf.array.shape)}, dtype {_dtype_name(buf.array.dtype)})")
        buf.done()
        self._done, self.source = True, pg.ranks[source]
        return True


def irecv(tensor, src: int | None = None, group=None, tag: int = 0,
          group_src: int | None = None):
    """Receives into ``tensor`` from rank ``src`` (any rank if None) without waiting: a
    ``Work``; its ``wait()`` raises where the tensor sent has another shape or dtype."""
    pg = _start(group, "irecv")
    if pg is None:
        return None
    peer = _mpi().ANY_SOURCE if src is None and group_src is None else \
        _group_rank(pg, src, group_src)
    return _RecvWork(pg, _Buffer(tensor, True), peer, tag)


def recv(tensor, src: int | None = None, group=None, tag: int = 0,
         group_src: int | None = None) -> int:
    """Receives into ``tensor`` from rank ``src`` (any rank if None); returns the sender's
    rank."""
    work = irecv(tensor, src, group, tag, group_src)
    if work is None:
        return -1
    work.wait()
    return work.source


# ---------------------------------------------------------------------------------- objects
def _objects_start(group, op: str) -> ProcessGroup | None:
    """The start of an object collective: every rank has reached the same one (checked within
    the timeout) before mpi4py's pickling collective, which cannot time out, runs."""
    pg = _start(group, "an object collective")
    if pg is not None:
        _check_same(pg, op, None)
    return pg


def all_gather_object(object_list: list, obj, group=None) -> None:
    """Gathers every rank's picklable ``obj`` into ``object_list`` (one per rank)."""
    pg = _objects_start(group, "ALLGATHER_OBJECT")
    if pg is None:
        return
    if len(object_list) != pg.size():
        raise RuntimeError("object_list must have one entry per rank")
    object_list[:] = pg.comm.allgather(obj)


def broadcast_object_list(object_list: list, src: int = 0, group=None, device=None,
                          group_src: int | None = None) -> None:
    """Copies rank ``src``'s picklable objects into every rank's ``object_list``, in place."""
    pg = _objects_start(group, "BROADCAST_OBJECT")
    if pg is None:
        return
    root = _group_rank(pg, src, group_src)
    object_list[:] = pg.comm.bcast(list(object_list) if pg.rank() == root else None, root)


def scatter_object_list(scatter_object_output_list: list, scatter_object_input_list=None,
                        src: int = 0, group=None, group_src: int | None = None) -> None:
    """Gives rank k the k-th picklable object of rank ``src``'s list, as the first item of its
    ``scatter_object_output_list``."""
    pg = _objects_start(group, "SCATTER_OBJECT")
    if pg is None:
        return
    root = _group_rank(pg, src, group_src)
    if not isinstance(scatter_object_output_list, list) or not scatter_object_output_list:
        raise ValueError("Expected argument scatter_object_output_list to be a list of size at "
                         "least 1.")
    objects = list(scatter_object_input_list) if pg.rank() == root else None
    scatter_object_output_list[0] = pg.comm.scatter(objects, root)


def gather_object(obj, object_gather_list=None, dst: int = 0, group=None,
                  group_dst: int | None = None) -> None:
    """Gathers every rank's picklable ``obj`` into ``object_gather_list`` on rank ``dst``."""
    pg = _objects_start(group, "GATHER_OBJECT")
    if pg is None:
        return
    root = _group_rank(pg, dst, group_dst)
    got = pg.comm.gather(obj, root)
    if pg.rank() == root:
        if object_gather_list is None:
            raise ValueError("Argument ``object_gather_list`` must be specified on destination "
                             "rank.")
        object_gather_list[:] = got
