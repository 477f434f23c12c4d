"""One node for all the results of split/chunk/unsafe_split/split_with_sizes, std_mean/var_mean and
a custom Function that returns several tensors, as PyTorch 2.13 records it (issue 31): the results
share their ``grad_fn``, each has its ``output_nr``, the nodes that use them hold ``(node,
output_nr)`` edges, and the engine hands the node the gradients of all its outputs at once (zeros
where one received none). Compared with torch on the same graphs: structure, gradients, hooks,
``autograd.grad``, and a compiled step."""
import numpy as np
import pytest
import torch

import numgrad

X = np.random.default_rng(3131).standard_normal((4, 6))

MAKERS = {
    "split": lambda m, x: x.split(2, 1),
    "split_negative_dim_uneven": lambda m, x: x.split(4, -1),
    "chunk": lambda m, x: x.chunk(3, 1),
    "split_with_sizes": lambda m, x: x.split([1, 0, 3], 0),
    "unsafe_split": lambda m, x: m.unsafe_split(x, 3, 1),
    "unsafe_chunk": lambda m, x: m.unsafe_chunk(x, 2, 0),
    "unsafe_split_with_sizes": lambda m, x: m.unsafe_split_with_sizes(x, [2, 2], 0),
    "std_mean": lambda m, x: m.std_mean(x, 1),
    "var_mean": lambda m, x: m.var_mean(x, (0, 1), correction=0, keepdim=True),
    "function_two_outputs": lambda m, x: _two_outputs(m).apply(x),
}


def _two_outputs(m):
    """A custom Function returning two tensors: outputs 0 and 1 of its node."""
    class Two(m.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2, x.exp()

        @staticmethod
        def backward(ctx, a, b):
            return a * 2 + b
    return Two


def _structure(m, make):
    x = m.tensor(X, requires_grad=True)
    outs = make(m, x)
    fn = outs[0].grad_fn
    used = [(o * (k + 2)).grad_fn.next_functions[0] for k, o in enumerate(outs)]
    return (fn.name(), all(o.grad_fn is fn for o in outs), [o.output_nr for o in outs],
            [(f.name(), k) for f, k in fn.next_functions],
            [(f.name(), k, f is fn) for f, k in used])


@pytest.mark.parametrize("case", sorted(MAKERS))
def test_results_share_one_node_as_pytorch(case):
    assert _structure(numgrad, MAKERS[case]) == _structure(torch, MAKERS[case])


def _grads(m, make, use):
    x = m.tensor(X, requires_grad=True)
    outs = make(m, x)
    total = sum((outs[k] * (k + 1.5)).sum() for k in use)
    total.backward()
    return np.asarray(x.grad)


@pytest.mark.parametrize("case,use", [("split", (2,)), ("chunk", (0, 2)),
                                      ("split_with_sizes", (2, 0)), ("std_mean", (1,)),
                                      ("var_mean", (0,)), ("var_mean", (0, 1))])
def test_gradient_of_some_outputs_is_pytorchs(case, use):
    np.testing.assert_allclose(_grads(numgrad, MAKERS[case], use),
                               _grads(torch, MAKERS[case], use), rtol=1e-12, atol=1e-12)


def test_backward_from_an_output_and_grad_of_an_output():
    """A backward that starts at one output (a 0-d mean: the one-element fast path; a part with
    a given gradient), and ``autograd.grad`` taken with respect to outputs of one node."""
    def run(m):
        x = m.tensor(X, requires_grad=True)
        _, mean = m.std_mean(x)
        mean.backward()
        first = np.asarray(x.grad).copy()
        a, b, c = x.chunk(3, 1)
        c.backward(m.ones_like(c) * 2, retain_graph=True)
        y = (a * b).sum() + c.exp().sum()
        ga, gc = m.autograd.grad(y, (a, c), retain_graph=True)
        (gx,) = m.autograd.grad(y, x)
        return first, np.asarray(x.grad), np.asarray(ga), np.asarray(gc), np.asarray(gx)
    for ours, theirs in zip(run(numgrad), run(torch)):
        np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-12)


def test_hooks_and_retain_grad_on_outputs_of_one_node():
    """``register_hook`` on a part sees and replaces that part's gradient only; ``retain_grad``
    keeps each part's own; a prehook on the node sees all outputs' gradients (None where one
    received none)."""
    def run(m):
        x = m.tensor(X, requires_grad=True)
        a, b, c = x.split(2, 1)
        seen = []
        b.register_hook(lambda g: seen.append(("b", np.asarray(g).sum().round(12))) or g * 10)
        a.retain_grad()
        b.retain_grad()
        a.grad_fn.register_prehook(
            lambda gs: seen.append(tuple(None if g is None else tuple(g.shape) for g in gs)))
        ((a * 3).sum() + (b * b).sum()).backward()
        return seen, np.asarray(a.grad), np.asarray(b.grad), np.asarray(x.grad), \
            a.retains_grad, c.retains_grad
    ours, theirs = run(numgrad), run(torch)
    assert ours[0] == theirs[0]
    for u, v in zip(ours[1:4], theirs[1:4]):
        np.testing.assert_allclose(u, v, rtol=1e-12)
    assert ours[4:] == theirs[4:] == (True, False)


