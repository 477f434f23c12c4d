"""Issue 31's names outside autograd, against PyTorch 2.13: ``nn.DataParallel`` (one device),
``nn.utils.parameters_to_vector``/``vector_to_parameters``, ``utils.data.WeightedRandomSampler``,
``F.affine_grid``, ``autocast`` (``amp``, ``cpu.amp``) and ``amp.GradScaler`` on the CPU."""
import pickle
import warnings

import numpy as np
import pytest
import torch

import numgrad

RNG = np.random.default_rng(4)


def _both(fn):
    return fn(numgrad), fn(torch)


def _np(t):
    return np.asarray(t.detach().numpy())


def _error(fn, m):
    try:
        fn(m)
    except Exception as e:  # noqa: BLE001
        return type(e).__name__, str(e).replace("numgrad", "torch")
    return None


def _same_error(fn):
    a, b = _error(fn, numgrad), _error(fn, torch)
    assert a is not None and a == b, (a, b)


def _warned(fn, m):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        result = fn(m)
    return [(i.category.__name__, str(i.message).replace("numgrad", "torch")) for i in w], result


def _net(m):
    m.manual_seed(0)
    net = m.nn.Sequential(m.nn.Linear(3, 4), m.nn.Tanh(), m.nn.Linear(4, 2)).double()
    rng = np.random.default_rng(1)
    with m.no_grad():
        for p in net.parameters():
            p.copy_(m.tensor(rng.standard_normal(tuple(p.shape))))
    return net


# ----------------------------------------------------------------- DataParallel

def test_data_parallel_on_the_cpu_is_a_pass_through_with_pytorchs_attributes():
    x = RNG.standard_normal((5, 3))

    def run(m):
        net = _net(m)
        dp = m.nn.DataParallel(net)
        y = dp(m.tensor(x))
        y.sum().backward()
        return (repr(dp), list(dp.state_dict()), dp.device_ids, dp.module is net,
                hasattr(dp, "output_device"), m.nn.parallel.DataParallel is m.nn.DataParallel,
                _np(y), [_np(p.grad) for p in net.parameters()], [n for n, _ in
                                                                   dp.named_parameters()])
    a, b = _both(run)
    assert a[:6] == b[:6]
    np.testing.assert_allclose(a[6], b[6], rtol=1e-12)
    for g1, g2 in zip(a[7], b[7]):
        np.testing.assert_allclose(g1, g2, rtol=1e-12)
    assert a[8] == b[8]


def test_data_parallel_state_dict_loads_across():
    tnet = torch.nn.DataParallel(_net(torch))
    state = {k: numgrad.tensor(v.numpy()) for k, v in tnet.state_dict().items()}
    dp = numgrad.nn.DataParallel(numgrad.nn.Sequential(
        numgrad.nn.Linear(3, 4), numgrad.nn.Tanh(), numgrad.nn.Linear(4, 2)).double())
    dp.load_state_dict(state)
    np.testing.assert_array_equal(_np(dp.module[0].weight), tnet.module[0].weight.detach().numpy())
    _same_error(lambda m: m.nn.parallel.data_parallel(m.nn.Linear(2, 1), m.ones(1, 2)))


# ----------------------------------------------------------------- parameters <-> vector

def test_parameters_to_vector_and_back():
    def run(m):
        net = _net(m)
        v = m.nn.utils.parameters_to_vector(net.parameters())
        (v * v).sum().backward()
        grads = [_np(p.grad) for p in net.parameters()]
        vec = m.tensor(np.arange(v.numel(), dtype=np.float64))
        m.nn.utils.vector_to_parameters(vec, net.parameters())
        with m.no_grad():
            vec[0] = 100.0  # the parameters are views of vec, as in PyTorch
        return (_np(v), v.grad_fn.name(), grads, [_np(p) for p in net.parameters()],
                [type(p).__name__ for p in net.parameters()],
                [p.requires_grad for p in net.parameters()],
                _np(m.nn.utils.parameters_to_vector(net[0].weight)))
    a, b = _both(run)
    np.testing.assert_array_equal(a[0], b[0])
    assert a[1] == b[1] and a[4:6] == b[4:6]
    for x, y in zip(a[2] + a[3] + [a[6]], b[2] + b[3] + [b[6]]):
        np.testing.assert_allclose(x, y, rtol=1e-12)

    _same_error(lambda m: m.nn.utils.vector_to_parameters([1.0], _net(m).parameters()))
    _same_error(lambda m: m.nn.utils.vector_to_parameters(m.zeros(3, dtype=m.float64),
                                                          _net(m).parameters()))


