"""A compiled training step records the optimizer's fused update as one call of the kernel eager
runs (``kernels/cpu/optim.py``: ``adam_step``, ``sgd_step``), not the op-by-op update: its
parameters, state and version counts are eager's, bit for bit, in the one-by-one driver and in
a whole program (``compiler/whole.py``), and a scheduler's new learning rate is a number of the
program on the re-run path."""
import numpy as np
import pytest

import numgrad
from numgrad import nn
from numgrad.kernels.cpu import optim as kernels

from test_compile import dispatches

OPTIMIZERS = {
    "adam_l2_amsgrad_maximize": lambda p: numgrad.optim.Adam(
        p, lr=1e-2, betas=(0.8, 0.99), weight_decay=0.1, amsgrad=True, maximize=True),
    "adamw": lambda p: numgrad.optim.AdamW(p, lr=3e-3),
    "sgd_nesterov_decay": lambda p: numgrad.optim.SGD(p, lr=0.1, momentum=0.9, nesterov=True,
                                                      weight_decay=1e-3),
    "sgd_dampening_maximize": lambda p: numgrad.optim.SGD(p, lr=0.1, momentum=0.9,
                                                          dampening=0.5, maximize=True),
}


def _run(make, compiled: bool, hidden: int, steps: int = 5):
    """``steps`` training steps of a two-layer model; the losses, and the bits of the
    parameters, the optimizer's state and the version counters afterwards."""
    numgrad.manual_seed(0)
    model = nn.Sequential(nn.Linear(12, hidden), nn.Tanh(), nn.Linear(hidden, 3))
    opt = make(model.parameters())
    x, y = numgrad.randn(16, 12), numgrad.randn(16, 3)

    def step():
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        return loss

    run = numgrad.compile(step) if compiled else step
    losses = [run().item() for _ in range(steps)]
    params = list(model.parameters())
    state = [{k: v.numpy().tobytes() for k, v in opt.state[p].items()} for p in params]
    versions = [p._version for p in params] + [
        v._version for p in params for v in opt.state[p].values()]
    return losses, [p.detach().numpy().tobytes() for p in params], state, versions, run


@pytest.mark.parametrize("name", OPTIMIZERS)
def test_a_small_step_is_one_numba_call_and_eagers_to_the_bit(name):
    *eager, _ = _run(OPTIMIZERS[name], False, 8)
    *ours, run = _run(OPTIMIZERS[name], True, 8)
    assert ours == eager
    counts = dispatches(run)  # (the whole step, its update included, in one Numba function)
    assert counts["numba"] == 1 and counts["registry"] == 0, counts


@pytest.mark.parametrize("name", ["adam_l2_amsgrad_maximize", "sgd_nesterov_decay"])
def test_a_larger_step_calls_the_fused_kernel_once_and_is_eagers_to_the_bit(name, monkeypatch):
    # (products larger than one BLAS thread's: the driver calls the steps one by one)
    *eager, _ = _run(OPTIMIZERS[name], False, 1500)
    *ours, run = _run(OPTIMIZERS[name], True, 1500)
    assert ours == eager
    assert "replayed" in numgrad.compiler.explain(run)
    kernel = "adam_step" if name.startswith("adam") else "sgd_step"
    real, calls = getattr(kernels, kernel), []
    monkeypatch.setattr(kernels, kernel, lambda *a: calls.append(len(a[0])) or real(*a))
    run()
    assert calls == [4]  # (one call of the eager kernel, its four parameters)


def test_a_learning_rate_changed_at_every_call_is_a_number_of_the_program():
    def make():
        numgrad.manual_seed(0)
        model = nn.Linear(6, 2)
        opt = numgrad.optim.SGD(model.parameters(), lr=0.5, momentum=0.9)
        return model, opt, numgrad.optim.lr_scheduler.ExponentialLR(opt, 0.7)

    x, y = numgrad.randn(5, 6), numgrad.randn(5, 2)
    results = []
    for compiled in (False, True):
        model, opt, sched = make()

        def step():
            opt.zero_grad()
            loss = ((model(x) - y) ** 2).sum()
            loss.backward()
            opt.step()
            sched.step()
            return loss

        run = numgrad.compile(step) if compiled else step
        losses = [run().item() for _ in range(6)]
        results.append((losses, [p.detach().numpy().tobytes() for p in model.parameters()],
                        opt.param_groups[0]["lr"]))
    assert results[0] == results[1]
    # (the learning rate changes at every call: the trace is kept, on the re-run path, where
    # it is a number of the program, not traced again at each call)
    text = numgrad.compiler.explain(run)
    assert "1 kept" in text and "re-run" in text, text
    assert int(text.split("calls so far: ")[1].split(" fused")[0]) >= 3, text  # (of 4)
