"""Convolution (``F.conv1d``, ``F.conv2d``, ``nn.Conv1d``, ``nn.Conv2d``, ATen's ``convolution``
and ``convolution_backward``) against PyTorch: values, node names and the gradients of input,
weight and bias for stride, padding ('same', 'valid', ints, pairs), dilation, groups and bias, in
1-D and 2-D, float32 and float64; second derivatives; PyTorch's error messages; non-contiguous,
empty, unbatched and integer inputs; the modules' attributes, repr and initialisation."""
import math
import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import numgrad
import numgrad.nn.functional as F

TOL = {"float64": dict(rtol=1e-10, atol=1e-12), "float32": dict(rtol=1e-5, atol=1e-5)}

# (dim, input shape, weight shape, bias, keyword arguments)
CASES = [
    (2, (2, 3, 6, 5), (4, 3, 3, 3), True, {}),
    (2, (2, 3, 6, 5), (4, 3, 3, 3), True, dict(padding=1)),
    (2, (1, 4, 7, 6), (6, 2, 3, 2), False, dict(stride=(2, 1), padding=(1, 0), dilation=(1, 2),
                                                groups=2)),
    (2, (2, 2, 5, 5), (2, 1, 2, 2), True, dict(padding="same", groups=2)),
    (2, (2, 2, 6, 5), (3, 2, 3, 3), True, dict(padding="same", dilation=2)),
    (2, (2, 2, 5, 4), (3, 2, 2, 3), False, dict(padding="valid", stride=2)),
    (2, (3, 1, 8, 8), (16, 1, 3, 3), True, dict(padding=1)),
    (1, (2, 3, 9), (4, 3, 3), True, {}),
    (1, (2, 4, 9), (6, 2, 3), True, dict(stride=2, padding=2, dilation=2, groups=2)),
    (1, (2, 3, 8), (3, 3, 4), False, dict(padding="same")),
    (1, (1, 2, 6), (2, 2, 2), True, dict(padding=(1,), stride=(3,))),
]


def _ids(case):
    dim, xs, ws, bias, kw = case
    return f"{dim}d-{'x'.join(map(str, xs))}-{'x'.join(map(str, ws))}-{bias}-" + ",".join(
        f"{k}={v}" for k, v in kw.items())


