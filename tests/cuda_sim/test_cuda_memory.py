"""numgrad's CUDA memory pool and the CUDA Array Interface (run in Numba's CUDA simulator by
tests/test_cuda.py, which reports this file's tests as one group).

- The pool's bookkeeping (size classes, reuse, statistics, ``empty_cache``, the retry after a
  failed allocation, releases from finalizers and threads) against a fake allocator.
- The simulator's pool: ``memory.empty`` reuses blocks, views outlive their base, a training
  loop stops allocating, ``numgrad.cuda``'s statistics.
- numba-cuda's real ``DeviceNDArray`` glue, in a process without the simulator and with fake
  device addresses (nothing is dereferenced): views, reshapes and slices keep a block leased.
- ``__cuda_array_interface__`` and ``as_tensor``/``tensor`` on objects exporting it, through a
  CuPy-like object over simulator memory. What only a GPU shows (real device pointers shared
  with PyTorch and Numba, freed memory reaching the driver) is in benchmarks/gpu_check.py.
"""
import gc
import os
import subprocess
import sys
import textwrap
import threading
import warnings
import weakref

import numpy as np
import pytest
from numba import cuda

import numgrad
from numgrad.kernels.cuda import memory, pool as P

SRC = os.path.join(os.path.dirname(__file__), os.pardir, os.pardir, "src")


# ---------------------------------------------------------------------- a fake allocator
class FakeBlock:
    def __init__(self, number, size):
        self.number, self.size = number, size


class FakeArray:
    def __init__(self, block, shape, dtype):
        self.block, self.shape, self.dtype = block, shape, dtype


class FakeBackend:
    """Raw blocks are numbered objects; ``capacity`` (bytes) makes ``alloc`` fail beyond it."""

    def __init__(self, capacity=None, on_alloc=None):
        self.capacity, self.on_alloc = capacity, on_alloc
        self.live, self.freed, self.flushes, self.count = [], [], 0, 0

    def alloc(self, size):
        if self.on_alloc is not None:
            self.on_alloc()
        if self.capacity is not None and sum(b.size for b in self.live) + size > self.capacity:
            raise MemoryError("out of memory")
        self.count += 1
        block = FakeBlock(self.count, size)
        self.live.append(block)
        return block

    def free(self, block):
        self.live.remove(block)
        self.freed.append(block)

    def flush(self):
        self.flushes += 1

    def wrap(self, block, size, shape, dtype, release):
        assert block.size == size
        a = FakeArray(block, shape, dtype)
        weakref.finalize(a, release)
        return a

    def zero(self, shape, dtype):
        return FakeArray(None, shape, dtype)


def test_pool_size_classes():
    expected = {1: 512, 512: 512, 513: 1024, 4000: 4096, 4097: 8192, 2**20: 2**20,
                2**20 + 1: 5 * 2**18, 3 * 2**20: 3 * 2**20, 3 * 2**20 + 1: 7 * 2**19,
                2**30 + 1: 5 * 2**28}
    assert {n: P.size_class(n) for n in expected} == expected
    previous = 0
    for n in list(range(1, 5000, 7)) + [int(x) for x in np.geomspace(5000, 2**34, 2000)]:
        c = P.size_class(n)
        assert c >= n and c >= previous and P.size_class(c) == c
        assert c <= max(512, 2 * n) and (n <= 2**20 or c < 1.25 * n + 1)
        previous = c


