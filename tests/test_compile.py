"""numgrad.compile: a traced function replays with eager's results and effects, in few Numba calls;
guards retrace where the call differs; what cannot be traced breaks clearly (fullgraph) or runs
eagerly with one warning."""
import math
import warnings

import numpy as np
import pytest

import numgrad
from numgrad.compiler import GraphBreak

# Kernel functions whose work is a Numba call (the others are NumPy views, fills, BLAS).
NUMBA_KERNELS = {"unary", "binary", "binary_into", "where", "sum_dims", "reduce_dims",
                 "arg_reduce_dims", "log_softmax_last", "log_softmax_backward_last",
                 "index_put"}


class _Counting:
    """The CPU kernel module, counting the calls of its Numba kernels."""

    def __init__(self, module, counts):
        self._module, self._counts = module, counts
        self.loss = module.loss

    def __getattr__(self, name):
        value = getattr(self._module, name)
        if name in NUMBA_KERNELS:
            def counted(*args, **kwargs):
                self._counts["numba"] += 1
                return value(*args, **kwargs)
            return counted
        if name == "matmul":
            def blas(*args, **kwargs):
                self._counts["blas"] += 1
                return value(*args, **kwargs)
            return blas
        return value


def dispatches(compiled, *args) -> dict:
    """Numba and BLAS calls of one replay of ``compiled`` (warmed up), and op-registry calls."""
    from numgrad.ops import registry

    (guard, replay), = [e for e in compiled._entries if guard_holds(e, args)]
    counts = {"numba": 0, "blas": 0, "registry": 0}
    namespace = replay.__globals__
    real_kernels, real_apply = namespace["K"], registry.apply
    namespace["K"] = _Counting(real_kernels, counts)
    segments = {k: v for k, v in namespace.items() if k.startswith("SEG")}
    for k, v in segments.items():
        namespace[k] = _segment_counter(v, counts)
    programs = {k: v for k, v in namespace.items() if k.startswith("PROG")}
    for k, v in programs.items():  # (a whole replay in one Numba call: its GEMMs counted apart)
        namespace[k] = _segment_counter(v, counts, _gemm_calls(v))
    segments.update(programs)

    def apply(*a, **k):
        counts["registry"] += 1
        return real_apply(*a, **k)

    registry.apply = apply
    try:
        compiled(*args)
    finally:
        namespace["K"] = real_kernels
        namespace.update(segments)
        registry.apply = real_apply
    return counts


def guard_holds(entry, args) -> bool:
    return entry[0](args, {})


def _segment_counter(segment, counts, gemms=0):
    def counted(*args):
        counts["numba"] += 1
        counts["blas"] += gemms
        return segment(*args)
    return counted


def _gemm_calls(program) -> int:
    """The GEMM calls in a whole-replay program's source (``compiler/whole.py``)."""
    import inspect
    import sys

    from numgrad.kernels.cpu import blas

    module = sys.modules[program.py_func.__module__]
    names = [n for n, f in vars(module).items() if f is blas.sgemm or f is blas.dgemm]
    source = inspect.getsource(program.py_func)
    return sum(source.count(f"{n}(") for n in names)


def seed():
    x = numgrad.ones(2, 2, requires_grad=True)
    y = x + 2
    out = (y * y * 3).mean()
    out.backward()
    return x.grad


def test_the_seed_walkthrough_replays_as_one_numba_call():
    compiled = numgrad.compile(seed)
    results = [compiled() for _ in range(3)]
    assert compiled.traces == 1
    for r in results:
        np.testing.assert_array_equal(r.numpy(), seed().numpy())
        assert r.dtype is numgrad.float32 and not r.requires_grad
    assert dispatches(compiled) == {"numba": 1, "blas": 0, "registry": 0}


def test_decorator_forms_and_module_compile():
    @numgrad.compile
    def f(x):
        return (x * 2).sum()

    @numgrad.compile(fullgraph=True)
    def g(x):
        return (x * 3).sum()

    x = numgrad.arange(6.0)
    assert f(x).item() == 30.0 and f(x).item() == 30.0 and g(x).item() == 45.0
    assert numgrad.compile(f, disable=True) is f
    model = numgrad.nn.Linear(3, 2)
    with numgrad.no_grad():
        want = model(numgrad.ones(4, 3))
        model.compile()
        got = [model(numgrad.ones(4, 3)) for _ in range(3)]
    for r in got:
        np.testing.assert_array_equal(r.numpy(), want.numpy())


