"""The autograd contract of SPEC.md ("Autograd semantics"), rule by rule, checked against hand-derived
values and, where the same program runs in PyTorch, against PyTorch itself."""

import threading
import warnings

import numpy as np
import pytest
import torch

import numgrad as ng

WAIT = 10.0  # seconds; bounded waits for the threading tests


def _np(t):
    """The values of a numgrad or torch tensor as a float64 NumPy array."""
    if isinstance(t, torch.Tensor):
        return t.detach().numpy().astype(np.float64)
    return np.array(t.detach().tolist(), dtype=np.float64)


def _pair(values, requires_grad=False, dtype=np.float32):
    """The same values as a numgrad and a torch tensor."""
    a = np.asarray(values, dtype=dtype)
    return (ng.tensor(a.copy(), requires_grad=requires_grad),
            torch.tensor(a.copy(), requires_grad=requires_grad))


# --------------------------------------------------------------------------- 1. leaves
def test_tensor_without_requires_grad_is_leaf():
    t = ng.ones(2, 3)
    assert t.requires_grad is False
    assert t.is_leaf is True
    assert t.grad_fn is None
    u = t * 2 + 1
    assert u.requires_grad is False and u.is_leaf is True and u.grad_fn is None


@pytest.mark.parametrize("make", [
    lambda m: m.ones(2, 2, requires_grad=True),
    lambda m: m.zeros(3, requires_grad=True),
    lambda m: m.tensor([1.0, 2.0], requires_grad=True),
    lambda m: m.randn(2, 3, requires_grad=True),
    lambda m: m.rand(4, requires_grad=True),
    lambda m: m.full((2,), 1.5, requires_grad=True),
    lambda m: m.empty(2, requires_grad=True),
    lambda m: m.arange(0.0, 3.0, requires_grad=True),
    lambda m: m.ones_like(m.ones(2), requires_grad=True),
    lambda m: m.zeros(2, dtype=m.float64, requires_grad=True),
], ids=["ones", "zeros", "tensor", "randn", "rand", "full", "empty", "arange", "ones_like",
        "float64"])
def test_user_created_requires_grad_tensor_is_leaf(make):
    for m in (ng, torch):
        t = make(m)
        assert t.requires_grad is True, m.__name__
        assert t.is_leaf is True, m.__name__
        assert t.grad_fn is None, m.__name__
        assert t.grad is None, m.__name__


def test_op_output_is_not_a_leaf():
    x = ng.ones(2, 2, requires_grad=True)
    y = x.mean()
    assert y.requires_grad is True
    assert y.is_leaf is False
    assert y.grad_fn is not None
    assert y.grad_fn.name() == "MeanBackward0"


_NODE_CASES = {
    "add": lambda m, x, w: x + w,
    "add_scalar": lambda m, x, w: x + 1,
    "radd": lambda m, x, w: 1 + x,
    "sub": lambda m, x, w: x - w,
    "rsub": lambda m, x, w: 2 - x,
    "mul": lambda m, x, w: x * w,
    "mul_scalar": lambda m, x, w: 3 * x,
    "div": lambda m, x, w: x / w,
    "rdiv": lambda m, x, w: 1 / x,
    "neg": lambda m, x, w: -x,
    "pow_scalar": lambda m, x, w: x ** 2,
    "pow_tensor": lambda m, x, w: x ** w,
    "rpow": lambda m, x, w: 2.0 ** x,
    "exp": lambda m, x, w: x.exp(),
    "log": lambda m, x, w: m.log(x),
    "sqrt": lambda m, x, w: x.sqrt(),
    "tanh": lambda m, x, w: x.tanh(),
    "sigmoid": lambda m, x, w: x.sigmoid(),
    "relu": lambda m, x, w: x.relu(),
    "reciprocal": lambda m, x, w: x.reciprocal(),
    "sum": lambda m, x, w: x.sum(),
    "sum_dim": lambda m, x, w: x.sum(1),
    "mean": lambda m, x, w: x.mean(),
    "mean_dim": lambda m, x, w: x.mean(0),
    "norm": lambda m, x, w: x.norm(),
    "mm": lambda m, x, w: x @ w.t(),
    "mv": lambda m, x, w: m.mv(x, w.sum(0)),
    "dot": lambda m, x, w: m.dot(x.sum(0), w.sum(0)),
    "vec_mat": lambda m, x, w: x.sum(0) @ w.t(),
    "view": lambda m, x, w: x.view(6),
    "reshape": lambda m, x, w: x.reshape(3, 2),
    "reshape_copy": lambda m, x, w: x.t().reshape(-1),
    "transpose": lambda m, x, w: x.transpose(0, 1),
    "t": lambda m, x, w: x.t(),
    "T": lambda m, x, w: x.T,
    "permute": lambda m, x, w: x.permute(1, 0),
    "unsqueeze": lambda m, x, w: x.unsqueeze(0),
    "squeeze_dim": lambda m, x, w: x.unsqueeze(0).squeeze(0),
    "squeeze_all": lambda m, x, w: x.unsqueeze(0).squeeze(),
    "expand": lambda m, x, w: x.expand(4, 2, 3),
    "clone": lambda m, x, w: x.clone(),
    "to_double": lambda m, x, w: x.to(m.float64),
    "flatten": lambda m, x, w: x.flatten(),
}


