"""Batch normalisation as one op (NativeBatchNormBackward0), against PyTorch: values, running
statistics, gradients, second derivatives, the graph's edges and ATen's errors."""
import numpy as np
import pytest
import torch

import numgrad

RNG = np.random.default_rng(7)

CASES = [  # (input shape, training, affine, running statistics)
    ((8, 3, 4, 4), True, True, True),
    ((8, 3), True, False, True),
    ((6, 2, 5), True, True, False),
    ((5, 2, 7), False, True, True),
    ((6, 4, 3, 3), False, False, True),
    ((0, 3, 2), True, True, True),
]


def _run(m, shape, training, affine, stats, X, W, B, G):
    x = m.tensor(X, requires_grad=True)
    w = m.tensor(W, requires_grad=True) if affine else None
    b = m.tensor(B, requires_grad=True) if affine else None
    rm = m.tensor(np.linspace(-0.5, 0.5, shape[1])) if stats else None
    rv = m.tensor(np.linspace(0.5, 2.0, shape[1])) if stats else None
    y = m.nn.functional.batch_norm(x, rm, rv, w, b, training=training, momentum=0.3, eps=1e-3)
    y.backward(m.tensor(G))
    out = [y.detach().numpy(), x.grad.numpy()]
    if affine:
        out += [w.grad.numpy(), b.grad.numpy()]
    if stats:
        out += [rm.numpy(), rv.numpy()]
    edges = [None if f is None else type(f).__name__ for f, _ in y.grad_fn.next_functions]
    return out, type(y.grad_fn).__name__, edges


@pytest.mark.parametrize("shape, training, affine, stats", CASES, ids=str)
def test_batch_norm_matches_pytorch(shape, training, affine, stats):
    X, G = RNG.standard_normal(shape), RNG.standard_normal(shape)
    W, B = RNG.standard_normal(shape[1]), RNG.standard_normal(shape[1])
    ours = _run(numgrad, shape, training, affine, stats, X, W, B, G)
    theirs = _run(torch, shape, training, affine, stats, X, W, B, G)
    assert ours[1:] == theirs[1:]
    for a, b in zip(ours[0], theirs[0]):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_batch_norm_float32_and_modules_match_pytorch():
    X = RNG.standard_normal((16, 4, 3, 3)).astype(np.float32)
    results = []
    for m in (numgrad, torch):
        m.manual_seed(0)
        bn = m.nn.BatchNorm2d(4, momentum=None)
        x = m.tensor(X, requires_grad=True)
        for _ in range(3):
            bn(x).square().sum().backward()
        bn.eval()
        results.append([bn(x).detach().numpy(), x.grad.numpy(), bn.weight.grad.numpy(),
                        bn.running_mean.numpy(), bn.running_var.numpy(),
                        int(bn.num_batches_tracked)])
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_second_derivatives(training):
    x = numgrad.tensor(RNG.standard_normal((4, 3, 2)), requires_grad=True)
    w = numgrad.tensor(RNG.standard_normal(3), requires_grad=True)
    b = numgrad.tensor(RNG.standard_normal(3), requires_grad=True)
    rm, rv = numgrad.zeros(3, dtype=numgrad.float64), numgrad.ones(3, dtype=numgrad.float64)

    def fn(x, w, b):
        return numgrad.nn.functional.batch_norm(x, rm.clone(), rv.clone(), w, b,
                                                training=training)

    assert numgrad.autograd.gradgradcheck(fn, (x, w, b))


def test_batch_norm_refuses_a_saved_input_written_in_place():
    for m in (numgrad, torch):
        x = m.ones(4, 2, requires_grad=True) * m.arange(4.0).reshape(4, 1)
        y = m.nn.functional.batch_norm(x, None, None, training=True)
        x.add_(1)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.sum().backward()


ERRORS = [
    lambda m: m.nn.functional.batch_norm(m.ones(4, 3, dtype=m.int64), None, None, training=True),
    lambda m: m.nn.functional.batch_norm(m.ones(4, 3, dtype=m.bool), None, None, training=True),
    lambda m: m.nn.functional.batch_norm(m.ones(4, 3), None, None),
    lambda m: m.nn.functional.batch_norm(m.ones(3), m.zeros(3), m.ones(3)),
    lambda m: m.nn.functional.batch_norm(m.ones(3), None, None, training=True),
    lambda m: m.nn.functional.batch_norm(m.tensor(1.0), None, None, training=True),
    lambda m: m.nn.functional.batch_norm(m.ones(4, 3), None, None, m.ones(2), training=True),
    lambda m: m.nn.functional.batch_norm(m.ones(0, 3), None, None, m.ones(0), m.ones(0),
                                         training=True),
    lambda m: m.nn.functional.batch_norm(m.ones(1, 3), None, None, training=True),
    lambda m: m.nn.functional.batch_norm(m.ones(4, 3), None, None, m.ones(3, dtype=m.float64),
                                         training=True),
    lambda m: m.nn.functional.batch_norm(m.ones(4, 3), None, None, training=True, eps=0.0),
]