def _pair(shape_x, shape_w, bias, dtype, seed=0):
    rng = np.random.default_rng(seed)
    arrays = [rng.uniform(-1, 1, shape_x), rng.uniform(-1, 1, shape_w)]
    if bias:
        arrays.append(rng.uniform(-1, 1, shape_w[0]))
    arrays = [a.astype(dtype) for a in arrays]
    ours = [numgrad.tensor(a, requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    return ours, theirs


def _call(m, F_, dim, tensors, kw):
    x, w = tensors[:2]
    b = tensors[2] if len(tensors) > 2 else None
    fn = F_.conv1d if dim == 1 else F_.conv2d
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (PyTorch's warning for an even kernel with 'same')
        return fn(x, w, b, **kw)


def _close(ours, theirs, dtype, what=""):
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), err_msg=what,
                               **TOL[dtype])


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_values_gradients_and_node_match_pytorch(case, dtype):
    dim, xs, ws, bias, kw = case
    ours, theirs = _pair(xs, ws, bias, dtype)
    o = _call(numgrad, F, dim, ours, kw)
    t = _call(torch, TF, dim, theirs, kw)
    assert tuple(o.shape) == tuple(t.shape)
    assert o.dtype.name == dtype
    assert o.grad_fn.name() == t.grad_fn.name() == "ConvolutionBackward0"
    _close(o, t, dtype, "forward")
    seed = np.random.default_rng(1).standard_normal(tuple(t.shape)).astype(dtype)
    o.backward(numgrad.tensor(seed))
    t.backward(torch.tensor(seed))
    for a, b, name in zip(ours, theirs, ("input", "weight", "bias")):
        _close(a.grad, b.grad, dtype, name)


@pytest.mark.parametrize("case", [CASES[2], CASES[4], CASES[8], CASES[9]], ids=_ids)
def test_gradcheck_and_gradgradcheck(case):
    dim, xs, ws, bias, kw = case
    ours, _ = _pair(xs, ws, bias, "float64", seed=3)
    fn = lambda *ts: _call(numgrad, F, dim, ts, kw)  # noqa: E731
    assert numgrad.autograd.gradcheck(fn, ours)
    assert numgrad.autograd.gradgradcheck(fn, ours)


def test_second_derivatives_match_pytorch_and_name_their_nodes():
    ours, theirs = _pair((2, 4, 5, 5), (6, 2, 3, 3), True, "float64", seed=5)
    kw = dict(stride=(1, 2), padding=1, groups=2)
    results = []
    for m, F_, ts in ((numgrad, F, ours), (torch, TF, theirs)):
        y = F_.conv2d(*ts, **kw)
        grads = m.autograd.grad((y * y).sum(), ts, create_graph=True)
        nodes = [g.grad_fn.name() for g in grads[:2]]
        total = sum((g * g).sum() for g in grads)
        results.append((nodes, m.autograd.grad(total, ts)))
    (n_ours, g_ours), (n_theirs, g_theirs) = results
    assert n_ours == n_theirs == ["ConvolutionBackwardBackward0"] * 2
    for a, b in zip(g_ours, g_theirs):
        _close(a, b, "float64")


def test_convolution_backward_matches_aten():
    ours, theirs = _pair((2, 4, 6, 5), (6, 2, 3, 2), True, "float64", seed=7)
    args = ([6], [2, 1], [1, 0], [1, 2], False, [0, 0], 2)
    y = torch.ops.aten.convolution(*theirs, args[1], args[2], args[3], False, [0, 0], 2)
    g = np.random.default_rng(8).standard_normal(tuple(y.shape))
    mine = numgrad.ops.convolution_backward(numgrad.tensor(g), *ours[:2], *args,
                                            [True, True, True])
    want = torch.ops.aten.convolution_backward(torch.tensor(g), *theirs[:2], *args,
                                               [True, True, True])
    for a, b in zip(mine, want):
        _close(a, b, "float64")
    masked = numgrad.ops.convolution_backward(numgrad.tensor(g), *ours[:2], *args,
                                              [False, True, False])
    assert masked[0] is None and masked[2] is None and masked[1] is not None


def _backward_call(g_shape, x_shape, w_shape, mask=(True, True, True)):
    def call(m, F_):
        return m.ops.convolution_backward(
            m.zeros(*g_shape, dtype=m.float64), m.zeros(*x_shape, dtype=m.float64),
            m.zeros(*w_shape, dtype=m.float64), None, [2, 1], [1, 0], [1, 2], False, [0, 0], 2,
            list(mask))
    return call


BACKWARD_ERRORS = {
    "grad shape": _backward_call((2, 6, 3, 2), (2, 4, 5, 5), (6, 2, 2, 2)),
    "weight rank": _backward_call((2, 6, 3, 3), (2, 4, 5, 5), (6, 2)),
    "input rank": _backward_call((2, 6, 3, 3), (4, 5, 5), (6, 2, 2, 2)),
    "groups": _backward_call((2, 5, 3, 3), (2, 4, 5, 5), (5, 2, 2, 2)),
    "channels": _backward_call((2, 6, 3, 3), (2, 3, 5, 5), (6, 2, 2, 2)),
}


@pytest.mark.parametrize("name", list(BACKWARD_ERRORS))
def test_convolution_backward_errors_match_aten(name):
    class _Torch:
        ops = torch.ops.aten

        def __getattr__(self, attr):
            return getattr(torch, attr)

    ours = _message(lambda: BACKWARD_ERRORS[name](numgrad, F))
    theirs = _message(lambda: BACKWARD_ERRORS[name](_Torch(), TF))
    assert theirs is not None and ours == theirs


def test_double_backward_of_an_empty_batch_gives_no_gradient_as_aten():
    grads = []
    for m, F_ in ((numgrad, F), (torch, TF)):
        x = m.zeros(0, 2, 4, 4, dtype=m.float64, requires_grad=True)
        w = m.ones(3, 2, 3, 3, dtype=m.float64, requires_grad=True)
        y = F_.conv2d(x, w, padding=1)
        gx, gw = m.autograd.grad((y * y).sum(), (x, w), create_graph=True)
        gg = m.autograd.grad(gw.sum(), (x, w), allow_unused=True)
        grads.append([None if g is None else tuple(g.shape) for g in gg])
    assert grads[0] == grads[1]


def test_top_level_functions_and_aten_convolution():
    ours, theirs = _pair((2, 3, 5, 5), (4, 3, 2, 2), True, "float64")
    for name in ("conv2d",):
        _close(getattr(numgrad, name)(*ours, 1, 1), getattr(torch, name)(*theirs, 1, 1),
               "float64")
    _close(numgrad.convolution(*ours, [1, 2], [0, 1], [1, 1], False, [0, 0], 1),
           torch.convolution(*theirs, [1, 2], [0, 1], [1, 1], False, [0, 0], 1), "float64")
    ours1, theirs1 = _pair((2, 3, 7), (4, 3, 2), False, "float64")
    _close(numgrad.conv1d(*ours1, None, 2), torch.conv1d(*theirs1, None, 2), "float64")


def test_non_contiguous_input_and_weight():
    ours, theirs = _pair((2, 6, 5, 3), (4, 3, 2, 2), True, "float64")
    o = F.conv2d(ours[0].transpose(2, 3)[:, ::2], ours[1].transpose(2, 3), ours[2], padding=1)
    t = TF.conv2d(theirs[0].transpose(2, 3)[:, ::2], theirs[1].transpose(2, 3), theirs[2],
                  padding=1)
    _close(o, t, "float64")
    o.sum().backward()
    t.sum().backward()
    for a, b in zip(ours, theirs):
        _close(a.grad, b.grad, "float64")


@pytest.mark.parametrize("dim", [1, 2])
def test_empty_batch(dim):
    xs, ws = ((0, 3, 6), (4, 3, 3)) if dim == 1 else ((0, 3, 5, 5), (4, 3, 3, 3))
    ours, theirs = _pair(xs, ws, True, "float64")
    o = _call(numgrad, F, dim, ours, dict(padding=1))
    t = _call(torch, TF, dim, theirs, dict(padding=1))
    assert tuple(o.shape) == tuple(t.shape)
    o.sum().backward()
    t.sum().backward()
    for a, b in zip(ours, theirs):
        assert tuple(a.grad.shape) == tuple(b.grad.shape)
        _close(a.grad, b.grad, "float64")


@pytest.mark.parametrize("dim", [1, 2])
def test_unbatched_input(dim):
    xs, ws = ((3, 6), (4, 3, 3)) if dim == 1 else ((3, 5, 4), (4, 3, 3, 2))
    ours, theirs = _pair(xs, ws, True, "float64")
    o = _call(numgrad, F, dim, ours, dict(padding=1))
    t = _call(torch, TF, dim, theirs, dict(padding=1))
    assert o.grad_fn.name() == t.grad_fn.name()
    _close(o, t, "float64")
    o.sum().backward()
    t.sum().backward()
    for a, b in zip(ours, theirs):
        _close(a.grad, b.grad, "float64")


@pytest.mark.parametrize("dtype", ["int64", "int32"])
def test_integer_inputs_as_pytorch(dtype):
    rng = np.random.default_rng(0)
    x, w, b = (rng.integers(-5, 5, s).astype(dtype) for s in ((2, 3, 5, 5), (4, 3, 3, 3), (4,)))
    o = F.conv2d(numgrad.tensor(x), numgrad.tensor(w), numgrad.tensor(b), padding=1)
    t = TF.conv2d(torch.tensor(x), torch.tensor(w), torch.tensor(b), padding=1)
    assert o.dtype.name == dtype
    np.testing.assert_array_equal(o.numpy(), t.numpy())


def _message(fn):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fn()
    except Exception as e:  # noqa: BLE001
        return type(e).__name__, _sets_sorted(str(e))
    return None


def _sets_sorted(text: str) -> str:
    """``text`` with the items of each printed set of strings sorted: PyTorch prints its
    ``valid_padding_modes`` set as is, in an order that hashing may change from run to run."""
    import re

    return re.sub(r"\{('[^{}]*')\}",
                  lambda m: "{" + ", ".join(sorted(m.group(1).split(", "))) + "}", text)


def _tensor(m, shape, dtype=None):
    return m.zeros(*shape, dtype=dtype)


ERRORS = {
    "rank 2d": lambda m, F_: F_.conv2d(_tensor(m, (4, 5)), _tensor(m, (6, 4, 3, 3))),
    "rank 5d": lambda m, F_: F_.conv2d(_tensor(m, (1, 2, 4, 5, 5)), _tensor(m, (6, 4, 3, 3))),
    "rank 1d": lambda m, F_: F_.conv1d(_tensor(m, (2, 3, 4, 4)), _tensor(m, (6, 3, 5))),
    "channels": lambda m, F_: F_.conv2d(_tensor(m, (2, 4, 5, 5)), _tensor(m, (6, 3, 3, 3))),
    "channels with groups": lambda m, F_: F_.conv2d(_tensor(m, (2, 4, 5, 5)),
                                                    _tensor(m, (6, 4, 3, 3)), groups=2),
    "groups divide": lambda m, F_: F_.conv2d(_tensor(m, (2, 4, 5, 5)), _tensor(m, (5, 2, 3, 3)),
                                             groups=2),
    "groups at least": lambda m, F_: F_.conv2d(_tensor(m, (2, 4, 5, 5)),
                                               _tensor(m, (0, 4, 3, 3))),
    "kernel too large": lambda m, F_: F_.conv2d(_tensor(m, (2, 4, 5, 5)),
                                                _tensor(m, (6, 4, 7, 3))),
    "kernel too large dilated": lambda m, F_: F_.conv2d(_tensor(m, (2, 4, 5, 5)),
                                                        _tensor(m, (6, 4, 3, 3)), dilation=3),
    "kernel too large 1d": lambda m, F_: F_.conv1d(_tensor(m, (2, 3, 4)), _tensor(m, (6, 3, 5))),
    "same strided": lambda m, F_: F_.conv2d(_tensor(m, (2, 4, 5, 5)), _tensor(m, (6, 4, 3, 3)),
                                            stride=(1, 2), padding="same"),
    "padding string": lambda m, F_: F_.conv2d(_tensor(m, (2, 4, 5, 5)),
                                              _tensor(m, (6, 4, 3, 3)), padding="foo"),
    "negative padding": lambda m, F_: F_.conv2d(_tensor(m, (2, 4, 5, 5)),
                                                _tensor(m, (6, 4, 3, 3)), padding=-1),
    "zero stride": lambda m, F_: F_.conv2d(_tensor(m, (2, 4, 5, 5)), _tensor(m, (6, 4, 3, 3)),
                                           stride=0),
    "zero dilation": lambda m, F_: F_.conv2d(_tensor(m, (2, 4, 5, 5)),
                                             _tensor(m, (6, 4, 3, 3)), dilation=0),
    "negative dilation": lambda m, F_: F_.conv2d(_tensor(m, (2, 4, 5, 5)),
                                                 _tensor(m, (6, 4, 3, 3)), dilation=-1),
    "zero groups": lambda m, F_: F_.conv2d(_tensor(m, (2, 4, 5, 5)), _tensor(m, (6, 4, 3, 3)),
                                           groups=0),
    "bias size": lambda m, F_: F_.conv2d(_tensor(m, (2, 4, 5, 5)), _tensor(m, (6, 4, 3, 3)),
                                         _tensor(m, (5,))),
    "stride length": lambda m, F_: F_.conv2d(_tensor(m, (2, 4, 5, 5)),
                                             _tensor(m, (6, 4, 3, 3)), stride=(1, 1, 1)),
    "padding length": lambda m, F_: F_.conv2d(_tensor(m, (2, 4, 5, 5)),
                                              _tensor(m, (6, 4, 3, 3)), padding=(1, 1, 1)),
    "weight rank": lambda m, F_: F_.conv2d(_tensor(m, (2, 4, 5, 5)), _tensor(m, (6, 4, 3))),
    "dtypes": lambda m, F_: F_.conv2d(_tensor(m, (2, 4, 5, 5)),
                                      _tensor(m, (6, 4, 3, 3), m.float64)),
    "bias dtype": lambda m, F_: F_.conv2d(_tensor(m, (2, 4, 5, 5)), _tensor(m, (6, 4, 3, 3)),
                                          _tensor(m, (6,), m.float64)),
    "integer and float": lambda m, F_: F_.conv2d(_tensor(m, (2, 4, 5, 5), m.int64),
                                                 _tensor(m, (6, 4, 3, 3))),
    "module groups in": lambda m, F_: m.nn.Conv2d(4, 6, 3, groups=4),
    "module groups out": lambda m, F_: m.nn.Conv2d(4, 6, 3, groups=3),
    "module groups positive": lambda m, F_: m.nn.Conv2d(4, 6, 3, groups=0),
    "module padding string": lambda m, F_: m.nn.Conv2d(4, 6, 3, padding="foo"),
    "module same strided": lambda m, F_: m.nn.Conv1d(4, 6, 3, padding="same", stride=2),
    "module padding mode": lambda m, F_: m.nn.Conv2d(4, 6, 3, padding_mode="foo"),
    "module channels": lambda m, F_: m.nn.Conv2d(4, 6, 3)(_tensor(m, (2, 3, 5, 5))),
    "module rank": lambda m, F_: m.nn.Conv2d(4, 6, 3)(_tensor(m, (5, 5))),
}


@pytest.mark.parametrize("name", list(ERRORS))
def test_errors_match_pytorch(name):
    ours = _message(lambda: ERRORS[name](numgrad, F))
    theirs = _message(lambda: ERRORS[name](torch, TF))
    assert theirs is not None
    assert ours == theirs


MODULES = [
    lambda m: m.nn.Conv2d(3, 4, 3),
    lambda m: m.nn.Conv2d(3, 4, (3, 2), stride=2, padding=1, dilation=2, bias=False),
    lambda m: m.nn.Conv2d(4, 4, 3, groups=2, stride=(1, 2)),
    lambda m: m.nn.Conv2d(3, 4, 3, padding="valid"),
    lambda m: m.nn.Conv2d(3, 4, 2, padding="same", dilation=(1, 2)),
    lambda m: m.nn.Conv1d(2, 4, 3, padding="same"),
    lambda m: m.nn.Conv1d(2, 4, 5, stride=2, padding=2, groups=2, bias=False),
    lambda m: m.nn.Conv2d(2, 4, 3, padding=1, padding_mode="reflect"),
]


@pytest.mark.parametrize("index", range(len(MODULES)))
def test_module_repr_attributes_and_shapes(index):
    ours, theirs = MODULES[index](numgrad), MODULES[index](torch)
    assert repr(ours) == repr(theirs)
    for name in ("in_channels", "out_channels", "kernel_size", "stride", "padding", "dilation",
                 "transposed", "output_padding", "groups", "padding_mode",
                 "_reversed_padding_repeated_twice"):
        assert getattr(ours, name) == getattr(theirs, name), name
    assert tuple(ours.weight.shape) == tuple(theirs.weight.shape)
    assert (ours.bias is None) == (theirs.bias is None)
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]


