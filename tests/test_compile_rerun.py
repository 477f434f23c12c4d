"""The re-run path of numgrad.compile (``compiler/rerun.py``): a function whose Python has effects
a replay would skip runs its Python at every call, with its kernel calls recorded against the
trace and run fused; each test compares every call with the same function run eagerly."""
import numpy as np
import pytest

import numgrad
import numgrad.nn as nn
import numgrad.nn.functional as F


@pytest.fixture(autouse=True)
def _always_rerun(monkeypatch):
    """These tests look at the re-run path itself: it is not swapped for eager where eager is
    faster (``numgrad.compiler.choose_faster``), but in the test of that choice."""
    monkeypatch.setattr(numgrad.compiler, "choose_faster", False)


def _pair(make):
    """Two copies of the same state (one for eager, one compiled), from the same seed."""
    numgrad.manual_seed(0)
    eager = make()
    numgrad.manual_seed(0)
    return eager, make()


def _batches(n, classes=None):
    rng = np.random.default_rng(1)
    for _ in range(n):
        x = numgrad.tensor(rng.standard_normal((4, 6)).astype(np.float32))
        y = numgrad.tensor(rng.integers(0, 3, 4) if classes else
                           rng.standard_normal((4, 2)).astype(np.float32))
        yield x, y


def _bits(model):
    return [p.detach().numpy().tobytes() for p in model.parameters()]


def _explain(c) -> str:
    return numgrad.compiler.explain(c)


def test_a_scheduler_stepped_inside_the_step_is_eagers_and_fused():
    def make():
        model = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 2))
        opt = numgrad.optim.Adam(model.parameters(), lr=0.05)
        return model, opt, numgrad.optim.lr_scheduler.StepLR(opt, 2, 0.5)

    (m1, o1, s1), (m2, o2, s2) = _pair(make)

    def step(model, opt, sched, x, y):
        opt.zero_grad()
        loss = F.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        sched.step()
        return loss

    compiled = numgrad.compile(lambda x, y: step(m2, o2, s2, x, y))
    for x, y in _batches(8):
        a, b = step(m1, o1, s1, x, y), compiled(x, y)
        assert a.item() == b.item() and type(b._data) is np.ndarray
        assert _bits(m1) == _bits(m2)
        assert (o1.param_groups[0]["lr"], s1.last_epoch) == (o2.param_groups[0]["lr"],
                                                              s2.last_epoch)
    text = _explain(compiled)
    assert "re-run" in text and "fused" in text and "eager" not in text.split("calls so far")[1] \
        .split(")")[0], text
    fused = int(text.split("calls so far: ")[1].split(" fused")[0])
    assert fused >= 5, text  # (the first calls trace: Adam's first step makes its state)


def test_python_effects_happen_at_every_call_and_numbers_read_through_a_dict_follow():
    (m1,), (m2,) = _pair(lambda: (nn.Linear(6, 2),))
    logs = ([], [])
    cfg = {"scale": 1.0}

    def step(model, log, x, y):
        x.requires_grad_(True)  # (an effect on an argument)
        loss = F.mse_loss(model(x), y) * cfg["scale"]
        loss.backward()
        log.append(x.grad.shape)
        return loss

    compiled = numgrad.compile(lambda x, y: step(m2, logs[1], x, y))
    for k, (x, y) in enumerate(_batches(6)):
        cfg["scale"] = 1.0 + k  # (read through a subscript: no guard can follow it)
        x2 = x.detach().clone()
        a, b = step(m1, logs[0], x, y), compiled(x2, y)
        assert a.item() == b.item()
        assert x.grad.numpy().tobytes() == x2.grad.numpy().tobytes() and x2.requires_grad
        assert [p.grad.numpy().tobytes() for p in m1.parameters()] == \
            [p.grad.numpy().tobytes() for p in m2.parameters()]
    assert logs[0] == logs[1] and len(logs[1]) == 6
    assert "re-run" in _explain(compiled)