def _chain(x):
    def run():
        y = x
        for _ in range(200):
            y = y * 1.001 + 0.001
        y.sum().backward()
        grad, x.grad = x.grad, None
        return grad
    return run


def test_the_200_op_chain_replays_as_one_numba_call_with_eager_values():
    x = numgrad.tensor(np.linspace(-1, 1, 100), requires_grad=True)
    eager, compiled = _chain(x), numgrad.compile(_chain(x))
    for _ in range(3):
        np.testing.assert_array_equal(compiled().numpy(), eager().numpy())
    assert x.grad is None
    assert dispatches(compiled) == {"numba": 1, "blas": 0, "registry": 0}


def test_tanh_sigmoid_replays_in_two_numba_calls_at_most():
    x = numgrad.tensor(np.random.default_rng(0).standard_normal(5000).astype(np.float32),
                       requires_grad=True)

    def run():
        (numgrad.tanh(x * 1.5 + 0.5) * numgrad.sigmoid(x)).sum().backward()
        grad, x.grad = x.grad, None
        return grad

    compiled = numgrad.compile(run)
    for _ in range(3):
        np.testing.assert_array_equal(compiled().numpy(), run().numpy())
    counts = dispatches(compiled)
    assert counts["numba"] <= 2 and counts["registry"] == 0


def _mlp(seed=0, dtype=numgrad.float32, features=20, hidden=16):
    numgrad.manual_seed(seed)
    model = numgrad.nn.Sequential(numgrad.nn.Linear(features, hidden), numgrad.nn.ReLU(),
                                  numgrad.nn.Linear(hidden, 10)).to(dtype)
    return model


def test_an_mlp_step_with_sgd_replays_in_ten_numba_calls_at_most():
    rng = np.random.default_rng(1)
    x = numgrad.tensor(rng.standard_normal((8, 20)).astype(np.float32))
    target = numgrad.tensor(rng.integers(0, 10, 8))
    rows = numgrad.arange(8)
    states = []
    for compile_it in (False, True):
        model = _mlp()
        opt = numgrad.optim.SGD(model.parameters(), lr=0.01)

        def step():
            loss = -model(x).log_softmax(dim=1)[rows, target].mean()
            opt.zero_grad()
            loss.backward()
            opt.step()

        run = numgrad.compile(step) if compile_it else step
        for _ in range(4):
            run()
        states.append([p.detach().numpy().copy() for p in model.parameters()])
        if compile_it:
            counts = dispatches(run)
            assert counts["numba"] <= 10 and counts["blas"] == 5 and counts["registry"] == 0
            # the whole step is one Numba function (compiler/whole.py), its products inside
            assert counts["numba"] == 1, counts
    for a, b in zip(*states):
        np.testing.assert_array_equal(a, b)
    # a target out of range: eager's IndexError, and no parameter updated
    target[3] = 10
    before = [p.detach().numpy().copy() for p in model.parameters()]
    with pytest.raises(IndexError) as compiled_error:
        run()
    with pytest.raises(IndexError) as eager_error:
        step()
    assert str(compiled_error.value) == str(eager_error.value)
    for p, b in zip(model.parameters(), before):
        np.testing.assert_array_equal(p.detach().numpy(), b)