@pytest.mark.parametrize("index", [0, 1, 2, 4, 5, 6])
def test_module_forward_is_the_functional_with_its_parameters(index):
    ours, theirs = MODULES[index](numgrad).double(), MODULES[index](torch).double()
    with torch.no_grad():
        theirs.weight.copy_(torch.tensor(ours.weight.detach().numpy()))
        if theirs.bias is not None:
            theirs.bias.copy_(torch.tensor(ours.bias.detach().numpy()))
    shape = (2, ours.in_channels) + (7,) * (ours.weight.ndim - 2)
    x = np.random.default_rng(0).uniform(-1, 1, shape)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = theirs(torch.tensor(x))
    o = ours(numgrad.tensor(x))
    _close(o, t, "float64")
    assert o.grad_fn.name() == t.grad_fn.name()


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
@pytest.mark.parametrize("dim, padding", [(2, 1), (2, (1, 2)), (1, 2), (2, "same")])
def test_padding_modes_other_than_zeros_pad_with_F_pad(mode, dim, padding):
    """PyTorch's modules pad the input with ``F.pad(mode=padding_mode)``, then convolve without
    padding; numgrad's do the same (values, gradients and the module's padding order)."""
    make = (lambda m: m.nn.Conv1d(2, 3, 3, padding=padding, padding_mode=mode)) if dim == 1 \
        else (lambda m: m.nn.Conv2d(2, 3, (3, 2), padding=padding, padding_mode=mode))
    ours, theirs = make(numgrad).double(), make(torch).double()
    assert ours._reversed_padding_repeated_twice == theirs._reversed_padding_repeated_twice
    with torch.no_grad():
        theirs.weight.copy_(torch.tensor(ours.weight.detach().numpy()))
        theirs.bias.copy_(torch.tensor(ours.bias.detach().numpy()))
    x = np.random.default_rng(0).uniform(-1, 1, (2, 2) + (5,) * dim)
    xo, xt = numgrad.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    o, t = ours(xo), theirs(xt)
    _close(o, t, "float64")
    assert o.grad_fn.name() == t.grad_fn.name()
    (o * o).sum().backward()
    (t * t).sum().backward()
    _close(xo.grad, xt.grad, "float64")
    _close(ours.weight.grad, theirs.weight.grad, "float64")


