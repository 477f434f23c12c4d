"""In-place ops: values and gradients against PyTorch, version counters, and the SPEC's errors."""
import numpy as np
import pytest
import torch

import numgrad

LEAF_ERROR = "a leaf Variable that requires grad is being used in an in-place operation."
SAVED_ERROR = ("one of the variables needed for gradient computation has been modified by an "
               "inplace operation")

INPLACE = {
    "add_": lambda y, o: y.add_(o),
    "add_alpha": lambda y, o: y.add_(o, alpha=-0.5),
    "sub_": lambda y, o: y.sub_(o),
    "mul_": lambda y, o: y.mul_(o),
    "div_": lambda y, o: y.div_(o + 3),
    "iadd": lambda y, o: y.__iadd__(o),
    "isub": lambda y, o: y.__isub__(2.0),
    "imul": lambda y, o: y.__imul__(o),
    "itruediv": lambda y, o: y.__itruediv__(4.0),
    "clamp_": lambda y, o: y.clamp_(-0.5, 0.5),
    "zero_": lambda y, o: y.zero_(),
    "fill_": lambda y, o: y.fill_(1.5),
    "copy_": lambda y, o: y.copy_(o),
}


@pytest.mark.parametrize("name", sorted(INPLACE))
def test_inplace_on_a_non_leaf_matches_pytorch(name):
    rng = np.random.default_rng(0)
    x0, o0 = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    results = []
    for m in (numgrad, torch):
        x = m.tensor(x0, requires_grad=True)
        o = m.tensor(o0, requires_grad=True)
        y = x * 2
        before = y._version
        out = INPLACE[name](y, o)
        assert out is y and y._version > before
        (y * y).sum().backward()
        results.append((y.detach().numpy().copy(), x.grad, o.grad, y.grad_fn.name()))
    ours, theirs = results
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-12)
    np.testing.assert_allclose(ours[1].numpy(), theirs[1].numpy(), rtol=1e-12)
    if theirs[2] is None:
        assert ours[2] is None
    else:
        np.testing.assert_allclose(ours[2].numpy(), theirs[2].numpy(), rtol=1e-12)
    assert ours[3] == theirs[3]


@pytest.mark.parametrize("name", sorted(INPLACE))
def test_inplace_on_a_leaf_that_requires_grad_raises_and_changes_nothing(name):
    x = numgrad.tensor([[1.0, -2.0], [3.0, 0.25]], requires_grad=True)
    other = numgrad.ones(2, 2)
    snapshot = x.detach().numpy().copy()
    with pytest.raises(RuntimeError) as info:
        INPLACE[name](x, other)
    assert LEAF_ERROR in str(info.value)
    np.testing.assert_array_equal(x.detach().numpy(), snapshot)
    assert x._version == 0 and x.is_leaf and x.grad_fn is None and x.grad is None


def test_inplace_on_a_leaf_works_under_no_grad_as_optimisers_do():
    w = numgrad.tensor([1.0, 2.0], requires_grad=True)
    (w * w).sum().backward()
    with numgrad.no_grad():
        w -= 0.1 * w.grad
    np.testing.assert_allclose(w.detach().numpy(), [0.8, 1.6])
    assert w.is_leaf and w.requires_grad and w._version == 1


def test_saved_tensor_modified_in_place_raises_and_leaves_grads_alone():
    a = numgrad.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = numgrad.tensor([0.5, 0.5, 0.5], requires_grad=True)
    e = (a * 1).exp()  # ExpBackward0 saves its output
    z = (b * 3).sum() + e.sum()
    e.mul_(2)  # now e is at version 1
    with pytest.raises(RuntimeError) as info:
        z.backward()
    msg = str(info.value)
    assert SAVED_ERROR in msg and "[3]" in msg and "version 1" in msg and "expected version 0" in msg
    assert a.grad is None and b.grad is None


def test_views_share_the_version_counter():
    x = numgrad.zeros(2, 3)
    v = x.view(6)
    t = x.t()
    v.add_(1)
    assert x._version == v._version == t._version == 1
    np.testing.assert_array_equal(t.numpy(), np.ones((3, 2)))


def test_data_writes_are_not_seen_by_version_checks():
    w = numgrad.tensor([1.0, 2.0], requires_grad=True)
    y = w * w
    w.data.mul_(2)  # like PyTorch's .data: no version bump on w
    assert w._version == 0
    y.sum().backward()  # the saved w is now [2, 4]: grad is 2 * w
    np.testing.assert_allclose(w.grad.numpy(), [4.0, 8.0])


