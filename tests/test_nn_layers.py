"""numgrad.nn's layers against torch.nn: Dropout, Embedding, LayerNorm, BatchNorm1d/2d, the
activations (leaky_relu, elu, selu, celu, silu, mish, softplus, hardtanh, relu6, hardswish,
hardsigmoid, logsigmoid, softsign, tanhshrink, gelu exact and tanh) and nn.utils' gradient
clipping: values, input and parameter gradients (float64 and float32), reprs, state_dict keys
and error messages, with a gradcheck of each differentiable function.

The activations are ops with PyTorch's fused nodes (``LeakyReluBackward0``, ``EluBackward0``,
``SiluBackward0``, ``GeluBackward0`` …: ops/activation.py; tests/test_activations.py checks them
further); the layers are composites of numgrad's ops for now, so their nodes are the composites'
last ops (``AddBackward0``, ``MulBackward0``, ``IndexBackward0`` …), not PyTorch's
(``NativeLayerNormBackward0``, ``NativeBatchNormBackward0``, ``EmbeddingBackward0``)."""
import math

import numpy as np
import pytest
import torch

import numgrad
import numgrad.nn.functional as F
from numgrad import nn
from numgrad.autograd import gradcheck

TF = torch.nn.functional
TOL = {np.float64: dict(rtol=1e-10, atol=1e-12), np.float32: dict(rtol=2e-5, atol=2e-6)}


def _pair(array, requires_grad=True):
    return (numgrad.tensor(array, requires_grad=requires_grad),
            torch.tensor(array, requires_grad=requires_grad))


def _close(ours, theirs, dtype=np.float64):
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), **TOL[dtype])


def _same_error(ours, theirs, replace=(("torch.", "numgrad."),)):
    with pytest.raises(Exception) as want:
        theirs()
    with pytest.raises(type(want.value)) as got:
        ours()
    expected = str(want.value)
    for a, b in replace:
        expected = expected.replace(a, b)
    assert str(got.value) == expected


def _copy_weights(theirs, ours):
    ours.load_state_dict({k: numgrad.tensor(v.numpy()) for k, v in theirs.state_dict().items()})


def _inputs(shape, dtype, seed=0, kinks=()):
    x = np.random.default_rng(seed).normal(size=shape) * 3
    flat = x.reshape(-1)
    flat[:len(kinks)] = kinks
    return x.astype(dtype)


# ------------------------------------------------------------------------------ activations
ACTIVATIONS = [
    ("leaky_relu", {}, (0.0,)),
    ("leaky_relu", dict(negative_slope=0.2), (0.0,)),
    ("elu", {}, (0.0, -800.0, 800.0)),
    ("elu", dict(alpha=0.5), (0.0,)),
    ("silu", {}, (0.0, -800.0, 800.0)),
    ("softplus", {}, (0.0, 20.0, 800.0, -800.0)),
    ("softplus", dict(beta=2.0, threshold=1.0), (0.0, 0.5, 0.25, 800.0)),
    ("hardtanh", {}, (-1.0, 1.0, 0.0)),
    ("hardtanh", dict(min_val=-0.5, max_val=2.0), (-0.5, 2.0)),
    ("relu6", {}, (0.0, 6.0)),
    ("gelu", dict(approximate="tanh"), (0.0,)),
    ("gelu", {}, (0.0, -800.0, 800.0)),
    ("mish", {}, (0.0, -800.0, 800.0)),
    ("hardswish", {}, (-3.0, 3.0, 0.0)),
    ("hardsigmoid", {}, (-3.0, 3.0, 0.0)),
    ("selu", {}, (0.0, -800.0, 800.0)),
    ("celu", dict(alpha=0.7), (0.0, -800.0)),
    ("logsigmoid", {}, (0.0, -800.0, 800.0)),
    ("softsign", {}, (0.0,)),
    ("tanhshrink", {}, (0.0,)),
]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name,kwargs,kinks", ACTIVATIONS)
def test_activation_values_and_gradients(name, kwargs, kinks, dtype):
    """Values and gradients equal PyTorch's, at the kinks and bounds too (leaky_relu's slope at
    0, hardtanh's 0 at its bounds, softplus at its threshold) and with no nan from a branch not
    selected (elu, softplus at ±800)."""
    a, b = _pair(_inputs((4, 6), dtype, kinks=kinks))
    ya, yb = getattr(F, name)(a, **kwargs), getattr(TF, name)(b, **kwargs)
    _close(ya, yb, dtype)
    assert ya.grad_fn.name() == yb.grad_fn.name()
    g = np.random.default_rng(1).normal(size=(4, 6)).astype(dtype)
    ya.backward(numgrad.tensor(g))
    yb.backward(torch.tensor(g))
    assert np.isfinite(a.grad.numpy()).all()
    _close(a.grad, b.grad, dtype)


