"""Transposed and 3-D convolution, interpolation and pixel shuffling against PyTorch:
``F.conv3d``, ``F.conv_transpose1d/2d/3d`` (stride, padding, output padding, groups, dilation,
bias), ATen's ``convolution``/``convolution_backward`` with ``transposed=True``,
``F.interpolate`` (nearest, nearest-exact, linear, bilinear, bicubic, trilinear; ``size`` and
``scale_factor``; ``align_corners``), ``F.pixel_shuffle``/``pixel_unshuffle``: values, node
names and gradients (float32 and float64, PyTorch's weights copied in), gradcheck in float64,
second derivatives, PyTorch's errors, batched, unbatched, empty and non-contiguous inputs; the
modules (``Conv3d``, ``ConvTranspose1d/2d/3d`` with ``output_size``, ``Upsample``,
``UpsamplingNearest2d``, ``UpsamplingBilinear2d``, ``PixelShuffle``, ``PixelUnshuffle``,
``BatchNorm3d``): repr, parameter shapes, forward with PyTorch's parameters."""
import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from _helpers import raised

import numgrad
import numgrad.nn.functional as F

TOL = {"float64": dict(rtol=1e-10, atol=1e-12), "float32": dict(rtol=2e-5, atol=2e-5)}


def _pair(shapes, dtype, seed=0):
    rng = np.random.default_rng(seed)
    arrays = [rng.uniform(-1, 1, s).astype(dtype) for s in shapes]
    return ([numgrad.tensor(a, requires_grad=True) for a in arrays],
            [torch.tensor(a, requires_grad=True) for a in arrays])


def _close(ours, theirs, dtype):
    assert tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), **TOL[dtype])


