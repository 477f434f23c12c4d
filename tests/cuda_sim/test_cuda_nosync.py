"""No host round-trips inside forward or backward on CUDA, for the losses and prod: nll_loss
records a target out of range on the device (raised at the next sync, with the CPU's message),
ATen's nll_loss_backward takes its total weight as a device tensor, prod's backward selects its
formula on the device, and cross_entropy's label smoothing uses tensor ops. Run in Numba's CUDA
simulator with the rest of tests/cuda_sim (see test_cuda_sim.py)."""
import numpy as np
import pytest

import numgrad
from numgrad.nn import functional as F

from test_cuda_sync import _count_transfers

RNG = np.random.default_rng(1)
X = RNG.standard_normal((5, 4)).astype(np.float32)
T = np.array([0, 3, 1, -100, 3])
W = np.linspace(0.5, 2.0, 4).astype(np.float32)


def _on(dev, v, **kw):
    return numgrad.tensor(v, device=dev, **kw)


NLL_CASES = {
    "mean": {},
    "sum": {"reduction": "sum"},
    "none": {"reduction": "none"},
    "weights": {"weight": W},
    "weights sum": {"weight": W, "reduction": "sum"},
    "ignore_index": {"ignore_index": 1},
    "weights ignore none": {"weight": W, "ignore_index": 3, "reduction": "none"},
}


def _nll(dev, kw, x):
    kw = dict(kw)
    if "weight" in kw:
        kw["weight"] = _on(dev, kw["weight"])
    target = T if kw.get("ignore_index", -100) == -100 else np.where(T < 0, 0, T)
    loss = F.nll_loss(x, _on(dev, target), **kw)
    g = _on(dev, np.arange(1, loss.numel() + 1, dtype=np.float32).reshape(loss.shape))
    return loss, g


@pytest.mark.parametrize("case", NLL_CASES)
def test_nll_loss_forward_and_backward_match_the_cpu_with_no_read_back(case):
    kw = NLL_CASES[case]
    x = _on("cuda", X, requires_grad=True)
    loss, g = _nll("cuda", kw, x)
    loss.backward(g)  # warm: launch configurations
    x.grad = None
    with _count_transfers() as counts:
        loss, g = _nll("cuda", kw, x)
        loss.backward(g)
    assert counts["d2h"] == 0
    xc = _on("cpu", X, requires_grad=True)
    lc, gc = _nll("cpu", kw, xc)
    lc.backward(gc)
    np.testing.assert_allclose(loss.detach().cpu().numpy(), lc.detach().numpy(), rtol=1e-6)
    np.testing.assert_allclose(x.grad.cpu().numpy(), xc.grad.numpy(), rtol=1e-6)


def test_aten_nll_loss_backward_takes_a_device_total_weight():
    g = _on("cuda", np.float32(2.0))
    x = _on("cuda", X)
    t = _on("cuda", np.abs(T) % 4)
    tw = _on("cuda", np.float32(3.0))
    numgrad.ops.nll_loss_backward(g, x, t, None, 1, -100, tw)  # warm
    with _count_transfers() as counts:
        got = numgrad.ops.nll_loss_backward(g, x, t, None, 1, -100, tw)
    assert counts["d2h"] == 0
    want = numgrad.ops.nll_loss_backward(g.cpu(), x.cpu(), t.cpu(), None, 1, -100, tw.cpu())
    np.testing.assert_allclose(got.cpu().numpy(), want.numpy(), rtol=1e-6)


@pytest.mark.parametrize("sync", ["synchronize", "item"])
@pytest.mark.parametrize("reduction", ["mean", "none"])
def test_a_target_out_of_range_raises_at_the_next_sync(sync, reduction):
    bad = np.array([0, 7, 1, 1, 2])
    with pytest.raises(IndexError, match="Target 7 is out of bounds."):
        F.nll_loss(_on("cpu", X), _on("cpu", bad), reduction=reduction)  # the CPU's message
    x = _on("cuda", X, requires_grad=True)
    with _count_transfers() as counts:
        loss = F.nll_loss(x, _on("cuda", bad), reduction=reduction).sum()  # no error yet
        loss.backward()
    assert counts["d2h"] == 0
    with pytest.raises(IndexError, match="Target 7 is out of bounds."):
        if sync == "synchronize":
            numgrad.cuda.synchronize()
        else:
            loss.item()
    numgrad.cuda.synchronize()  # reported once
    assert np.isfinite(F.nll_loss(x, _on("cuda", np.abs(T) % 4)).item())


PROD_CASES = {
    "no zero": np.array([[1.5, -2.0, 0.5], [2.0, 0.25, 3.0]], np.float32),
    "one zero": np.array([[1.5, 0.0, 0.5], [2.0, 0.25, 3.0]], np.float32),
    "two zeros": np.array([[0.0, 0.0, 0.5], [2.0, 0.25, 3.0]], np.float32),
    "zeros everywhere": np.array([[0.0, 4.0, 0.5], [2.0, 0.0, 0.0]], np.float32),
}


@pytest.mark.parametrize("case", PROD_CASES)
@pytest.mark.parametrize("how", ["all", "dim1", "dim0 keepdim"])
def test_prod_backward_matches_the_cpu_with_no_read_back(case, how):
    a = PROD_CASES[case]

    def f(t):
        if how == "all":
            return t.prod()
        if how == "dim1":
            return (t.prod(1) * numgrad.arange(1, 3, device=t.device)).sum()
        return numgrad.prod(t, 0, keepdim=True).sum()

    x = _on("cuda", a, requires_grad=True)
    f(x).backward()  # warm
    x.grad = None
    with _count_transfers() as counts:
        y = f(x)
        y.backward()
    assert counts["d2h"] == 0
    xc = _on("cpu", a, requires_grad=True)
    yc = f(xc)
    yc.backward()
    np.testing.assert_allclose(y.item(), yc.item(), rtol=1e-6)
    np.testing.assert_allclose(x.grad.cpu().numpy(), xc.grad.numpy(), rtol=1e-6)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weighted", [False, True])
def test_cross_entropy_with_label_smoothing_matches_the_cpu(reduction, weighted):
    results = []
    for dev in ("cuda", "cpu"):
        x = _on(dev, X, requires_grad=True)
        w = _on(dev, W) if weighted else None
        loss = F.cross_entropy(x, _on(dev, T), weight=w, reduction=reduction,
                               label_smoothing=0.2)
        loss.sum().backward()
        results.append((loss.detach().cpu().numpy(), x.grad.cpu().numpy()))
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-5, atol=1e-6)
    # every row ignored: 0/0 is nan for 'mean', as PyTorch
    if reduction == "mean":
        for dev in ("cuda", "cpu"):
            t = _on(dev, np.full(5, -100))
            w = _on(dev, W) if weighted else None
            assert np.isnan(F.cross_entropy(_on(dev, X), t, weight=w, label_smoothing=0.2).item())
