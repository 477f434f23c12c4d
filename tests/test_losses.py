"""l1_loss, huber_loss, smooth_l1_loss, binary_cross_entropy, binary_cross_entropy_with_logits,
kl_div and their modules against PyTorch: values, first and second derivatives, node names, the
edge cases (weights, broadcasting, empty and 0-d inputs, the clamped logs of BCE) and the errors.
(The registry samples in ops/loss.py are gradchecked by tests/test_ops.py.)"""
import warnings

import numpy as np
import pytest
import torch

import numgrad

TOL = {"float64": {"rtol": 1e-10, "atol": 1e-12}, "float32": {"rtol": 3e-5, "atol": 3e-6}}


def _F(m):
    return m.nn.functional


def _run(fn, arrays, dtype, grad=True):
    """fn(module, *tensors) on numgrad and on PyTorch: (output, node name, input gradients)."""
    results = []
    for m in (numgrad, torch):
        xs = [m.tensor(a.astype(dtype), requires_grad=grad) for a in arrays]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            y = fn(m, *xs)
        name = None if y.grad_fn is None else y.grad_fn.name()
        grads = None
        if grad:
            seed = np.random.default_rng(5).standard_normal(tuple(y.shape)).astype(dtype)
            y.backward(m.tensor(seed))
            grads = [x.grad.numpy() for x in xs]
        results.append((y.detach().numpy(), name, grads))
    return results


def _check(fn, arrays, dtype="float64", grad=True):
    (yo, no, go), (yt, nt, gt) = _run(fn, arrays, dtype, grad)
    assert no == nt
    assert yo.dtype == yt.dtype and yo.shape == yt.shape
    np.testing.assert_allclose(yo, yt, **TOL[dtype])
    if grad:
        for a, b in zip(go, gt):
            np.testing.assert_allclose(a, b, **TOL[dtype])


rng = np.random.default_rng(0)
X = rng.uniform(-2, 2, (3, 4))
Y = rng.uniform(-2, 2, (3, 4))
P = rng.uniform(0.02, 0.98, (3, 4))
Q = rng.uniform(0, 1, (3, 4))
W = rng.uniform(0.5, 2, (3, 4))


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_regression_losses_match_pytorch(reduction, dtype):
    for fn in (
        lambda m, x, y: _F(m).l1_loss(x, y, reduction=reduction),
        lambda m, x, y: _F(m).huber_loss(x, y, reduction=reduction),
        lambda m, x, y: _F(m).huber_loss(x, y, reduction=reduction, delta=0.3),
        lambda m, x, y: _F(m).smooth_l1_loss(x, y, reduction=reduction),
        lambda m, x, y: _F(m).smooth_l1_loss(x, y, reduction=reduction, beta=2.5),
        lambda m, x, y: _F(m).smooth_l1_loss(x, y, reduction=reduction, beta=0.0),  # = l1_loss
        lambda m, x, y: m.nn.L1Loss(reduction=reduction)(x, y),
        lambda m, x, y: m.nn.HuberLoss(reduction=reduction, delta=2.0)(x, y),
        lambda m, x, y: m.nn.SmoothL1Loss(reduction=reduction, beta=0.5)(x, y),
    ):
        _check(fn, [X, Y], dtype)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_weighted_l1_and_huber_follow_pytorch(reduction):
    w = lambda m: m.tensor(W)
    _check(lambda m, x, y: _F(m).l1_loss(x, y, reduction=reduction, weight=w(m)), [X, Y])
    _check(lambda m, x, y: _F(m).huber_loss(x, y, reduction=reduction, weight=w(m)), [X, Y])
    for name in ("l1_loss", "huber_loss"):
        with pytest.raises(ValueError, match="Weights and input must have the same size."):
            getattr(_F(numgrad), name)(numgrad.tensor(X), numgrad.tensor(Y),
                                       weight=numgrad.ones(4))