def test_integer_tensor_refuses_a_float_result():
    i = numgrad.ones(3, dtype=numgrad.int64)
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
        i.add_(1.5)
    np.testing.assert_array_equal(i.numpy(), [1, 1, 1])
    assert i._version == 0


def _two_layer_run(m, steps=20):
    """A PyTorch user's program: two-layer net, log_softmax, integer indexing for the loss, manual
    SGD with in-place updates under no_grad."""
    rng = np.random.default_rng(42)
    data = rng.standard_normal((32, 10))
    labels = rng.integers(0, 4, size=32)
    w1_0, w2_0 = rng.standard_normal((10, 16)) * 0.3, rng.standard_normal((16, 4)) * 0.3
    x = m.tensor(data, dtype=m.float64)
    y = m.tensor(labels)
    w1 = m.tensor(w1_0, dtype=m.float64, requires_grad=True)
    b1 = m.zeros(16, dtype=m.float64, requires_grad=True)
    w2 = m.tensor(w2_0, dtype=m.float64, requires_grad=True)
    b2 = m.zeros(4, dtype=m.float64, requires_grad=True)
    losses = []
    for _ in range(steps):
        h = (x @ w1 + b1).relu()
        logp = (h @ w2 + b2).log_softmax(dim=1)
        loss = -logp[m.arange(32), y].mean()
        loss.backward()
        with m.no_grad():
            for p in (w1, b1, w2, b2):
                p -= 0.5 * p.grad
                p.grad.zero_()
        losses.append(loss.item())
    return losses


def test_two_layer_network_with_manual_sgd_gives_pytorchs_losses():
    ours, theirs = _two_layer_run(numgrad), _two_layer_run(torch)
    assert len(ours) == 20
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-6)
    assert ours[-1] < ours[0] * 0.8  # it learns


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("size", [1000, "parallel"])
@pytest.mark.parametrize("method, alpha", [("add_", -0.01), ("sub_", 0.3), ("add_", 2.5)])
def test_untracked_scaled_update_is_one_pass_with_two_pass_values(dtype, size, method, alpha):
    """``p.add_(g, alpha=a)`` under no_grad (an optimiser's update) runs one fused kernel with
    the values of ``p + (a * g)`` rounded twice, as before the fusion; PyTorch agrees to an ulp
    of the operands (its vector path fuses the multiply-add, rounding once)."""
    from numgrad.kernels.cpu.elementwise import PARALLEL_THRESHOLD

    n = PARALLEL_THRESHOLD + 10 if size == "parallel" else size
    rng = np.random.default_rng(0)
    p0, g = rng.standard_normal(n).astype(dtype), rng.standard_normal(n).astype(dtype)
    ours = numgrad.tensor(p0.copy(), requires_grad=True)
    version = ours._version
    with numgrad.no_grad():
        assert getattr(ours, method)(numgrad.tensor(g), alpha=alpha) is ours
    scaled = (np.asarray(alpha, dtype) * g).astype(dtype)
    want = p0 + scaled if method == "add_" else p0 - scaled
    np.testing.assert_array_equal(ours.detach().numpy(), want)
    assert ours._version == version + 1
    theirs = torch.tensor(p0.copy())
    getattr(theirs, method)(torch.tensor(g), alpha=alpha)
    eps = np.finfo(dtype).eps * 16  # a few ulps of the operands (|alpha * g| up to ~12)
    np.testing.assert_allclose(ours.detach().numpy(), theirs.numpy(), rtol=eps, atol=eps)