@pytest.mark.parametrize("name,kwargs,kinks", ACTIVATIONS)
def test_activation_gradcheck(name, kwargs, kinks):
    x = numgrad.tensor(_inputs((3, 4), np.float64, seed=2) + 0.01, requires_grad=True)
    assert gradcheck(lambda t: getattr(F, name)(t, **kwargs), (x,))


MODULES = [
    ("LeakyReLU", (), {}), ("LeakyReLU", (0.2, True), {}), ("ELU", (), {}),
    ("ELU", (), dict(alpha=0.5, inplace=True)), ("SiLU", (), {}), ("SiLU", (True,), {}),
    ("Softplus", (), {}), ("Softplus", (2, 5), {}), ("Hardtanh", (), {}),
    ("Hardtanh", (-2.0, 3.0, True), {}), ("ReLU6", (), {}), ("ReLU6", (True,), {}),
    ("GELU", (), {}), ("GELU", ("tanh",), {}), ("Mish", (), {}), ("Mish", (True,), {}),
    ("Hardswish", (), {}), ("Hardsigmoid", (True,), {}), ("SELU", (), {}), ("SELU", (True,), {}),
    ("CELU", (0.5,), {}), ("CELU", (), dict(inplace=True)), ("LogSigmoid", (), {}),
    ("Softsign", (), {}), ("Tanhshrink", (), {}),
]


@pytest.mark.parametrize("cls,args,kwargs", MODULES)
def test_activation_modules(cls, args, kwargs):
    ours, theirs = getattr(nn, cls)(*args, **kwargs), getattr(torch.nn, cls)(*args, **kwargs)
    assert str(ours) == str(theirs)
    x = _inputs((3, 5), np.float64, kinks=(0.0, 1.0, -1.0))
    a, b = _pair(x)
    ya, yb = ours(a * 1.0), theirs(b * 1.0)  # (a non-leaf, so inplace may write into it)
    _close(ya, yb)
    assert ya.grad_fn.name() == yb.grad_fn.name()
    ya.sum().backward()
    yb.sum().backward()
    _close(a.grad, b.grad)


def test_activation_errors():
    _same_error(lambda: F.gelu(numgrad.zeros(2), approximate="x"),
                lambda: TF.gelu(torch.zeros(2), approximate="x"))
    _same_error(lambda: F.hardtanh(numgrad.zeros(2), 2.0, 1.0),
                lambda: TF.hardtanh(torch.zeros(2), 2.0, 1.0))
    _same_error(lambda: nn.Hardtanh(1, 1), lambda: torch.nn.Hardtanh(1, 1))


