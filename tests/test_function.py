"""``autograd.Function``: user-defined ops, run as the same program in numgrad and in PyTorch.

Every Function here is defined once, by a factory that takes the module (``numgrad`` or ``torch``),
so both libraries run the same code; expected values come from PyTorch or are derived by hand.
"""
import gc
import weakref

import numba
import numpy as np
import pytest
import torch

import numgrad as ng

MODULES = pytest.mark.parametrize("m", [ng, torch], ids=["numgrad", "torch"])


def _np(t):
    if isinstance(t, torch.Tensor):
        return t.detach().numpy().astype(np.float64)
    return np.array(t.detach().tolist(), dtype=np.float64)


def _leaf(m, values, requires_grad=True, dtype="float64"):
    return m.tensor(np.asarray(values, dtype=dtype), requires_grad=requires_grad)


def _error(fn):
    with pytest.raises(Exception) as info:
        fn()
    return type(info.value), str(info.value)


def _both(program):
    """Runs ``program(m)`` on numgrad and on torch; returns the two results."""
    return program(ng), program(torch)


# --------------------------------------------------------------------------- Functions
def make_exp(m):
    """exp(x) * k with a Python scalar k, saving its output."""

    class Exp(m.autograd.Function):
        @staticmethod
        def forward(ctx, x, k):
            y = x.exp() * k
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, grad):
            (y,) = ctx.saved_tensors
            return grad * y, None

    return Exp


