"""Large host arrays (numgrad/_pool.py, issue 38 item 3, issue 29). glibc's thresholds adapted
by numgrad's first large output, so that freed outputs are reused from the heap, not faulted in
anew. The pool of outputs above glibc's ceiling: a freed output's array serves the next output of
its shape; an array any view still references is never handed out again; a reused array's old
values never show (zeros are zeros, copies are whole); the pool is bounded, gives memory back on
``numgrad.empty_cache()`` and when idle, and is thread-safe."""
import os
import subprocess
import sys
import threading
import weakref

import numpy as np
import pytest

import numgrad
from numgrad import _pool

N = 600_000  # float64 elements: over the kernels' threading size, where outputs are pooled


@pytest.fixture(autouse=True)
def small_pool(monkeypatch):
    """Pool from 1 MiB (not 32), so that the tests' arrays are small; an empty pool before and
    after."""
    monkeypatch.setattr(_pool, "POOL_FROM", 1 << 20)
    numgrad.empty_cache()
    yield
    numgrad.empty_cache()


def _address(t) -> int:
    return t._data.__array_interface__["data"][0]


def _x(seed=0):
    return numgrad.tensor(np.random.default_rng(seed).standard_normal(N))


def test_a_freed_output_serves_the_next_and_values_are_right():
    x = _x()
    first = numgrad.exp(x)
    where = _address(first)
    assert _pool.held() >= N * 8
    del first
    second = numgrad.relu(x)  # (another op, same size: the freed buffer)
    assert _address(second) == where
    np.testing.assert_array_equal(second.numpy(), np.maximum(x.numpy(), 0))
    third = x + x  # (second still alive: another buffer)
    assert _address(third) != where
    np.testing.assert_array_equal(third.numpy(), x.numpy() * 2)


def test_a_view_that_outlives_its_tensor_keeps_the_buffer():
    x = _x()
    y = x * 3.0
    kept = y[10:20]  # (a view of the output; the output itself is dropped)
    expected = kept.numpy().copy()
    plain = y.numpy()[::2]  # (and a NumPy view of the data)
    del y
    others = [numgrad.sigmoid(x) for _ in range(3)]  # (none may take y's buffer)
    assert all(_address(o) != _address(kept) - 80 for o in others)
    np.testing.assert_array_equal(kept.numpy(), expected)
    np.testing.assert_array_equal(plain[5:10], x.numpy()[10:20:2] * 3.0)


# (``held`` is counted from what the pool holds when a test starts: arrays that earlier tests
# in the process still reference stay in it)


def test_empty_cache_gives_back_every_unreferenced_buffer():
    before = _pool.held()
    x = _x()
    kept = numgrad.exp(x)
    numgrad.exp(x)
    numgrad.tanh(x)  # (the second's buffer again, freed before)
    assert _pool.held() - before == 2 * N * 8
    numgrad.empty_cache()
    assert _pool.held() - before == N * 8  # (kept's stays)
    del kept
    numgrad.empty_cache()
    assert _pool.held() == before


def test_the_pool_is_bounded_and_frees_idle_buffers(monkeypatch):
    before, size = _pool.held(), N * 8
    monkeypatch.setattr(_pool, "LIMIT", before + size)  # (room for one buffer of N float64)
    x = _x()
    a, b = numgrad.exp(x), numgrad.exp(x)  # (the second past the limit: plain memory)
    assert _pool.held() - before == size
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    del a, b
    monkeypatch.setattr(_pool, "IDLE_S", 0.0)
    monkeypatch.setattr(_pool, "_TRIM_EVERY", 0.0)
    numgrad.exp(numgrad.tensor(np.ones(N)))  # (the pool's next use frees what idled...)
    assert _pool.held() - before == size  # (...and takes one again)


def test_an_output_is_a_new_view_of_exactly_its_memory():
    """What reads ``base`` for an array's storage finds the output's own memory, as with
    ``np.empty``; each output is a new object (ids and weak references are an object's)."""
    x = _x()
    first = numgrad.exp(x)
    owner = first._data.base
    assert owner is not None and owner.base is None and owner.nbytes == first._data.nbytes
    where = _address(first)
    del owner
    assert first.storage_offset() == 0 and first[10:].storage_offset() == 10
    with pytest.raises(RuntimeError, match="out of bounds for storage"):
        numgrad.as_strided(first, (N + 1,), (1,))  # (the storage is the output's, no more)
    ref = weakref.ref(first._data)
    del first
    assert ref() is None  # (the output died; its memory stays in the pool)
    second = numgrad.exp(x)
    assert _address(second) == where and second._data is not ref()


