"""autograd internals people print and hook, against PyTorch 2.13 (issue 31):
``grad_fn._saved_<name>`` and ``_raw_saved_<name>`` with ``register_hooks``, ``autograd.graph.saved_tensors_hooks``,
``save_on_cpu`` and ``disable_saved_tensors_hooks``, ``autograd.graph.Node`` (``name()``,
``next_functions``, ``metadata``, ``register_hook``, ``register_prehook``) and
``Tensor.register_post_accumulate_grad_hook``."""
import numpy as np
import pytest
import torch

import numgrad

RNG = np.random.default_rng(31)
X = RNG.standard_normal((4, 3))
W = RNG.standard_normal((3, 2))
V = RNG.standard_normal(3)


def _both(fn):
    return fn(numgrad), fn(torch)


def _np(t):
    return np.asarray(t.detach().numpy())


def _close(a, b):
    np.testing.assert_allclose(_np(a), _np(b), rtol=1e-12, atol=1e-14)


def _error(fn, m):
    try:
        fn(m)
    except Exception as e:  # noqa: BLE001
        return type(e).__name__, str(e).replace("numgrad", "torch")
    return None


def _same_error(fn):
    a, b = _error(fn, numgrad), _error(fn, torch)
    assert a is not None and a == b, (a, b)


def _saved_names(node):
    return sorted(a for a in dir(node) if a.startswith(("_saved_", "_raw_saved_")))


# ----------------------------------------------------------------- _saved_<name>

@pytest.mark.parametrize("case", [
    "mul", "mul_scalar", "div", "mm", "pow_scalar", "pow_tensor", "exp", "tanh", "sigmoid",
    "relu", "sum_dim", "softmax", "sin", "addmm", "log", "addmm_one", "mm_one", "dot",
    "sum_all", "mean_all", "mean_dim", "view", "expand", "transpose", "permute", "cat", "squeeze",
    "add", "sub", "mse", "gelu", "gelu_tanh", "leaky_relu", "clamp",
])
def test_saved_values_have_pytorch_names(case):
    def run(m):
        x = m.tensor(X, requires_grad=True)
        w = m.tensor(W, requires_grad=True)
        y = {
            "mul": lambda: x * m.tensor(X),
            "mul_scalar": lambda: x * 2.5,
            "div": lambda: x / (m.tensor(X) + 5),
            "mm": lambda: x.mm(w),
            "pow_scalar": lambda: x.pow(3),
            "pow_tensor": lambda: (x + 5).pow(m.tensor(X, requires_grad=True)),
            "exp": lambda: x.exp(),
            "tanh": lambda: x.tanh(),
            "sigmoid": lambda: x.sigmoid(),
            "relu": lambda: x.relu(),
            "sum_dim": lambda: x.sum(1),
            "softmax": lambda: x.softmax(1),
            "sin": lambda: x.sin(),
            "addmm": lambda: m.addmm(m.tensor(W[0]), x, w),
            "addmm_one": lambda: m.addmm(m.tensor(W[0]), x, m.tensor(W)),
            "mm_one": lambda: m.tensor(X).mm(w),
            "dot": lambda: x[0].dot(m.tensor(V)),
            "sum_all": lambda: x.sum(),
            "mean_all": lambda: x.mean(),
            "mean_dim": lambda: x.mean(0),
            "view": lambda: x.view(12),
            "expand": lambda: x[:, :1].expand(4, 3),
            "transpose": lambda: x.transpose(0, 1),
            "permute": lambda: x.permute(1, 0),
            "cat": lambda: m.cat([x, x], 1),
            "squeeze": lambda: x.unsqueeze(0).squeeze(0),
            "add": lambda: x + x,
            "sub": lambda: x - 1,
            "mse": lambda: m.nn.functional.mse_loss(x, m.tensor(X)),
            "gelu": lambda: m.nn.functional.gelu(x),
            "gelu_tanh": lambda: m.nn.functional.gelu(x, approximate="tanh"),
            "leaky_relu": lambda: m.nn.functional.leaky_relu(x, 0.2),
            "clamp": lambda: x.clamp(-0.5, 0.5),

            "log": lambda: (x * x + 1).log(),
        }[case]()
        fn = y.grad_fn
        names = [a for a in _saved_names(fn) if not a.endswith("_sym_strides")]
        values = {}
        for a in names:
            if a.startswith("_raw_"):
                continue
            v = getattr(fn, a)
            values[a] = _np(v) if isinstance(v, (m.Tensor,)) else v
        return fn.name(), names, values, y
    (n1, names1, v1, y1), (n2, names2, v2, y2) = _both(run)
    assert n1 == n2
    assert names1 == names2
    for k in v2:
        if isinstance(v2[k], np.ndarray):
            np.testing.assert_allclose(v1[k], v2[k], rtol=1e-12)
            assert v1[k].dtype == v2[k].dtype, k
        else:
            assert tuple(v1[k]) == tuple(v2[k]) if isinstance(v2[k], (tuple, list)) else \
                v1[k] == v2[k], k


