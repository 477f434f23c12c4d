"""In-place ops on views, as PyTorch: the base's history rebased onto CopySlices, every view of
the base regenerating its history (AsStridedBackward0) after a write, and every in-place form of
the elementwise ops. Each program runs on numgrad and PyTorch; values, gradients, node names and
errors must agree."""
import warnings

import numpy as np
import pytest
import torch

import numgrad
from numgrad.ops import _names, elementwise


def _leaves(m, seed=0):
    rng = np.random.default_rng(seed)
    x = m.tensor(rng.uniform(0.2, 1.5, (3, 4)), dtype=m.float64, requires_grad=True)
    w = m.tensor(rng.uniform(0.2, 1.5, (4,)), dtype=m.float64, requires_grad=True)
    return x, w


def _p_scale_column(m, x, w):
    y = x * 1
    y[:, 0] *= 2
    return y


def _p_row_add(m, x, w):
    y = x * 1
    row = y[1]
    row.add_(w)
    return y, row


def _p_transpose_add(m, x, w):
    y = x * 1
    t = y.t()
    t.add_(1)
    return y * w, t


def _p_copy_column(m, x, w):
    out = m.zeros(4, 3, dtype=m.float64)
    out[:, 1].copy_(w)
    return out, out[:, 1]


def _p_mask_zero(m, x, w):
    h = x * w
    h[h > 0.8] = 0
    return h


def _p_relu_(m, x, w):
    y = x - 0.8
    y.relu_()
    return y


def _p_stale_view(m, x, w):
    y = x * 1
    v = y[:2]
    y.mul_(2)
    return v


def _p_view_of_view(m, x, w):
    y = x * 1
    v = y[1:][0, 1:3]
    v.mul_(3)
    return y, v


def _p_reshape_view(m, x, w):
    y = x * 1
    r = y.view(12)
    r.add_(1)
    return y * 2, r


def _p_unsqueeze(m, x, w):
    y = x * 1
    u = y.unsqueeze(0)
    u.mul_(w)
    return y, u


def _p_clamp_slice(m, x, w):
    y = x * 1
    y[:, 1:3].clamp_(0.5, 1.0)
    return y


def _p_sin_slice(m, x, w):  # sin_ keeps its input for backward
    y = x * 1
    v = y[1:3]
    v.sin_()
    return y, v


def _p_mul_by_tensor(m, x, w):  # mul_ keeps its operand
    y = x * 1
    y[0].mul_(w)
    return y


def _p_siblings(m, x, w):
    y = x * 1
    a, b = y[:2], y[2:]
    a.mul_(2)
    return a.sum() + b.sum() * 3, b


def _p_transpose_then_base(m, x, w):
    y = x * 1
    y.t()[1].mul_(w[:3])
    return y.exp()


def _p_functional_relu(m, x, w):
    y = x - 0.8
    m.nn.functional.relu(y[1:], inplace=True)
    return y


def _p_exp_then_old_view(m, x, w):
    y = x * 1
    v = y[:, 2]
    y.exp_()
    return v * 2, y


def _p_pow_view(m, x, w):
    y = x * 1
    y[2].pow_(2)
    return y


def _p_masked_fill_view(m, x, w):
    y = x * 1
    v = y[1:]
    v.masked_fill_(v > 1.0, 0.5)
    return y


def _p_copy_into_plain(m, x, w):
    y = m.ones(3, 4, dtype=m.float64)
    y[1].copy_(w * 2)
    return y * x


def _p_two_writes(m, x, w):
    y = x * 1
    v = y[:, :2]
    v.add_(1)
    v.mul_(w[:2])
    return y, v


def _p_no_grad_write_to_leaf_view(m, x, w):
    with m.no_grad():
        x[0].add_(1)
    return x * 2


PROGRAMS = [
    _p_scale_column, _p_row_add, _p_transpose_add, _p_copy_column, _p_mask_zero, _p_relu_,
    _p_stale_view, _p_view_of_view, _p_reshape_view, _p_unsqueeze, _p_clamp_slice,
    _p_sin_slice, _p_mul_by_tensor, _p_siblings, _p_transpose_then_base, _p_functional_relu,
    _p_exp_then_old_view, _p_pow_view, _p_masked_fill_view, _p_copy_into_plain, _p_two_writes,
    _p_no_grad_write_to_leaf_view,
]


def _as_tuple(out):
    return out if isinstance(out, tuple) else (out,)


def _run(m, program):
    x, w = _leaves(m)
    outs = _as_tuple(program(m, x, w))
    names = [type(o.grad_fn).__name__ if o.grad_fn is not None else None for o in outs]
    values = [o.detach().numpy().copy() for o in outs]
    total = sum((o * (i + 2)).sum() for i, o in enumerate(outs))
    total.backward()
    grads = [None if t.grad is None else t.grad.numpy().copy() for t in (x, w)]
    return names, values, grads


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.__name__[3:])
def test_in_place_through_views_matches_pytorch(program):
    ours, theirs = _run(numgrad, program), _run(torch, program)
    assert ours[0] == theirs[0], "node names"
    for a, b in zip(ours[1], theirs[1]):
        np.testing.assert_allclose(a, b, rtol=1e-12, err_msg="values")
    for a, b in zip(ours[2], theirs[2]):
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_allclose(a, b, rtol=1e-10, err_msg="gradients")