def test_create_graph_through_one_node():
    """Second derivatives through split's and std_mean's one node (cat of the parts' gradients,
    var's and mean's formulas summed), as PyTorch's."""
    def run(m):
        x = m.tensor(X, requires_grad=True)
        a, b = x.chunk(2, 1)
        s, mu = m.std_mean(x * x, 0)
        y = (a * b * b).sum() + (s * mu).sum()
        (g,) = m.autograd.grad(y, x, create_graph=True)
        (g * g).sum().backward()
        return np.asarray(g.detach()), np.asarray(x.grad)
    for ours, theirs in zip(run(numgrad), run(torch)):
        np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-12)


def test_compiled_step_through_one_node_equals_eager():
    """A step through chunk's and std_mean's nodes (one part of each left unused) compiled
    equals eager: loss and gradients, at the first call and at a replay."""
    w = numgrad.tensor(np.random.default_rng(7).standard_normal((6, 6)), requires_grad=True)

    def step(x):
        a, b, _ = (x @ w).chunk(3, 1)
        _, mu = numgrad.std_mean(a * b, 1)
        loss = mu.sum()
        loss.backward()
        return loss

    compiled = numgrad.compile(step)
    x = numgrad.tensor(X)
    for _ in range(2):
        w.grad = None
        expected = step(x)
        expected_grad = np.asarray(w.grad).copy()
        w.grad = None
        got = compiled(x)
        np.testing.assert_array_equal(np.asarray(got.detach()), np.asarray(expected.detach()))
        np.testing.assert_array_equal(np.asarray(w.grad), expected_grad)


# In-place writes into the outputs of a multi-view op (split, chunk, split_with_sizes, unbind) or
# into a view of one: PyTorch's MULTI_OUTPUT_NODE error in grad mode when the write is recorded;
# allowed under no_grad, when nothing requires grad, and for unsafe_split/unsafe_chunk's parts.
INPLACE_MAKERS = {
    "split": lambda m, x: x.split(2),
    "chunk": lambda m, x: x.chunk(2, 1),
    "split_with_sizes": lambda m, x: x.split_with_sizes([1, 3]),
    "unbind": lambda m, x: x.unbind(),
    "unsafe_split": lambda m, x: m.unsafe_split(x, 2),
    "unsafe_chunk": lambda m, x: m.unsafe_chunk(x, 2, 1),
}
WRITES = {
    "add_": lambda m, p: p[1].add_(1),
    "mul_tensor_": lambda m, p: p[0].mul_(m.full(p[0].shape, 2.0)),
    "view_of_part": lambda m, p: p[0].view(-1).mul_(2),
    "select_of_part": lambda m, p: p[0][0].zero_(),
    "setitem_select": lambda m, p: p[0].__setitem__(0, 5.0),
    "setitem_whole": lambda m, p: p[0].__setitem__(slice(None), 5.0),
    "setitem_advanced": lambda m, p: p[0].__setitem__([0], 5.0),
    "copy_": lambda m, p: p[1].copy_(m.ones(p[1].shape)),
}
SOURCES = {  # (how the input is made, whether the write runs under no_grad)
    "nonleaf": (lambda m: m.tensor(X[:4, :4], requires_grad=True) * 1, False),
    "leaf": (lambda m: m.tensor(X[:4, :4], requires_grad=True), False),
    "no_grad_write": (lambda m: m.tensor(X[:4, :4], requires_grad=True) * 1, True),
    "no_requires_grad": (lambda m: m.tensor(X[:4, :4]), False),
}


def _inplace_outcome(m, make, write, source):
    build, no_grad = SOURCES[source]
    x = build(m)
    parts = INPLACE_MAKERS[make](m, x)
    before = x.detach().clone()
    try:
        if no_grad:
            with m.no_grad():
                WRITES[write](m, parts)
        else:
            WRITES[write](m, parts)
    except RuntimeError as e:
        assert np.array_equal(x.detach().numpy(), before.numpy())  # (nothing written)
        return "error", str(e)
    return "ok", x.detach().numpy().tolist()


# (unsafe_split's parts of a leaf left out: torch's are no views, numgrad's are views of the leaf,
# so a write into one is numgrad's view-of-a-leaf error, not this check's business)
@pytest.mark.parametrize("make,write,source", [
    (m, w, s) for m in INPLACE_MAKERS for w in WRITES for s in SOURCES
    if not (s == "leaf" and m.startswith("unsafe"))])
def test_inplace_write_into_multi_view_output_is_pytorchs(make, write, source):
    ours = _inplace_outcome(numgrad, make, write, source)
    assert ours == _inplace_outcome(torch, make, write, source)


@pytest.mark.parametrize("make", ["split", "unbind"])
def test_inplace_write_of_a_grad_value_into_multi_view_output_is_pytorchs(make):
    """The parts don't require grad but the value written does: PyTorch's no_grad-mode variant."""
    def outcome(m):
        parts = INPLACE_MAKERS[make](m, m.tensor(X[:4, :4]))
        y = m.tensor(X[0, :4], requires_grad=True)
        try:
            parts[1].add_(y)
        except RuntimeError as e:
            return str(e)
    assert outcome(numgrad) == outcome(torch) is not None


def test_outputs_made_under_no_grad_or_detached_may_be_written():
    x = numgrad.tensor(X[:4, :4], requires_grad=True) * 1
    with numgrad.no_grad():
        parts = x.split(2)
        parts[0].add_(1)  # (made and written under no_grad: allowed, as PyTorch)
    x.split(2)[1].detach().add_(1)  # (a detached part is no view to autograd)
    expect = X[:4, :4].copy()
    expect[:2] += 1
    expect[2:] += 1
    assert np.array_equal(x.detach().numpy(), expect)
