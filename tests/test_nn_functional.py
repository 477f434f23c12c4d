"""nn.functional's distances, normalisations, activations, losses, dropouts and bilinear
(nn/functional_<concept>.py) and their modules, containers and init functions against PyTorch:
values and gradients (float64 and float32), node names where PyTorch's is a composite's,
gradcheck and gradgradcheck in float64, PyTorch's error messages, train/eval behaviour, module
reprs, parameter names and shapes (PyTorch's weights loaded with ``load_state_dict``), container
methods and ``state_dict`` keys."""
import math
import warnings
from collections import OrderedDict

import numpy as np
import pytest
import torch

import numgrad

TOL = {"float64": {"rtol": 1e-9, "atol": 1e-11}, "float32": {"rtol": 2e-4, "atol": 2e-5}}

# PyTorch's pairwise_distance ends in at::norm's NormBackward1, numgrad's in the vector norm's
NODE_DIFFERS = {"pairwise_distance"}


def _F(m):
    return m.nn.functional


def _run(fn, arrays, dtype, consts):
    results = []
    for m in (numgrad, torch):
        xs = [m.tensor(a.astype(dtype), requires_grad=True) for a in arrays]
        cs = [m.tensor(c.astype(dtype) if c.dtype.kind == "f" else c) for c in consts]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            y = fn(m, *xs, *cs)
        name = None if y.grad_fn is None else y.grad_fn.name()
        seed = np.random.default_rng(5).standard_normal(tuple(y.shape)).astype(dtype)
        y.backward(m.tensor(seed))
        grads = [None if x.grad is None else x.grad.numpy() for x in xs]
        results.append((y.detach().numpy(), name, grads))
    return results


rng = np.random.default_rng(0)
A = rng.uniform(-2, 2, (3, 4))
B = rng.uniform(-2, 2, (3, 4))
C = rng.uniform(-2, 2, (3, 4))
X3 = rng.uniform(-2, 2, (2, 4, 3))
X4 = rng.uniform(-2, 2, (2, 4, 3, 2))
POS = rng.uniform(0.2, 2, (3, 4))
SIGN4 = np.array([1.0, -1.0, -1.0, 1.0])
SIGN3 = np.array([1.0, -1.0, 1.0])
LABELS = (rng.uniform(size=(3, 4)) > 0.5).astype(np.float64)
CLASSES = np.array([0, 3, 1])

