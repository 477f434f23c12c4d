"""numgrad's recurrent layers against torch.nn's: ``RNN`` (tanh, relu), ``LSTM`` (with
``proj_size``), ``GRU``, the cells ``RNNCell``, ``LSTMCell``, ``GRUCell``, and
``nn.utils.rnn`` (``pad_sequence``, ``pack_padded_sequence``, ``pad_packed_sequence``,
``pack_sequence``, ``unpad_sequence``, ``unpack_sequence``, ``PackedSequence`` inputs).

Each PyTorch module is built with a seed and its ``state_dict`` loaded into numgrad's; outputs,
hidden states and the gradients of every parameter, the input and the initial states must
equal PyTorch's (float64 to 1e-10, float32 to PyTorch's tolerance), in train mode (dropout 0)
and eval mode. Also: parameter names, shapes and initialisation range, repr, the shape and
dtype errors with PyTorch's messages, unbatched inputs, and a gradcheck of the cells."""
import warnings

import numpy as np
import pytest
import torch

import numgrad
from numgrad import nn
from numgrad.autograd import gradcheck

TU = torch.nn.utils.rnn
NU = nn.utils.rnn
# PyTorch's own note that its oneDNN path does not take projections
pytestmark = pytest.mark.filterwarnings("ignore:LSTM with projections:UserWarning")
TOL = {"float64": dict(rtol=1e-10, atol=1e-12), "float32": dict(rtol=1.3e-6, atol=1e-5)}
T, B, I, H = 4, 2, 3, 4  # steps, batch, input size, hidden size


def _close(ours, theirs, dtype="float64", what=""):
    assert tuple(ours.shape) == tuple(theirs.shape), what
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), err_msg=what,
                               **TOL[dtype])


def _modules(name, dtype="float64", seed=0, **kw):
    torch.manual_seed(seed)
    theirs = getattr(torch.nn, name)(I, H, dtype=getattr(torch, dtype), **kw)
    ours = getattr(nn, name)(I, H, dtype=getattr(numgrad, dtype), **kw)
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    return ours, theirs


def _pair(array, requires_grad=True):
    return (numgrad.tensor(array, requires_grad=requires_grad),
            torch.tensor(array, requires_grad=requires_grad))


def _same_error(ours, theirs):
    with pytest.raises(Exception) as want:
        theirs()
    with pytest.raises(type(want.value)) as got:
        ours()
    assert str(got.value) == str(want.value).replace("torch.", "numgrad.")


def _flat(out):
    """The tensors of a module's result, flattened: output, h_n (and c_n)."""
    if isinstance(out, (NU.PackedSequence, TU.PackedSequence)):
        return [out.data]
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in _flat(o)]
    return [out]


def _weighted_sum(tensors):
    """A loss that weighs each result differently, so each one's gradient is checked."""
    total = 0
    for k, t in enumerate(tensors):
        total = total + (t * t).sum() * (k + 1) + t.sum()
    return total


def _check_run(ours, theirs, o_args, t_args, dtype, input_grads=()):
    o_out, t_out = ours(*o_args), theirs(*t_args)
    o_flat, t_flat = _flat(o_out), _flat(t_out)
    assert len(o_flat) == len(t_flat)
    for k, (a, b) in enumerate(zip(o_flat, t_flat)):
        _close(a, b, dtype, f"result {k}")
    _weighted_sum(o_flat).backward()
    _weighted_sum(t_flat).backward()
    for (name, p), (tname, q) in zip(ours.named_parameters(), theirs.named_parameters()):
        assert name == tname
        _close(p.grad, q.grad, dtype, f"grad of {name}")
    for a, b in input_grads:
        _close(a.grad, b.grad, dtype, "input grad")
    return o_out, t_out


# ------------------------------------------------------------------ full modules
CONFIGS = [
    ("RNN", {}),
    ("RNN", dict(nonlinearity="relu", num_layers=2)),
    ("RNN", dict(bidirectional=True, batch_first=True, bias=False)),
    ("LSTM", {}),
    ("LSTM", dict(num_layers=2, bidirectional=True)),
    ("LSTM", dict(proj_size=2, batch_first=True)),
    ("LSTM", dict(proj_size=3, num_layers=2, bidirectional=True, bias=False)),
    ("GRU", {}),
    ("GRU", dict(num_layers=2, bidirectional=True, batch_first=True)),
    ("GRU", dict(bias=False)),
]


