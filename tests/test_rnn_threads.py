"""The LSTM layer's kernels on several threads (``kernels/cpu/rnn.py``): the batch cut into
blocks of rows, each run through the whole sequence on one thread, and W_hh's gradient in
blocks of rows, give the same bits on one thread and on two, and PyTorch's values (float32,
with a NaN in one sequence), at a size above the threading threshold."""
import numpy as np
import pytest
import torch

import numgrad
from numgrad import nn
from numgrad.kernels.cpu import rnn

T, B, H = 10, 26, 64  # 10 * 26 * 256 * 64 multiply-adds: threaded; blocks of 12, 12 and 2 rows


@pytest.fixture
def threads():
    before = numgrad.get_num_threads()
    yield numgrad.set_num_threads
    numgrad.set_num_threads(before)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_layer_has_the_same_bits_on_one_thread_and_on_two(threads, dtype):
    rng = np.random.default_rng(0)
    gx = rng.normal(size=(T, B, 4 * H)).astype(dtype)
    h0, c0 = (rng.normal(size=(B, H)).astype(dtype) * 0.1 for _ in range(2))
    w = (rng.normal(size=(4 * H, H)) * 0.1).astype(dtype)
    grad = rng.normal(size=(T + 1, B, H)).astype(dtype)
    runs = []
    for n in (1, 2):
        threads(n)
        spans, used = rnn._batch_spans(T, B, 4 * H, H)
        assert (len(spans), used) == ((1, 1) if n == 1 else (3, 2))
        y, acts, cs = rnn.lstm_forward(gx, h0, c0, w)
        runs.append((y, acts, cs) + rnn.lstm_backward(grad, acts, cs, y, h0, c0, w))
    for a, b in zip(*runs):
        assert a.tobytes() == b.tobytes()


def test_a_threaded_layer_has_pytorchs_values_and_gradients_with_a_nan(threads):
    threads(2)
    torch.manual_seed(0)
    theirs = torch.nn.LSTM(H, H, 1)
    ours = nn.LSTM(H, H, 1)
    ours.load_state_dict({k: numgrad.tensor(v.detach().numpy()) for k, v in
                          theirs.state_dict().items()})
    x = np.random.default_rng(1).normal(size=(T, B, H)).astype(np.float32)
    x[3, 20, 5] = np.nan  # (row 20, in the second block: NaN from step 3 on in its row only)
    ox = numgrad.tensor(x, requires_grad=True)
    tx = torch.tensor(x, requires_grad=True)
    o_out, (o_h, o_c) = ours(ox)
    t_out, (t_h, t_c) = theirs(tx)
    for o, t in ((o_out, t_out), (o_h, t_h), (o_c, t_c)):
        np.testing.assert_allclose(o.detach().numpy(), t.detach().numpy(), rtol=1e-5, atol=1e-5)
    assert np.isnan(o_out.detach().numpy()[3:, 20]).all()
    assert not np.isnan(np.delete(o_out.detach().numpy(), 20, axis=1)).any()
    keep = np.ones((T, B, H), np.float32)
    keep[:, 20] = 0  # (the NaN row's gradient is NaN; PyTorch's too)
    (o_out * numgrad.tensor(keep)).sum().add(o_c[:, :20].sum()).backward()
    (t_out * torch.tensor(keep)).sum().add(t_c[:, :20].sum()).backward()
    np.testing.assert_allclose(ox.grad.numpy()[:, :20], tx.grad.numpy()[:, :20], rtol=1e-4,
                               atol=1e-5)
    np.testing.assert_array_equal(np.isnan(ox.grad.numpy()), np.isnan(tx.grad.numpy()))