CASES = {
    "normalize": (lambda m, x: _F(m).normalize(x), [A], []),
    "normalize_p1_dim0": (lambda m, x: _F(m).normalize(x, p=1, dim=0), [A], []),
    "cosine_similarity": (lambda m, x, y: _F(m).cosine_similarity(x, y), [A, B], []),
    "cosine_similarity_bcast": (lambda m, x, y: _F(m).cosine_similarity(x, y[:1], dim=-1),
                                [A, B], []),
    "pairwise_distance": (lambda m, x, y: _F(m).pairwise_distance(x, y, p=3.0, keepdim=True),
                          [A, B], []),
    "group_norm": (lambda m, x, w, b: _F(m).group_norm(x, 2, w, b), [X3, A[0], B[0]], []),
    "group_norm_4d": (lambda m, x: _F(m).group_norm(x, 4, eps=1e-3) * 1, [X4], []),
    "instance_norm": (lambda m, x, w, b: _F(m).instance_norm(x, weight=w, bias=b),
                      [X3, A[0], B[0]], []),
    "instance_norm_4d": (lambda m, x: _F(m).instance_norm(x), [X4], []),
    "rms_norm": (lambda m, x, w: _F(m).rms_norm(x, (3,), w), [X3, A[0, :3]], []),
    "rms_norm_2d": (lambda m, x: _F(m).rms_norm(x, (4, 3), eps=1e-3), [X3], []),
    "local_response_norm": (lambda m, x: _F(m).local_response_norm(x, 3), [X3], []),
    "local_response_norm_4d": (lambda m, x: _F(m).local_response_norm(x, 2, 0.1, 0.5, 2.0),
                               [X4], []),
    "prelu": (lambda m, x, w: _F(m).prelu(x, w), [X3, A[0]], []),
    "prelu_one": (lambda m, x, w: _F(m).prelu(x, w) * 1, [A, A[0, :1]], []),
    "glu": (lambda m, x: _F(m).glu(x), [A], []),
    "glu_dim": (lambda m, x: _F(m).glu(x, 1) * 1, [X3], []),
    "softmin": (lambda m, x: _F(m).softmin(x, 1), [A], []),
    "softshrink": (lambda m, x: _F(m).softshrink(x, 0.7), [A], []),
    "hardshrink": (lambda m, x: _F(m).hardshrink(x), [A], []),
    "threshold": (lambda m, x: _F(m).threshold(x, 0.1, 20.0), [A], []),
    "rrelu_eval": (lambda m, x: _F(m).rrelu(x), [A], []),
    "margin_ranking_loss": (lambda m, x, y, t: _F(m).margin_ranking_loss(x[0], y[0], t, 0.5),
                            [A, B], [SIGN4]),
    "margin_ranking_loss_none": (lambda m, x, y, t: _F(m).margin_ranking_loss(
        x[0], y[0], t, reduction="none") * 1, [A, B], [SIGN4]),
    "hinge_embedding_loss": (lambda m, x, t: _F(m).hinge_embedding_loss(x[0], t, 1.5,
                                                                        reduction="sum"),
                             [A], [SIGN4]),
    "cosine_embedding_loss": (lambda m, x, y, t: _F(m).cosine_embedding_loss(x, y, t, 0.1),
                              [A, B], [SIGN3]),
    "cosine_embedding_loss_0d": (lambda m, x, y, t: _F(m).cosine_embedding_loss(
        x[0], y[0], t[0], reduction="none") * 1, [A, B], [SIGN3]),
    "triplet_margin_loss": (lambda m, a, p, n: _F(m).triplet_margin_loss(a, p, n), [A, B, C], []),
    "triplet_margin_loss_none": (lambda m, a, p, n: _F(m).triplet_margin_loss(
        a, p, n, margin=2.0, p=1, swap=True, reduction="none") * 1, [A, B, C], []),
    "poisson_nll_loss": (lambda m, x, t: _F(m).poisson_nll_loss(x, t * 2, full=True),
                         [A, POS], []),
    "poisson_nll_loss_rate": (lambda m, x, t: _F(m).poisson_nll_loss(
        x, t * 2, log_input=False, full=True, reduction="sum"), [POS, POS[::-1].copy()], []),
    "gaussian_nll_loss": (lambda m, x, t, v: _F(m).gaussian_nll_loss(x, t, v, full=True),
                          [A, B, POS], []),
    "gaussian_nll_loss_homo": (lambda m, x, t, v: _F(m).gaussian_nll_loss(
        x, t, v[:, 0], reduction="none") * 1, [A, B, POS], []),
    "soft_margin_loss": (lambda m, x, t: _F(m).soft_margin_loss(x[0], t), [A], [SIGN4]),
    "multilabel_soft_margin_loss": (lambda m, x, w, t: _F(m).multilabel_soft_margin_loss(
        x, t, w[0]), [A, POS], [LABELS]),
    "multi_margin_loss": (lambda m, x, t: _F(m).multi_margin_loss(x, t), [A], [CLASSES]),
    "multi_margin_loss_p2": (lambda m, x, t, w: _F(m).multi_margin_loss(
        x, t, p=2, margin=0.5, weight=w, reduction="none"), [A], [CLASSES, POS[0]]),
    "multi_margin_1d": (lambda m, x, t: _F(m).multi_margin_loss(x[0], t[1]), [A], [CLASSES]),
    "bilinear": (lambda m, x, y, w, b: _F(m).bilinear(x, y, w, b),
                 [A, B[:, :3], rng.uniform(-1, 1, (2, 4, 3)), A[0, :2]], []),
}


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_matches_pytorch(case, dtype):
    fn, arrays, consts = CASES[case]
    (yo, no, go), (yt, nt, gt) = _run(fn, arrays, dtype, consts)
    if case not in NODE_DIFFERS:
        assert no == nt
    assert yo.dtype == yt.dtype and yo.shape == yt.shape
    np.testing.assert_allclose(yo, yt, **TOL[dtype])
    for a, b in zip(go, gt):
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_allclose(a, b, **TOL[dtype])


GRADCHECK = ["normalize", "cosine_similarity", "group_norm", "instance_norm", "rms_norm",
             "local_response_norm", "prelu", "glu", "softshrink", "cosine_embedding_loss",
             "triplet_margin_loss", "gaussian_nll_loss", "multilabel_soft_margin_loss",
             "multi_margin_loss_p2", "bilinear", "poisson_nll_loss"]


@pytest.mark.parametrize("case", GRADCHECK)
def test_gradcheck(case):
    fn, arrays, consts = CASES[case]
    xs = [numgrad.tensor(a, requires_grad=True) for a in arrays]
    cs = [numgrad.tensor(c) for c in consts]
    f = lambda *t: fn(numgrad, *t, *cs)  # noqa: E731
    assert numgrad.autograd.gradcheck(f, xs)
    assert numgrad.autograd.gradgradcheck(f, xs)