def _ids(config):
    name, kw = config
    return name + "-" + ",".join(f"{k}={v}" for k, v in kw.items())


def _initial_state(name, kw, rng, dtype, batch=B):
    d = 2 if kw.get("bidirectional") else 1
    n = kw.get("num_layers", 1) * d
    h = kw.get("proj_size") or H
    arrays = [rng.normal(size=(n, batch, h)).astype(dtype)]
    if name == "LSTM":
        arrays.append(rng.normal(size=(n, batch, H)).astype(dtype))
    pairs = [_pair(a) for a in arrays]
    ours = tuple(p[0] for p in pairs)
    theirs = tuple(p[1] for p in pairs)
    if name != "LSTM":
        return ours[0], theirs[0], pairs
    return ours, theirs, pairs


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("config", CONFIGS, ids=_ids)
def test_module_matches_pytorch(config, dtype):
    name, kw = config
    rng = np.random.default_rng(1)
    ours, theirs = _modules(name, dtype, **kw)
    shape = (B, T, I) if kw.get("batch_first") else (T, B, I)
    ox, tx = _pair(rng.normal(size=shape).astype(dtype))
    for mode in ("train", "eval"):
        getattr(ours, mode)()
        getattr(theirs, mode)()
        ours.zero_grad()
        theirs.zero_grad()
        ox.grad = tx.grad = None
        if mode == "train":  # hx defaulting to zeros
            o_out, t_out = _check_run(ours, theirs, (ox,), (tx,), dtype, [(ox, tx)])
            # PyTorch's CPU loop's nodes (its float32 LSTM runs oneDNN's fused layer instead)
            if not kw.get("batch_first") and not (name == "LSTM" and dtype == "float32"):
                assert type(o_out[0].grad_fn).__name__ == type(t_out[0].grad_fn).__name__
        else:
            oh, th, pairs = _initial_state(name, kw, rng, dtype)
            _check_run(ours, theirs, (ox, oh), (tx, th), dtype, [(ox, tx), *pairs])


@pytest.mark.parametrize("name", ["RNN", "LSTM", "GRU"])
def test_unbatched_input(name):
    kw = dict(num_layers=2, bidirectional=True)
    ours, theirs = _modules(name, **kw)
    rng = np.random.default_rng(2)
    ox, tx = _pair(rng.normal(size=(T, I)))
    _check_run(ours, theirs, (ox,), (tx,), "float64", [(ox, tx)])
    oh, th, _ = _initial_state(name, kw, rng, "float64", batch=1)
    if name == "LSTM":
        oh, th = tuple(h[:, 0] for h in oh), tuple(h[:, 0] for h in th)
    else:
        oh, th = oh[:, 0], th[:, 0]
    ours.zero_grad()
    theirs.zero_grad()
    out = _check_run(ours, theirs, (ox, oh), (tx, th), "float64", [(ox, tx)])[0]
    assert tuple(out[0].shape) == (T, 2 * H)


@pytest.mark.parametrize("name", ["RNN", "LSTM", "GRU"])
def test_non_contiguous_and_empty_batch_inputs(name):
    ours, theirs = _modules(name, bidirectional=True)
    x = np.random.default_rng(9).normal(size=(B, I, T))
    ox, tx = _pair(x)
    # (T, B, I) views of a (B, I, T) array: neither is contiguous
    _check_run(ours, theirs, (ox.permute(2, 0, 1),), (tx.permute(2, 0, 1),), "float64",
               [(ox, tx)])
    for a, b in zip(_flat(ours(numgrad.zeros(T, 0, I, dtype=numgrad.float64))),
                    _flat(theirs(torch.zeros(T, 0, I, dtype=torch.float64)))):
        assert tuple(a.shape) == tuple(b.shape)


@pytest.mark.parametrize("name", ["RNN", "LSTM", "GRU"])
def test_parameters_names_shapes_repr_and_initialisation(name):
    kw = dict(num_layers=2, bidirectional=True) if name != "LSTM" else dict(
        num_layers=2, bidirectional=True, proj_size=2)
    ours, theirs = _modules(name, **kw)
    assert [(k, tuple(v.shape)) for k, v in ours.state_dict().items()] == [
        (k, tuple(v.shape)) for k, v in theirs.state_dict().items()]
    assert [[tuple(w.shape) for w in ws] for ws in ours.all_weights] == [
        [tuple(w.shape) for w in ws] for ws in theirs.all_weights]
    assert repr(ours) == repr(theirs)
    assert ours.flatten_parameters() is None
    fresh = getattr(nn, name)(I, H, **kw)
    bound = 1 / np.sqrt(H)
    for p in fresh.parameters():
        values = p.detach().numpy()
        assert np.all(np.abs(values) <= bound) and values.std() > 0
        assert p.dtype == numgrad.float32