# ------------------------------------------------------------------------------ dropout
def test_dropout_statistics_scale_and_gradient():
    """Seed-independent: the kept fraction is near 1 - p, each kept value is exactly
    x / (1 - p), and the gradient is the mask times the scale."""
    p = 0.3
    x = numgrad.tensor(np.random.default_rng(0).uniform(1, 2, size=(200, 500)),
                       requires_grad=True)
    y = F.dropout(x, p)
    kept = y.detach().numpy() != 0
    assert abs(kept.mean() - (1 - p)) < 0.01  # 100000 draws: the std is 0.0014
    scale = 1 / (1 - p)
    xn = x.detach().numpy()
    np.testing.assert_array_equal(y.detach().numpy()[kept], (xn * scale)[kept])
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), kept * scale)


def test_dropout_modes_and_edges():
    x = numgrad.randn(4, 5, requires_grad=True)
    assert F.dropout(x, 0.5, training=False) is x
    assert F.dropout(x, 0.0) is x
    m = nn.Dropout(0.4)
    m.eval()
    assert m(x) is x
    m.train()
    assert m(x).shape == x.shape
    z = F.dropout(x, 1.0)
    np.testing.assert_array_equal(z.detach().numpy(), np.zeros((4, 5), np.float32))
    z.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros((4, 5), np.float32))
    y = numgrad.ones(1000)
    out = F.dropout(y, 0.5, inplace=True)
    assert out is y and set(np.unique(y.numpy())) <= {0.0, 2.0}
    assert str(nn.Dropout()) == str(torch.nn.Dropout())
    assert str(nn.Dropout(0.2, True)) == str(torch.nn.Dropout(0.2, True))


@pytest.mark.parametrize("p", [-0.1, 1.5])
def test_dropout_errors(p):
    _same_error(lambda: F.dropout(numgrad.ones(3), p), lambda: TF.dropout(torch.ones(3), p))
    _same_error(lambda: nn.Dropout(p), lambda: torch.nn.Dropout(p))


# ------------------------------------------------------------------------------ embedding
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("padding_idx", [None, 2, -1])
def test_embedding_functional(padding_idx, dtype):
    w = np.random.default_rng(0).normal(size=(6, 3)).astype(dtype)
    idx = np.array([[0, 2, 2, 5], [1, 0, 4, 2]])
    wa, wb = _pair(w)
    ya = F.embedding(numgrad.tensor(idx), wa, padding_idx=padding_idx)
    yb = TF.embedding(torch.tensor(idx), wb, padding_idx=padding_idx)
    _close(ya, yb, dtype)
    g = np.random.default_rng(1).normal(size=yb.shape).astype(dtype)
    ya.backward(numgrad.tensor(g))
    yb.backward(torch.tensor(g))
    _close(wa.grad, wb.grad, dtype)


def test_embedding_scale_grad_by_freq_and_max_norm():
    w = np.random.default_rng(0).normal(size=(6, 3)) * 2
    idx = np.array([[0, 2, 2, 5], [1, 0, 4, 2]])
    wa, wb = _pair(w)
    ya = F.embedding(numgrad.tensor(idx), wa, scale_grad_by_freq=True)
    yb = TF.embedding(torch.tensor(idx), wb, scale_grad_by_freq=True)
    (ya * ya).sum().backward()
    (yb * yb).sum().backward()
    _close(wa.grad, wb.grad)
    ma, mb = nn.Embedding(6, 3, max_norm=1.0), torch.nn.Embedding(6, 3, max_norm=1.0)
    _copy_weights(mb, ma)
    _close(ma(numgrad.tensor(idx)), mb(torch.tensor(idx)), np.float32)
    _close(ma.weight, mb.weight, np.float32)  # the picked rows renormalised in place


def test_embedding_gradcheck():
    """(Without padding_idx, which by design leaves its row's gradient at 0.)"""
    w = numgrad.tensor(np.random.default_rng(0).normal(size=(5, 3)), requires_grad=True)
    idx = numgrad.tensor([[0, 2, 2], [1, 0, 4]])
    assert gradcheck(lambda t: F.embedding(idx, t) * 1.5, (w,))


