"""The recurrent, attention and transformer modules on CUDA in the simulator: a packed,
bidirectional LSTM with a projection, a GRU, ``scaled_dot_product_attention`` with a bool mask
and causally, ``MultiheadAttention`` with a key padding mask and a ``TransformerEncoderLayer``
give the CPU's values and gradients (they are composites of ops that run on CUDA)."""
import warnings

import numpy as np

import numgrad
import numgrad.nn.functional as F
from numgrad import nn

TOL = dict(rtol=1e-7, atol=1e-9)


def _host(t):
    return t.detach().cpu().numpy()


def _both(build, inputs):
    """Runs ``build(device, *inputs)`` -> (loss, tensors whose gradients count) on CPU, then
    with the same parameters on CUDA; compares the losses and the gradients."""
    results = []
    for device in ("cpu", "cuda"):
        numgrad.manual_seed(0)
        tensors = [numgrad.tensor(a, device=device, requires_grad=a.dtype.kind == "f")
                   for a in inputs]
        loss, watched = build(device, *tensors)
        loss.backward()
        assert loss.device.type == device
        results.append([_host(loss)] + [_host(t.grad) for t in watched])
    for a, b in zip(*results):
        np.testing.assert_allclose(b, a, **TOL)


def test_recurrent_layers_on_cuda():
    rng = np.random.default_rng(0)

    def build(device, x, h0):
        lstm = nn.LSTM(3, 4, bidirectional=True, proj_size=2,
                       dtype=numgrad.float64).to(device)
        gru = nn.GRU(4, 3, batch_first=True, dtype=numgrad.float64).to(device)
        packed = nn.utils.rnn.pack_padded_sequence(x, [2, 4, 3], enforce_sorted=False)
        out, (h, c) = lstm(packed, (h0, numgrad.zeros(2, 3, 4, dtype=numgrad.float64,
                                                    device=device)))
        padded, _ = nn.utils.rnn.pad_packed_sequence(out, batch_first=True)
        y, hn = gru(padded)
        loss = (y * y).sum() + hn.sum() + (h * c[..., :2]).sum()
        return loss, [x, h0, *lstm.parameters(), *gru.parameters()]

    _both(build, [rng.normal(size=(4, 3, 3)), rng.normal(size=(2, 3, 2))])


def test_attention_and_transformer_on_cuda():
    rng = np.random.default_rng(1)
    mask = rng.uniform(size=(3, 5)) > 0.3
    mask[:, 0] = True

    def build(device, q, k, v, m):
        a = F.scaled_dot_product_attention(q, k, v, attn_mask=m)
        b = F.scaled_dot_product_attention(q, k[:, :3], v[:, :3], is_causal=True)
        mha = nn.MultiheadAttention(4, 2, dtype=numgrad.float64).to(device)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # (enable_nested_tensor's note for batch_first)
            layer = nn.TransformerEncoderLayer(4, 2, 6, 0.0, dtype=numgrad.float64).to(device)
        seq = q.transpose(0, 1)
        pad = numgrad.tensor([[False, False, True], [False, False, False]], device=device)
        z, w = mha(seq, seq, seq, key_padding_mask=pad)
        e = layer(z, src_key_padding_mask=pad)
        loss = (a * a).sum() + (b * b).sum() + (e * e).sum() + w.sum()
        return loss, [q, k, v, *mha.parameters(), *layer.parameters()]

    _both(build, [rng.normal(size=(2, 3, 4)), rng.normal(size=(2, 5, 4)),
                  rng.normal(size=(2, 5, 4)), mask])