@pytest.mark.parametrize("name", list(_NODE_CASES))
def test_grad_fn_name_matches_pytorch(name):
    f = _NODE_CASES[name]
    xv = np.array([[0.5, 1.0, 1.5], [2.0, 0.7, 1.2]], np.float32)
    wv = np.array([[1.1, 0.9, 1.3], [0.6, 1.4, 0.8]], np.float32)
    xn, xt = _pair(xv, requires_grad=True)
    wn, wt = _pair(wv, requires_grad=True)
    out_n, out_t = f(ng, xn, wn), f(torch, xt, wt)
    assert out_n.requires_grad and not out_n.is_leaf
    assert out_n.grad_fn.name() == out_t.grad_fn.name()
    np.testing.assert_allclose(_np(out_n), _np(out_t), rtol=1e-5, atol=1e-6)


# --------------------------------------------------------------------------- 2. propagation
@pytest.mark.parametrize("mode", [True, False])
@pytest.mark.parametrize("a_rg,b_rg", [(False, False), (True, False), (False, True), (True, True)])
def test_requires_grad_propagation(mode, a_rg, b_rg):
    results = {}
    for m in (ng, torch):
        a = m.ones(2, 3, requires_grad=a_rg)
        b = m.full((2, 3), 2.0, requires_grad=b_rg)
        with m.set_grad_enabled(mode):
            outs = [a + b, a * b, (a - b).exp(), (a * b).sum(), a.t() @ b]
        results[m.__name__] = [(o.requires_grad, o.is_leaf, o.grad_fn is None) for o in outs]
    expected_rg = mode and (a_rg or b_rg)
    for rg, leaf, no_fn in results["numgrad"]:
        assert rg is expected_rg
        assert leaf is (not expected_rg)
        assert no_fn is (not expected_rg)
    assert results["numgrad"] == results["torch"]


def test_integer_input_with_float_requires_grad_input_propagates():
    i = ng.tensor([1, 2, 3])
    x = ng.ones(3, requires_grad=True)
    y = i * x
    assert y.requires_grad and y.grad_fn.name() == "MulBackward0"
    y.sum().backward()
    np.testing.assert_array_equal(_np(x.grad), [1.0, 2.0, 3.0])


def test_comparisons_never_require_grad():
    for m in (ng, torch):
        x = m.ones(3, requires_grad=True)
        for c in (x > 0, x == 1, x <= x * 2):
            assert c.requires_grad is False and c.grad_fn is None and c.is_leaf


def test_no_grad_output_of_requires_grad_input_is_a_leaf():
    x = ng.ones(3, requires_grad=True)
    with ng.no_grad():
        y = x * 2
    assert y.requires_grad is False and y.is_leaf and y.grad_fn is None
    z = y * x  # y is a constant here: the gradient of z.sum() with respect to x is y
    z.sum().backward()
    np.testing.assert_array_equal(_np(x.grad), [2.0, 2.0, 2.0])


# --------------------------------------------------------------------------- 3. retention
def test_backward_stores_grad_only_in_leaves_that_require_grad():
    x = ng.tensor([1.0, 2.0, 3.0], requires_grad=True)
    c = ng.tensor([4.0, 5.0, 6.0])
    y = x * c
    out = (y * y).sum()  # d out / dx = 2 * x * c**2
    out.backward()
    np.testing.assert_allclose(_np(x.grad), [32.0, 100.0, 216.0])
    assert c.grad is None
    with pytest.warns(UserWarning, match=r"retain_grad\(\)"):
        assert y.grad is None
    with pytest.warns(UserWarning, match=r"retain_grad\(\)"):
        assert out.grad is None


def test_reading_non_leaf_grad_warns_before_backward_too():
    x = ng.ones(2, requires_grad=True)
    y = x * 2
    with pytest.warns(UserWarning, match=r"retain_grad\(\)"):
        assert y.grad is None


def test_reading_leaf_grad_does_not_warn():
    x = ng.ones(2, requires_grad=True)
    c = ng.ones(2)
    (x * 2).sum().backward()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert x.grad is not None
        assert c.grad is None
        assert (c * 2).grad is None  # a leaf too: no history


def test_gradients_accumulate_over_two_backwards():
    xv = [1.0, -2.0, 3.0]
    grads = {}
    for m in (ng, torch):
        x = m.tensor(xv, requires_grad=True)
        (x * x).sum().backward()
        first = _np(x.grad)
        (x * x * x).sum().backward()
        grads[m.__name__] = (first, _np(x.grad))
    first, second = grads["numgrad"]
    x = np.array(xv)
    np.testing.assert_allclose(first, 2 * x)
    np.testing.assert_allclose(second, 2 * x + 3 * x ** 2)
    np.testing.assert_allclose(second, grads["torch"][1])