def test_a_whole_program_numba_cannot_compile_runs_its_steps_one_by_one():
    from numba.core.errors import TypingError

    rng = np.random.default_rng(2)
    x = numgrad.tensor(rng.standard_normal((8, 20)))
    models = [_mlp(dtype=numgrad.float64) for _ in range(2)]
    opts = [numgrad.optim.SGD(m.parameters(), lr=0.1) for m in models]

    def step(model, opt):
        def run():
            opt.zero_grad()
            model(x).square().mean().backward()
            opt.step()
        return run

    eager, compiled = step(models[0], opts[0]), numgrad.compile(step(models[1], opts[1]))
    for _ in range(3):
        eager(), compiled()
    namespace = compiled._entries[-1][1].__globals__
    (name,) = [k for k in namespace if k.startswith("PROG")]

    def fails(*args):
        raise TypingError("cannot type this")

    namespace[name] = fails
    for _ in range(2):
        eager(), compiled()
    (flag,) = [v for k, v in namespace.items() if k.startswith("WHOLE")]
    assert flag == [False]
    for a, b in zip(models[0].parameters(), models[1].parameters()):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())


@pytest.mark.parametrize("optimizer", ["adam", "sgd-momentum"])
def test_training_on_digits_compiled_equals_eager(optimizer):
    """50 steps of a digits MLP in float64: losses, final weights and optimizer state equal."""
    from sklearn.datasets import load_digits

    digits = load_digits()
    X = numgrad.tensor(digits.data[:640] / 16.0)
    y = numgrad.tensor(digits.target[:640])
    batches = [(X[i:i + 64], y[i:i + 64]) for i in range(0, 640, 64)]
    runs = []
    for compile_it in (False, True):
        model = _mlp(dtype=numgrad.float64, features=64, hidden=32)
        if optimizer == "adam":
            opt = numgrad.optim.Adam(model.parameters(), lr=1e-2)
        else:
            opt = numgrad.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        loss_fn = numgrad.nn.CrossEntropyLoss()

        def step(xb, yb):
            opt.zero_grad()
            loss = loss_fn(model(xb), yb)
            loss.backward()
            opt.step()
            return loss

        run = numgrad.compile(step) if compile_it else step
        losses = [run(*batches[i % len(batches)]).item() for i in range(50)]
        state = [v.numpy().copy() for s in opt.state.values() for v in s.values()]
        runs.append((losses, [p.detach().numpy().copy() for p in model.parameters()], state))
        if compile_it:
            assert run.traces == 2  # the first step makes the optimizer's state
            assert all(not hasattr(replay, "reason") for _, replay in run._entries)
    (l0, p0, s0), (l1, p1, s1) = runs
    np.testing.assert_allclose(l1, l0, rtol=0, atol=1e-10)
    for a, b in zip(p0 + s0, p1 + s1):
        np.testing.assert_allclose(b, a, rtol=0, atol=1e-10)


def _vjp_walkthrough(x):
    y = x * 2
    while y.data.norm() < 1000:
        y = y * 2
    y.backward(numgrad.tensor([0.1, 1.0, 0.0001]))
    return x.grad


def test_data_dependent_control_flow_breaks_clearly_or_reruns_its_python():
    x = numgrad.tensor([0.5, -0.3, 0.8], requires_grad=True)
    strict = numgrad.compile(_vjp_walkthrough, fullgraph=True)
    with pytest.raises(GraphBreak, match=r"bool\(\) of a tensor .*test_compile.py:\d+"):
        strict(x)
    x.grad = None
    want = _vjp_walkthrough(x).numpy().copy()
    x.grad = None
    lenient = numgrad.compile(_vjp_walkthrough)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (no warning: its Python runs at every call, re-run)
        for _ in range(3):
            x.grad = None
            np.testing.assert_array_equal(lenient(x).numpy(), want)
    assert "key 0: re-run" in numgrad.compiler.explain(lenient)
    assert "2 fused" in numgrad.compiler.explain(lenient)