def test_pool_reuses_a_freed_block_of_its_class():
    backend = FakeBackend()
    pool = P.CachingPool(backend)
    a = pool.empty((100,), np.float32)  # 400 bytes: the 512 class
    block = a.block
    assert (pool.memory_allocated(), pool.memory_reserved()) == (512, 512)
    del a
    assert (pool.memory_allocated(), pool.memory_reserved()) == (0, 512)
    b = pool.empty((2, 3), np.float64)  # 48 bytes: the same class, the same block
    assert b.block is block and b.shape == (2, 3) and b.dtype == np.float64
    c = pool.empty(64, np.int64)  # 512 bytes, but b holds the block: a new one
    assert c.block is not block
    d = pool.empty((600,), np.float32)  # 2400 bytes: another class
    assert d.block.size == 4096
    stats = pool.memory_stats()
    assert stats["raw_allocs"] == 3 and stats["reuses"] == 1 and stats["blocks_in_use"] == 3
    assert stats["allocated_bytes"] == stats["reserved_bytes"] == 512 + 512 + 4096
    assert len(backend.live) == 3 and not backend.freed


def test_pool_zero_size_arrays_take_no_block():
    backend = FakeBackend()
    pool = P.CachingPool(backend)
    z = pool.empty((0, 3), np.float32)
    assert z.block is None and z.shape == (0, 3) and backend.count == 0
    assert pool.memory_reserved() == 0


def test_pool_empty_cache_frees_only_cached_blocks():
    backend = FakeBackend()
    pool = P.CachingPool(backend)
    keep = pool.empty(10, np.float32)
    drop = [pool.empty(n, np.float32) for n in (10, 1000, 10**6)]
    dropped = [a.block for a in drop]
    del drop
    assert pool.memory_reserved() == 512 * 2 + 4096 + 4 * 2**20
    pool.empty_cache()
    assert sorted(b.number for b in backend.freed) == sorted(b.number for b in dropped)
    assert backend.live == [keep.block] and backend.flushes == 1
    assert pool.memory_reserved() == pool.memory_allocated() == 512
    assert pool.memory_stats()["cached_bytes"] == 0
    pool.empty_cache()  # nothing cached: nothing freed
    assert len(backend.freed) == 3 and keep.block in backend.live
    del keep
    pool.empty_cache()
    assert backend.live == [] and pool.memory_reserved() == 0


def test_pool_retries_once_after_releasing_the_cache():
    backend = FakeBackend(capacity=5120)
    pool = P.CachingPool(backend)
    a = pool.empty(256, np.float32)  # 1024
    b = pool.empty(256, np.float32)  # 1024
    del a
    c = pool.empty(512, np.float32)  # 2048: fits (1024 + 1024 + 2048 <= 5120)
    with pytest.raises(MemoryError):  # in use 3072, cached 1024: not enough even after release
        pool.empty(1024, np.float32)
    assert pool.memory_stats()["alloc_retries"] == 1 and pool.memory_reserved() == 3072
    del c
    d = pool.empty(1024, np.float32)  # 4096: the cached 2048 is released, then it fits
    assert d.block.size == 4096 and backend.flushes >= 2
    stats = pool.memory_stats()
    assert stats["alloc_retries"] == 2 and stats["reserved_bytes"] == 1024 + 4096
    del b, d
    assert pool.memory_allocated() == 0


def test_pool_raises_the_allocator_s_error_when_nothing_is_cached():
    pool = P.CachingPool(FakeBackend(capacity=1024))
    with pytest.raises(MemoryError, match="out of memory"):
        pool.empty(2048, np.uint8)
    assert pool.memory_stats()["alloc_retries"] == 0


def test_pool_peak_and_reset():
    pool = P.CachingPool(FakeBackend())
    a = [pool.empty(100, np.float64) for _ in range(3)]  # 800 bytes: the 1024 class
    assert pool.max_memory_allocated() == 3072
    del a
    b = pool.empty(1, np.float32)
    assert pool.max_memory_allocated() == 3072
    pool.reset_peak_memory_stats()
    assert pool.max_memory_allocated() == pool.memory_allocated() == 512
    del b