def _check(fn_name, shapes, kw, dtype, seed=0):
    """Forward, node name and every input's gradient against PyTorch."""
    ours, theirs = _pair(shapes, dtype, seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        o = getattr(F, fn_name)(*ours, **kw)
        t = getattr(TF, fn_name)(*theirs, **kw)
    _close(o, t, dtype)
    assert o.grad_fn.name() == t.grad_fn.name()
    seed_grad = np.random.default_rng(seed + 1).standard_normal(tuple(t.shape)).astype(dtype)
    o.backward(numgrad.tensor(seed_grad))
    t.backward(torch.tensor(seed_grad))
    for a, b in zip(ours, theirs):
        _close(a.grad, b.grad, dtype)


CONV = [
    ("conv3d", ((2, 2, 4, 5, 4), (3, 2, 2, 3, 2), (3,)), dict(stride=(1, 2, 1), padding=1,
                                                              dilation=(2, 1, 1))),
    ("conv3d", ((1, 4, 3, 4, 3), (4, 2, 2, 2, 3)), dict(groups=2, padding="same")),
    ("conv3d", ((4, 3, 4, 3), (2, 4, 3, 3, 3), (2,)), dict(padding=(1, 0, 1))),  # unbatched
    ("conv_transpose2d", ((2, 2, 3, 3), (2, 3, 3, 2), (3,)),
     dict(stride=(2, 1), padding=1, output_padding=(1, 0), dilation=(1, 2))),
    ("conv_transpose2d", ((1, 4, 3, 4), (4, 1, 3, 3)), dict(stride=2, groups=4)),
    ("conv_transpose2d", ((4, 3, 3), (4, 2, 2, 3), (2,)), dict(stride=3)),  # unbatched
    ("conv_transpose1d", ((2, 4, 4), (4, 1, 3)), dict(stride=2, groups=2)),
    ("conv_transpose1d", ((2, 4, 5), (4, 3, 3), (3,)), dict(dilation=2, output_padding=1)),
    ("conv_transpose3d", ((1, 2, 2, 3, 2), (2, 2, 2, 2, 2), (2,)),
     dict(stride=2, padding=(1, 0, 0), output_padding=(0, 1, 0))),
]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("case", range(len(CONV)))
def test_convolutions_match_pytorch(case, dtype):
    name, shapes, kw = CONV[case]
    _check(name, shapes, kw, dtype)


@pytest.mark.parametrize("case", [0, 3, 7, 8])
def test_convolutions_gradcheck(case):
    name, shapes, kw = CONV[case]
    ours, _ = _pair(shapes, "float64", 5)
    fn = getattr(F, name)
    assert numgrad.autograd.gradcheck(lambda *ts: fn(*ts, **kw), ours)


def test_transposed_second_derivatives_match_pytorch_and_name_their_nodes():
    results = []
    for m, Fm, ts in zip((numgrad, torch), (F, TF),
                         _pair(((1, 2, 3, 3), (2, 3, 2, 2), (3,)), "float64", 2)):
        y = Fm.conv_transpose2d(*ts, stride=2, padding=1, output_padding=1)
        grads = m.autograd.grad((y * y).sum(), ts, create_graph=True)
        results.append(([g.grad_fn.name() for g in grads[:2]],
                        m.autograd.grad(sum((g * g).sum() for g in grads), ts)))
    (names, ours), (their_names, theirs) = results
    assert names == their_names
    for a, b in zip(ours, theirs):
        _close(a, b, "float64")


def test_transposed_aten_convolution_and_its_backward():
    ours, theirs = _pair(((2, 4, 3, 3), (4, 3, 3, 3), (3,)), "float64", 3)
    args = ([2, 1], [1, 0], [1, 1], True, [1, 0], 1)
    o = numgrad.convolution(*ours, *args)
    t = torch.convolution(*theirs, *args)
    _close(o, t, "float64")
    g = np.random.default_rng(4).standard_normal(tuple(t.shape))
    ob = numgrad.ops.convolution_backward(numgrad.tensor(g), ours[0], ours[1], [3], *args,
                                          [True, True, True])
    tb = torch.ops.aten.convolution_backward(torch.tensor(g), theirs[0], theirs[1], [3], *args,
                                             [True, True, True])
    for a, b in zip(ob, tb):
        _close(a, b, "float64")


def test_empty_batch_non_contiguous_and_integer_inputs():
    ours, theirs = _pair(((0, 4, 3, 3), (4, 3, 3, 3)), "float64")
    _close(F.conv_transpose2d(*ours, stride=2), TF.conv_transpose2d(*theirs, stride=2),
           "float64")
    ours, theirs = _pair(((2, 5, 4, 3, 3), (3, 3, 2, 2, 2)), "float64", 1)
    o = F.conv3d(ours[0].transpose(2, 4)[:, ::2], ours[1].transpose(3, 4))
    t = TF.conv3d(theirs[0].transpose(2, 4)[:, ::2], theirs[1].transpose(3, 4))
    _close(o, t, "float64")
    x = np.arange(2 * 4 * 3 * 3).reshape(1, 4, 3, 6) % 5
    w = np.arange(4 * 2 * 3 * 3).reshape(4, 2, 3, 3) % 3
    o = F.conv_transpose2d(numgrad.tensor(x), numgrad.tensor(w), stride=2)
    t = TF.conv_transpose2d(torch.tensor(x), torch.tensor(w), stride=2)
    assert o.dtype.name == "int64"
    np.testing.assert_array_equal(o.numpy(), t.numpy())


def _errors(m, Fm, name):
    x2, w2 = m.ones(2, 4, 5, 5), m.ones(4, 3, 3, 3)
    calls = {
        "output_padding": lambda: Fm.conv_transpose2d(x2, w2, output_padding=1),
        "output_padding_3d": lambda: Fm.conv_transpose3d(m.ones(1, 4, 2, 2, 2),
                                                         m.ones(4, 3, 2, 2, 2),
                                                         stride=2, output_padding=2),
        "output_padding_1d": lambda: Fm.conv_transpose1d(m.ones(2, 4, 5), m.ones(4, 3, 3),
                                                         output_padding=1),
        "channels": lambda: Fm.conv_transpose2d(x2, m.ones(3, 3, 3, 3)),
        "bias": lambda: Fm.conv_transpose2d(x2, w2, m.ones(4)),
        "groups": lambda: Fm.conv_transpose2d(x2, w2, groups=3),
        "no_groups": lambda: Fm.conv_transpose2d(x2, w2, groups=0),
        "negative_padding": lambda: Fm.conv_transpose2d(x2, w2, padding=-1),
        "rank": lambda: Fm.conv_transpose2d(m.ones(4, 5), w2),
        "rank3d": lambda: Fm.conv3d(m.ones(2, 3, 3), m.ones(2, 2, 2, 2, 2)),
        "stride_length": lambda: Fm.conv_transpose2d(x2, w2, stride=(1, 2, 3)),
        "dtypes": lambda: Fm.conv_transpose2d(x2.double(), w2),
        "bias_dtype": lambda: Fm.conv_transpose2d(x2, w2, m.ones(3).double()),
        "padding_str": lambda: Fm.conv_transpose2d(x2, w2, padding="same"),
        "conv3d_channels": lambda: Fm.conv3d(m.ones(1, 3, 3, 3, 3), m.ones(2, 2, 2, 2, 2)),
    }
    return raised(calls[name], by_name=False)


@pytest.mark.parametrize("name", [
    "output_padding", "output_padding_3d", "output_padding_1d", "channels", "bias", "groups",
    "no_groups", "negative_padding", "rank", "rank3d", "stride_length", "dtypes", "bias_dtype",
    "padding_str", "conv3d_channels"])
def test_convolution_errors_match_pytorch(name):
    ours, theirs = _errors(numgrad, F, name), _errors(torch, TF, name)
    assert theirs is not None and ours is not None
    assert ours[0].__name__ == theirs[0].__name__ and ours[1] == theirs[1]


# ---------------------------------------------------------------------- modules
MODULES = [
    ("Conv3d", (2, 4, 3), dict(padding=1, stride=(1, 2, 1)), (1, 2, 3, 4, 3), None),
    ("Conv3d", (2, 4, 2), dict(padding=1, padding_mode="replicate", bias=False),
     (2, 3, 4, 3), None),
    ("ConvTranspose1d", (4, 2, 3), dict(stride=2, padding=1, groups=2, bias=False), (4, 5),
     [10]),
    ("ConvTranspose2d", (4, 3, 3), dict(stride=2), (2, 4, 5, 5), [11, 12]),
    ("ConvTranspose2d", (2, 2, (2, 3)), dict(stride=(2, 1), dilation=2, output_padding=(1, 0)),
     (1, 2, 3, 3), None),
    ("ConvTranspose3d", (2, 3, 2), dict(stride=2, output_padding=1, dilation=2),
     (1, 2, 2, 3, 2), None),
    ("ConvTranspose3d", (2, 3, 2), dict(stride=2), (2, 2, 3, 2), [3, 5, 6, 5]),
]


@pytest.mark.parametrize("case", range(len(MODULES)))
def test_conv_modules_match_pytorch(case):
    cls, args, kw, shape, output_size = MODULES[case]
    theirs = getattr(torch.nn, cls)(*args, **kw).double()
    ours = getattr(numgrad.nn, cls)(*args, **kw, dtype=numgrad.float64)
    assert repr(ours) == repr(theirs)
    params = dict(ours.named_parameters())
    assert list(params) == [n for n, _ in theirs.named_parameters()]
    for n, p in theirs.named_parameters():
        assert tuple(params[n].shape) == tuple(p.shape)
        params[n].data = numgrad.tensor(p.detach().numpy())
    x = np.random.default_rng(case).standard_normal(shape)
    kwargs = {} if output_size is None else dict(output_size=output_size)
    xo, xt = numgrad.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    o, t = ours(xo, **kwargs), theirs(xt, **kwargs)
    _close(o, t, "float64")
    o.sum().backward()
    t.sum().backward()
    _close(xo.grad, xt.grad, "float64")
    for n, p in theirs.named_parameters():
        _close(params[n].grad, p.grad, "float64")


def test_conv_transpose_module_errors_and_initialisation():
    def err(m):
        out = []
        for call in (lambda: m.nn.ConvTranspose2d(4, 3, 3, stride=2)(m.ones(2, 4, 5, 5),
                                                                     output_size=[14, 14]),
                     lambda: m.nn.ConvTranspose2d(4, 3, 3)(m.ones(2, 4, 5, 5),
                                                           output_size=[1, 2, 3]),
                     lambda: m.nn.ConvTranspose2d(4, 3, 3, padding_mode="reflect")):
            try:
                call()
            except ValueError as e:
                out.append(str(e))
        return out

    assert err(numgrad) == err(torch) and len(err(torch)) == 3
    numgrad.manual_seed(0)
    m = numgrad.nn.ConvTranspose2d(16, 8, 3, groups=2)
    bound = 1 / np.sqrt(4 * 9)  # fan_in: the weight's dimension 1 times the kernel
    w = m.weight.detach().numpy()
    assert w.shape == (16, 4, 3, 3) and np.abs(w).max() <= bound and np.abs(w).max() > bound / 2
    assert np.abs(m.bias.detach().numpy()).max() <= bound


def test_batch_norm_3d_matches_pytorch():
    ours = numgrad.nn.BatchNorm3d(3, dtype=numgrad.float64)
    theirs = torch.nn.BatchNorm3d(3).double()
    assert repr(ours) == repr(theirs)
    x = np.random.default_rng(0).standard_normal((2, 3, 2, 3, 2))
    o, t = ours(numgrad.tensor(x)), theirs(torch.tensor(x))
    _close(o, t, "float64")
    assert o.grad_fn.name() == t.grad_fn.name() == "NativeBatchNormBackward0"
    _close(ours.running_var, theirs.running_var, "float64")
    with pytest.raises(ValueError, match=r"expected 5D input \(got 4D input\)"):
        ours(numgrad.ones(2, 3, 2, 2))


# ---------------------------------------------------------------------- interpolation
INTERP = [
    ((2, 2, 5), dict(scale_factor=2, mode="nearest")),
    ((2, 2, 3, 4), dict(scale_factor=(1.7, 0.6), mode="nearest")),
    ((1, 2, 2, 3, 2), dict(size=(3, 4, 5), mode="nearest")),
    ((2, 2, 7), dict(size=4, mode="nearest-exact")),
    ((2, 2, 3, 4), dict(scale_factor=1.5, mode="nearest-exact")),
    ((2, 2, 5), dict(scale_factor=1.7, mode="linear")),
    ((2, 2, 5), dict(size=8, mode="linear", align_corners=True)),
    ((2, 2, 3, 4), dict(scale_factor=2, mode="bilinear")),
    ((2, 2, 4, 3), dict(size=(3, 7), mode="bilinear", align_corners=True)),
    ((2, 2, 5, 6), dict(scale_factor=0.6, mode="bilinear")),
    ((2, 2, 3, 4), dict(scale_factor=2.5, mode="bicubic")),
    ((1, 2, 5, 4), dict(size=(3, 7), mode="bicubic", align_corners=True)),
    ((1, 2, 2, 3, 2), dict(size=(3, 4, 3), mode="trilinear")),
    ((1, 2, 3, 2, 2), dict(scale_factor=1.5, mode="trilinear", align_corners=True)),
    ((2, 2, 3, 5), dict(scale_factor=1.5, mode="bilinear", recompute_scale_factor=True)),
    ((2, 2, 6, 4), dict(size=(3, 2), mode="area")),
    ((1, 2, 4, 3, 4), dict(scale_factor=0.5, mode="area")),
    # (anti-aliased bicubic: Keys' cubic with a = -0.5 stretched by the scale when shrinking;
    # numgrad refused it)
    ((1, 2, 9, 11), dict(size=(4, 5), mode="bicubic", antialias=True)),
    ((1, 2, 6, 4), dict(scale_factor=(0.4, 1.5), mode="bicubic", align_corners=True,
                        antialias=True)),
]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("case", range(len(INTERP)))
def test_interpolate_matches_pytorch(case, dtype):
    shape, kw = INTERP[case]
    _check("interpolate", (shape,), kw, dtype)


@pytest.mark.parametrize("case", [1, 4, 7, 11, 12])
def test_interpolate_gradcheck_and_gradgradcheck(case):
    shape, kw = INTERP[case]
    ours, _ = _pair((shape,), "float64", 7)
    fn = lambda x: F.interpolate(x, **kw)  # noqa: E731
    assert numgrad.autograd.gradcheck(fn, ours)
    assert numgrad.autograd.gradgradcheck(fn, ours)


def test_interpolate_of_empty_batch_and_non_contiguous_inputs():
    ours, theirs = _pair(((0, 2, 3, 3),), "float64")
    _close(F.interpolate(ours[0], scale_factor=2), TF.interpolate(theirs[0], scale_factor=2),
           "float64")
    ours, theirs = _pair(((2, 3, 4, 5),), "float64")
    _close(F.interpolate(ours[0].transpose(2, 3)[:, ::2], size=(4, 7), mode="bilinear"),
           TF.interpolate(theirs[0].transpose(2, 3)[:, ::2], size=(4, 7), mode="bilinear"),
           "float64")


def _interp_errors(m, Fm, name):
    x = m.ones(1, 2, 3, 4)
    calls = {
        "both": lambda: Fm.interpolate(x, size=4, scale_factor=2),
        "neither": lambda: Fm.interpolate(x),
        "size_length": lambda: Fm.interpolate(x, size=(4,)),
        "scale_length": lambda: Fm.interpolate(x, scale_factor=(2, 2, 2)),
        "size_type": lambda: Fm.interpolate(x, size=(2.5, 3)),
        "align_nearest": lambda: Fm.interpolate(x, size=4, align_corners=True),
        "linear_4d": lambda: Fm.interpolate(x, size=4, mode="linear"),
        "bilinear_3d": lambda: Fm.interpolate(m.ones(1, 2, 3), size=4, mode="bilinear"),
        "mode": lambda: Fm.interpolate(x, size=4, mode="bogus"),
        "rank": lambda: Fm.interpolate(m.ones(3, 4), size=4),
        "zero_size": lambda: Fm.interpolate(x, size=0),
        "zero_size_1d": lambda: Fm.interpolate(m.ones(1, 2, 3), scale_factor=0.1,
                                               mode="linear"),
        "zero_size_3d": lambda: Fm.interpolate(m.ones(1, 2, 3, 3, 3), scale_factor=0.1),
        "empty_channels": lambda: Fm.interpolate(m.ones(2, 0, 3, 3), scale_factor=2,
                                                 mode="bilinear"),
        "recompute": lambda: Fm.interpolate(x, size=4, recompute_scale_factor=True),
        "long": lambda: Fm.interpolate(m.ones(1, 2, 3, dtype=m.int64), scale_factor=2,
                                       mode="linear"),
        "shuffle_channels": lambda: Fm.pixel_shuffle(m.ones(1, 7, 2, 3), 2),
        "shuffle_rank": lambda: Fm.pixel_shuffle(m.ones(7, 2), 2),
        "shuffle_factor": lambda: Fm.pixel_shuffle(m.ones(1, 8, 2, 3), 0),
        "unshuffle_height": lambda: Fm.pixel_unshuffle(m.ones(1, 2, 5, 6), 2),
        "unshuffle_width": lambda: Fm.pixel_unshuffle(m.ones(1, 2, 4, 3), 2),
        "unshuffle_factor": lambda: Fm.pixel_unshuffle(m.ones(1, 2, 4, 4), -1),
    }
    return raised(calls[name], by_name=False)


@pytest.mark.parametrize("name", [
    "both", "neither", "size_length", "scale_length", "size_type", "align_nearest", "linear_4d",
    "bilinear_3d", "mode", "rank", "zero_size", "zero_size_1d", "zero_size_3d",
    "empty_channels", "recompute", "long", "shuffle_channels", "shuffle_rank", "shuffle_factor",
    "unshuffle_height", "unshuffle_width", "unshuffle_factor"])
def test_interpolate_and_shuffle_errors_match_pytorch(name):
    ours, theirs = _interp_errors(numgrad, F, name), _interp_errors(torch, TF, name)
    assert theirs is not None and ours is not None
    assert ours[0].__name__ == theirs[0].__name__
    if name != "size_type":  # (the types are named after each library's classes)
        assert ours[1] == theirs[1]


def test_deprecated_upsample_functions_warn_as_pytorch():
    x = np.random.default_rng(0).standard_normal((1, 2, 3, 3))
    for name, kw in (("upsample", dict(scale_factor=2)), ("upsample_nearest",
                                                          dict(scale_factor=2)),
                     ("upsample_bilinear", dict(size=5))):
        with pytest.warns(UserWarning) as ours:
            o = getattr(F, name)(numgrad.tensor(x), **kw)
        with pytest.warns(UserWarning) as theirs:
            t = getattr(TF, name)(torch.tensor(x), **kw)
        assert str(ours[0].message) == str(theirs[0].message)
        _close(o, t, "float64")


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("case", [("pixel_shuffle", (2, 8, 2, 3), 2),
                                  ("pixel_shuffle", (9, 2, 1), 3),
                                  ("pixel_unshuffle", (2, 2, 4, 6), 2),
                                  ("pixel_unshuffle", (3, 1, 2, 2, 4), 2)])
def test_pixel_shuffle_matches_pytorch(case, dtype):
    name, shape, r = case
    ours, theirs = _pair((shape,), dtype)
    o, t = getattr(F, name)(ours[0], r), getattr(TF, name)(theirs[0], r)
    _close(o, t, dtype)
    assert o.grad_fn.name() == t.grad_fn.name()
    o.backward(numgrad.ones_like(o) * 2)
    t.backward(torch.ones_like(t) * 2)
    _close(ours[0].grad, theirs[0].grad, dtype)
    z = getattr(F, name)(ours[0].detach(), 1)
    assert not np.shares_memory(z.numpy(), ours[0].detach().numpy())


@pytest.mark.parametrize("index", range(5))
def test_upsampling_modules_match_pytorch(index):
    make = [lambda m: m.nn.Upsample(scale_factor=2, mode="bilinear"),
            lambda m: m.nn.Upsample(size=(3, 5), mode="nearest-exact"),
            lambda m: m.nn.UpsamplingNearest2d(scale_factor=(2, 1.5)),
            lambda m: m.nn.UpsamplingBilinear2d(size=3),
            lambda m: m.nn.Sequential(m.nn.PixelShuffle(2), m.nn.PixelUnshuffle(2))][index]
    ours, theirs = make(numgrad), make(torch)
    assert repr(ours) == repr(theirs)
    x = np.random.default_rng(index).standard_normal((1, 4, 4, 6))
    _close(ours(numgrad.tensor(x)), theirs(torch.tensor(x)), "float64")


# ---------------------------------------------------------------------- unfold and fold
FOLDS = [
    ("unfold", ((2, 3, 5, 6),), (2,), {}),
    ("unfold", ((2, 3, 5, 6),), ((2, 3),), dict(dilation=(1, 2), padding=1, stride=(2, 1))),
    ("unfold", ((3, 5, 6),), (2,), dict(stride=2)),  # unbatched
    ("unfold", ((0, 1, 4, 4),), (2,), dict(stride=2)),  # an empty batch
    ("fold", ((2, 12, 20),), ((5, 6), 2), {}),
    ("fold", ((12, 20),), ((5, 6), 2), {}),  # unbatched
    ("fold", ((0, 8, 4),), ((3, 4), 2, 1, 0, (1, 2)), {}),  # an empty batch
    ("fold", ((2, 18, 12),), ((5, 6), (2, 3)), dict(dilation=(1, 2), padding=1, stride=(2, 1))),
]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("case", range(len(FOLDS)))
def test_unfold_and_fold_match_pytorch(case, dtype):
    name, shapes, args, kw = FOLDS[case]
    ours, theirs = _pair(shapes, dtype)
    o, t = getattr(F, name)(ours[0], *args, **kw), getattr(TF, name)(theirs[0], *args, **kw)
    _close(o, t, dtype)
    assert o.grad_fn.name() == t.grad_fn.name()
    g = np.random.default_rng(2).standard_normal(tuple(t.shape)).astype(dtype)
    o.backward(numgrad.tensor(g))
    t.backward(torch.tensor(g))
    _close(ours[0].grad, theirs[0].grad, dtype)


@pytest.mark.parametrize("case", [1, 7])
def test_unfold_and_fold_gradcheck_and_gradgradcheck(case):
    name, shapes, args, kw = FOLDS[case]
    ours, _ = _pair(shapes, "float64", 3)
    fn = lambda x: getattr(F, name)(x, *args, **kw)  # noqa: E731
    assert numgrad.autograd.gradcheck(fn, ours)
    assert numgrad.autograd.gradgradcheck(fn, ours)


def _fold_errors(m, Fm, name):
    x, c = m.ones(2, 3, 5, 6), m.ones(2, 12, 20)
    calls = {
        "kernel_length": lambda: Fm.unfold(x, (2, 3, 4)),
        "kernel_zero": lambda: Fm.unfold(x, 0, dilation=0),
        "stride_zero": lambda: Fm.unfold(x, 2, stride=0),
        "padding": lambda: Fm.unfold(x, 2, padding=-1),
        "too_big": lambda: Fm.unfold(x, 7),
        "empty_channels": lambda: Fm.unfold(m.ones(2, 0, 5, 6), 2),
        "long": lambda: Fm.unfold(m.ones(2, 3, 5, 6, dtype=m.int64), 2),
        "fold_divisible": lambda: Fm.fold(c, (5, 6), 3),
        "fold_blocks": lambda: Fm.fold(c, (5, 7), 2),
        "fold_rank": lambda: Fm.fold(m.ones(2, 3, 12, 20), (5, 6), 2),
        "fold_output_size": lambda: Fm.fold(c, (5, 6, 7), 2),
        "fold_stride": lambda: Fm.fold(c, (5, 6), 2, stride=0, dilation=0),
        "fold_small": lambda: Fm.fold(c, (1, 1), 2),
    }
    return raised(calls[name])


@pytest.mark.parametrize("name", [
    "kernel_length", "kernel_zero", "stride_zero", "padding", "too_big", "empty_channels",
    "long", "fold_divisible", "fold_blocks", "fold_rank", "fold_output_size", "fold_stride",
    "fold_small"])
def test_unfold_and_fold_errors_match_pytorch(name):
    theirs = _fold_errors(torch, TF, name)
    assert theirs is not None and _fold_errors(numgrad, F, name) == theirs


def test_fold_and_unfold_modules_match_pytorch():
    for make in (lambda m: m.nn.Unfold(2, padding=1), lambda m: m.nn.Fold((5, 6), 2, stride=1),
                 lambda m: m.nn.Sequential(m.nn.Unfold((2, 3), stride=(1, 3)),
                                           m.nn.Fold((4, 6), (2, 3), stride=(1, 3)))):
        ours, theirs = make(numgrad), make(torch)
        assert repr(ours) == repr(theirs)
        shape = (2, 12, 20) if isinstance(theirs, torch.nn.Fold) else (2, 3, 4, 6)
        x = np.random.default_rng(0).standard_normal(shape)
        _close(ours(numgrad.tensor(x)), theirs(torch.tensor(x)), "float64")


def test_unfold_and_fold_of_bool_tensors_as_pytorch():
    x = np.random.default_rng(0).uniform(-1, 1, (1, 2, 3, 4)) > 0
    o, t = F.unfold(numgrad.tensor(x), 2), TF.unfold(torch.tensor(x), 2)
    assert o.dtype.name == "bool"
    np.testing.assert_array_equal(o.numpy(), t.numpy())
    np.testing.assert_array_equal(F.fold(o, (3, 4), 2).numpy(),
                                  TF.fold(t, (3, 4), 2).numpy())
    with pytest.raises(IndexError, match="Dimension specified as 1 but tensor has no dimensions"):
        F.unfold(numgrad.tensor(1.0), 2)


def test_antialiased_interpolation_to_the_same_size_is_a_new_tensor_as_pytorch():
    # (no pass to run: the result was the input's own array, so writing into it wrote the input)
    for m in (numgrad, torch):
        x = m.ones(1, 2, 3, 4)
        y = m.nn.functional.interpolate(x, size=(3, 4), mode="bilinear", antialias=True)
        y.add_(1)
        assert x.sum().item() == 24.0 and y.sum().item() == 48.0


def test_transposed_convolution_double_backward_with_an_output_padding_past_the_stride():
    # (an output_padding not under the stride, allowed by the dilation, makes the output longer
    # than the input reaches: the input's second gradient through the weight's gradient came out
    # one position too long, "ConvolutionBackwardBackward0 returned an invalid gradient")
    def run(m, f, xs, ws, kw):
        rng = np.random.default_rng(0)
        x = m.tensor(rng.standard_normal(xs), dtype=m.float64, requires_grad=True)
        w = m.tensor(rng.standard_normal(ws), dtype=m.float64, requires_grad=True)
        y = getattr(m.nn.functional, f)(x, w, **kw)
        gw, gx = m.autograd.grad((y * y).sum(), (w, x), create_graph=True)
        return m.autograd.grad(gw.sum() + gx.square().sum(), (x, w))

    for f, xs, ws, kw in (
            ("conv_transpose1d", (1, 1, 2), (1, 1, 2), dict(stride=2, output_padding=3,
                                                             dilation=4)),
            ("conv_transpose2d", (1, 2, 3, 2), (2, 1, 2, 2),
             dict(stride=(2, 1), output_padding=(2, 1), dilation=(3, 2)))):
        for ours, theirs in zip(run(numgrad, f, xs, ws, kw), run(torch, f, xs, ws, kw)):
            np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12, atol=1e-12)