@pytest.mark.parametrize("call", ERRORS, ids=range(len(ERRORS)))
def test_batch_norm_errors_as_pytorch(call):
    def outcome(m):
        try:
            call(m)
        except Exception as e:  # noqa: BLE001 (compared)
            return type(e).__name__, str(e).replace("torch", "numgrad")
        return "ok"

    assert outcome(numgrad) == outcome(torch)


@pytest.mark.parametrize("name", ["float16", "bfloat16"])
def test_half_precision_normalisations_compute_in_float32_as_pytorch(name):
    # (batch_norm and instance_norm of float16 raised Numba's NotImplementedError, of bfloat16 a
    # TypingError; rms_norm squared float16 in float16: 300 ** 2 overflowed and every output was
    # 0; native_layer_norm gave its statistics in float32, PyTorch in the input's dtype;
    # cumprod's and embedding_bag's backward raised NotImplementedError)
    x = np.random.default_rng(3).standard_normal((4, 3, 5)).astype(np.float32) * 300

    def run(m):
        dt = getattr(m, name)
        a = m.tensor(x).to(dt).requires_grad_()
        w = m.tensor([0.5, -2.0, 1.5]).to(dt).requires_grad_()
        rm, rv = m.zeros(3).to(dt), m.ones(3).to(dt)
        outs = [m.nn.functional.batch_norm(a, rm, rv, w, None, training=True),
                m.nn.functional.batch_norm(a, rm, rv, w, None, training=False),
                m.nn.functional.instance_norm(a),
                m.nn.functional.rms_norm(a, (5,)),
                *m.native_layer_norm(a, (5,), None, None, 1e-5),
                m.cumprod(a[0, 0] / 300, 0),
                m.nn.functional.embedding_bag(m.tensor([0, 2, 1, 2]), a[0], m.tensor([0, 1]),
                                              mode="mean")]
        sum(((o.float() / 7) ** 2).sum() for o in outs[:4] + outs[7:]).backward()
        return outs + [rm, rv, a.grad, w.grad]

    for ours, theirs in zip(run(numgrad), run(torch)):
        assert str(ours.dtype).replace("numgrad", "torch") == str(theirs.dtype)
        np.testing.assert_allclose(ours.detach().float().numpy(), theirs.detach().float().numpy(),
                                   rtol=2e-2, atol=2e-2)


def test_a_threaded_batch_norm_has_the_same_bits_on_one_thread_and_on_two_and_pytorchs_values():
    # 4 x 8 x 96 x 96 elements: the channels shared between threads (CHANNELS_THREADED); a NaN
    # in channel 5 stays in it
    shape = (4, 8, 96, 96)
    rng = np.random.default_rng(3)
    X = (rng.standard_normal(shape) * 3 + 1).astype(np.float32)
    X[2, 5, 7, 11] = np.nan
    G = rng.standard_normal(shape).astype(np.float32)
    W, B = rng.standard_normal(8).astype(np.float32), rng.standard_normal(8).astype(np.float32)
    before = numgrad.get_num_threads()
    runs = []
    try:
        for threads in (1, 2):
            numgrad.set_num_threads(threads)
            runs.append(_run(numgrad, shape, True, True, False, X, W, B, G)[0])
    finally:
        numgrad.set_num_threads(before)
    for a, b in zip(*runs):
        assert a.tobytes() == b.tobytes()
    theirs = _run(torch, shape, True, True, False, X, W, B, G)[0]
    for ours, t in zip(runs[1], theirs):
        np.testing.assert_allclose(ours, t, rtol=2e-4, atol=2e-4)
    y, gx = runs[1][0], runs[1][1]
    assert np.isnan(y[:, 5]).all() and not np.isnan(np.delete(y, 5, axis=1)).any()
    assert np.isnan(gx[:, 5]).all() and not np.isnan(np.delete(gx, 5, axis=1)).any()