def _dirty_pool(shape):
    """Fills a pooled float64 array of ``shape`` with NaN and gives it back to the pool."""
    junk = _pool.empty(shape, np.float64)
    assert junk.base is not None  # (pooled)
    junk.fill(np.nan)


def test_reused_buffers_show_none_of_their_old_values():
    """Each pooled kernel output writes every element: zeros are filled, copies whole, the max
    pool's gradient zero where no maximum was, a concatenation and a contiguous copy complete."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((8, 8, 64, 64))  # (2 MiB of float64)
    for shape, make, expected in [
        (x.shape, lambda: numgrad.zeros(8, 8, 64, 64).numpy(), lambda: np.zeros(x.shape)),
        (x.shape, lambda: _pool.zeros(x.shape, np.float64), lambda: np.zeros(x.shape)),
        ((8, 64, 64, 8), lambda: numgrad.tensor(x).transpose(1, 3).contiguous().numpy(),
         lambda: np.ascontiguousarray(x.transpose(0, 3, 2, 1))),
        ((8, 16, 64, 64), lambda: numgrad.cat([numgrad.tensor(x), numgrad.tensor(-x)], 1).numpy(),
         lambda: np.concatenate([x, -x], 1)),
        ((64, 64, 64), lambda: numgrad.tensor(x[0, 0]).expand(64, 64, 64).clone().numpy(),
         lambda: np.broadcast_to(x[0, 0], (64, 64, 64)).copy()),
    ]:
        _dirty_pool(shape)
        np.testing.assert_array_equal(make(), expected())
    t = numgrad.tensor(x, requires_grad=True)
    _dirty_pool(x.shape)
    numgrad.nn.functional.max_pool2d(t, 2).sum().backward()
    grad = t.grad.numpy()
    assert not np.isnan(grad).any() and (grad == 1).sum() == x.size // 4
    assert ((grad == 0) | (grad == 1)).all()


def test_empty_like_keeps_the_layout():
    base = np.zeros((16, 64, 3, 4, 32))
    for a in (base[:, :, 0].transpose(0, 2, 1, 3), base.transpose(2, 0, 3, 1, 4)[0],
              np.zeros((50, 60, 70)).T, np.zeros((50, 60, 140))[:, ::2]):
        made = _pool.empty_like(a)
        assert made.base is not None  # (pooled)
        assert made.shape == a.shape and made.strides == np.empty_like(a).strides


def test_threads_get_distinct_buffers():
    xs = [_x(seed) for seed in range(4)]
    expected = [(numgrad.exp(x) - 1.0).numpy().copy() for x in xs]  # (one thread)
    results, errors = [None] * 4, []

    def work(i):
        try:
            for _ in range(5):
                out = numgrad.exp(xs[i]) - 1.0
                if not np.array_equal(out.numpy(), expected[i]):
                    errors.append(i)
            results[i] = out
        except Exception as error:  # (reported below)
            errors.append(error)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len({_address(r) for r in results}) == 4


FAULTS = """
import resource, sys
import numpy as np
sys.path.insert(0, {src!r})
from numgrad import _pool
if {adapt}:
    _pool.empty((64, 1024), np.float32)  # (a first large output: 256 KiB)
faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(40):  # (a step's outputs of 2 MiB, made, written and freed)
    a = [np.empty(1 << 19, np.float32) for _ in range(4)]
    for b in a:
        b.fill(1.0)
    del a, b
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc (Linux)")
def test_the_first_large_output_adapts_glibcs_thresholds():
    """After numgrad's first large output, glibc serves freed 2 MiB blocks again from its heap (no
    page faults); before, a step's four of them, freed together, exceed its trim threshold (twice
    the largest block freed) and are given back and faulted in anew, 512 pages each."""
    src = os.path.dirname(os.path.dirname(numgrad.__file__))
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("MALLOC_") and k != "GLIBC_TUNABLES"}
    counts = [int(subprocess.run([sys.executable, "-c", FAULTS.format(src=src, adapt=adapt)],
                                 capture_output=True, text=True, env=env, check=True)
                  .stdout.split()[-1]) for adapt in (False, True)]
    assert counts[0] > 40 * 512  # (without: faulted in anew at each step)
    assert counts[1] < 4 * 512 + 500  # (with: the first step's pages only)
