"""The worker threads' hand-off (kernels/cpu/_workers.py): after a job a helper spins a while on a
flag, without the GIL, before it sleeps on its lock, and the thread that started the job spins
the same way on the helper's "done" flag; the jobs' results and errors are the same whether a
helper spins, sleeps, or no spin kernel is there."""
import threading
import time

import numpy as np
import pytest

from numgrad.kernels.cpu import _spin, _workers


def test_the_spin_sees_a_flag_set_by_another_thread_and_gives_up_after_its_rounds():
    flags = np.zeros(2, np.int64)
    assert not _spin.wait(flags, 0, 10)  # (not set: it returns after its rounds)
    seen = []
    waiter = threading.Thread(target=lambda: seen.append(_spin.wait(flags, 1, 10 ** 9)))
    waiter.start()  # (10**9 rounds are minutes: only the flag ends it)
    time.sleep(0.05)
    assert waiter.is_alive()  # (still spinning, and without the GIL: this thread runs)
    flags[1] = 1
    waiter.join(timeout=10)
    assert not waiter.is_alive() and seen == [True]


@pytest.mark.parametrize("rounds, kernel", [(10 ** 6, "spin"), (0, "spin"), (10 ** 6, None)])
def test_jobs_run_every_item_and_hand_on_errors_however_the_helpers_wait(monkeypatch, rounds,
                                                                        kernel):
    monkeypatch.setattr(_workers, "SPIN_ROUNDS", rounds)
    if kernel is None:
        monkeypatch.setattr(_workers, "_spin_wait", False)
    else:
        _workers._spin_setup()
    for gap in (0.0, 0.01):  # (the next job while the helper spins, and after it sleeps again)
        out = np.zeros(64)
        busy = np.random.default_rng(0).standard_normal((64, 64))

        def work(item, slot):
            out[item] = float(np.linalg.norm(busy @ busy[item]))  # (BLAS: the GIL released)

        _workers.run(range(64), work, 2)
        np.testing.assert_allclose(out, np.linalg.norm(busy @ busy.T, axis=0), rtol=1e-12)
        time.sleep(gap)

    def failing(item, slot):
        if slot == 1 or item == 63:
            raise ValueError(f"item {item}")

    with pytest.raises(ValueError, match="item"):
        _workers.run(range(64), failing, 2)
    done = []
    _workers.run(range(8), lambda item, slot: done.append(item), 2)  # (the pool still works)
    assert sorted(done) == list(range(8))


def _product_cases():
    rng = np.random.default_rng(1)
    row32 = rng.standard_normal(300).astype(np.float32)
    row32[:3] = [np.nan, np.inf, -np.inf]
    return [(rng.standard_normal((600, 64)).astype(np.float32),  # (blocks of rows)
             rng.standard_normal((64, 300)).astype(np.float32), row32),
            (rng.standard_normal((40, 700)),  # (blocks of columns, float64)
             rng.standard_normal((700, 300)), row32.astype(np.float64)),
            (rng.standard_normal((512, 64)).astype(np.float32),
             rng.standard_normal((300, 64)).astype(np.float32).T, row32),  # (b transposed)
            (rng.standard_normal((40, 700)).astype(np.float32),  # (deeper than one of GEMM's
             rng.standard_normal((700, 300)).astype(np.float32), row32)]  # blocks, float32)


def test_a_product_posted_to_a_spinning_helper_gives_the_python_hand_offs_bits(monkeypatch):
    # A split product's blocks go to the helper threads without the GIL where they spin
    # (_spin.serve, _workers.post_products): the same GEMM calls (float32 blocks start from
    # the bias row, GEMM's beta 1) as the Python hand-off's and a busy machine's one thread,
    # so the same bits, whichever thread computes which block.
    from numgrad.kernels import cpu as K
    from numgrad.kernels.cpu import linalg

    monkeypatch.setattr(_workers, "SPIN_ROUNDS", 10 ** 6)  # (the helpers keep spinning)
    monkeypatch.setattr(_workers, "threads_for", lambda parts, large: min(2, parts))
    posted = []
    post = _workers.post_products

    def counting(blocks):
        done = post(blocks)
        posted.append(done)
        return done

    for a, b, row in _product_cases():
        a_t, b_t = np.ascontiguousarray(a.T), np.ascontiguousarray(b.T)
        monkeypatch.setattr(_workers, "post_products", lambda blocks: False)
        want = K.matmul(a, b), K.matmul_add_row(a, b, row), K.matmul(a_t, b_t, True, True)
        exact = a.astype(np.float64) @ b.astype(np.float64) + row
        np.testing.assert_allclose(want[1], exact, rtol=1e-4, atol=1e-3)
        monkeypatch.setattr(_workers, "threads_for", lambda parts, large: 1)  # (busy: here)
        alone = K.matmul(a, b), K.matmul_add_row(a, b, row), K.matmul(a_t, b_t, True, True)
        assert all(g.tobytes() == w.tobytes() for g, w in zip(alone, want))
        monkeypatch.setattr(_workers, "threads_for", lambda parts, large: min(2, parts))
        monkeypatch.setattr(_workers, "post_products", counting)
        for _ in range(3):
            _workers.run(range(4), lambda item, slot: None, 2)  # (a helper's job: it spins)
            got = K.matmul(a, b), K.matmul_add_row(a, b, row), K.matmul(a_t, b_t, True, True)
            for g, w in zip(got, want):
                assert g.dtype == w.dtype and g.tobytes() == w.tobytes()
        assert linalg._split_size(a, b) is not None
    if _workers._run_split:  # (NumPy's OpenBLAS: the products were posted)
        assert sum(posted) >= len(posted) // 2, posted


