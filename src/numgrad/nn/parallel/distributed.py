"""``DistributedDataParallel``: PyTorch's data-parallel training over processes
(``numgrad.distributed``, on MPI).

Each process holds a replica of the module and feeds it its own part of the batch. At
construction the replicas are checked to have the same parameters (count, shapes, dtypes) and
get rank 0's parameters and buffers. During backward, each parameter's gradient marks it ready
(a post-accumulate-grad hook); the gradients are packed into buckets (reverse parameter order,
about ``bucket_cap_mb`` each, the first 1 MiB: PyTorch's layout), and a bucket whose parameters
are all ready is all-reduced (non-blocking, on its own MPI communicator) while the next ones
fill; once the last bucket is reduced, every ``.grad`` holds the average over the processes.

numgrad's engine writes all ``.grad`` of a backward at its end (so that an error leaves none
half-written), so the hooks run after the graph's walk, and the buckets overlap one another's
communication and packing rather than the backward's arithmetic.
"""
from __future__ import annotations

import contextlib

import numpy as np

from ...tensor import Tensor
from ..modules.module import Module
from ...autograd.node import AccumulateGrad
from ...autograd import grad_mode
from ... import _lazy

__all__ = ["DistributedDataParallel"]

_FIRST_BUCKET_BYTES = 1024 * 1024  # (PyTorch's dist._DEFAULT_FIRST_BUCKET_BYTES)

_UNFINISHED = (
    "Expected to have finished reduction in the prior iteration before starting a new one. "
    "This error indicates that your module has parameters that were not used in producing "
    "loss. You can enable unused parameter detection by passing the keyword argument "
    "`find_unused_parameters=True` to `torch.nn.parallel.DistributedDataParallel`, and by \n"
    "making sure all `forward` function outputs participate in calculating loss. \n"
    "If you already have done the above, then the distributed data parallel module wasn't able "
    "to locate the output tensors in the return value of your module's `forward` function. "
    "Please include the loss function and the structure of the return value of `forward` of "
    "your module when reporting this issue (e.g. list, dict, iterable).\n"
    "Parameter indices which did not receive grad for rank {rank}: {indices}")

_TWICE = (
    "Expected to mark a variable ready only once. This error is caused by one of the following "
    "reasons: 1) Use of a module parameter outside the `forward` function. Please make sure "
    "model parameters are not shared across multiple concurrent forward-backward passes. or "
    "try to use _set_static_graph() as a workaround if this module graph does not change "
    "during training loop.2) Reused parameters in multiple reentrant backward passes. "
    "Parameter at index {index} has been marked as ready twice. This means that multiple "
    "autograd engine hooks have fired for this particular parameter during this iteration.")


class _Bucket:
    """Parameters (``indices`` into the model's list) reduced together in one flat array."""

    def __init__(self, indices: list, params: list):
        self.indices = indices
        self.shapes = [params[i].shape for i in indices]
        sizes = [params[i].numel() for i in indices]
        self.offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(int).tolist()
        self.flat = np.zeros(self.offsets[-1], params[indices[0]]._data.dtype)
        self.request = None
        self.pending = 0


def _assign_buckets(params: list, cap_bytes: int) -> list:
    """PyTorch's bucket assignment: parameters in reverse order, one open bucket per dtype and
    device, closed when it reaches its size limit (the first bucket's limit is 1 MiB)."""
    buckets: list = []
    open_: dict = {}
    limit = min(_FIRST_BUCKET_BYTES, cap_bytes)
    for i in reversed(range(len(params))):
        p = params[i]
        key = (p._data.dtype, p.device.type)
        current = open_.setdefault(key, [[], 0])
        current[0].append(i)
        current[1] += p.numel() * p._data.dtype.itemsize
        if current[1] >= limit:
            buckets.append(current[0])
            del open_[key]
            limit = cap_bytes
    buckets.extend(b for b, _ in open_.values())
    return [_Bucket(b, params) for b in buckets]


def _outputs(value) -> list:
    """The tensors in ``value`` (nested lists, tuples and dicts)."""
    tree_flatten = _lazy.module("func._pytree").tree_flatten

    return [v for v in tree_flatten(value)[0] if isinstance(v, Tensor)]


def _reached_leaves(outputs: list) -> set:
    """``id`` of every leaf the outputs' graph reaches (their ``AccumulateGrad`` nodes)."""
    seen, leaves = set(), set()
    stack = [t.grad_fn for t in outputs if t.grad_fn is not None]
    stack += [t for t in outputs if t.grad_fn is None and t.requires_grad]
    while stack:
        node = stack.pop()
        if isinstance(node, Tensor):
            leaves.add(id(node))
            continue
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, AccumulateGrad):
            leaves.add(id(node.variable))
            continue
        for nxt, _ in getattr(node, "next_functions", ()):
            if nxt is not None:
                stack.append(nxt)
    return leaves


