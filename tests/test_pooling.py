"""Pooling and padding against PyTorch: values, indices, gradients and node names for each option
of ``max_pool1d/2d``, ``avg_pool1d/2d``, ``adaptive_avg_pool1d/2d``, ``adaptive_max_pool1d/2d``
and ``F.pad`` (every mode), ties and NaN/-inf as PyTorch resolves them, unbatched and empty
inputs, non-contiguous inputs, integer inputs, PyTorch's errors (messages compared with torch's),
second derivatives, and the modules (their outputs and reprs). Expected values come from PyTorch
at test time."""
import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import numgrad
import numgrad.nn.functional as F

TOL = {"float64": dict(rtol=1e-12, atol=1e-12), "float32": dict(rtol=1e-6, atol=1e-6)}
M = {"numgrad": numgrad, "torch": torch}


def _both(array, requires_grad=True):
    return (numgrad.tensor(array, requires_grad=requires_grad),
            torch.tensor(array, requires_grad=requires_grad))


def _chain(t):
    """The node names from the output down to the leaf's accumulator (first inputs)."""
    names, fn = [], t.grad_fn
    while fn is not None and "AccumulateGrad" not in fn.name():
        names.append(fn.name())
        fn = fn.next_functions[0][0]
    return names


def _compare(fn, shape, dtype="float64", seed=0, low=-2.0, high=2.0, array=None, grad=True):
    """``fn(F, x)`` on numgrad and on torch: outputs (values, dtypes, node chains) and the input
    gradients of a random vector-Jacobian product."""
    rng = np.random.default_rng(seed)
    a = rng.uniform(low, high, size=shape).astype(dtype) if array is None else array
    ours_x, theirs_x = _both(a, grad)
    ours = fn(F, ours_x)
    theirs = fn(TF, theirs_x)
    ours = ours if isinstance(ours, tuple) else (ours,)
    theirs = theirs if isinstance(theirs, tuple) else (theirs,)
    tol = TOL.get(a.dtype.name, dict(rtol=0, atol=0))
    for o, t in zip(ours, theirs):
        assert tuple(o.shape) == tuple(t.shape)
        assert o.dtype.name == str(t.dtype).removeprefix("torch.")
        np.testing.assert_allclose(o.detach().numpy(), t.detach().numpy(), **tol)
        if t.grad_fn is not None:
            assert _chain(o) == _chain(t)
    if grad:
        seeds = [rng.standard_normal(tuple(t.shape)).astype(dtype) for t in theirs
                 if t.dtype.is_floating_point]
        numgrad.autograd.backward([o for o in ours if o.dtype.is_floating_point],
                                  [numgrad.tensor(s) for s in seeds])
        torch.autograd.backward([t for t in theirs if t.dtype.is_floating_point],
                                [torch.tensor(s) for s in seeds])
        np.testing.assert_allclose(ours_x.grad.numpy(), theirs_x.grad.numpy(), **tol)
    return ours, theirs


DTYPES = ["float64", "float32"]


# ---------------------------------------------------------------------- max pooling
MAX_POOL2D = [
    ((2, 3, 6, 7), dict(kernel_size=2)),
    ((2, 3, 6, 7), dict(kernel_size=3, stride=2, padding=1)),
    ((1, 2, 7, 6), dict(kernel_size=(3, 2), stride=(2, 1), padding=(1, 0), ceil_mode=True)),
    ((1, 2, 7, 8), dict(kernel_size=3, stride=2, dilation=2, padding=1)),
    ((2, 5, 5), dict(kernel_size=2, ceil_mode=True)),  # unbatched
    ((1, 1, 5, 5), dict(kernel_size=3, stride=3, ceil_mode=True, padding=1)),
    ((0, 2, 4, 4), dict(kernel_size=2)),  # an empty batch
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape, kw", MAX_POOL2D)
def test_max_pool2d_values_indices_and_gradients(shape, kw, dtype):
    ours, theirs = _compare(lambda f, x: f.max_pool2d(x, return_indices=True, **kw), shape, dtype)
    assert ours[1].dtype is numgrad.int64
    np.testing.assert_array_equal(ours[1].numpy(), theirs[1].numpy())
    _compare(lambda f, x: f.max_pool2d(x, **kw), shape, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kw", [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1),
                                dict(kernel_size=2, dilation=2, ceil_mode=True),
                                dict(kernel_size=(3,), stride=[1], padding=(1,))])
@pytest.mark.parametrize("shape", [(2, 3, 9), (3, 8)])
def test_max_pool1d(shape, kw, dtype):
    _compare(lambda f, x: f.max_pool1d(x, **kw), shape, dtype)
    _compare(lambda f, x: f.max_pool1d(x, return_indices=True, **kw), shape, dtype)


def test_max_pool_window_of_padding_only():
    """Padding and dilation can leave a window without an input element: -inf, with the index
    of its first position (outside the plane), as PyTorch's; its gradient goes nowhere (PyTorch's
    CPU backward writes out of bounds there, so only the forward is compared)."""
    a = np.random.default_rng(3).uniform(-2, 2, size=(1, 1, 2, 2))
    ours, theirs = _compare(lambda f, x: f.max_pool2d(x, 2, padding=1, dilation=3,
                                                      return_indices=True), None, array=a,
                            grad=False)
    np.testing.assert_array_equal(ours[1].numpy(), theirs[1].numpy())
    x = numgrad.tensor(a, requires_grad=True)
    F.max_pool2d(x, 2, padding=1, dilation=3).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros_like(a))