# ----------------------------------------------------------------- WeightedRandomSampler

def test_weighted_random_sampler():
    w = [0.1, 0.9, 0.4, 0.7, 3.0, 0.6]
    numgrad.manual_seed(0)
    s = numgrad.utils.data.WeightedRandomSampler(w, 20000)
    drawn = np.bincount(list(s), minlength=6) / 20000
    np.testing.assert_allclose(drawn, np.array(w) / sum(w), atol=0.015)
    assert len(s) == 20000
    s = numgrad.utils.data.WeightedRandomSampler(w, 6, replacement=False)
    assert sorted(s) == list(range(6))
    s = numgrad.utils.data.WeightedRandomSampler(w, 4, generator=numgrad.Generator().manual_seed(5))
    assert list(s) == list(numgrad.utils.data.WeightedRandomSampler(
        w, 4, generator=numgrad.Generator().manual_seed(5)))

    def attrs(m):
        s = m.utils.data.WeightedRandomSampler(w, 3, replacement=False)
        return (s.weights.dtype == m.float64, _np(s.weights).tolist(), s.num_samples,
                s.replacement, s.generator, len(s), isinstance(s, m.utils.data.Sampler))
    a, b = _both(attrs)
    assert a == b

    assert numgrad.as_tensor([0.1], dtype=numgrad.float64).tolist() == [0.1]
    for args in ((w, 0), (w, 2.0), (w, True), (w, 3, 1), ([[1.0, 2.0]], 3)):
        _same_error(lambda m, args=args: m.utils.data.WeightedRandomSampler(*args))

    ds = numgrad.utils.data.TensorDataset(numgrad.arange(6.0))
    loader = numgrad.utils.data.DataLoader(
        ds, batch_size=3, sampler=numgrad.utils.data.WeightedRandomSampler(w, 9))
    batches = [b[0].tolist() for b in loader]
    assert [len(b) for b in batches] == [3, 3, 3]


# ----------------------------------------------------------------- affine_grid

@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("size", [(2, 3, 4, 5), (2, 1, 3, 4, 2), (2, 1, 1, 6)])
def test_affine_grid(align_corners, size):
    k = len(size) - 2
    theta = RNG.standard_normal((2, k, k + 1))
    img = RNG.standard_normal(size)

    def run(m):
        t = m.tensor(theta, requires_grad=True)
        x = m.tensor(img, requires_grad=True)
        warns, g = _warned(lambda m: m.nn.functional.affine_grid(t, list(size),
                                                                 align_corners=align_corners), m)
        out = m.nn.functional.grid_sample(x, g, align_corners=align_corners)
        (out * out).sum().backward()
        return warns, g, out, t.grad, x.grad
    (w1, *r1), (w2, *r2) = _both(run)
    assert w1 == w2
    for a, b in zip(r1, r2):
        np.testing.assert_allclose(_np(a), _np(b), rtol=1e-10, atol=1e-12)