def test_saved_parameters_as_pytorch_shows_them():
    """Index arrays as tensors, the reduction as PyTorch's enum value, a convolution's fixed
    arguments (where numgrad keeps the other saved values differently, the names it has)."""
    def run(m):
        x = m.tensor(X, requires_grad=True)
        t = m.tensor([0, 2, 1, 1])
        nll = m.nn.functional.nll_loss(x.log_softmax(1), t, reduction="sum").grad_fn
        g = x.gather(1, t.view(4, 1)).grad_fn
        c = m.nn.functional.conv2d(x.view(1, 1, 4, 3), m.tensor(X[:2]).view(1, 1, 2, 3),
                                   padding=(1, 2), stride=(2, 1)).grad_fn
        return (nll._saved_reduction, _np(nll._saved_target).tolist(), nll._saved_ignore_index,
                nll._saved_weight, g._saved_dim, _np(g._saved_index).tolist(),
                g._saved_sparse_grad, c._saved_transposed, c._saved_output_padding,
                c._saved_stride, c._saved_padding, c._saved_dilation, c._saved_groups,
                tuple(c._saved_weight.shape), x.mean().grad_fn._saved_self_sym_numel)
    a, b = _both(run)
    # (PyTorch shows ignore_index=-100 through an unsigned int64: 2**64 - 100, as numgrad does)
    assert b[2] == 2 ** 64 - 100
    assert a == b


def test_saved_input_is_the_tensor_and_saved_output_a_new_one():
    def run(m):
        x = m.tensor(X, requires_grad=True)
        w = m.tensor(W)
        y = x.mm(w)
        e = x.exp()
        return (y.grad_fn._saved_mat2 is w, y.grad_fn._saved_self is None,
                e.grad_fn._saved_result is e, e.grad_fn._saved_result.equal(e),
                e.grad_fn._saved_result.grad_fn is e.grad_fn, x.sum(0).grad_fn._saved_self_sym_sizes)
    a, b = _both(run)
    assert a == b == (True, True, False, True, True, (4, 3))


def test_saved_after_backward_and_unknown_names():
    def freed(m):
        x = m.tensor(X, requires_grad=True)
        y = x * m.tensor(X)
        y.sum().backward()
        return y.grad_fn._saved_other

    def freed_raw(m):
        x = m.tensor(X, requires_grad=True)
        y = x.exp()
        y.sum().backward()
        return y.grad_fn._raw_saved_result  # (given after backward; its hooks refused)

    def unknown(m):
        return (m.tensor(X, requires_grad=True) * 2).grad_fn._saved_bogus

    def freed_raw_hooks(m):
        freed_raw(m).register_hooks(lambda t: t, lambda t: t)

    for fn in (freed, freed_raw_hooks, unknown):
        _same_error(fn)

    def retained(m):
        x = m.tensor(X, requires_grad=True)
        y = x * m.tensor(X)
        y.sum().backward(retain_graph=True)
        return _np(y.grad_fn._saved_other)
    a, b = _both(retained)
    np.testing.assert_array_equal(a, b)