class DistributedDataParallel(Module):
    """Data parallelism over processes (PyTorch's ``DistributedDataParallel``): wrap the model
    after ``numgrad.distributed.init_process_group``, train it as usual; the gradients are
    averaged over the processes during ``backward()``. ``no_sync()`` accumulates gradients
    locally; ``find_unused_parameters=True`` lets a forward leave parameters unused; the state
    dict's keys are the module's with PyTorch's ``module.`` prefix."""

    def __init__(self, module: Module, device_ids=None, output_device=None, dim: int = 0,
                 broadcast_buffers: bool = True, init_sync: bool = True, process_group=None,
                 bucket_cap_mb: float | None = None, find_unused_parameters: bool = False,
                 check_reduction: bool = False, gradient_as_bucket_view: bool = False,
                 static_graph: bool = False, delay_all_reduce_named_params=None,
                 param_to_hook_all_reduce=None, mixed_precision=None, device_mesh=None,
                 skip_all_reduce_unused_params: bool = False):
        c10d = _lazy.module("distributed.distributed_c10d")

        super().__init__()
        self.module = module
        self.device_ids = device_ids
        self.output_device = output_device
        self.dim = dim
        self.broadcast_buffers = broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        self.gradient_as_bucket_view = gradient_as_bucket_view
        self.static_graph = static_graph
        self.require_backward_grad_sync = True
        self.require_forward_param_sync = True
        self.process_group = c10d._group(process_group)
        if self.process_group is None:
            raise RuntimeError("DistributedDataParallel: this rank is not a member of the "
                               "process group given")
        self._params = [p for p in module.parameters() if p.requires_grad]
        if not self._params:
            raise RuntimeError("DistributedDataParallel is not needed when a module doesn't have "
                               "any parameter that requires a gradient.")
        self.bucket_bytes_cap = int((25 if bucket_cap_mb is None else bucket_cap_mb) * 2**20)
        pg = self.process_group
        self._comm = pg.reducer_comm()
        self._verify_same_model()
        if init_sync:
            self._broadcast([*self._params, *self._buffers_of()])
        self._buckets = _assign_buckets(self._params, self.bucket_bytes_cap)
        self._where = {}  # parameter index -> its bucket
        for bucket in self._buckets:
            for i in bucket.indices:
                self._where[i] = bucket
        self._ready = [False] * len(self._params)
        self._used = np.zeros(len(self._params), np.int32)
        self._syncing = False  # (an iteration whose backward reduces the gradients)
        self._next = 0  # the next bucket to launch: all ranks launch them in this order
        self._handles = [p.register_post_accumulate_grad_hook(self._hook(i))
                         for i, p in enumerate(self._params)]

    # ---------------------------------------------------------------- construction
    def _buffers_of(self) -> list:
        return [b for b in self.module.buffers() if b is not None]

    def _verify_same_model(self) -> None:
        """PyTorch's ``_verify_param_shape_across_processes``: the same number of parameters,
        of the same shapes, on every rank."""
        c10d = _lazy.module("distributed.distributed_c10d")

        pg, rank, size = self.process_group, self.process_group.rank(), self.process_group.size()
        counts = np.zeros(size, np.int64)
        c10d._wait([self._comm.Iallgather(np.array([len(self._params)], np.int64), counts)],
                   pg, "ALLGATHER", 1, size)
        for other, count in enumerate(counts):
            if count != len(self._params):
                raise RuntimeError(
                    f"DDP expects same model across all ranks, but Rank {pg.ranks[rank]} has "
                    f"{len(self._params)} params, while rank {pg.ranks[other]} has inconsistent "
                    f"{int(count)} params.")
        mine = np.stack([c10d._header(p._data) for p in self._params])
        every = np.empty((size,) + mine.shape, np.int64)
        c10d._wait([self._comm.Iallgather(mine, every)], pg, "ALLGATHER", mine.size,
                   every.size)
        for other in range(size):
            for k in range(len(self._params)):
                if not np.array_equal(every[other, k], mine[k]):
                    param = self._params[k]
                    what, value = ("sizes", list(param.shape)) \
                        if every[other, k, 0] == mine[k, 0] else ("dtype", param.dtype)
                    raise RuntimeError(
                        f"[{pg.ranks[rank]}]: params[{k}] in this process with {what} {value} "
                        f"appears not to match {what} of the same param in process "
                        f"{pg.ranks[other]}.")

    def _broadcast(self, tensors: list) -> None:
        """Rank 0's values into every rank's ``tensors`` (parameters, buffers)."""
        c10d = _lazy.module("distributed.distributed_c10d")

        pg = self.process_group
        if pg.size() == 1 or not tensors:
            return
        c10d._not_traced("DistributedDataParallel's broadcast of rank 0's state")
        buffers = [c10d._Buffer(t, pg.rank() != 0) for t in tensors]
        requests = [self._comm.Ibcast(b.array.reshape(-1), 0) for b in buffers]
        c10d._wait(requests, pg, "BROADCAST", 0, 0)
        if pg.rank() != 0:
            for b in buffers:
                b.done()

    # ---------------------------------------------------------------- iteration
    @contextlib.contextmanager
    def no_sync(self):
        """Within it, backward accumulates gradients locally, without communication; the first
        backward after it reduces what accumulated."""
        before = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = before

    def forward(self, *inputs, **kwargs):
        c10d = _lazy.module("distributed.distributed_c10d")

        c10d._not_traced("DistributedDataParallel's forward, whose backward communicates")
        if self._syncing and any(self._ready):
            missing = [i for i, ready in enumerate(self._ready) if not ready]
            raise RuntimeError(_UNFINISHED.format(rank=self.process_group.ranks[
                self.process_group.rank()], indices=" ".join(map(str, missing))))
        if self.broadcast_buffers and self.require_forward_param_sync:
            self._broadcast(self._buffers_of())
        output = self.module(*inputs, **kwargs)
        self._syncing = grad_mode.is_grad_enabled() and self.require_backward_grad_sync and \
            self.process_group.size() > 1
        if self._syncing:
            self._ready = [False] * len(self._params)
            self._used[:] = 0
            self._next = 0
            for bucket in self._buckets:
                bucket.pending = len(bucket.indices)
            if self.find_unused_parameters:
                reached = _reached_leaves(_outputs(output))
                for i, p in enumerate(self._params):
                    if id(p) not in reached:
                        self._mark_ready(i)
        return output

    def _hook(self, index: int):
        def hook(param):
            if self._syncing:
                if self._ready[index]:
                    raise RuntimeError(_TWICE.format(index=index))
                self._used[index] = 1
                self._mark_ready(index)
        return hook

    def _mark_ready(self, index: int) -> None:
        self._ready[index] = True
        bucket = self._where[index]
        bucket.pending -= 1
        if bucket.pending == 0:
            self._launch_ready()

    def _launch_ready(self) -> None:
        """Launches the ready buckets in bucket order (the same on every rank: MPI matches
        collectives by their order), and finishes the iteration after the last."""
        c10d = _lazy.module("distributed.distributed_c10d")

        c10d._not_traced("DistributedDataParallel's gradient all-reduce")
        MPI = c10d._mpi()
        size = self.process_group.size()
        while self._next < len(self._buckets) and self._buckets[self._next].pending == 0:
            bucket = self._buckets[self._next]
            self._pack(bucket)
            np.divide(bucket.flat, size, out=bucket.flat)  # (PyTorch divides, then sums)
            bucket.request = self._comm.Iallreduce(MPI.IN_PLACE, bucket.flat, MPI.SUM)
            self._next += 1
            MPI.Request.Testall([b.request for b in self._buckets[:self._next]])  # (progress)
        if self._next == len(self._buckets):
            self._finish()

    def _pack(self, bucket: _Bucket) -> None:
        for k, i in enumerate(bucket.indices):
            piece = bucket.flat[bucket.offsets[k]:bucket.offsets[k + 1]]
            grad = self._params[i].grad
            if grad is None:  # (unused here: zeros, so that the sum is the other ranks')
                piece[...] = 0
            else:
                np.copyto(piece.reshape(bucket.shapes[k]), grad._host())

    def _finish(self) -> None:
        """Waits for every bucket, and writes the averaged gradients into ``.grad``."""
        c10d = _lazy.module("distributed.distributed_c10d")

        pg = self.process_group
        c10d._wait([b.request for b in self._buckets], pg, "ALLREDUCE",
                   *(sum(b.flat.size for b in self._buckets),) * 2)
        used = None
        if self.find_unused_parameters:  # (a parameter no rank used keeps its .grad)
            used = self._used.copy()
            c10d._wait([self._comm.Iallreduce(c10d._mpi().IN_PLACE, used)], pg, "ALLREDUCE",
                       used.size, used.size)
        for bucket in self._buckets:
            bucket.request = None
            for k, i in enumerate(bucket.indices):
                if used is not None and not used[i]:
                    continue
                self._unpack(self._params[i], bucket.flat[bucket.offsets[k]:
                                                          bucket.offsets[k + 1]])
        self._syncing = False

    @staticmethod
    def _unpack(param, values: np.ndarray) -> None:
        values = values.reshape(param.shape)
        grad = param.grad
        if grad is None:
            param.grad = Tensor._wrap(values.copy()).to(param.device)
        elif isinstance(grad._data, np.ndarray) and grad._data.flags.writeable:
            grad._data[...] = values
        else:  # (a CUDA gradient, or one whose memory is read-only)
            param.grad = Tensor._wrap(values.copy()).to(param.device)

    def _set_static_graph(self) -> None:
        self.static_graph = True