def test_guards_retrace_for_new_shapes_dtypes_requires_grad_and_grad_mode():
    def f(x, w):
        out = (x @ w).tanh().sum()
        if out.requires_grad:
            out.backward()
        return out.detach(), None if w.grad is None else w.grad

    compiled = numgrad.compile(f)
    rng = np.random.default_rng(2)

    def check(x, w):
        w2 = numgrad.tensor(w.detach().numpy().copy(), requires_grad=w.requires_grad)
        want = f(x, w2)
        got = compiled(x, w)
        np.testing.assert_allclose(got[0].numpy(), want[0].numpy(), rtol=1e-12)
        if want[1] is None:
            assert got[1] is None
        else:
            np.testing.assert_allclose(got[1].numpy(), want[1].numpy(), rtol=1e-12)
        w.grad = None

    w = numgrad.tensor(rng.standard_normal((4, 3)), requires_grad=True)
    check(numgrad.tensor(rng.standard_normal((8, 4))), w)
    check(numgrad.tensor(rng.standard_normal((8, 4))), w)
    assert compiled.traces == 1
    check(numgrad.tensor(rng.standard_normal((5, 4))), w)  # a smaller last batch
    assert compiled.traces == 2
    check(numgrad.tensor(rng.standard_normal((8, 4)).astype(np.float32)),
          numgrad.tensor(rng.standard_normal((4, 3)).astype(np.float32), requires_grad=True))
    check(numgrad.tensor(rng.standard_normal((8, 4))), w.detach())  # requires_grad flipped
    with numgrad.no_grad():
        check(numgrad.tensor(rng.standard_normal((8, 4))), w)  # grad mode
    assert compiled.traces == 5


def test_python_values_it_reads_are_guarded():
    scale = {"value": 2.0}
    state = [3.0]

    def f(x, n):
        return x * n * state[0]

    compiled = numgrad.compile(f)
    x = numgrad.arange(4.0)
    assert compiled(x, 2).tolist() == [0.0, 6.0, 12.0, 18.0]
    assert compiled(x, 3).tolist() == [0.0, 9.0, 18.0, 27.0]  # another Python argument
    state[0] = 1.0  # a global list the function reads
    assert compiled(x, 3).tolist() == [0.0, 3.0, 6.0, 9.0]
    assert compiled.traces == 3 and scale


def test_submodules_settings_and_optimizer_hyperparameters_are_guarded():
    """A submodule switched to eval, a submodule's setting (BatchNorm's momentum), a learning
    rate or a new momentum buffer: the next call retraces, and equals eager."""
    rng = np.random.default_rng(3)
    x = numgrad.tensor(rng.standard_normal((6, 4)))
    models, opts = [], []
    for _ in range(2):
        numgrad.manual_seed(0)
        models.append(numgrad.nn.Sequential(numgrad.nn.Linear(4, 4), numgrad.nn.BatchNorm1d(4),
                                            numgrad.nn.Linear(4, 1)).double())
        opts.append(numgrad.optim.SGD(models[-1].parameters(), lr=0.1))

    def step(model, opt):
        def run():
            opt.zero_grad()
            loss = model(x).square().mean()
            loss.backward()
            opt.step()
            return loss.detach()
        return run

    eager, compiled = step(models[0], opts[0]), numgrad.compile(step(models[1], opts[1]))

    def both(change):
        for model, opt in zip(models, opts):
            change(model, opt)
        for _ in range(2):
            np.testing.assert_allclose(compiled().numpy(), eager().numpy(), rtol=1e-12)

    both(lambda model, opt: None)
    traces = compiled.traces
    both(lambda model, opt: model[1].eval())
    both(lambda model, opt: (model[1].train(), setattr(model[1], "momentum", 0.5)))
    both(lambda model, opt: opt.param_groups[0].update(lr=0.01))
    both(lambda model, opt: opt.param_groups[0].update(momentum=0.9))  # (a buffer next step)
    assert compiled.traces > traces + 3
    for a, b in zip(models[0].state_dict().values(), models[1].state_dict().values()):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12)
    for a, b in zip(models[0].parameters(), models[1].parameters()):
        np.testing.assert_allclose(opts[0].state[a]["momentum_buffer"].numpy(),
                                   opts[1].state[b]["momentum_buffer"].numpy(), rtol=1e-12)


@pytest.mark.parametrize("change", ["parameter replaced", "submodule replaced",
                                    "submodule appended", "hook registered"])