def test_gradient_of_a_leaf_used_twice_in_one_graph_is_summed():
    x = ng.tensor([1.0, 2.0], requires_grad=True)
    (x * x + x).sum().backward()
    np.testing.assert_allclose(_np(x.grad), [3.0, 5.0])


def test_grad_accumulates_in_place_into_the_same_grad_tensor():
    x = ng.tensor([1.0, 2.0], requires_grad=True)
    (x * 3).sum().backward()
    g = x.grad
    (x * 4).sum().backward()
    assert x.grad is g  # PyTorch accumulates into the existing .grad in place
    np.testing.assert_allclose(_np(g), [7.0, 7.0])


def test_first_grad_does_not_alias_the_incoming_gradient():
    # AddBackward0 passes the incoming gradient on unchanged, so without a copy .grad would be the
    # seed itself and the second backward would accumulate into the caller's tensor.
    for first, second in ((lambda x: x + 0.0, lambda x: x + 0.0), (lambda x: x, lambda x: x * 1.0)):
        x = ng.tensor([1.0, 2.0], requires_grad=True)
        seed = ng.tensor([1.0, 1.0])
        first(x).backward(seed)
        second(x).backward(seed)
        np.testing.assert_allclose(_np(x.grad), [2.0, 2.0])
        np.testing.assert_allclose(_np(seed), [1.0, 1.0])  # the seed was not modified


def test_retain_grad_fills_a_non_leaf_grad():
    for m in (ng, torch):
        x = m.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = x * 2
        assert y.retains_grad is False
        y.retain_grad()
        assert y.retains_grad is True
        out = (y * y).sum()
        out.backward()
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            np.testing.assert_allclose(_np(y.grad), [4.0, 8.0, 12.0])  # 2 * y
        np.testing.assert_allclose(_np(x.grad), [8.0, 16.0, 24.0])  # 2 * y * 2


def test_retain_grad_accumulates_over_two_backwards():
    res = {}
    for m in (ng, torch):
        x = m.tensor([1.0, 2.0], requires_grad=True)
        y = x * 3
        y.retain_grad()
        out = (y * y).sum()
        out.backward(retain_graph=True)
        out.backward()
        res[m.__name__] = _np(y.grad)
    np.testing.assert_allclose(res["numgrad"], [12.0, 24.0])  # 2 * (2 * y)
    np.testing.assert_allclose(res["numgrad"], res["torch"])


def test_retain_grad_on_leaf_is_a_noop():
    for m in (ng, torch):
        x = m.tensor([1.0, 2.0], requires_grad=True)
        x.retain_grad()
        assert x.retains_grad is False  # as PyTorch: leaves keep their grad anyway
        assert x.is_leaf
        (x * 5).sum().backward()
        np.testing.assert_allclose(_np(x.grad), [5.0, 5.0])


def test_retain_grad_on_tensor_not_requiring_grad_raises():
    t = ng.ones(2)
    with pytest.raises(RuntimeError, match="can't retain_grad on Tensor that has requires_grad=False"):
        t.retain_grad()
    assert t.retains_grad is False
    with pytest.raises(RuntimeError):
        torch.ones(2).retain_grad()


def test_retains_grad_is_false_for_plain_tensors():
    assert ng.ones(2).retains_grad is False
    assert (ng.ones(2, requires_grad=True) * 2).retains_grad is False


def test_retained_grad_sees_the_hook_modified_gradient():
    # PyTorch runs the retains_grad hook last, whatever the registration order.
    for order in ("retain_first", "hook_first"):
        res = {}
        for m in (ng, torch):
            x = m.tensor([1.0, 2.0], requires_grad=True)
            y = x * 2
            if order == "retain_first":
                y.retain_grad()
                y.register_hook(lambda g: g * 10)
            else:
                y.register_hook(lambda g: g * 10)
                y.retain_grad()
            y.sum().backward()
            res[m.__name__] = (_np(y.grad), _np(x.grad))
        np.testing.assert_allclose(res["numgrad"][0], [10.0, 10.0])
        np.testing.assert_allclose(res["numgrad"][1], [20.0, 20.0])
        np.testing.assert_allclose(res["numgrad"][0], res["torch"][0])
        np.testing.assert_allclose(res["numgrad"][1], res["torch"][1])


# --------------------------------------------------------------------------- 3. hooks
def test_hook_on_leaf_receives_gradient_and_can_replace_it():
    x = ng.tensor([1.0, 2.0, 3.0], requires_grad=True)
    seen = []

    def hook(g):
        seen.append(_np(g))
        return g * 2

    x.register_hook(hook)
    (x * x).sum().backward()
    assert len(seen) == 1
    np.testing.assert_allclose(seen[0], [2.0, 4.0, 6.0])
    np.testing.assert_allclose(_np(x.grad), [4.0, 8.0, 12.0])