# ----------------------------------------------------------------- _raw_saved_<name>

def test_raw_saved_register_hooks_packs_now_and_unpacks_in_backward():
    def run(m):
        log = []
        x = m.tensor(X, requires_grad=True)
        w = m.tensor(W, requires_grad=True)
        y = x.mm(w)
        raw = y.grad_fn._raw_saved_self
        raw.register_hooks(lambda t: (log.append(("pack", m.is_grad_enabled())), t * 2)[1],
                           lambda t: (log.append("unpack"), t / 2)[1])
        log.append("forward done")
        y.sum().backward()
        return log, w.grad, x.grad
    (l1, gw1, gx1), (l2, gw2, gx2) = _both(run)
    assert l1 == l2 == [("pack", False), "forward done", "unpack"]
    _close(gw1, gw2)
    _close(gx1, gx2)


def test_custom_function_raw_saved_tensors():
    def run(m):
        class Twice(m.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * 2

            @staticmethod
            def backward(ctx, g):
                (x,) = ctx.saved_tensors
                return g * x

        log = []
        x = m.tensor(V, requires_grad=True)
        y = Twice.apply(x)
        raw = y.grad_fn._raw_saved_tensors
        raw[0].register_hooks(lambda t: (log.append("pack"), t * 3)[1],
                              lambda t: (log.append("unpack"), t / 3)[1])
        y.sum().backward()
        return type(raw).__name__, len(raw), log, x.grad
    (t1, n1, l1, g1), (t2, n2, l2, g2) = _both(run)
    assert (t1, n1, l1) == (t2, n2, l2)
    _close(g1, g2)


def test_raw_saved_register_hooks_errors():
    def none_value(m):
        x = m.tensor(X, requires_grad=True)
        (x * m.tensor(X)).grad_fn._raw_saved_self.register_hooks(lambda t: t, lambda t: t)

    def twice(m):
        x = m.tensor(X, requires_grad=True)
        o = m.tensor(X)
        y = x * o
        raw = y.grad_fn._raw_saved_other
        raw.register_hooks(lambda t: t, lambda t: t)
        raw.register_hooks(lambda t: t, lambda t: t)

    def unpack_not_tensor(m):
        x = m.tensor(X, requires_grad=True)
        y = x.sin()
        y.grad_fn._raw_saved_self.register_hooks(lambda t: t, lambda t: 3)
        y.sum().backward()

    for fn in (none_value, twice, unpack_not_tensor):
        _same_error(fn)


# ----------------------------------------------------------------- saved_tensors_hooks

def _mlp(m, hooks=None):
    x = m.tensor(X, requires_grad=True)
    w = m.tensor(W, requires_grad=True)
    v = m.tensor(V[:2], requires_grad=True)
    log = []

    def pack(t):
        log.append(("pack", tuple(t.shape), m.is_grad_enabled()))
        return t.detach().clone()

    def unpack(t):
        log.append(("unpack", tuple(t.shape)))
        return t

    if hooks == "log":
        ctx = m.autograd.graph.saved_tensors_hooks(pack, unpack)
    elif hooks == "cpu":
        ctx = m.autograd.graph.save_on_cpu()
    else:
        import contextlib
        ctx = contextlib.nullcontext()
    with ctx:
        h = (x @ w).tanh()
        y = ((h * v).sigmoid() * h).sum()
    y.backward()
    return log, x.grad, w.grad, v.grad


@pytest.mark.parametrize("hooks", ["log", "cpu"])
def test_saved_tensors_hooks_give_pytorch_gradients(hooks):
    (l1, *g1), (l2, *g2) = _both(lambda m: _mlp(m, hooks))
    (_, *plain), _ = _both(lambda m: _mlp(m, None))
    for a, b, c in zip(g1, g2, plain):
        _close(a, b)
        _close(a, c)
    # each saved tensor packed once, with grad mode off, and unpacked once (the order of the
    # two of mm aside: PyTorch saves mat2 first)
    assert sorted(l1) == sorted(l2)
    assert len(l1) == len(l2)


def test_saved_tensors_hooks_pack_in_pytorchs_order():
    """PyTorch's nodes save their inputs by name, alphabetically, then the result; and pack
    nothing they do not keep (mm's self when only self requires grad)."""
    def run(m):
        a = m.tensor(np.ones((2, 3)), requires_grad=True)
        b = m.tensor(np.full((3, 4), 2.0), requires_grad=True)
        c = m.tensor(np.full((2, 3), 3.0), requires_grad=True)
        v = m.tensor(np.full(3, 4.0), requires_grad=True)
        ba = m.tensor(np.full((2, 2, 3), 5.0), requires_grad=True)
        bb = m.tensor(np.full((2, 3, 4), 6.0), requires_grad=True)
        cases = [lambda: a * c, lambda: a / c, lambda: a.mm(b), lambda: a.mm(b.detach()),
                 lambda: a.detach().mm(b), lambda: m.addmm(m.ones(4, dtype=m.float64), a, b),
                 lambda: ba.bmm(bb), lambda: a.mv(v), lambda: v.dot(v * 2), lambda: a.pow(c),
                 lambda: a.atan2(c), lambda: ba @ bb, lambda: m.maximum(a, c),
                 lambda: m.addcmul(a, c, a * 2), lambda: m.lerp(a, c, a * 0.5),
                 lambda: m.nn.functional.linear(a, b.t()), lambda: a.exp(), lambda: a.sin()]
        logs = []
        for f in cases:
            log = []
            with m.autograd.graph.saved_tensors_hooks(
                    lambda t: (log.append(round(float(t.detach().reshape(-1)[0]), 9)), t)[1],
                    lambda t: t):
                f()
            logs.append(log)
        return logs
    a, b = _both(run)
    assert a == b


def test_saved_tensors_hooks_nest_and_apply_to_custom_functions():
    def run(m):
        class Square(m.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * x

            @staticmethod
            def backward(ctx, g):
                (x,) = ctx.saved_tensors
                return 2 * x * g

        log = []
        x = m.tensor(V, requires_grad=True)
        with m.autograd.graph.saved_tensors_hooks(lambda t: (log.append("outer"), t)[1],
                                                   lambda t: t):
            a = x.sin()
            with m.autograd.graph.saved_tensors_hooks(lambda t: (log.append("inner"), t)[1],
                                                       lambda t: t):
                b = Square.apply(a)
            c = b.cos()
        c.sum().backward()
        return log, x.grad
    (l1, g1), (l2, g2) = _both(run)
    assert l1 == l2 == ["outer", "inner", "outer"]
    _close(g1, g2)


def test_saved_tensors_hooks_errors():
    def modifies(m):
        x = m.tensor(V, requires_grad=True)
        with m.autograd.graph.saved_tensors_hooks(lambda t: t.add_(1), lambda t: t):
            x * m.tensor(V)

    def bad_unpack(m):
        x = m.tensor(V, requires_grad=True)
        with m.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: "no"):
            y = x.sin()
        y.sum().backward()

    def disabled(m):
        with m.autograd.graph.disable_saved_tensors_hooks("hooks are off here"):
            with m.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
                pass

    def disabled_inside(m):
        x = m.tensor(V, requires_grad=True)
        with m.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
            with m.autograd.graph.disable_saved_tensors_hooks("not here"):
                x.sin()

    for fn in (modifies, bad_unpack, disabled, disabled_inside):
        _same_error(fn)


def test_no_version_check_through_hooks():
    def run(m):
        a = m.tensor(V, requires_grad=True)
        b = a * 1
        with m.autograd.graph.saved_tensors_hooks(lambda t: t.clone(), lambda t: t):
            c = b.sin()
        with m.no_grad():
            b.add_(1)
        c.sum().backward()
        return a.grad
    _close(*_both(run))


def test_hooks_closed_restore_the_fast_path():
    from numgrad.autograd import node
    from numgrad.ops import registry

    before = registry.closed
    with numgrad.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
        assert registry.closed == before + 1
        assert node._packing is numgrad.autograd.graph.pack_all
        with numgrad.autograd.graph.save_on_cpu():
            assert registry.closed == before + 2
    assert registry.closed == before
    assert node._packing is None
    x = numgrad.tensor(V, requires_grad=True)
    y = x * 2.0
    assert type(y.grad_fn._saved[1]) is float  # (the lane's node again: nothing packed)


def test_leaf_saved_through_hooks_accumulates_into_the_leaf_with_create_graph():
    def run(m):
        x = m.tensor(V, requires_grad=True)
        with m.autograd.graph.saved_tensors_hooks(lambda t: t * 1, lambda t: t):
            y = (x * x * x).sum()
        (g,) = m.autograd.grad(y, x, create_graph=True)
        g.sum().backward()
        return g, x.grad
    (g1, h1), (g2, h2) = _both(run)
    _close(g1, g2)
    _close(h1, h2)


# ----------------------------------------------------------------- graph.Node

def test_node_abc_and_its_methods():
    def run(m):
        a = m.tensor(V, requires_grad=True)
        y = a * 2
        fn = y.grad_fn
        acc = fn.next_functions[0][0]
        fn.metadata["k"] = 1

        class F(m.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x.clone()

            @staticmethod
            def backward(ctx, g):
                return g

        z = F.apply(a)
        return (isinstance(fn, m.autograd.graph.Node), isinstance(acc, m.autograd.graph.Node),
                isinstance(z.grad_fn, m.autograd.graph.Node),
                isinstance(a, m.autograd.graph.Node), fn.name(), fn.metadata,
                acc.metadata, fn.next_functions[1], issubclass(type(fn), m.autograd.graph.Node))
    a, b = _both(run)
    assert a == b


def test_node_prehook_and_hook():
    def run(m):
        a = m.tensor(V[:2], requires_grad=True)
        b = m.tensor(V[1:], requires_grad=True)
        z = a * b
        log = []

        def post(gi, go):
            log.append(("post", len(gi), len(go)))
            return (gi[0] * 10, gi[1])

        def pre(go):
            log.append(("pre", len(go)))
            return (go[0] * 2,)

        z.grad_fn.register_hook(post)
        h = z.grad_fn.register_prehook(pre)
        z.sum().backward(retain_graph=True)
        first = (a.grad.clone(), b.grad.clone())
        h.remove()
        a.grad = b.grad = None
        z.sum().backward()
        acc = (a * 2).grad_fn.next_functions[0][0]
        seen = []
        acc.register_prehook(lambda go: seen.append(("accpre", _np(go[0]).tolist())))
        acc.register_hook(lambda gi, go: seen.append(("accpost", gi, _np(go[0]).tolist())))
        a.grad = None
        (a * 2).sum().backward()
        w = a * 2
        w.grad_fn.register_hook(lambda gi, go: seen.append(("none", gi[1] is None)))
        w.sum().backward()
        return log, first, (a.grad, b.grad), seen
    (l1, f1, s1, e1), (l2, f2, s2, e2) = _both(run)
    assert l1 == l2
    for x, y in zip(f1 + s1, f2 + s2):
        _close(x, y)
    assert e1 == e2


def test_leaf_node_hooks_see_the_new_grad_and_do_not_run_in_autograd_grad():
    def run(m):
        a = m.tensor(V[:2], requires_grad=True)
        acc = (a * 2).grad_fn.next_functions[0][0]
        seen = []
        acc.register_hook(lambda gi, go: seen.append(("post", _np(a.grad).tolist())))
        acc.register_prehook(lambda go: seen.append(("pre", a.grad is None)))
        a.register_hook(lambda g: seen.append(("tensor hook", _np(g).tolist())))
        (a * 2).sum().backward()
        m.autograd.grad((a * 3).sum(), a)
        return seen
    a, b = _both(run)
    assert a == b


def test_node_hook_errors():
    def post_count(m):
        a = m.tensor(V, requires_grad=True)
        w = a * 2
        w.grad_fn.register_hook(lambda gi, go: (gi[0],) * 3)
        w.sum().backward()

    def pre_count(m):
        a = m.tensor(V, requires_grad=True)
        w = a * 2
        w.grad_fn.register_prehook(lambda go: (go[0],) * 3)
        w.sum().backward()

    for fn in (post_count, pre_count):
        _same_error(fn)


# ----------------------------------------------------------------- post-accumulate-grad hooks

def test_post_accumulate_grad_hook():
    def run(m):
        x = m.tensor(V, requires_grad=True)
        seen = []
        h = x.register_post_accumulate_grad_hook(
            lambda p: seen.append((p is x, _np(p.grad).tolist())))
        (x * 3).sum().backward()
        (x * 2).sum().backward()
        m.autograd.grad((x * 3).sum(), x)  # accumulates nothing: no call
        (x * 3).sum().backward(inputs=[x])
        h.remove()
        (x * 3).sum().backward()
        return seen, x.grad
    (s1, g1), (s2, g2) = _both(run)
    assert s1 == s2
    _close(g1, g2)


def test_post_accumulate_grad_hook_errors():
    _same_error(lambda m: m.tensor(V).register_post_accumulate_grad_hook(lambda p: None))
    _same_error(lambda m: (m.tensor(V, requires_grad=True) * 2)
                .register_post_accumulate_grad_hook(lambda p: None))


def test_post_accumulate_grad_hook_steps_an_optimizer_in_backward():
    def run(m):
        m.manual_seed(0)
        w = m.tensor(W, requires_grad=True)
        opt = m.optim.SGD([w], lr=0.1)

        def step(p):
            opt.step()
            opt.zero_grad()
        w.register_post_accumulate_grad_hook(step)
        for _ in range(3):
            (m.tensor(X) @ w).pow(2).sum().backward()
        return w
    _close(*_both(run))


def test_hooked_and_checkpointed_graphs_die_by_reference_counting():
    import gc
    import weakref

    was = gc.isenabled()
    gc.disable()
    try:
        x = numgrad.tensor(X, requires_grad=True)
        w = numgrad.tensor(np.eye(3), requires_grad=True)
        y = numgrad.utils.checkpoint.checkpoint(lambda t: (t @ w).tanh() @ w, x * 2,
                                                use_reentrant=False)
        ref = weakref.ref(y.grad_fn)
        y.sum().backward()
        del y
        assert ref() is None
        with numgrad.autograd.graph.saved_tensors_hooks(lambda t: t.clone(), lambda t: t):
            y = (x.exp() * x).sum()
        ref = weakref.ref(y.grad_fn)
        del y
        assert ref() is None
    finally:
        if was:
            gc.enable()


def test_saved_tensors_hooks_are_per_thread():
    import threading

    from numgrad.autograd.node import Packed

    x = numgrad.tensor(V, requires_grad=True)
    seen = []

    def other():
        seen.append(type((x * numgrad.tensor(V)).grad_fn._saved[1].counter) is Packed)

    with numgrad.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
        thread = threading.Thread(target=other)
        thread.start()
        thread.join()
        seen.append(type((x * numgrad.tensor(V)).grad_fn._saved[1].counter) is Packed)
    assert seen == [False, True]