def test_a_constant_matches_the_traces_bit_for_bit_zeros_signs_and_nans_included():
    from numgrad.compiler.rerun import _same_constant

    f32 = np.float32
    assert _same_constant(f32(1.5), f32(1.5)) and _same_constant(f32(-0.0), f32(-0.0))
    assert not _same_constant(f32(0.0), f32(-0.0)) and not _same_constant(0.0, -0.0)
    assert not _same_constant(f32(1.0), np.float64(1.0)) and not _same_constant(1.0, 1)
    nan, other_nan = np.array([0x7FC00000, 0x7FC00001], np.uint32).view(np.float32)
    assert _same_constant(nan, f32(nan)) and not _same_constant(nan, other_nan)
    log, cfg = [], {"c": 0.0}

    def f(x):
        log.append(None)  # (an effect: the re-run path)
        return (x * cfg["c"]).exp() * cfg["c"]

    compiled = numgrad.compile(f)
    x = numgrad.tensor([1.0, -2.0, 0.0])
    for c in (0.0, -0.0, -0.0, 0.0, -0.0, float("nan")):
        cfg["c"] = c
        assert np.array_equal(np.signbit(compiled(x).numpy()), np.signbit(f(x).numpy()))
    assert "re-run" in _explain(compiled)


def test_the_fast_lanes_ops_record_on_the_rerun_path_with_the_general_paths_nodes(monkeypatch):
    """While a call re-runs, the eager fast lane serves its elementwise ops (``Mode.lane``): no
    op but the sum runs its ``forward`` (the general path, ``registry.apply``), and the values,
    gradients and graph are eager's, bit for bit, from a number, a same-shape tensor, a row and a
    unary op, float32 and float64."""
    from numgrad.ops import registry

    log = []

    def f(x, w, b):
        log.append(None)  # (an effect: the re-run path)
        y = (x * 1.5 - 0.25) / 3.0 + w
        z = (-(y * w + b)).relu().exp() + x.tanh()
        z.sum().backward()
        return z, z.grad_fn.name(), z.grad_fn.next_functions[0][0].name()

    compiled = numgrad.compile(f)
    rng = np.random.default_rng(0)
    for k, dtype in enumerate((np.float64, np.float32, np.float32)):
        data = [rng.standard_normal(s).astype(dtype) for s in ((3, 4), (3, 4), (4,))]
        want_in = [numgrad.tensor(d, requires_grad=True) for d in data]
        got_in = [numgrad.tensor(d, requires_grad=True) for d in data]
        want = f(*want_in)
        records = []  # (the ops whose forward ran with grad on: the backward's formulas not)
        ops = [registry.REGISTRY[name] for name in
               ("mul", "sub", "div", "add", "neg", "relu", "exp", "tanh", "sum")]
        kept = [op.__dict__.get("forward") for op in ops]
        for op in ops:
            op.forward = staticmethod(lambda *a, _f=op.forward, _n=op.name, **k: (
                numgrad.is_grad_enabled() and records.append(_n)) or _f(*a, **k))
        try:
            got = compiled(*got_in)
        finally:
            for op, forward in zip(ops, kept):
                if forward is None:
                    del op.forward
                else:
                    op.forward = forward
        assert got[0].detach().numpy().tobytes() == want[0].detach().numpy().tobytes()
        assert got[1:] == want[1:]
        for g, w in zip(got_in, want_in):
            assert g.grad.numpy().tobytes() == w.grad.numpy().tobytes()
        if k == 2:  # (the float32 key's second call: re-run; its first traced it)
            assert records == ["sum"], f"ops off the lane: {records}"
    assert "re-run" in _explain(compiled)


def test_a_tensor_swapped_behind_a_subscript_is_read_where_the_call_finds_it():
    state = {"w": numgrad.ones(3)}
    seen = []

    def f(x):
        seen.append(1)
        return (x * state["w"]).sum()

    compiled = numgrad.compile(f)
    x = numgrad.arange(3.0)
    assert compiled(x).item() == 3.0
    assert compiled(x).item() == 3.0
    state["w"] = numgrad.full((3,), 2.0)  # (another tensor of the same layout: it is the input)
    assert compiled(x).item() == 6.0
    state["w"] = numgrad.full((1,), 3.0)  # (another layout: the recorded call does not apply,
    assert compiled(x).item() == 9.0      # and the function is traced again)
    assert compiled(x).item() == 9.0 and len(seen) == 5
    assert compiled.traces == 2 and "3 fused" in _explain(compiled)