def test_hook_on_non_leaf_receives_gradient_and_replacement_flows_on():
    res = {}
    for m in (ng, torch):
        x = m.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = x * x
        seen = []

        def hook(g, seen=seen, m=m):
            seen.append(_np(g))
            return m.tensor([1.0, 0.0, -1.0])

        y.register_hook(hook)
        (y * 3).sum().backward()
        res[m.__name__] = (seen, _np(x.grad))
    seen, grad = res["numgrad"]
    assert len(seen) == 1
    np.testing.assert_allclose(seen[0], [3.0, 3.0, 3.0])
    np.testing.assert_allclose(grad, [2.0, 0.0, -6.0])  # replacement * 2x
    np.testing.assert_allclose(grad, res["torch"][1])


def test_hook_returning_none_keeps_gradient():
    x = ng.tensor([1.0, 2.0], requires_grad=True)
    calls = []
    x.register_hook(lambda g: calls.append(1))
    y = x * 4
    y.register_hook(lambda g: calls.append(2))
    y.sum().backward()
    assert sorted(calls) == [1, 2]
    np.testing.assert_allclose(_np(x.grad), [4.0, 4.0])


def test_hooks_chain_in_registration_order():
    res = {}
    for m in (ng, torch):
        x = m.tensor([1.0, 2.0], requires_grad=True)
        y = x * 1.0
        y.register_hook(lambda g: g + 1)
        y.register_hook(lambda g: g * 10)
        x.register_hook(lambda g: g - 3)
        y.sum().backward()
        res[m.__name__] = _np(x.grad)
    np.testing.assert_allclose(res["numgrad"], [17.0, 17.0])  # ((1 + 1) * 10) - 3
    np.testing.assert_allclose(res["numgrad"], res["torch"])


def test_hook_handle_remove():
    x = ng.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    calls = []
    hx = x.register_hook(lambda g: calls.append("x") or g * 100)
    hy = y.register_hook(lambda g: calls.append("y") or g * 100)
    hx.remove()
    hy.remove()
    hy.remove()  # removing twice is harmless
    y.sum().backward()
    assert calls == []
    np.testing.assert_allclose(_np(x.grad), [2.0, 2.0])


def test_removing_one_hook_keeps_the_others():
    x = ng.tensor([1.0], requires_grad=True)
    h1 = x.register_hook(lambda g: g * 2)
    x.register_hook(lambda g: g * 3)
    h1.remove()
    (x * 1.0).sum().backward()
    np.testing.assert_allclose(_np(x.grad), [3.0])


def test_register_hook_on_tensor_not_requiring_grad_raises():
    with pytest.raises(RuntimeError, match="cannot register a hook on a tensor that doesn't require gradient"):
        ng.ones(2).register_hook(lambda g: g)


# --------------------------------------------------------------------------- 4. backward()
def test_scalar_backward_defaults_to_one():
    for kw in ({}, {"gradient": None}):
        x = ng.tensor([1.0, 2.0, 3.0], requires_grad=True)
        (x * x).sum().backward(**kw)
        np.testing.assert_allclose(_np(x.grad), [2.0, 4.0, 6.0])


def test_one_element_non_scalar_backward_defaults_to_one():
    for m in (ng, torch):
        x = m.tensor([[2.0]], requires_grad=True)
        y = x * x  # shape (1, 1): one element
        y.backward()
        np.testing.assert_allclose(_np(x.grad), [[4.0]])


def test_explicit_gradient_on_scalar_scales():
    x = ng.tensor([1.0, 2.0], requires_grad=True)
    (x * x).sum().backward(ng.tensor(3.0))
    np.testing.assert_allclose(_np(x.grad), [6.0, 12.0])


def test_backward_with_gradient_is_vector_jacobian_product():
    A = np.array([[1.0, 2.0, 0.5], [-1.0, 0.0, 3.0]], np.float32)
    xv = np.array([0.2, -0.4, 0.9], np.float32)
    v = np.array([0.5, -2.0], np.float32)
    res = {}
    for m in (ng, torch):
        x = m.tensor(xv, requires_grad=True)
        y = m.tensor(A) @ (x * x)  # J = A diag(2x)
        y.backward(m.tensor(v))
        res[m.__name__] = _np(x.grad)
    expected = (A.T.astype(np.float64) @ v) * 2 * xv
    np.testing.assert_allclose(res["numgrad"], expected, rtol=1e-5)
    np.testing.assert_allclose(res["numgrad"], res["torch"], rtol=1e-5)


def test_backward_gradient_matrix_shaped():
    x = ng.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    y = x * x * 0.5
    y.backward(ng.tensor([[1.0, 0.0], [2.0, -1.0]]))
    np.testing.assert_allclose(_np(x.grad), [[1.0, 0.0], [6.0, -4.0]])