def test_nan_and_edges():
    x = [float("nan"), -0.5, 0.5, -0.6, 0.6, 0.0]
    for f in ("softshrink", "hardshrink"):
        a = getattr(_F(numgrad), f)(numgrad.tensor(x)).numpy()
        b = getattr(_F(torch), f)(torch.tensor(x)).numpy()
        np.testing.assert_array_equal(a, b)
    a = _F(numgrad).threshold(numgrad.tensor(x), 0.5, -1.0).numpy()
    np.testing.assert_array_equal(a, _F(torch).threshold(torch.tensor(x), 0.5, -1.0).numpy())
    # 0-d and empty inputs
    for m in (numgrad, torch):
        assert _F(m).softshrink(m.tensor(2.0)).shape == ()
        assert _F(m).glu(m.zeros(0, 4)).shape == (0, 2)
        assert tuple(_F(m).normalize(m.zeros(0, 3)).shape) == (0, 3)
    # non-contiguous input
    t = rng.uniform(-1, 1, (4, 3))
    a = _F(numgrad).normalize(numgrad.tensor(t).t(), dim=0).numpy()
    b = _F(torch).normalize(torch.tensor(t).t(), dim=0).numpy()
    np.testing.assert_allclose(a, b, **TOL["float64"])
    # threshold in place (node MaskedFillBackward0 there, PyTorch's ThresholdBackward1)
    done = []
    for m in (numgrad, torch):
        t = m.tensor(x[1:])
        assert _F(m).threshold(t, 0.0, 9.0, inplace=True) is t
        done.append(t.numpy())
    np.testing.assert_array_equal(*done)


@pytest.mark.parametrize("case", ["threshold", "rrelu", "dropout1d", "alpha"])
def test_in_place_forms_match_pytorch(case):
    """The in-place forms: the same values, node and input gradient as PyTorch's (threshold_
    and rrelu_ save their output: ThresholdBackward1, RreluWithNoiseBackward1)."""
    out = []
    for m in (numgrad, torch):
        F = _F(m)
        shape = (3, 2, 2) if case == "dropout1d" else (3, 4)
        x = m.tensor(A.reshape(shape), requires_grad=True)
        y = x * 1
        if case == "threshold":
            r = F.threshold(y, 0.1, -2.0, inplace=True)
        elif case == "rrelu":
            r = F.rrelu(y, 0.1, 0.3, inplace=True)
        elif case == "dropout1d":
            r = F.dropout1d(y, 1.0, inplace=True)  # (p=1: zeros, no draw)
        else:
            r = F.alpha_dropout(y, 0.5, training=False, inplace=True)
        assert r is y
        name = None if y.grad_fn is None else y.grad_fn.name()
        y.backward(m.tensor(B.reshape(shape)))
        out.append((y.detach().numpy(), name, x.grad.numpy()))
    (vo, no, go), (vt, nt, gt) = out
    assert no == nt
    np.testing.assert_allclose(vo, vt, **TOL["float64"])
    np.testing.assert_allclose(go, gt, **TOL["float64"])


def _error(fn):
    """The (type, message) fn(m) raises on numgrad and on PyTorch."""
    out = []
    for m in (numgrad, torch):
        with pytest.raises(Exception) as info, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fn(m)
        out.append((type(info.value), str(info.value).replace("numgrad", "torch")))
    return out