def test_max_pool_ties_go_to_the_first_maximum_and_nan_wins():
    a = np.array([[[[1.0, 3.0, 3.0, 0.0],
                    [3.0, 2.0, np.nan, 5.0],
                    [-np.inf, -np.inf, 7.0, 7.0],
                    [-np.inf, -np.inf, 7.0, np.nan]]]])
    for kw in (dict(kernel_size=2), dict(kernel_size=2, stride=1),
               dict(kernel_size=3, stride=1, padding=1)):
        ours, theirs = _compare(lambda f, x: f.max_pool2d(x, return_indices=True, **kw), None,
                                array=a)
        np.testing.assert_array_equal(ours[1].numpy(), theirs[1].numpy())
    b = np.array([[[np.nan, 1.0, np.nan, 2.0, 2.0, -np.inf, -np.inf]]])
    ours, theirs = _compare(lambda f, x: f.max_pool1d(x, 3, 1, return_indices=True), None,
                            array=b)
    np.testing.assert_array_equal(ours[1].numpy(), theirs[1].numpy())
    ours, theirs = _compare(lambda f, x: f.adaptive_max_pool2d(x, (2, 3), return_indices=True),
                            None, array=a)
    np.testing.assert_array_equal(ours[1].numpy(), theirs[1].numpy())


@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_max_pool2d_2x2_windows_of_hard_values_as_pytorch(dtype):
    """MaxPool2d(2) has its own kernel (the maximum's position found without branches): windows
    of two NaNs (the last one's index), -0.0 and 0.0 in either order (the first one's bits),
    +-inf, the integers' extremes, an odd width and height (the last column and row dropped):
    values bit for bit and indices as PyTorch's."""
    rng = np.random.default_rng(5)
    if dtype == "float32":
        choices = np.array([np.nan, -0.0, 0.0, 1.0, -np.inf, np.inf], np.float32)
    else:
        info = np.iinfo(np.int32)
        choices = np.array([info.min, info.max, 0, -1, info.min + 1], np.int32)
    a = rng.choice(choices, size=(3, 4, 9, 11))
    ours = F.max_pool2d(numgrad.tensor(a), 2, return_indices=True)
    theirs = TF.max_pool2d(torch.tensor(a), 2, return_indices=True)
    np.testing.assert_array_equal(ours[1].numpy(), theirs[1].numpy())
    assert ours[0].numpy().tobytes() == theirs[0].numpy().tobytes()


@pytest.mark.parametrize("dtype", ["int64", "int32"])
def test_max_pool2d_of_integers(dtype):
    a = np.random.default_rng(1).integers(-50, 50, size=(2, 2, 5, 6)).astype(dtype)
    a[0, 0, :2, :2] = np.iinfo(dtype).min
    ours, theirs = _compare(lambda f, x: f.max_pool2d(x, 2, padding=1, return_indices=True),
                            None, array=a, grad=False)
    np.testing.assert_array_equal(ours[1].numpy(), theirs[1].numpy())
    if dtype == "int64":  # (PyTorch's avg_pool2d takes int64 and no other integer dtype)
        for fn in (lambda f, x: f.avg_pool2d(x, 3, 2, 1),
                   lambda f, x: f.avg_pool2d(x, 2, count_include_pad=False, divisor_override=3),
                   lambda f, x: f.avg_pool1d(x[0], 3, 2, 1, ceil_mode=True)):
            _compare(fn, None, array=-a, grad=False)
    for fn in (lambda f, x: f.pad(x, (1, 2, 2, 1), mode="reflect"),
               lambda f, x: f.pad(x[0], (1, 2), mode="replicate"),
               lambda f, x: f.pad(x, (1, 2, 0, 1), value=7)):
        _compare(fn, None, array=-a, grad=False)


# ---------------------------------------------------------------------- average pooling
AVG_POOL2D = [
    ((2, 3, 6, 7), dict(kernel_size=2)),
    ((2, 3, 6, 7), dict(kernel_size=3, stride=2, padding=1)),
    ((2, 3, 6, 7), dict(kernel_size=3, stride=2, padding=1, count_include_pad=False)),
    ((1, 2, 7, 6), dict(kernel_size=(3, 2), stride=(2, 1), padding=(1, 1), ceil_mode=True)),
    ((1, 2, 7, 6), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True,
                        count_include_pad=False)),
    ((1, 2, 5, 5), dict(kernel_size=3, stride=2, padding=1, divisor_override=2)),
    ((2, 5, 5), dict(kernel_size=2, stride=1)),  # unbatched
    ((0, 2, 4, 4), dict(kernel_size=2)),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape, kw", AVG_POOL2D)
def test_avg_pool2d(shape, kw, dtype):
    _compare(lambda f, x: f.avg_pool2d(x, **kw), shape, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kw", [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1),
                                dict(kernel_size=3, stride=2, padding=1, ceil_mode=True,
                                     count_include_pad=False), dict(kernel_size=[2], stride=(1,))])