def test_stale_view_of_the_issue_gets_pytorch_gradient():
    x = numgrad.ones(4, requires_grad=True)
    y = x * 1
    v = y[:2]
    y.mul_(2)
    v.sum().backward()
    assert x.grad.tolist() == [2, 2, 0, 0]


def _error(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001
        return type(e).__name__, str(e)
    return None


@pytest.mark.parametrize("write", [
    lambda m, x: x[0].add_(1),
    lambda m, x: x.t().mul_(2),
    lambda m, x: x.view(12).relu_(),
    lambda m, x: (x * 1).expand(2, 3, 4).mul_(2),
], ids=["slice", "transpose", "view", "expanded"])
def test_refused_writes_raise_as_pytorch(write):
    ours = _error(lambda: write(numgrad, _leaves(numgrad)[0]))
    theirs = _error(lambda: write(torch, _leaves(torch)[0]))
    assert ours is not None and ours == theirs


# (the forms of elementwise.py's ops, which their @export flags declare, and two written out)
IN_PLACE_FORMS = (*(n for n, _ in _names.inplace_forms(elementwise.__name__)),
                  "clamp_min", "clamp_max")
ARGS = {"pow": (2.0,), "clamp_min": (0.6,), "clamp_max": (0.9,)}


def test_every_elementwise_op_pytorch_has_in_place_is_a_method():
    assert all(hasattr(numgrad.Tensor, n + "_") for n in IN_PLACE_FORMS)


@pytest.mark.parametrize("name", IN_PLACE_FORMS)
@pytest.mark.parametrize("view", [lambda y: y[1:, ::2], lambda y: y.t(), lambda y: y.view(2, 6)],
                         ids=["stepped-slice", "transpose", "reshape-view"])
def test_every_in_place_form_on_a_view_of_a_non_leaf_matches_pytorch(name, view):
    def program(m, x, w):
        y = x * 1
        v = view(y)
        getattr(v, name + "_")(*ARGS.get(name, ()))
        return y, v

    ours, theirs = _run(numgrad, program), _run(torch, program)
    assert ours[0] == theirs[0]
    for a, b in zip(ours[1] + ours[2], theirs[1] + theirs[2]):
        if a is None or b is None:
            assert a is None and b is None
        else:
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_compiled_in_place_writes_through_views_give_eager_results():
    """Under numgrad.compile (a graph break where the positions of a view in its base are read
    off its data), every call gives eager's loss and gradients."""
    def step(m, x, w):
        y = x * 1
        y[:, 0] *= 2
        y[1].mul_(w)
        y.t()[2].sin_()
        loss = (y * y).sum()
        loss.backward()
        return loss

    compiled = numgrad.compile(lambda x, w: step(numgrad, x, w))
    for i in range(3):
        (xe, we), (xc, wc), (xt, wt) = _leaves(numgrad, i), _leaves(numgrad, i), _leaves(torch, i)
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", "numgrad.compile runs", RuntimeWarning)
            lc = compiled(xc, wc)
        le, lt = step(numgrad, xe, we), step(torch, xt, wt)
        assert lc.item() == le.item()
        np.testing.assert_allclose(le.item(), lt.detach().item(), rtol=1e-12)
        for a, b, c in ((xc, xe, xt), (wc, we, wt)):
            np.testing.assert_array_equal(a.grad.numpy(), b.grad.numpy())
            np.testing.assert_allclose(b.grad.numpy(), c.grad.numpy(), rtol=1e-10)


def _peak_bytes(fn):
    import tracemalloc

    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_unrecorded_in_place_forms_write_in_one_pass_without_a_copy():
    n = 1 << 20  # 4 MiB of float32
    x = numgrad.rand(n)
    want = np.exp(x.numpy().astype(np.float64)).astype(np.float32)
    address = x.numpy().ctypes.data
    numgrad.rand(n).exp_()  # (kernels loaded before the measure)
    with numgrad.no_grad():
        peak = _peak_bytes(x.exp_)
    assert x.numpy().ctypes.data == address and peak < n  # (no second array)
    np.testing.assert_allclose(x.numpy(), want, rtol=1e-6)
    v = numgrad.ones(4, 4)[:, ::2]  # a strided view: written back through its strides
    v.neg_()
    assert v.tolist() == [[-1.0, -1.0]] * 4


def test_a_recorded_in_place_form_snapshots_its_input_only_where_backward_keeps_it():
    n = 1 << 20
    x = numgrad.rand(n, requires_grad=True)
    for warm in ((x * 1).relu_, (x * 1).sin_):  # (kernels loaded before the measure)
        warm()
    y = x * 1
    relu_peak = _peak_bytes(y.relu_)  # keeps its output: the result only
    z = x * 1
    sin_peak = _peak_bytes(z.sin_)  # keeps its input: a snapshot too
    assert relu_peak < 6 * n <= sin_peak
    (y.sum() + z.sum()).backward()
    expected = (x.detach().numpy() > 0) + np.cos(x.detach().numpy())
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-6)
