"""The caching allocator behind ``memory.empty``: device memory is allocated once per size class
and reused, so a kernel's output costs no ``cudaMalloc`` (nor the ``cudaFree``, which synchronises
the device) once the pool is warm.

Why numgrad's own pool, and not numba-cuda's External Memory Management (EMM) plugin interface
(``numba.cuda.set_memory_manager``)? A plugin is process-wide and must be installed before the
CUDA context exists: numgrad is a library that shares its process with CuPy, PyTorch, RMM or the
user's own Numba code, it cannot know it comes first, and swapping the allocator of everyone's
Numba arrays is not its call (it would also override a plugin the user chose, such as RMM's). A
pool at numgrad's level works whenever CUDA is first used, changes nothing for anyone else, and
counts exactly numgrad's tensors, as ``torch.cuda.memory_allocated`` counts PyTorch's. Its raw
blocks still come from ``Context.memalloc``, i.e. from whatever memory manager the process uses.

How it works:

- A request is rounded up to a **size class**: at least 512 bytes; powers of two up to 1 MiB;
  above that four classes per power of two (at most 25% slack). A block only serves requests of
  its own class (no splitting), so the bookkeeping is a dict of free lists.
- ``empty`` takes a free block of the class, or allocates a new one, and wraps it as a device
  array whose last view returns the block to the pool. On a GPU the array's ``gpu_data`` is a
  numba-cuda ``MemoryPointer`` subclass whose ``__del__`` returns the block: reshapes share it and
  slices reference it as their owner, so it dies with the last view (one object per array: less
  work than numba-cuda's own ``AutoFreePointer`` + ``OwnedPointer`` + finalizers). In Numba's CUDA
  simulator, where device arrays are NumPy arrays, the block is a NumPy buffer and the array's
  base is a small lease object with a ``weakref.finalize``.
- Returning a block (from ``__del__`` or a finalizer) only appends it to a deque: thread-safe and
  never blocking, so a release run by the garbage collector in the middle of the pool's own code
  cannot deadlock or corrupt it; the pool takes the returned blocks back under its lock at its
  next call.
- Reuse is ordered by the stream: every numgrad kernel and copy runs on the default stream, so a
  block freed after a launch and reused by the next one is written only after the first kernel
  is done. (Work on other streams on numgrad's memory must synchronise first, as with PyTorch's
  caching allocator without ``record_stream``.)
- ``empty_cache()`` gives the cached (free) blocks back to the driver; blocks in use stay. If a
  raw allocation fails while blocks are cached, the cache is released and the allocation retried
  once, as PyTorch does.
- ``NUMGRAD_CUDA_POOL=0`` in the environment turns the pool off (every output is a fresh
  ``cuda.device_array``), for memory checkers, like ``PYTORCH_NO_CUDA_MEMORY_CACHING=1``.

``CachingPool`` is pure Python: the backend (``alloc``, ``free``, ``flush``, ``wrap``, ``zero``)
is the only part that touches Numba, so the bookkeeping is tested with a fake backend.
"""
from __future__ import annotations

import collections
import functools
import math
import os
import threading
import weakref
from ctypes import c_size_t

import numpy as np
from numba import config

from ... import _lazy

MIN_BLOCK = 512  # bytes: the smallest size class (PyTorch rounds to 512 bytes too)
POW2_LIMIT = 1 << 20  # size classes are powers of two up to 1 MiB, then four per octave