@pytest.mark.parametrize("method", ["mul_ 0-d", "add_ same shape", "div_ number"])
def test_large_in_place_ops_share_threads_with_the_bits_of_one(method, monkeypatch):
    """A large in-place op with a number, a 0-d tensor or a tensor of its shape (clip_grad_norm_'s
    ``g.mul_(coef)``, a gradient accumulated) runs on the worker threads: the values of one
    thread, bit for bit, and NumPy's; NaN, inf and -0.0 as NumPy gives them."""
    from numgrad.kernels.cpu import _workers
    from numgrad.kernels.cpu.elementwise import PARALLEL_THRESHOLD

    monkeypatch.setattr(_workers, "busy", lambda: False)  # (the load picks no path here)
    rng = np.random.default_rng(0)
    base = rng.standard_normal(PARALLEL_THRESHOLD + 7).astype(np.float32)
    base[[3, -2, -1]] = [np.nan, -np.inf, -0.0]
    other = rng.standard_normal(base.size).astype(np.float32)
    results, jobs, before = [], [], numgrad.get_num_threads()
    for threads in (1, 2):
        numgrad.set_num_threads(threads)
        try:
            t = numgrad.tensor(base.copy())
            runs = _workers.run
            monkeypatch.setattr(_workers, "run", lambda items, work, n, *a, **k: (
                jobs.append(n), runs(items, work, n, *a, **k)))
            with numgrad.no_grad():
                if method == "mul_ 0-d":
                    t.mul_(numgrad.tensor(np.float32(0.37)))
                elif method == "add_ same shape":
                    t.add_(numgrad.tensor(other))
                else:
                    t.div_(3.0)
            monkeypatch.setattr(_workers, "run", runs)
            results.append(t.numpy())
        finally:
            numgrad.set_num_threads(before)
    assert jobs and max(jobs) == 2  # (the second run split)
    np.testing.assert_array_equal(results[0].view(np.uint32), results[1].view(np.uint32))
    with np.errstate(invalid="ignore"):
        want = {"mul_ 0-d": base * np.float32(0.37), "add_ same shape": base + other,
                "div_ number": base / np.float32(3.0)}[method]
    np.testing.assert_array_equal(results[1], want)


@pytest.mark.parametrize("case", [
    lambda m, y, c: y * 2, lambda m, y, c: 2 * y, lambda m, y, c: y * c, lambda m, y, c: c * y,
    lambda m, y, c: y / 2, lambda m, y, c: y / c, lambda m, y, c: c / y, lambda m, y, c: y * y,
    lambda m, y, c: m.dot(y, c), lambda m, y, c: m.mv(c.reshape(1, 3), y),
    lambda m, y, c: m.mv(y.reshape(1, 3), c),
], ids=["mul_number", "rmul_number", "mul_constant", "constant_mul", "div_number",
        "div_constant", "constant_div", "square", "dot", "mv_vector", "mv_matrix"])
@pytest.mark.parametrize("write", ["y", "c"])
def test_writing_an_input_backward_does_not_need_is_allowed_as_in_pytorch(case, write):
    """An op saves an input only for the gradients that need it (PyTorch's rule: mul saves
    ``self`` only when ``other`` requires grad), so writing to the other input afterwards is
    reported by backward exactly where PyTorch reports it."""
    results = []
    for m in (numgrad, torch):
        x = m.tensor([1.0, 2.0, 3.0], requires_grad=True)
        c = m.tensor([4.0, 5.0, 6.0])
        y = x * 1.0
        out = case(m, y, c)
        with m.no_grad():
            (y if write == "y" else c).add_(1)
        try:
            out.sum().backward()
            results.append(("ok", x.grad.tolist()))
        except RuntimeError as e:
            results.append(("error", "modified by an inplace operation" in str(e)))
    assert results[0] == results[1]


# In-place ops whose input shares memory with the written tensor: PyTorch refuses a partial
# overlap (the result would depend on the order of the writes) and allows the same elements.
OVERLAPS = {
    "copy_ shifted": lambda m, a: a[1:].copy_(a[:-1]),
    "add_ shifted": lambda m, a: a[1:].add_(a[:-1]),
    "sub_ alpha shifted, no grad": lambda m, a: a.detach()[1:].sub_(a.detach()[:-1], alpha=2),
    "mul_ transposed": lambda m, a: a[:4].view(2, 2).mul_(a[:4].view(2, 2).t()),
    "add_ itself": lambda m, a: a.add_(a),
    "copy_ itself, another view": lambda m, a: a.view(2, 3).copy_(a.view(2, 3)),
    "mul_ disjoint halves": lambda m, a: a[:3].mul_(a[3:]),
    "add_ interleaved strides": lambda m, a: a[::2].add_(a[1::2]),
    "copy_ flipped (a copy)": lambda m, a: a.copy_(a.flip(0)),
}


@pytest.mark.parametrize("name", list(OVERLAPS))
def test_inplace_overlap_errors_match_pytorch(name):
    results = []
    for m in (numgrad, torch):
        a = m.arange(6.0, requires_grad=True) * 1
        before = a.detach().clone()
        try:
            OVERLAPS[name](m, a)
            results.append(("ok", a.detach().numpy().tolist()))
        except RuntimeError as e:
            assert (a.detach() == before).all()  # (refused before anything was written)
            results.append(("error", str(e)))
    assert results[0] == results[1]
