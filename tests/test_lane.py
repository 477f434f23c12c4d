"""The eager fast lane (``ops/_lane.py``) gives what the general path gives: the same result bits
and the same node, field by field (class, edges, needs_input_grad, input shapes and dtypes,
devices, params, saved values), for each call it serves; and it steps aside where it must."""
import functools

import numpy as np
import pytest

import numgrad
from numgrad.autograd.node import SavedTensor
from numgrad.ops import elementwise as E
from numgrad.ops import registry
from numgrad.kernels.cpu.elementwise import PARALLEL_THRESHOLD

NUMBER_OPS = {"mul": (E.Mul, lambda x, c: x * c), "add": (E.Add, lambda x, c: x + c),
              "sub": (E.Sub, lambda x, c: x - c), "div": (E.Div, lambda x, c: x / c)}
UNARY_OPS = {"exp": E.Exp, "tanh": E.Tanh, "sigmoid": E.Sigmoid, "relu": E.Relu, "log": E.Log,
             "sqrt": E.Sqrt, "neg": E.Neg}


def _bits(a):
    a = np.ascontiguousarray(a)
    return a.dtype, a.shape, a.reshape(-1).view(np.uint8).tobytes()


def _same_node(lane, general, packed=False):
    assert type(lane) is type(general)
    for field in ("needs_input_grad", "input_shapes", "input_dtypes", "input_devices", "params",
                  "_released"):
        assert getattr(lane, field) == getattr(general, field), field
    assert [(type(fn), fn if fn is None else id(fn), i) for fn, i in lane.next_functions] == \
        [(type(fn), fn if fn is None else id(fn), i) for fn, i in general.next_functions]
    assert len(lane._saved) == len(general._saved)
    if packed:  # (packed by saved-tensor hooks: what they give back)
        assert [type(s.counter) for s in lane._saved if type(s) is SavedTensor] == \
            [type(s.counter) for s in general._saved if type(s) is SavedTensor]
        assert [_bits(s._data) if isinstance(s, numgrad.Tensor) else s
                for s in lane.saved_tensors] == \
            [_bits(s._data) if isinstance(s, numgrad.Tensor) else s
             for s in general.saved_tensors]
        return
    for ours, theirs in zip(lane._saved, general._saved):
        assert type(ours) is type(theirs)
        if type(ours) is SavedTensor:
            assert ours.tensor is theirs.tensor and ours.version == theirs.version
            if ours.tensor is None:  # (a saved output: its data, as a fresh tensor's)
                assert _bits(ours.data) == _bits(theirs.data)
                assert ours.requires_grad == theirs.requires_grad and ours.version == 0
            else:
                assert ours.counter is theirs.counter
        else:
            assert type(ours) is type(theirs) and (ours == theirs or ours is theirs)


def _check(lane, general, packed=False):
    assert type(lane) is numgrad.Tensor and lane.requires_grad == general.requires_grad
    assert _bits(lane._data) == _bits(general._data)
    assert (lane.grad_fn is None) == (general.grad_fn is None)
    if lane.grad_fn is not None:
        _same_node(lane.grad_fn, general.grad_fn, packed)


def _inputs(kind, dtype, shape):
    """A float tensor of ``kind``: a leaf, a non-leaf, a view of a non-leaf, or constant."""
    data = np.random.default_rng(0).uniform(0.5, 2.0, shape).astype(dtype)
    if kind == "constant":
        return numgrad.tensor(data)
    leaf = numgrad.tensor(data, requires_grad=True)
    if kind == "leaf":
        return leaf
    y = leaf * 1.0
    return y if kind == "nonleaf" else y.unsqueeze(0)[0]


@pytest.mark.parametrize("name", sorted(NUMBER_OPS))
@pytest.mark.parametrize("kind", ["leaf", "nonleaf", "view", "constant"])
@pytest.mark.parametrize("dtype,shape", [("float32", (2, 3)), ("float64", (5,)),
                                         ("float64", ())])
def test_a_tensor_with_a_number(name, kind, dtype, shape):
    op, f = NUMBER_OPS[name]
    x = _inputs(kind, dtype, shape)
    for c in (1.5, 3, -0.0, float("nan"), float("-inf")):
        lane = f(x, c)
        general = registry.apply(op, (x, c), (x._data, x._data.dtype.type(c)))
        _check(lane, general)


@pytest.mark.parametrize("name", sorted(NUMBER_OPS))
@pytest.mark.parametrize("needs", [(True, True), (True, False), (False, True), (False, False)])
@pytest.mark.parametrize("row", [False, True])
def test_two_tensors(name, needs, row):
    op, f = NUMBER_OPS[name]
    x = _inputs("nonleaf" if needs[0] else "constant", "float32", (3, 4))
    y = _inputs("leaf" if needs[1] else "constant", "float32", (4,) if row else (3, 4))
    lane = f(x, y)
    general = registry.apply(op, (x, y), (x._data, y._data))
    _check(lane, general)
    square = f(x, x)  # (one tensor twice: mul saves it twice, as the general path)
    _check(square, registry.apply(op, (x, x), (x._data, x._data)))