def test_a_changed_module_or_a_new_hook_retraces_and_equals_eager(change):
    x = numgrad.tensor(np.random.default_rng(4).standard_normal((5, 4)))
    models = []
    for _ in range(2):
        numgrad.manual_seed(0)
        models.append(numgrad.nn.Sequential(numgrad.nn.Linear(4, 3), numgrad.nn.Tanh(),
                                            numgrad.nn.Linear(3, 1)).double())

    def step(model):
        def run():
            model.zero_grad()
            model(x).sum().backward()
            return model[0].weight.grad
        return run

    eager, compiled = step(models[0]), numgrad.compile(step(models[1]))
    for _ in range(3):
        compiled(), eager()
    for model in models:
        if change == "parameter replaced":
            model[0].weight = numgrad.nn.Parameter(numgrad.ones(3, 4, dtype=numgrad.float64))
        elif change == "submodule replaced":
            model[1] = numgrad.nn.ReLU()
        elif change == "submodule appended":
            model.append(numgrad.nn.Tanh())
        else:
            model[0].weight.register_hook(lambda g: g * 10)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # (a hook: eagerly, with a warning)
        for _ in range(2):
            np.testing.assert_allclose(compiled().numpy(), eager().numpy(), rtol=1e-12)


_BATCH = numgrad.ones(3)


def _reads_the_global_batch():
    return (_BATCH * 2).sum()


def test_a_rebound_global_closure_variable_or_list_item_is_not_replayed():
    """The commonest training loop: the step reads the batch from a global (or a closure
    variable, or a list), rebound each iteration. Each new tensor must be read, not the one
    traced (found by the guard checking where each was found)."""
    global _BATCH
    compiled = numgrad.compile(_reads_the_global_batch)
    for value in (1.0, 2.0, 3.0, 4.0):
        _BATCH = numgrad.full((3,), value)
        assert compiled().item() == _reads_the_global_batch().item() == 6 * value
    assert compiled.traces == 1  # (one layout: one trace, the batch read where it is now)

    batch = [numgrad.ones(3)]

    def closure():
        return (batch[0] * 2).sum() + (holder[0] * 1).sum()

    holder = [numgrad.zeros(3)]
    compiled = numgrad.compile(closure)
    for value in (1.0, 2.0, 3.0):
        batch[0] = numgrad.full((3,), value)  # a list item replaced
        assert compiled().item() == 6 * value
    for value in (5.0, 6.0):
        holder = [numgrad.full((3,), value)]  # a closure variable rebound
        assert compiled().item() == 6 * 3.0 + 3 * value


class _Config:
    scale = 2.0


_CONFIG = _Config()


def _scaled():
    return (numgrad.ones(3) * _CONFIG.scale).sum()


def test_a_number_read_from_an_objects_attribute_is_guarded():
    compiled = numgrad.compile(_scaled)
    assert compiled().item() == 6.0 and compiled().item() == 6.0
    _CONFIG.scale = 5.0
    try:
        assert compiled().item() == _scaled().item() == 15.0
    finally:
        _CONFIG.scale = 2.0
    assert compiled.traces == 2

    def f(x, cfg):  # (an argument's attribute)
        return (x * cfg.scale).sum()

    compiled, config, x = numgrad.compile(f), _Config(), numgrad.ones(3)
    assert compiled(x, config).item() == compiled(x, config).item() == 6.0
    config.scale = 4.0
    assert compiled(x, config).item() == 12.0 and compiled.traces == 2


def test_the_default_dtype_is_guarded():
    x = numgrad.ones(3)

    def f():
        return x + numgrad.ones(3)

    compiled = numgrad.compile(f)
    for _ in range(2):
        assert compiled().dtype == numgrad.float32
    numgrad.set_default_dtype(numgrad.float64)
    try:
        assert compiled().dtype == f().dtype == numgrad.float64
    finally:
        numgrad.set_default_dtype(numgrad.float32)
    assert compiled().dtype == numgrad.float32 and compiled.traces == 2


def _square(t):
    return t * t


def _cube(t):
    return t * t * t


_LOSS = _square


def _uses_the_global_function():
    return _LOSS(numgrad.full((3,), 2.0)).sum()


def test_a_global_function_rebound_is_not_replayed():
    global _LOSS
    compiled = numgrad.compile(_uses_the_global_function)
    assert compiled().item() == compiled().item() == 12.0
    _LOSS = _cube
    try:
        assert compiled().item() == _uses_the_global_function().item() == 24.0
    finally:
        _LOSS = _square