def test_rnn_repr_of_options():
    for kw in (dict(nonlinearity="relu", bias=False, batch_first=True, dropout=0.5,
                    num_layers=2),):
        ours = nn.RNN(I, H, **kw)
        theirs = torch.nn.RNN(I, H, **kw)
        assert repr(ours) == repr(theirs)
        assert ours.nonlinearity == "relu"


# ------------------------------------------------------------------ packed sequences
@pytest.mark.parametrize("name", ["RNN", "LSTM", "GRU"])
@pytest.mark.parametrize("enforce_sorted,lengths,batch_first",
                         [(True, [4, 3, 1], False), (False, [2, 4, 3], True)])
def test_packed_sequence_input(name, enforce_sorted, lengths, batch_first):
    kw = dict(num_layers=2, bidirectional=True, batch_first=batch_first)
    if name == "LSTM" and not enforce_sorted:
        kw["proj_size"] = 2
    ours, theirs = _modules(name, **kw)
    rng = np.random.default_rng(3)
    shape = (3, T, I) if batch_first else (T, 3, I)
    ox, tx = _pair(rng.normal(size=shape))
    op = NU.pack_padded_sequence(ox, lengths, batch_first=batch_first,
                                 enforce_sorted=enforce_sorted)
    tp = TU.pack_padded_sequence(tx, lengths, batch_first=batch_first,
                                 enforce_sorted=enforce_sorted)
    for a, b in zip(op, tp):
        if b is None:
            assert a is None
        else:
            np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    oh, th, pairs = _initial_state(name, kw, rng, "float64", batch=3)
    o_out, t_out = _check_run(ours, theirs, (op, oh), (tp, th), "float64", [(ox, tx), *pairs])
    assert isinstance(o_out[0], NU.PackedSequence)
    o_pad, o_len = NU.pad_packed_sequence(o_out[0], batch_first=batch_first)
    t_pad, t_len = TU.pad_packed_sequence(t_out[0], batch_first=batch_first)
    _close(o_pad, t_pad)
    assert o_len.tolist() == t_len.tolist() and o_len.dtype == numgrad.int64


def test_packed_sequence_without_initial_state_and_padded_gradient():
    ours, theirs = _modules("LSTM")
    seqs = [np.random.default_rng(k).normal(size=(n, I)) for k, n in enumerate([2, 4, 3])]
    pairs = [_pair(s) for s in seqs]
    op = NU.pack_sequence([p[0] for p in pairs], enforce_sorted=False)
    tp = TU.pack_sequence([p[1] for p in pairs], enforce_sorted=False)
    o_out, t_out = _check_run(ours, theirs, (op,), (tp,), "float64", pairs)
    o_seqs = NU.unpack_sequence(o_out[0])
    t_seqs = TU.unpack_sequence(t_out[0])
    assert len(o_seqs) == len(t_seqs)
    for a, b in zip(o_seqs, t_seqs):
        _close(a, b)


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("padding_side", ["right", "left"])
def test_pad_sequence(batch_first, padding_side):
    seqs = [np.random.default_rng(k).normal(size=(n, 2)) for k, n in enumerate([3, 1, 4])]
    pairs = [_pair(s) for s in seqs]
    o = NU.pad_sequence([p[0] for p in pairs], batch_first, -1.5, padding_side)
    t = TU.pad_sequence([p[1] for p in pairs], batch_first, -1.5, padding_side)
    _close(o, t)
    (o * o).sum().backward()
    (t * t).sum().backward()
    for a, b in pairs:
        _close(a.grad, b.grad)


