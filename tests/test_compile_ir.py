"""The compiler's IR (compiler/ir.py): the typed nodes a trace records and the passes over them
(dead code, hash-consing, fusion, constant folding), on traces made here with a trace of their
own, and end to end through ``numgrad.compile`` against eager, bit for bit."""
import sys
import warnings

import numpy as np
import pytest

import numgrad
from numgrad.compiler import ir, lower, tracer
from numgrad.kernels import formulas as F

MUL, ADD = F.Binary.MUL, F.Binary.ADD


def _trace(*arrays):
    """A trace of its own (nothing global is swapped) and its inputs."""
    trace = tracer.Trace()
    inputs = [trace.input(a, (f"x{k}", "data")) for k, a in enumerate(arrays)]
    return trace, trace.kernels, inputs


def _needed(*arrays) -> set:
    return {a._root for a in arrays}


def test_nodes_are_typed_and_unpack_as_calls():
    trace, K, (x,) = _trace(np.arange(6.0).reshape(2, 3))
    y = K.binary(MUL, x, np.float64(2.0))
    K.sum_dims(y, (1,), False)
    first, second = trace.nodes
    assert (first.op, first.dtype, first.shape) == (ir.Op.BINARY, np.float64, (2, 3))
    assert (second.op, second.shape) == (ir.Op.SUM_DIMS, (2,))
    assert first.sources == (x._root,) and first.results == (y._root,)
    assert first.args == (MUL, np.float64(2.0)) and second.args == ((1,), False)
    name, specs, out = first
    assert name == "binary" and specs[0] == ("c", MUL) and out == ("v", y._root)
    assert ir.op_of("matmul") is ir.Op.CALL and ir.op_of("philox_uniform") is ir.Op.RANDOM
    assert ir.op_of("transpose") is ir.Op.VIEW_KERNEL and ir.op_of("nonzero") is ir.Op.READ


def test_dead_code_keeps_what_the_end_needs_and_writes_into_inputs():
    trace, K, (x, w) = _trace(np.arange(4.0), np.zeros(4))
    K.unary(F.Unary.EXP, x)  # (read by nothing)
    y = K.binary(MUL, x, np.float64(3.0))
    K.binary_into(ADD, w, np.float64(1.0))  # (an input's memory: an effect)
    kept = ir.dead_code(trace.nodes, _needed(y))
    assert [n.op for n in kept] == [ir.Op.BINARY, ir.Op.BINARY_INTO]


def test_hash_cons_computes_a_repeated_call_once():
    trace, K, (x,) = _trace(np.arange(4.0))
    a = K.binary(MUL, x, np.float64(2.0))
    b = K.binary(MUL, x, np.float64(2.0))
    ea, eb = K.unary(F.Unary.EXP, a), K.unary(F.Unary.EXP, b)
    c = K.binary(ADD, ea, eb)
    kept = ir.hash_cons(trace.nodes, _needed(c))
    assert len(kept) == 3  # (b's call and then, reading a for b, its exp)
    assert kept[-1].sources == (ea._root, ea._root)


@pytest.mark.parametrize("case", ["signed zero", "bool and int", "write between", "needed",
                                  "written result"])
def test_hash_cons_keeps_calls_that_may_differ(case):
    trace, K, (x,) = _trace(np.arange(4.0))
    needed = set()
    if case == "signed zero":  # (x * 0.0 and x * -0.0 differ in the sign of their zeros)
        a, b = K.binary(MUL, x, np.float64(0.0)), K.binary(MUL, x, np.float64(-0.0))
    elif case == "bool and int":
        a, b = K.full((2,), True, np.int64), K.full((2,), 1, np.int64)
    elif case == "write between":
        a = K.binary(MUL, x, np.float64(2.0))
        K.binary_into(ADD, x, np.float64(1.0))
        b = K.binary(MUL, x, np.float64(2.0))
    elif case == "needed":  # (two results returned: each its own memory, as eager's)
        a, b = K.binary(MUL, x, np.float64(2.0)), K.binary(MUL, x, np.float64(2.0))
        needed = _needed(a, b)
    else:
        a, b = K.binary(MUL, x, np.float64(2.0)), K.binary(MUL, x, np.float64(2.0))
        K.binary_into(ADD, b, np.float64(1.0))
    c = K.binary(ADD, a, b)
    needed |= _needed(c)
    kept = ir.hash_cons(ir.dead_code(trace.nodes, needed), needed)
    makes = [n for n in kept if set(n.results) & {a._root, b._root}]
    assert len(makes) == 2, case


def test_passes_run_on_a_graph_of_any_depth_without_recursion():
    """20,000 nodes in one chain, scheduled under a recursion limit far below the depth."""
    trace, K, (x,) = _trace(np.arange(8.0))
    y = x
    for _ in range(10_000):
        y = K.binary(ADD, K.binary(MUL, y, np.float64(1.0001)), np.float64(0.001))
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(200)
    try:
        steps = ir.schedule(trace.nodes, _needed(y), lower.fusible())
    finally:
        sys.setrecursionlimit(limit)
    assert [kind for kind, _ in steps] == ["segment"] * -(-20_000 // ir.SEGMENT_NODES)
    assert sum(len(step.nodes) for _, step in steps) == 20_000


def test_fold_constants_computes_from_constants_alone_once():
    trace = tracer.Trace()
    data = np.array([1.0, 2.0])  # (made from Python data in the call, as by ``tensor``)
    c = trace.traced(data, trace._value("const", data, data.copy()))
    x = trace.input(np.arange(2.0), ("x", "data"))
    K = trace.kernels
    d = K.binary(MUL, c, np.float64(4.0))  # (constants alone: folded)
    y = K.binary(ADD, x, d)
    steps = ir.schedule(trace.nodes, _needed(y), lambda node: False)
    kept, folded = ir.fold_constants(steps, _needed(y), frozenset())
    assert folded == {d._root} and [step.name for _, step in kept] == ["binary"]


def _bits(t) -> np.ndarray:
    return np.ascontiguousarray(t.detach().numpy()).view(np.uint8)


def test_repeated_expressions_compile_to_eager_values_and_separate_results():
    def f(x):
        a = (x * 2.0).exp()
        b = (x * 2.0).exp()
        s = (a + b).sum()
        s.backward()
        return x * 3.0, x * 3.0, s.detach()

    compiled = numgrad.compile(f, fullgraph=True)
    rng = np.random.default_rng(0)
    for _ in range(3):
        data = rng.standard_normal(5)
        x, y = numgrad.tensor(data, requires_grad=True), numgrad.tensor(data, requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)  # (no eager fallback)
            got = compiled(x)
        want = f(y)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(_bits(g), _bits(w))
        np.testing.assert_array_equal(_bits(x.grad), _bits(y.grad))
        got[0].detach().add_(1.0)  # (two results: two tensors of their own memory, as eager's)
        np.testing.assert_array_equal(_bits(got[1]), _bits(want[1]))
    assert compiled.traces == 1


def test_numbers_equal_at_the_trace_stay_two_numbers_on_the_rerun_path():
    """``x * a + x * b`` traced with ``a == b``: the two products are one expression only for
    that call; on the re-run path (a Python effect) the numbers change and so do the products."""
    seen = []

    def f(x, a, b):
        seen.append(a)
        return x * a + x * b

    compiled = numgrad.compile(f)
    x = numgrad.tensor(np.arange(4.0))
    for a, b in [(0.5, 0.5), (0.5, 0.5), (0.5, 0.25), (2.0, -1.0), (0.0, -0.0)]:
        np.testing.assert_array_equal(_bits(compiled(x, a, b)), _bits(f(x, a, b)))
