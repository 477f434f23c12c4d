"""The fused CPU log-softmax (kernels/cpu/softmax.py) against PyTorch: values and gradients along
the last dimension (fused) and others (composite), long rows, and PyTorch's special values. And
the product's backward under a gradient of ones (``ops.elementwise._times``), which passes the
other factor on without a pass over memory: right values, and never visible as an alias."""
import numpy as np
import pytest
import torch

import numgrad


# (float32: an output is x - logsumexp(row), both near 20 in rows of 1000 (x * 5), where an ulp is
# 1.9e-6; the kernel sums its lanes in another order than PyTorch: 3.3e-6 apart seen)
@pytest.mark.parametrize("dtype, tol", [("float32", 8e-6), ("float64", 1e-12)])
@pytest.mark.parametrize("shape, dim", [((64, 10), 1), ((3, 1), -1), ((5, 1000), 1), ((2, 3, 7), 2),
                                        ((2, 3, 7), 1), ((4, 6), 0)])
def test_log_softmax_matches_pytorch(dtype, tol, shape, dim):
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(shape) * 5).astype(dtype)
    g = rng.standard_normal(shape).astype(dtype)
    ours = numgrad.tensor(x, requires_grad=True)
    theirs = torch.tensor(x, requires_grad=True)
    out, tout = ours.log_softmax(dim), theirs.log_softmax(dim)
    assert out.grad_fn.name() == "LogSoftmaxBackward0"
    out.backward(numgrad.tensor(g))
    tout.backward(torch.tensor(g))
    np.testing.assert_allclose(out.detach().numpy(), tout.detach().numpy(), rtol=tol, atol=tol)
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=tol, atol=tol)


def test_a_large_log_softmax_runs_its_rows_on_threads_with_the_serial_kernels_values(monkeypatch):
    from numgrad.kernels.cpu import _workers, softmax

    rng = np.random.default_rng(1)
    x = (rng.standard_normal((600, 1000)) * 5).astype(np.float32)
    x[3, 5], x[4], x[5, 7] = np.nan, -np.inf, np.inf
    g = rng.standard_normal(x.shape).astype(np.float32)
    shared = []  # (the thread count of each job shared among numgrad's worker threads)
    real_run = _workers.run
    monkeypatch.setattr(_workers, "run", lambda items, work, threads, blas=True: (
        shared.append(threads), real_run(items, work, threads, blas))[1])
    out = softmax.log_softmax_last(x)
    grad = softmax.log_softmax_backward_last(g, out)
    assert shared == [_workers.count()] * 2  # (the tests turn the busy-machine check off)
    serial, serial_grad = np.empty_like(x), np.empty_like(x)
    softmax._log_softmax_rows(x, serial)
    softmax._log_softmax_backward_rows(g, out, serial_grad)
    assert out.tobytes() == serial.tobytes() and grad.tobytes() == serial_grad.tobytes()
    t = torch.tensor(x, requires_grad=True)
    tout = t.log_softmax(-1)
    tout.backward(torch.tensor(g))
    np.testing.assert_allclose(out, tout.detach().numpy(), rtol=2e-6, atol=2e-6)
    np.testing.assert_allclose(grad, t.grad.numpy(), rtol=1e-4, atol=1e-4)  # (sums of 1000)


@pytest.mark.parametrize("dim", [-1, 0])
def test_log_softmax_special_values_as_pytorch(dim):
    x = np.array([[1, np.inf, 2], [-np.inf, -np.inf, -np.inf], [np.nan, 1, 2], [1, 2, -np.inf]],
                 np.float32)
    ours = numgrad.tensor(x).log_softmax(dim).numpy()
    theirs = torch.tensor(x).log_softmax(dim).numpy()
    np.testing.assert_array_equal(np.isnan(ours), np.isnan(theirs))
    np.testing.assert_allclose(ours, theirs, rtol=1e-6)


def test_long_rows_special_values_and_signed_zeros_as_pytorch():
    """Rows of 16 elements and more take their max and sum in lanes: a NaN in any lane, +inf,
    a row of -inf, a max in the last lane of a row of -1000s (its exp overflows if missed)
    and a lone -0.0 (log-sum-exp exactly 0) come out as PyTorch's, signs too."""
    x = np.full((6, 21), -1000, np.float32)
    x[0, 13], x[1, 17], x[2], x[5, 15] = np.nan, np.inf, -np.inf, 100.0
    x[3, 0], x[4, 5], x[4, 20] = -0.0, -0.0, 0.0
    g = np.linspace(-1, 1, x.size, dtype=np.float32).reshape(x.shape)
    ours = numgrad.tensor(x, requires_grad=True)
    theirs = torch.tensor(x, requires_grad=True)
    out, tout = ours.log_softmax(-1), theirs.log_softmax(-1)
    out.backward(numgrad.tensor(g))
    tout.backward(torch.tensor(g))
    for a, b in ((out.detach().numpy(), tout.detach().numpy()), (ours.grad.numpy(),
                                                                theirs.grad.numpy())):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)
        np.testing.assert_array_equal(np.signbit(a[3:5]), np.signbit(b[3:5]))