@pytest.mark.parametrize("name", sorted(UNARY_OPS))
@pytest.mark.parametrize("kind", ["leaf", "nonleaf", "constant"])
def test_unary(name, kind):
    op = UNARY_OPS[name]
    x = _inputs(kind, "float64", (2, 3))
    lane = getattr(numgrad, name)(x)
    _check(lane, registry.apply(op, (x,), (x._data,)))


def test_gradients_and_no_grad():
    x = numgrad.tensor([[0.5, -1.0, 2.0]], dtype=numgrad.float64, requires_grad=True)
    b = numgrad.tensor([1.0, 2.0, 3.0], dtype=numgrad.float64, requires_grad=True)
    loss = (numgrad.tanh(x * 2.0 + b) * (x - 1) / 3).relu().sum()
    loss.backward()
    t = x.detach().numpy()
    y = np.tanh(t * 2 + np.array([1.0, 2.0, 3.0]))
    keep = (y * (t - 1) / 3) > 0
    np.testing.assert_allclose(x.grad.numpy(), keep * ((1 - y * y) * 2 * (t - 1) + y) / 3)
    np.testing.assert_allclose(b.grad.numpy(), (keep * (1 - y * y) * (t - 1) / 3).sum(0))
    with numgrad.no_grad():
        z = x * 2.0 + x
    assert not z.requires_grad and z.grad_fn is None


def _calls_of_apply(monkeypatch):
    from numgrad.ops import reduction

    calls = []
    original = E.apply

    def counting(op, *args, **kwargs):
        calls.append(op)
        return original(op, *args, **kwargs)

    monkeypatch.setattr(E, "apply", counting)
    monkeypatch.setattr(reduction, "apply", counting)
    monkeypatch.setattr(registry, "apply", counting)  # (the lane's, ``registry.apply``)
    return calls


def test_the_lane_serves_the_common_calls(monkeypatch):
    calls = _calls_of_apply(monkeypatch)
    x = numgrad.ones(3, 4, requires_grad=True)
    y = x * 2.0 + 1 - x / 4.0
    y = numgrad.tanh(y) * y + numgrad.ones(4)
    losses = numgrad.sigmoid(y).relu().exp().sum(), (y * y).mean()
    assert calls == []  # (the forward; backward formulas may call ops)
    losses[0].backward(retain_graph=True)
    losses[1].backward()
    assert x.grad is not None


@pytest.mark.parametrize("case", ["anomaly", "transposed", "integer", "large", "empty",
                                  "large mean", "scalar tensor"])
def test_the_lane_steps_aside(monkeypatch, case):
    calls = _calls_of_apply(monkeypatch)
    x = numgrad.ones(3, 4, requires_grad=True) * 1.0
    if case == "anomaly":
        with numgrad.autograd.detect_anomaly():
            y = x * 2.0
        assert y.grad_fn._anomaly is not None
    elif case == "transposed":
        x.t() * 2.0
    elif case == "integer":
        numgrad.ones(3, dtype=numgrad.int64) * 2
    elif case == "large":
        numgrad.ones(PARALLEL_THRESHOLD) * 2.0
    elif case == "empty":
        numgrad.ones(0, requires_grad=True).sum()
    elif case == "large mean":  # (summed by threads, in another order)
        numgrad.ones(PARALLEL_THRESHOLD, requires_grad=True).mean()
    else:
        x * numgrad.tensor(2.0)
    assert calls


@pytest.mark.parametrize("name", ["sum", "mean"])
@pytest.mark.parametrize("kind", ["leaf", "nonleaf", "constant"])
@pytest.mark.parametrize("dtype,shape", [("float32", (2, 3)), ("float64", (7,)), ("float64", ())])
def test_a_reduction_of_everything(name, kind, dtype, shape):
    from numgrad.ops import reduction as R

    op = {"sum": R.SumAll, "mean": R.MeanAll}[name]
    x = _inputs(kind, dtype, shape)
    lane = getattr(x, name)()
    general = registry.apply(op, (x,), (x._data,), dims=tuple(range(x.ndim)), keepdim=False)
    _check(lane, general)


# ------------------------------------------------------------------ the generated recorders
def _forms(op, inputs, out, params):
    """The node ``op``'s recorder makes for ``inputs``, by the form unrolled for their count and
    by the form with a loop (``registry._source``), each on a fresh result of ``out``."""
    unrolled = registry._compiled(registry._source(op, len(inputs)), op)
    loop = registry._compiled(registry._source(op, None), op)
    return [form(inputs, out.copy(), dict(params)) for form in (unrolled, loop)]


def _split_part():
    parts = (numgrad.ones(4, 2, requires_grad=True) * 1.0).split(2)
    assert parts[1].output_nr == 1
    return parts[1]