def test_backward_inputs_restricts_accumulation():
    res = {}
    for m in (ng, torch):
        x = m.tensor([1.0, 2.0], requires_grad=True)
        w = m.tensor([3.0, 4.0], requires_grad=True)
        out = (x * w).sum()
        out.backward(inputs=[x])
        res[m.__name__] = (_np(x.grad), w.grad)
    np.testing.assert_allclose(res["numgrad"][0], [3.0, 4.0])
    assert res["numgrad"][1] is None and res["torch"][1] is None
    np.testing.assert_allclose(res["numgrad"][0], res["torch"][0])


def test_retain_graph_allows_second_backward():
    x = ng.tensor([1.0, 2.0], requires_grad=True)
    out = (x * x * x).sum()
    out.backward(retain_graph=True)
    out.backward(retain_graph=True)
    out.backward()
    np.testing.assert_allclose(_np(x.grad), 3 * 3 * np.array([1.0, 4.0]))
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        out.backward()


def test_saved_values_freed_after_backward_without_retain_graph():
    x = ng.tensor([1.0, 2.0], requires_grad=True)
    y = x.exp()
    out = (y * y).sum()
    out.backward()
    node = y.grad_fn
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        node.saved_tensors
    with pytest.raises(RuntimeError, match="retain_graph=True"):
        out.backward()


def test_saved_values_kept_with_retain_graph():
    x = ng.tensor([1.0, 2.0], requires_grad=True)
    y = x.exp()
    out = (y * y).sum()
    out.backward(retain_graph=True)
    (saved,) = y.grad_fn.saved_tensors
    np.testing.assert_allclose(_np(saved), np.exp([1.0, 2.0]), rtol=1e-6)


# --------------------------------------------------------------------------- 5. stopping tracking
def test_detach_shares_storage_and_has_no_history():
    x = ng.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 2
    d = y.detach()
    assert d.requires_grad is False and d.grad_fn is None and d.is_leaf
    assert y.requires_grad is True and y.grad_fn is not None  # y itself is untouched
    d.numpy()[0] = 100.0
    assert y.detach().tolist()[0] == 100.0  # same storage
    dx = x.detach()
    dx.numpy()[1] = -5.0
    assert x.detach().tolist() == [1.0, -5.0, 3.0]
    assert (d * 3).requires_grad is False


def test_detach_stops_gradient():
    for m in (ng, torch):
        x = m.tensor([1.0, 2.0, 3.0], requires_grad=True)
        (x * x.detach()).sum().backward()
        np.testing.assert_allclose(_np(x.grad), [1.0, 2.0, 3.0])  # x, not 2x


def test_detach_shares_version_counter():
    x = ng.ones(3, requires_grad=True)
    d = x.detach()
    before = x._version
    d._version_counter.value += 1
    assert x._version == before + 1


def test_no_grad_context_manager():
    x = ng.ones(3, requires_grad=True)
    assert ng.is_grad_enabled() is True
    with ng.no_grad():
        assert ng.is_grad_enabled() is False
        y = x * 2
        z = (x + 1).sum()
    assert ng.is_grad_enabled() is True
    for t in (y, z):
        assert t.requires_grad is False and t.grad_fn is None
    assert (x * 2).requires_grad is True


def test_no_grad_restores_mode_after_exception():
    with pytest.raises(ValueError):
        with ng.no_grad():
            raise ValueError("boom")
    assert ng.is_grad_enabled() is True


def test_no_grad_decorator_with_parentheses():
    x = ng.ones(3, requires_grad=True)

    @ng.no_grad()
    def double(t):
        """doc"""
        assert ng.is_grad_enabled() is False
        return t * 2

    y = double(x)
    assert y.requires_grad is False and y.grad_fn is None
    assert ng.is_grad_enabled() is True
    assert double.__name__ == "double" and double.__doc__ == "doc"
    y2 = double(x)  # reusable
    assert y2.requires_grad is False


def test_no_grad_decorator_without_parentheses():
    # PyTorch 2 accepts the bare class as a decorator too.
    res = {}
    for m in (ng, torch):
        x = m.ones(3, requires_grad=True)

        @m.no_grad
        def double(t):
            return t * 2

        y = double(x)
        res[m.__name__] = (y.requires_grad, m.is_grad_enabled(), double.__name__)
    assert res["numgrad"] == (False, True, "double")
    assert res["numgrad"] == res["torch"]


def test_nested_no_grad_and_enable_grad():
    x = ng.ones(2, requires_grad=True)
    with ng.no_grad():
        with ng.enable_grad():
            assert ng.is_grad_enabled() is True
            y = x * 2
            with ng.no_grad():
                assert ng.is_grad_enabled() is False
            assert ng.is_grad_enabled() is True
        assert ng.is_grad_enabled() is False
        z = x * 2
    assert y.requires_grad is True and y.grad_fn.name() == "MulBackward0"
    assert z.requires_grad is False