def test_affine_grid_float32_default_and_errors():
    theta = RNG.standard_normal((1, 2, 3)).astype(np.float32)
    (w1, g1), (w2, g2) = _both(lambda m: _warned(
        lambda m: m.nn.functional.affine_grid(m.tensor(theta), (1, 1, 3, 3)), m))
    assert w1 == w2 and len(w1) == 1
    assert g1.dtype == numgrad.float32
    np.testing.assert_allclose(_np(g1), _np(g2), rtol=1e-6, atol=1e-7)
    th = RNG.standard_normal((2, 2, 3))
    for fn in (
        lambda m: m.nn.functional.affine_grid(m.tensor([[[1, 0, 0], [0, 1, 0]]]), [1, 1, 2, 2],
                                              align_corners=False),
        lambda m: m.nn.functional.affine_grid(m.tensor(th), [2, 3, 4], align_corners=False),
        lambda m: m.nn.functional.affine_grid(m.tensor(th), [2, 3, 3, 4, 5], align_corners=False),
        lambda m: m.nn.functional.affine_grid(m.tensor(th[:, :1]), [2, 3, 4, 5],
                                              align_corners=False),
        lambda m: m.nn.functional.affine_grid(m.tensor(th), [2, 3, 0, 5], align_corners=False),
    ):
        _same_error(fn)


# ----------------------------------------------------------------- autocast

def test_autocast_state_nesting_decorator_and_float32_kept():
    def run(m):
        seen = []
        a = m.tensor(RNG.standard_normal((2, 2)).astype(np.float32))
        seen.append((m.is_autocast_enabled(), m.is_autocast_enabled("cpu")))
        with m.autocast("cpu"):
            seen.append((m.is_autocast_enabled(), m.is_autocast_enabled("cpu")))
            with m.amp.autocast("cpu", enabled=False):
                seen.append(m.is_autocast_enabled("cpu"))
            seen.append(m.is_autocast_enabled("cpu"))
            seen.append((a + a).dtype == m.float32)

        @m.autocast(device_type="cpu")
        def f():
            return m.is_autocast_enabled("cpu")
        seen.append(f())
        seen.append(m.is_autocast_enabled("cpu"))
        seen.append(m.amp.is_autocast_available("cpu"))
        return seen
    assert run(numgrad) == run(torch)


def test_autocast_warnings_and_errors():
    def fp32(m):
        with m.autocast("cpu", dtype=m.float32):
            return m.is_autocast_enabled("cpu")
    a, b = _both(lambda m: _warned(fp32, m))
    assert a == b and len(a[0]) == 1

    def cuda_missing(m):
        with m.autocast("cuda"):
            return m.is_autocast_enabled("cuda")
    if not numgrad.cuda.is_available() and not torch.cuda.is_available():
        a, b = _both(lambda m: _warned(cuda_missing, m))
        assert a == b

    a, b = _both(lambda m: _warned(lambda m: m.cpu.amp.autocast(), m)[0])
    assert a == b and a[0][0] == "FutureWarning"
    _same_error(lambda m: m.autocast(0))
    a, b = _error(lambda m: m.autocast("xyz"), numgrad), _error(lambda m: m.autocast("xyz"), torch)
    assert a[0] == b[0] == "RuntimeError"  # (the device types listed are each library's)
    assert a[1].endswith("device type at start of device string: xyz")
    assert b[1].endswith("device type at start of device string: xyz")


# ----------------------------------------------------------------- GradScaler

def _scaled_training(m, device_args=("cpu",), **kwargs):
    net = _net(m)
    opt = m.optim.SGD(net.parameters(), lr=0.05)
    scaler = m.amp.GradScaler(*device_args, init_scale=2.0 ** 8, growth_interval=2, **kwargs)
    x = m.tensor(RNG_FIXED[0])
    y = m.tensor(RNG_FIXED[1])
    log = []
    for step in range(7):
        opt.zero_grad()
        with m.autocast("cpu"):
            loss = ((net(x) - y) ** 2).mean()
        if step == 3:
            loss = loss * float("inf")  # an overflow: the step is skipped, the scale backs off
        scaler.scale(loss).backward()
        if step == 5:
            scaler.unscale_(opt)
            m.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
        scaler.step(opt)
        scaler.update()
        log.append((scaler.get_scale(), scaler._get_growth_tracker()))
    return log, scaler.state_dict(), [_np(p) for p in net.parameters()], scaler


