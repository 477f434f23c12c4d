"""The pool of large host buffers (numgrad/_pool.py, issue 38 item 3): a freed output's buffer
serves the next large output; a buffer any array still views is never handed out again; the pool
is bounded, gives memory back on ``numgrad.empty_cache()`` and when idle, and is thread-safe."""
import threading

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


def test_empty_cache_gives_back_every_unreferenced_buffer():
    x = _x()
    kept = numgrad.exp(x)
    numgrad.exp(x)
    numgrad.tanh(x)  # (the second's buffer again, freed before)
    assert _pool.held() == 2 * _pool._ALIGN * -(-N * 8 // _pool._ALIGN)
    numgrad.empty_cache()
    assert _pool.held() == _pool._ALIGN * -(-N * 8 // _pool._ALIGN)  # (kept's stays)
    del kept
    numgrad.empty_cache()
    assert _pool.held() == 0


def test_the_pool_is_bounded_and_frees_idle_buffers(monkeypatch):
    monkeypatch.setattr(_pool, "LIMIT", 6 << 20)  # (one buffer of N float64: 6 MiB rounded)
    x = _x()
    a, b = numgrad.exp(x), numgrad.exp(x)  # (the second past the limit: plain memory)
    assert _pool.held() == 6 << 20
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    del a, b
    monkeypatch.setattr(_pool, "IDLE_S", 0.0)
    numgrad.exp(numgrad.tensor(np.ones(N)))  # (the pool's next use frees what idled...)
    assert _pool.held() == 6 << 20  # (...and takes one again)


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