def test_initialisation_statistics_and_reproducibility():
    numgrad.manual_seed(0)
    conv = numgrad.nn.Conv2d(16, 64, 3)
    fan_in = 16 * 9
    bound = 1 / math.sqrt(fan_in)  # kaiming_uniform_(a=sqrt(5)): gain sqrt(1/3) * sqrt(3/fan_in)
    w = conv.weight.detach().numpy()
    b = conv.bias.detach().numpy()
    assert w.dtype == np.float32 and conv.weight.requires_grad
    assert np.abs(w).max() <= bound and np.abs(b).max() <= bound
    assert abs(w.mean()) < 0.05 * bound
    assert abs(w.std() - bound / math.sqrt(3)) < 0.03 * bound  # U(-a, a): std a/sqrt(3)
    assert np.abs(w).max() > 0.99 * bound and np.abs(b).max() > 0.5 * bound
    numgrad.manual_seed(0)
    again = numgrad.nn.Conv2d(16, 64, 3)
    np.testing.assert_array_equal(again.weight.detach().numpy(), w)
    np.testing.assert_array_equal(again.bias.detach().numpy(), b)
    again.reset_parameters()
    assert not np.array_equal(again.weight.detach().numpy(), w)
    one = numgrad.nn.Conv1d(3, 5, 4, dtype=numgrad.float64)
    assert one.weight.dtype is numgrad.float64
    assert np.abs(one.weight.detach().numpy()).max() <= 1 / math.sqrt(12)