def test_embedding_module():
    numgrad.manual_seed(0)
    m = nn.Embedding(1000, 8, padding_idx=3)
    w = m.weight.detach().numpy()
    np.testing.assert_array_equal(w[3], np.zeros(8))
    assert abs(w.mean()) < 0.05 and abs(w.std() - 1) < 0.05  # N(0, 1)
    assert list(m.state_dict()) == list(torch.nn.Embedding(1000, 8).state_dict()) == ["weight"]
    for args, kwargs in [((10, 3), {}), ((10, 3), dict(padding_idx=-2)),
                         ((10, 3), dict(max_norm=2.0, norm_type=1.0)),
                         ((10, 3), dict(scale_grad_by_freq=True, sparse=True))]:
        assert str(nn.Embedding(*args, **kwargs)) == str(torch.nn.Embedding(*args, **kwargs))
    pre = np.arange(6.0).reshape(3, 2)
    ours = nn.Embedding.from_pretrained(numgrad.tensor(pre))
    theirs = torch.nn.Embedding.from_pretrained(torch.tensor(pre))
    assert ours.weight.requires_grad is theirs.weight.requires_grad is False
    assert str(ours) == str(theirs)
    assert nn.Embedding.from_pretrained(numgrad.tensor(pre), freeze=False).weight.requires_grad
    _close(ours(numgrad.tensor([2, 0])), theirs(torch.tensor([2, 0])))
    _same_error(lambda: nn.Embedding.from_pretrained(numgrad.zeros(3)),
                lambda: torch.nn.Embedding.from_pretrained(torch.zeros(3)))
    _same_error(lambda: nn.Embedding(3, 2, padding_idx=3),
                lambda: torch.nn.Embedding(3, 2, padding_idx=3))
    _same_error(lambda: F.embedding(numgrad.tensor([0]), numgrad.zeros(3, 2), padding_idx=-4),
                lambda: TF.embedding(torch.tensor([0]), torch.zeros(3, 2), padding_idx=-4))


# ------------------------------------------------------------------------------ layer norm
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("shape,normalized", [((4, 5), (5,)), ((2, 3, 4), (3, 4)), ((6,), 6)])
def test_layer_norm(shape, normalized, dtype):
    x = _inputs(shape, dtype) + 1.0
    nshape = (normalized,) if isinstance(normalized, int) else normalized
    rng = np.random.default_rng(3)
    w, bias = rng.normal(size=nshape).astype(dtype), rng.normal(size=nshape).astype(dtype)
    a, b = _pair(x)
    wa, wb = _pair(w)
    ba, bb = _pair(bias)
    ya = F.layer_norm(a, normalized, wa, ba, eps=1e-5)
    yb = TF.layer_norm(b, nshape, wb, bb, eps=1e-5)
    _close(ya, yb, dtype)
    g = rng.normal(size=shape).astype(dtype)
    ya.backward(numgrad.tensor(g))
    yb.backward(torch.tensor(g))
    for ours, theirs in ((a, b), (wa, wb), (ba, bb)):
        _close(ours.grad, theirs.grad, dtype)


def test_layer_norm_gradcheck():
    rng = np.random.default_rng(0)
    x, w, b = (numgrad.tensor(rng.normal(size=s), requires_grad=True)
               for s in ((3, 4), (4,), (4,)))
    assert gradcheck(lambda *t: F.layer_norm(t[0], (4,), t[1], t[2]), (x, w, b))


def test_layer_norm_module_and_errors():
    for args, kwargs in [((4,), {}), (([3, 4],), dict(eps=1e-3)),
                         ((4,), dict(elementwise_affine=False)), ((4,), dict(bias=False))]:
        ours, theirs = nn.LayerNorm(*args, **kwargs), torch.nn.LayerNorm(*args, **kwargs)
        assert str(ours) == str(theirs)
        assert list(ours.state_dict()) == list(theirs.state_dict())
        x = _inputs((2, 3, 4), np.float32)
        _close(ours(numgrad.tensor(x)), theirs(torch.tensor(x)), np.float32)
    _same_error(lambda: F.layer_norm(numgrad.zeros(2, 4), (3,)),
                lambda: TF.layer_norm(torch.zeros(2, 4), (3,)))
    _same_error(lambda: F.layer_norm(numgrad.zeros(2, 4), (4,), weight=numgrad.ones(3)),
                lambda: TF.layer_norm(torch.zeros(2, 4), (4,), weight=torch.ones(3)))