def test_pad_packed_total_length_unpad_and_invert_permutation():
    x = np.random.default_rng(4).normal(size=(5, 3, 2))
    ox, tx = _pair(x)
    op = NU.pack_padded_sequence(ox, numgrad.tensor([3, 5, 2]), enforce_sorted=False)
    tp = TU.pack_padded_sequence(tx, torch.tensor([3, 5, 2]), enforce_sorted=False)
    o, ol = NU.pad_packed_sequence(op, padding_value=7.0, total_length=6)
    t, tl = TU.pad_packed_sequence(tp, padding_value=7.0, total_length=6)
    _close(o, t)
    assert ol.tolist() == tl.tolist()
    for a, b in zip(NU.unpad_sequence(o, ol), TU.unpad_sequence(t.clone(), tl)):
        _close(a, b)
    (o * o).sum().backward()
    (t * t).sum().backward()
    _close(ox.grad, tx.grad)
    perm = [2, 0, 3, 1]
    assert NU.invert_permutation(numgrad.tensor(perm)).tolist() == TU.invert_permutation(
        torch.tensor(perm)).tolist()
    assert NU.invert_permutation(None) is None


def test_packing_errors_match_pytorch():
    x = np.zeros((4, 3, 2))
    calls = [
        lambda m, U: U.pack_padded_sequence(m.tensor(x), [2, 3, 1]),
        lambda m, U: U.pack_padded_sequence(m.tensor(x), [3, 2, 0]),
        lambda m, U: U.pack_padded_sequence(m.tensor(x), [2, 1]),
        lambda m, U: U.pad_sequence([]),
        lambda m, U: U.pad_packed_sequence(
            U.pack_sequence([m.ones(3, 2), m.ones(2, 2)]), total_length=2),
    ]
    for call in calls:
        _same_error(lambda call=call: call(numgrad, NU), lambda call=call: call(torch, TU))


# ------------------------------------------------------------------ cells
CELLS = [("RNNCell", {}), ("RNNCell", dict(nonlinearity="relu", bias=False)), ("LSTMCell", {}),
         ("LSTMCell", dict(bias=False)), ("GRUCell", {}), ("GRUCell", dict(bias=False))]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("config", CELLS, ids=_ids)
def test_cell_matches_pytorch(config, dtype):
    name, kw = config
    ours, theirs = _modules(name, dtype, **kw)
    rng = np.random.default_rng(5)
    ox, tx = _pair(rng.normal(size=(B, I)).astype(dtype))
    states = [_pair(rng.normal(size=(B, H)).astype(dtype))
              for _ in range(2 if name == "LSTMCell" else 1)]
    oh = tuple(s[0] for s in states) if name == "LSTMCell" else states[0][0]
    th = tuple(s[1] for s in states) if name == "LSTMCell" else states[0][1]
    o_out, t_out = _check_run(ours, theirs, (ox, oh), (tx, th), dtype, [(ox, tx), *states])
    o_first, t_first = _flat(o_out)[0], _flat(t_out)[0]
    assert type(o_first.grad_fn).__name__ == type(t_first.grad_fn).__name__
    # unbatched, and no state given
    for args in ((ox[0],), (ox[0], tuple(h[0] for h in oh) if name == "LSTMCell" else oh[0])):
        targs = (tx[0],) if len(args) == 1 else (
            tx[0], tuple(h[0] for h in th) if name == "LSTMCell" else th[0])
        for a, b in zip(_flat(ours(*args)), _flat(theirs(*targs))):
            _close(a, b, dtype)
    assert repr(ours) == repr(theirs)


def test_cells_in_a_loop_equal_the_layer():
    """An LSTMCell stepped by hand equals a one-layer LSTM with the same weights."""
    cell = nn.LSTMCell(I, H, dtype=numgrad.float64)
    layer = nn.LSTM(I, H, dtype=numgrad.float64)
    layer.load_state_dict({k + "_l0": v for k, v in cell.state_dict().items()})
    x = numgrad.tensor(np.random.default_rng(6).normal(size=(T, B, I)))
    h = c = numgrad.zeros(B, H, dtype=numgrad.float64)
    outs = []
    for t in range(T):
        h, c = cell(x[t], (h, c))
        outs.append(h)
    out, (hn, cn) = layer(x)
    _close(numgrad.stack(outs), out.detach())
    _close(hn[0], h)
    _close(cn[0], c)


# ------------------------------------------------------------------ errors, warnings
def _both_modules(name, **kw):
    return getattr(nn, name)(I, H, **kw), getattr(torch.nn, name)(I, H, **kw)


