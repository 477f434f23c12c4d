"""``autograd.functional`` (jacobian, hessian, vjp, jvp, vhp, hvp) against
``torch.autograd.functional``: the same functions, written once for either module, must give the
same nesting of tuples, shapes, values and ``requires_grad``."""
import numpy as np
import pytest
import torch
import torch.autograd.functional as TF

import numgrad as ng
from numgrad.autograd import functional as F

W = np.linspace(-1.0, 1.0, 12).reshape(3, 4)


def _np(t):
    if isinstance(t, torch.Tensor):
        return t.detach().numpy().astype(np.float64)
    return np.array(t.detach().tolist(), dtype=np.float64)


def _compare(ours, theirs, rtol=1e-10, atol=1e-12):
    """Same nesting, shapes, requires_grad and values."""
    if isinstance(theirs, tuple):
        assert isinstance(ours, tuple) and len(ours) == len(theirs)
        for o, t in zip(ours, theirs):
            _compare(o, t, rtol, atol)
        return
    assert isinstance(ours, ng.Tensor), type(ours)
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert ours.requires_grad == theirs.requires_grad
    np.testing.assert_allclose(_np(ours), _np(theirs), rtol=rtol, atol=atol)


def _make(m, shapes, seed=0, requires_grad=False):
    """Inputs of the given shapes (a tuple of shapes gives a tuple of tensors)."""
    rng = np.random.default_rng(seed)
    if isinstance(shapes, list):
        return tuple(_make(m, s, seed + i + 1, requires_grad) for i, s in enumerate(shapes))
    return m.tensor(rng.uniform(0.2, 1.5, size=shapes), requires_grad=requires_grad)


# Functions written once for both modules: (name, function(m) -> func, input shapes).
# A list of shapes means a tuple of inputs.
JACOBIAN_CASES = [
    ("exp", lambda m: lambda x: x.exp() * 2, (3,)),
    ("matmul", lambda m: lambda x: x @ m.tensor(W), (2, 3)),
    ("scalar-in", lambda m: lambda x: m.stack([x * 2, x.sin()]), ()),
    ("scalar-out", lambda m: lambda x: (x * x).sum(), (2, 2)),
    ("tuple-in", lambda m: lambda x, y: x * y.sin() + y, [(3,), (3,)]),
    ("tuple-out", lambda m: lambda x: (x.exp(), x.sum(), x.t()), (2, 3)),
    ("tuple-both", lambda m: lambda x, y: (x * y, (x ** 2).sum() + y.sum()), [(2, 3), (3,)]),
    ("unused-input", lambda m: lambda x, y: x.tanh(), [(2,), (3,)]),
    ("softmax", lambda m: lambda x: x.softmax(-1), (2, 3)),
]
HESSIAN_CASES = [
    ("cube", lambda m: lambda x: (x ** 3).sum(), (3,)),
    ("matrix", lambda m: lambda x: (x.tanh() ** 2).sum() + x.prod(), (2, 2)),
    ("scalar", lambda m: lambda x: x.exp() * x, ()),
    ("tuple", lambda m: lambda x, y: (x * y.exp()).sum() + (x ** 2 * y).sum(), [(3,), (3,)]),
    ("tuple-broadcast", lambda m: lambda x, y: ((x @ y).sin()).sum(), [(2, 3), (3,)]),
    ("logsumexp", lambda m: lambda x: x.logsumexp(0), (4,)),
]


def _ids(cases):
    return [c[0] for c in cases]


@pytest.mark.parametrize("create_graph", [False, True])
@pytest.mark.parametrize("name, make, shapes", JACOBIAN_CASES, ids=_ids(JACOBIAN_CASES))
def test_jacobian_matches_torch(name, make, shapes, create_graph):
    ours = F.jacobian(make(ng), _make(ng, shapes), create_graph=create_graph)
    theirs = TF.jacobian(make(torch), _make(torch, shapes), create_graph=create_graph)
    _compare(ours, theirs)


NONLINEAR = [c for c in JACOBIAN_CASES if c[0] != "matmul"]


@pytest.mark.parametrize("name, make, shapes", NONLINEAR, ids=_ids(NONLINEAR))
def test_jacobian_with_create_graph_is_differentiable_like_torch(name, make, shapes):
    def program(m, jacobian):
        inputs = _make(m, shapes, requires_grad=True)
        jac = jacobian(make(m), inputs, create_graph=True)
        flat = []
        stack = [jac]
        while stack:
            item = stack.pop()
            if isinstance(item, tuple):
                stack.extend(item)
            else:
                flat.append(item)
        total = sum((j * j).sum() for j in flat if j.requires_grad)
        inputs = inputs if isinstance(inputs, tuple) else (inputs,)
        return m.autograd.grad(total, inputs, allow_unused=True, materialize_grads=True)

    _compare(program(ng, F.jacobian), program(torch, TF.jacobian))