def test_an_index_out_of_range_raises_after_eagers_effects_only():
    def make():
        model = nn.Linear(6, 2)
        return model, numgrad.optim.SGD(model.parameters(), lr=0.1)

    (m1, o1), (m2, o2) = _pair(make)
    after = ([], [])

    def step(model, opt, log, x, y, index):
        opt.zero_grad()
        F.mse_loss(model(x), y).backward()
        opt.step()
        picked = model.weight.detach()[index]  # (an index kernel: it may raise)
        log.append(1)
        return picked.sum()

    compiled = numgrad.compile(lambda x, y, i: step(m2, o2, after[1], x, y, i))
    batches = list(_batches(5))
    index = numgrad.tensor([0, 1])
    for x, y in batches[:3]:
        assert step(m1, o1, after[0], x, y, index).item() == compiled(x, y, index).item()
    bad = numgrad.tensor([0, 7])
    x, y = batches[3]
    with pytest.raises(IndexError) as eager_error:
        step(m1, o1, after[0], x, y, bad)
    with pytest.raises(IndexError) as compiled_error:
        compiled(x, y, bad)
    assert str(eager_error.value) == str(compiled_error.value)
    assert _bits(m1) == _bits(m2) and after[0] == after[1] == [1, 1, 1]
    assert [p.grad.numpy().tobytes() for p in m1.parameters()] == \
        [p.grad.numpy().tobytes() for p in m2.parameters()]
    x, y = batches[4]
    assert step(m1, o1, after[0], x, y, index).item() == compiled(x, y, index).item()
    assert _bits(m1) == _bits(m2)
    assert "3 fused, 1 raised" in _explain(compiled)


def test_a_loss_logged_inside_the_step_and_a_branch_on_a_value():
    (m1,), (m2,) = _pair(lambda: (nn.Linear(6, 2),))
    logs = ([], [])

    def step(model, log, x, y):
        loss = F.mse_loss(model(x), y)
        log.append(loss.item())  # (a read: what is pending runs first)
        if loss.item() > 1.0:  # (a branch on it: another path leaves the trace)
            loss = loss * 0.5
        loss.backward()
        return loss.detach()

    compiled = numgrad.compile(lambda x, y: step(m2, logs[1], x, y))
    for x, y in _batches(8):
        assert step(m1, logs[0], x, y).item() == compiled(x, y).item()
        assert [p.grad.numpy().tobytes() for p in m1.parameters()] == \
            [p.grad.numpy().tobytes() for p in m2.parameters()]
    assert logs[0] == logs[1]
    text = _explain(compiled)
    assert "key 0: re-run" in text and "fused" in text, text


def test_threads_calling_one_rerun_function_get_their_own_results():
    import threading

    seen = []

    def f(x):
        seen.append(1)
        return (x.tanh() * 3 + 1).sum()

    compiled = numgrad.compile(f)
    inputs = [numgrad.tensor(np.random.default_rng(k).standard_normal(50)) for k in range(8)]
    want = [f(x).item() for x in inputs]
    got = [None] * len(inputs)

    def work(k):
        for _ in range(5):
            got[k] = compiled(inputs[k]).item()

    threads = [threading.Thread(target=work, args=(k,)) for k in range(len(inputs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert got == want
    assert "re-run" in _explain(compiled)


def test_the_faster_of_rerun_and_eager_is_kept_with_eagers_results(monkeypatch):
    monkeypatch.setattr(numgrad.compiler, "choose_faster", True)
    log = []

    def f(x):
        log.append(1)
        return (x * 2 + 1).tanh().sum()

    compiled = numgrad.compile(f)
    for k in range(12):  # (a trace, calls timed each way, then the faster one's)
        x = numgrad.tensor(np.random.default_rng(k).standard_normal(40))
        assert compiled(x).item() == f(x).item()
    assert len(log) == 24
    text = _explain(compiled)
    assert ("runs re-run, the faster here" in text or "runs eagerly, the faster here" in text), \
        text


def test_results_kept_from_earlier_calls_keep_their_values():
    """A re-run call hands out again the small pending arrays that no one held at the end of the
    last call (``Plan.spare``): what a caller keeps, a tensor or a view of one, is never among
    them, and later calls leave its values as they were."""
    kept = ([], [])

    def f(x, log):
        y = x * 2.0 + 1.0
        z = (y * y).tanh()
        loss = (z * 0.5).sum()
        loss.backward()
        log.append((y.detach(), z.detach()[1:], (z * 3.0).detach(), x.grad))  # (a view too)
        return loss.detach()

    compiled = numgrad.compile(lambda x: f(x, kept[1]))
    results = ([], [])
    for k in range(6):
        x = numgrad.tensor(np.random.default_rng(k).standard_normal(7), requires_grad=True)
        results[0].append(f(x, kept[0]))
        results[1].append(compiled(x))
    assert "key 0: re-run" in _explain(compiled)
    for (e, c), (ke, kc) in zip(zip(*results), zip(*kept)):  # (read after every call ran)
        assert e.item() == c.item()
        for a, b in zip(ke, kc):
            assert a.detach().numpy().tobytes() == b.detach().numpy().tobytes()