def test_pool_release_during_its_own_allocation_is_safe():
    """A finalizer can run inside the pool (the garbage collector, or a reference dropped by the
    allocator): it only queues the block, so nothing deadlocks and the counts stay right."""
    held = []
    backend = FakeBackend(on_alloc=lambda: held.clear())
    pool = P.CachingPool(backend)
    held.append(pool.empty(10, np.float32))  # block 1, freed inside the next alloc
    first = held[0].block
    b = pool.empty(1000, np.float32)  # a new class: alloc runs and drops block 1
    assert not held and pool.memory_allocated() == 4096
    c = pool.empty(20, np.float32)  # block 1 is back on its free list
    assert c.block is first
    assert pool.memory_stats()["reuses"] == 1
    del b, c
    assert pool.memory_allocated() == 0 and pool.memory_reserved() == 512 + 4096


def test_pool_threads_allocate_and_free_concurrently():
    backend = FakeBackend()
    pool = P.CachingPool(backend)
    errors = []

    def work(seed):
        try:
            rng = np.random.default_rng(seed)
            live = []
            for _ in range(2000):
                if live and rng.random() < 0.5:
                    live.pop(int(rng.integers(len(live))))
                else:
                    live.append(pool.empty(int(rng.integers(1, 5000)), np.float32))
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    stats = pool.memory_stats()
    assert stats["allocated_bytes"] == 0 and stats["blocks_in_use"] == 0
    assert stats["reserved_bytes"] == sum(b.size for b in backend.live)
    assert stats["cached_blocks"] == len(backend.live) == stats["raw_allocs"]
    pool.empty_cache()
    assert backend.live == [] and pool.memory_reserved() == 0


# ---------------------------------------------------------------------- the simulator's pool
def _address(a) -> int:
    return a.__cuda_array_interface__["data"][0] if hasattr(a, "__cuda_array_interface__") \
        else a._ary.ctypes.data


def test_memory_empty_uses_the_process_pool():
    pool = P.pool()
    assert isinstance(pool, P.CachingPool) and isinstance(pool.backend, P.SimulatorBackend)
    gc.collect()
    before = numgrad.cuda.memory_allocated()
    a = memory.empty((3, 5), np.float64)  # 120 bytes: the 512 class
    assert a.shape == (3, 5) and a.dtype == np.float64 and a.is_c_contiguous()
    assert numgrad.cuda.memory_allocated() == before + 512
    address = _address(a)
    del a
    assert numgrad.cuda.memory_allocated() == before
    b = memory.empty(100, np.int32)  # 400 bytes: the same block again
    assert _address(b) == address
    z = memory.empty((0, 4), np.float32)
    assert z.shape == (0, 4) and z.size == 0
    s = memory.empty((), np.float32)
    assert s.shape == () and s.size == 1


def test_memory_views_outlive_their_base():
    a = memory.empty((4, 8), np.float32)
    a.copy_to_device(np.arange(32, dtype=np.float32).reshape(4, 8))
    view, flat = a[1:3], a.reshape(32)
    address = _address(a)
    del a
    others = [memory.empty((4, 8), np.float32) for _ in range(4)]  # the same class, new blocks
    for o in others:
        assert _address(o) != address
        o.copy_to_device(np.full((4, 8), -1, np.float32))
    np.testing.assert_array_equal(view.copy_to_host(), np.arange(8, 24).reshape(2, 8))
    del flat
    assert _address(memory.empty((4, 8), np.float32)) != address  # the view still holds it
    del view
    assert _address(memory.empty((4, 8), np.float32)) == address


def test_memory_a_training_loop_stops_allocating():
    numgrad.manual_seed(0)
    x = numgrad.randn(300, device="cuda", requires_grad=True)
    xc = x.detach().cpu().requires_grad_()

    def step(t):
        (numgrad.tanh(t * 1.5 + 0.5) * numgrad.sigmoid(t)).sum().backward()

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no per-call warnings from our launches
        step(x)
        raw = numgrad.cuda.memory_stats()["raw_allocs"]
        for _ in range(3):
            x.grad = None
            step(x)
        stats = numgrad.cuda.memory_stats()
    assert stats["raw_allocs"] == raw and stats["reuses"] > 0
    step(xc)
    np.testing.assert_allclose(x.grad.cpu().numpy(), xc.grad.numpy(), rtol=2e-5, atol=1e-7)