ERRORS = {
    "glu_scalar": lambda m: _F(m).glu(m.tensor(1.0)),
    "glu_odd": lambda m: _F(m).glu(m.zeros(2, 3)),
    "softshrink_lambda": lambda m: _F(m).softshrink(m.zeros(3), -1.0),
    "softshrink_lambda_double": lambda m: _F(m).softshrink(m.zeros(3, dtype=m.float64), -1.5),
    "softshrink_long": lambda m: _F(m).softshrink(m.zeros(3).long()),
    "hardshrink_long": lambda m: _F(m).hardshrink(m.zeros(3).long()),
    "rrelu_long": lambda m: _F(m).rrelu(m.zeros(3).long()),
    "prelu_weight_2d": lambda m: _F(m).prelu(m.zeros(2, 4), m.ones(2, 2)),
    "group_norm_weight": lambda m: _F(m).group_norm(m.zeros(2, 4, 3), 2, m.ones(3)),
    "multi_margin_weight": lambda m: _F(m).multi_margin_loss(m.zeros(2, 3), m.zeros(2).long(),
                                                             weight=m.ones(4)),
    "soft_margin_target_grad": lambda m: _F(m).soft_margin_loss(
        m.zeros(2), m.ones(2, requires_grad=True)),
    "multi_margin_empty": lambda m: _F(m).multi_margin_loss(m.zeros(2, 0), m.zeros(2).long()),
    "rms_norm_weight": lambda m: _F(m).rms_norm(m.zeros(2, 3), (3,), m.ones(2)),
    "group_norm_1d": lambda m: _F(m).group_norm(m.zeros(3), 1),
    "group_norm_single": lambda m: _F(m).group_norm(m.zeros(1, 2), 2),
    "group_norm_divisible": lambda m: _F(m).group_norm(m.zeros(2, 4, 3), 3),
    "instance_norm_spatial": lambda m: _F(m).instance_norm(m.zeros(2, 3, 1)),
    "rms_norm_shape": lambda m: _F(m).rms_norm(m.zeros(2, 3), (4, 5)),
    "lrn_dim": lambda m: _F(m).local_response_norm(m.zeros(2, 3), 2),
    "prelu_weight": lambda m: _F(m).prelu(m.zeros(2, 3), m.ones(2)),
    "margin_ranking_dims": lambda m: _F(m).margin_ranking_loss(m.zeros(3), m.zeros(3),
                                                               m.zeros(1, 3)),
    "cosine_embedding_target": lambda m: _F(m).cosine_embedding_loss(m.zeros(2, 3),
                                                                     m.zeros(2, 3),
                                                                     m.zeros(2, 1)),
    "cosine_embedding_inputs": lambda m: _F(m).cosine_embedding_loss(m.zeros(3), m.zeros(3),
                                                                     m.ones(2)),
    "triplet_margin": lambda m: _F(m).triplet_margin_loss(m.zeros(2), m.zeros(2), m.zeros(2),
                                                          margin=0.0),
    "triplet_dims": lambda m: _F(m).triplet_margin_loss(m.zeros(2, 2), m.zeros(2), m.zeros(2)),
    "poisson_reduction": lambda m: _F(m).poisson_nll_loss(m.zeros(2), m.zeros(2),
                                                          reduction="avg"),
    "gaussian_negative": lambda m: _F(m).gaussian_nll_loss(m.zeros(2), m.zeros(2),
                                                           -m.ones(2)),
    "gaussian_size": lambda m: _F(m).gaussian_nll_loss(m.zeros(2, 3), m.zeros(2, 3),
                                                       m.ones(3, 3)),
    "multi_margin_p": lambda m: _F(m).multi_margin_loss(m.zeros(2, 3), m.zeros(2).long(), p=3),
    "multi_margin_target": lambda m: _F(m).multi_margin_loss(m.zeros(2, 3),
                                                             m.zeros(3).long()),
    "multi_margin_weight_grad": lambda m: _F(m).multi_margin_loss(
        m.zeros(2, 3), m.zeros(2).long(), weight=m.ones(3, requires_grad=True)),
    "multilabel_reduction": lambda m: _F(m).multilabel_soft_margin_loss(m.zeros(2), m.zeros(2),
                                                                        reduction="x"),
    "dropout_p": lambda m: _F(m).dropout2d(m.zeros(2, 2, 2), 1.5),
    "dropout1d_dims": lambda m: _F(m).dropout1d(m.zeros(2, 2, 2, 2)),
    "bilinear_dims": lambda m: _F(m).bilinear(m.zeros(2, 3), m.zeros(3), m.zeros(1, 3, 3)),
    "bilinear_size": lambda m: _F(m).bilinear(m.zeros(2, 3), m.zeros(2, 2), m.zeros(1, 3, 3)),
    "rrelu_bounds": lambda m: _F(m).rrelu(m.zeros(2), 0.5, 0.1, training=True),
    "softmax2d": lambda m: m.nn.Softmax2d()(m.zeros(2, 2)),
    "groupnorm_module": lambda m: m.nn.GroupNorm(3, 4),
    "instancenorm_dims": lambda m: m.nn.InstanceNorm1d(3)(m.zeros(2, 3, 4, 5)),
    "instancenorm_affine": lambda m: m.nn.InstanceNorm1d(3, affine=True)(m.zeros(2, 4, 5)),
    "triplet_module": lambda m: m.nn.TripletMarginLoss(margin=-1.0),
    "multimargin_module": lambda m: m.nn.MultiMarginLoss(weight=m.ones(2, 2)),
    "parameterlist_call": lambda m: m.nn.ParameterList()(1),
    "parameterlist_index": lambda m: m.nn.ParameterList([m.ones(2)])[3],
    "parameterlist_extend": lambda m: m.nn.ParameterList().extend(m.ones(2)),
    "parameterdict_key": lambda m: m.nn.ParameterDict()[1],
    "parameterdict_update": lambda m: m.nn.ParameterDict().update([("a", m.ones(1), 3)]),
    "moduledict_update": lambda m: m.nn.ModuleDict().update(3),
    "orthogonal_1d": lambda m: m.nn.init.orthogonal_(m.empty(3)),
    "dirac_dims": lambda m: m.nn.init.dirac_(m.empty(3, 3)),
    "dirac_groups": lambda m: m.nn.init.dirac_(m.empty(3, 3, 3), groups=2),
}


