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


def _layer(steps, batch, hidden, dtype):
    rng = np.random.default_rng(0)
    gx = rng.normal(size=(steps, batch, 4 * hidden)).astype(dtype)
    h0, c0 = (rng.normal(size=(batch, hidden)).astype(dtype) * 0.1 for _ in range(2))
    w = (rng.normal(size=(4 * hidden, hidden)) * 0.1).astype(dtype)
    grad = rng.normal(size=(steps + 1, batch, hidden)).astype(dtype)
    return gx, h0, c0, w, grad


# (the word-LM's and the character LSTM's layers, fewer steps: their products are made in
# blocks of columns where OpenBLAS has small-matrix kernels, blocks of 12 and 8 rows on two
# threads)
# Where every step's product is a small-matrix kernel's, the rows are cut in halves (16 and 16
# of 32), else at multiples of ROW_TILE (12, 12 and 8): both the bits of one thread.
@pytest.mark.parametrize("shape", [(T, B, H, 3), (4, 20, 200, 2), (4, 32, 128, 3)],
                         ids=["26x64", "20x200", "32x128"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("halves", [True, False], ids=["halves", "tiles"])
def test_a_layer_has_the_same_bits_on_one_thread_and_on_two(threads, dtype, shape, halves,
                                                            monkeypatch):
    steps, batch, hidden, blocks = shape
    if not halves:
        monkeypatch.setattr(rnn, "_small_steps", lambda *args: False)
    elif not rnn._small_steps(batch, 4 * hidden, hidden):
        pytest.skip("not all the steps' products are OpenBLAS small-matrix kernels' here")
    gx, h0, c0, w, grad = _layer(steps, batch, hidden, dtype)
    runs = []
    for n in (1, 2):
        threads(n)
        spans, used = rnn._batch_spans(steps, batch, 4 * hidden, hidden)
        assert (len(spans), used) == ((1, 1) if n == 1 else (2 if halves else blocks, 2))
        y, acts, cs = rnn.lstm_forward(gx, h0, c0, w)
        runs.append((y, acts, cs) + rnn.lstm_backward(grad, acts, cs, y, h0, c0, w))
    for a, b in zip(*runs):
        assert a.tobytes() == b.tobytes()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_steps_products_called_from_numba_give_numpys_values(threads, dtype, monkeypatch):
    threads(2)
    gx, h0, c0, w, grad = _layer(4, 20, 200, dtype)
    runs = []
    for in_numba in (False, True):
        monkeypatch.setattr(rnn, "IN_NUMBA", in_numba and rnn.IN_NUMBA)
        y, acts, cs = rnn.lstm_forward(gx, h0, c0, w)
        runs.append((y, acts, cs) + rnn.lstm_backward(grad, acts, cs, y, h0, c0, w))
    tol = 1e-5 if dtype == np.float32 else 1e-12
    for a, b in zip(*runs):
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


def test_the_steps_products_are_cut_into_columns_only_where_openblas_has_small_kernels(
        monkeypatch):
    monkeypatch.setattr(rnn, "blas_core", lambda: "SkylakeX")
    # (as wide as 100**3 multiply-adds allow for all 20 rows, in multiples of 16 columns)
    assert rnn._column_blocks(20, 200, 800) == [(0, 240), (240, 480), (480, 720), (720, 800)]
    assert rnn._column_blocks(20, 800, 200) == [(0, 48), (48, 96), (96, 144), (144, 192),
                                                (192, 200)]
    assert rnn._column_blocks(32, 128, 512) == [(0, 240), (240, 480), (480, 512)]
    assert all(32 * 128 * (stop - start) <= rnn.SMALL_MACS
               for start, stop in rnn._column_blocks(32, 128, 512))
    assert rnn._column_blocks(10, 100, 400) == [(0, 400)]  # (small already)
    assert rnn._column_blocks(64, 512, 2048) == [(0, 2048)]  # (blocks would be too narrow)
    monkeypatch.setattr(rnn, "blas_core", lambda: "Haswell")
    assert rnn._column_blocks(20, 200, 800) == [(0, 800)]


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
