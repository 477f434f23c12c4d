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
