"""numgrad.compile of a function (or module) that returns tensors whose graph is alive: the
caller runs their backward, through one ``CompiledFunctionBackward`` node that replays the
recorded backward (issue 13: ``torch.compile(model)``, then ``loss.backward()`` outside)."""
import warnings

import numpy as np
import pytest

import numgrad
from numgrad.compiler import GraphBreak

nn = numgrad.nn


def _model(seed=0, dtype=numgrad.float64):
    numgrad.manual_seed(seed)
    return nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 3)).to(dtype)


def _grads(model, *tensors):
    return [p.grad.numpy().copy() for p in model.parameters()] + \
        [t.grad.numpy().copy() for t in tensors]


@pytest.fixture(autouse=True)
def _no_fallback():
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # a fallback to eager fails the test
        yield


def test_a_compiled_module_returns_a_live_graph_whose_backward_equals_eagers():
    eager, model = _model(), _model()
    compiled = numgrad.compile(model)
    assert type(compiled).__name__ == "OptimizedModule" and compiled._orig_mod is model
    assert list(compiled.state_dict()) == [f"_orig_mod.{k}" for k in model.state_dict()]
    assert compiled.append.__self__ is model  # (other attributes come from the wrapped module)
    rng = np.random.default_rng(0)
    for call in range(4):
        x = rng.standard_normal((5, 4))
        want = eager(numgrad.tensor(x))
        got = compiled(numgrad.tensor(x))
        np.testing.assert_array_equal(got.detach().numpy(), want.detach().numpy())
        want.sum().backward()
        got.sum().backward()
        for a, b in zip(_grads(model), _grads(eager)):  # (accumulated over the calls)
            np.testing.assert_allclose(a, b, rtol=1e-13, atol=0)
    assert got.grad_fn.name() == "CompiledFunctionBackward"
    assert compiled._compiled_forward.traces == 2  # (the first backward gave .grad: a new key)


def test_module_compile_in_place_and_the_optimizer_step_outside():
    eager, model = _model(1), _model(1)
    model.compile()
    opts = [numgrad.optim.Adam(m.parameters(), lr=1e-2) for m in (eager, model)]
    rng = np.random.default_rng(1)
    for step in range(6):
        x, y = rng.standard_normal((6, 4)), numgrad.tensor(rng.integers(0, 3, 6))
        losses = []
        for m, opt in zip((eager, model), opts):
            opt.zero_grad()
            loss = nn.functional.cross_entropy(m(numgrad.tensor(x)), y)
            loss.backward()
            opt.step()
            losses.append(loss.item())
        assert abs(losses[0] - losses[1]) <= 1e-12
    for a, b in zip(model.parameters(), eager.parameters()):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=0, atol=1e-12)


def test_inputs_with_a_history_and_several_outputs():
    """The gradient flows on into the history of an argument made outside; each output's
    gradient reaches the one node."""
    model = _model(2)
    w = numgrad.randn(5, 4, dtype=numgrad.float64, requires_grad=True)

    def f(x):
        y = model(x)
        return y.sum(), y * 2, y.detach()

    compiled = numgrad.compile(f)
    results = []
    for run in (f, compiled, compiled, compiled):
        w.grad = None
        model.zero_grad()
        a, b, c = run(w * 1.5)
        assert not c.requires_grad
        (a + (b * b).sum()).backward()
        results.append(_grads(model, w))
    for got in results[1:]:
        for g, want in zip(got, results[0]):
            np.testing.assert_allclose(g, want, rtol=1e-13, atol=0)
    assert a.grad_fn.name() == b.grad_fn.name() == "CompiledFunctionBackward"


def test_a_second_backward_needs_retain_graph_and_double_backward_is_refused():
    model = _model(3)
    compiled = numgrad.compile(lambda x: model(x).sum())
    x = numgrad.ones(2, 4, dtype=numgrad.float64)
    for _ in range(3):
        out = compiled(x)
    out.backward(retain_graph=True)
    first = _grads(model)
    out.backward()
    for a, b in zip(_grads(model), first):
        np.testing.assert_allclose(a, 2 * b, rtol=1e-13)
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        out.backward()
    xg = numgrad.ones(2, 4, dtype=numgrad.float64, requires_grad=True)
    compiled_x = numgrad.compile(lambda x: (model(x) ** 2).sum())
    for _ in range(3):
        out = compiled_x(xg)
    with pytest.raises(RuntimeError, match="does not currently support double backward"):
        numgrad.autograd.grad(out, xg, create_graph=True)


def test_a_parameter_modified_in_place_before_backward_raises_as_eager():
    model = _model(4)
    compiled = numgrad.compile(model)
    x = numgrad.ones(2, 4, dtype=numgrad.float64, requires_grad=True)
    for _ in range(3):
        compiled(x).sum().backward()
    out = compiled(x)
    with numgrad.no_grad():
        model[2].weight.mul_(2)  # (read by the backward: the input's gradient uses it)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.sum().backward()


def test_a_leaf_made_inside_and_fullgraph():
    def f(x):
        w = numgrad.ones(3, dtype=numgrad.float64, requires_grad=True)
        return (x * w).sum()

    x = numgrad.arange(3.0, dtype=numgrad.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = numgrad.compile(f)(x)  # (its graph reaches a leaf made inside: eager)
    assert out.grad_fn.name() == "SumBackward0"
    with pytest.raises(GraphBreak, match="leaf made in the function"):
        numgrad.compile(f, fullgraph=True)(x)


def test_batchnorm_running_statistics_through_a_compiled_module():
    """BatchNorm in training mode, backward and Adam outside: the forward replay updates the
    running statistics and the batch count as eager does, step after step, and eval() then
    replays with them."""
    def make():
        numgrad.manual_seed(1)
        return nn.Sequential(nn.Linear(4, 6), nn.BatchNorm1d(6), nn.ReLU(),
                             nn.Linear(6, 2)).double()

    eager, model = make(), make()
    compiled = numgrad.compile(model)
    opts = [numgrad.optim.Adam(m.parameters(), lr=0.05) for m in (eager, model)]
    rng = np.random.default_rng(5)
    for _ in range(5):
        x = numgrad.tensor(rng.standard_normal((8, 4)))
        for m, opt in zip((eager, compiled), opts):
            opt.zero_grad()
            m(x).square().mean().backward()
            opt.step()
    for (name, a), b in zip(eager.state_dict().items(), model.state_dict().values()):
        np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-12, atol=1e-15, err_msg=name)
    assert int(model[1].num_batches_tracked) == 5
    assert compiled._compiled_forward.traces <= 2  # (the later steps replayed)
    eager.eval(), model.eval()
    x = numgrad.tensor(rng.standard_normal((3, 4)))
    with numgrad.no_grad():
        np.testing.assert_allclose(compiled(x).numpy(), eager(x).numpy(), rtol=1e-12)
