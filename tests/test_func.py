"""``numgrad.func`` and ``numgrad.autograd.forward_ad`` against PyTorch's ``torch.func`` and
``torch.autograd.forward_ad`` (values and shapes), finite differences in float64, PyTorch's error
messages, and the op registry's coverage: every op's forward (jvp) rule checked against finite
differences on its samples, and the ops still without a jvp rule or a batching rule listed (the
lists may only shrink)."""
import warnings

import numpy as np
import pytest
import torch
import torch.autograd.forward_ad as tfwd
import torch.func as tfunc

import numgrad
import numgrad.func as nfunc
from numgrad.autograd import forward_ad as nfwd
from numgrad.ops.registry import REGISTRY

RNG = np.random.default_rng(30)
X5 = RNG.standard_normal(5)
V5 = RNG.standard_normal(5)
W35 = RNG.standard_normal((3, 5))
XB = RNG.standard_normal((4, 5))
YB = RNG.standard_normal((4, 3))
B453 = RNG.standard_normal((4, 5, 3))
X3246 = RNG.standard_normal((3, 2, 4, 6))


def _t(m, a):
    return m.tensor(np.asarray(a))


def _np(x):
    if isinstance(x, (tuple, list)):
        return [_np(v) for v in x]
    if isinstance(x, dict):
        return {k: _np(v) for k, v in x.items()}
    return x.detach().numpy()


def _same(a, b, atol=1e-10):
    if isinstance(a, (list, tuple)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y, atol)
        return
    if isinstance(a, dict):
        assert a.keys() == b.keys()
        for k in a:
            _same(a[k], b[k], atol)
        return
    assert a.shape == b.shape
    np.testing.assert_allclose(a, b, atol=atol, rtol=1e-7)


def _mlp(m):
    def f(x, w):
        return (m.tanh(w @ x) ** 2).sum()
    return f


