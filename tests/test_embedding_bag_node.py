"""``embedding_bag`` is one node, ``EmbeddingBagBackward0``, as PyTorch's: values, gradients,
``next_functions`` and the ``_saved_*`` fields equal torch 2.13's on the hard cases (empty bags,
``padding_idx``, repeated indices, a bag of padding only, ``include_last_offset``, the 2-D
input, ``per_sample_weights``, ``scale_grad_by_freq``), and its argument errors are PyTorch's word
for word. Values, gradchecks and gradgradchecks (under create_graph the backward is recorded ops)
of the op's four samples are the registry harness's (tests/test_ops.py).
"""
import numpy as np
import pytest
import torch

import numgrad

W = np.random.RandomState(0).randn(5, 3)
PSW = np.array([0.5, 0.25, 2.0, 1.0, 3.0, -1.0])
FIELDS = ("_saved_indices", "_saved_offsets", "_saved_mode", "_saved_padding_idx",
          "_saved_result1", "_saved_result2", "_saved_result3", "_saved_scale_grad_by_freq",
          "_saved_sparse", "_saved_weight_sym_argsize_0", "_saved_weight",
          "_saved_per_sample_weights")
IDX, OFF = [1, 2, 4, 4, 3, 0], [0, 2, 2, 5]
CASES = {
    "sum, an empty bag": (IDX, OFF, dict(mode="sum")),
    "mean, padding, repeated, by freq": (IDX, OFF, dict(mode="mean", padding_idx=4,
                                                        scale_grad_by_freq=True)),
    "max, padding": (IDX, OFF, dict(mode="max", padding_idx=4)),
    "max, a bag of padding only": ([4, 4, 1], [0, 2], dict(mode="max", padding_idx=4)),
    "sum, include_last_offset": (IDX, [0, 2, 3], dict(mode="sum", include_last_offset=True)),
    "sum, per_sample_weights, padding": (IDX, OFF, dict(mode="sum", psw=True, padding_idx=4)),
    "max, 2-D": ([[1, 2, 4], [4, 3, 0]], None, dict(mode="max")),
    "mean, 2-D, padding -1": ([[1, 2, 4], [4, 3, 0]], None, dict(mode="mean", padding_idx=-1)),
    "max, no entries": ([], [0, 0], dict(mode="max")),
}


def _run(m, idx, off, psw=False, **kw):
    w = m.tensor(W, requires_grad=True)
    s = m.tensor(PSW, requires_grad=True) if psw else None
    y = m.nn.functional.embedding_bag(m.tensor(idx, dtype=m.int64), w,
                                      None if off is None else m.tensor(off), **kw,
                                      per_sample_weights=s)
    y.backward(m.tensor(np.arange(y.numel(), dtype=np.float64).reshape(tuple(y.shape)) + 1),
               retain_graph=True)
    fn = y.grad_fn
    fields = {}
    for name in FIELDS:
        v = getattr(fn, name)
        fields[name] = v.detach().numpy() if hasattr(v, "numpy") else v
    edges = [(None if f is None else f.name(), nr) for f, nr in fn.next_functions]
    return (y.detach().numpy(), w.grad.numpy(), None if s is None else s.grad.numpy(),
            fn.name(), edges, fields)


@pytest.mark.parametrize("case", list(CASES))
def test_one_node_with_torchs_values_gradients_and_fields(case):
    idx, off, kw = CASES[case]
    got, want = _run(numgrad, idx, off, **kw), _run(torch, idx, off, **kw)
    for g, w in zip(got[:3], want[:3]):
        if w is None:
            assert g is None
        else:
            np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)
    assert got[3:5] == want[3:5]
    for name in FIELDS:
        g, w = got[5][name], want[5][name]
        if isinstance(w, np.ndarray):
            assert g.dtype == w.dtype and g.shape == w.shape, name
            np.testing.assert_array_equal(g, w, err_msg=name)
        else:
            assert g == w, name


def test_weight_written_in_place_before_backward_as_torch():
    """PyTorch keeps the weight only for the per-sample weights' gradient: an optimizer step
    between forward and backward is allowed without them, an error with them."""
    out = []
    for m in (numgrad, torch):
        for psw in (None, m.tensor(PSW, requires_grad=True)):
            w = m.tensor(W, requires_grad=True)
            y = m.nn.functional.embedding_bag(m.tensor(IDX), w, m.tensor(OFF), mode="sum",
                                              per_sample_weights=psw)
            with m.no_grad():
                w.mul_(2)
            try:
                y.sum().backward()
                out.append(w.grad.numpy().tolist())
            except RuntimeError as e:
                out.append(str(e).split(";")[0].replace("numgrad.", "torch."))
    assert out[:2] == out[2:]


ERRORS = [
    lambda m: m.nn.functional.embedding_bag(m.tensor(IDX), m.zeros(5, 3), m.tensor([1, 2])),
    lambda m: m.nn.functional.embedding_bag(m.tensor(IDX), m.zeros(5, 3), m.tensor([0, 7])),
    lambda m: m.nn.functional.embedding_bag(m.tensor([0.0, 1.0]), m.zeros(5, 3), m.tensor([0])),
    lambda m: m.nn.functional.embedding_bag(m.tensor([0, 1]), m.zeros(5, 3), m.tensor([0.0])),
    lambda m: m.nn.functional.embedding_bag(m.tensor([0, 1]), m.zeros(5, 3), m.tensor([0]),
                                            per_sample_weights=m.ones(2, dtype=m.float64)),
]


@pytest.mark.parametrize("k", range(len(ERRORS)))
def test_errors_are_torchs(k):
    with pytest.raises(Exception) as want:
        ERRORS[k](torch)
    with pytest.raises(type(want.value)) as got:
        ERRORS[k](numgrad)
    assert str(got.value) == str(want.value).split("\n")[0]