@pytest.mark.parametrize("case", sorted(ERRORS))
def test_errors_match_pytorch(case):
    (to, mo), (tt, mt) = _error(ERRORS[case])
    assert to is tt
    assert mo == mt


def test_dropouts_train_and_eval():
    numgrad.manual_seed(0)
    F = _F(numgrad)
    x = numgrad.ones(4, 6, 5, requires_grad=True)
    # eval: the input itself
    for f in (F.dropout1d, F.dropout2d, F.dropout3d, F.alpha_dropout):
        assert f(x, 0.5, training=False) is x
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        y = F.dropout1d(x, 0.5)
        y3 = F.dropout2d(x, 0.5)
    for out in (y, y3):
        v = out.detach().numpy()
        # whole channels dropped (constant over the last dimension), the rest scaled by 2
        assert np.all(v.min(-1) == v.max(-1))
        assert set(np.unique(v)) <= {0.0, 2.0}
        assert 0 < (v == 0).mean() < 1
    assert y.grad_fn.name() == "MulBackward0"
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), y.detach().numpy())
    # unbatched dropout1d: per channel; dropout3d on (C, D, H, W)
    v = F.dropout1d(numgrad.ones(8, 5), 0.5).numpy()
    assert np.all(v.min(-1) == v.max(-1))
    v = F.dropout3d(numgrad.ones(8, 2, 2, 2), 0.5).numpy().reshape(8, -1)
    assert np.all(v.min(-1) == v.max(-1))
    # p=1: zeros
    assert F.dropout2d(numgrad.ones(2, 3, 2, 2), 1.0).numpy().sum() == 0
    # in place
    z = numgrad.ones(3, 4, 2)
    assert F.dropout1d(z, 0.5, inplace=True) is z
    # alpha dropout: the kept values are a*x + b, the dropped ones a*alpha' + b, mean 0 and
    # variance 1 kept for a standard normal input
    numgrad.manual_seed(1)
    big = numgrad.randn(200000, dtype=numgrad.float64)
    out = F.alpha_dropout(big, 0.2, training=True)
    assert out.grad_fn is None
    assert abs(float(out.mean())) < 0.02 and abs(float(out.std()) - 1) < 0.02
    p = 0.2
    alpha = 1.7580993408473766
    a = 1 / math.sqrt((alpha * alpha * p + 1) * (1 - p))
    dropped = -alpha * a + alpha * a * p
    vals = out.numpy()
    kept = np.isclose(vals, big.numpy() * a + alpha * a * p)
    assert np.all(kept | np.isclose(vals, dropped))
    assert abs((~kept).mean() - p) < 0.01
    xr = numgrad.randn(3, 4, requires_grad=True)
    assert F.alpha_dropout(xr, 0.5, True).grad_fn.name() == "AddBackward0"
    # modules
    for cls, shape in ((numgrad.nn.Dropout1d, (3, 4, 5)), (numgrad.nn.Dropout2d, (2, 3, 4, 5)),
                       (numgrad.nn.Dropout3d, (2, 3, 2, 2, 2)),
                       (numgrad.nn.AlphaDropout, (3, 4))):
        mod = cls(0.3)
        t = numgrad.randn(*shape)
        assert repr(mod) == repr(getattr(torch.nn, cls.__name__)(0.3))
        assert mod.eval()(t) is t
        assert not np.array_equal(mod.train()(t).numpy(), t.numpy())