@pytest.mark.parametrize("create_graph", [False, True])
@pytest.mark.parametrize("name, make, shapes", HESSIAN_CASES, ids=_ids(HESSIAN_CASES))
def test_hessian_matches_torch(name, make, shapes, create_graph):
    ours = F.hessian(make(ng), _make(ng, shapes), create_graph=create_graph)
    theirs = TF.hessian(make(torch), _make(torch, shapes), create_graph=create_graph)
    _compare(ours, theirs)


def test_hessian_by_hand():
    x = ng.tensor([1.0, 2.0, -1.0], dtype=ng.float64)
    y = ng.tensor([0.5, 3.0], dtype=ng.float64)
    h = F.hessian(lambda t: (t ** 3).sum(), x)
    np.testing.assert_array_equal(_np(h), np.diag([6.0, 12.0, -6.0]))
    (hxx, hxy), (hyx, hyy) = F.hessian(lambda a, b: (a.sum() * b * b).sum(), (x, y))
    np.testing.assert_array_equal(_np(hxx), np.zeros((3, 3)))
    np.testing.assert_array_equal(_np(hxy), [[1.0, 6.0]] * 3)  # d2/da_i db_j = 2 b_j
    np.testing.assert_array_equal(_np(hyx), [[1.0] * 3, [6.0] * 3])
    np.testing.assert_array_equal(_np(hyy), np.diag([4.0, 4.0]))  # 2 sum(a)


# (name, function(m) -> func, input shapes, v shapes or None); v is drawn like the inputs
PRODUCT_CASES = [
    ("single", lambda m: lambda x: (x.exp() * x).sum(), (3,), (3,)),
    ("matrix", lambda m: lambda x: (x.sin() @ m.tensor(W)).sum(), (2, 3), (2, 3)),
    ("scalar-no-v", lambda m: lambda x: x.exp() * x * x, (), None),
    ("tuple", lambda m: lambda x, y: (x * y.exp()).sum() + (x ** 2 * y).sum(),
     [(3,), (3,)], [(3,), (3,)]),
]


@pytest.mark.parametrize("create_graph", [False, True])
@pytest.mark.parametrize("which", ["vhp", "hvp"])
@pytest.mark.parametrize("name, make, shapes, v_shapes", PRODUCT_CASES, ids=_ids(PRODUCT_CASES))
def test_hessian_vector_products_match_torch(name, make, shapes, v_shapes, which, create_graph):
    def run(m, module):
        v = None if v_shapes is None else _make(m, v_shapes, seed=7)
        return getattr(module, which)(make(m), _make(m, shapes), v, create_graph=create_graph)

    _compare(run(ng, F), run(torch, TF))


VJP_CASES = [
    ("single", lambda m: lambda x: x.exp() * 2, (3,), (3,)),
    ("matmul", lambda m: lambda x: x @ m.tensor(W), (2, 3), (2, 4)),
    ("scalar-out-no-v", lambda m: lambda x: (x * x).sum(), (2, 2), None),
    ("tuple-in", lambda m: lambda x, y: x * y.sin() + y, [(3,), (3,)], (3,)),
    ("tuple-out", lambda m: lambda x: (x.exp(), x.sum()), (2, 3), [(2, 3), ()]),
    ("unused-input", lambda m: lambda x, y: x.tanh(), [(2,), (3,)], (2,)),
]
JVP_CASES = [
    ("single", lambda m: lambda x: x.exp() * 2, (3,), (3,)),
    ("matmul", lambda m: lambda x: x @ m.tensor(W), (2, 3), (2, 3)),
    ("scalar-in-no-v", lambda m: lambda x: m.stack([x * 2, x.sin()]), (), None),
    ("tuple-in", lambda m: lambda x, y: x * y.sin() + y, [(3,), (3,)], [(3,), (3,)]),
    ("tuple-out", lambda m: lambda x: (x.exp(), x.sum()), (2, 3), (2, 3)),
    ("unused-input", lambda m: lambda x, y: x.tanh(), [(2,), (3,)], [(2,), (3,)]),
]


@pytest.mark.parametrize("create_graph", [False, True])
@pytest.mark.parametrize("name, make, shapes, v_shapes", VJP_CASES, ids=_ids(VJP_CASES))
def test_vjp_matches_torch(name, make, shapes, v_shapes, create_graph):
    def run(m, module):
        v = None if v_shapes is None else _make(m, v_shapes, seed=7)
        return module.vjp(make(m), _make(m, shapes), v, create_graph=create_graph)

    _compare(run(ng, F), run(torch, TF))


@pytest.mark.parametrize("create_graph", [False, True])
@pytest.mark.parametrize("name, make, shapes, v_shapes", JVP_CASES, ids=_ids(JVP_CASES))
def test_jvp_matches_torch(name, make, shapes, v_shapes, create_graph):
    def run(m, module):
        v = None if v_shapes is None else _make(m, v_shapes, seed=7)
        return module.jvp(make(m), _make(m, shapes), v, create_graph=create_graph)

    _compare(run(ng, F), run(torch, TF))


