"""PyTorch's top-level functions that numgrad lacked (``torch.hann_window``, ``torch.vander``,
``torch.asarray``, ``torch.frombuffer``, ``torch.range``, ATen's spellings of nn.functional's
ops: ``torch.layer_norm``, ``torch.batch_norm``, ``torch.embedding``...), each against PyTorch
2.13: values and dtype, or the exception's class and message."""
import warnings

import numpy as np
import pytest
import torch

import numgrad


def _outcome(fn, m):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            y = fn(m)
        except Exception as e:  # (the class and the message's first line are compared)
            return type(e).__name__, str(e).splitlines()[0]
    warned = [str(w.message).split(" (Triggered internally")[0] for w in caught]
    if not isinstance(y, (tuple, m.Tensor)):
        return y, warned
    ys = y if isinstance(y, tuple) else (y,)
    return [(str(t.dtype).split(".")[-1], t.detach().numpy()) for t in ys], warned


def _same(ours, theirs) -> None:
    """Equal outcomes; values within float32's rounding (the orders of operations differ)."""
    if not isinstance(theirs[0], list):
        assert ours == theirs
        return
    assert len(ours[0]) == len(theirs[0]) and ours[1] == theirs[1]
    for (dtype, value), (want_dtype, want) in zip(ours[0], theirs[0]):
        assert dtype == want_dtype and value.shape == want.shape
        np.testing.assert_allclose(value, want, rtol=1e-5, atol=1e-7)


def _x(m):
    return m.tensor([[1.0, 2.0, 4.0], [3.0, -1.0, 0.5]])


@pytest.mark.parametrize("fn", [
    lambda m: m.hann_window(5), lambda m: m.hann_window(5, False),
    lambda m: m.hann_window(1), lambda m: m.hann_window(0), lambda m: m.hann_window(-1),
    lambda m: m.hann_window(4, dtype=m.int64),
    lambda m: m.hamming_window(5, True, 0.6, 0.3), lambda m: m.blackman_window(6),
    lambda m: m.bartlett_window(7, dtype=m.float64), lambda m: m.kaiser_window(6),
    lambda m: m.kaiser_window(6, False, 5.0),
    lambda m: m.vander(m.tensor([1, 2, 3])), lambda m: m.vander(m.tensor([1.0, 2, 3]), 2, True),
    lambda m: m.vander(m.tensor([1.0, 2, 3]), 0), lambda m: m.vander(m.tensor(1.0)),
    lambda m: m.vander(m.tensor([True, False])), lambda m: m.vander(m.tensor([1.0, 2]), -1),
    lambda m: m.range(0, 1, 0.3), lambda m: m.range(3, 0, -1, dtype=m.int64),
    lambda m: m.range(0, 3, -1),
    lambda m: m.asarray([1, 2.5]), lambda m: m.asarray([1, 2], copy=False),
    lambda m: m.asarray(np.arange(3.0), dtype=m.float32, copy=False),
    lambda m: m.asarray(bytearray(8)), lambda m: m.asarray(m.ones(2), dtype=m.int64),
    lambda m: m.frombuffer(bytearray(b"\x01\x02\x03\x04"), dtype=m.int16),
    lambda m: m.frombuffer(bytearray(b"\x01\x02\x03\x04"), dtype=m.uint8, count=2, offset=1),
    lambda m: m.frombuffer(bytearray(3), dtype=m.int16),
    lambda m: m.cosine_similarity(_x(m), _x(m).flip(0), 0),
    lambda m: m.pairwise_distance(_x(m), _x(m).flip(1)), lambda m: m.pdist(_x(m)),
    lambda m: m.threshold(_x(m), 1.5, -1.0), lambda m: m.threshold_(_x(m), 1.5, -1.0),
    lambda m: m.rrelu(_x(m)), lambda m: m.layer_norm(_x(m), [3]),
    lambda m: m.group_norm(_x(m).view(1, 2, 3), 2), lambda m: m.rms_norm(_x(m), [3]),
    lambda m: m.batch_norm(_x(m), m.tensor([2.0, 1, 1]), None, m.zeros(3), m.ones(3), False,
                           0.1, 1e-5, False),
    lambda m: m.instance_norm(_x(m).view(1, 2, 3), None, None, None, None, True, 0.1, 1e-5,
                              False),
    lambda m: m.bilinear(_x(m), _x(m), m.ones(2, 3, 3)),
    lambda m: m.embedding(m.eye(3), m.tensor([0, 2])),
    lambda m: m.adaptive_max_pool1d(m.arange(8.0).view(1, 1, 8), 3),
    lambda m: m.feature_dropout(_x(m), 0.5, False), lambda m: m.alpha_dropout(_x(m), 1.5, True),
    lambda m: m.set_flush_denormal(False), lambda m: m.set_num_interop_threads(0),
])
def test_top_level_functions_as_pytorchs(fn):
    _same(_outcome(fn, numgrad), _outcome(fn, torch))


def test_shared_memory_and_history_of_asarray_and_frombuffer():
    """``asarray`` and ``frombuffer`` share memory as PyTorch's; ``asarray`` of a tensor is the
    tensor, its copy keeps the history (``CloneBackward0``, ``ToCopyBackward0``); channel
    dropout in training zeroes whole channels; set_warn_always repeats once-warnings."""
    a = np.arange(3.0)
    numgrad.asarray(a)[0] = 9.0
    buffer = bytearray(b"\x01\x02")
    numgrad.frombuffer(buffer, dtype=numgrad.uint8)[0] = 7
    assert a[0] == 9.0 and buffer[0] == 7
    x = numgrad.ones(2, requires_grad=True)
    assert numgrad.asarray(x) is x
    assert type(numgrad.asarray(x, copy=True).grad_fn).__name__ == "CloneBackward0"
    assert type(numgrad.asarray(x, dtype=numgrad.float64).grad_fn).__name__ == "ToCopyBackward0"
    numgrad.manual_seed(0)
    y = numgrad.feature_dropout(numgrad.ones(4, 50, 3), 0.5, True)
    per_channel = y.numpy().reshape(200, 3)
    assert set(np.unique(per_channel)) == {0.0, 2.0}
    assert (per_channel.min(1) == per_channel.max(1)).all()  # (whole channels)
    numgrad.set_warn_always(True)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            numgrad.tensor(1.0).T
            numgrad.tensor(1.0).T
        assert numgrad.is_warn_always_enabled() and len(caught) == 2
    finally:
        numgrad.set_warn_always(False)


def test_frombuffer_inside_a_compiled_function_runs_eagerly_and_sees_the_buffer():
    """(a tensor over outside memory made inside a trace would be a constant of the program:
    stale once the buffer changes; it breaks the graph, as ``from_numpy`` does)"""
    buffer = bytearray(8)

    @numgrad.compile
    def step(x):
        return x + numgrad.frombuffer(buffer, dtype=numgrad.float32)

    x = numgrad.ones(2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert step(x).tolist() == [1.0, 1.0]
        buffer[:4] = np.float32(5.0).tobytes()
        assert step(x).tolist() == [6.0, 1.0] and step(x).tolist() == [6.0, 1.0]