def test_rrelu_training_draws_from_numgrads_generator():
    F = _F(numgrad)
    x = numgrad.tensor(np.linspace(-2, 2, 41), requires_grad=True)
    numgrad.manual_seed(3)
    y = F.rrelu(x, 0.1, 0.3, training=True)
    numgrad.manual_seed(3)
    y2 = F.rrelu(x, 0.1, 0.3, training=True)
    np.testing.assert_array_equal(y.detach().numpy(), y2.detach().numpy())
    xv, yv = x.detach().numpy(), y.detach().numpy()
    np.testing.assert_array_equal(yv[xv > 0], xv[xv > 0])
    slopes = yv[xv < 0] / xv[xv < 0]
    assert np.all((slopes >= 0.1) & (slopes <= 0.3)) and np.unique(slopes).size > 5
    y.sum().backward()
    g = x.grad.numpy()
    np.testing.assert_array_equal(g[xv > 0], 1.0)
    np.testing.assert_allclose(g[xv < 0], slopes)
    mod = numgrad.nn.RReLU()
    assert mod.eval()(x).detach().numpy()[0] == pytest.approx(-2 * (1 / 8 + 1 / 3) / 2)
    assert repr(numgrad.nn.RReLU(0.1, 0.2, inplace=True)) == repr(
        torch.nn.RReLU(0.1, 0.2, inplace=True))


def _copy_params(dst, src):
    """PyTorch's values into numgrad's module through load_state_dict."""
    state = OrderedDict((k, numgrad.tensor(v.detach().numpy())) for k, v in
                        src.state_dict().items())
    result = dst.load_state_dict(state)
    assert list(dst.state_dict()) == list(src.state_dict())
    return result


MODULES = [
    ("Bilinear", (3, 4, 5), [(2, 3), (2, 4)]),
    ("Bilinear", (3, 4, 2, False), [(3,), (4,)]),
    ("GroupNorm", (2, 4), [(3, 4, 5)]),
    ("GroupNorm", (1, 4, 1e-3, False), [(3, 4)]),
    ("InstanceNorm1d", (4,), [(3, 4, 5)]),
    ("InstanceNorm1d", (4, 1e-5, 0.1, True, True), [(4, 5)]),
    ("InstanceNorm2d", (4, 1e-5, None, True, True), [(2, 4, 3, 3)]),
    ("RMSNorm", (5,), [(3, 5)]),
    ("RMSNorm", ((4, 5), 1e-4, False), [(3, 4, 5)]),
    ("LocalResponseNorm", (3,), [(2, 5, 4)]),
    ("PReLU", (), [(2, 3)]),
    ("PReLU", (3, 0.1), [(2, 3, 4)]),
    ("GLU", (), [(2, 4)]),
    ("Softmin", (1,), [(2, 4)]),
    ("Softmax2d", (), [(2, 3, 2, 2)]),
    ("Softshrink", (0.3,), [(3, 4)]),
    ("Hardshrink", (), [(3, 4)]),
    ("Threshold", (0.2, -1.0), [(3, 4)]),
    ("CosineSimilarity", (0, 1e-6), [(3, 4), (3, 4)]),
    ("PairwiseDistance", (1.0,), [(3, 4), (3, 4)]),
    ("TripletMarginLoss", (0.5, 1.0), [(3, 4), (3, 4), (3, 4)]),
    ("SoftMarginLoss", (), [(4,), None]),
    ("MarginRankingLoss", (0.2,), [(4,), (4,), None]),
    ("HingeEmbeddingLoss", (0.5,), [(4,), None]),
    ("CosineEmbeddingLoss", (), [(4, 3), (4, 3), None]),
    ("PoissonNLLLoss", (), [(3, 4), "pos"]),
    ("GaussianNLLLoss", (), [(3, 4), (3, 4), "pos"]),
    ("MultiLabelSoftMarginLoss", (), [(3, 4), "labels"]),
    ("MultiMarginLoss", (2, 0.7), [(3, 4), "classes"]),
]


def _module_inputs(specs, seed):
    r = np.random.default_rng(seed)
    out = []
    for s in specs:
        if s is None:
            out.append((np.sign(r.uniform(-1, 1, 4)), False))
        elif s == "pos":
            out.append((r.uniform(0.2, 2, (3, 4)), False))
        elif s == "labels":
            out.append(((r.uniform(size=(3, 4)) > 0.5) * 1.0, False))
        elif s == "classes":
            out.append((np.array([0, 3, 2]), False))
        else:
            out.append((r.uniform(-2, 2, s), True))
    return out


@pytest.mark.parametrize("name, args, specs", MODULES,
                         ids=[f"{n}-{i}" for i, (n, _, _) in enumerate(MODULES)])
