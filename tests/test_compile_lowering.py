"""numgrad.compile's lowering (compiler/lower.py) on the kernel calls that once did not lower or
lowered to other values than eager's: a number as a binary kernel's first operand, zero
gradients summed down to broadcast inputs, and fused values computed in another precision or
by another formula than the eager kernels' (int32 and bool intermediates, a one-value first
operand that eager swaps, float numbers LLVM folds or rewrites at compile time). Each program
is compiled (no fallback), traced once and replayed, and compared with eager on the same
values: outputs, dtypes and gradients, bit for bit."""
import warnings

import numpy as np
import pytest

import numgrad
from numgrad.creation import ones_like, zeros_like
from numgrad.kernels import formulas as F
from numgrad.ops._promote import binary_operands
from numgrad.ops import registry
from numgrad.ops.registry import Op, apply, kernels_for
from numgrad.tensor import Tensor

CALLS = 3  # the trace, then replays


def _unregistered(op):
    """An op for these tests only, set up as ``register`` does, outside the registry (whose
    ops the harness runs)."""
    return registry.prepare(op)


def _bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).view(np.uint8)


def _same(got: Tensor, want: Tensor, what: str) -> None:
    assert got.dtype is want.dtype, what
    g, w = got.numpy(), want.numpy()
    assert g.shape == w.shape, what
    np.testing.assert_array_equal(_bits(g), _bits(w), err_msg=what)  # (-0.0 and NaNs too)


def _check(fn, make_inputs, calls: int = CALLS) -> None:
    """``fn`` compiled against eager, on ``make_inputs(seed)`` (fresh tensors each time)."""
    compiled = numgrad.compile(fn, fullgraph=True)
    for call in range(calls):
        xs, ys = make_inputs(100 + call), make_inputs(100 + call)
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)  # (no eager fallback)
            got = compiled(*xs)
        want = fn(*ys)
        got, want = (got, want) if isinstance(got, tuple) else ((got,), (want,))
        assert len(got) == len(want)
        for k, (g, w) in enumerate(zip(got, want)):
            _same(g, w, f"call {call}, output {k}")
        for k, (x, y) in enumerate(zip(xs, ys)):
            assert (x.grad is None) == (y.grad is None), f"call {call}, input {k}"
            if x.grad is not None:
                _same(x.grad, y.grad, f"call {call}, gradient of input {k}")
    assert compiled.traces == 1


def _uniform(*shapes, dtype="float64", low=0.5, high=2.0, grad=True):
    def make(seed):
        rng = np.random.default_rng(seed)
        return tuple(numgrad.tensor(rng.uniform(low, high, s).astype(dtype), requires_grad=grad)
                     for s in shapes)
    return make


def _backward(outs):
    """A backward through every float output that requires grad; the outputs, detached."""
    loss = None
    for k, o in enumerate(outs):
        if o.requires_grad:
            term = (o * (1.5 + k)).sum()
            loss = term if loss is None else loss + term
    if loss is not None:
        loss.backward()
    return tuple(o.detach() for o in outs)


# ------------------------------------------------------------------ a number as first operand
@_unregistered
class _NumberFirst(Op):
    """``op(number, x)`` as one kernel call with a NumPy scalar first (what
    ``binary_operands(number, tensor)`` hands a forward)."""

    name, node = "number_first_test", "NumberFirstBackward"
    differentiable = False

    @staticmethod
    def forward(K, x, *, code, number):
        out = np.bool_ if F.family(code) is F.Compare else None
        return K.binary(code, x.dtype.type(number), x, out)


# No swapped form (the eager kernel computes op(s, x) itself) and swapped ones (it computes
# SWAPPED[op](x, s)), comparisons included.
NUMBER_FIRST = [F.Binary.DIV, F.Binary.DIV_FLOOR, F.Binary.DIV_TRUNC, F.Binary.ATAN2,
                F.Binary.LOGADDEXP, F.Binary.LOGADDEXP2, F.Binary.TANH_BWD, F.Binary.SIGMOID_BWD,
                F.Binary.RELU_BWD, F.Binary.SUB, F.Binary.RSUB, F.Binary.POW, F.Binary.RPOW,
                F.Binary.MAXIMUM, F.Binary.MINIMUM, F.Binary.ADD, F.Binary.MUL, F.Compare.LT,
                F.Compare.GE, F.Compare.EQ]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_a_number_first_operand_lowers_for_every_binary_kernel_op(dtype):
    def fn(x):
        e = x.exp()  # (a fused operand: the number's formula is computed in its loop)
        outs = [apply(_NumberFirst, (e,), (e._data,), code=op, number=1.25)
                for op in NUMBER_FIRST]
        return tuple(outs) + (apply(_NumberFirst, (x,), (x._data,), code=F.Binary.DIV_FLOOR,
                                    number=7.5),)

    _check(fn, _uniform((3, 4), dtype=dtype, low=-1.0, high=1.0, grad=False))