def test_a_posted_product_no_helper_takes_is_computed_by_the_thread_that_posted_it():
    from numgrad.kernels.cpu import linalg

    if not _workers._run_split:
        _workers._helpers(1)
    if not _workers._run_split:
        pytest.skip("NumPy's BLAS cannot be called from Numba here")
    a, b, row = _product_cases()[0]
    want = a @ b + row
    out = np.empty_like(want)
    jobs = np.zeros((2, _spin.JOB_FIELDS), np.int64)  # (rows no helper serves)
    mine = np.zeros(_spin.JOB_FIELDS, np.int64)
    blocks = linalg._blocks(a, b, out, row, 0, [(0, 200), (200, 400), (400, 600)])
    mine[_spin.ITEM:_spin.ROW + 1] = blocks[0]
    for h in range(2):
        jobs[h, _spin.ITEM:_spin.ROW + 1] = blocks[h + 1]
    _spin.run_split(jobs, 2, mine)
    assert (jobs[:, _spin.STATE] == _spin.IDLE).all()
    np.testing.assert_array_equal(out, (a @ b) + row)
    assert out.tobytes() == np.concatenate([a[s:e] @ b + row for s, e in
                                            [(0, 200), (200, 400), (400, 600)]]).tobytes()
    assert np.isnan(out[:, 0]).all() and np.isposinf(out[:, 1]).all()


def test_serve_computes_the_products_posted_to_it_until_a_python_job_arrives():
    if _spin.serve is None:
        pytest.skip("no sched_yield")
    from numgrad.kernels.cpu import blas, linalg

    if not blas.AVAILABLE:
        pytest.skip("NumPy's BLAS cannot be called from Numba here")
    a, b, row = _product_cases()[0]
    flags = np.zeros(2, np.int64)
    jobs = np.zeros((1, _spin.JOB_FIELDS), np.int64)
    mine = np.zeros(_spin.JOB_FIELDS, np.int64)
    returned = []
    helper = threading.Thread(target=lambda: returned.append(_spin.serve(flags, jobs[0], 10 ** 9)))
    helper.start()
    for _ in range(30000):  # (until it spins: its first call may compile the kernel)
        if jobs[0, _spin.SPINNING]:
            break
        time.sleep(0.001)
    out = np.empty((a.shape[0], b.shape[1]), np.float32)
    blocks = linalg._blocks(a, b, out, None, 1, [(0, 150), (150, 300)])
    mine[_spin.ITEM:_spin.ROW + 1] = blocks[0]
    jobs[0, _spin.ITEM:_spin.ROW + 1] = blocks[1]
    _spin.run_split(jobs, 1, mine)  # (the helper takes its block, or this thread does)
    assert out.tobytes() == np.concatenate([a @ b[:, :150], a @ b[:, 150:]], axis=1).tobytes()
    assert jobs[0, _spin.STATE] == _spin.IDLE
    assert helper.is_alive() and jobs[0, _spin.SPINNING] == 1  # (still serving)
    flags[0] = 1
    helper.join(timeout=10)
    assert not helper.is_alive() and returned == [True] and jobs[0, _spin.SPINNING] == 0


def test_products_from_several_threads_at_once_keep_their_bits(monkeypatch):
    # Four threads' products at once: one of them posts its blocks or hands them to the
    # helpers as a Python job, the others compute theirs alone; every result is the same bits.
    # (BLAS's one thread is counted over all threads' blocks, _threads.one_blas_thread: a block
    # that restored BLAS's two threads while another thread's product ran gave float64 sums
    # 1 ulp off, 2-5 of 240 products.)
    from numgrad.kernels import cpu as K

    monkeypatch.setattr(_workers, "threads_for", lambda parts, large: min(2, parts))
    cases = _product_cases()
    want = [(K.matmul(a, b), K.matmul_add_row(a, b, row)) for a, b, row in cases]
    errors = []

    def worker(seed):
        try:
            for i in range(60):
                j = (seed + i) % len(cases)
                a, b, row = cases[j]
                got = K.matmul(a, b), K.matmul_add_row(a, b, row)
                if any(g.tobytes() != w.tobytes() for g, w in zip(got, want[j])):
                    errors.append((seed, i))
        except BaseException as error:  # pragma: no cover (reported below)
            errors.append(error)

    threads = [threading.Thread(target=worker, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads) and errors == []


def test_blas_stays_on_one_thread_until_the_last_open_block_of_any_thread_closes():
    from numgrad import _threads

    getter = _threads._blas_getter if _threads._blas_set_num_threads() else None
    if not getter:
        pytest.skip("no BLAS thread setting here")
    before = getter()
    _threads.set_num_threads(2)
    try:
        first, second = _threads.one_blas_thread(), _threads.one_blas_thread()
        first.__enter__()
        opened = threading.Event()
        closing = threading.Event()

        def other():
            with second:
                opened.set()
                closing.wait(10)

        thread = threading.Thread(target=other)
        thread.start()
        opened.wait(10)
        first.__exit__(None, None, None)  # (the first block closes, the other thread's is open)
        assert getter() == 1
        _threads.set_num_threads(2)  # (taken once the last block closes)
        assert getter() == 1
        closing.set()
        thread.join(10)
        assert getter() == 2
    finally:
        _threads.set_num_threads(before)