def test_modules_match_pytorch(name, args, specs):
    torch.manual_seed(0)
    tmod = getattr(torch.nn, name)(*args).double()
    nmod = getattr(numgrad.nn, name)(*args).double()
    assert repr(nmod) == repr(tmod)
    assert [(k, tuple(p.shape)) for k, p in nmod.named_parameters()] == [
        (k, tuple(p.shape)) for k, p in tmod.named_parameters()]
    _copy_params(nmod, tmod)
    inputs = _module_inputs(specs, 7)
    outs = []
    for m, mod in ((numgrad, nmod), (torch, tmod)):
        xs = [m.tensor(a, requires_grad=g) if g else m.tensor(a) for a, g in inputs]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            y = mod(*xs)
            y2 = mod.eval()(*xs)  # (instance norm with running statistics: those in eval)
            mod.train()
        y.sum().backward() if y.requires_grad else None
        grads = [x.grad.numpy() for x in xs if x.requires_grad]
        pgrads = [p.grad.numpy() for p in mod.parameters()]
        buffers = [b.numpy() for b in mod.buffers()]
        outs.append((y.detach().numpy(), y2.detach().numpy(), grads, pgrads, buffers))
    for a, b in zip(outs[0], outs[1]):
        if isinstance(a, list):
            assert len(a) == len(b)
            for u, v in zip(a, b):
                np.testing.assert_allclose(u, v, **TOL["float64"])
        else:
            np.testing.assert_allclose(a, b, **TOL["float64"])


def test_instance_norm_running_stats():
    rm_n, rv_n = numgrad.zeros(3), numgrad.ones(3)
    rm_t, rv_t = torch.zeros(3), torch.ones(3)
    x = rng.uniform(-1, 3, (4, 3, 5)).astype(np.float32)
    yn = _F(numgrad).instance_norm(numgrad.tensor(x), rm_n, rv_n, momentum=0.3)
    yt = _F(torch).instance_norm(torch.tensor(x), rm_t, rv_t, momentum=0.3)
    np.testing.assert_allclose(yn.numpy(), yt.numpy(), **TOL["float32"])
    np.testing.assert_allclose(rm_n.numpy(), rm_t.numpy(), **TOL["float32"])
    np.testing.assert_allclose(rv_n.numpy(), rv_t.numpy(), **TOL["float32"])
    yn = _F(numgrad).instance_norm(numgrad.tensor(x), rm_n, rv_n, use_input_stats=False)
    yt = _F(torch).instance_norm(torch.tensor(x), rm_t, rv_t, use_input_stats=False)
    np.testing.assert_allclose(yn.numpy(), yt.numpy(), **TOL["float32"])
    # the module: eval with track_running_stats uses them; num_batches_tracked counts
    n = numgrad.nn.InstanceNorm1d(3, track_running_stats=True)
    t = torch.nn.InstanceNorm1d(3, track_running_stats=True)
    for _ in range(2):
        n(numgrad.tensor(x))
        t(torch.tensor(x))
    for k, v in t.state_dict().items():
        np.testing.assert_allclose(n.state_dict()[k].numpy(), v.numpy(), **TOL["float32"])
    np.testing.assert_allclose(n.eval()(numgrad.tensor(x)).numpy(),
                               t.eval()(torch.tensor(x)).numpy(), **TOL["float32"])