@pytest.mark.parametrize("name", ["RNN", "GRU", "LSTM"])
def test_forward_errors_match_pytorch(name):
    ours, theirs = _both_modules(name)
    lstm = name == "LSTM"

    def state(m, *shape):
        return (m.zeros(*shape), m.zeros(*shape)) if lstm else m.zeros(*shape)

    calls = [
        lambda m, mod: mod(m.zeros(T)),
        lambda m, mod: mod(m.zeros(1, T, B, I)),
        lambda m, mod: mod(m.zeros(T, B, I + 1)),
        lambda m, mod: mod(m.zeros(T, B, I, dtype=m.float64)),
        lambda m, mod: mod(m.zeros(T, B, I), state(m, 1, B + 1, H)),
        lambda m, mod: mod(m.zeros(T, B, I), state(m, B, H)),
        lambda m, mod: mod(m.zeros(T, I), state(m, 1, 1, H)),
        lambda m, mod: mod(m.zeros(0, B, I)),
    ]
    if lstm:
        calls.append(lambda m, mod: mod(m.zeros(T, B, I), (m.zeros(1, B, H), m.zeros(1, B, 2))))
    for call in calls:
        _same_error(lambda call=call: call(numgrad, ours), lambda call=call: call(torch, theirs))


def test_constructor_errors_and_warnings_match_pytorch():
    calls = [
        lambda m: m.nn.RNN(I, H, nonlinearity="sigmoid"),
        lambda m: m.nn.GRU(I, H, proj_size=2),
        lambda m: m.nn.RNN(I, H, proj_size=2),
        lambda m: m.nn.LSTM(I, H, proj_size=H),
        lambda m: m.nn.LSTM(I, H, proj_size=-1),
        lambda m: m.nn.LSTM(I, H, dropout=1.5),
        lambda m: m.nn.LSTM(I, H, dropout=True),
        lambda m: m.nn.GRU(I, 0),
        lambda m: m.nn.GRU(0, H),
        lambda m: m.nn.GRU(I, H, num_layers=0),
        lambda m: m.nn.GRU(I, 2.0),
        lambda m: m.nn.GRU(I, H, bias=1),
        lambda m: m.nn.GRU(I, H, batch_first=None),
    ]
    for call in calls:
        _same_error(lambda call=call: call(numgrad), lambda call=call: call(torch))
    for m in (numgrad, torch):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            m.nn.LSTM(I, H, dropout=0.5)
        assert [str(w.message) for w in caught] == [(
            "dropout option adds dropout after all but last recurrent layer, so non-zero dropout "
            "expects num_layers greater than 1, but got dropout=0.5 and num_layers=1")]


def test_cell_errors_match_pytorch():
    calls = [
        lambda m: m.nn.RNNCell(I, H)(m.zeros(B, I + 2)),
        lambda m: m.nn.RNNCell(I, H)(m.zeros(B, I), m.zeros(B + 1, H)),
        lambda m: m.nn.RNNCell(I, H)(m.zeros(B, I), m.zeros(B, H + 1)),
        lambda m: m.nn.RNNCell(I, H)(m.zeros(1, B, I)),
        lambda m: m.nn.GRUCell(I, H)(m.zeros(B, I), m.zeros(1, B, H)),
        lambda m: m.nn.LSTMCell(I, H)(m.zeros(B, I), (m.zeros(B, H), m.zeros(B, H + 1))),
        lambda m: m.nn.LSTMCell(I, H)(m.zeros(B, I), (m.zeros(B, H), m.zeros(1, B, H))),
        lambda m: m.nn.LSTMCell(I, H)(m.zeros(1, B, I)),
    ]
    for call in calls:
        _same_error(lambda call=call: call(numgrad), lambda call=call: call(torch))


def test_dropout_between_layers():
    """Dropout acts between layers in training only: eval results equal PyTorch's, train
    results are random, and seeded runs repeat."""
    ours, theirs = _modules("GRU", num_layers=2, dropout=0.5)
    x = np.random.default_rng(7).normal(size=(T, B, I))
    ours.eval()
    theirs.eval()
    _close(ours(numgrad.tensor(x))[0], theirs(torch.tensor(x))[0])
    ours.train()
    numgrad.manual_seed(0)
    a = ours(numgrad.tensor(x))[0]
    numgrad.manual_seed(0)
    b = ours(numgrad.tensor(x))[0]
    c = ours(numgrad.tensor(x))[0]
    np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    assert not np.allclose(a.detach().numpy(), c.detach().numpy())