def size_class(nbytes: int) -> int:
    """The block size that serves a request of ``nbytes`` (> 0) bytes."""
    if nbytes <= MIN_BLOCK:
        return MIN_BLOCK
    if nbytes <= POW2_LIMIT:
        return 1 << (nbytes - 1).bit_length()
    step = 1 << ((nbytes - 1).bit_length() - 3)  # a quarter of the enclosing power of two
    return -(-nbytes // step) * step


def _c_strides(shape: tuple, itemsize: int) -> tuple:
    strides, step = [], itemsize
    for n in reversed(shape):
        strides.append(step)
        step *= n
    return tuple(reversed(strides))


class CachingPool:
    """Size-class free lists over the raw blocks of ``backend``, with PyTorch's statistics."""

    def __init__(self, backend):
        self.backend = backend
        self._free: dict = {}  # class size -> [raw block, ...]
        self._returned = collections.deque()  # (class size, block) from finalizers, not yet taken
        self._lock = threading.Lock()
        self._allocated = 0  # bytes (by class size) in blocks that arrays use
        self._reserved = 0  # bytes in all raw blocks: in use + cached
        self._peak = 0
        self._counts = dict(raw_allocs=0, raw_frees=0, reuses=0, alloc_retries=0)

    # ------------------------------------------------------------------ allocation
    def empty(self, shape, dtype):
        """An uninitialised C-contiguous device array of ``shape`` and ``dtype``."""
        dtype = np.dtype(dtype)
        if type(shape) is not tuple:
            shape = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(map(int, shape))
        nbytes = math.prod(shape) * dtype.itemsize
        if nbytes == 0:
            return self.backend.zero(shape, dtype)
        size, block = self._acquire(nbytes)
        return self.backend.wrap(block, size, shape, dtype,
                                 functools.partial(self._returned.append, (size, block)))

    def _acquire(self, nbytes: int):
        size = size_class(nbytes)
        with self._lock:
            self._take_returned()
            free = self._free.get(size)
            if free:
                block = free.pop()
                self._counts["reuses"] += 1
            else:
                block = self._new_block(size)
            self._allocated += size
            if self._allocated > self._peak:
                self._peak = self._allocated
        return size, block

    def _new_block(self, size: int):
        try:
            block = self.backend.alloc(size)
        except Exception:
            if not any(self._free.values()):
                raise
            self._counts["alloc_retries"] += 1
            self._release_cached()
            self.backend.flush()
            block = self.backend.alloc(size)
        self._reserved += size
        self._counts["raw_allocs"] += 1
        return block

    def _take_returned(self) -> None:
        """Moves the blocks that finalizers gave back onto the free lists (under the lock)."""
        returned = self._returned
        while returned:
            size, block = returned.popleft()
            self._allocated -= size
            self._free.setdefault(size, []).append(block)

    def _release_cached(self) -> None:
        for size, blocks in self._free.items():
            for block in blocks:
                self.backend.free(block)
                self._reserved -= size
                self._counts["raw_frees"] += 1
        self._free.clear()

    # ------------------------------------------------------------------ torch.cuda's API
    def empty_cache(self) -> None:
        """Gives every cached (unused) block back to the device."""
        with self._lock:
            self._take_returned()
            self._release_cached()
        self.backend.flush()

    def memory_allocated(self) -> int:
        with self._lock:
            self._take_returned()
            return self._allocated

    def memory_reserved(self) -> int:
        with self._lock:
            self._take_returned()
            return self._reserved

    def max_memory_allocated(self) -> int:
        with self._lock:
            return self._peak

    def reset_peak_memory_stats(self) -> None:
        with self._lock:
            self._take_returned()
            self._peak = self._allocated

    def memory_stats(self) -> dict:
        """Bytes allocated (in use), reserved (in use + cached), cached and the peak; counts of
        raw allocations and frees, of requests served from the cache, and of retries after a
        failed allocation; the number of blocks in use and cached."""
        with self._lock:
            self._take_returned()
            cached_blocks = sum(len(b) for b in self._free.values())
            return dict(
                allocated_bytes=self._allocated, reserved_bytes=self._reserved,
                cached_bytes=self._reserved - self._allocated, peak_allocated_bytes=self._peak,
                blocks_in_use=self._counts["raw_allocs"] - self._counts["raw_frees"] - cached_blocks,
                cached_blocks=cached_blocks, **self._counts,
            )


# ---------------------------------------------------------------------- backends
def _pooled_pointer_class(MemoryPointer):
    """The ``gpu_data`` of a pool array: a numba-cuda ``MemoryPointer`` whose deletion returns
    its block to the pool. Every view of it (``reshape`` shares it; a slice's pointer comes from
    ``view()``, which makes it the slice's owner, referenced strongly) keeps it alive, so it dies
    with the last of them. It is made without ``MemoryPointer.__init__``'s conversions, and its
    ctypes pointer is computed once (kernel launches read it)."""
    class PooledPointer(MemoryPointer):
        device_ctypes_pointer = None  # an attribute here, not the base class's property

        def __init__(self, context, pointer, size: int, release):
            self.context = context
            self.device_pointer = self.handle = pointer
            self.size = self._cuda_memsize_ = size
            self.is_managed = False
            self.refct = 1
            self._owner = None
            self.device_ctypes_pointer = c_size_t(int(pointer))
            self._release = release

        def __del__(self):
            try:
                self._release()
            except Exception:  # interpreter shutdown
                pass

    return PooledPointer


class DeviceBackend:
    """Raw blocks from the current context's ``memalloc`` (so from the process's memory manager,
    numba-cuda's own or a plugin such as RMM's); arrays are ``DeviceNDArray``s."""

    def __init__(self):
        self._cuda = _lazy.optional("numba.cuda")
        self._Pointer = _pooled_pointer_class(
            _lazy.optional("numba.cuda.cudadrv.driver").MemoryPointer)
        self._DeviceNDArray = _lazy.optional("numba.cuda.cudadrv.devicearray").DeviceNDArray

    def alloc(self, size: int):
        """(the memory, its context, its device pointer): the last two read once, here."""
        memory = self._memalloc(size)
        return memory, memory.context, memory.device_pointer

    def _memalloc(self, size: int):
        return self._cuda.current_context().memalloc(size)

    def free(self, block) -> None:
        """Nothing to do: dropping the pool's reference frees the block (numba-cuda queues the
        ``cuMemFree`` among its pending deallocations; ``flush`` runs them)."""

    def flush(self) -> None:
        """Runs numba-cuda's pending deallocations, so that freed blocks reach the driver now."""
        try:
            manager = self._cuda.current_context().memory_manager
            pending = getattr(manager, "deallocations", None)
            if pending is not None:
                pending.clear()
        except Exception:  # a memory manager without them: it frees on its own schedule
            pass

    def wrap(self, block, size: int, shape: tuple, dtype: np.dtype, release):
        pointer = self._Pointer(block[1], block[2], size, release)
        return self._DeviceNDArray(shape, _c_strides(shape, dtype.itemsize), dtype,
                                   gpu_data=pointer)

    def zero(self, shape: tuple, dtype: np.dtype):
        return self._cuda.device_array(shape, dtype)  # size 0: a NULL pointer, no allocation


class _Lease:
    """The base of a simulator array carved from a pool block: it lives as long as any view."""

    def __init__(self, block: np.ndarray, nbytes: int):
        self.block = block
        self.__array_interface__ = {
            "data": (block.ctypes.data, False), "shape": (nbytes,), "typestr": "|u1",
            "version": 3,
        }


class SimulatorBackend:
    """Numba's CUDA simulator: device arrays wrap NumPy arrays, so blocks are NumPy buffers."""

    def __init__(self):
        self._cuda = _lazy.optional("numba.cuda")
        self._FakeCUDAArray = _lazy.optional(
            "numba.cuda.simulator.cudadrv.devicearray").FakeCUDAArray

    def alloc(self, size: int):
        return np.empty(size, np.uint8)

    def free(self, block) -> None:
        pass

    def flush(self) -> None:
        pass

    def wrap(self, block, size: int, shape: tuple, dtype: np.dtype, release):
        lease = _Lease(block, dtype.itemsize * int(np.prod(shape, dtype=np.int64)))
        weakref.finalize(lease, release)
        return self._FakeCUDAArray(np.asarray(lease).view(dtype).reshape(shape))

    def zero(self, shape: tuple, dtype: np.dtype):
        return self._cuda.device_array(shape, dtype)


class NoPool:
    """``NUMGRAD_CUDA_POOL=0``: every array from ``cuda.device_array``; statistics stay 0."""

    def __init__(self):
        self._cuda = _lazy.optional("numba.cuda")

    def empty(self, shape, dtype):
        return self._cuda.device_array(shape, np.dtype(dtype))

    def empty_cache(self) -> None:
        pass

    def memory_allocated(self) -> int:
        return 0

    memory_reserved = max_memory_allocated = memory_allocated

    def reset_peak_memory_stats(self) -> None:
        pass

    def memory_stats(self) -> dict:
        return {}


# ---------------------------------------------------------------------- the process's pool
_POOL = None


def enabled() -> bool:
    return os.environ.get("NUMGRAD_CUDA_POOL", "1").strip().lower() not in ("0", "false", "no", "off")


def pool():
    """The process's pool (made on first use)."""
    global _POOL
    if _POOL is None:
        if not enabled():
            _POOL = NoPool()
        else:
            _POOL = CachingPool(SimulatorBackend() if config.ENABLE_CUDASIM else DeviceBackend())
    return _POOL


def current():
    """The process's pool, or None before the first CUDA allocation."""
    return _POOL


def empty(shape, dtype):
    """An uninitialised C-contiguous device array from the process's pool."""
    return (_POOL or pool()).empty(shape, dtype)