def test_module_dict_and_lists():
    nn, tnn = numgrad.nn, torch.nn
    md = nn.ModuleDict({"lin": nn.Linear(2, 3), "act": nn.ReLU()})
    tmd = tnn.ModuleDict({"lin": tnn.Linear(2, 3), "act": tnn.ReLU()})
    assert repr(md) == repr(tmd)
    assert list(md.state_dict()) == list(tmd.state_dict())
    md["out"] = nn.Linear(3, 1)
    md.update([("drop", nn.Dropout())])
    assert list(md.keys()) == ["lin", "act", "out", "drop"] and "out" in md and len(md) == 4
    assert md.pop("act").__class__ is nn.ReLU and list(md) == ["lin", "out", "drop"]
    del md["drop"]
    assert [k for k, _ in md.named_parameters()] == ["lin.weight", "lin.bias", "out.weight",
                                                     "out.bias"]
    owner = nn.Module()
    owner.blocks = md
    assert list(owner.state_dict()) == ["blocks.lin.weight", "blocks.lin.bias",
                                        "blocks.out.weight", "blocks.out.bias"]
    md.clear()
    assert len(md) == 0

    pl = nn.ParameterList([numgrad.ones(3, 4), nn.Parameter(numgrad.zeros(2))])
    tpl = tnn.ParameterList([torch.ones(3, 4), tnn.Parameter(torch.zeros(2))])
    assert repr(pl) == repr(tpl).replace("torch.", "numgrad.")
    assert all(isinstance(p, nn.Parameter) for p in pl) and pl[0].requires_grad
    pl.append(numgrad.ones(1))
    pl += [numgrad.ones(5)]
    assert len(pl) == 4 and list(pl.state_dict()) == ["0", "1", "2", "3"]
    assert pl[-1].shape == (5,) and len(pl[1:3]) == 2
    pl[0] = numgrad.zeros(2, 2)
    assert pl[0].shape == (2, 2) and isinstance(pl[0], nn.Parameter)
    assert len(list(pl.parameters())) == 4

    pd = nn.ParameterDict({"b": numgrad.ones(2), "a": nn.Parameter(numgrad.ones(3))})
    tpd = tnn.ParameterDict({"b": torch.ones(2), "a": tnn.Parameter(torch.ones(3))})
    assert repr(pd) == repr(tpd).replace("torch.", "numgrad.")
    assert list(pd) == list(tpd) == ["a", "b"]  # (a plain dict: sorted, as PyTorch)
    assert list(pd.state_dict()) == list(tpd.state_dict())
    pd["c"] = numgrad.zeros(1)
    assert isinstance(pd["c"], nn.Parameter) and "c" in pd and len(pd) == 3
    assert list(reversed(pd)) == ["c", "b", "a"]
    assert pd.get("z") is None and pd.setdefault("z", None) is None
    assert pd.pop("z") is None
    k, v = pd.popitem()
    assert k == "c" and v.shape == (1,)
    merged = pd | nn.ParameterDict(OrderedDict([("d", numgrad.ones(4))]))
    assert list(merged) == ["a", "b", "d"] and list(pd) == ["a", "b"]
    pd |= merged
    assert list(pd.keys()) == ["a", "b", "d"]
    assert [k for k, _ in pd.items()] == ["a", "b", "d"] and len(list(pd.values())) == 3
    assert list(pd.copy()) == ["a", "b", "d"]
    assert list(pd.fromkeys(["x", "y"])) == ["x", "y"]
    # load_state_dict through a container
    owner = nn.Module()
    owner.ps = nn.ParameterList([numgrad.zeros(2)])
    towner = tnn.Module()
    towner.ps = tnn.ParameterList([torch.tensor([1.0, 2.0])])
    owner.load_state_dict({k: numgrad.tensor(v.numpy()) for k, v in towner.state_dict().items()})
    np.testing.assert_array_equal(owner.ps[0].detach().numpy(), [1.0, 2.0])
    pd.clear()
    assert len(pd) == 0


def test_init_functions():
    init = numgrad.nn.init
    numgrad.manual_seed(0)
    w = numgrad.empty(4, 6)
    init.orthogonal_(w, gain=2.0)
    v = w.numpy().astype(np.float64)
    np.testing.assert_allclose(v @ v.T, 4 * np.eye(4), atol=1e-5)
    w = numgrad.empty(6, 2, 2)
    init.orthogonal_(w)
    v = w.numpy().reshape(6, 4).astype(np.float64)
    np.testing.assert_allclose(v.T @ v, np.eye(4), atol=1e-5)
    assert init.orthogonal_(numgrad.empty(0, 3)).shape == (0, 3)

    t = numgrad.empty(20000, dtype=numgrad.float64)
    init.trunc_normal_(t, mean=0.5, std=2.0, a=-1.0, b=3.0)
    v = t.numpy()
    assert v.min() >= -1.0 and v.max() <= 3.0
    # the truncated normal's mean, from PyTorch's own draw of the same distribution
    tt = torch.nn.init.trunc_normal_(torch.empty(20000, dtype=torch.float64), 0.5, 2.0, -1.0, 3.0)
    assert abs(v.mean() - tt.mean().item()) < 0.05 and abs(v.std() - tt.std().item()) < 0.05
    with pytest.warns(UserWarning, match="mean is more than 2 std"):
        init.trunc_normal_(numgrad.empty(3), mean=10.0)
    from numgrad.nn.init import _erfinv

    y = np.linspace(-0.9999, 0.9999, 2001)
    np.testing.assert_allclose(_erfinv(y), torch.erfinv(torch.tensor(y)).numpy(), rtol=1e-12,
                               atol=1e-12)

    for shape, groups in (((4, 2, 3), 1), ((4, 2, 3, 3), 2), ((6, 3, 3, 3, 3), 3)):
        n = init.dirac_(numgrad.empty(*shape), groups)
        t = torch.nn.init.dirac_(torch.empty(*shape), groups)
        np.testing.assert_array_equal(n.numpy(), t.numpy())
