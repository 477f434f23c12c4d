"""Convolution on CUDA (im2col, col2im and the tiled GEMM) in the simulator: the same values,
gradients and nodes as the CPU for the layouts the registry samples do not reach (asymmetric
'same' padding, strides and dilations across tile edges, an empty batch, non-contiguous operands,
second derivatives), ``nn.Conv2d`` moved to CUDA, and integer tensors refused."""
import numpy as np
import pytest
from _sim_helpers import (
    CONV_TOL,
    function_matches_cpu,
    module_matches_cpu,
    second_derivatives_on_both,
)
from _sim_helpers import pair as _pair
from _sim_helpers import same_conv as _same

import numgrad
import numgrad.nn.functional as F

TOL = CONV_TOL


CASES = [
    (2, ((2, 3, 5, 6), (4, 3, 3, 3), (4,)), dict(stride=(2, 1), padding=(1, 2), dilation=(2, 1))),
    (2, ((1, 4, 5, 4), (4, 2, 2, 3)), dict(padding="same", groups=2)),
    (1, ((2, 4, 9), (6, 2, 3), (6,)), dict(stride=2, padding=1, dilation=2, groups=2)),
    (1, ((2, 2, 6), (3, 2, 4)), dict(padding="same")),
]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_values_and_gradients_match_the_cpu(case, dtype):
    dim, shapes, kw = CASES[case]
    fn = F.conv1d if dim == 1 else F.conv2d
    c = function_matches_cpu(fn, shapes, kw, dtype, TOL[dtype])
    assert c.grad_fn.name() == "ConvolutionBackward0"


def test_second_derivatives_match_the_cpu():
    results = second_derivatives_on_both(
        _pair(((1, 2, 4, 4), (2, 1, 2, 2), (2,)), "float64", seed=2),
        lambda *ts: F.conv2d(*ts, padding=1, groups=2), "ConvolutionBackwardBackward0")
    for c, g in zip(*results):
        _same(c, g, "float64")


def test_empty_batch_and_non_contiguous_operands():
    cpu, gpu = _pair(((0, 2, 4, 4), (3, 2, 3, 3)), "float64")
    c, g = F.conv2d(*cpu, padding=1), F.conv2d(*gpu, padding=1)
    _same(c, g, "float64")
    g.sum().backward()
    assert gpu[0].grad.shape == (0, 2, 4, 4)
    _same(numgrad.zeros(3, 2, 3, 3, dtype=numgrad.float64), gpu[1].grad, "float64")
    cpu, gpu = _pair(((2, 4, 5, 3), (3, 2, 2, 2)), "float64", seed=3)
    c = F.conv2d(cpu[0].transpose(2, 3)[:, ::2], cpu[1].transpose(2, 3))
    g = F.conv2d(gpu[0].transpose(2, 3)[:, ::2], gpu[1].transpose(2, 3))
    _same(c, g, "float64")
    c.sum().backward()
    g.sum().backward()
    for a, b in zip(cpu, gpu):
        _same(a.grad, b.grad, "float64")


def test_conv2d_module_on_cuda():
    numgrad.manual_seed(0)
    conv = numgrad.nn.Conv2d(2, 3, 3, padding=1)
    x = numgrad.tensor(np.random.default_rng(4).uniform(-1, 1, (2, 2, 4, 4)).astype("float32"))
    module_matches_cpu(conv, x, TOL["float32"])


def test_integer_tensors_are_refused_on_cuda():
    x = numgrad.ones(1, 1, 3, 3, dtype=numgrad.int64, device="cuda")
    with pytest.raises(NotImplementedError, match="float32 and float64"):
        F.conv2d(x, numgrad.ones(1, 1, 2, 2, dtype=numgrad.int64, device="cuda"))