RNG_FIXED = (np.random.default_rng(9).standard_normal((8, 3)),
             np.random.default_rng(10).standard_normal((8, 2)))


def test_grad_scaler_trains_as_pytorchs():
    (l1, s1, p1, _), (l2, s2, p2, _) = _both(_scaled_training)
    assert l1 == l2
    assert s1 == s2
    for a, b in zip(p1, p2):
        np.testing.assert_allclose(a, b, rtol=1e-12)


def test_grad_scaler_state_dict_pickle_and_disabled():
    _, state, _, scaler = _scaled_training(numgrad)
    fresh = numgrad.amp.GradScaler("cpu")
    fresh.load_state_dict(state)
    assert fresh.state_dict() == state
    assert pickle.loads(pickle.dumps(scaler)).state_dict() == state

    def disabled(m):
        s = m.amp.GradScaler("cpu", enabled=False)
        t = m.ones(2)
        return s.state_dict(), s.scale(t) is t, s.get_scale(), s.is_enabled()
    assert disabled(numgrad) == disabled(torch)

    if not numgrad.cuda.is_available() and not torch.cuda.is_available():
        a, b = _both(lambda m: _warned(lambda m: m.amp.GradScaler().is_enabled(), m))
        assert a == b
    a, b = _both(lambda m: _warned(lambda m: m.cpu.amp.GradScaler().is_enabled(), m))
    assert a == b


def test_cuda_amp_deprecated_spellings():
    """``torch.cuda.amp.autocast/GradScaler`` (and ``from torch.cuda.amp import ...``): PyTorch's
    FutureWarnings, and on a machine without a GPU its warnings and disabled objects."""
    if numgrad.cuda.is_available() or torch.cuda.is_available():
        pytest.skip("a GPU is present: the objects stay enabled")
    from numgrad.cuda.amp import GradScaler, autocast  # noqa: F401

    def run(m):
        scaler = m.cuda.amp.GradScaler()
        with m.cuda.amp.autocast():
            inside = m.is_autocast_enabled()
        return scaler.is_enabled(), scaler.state_dict(), inside
    a, b = _both(lambda m: _warned(run, m))
    assert [w[0] for w in a[0]] == [w[0] for w in b[0]]
    assert [w[1] for w in a[0]] == [w[1] for w in b[0]]
    assert a[1] == b[1] == (False, {}, False)


def test_grad_scaler_errors():
    def twice_unscaled(m):
        p = m.nn.Parameter(m.ones(2))
        opt = m.optim.SGD([p], lr=0.1)
        s = m.amp.GradScaler("cpu")
        s.scale((p * 2).sum()).backward()
        s.unscale_(opt)
        s.unscale_(opt)

    def stepped_twice(m):
        p = m.nn.Parameter(m.ones(2))
        opt = m.optim.SGD([p], lr=0.1)
        s = m.amp.GradScaler("cpu")
        s.scale((p * 2).sum()).backward()
        s.step(opt)
        s.step(opt)

    def unscale_after_step(m):
        p = m.nn.Parameter(m.ones(2))
        opt = m.optim.SGD([p], lr=0.1)
        s = m.amp.GradScaler("cpu")
        s.scale((p * 2).sum()).backward()
        s.step(opt)
        s.unscale_(opt)

    def no_scale(m):
        m.amp.GradScaler("cpu").step(m.optim.SGD([m.nn.Parameter(m.ones(2))], lr=0.1))

    def closure(m):
        m.amp.GradScaler("cpu").step(m.optim.SGD([m.nn.Parameter(m.ones(2))], lr=0.1),
                                     closure=lambda: 0)

    def factors(m):
        m.amp.GradScaler("cpu", growth_factor=1.0)

    def empty_state(m):
        m.amp.GradScaler("cpu").load_state_dict({})

    def bad_outputs(m):
        m.amp.GradScaler("cpu").scale([m.ones(1), 3])

    for fn in (twice_unscaled, stepped_twice, unscale_after_step, no_scale, closure, factors,
               empty_state, bad_outputs):
        _same_error(fn)