def test_enable_grad_as_decorator():
    x = ng.ones(2, requires_grad=True)

    @ng.enable_grad()
    def f(t):
        return t * 3

    with ng.no_grad():
        y = f(x)
        assert ng.is_grad_enabled() is False
    assert y.requires_grad is True
    y.sum().backward()
    np.testing.assert_allclose(_np(x.grad), [3.0, 3.0])


def test_set_grad_enabled_as_function():
    x = ng.ones(2, requires_grad=True)
    try:
        ng.set_grad_enabled(False)
        assert ng.is_grad_enabled() is False
        assert (x * 2).requires_grad is False
        ng.set_grad_enabled(True)
        assert ng.is_grad_enabled() is True
        assert (x * 2).requires_grad is True
    finally:
        ng.set_grad_enabled(True)


@pytest.mark.parametrize("mode", [True, False])
def test_set_grad_enabled_as_context_manager(mode):
    x = ng.ones(2, requires_grad=True)
    for outer in (True, False):
        with ng.set_grad_enabled(outer):
            with ng.set_grad_enabled(mode):
                assert ng.is_grad_enabled() is mode
                y = x * 2
            assert ng.is_grad_enabled() is outer
        assert ng.is_grad_enabled() is True
        assert y.requires_grad is mode


def test_set_grad_enabled_as_decorator():
    x = ng.ones(2, requires_grad=True)

    @ng.set_grad_enabled(False)
    def f(t):
        return t * 2

    assert ng.is_grad_enabled() is True  # decorating does not change the mode
    assert f(x).requires_grad is False
    assert ng.is_grad_enabled() is True


def test_is_grad_enabled_default():
    assert ng.is_grad_enabled() is True
    assert ng.autograd.is_grad_enabled() is True


def test_grad_mode_is_per_thread():
    """Thread A sits inside no_grad while thread B records a graph, and vice versa."""
    a_in_no_grad = threading.Event()
    b_checked = threading.Event()
    results = {}
    errors = []

    def thread_a():
        try:
            with ng.no_grad():
                results["a_enabled"] = ng.is_grad_enabled()
                a_in_no_grad.set()
                if not b_checked.wait(WAIT):
                    errors.append("b never checked")
                x = ng.ones(2, requires_grad=True)
                results["a_rg"] = (x * 2).requires_grad
            results["a_after"] = ng.is_grad_enabled()
        except Exception as e:  # pragma: no cover - reported below
            errors.append(repr(e))
            a_in_no_grad.set()

    def thread_b():
        try:
            if not a_in_no_grad.wait(WAIT):
                errors.append("a never entered no_grad")
            results["b_enabled"] = ng.is_grad_enabled()
            x = ng.ones(2, requires_grad=True)
            y = x * 2
            results["b_rg"] = y.requires_grad
            y.sum().backward()
            results["b_grad"] = x.grad.tolist()
        except Exception as e:  # pragma: no cover
            errors.append(repr(e))
        finally:
            b_checked.set()

    ta, tb = threading.Thread(target=thread_a), threading.Thread(target=thread_b)
    ta.start()
    tb.start()
    ta.join(WAIT)
    tb.join(WAIT)
    assert not ta.is_alive() and not tb.is_alive()
    assert errors == []
    assert results == {"a_enabled": False, "a_rg": False, "a_after": True,
                       "b_enabled": True, "b_rg": True, "b_grad": [2.0, 2.0]}
    assert ng.is_grad_enabled() is True


def test_new_thread_starts_with_grad_enabled_even_if_main_thread_disabled_it():
    seen = {}

    def worker():
        seen["enabled"] = ng.is_grad_enabled()
        seen["rg"] = (ng.ones(1, requires_grad=True) * 2).requires_grad

    with ng.no_grad():
        t = threading.Thread(target=worker)
        t.start()
        t.join(WAIT)
        assert not t.is_alive()
        assert ng.is_grad_enabled() is False
    assert seen == {"enabled": True, "rg": True}


def test_set_grad_enabled_in_a_thread_does_not_leak():
    done = threading.Event()

    def worker():
        ng.set_grad_enabled(False)  # never restored in that thread
        done.set()

    t = threading.Thread(target=worker)
    t.start()
    assert done.wait(WAIT)
    t.join(WAIT)
    assert ng.is_grad_enabled() is True


def test_backward_in_no_grad_still_computes_gradients():
    for m in (ng, torch):
        x = m.tensor([1.0, 2.0], requires_grad=True)
        out = (x * x).sum()
        with m.no_grad():
            out.backward()
        np.testing.assert_allclose(_np(x.grad), [2.0, 4.0])
        assert m.is_grad_enabled() is True


def test_requires_grad_():
    x = ng.tensor([1.0, 2.0])
    assert x.requires_grad_() is x
    assert x.requires_grad is True and x.is_leaf
    y = x * 3
    assert y.grad_fn.name() == "MulBackward0"
    assert x.requires_grad_(False) is x
    assert x.requires_grad is False
    assert (x * 3).requires_grad is False
    x.requires_grad = True  # the property setter
    assert x.requires_grad is True
    (x * 3).sum().backward()
    np.testing.assert_allclose(_np(x.grad), [3.0, 3.0])