CASES = {  # name: (op, inputs), the inputs made when the case runs
    "number after": lambda: (E.Mul, (_inputs("leaf", "float64", (2, 3)), 1.5)),
    "number before": lambda: (E.Mul, (2, _inputs("nonleaf", "float32", (3,)))),
    "0-d": lambda: (E.Div, (_inputs("leaf", "float64", ()), _inputs("nonleaf", "float64", ()))),
    "empty": lambda: (E.Sub, (_inputs("leaf", "float32", (0, 3)),
                              _inputs("constant", "float32", (3,)))),
    "non-contiguous": lambda: (E.Add, ((_inputs("leaf", "float64", (3, 4)) * 1.0).t(),
                                       _inputs("leaf", "float64", (4, 3)))),
    "y * y": lambda: (lambda y: (E.Mul, (y, y)))(_inputs("nonleaf", "float64", (2,))),
    "a view": lambda: (E.Exp, (_inputs("view", "float32", (3,)),)),
    "split's part": lambda: (E.Mul, (_split_part(), _inputs("leaf", "float64", (2, 2)))),
    "a view op": lambda: (registry.REGISTRY["t"], (_inputs("leaf", "float64", (2, 3)),)),
    "three inputs": lambda: (registry.REGISTRY["cat"],
                             tuple(_inputs(k, "float64", (2,)) for k in
                                   ("leaf", "constant", "nonleaf"))),
}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("context", ["plain", "saved-tensor hooks", "anomaly"])
def test_the_unrolled_and_the_loop_recorder_make_the_same_node(case, context):
    import contextlib

    op, inputs = CASES[case]()
    params = {"dim": 0} if op.name == "cat" else {}
    out = np.linspace(-1.0, 1.0, 6).reshape(2, 3)  # (the result's values: any, kept as given)
    within = {"plain": contextlib.nullcontext,
              "saved-tensor hooks": lambda: numgrad.autograd.graph.saved_tensors_hooks(
                  lambda t: t * 1, lambda t: t),
              "anomaly": numgrad.autograd.detect_anomaly}[context]
    with pytest.warns(UserWarning) if context == "anomaly" else contextlib.nullcontext():
        with within():
            unrolled, loop = _forms(op, inputs, out, params)
    _check(unrolled, loop, packed=context == "saved-tensor hooks")
    node = unrolled.grad_fn
    assert (getattr(node, "_anomaly", None) is not None) == (context == "anomaly")
    if context == "saved-tensor hooks":
        return
    if op.is_view:
        assert unrolled._base is not None and unrolled._base is loop._base
    saved = [s for s in node._saved if type(s) is SavedTensor and s.tensor is not None]
    if saved:  # (an in-place write to a saved input: PyTorch's error from both nodes)
        saved[0].tensor._version_counter.value += 1
        messages = []
        for result in (unrolled, loop):
            with pytest.raises(RuntimeError, match="modified by an inplace operation") as e:
                result.grad_fn.check_saved()
            messages.append(str(e.value))
        assert messages[0] == messages[1]


def test_a_dispatch_mode_that_takes_the_lane_gets_the_general_paths_node():
    from numgrad import dispatch

    class Recording(dispatch.Mode):
        lane = True
        calls = []

        def record(self, name, args):
            self.calls.append(name)
            return super().record(name, args)

    x = _inputs("nonleaf", "float64", (2, 3))
    with Recording():
        lane = x * 2.5
        general = registry.apply(E.Mul, (x, 2.5), (x._data, np.float64(2.5)))
    assert Recording.calls == ["binary"]  # (the lane's kernel call, handed to the mode)
    _check(lane, general)


def test_a_recorder_is_python_one_can_read():
    import ast

    source = registry.record_source(E.Mul, 2)
    assert source.startswith("def record_MulBackward0(inputs, out, params, result=None):")
    ast.parse(source)
    # (mul saves each input only where the other's gradient is needed, as PyTorch)
    assert "None if not n1 else (_save(i0, False) if s0 is not None else i0)" in source
    x = numgrad.ones(2, requires_grad=True)
    x * 2.0  # (its first recorded call: the recorder installed, its source kept)
    assert E.Mul._record_source == source
    assert "_view_of(result, i0, _node_name)" in registry.record_source(
        registry.REGISTRY["t"], 1)
    assert "_save(result, True)" in registry.record_source(E.Exp, 1)
    assert "zip(*map(_meta, inputs))" in registry.record_source(registry.REGISTRY["cat"])


def test_the_lane_serves_the_ops_that_declare_it():
    served = {op.name: op.lane for op in registry.REGISTRY.values() if op.lane is not None}
    assert served == {**{name: "binary" for name in NUMBER_OPS},
                      **{name: "unary" for name in UNARY_OPS},
                      **{name: "unary" for name in ("reciprocal", "log1p", "expm1", "rsqrt", "sin",
                                                    "cos", "tan")},
                      "sum": "reduce", "mean": "reduce"}
    assert all(op._lane == op.lane for op in registry.REGISTRY.values())
    # (its recorders, for what it knows of the inputs, written at their first call)
    assert isinstance(E.Div._record_pair, functools.partial) or \
        E.Div._record_pair_source.startswith("def record_DivBackward0_tensor_tensor(")