def test_memory_statistics_and_empty_cache():
    gc.collect()
    numgrad.cuda.empty_cache()
    assert numgrad.cuda.memory_reserved() == numgrad.cuda.memory_allocated()
    base = numgrad.cuda.memory_allocated()
    x = numgrad.ones(1000, device="cuda")  # counted too: made in the pool
    assert numgrad.cuda.memory_allocated() == base + 4096
    y = x * 2  # 4000 bytes: the 4096 class
    assert numgrad.cuda.memory_allocated() == base + 2 * 4096
    numgrad.cuda.reset_peak_memory_stats()
    z = (y + 1) * 3  # the temporary (y + 1) is freed when the product is done
    assert numgrad.cuda.memory_allocated() == base + 3 * 4096
    assert numgrad.cuda.max_memory_allocated() == base + 4 * 4096
    del y, z
    assert numgrad.cuda.memory_allocated() == base + 4096
    assert numgrad.cuda.memory_reserved() >= base + 4 * 4096
    numgrad.cuda.empty_cache()
    assert numgrad.cuda.memory_reserved() == numgrad.cuda.memory_allocated() == base + 4096
    stats = numgrad.cuda.memory_stats()
    assert stats["cached_bytes"] == 0 and stats["raw_frees"] >= 2
    assert set(stats) >= {"allocated_bytes", "reserved_bytes", "peak_allocated_bytes",
                          "raw_allocs", "reuses", "blocks_in_use", "cached_blocks"}
    del x


def _run(code: str, **env) -> subprocess.CompletedProcess:
    environ = dict(os.environ, **env)
    environ["PYTHONPATH"] = os.pathsep.join(p for p in (SRC, os.environ.get("PYTHONPATH")) if p)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=environ,
                          capture_output=True, text=True, timeout=300)


def test_memory_statistics_are_zero_before_cuda_is_used():
    result = _run("""
        import numgrad
        assert numgrad.cuda.memory_allocated() == numgrad.cuda.memory_reserved() == 0
        assert numgrad.cuda.max_memory_allocated() == 0 and numgrad.cuda.memory_stats() == {}
        numgrad.cuda.empty_cache(); numgrad.cuda.reset_peak_memory_stats()
        print("ok")
    """)
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr


def test_memory_pool_can_be_turned_off():
    result = _run("""
        import numgrad
        x = numgrad.ones(3, device="cuda", requires_grad=True)
        (x * 2).sum().backward()
        assert x.grad.tolist() == [2.0, 2.0, 2.0]
        from numgrad.kernels.cuda import pool
        assert isinstance(pool.current(), pool.NoPool)
        assert numgrad.cuda.memory_allocated() == 0 and numgrad.cuda.memory_stats() == {}
        numgrad.cuda.empty_cache()
        print("ok")
    """, NUMGRAD_CUDA_POOL="0")
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr


def test_memory_device_array_glue_of_numba_cuda():
    """Without the simulator (and without a GPU: fake device addresses, never dereferenced), the
    pool's wrapping of numba-cuda's real DeviceNDArray: a block is leased until the last view,
    reshape or slice dies, then reused; and our launch configurations do not warn of low
    occupancy while numba-cuda's own does (the control)."""
    result = _run("""
        import gc, warnings
        import numpy as np
        from numba import cuda
        from numba.cuda.cudadrv import devicearray, driver
        from numgrad.kernels.cuda import memory, pool as P

        freed = []

        class FakeDevice(P.DeviceBackend):
            next = 1 << 20
            def _memalloc(self, size):  # as numba-cuda's memalloc makes them, minus cuMemAlloc
                pointer = driver.binding.CUdeviceptr(self.next)
                self.next += size
                memory = driver.AutoFreePointer(None, pointer, size,
                                                finalizer=lambda p=int(pointer): freed.append(p))
                keep.append(memory)  # (numba-cuda's memory manager keeps it until freed)
                return memory.own()
            def flush(self):
                pass

        keep = []

        pool = P.CachingPool(FakeDevice())
        a = pool.empty((10, 10), np.float32)
        assert type(a) is devicearray.DeviceNDArray and a.shape == (10, 10)
        assert a.strides == (40, 4) and a.is_c_contiguous()
        address = a.device_ctypes_pointer.value
        assert a.__cuda_array_interface__["data"][0] == address
        view = a._do_getitem(slice(2, 5))  # a[2:5] (whose decorator asks the driver for a context)
        assert view.device_ctypes_pointer.value == address + 80
        flat = a.reshape(100)
        del a; gc.collect()
        assert pool.memory_allocated() == 512
        del flat; gc.collect()
        b = pool.empty(100, np.float32)
        assert b.device_ctypes_pointer.value != address  # the slice still holds the block
        del view; gc.collect()
        assert pool.memory_allocated() == 512
        c = pool.empty(128, np.float32)
        assert c.device_ctypes_pointer.value == address  # reused
        assert pool.memory_stats()["blocks_in_use"] == 2
        del b, c; gc.collect()
        assert pool.memory_allocated() == 0 and pool.memory_stats()["blocks_in_use"] == 0
        assert freed == []
        pool.empty_cache(); gc.collect()
        assert pool.memory_reserved() == 0 and pool.memory_stats()["raw_frees"] == 2
        assert sorted(freed) == [1 << 20, (1 << 20) + 512]  # both raw blocks reached "cuMemFree"

        @cuda.jit
        def kernel(x):
            pass

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            kernel[1, 32]
        assert any("low occupancy" in str(w.message) for w in caught), caught
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            memory.launch(kernel, 10)
            memory.launch(kernel, 3000)
        print("ok")
    """, NUMBA_ENABLE_CUDASIM="0")
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr


# ---------------------------------------------------------------------- CUDA Array Interface
class Foreign:
    """Another library's CUDA array (CuPy-like): it exports memory that it owns, a simulator
    device array whose "device pointer" is the address of its NumPy buffer."""

    def __init__(self, host):
        self.device = cuda.to_device(np.ascontiguousarray(host))
        self.array = self.device._ary

    @classmethod
    def over(cls, array):  # a view (strided, say) of another Foreign's memory
        f = cls.__new__(cls)
        f.device, f.array = None, array
        return f

    @property
    def __cuda_array_interface__(self):
        a = self.array
        return {"shape": a.shape, "typestr": a.dtype.str, "version": 3, "stream": None,
                "data": (a.ctypes.data, False),
                "strides": None if a.flags.c_contiguous else a.strides}


def _interface_address(t) -> int:
    return t.__cuda_array_interface__["data"][0]


def test_interop_cuda_tensors_export_the_interface():
    t = numgrad.arange(6, dtype=numgrad.float32, device="cuda").reshape(2, 3)
    desc = t.__cuda_array_interface__
    assert desc["shape"] == (2, 3) and desc["typestr"] == "<f4" and desc["version"] == 3
    assert desc["strides"] is None and desc["data"][1] is False
    assert desc["data"][0] == t._data._ary.ctypes.data
    assert numgrad.ones(2, dtype=numgrad.int64, device="cuda").__cuda_array_interface__["typestr"] == "<i8"
    cpu = numgrad.ones(2)
    assert not hasattr(cpu, "__cuda_array_interface__")
    with pytest.raises(AttributeError, match=r"Can't get __cuda_array_interface__ on non-CUDA "
                                             r"tensor type: numgrad.FloatTensor If CUDA data is "
                                             r"required use tensor.cuda\(\)"):
        cpu.__cuda_array_interface__
    g = numgrad.ones(2, device="cuda", requires_grad=True)
    with pytest.raises(RuntimeError, match="Can't get __cuda_array_interface__ on Variable that "
                                           "requires grad"):
        g.__cuda_array_interface__
    assert g.detach().__cuda_array_interface__["data"][0] == _interface_address(g.detach())


