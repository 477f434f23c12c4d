"""3-D and transposed convolution, 3-D pooling and interpolation on CUDA in the simulator: the same values,
gradients and nodes as the CPU beyond the registry's samples (3-D im2col/col2im across groups
and dilations, transposed convolutions with output padding, every interpolation mode forward
and backward, pixel shuffling), second derivatives, a ``ConvTranspose2d`` and an ``Upsample``
moved to CUDA, and integer tensors refused."""
import numpy as np
import pytest
from _sim_helpers import (
    CONV_TOL,
    function_matches_cpu,
    module_matches_cpu,
    second_derivatives_on_both,
)
from _sim_helpers import host as _host
from _sim_helpers import pair as _pair
from _sim_helpers import same_conv as _same

import numgrad
import numgrad.nn.functional as F

TOL = CONV_TOL


CASES = [
    ("conv3d", ((2, 4, 3, 4, 3), (4, 2, 2, 3, 2), (4,)), dict(stride=(2, 1, 1), padding=1,
                                                              dilation=(1, 1, 2), groups=2)),
    ("conv_transpose2d", ((2, 2, 3, 3), (2, 3, 3, 2), (3,)),
     dict(stride=(2, 1), padding=1, output_padding=(1, 0), dilation=(1, 2))),
    ("conv_transpose1d", ((2, 4, 5), (4, 1, 3)), dict(stride=3, groups=2, output_padding=2)),
    ("conv_transpose3d", ((1, 2, 2, 3, 2), (2, 2, 2, 2, 2), (2,)),
     dict(stride=2, padding=(1, 0, 0), output_padding=(0, 1, 0))),
    ("interpolate", ((2, 2, 5),), dict(scale_factor=1.7, mode="linear")),
    ("interpolate", ((2, 2, 3, 4),), dict(size=(5, 7), mode="bilinear", align_corners=True)),
    ("interpolate", ((1, 2, 3, 4),), dict(scale_factor=2.5, mode="bicubic")),
    ("interpolate", ((1, 2, 2, 3, 2),), dict(size=(3, 5, 3), mode="trilinear")),
    ("interpolate", ((2, 2, 3, 4),), dict(scale_factor=(1.7, 0.6), mode="nearest")),
    ("interpolate", ((1, 2, 2, 3, 4),), dict(size=(3, 2, 5), mode="nearest-exact")),
    ("pixel_shuffle", ((2, 8, 2, 3),), dict(upscale_factor=2)),
    ("pixel_unshuffle", ((2, 2, 4, 6),), dict(downscale_factor=2)),
    ("max_pool3d", ((2, 5, 4, 3),), dict(kernel_size=(3, 2, 2), stride=(2, 1, 2),
                                         padding=(1, 0, 1), dilation=(1, 2, 1), ceil_mode=True)),
    ("avg_pool3d", ((1, 2, 3, 4, 3),), dict(kernel_size=2, stride=1, padding=1,
                                            count_include_pad=False)),
    ("avg_pool3d", ((1, 1, 2, 3, 3),), dict(kernel_size=2, padding=(0, 1, 1),
                                            divisor_override=3)),
    ("adaptive_avg_pool3d", ((2, 2, 3, 5, 4),), dict(output_size=(2, 3, 2))),
]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_values_and_gradients_match_the_cpu(case, dtype):
    name, shapes, kw = CASES[case]
    fn = getattr(F, name)
    function_matches_cpu(fn, shapes, kw, dtype, TOL[dtype])


def test_second_derivatives_match_the_cpu():
    results = second_derivatives_on_both(
        _pair(((1, 2, 3, 3), (2, 3, 2, 2), (3,)), "float64", seed=2),
        lambda *ts: F.interpolate(F.conv_transpose2d(*ts, stride=2, padding=1,
                                                     output_padding=1),
                                  scale_factor=1.5, mode="bilinear"),
        "ConvolutionBackwardBackward0")
    for c, g in zip(*results):
        _same(c, g, "float64")


def test_modules_on_cuda():
    numgrad.manual_seed(0)
    net = numgrad.nn.Sequential(numgrad.nn.ConvTranspose2d(2, 3, 3, stride=2),
                                numgrad.nn.Upsample(scale_factor=2, mode="bilinear"))
    x = numgrad.tensor(np.random.default_rng(4).uniform(-1, 1, (2, 2, 3, 3)).astype("float32"))
    module_matches_cpu(net, x, TOL["float32"])


def test_integer_tensors_are_refused_on_cuda():
    x = numgrad.ones(1, 2, 3, 3, dtype=numgrad.int64, device="cuda")
    with pytest.raises(NotImplementedError, match="float32 and float64"):
        F.conv_transpose2d(x, numgrad.ones(2, 1, 2, 2, dtype=numgrad.int64, device="cuda"))
    with pytest.raises(NotImplementedError, match="float32 and float64"):
        F.conv3d(x.unsqueeze(0), numgrad.ones(1, 1, 2, 2, 2, dtype=numgrad.int64,
                                               device="cuda"))
    with pytest.raises(NotImplementedError, match="not implemented for CUDA"):
        F.avg_pool3d(x, 2)


def test_max_pool3d_of_integers_and_its_indices_on_cuda():
    x = np.arange(2 * 3 * 4 * 5).reshape(1, 2, 3, 4, 5) * 7 % 11
    c, ci = F.max_pool3d(numgrad.tensor(x), 2, padding=1, return_indices=True)
    g, gi = F.max_pool3d(numgrad.tensor(x, device="cuda"), 2, padding=1, return_indices=True)
    np.testing.assert_array_equal(_host(g), _host(c))
    np.testing.assert_array_equal(_host(gi), _host(ci))


def test_unfold_and_fold_match_the_cpu():
    for name, shape, args, kw in (("unfold", (2, 3, 5, 6), ((2, 3),),
                                   dict(dilation=(1, 2), padding=1, stride=(2, 1))),
                                  ("fold", (2, 18, 12), ((5, 6), (2, 3)),
                                   dict(dilation=(1, 2), padding=1, stride=(2, 1)))):
        cpu, gpu = _pair((shape,), "float64")
        c, g = getattr(F, name)(cpu[0], *args, **kw), getattr(F, name)(gpu[0], *args, **kw)
        _same(c, g, "float64")
        c.sum().backward()
        g.sum().backward()
        _same(cpu[0].grad, gpu[0].grad, "float64")