# (name, call(m, func) -> result): each run with numgrad and numgrad.func, then torch and
# torch.func, and compared
CASES = {
    "grad": lambda m, F: F.grad(_mlp(m))(_t(m, X5), _t(m, W35)),
    "grad_argnums": lambda m, F: F.grad(_mlp(m), argnums=(0, 1))(_t(m, X5), _t(m, W35)),
    "grad_has_aux": lambda m, F: F.grad(lambda x: (x.sin().sum(), x.cos()), has_aux=True)(
        _t(m, X5)),
    "grad_and_value": lambda m, F: F.grad_and_value(_mlp(m), argnums=1)(_t(m, X5), _t(m, W35)),
    "grad_dict_input": lambda m, F: F.grad(lambda p, x: (p["w"] @ x + p["b"]).pow(2).sum())(
        {"w": _t(m, W35), "b": _t(m, V5[:3])}, _t(m, X5)),
    "grad_grad": lambda m, F: F.grad(F.grad(lambda x: x.sin() * x))(_t(m, 0.7)),
    "vjp": lambda m, F: F.vjp(lambda x, w: m.tanh(w @ x), _t(m, X5), _t(m, W35))[1](
        _t(m, V5[:3])),
    "jvp": lambda m, F: F.jvp(lambda x: m.tanh(_t(m, W35) @ x).exp(), (_t(m, X5),),
                              (_t(m, V5),)),
    "jvp_two_inputs": lambda m, F: F.jvp(lambda x, w: (w @ x).softmax(0),
                                         (_t(m, X5), _t(m, W35)), (_t(m, V5), _t(m, W35))),
    "linearize": lambda m, F: F.linearize(lambda x: x.sin() * x.sum(), _t(m, X5))[1](
        _t(m, V5)),
    "jacrev": lambda m, F: F.jacrev(lambda x: m.tanh(_t(m, W35) @ x))(_t(m, X5)),
    "jacrev_argnums": lambda m, F: F.jacrev(lambda x, w: w @ x.sin(), argnums=(0, 1))(
        _t(m, X5), _t(m, W35)),
    "jacfwd": lambda m, F: F.jacfwd(lambda x: m.tanh(_t(m, W35) @ x))(_t(m, X5)),
    "jacfwd_argnums": lambda m, F: F.jacfwd(lambda x, w: w @ x.sin(), argnums=(0, 1))(
        _t(m, X5), _t(m, W35)),
    "hessian": lambda m, F: F.hessian(lambda x: (x.sin() * x.exp()).sum() + x.pow(3).sum())(
        _t(m, X5)),
    "hessian_mlp": lambda m, F: F.hessian(_mlp(m), argnums=1)(_t(m, X5), _t(m, W35)),
    "jacrev_jacrev": lambda m, F: F.jacrev(F.jacrev(lambda x: x.tanh().sum()))(_t(m, X5)),
    "jvp_of_grad": lambda m, F: F.jvp(F.grad(_mlp(m)), (_t(m, X5), _t(m, W35)),
                                      (_t(m, V5), _t(m, W35)))[1],
    "grad_of_jvp": lambda m, F: F.grad(lambda x: F.jvp(lambda y: y.sin().sum(), (x,),
                                                       (_t(m, V5),))[1])(_t(m, X5)),
    "vmap": lambda m, F: F.vmap(lambda x: m.tanh(_t(m, W35) @ x).sum(0))(_t(m, XB)),
    "vmap_in_dims": lambda m, F: F.vmap(lambda x, y: x.sum() * y, in_dims=(1, None))(
        _t(m, XB), _t(m, V5)),
    "vmap_out_dims": lambda m, F: F.vmap(lambda x: x.unsqueeze(0) * 2, out_dims=2)(_t(m, XB)),
    "vmap_nested": lambda m, F: F.vmap(F.vmap(lambda a, b: a * b + a.sum()))(
        _t(m, XB), _t(m, XB[::-1].copy())),
    "vmap_pytree": lambda m, F: F.vmap(lambda d: d["a"] @ d["b"], in_dims=({"a": 0, "b": None},))(
        {"a": _t(m, XB), "b": _t(m, V5)}),
    "vmap_chunk_size": lambda m, F: F.vmap(lambda x: x.softmax(0), chunk_size=3)(_t(m, XB)),
    "vmap_views": lambda m, F: F.vmap(
        lambda x: x.view(5, 1).expand(5, 2).t().reshape(-1)[1::2].flatten())(_t(m, XB)),
    "vmap_reductions": lambda m, F: F.vmap(
        lambda x: m.stack([x.mean(), x.amax(), x.std(), x.logsumexp(0), x.max()]))(_t(m, XB)),
    "vmap_matmul_shapes": lambda m, F: F.vmap(
        lambda a, b: (a @ b, b @ b.T @ a, m.outer(a, a) @ a, b.T @ b))(_t(m, XB), _t(m, B453)),
    "vmap_losses": lambda m, F: F.vmap(lambda x, y: (
        m.nn.functional.mse_loss(x, y), m.nn.functional.cross_entropy(x.unsqueeze(0),
                                                                       y.argmax().unsqueeze(0)),
        m.nn.functional.multi_margin_loss(x.unsqueeze(0), y.argmax().unsqueeze(0))))(
        _t(m, YB), _t(m, YB[::-1].copy())),
    "vmap_pads_and_interpolate": lambda m, F: F.vmap(lambda x: (
        m.nn.functional.pad(x, (1, 2)), m.nn.functional.pad(x, (1, 2, 1, 1), mode="reflect"),
        m.nn.functional.interpolate(x.unsqueeze(0), scale_factor=2)))(_t(m, X3246)),
    "vmap_index_and_products": lambda m, F: F.vmap(lambda x: (
        x.index_add(1, m.tensor([0, 2]), x[:, :2] * 2), x.index_fill(2, m.tensor([1]), 0.5),
        m.addmv(x[0, :, 0], x[0], x[1, 0]), m.dist(x[0], x[1]), m.cdist(x[0], x[1]),
        m.linalg.cross(x[0, :, :3], x[1, :, :3]), x.unfold(2, 2, 2), x.sort()[0],
        m.gather(x, 2, m.tensor([[[0, 1]] * 4] * 2)), x.roll(1, 1), m.trace(x[0, :, :4]),
        m.linalg.det(x[0, :2, :2])))(_t(m, X3246)),
    "vmap_kwargs_and_out_dims": lambda m, F: (
        F.vmap(lambda x, scale=1.0: x * scale)(_t(m, XB), scale=3.0),
        F.vmap(lambda x: (x, x.sum()), out_dims=(1, 0))(_t(m, XB)),
        F.vmap(lambda x, y: (x * 2, y), in_dims=(0, None), out_dims=(0, None))(_t(m, XB),
                                                                             _t(m, V5)),
        F.vmap(lambda x: {"a": x.exp(), "b": x.max()})(_t(m, XB)),
        F.vmap(lambda x: x.sum(), in_dims=-1)(_t(m, XB))),
    "vmap_metadata_and_in_place": lambda m, F: F.vmap(lambda x: (
        x.reshape(x.shape[0], 1) * x.size(0) + len(x) + x.dim() + x.new_zeros(1),
        x.clone().mul_(2).add_(1), x.clone().index_fill_(0, m.tensor([1]), 2.0)))(_t(m, XB)),
    "vmap_split_topk_index": lambda m, F: F.vmap(lambda x, i: (
        x.split(2), x.chunk(2), x.unbind(), x.topk(2).values, x[i], x[m.tensor([2, 0])],
        x.select(0, 1), x.take(m.tensor([[4, 0], [1, 1]]))))(_t(m, XB), m.tensor([0, 1, 2, 1])),
    "vmap_conv_pool_module": lambda m, F: F.vmap(lambda x: (
        m.nn.functional.conv2d(x, m.ones(2, 2, 2, 2, dtype=x.dtype)),
        m.nn.functional.max_pool2d(x, 2), m.nn.functional.avg_pool2d(x.unsqueeze(0), 2)))(
        _t(m, X3246[:, :, :, :4].copy())),
    "jvp_vjp_has_aux": lambda m, F: (
        F.jvp(lambda x: (x.sin(), x.cos()), (_t(m, V5),), (_t(m, X5),), has_aux=True),
        (lambda r: (r[0], r[1](_t(m, V5)), r[2]))(
            F.vjp(lambda x: (x.sin(), x.cos()), _t(m, X5), has_aux=True))),
    "jac_pytrees_and_aux": lambda m, F: (
        F.jacrev(lambda x: {"s": x.sin(), "t": x.sum()})(_t(m, X5)),
        F.jacfwd(lambda d: d["a"] * d["b"])({"a": _t(m, X5), "b": _t(m, V5)}),
        F.jacrev(lambda x: (x.sin(), x.cos()), has_aux=True)(_t(m, X5)),
        F.jacfwd(lambda x: (x.sin(), x.cos()), has_aux=True)(_t(m, X5)),
        F.jacrev(lambda x: x.sin(), chunk_size=2)(_t(m, X5)),
        F.hessian(lambda x, y: (x * y.sin()).sum(), argnums=(0, 1))(_t(m, X5), _t(m, V5))),
    "vmap_jvp_vjp_linearize": lambda m, F: (
        F.vmap(lambda x, t: F.jvp(lambda y: y.sin(), (x,), (t,)))(_t(m, XB), _t(m, XB)),
        F.vmap(lambda x, t: F.vjp(lambda y: y.sin(), x)[1](t))(_t(m, XB), _t(m, XB)),
        F.vmap(F.linearize(lambda x: x.sin() * 2, _t(m, V5))[1])(_t(m, XB))),
    "grad_of_vmap_of_grad": lambda m, F: F.grad(lambda w: F.vmap(F.grad(
        lambda x, w: (x * w).sin().sum(), argnums=1), in_dims=(0, None))(_t(m, XB), w).sum())(
        _t(m, V5)),
    "vmap_grad": lambda m, F: F.vmap(F.grad(_mlp(m)), in_dims=(0, None))(_t(m, XB), _t(m, W35)),
    "vmap_grad_per_sample": lambda m, F: F.vmap(F.grad(_mlp(m), argnums=1), in_dims=(0, None))(
        _t(m, XB), _t(m, W35)),
    "vmap_jacrev": lambda m, F: F.vmap(F.jacrev(lambda x: m.tanh(_t(m, W35) @ x)))(_t(m, XB)),
    "vmap_jacfwd": lambda m, F: F.vmap(F.jacfwd(lambda x: m.tanh(_t(m, W35) @ x)))(_t(m, XB)),
    "vmap_hessian": lambda m, F: F.vmap(F.hessian(lambda x: x.sin().sum() * x.sum()))(_t(m, XB)),
    "grad_of_vmap": lambda m, F: F.grad(lambda w: F.vmap(lambda x: (w @ x).tanh().sum())(
        _t(m, XB)).sum())(_t(m, W35)),
    "jacfwd_of_vmap": lambda m, F: F.jacfwd(lambda x: F.vmap(lambda r: r.sin() * r.sum())(x))(
        _t(m, XB[:2])),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_transform_matches_torch_func(name):
    case = CASES[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours = case(numgrad, nfunc)
    _same(_np(ours), _np(case(torch, tfunc)))


def _per_sample_grads(m, F, model, x, y):
    params = {k: v.detach() for k, v in model.named_parameters()}

    def loss(p, xi, yi):
        out = F.functional_call(model, p, (xi.unsqueeze(0),))
        return m.nn.functional.cross_entropy(out, yi.unsqueeze(0))

    return F.vmap(F.grad(loss), in_dims=(None, 0, 0))(params, x, y)


def _models(make):
    ours, theirs = make(numgrad), make(torch)
    with torch.no_grad():
        for (_, pt), (_, pn) in zip(theirs.named_parameters(), ours.named_parameters()):
            pt.copy_(torch.tensor(pn.detach().numpy()))
    return ours, theirs


def test_per_sample_gradients_of_an_mlp_with_functional_call():
    def make(m):
        return m.nn.Sequential(m.nn.Linear(12, 8), m.nn.ReLU(), m.nn.Linear(8, 8), m.nn.Tanh(),
                               m.nn.Linear(8, 3)).double()

    ours, theirs = _models(make)
    x, y = RNG.standard_normal((6, 12)), RNG.integers(0, 3, 6)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (no loop fallback on this path)
        # (a kernel's first compile on a cold cache says so once: not a fallback)
        warnings.filterwarnings("ignore", category=numgrad.KernelCompileWarning)
        got = _per_sample_grads(numgrad, nfunc, ours, _t(numgrad, x), _t(numgrad, y))
    want = _per_sample_grads(torch, tfunc, theirs, _t(torch, x), _t(torch, y))
    _same(_np(got), _np(want))
    # and each example's gradient is the gradient of that example alone
    for i in (0, 5):
        ours.zero_grad()
        out = ours(_t(numgrad, x[i:i + 1]))
        numgrad.nn.functional.cross_entropy(out, _t(numgrad, y[i:i + 1])).backward()
        for k, p in ours.named_parameters():
            np.testing.assert_allclose(got[k][i].numpy(), p.grad.numpy(), atol=1e-12)


def test_model_ensembling_with_stack_module_state():
    def make(m):
        m.manual_seed(0)
        return [m.nn.Linear(5, 3).double() for _ in range(4)]

    ours, theirs = make(numgrad), make(torch)
    with torch.no_grad():
        for a, b in zip(ours, theirs):
            for (_, pn), (_, pt) in zip(a.named_parameters(), b.named_parameters()):
                pt.copy_(torch.tensor(pn.detach().numpy()))

    def run(m, F, models):
        params, buffers = F.stack_module_state(models)
        base = models[0]

        def call(p, b, x):
            return F.functional_call(base, (p, b), (x,))

        return F.vmap(call, in_dims=(0, 0, None))(params, buffers, _t(m, XB)), params

    got, gp = run(numgrad, nfunc, ours)
    want, tp = run(torch, tfunc, theirs)
    _same(_np(got), _np(want))
    assert all(p.requires_grad and p.is_leaf for p in gp.values())


# ---------------------------------------------------------------------------- forward_ad API
def test_dual_tensors_match_torch_forward_ad():
    def run(m, fwd):
        x, v = _t(m, X5), _t(m, V5)
        with fwd.dual_level():
            d = fwd.make_dual(x, v)
            y = (d.exp() * d.sin()).sum() / d.norm()
            z = m.nn.functional.log_softmax(m.tanh(d.view(1, 5) @ _t(m, W35).T), 1)
            p, t = fwd.unpack_dual(y)
            pz, tz = fwd.unpack_dual(z)
            plain = fwd.unpack_dual(x)
            return p, t, pz, tz, plain.tangent is None, type(fwd.unpack_dual(y)).__name__, \
                fwd.unpack_dual(y)._fields

    ours, theirs = run(numgrad, nfwd), run(torch, tfwd)
    _same(_np(list(ours[:4])), _np(list(theirs[:4])))
    assert ours[4:] == theirs[4:]


def test_forward_ad_in_place_and_reverse_over_forward():
    def run(m, fwd):
        x = _t(m, X5).requires_grad_()
        with fwd.dual_level():
            d = fwd.make_dual(x, _t(m, V5))
            y = d * 1.0
            y.mul_(d)  # (in place: its tangent follows)
            t = fwd.unpack_dual(y).tangent
            (g,) = m.autograd.grad(t.sum(), x)  # (d/dx of the tangent 2 x v)
            return t, g

    _same(_np(run(numgrad, nfwd)), _np(run(torch, tfwd)))


def test_forward_ad_views_share_their_bases_tangent():
    """As PyTorch's, a view's tangent is a view of its base's (the ``as_strided`` forward rule):
    writes in place into the base, into a view, through ``t[key] = v``, with and without
    history, and a dual tensor's own tangent (a view of a primal that has none); the tangents'
    own gradients (reverse over forward) too."""
    def run(m, fwd):
        a = _t(m, X5[:4] + 3).requires_grad_()
        with fwd.dual_level():
            x = fwd.make_dual(a * 1, _t(m, V5[:4]))
            plain = fwd.make_dual(_t(m, X5[:4]), _t(m, V5[:4]))
            plain.mul_(2)  # (no history: the general path, for the tangent)
            y = x * 1
            v = y[1:3]
            v.mul_(x[:2])  # (a view written: its base's tangent)
            w = y.view(2, 2)
            y.add_(x)  # (the base written: its views' tangents)
            yv = y[2:]
            yv[0] = x[3] * 5
            z = m.zeros(4, dtype=m.float64)
            zv = z[1:]
            zv.copy_(y[:3].exp() * plain[:3])  # (a base without a tangent gets one)
            out = [fwd.unpack_dual(q).tangent for q in (plain, y, v, w, yv, z, zv)]
            grads = m.autograd.grad(sum((o * (i + 1)).sum() for i, o in enumerate(out)), a)
            return out, grads, fwd.unpack_dual(_t(m, X5)).tangent is None

    ours, theirs = run(numgrad, nfwd), run(torch, tfwd)
    _same(_np(ours[:2]), _np(theirs[:2]))
    assert ours[2] and theirs[2]


def test_jacobians_and_hessian_through_in_place_writes_into_views():
    """jacfwd (forward AD under vmap), jacrev and hessian (forward over reverse) of a function
    that writes into views of its intermediates and into a tensor of its own: torch.func's."""
    def f(m):
        def g(x):
            y = x * 1
            y[1:3].mul_(x[:2])
            y.add_(x.sin())
            z = y.exp() * 1
            z[1:] = y[:3].exp()
            filled = m.zeros(4, dtype=x.dtype)  # (a tensor of its own, filled with the
            filled[:2] = x[2:] * 3  # inputs' values: PyTorch batches the tangents alone)
            return z * y + filled
        return g

    def run(m, F):
        x = _t(m, X5[:4])
        return F.jacfwd(f(m))(x), F.jacrev(f(m))(x), F.hessian(lambda v: f(m)(v).sum())(x)

    _same(_np(list(run(numgrad, nfunc))), _np(list(run(torch, tfunc))))


def test_forward_ad_errors_are_pytorchs(monkeypatch):
    with pytest.raises(RuntimeError, match="no level exists, make sure to enter_dual_level"):
        nfwd.make_dual(_t(numgrad, X5), _t(numgrad, V5))
    with nfwd.dual_level():
        with pytest.raises(RuntimeError, match="Nested forward mode AD is not supported"):
            with nfwd.dual_level():
                pass
    with pytest.raises(NotImplementedError) as theirs:  # (an op PyTorch does not differentiate)
        tfunc.jvp(lambda t: torch.remainder(2.0, t), (_t(torch, X5),), (_t(torch, V5),))
    with pytest.raises(NotImplementedError) as ours:
        nfunc.jvp(lambda t: numgrad.remainder(2.0, t), (_t(numgrad, X5),), (_t(numgrad, V5),))
    assert str(ours.value) == str(theirs.value)
    with nfwd.dual_level():
        with pytest.raises(RuntimeError, match="forward gradient that has a different size"):
            nfwd.make_dual(_t(numgrad, X5), _t(numgrad, V5[:2]))
        d = nfwd.make_dual(_t(numgrad, X5), _t(numgrad, V5))
        monkeypatch.setattr(REGISTRY["sin"], "jvp", None)  # (an op without a forward rule)
        with pytest.raises(NotImplementedError,
                           match="Trying to use forward AD with sin that does not support it "
                                 "because it has not been implemented yet"):
            numgrad.sin(d)
    assert nfwd.unpack_dual(d).tangent is None  # (the level's tangents went with it)


def test_grad_and_vmap_errors_are_pytorchs():
    x = _t(numgrad, X5)
    with pytest.raises(RuntimeError, match="Expected f\\(\\*args\\) to return a scalar Tensor, "
                                           "got tensor with 1 dims"):
        nfunc.grad(lambda x: x * 2)(x)
    with pytest.raises(RuntimeError, match="Expected f\\(\\*args\\) to return a Tensor"):
        nfunc.grad(lambda x: 3.0)(x)
    with pytest.raises(RuntimeError, match="Got argnum=1, but only 1 positional inputs"):
        nfunc.grad(lambda x: x.sum(), argnums=1)(x)
    for argnums, message in (((), "argnums must be non-empty"), ((0, -2), "argnums elements "
                                                                 "must be unique, got \\(0, 0\\)"),
                             ([0], "argnums must be int or Tuple\\[int, ...\\], got: <class "
                                   "'list'>"), ((0, 1.5), "argnum must be int, got: <class "
                                                          "'float'>")):
        with pytest.raises(RuntimeError, match=message):
            nfunc.grad(lambda a, b: (a * b).sum(), argnums=argnums)(x, x)
    with pytest.raises(RuntimeError, match="All outputs of f must be floating-point or complex "
                                           "Tensors, got Tensor with dtype numgrad.bool"):
        nfunc.jacrev(lambda a: a > 0)(x)
    with pytest.raises(ValueError, match="Expected all tensors to have the same size in the "
                                         "mapped dimension, got sizes \\[4, 3\\]"):
        nfunc.vmap(lambda a, b: a)(_t(numgrad, XB), _t(numgrad, YB.T.copy()))
    with pytest.raises(ValueError, match="expected in_dim to satisfy -2 <= in_dim < 2"):
        nfunc.vmap(lambda a: a, in_dims=2)(_t(numgrad, XB))
    with pytest.raises(ValueError, match="We cannot vmap over non-Tensor arguments"):
        nfunc.vmap(lambda a: a)(3.0)
    with pytest.raises(RuntimeError, match="calling .item\\(\\) on a Tensor"):
        nfunc.vmap(lambda a: a.sum().item())(_t(numgrad, XB))
    with pytest.raises(RuntimeError, match="randomness error mode"):
        nfunc.vmap(lambda a: numgrad.nn.functional.dropout(a, 0.5))(_t(numgrad, XB))
    out = nfunc.vmap(lambda a: numgrad.nn.functional.dropout(a, 0.5), randomness="same")(
        numgrad.ones(4, 6))
    assert (out == out[0]).all() and set(np.unique(out.numpy())) <= {0.0, 2.0}
    with pytest.raises(RuntimeError, match="Only allowed values for randomness"):
        nfunc.vmap(lambda a: a, randomness="other")


def test_an_op_without_a_batching_rule_loops_with_pytorchs_warning(monkeypatch):
    # (numgrad warns once an op per process: an earlier test's vmap of the op would have taken it)
    from numgrad.func import _vmap
    monkeypatch.setattr(_vmap, "_WARNED", set())
    with pytest.warns(UserWarning, match="There is a performance drop because we have not yet "
                                         "implemented the batching rule for"):
        got = nfunc.vmap(lambda a: numgrad.combinations(a[:3]))(_t(numgrad, XB))
    want = tfunc.vmap(lambda a: torch.combinations(a[:3]))(_t(torch, XB))
    _same(got.numpy(), want.numpy())


def test_vmap_and_transforms_on_edge_inputs_match_torch_func():
    """0-d examples, empty examples, an empty batch, negative and None in_dims, nested levels
    with their own in_dims and out_dims, out_dims negative, None and per key, NaN and inf, and
    the transforms of 0-d and empty inputs."""
    m4 = RNG.standard_normal((4, 3))
    nonfinite = np.array([[np.nan, 1, 2], [np.inf, -np.inf, 0], [1, np.nan, np.inf]])

    def run(m, F):
        a, x = _t(m, m4[:, 0].copy()), _t(m, m4)
        f64 = dict(dtype=m.float64)
        return (
            F.vmap(lambda v: m.stack([v * 2, v.sum(), v.sum(0), v.mean(), v.max(), v.softmax(0),
                                      v.view(1)[0], v.expand(3)[1], v[None][0], v.cumsum(0),
                                      v.norm()]))(a),
            F.vmap(lambda v: (v.unsqueeze(0), v.expand(2, 3), m.stack([v, v]), v.flatten(),
                              v.repeat(2), v.new_zeros(2) + v))(a),
            F.vmap(lambda v: (v * 2, v.sum(), v.sum(0), v.reshape(0, 1), m.cat([v, v]),
                              v.unsqueeze(1)))(m.zeros(3, 0, **f64)),
            F.vmap(lambda v: (v * 2, v.sum(), v @ v))(m.zeros(0, 3, **f64)),
            F.vmap(lambda v: v.sum(0), in_dims=-1)(x),
            F.vmap(lambda v, w, s: v * w + s, in_dims=(-2, None, None))(x, x[0], 2.0),
            F.vmap(F.vmap(lambda v, w: v * w.sum(), in_dims=(0, None)), in_dims=(1, 0))(
                x, x.T.contiguous()),
            F.vmap(F.vmap(lambda v: v.unsqueeze(0).expand(2, 1), out_dims=1), out_dims=-1)(x),
            F.vmap(lambda v: (v.view(1, 3), v.sum(), m.ones(2, **f64)),
                   out_dims=(-1, 0, None))(x),
            F.vmap(lambda v: {"a": v, "b": v.sum()}, out_dims={"a": 1, "b": 0})(x),
            F.vmap(lambda v: (v.amax(), v.logsumexp(0), v.max(0)[1], v.sort()[0],
                              v.nan_to_num(), v.argmax()))(_t(m, nonfinite)),
            F.hessian(lambda v: v.exp() * v)(m.tensor(0.3, **f64)),
            F.jacrev(lambda v: v * 2)(m.zeros(0, **f64)),
            F.jacfwd(lambda v: v * 2)(m.zeros(0, **f64)),
            F.vmap(F.jacfwd(lambda v: v.sin()))(m.zeros(0, 3, **f64)),
            F.vmap(F.grad(lambda v: v.sin().sum()))(m.zeros(0, 3, **f64)),
            F.grad(lambda v: (v * v).sum())(_t(m, nonfinite[1])))

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (no loop)
        got = run(numgrad, nfunc)
    want = run(torch, tfunc)
    _same(_np(list(got)), _np(list(want)))


@pytest.mark.parametrize("call", [
    lambda m, F: F.vmap(lambda v: v, in_dims=None)(m.ones(2)),
    lambda m, F: F.vmap(lambda v: v, in_dims=(None,))(m.ones(2)),
    lambda m, F: F.vmap(lambda: 1)(),
    lambda m, F: F.vmap(lambda v: v, out_dims=3)(m.ones(2, 2)),
    lambda m, F: F.vmap(lambda v: v, out_dims=1.0)(m.ones(2)),
    lambda m, F: F.vmap(lambda v: None)(m.ones(2)),
    lambda m, F: F.jacrev(lambda v: v * 2)(m.tensor([1, 2])),
], ids=["in_dims_None", "all_None", "no_inputs", "out_dims_range", "out_dims_float",
        "returns_None", "integer_input"])
def test_vmap_and_transform_misuse_raises_pytorchs_error(call):
    with pytest.raises(Exception) as theirs:
        call(torch, tfunc)
    with pytest.raises(type(theirs.value)) as ours:
        call(numgrad, nfunc)
    assert str(ours.value) == str(theirs.value)


def test_functions_without_a_rule_run_as_compositions_of_ops_with_rules():
    """A public function without a batching rule runs on the batched tensors as what it is, a
    composition of ops with rules (broadcast_to, cosine_similarity, cov, matrix_power ...);
    an in-place form as its out-of-place twin copied in; and kernels of their own with small
    compositions as rules (outer, kron, tile, rot90, tensordot, attention ...): no loop,
    torch.func.vmap's values."""
    x, y = RNG.standard_normal((3, 4, 5)), RNG.standard_normal((3, 4, 5))

    def run(m, F):
        fn = m.nn.functional
        return F.vmap(lambda a, b: (
            m.broadcast_to(a[0], (2, 5)), fn.cosine_similarity(a, b), fn.pairwise_distance(a, b),
            m.cov(a), m.linalg.matrix_power(a[:, :4], 3), m.linalg.multi_dot([a, b.T, a]),
            fn.triplet_margin_loss(a, b, a * 2), a.ravel(), (a.clamp(-0.9, 0.9) * 1).acos_(),
            (a * 1).index_add_(0, m.tensor([0, 2]), b[:2]), (a.abs() * 1).xlogy_(b.abs()),
            m.outer(a[0], b[1]), m.kron(a[:2, :2], b[:2, :3]), m.atleast_3d(a[0]),
            m.tile(a, (2, 1)), fn.softmin(a, 1), m.vdot(a[0], b[0]), m.inner(a, b),
            m.rot90(a, 1, (0, 1)), m.rot90(a, 3, (1, 0)), m.isclose(a, a + 1e-9),
            m.diagflat(a[0]), a.repeat_interleave(2, 0), m.tensordot(a, b, ([1], [1])),
            fn.rms_norm(a, (5,)), fn.scaled_dot_product_attention(a, b, b, is_causal=True),
            fn.scaled_dot_product_attention(a, b, b, attn_mask=a[:, :4] > 0),
            fn.hinge_embedding_loss(a, b.sign()), m.cartesian_prod(a[0], b[0]),
            a.put(m.tensor([0, -3]), b[0, :2]), fn.bilinear(a, b, (a[:3, :, None] * b[:3, None]),
                                                          b[0, :3])))(_t(m, x), _t(m, y))

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (no loop)
        got = run(numgrad, nfunc)
    _same(_np(list(got)), _np(list(run(torch, tfunc))))


def test_vmap_of_forms_the_op_database_showed_and_the_error_for_what_does_not_dispatch():
    """var with a positional unbiased, index_add of 0-d examples, a nuclear norm, the
    linalg.diagonal keywords, a view's copy, split aliases, constant_pad_nd, msort and
    torch.fft (which now dispatches) against torch.func.vmap; a batched tensor reaching a
    function that does not dispatch raises instead of computing with the whole batch."""
    x = RNG.standard_normal((3, 4, 5))

    def run(m, F):
        return F.vmap(lambda a: (
            a.var(True), m.index_add(a[0, 0], 0, m.tensor([0]), a[1, 1]), m.norm(a, p="nuc"),
            m.linalg.diagonal(a, offset=1), m.permute_copy(a, (1, 0)), m.unsafe_split(a, 2)[1],
            m.hsplit(a, [2])[0], m.constant_pad_nd(a, (1, 1), 0.5), m.msort(a),
            m.fft.fftshift(a), m.fft.irfft(a),
            a.index_fill(1, m.tensor([0, 2]), m.tensor(0.5, dtype=a.dtype)),
            m.as_strided(a, (2, 2), (2, 1), 1), m.as_strided(a[1:], (2, 2), (5, 1)),
            m.as_strided_copy(a, (3,), (2,)),  # (offsets: each example's own)
            m.meshgrid(a[0], a[1, :3], indexing="xy")[1], m.renorm(a, 1, 1, 0.5),
            m.take_along_dim(a, m.tensor([[0, 3]])), m.split_with_sizes_copy(a, [1, 3])[1],
            m.quantile(a, 0.3), m.nanquantile(a, m.tensor([0.2, 0.9], dtype=a.dtype), dim=0),
            m.quantile(a[0, 0], 0.5, dim=0),  # (a 0-d example: IndexError, its dim past 0)
            m.linalg.solve_triangular(a[:, :4].triu() + 4 * m.eye(4, dtype=a.dtype), a[:, 3:],
                                      upper=True),
            m.linalg.lu_solve(*m.linalg.lu_factor(a[:, :4] + 4 * m.eye(4, dtype=a.dtype)),
                              a[:, 3:]), m.linalg.matrix_rank(a[:, :4]).double(),
            m.linalg.cond(a[:, :4])))(_t(m, x))

    def shared_first(m, F):  # (an unbatched tensor with a batched one)
        base = _t(m, x[0])
        return F.vmap(lambda b: (
            m.slice_scatter(base, b[:, 1:3], 1, 1, 3), m.select_scatter(base, b[0], 0, 2),
            m.diagonal_scatter(base, b[0, :4], 0), base[0].expand_as(b), base.reshape_as(b),
            m.broadcast_tensors(base[:, :1], b[0])[0], m.isin(base, b[0]).double(),
            m.special.gammainc(base.abs() + 1, b.abs() + 1)))(_t(m, x[1:] * 2))

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (no loop)
        got = run(numgrad, nfunc), shared_first(numgrad, nfunc)
    _same(_np([list(g) for g in got]), _np([list(run(torch, tfunc)), list(shared_first(torch,
                                                                                       tfunc))]))
    with pytest.raises(RuntimeError, match="a batched tensor reached a function that does not "
                                           "dispatch"):
        nfunc.vmap(lambda a: numgrad.ops._safe_softmax(a, -1))(_t(numgrad, x))


def test_vmap_of_ops_whose_sizes_come_from_values():
    """Counting and masked ops under vmap, by their rules, against torch.func.vmap: a shared
    mask selects alike, per-example histograms over each example's own range, counts, and
    PyTorch's errors where the examples' results would differ in size."""
    x = np.array([[0.5, -1.0, 2.0, 2.0, 0.0], [3.0, 3.0, -2.0, 1.0, 1.5], [0.0, 0.0, 0.0, 0.0,
                                                                           0.0]])
    ints = np.array([[0, 3, 3, 1], [2, 0, 3, 3], [3, 3, 3, 3]])

    def run(m, F):
        t, i = _t(m, x), _t(m, ints)
        return (F.vmap(lambda a: a.masked_select(m.tensor([True, False, True, True, False])))(t),
                F.vmap(lambda a: a.histc(4))(t), F.vmap(lambda a: m.histc(a, 3, -1, 2))(t),
                F.vmap(lambda a, w: a.bincount(w, minlength=2))(i, t[:, :4]),
                F.vmap(lambda a, b: a.masked_scatter(b > 0, a * 10))(t, t.flip(1)),
                F.vmap(lambda a, b: m.block_diag(a, b.view(2, 2), a[0]))(t, t[:, :4]))

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (no loop)
        got = run(numgrad, nfunc)
    _same(_np(got), _np(run(torch, tfunc)))
    with pytest.raises(RuntimeError, match="Attempted to vmap over `mask` in "
                                           "torch.masked_select"):
        nfunc.vmap(lambda a: a.masked_select(a > 0))(_t(numgrad, x))
    with pytest.raises(RuntimeError, match="stack expects each tensor to be equal size, but got "
                                           "\\[4\\] at entry 0 and \\[3\\] at entry 2"):
        nfunc.vmap(lambda a: a.bincount())(_t(numgrad, np.array([[3, 0], [1, 3], [2, 2]])))
    for f in (lambda m, a: a.nonzero(), lambda m, a: m.unique(a),
              lambda m, a: m.unique_consecutive(a), lambda m, a: a.nonzero(as_tuple=True)[0]):
        with pytest.raises(RuntimeError) as theirs:
            tfunc.vmap(lambda a: f(torch, a))(_t(torch, x))
        with pytest.raises(RuntimeError) as ours:
            nfunc.vmap(lambda a: f(numgrad, a))(_t(numgrad, x))
        assert str(ours.value) == str(theirs.value)


def test_functionalize_behaves_as_pytorchs_eager_functionalize():
    """Outputs alias nothing the caller holds, an input written in place gets its new values,
    and it composes with grad and vmap; PyTorch's message for a bad ``remove``."""
    def run(m, F):
        def f(x):
            y = x.view(-1)
            y.add_(1)
            z = x * 2
            z.mul_(3)
            return y, z

        out = []
        for remove in ("mutations", "mutations_and_views"):
            x = _t(m, W35)
            y, z = F.functionalize(f, remove=remove)(x)
            y.add_(100)  # (not x's storage)
            out += [x, y, z]
        out.append(F.grad(lambda v: F.functionalize(lambda a: a.clone().mul_(a).sum())(v))(
            _t(m, X5)))
        out.append(F.vmap(F.functionalize(lambda a: a.clone().add_(a.exp())))(_t(m, XB)))
        return out, F.functionalize(f).__name__

    ours, theirs = run(numgrad, nfunc), run(torch, tfunc)
    _same(_np(ours[0]), _np(theirs[0]))
    assert ours[1] == theirs[1]
    with pytest.raises(RuntimeError) as want:
        tfunc.functionalize(lambda x: x, remove="views")
    with pytest.raises(RuntimeError) as got:
        nfunc.functionalize(lambda x: x, remove="views")
    assert str(got.value) == str(want.value)


def test_namespace_and_laziness():
    import subprocess
    import sys

    code = ("import sys, numgrad; assert 'numgrad.func' not in sys.modules; "
            "from numgrad.func import grad, vmap; assert numgrad.vmap is vmap; "
            "import numgrad.autograd.forward_ad as f; print(f.UnpackedDualTensor._fields)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "('primal', 'tangent')"


# --------------------------------------------------------------------- finite differences
def test_transforms_agree_with_finite_differences():
    f = lambda x: (x.sin() * x.exp()).sum() / (1 + x.pow(2).sum())  # noqa: E731
    x = _t(numgrad, X5)
    h = 1e-6
    fd = np.array([(f(x + h * e) - f(x - h * e)).item() / (2 * h)
                   for e in numgrad.eye(5, dtype=numgrad.float64)])
    np.testing.assert_allclose(nfunc.grad(f)(x).numpy(), fd, atol=1e-7)
    np.testing.assert_allclose(nfunc.jacfwd(f)(x).numpy(), fd, atol=1e-7)
    g = nfunc.grad(f)
    fd2 = np.stack([(g(x + h * e) - g(x - h * e)).numpy() / (2 * h)
                    for e in numgrad.eye(5, dtype=numgrad.float64)])
    np.testing.assert_allclose(nfunc.hessian(f)(x).numpy(), fd2, atol=1e-6)


def _samples():
    for name, op in sorted(REGISTRY.items()):
        if op.jvp is None or not op.differentiable:
            continue
        for i, s in enumerate(op.samples):
            if s.grad and name != "to_copy":  # (to_copy's samples cast to float32: FD noise)
                yield pytest.param(name, i, id=f"{name}-{i}")


@pytest.mark.parametrize("name,index", list(_samples()))
def test_every_jvp_rule_against_finite_differences(name, index):
    """The registry harness: each op's forward rule, on each of its samples, in float64, inputs
    that also require grad (the rules record), against central differences."""
    s = REGISTRY[name].samples[index]
    rng = np.random.default_rng(index)
    xs = [rng.uniform(s.low, s.high, size=sh) for sh in s.shapes]
    vs = [rng.standard_normal(size=sh) for sh in s.shapes]

    def call(arrays):
        ts = [numgrad.tensor(a, dtype=numgrad.float64, requires_grad=True) for a in arrays]
        out = s.call(numgrad, *ts)
        return list(out) if isinstance(out, (tuple, list)) else [out]

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with nfwd.dual_level():
            duals = [nfwd.make_dual(numgrad.tensor(x, requires_grad=True), numgrad.tensor(v))
                     for x, v in zip(xs, vs)]
            outs = s.call(numgrad, *duals)
            outs = list(outs) if isinstance(outs, (tuple, list)) else [outs]
            tangents = [nfwd.unpack_dual(o).tangent if isinstance(o, numgrad.Tensor) else None
                        for o in outs]
        eps = 1e-6
        plus = call([x + eps * v for x, v in zip(xs, vs)])
        minus = call([x - eps * v for x, v in zip(xs, vs)])
    for o, t, a, b in zip(outs, tangents, plus, minus):
        if not isinstance(o, numgrad.Tensor) or o.dtype != numgrad.float64:
            continue
        fd = (a.detach().numpy() - b.detach().numpy()) / (2 * eps)
        got = np.zeros_like(fd) if t is None else t.detach().numpy()
        assert got.shape == fd.shape
        np.testing.assert_allclose(got, fd, atol=1e-4, rtol=1e-3)


# --------------------------------------------------------------------------------- coverage
# The registered ops without a forward rule yet (under forward AD they raise PyTorch's
# NotImplementedError): this list may only shrink. Comparisons and integer-valued ops are not
# differentiable and need none.
NO_JVP_YET = frozenset({
    "embedding_bag",  # (PyTorch has none either: forward AD raises its NotImplementedError)
})

# The registered ops without a batching rule of their own under vmap (they loop over the batch,
# with PyTorch's warning): this list may only shrink. An op reached only through a public
# function with a rule (``sum_dim`` through ``sum``, ``getitem_slice`` through ``__getitem__``)
# counts as covered (``COVERED_BY``).
COVERED_BY = {
    "linalg_ldl_factor_ex": "ldl_factor_ex", "linalg_ldl_solve": "ldl_solve",
    "_scaled_dot_product_flash_attention_for_cpu": "scaled_dot_product_attention",
    "_upsample_bilinear2d_aa": "interpolate", "_upsample_bicubic2d_aa": "interpolate",
    "split_with_sizes": "split",
    "fft_c2c": "fft", "abs_complex": "abs", "angle_complex": "angle", "linalg_eig": "eig",
    "linalg_eig_vectors": "eig", "masked_fill_tensor": "masked_fill",
    "unsafe_split": "split", "unsafe_split_with_sizes": "split",
    "to_copy": "to", "pow_scalar": "pow", "rpow": "pow", "clamp_tensor": "clamp",
    "rsub_tensor": "rsub",
    "div_mode": "div", "fmod_scalar": "fmod", "remainder_scalar": "remainder",
    "remainder_scalar_tensor": "remainder", "xlogy_scalar_self": "xlogy",
    "xlogy_scalar_other": "xlogy", "lerp_tensor": "lerp", "getitem_select": "__getitem__",
    "getitem_slice": "__getitem__", "getitem_unsqueeze": "__getitem__",
    "getitem_alias": "__getitem__", "index": "__getitem__", "setitem": "__setitem__",
    "index_put": "__setitem__", "reshape_copy": "reshape", "squeeze_all": "squeeze",
    "sum_dim": "sum", "mean_dim": "mean", "prod_dim": "prod", "max_all": "max",
    "min_all": "min", "max_dim": "max", "min_dim": "min", "convolution": "conv2d",
    "max_pool2d_with_indices": "max_pool2d", "max_pool3d_with_indices": "max_pool3d",
    "adaptive_avg_pool3d": "adaptive_avg_pool2d", "sort_stable": "sort",
    "median_dim": "median", "nanmedian_dim": "nanmedian", "var_mean_mean": "var_mean",
    "std_mean_mean": "std_mean", "aminmax_min": "aminmax", "aminmax_max": "aminmax",
    "native_batch_norm": "batch_norm", "native_group_norm": "group_norm",
    "linalg_vector_norm": "vector_norm", "linalg_det": "det", "linalg_slogdet": "slogdet",
    "linalg_slogdet_sign": "slogdet", "linalg_inv_ex": "inv", "linalg_cholesky_ex": "cholesky",
    "linalg_qr": "qr", "linalg_qr_r": "qr", "linalg_eigh": "eigh", "linalg_eigh_vectors": "eigh",
    "linalg_svd": "svd", "linalg_svd_s": "svd", "linalg_svd_vh": "svd", "linalg_pinv": "pinv",
    "gelu_tanh": "gelu", "rrelu_with_noise": "dropout", "rrelu_with_noise_": "rrelu_",
    "constant_pad_nd": "pad", "reflection_pad1d": "pad", "reflection_pad2d": "pad",
    "reflection_pad3d": "pad", "replication_pad1d": "pad", "replication_pad2d": "pad",
    "replication_pad3d": "pad", "upsample_nearest1d": "interpolate",
    "upsample_nearest2d": "interpolate", "upsample_nearest3d": "interpolate",
    "_upsample_nearest_exact1d": "interpolate", "_upsample_nearest_exact2d": "interpolate",
    "_upsample_nearest_exact3d": "interpolate", "upsample_linear1d": "interpolate",
    "upsample_bilinear2d": "interpolate", "upsample_trilinear3d": "interpolate",
    "upsample_bicubic2d": "interpolate", "convolution_transpose": "conv_transpose2d",
    "linalg_solve_ex": "solve", "linalg_lstsq": "lstsq", "scatter_value": "scatter",
    "index_fill_tensor": "index_fill", "_euclidean_dist": "cdist", "squeeze_": "matmul",
    "diagonal_copy": "diagonal", "im2col": "unfold", "col2im": "fold",
    "scatter_reduce_legacy": "scatter", "round_decimals": "round",
    "squeeze_all_": "squeeze_", "squeeze_dims_": "squeeze_",
    **{f"{n}_{kind}": f"{n}_" for n in ("eq", "ne", "lt", "le", "gt", "ge")
       for kind in ("scalar", "tensor")},  # (the in-place comparisons' nodes)
}
NO_BATCHING_RULE_YET = frozenset()

# The ops only ever run on physical tensors, never reached by a function called on a batched
# one: ``index_put_impl`` is the backward of ``index`` (as the ``*_backward`` ops, below),
# ``as_strided_view`` the history ``Tensor.grad_fn`` regenerates for a view written through its
# base, and ``lstm_layer`` nn.LSTM's fused layer, which it takes outside vmap only (the harness
# runs them under vmap all the same), as ``embedding_bag`` F.embedding_bag's.
PHYSICAL_ONLY = {"index_put_impl", "as_strided_view", "max_pool_gather", "lstm_layer",
                 "embedding_bag"}  # (F.embedding_bag's op outside vmap only, as lstm_layer's)


def test_ops_without_a_jvp_rule_are_listed():
    lacking = {n for n, op in REGISTRY.items() if op.jvp is None and op.differentiable}
    assert lacking <= NO_JVP_YET, f"new ops without a jvp rule: {sorted(lacking - NO_JVP_YET)}"
    assert NO_JVP_YET <= lacking, f"these have rules now, unlist them: {NO_JVP_YET - lacking}"


def _lacking_batching_rules():
    """Registered ops that no batching rule covers. The ops of backward formulas (``*_backward``
    and the like) need none: inside vmap the engine differentiates the physical tensors, so
    backward formulas never see a batched one."""
    from numgrad.func._vmap import RULES

    return {n for n in REGISTRY if n not in RULES and COVERED_BY.get(n) not in RULES and
            n.removeprefix("special_") not in RULES and "_backward" not in n and
            n not in PHYSICAL_ONLY}


def test_ops_without_a_batching_rule_are_listed():
    lacking = _lacking_batching_rules()
    assert lacking <= NO_BATCHING_RULE_YET, \
        f"new ops without a batching rule: {sorted(lacking - NO_BATCHING_RULE_YET)}"
    assert NO_BATCHING_RULE_YET <= lacking, \
        f"these have rules now, unlist them: {NO_BATCHING_RULE_YET - lacking}"


def test_custom_function_jvp_with_setup_context_and_save_for_forward():
    def run(m):
        class MyExp(m.autograd.Function):
            @staticmethod
            def forward(x):
                return x.exp()

            @staticmethod
            def setup_context(ctx, inputs, output):
                ctx.save_for_backward(output)
                ctx.save_for_forward(output)

            @staticmethod
            def backward(ctx, g):
                (y,) = ctx.saved_tensors
                return g * y

            @staticmethod
            def jvp(ctx, t):
                (y,) = ctx.saved_tensors
                return t * y

        x = _t(m, X5).requires_grad_()
        fwd = m.autograd.forward_ad
        with fwd.dual_level():
            y = MyExp.apply(fwd.make_dual(x, _t(m, V5)))
            t = fwd.unpack_dual(y).tangent
        (g,) = m.autograd.grad(MyExp.apply(x).sum(), x)
        return t, m.func.jvp(MyExp.apply, (x,), (_t(m, V5),))[1], g

    _same(_np(run(numgrad)), _np(run(torch)))

    class NoJvp(numgrad.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    with nfwd.dual_level():
        with pytest.raises(NotImplementedError, match="You must implement the jvp function"):
            NoJvp.apply(nfwd.make_dual(_t(numgrad, X5), _t(numgrad, V5)))


def test_autograd_grad_with_is_grads_batched():
    def run(m):
        x = _t(m, X5).requires_grad_()
        y = (x.sin() * x.sum())[:3]
        (g,) = m.autograd.grad(y, x, _t(m, W35.T.copy()), create_graph=True,
                               is_grads_batched=True)
        mapped = m.func.vmap(lambda v: m.autograd.grad(y, x, v, retain_graph=True)[0])(
            _t(m, W35.T.copy()))  # (vmap over the seeds of a graph made outside: the same)
        return g, m.autograd.grad(g.sum(), x)[0], mapped

    _same(_np(list(run(numgrad))), _np(list(run(torch))))


def test_gradcheck_checks_forward_ad_and_batched_grad():
    x = numgrad.tensor(X5, requires_grad=True)
    w = numgrad.tensor(W35, requires_grad=True)
    f = lambda x, w: (w @ x.sin()).softmax(0) * x[:3]  # noqa: E731
    assert numgrad.autograd.gradcheck(f, (x, w), check_forward_ad=True, check_batched_grad=True)

    class WrongJvp(numgrad.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

        @staticmethod
        def jvp(ctx, t):
            return t * 3

    with pytest.raises(numgrad.autograd.GradcheckError,
                       match="Jacobian computed with forward mode mismatch"):
        numgrad.autograd.gradcheck(WrongJvp.apply, (x,), check_forward_ad=True)
    assert numgrad.autograd.gradcheck(WrongJvp.apply, (x,))


@pytest.mark.parametrize("kw", [dict(vectorize=True),
                                dict(vectorize=True, strategy="forward-mode")])
def test_autograd_functional_jacobian_vectorized_and_forward_mode(kw):
    def run(m):
        f = lambda a, b: (a.sin() * b, (a * b).sum())  # noqa: E731
        return m.autograd.functional.jacobian(f, (_t(m, X5), _t(m, V5)), **kw)

    _same(_np(run(numgrad)), _np(run(torch)))


@pytest.mark.parametrize("strategy", ["forward-mode", "reverse-mode"])
def test_autograd_functional_hessian_vectorized(strategy):
    def run(m):
        f = lambda a, b: (a.sin() * b).sum() + (a * a * b).sum()  # noqa: E731
        return m.autograd.functional.hessian(f, (_t(m, X5), _t(m, V5)), vectorize=True,
                                             outer_jacobian_strategy=strategy)

    _same(_np(run(numgrad)), _np(run(torch)))


def test_autograd_functional_forward_mode_needs_vectorize():
    with pytest.raises(NotImplementedError, match="only implemented for `vectorize=True`"):
        numgrad.autograd.functional.jacobian(lambda a: a, _t(numgrad, X5), strategy="forward-mode")
    with pytest.raises(RuntimeError, match="`strict=True` and `vectorized=True` are not "
                                           "supported together"):
        numgrad.autograd.functional.jacobian(lambda a: a, _t(numgrad, X5), strict=True,
                                             vectorize=True)


def test_vmap_randomness_of_random_factories():
    x = numgrad.zeros(6, 5)
    with pytest.raises(RuntimeError, match="randomness error mode"):  # (in-place fills too)
        nfunc.vmap(lambda a: a.clone().uniform_())(x)
    filled = nfunc.vmap(lambda a: a.clone().normal_(), randomness="different")(x)
    alike = nfunc.vmap(lambda a: a.clone().uniform_(0, 1), randomness="same")(x)
    assert not (filled[0] == filled[1]).all() and (alike == alike[0]).all()
    assert not (alike[0] == alike[0][0]).all()
    with pytest.raises(RuntimeError, match="randomness error mode"):
        nfunc.vmap(lambda a: numgrad.randn(5) + a)(x)
    different = nfunc.vmap(lambda a: numgrad.randn(5) + a, randomness="different")(x)
    same = nfunc.vmap(lambda a: numgrad.rand(5) + a, randomness="same")(x)
    assert not (different[0] == different[1]).all() and (same == same[0]).all()
    nested = nfunc.vmap(nfunc.vmap(lambda a: numgrad.rand(2) + a, randomness="different"),
                        randomness="same")(numgrad.zeros(3, 4, 2))
    assert (nested == nested[0]).all() and not (nested[0, 0] == nested[0, 1]).all()


def test_compile_of_a_function_of_transforms_gives_eagers_results():
    """Issue 17's contract: numgrad.compile of a function that calls grad/vmap/jacfwd either
    compiles or runs eagerly, with eager's results."""
    x, w = _t(numgrad, XB), _t(numgrad, W35)

    def f(x, w):
        per_example = nfunc.vmap(nfunc.grad(_mlp(numgrad), argnums=1), in_dims=(0, None))(x, w)
        return per_example.sum(0) + nfunc.jacfwd(lambda v: v.sin() * v.sum())(x[0]).sum()

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compiled = numgrad.compile(f)
        first, second = compiled(x, w), compiled(x, w)
    want = f(x, w)
    np.testing.assert_array_equal(first.numpy(), want.numpy())
    np.testing.assert_array_equal(second.numpy(), want.numpy())


def test_custom_function_under_vmap_and_grad():
    """A custom Function inside vmap runs its forward and backward per example (PyTorch's
    generate_vmap_rule=True): vmap of it, vmap(grad(...)) and grad(vmap(...)) reach its own
    backward (here deliberately twice the true derivative)."""
    def run(m):
        class DoubleExp(m.autograd.Function):
            generate_vmap_rule = True

            @staticmethod
            def forward(x):
                return x.exp()

            @staticmethod
            def setup_context(ctx, inputs, output):
                ctx.save_for_backward(output)

            @staticmethod
            def backward(ctx, g):
                (y,) = ctx.saved_tensors
                return g * y * 2

        f = lambda x: DoubleExp.apply(x).sum()  # noqa: E731
        return (m.func.vmap(DoubleExp.apply)(_t(m, XB)), m.func.vmap(m.func.grad(f))(_t(m, XB)),
                m.func.grad(lambda x: m.func.vmap(DoubleExp.apply)(x).sum())(_t(m, XB)))

    _same(_np(run(numgrad)), _np(run(torch)))


def test_custom_function_with_its_own_vmap_staticmethod_and_pytorchs_errors():
    """A Function's ``vmap(info, in_dims, *args)`` runs the batch (vmap, vmap(grad), grad(vmap)
    reach its backward); a Function without vmap support, with both kinds, or without
    setup_context raises PyTorch's error."""
    def run(m):
        calls = []

        class Scale(m.autograd.Function):
            @staticmethod
            def forward(x, y):
                return x * y.sum()

            @staticmethod
            def setup_context(ctx, inputs, output):
                ctx.save_for_backward(*inputs)

            @staticmethod
            def backward(ctx, g):
                x, y = ctx.saved_tensors
                return g * y.sum(), (g * x).sum().expand(y.shape)

            @staticmethod
            def vmap(info, in_dims, x, y):
                calls.append((info.batch_size, info.randomness, in_dims))
                x = x.movedim(in_dims[0], 0) if in_dims[0] is not None else \
                    x.expand(info.batch_size, *x.shape)
                s = y.sum(1) if in_dims[1] is not None else y.sum().expand(info.batch_size)
                return (x * s.view(-1, *([1] * (x.dim() - 1)))).movedim(0, 1), 1

        F, x, w = m.func, _t(m, XB), _t(m, V5)
        return (F.vmap(Scale.apply, in_dims=(0, None))(x, w),
                F.vmap(Scale.apply)(x, x),
                F.vmap(F.grad(lambda a, b: Scale.apply(a, b).sum()), in_dims=(0, None))(x, w),
                F.grad(lambda b: F.vmap(Scale.apply, in_dims=(0, None))(x, b).sum())(w)), calls

    (got, ours), (want, theirs) = run(numgrad), run(torch)
    _same(_np(list(got)), _np(list(want)))
    assert ours == theirs

    def functions(m):
        class Plain(m.autograd.Function):
            @staticmethod
            def forward(x):
                return x * 2

            @staticmethod
            def setup_context(ctx, inputs, output):
                pass

            @staticmethod
            def backward(ctx, g):
                return g * 2

        class Both(Plain):
            generate_vmap_rule = True

            @staticmethod
            def vmap(info, in_dims, x):
                return x * 2, in_dims[0]

        class OldStyle(m.autograd.Function):
            generate_vmap_rule = True

            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return g * 2

        return Plain, Both, OldStyle

    for ours, theirs in zip(functions(numgrad), functions(torch)):
        with pytest.raises(RuntimeError) as want:
            tfunc.vmap(theirs.apply)(_t(torch, XB))
        with pytest.raises(RuntimeError) as got:
            nfunc.vmap(ours.apply)(_t(numgrad, XB))
        assert str(got.value) == str(want.value)


def test_per_sample_gradients_of_a_cnn_without_a_loop():
    def make(m):
        return m.nn.Sequential(m.nn.Conv2d(1, 4, 3, padding=1), m.nn.ReLU(), m.nn.MaxPool2d(2),
                               m.nn.Conv2d(4, 6, 3, stride=2), m.nn.Flatten(),
                               m.nn.Linear(6, 10)).double()

    ours, theirs = _models(make)
    x, y = RNG.standard_normal((5, 1, 8, 8)), RNG.integers(0, 10, 5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (grouped convolutions: no loop fallback)
        got = _per_sample_grads(numgrad, nfunc, ours, _t(numgrad, x), _t(numgrad, y))
    _same(_np(got), _np(_per_sample_grads(torch, tfunc, theirs, _t(torch, x), _t(torch, y))))


def test_per_sample_gradients_with_batch_norm_replaced_and_debug_unwrap():
    """The tutorial's model with BatchNorm: replace_all_batch_norm_modules_ drops the running
    statistics so that vmap(grad(...)) takes each example's own (by the batch_norm rule);
    debug_unwrap gives a batched tensor's physical value."""
    def make(m):
        model = m.nn.Sequential(m.nn.Conv2d(1, 3, 3), m.nn.BatchNorm2d(3), m.nn.ReLU(),
                                m.nn.Flatten(), m.nn.Linear(12, 4)).double()
        return m.func.replace_all_batch_norm_modules_(model)

    ours, theirs = _models(make)
    assert ours[1].running_mean is None and not ours[1].track_running_stats
    x, y = RNG.standard_normal((5, 1, 4, 4)), RNG.integers(0, 4, 5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (no loop)
        got = _per_sample_grads(numgrad, nfunc, ours, _t(numgrad, x), _t(numgrad, y))
    _same(_np(got), _np(_per_sample_grads(torch, tfunc, theirs, _t(torch, x), _t(torch, y))))
    seen = []
    nfunc.vmap(lambda a: seen.append(nfunc.debug_unwrap(a)) or a)(_t(numgrad, XB))
    assert type(seen[0]) is numgrad.Tensor and tuple(seen[0].shape) == XB.shape


def test_per_sample_gradients_of_a_transformer_layer_without_a_loop():
    """A TransformerEncoderLayer (attention, layer norms with per-example weights): its
    functional attention now calls numgrad's dispatching functions, so vmap reaches rules."""
    def make(m):
        return m.nn.Sequential(m.nn.TransformerEncoderLayer(4, 2, 8, dropout=0.0,
                                                            batch_first=True),
                               m.nn.Flatten(), m.nn.Linear(12, 3)).double()

    ours, theirs = _models(make)
    x, y = RNG.standard_normal((4, 3, 4)), RNG.integers(0, 3, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (no loop)
        got = _per_sample_grads(numgrad, nfunc, ours, _t(numgrad, x), _t(numgrad, y))
    _same(_np(got), _np(_per_sample_grads(torch, tfunc, theirs, _t(torch, x), _t(torch, y))))


def test_neural_tangent_kernel_both_ways():
    """The NTK tutorial's two forms: Jacobian contraction (vmap of jacrev) and the
    vjp-then-jvp form under three nested vmaps (vjp_fn mapped over a newer level: a batched
    backward of the function run again at that level)."""
    def make(m):
        return m.nn.Sequential(m.nn.Linear(4, 8), m.nn.Tanh(), m.nn.Linear(8, 3)).double()

    ours, theirs = _models(make)
    x1, x2 = RNG.standard_normal((3, 4)), RNG.standard_normal((2, 4))

    def ntk(m, net):
        F = m.func
        params = {k: v.detach() for k, v in net.named_parameters()}

        def single(p, x):
            return F.functional_call(net, p, (x.unsqueeze(0),)).squeeze(0)

        jacobians = F.vmap(F.jacrev(single), (None, 0))
        jac1 = [j.flatten(2) for j in jacobians(params, _t(m, x1)).values()]
        jac2 = [j.flatten(2) for j in jacobians(params, _t(m, x2)).values()]
        by_jacobians = m.stack([m.einsum("Naf,Mbf->NMab", a, b)
                                for a, b in zip(jac1, jac2)]).sum(0)

        def one(a, b):
            out, vjp_fn = F.vjp(lambda p: single(p, a), params)

            def column(vec):
                return F.jvp(lambda p: single(p, b), (params,), vjp_fn(vec))[1]

            return F.vmap(column)(m.eye(out.numel(), dtype=out.dtype))

        by_products = F.vmap(F.vmap(one, (None, 0)), (0, None))(_t(m, x1), _t(m, x2))
        return by_jacobians, by_products

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (no loop)
        got = ntk(numgrad, ours)
    _same(_np(got), _np(ntk(torch, theirs)))


def test_vmap_over_vjp_fn_is_batched_unless_the_function_draws_random_numbers():
    x, cts = _t(numgrad, X5), _t(numgrad, XB)
    f = lambda x: x.sin() * x.sum()  # noqa: E731
    _, vjp_fn = nfunc.vjp(f, x)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = nfunc.vmap(vjp_fn)(cts)
    _, tvjp_fn = tfunc.vjp(lambda x: x.sin() * x.sum(), _t(torch, X5))
    _same(_np(got), _np(tfunc.vmap(tvjp_fn)(_t(torch, XB))))

    def g(x):  # (its draw would differ if run again: the graph's own backward, per example)
        return x * numgrad.rand(5, dtype=numgrad.float64)

    numgrad.manual_seed(3)
    _, vjp_fn = nfunc.vjp(g, x)
    numgrad.manual_seed(3)
    noise = numgrad.rand(5, dtype=numgrad.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        (looped,) = nfunc.vmap(vjp_fn)(cts)
    np.testing.assert_allclose(looped.numpy(), (cts * noise).numpy())


# The samples vmap cannot match with a loop, as in PyTorch: masked_select's results have
# shapes read from the values (PyTorch raises), and a write of batched values into an
# unbatched tensor (PyTorch's index_put_ error).
VMAP_LOOP_EXEMPT = {("masked_select", 0), ("masked_select", 1), ("setitem", 3)}


def _vmap_samples():
    for name, op in sorted(REGISTRY.items()):
        if "_backward" in name:  # (called as ops.X directly: not a dispatching function)
            continue
        for i, _ in enumerate(op.samples):
            if (name, i) not in VMAP_LOOP_EXEMPT:
                yield pytest.param(name, i, id=f"{name}-{i}")


# The samples whose vmap still runs a function once per example (``_vmap._fallback``, with
# PyTorch's performance warning), and the function: this list may only shrink. Each is a form
# no program here needs yet: a boolean index beside another.
# (embedding with a padding_idx and a batched weight: a padding row per example, which one
# lookup in the stacked tables cannot express)
STILL_LOOPS = {("index", 7): "__getitem__", ("embedding", 1): "embedding",
               ("embedding", 2): "embedding"}


# With NaN or inf in a batched affine weight, group_norm's and batch_norm's rules (the
# normalisation, then ``* weight + bias``, as PyTorch's batching rules compose it) spread them as
# torch.func.vmap does, not as the fused kernel run per example (checked: the same NaN positions
# as torch.func.vmap).
NONFINITE_AS_TORCH_VMAP = {("native_group_norm", 0), ("native_group_norm", 2),
                           ("native_batch_norm", 2)}


# With a batch of none, the samples that raise, as torch.func.vmap does for them: a grouped
# convolution of zero groups (PyTorch's 'non-positive groups is not supported'), batch
# statistics of no elements, and what loops (no example to run: masked_scatter, bincount with
# batched weights, a boolean index beside another).
EMPTY_BATCH_RAISES = {("convolution", 0), ("convolution", 1), ("convolution", 2),
                      ("convolution", 3),
                      ("convolution_transpose", 0), ("convolution_transpose", 1),
                      ("convolution_transpose", 2), ("native_batch_norm", 0),
                      ("native_batch_norm", 1),
                      ("masked_scatter", 0), ("masked_scatter", 1), ("bincount", 1),
                      ("index", 7), ("embedding", 1), ("embedding", 2)}


@pytest.mark.parametrize("layout", ["float64", "float32-last", "float64-nonfinite",
                                    "float64-empty-batch"])
@pytest.mark.parametrize("name,index", list(_vmap_samples()))
def test_every_op_under_vmap_matches_a_loop(name, index, layout, monkeypatch):
    """The registry harness for batching rules: each op's samples on three examples at once
    under vmap, against a loop over them: in float64 with the batch first, and in float32
    with the batch last (in_dims=-1: every physical value strided). In float64, by the ops'
    batching rules: a function run once per example fails it unless ``STILL_LOOPS`` lists it."""
    from numgrad.func import _vmap

    looped = set()
    fallback = _vmap._fallback

    def recording(func, lvl, args, kwargs, op_name):
        looped.add(op_name)
        return fallback(func, lvl, args, kwargs, op_name)

    monkeypatch.setattr(_vmap, "_fallback", recording)
    s = REGISTRY[name].samples[index]
    rng = np.random.default_rng(index)
    dtype = np.float32 if layout == "float32-last" else np.float64
    xs = [rng.uniform(s.low, s.high, size=(3, *sh)).astype(dtype) for sh in s.shapes]
    if layout == "float64-nonfinite":  # (NaN, inf and -inf in the examples, one each)
        if (name, index) in NONFINITE_AS_TORCH_VMAP:
            pytest.skip("NaN spreads as in torch.func.vmap, not as in the loop")
        for x in xs:
            if x[0].size:
                x[0].flat[0], x[1].flat[-1], x[2].flat[x[2].size // 2] = np.nan, np.inf, -np.inf

    def f(*ts):
        out = s.call(numgrad, *ts)
        return tuple(out) if isinstance(out, (tuple, list)) else (out,)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            loop = [f(*[numgrad.tensor(x[b]) for x in xs]) for b in range(3)]
        except Exception:  # noqa: BLE001  (a sample that needs more, gradients: not this test's)
            pytest.skip("the sample does not run on plain examples")
        if layout == "float64-empty-batch":  # (a batch of none: each result's shape, empty)
            if (name, index) in EMPTY_BATCH_RAISES:
                with pytest.raises(RuntimeError):
                    nfunc.vmap(f)(*[numgrad.tensor(x[:0]) for x in xs])
                return
            got = nfunc.vmap(f)(*[numgrad.tensor(x[:0]) for x in xs])
            for g, one in zip(got, loop[0]):
                assert tuple(g.shape) == (0, *tuple(one.shape)) and g.dtype == one.dtype
            return
        if layout != "float32-last":
            got = nfunc.vmap(f)(*[numgrad.tensor(x) for x in xs])
        else:
            moved = [numgrad.tensor(np.ascontiguousarray(np.moveaxis(x, 0, -1))) for x in xs]
            got = nfunc.vmap(f, in_dims=-1)(*moved)
    if layout == "float64":
        expected = {STILL_LOOPS[name, index]} if (name, index) in STILL_LOOPS else set()
        assert looped == expected, f"looped over the batch for {looped or 'nothing'}, " \
                                   f"STILL_LOOPS says {expected or 'nothing'}"
    for k, g in enumerate(got):
        want = np.stack([one[k].detach().numpy() for one in loop])
        assert g.shape == want.shape
        np.testing.assert_allclose(g.detach().numpy(), want, equal_nan=True,
                                   atol=1e-8 if dtype == np.float64 else 1e-5,
                                   rtol=1e-7 if dtype == np.float64 else 1e-5)


# Where PyTorch's forward derivative is not the derivative: torch.func.jvp of
# cholesky_inverse(cholesky(A)) disagrees with central differences of PyTorch's own function
# (first row [-1.0067, -0.4823, 0.3762] against [-0.6582, -0.6387, 0.2275] for this file's
# sample 0), which numgrad's rule matches; test_every_jvp_rule_against_finite_differences
# checks these.
PYTORCH_JVP_DIFFERS = {"cholesky_inverse"}


# Where the primal is NaN, PyTorch's tangent depends on which of its loops computes the element:
# its vector loop gives NaN, its scalar loop (a tensor of under 4 float64s on AVX2, the tail
# of a longer one) the tangent of the branch a NaN comparison picks, as numgrad's rule does (torch
# 2.13: elu's jvp at NaN is 1.0 for 1 or 3 elements, NaN for 40). Those positions are left out.
NAN_TANGENT_BY_TORCHS_LOOP = {"celu", "celu_", "elu", "elu_", "hardswish", "selu", "selu_"}

# With NaN or inf among the primals, the forward rules whose tangents still differ from
# torch.func.jvp's at those positions (which operand's tangent a NaN comparison picks, a tangent
# PyTorch zeroes or keeps beside an infinite value): this list may only shrink.
JVP_NONFINITE_DIFFERS = frozenset("""
linalg_det-2 mode-0 mode-1 native_batch_norm-0
""".split())


@pytest.mark.parametrize("layout", ["float64", "float32", "float64-strided",
                                    "float64-nonfinite"])
@pytest.mark.parametrize("name,index", [p for p in _samples()
                                        if p.values[0] not in PYTORCH_JVP_DIFFERS])
def test_every_jvp_rule_against_torch_func_jvp(name, index, layout):
    """The registry harness: each op's forward rule on each of its samples against PyTorch's
    torch.func.jvp of the same call: in float64, in float32, with every input strided (a view of
    every other element of a wider array), and with NaN, inf and -inf among the primals."""
    s = REGISTRY[name].samples[index]
    rng = np.random.default_rng(index)
    xs = [rng.uniform(s.low, s.high, size=sh) for sh in s.shapes]
    vs = [rng.standard_normal(size=sh) for sh in s.shapes]
    if layout == "float64-nonfinite":
        for x in xs:
            if x.size:
                x.flat[0], x.flat[-1], x.flat[x.size // 2] = np.nan, np.inf, -np.inf
    dtype = "float32" if layout == "float32" else "float64"

    def tensors(m, arrays):
        if layout != "float64-strided":
            return tuple(m.tensor(a, dtype=getattr(m, dtype)) for a in arrays)
        wide = [np.repeat(a, 2, axis=-1) if a.ndim else a for a in arrays]
        return tuple(m.tensor(a, dtype=m.float64)[..., ::2] if a.ndim else m.tensor(a)
                     for a in wide)

    def call(m):
        def f(*ts):
            out = s.call(m, *ts)
            return tuple(out) if isinstance(out, (tuple, list)) else (out,)
        return f

    try:
        _, want = tfunc.jvp(call(torch), tensors(torch, xs), tensors(torch, vs))
    except Exception:  # noqa: BLE001  (PyTorch's own forward AD lacks it, or the sample needs more)
        pytest.skip("torch.func.jvp does not run this sample")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _, got = nfunc.jvp(call(numgrad), tensors(numgrad, xs), tensors(numgrad, vs))
    listed = layout == "float64-nonfinite" and f"{name}-{index}" in JVP_NONFINITE_DIFFERS
    unsure = layout == "float64-nonfinite" and name in NAN_TANGENT_BY_TORCHS_LOOP
    try:
        for g, w in zip(got, want):
            if w.dtype != getattr(torch, dtype):
                continue
            w = torch.zeros(w.shape, dtype=w.dtype) if w._is_zerotensor() else w
            g, w = g.detach().numpy(), w.detach().numpy()
            if unsure:  # (the positions of a NaN primal: either answer is PyTorch's)
                g, w = g.copy(), w.copy()
                g[np.isnan(xs[0])] = w[np.isnan(xs[0])] = 0.0
            np.testing.assert_allclose(g, w,
                                       atol=1e-7 if dtype == "float64" else 1e-4,
                                       rtol=1e-6 if dtype == "float64" else 1e-3, equal_nan=True)
    except AssertionError:
        if listed:
            return
        raise
    assert not listed, "this sample's tangents match now: unlist it from JVP_NONFINITE_DIFFERS"


def test_as_strided_and_nextafter_carry_forward_tangents_as_pytorch():
    # (as_strided of a tensor with a tangent and no requires_grad was a plain view, whose tangent
    # was 0; nextafter overwrote its tangent-carrying product with its values, and their 0
    # tangent: both now give torch.func.jvp's)
    rng = np.random.default_rng(3)
    x, t, y, u = (rng.standard_normal(6) for _ in range(4))

    def run(m, F):
        def f(a, b):
            return (m.as_strided(a, (2, 2), (1, 2), 1), m.as_strided_copy(a, (3,), (2,)),
                    m.nextafter(a, b))
        return F.jvp(f, (m.tensor(x), m.tensor(y)), (m.tensor(t), m.tensor(u)))[1]

    for ours, theirs in zip(run(numgrad, nfunc), run(torch, tfunc)):
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_eigenvalue_tangents_of_a_complex_hermitian_matrix_are_real_as_pytorch():
    # (eigh's and eigvalsh's eigenvalues are real, but their forward-mode tangent was the
    # complex diagonal of V^H dA V: complex tangents of a real primal)
    rng = np.random.default_rng(5)
    a = rng.standard_normal((4, 4)) + 1j * rng.standard_normal((4, 4))
    t = rng.standard_normal((4, 4)) + 1j * rng.standard_normal((4, 4))
    a, t = a + a.conj().T, t + t.conj().T
    for name in ("eigvalsh", "eigh"):
        got = [F.jvp(lambda x: getattr(m.linalg, name)(x), (m.tensor(a),), (m.tensor(t),))[1]
               for m, F in ((numgrad, nfunc), (torch, tfunc))]
        ours, theirs = (g[0] if name == "eigh" else g for g in got)
        assert str(ours.dtype).split(".")[1] == str(theirs.dtype).split(".")[1] == "float64"
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12, atol=1e-12)


def test_vmap_of_complex_vdot_and_lu_solve_as_torch_func():
    # (vmap's vdot multiplied without conjugating its first operand; lu_solve's rule took complex
    # LU factors for integer pivots, a dimension fewer: a (3, 3, 4) batch came out (3, 3, 3, 4))
    rng = np.random.default_rng(11)
    a, b = (rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4)) for _ in range(2))
    m_a = rng.standard_normal((2, 3, 3)) + 1j * rng.standard_normal((2, 3, 3)) + 3 * np.eye(3)
    rhs = rng.standard_normal((2, 3, 2)) + 1j * rng.standard_normal((2, 3, 2))

    def run(m, F):
        lu, piv = m.linalg.lu_factor(m.tensor(m_a))
        return (F.vmap(m.vdot)(m.tensor(a), m.tensor(b)),
                F.vmap(m.linalg.lu_solve)(lu, piv, m.tensor(rhs)))

    for ours, theirs in zip(run(numgrad, nfunc), run(torch, tfunc)):
        assert tuple(ours.shape) == tuple(theirs.shape)
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12, atol=1e-12)