def test_broadcast_targets_warn_as_pytorch_and_match():
    for name in ("l1_loss", "huber_loss", "smooth_l1_loss"):
        with pytest.warns(UserWarning, match="Using a target size"):
            getattr(_F(numgrad), name)(numgrad.tensor(X), numgrad.tensor(Y[0]))
        _check(lambda m, x, y, n=name: getattr(_F(m), n)(x, y), [X, Y[0]])
        _check(lambda m, x, y, n=name: getattr(_F(m), n)(x, y, reduction="none"),
               [X[:, :1], Y[0]])
    # a target of another dtype: promoted (l1, smooth_l1), the input's (huber), as PyTorch's
    dtypes = []
    for name in ("l1_loss", "huber_loss", "smooth_l1_loss"):
        for m in (numgrad, torch):
            out = getattr(_F(m), name)(m.tensor(X, dtype=m.float32), m.tensor(Y))
            dtypes.append(out.dtype.name if m is numgrad else str(out.dtype)[6:])
    assert dtypes == ["float64", "float64", "float32", "float32", "float64", "float64"]


def test_huber_and_smooth_l1_at_the_kinks_and_special_values():
    x = np.array([0.0, 1.0, -1.0, 2.0, 0.5, np.inf, -np.inf, np.nan, 3.0])
    y = np.array([0.0, 0.0, 0.0, 1.0, 1.0, 0.0, 1.0, 0.0, np.inf])
    for fn in (lambda m, a, b: _F(m).huber_loss(a, b, reduction="none"),
               lambda m, a, b: _F(m).smooth_l1_loss(a, b, reduction="none"),
               lambda m, a, b: _F(m).huber_loss(a, b, reduction="none", delta=0.5)):
        (yo, _, go), (yt, _, gt) = _run(fn, [x, y], "float64")
        np.testing.assert_array_equal(yo, yt)
        np.testing.assert_array_equal(go[0], gt[0])
        np.testing.assert_array_equal(go[1], gt[1])


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_binary_cross_entropy_matches_pytorch(reduction, dtype):
    for fn in (
        lambda m, p, q: _F(m).binary_cross_entropy(p, q, reduction=reduction),
        lambda m, p, q: _F(m).binary_cross_entropy(p, q, weight=m.tensor(W[0], dtype=p.dtype),
                                                   reduction=reduction),
        lambda m, p, q: m.nn.BCELoss(weight=m.tensor(W, dtype=p.dtype), reduction=reduction)(p, q),
    ):
        _check(fn, [P, Q], dtype)


def test_binary_cross_entropy_clamps_its_logs_to_minus_100():
    p = np.array([0.0, 1.0, 0.0, 1.0, 1e-50, 0.5])
    q = np.array([0.0, 1.0, 1.0, 0.0, 1.0, 0.5])
    (yo, _, go), (yt, _, gt) = _run(lambda m, a, b: _F(m).binary_cross_entropy(
        a, b, reduction="none"), [p, q], "float64")
    np.testing.assert_array_equal(yo, yt)  # 0, 0, 100, 100, 100, log 2
    np.testing.assert_allclose(go[0], gt[0], rtol=1e-12)  # (x - t) / max(x (1 - x), 1e-12)
    np.testing.assert_array_equal(go[1], gt[1])  # -logit(x): ±inf at 0 and 1, as PyTorch


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_binary_cross_entropy_with_logits_matches_pytorch(reduction, dtype):
    x = np.concatenate([X * 10, [[-40.0, 40.0, 0.0, -100.0]]])
    q = np.concatenate([Q, [[0.0, 1.0, 0.5, 1.0]]])
    for fn in (
        lambda m, a, b: _F(m).binary_cross_entropy_with_logits(a, b, reduction=reduction),
        lambda m, a, b: _F(m).binary_cross_entropy_with_logits(
            a, b, pos_weight=m.tensor([0.5, 1.0, 2.0, 3.0], dtype=a.dtype), reduction=reduction),
        lambda m, a, b: _F(m).binary_cross_entropy_with_logits(
            a, b, weight=m.tensor([[2.0], [1.0], [0.5], [1.5]], dtype=a.dtype),
            pos_weight=m.tensor([2.0], dtype=a.dtype), reduction=reduction),
        lambda m, a, b: m.nn.BCEWithLogitsLoss(
            pos_weight=m.tensor([3.0, 1.0, 1.0, 0.5], dtype=a.dtype), reduction=reduction)(a, b),
    ):
        _check(fn, [x, q], dtype)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("reduction", ["batchmean", "mean", "sum", "none"])
