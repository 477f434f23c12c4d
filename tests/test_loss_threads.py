"""nll_loss's backward on several threads (``kernels/cpu/loss.py``: the rows zeroed and their
target entry written in spans on numgrad's worker threads): the same bits on one thread and on
two, PyTorch's values (with an ignored target, a weight, a NaN gradient and -0.0), and the
out-of-range target raised as PyTorch raises it, at a size above the threading threshold."""
import numpy as np
import pytest
import torch

import numgrad
from numgrad.kernels.cpu import loss

N, C = 64, 8193  # 524,352 elements: threaded


@pytest.fixture
def threads():
    before = numgrad.get_num_threads()
    yield numgrad.set_num_threads
    numgrad.set_num_threads(before)


@pytest.mark.parametrize("reduction", ["mean", "none"])
def test_the_backward_has_the_same_bits_on_one_and_two_threads_and_pytorchs(threads, reduction):
    assert N * C >= loss.SCATTER_THREADED
    rng = np.random.default_rng(0)
    target = rng.integers(0, C, N)
    target[5] = -100  # (ignored)
    weight = rng.uniform(0.5, 2.0, C).astype(np.float32)
    grad = rng.normal(size=N if reduction == "none" else ()).astype(np.float32)
    if reduction == "none":
        grad[7], grad[40] = np.nan, -0.0
    runs = []
    for n in (1, 2):
        threads(n)
        runs.append(loss.nll_loss_backward(grad, (N, C), target, weight, -100, reduction))
    assert runs[0].tobytes() == runs[1].tobytes()
    x = torch.zeros(N, C, requires_grad=True)
    torch.nn.functional.nll_loss(x, torch.tensor(target), torch.tensor(weight),
                                 reduction=reduction).backward(torch.tensor(grad))
    finite = ~np.isnan(runs[1])  # (the zeros' signs PyTorch's; a NaN's sign is not compared)
    np.testing.assert_array_equal(np.signbit(runs[1])[finite], np.signbit(x.grad.numpy())[finite])
    np.testing.assert_allclose(runs[1], x.grad.numpy(), rtol=1e-6, atol=0)


def test_a_target_out_of_range_raises_on_two_threads(threads):
    threads(2)
    target = np.zeros(N, np.int64)
    target[N - 3] = C  # (in the second span)
    with pytest.raises(IndexError, match=f"Target {C} is out of bounds"):
        loss.nll_loss_backward(np.array(1.0, np.float32), (N, C), target, None, -100, "mean")