def test_requires_grad_true_on_non_leaf_is_allowed():
    for m in (ng, torch):
        y = m.ones(2, requires_grad=True) * 2
        assert y.requires_grad_(True) is y
        assert y.requires_grad and not y.is_leaf


def test_data_gives_values_without_history_sharing_storage():
    x = ng.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    d = y.data
    assert d.requires_grad is False and d.grad_fn is None and d.is_leaf
    assert d.tolist() == [2.0, 4.0]
    xd = x.data
    assert xd.requires_grad is False and x.requires_grad is True
    xd.numpy()[0] = 7.0
    assert x.detach().tolist() == [7.0, 2.0]
    assert (x.data * 2).requires_grad is False


def test_data_setter_replaces_values_and_keeps_leaf():
    for m in (ng, torch):
        x = m.tensor([1.0, 2.0], requires_grad=True)
        x.data = m.tensor([5.0, 6.0])
        assert x.requires_grad and x.is_leaf
        assert x.detach().tolist() == [5.0, 6.0]
        (x * x).sum().backward()
        np.testing.assert_allclose(_np(x.grad), [10.0, 12.0])


# --------------------------------------------------------------------------- 6. the graph
def _signature(fn, depth=0):
    """A comparable description of the graph under ``fn``."""
    if fn is None:
        return None
    name = type(fn).__name__ if type(fn).__name__ == "AccumulateGrad" else fn.name()
    return (name, tuple((_signature(c, depth + 1), i) for c, i in fn.next_functions))


def test_next_functions_structure_matches_pytorch():
    xv = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    sigs = {}
    for m in (ng, torch):
        x = m.tensor(xv, requires_grad=True)
        w = m.tensor(xv * 0.5, requires_grad=True)
        c = m.tensor(xv + 1)
        out = ((x * w + c).exp() / (c - 1) + w.t() @ x).sum()
        sigs[m.__name__] = _signature(out.grad_fn)
    assert sigs["numgrad"] == sigs["torch"]


def test_next_functions_none_for_inputs_not_requiring_grad():
    x = ng.ones(2, requires_grad=True)
    fn = (x + 2).grad_fn
    assert fn.next_functions[1] == (None, 0)
    assert type(fn.next_functions[0][0]).__name__ == "AccumulateGrad"
    assert fn.next_functions[0][1] == 0
    c = ng.ones(2)
    fn2 = (c * x).grad_fn
    assert fn2.next_functions[0] == (None, 0)
    assert type(fn2.next_functions[1][0]).__name__ == "AccumulateGrad"
    # as in PyTorch
    tx = torch.ones(2, requires_grad=True)
    assert (tx + 2).grad_fn.next_functions[1] == (None, 0)
    assert (torch.ones(2) * tx).grad_fn.next_functions[0] == (None, 0)


def test_same_accumulate_grad_for_same_leaf():
    x = ng.ones(2, requires_grad=True)
    a = x * 2
    b = x + 1
    acc_a = a.grad_fn.next_functions[0][0]
    acc_b = b.grad_fn.next_functions[0][0]
    assert acc_a is acc_b
    assert acc_a.variable is x
    assert isinstance(acc_a, ng.autograd.AccumulateGrad)
    # both edges of x * x point at the one AccumulateGrad
    fn = (x * x).grad_fn
    assert fn.next_functions[0][0] is fn.next_functions[1][0] is acc_a
    y = ng.ones(2, requires_grad=True)
    assert (y * 2).grad_fn.next_functions[0][0] is not acc_a
    # PyTorch agrees
    tx = torch.ones(2, requires_grad=True)
    ta, tb = tx * 2, tx + 1
    assert ta.grad_fn.next_functions[0][0] is tb.grad_fn.next_functions[0][0]


def test_accumulate_grad_node_name():
    x = ng.ones(2, requires_grad=True)
    acc = (x * 2).grad_fn.next_functions[0][0]
    assert type(acc).__name__ == "AccumulateGrad"
    assert "AccumulateGrad" in acc.name()
    assert acc.next_functions == ()


def test_grad_fn_of_leaf_and_repr_of_node():
    x = ng.ones(2, requires_grad=True)
    y = x.sum()
    assert repr(y.grad_fn).startswith("<SumBackward0 object at 0x")


# --------------------------------------------------------------------------- 7. dynamic control flow
def _doubling_loop(m, xv, v):
    x = m.tensor(xv, requires_grad=True)
    y = x * 2
    k = 0
    while y.data.norm() < 1000:
        y = y * 2
        k += 1
    y.backward(m.tensor(v))
    length = 0
    fn = y.grad_fn
    while fn is not None and type(fn).__name__ != "AccumulateGrad":
        assert fn.name() == "MulBackward0"
        length += 1
        fn = fn.next_functions[0][0]
    return k, length, _np(x.grad), _np(y)