def test_kl_div_matches_pytorch(reduction, dtype):
    logp = np.log(P / P.sum(1, keepdims=True))
    q = Q / Q.sum(1, keepdims=True)
    q[0, 0] = 0.0  # xlogy(0, 0) is 0
    for fn in (
        lambda m, a, b: _F(m).kl_div(a, b, reduction=reduction),
        lambda m, a, b: _F(m).kl_div(a, b.log(), reduction=reduction, log_target=True),
        lambda m, a, b: m.nn.KLDivLoss(reduction=reduction, log_target=False)(a, b),
    ):
        if "log()" in fn.__code__.co_names or fn.__code__.co_names.count("log"):
            _check(fn, [logp, q + 0.1], dtype)
        else:
            _check(fn, [logp, q], dtype, grad=True)


def test_kl_div_warns_for_mean_and_batchmean_of_a_0d_input():
    with pytest.warns(UserWarning, match="'batchmean' divides only by the batch size"):
        _F(numgrad).kl_div(numgrad.tensor(np.log(P)), numgrad.tensor(Q))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _F(numgrad).kl_div(numgrad.tensor(np.log(P)), numgrad.tensor(Q), reduction="batchmean")
    _check(lambda m, a, b: _F(m).kl_div(a, b, reduction="batchmean"),
           [np.array(-0.7), np.array(0.3)])


def test_empty_and_0d_inputs_match_pytorch():
    empty = np.zeros((0, 3))
    for name in ("l1_loss", "huber_loss", "smooth_l1_loss", "binary_cross_entropy",
                 "binary_cross_entropy_with_logits"):
        for reduction in ("mean", "sum", "none"):
            fn = lambda m, a, b, n=name, r=reduction: getattr(_F(m), n)(a, b, reduction=r)
            (yo, _, _), (yt, _, _) = _run(fn, [empty, empty], "float32", grad=False)
            np.testing.assert_array_equal(yo, yt)  # (nan for 'mean')
            assert yo.shape == yt.shape
            _check(fn, [np.array(0.3), np.array(0.6)], "float64")


def test_second_derivatives_and_their_nodes_match_pytorch():
    cases = [
        (lambda m, a, b: _F(m).huber_loss(a, b, delta=0.5), [X, Y * 0.5]),
        (lambda m, a, b: _F(m).huber_loss(a, b, reduction="none"), [X, Y]),
        (lambda m, a, b: _F(m).smooth_l1_loss(a, b, beta=1.5, reduction="sum"), [X, Y]),
        (lambda m, a, b: _F(m).binary_cross_entropy(a, b, weight=m.tensor(W)), [P, Q]),
        (lambda m, a, b: _F(m).binary_cross_entropy(a, b, reduction="none"), [P, Q]),
        (lambda m, a, b: _F(m).binary_cross_entropy_with_logits(
            a, b, pos_weight=m.tensor(W[0])), [X, Q]),
    ]
    for fn, arrays in cases:
        out = []
        for m in (numgrad, torch):
            xs = [m.tensor(a, requires_grad=True) for a in arrays]
            y = fn(m, *xs)
            seed = m.tensor(np.random.default_rng(1).standard_normal(tuple(y.shape)))
            gx, gt = m.autograd.grad(y, xs, seed, create_graph=True)
            names = (gx.grad_fn.name(), gt.grad_fn.name())
            second = m.autograd.grad((gx * gx).sum() + (gt * xs[0]).sum(), xs)
            out.append((names, [g.detach().numpy() for g in second]))
        (no, so), (nt, st) = out
        if nt[0].endswith("BackwardBackward0"):  # (a fused backward op; else composites)
            assert no[0] == nt[0]
        for a, b in zip(so, st):
            np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)


def _same_error(fn, kind):
    with pytest.raises(kind) as theirs:
        fn(torch)
    with pytest.raises(kind) as ours:
        fn(numgrad)
    assert str(ours.value) == str(theirs.value).replace("torch.Size", "numgrad.Size")