@pytest.mark.parametrize("shape", [(2, 3, 9), (3, 8)])
def test_avg_pool1d(shape, kw, dtype):
    _compare(lambda f, x: f.avg_pool1d(x, **kw), shape, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape, size", [
    ((2, 3, 7, 9), (3, 4)), ((2, 3, 7, 9), 5), ((3, 5, 4), (None, 3)), ((3, 5, 4), (2, None)),
    ((1, 2, 4, 4), (8, 8)), ((2, 3, 7, 9), 1), ((2, 2, 3, 3), (1, 1)), ((1, 2, 3, 3), 0),
    ((2, 0, 3, 3), 2),
])
def test_adaptive_avg_pool2d(shape, size, dtype):
    # (PyTorch's backward refuses an empty output or channel dimension: forward only there)
    grad = 0 not in shape and size != 0
    _compare(lambda f, x: f.adaptive_avg_pool2d(x, size), shape, dtype, grad=grad)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape, size", [
    ((2, 3, 7, 9), (3, 4)), ((2, 3, 7, 9), 5), ((3, 5, 4), (None, 3)), ((1, 2, 4, 4), (8, 6)),
    ((2, 3, 7, 9), 1), ((1, 2, 3, 3), 0),
])
def test_adaptive_max_pool2d(shape, size, dtype):
    grad = size != 0
    _compare(lambda f, x: f.adaptive_max_pool2d(x, size), shape, dtype, grad=grad)
    ours, theirs = _compare(lambda f, x: f.adaptive_max_pool2d(x, size, return_indices=True),
                            shape, dtype, grad=grad)
    np.testing.assert_array_equal(ours[1].numpy(), theirs[1].numpy())


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape, size", [((2, 3, 9), 4), ((3, 8), 3), ((2, 3, 5), 1),
                                         ((2, 3, 5), (7,))])
def test_adaptive_pool1d(shape, size, dtype):
    _compare(lambda f, x: f.adaptive_avg_pool1d(x, size), shape, dtype)
    _compare(lambda f, x: f.adaptive_max_pool1d(x, size), shape, dtype)
    ours, theirs = _compare(lambda f, x: f.adaptive_max_pool1d(x, size, return_indices=True),
                            shape, dtype)
    np.testing.assert_array_equal(ours[1].numpy(), theirs[1].numpy())


def test_avg_pools_of_inf_and_nan():
    a = np.array([[[[1.0, np.inf, 2.0, 3.0], [4.0, 5.0, np.nan, 6.0], [-np.inf, np.inf, 1.0, 1.0],
                    [0.0, 1.0, 2.0, 3.0]]]])
    for fn in (lambda f, x: f.avg_pool2d(x, 2), lambda f, x: f.avg_pool2d(x, 3, 1, 1),
               lambda f, x: f.adaptive_avg_pool2d(x, 3), lambda f, x: f.max_pool2d(x, 3, 1, 1)):
        _compare(fn, None, array=a, grad=False)