def test_jvp_by_hand():
    x = ng.tensor([0.0, 1.0, 2.0], dtype=ng.float64)
    v = ng.tensor([1.0, 0.5, -1.0], dtype=ng.float64)
    out, jv = F.jvp(lambda t: t * t, x, v)
    np.testing.assert_array_equal(_np(out), [0.0, 1.0, 4.0])
    np.testing.assert_array_equal(_np(jv), [0.0, 1.0, -4.0])  # 2 x v


def test_results_stay_connected_to_inputs_that_require_grad_with_create_graph():
    def program(m, module):
        x = _make(m, (3,), requires_grad=True)
        _, hv = module.hvp(lambda t: (t ** 3).sum(), x, m.ones(3, dtype=m.float64),
                           create_graph=True)
        (g,) = m.autograd.grad(hv.sum(), x)  # d/dx sum(6 x) = 6
        return g, x.grad

    (g, grad), (tg, tgrad) = program(ng, F), program(torch, TF)
    _compare(g, tg)
    np.testing.assert_allclose(_np(g), [6.0, 6.0, 6.0])
    assert grad is None and tgrad is None


def test_vectorize_and_strategy_arguments():
    x = _make(ng, (3,))
    plain = F.jacobian(lambda t: t.exp(), x)
    _compare(F.jacobian(lambda t: t.exp(), x, vectorize=True), TF.jacobian(
        lambda t: t.exp(), _make(torch, (3,)), vectorize=True))
    np.testing.assert_array_equal(_np(plain), np.diag(np.exp(_np(x))))
    with pytest.raises(NotImplementedError, match="only implemented for `vectorize=True`"):
        F.jacobian(lambda t: t.exp(), x, strategy="forward-mode")  # (PyTorch's message)
    with pytest.raises(AssertionError, match='"forward-mode" or "reverse-mode"'):
        F.jacobian(lambda t: t.exp(), x, strategy="sideways")


# --------------------------------------------------------------------------- errors, as torch's
def _error(fn):
    with pytest.raises(Exception) as info:
        fn()
    return type(info.value), str(info.value).replace("torch.", "numgrad.")


ERROR_CASES = [
    ("strict-unused", lambda m, f: f.jacobian(lambda x, y: x * 2, (_make(m, (2,)), _make(m, (2,))),
                                               strict=True)),
    ("strict-constant-output", lambda m, f: f.vjp(lambda x: m.ones(2, dtype=m.float64),
                                                  _make(m, (2,)), _make(m, (2,)), strict=True)),
    ("strict-linear-hessian", lambda m, f: f.hessian(lambda x: (x * 2).sum(), _make(m, (2,)),
                                                     strict=True)),
    ("strict-jvp-unused", lambda m, f: f.jvp(lambda x, y: x * 2, (_make(m, (2,)), _make(m, (2,))),
                                             (_make(m, (2,)), _make(m, (2,))), strict=True)),
    ("v-wrong-size", lambda m, f: f.vjp(lambda x: x * 2, _make(m, (3,)), _make(m, (2,)))),
    ("v-wrong-count", lambda m, f: f.jvp(lambda x, y: x * y, (_make(m, (2,)), _make(m, (2,))),
                                         (_make(m, (2,)),))),
    ("v-tuple-entry", lambda m, f: f.hvp(lambda x, y: (x * y).sum(),
                                         (_make(m, (2,)), _make(m, (2,))),
                                         (_make(m, (2,)), _make(m, (3,))))),
    ("v-missing-vjp", lambda m, f: f.vjp(lambda x: x * 2, _make(m, (3,)))),
    ("v-missing-jvp", lambda m, f: f.jvp(lambda x: x * 2, _make(m, (3,)))),
    ("not-a-tensor", lambda m, f: f.jacobian(lambda x: x, 3.0)),
    ("not-a-tensor-in-tuple", lambda m, f: f.jacobian(lambda x, y: x, (_make(m, (1,)), 2))),
    ("output-not-a-tensor", lambda m, f: f.vjp(lambda x: 3.0, _make(m, (1,)))),
    ("hessian-vector-output", lambda m, f: f.hessian(lambda x: x * 2, _make(m, (2,)))),
    ("hessian-tuple-output", lambda m, f: f.hessian(lambda x: (x.sum(), x.sum()),
                                                    _make(m, (2,)))),
    ("hvp-vector-output", lambda m, f: f.hvp(lambda x: x * 2, _make(m, (2,)), _make(m, (2,)))),
    ("vhp-tuple-output", lambda m, f: f.vhp(lambda x: (x.sum(),), _make(m, (2,)),
                                            _make(m, (2,)))),
]


@pytest.mark.parametrize("name, call", ERROR_CASES, ids=_ids(ERROR_CASES))
def test_errors_match_torch(name, call):
    ours = _error(lambda: call(ng, F))
    theirs = _error(lambda: call(torch, TF))
    assert ours == theirs
