"""numgrad.compile on CUDA tensors: the trace records the CUDA kernels (``registry._cuda_kernels``
swapped for a recording module while it runs), and a replay calls them one by one, without the op
registry or the autograd engine, leaving eager's effects. Runs of elementwise calls are fused:
the values only one loop reads are computed in it, and the loops over one shape share a kernel
where no thread could read what another writes (``lower.segment_source``); sums, matrix products and losses stay the eager kernels' calls. A
read of a value (``.item()``, printing) breaks the trace; tensors of both devices run eagerly.
The fused kernels' values equal eager's in the simulator; on a GPU, NVVM may contract a product
and a sum of two fused ops into one FMA (numba-cuda's default), as it may inside one eager
kernel."""
import warnings

import numpy as np
import pytest

import numgrad
from numgrad import nn
from numgrad.ops import registry


def _step(x, w):
    def step():
        loss = ((x * w).tanh() * 2).sum()
        loss.backward()
        return loss

    return step


def _pair(device="cuda"):
    data = np.linspace(-1, 1, 6)
    x = numgrad.tensor(data, device=device)
    w = numgrad.tensor(data[::-1].copy(), device=device, requires_grad=True)
    return x, w


def _no_registry(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a replay called the op registry")

    monkeypatch.setattr(registry, "apply", refuse)


def _launches(monkeypatch) -> list:
    """The modules of the kernels launched from now on (the simulator's kernel calls)."""
    from numba.cuda.simulator import kernel as simulated

    modules = []
    real = simulated.FakeCUDAKernel.__call__

    def call(self, *args):
        if not (self._device or simulated._kernel_context):  # (a launch, not a device call)
            modules.append(self.fn.__module__)
        return real(self, *args)

    monkeypatch.setattr(simulated.FakeCUDAKernel, "__call__", call)
    return modules


def test_a_cuda_step_replays_fused_kernels_with_eager_results(monkeypatch):
    x, w = _pair()
    compiled = numgrad.compile(_step(x, w))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (no fallback warning)
        losses = [compiled().item() for _ in range(2)]  # (traced: without .grad, then with it)
        replay = compiled._entries[-1][1]
        _no_registry(monkeypatch)
        fused = _launches(monkeypatch)
        losses += [compiled().item() for _ in range(2)]
    monkeypatch.undo()
    source = replay.__globals__["__replay_source__"]
    assert compiled.traces == 2 and "SEG" in source and "K.unary(" not in source
    xe, we = _pair()
    eager = [_step(xe, we)().item() for _ in range(3)]
    launched = _launches(monkeypatch)
    eager.append(_step(xe, we)().item())
    monkeypatch.undo()
    assert losses == eager
    # per step eager launches 10 kernels (mul, tanh, *2, the sum; the seed's fill and its
    # broadcast copy, the three backward products, the accumulation into .grad); a replay 3:
    # the sum, and 2 fused kernels (tanh(x * w) and its double; the gradient, from the seed, and
    # its accumulation)
    programs = [m for m in fused if m.startswith("numgrad.kernels.generated.program_")]
    assert len(fused) == 2 * 3 and len(programs) == 2 * 2, fused
    assert len(launched) == 10 and not any("generated.program_" in m for m in launched)
    np.testing.assert_array_equal(w.grad.cpu().numpy(), we.grad.cpu().numpy())
    assert w.grad.is_cuda and w.grad._version == we.grad._version


def _sgd(params):
    return numgrad.optim.SGD(params, lr=0.1, momentum=0.9)


def _adam(params):
    return numgrad.optim.Adam(params, lr=0.01)


def _training(device="cuda", optimizer=_sgd, dropout=False):
    numgrad.manual_seed(0)
    layers = [nn.Linear(4, 5), nn.ReLU()] + ([nn.Dropout(0.5)] if dropout else [])
    model = nn.Sequential(*layers, nn.Linear(5, 3)).double().to(device)
    opt = optimizer(model.parameters())
    rng = np.random.default_rng(0)
    x = numgrad.tensor(rng.standard_normal((6, 4)), device=device)
    y = numgrad.tensor(rng.integers(0, 3, 6), device=device)

    def step():
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    return model, opt, step


@pytest.mark.parametrize("optimizer", [_sgd, _adam], ids=["sgd-momentum", "adam"])
def test_a_cuda_training_step_equals_eager(monkeypatch, optimizer):
    model, opt, step = _training(optimizer=optimizer)
    compiled = numgrad.compile(step)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (no fallback: Adam's step count stays on the GPU)
        losses = [compiled().item() for _ in range(2)]  # (the first step makes the state)
        _no_registry(monkeypatch)
        losses += [compiled().item() for _ in range(3)]
    monkeypatch.undo()
    assert compiled.traces == 2 and len(compiled._entries) == 1
    eager_model, eager_opt, eager_step = _training(optimizer=optimizer)
    assert losses == [eager_step().item() for _ in range(5)]
    for p, q in zip(model.parameters(), eager_model.parameters()):
        np.testing.assert_array_equal(p.detach().cpu().numpy(), q.detach().cpu().numpy())
        for key, value in opt.state[p].items():
            np.testing.assert_array_equal(value.cpu().numpy(),
                                          eager_opt.state[q][key].cpu().numpy())


def test_a_dropout_step_on_cuda_compiles_with_eager_masks(monkeypatch):
    """Dropout on CUDA draws with the CUDA Philox kernels (``kernels/cuda/philox.py``), which a
    trace records: the step replays fused, without the registry, draws eager's masks from the
    same seed and leaves the generator where eager leaves it, over 20 steps."""
    def run(compiled: bool):
        model, _, step = _training(dropout=True)
        fn = numgrad.compile(step) if compiled else step
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # (no eager fallback)
            losses = [fn().item() for _ in range(2)]
            if compiled:
                _no_registry(monkeypatch)
            losses += [fn().item() for _ in range(18)]
        monkeypatch.undo()
        if compiled:
            assert "replayed as a fused program" in numgrad.compiler.explain(fn)
        return losses, model, numgrad.get_rng_state()

    (got, model, state), (want, eager_model, eager_state) = run(True), run(False)
    assert got == want
    np.testing.assert_array_equal(state.numpy(), eager_state.numpy())
    for p, q in zip(model.parameters(), eager_model.parameters()):
        np.testing.assert_array_equal(p.detach().cpu().numpy(), q.detach().cpu().numpy())


def test_a_new_shape_traces_again():
    w = numgrad.ones(3, device="cuda")
    compiled = numgrad.compile(lambda x: (x * w).sum())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for n in (4, 4, 5, 5):
            x = numgrad.ones(n, 3, device="cuda")
            assert compiled(x).item() == 3 * n
    assert compiled.traces == 2 and len(compiled._entries) == 2


def test_a_returned_graph_on_cuda_runs_eagerly():
    """(Its backward would run outside the compiled function: traced on the CPU only, so far.)"""
    x, w = _pair()
    compiled = numgrad.compile(lambda: (x * w).sum())
    with pytest.warns(RuntimeWarning, match="graph is still alive, on CUDA"):
        loss = compiled()
    loss.backward()
    np.testing.assert_array_equal(w.grad.cpu().numpy(), x.cpu().numpy())


def test_a_value_read_on_cuda_runs_eagerly_and_breaks_a_full_graph():
    x, w = _pair()

    def step():
        loss = (x * w).sum()
        if loss.item() > 0:  # (Python control flow on a value: a replay could take another way)
            loss = loss * 2
        return loss

    compiled = numgrad.compile(step)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        values = [compiled().item() for _ in range(2)]
    messages = [str(c.message) for c in caught if issubclass(c.category, RuntimeWarning)]
    # (a value read is not a break but needs the re-run path, which records CPU kernels only:
    # this step, whose result's graph is alive on CUDA, runs eagerly, with one warning)
    assert len(messages) == 1 and "eagerly" in messages[0]
    assert values == [step().item()] * 2
    with pytest.raises(numgrad.compiler.GraphBreak, match=r"Tensor.item\(\)"):
        numgrad.compile(step, fullgraph=True)()


def test_a_step_on_both_devices_runs_eagerly_with_one_warning():
    x, _ = _pair()
    _, w = _pair("cpu")
    compiled = numgrad.compile(lambda: (x.cpu() * w).sum())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        values = [compiled().item() for _ in range(3)]
    messages = [str(c.message) for c in caught if issubclass(c.category, RuntimeWarning)]
    assert len(messages) == 1 and messages[0].endswith(
        "<lambda> eagerly: it cannot trace a step on both CPU and CUDA tensors")
    assert values == [(x.cpu() * w).sum().item()] * 3 and compiled.traces == 1
    with pytest.raises(numgrad.compiler.GraphBreak, match="both CPU and CUDA"):
        numgrad.compile(lambda: (x.cpu() * w).sum(), fullgraph=True)()


def test_a_value_read_at_other_positions_is_written_by_an_earlier_kernel(monkeypatch):
    """``a`` is stored, and its transpose read in the loop over the same shape: in one kernel a
    thread could read an element that another has not written yet, so ``a`` gets a kernel of its
    own; ``a + 1`` (read where it is written) shares it."""
    x = numgrad.tensor(np.arange(9.0).reshape(3, 3), device="cuda")

    def step():
        a = x * 2
        return (a.t() * a, a + 1)

    compiled = numgrad.compile(step)
    compiled()
    launches = _launches(monkeypatch)
    got = compiled()
    monkeypatch.undo()
    assert len(launches) == 2 and all("generated.program_" in m for m in launches)
    a = np.arange(9.0).reshape(3, 3) * 2
    np.testing.assert_array_equal(got[0].cpu().numpy(), a.T * a)
    np.testing.assert_array_equal(got[1].cpu().numpy(), a + 1)


def test_a_step_that_makes_its_tensors_on_cuda_is_traced_there(monkeypatch):
    """The seed walkthrough with ``device="cuda"``: it reads no tensor, so the trace starts on
    the CPU's kernels and moves to CUDA's at its first op (nothing recorded yet); a step that
    has computed on the CPU and then makes a CUDA tensor breaks instead."""
    def seed():
        x = numgrad.ones(2, 2, requires_grad=True, device="cuda")
        out = ((x + 2) * (x + 2) * 3).mean()
        out.backward()
        return x.grad

    compiled = numgrad.compile(seed, fullgraph=True)
    compiled()
    _no_registry(monkeypatch)
    grad = compiled()
    monkeypatch.undo()
    assert grad.is_cuda and compiled.traces == 1
    np.testing.assert_array_equal(grad.cpu().numpy(), seed().cpu().numpy())

    def mixed():
        return (numgrad.ones(2) * 2).sum() + numgrad.ones((), device="cuda").cpu()

    with pytest.raises(numgrad.compiler.GraphBreak,
                       match="a CUDA tensor made in a step that computes on the CPU"):
        numgrad.compile(mixed, fullgraph=True)()


def test_hard_inputs_fuse_with_eager_values_and_dtypes():
    """NaN, ±inf, -0.0 and a tiny float32, int64 near its limits, a 0-d and an empty tensor, a
    transposed view, a broadcast bias, comparisons, ``where``, a cast and host numbers, fused on
    CUDA: the same values (bit for bit, NaN included), dtypes and shapes as eager."""
    vals = np.array([[0.5, -0.0, np.nan, np.inf], [-np.inf, 1.5, -2.0, 3.0],
                     [0.0, 7.0, -1e-30, 2.0]], np.float32)
    x = numgrad.tensor(vals, device="cuda")
    xt = numgrad.tensor(vals.T.copy(), device="cuda").t()
    n = numgrad.tensor(np.array([3, -7, 2**62, -2**63 + 1]), device="cuda")
    s = numgrad.tensor(np.float32(2.5), device="cuda")
    e = numgrad.zeros(0, 4, device="cuda")
    b = numgrad.tensor(np.array([1.0, -1.0, 0.5, 2.0], np.float32), device="cuda")

    def step():
        y = (x * xt).exp().clamp(max=10.0) + b
        m = numgrad.where(x > 0, y, -y) * s
        k = (n * 3 + 1) // 2
        z = (e * 2 + 1).tanh()
        c = (x == x).to(numgrad.float32) + (x.abs() - 1).sign()
        return m, k, z, c, (s * s - 1).sqrt()

    compiled = numgrad.compile(step, fullgraph=True)
    compiled()
    got = compiled()
    assert "SEG" in compiled._entries[-1][1].__globals__["__replay_source__"]
    for ours, eager in zip(got, step()):
        assert ours.dtype == eager.dtype and ours.shape == eager.shape and ours.is_cuda
        np.testing.assert_array_equal(ours.cpu().numpy(), eager.cpu().numpy())