# ------------------------------------------------------------------ gradcheck
def test_gradcheck_of_cells_and_a_bidirectional_lstm():
    rng = np.random.default_rng(8)
    cell = nn.GRUCell(2, 3, dtype=numgrad.float64)
    x = numgrad.tensor(rng.normal(size=(2, 2)), requires_grad=True)
    h = numgrad.tensor(rng.normal(size=(2, 3)), requires_grad=True)
    assert gradcheck(lambda a, b: cell(a, b), (x, h))
    lstm_cell = nn.LSTMCell(2, 3, dtype=numgrad.float64)
    c = numgrad.tensor(rng.normal(size=(2, 3)), requires_grad=True)
    assert gradcheck(lambda a, b, d: lstm_cell(a, (b, d)), (x, h, c))
    lstm = nn.LSTM(2, 2, num_layers=2, bidirectional=True, proj_size=1, dtype=numgrad.float64)
    seq = numgrad.tensor(rng.normal(size=(3, 1, 2)), requires_grad=True)
    assert gradcheck(lambda s: lstm(s)[0], (seq,))
    # the parameters too: the weights as gradcheck's inputs
    w = lstm_cell.weight_hh.detach().clone().requires_grad_(True)

    def with_weight(weight):
        from numgrad.nn.modules.rnn import _project, _step, _weights

        w_ih, biases, w_hh_t, _, _ = _weights("LSTM", lstm_cell.weight_ih.detach(), weight,
                                              None, None)
        return _step("LSTM", _project(x.detach(), w_ih, biases), h.detach(), c.detach(),
                     w_hh_t)[1]

    assert gradcheck(with_weight, (w,))


def _nodes(t) -> set:
    """The names of the nodes of ``t``'s graph."""
    seen, stack, names = set(), [t.grad_fn], set()
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        names.add(node.name())
        stack.extend(fn for fn, _ in node.next_functions)
    return names


@pytest.mark.parametrize("bidirectional", [False, True])
def test_a_float32_lstm_runs_each_layer_as_one_node_with_pytorchs_values(bidirectional):
    """As PyTorch's CPU LSTM takes oneDNN's layer in float32: one node a layer and direction
    (MkldnnRnnLayerBackward0), its values and gradients PyTorch's, from non-contiguous initial
    states too; float64 keeps the loop of ops (PyTorch's nodes there)."""
    rng = np.random.default_rng(3)
    ours, theirs = _modules("LSTM", "float32", num_layers=2, bidirectional=bidirectional)
    d = 2 if bidirectional else 1
    ox, tx = _pair(rng.normal(size=(T, B, I)).astype(np.float32))
    states = [_pair(np.ascontiguousarray(rng.normal(size=(B, 2 * d, H)).astype(np.float32)))
              for _ in range(2)]
    (oh, th), (oc, tc) = [(o.transpose(0, 1), t.transpose(0, 1)) for o, t in states]
    o_out, (o_h, o_c) = ours(ox, (oh, oc))
    t_out, (t_h, t_c) = theirs(tx, (th, tc))
    assert "MkldnnRnnLayerBackward0" in _nodes(o_out) and "MulBackward0" not in _nodes(o_out)
    for o, t in ((o_out, t_out), (o_h, t_h), (o_c, t_c)):
        _close(o, t, "float32")
    seed = rng.normal(size=tuple(t_out.shape)).astype(np.float32)
    (o_out * numgrad.tensor(seed)).sum().add(o_h.sum() * 0.5 + (o_c * o_c).sum()).backward()
    (t_out * torch.tensor(seed)).sum().add(t_h.sum() * 0.5 + (t_c * t_c).sum()).backward()
    for (o, t) in [(ox, tx)] + states:
        _close(o.grad, t.grad, "float32")
    for name, p in theirs.named_parameters():
        _close(getattr(ours, name).grad, p.grad, "float32", name)
    o64, _ = _modules("LSTM", "float64")
    assert "MkldnnRnnLayerBackward0" not in _nodes(o64(numgrad.ones(T, B, I, dtype=numgrad.float64,
                                                                   requires_grad=True))[0])