def test_errors_match_pytorch():
    x, y = X[0], Y[0]
    p, q = P[0], Q[0]

    def t(m, a, **kw):
        return m.tensor(a, **kw)

    _same_error(lambda m: _F(m).huber_loss(t(m, x), t(m, y), delta=0.0), RuntimeError)
    _same_error(lambda m: _F(m).huber_loss(t(m, x), t(m, y), delta=-1.0), RuntimeError)
    _same_error(lambda m: _F(m).smooth_l1_loss(t(m, x), t(m, y), beta=-0.5), RuntimeError)
    for name in ("l1_loss", "huber_loss", "smooth_l1_loss", "binary_cross_entropy",
                 "binary_cross_entropy_with_logits", "kl_div"):
        _same_error(lambda m, n=name: getattr(_F(m), n)(t(m, p), t(m, q), reduction="avg"),
                    ValueError)
    _same_error(lambda m: _F(m).binary_cross_entropy(t(m, p + 1), t(m, q)), RuntimeError)
    _same_error(lambda m: _F(m).binary_cross_entropy(t(m, p), t(m, q - 1)), RuntimeError)
    _same_error(lambda m: _F(m).binary_cross_entropy(t(m, [np.nan]), t(m, [0.5])), RuntimeError)
    _same_error(lambda m: _F(m).binary_cross_entropy(t(m, p), t(m, q[:2])), ValueError)
    _same_error(lambda m: _F(m).binary_cross_entropy(t(m, p), t(m, q), weight=t(m, q[:2])),
                RuntimeError)
    _same_error(lambda m: _F(m).binary_cross_entropy(t(m, p, dtype=m.float32), t(m, q)),
                RuntimeError)
    _same_error(lambda m: _F(m).binary_cross_entropy_with_logits(t(m, x), t(m, q[:2])),
                ValueError)
    _same_error(lambda m: _F(m).binary_cross_entropy_with_logits(
        t(m, x), t(m, q), pos_weight=t(m, q[:2])), RuntimeError)
    w = lambda m: t(m, q, requires_grad=True)
    _same_error(lambda m: _F(m).binary_cross_entropy(t(m, p), t(m, q), weight=w(m)), RuntimeError)
    _same_error(lambda m: _F(m).binary_cross_entropy_with_logits(t(m, x), t(m, q), weight=w(m)),
                RuntimeError)
    _same_error(lambda m: _F(m).binary_cross_entropy_with_logits(t(m, x), t(m, q),
                                                                 pos_weight=w(m)), RuntimeError)
    _same_error(lambda m: _F(m).kl_div(t(m, p), t(m, [1, 0, 1, 1]), reduction="sum"),
                RuntimeError)
    _same_error(lambda m: _F(m).binary_cross_entropy_with_logits(t(m, x), t(m, [1, 0, 1, 1])),
                RuntimeError)
    ints = lambda m: (t(m, [1, 0]), t(m, [1, 1]))
    for name in ("huber_loss", "smooth_l1_loss", "binary_cross_entropy",
                 "binary_cross_entropy_with_logits"):
        _same_error(lambda m, n=name: getattr(_F(m), n)(*ints(m)), NotImplementedError)


def test_legacy_reduction_arguments_of_the_modules():
    for m in (numgrad, torch):
        with pytest.warns(UserWarning, match="reduction='sum'"):
            assert m.nn.L1Loss(size_average=False).reduction == "sum"
        with pytest.warns(UserWarning, match="reduction='none'"):
            assert m.nn.KLDivLoss(reduce=False).reduction == "none"
        assert m.nn.HuberLoss().delta == 1.0 and m.nn.BCELoss().weight is None
        assert m.nn.KLDivLoss().log_target is False
    _check(lambda m, a, b: _F(m).binary_cross_entropy(a, b, size_average=False), [P, Q])


def test_nll_and_cross_entropy_options_match_pytorch():
    target = lambda m: m.tensor([0, 3, 1])
    weight = lambda m: m.tensor([0.5, 1.0, 2.0, 1.5], dtype=m.float64)
    x = X
    for fn in (
        lambda m, a: m.nn.CrossEntropyLoss(weight=weight(m), ignore_index=3)(a, target(m)),
        lambda m, a: m.nn.CrossEntropyLoss(label_smoothing=0.2, reduction="sum")(a, target(m)),
        lambda m, a: m.nn.CrossEntropyLoss(weight=weight(m), label_smoothing=0.1)(a, target(m)),
        lambda m, a: m.nn.NLLLoss(weight=weight(m), reduction="none")(
            a.log_softmax(1), target(m)),
    ):
        _check(fn, [x])