def test_a_small_cnn_trains():
    numgrad.manual_seed(0)
    nn = numgrad.nn
    model = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.Conv2d(4, 2, 3),
                          nn.Flatten(), nn.Linear(2 * 4 * 4, 2))
    rng = np.random.default_rng(0)
    x = numgrad.tensor(rng.standard_normal((16, 1, 6, 6)).astype("float32"))
    y = numgrad.tensor((x.numpy()[:, 0, :3].sum((1, 2)) > 0).astype("int64"))
    opt = numgrad.optim.SGD(model.parameters(), lr=0.1)
    losses = []
    for _ in range(30):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.5 * losses[0]


def test_a_large_convolution_is_made_in_batches_on_threads_with_pytorchs_values(monkeypatch):
    """Columns of ``THREADED_COLS`` entries or more are made a batch of samples at a time
    (``CHUNK`` entries at most, here a few samples) on ``get_num_threads()`` threads: padding,
    stride and dilation read the same elements as PyTorch's, each batch's output and input
    gradient land in its own samples and the weight's gradient sums every batch."""
    from numgrad.kernels.cpu import conv

    rng = np.random.default_rng(7)
    x = rng.standard_normal((16, 8, 34, 33)).astype(np.float32)
    w = rng.standard_normal((5, 8, 3, 3)).astype(np.float32)
    kw = dict(stride=(1, 2), padding=(2, 1), dilation=(2, 1))
    rows_by_columns = 8 * 9 * 16 * 34 * 17
    assert rows_by_columns >= conv.THREADED_COLS
    monkeypatch.setattr(conv, "CHUNK", rows_by_columns // 5)  # (3 samples a batch, 6 batches)
    batches = []
    unfold_into = conv._unfold_into
    monkeypatch.setattr(conv, "_unfold_into", lambda x, *a: batches.append(x.shape[0])
                        or unfold_into(x, *a))
    before = numgrad.get_num_threads()
    numgrad.set_num_threads(2)
    try:
        ox, tx = numgrad.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
        ow, tw = numgrad.tensor(w, requires_grad=True), torch.tensor(w, requires_grad=True)
        out, want = F.conv2d(ox, ow, **kw), TF.conv2d(tx, tw, **kw)
        out.sum().backward()
    finally:
        numgrad.set_num_threads(before)
    want.sum().backward()
    np.testing.assert_allclose(out.detach().numpy(), want.detach().numpy(), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(ow.grad.numpy(), tw.grad.numpy(), rtol=1e-4, atol=1e-2)
    np.testing.assert_allclose(ox.grad.numpy(), tx.grad.numpy(), rtol=1e-4, atol=1e-4)
    assert sorted(batches) == [1] * 2 + [3] * 10  # (forward, weight's gradient)
    assert conv._workers._pool is not None


def test_a_compiled_step_through_a_convolutions_input_gradient_is_replayed():
    """The compiler's list of kernels that may raise matches parts of names: the input
    gradient (``conv.conv_backward_input``, "put" in "input") after BatchNorm's running
    statistics were written does not make a ResNet-like training step run eagerly, and the
    replay gives eager's values."""
    nn = numgrad.nn

    def make():
        numgrad.manual_seed(0)
        model = nn.Sequential(nn.Conv2d(2, 3, 3, padding=1), nn.BatchNorm2d(3), nn.ReLU(),
                              nn.Conv2d(3, 2, 3, padding=1))
        opt = numgrad.optim.SGD(model.parameters(), lr=0.1)
        x = numgrad.tensor(np.random.default_rng(0).standard_normal((2, 2, 5, 5)),
                           dtype=numgrad.float32)

        def step():
            opt.zero_grad()
            loss = F.mse_loss(model(x), x)
            loss.backward()
            opt.step()
            return loss

        return step

    eager, compiled = make(), numgrad.compile(make())
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # (no "runs ... eagerly" warning)
        losses = [(eager().item(), compiled().item()) for _ in range(4)]
    np.testing.assert_allclose([c for _, c in losses], [e for e, _ in losses], rtol=1e-5)
    assert "replayed" in numgrad.compiler.explain(compiled).splitlines()[-1]


def test_threaded_convolution_batches_are_shared_evenly():
    # 64 samples of 10,000 column entries: batches of 26, 26 and 12 samples left one of two
    # threads idle a third of the time; now a multiple of the thread count, of equal size
    from numgrad.kernels.cpu import conv

    before = numgrad.get_num_threads()
    numgrad.set_num_threads(2)
    try:
        spans, step = conv._batches(64, 10_000)
    finally:
        numgrad.set_num_threads(before)
    sizes = [stop - start for start, stop in spans]
    assert len(sizes) % 2 == 0 and max(sizes) - min(sizes) <= 1 and sum(sizes) == 64
    assert step * 10_000 <= conv.CHUNK and spans[0][0] == 0 and spans[-1][1] == 64


SHIFTED = [((6, 32, 24, 23), (5, 32, 2, 3), dict(padding="same")),  # (asymmetric; threaded)
           ((3, 22, 5, 9), (4, 22, 3, 2), dict(padding=(2, 0)))]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("xs, ws, kw", SHIFTED)
def test_stride_one_convolutions_read_shifted_rows_with_pytorchs_values(xs, ws, kw, dtype,
                                                                        monkeypatch):
    """Stride 1, undilated, ungrouped, depth C*kh >= 64: the forward and the weight's gradient
    are ``kw`` products over the padded rows (``conv._Shifted``), the rows' last ``kw - 1``
    outputs computed and dropped: PyTorch's values and gradients (bias included), and the
    same bits on two threads as on one."""
    from numgrad.kernels.cpu import conv

    taken = []
    for name in ("forward", "backward_weight"):
        method = getattr(conv._Shifted, name)
        monkeypatch.setattr(conv._Shifted, name, lambda self, *a, _m=method, _n=name:
                            taken.append(_n) or _m(self, *a))
    assert xs[0] * 64 * ws[3] * xs[2] * xs[3] >= conv.THREADED_COLS or xs[1] == 22
    ours, theirs = _pair(xs, ws, True, dtype, seed=4)
    want = _call(torch, TF, 2, theirs, kw)
    seed = np.random.default_rng(5).uniform(-1, 1, tuple(want.shape)).astype(dtype)
    want.backward(torch.tensor(seed))
    before, results = numgrad.get_num_threads(), []
    try:
        for threads in (1, 2):
            numgrad.set_num_threads(threads)
            for t in ours:
                t.grad = None
            out = _call(numgrad, F, 2, ours, kw)
            out.backward(numgrad.tensor(seed))
            results.append([out.detach().numpy().tobytes()] + [t.grad.numpy() for t in ours])
    finally:
        numgrad.set_num_threads(before)
    tol = TOL[dtype] if dtype == "float64" else dict(rtol=1e-4, atol=3e-4)  # (3,312 terms:
    # PyTorch's own weight gradient is 1.2e-4 off the float64 one, ours 1.7e-5)
    for o, t, name in zip([out] + [t.grad for t in ours], [want] + [t.grad for t in theirs],
                          ("output", "input", "weight", "bias")):
        np.testing.assert_allclose(o.detach().numpy(), t.detach().numpy(), err_msg=name, **tol)
    assert results[0][0] == results[1][0]
    for one, two in zip(results[0][1:], results[1][1:]):
        np.testing.assert_allclose(one, two, **TOL[dtype])
    assert taken == ["forward", "backward_weight"] * 2


@pytest.mark.parametrize("column", [0, 5, 2], ids=["first", "last", "middle"])
def test_stride_one_convolution_of_non_finite_inputs_as_pytorch(column, monkeypatch):
    """The weight's gradient multiplies the dropped outputs' zero gradients by the input's
    first and last ``kw - 1`` columns (less the padding): 0 * inf would be NaN where PyTorch
    has none, so an inf or NaN there takes im2col; elsewhere it keeps the shifted rows. The
    forward, whose dropped outputs are only dropped, stays exact."""
    from numgrad.kernels.cpu import conv

    taken = []
    method = conv._Shifted.backward_weight
    monkeypatch.setattr(conv._Shifted, "backward_weight",
                        lambda self, *a: taken.append(1) or method(self, *a))
    a = np.random.default_rng(5).uniform(-1, 1, (2, 32, 5, 6)).astype(np.float32)
    a[0, 0, 1, column], a[1, 3, 4, column] = np.inf, -np.inf
    a[1, 5, 2, column] = np.nan
    w = np.random.default_rng(6).uniform(-1, 1, (3, 32, 2, 3)).astype(np.float32)
    g = np.random.default_rng(7).uniform(-1, 1, (2, 3, 4, 4)).astype(np.float32)
    results = []
    for m, F_ in ((numgrad, F), (torch, TF)):
        x, wt = m.tensor(a, requires_grad=True), m.tensor(w, requires_grad=True)
        out = F_.conv2d(x, wt)
        out.backward(m.tensor(g))
        results.append([out.detach().numpy(), x.grad.numpy(), wt.grad.numpy()])
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-5)  # (NaN, inf where torch's)
    assert np.isinf(results[1][2]).any() and np.isnan(results[1][2]).any()
    assert taken == ([1] if column == 2 else [])


def test_stride_one_convolution_gradcheck():
    ours, _ = _pair((1, 32, 3, 4), (2, 32, 2, 3), True, "float64", seed=8)
    assert numgrad.autograd.gradcheck(lambda *ts: F.conv2d(*ts, padding=1), ours)


PHASED = [((2, 5, 7, 30), (64, 5, 3, 3), 1),  # (depth O*kh 192, the ResNet block's kind)
          ((1, 1, 40, 60), (33, 1, 3, 2), 0),  # (batch 1, one channel)
          ((2, 3, 12, 30), (40, 3, 2, 3), 2)]  # (padding over kh - 1: the gradient cropped)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("xs, ws, pad", PHASED)
def test_stride_one_input_gradient_as_a_convolution_of_the_gradient(xs, ws, pad, dtype,
                                                                    monkeypatch):
    """Stride 1, undilated, ungrouped, depth ``O*kh >= 64``: the input's gradient is the
    stride-1 correlation of the output's gradient (padded by ``k - 1 - p``) with the flipped
    weight (``conv._phased_input``, no col2im): PyTorch's values, an inf or NaN in the output's
    gradient (a non-contiguous one) giving NaN and inf where PyTorch's do; an inf in the
    weight takes col2im (PyTorch's gradient has no NaN from the padding's zeros)."""
    from numgrad.kernels.cpu import conv

    taken = []
    method = conv._phased_input
    monkeypatch.setattr(conv, "_phased_input",
                        lambda *a: taken.append(method(*a) is not None) or method(*a))
    ours, theirs = _pair(xs, ws, False, dtype, seed=9)
    shape = (xs[0], ws[0], xs[2] + 2 * pad - ws[2] + 1, xs[3] + 2 * pad - ws[3] + 1)
    g = np.random.default_rng(10).uniform(-1, 1, shape[::-1]).astype(dtype).T  # (strided)
    g[0, 1, 0, 0], g[-1, 2, -1, -1], g[0, 3, 1, shape[3] // 2] = np.inf, -np.inf, np.nan
    g[0, 4, shape[2] // 2, 2] = np.inf  # (its row never cropped)
    for poison in (False, True):
        if poison:
            for w in (ours[1], theirs[1]):
                w.detach()[-1, 0, 0, 0] = np.inf
        grads = []
        for m, F_, (x, w) in ((numgrad, F, ours), (torch, TF, theirs)):
            out = F_.conv2d(x, w, padding=pad)
            grads.append(m.autograd.grad(out, x, m.tensor(g))[0].numpy())
        np.testing.assert_allclose(grads[0], grads[1], **TOL[dtype])  # (NaN, inf alike)
        assert np.isnan(grads[1]).any() and np.isinf(grads[1]).any()
    assert taken == [True, False]


def test_strided_input_gradient_by_phases_as_pytorch(monkeypatch):
    """The input's gradient at stride 2 and 3 by phases, each a stride-1 correlation with the
    sub-kernel ``[.., r::s, t::s]`` flipped: ``conv._phased_input`` (one GEMM per phase; not
    taken at a stride over 1) and ``conv._transposed_phases`` (the phases' shared rows, one
    GEMM per row phase), PyTorch's values (on small images, where the work limit would refuse
    them)."""
    from numgrad.kernels.cpu import conv

    monkeypatch.setattr(conv, "PHASED_WORK", 100)
    rng = np.random.default_rng(11)
    for xs, ws, s, p in (((2, 3, 8, 7), (64, 3, 4, 4), 2, 1), ((1, 2, 5, 6), (70, 2, 5, 3), 3, 2),
                         ((2, 1, 9, 11), (64, 1, 3, 3), 2, 3)):
        w = rng.uniform(-1, 1, ws)
        out = TF.conv2d(torch.zeros(xs, dtype=torch.float64), torch.tensor(w), stride=s,
                        padding=p)
        g = rng.uniform(-1, 1, tuple(out.shape))
        want = torch.nn.grad.conv2d_input(xs, torch.tensor(w), torch.tensor(g), stride=s,
                                          padding=p).numpy()
        for method in (conv._phased_input, conv._transposed_phases):
            np.testing.assert_allclose(method(g, w, xs, (s, s), (p, p, p, p)), want,
                                       **TOL["float64"])


TRANSPOSED = [((2, 64, 9, 24), (64, 3, 4, 4), 2, 1, 0),  # (the workload's kind)
              ((1, 64, 14, 13), (64, 1, 3, 3), 3, 2, 2)]  # (one tap per phase, batch 1)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("xs, ws, s, p, op", TRANSPOSED)
def test_transposed_convolution_by_shared_phases_as_pytorch(xs, ws, s, p, op, dtype,
                                                           monkeypatch):
    """conv_transpose2d at a stride over 1 (undilated, ungrouped, ``C_in * taps >= 64``): its
    forward by ``conv._transposed_phases``, PyTorch's values and gradients for an input (a
    non-contiguous one) with NaN and +-inf, output padding and phases of unequal sizes; an inf
    in the weight takes col2im."""
    from numgrad.kernels.cpu import conv

    taken = []
    method = conv._transposed_phases
    monkeypatch.setattr(conv, "_transposed_phases",
                        lambda *a: taken.append(method(*a) is not None) or method(*a))
    rng = np.random.default_rng(13)
    a = rng.uniform(-1, 1, xs[::-1]).astype(dtype).T  # (strided)
    a[0, 1, 0, 0], a[-1, 2, -1, -1], a[0, 3, xs[2] // 2, 1] = np.inf, -np.inf, np.nan
    w = rng.uniform(-1, 1, ws).astype(dtype)
    g = rng.uniform(-1, 1, (xs[0], ws[1], (xs[2] - 1) * s - 2 * p + ws[2] + op,
                            (xs[3] - 1) * s - 2 * p + ws[3] + op)).astype(dtype)
    for poison in (False, True):
        if poison:
            w[-1, 0, 1, 1] = np.inf
        results = []
        for m, F_ in ((numgrad, F), (torch, TF)):
            x, wt = m.tensor(a, requires_grad=True), m.tensor(w, requires_grad=True)
            out = F_.conv_transpose2d(x, wt, stride=s, padding=p, output_padding=op)
            out.backward(m.tensor(g))
            results.append([out.detach().numpy(), x.grad.numpy(), wt.grad.numpy()])
        for ours, theirs, name in zip(*results, ("output", "input", "weight")):
            if name != "weight" or dtype == "float64":  # (PyTorch's float32 weight gradient
                # of an input with inf has NaN where its float64 one has none; ours, float64's)
                np.testing.assert_allclose(ours, theirs, err_msg=name, **TOL[dtype])
        assert np.isnan(results[1][0]).any() and np.isinf(results[1][0]).any()
    assert taken == [True, False]


def test_transposed_convolution_by_shared_phases_gradcheck(monkeypatch):
    from numgrad.kernels.cpu import conv

    monkeypatch.setattr(conv, "PHASED_WORK", 100)  # (a small image)
    ours, _ = _pair((1, 64, 2, 3), (64, 1, 4, 3), False, "float64", seed=14)
    w = ours[1].detach()
    fn = lambda x: F.conv_transpose2d(x, w, stride=2, padding=1)  # noqa: E731
    assert numgrad.autograd.gradcheck(fn, [ours[0]])
    assert numgrad.autograd.gradgradcheck(fn, [ours[0]])


def test_stride_one_input_gradient_gradcheck():
    ours, _ = _pair((1, 2, 3, 4), (64, 2, 2, 3), False, "float64", seed=12)
    w = ours[1].detach()
    assert numgrad.autograd.gradcheck(lambda x: F.conv2d(x, w, padding=1), [ours[0]])
    assert numgrad.autograd.gradgradcheck(lambda x: F.conv2d(x, w, padding=1), [ours[0]])


def test_a_compiled_step_through_the_phased_input_gradients_equals_eager(monkeypatch):
    from numgrad.kernels.cpu import conv

    taken = []
    for name in ("_phased_input", "_transposed_phases"):
        method = getattr(conv, name)
        monkeypatch.setattr(conv, name, lambda *a, _m=method, _n=name:
                            taken.append((_n, _m(*a) is not None)) or _m(*a))
    nn = numgrad.nn

    def make():
        numgrad.manual_seed(0)
        model = nn.Sequential(nn.Conv2d(2, 8, 3, padding=1), nn.ReLU(),
                              nn.Conv2d(8, 64, 3, padding=1),
                              nn.ConvTranspose2d(64, 2, 4, stride=2, padding=1))
        opt = numgrad.optim.SGD(model.parameters(), lr=0.1)
        x = numgrad.tensor(np.random.default_rng(0).standard_normal((2, 2, 5, 30)),
                           dtype=numgrad.float32)

        def step():
            opt.zero_grad()
            loss = model(x).square().mean()
            loss.backward()
            opt.step()
            return loss

        return step

    eager, compiled = make(), numgrad.compile(make())
    losses = [(eager().item(), compiled().item()) for _ in range(3)]
    assert [c for _, c in losses] == [e for e, _ in losses]
    assert set(taken) == {("_phased_input", True), ("_transposed_phases", True)}


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_strided_columns_from_the_inputs_phases(dtype, monkeypatch):
    """A strided, undilated 2-D convolution makes its columns from the input's phases
    (``conv._im2col_phased``, stride-1 copies): the same columns bit for bit as the strided
    gathers, so the same output and weight gradient, PyTorch's, for a strided input with NaN
    and +-inf (odd sizes, strides (2, 3), padding 1)."""
    from numgrad.kernels.cpu import conv

    rng = np.random.default_rng(15)
    a = rng.uniform(-1, 1, (11, 9, 3, 2)).astype(dtype).T  # (2, 3, 9, 11), strided
    a[0, 1, 0, 0], a[1, 2, -1, -1], a[0, 0, 4, 5] = np.inf, -np.inf, np.nan
    w = rng.uniform(-1, 1, (4, 3, 3, 4)).astype(dtype)
    kw = dict(stride=(2, 3), padding=1)
    g = rng.uniform(-1, 1, tuple(TF.conv2d(torch.tensor(a), torch.tensor(w), **kw).shape))
    results = []
    for phased in (True, False):
        monkeypatch.setattr(conv, "PHASED", phased)
        x, wt = numgrad.tensor(a), numgrad.tensor(w, requires_grad=True)
        out = F.conv2d(x, wt, **kw)
        out.backward(numgrad.tensor(g.astype(dtype)))
        results.append((out.detach().numpy(), wt.grad.numpy()))
    x, wt = torch.tensor(a), torch.tensor(w, requires_grad=True)
    out = TF.conv2d(x, wt, **kw)
    out.backward(torch.tensor(g.astype(dtype)))
    np.testing.assert_array_equal(results[0][0], results[1][0])
    np.testing.assert_array_equal(results[0][1], results[1][1])
    np.testing.assert_allclose(results[0][0], out.detach().numpy(), **TOL[dtype])
    if dtype == "float64":  # (PyTorch's float32 weight gradient can put NaN elsewhere)
        np.testing.assert_allclose(results[0][1], wt.grad.numpy(), **TOL[dtype])
    assert np.isnan(results[0][0]).any() and np.isinf(results[0][0]).any()