def test_log_softmax_second_derivative_uses_the_composite_backward():
    x = numgrad.tensor(np.linspace(-1, 1, 6).reshape(2, 3), requires_grad=True)
    t = torch.tensor(np.linspace(-1, 1, 6).reshape(2, 3), requires_grad=True)
    (g,) = numgrad.autograd.grad((x.log_softmax(1) ** 2).sum(), x, create_graph=True)
    (tg,) = torch.autograd.grad((t.log_softmax(1) ** 2).sum(), t, create_graph=True)
    (gg,) = numgrad.autograd.grad(g.sum(), x)
    (tgg,) = torch.autograd.grad(tg.sum(), t)
    np.testing.assert_allclose(gg.numpy(), tgg.numpy(), rtol=1e-10, atol=1e-12)


def _mul_kernel_calls(monkeypatch):
    """Counts the MUL kernel calls made through ``numgrad.kernels.cpu.binary`` and the fast
    lane's ``plain_binary`` (which backward formulas call first)."""
    from numgrad import kernels
    from numgrad.ops import registry

    calls = []

    def counting(real):
        def count(op, a, b, *args):
            out = real(op, a, b, *args)
            if op == kernels.cpu.MUL and out is not None:
                calls.append(np.shape(a))
            return out

        return count

    monkeypatch.setattr(kernels.cpu, "binary", counting(kernels.cpu.binary))
    monkeypatch.setattr(registry, "plain_binary", counting(registry.plain_binary))
    return calls


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_product_under_a_sum_passes_the_other_factor_on(monkeypatch, dtype):
    data = np.random.default_rng(0).standard_normal(1000).astype(dtype)
    x = numgrad.tensor(data, requires_grad=True)
    t = torch.tensor(data, requires_grad=True)
    out = (numgrad.tanh(x) * numgrad.sigmoid(x)).sum()
    calls = _mul_kernel_calls(monkeypatch)
    out.backward()
    assert calls == []  # MulBackward0 multiplied nothing: 1 * v is v
    (torch.tanh(t) * torch.sigmoid(t)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-6, atol=1e-7)
    # A gradient that is not all ones is multiplied as before.
    x.grad = None
    out = (numgrad.tanh(x) * numgrad.sigmoid(x)).mean()
    calls.clear()
    out.backward()
    assert len(calls) == 2
    t.grad = None
    (torch.tanh(t) * torch.sigmoid(t)).mean().backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-6, atol=1e-9)


def test_a_passed_on_factor_never_reaches_the_user_as_an_alias():
    a = numgrad.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = numgrad.tensor([4.0, 5.0, 6.0], requires_grad=True)
    hooked = []
    (a * b).sum().backward()  # a.grad would be b's data, b.grad a's
    (ga,) = numgrad.autograd.grad((a * b).sum(), a)
    c = a * 1.0
    c.register_hook(lambda g: hooked.append(g))
    c.retain_grad()
    (c * b).sum().backward()
    for grad in (a.grad, b.grad, ga, hooked[0], c.grad):
        data = grad.numpy()
        assert not np.shares_memory(data, a.detach().numpy())
        assert not np.shares_memory(data, b.detach().numpy())
    a.grad.zero_()  # the leaves' gradients are their own, writable
    np.testing.assert_array_equal(b.detach().numpy(), [4.0, 5.0, 6.0])
    with numgrad.no_grad():
        b.mul_(10)  # a later write to b changes none of the gradients taken before
    np.testing.assert_array_equal(ga.numpy(), [4.0, 5.0, 6.0])
    np.testing.assert_array_equal(hooked[0].numpy(), [4.0, 5.0, 6.0])
    np.testing.assert_array_equal(c.grad.numpy(), [4.0, 5.0, 6.0])
    np.testing.assert_array_equal(b.grad.numpy(), [2.0, 4.0, 6.0])  # a from a * b, then c (= a)


def test_a_custom_function_may_write_into_its_gradient_under_a_sum():
    class Scale(numgrad.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            grad.mul_(2)  # in place: allowed, the gradient is its own
            return grad

    a = numgrad.tensor([1.0, 2.0], requires_grad=True)
    b = numgrad.tensor([3.0, 4.0], requires_grad=True)
    (Scale.apply(a) * b).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), [6.0, 8.0])
    np.testing.assert_array_equal(b.detach().numpy(), [3.0, 4.0])