# ------------------------------------------------------------------------------ batch norm
BN_CASES = [
    ("BatchNorm1d", (6, 3), {}), ("BatchNorm1d", (5, 3, 4), dict(momentum=None)),
    ("BatchNorm2d", (4, 3, 2, 5), {}), ("BatchNorm2d", (4, 3, 2, 2), dict(affine=False)),
    ("BatchNorm1d", (6, 3), dict(track_running_stats=False)),
    ("BatchNorm2d", (2, 3, 3, 3), dict(momentum=0.3, eps=1e-3, bias=False)),
]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("cls,shape,kwargs", BN_CASES)
def test_batch_norm_training_and_eval(cls, shape, kwargs, dtype):
    """A few training steps (outputs, input and parameter gradients, running statistics,
    num_batches_tracked), then eval outputs, all equal to PyTorch's from the same weights."""
    ours, theirs = getattr(nn, cls)(3, **kwargs), getattr(torch.nn, cls)(3, **kwargs)
    assert str(ours) == str(theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    if dtype == np.float64:
        ours.double()
        theirs.double()
    rng = np.random.default_rng(0)
    if ours.affine:
        with torch.no_grad():
            theirs.weight.copy_(torch.tensor(rng.normal(size=3)))
            if theirs.bias is not None:
                theirs.bias.copy_(torch.tensor(rng.normal(size=3)))
    _copy_weights(theirs, ours)
    for step in range(3):
        x = (rng.normal(size=shape) * (step + 1) + step).astype(dtype)
        a, b = _pair(x)
        ya, yb = ours(a), theirs(b)
        _close(ya, yb, dtype)
        g = rng.normal(size=shape).astype(dtype)
        ya.backward(numgrad.tensor(g))
        yb.backward(torch.tensor(g))
        _close(a.grad, b.grad, dtype)
        for (name, pa), pb in zip(ours.named_parameters(), theirs.parameters()):
            _close(pa.grad, pb.grad, dtype)
    for (name, ba), bb in zip(ours.named_buffers(), theirs.buffers()):
        _close(ba, bb, dtype)
        assert ba.dtype.is_floating_point == bb.dtype.is_floating_point
    ours.eval()
    theirs.eval()
    x = rng.normal(size=shape).astype(dtype)
    a, b = _pair(x)
    ya, yb = ours(a), theirs(b)
    _close(ya, yb, dtype)
    ya.sum().backward()
    yb.sum().backward()
    _close(a.grad, b.grad, dtype)


def test_batch_norm_functional_gradcheck():
    rng = np.random.default_rng(0)
    x, w, b = (numgrad.tensor(rng.normal(size=s), requires_grad=True)
               for s in ((4, 3, 2), (3,), (3,)))
    assert gradcheck(lambda *t: F.batch_norm(t[0], None, None, t[1], t[2], training=True),
                     (x, w, b))
    rm, rv = numgrad.tensor(rng.normal(size=3)), numgrad.tensor(rng.uniform(1, 2, size=3))
    assert gradcheck(lambda *t: F.batch_norm(t[0], rm, rv, t[1], t[2]), (x, w, b))


def test_batch_norm_errors():
    _same_error(lambda: nn.BatchNorm1d(3)(numgrad.zeros(1, 3)),
                lambda: torch.nn.BatchNorm1d(3)(torch.zeros(1, 3)))
    _same_error(lambda: nn.BatchNorm2d(3)(numgrad.zeros(1, 3, 1, 1)),
                lambda: torch.nn.BatchNorm2d(3)(torch.zeros(1, 3, 1, 1)))
    _same_error(lambda: nn.BatchNorm1d(3)(numgrad.zeros(2, 3, 4, 5)),
                lambda: torch.nn.BatchNorm1d(3)(torch.zeros(2, 3, 4, 5)))
    _same_error(lambda: nn.BatchNorm2d(3)(numgrad.zeros(2, 3)),
                lambda: torch.nn.BatchNorm2d(3)(torch.zeros(2, 3)))
    _same_error(lambda: F.batch_norm(numgrad.zeros(2, 3), None, None, training=True, eps=0.0),
                lambda: TF.batch_norm(torch.zeros(2, 3), None, None, training=True, eps=0.0))
    m = nn.BatchNorm1d(3).eval()  # a batch of one is fine in eval
    assert m(numgrad.ones(1, 3)).shape == (1, 3)


# ------------------------------------------------------------------------------ clipping
def _grads_pair(dtype=np.float64, scale=1.0):
    rng = np.random.default_rng(0)
    shapes = [(3, 4), (4,), (2, 2, 2)]
    ours, theirs = [], []
    for s in shapes:
        g = (rng.normal(size=s) * scale).astype(dtype)
        a, b = _pair(np.zeros(s, dtype))
        a.grad, b.grad = numgrad.tensor(g), torch.tensor(g)
        ours.append(a)
        theirs.append(b)
    return ours, theirs


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("max_norm,norm_type", [(1.0, 2.0), (100.0, 2.0), (0.5, 1.0),
                                                (0.5, math.inf), (2.0, 3.0)])
def test_clip_grad_norm(max_norm, norm_type, dtype):
    ours, theirs = _grads_pair(dtype)
    na = nn.utils.clip_grad_norm_(ours, max_norm, norm_type=norm_type)
    nb = torch.nn.utils.clip_grad_norm_(theirs, max_norm, norm_type=norm_type)
    assert isinstance(na, numgrad.Tensor) and na.shape == ()
    _close(na, nb, dtype)
    for a, b in zip(ours, theirs):
        _close(a.grad, b.grad, dtype)


def test_clip_grad_norm_edges_and_errors():
    p = numgrad.zeros(3, requires_grad=True)  # a single tensor, no grad: norm 0
    assert float(nn.utils.clip_grad_norm_(p, 1.0)) == 0.0
    ours, theirs = _grads_pair()
    ours[0].grad[0, 0] = float("inf")
    theirs[0].grad[0, 0] = float("inf")
    _same_error(lambda: nn.utils.clip_grad_norm_(ours, 1.0, error_if_nonfinite=True),
                lambda: torch.nn.utils.clip_grad_norm_(theirs, 1.0, error_if_nonfinite=True))
    na = nn.utils.clip_grad_norm_(ours, 1.0)
    nb = torch.nn.utils.clip_grad_norm_(theirs, 1.0)
    assert math.isinf(float(na)) and math.isinf(float(nb))
    for a, b in zip(ours, theirs):
        np.testing.assert_array_equal(a.grad.numpy(), b.grad.numpy())
    model = nn.Linear(3, 2)
    model(numgrad.ones(4, 3)).sum().backward()
    total = nn.utils.clip_grad_norm_(model.parameters(), 0.1)
    assert float(total) > 0.1
    clipped = math.sqrt(sum(float((p.grad * p.grad).sum()) for p in model.parameters()))
    assert abs(clipped - 0.1) < 1e-5


def test_clip_grad_value():
    ours, theirs = _grads_pair(scale=2.0)
    assert nn.utils.clip_grad_value_(ours, 1.5) is None
    torch.nn.utils.clip_grad_value_(theirs, 1.5)
    for a, b in zip(ours, theirs):
        _close(a.grad, b.grad)
    assert max(float(a.grad.abs().max()) for a in ours) == 1.5