def make_cube(m):
    """x**3 with a backward written in tensor ops (so it is itself differentiable)."""

    class Cube(m.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x * x

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return grad * 3 * x * x

    return Cube


def make_mul_add(m, calls):
    """x * y + k, recording ``needs_input_grad`` and the gradients backward receives."""

    class MulAdd(m.autograd.Function):
        @staticmethod
        def forward(ctx, x, y, k):
            calls.append(("needs", ctx.needs_input_grad, m.is_grad_enabled()))
            ctx.save_for_backward(x, y)
            ctx.k = k
            return x * y + k

        @staticmethod
        def backward(ctx, grad):
            calls.append(("backward", m.is_grad_enabled()))
            x, y = ctx.saved_tensors
            gx = grad * y if ctx.needs_input_grad[0] else None
            gy = grad * x if ctx.needs_input_grad[1] else None
            return gx, gy, None

    return MulAdd


def make_split(m, calls, materialize=True):
    """(2x, x*x, 7): two tensor outputs and a non-tensor one."""

    class Split(m.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(materialize)
            ctx.save_for_backward(x)
            return x * 2, x * x, 7

        @staticmethod
        def backward(ctx, g_double, g_square, g_seven):
            calls.append(tuple(None if g is None else _np(g).tolist()
                               for g in (g_double, g_square, g_seven)))
            (x,) = ctx.saved_tensors
            total = 0
            if g_double is not None:
                total = total + 2 * g_double
            if g_square is not None:
                total = total + 2 * x * g_square
            return total

    return Split


# --------------------------------------------------------------------------- basics
@MODULES
def test_apply_records_a_node_named_after_the_class(m):
    Exp = make_exp(m)
    x = _leaf(m, [0.5, -1.0, 2.0])
    y = Exp.apply(x, 2.0)
    assert y.grad_fn.name() == "ExpBackward"
    assert type(y.grad_fn).__name__ == "ExpBackward"
    assert not y.is_leaf and y.requires_grad
    ((node, nr),) = y.grad_fn.next_functions
    assert type(node).__name__ == "AccumulateGrad" and nr == 0 and node.variable is x
    assert "grad_fn=<ExpBackward>" in repr(y)


def test_exp_values_and_gradients_match_torch():
    def program(m):
        x = _leaf(m, [0.5, -1.0, 2.0])
        y = make_exp(m).apply(x, 2.0)
        y.backward(m.tensor([1.0, 2.0, 3.0], dtype=m.float64))
        return _np(y), _np(x.grad)

    (y, gx), (ty, tgx) = _both(program)
    np.testing.assert_allclose(y, ty, rtol=1e-12)
    np.testing.assert_allclose(gx, tgx, rtol=1e-12)
    np.testing.assert_allclose(gx, 2 * np.exp([0.5, -1.0, 2.0]) * [1, 2, 3], rtol=1e-12)


def test_needs_input_grad_grad_modes_and_ctx_attributes_match_torch():
    def program(m):
        calls = []
        MulAdd = make_mul_add(m, calls)
        x = _leaf(m, [1.0, 2.0])
        y = _leaf(m, [3.0, 4.0], requires_grad=False)
        out = MulAdd.apply(x, y, 5.0)
        k = out.grad_fn.k
        out.sum().backward()
        out2 = MulAdd.apply(x, y, 1.0)
        (g,) = m.autograd.grad(out2.sum(), x, create_graph=True)
        with m.no_grad():
            plain = MulAdd.apply(x, y, 1.0)
        return (calls, k, _np(x.grad).tolist(), y.grad, plain.requires_grad, plain.grad_fn,
                g.requires_grad)

    ours, theirs = _both(program)
    assert ours == theirs
    calls, k, gx, gy, requires_grad, grad_fn, recorded = ours
    assert calls[0] == ("needs", (True, False, False), False)  # forward runs with grad off
    assert calls[1] == ("backward", False)
    assert calls[3] == ("backward", True)  # create_graph=True: backward is recorded
    assert calls[4] == ("needs", (True, False, False), False)  # even under no_grad
    assert k == 5.0 and gy is None and requires_grad is False and grad_fn is None
    assert gx == [3.0, 4.0] and recorded is False  # y does not require grad: g is constant


def test_gradcheck_and_gradgradcheck_on_a_custom_function():
    Cube = make_cube(ng)
    x = ng.tensor(np.linspace(-1.5, 2.0, 6).reshape(2, 3), requires_grad=True)
    assert ng.autograd.gradcheck(Cube.apply, (x,))
    assert ng.autograd.gradgradcheck(Cube.apply, (x,))
    Exp = make_exp(ng)
    assert ng.autograd.gradcheck(lambda t: Exp.apply(t, 0.5), (x,))


def test_create_graph_through_a_custom_function_matches_torch():
    def program(m):
        x = _leaf(m, [0.5, -1.0, 2.0])
        y = make_cube(m).apply(x).sum()
        (g,) = m.autograd.grad(y, x, create_graph=True)
        (gg,) = m.autograd.grad(g.sum(), x)
        return _np(g), _np(gg), g.grad_fn is not None

    (g, gg, recorded), (tg, tgg, trecorded) = _both(program)
    np.testing.assert_allclose(g, tg, rtol=1e-12)
    np.testing.assert_allclose(gg, tgg, rtol=1e-12)
    np.testing.assert_allclose(gg, [3.0, -6.0, 12.0], rtol=1e-12)  # 6x
    assert recorded and trecorded


def test_setup_context_and_keyword_arguments_match_torch():
    def program(m):
        class Scale(m.autograd.Function):
            @staticmethod
            def forward(x, k=2.0):
                return x * k

            @staticmethod
            def setup_context(ctx, inputs, output):
                ctx.k = inputs[1]
                ctx.seen = (len(inputs), ctx.needs_input_grad)

            @staticmethod
            def backward(ctx, grad):
                return grad * ctx.k, None

        x = _leaf(m, [1.0, 2.0])
        a = Scale.apply(x)
        b = Scale.apply(x, k=5.0)
        (a + b).sum().backward()
        return _np(a), _np(b), _np(x.grad), a.grad_fn.seen, b.grad_fn.seen

    (a, b, gx, sa, sb), (ta, tb, tgx, tsa, tsb) = _both(program)
    np.testing.assert_array_equal(a, ta)
    np.testing.assert_array_equal(b, tb)
    np.testing.assert_array_equal(gx, tgx)
    np.testing.assert_array_equal(gx, [7.0, 7.0])
    assert (sa, sb) == (tsa, tsb) == ((2, (True, False)), (2, (True, False)))


# --------------------------------------------------------------------------- several outputs
def test_several_outputs_run_backward_once_with_every_gradient():
    def program(m):
        calls = []
        Split = make_split(m, calls)
        x = _leaf(m, [1.0, -2.0])
        double, square, seven = Split.apply(x)
        (double.sum() * 3 + square.sum()).backward()
        grads = _np(x.grad)
        x.grad = None
        double2, square2, _ = Split.apply(x)
        square2.sum().backward()  # double2 gets no gradient: materialized as zeros
        return calls, grads, _np(x.grad), seven, double.grad_fn.name(), square.grad_fn.name()

    ours, theirs = _both(program)
    calls, grads, grads2, seven, n1, n2 = ours
    assert calls == theirs[0]
    assert calls == [([3.0, 3.0], [1.0, 1.0], None), ([0.0, 0.0], [1.0, 1.0], None)]
    np.testing.assert_array_equal(grads, theirs[1])
    np.testing.assert_array_equal(grads, [8.0, 2.0])  # 3*2 + 2x
    np.testing.assert_array_equal(grads2, theirs[2])
    assert seven == 7 and n1 == n2 == "SplitBackward" == theirs[4] == theirs[5]


def test_several_outputs_without_materialized_grads_get_none():
    def program(m):
        calls = []
        Split = make_split(m, calls, materialize=False)
        x = _leaf(m, [1.0, -2.0])
        _, square, _ = Split.apply(x)
        square.sum().backward()
        return calls, _np(x.grad)

    (calls, gx), (tcalls, tgx) = _both(program)
    assert calls == tcalls == [(None, [1.0, 1.0], None)]
    np.testing.assert_array_equal(gx, tgx)


def test_several_outputs_structure_grad_and_hooks():
    calls = []
    x = _leaf(ng, [1.0, -2.0])
    double, square, _ = make_split(ng, calls).apply(x)
    # the outputs are outputs 0, 1, 2 of the Function's one node, as PyTorch's
    owner = double.grad_fn
    assert square.grad_fn is owner and (double.output_nr, square.output_nr) == (0, 1)
    assert (double * 1).grad_fn.next_functions[0] == (owner, 0)
    assert (square * 1).grad_fn.next_functions[0] == (owner, 1)
    assert owner.name() == "SplitBackward" and owner.next_functions[0][0].variable is x
    seen = []
    handle = square.register_hook(lambda g: seen.append(_np(g).tolist()) or g * 10)
    (gx,) = ng.autograd.grad((double * 2).sum() + square.sum(), x, retain_graph=True)
    np.testing.assert_array_equal(_np(gx), [2 * 2 + 10 * 2 * 1.0, 2 * 2 + 10 * 2 * -2.0])
    assert seen == [[1.0, 1.0]]
    handle.remove()
    # autograd.grad with respect to an output of the Function does not run its backward
    (g_square,) = ng.autograd.grad((square * 3).sum(), square)
    np.testing.assert_array_equal(_np(g_square), [3.0, 3.0])
    double.retain_grad()
    (double * 2).sum().backward()
    np.testing.assert_array_equal(_np(double.grad), [2.0, 2.0])
    np.testing.assert_array_equal(_np(x.grad), [4.0, 4.0])
    assert len(calls) == 2


def make_exp_and_double(m):
    """(exp(x), 2x), saving its first output: backward uses it, so double backward runs
    through that output's node."""

    class ExpAndDouble(m.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            e = x.exp()
            ctx.save_for_backward(e)
            return e, x * 2

        @staticmethod
        def backward(ctx, grad_e, grad_double):
            (e,) = ctx.saved_tensors
            return grad_e * e + 2 * grad_double

    return ExpAndDouble


def test_several_outputs_twice_differentiable_match_torch():
    def program(m):
        x = _leaf(m, [0.1, -0.3, 0.7])
        e, d = make_exp_and_double(m).apply(x)
        (g,) = m.autograd.grad((e * e).sum() + (d * e).sum(), x, create_graph=True)
        (gg,) = m.autograd.grad(g.sum(), x)
        return _np(g), _np(gg)

    (g, gg), (tg, tgg) = _both(program)
    np.testing.assert_allclose(g, tg, rtol=1e-12)
    np.testing.assert_allclose(gg, tgg, rtol=1e-12)
    x = ng.tensor(np.array([0.1, -0.3, 0.7]), requires_grad=True)
    ExpAndDouble = make_exp_and_double(ng)
    assert ng.autograd.gradcheck(ExpAndDouble.apply, (x,))
    assert ng.autograd.gradgradcheck(ExpAndDouble.apply, (x,))


def test_non_differentiable_outputs_match_torch():
    def program(m):
        seen = []

        class SortedWithIndex(m.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                index = x.argmax()
                ctx.mark_non_differentiable(index)
                return x * 2, index

            @staticmethod
            def backward(ctx, grad, grad_index):
                seen.append((_np(grad_index).tolist(), str(grad_index.dtype).split(".")[-1]))
                return grad * 2

        x = _leaf(m, [1.0, 3.0, 2.0])
        doubled, index = SortedWithIndex.apply(x)
        doubled.sum().backward()
        return seen, index.requires_grad, index.grad_fn, index.item(), _np(x.grad)

    ours, theirs = _both(program)
    assert ours[:4] == theirs[:4] == ([(0.0, "int64")], False, None, 1)
    np.testing.assert_array_equal(ours[4], theirs[4])


def test_returning_an_input_gives_a_new_tensor():
    def program(m):
        class Identity(m.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x

            @staticmethod
            def backward(ctx, grad):
                return grad * 3

        x = _leaf(m, [1.0, 2.0])
        y = Identity.apply(x)
        y.sum().backward()
        return y is x, x.is_leaf, x.grad_fn, _np(y), _np(x.grad), y.grad_fn.name()

    ours, theirs = _both(program)
    assert ours[:3] == theirs[:3] == (False, True, None)
    np.testing.assert_array_equal(ours[3], theirs[3])
    np.testing.assert_array_equal(ours[3], [1.0, 2.0])
    np.testing.assert_array_equal(ours[4], [3.0, 3.0])
    assert ours[5] == theirs[5] == "IdentityBackward"


# --------------------------------------------------------------------------- errors, as torch's
def _bad_function(m, forward_args, grads):
    class Bad(m.autograd.Function):
        @staticmethod
        def forward(ctx, *args):
            return args[0] * 2

        @staticmethod
        def backward(ctx, grad):
            return grads(m, grad)

    x = _leaf(m, [1.0, 2.0])
    return lambda: Bad.apply(x, *forward_args).sum().backward()


@pytest.mark.parametrize("forward_args, grads, message", [
    ((2.0,), lambda m, g: (g,), "returned an incorrect number of gradients (expected 2, got 1)"),
    ((), lambda m, g: (g, g), "returned an incorrect number of gradients (expected 1, got 2)"),
    ((2.0,), lambda m, g: (g, g), "returned a gradient different than None at position 2, but "
                                  "the corresponding forward input was not a Variable"),
    ((), lambda m, g: 3.0, "expected Variable or None (got float)"),
    ((), lambda m, g: m.ones(3, dtype=m.float64),
     "returned an invalid gradient at index 0 - got [3] but expected shape compatible with [2]"),
], ids=["too-few", "too-many", "non-tensor-input", "not-a-tensor", "bad-shape"])
def test_bad_gradients_raise_torchs_errors(forward_args, grads, message):
    ours = _error(_bad_function(ng, forward_args, grads))
    theirs = _error(_bad_function(torch, forward_args, grads))
    assert ours == theirs
    assert ours[0] is RuntimeError and message in ours[1]


def test_extra_none_gradients_are_dropped_and_broadcast_gradients_summed():
    def program(m):
        class Broadcast(m.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, grad):
                return m.ones(3, 2, dtype=m.float32), None, None

        x = _leaf(m, [1.0, 2.0])
        Broadcast.apply(x).sum().backward()
        return _np(x.grad), str(x.grad.dtype).split(".")[-1]

    ours, theirs = _both(program)
    np.testing.assert_array_equal(ours[0], theirs[0])
    np.testing.assert_array_equal(ours[0], [3.0, 3.0])
    assert ours[1] == theirs[1] == "float64"


def test_save_for_backward_rejects_non_tensors():
    def program(m):
        class SavesInt(m.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x, None, 3)
                return x * 2

        return _error(lambda: SavesInt.apply(_leaf(m, [1.0])))

    ours, theirs = _both(program)
    assert ours == theirs
    assert ours == (TypeError, "save_for_backward can only save variables, but argument 2 is of "
                               "type int")


def test_saved_tensors_are_version_checked():
    def program(m):
        x = _leaf(m, [1.0, 2.0])
        y = x * 1
        out = make_cube(m).apply(y)
        with m.no_grad():
            y.mul_(2)
        return _error(lambda: out.sum().backward()), x.grad

    (ours, grad), (theirs, tgrad) = _both(program)
    assert ours[0] is theirs[0] is RuntimeError
    for text in ("one of the variables needed for gradient computation has been modified by an "
                 "inplace operation", "is at version 1; expected version 0 instead"):
        assert text in ours[1] and text in theirs[1]
    assert grad is None and tgrad is None


def test_saved_tensors_are_freed_by_backward_unless_retained():
    def program(m):
        x = _leaf(m, [1.0, 2.0])
        out = make_cube(m).apply(x)
        out.sum().backward(retain_graph=True)
        saved_before = _np(out.grad_fn.saved_tensors[0])
        out.sum().backward()
        return (saved_before, _error(lambda: out.grad_fn.saved_tensors),
                _error(lambda: out.sum().backward()), _np(x.grad))

    ours, theirs = _both(program)
    np.testing.assert_array_equal(ours[0], theirs[0])
    assert ours[1] == theirs[1] and ours[2] == theirs[2]
    assert ours[1][0] is RuntimeError
    assert "Trying to backward through the graph a second time" in ours[1][1]
    np.testing.assert_array_equal(ours[3], theirs[3])


def test_a_failing_backward_writes_no_grad():
    """w's gradient is computed before the Function fails, but never written."""

    class Explodes(ng.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            return t * 1

        @staticmethod
        def backward(ctx, grad):
            raise ValueError("boom")

    x = _leaf(ng, [1.0, 2.0])
    w = _leaf(ng, [3.0, 4.0])
    z = Explodes.apply((w * 2).sum() + make_split(ng, []).apply(x)[0].sum())
    with pytest.raises(ValueError, match="boom"):
        (z + w.sum()).backward()
    assert x.grad is None and w.grad is None


# --------------------------------------------------------------------------- hooks
def test_hooks_and_retain_grad_on_outputs_match_torch():
    def program(m):
        x = _leaf(m, [1.0, 2.0])
        y = make_exp(m).apply(x, 1.0)
        seen = []
        y.register_hook(lambda g: seen.append(_np(g).tolist()) or g * 2)
        y.retain_grad()
        (y * 3).sum().backward()
        return seen, _np(y.grad), _np(x.grad)

    ours, theirs = _both(program)
    assert ours[0] == theirs[0] == [[3.0, 3.0]]
    np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-12)
    np.testing.assert_allclose(ours[2], theirs[2], rtol=1e-12)


# --------------------------------------------------------------------------- graph lifetime
def test_graphs_of_functions_die_by_reference_counting():
    gc.collect()
    gc.disable()
    try:
        x = _leaf(ng, [1.0, 2.0])
        y = make_exp(ng).apply(x, 1.0)  # saves its own output
        a, b, _ = make_split(ng, []).apply(y)
        nodes = [weakref.ref(y.grad_fn), weakref.ref(a.grad_fn),
                 weakref.ref(a.grad_fn.next_functions[0][0])]
        del y, a, b
        assert all(r() is None for r in nodes)
    finally:
        gc.enable()


# --------------------------------------------------------------------------- Numba kernels
@numba.njit
def _softplus_kernel(x, out):
    for i in range(x.size):
        v = x[i]
        out[i] = v + np.log1p(np.exp(-v)) if v > 0 else np.log1p(np.exp(v))


@numba.njit
def _softplus_backward_kernel(x, grad, out):
    for i in range(x.size):
        out[i] = grad[i] / (1.0 + np.exp(-x[i]))


class NumbaSoftplus(ng.autograd.Function):
    """softplus with forward and backward as the user's own njit kernels on NumPy arrays."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        data = np.ascontiguousarray(x.detach().numpy()).reshape(-1)
        out = np.empty_like(data)
        _softplus_kernel(data, out)
        return ng.from_numpy(out.reshape(x.shape))

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        data = np.ascontiguousarray(x.detach().numpy()).reshape(-1)
        g = np.ascontiguousarray(grad.detach().numpy()).reshape(-1)
        out = np.empty_like(data)
        _softplus_backward_kernel(data, g, out)
        return ng.from_numpy(out.reshape(x.shape))


def test_a_function_running_numba_kernels_matches_torch_softplus():
    values = np.array([[-30.0, -1.5, 0.0], [0.25, 2.0, 40.0]])
    x = ng.tensor(values, requires_grad=True)
    tx = torch.tensor(values, requires_grad=True)
    y = NumbaSoftplus.apply(x)
    ty = torch.nn.functional.softplus(tx)
    assert y.grad_fn.name() == "NumbaSoftplusBackward"
    np.testing.assert_allclose(_np(y), _np(ty), rtol=1e-12, atol=1e-300)
    seed = np.arange(6.0).reshape(2, 3)
    y.backward(ng.tensor(seed))
    ty.backward(torch.tensor(seed))
    np.testing.assert_allclose(_np(x.grad), _np(tx.grad), rtol=1e-12)
    xs = ng.tensor(np.linspace(-3, 3, 7), requires_grad=True)
    assert ng.autograd.gradcheck(NumbaSoftplus.apply, (xs,))


def test_a_complex_output_of_a_function_is_differentiable_as_pytorchs():
    # (only floating-point outputs got requires_grad: a custom Function's complex output, and a
    # compiled function's complex output from its second call on, came back without a graph)
    results = []
    for m in (ng, torch):
        class Rotate(m.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x.to(m.complex64) * 1j

            @staticmethod
            def backward(ctx, g):
                return (g * -1j).real

        x = m.tensor([1.0, -2.0, 0.5], requires_grad=True)
        y = Rotate.apply(x)
        assert y.requires_grad and y.grad_fn is not None
        (y * m.tensor([1 + 2j, 3j, -1.0])).real.sum().backward()
        results.append(x.grad.tolist())
    assert results[0] == results[1]
    x = ng.randn(4, 6, requires_grad=True)
    compiled = ng.compile(lambda x: ng.fft.rfft(x * 2))
    for _ in range(3):
        y = compiled(x)
        assert y.requires_grad and y.grad_fn is not None
        assert ng.autograd.grad(y.abs().sum(), x)[0].tolist() == ng.autograd.grad(
            ng.fft.rfft(x * 2).abs().sum(), x)[0].tolist()