# ---------------------------------------------------------------------- padding
PADS = [
    ((2, 3, 5), (1, 2), "constant"), ((2, 3, 5), (2, 2), "reflect"),
    ((2, 3, 5), (4, 0), "reflect"), ((3, 5), (1, 3), "replicate"), ((2, 3, 5), (6, 1), "replicate"),
    ((2, 3, 5), (1, 2), "circular"), ((3, 5), (-1, 3), "reflect"), ((3, 5), (2, -2), "replicate"),
    ((2, 3, 5), (-1, 2), "circular"), ((1, 2, 4, 5), (1, 2, 3, 0), "reflect"),
    ((2, 4, 5), (2, 1, 1, 3), "reflect"), ((1, 2, 4, 5), (3, 1, 2, 5), "replicate"),
    ((2, 4, 5), (0, -2, 1, -1), "replicate"), ((1, 2, 4, 5), (1, 2, 3, 0), "circular"),
    ((2, 4, 5), (-1, 2, 2, -1), "circular"), ((1, 2, 2, 3, 4), (1, 1, 2, 0, 1, 1), "circular"),
    ((2, 3, 4), (1, 2, -1, 1, 1, 0), "constant"), ((2, 3), (-2, -1), "constant"),
    ((4,), (3, 1), "constant"), ((0, 2, 3, 4), (1, 1, 1, 1), "reflect"),
    ((0, 2, 3), (1, 1), "replicate"), ((1, 2, 4, 5), (-3, -2, 0, 0), "reflect"),
    ((1, 2, 4, 5), (-3, -2, 0, 0), "replicate"), ((2, 3), (0, 0), "constant"),
    ((1, 2, 3, 4, 5), (1, 2, 2, 0, 1, 2), "reflect"),
    ((2, 3, 4, 3), (2, -1, 1, 2, -1, 2), "reflect"),
    ((1, 2, 3, 4, 5), (4, 1, 0, 3, 2, 1), "replicate"),
    ((2, 3, 4, 3), (0, 1, -1, 2, 3, 0), "replicate"),
    ((1, 1, 3, 4, 5), (-2, -1, 0, 0, 0, 0), "reflect"),
    ((1, 1, 3, 4, 5), (0, 0, 0, 0, -2, -1), "replicate"),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape, pad, mode", PADS)
def test_pad(shape, pad, mode, dtype):
    _compare(lambda f, x: f.pad(x, pad, mode=mode), shape, dtype)


def test_pad_values_and_dtypes():
    _compare(lambda f, x: f.pad(x, (1, 2, 0, 1), value=-1.5), (2, 3, 4))
    _compare(lambda f, x: f.pad(x, [2, 1], "constant", 3), (2, 3))
    _compare(lambda f, x: f.pad(x, (1, 1), mode="reflect", value=0), (2, 3))
    _compare(lambda f, x: f.pad(x, (np.int64(1), 2), mode="replicate"), (2, 3))
    _compare(lambda f, x: f.max_pool2d(x, np.int64(2), [np.int32(1), 2]), (1, 3, 4))
    for dtype in ("int64", "int32"):
        a = np.arange(12).reshape(3, 4).astype(dtype)
        _compare(lambda f, x: f.pad(x, (1, 2), value=2.7), None, array=a, grad=False)
        _compare(lambda f, x: f.pad(x, (1, 2), mode="circular"), None, array=a, grad=False)
    mask = np.array([[True, False, True]])
    _compare(lambda f, x: f.pad(x, (1, 2), value=2), None, array=mask, grad=False)
    _compare(lambda f, x: f.pad(x, (1, 2), mode="circular"), None, array=mask, grad=False)


# ---------------------------------------------------------------------- non-contiguous inputs
@pytest.mark.parametrize("fn", [
    lambda f, x: f.max_pool2d(x, 2, 1), lambda f, x: f.avg_pool2d(x, 3, 2, 1),
    lambda f, x: f.adaptive_avg_pool2d(x, (2, 3)), lambda f, x: f.adaptive_max_pool2d(x, 3),
    lambda f, x: f.pad(x, (1, 2, 2, 1), mode="reflect"),
    lambda f, x: f.pad(x, (1, 2, 2, 1), mode="replicate"),
    lambda f, x: f.pad(x, (1, 2, -1, 1)), lambda f, x: f.max_pool1d(x[0], 2),
    lambda f, x: f.avg_pool1d(x[:, 0], 2), lambda f, x: f.pad(x[0], (2, 1), mode="reflect"),
])
def test_non_contiguous_inputs(fn):
    a = np.random.default_rng(5).uniform(-2, 2, size=(2, 5, 6, 3))
    _compare(lambda f, x: fn(f, x.permute(0, 3, 2, 1)[:, :, ::2]), None, array=a)


# ---------------------------------------------------------------------- second derivatives
@pytest.mark.parametrize("fn, shape", [
    (lambda x: F.max_pool2d(x, 2, 1), (1, 2, 4, 4)),
    (lambda x: F.max_pool2d(x, 3, 2, 1, dilation=1, ceil_mode=True), (1, 1, 5, 4)),
    (lambda x: F.max_pool1d(x, 2), (2, 5)),
    (lambda x: F.avg_pool2d(x, 3, 2, 1, count_include_pad=False), (1, 2, 5, 4)),
    (lambda x: F.avg_pool1d(x, 3, 2, 1, ceil_mode=True), (2, 6)),
    (lambda x: F.adaptive_avg_pool2d(x, (2, 3)), (1, 2, 5, 4)),
    (lambda x: F.adaptive_max_pool2d(x, (2, 3)), (1, 2, 5, 4)),
    (lambda x: F.pad(x, (2, 1, 1, 2), mode="reflect"), (1, 3, 3)),
    (lambda x: F.pad(x, (2, 1), mode="replicate"), (2, 3)),
    (lambda x: F.pad(x, (2, -1, 1, 0), mode="circular"), (1, 3, 3)),
    (lambda x: F.pad(x, (2, -1, 1, 0)), (3, 3)),
    (lambda x: F.pad(x, (1, 0, 1, 1, 0, 1), mode="reflect"), (1, 2, 2, 3)),
    (lambda x: F.pad(x, (2, 0, -1, 1, 1, 0), mode="replicate"), (1, 2, 2, 3)),
])
def test_gradgradcheck(fn, shape):
    x = numgrad.tensor(np.random.default_rng(7).uniform(-2, 2, size=shape), requires_grad=True)
    assert numgrad.autograd.gradcheck(fn, (x,))
    assert numgrad.autograd.gradgradcheck(fn, (x,))


def test_double_backward_matches_pytorch_and_its_nodes():
    a = np.random.default_rng(8).uniform(-2, 2, size=(1, 2, 4, 5))
    for name, kw in (("max_pool2d", dict(kernel_size=2, stride=1)),
                     ("avg_pool2d", dict(kernel_size=2, stride=1, padding=1)),
                     ("adaptive_avg_pool2d", dict(output_size=(3, 4))),
                     ("adaptive_max_pool2d", dict(output_size=(3, 4)))):
        outs = []
        for m, f in ((numgrad, F), (torch, TF)):
            x = m.tensor(a, requires_grad=True)
            y = getattr(f, name)(x, **kw)
            v = np.random.default_rng(9).standard_normal(tuple(y.shape))
            g = m.tensor(v, requires_grad=True)
            (gx,) = m.autograd.grad(y, x, g, create_graph=True)
            (gg,) = m.autograd.grad((gx * gx).sum(), g, create_graph=True)
            outs.append((gx, gg))
        (ogx, ogg), (tgx, tgg) = outs
        assert ogx.grad_fn.name() == tgx.grad_fn.name()
        np.testing.assert_allclose(ogx.detach().numpy(), tgx.detach().numpy(), rtol=1e-12)
        np.testing.assert_allclose(ogg.detach().numpy(), tgg.detach().numpy(), rtol=1e-12)
        if ogg.grad_fn is not None:
            assert ogg.grad_fn.name() == tgg.grad_fn.name()


# ---------------------------------------------------------------------- errors
def _same_error(fn, shape=(2, 3, 5, 5), dtype="float64", requires_grad=False):
    a = np.zeros(shape, dtype)
    with pytest.raises(Exception) as theirs:
        fn(TF, torch.tensor(a, requires_grad=requires_grad))
    with pytest.raises(type(theirs.value)) as ours:
        fn(F, numgrad.tensor(a, requires_grad=requires_grad))
    assert str(ours.value) == str(theirs.value)


ERRORS = [
    (lambda f, x: f.max_pool2d(x, 0), (2, 3, 5, 5)),
    (lambda f, x: f.max_pool2d(x, 0, 1), (2, 3, 5, 5)),
    (lambda f, x: f.max_pool2d(x, 2, -1), (2, 3, 5, 5)),
    (lambda f, x: f.max_pool2d(x, 2, dilation=0), (2, 3, 5, 5)),
    (lambda f, x: f.max_pool2d(x, 2, padding=2), (2, 3, 5, 5)),
    (lambda f, x: f.max_pool2d(x, 2, padding=-1), (2, 3, 5, 5)),
    (lambda f, x: f.max_pool2d(x, 3, padding=2, dilation=2), (2, 3, 5, 5)),
    (lambda f, x: f.max_pool2d(x, 6), (2, 3, 5, 5)),
    (lambda f, x: f.max_pool2d(x, 2), (5, 5)),
    (lambda f, x: f.max_pool2d(x, 2), (1, 2, 3, 5, 5)),
    (lambda f, x: f.max_pool2d(x, 2), (2, 0, 4, 4)),
    (lambda f, x: f.max_pool2d(x, (2, 2, 2)), (2, 3, 5, 5)),
    (lambda f, x: f.max_pool2d(x, 2, (1, 1, 1)), (2, 3, 5, 5)),
    (lambda f, x: f.max_pool2d(x, 2, 1, (1, 1, 1)), (2, 3, 5, 5)),
    (lambda f, x: f.max_pool2d(x, 2, 1, 0, (1, 1, 1)), (2, 3, 5, 5)),
    (lambda f, x: f.max_pool1d(x, 0), (2, 3, 5)),
    (lambda f, x: f.max_pool1d(x, 2, 0), (2, 3, 5)),
    (lambda f, x: f.max_pool1d(x, 2, dilation=0), (2, 3, 5)),
    (lambda f, x: f.max_pool1d(x, 2, padding=-1), (2, 3, 5)),
    (lambda f, x: f.max_pool1d(x, 2, padding=2), (2, 3, 5)),
    (lambda f, x: f.max_pool1d(x, 6), (2, 3, 5)),
    (lambda f, x: f.max_pool1d(x, 2), (2, 3, 5, 5)),
    (lambda f, x: f.max_pool1d(x, 2), (5,)),
    (lambda f, x: f.max_pool1d(x, 2), (2, 0, 4)),
    (lambda f, x: f.max_pool1d(x, (2, 2)), (2, 3, 5)),
    (lambda f, x: f.max_pool1d(x, 2, return_indices=True), (2, 3, 5, 5)),
    (lambda f, x: f.max_pool1d(x, (2, 2), return_indices=True), (2, 3, 5)),
    (lambda f, x: f.max_pool1d(x, 6, return_indices=True), (2, 3, 5)),
    (lambda f, x: f.avg_pool2d(x, 2, padding=2), (2, 3, 5, 5)),
    (lambda f, x: f.avg_pool2d(x, 6), (2, 3, 5, 5)),
    (lambda f, x: f.avg_pool2d(x, 0), (2, 3, 5, 5)),
    (lambda f, x: f.avg_pool2d(x, 0, 1), (2, 3, 5, 5)),
    (lambda f, x: f.avg_pool2d(x, 2, -2), (2, 3, 5, 5)),
    (lambda f, x: f.avg_pool2d(x, 2, divisor_override=0), (2, 3, 5, 5)),
    (lambda f, x: f.avg_pool2d(x, 2), (1, 2, 3, 5, 5)),
    (lambda f, x: f.avg_pool2d(x, 2), (5,)),
    (lambda f, x: f.avg_pool2d(x, 2), (2, 0, 4, 4)),
    (lambda f, x: f.avg_pool2d(x, (2, 2, 2)), (2, 3, 5, 5)),
    (lambda f, x: f.avg_pool2d(x, 2, padding=-1), (2, 3, 5, 5)),
    (lambda f, x: f.avg_pool1d(x, 2, padding=2), (2, 3, 5)),
    (lambda f, x: f.avg_pool1d(x, 6), (2, 3, 5)),
    (lambda f, x: f.avg_pool1d(x, 2), (2, 3, 5, 5)),
    (lambda f, x: f.avg_pool1d(x, 2), (5,)),
    (lambda f, x: f.avg_pool1d(x, (2, 2)), (2, 3, 5)),
    (lambda f, x: f.avg_pool1d(x, 2), (2, 0, 4)),
    (lambda f, x: f.adaptive_avg_pool2d(x, -1), (2, 3, 5, 5)),
    (lambda f, x: f.adaptive_avg_pool2d(x, (1, 2, 3)), (2, 3, 5, 5)),
    (lambda f, x: f.adaptive_avg_pool2d(x, 2), (1, 2, 3, 5, 5)),
    (lambda f, x: f.adaptive_avg_pool2d(x, 2), (2, 1, 0, 4)),
    (lambda f, x: f.adaptive_avg_pool2d(x, None), (2, 3, 5, 5)),
    (lambda f, x: f.adaptive_avg_pool2d(x, (2, 2, 2, 2)), (2, 3, 5)),
    (lambda f, x: f.adaptive_avg_pool1d(x, (2, 2)), (2, 3, 5)),
    (lambda f, x: f.adaptive_avg_pool1d(x, 2), (2, 3, 5, 5)),
    (lambda f, x: f.adaptive_max_pool2d(x, -1), (2, 3, 5, 5)),
    (lambda f, x: f.adaptive_max_pool2d(x, 2), (1, 2, 3, 5, 5)),
    (lambda f, x: f.adaptive_max_pool2d(x, (1, 2, 3)), (2, 3, 5, 5)),
    (lambda f, x: f.adaptive_max_pool2d(x, 2), (2, 1, 0, 4)),
    (lambda f, x: f.adaptive_max_pool2d(x, 2), (2, 0, 3, 4)),
    (lambda f, x: f.adaptive_max_pool1d(x, 2), (5,)),
    (lambda f, x: f.adaptive_max_pool1d(x, 2), (2, 0, 5)),
    (lambda f, x: f.pad(x, (1,)), (2, 3, 5)),
    (lambda f, x: f.pad(x, (1, 1) * 4), (2, 3, 5)),
    (lambda f, x: f.pad(x, (1, 1), mode="foo"), (2, 3, 5)),
    (lambda f, x: f.pad(x, (1, 1), mode="reflect", value=1.0), (2, 3, 5)),
    (lambda f, x: f.pad(x, (1, 1), mode="circular", value=2), (2, 3, 5)),
    (lambda f, x: f.pad(x, (5, 1), mode="reflect"), (2, 3, 5)),
    (lambda f, x: f.pad(x, (1, 5), mode="reflect"), (3, 5)),
    (lambda f, x: f.pad(x, (5, 1, 1, 1), mode="reflect"), (2, 3, 5, 5)),
    (lambda f, x: f.pad(x, (1, 1, 1, 5), mode="reflect"), (3, 5, 5)),
    (lambda f, x: f.pad(x, (-3, -3), mode="reflect"), (2, 3, 5)),
    (lambda f, x: f.pad(x, (-3, -2), mode="reflect"), (2, 3, 5)),
    (lambda f, x: f.pad(x, (-3, -3), mode="replicate"), (2, 3, 5)),
    (lambda f, x: f.pad(x, (-3, -3, -3, -3), mode="reflect"), (2, 3, 5, 5)),
    (lambda f, x: f.pad(x, (-3, -3, -3, -3), mode="replicate"), (2, 3, 5, 5)),
    (lambda f, x: f.pad(x, (-3, -3, 0, 0), mode="reflect"), (2, 3, 5, 5)),
    (lambda f, x: f.pad(x, (0, 0, -3, -3), mode="replicate"), (2, 3, 5, 5)),
    (lambda f, x: f.pad(x, (1, 1), mode="reflect"), (5,)),
    (lambda f, x: f.pad(x, (1, 1), mode="reflect"), (2, 3, 5, 5)),
    (lambda f, x: f.pad(x, (1, 1, 1, 1), mode="replicate"), (3, 5)),
    (lambda f, x: f.pad(x, (1, 1), mode="reflect"), (2, 0, 5)),
    (lambda f, x: f.pad(x, (1, 1), mode="replicate"), (1, 2, 0)),
    (lambda f, x: f.pad(x, (1, 1, 1, 1), mode="replicate"), (2, 0, 3, 3)),
    (lambda f, x: f.pad(x, (6, 1), mode="circular"), (2, 3, 5)),
    (lambda f, x: f.pad(x, (-3, -3, 0, 0), mode="circular"), (2, 3, 5, 5)),
    (lambda f, x: f.pad(x, (1, 1), mode="circular"), (5,)),
    (lambda f, x: f.pad(x, (-5, 4), mode="circular"), (1, 1, 7)),  # (wraps past the crop)
    (lambda f, x: f.pad(x, (3, -5), mode="circular"), (1, 7)),
    (lambda f, x: f.pad(x, (-3, -3)), (2, 3, 5)),
    (lambda f, x: f.pad(x, (-7, 3)), (2, 3, 5)),
    (lambda f, x: f.pad(x, (1, 1)), ()),
    (lambda f, x: f.pad(x, (1.5, 1)), (2, 3)),
    (lambda f, x: f.pad(x, (1, 1, 1, 1, 4, 1), mode="reflect"), (2, 3, 4, 5, 6)),
    (lambda f, x: f.pad(x, (1, 1, 5, 1, 1, 1), mode="reflect"), (3, 4, 5, 6)),
    (lambda f, x: f.pad(x, (6, 1, 1, 1, 1, 1), mode="reflect"), (2, 3, 4, 5, 6)),
    (lambda f, x: f.pad(x, (-3,) * 6, mode="reflect"), (2, 3, 4, 5, 6)),
    (lambda f, x: f.pad(x, (-3,) * 6, mode="replicate"), (2, 3, 4, 5, 6)),
    (lambda f, x: f.pad(x, (-4, -4, 0, 0, 0, 0), mode="reflect"), (2, 3, 4, 5, 6)),
    (lambda f, x: f.pad(x, (0, 0, 0, 0, -3, -3), mode="replicate"), (2, 3, 4, 5, 6)),
    (lambda f, x: f.pad(x, (1,) * 6, mode="reflect"), (2, 0, 3, 3, 3)),
    (lambda f, x: f.pad(x, (1,) * 6, mode="replicate"), (3, 3, 3)),
    (lambda f, x: f.pad(x, 2), (2, 3)),
    (lambda f, x: f.max_pool2d(x, 2.0), (2, 3, 5, 5)),
    (lambda f, x: f.max_pool2d(x, 2, (1.0, 1)), (2, 3, 5, 5)),
    (lambda f, x: f.max_pool2d(x, 2, 1, 0, 1.5), (2, 3, 5, 5)),
    (lambda f, x: f.avg_pool2d(x, (2, 2.5)), (2, 3, 5, 5)),
    (lambda f, x: f.avg_pool2d(x, 2, 1, 0.5), (2, 3, 5, 5)),
    (lambda f, x: f.max_pool1d(x, 2.0), (2, 3, 5)),
    (lambda f, x: f.avg_pool1d(x, 2, 1.5), (2, 3, 5)),
]


@pytest.mark.parametrize("fn, shape", ERRORS)
def test_errors_as_pytorch(fn, shape):
    _same_error(fn, shape)


@pytest.mark.parametrize("fn, shape", [
    (lambda f, x: f.max_pool2d(x, 6), (2, 3, 5, 5)),
    (lambda f, x: f.max_pool2d(x, 2, padding=2), (2, 3, 5, 5)),
    (lambda f, x: f.max_pool1d(x, 6), (2, 3, 5)),
    (lambda f, x: f.max_pool2d(x, 2), (1, 2, 3, 5, 5)),
])
def test_errors_with_grad_as_pytorch(fn, shape):
    _same_error(fn, shape, requires_grad=True)


@pytest.mark.parametrize("fn, dtype", [
    (lambda f, x: f.max_pool2d(x, 2), "bool"), (lambda f, x: f.avg_pool2d(x, 2), "bool"),
    (lambda f, x: f.avg_pool2d(x, 2), "int32"),
    (lambda f, x: f.max_pool1d(x[0], 2), "int64"),
    (lambda f, x: f.adaptive_avg_pool2d(x, 2), "int64"),
    (lambda f, x: f.adaptive_max_pool2d(x, 2), "int64"),
    (lambda f, x: f.pad(x[0], (1, 1), mode="reflect"), "bool"),
    (lambda f, x: f.pad(x[0], (1, 1), mode="replicate"), "bool"),
    (lambda f, x: f.pad(x, (1,) * 6, mode="reflect"), "bool"),
    (lambda f, x: f.pad(x, (1,) * 6, mode="replicate"), "bool"),
])
def test_dtype_errors_as_pytorch(fn, dtype):
    _same_error(fn, (2, 3, 4, 4), dtype)


# ---------------------------------------------------------------------- modules
MODULES = [
    ("MaxPool2d", (2,), {}), ("MaxPool2d", (3, 2, 1), dict(dilation=1, ceil_mode=True)),
    ("MaxPool2d", (2,), dict(return_indices=True)), ("MaxPool1d", (3, 2), {}),
    ("AvgPool1d", (2,), {}), ("AvgPool1d", (3, 2, 1), dict(count_include_pad=False)),
    ("AvgPool2d", (2,), {}), ("AvgPool2d", ((3, 2), 1, 1), dict(divisor_override=4)),
    ("AdaptiveAvgPool1d", (3,), {}), ("AdaptiveAvgPool2d", ((None, 3),), {}),
    ("AdaptiveAvgPool2d", (1,), {}), ("AdaptiveMaxPool1d", (3,), {}),
    ("AdaptiveMaxPool2d", ((2, 3),), dict(return_indices=True)),
    ("ZeroPad1d", (2,), {}), ("ZeroPad2d", (1,), {}), ("ZeroPad2d", ((1, 0, 2, -1),), {}),
    ("ConstantPad1d", (2, 3.5), {}), ("ConstantPad2d", ((1, 2, 0, 1), 1), {}),
    ("ReflectionPad1d", (2,), {}), ("ReflectionPad2d", ((1, 0, 2, 1),), {}),
    ("ReplicationPad1d", ((1, 2),), {}), ("ReplicationPad2d", (2,), {}),
    ("CircularPad1d", (1,), {}), ("CircularPad2d", ((1, 2, 0, 1),), {}),
    ("ConstantPad3d", ((1, 0, 2, 1, 0, 1), -2.0), {}), ("ZeroPad3d", (1,), {}),
    ("CircularPad3d", ((1, 0, 1, 1, 0, 1),), {}), ("ReflectionPad3d", (1,), {}),
    ("ReplicationPad3d", ((2, 0, 1, 1, 0, 2),), {}),
]


@pytest.mark.parametrize("name, args, kwargs", MODULES)
def test_modules(name, args, kwargs):
    ours = getattr(numgrad.nn, name)(*args, **kwargs)
    theirs = getattr(torch.nn, name)(*args, **kwargs)
    assert repr(ours) == repr(theirs)
    shape = {"1d": (2, 3, 8), "2d": (2, 3, 6, 7), "3d": (1, 2, 3, 4, 5)}[name[-2:]]
    _compare(lambda f, x: (ours if f is F else theirs)(x), shape)


@pytest.mark.parametrize("call", [
    lambda m, x: m.max_pool2d(x, 2, 1, 1), lambda m, x: m.max_pool1d(x[0], 3, 2),
    lambda m, x: m.max_pool1d_with_indices(x[0], 2), lambda m, x: m.avg_pool1d(x[0], 3, 2, 1),
    lambda m, x: m.adaptive_avg_pool1d(x[0], 4), lambda m, x: m.constant_pad_nd(x, (1, -1, 2, 0)),
])
def test_top_level_names_as_pytorch(call):
    _compare(lambda f, x: call(numgrad if f is F else torch, x), (2, 3, 5, 6))


@pytest.mark.parametrize("fn, refused", [
    (lambda f, x: f.max_pool2d(x, 2), True), (lambda f, x: f.max_pool1d(x[0], 2), True),
    (lambda f, x: f.avg_pool2d(x, 2), True), (lambda f, x: f.adaptive_avg_pool2d(x, 3), True),
    (lambda f, x: f.adaptive_max_pool2d(x, 3), True),
    (lambda f, x: f.pad(x, (1, 1, 1, 1), mode="reflect"), True),
    (lambda f, x: f.pad(x[0], (1, 1), mode="replicate"), True),
    (lambda f, x: f.pad(x, (1, 1, 1, 1)), False),
    (lambda f, x: f.pad(x, (1, 1, 1, 1), mode="circular"), False),
])
def test_an_in_place_write_to_the_input_before_backward(fn, refused):
    """Refused where PyTorch saves the input for backward, with its error."""
    messages = []
    for m, f in ((numgrad, F), (torch, TF)):
        leaf = m.ones(1, 2, 4, 4, requires_grad=True)
        x = leaf * 1
        y = fn(f, x)
        x.add_(1)
        try:
            y.sum().backward()
            messages.append(None)
        except RuntimeError as error:
            messages.append(str(error).split(":")[0])  # (numgrad names its own tensor types)
    assert (messages[1] is not None) == refused
    assert messages[0] == messages[1]


@pytest.mark.parametrize("pool", [
    lambda F, x: F.max_pool2d(x, 3, 2, 1, dilation=2),
    lambda F, x: F.avg_pool2d(x, 3, 2, 1, count_include_pad=False),
    lambda F, x: F.adaptive_avg_pool2d(x, (5, 7)),
], ids=["max", "avg", "adaptive_avg"])
def test_large_poolings_share_their_planes_among_threads_with_the_same_values(pool):
    """From ``pooling.THREADED`` elements on, the planes are cut into parts run on two threads:
    the same bits as on one thread, forward and backward, and PyTorch's values."""
    from numgrad.kernels.cpu import pooling

    rng = np.random.default_rng(3)
    x = rng.standard_normal((8, 17, 44, 45)).astype(np.float32)
    assert x.size >= pooling.THREADED
    results = []
    before = numgrad.get_num_threads()
    try:
        for threads in (1, 2):
            numgrad.set_num_threads(threads)
            ours = numgrad.tensor(x, requires_grad=True)
            out = pool(F, ours)
            out.backward(numgrad.tensor(np.linspace(-1, 1, out.numel(), dtype=np.float32)
                                        .reshape(out.shape)))
            results.append((out.detach().numpy().tobytes(), ours.grad.numpy().tobytes()))
    finally:
        numgrad.set_num_threads(before)
    assert results[0] == results[1]
    theirs = torch.tensor(x, requires_grad=True)
    want = pool(TF, theirs)
    want.backward(torch.linspace(-1, 1, want.numel()).reshape(want.shape))
    np.testing.assert_allclose(out.detach().numpy(), want.detach().numpy(), **TOL["float32"])
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), **TOL["float32"])