_SCALE = 2.0


def _helper(t):
    return t * _SCALE


class _Scaled(numgrad.nn.Module):
    def forward(self, t):
        return _helper(t) + _SCALE


def test_globals_read_by_a_helper_or_a_users_forward_are_guarded():
    global _SCALE
    x = numgrad.ones(3)
    module = _Scaled()
    compiled_fn = numgrad.compile(lambda: _helper(x).sum())
    compiled_module = numgrad.compile(module)
    assert compiled_fn().item() == compiled_fn().item() == 6.0
    assert compiled_module(x).tolist() == compiled_module(x).tolist() == [4.0] * 3
    _SCALE = 3.0
    try:
        assert compiled_fn().item() == 9.0
        assert compiled_module(x).tolist() == module(x).tolist() == [6.0] * 3
    finally:
        _SCALE = 2.0


def test_an_optimizer_state_loaded_again_is_read_not_the_traced_one():
    w = [numgrad.tensor([1.0, -2.0], requires_grad=True) for _ in range(2)]
    opts = [numgrad.optim.SGD([p], lr=0.1, momentum=0.9) for p in w]

    def step(p, opt):
        def run():
            opt.zero_grad()
            (p * p).sum().backward()
            opt.step()
        return run

    eager, compiled = step(w[0], opts[0]), numgrad.compile(step(w[1], opts[1]))
    for _ in range(4):
        eager(), compiled()
    saved = opts[0].state_dict()
    for opt in opts:
        opt.load_state_dict(saved)
        opt.state[opt.param_groups[0]["params"][0]]["momentum_buffer"] = numgrad.tensor([5.0, 5.0])
    for _ in range(2):
        eager(), compiled()
    np.testing.assert_array_equal(w[1].detach().numpy(), w[0].detach().numpy())


def test_a_loss_returned_after_its_backward_has_eagers_freed_node():
    w = numgrad.ones(3, requires_grad=True)

    def step(x):
        loss = (x * w).pow(2).sum()
        loss.backward()
        return loss

    compiled = numgrad.compile(step)
    x = numgrad.arange(3.0)
    for _ in range(2):
        loss = compiled(x)
    assert loss.requires_grad and loss.grad_fn.name() == "SumBackward0"
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        loss.backward()
    assert math.isclose(loss.item(), 5.0)


def test_random_numbers_inside_replay_eagers_draws():
    """(Philox: the replay draws the next numbers from the generator's state, as eager does;
    integer draws too)"""
    def noisy(x):
        return (x + numgrad.randn(3) + numgrad.rand(3, dtype=numgrad.float64)
                + numgrad.randint(0, 3, (3,)))

    compiled = numgrad.compile(noisy, fullgraph=True)
    numgrad.manual_seed(5)
    eager = [noisy(numgrad.zeros(3)).tolist() for _ in range(4)]
    numgrad.manual_seed(5)
    assert [compiled(numgrad.zeros(3)).tolist() for _ in range(4)] == eager
    assert compiled.traces == 1 and len({tuple(e) for e in eager}) == 4


def test_hooks_break_the_trace_and_run_eagerly():
    w = numgrad.ones(3, requires_grad=True)
    seen = []
    w.register_hook(lambda g: seen.append(g.tolist()))

    def f():
        (w * 2).sum().backward()

    with pytest.raises(GraphBreak, match="hook"):
        numgrad.compile(f, fullgraph=True)()
    w.grad = None
    seen.clear()
    lenient = numgrad.compile(f)
    with pytest.warns(RuntimeWarning, match="hook"):
        lenient()
    lenient()
    assert seen == [[2.0, 2.0, 2.0]] * 2  # the hook ran at each call, as in eager


def test_an_error_inside_leaves_the_tensors_as_they_were():
    w = numgrad.ones(3, requires_grad=True)
    data = w._data

    def bad(x):
        return (x * w) + numgrad.ones(4)  # shapes (3,) and (4,) do not broadcast

    with pytest.raises(RuntimeError, match="must match the size"):
        numgrad.compile(bad)(numgrad.ones(3))
    assert w._data is data  # its own array again, not a traced view of it
    assert (w * 2).tolist() == [2.0, 2.0, 2.0]