def _ce_grad(x, t, fused, monkeypatch, reduction="mean", weight=None, ignore_index=-100,
             scale=1.5):
    """The gradient of ``cross_entropy(x, t) * scale`` (and how often the fused backward ran),
    with ``NllLoss.through`` (nll_loss's backward and log_softmax's in one pass) or without."""
    from numgrad.kernels.cpu import loss as kernels
    from numgrad.ops import loss

    calls, real = [], kernels.nll_log_softmax_backward
    monkeypatch.setattr(kernels, "nll_log_softmax_backward",
                        lambda *a: calls.append(1) or real(*a))
    if not fused:
        monkeypatch.setattr(loss.NllLoss, "through", None)
    a = numgrad.tensor(x, requires_grad=True)
    out = numgrad.nn.functional.cross_entropy(
        a, numgrad.tensor(t), reduction=reduction, ignore_index=ignore_index,
        weight=None if weight is None else numgrad.tensor(weight))
    (out.sum() * scale).backward()
    monkeypatch.undo()
    return a.grad.numpy().tobytes(), len(calls)


@pytest.mark.parametrize("shape, dtype", [((700, 3000), "float32"), ((5, 7), "float32"),
                                          ((6, 20), "float64"), ((9,), "float32")])
@pytest.mark.parametrize("case", ["mean", "sum", "none", "ignore", "weight"])
def test_cross_entropys_backward_in_one_pass_is_the_two_backwards_to_the_bit(
        shape, dtype, case, monkeypatch):
    # (rows shorter than the log-softmax's vector loop, long rows split among threads, a row
    # of NaN, an ignored target; the loss's gradient through nll_loss and then log_softmax)
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(shape) * 3).astype(dtype)
    t = rng.integers(0, shape[-1], shape[:-1])
    if len(shape) == 2:
        x[1, 2] = np.nan
    options = {"sum": dict(reduction="sum"), "none": dict(reduction="none"),
               "ignore": dict(ignore_index=int(t.reshape(-1)[0])),
               "weight": dict(weight=np.abs(rng.standard_normal(shape[-1])).astype(dtype)),
               "mean": {}}[case]
    fused, calls = _ce_grad(x, t, True, monkeypatch, **options)
    assert calls == 1
    assert (fused, 0) == _ce_grad(x, t, False, monkeypatch, **options)


def test_cross_entropys_log_softmax_observed_or_differentiated_runs_the_two_backwards(
        monkeypatch):
    # (a hook on the log-probabilities, their retained grad, a second consumer, create_graph:
    # the gradient between the two nodes is needed, and each backward runs as it is)
    from numgrad.kernels.cpu import loss as kernels

    calls, real = [], kernels.nll_log_softmax_backward
    monkeypatch.setattr(kernels, "nll_log_softmax_backward",
                        lambda *a: calls.append(1) or real(*a))
    rng = np.random.default_rng(1)
    x = rng.standard_normal((4, 6)).astype(np.float64)
    t = numgrad.tensor(rng.integers(0, 6, 4))
    seen = []
    for variant in ("hook", "retain", "twice", "create_graph"):
        a = numgrad.tensor(x, requires_grad=True)
        logp = a.log_softmax(1)
        if variant == "hook":
            logp.register_hook(lambda g: seen.append(g.numpy().copy()))
        if variant == "retain":
            logp.retain_grad()
        loss = numgrad.nn.functional.nll_loss(logp, t)
        if variant == "twice":
            loss = loss + logp.exp().sum() * 0.5
        (ga,) = numgrad.autograd.grad(loss, a, create_graph=True) if variant == "create_graph" \
            else (loss.backward() or (a.grad,))
        ta = torch.tensor(x, requires_grad=True)
        tlogp = ta.log_softmax(1)
        tl = torch.nn.functional.nll_loss(tlogp, torch.tensor(t.numpy()))
        if variant == "twice":
            tl = tl + tlogp.exp().sum() * 0.5
        np.testing.assert_allclose(ga.detach().numpy(), torch.autograd.grad(tl, ta)[0].numpy(),
                                   rtol=1e-12, atol=1e-15)
        if variant == "create_graph":  # (its gradient is differentiable: the double backward)
            (ga * ga).sum().backward()
            assert a.grad is not None
        assert calls == [], variant
    assert len(seen) == 1 and seen[0][0].nonzero()[0].size == 1


def test_the_profiler_times_the_fused_backward_as_nll_losss_node():
    from numgrad.ops import loss

    through = loss.NllLoss.through
    x = numgrad.randn(20, 30, requires_grad=True)
    t = numgrad.tensor(np.random.default_rng(0).integers(0, 30, 20))
    with numgrad.autograd.profiler.profile() as prof:
        numgrad.nn.functional.cross_entropy(x, t).backward()
    names = [e.key for e in prof.key_averages()]
    assert "NllLossBackward0" in names and "LogSoftmaxBackward0" not in names  # (one pass)
    assert loss.NllLoss.through is through and "through" not in loss.MseLoss.__dict__