def test_interop_as_tensor_shares_memory():
    f = Foreign(np.arange(6, dtype=np.float32).reshape(2, 3))
    t = numgrad.as_tensor(f)
    assert t.device.type == "cuda" and t.dtype is numgrad.float32 and t.shape == (2, 3)
    assert not t.requires_grad and t.is_leaf
    assert _interface_address(t) == f.array.ctypes.data  # no copy
    f.array[0, 0] = 42.0  # written by "the other library"
    assert t.tolist() == [[42.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    alive = weakref.ref(f)
    del f
    gc.collect()
    assert alive() is not None  # the tensor keeps the exporter alive
    assert (t * 2).sum().item() == 2 * (42 + 15)
    del t
    gc.collect()
    assert alive() is None


def test_interop_as_tensor_of_a_numgrad_tensor_s_interface_is_the_same_memory():
    t = numgrad.arange(4, dtype=numgrad.float64, device="cuda")
    u = numgrad.as_tensor(Foreign.over(t._data._ary))
    assert _interface_address(u) == _interface_address(t) and u.dtype is numgrad.float64
    x = numgrad.as_tensor(Foreign(np.ones(3, np.float32)))
    x.requires_grad_()
    (x * x).sum().backward()
    assert x.grad.device.type == "cuda" and x.grad.tolist() == [2.0, 2.0, 2.0]


def test_interop_copies_when_asked_or_converting():
    f = Foreign(np.arange(4, dtype=np.float32))
    copied = numgrad.tensor(f)
    assert copied.device.type == "cuda" and _interface_address(copied) != f.array.ctypes.data
    g = numgrad.tensor(f, requires_grad=True)
    assert g.requires_grad and g.is_leaf and g.device.type == "cuda"
    wider = numgrad.as_tensor(f, dtype=numgrad.float64)
    assert wider.dtype is numgrad.float64 and _interface_address(wider) != f.array.ctypes.data
    assert numgrad.as_tensor(f, dtype=numgrad.float32, device="cuda").__cuda_array_interface__[
        "data"][0] == f.array.ctypes.data
    host = numgrad.as_tensor(f, device="cpu")
    assert host.device.type == "cpu" and host.tolist() == [0.0, 1.0, 2.0, 3.0]
    f.array[:] = -1
    assert copied.tolist() == g.tolist() == wider.tolist() == host.tolist() == [0.0, 1.0, 2.0, 3.0]
    assert numgrad.tensor(f, dtype=numgrad.int64).tolist() == [-1, -1, -1, -1]


def test_interop_strided_integer_and_unsupported_arrays():
    base = Foreign(np.arange(12, dtype=np.float32).reshape(3, 4))
    transposed = Foreign.over(base.array.T)  # strides (4, 16): not C-contiguous
    t = numgrad.as_tensor(transposed)
    assert t.shape == (4, 3) and t.tolist() == np.arange(12).reshape(3, 4).T.tolist()
    assert t.__cuda_array_interface__["strides"] is None  # made contiguous (a copy)
    every_other = Foreign.over(base.array[:, ::2])
    assert numgrad.tensor(every_other).tolist() == [[0, 2], [4, 6], [8, 10]]
    i = numgrad.as_tensor(Foreign(np.array([1, 2, 3], np.int32)))
    assert i.dtype is numgrad.int32 and (i + 1).tolist() == [2, 3, 4]
    b = numgrad.as_tensor(Foreign(np.array([True, False])))
    assert b.dtype is numgrad.bool and b.tolist() == [True, False]
    empty = numgrad.as_tensor(Foreign(np.zeros((0, 2), np.float32)))
    assert empty.shape == (0, 2) and empty.device.type == "cuda"
    with pytest.raises(TypeError):
        numgrad.as_tensor(Foreign(np.zeros(3, np.uint16)))