def test_hard_inputs_replay_as_eager():
    """Empty, 0-d, non-contiguous, NaN/inf/-0.0 and large int64 inputs; an eager thread beside
    a compiled one."""
    f = numgrad.compile(lambda x: (x * 2 + 1).sum())
    for x in (numgrad.zeros(0), numgrad.tensor(3.0), numgrad.ones(2, 3).t(),
              numgrad.tensor([np.nan, np.inf, -0.0])):
        want = (x * 2 + 1).sum().numpy()
        for _ in range(2):
            np.testing.assert_array_equal(f(x).numpy(), want)
    g = numgrad.compile(lambda x: x * 3 + 1)
    big = numgrad.tensor([2**61 + 1, -(2**62)], dtype=numgrad.int64)
    assert g(big).tolist() == g(big).tolist() == (big * 3 + 1).tolist()

    import threading

    w = numgrad.ones(1000, requires_grad=True)

    def step():
        (w * 3).sum().backward()
        grad, w.grad = w.grad, None
        return grad

    compiled, errors = numgrad.compile(step), []

    def eager():
        try:
            for _ in range(100):
                v = numgrad.ones(100, requires_grad=True)
                (v.tanh() * 2).sum().backward()
                np.testing.assert_allclose(v.grad.numpy(), 2 * (1 - np.tanh(1.0) ** 2), rtol=1e-6)
        except Exception as error:  # (re-raised below, in the test's thread)
            errors.append(error)

    thread = threading.Thread(target=eager)
    thread.start()
    results = {compiled().tolist()[0] for _ in range(100)}
    thread.join()
    assert not errors and results == {3.0} and compiled.traces == 1


SCALE = 2.0  # a module global the compiled function below reads
step = 0  # a module global that only shares its name with an attribute the function reads


class _Schedule:
    step = 0.5  # (an attribute named like the global ``step``)


def _reads_a_global(x, schedule):
    return x * SCALE + schedule.step


def test_a_global_it_reads_is_guarded_and_a_global_named_like_an_attribute_is_not():
    global SCALE, step
    compiled = numgrad.compile(_reads_a_global)
    x, schedule = numgrad.arange(3.0), _Schedule()
    try:
        for step in range(5):  # a training loop's counter, as scripts name it
            assert compiled(x, schedule).tolist() == [0.5, 2.5, 4.5]
        assert compiled.traces == 1
        SCALE = 3.0
        assert compiled(x, schedule).tolist() == [0.5, 3.5, 6.5]
        assert compiled.traces == 2
    finally:
        SCALE, step = 2.0, 0


def test_a_replay_adopts_gradients_as_eager_does_and_copies_a_given_one():
    """A gradient made by the step becomes .grad without a copy, in the replay as in eager (the
    MLP's weight gradients); one the caller gave (passed straight through to a leaf) is copied,
    as PyTorch copies it, so that .grad does not alias the caller's tensor."""
    w = numgrad.tensor(np.linspace(-1, 1, 12).reshape(3, 4), requires_grad=True)
    x = numgrad.tensor(np.linspace(0, 1, 8).reshape(2, 4), requires_grad=True)

    def step(g):
        w.grad = x.grad = None
        (x + 0.0).backward(g)  # x's gradient is g itself, passed through
        (x.detach() @ w.t()).sum().backward()  # w's: a product, made here
        return w.grad

    compiled = numgrad.compile(step)
    for call in range(3):
        g = numgrad.tensor(np.full((2, 4), 1.5 + call))
        eager_w = step(g).numpy().copy()
        eager_x = x.grad.numpy().copy()
        got = compiled(g)
        np.testing.assert_array_equal(got.numpy(), eager_w)
        np.testing.assert_array_equal(x.grad.numpy(), eager_x)
        assert not np.shares_memory(x.grad.numpy(), g.numpy())
        assert not np.shares_memory(w.grad.numpy(), w.detach().numpy())
        g.add_(1.0)
        np.testing.assert_array_equal(x.grad.numpy(), eager_x)
    assert compiled.traces == 1