@pytest.mark.parametrize("xv", [[0.3, -0.2, 0.5], [1e-3, 2e-3, -1e-3], [400.0, 300.0, 0.0]])
def test_while_loop_on_data_norm_builds_graph_of_loop_length(xv):
    v = [0.1, 1.0, 0.0001]
    k, length, grad, y = _doubling_loop(ng, xv, v)
    # the number of doublings, by hand
    n = np.linalg.norm(np.array(xv, np.float64) * 2)
    k_hand = 0
    while n < 1000:
        n *= 2
        k_hand += 1
    assert k == k_hand
    assert length == k + 1
    np.testing.assert_allclose(grad, np.array(v, np.float32) * 2.0 ** (k + 1), rtol=1e-6)
    tk, tlength, tgrad, ty = _doubling_loop(torch, xv, v)
    assert (k, length) == (tk, tlength)
    np.testing.assert_allclose(grad, tgrad, rtol=1e-6)
    np.testing.assert_allclose(y, ty, rtol=1e-6)


def test_python_branch_on_tensor_value():
    for xv, factor in (([1.0, 2.0], 3.0), ([-1.0, -2.0], -5.0)):
        x = ng.tensor(xv, requires_grad=True)
        y = x * 3 if x.sum() > 0 else x * -5
        y.sum().backward()
        np.testing.assert_allclose(_np(x.grad), [factor, factor])


# --------------------------------------------------------------------------- seed walkthroughs
def test_seed_walkthrough_1():
    reprs = {}
    for m in (ng, torch):
        x = m.ones(2, 2, requires_grad=True)
        y = x + 2
        z = y * y * 3
        out = z.mean()
        reprs[m.__name__] = (repr(x), repr(y), repr(z), repr(out))
        assert repr(y).endswith("grad_fn=<AddBackward0>)")
        assert y.grad_fn.name() == "AddBackward0"
        assert z.grad_fn.name() == "MulBackward0"
        assert out.grad_fn.name() == "MeanBackward0"
        assert out.item() == 27.0
        out.backward()
        np.testing.assert_array_equal(_np(x.grad), np.full((2, 2), 4.5))
        reprs[m.__name__] += (repr(x.grad),)
    assert reprs["numgrad"][1] == "tensor([[3., 3.],\n        [3., 3.]], grad_fn=<AddBackward0>)"
    assert reprs["numgrad"][3] == "tensor(27., grad_fn=<MeanBackward0>)"
    assert reprs["numgrad"] == reprs["torch"]


def test_seed_walkthrough_2():
    ng.manual_seed(0)
    a = ng.randn(2, 2)
    a = (a * 3) / (a - 1)
    assert a.requires_grad is False
    assert a.grad_fn is None
    assert a.requires_grad_(True) is a
    assert a.requires_grad is True
    b = (a * a).sum()
    assert b.grad_fn.name() == "SumBackward0"
    assert repr(b.grad_fn).startswith("<SumBackward0 object at ")
    b.backward()
    np.testing.assert_allclose(_np(a.grad), 2 * _np(a), rtol=1e-6)


def test_seed_walkthrough_3():
    ng.manual_seed(1)
    x = ng.randn(3, requires_grad=True)
    y = x * 2
    k = 0
    while y.data.norm() < 1000:
        y = y * 2
        k += 1
    v = ng.tensor([0.1, 1.0, 0.0001], dtype=ng.float32)
    y.backward(v)
    expected = np.array([0.1, 1.0, 0.0001], np.float32).astype(np.float64) * 2.0 ** (k + 1)
    np.testing.assert_allclose(_np(x.grad), expected, rtol=1e-6)
    # k is what the loop had to do: y = x * 2**(k+1) is the first with norm >= 1000
    xn = np.linalg.norm(_np(x))
    assert xn * 2.0 ** (k + 1) >= 1000 * (1 - 1e-6)
    assert xn * 2.0 ** k < 1000 * (1 + 1e-6)


def test_first_gradient_never_aliases_a_tensor_someone_else_holds():
    """The engine takes a fresh gradient as .grad without copying it; anything shared is copied,
    so later accumulation into .grad cannot change the caller's tensors."""
    a = ng.ones(3, requires_grad=True)
    b = ng.ones(3, requires_grad=True)
    seed = ng.ones(3)
    (a + b).backward(seed)  # the same seed flows, unchanged, to both leaves
    assert a.grad._data is not seed._data and b.grad._data is not seed._data
    assert a.grad._data is not b.grad._data
    (a + b).backward(seed)
    assert seed.tolist() == [1.0, 1.0, 1.0] and a.grad.tolist() == [2.0, 2.0, 2.0]
    kept = []
    c = ng.ones(3, requires_grad=True)
    c.register_hook(lambda g: kept.append(g))
    (c * 3).sum().backward()
    (c * 3).sum().backward()
    assert kept[0].tolist() == [3.0, 3.0, 3.0] and c.grad.tolist() == [6.0, 6.0, 6.0]