def test_numbers_first_through_the_public_ops_with_gradients():
    m = numgrad

    def fn(t):
        e = t.exp()
        return _backward((m.lt(0.5, t), m.eq(1.0, e), m.ge(1.5, t * 2), m.eq(True, t > 1),
                          m.add(2.0, e), m.sub(2.0, e), m.mul(2.0, e), 1.0 - e, 2.0 ** e,
                          2.0 / e, m.pow(1.5, t), m.where(t > 1, 0.5, e),
                          m.div(7.5, e, rounding_mode="floor"),
                          m.div(7.5, e, rounding_mode="trunc")))

    for dtype in ("float32", "float64"):
        _check(fn, _uniform((3, 4), dtype=dtype))
    _check(lambda t: (7.5 // t.exp(), 2.0 % t.exp(), 2 - t * 3),
           _uniform((5,), low=0.5, high=3.0, grad=False))


# ------------------------------------------------------------------ zero gradients summed down
def _zero_backward_op(make):
    @_unregistered
    class ZeroBackward(Op):
        """``a * b`` whose backward gives ``make(grad)`` to both inputs (PyTorch's zeros of a
        rounding division, at the gradient's shape), which the engine sums to each input's."""

        name, node = "zero_backward_test", "ZeroBackwardTest"

        @staticmethod
        def forward(K, a, b):
            return K.binary(K.MUL, a, b)

        @staticmethod
        def backward(ctx, grad):
            need_a, need_b = ctx.needs_input_grad
            return (make(grad) if need_a else None), (make(grad) if need_b else None)

    def fn(a, b):
        return _backward((apply(ZeroBackward, (a, b), binary_operands(a, b)),))

    return fn


@pytest.mark.parametrize("shapes", [((3, 1, 4), (5, 1)), ((3, 4), (4,)), ((2, 3), ()),
                                    ((3, 4), (3, 4))], ids=str)
@pytest.mark.parametrize("fill", [zeros_like, ones_like], ids=["zeros", "ones"])
def test_fill_gradients_summed_down_to_broadcast_inputs(shapes, fill):
    """(a fill of the gradient's shape, summed to each input's: the sum reads it from memory)"""
    _check(_zero_backward_op(fill), _uniform(*shapes))


# ------------------------------------------------------------------ eager's roundings
def test_int32_and_bool_intermediates_keep_their_dtype():
    """Numba computes int32 and bool arithmetic in int64; eager's kernels store each value in
    its dtype (an int32 product wraps, True + True is True) before the next op reads it."""
    m = numgrad

    def fn(t):
        big = t * 70000 * 70000  # (wraps around in int32)
        return (m.gt(t * 100000 * 100000, 0), m.maximum(big, t), big.abs(), -big // 3,
                m.eq((t > 500) + (t > 100), t > 700), m.where(t > 300, big, t) > 0)

    for dtype in ("int32", "int64"):
        _check(fn, _uniform((3, 4), dtype=dtype, low=1, high=1000, grad=False))


def test_a_one_value_first_operand_is_swapped_as_eager_swaps_it():
    """Eager computes maximum(one value, x) as maximum(x, value) (the loop for a number on the
    right), and maximum of 0.0 and -0.0 gives its first operand: the sign of each zero."""
    m = numgrad
    zero = m.tensor(0.0, dtype=m.float64)

    def fn(t):
        negative = t * -0.0
        return (m.maximum(zero, negative), m.minimum(-zero, t * 0.0),
                m.maximum(zero.expand(3, 4), negative), m.minimum(negative, zero),
                m.maximum(zero.reshape(1, 1), negative))

    _check(fn, _uniform((3, 4), grad=False))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_float_numbers_are_not_folded_by_the_compiler(dtype):
    """A fill's or a number's formula computed when LLVM compiles would round otherwise than
    the eager kernel's at run time (float32 sin, cosh, log1p: one ulp from glibc's)."""
    m = numgrad
    values = np.random.default_rng(5).uniform(-3, 3, 32)

    def fn(t):
        outs = []
        for k, c in enumerate(values):
            filled = m.full((1,), float(c), dtype=t.dtype)
            f = (m.sin, m.cos, m.tan, m.sinh, m.cosh, m.log1p, m.erf, m.atan)[k % 8]
            outs.append(f(filled.abs() if f is m.log1p else filled) + t[:1])
        return m.cat(outs)

    _check(fn, _uniform((4,), dtype=dtype, grad=False))


@_unregistered
class _Numbers(Op):
    """Kernel calls on numbers only: ``K.unary(op, s)``, ``K.binary(op, s, s2)``."""

    name, node = "numbers_test", "NumbersBackward"
    differentiable = False

    @staticmethod
    def forward(K, x):
        s = K.unary(K.SIN, x.dtype.type(0.7))
        both = K.binary(K.ATAN2, x.dtype.type(0.7), x.dtype.type(1.3))
        return K.binary(K.ADD, K.binary(K.MUL, x, s), both)


def test_kernel_calls_on_numbers_only_lower():
    _check(lambda x: apply(_Numbers, (x,), (x._data,)),
           _uniform((3, 4), dtype="float32", grad=False))


def test_a_view_kernel_that_copies_makes_a_value_of_its_own():
    """``ascontiguous`` of a transposed array copies it: the trace must not take the copy for a
    view of the argument's memory (its layout would be an offset between two unrelated
    allocations, read out of bounds by the fused loops: wrong medians of a transposed input, and
    segfaults, in the compile harness)."""
    from numgrad.compiler import tracer

    trace = tracer.Trace()  # (a trace of its own: nothing global is swapped)
    t = trace.input(np.arange(6.0).reshape(2, 3).T, ("x", "data"))
    copy = trace.kernels.ascontiguous(t)
    assert copy._root.base is None
    c = trace.input(np.arange(6.0), ("y", "data"))
    same = trace.kernels.ascontiguous(c)  # (already contiguous: the same memory, a view)
    assert same._root is c._root or same._root.base is c._root


def test_median_of_a_transposed_input_replays_as_eager():
    """The program of the compile harness's median samples, replayed on fresh values."""
    def fn(a, b):
        m1, m2 = numgrad.median(a.t()), numgrad.median(b.t())
        (m1 * 1.5 + m2 * 2.5).sum().backward()
        return m1.detach(), m2.detach()

    compiled = numgrad.compile(fn, fullgraph=True)
    rng = np.random.default_rng(3)
    for _ in range(40):
        x = rng.uniform(-2, 2, (2, 3))
        got = compiled(numgrad.tensor(x, requires_grad=True),
                       numgrad.tensor(x.astype(np.float32), requires_grad=True))
        assert got[0].item() == np.sort(x.ravel())[2]
        assert got[1].item() == np.sort(x.astype(np.float32).ravel())[2]


def test_a_copy_made_by_a_view_kernel_comes_before_the_loop_that_reads_it():
    """A reshape of a transposed tensor copies, through a view-making kernel (``ascontiguous``):
    the fused loop that sums the copy and an earlier value must run after it, not where the
    earlier value's loop starts (it read the copy before it was made)."""
    def f(a, b):
        s = (a * 1.5).sum()
        c = b.transpose(0, 1).reshape(-1)
        return s + (c * 2.0).sum(), c

    compiled = numgrad.compile(f)
    rng = np.random.default_rng(5)
    for _ in range(3):
        a, b = (numgrad.tensor(rng.standard_normal(s)) for s in ((4,), (3, 2)))
        (got, got_c), (want, want_c) = compiled(a, b), f(a, b)
        assert got.item() == want.item()
        np.testing.assert_array_equal(got_c.numpy(), want_c.numpy())
    assert compiled.traces == 1


def test_a_value_read_through_a_reshape_is_computed_at_its_own_positions():
    """``x * 2`` (2×6) is read only by ``+ 1`` through a reshape to 3×4: a loop over 3×4 must
    read it stored, not compute it from ``x`` at the 3×4 loop's positions (row 1 would read
    x's elements 6..9 instead of 4..7). Its gradient flows back through the reshape too."""
    def f(x):
        y = (x * 2).reshape(3, 4) + 1
        (y * y).sum().backward()
        return y.detach()

    _check(f, _uniform((2, 6)))


def test_int64_arithmetic_that_wraps_is_not_folded_by_the_compiler():
    """Numba marks signed arithmetic "no signed wrap", so LLVM may take a fused int64 product for
    one that did not wrap and fold the comparison that reads it (``x * 2 > 0`` as ``x > 0``:
    a fuzzed program replayed 0 where eager gave -48). The fused loops compute int64 sums,
    differences, products, negations and absolute values in unsigned arithmetic: eager's bits."""
    big = [2 ** 62 + 5, 2 ** 63 - 24, -2 ** 63, -2 ** 62 - 1, 3, -7]

    def f(x, y):
        p = x * 2
        q = (x + y).abs()
        r = y.clone()
        r.add_(x, alpha=3)
        return p.masked_fill(p > 0, 0), q >= 0, -x > 0, x - y < 0, r > 0, (4 - x) > 0

    def inputs(seed):
        rng = np.random.default_rng(seed)
        return tuple(numgrad.tensor(rng.permutation(big)) for _ in range(2))

    _check(f, inputs)


def test_a_segments_names_follow_its_text_so_equal_segments_are_one_function():
    from numgrad.compiler import lower

    text = ("def segment0(in0):\n    r12 = np.empty(4)\n    t40 = in0[0] + r12[0]\n"
            "    s9 = r7[0:2]\n    r7 = r12\n    return (r7, r12, t40,)\n")
    assert lower.canonical(text) == (
        "def segment0(in0):\n    r0 = np.empty(4)\n    t0 = in0[0] + r0[0]\n    s0 = r1[0:2]\n"
        "    r1 = r0\n    return (r1, r0, t0,)\n")
    # two blocks of the same shapes, a product between their chains (two segments, other trace
    # values): one generated function, compiled once, and eager's values
    rng = np.random.default_rng(0)
    w = numgrad.tensor(rng.standard_normal((6, 6)).astype(np.float32))
    x = numgrad.tensor(rng.standard_normal((5, 6)).astype(np.float32))

    def block(h):
        return numgrad.tanh(h * 0.5 + 1.0) * h

    def run():
        return block(block(x) @ w) @ w

    compiled = numgrad.compile(run)
    for _ in range(CALLS):
        assert _bits(compiled().numpy()).tobytes() == _bits(run().numpy()).tobytes()
    (guard, replay), = compiled._entries
    segments = [v for k, v in replay.__globals__.items() if k.startswith("SEG")]
    assert len(segments) == 2 and segments[0] is segments[1]


def _segment_source(compiled) -> str:
    (guard, replay), = compiled._entries
    segments = [v for k, v in replay.__globals__.items() if k.startswith("SEG")]
    text = open(segments[0].py_func.__code__.co_filename).read()
    return text[text.index("def segment0("):].split("\n\n\n")[0]  # (the function itself)


@pytest.mark.parametrize("n", [1 << 20, 1000])  # (split over threads, and one loop nest)
def test_loops_over_one_shape_are_one_loop_where_no_element_sees_another_order(n):
    rng = np.random.default_rng(0)
    data = [rng.standard_normal(n).astype(np.float32) for _ in range(4)]

    def tensors():
        return [numgrad.tensor(d.copy()) for d in data]

    def run(p, buf, g, x):
        with numgrad.no_grad():
            buf.mul_(0.9).add_(g, alpha=0.1)  # (in-place updates: each reads what the last wrote)
            p.add_(buf, alpha=-0.01)
        a = x * g
        return a, a + p  # (two stored values)

    eager, ours = tensors(), tensors()
    compiled = numgrad.compile(run)
    for _ in range(CALLS):
        expected = run(*eager)
        got = compiled(*ours)
        for e, o in zip(list(expected) + eager, list(got) + ours):
            assert _bits(e.numpy()).tobytes() == _bits(o.numpy()).tobytes()
    text = _segment_source(compiled)
    loops = text.count("prange(chunks)") + text.count("for i0 in range")
    assert loops == 1, text


def test_a_loop_reading_written_memory_at_other_positions_stays_apart():
    rng = np.random.default_rng(1)
    a0 = rng.standard_normal((40, 40)).astype(np.float32)

    def run(a):
        with numgrad.no_grad():
            a.mul_(2.0)
        return a.t() * 3.0 + a  # (the transpose reads elements the update wrote elsewhere)

    eager, ours = numgrad.tensor(a0.copy()), numgrad.tensor(a0.copy())
    compiled = numgrad.compile(run)
    for _ in range(CALLS):
        assert _bits(run(eager).numpy()).tobytes() == _bits(compiled(ours).numpy()).tobytes()
        assert _bits(eager.numpy()).tobytes() == _bits(ours.numpy()).tobytes()
    assert _segment_source(compiled).count("for i0 in range") == 2


def test_a_loop_nest_walks_the_rows_every_layout_reads_as_one_inner_loop():
    # A per-channel bias over NCHW keeps its loop off the flat, split path: the dimensions that
    # every layout walks contiguously (H and W) are one inner loop over rows sliced before it,
    # which LLVM vectorises (a flat index of each dimension it left scalar), and a second loop
    # over the shape joins the first, sharing its rows; the values are eager's, bit for bit.
    rng = np.random.default_rng(2)
    x0 = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
    b0 = rng.standard_normal(3).astype(np.float32)

    def run(x, b):
        y = x + b.view(1, 3, 1, 1)
        return y, y * x - b.view(1, 3, 1, 1)

    def inputs(seed):
        return numgrad.tensor(x0 * seed), numgrad.tensor(b0 + seed)

    _check(run, inputs)
    compiled = numgrad.compile(run, fullgraph=True)
    compiled(*inputs(1))
    text = _segment_source(compiled)
    assert "for i2 in range(20):" in text and "for i3" not in text, text
    assert text.count("for i2 in range(20):") == 1 and " q0 = " in text, text