def test_a_float32_lstm_layer_takes_nan_an_empty_batch_and_second_derivatives():
    ours, theirs = _modules("LSTM", "float32")
    x = np.zeros((T, B, I), np.float32)
    x[1, 0, 0] = np.nan  # (NaN spreads forward from step 1 in its sequence, as PyTorch's)
    o_out, t_out = ours(numgrad.tensor(x))[0], theirs(torch.tensor(x))[0]
    np.testing.assert_array_equal(np.isnan(o_out.detach().numpy()),
                                  np.isnan(t_out.detach().numpy()))
    empty = ours(numgrad.zeros(T, 0, I, requires_grad=True))[0]
    assert tuple(empty.shape) == (T, 0, H)
    empty.sum().backward()
    x = numgrad.randn(3, 2, I, requires_grad=True)
    out, _ = ours(x)
    (g,) = numgrad.autograd.grad(out.pow(2).sum(), x, create_graph=True)
    (gg,) = numgrad.autograd.grad(g.sum(), x)
    tx = torch.tensor(x.detach().numpy(), requires_grad=True)
    (tg,) = torch.autograd.grad(theirs(tx)[0].pow(2).sum(), tx, create_graph=True)
    (tgg,) = torch.autograd.grad(tg.sum(), tx)
    _close(g, tg, "float32")
    np.testing.assert_allclose(gg.numpy(), tgg.numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", ["lstm", "gru", "rnn_tanh", "rnn_relu"])
@pytest.mark.parametrize("packed", [False, True])
def test_the_functional_layers_match_pytorchs(name, packed):
    """``torch.lstm``, ``torch.gru``, ``torch.rnn_tanh``, ``torch.rnn_relu`` over a flat
    parameter list, in the input form and the packed one."""
    module = {"lstm": "LSTM", "gru": "GRU", "rnn_tanh": "RNN", "rnn_relu": "RNN"}[name]
    kw = {"nonlinearity": "relu"} if name == "rnn_relu" else {}
    ours, theirs = _modules(module, "float32", num_layers=2, bidirectional=True, **kw)
    rng = np.random.default_rng(4)
    x = rng.normal(size=(T, B, I)).astype(np.float32)
    h = rng.normal(size=(4, B, H)).astype(np.float32)
    hx = ((numgrad.tensor(h), numgrad.tensor(h * 0.5)), (torch.tensor(h), torch.tensor(h * 0.5)))
    if name != "lstm":
        hx = (hx[0][0], hx[1][0])
    o_params, t_params = ours._flat_weights, theirs._flat_weights
    if packed:
        sizes = np.array([T] * B)
        o_in = NU.pack_padded_sequence(numgrad.tensor(x), sizes)
        t_in = TU.pack_padded_sequence(torch.tensor(x), torch.tensor(sizes))
        args = lambda m, p, params, h: (p.data, p.batch_sizes, h, params, True, 2, 0.0, False,
                                        True)
    else:
        o_in, t_in = numgrad.tensor(x), torch.tensor(x)
        args = lambda m, x, params, h: (x, h, params, True, 2, 0.0, False, True, False)
    got = getattr(numgrad, name)(*args(numgrad, o_in, o_params, hx[0]))
    want = getattr(torch, name)(*args(torch, t_in, t_params, hx[1]))
    assert len(got) == len(want)
    for o, t in zip(got, want):
        _close(o, t, "float32")


def test_a_compiled_lstm_training_step_equals_eagers():
    """numgrad.compile over a step of the fused layer (its workspace included): the same
    losses and parameters as eager, bit for bit."""
    def make():
        numgrad.manual_seed(0)
        model = nn.LSTM(I, H, 2)
        opt = numgrad.optim.SGD(model.parameters(), lr=0.1)

        def step(x):
            opt.zero_grad()
            out, (h, c) = model(x)
            loss = out.pow(2).mean() + c.sum()
            loss.backward()
            opt.step()
            return loss

        return model, step

    (m1, eager), (m2, step) = make(), make()
    compiled = numgrad.compile(step)
    rng = np.random.default_rng(5)
    for _ in range(4):
        x = numgrad.tensor(rng.normal(size=(T, B, I)).astype(np.float32))
        assert eager(x).item() == compiled(x).item()
    for p, q in zip(m1.parameters(), m2.parameters()):
        assert p.detach().numpy().tobytes() == q.detach().numpy().tobytes()
    assert "eagerly" not in numgrad.compiler.explain(compiled)
