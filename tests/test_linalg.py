"""Linear algebra against PyTorch.

Matrix-product gradients in the cases the engine shortcuts: a product whose output gradient is
one number everywhere (``(a @ b).sum()``, ``.mean()``) is reduced instead of multiplied
(ops/linalg.py, ``_uniform_grad_backward``), and a column-major operand (a transposed view, as
F.linear's weight.t()) gets a gradient laid out for its parameter.

``numgrad.linalg`` and the top-level names (ops/linalg_*.py): values, result dtypes and field
names, node names and input gradients against PyTorch over batches, broadcast batches, empty
batches and non-contiguous inputs in float64 and float32; every matrix norm's order; gradcheck and
gradgradcheck beyond the registry's samples (det at singular matrices, left=False solves, full
SVDs, wide QR, lstsq of wide systems); second derivatives of eig's phase-free functions and
Hessians through the decompositions against PyTorch's; PyTorch's error messages word for word;
the deprecation warnings of the legacy names. (The registry's samples run in tests/test_ops.py,
the CUDA kernels in tests/cuda_sim/test_cuda_linalg.py.)"""
import re
import warnings

import numpy as np
import pytest
import torch

import numgrad


def _pair(shape, dtype, seed):
    data = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    return numgrad.tensor(data, requires_grad=True), torch.tensor(data, requires_grad=True)


@pytest.mark.parametrize("dtype, tol", [("float64", 1e-12), ("float32", 1e-4)])
@pytest.mark.parametrize("reduce", ["sum", "mean", "scaled_sum"])
@pytest.mark.parametrize("ta, tb", [(False, False), (True, False), (False, True), (True, True)])
def test_uniform_output_gradient_matches_pytorch(dtype, tol, reduce, ta, tb):
    m, k, n = 5, 7, 3
    a, ta_ = _pair((k, m) if ta else (m, k), dtype, 0)
    b, tb_ = _pair((n, k) if tb else (k, n), dtype, 1)

    def run(mod, a, b):
        out = (a.t() if ta else a) @ (b.t() if tb else b)
        loss = {"sum": out.sum(), "mean": out.mean(), "scaled_sum": (out * 3.0).sum()}[reduce]
        loss.backward()
        return a.grad, b.grad

    ga, gb = run(numgrad, a, b)
    tga, tgb = run(torch, ta_, tb_)
    for g, t in ((ga, tga), (gb, tgb)):
        assert g.shape == tuple(t.shape) and g.is_contiguous()
        np.testing.assert_allclose(g.numpy(), t.numpy(), rtol=tol, atol=tol)


def test_uniform_gradient_with_create_graph_still_records_products():
    a = numgrad.ones(3, 4, dtype=numgrad.float64, requires_grad=True)
    b = numgrad.ones(4, 2, dtype=numgrad.float64, requires_grad=True)
    (ga,) = numgrad.autograd.grad((a @ b).sum(), a, create_graph=True)
    assert ga.grad_fn is not None and ga.grad_fn.name() == "MmBackward0"
    np.testing.assert_array_equal(ga.detach().numpy(), np.full((3, 4), 2.0))


def test_linear_weight_gradient_is_adopted_without_a_copy():
    """F.linear multiplies by weight.t() (column-major): the weight's gradient comes out
    row-major for the weight, so the engine adopts the product's buffer as .grad."""
    from numgrad.autograd import engine

    layer = numgrad.nn.Linear(6, 4)
    x = numgrad.tensor(np.random.default_rng(2).standard_normal((5, 6)).astype(np.float32))
    copied = []
    original = engine._copy
    engine._copy = lambda data: copied.append(data.shape) or original(data)
    try:
        (layer(x) * numgrad.tensor(np.arange(20.0, dtype=np.float32).reshape(5, 4))).sum().backward()
    finally:
        engine._copy = original
    assert layer.weight.grad.is_contiguous()
    assert (4, 6) not in copied
    expected = np.arange(20.0, dtype=np.float32).reshape(5, 4).T @ x.numpy()
    np.testing.assert_allclose(layer.weight.grad.numpy(), expected, rtol=1e-5)


# ---------------------------------------------------------------------- numgrad.linalg
def _both(data, grad=True):
    return (numgrad.tensor(data, requires_grad=grad), torch.tensor(data, requires_grad=grad))


def _data(shape, seed=0, dtype="float64", shift=0.0):
    a = np.random.default_rng(seed).uniform(-2, 2, size=shape)
    if shift:
        a = a + shift * np.eye(shape[-2], shape[-1])
    return a.astype(dtype)


def _compare(fn, *arrays, grad=True, tol=None, names=True):
    """``fn(module, *tensors)`` on numgrad and PyTorch: outputs (values, dtypes, shapes, node
    names) and the input gradients of one vector-Jacobian product."""
    dtype = arrays[0].dtype.name
    tol = tol or ({"rtol": 1e-8, "atol": 1e-10} if dtype == "float64" else
                  {"rtol": 1e-4, "atol": 1e-5})
    ours = [numgrad.tensor(a, requires_grad=grad) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=grad) for a in arrays]
    o = fn(numgrad, *ours)
    t = fn(torch, *theirs)
    o, t = (tuple(o), tuple(t)) if isinstance(t, tuple) else ((o,), (t,))
    assert len(o) == len(t)
    for x, y in zip(o, t):
        assert tuple(x.shape) == tuple(y.shape)
        assert x.dtype.name == str(y.dtype).removeprefix("torch.")
        if y.dtype.is_floating_point:
            np.testing.assert_allclose(x.detach().numpy(), y.detach().numpy(), **tol)
        else:
            np.testing.assert_array_equal(x.numpy(), y.numpy())
        assert x.requires_grad == y.requires_grad
        if names and y.grad_fn is not None:
            assert x.grad_fn.name() == y.grad_fn.name()
    if not grad:
        return
    pairs = [(x, y) for x, y in zip(o, t) if y.requires_grad]
    rng = np.random.default_rng(99)
    seeds = [rng.standard_normal(tuple(y.shape)).astype(dtype) for _, y in pairs]
    numgrad.autograd.backward([x for x, _ in pairs], [numgrad.tensor(s) for s in seeds])
    torch.autograd.backward([y for _, y in pairs], [torch.tensor(s) for s in seeds])
    for x, y in zip(ours, theirs):
        assert (x.grad is None) == (y.grad is None)
        if y.grad is not None:
            np.testing.assert_allclose(x.grad.numpy(), y.grad.numpy(), **tol)


def _spd(m, a):
    return a @ a.mT + m.eye(a.shape[-1], dtype=a.dtype)


def _sym(m, a):
    return a + a.mT


def _eigh_squares(r):
    return r.eigenvalues, r.eigenvectors.pow(2)  # (the squares ignore each vector's sign)


def _svd_parts(r, legacy=False):
    """(S, U_k Vh_k): functions of an SVD that do not depend on the singular vectors' signs."""
    k = r.S.shape[-1]
    vh = r.V.mT if legacy else r.Vh
    return r.S, r.U[..., :k] @ vh[..., :k, :]


CASES = {
    "det": (lambda m, a: m.linalg.det(a), [(2, 3, 3)]),
    "slogdet": (lambda m, a: tuple(m.linalg.slogdet(a)), [(3, 2, 2)]),
    "logdet": (lambda m, a: m.logdet(_spd(m, a)), [(2, 3, 3)]),
    "inv": (lambda m, a: m.linalg.inv(a + 3 * m.eye(3, dtype=a.dtype)), [(2, 1, 3, 3)]),
    "inv_ex": (lambda m, a: tuple(m.linalg.inv_ex(a + 3 * m.eye(3, dtype=a.dtype))), [(3, 3)]),
    "solve": (lambda m, a, b: m.linalg.solve(a + 3 * m.eye(3, dtype=a.dtype), b),
              [(2, 1, 3, 3), (4, 3, 2)]),
    "solve_vec": (lambda m, a, b: m.linalg.solve(a + 3 * m.eye(3, dtype=a.dtype), b),
                  [(2, 3, 3), (2, 3)]),
    "solve_right": (lambda m, a, b: m.linalg.solve(a + 3 * m.eye(3, dtype=a.dtype), b, left=False),
                    [(3, 3), (2, 4, 3)]),
    "solve_ex": (lambda m, a, b: tuple(m.linalg.solve_ex(a + 3 * m.eye(2, dtype=a.dtype), b)),
                 [(2, 2), (2, 1)]),
    "cholesky": (lambda m, a: m.linalg.cholesky(_spd(m, a)), [(2, 3, 3)]),
    "cholesky_upper": (lambda m, a: m.linalg.cholesky(_spd(m, a), upper=True), [(3, 3)]),
    "cholesky_ex": (lambda m, a: tuple(m.linalg.cholesky_ex(_spd(m, a))), [(2, 2)]),
    "qr": (lambda m, a: tuple(m.linalg.qr(a)), [(2, 4, 3)]),
    "qr_wide": (lambda m, a: tuple(m.linalg.qr(a)), [(3, 5)]),
    "qr_complete": (lambda m, a: tuple(m.linalg.qr(a, mode="complete")), [(2, 4)]),
    "eigh": (lambda m, a: _eigh_squares(m.linalg.eigh(_sym(m, a))), [(2, 3, 3)]),
    "eigvalsh_upper": (lambda m, a: m.linalg.eigvalsh(_sym(m, a), UPLO="U"), [(4, 4)]),
    "svd": (lambda m, a: _svd_parts(m.linalg.svd(a, full_matrices=False)), [(2, 4, 3)]),
    "svd_full": (lambda m, a: _svd_parts(m.linalg.svd(a)), [(5, 3)]),
    "svd_wide": (lambda m, a: _svd_parts(m.linalg.svd(a)), [(2, 4)]),
    "svdvals": (lambda m, a: m.linalg.svdvals(a), [(3, 2, 4)]),
    "torch_svd": (lambda m, a: _svd_parts(m.svd(a), legacy=True), [(4, 3)]),
    "pinv": (lambda m, a: m.linalg.pinv(a), [(2, 3, 4)]),
    "pinv_hermitian": (lambda m, a: m.linalg.pinv(_spd(m, a), hermitian=True), [(3, 3)]),
    "pinverse": (lambda m, a: m.pinverse(a), [(4, 2)]),
    "lstsq": (lambda m, a, b: m.linalg.lstsq(a, b).solution, [(5, 3), (5, 2)]),
    "lstsq_wide": (lambda m, a, b: m.linalg.lstsq(a, b).solution, [(2, 4), (2,)]),
    "matrix_power": (lambda m, a: (m.linalg.matrix_power(a, 0), m.linalg.matrix_power(a, 5),
                                   m.matrix_power(a + 3 * m.eye(3, dtype=a.dtype), -2)),
                     [(2, 3, 3)]),
    "multi_dot": (lambda m, a, b, c: m.linalg.multi_dot([a, b, c]), [(3,), (3, 5), (5, 2)]),
    "vecdot": (lambda m, a, b: m.linalg.vecdot(a, b, dim=0), [(3, 2), (3, 1)]),
    "diagonal": (lambda m, a: m.linalg.diagonal(a, offset=1), [(2, 3, 4)]),
    "cholesky_solve": (lambda m, a, b: m.cholesky_solve(b, m.linalg.cholesky(_spd(m, a))),
                       [(3, 3), (3, 2)]),
    "cholesky_inverse": (lambda m, a: m.cholesky_inverse(m.linalg.cholesky(_spd(m, a))),
                         [(3, 3)]),
    "cholesky_solve_upper": (lambda m, a, b: m.cholesky_solve(b, m.linalg.cholesky(
        _spd(m, a), upper=True), upper=True), [(2, 3, 3), (3, 1)]),
    "cholesky_solve_raw": (lambda m, a, b: m.cholesky_solve(b, a.tril() + 3 * m.eye(
        3, dtype=a.dtype)), [(3, 3), (2, 3, 2)]),
    "cholesky_inverse_upper": (lambda m, a: m.cholesky_inverse(a.triu() + 3 * m.eye(
        3, dtype=a.dtype), upper=True), [(2, 3, 3)]),
    "cross": (lambda m, a, b: m.linalg.cross(a, b), [(2, 3), (1, 3)]),
    "matrix_rank": (lambda m, a: m.linalg.matrix_rank(a @ a[..., :2, :].mT @ a[..., :2, :]),
                    [(2, 3, 3)]),
}


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_linalg_matches_pytorch(name, dtype):
    fn, shapes = CASES[name]
    arrays = [_data(s, i, dtype) for i, s in enumerate(shapes)]
    _compare(fn, *arrays, grad=name != "matrix_rank")


@pytest.mark.parametrize("name", ["det", "slogdet", "inv", "solve", "cholesky", "qr", "svd",
                                  "svdvals", "pinv", "lstsq"])
def test_linalg_of_non_contiguous_inputs(name):
    fn, shapes = CASES[name]
    # (each input a transposed view of a contiguous leaf: the same values as the arrays)
    arrays = [_data(s, i) for i, s in enumerate(shapes)]
    ours = [numgrad.tensor(np.ascontiguousarray(np.swapaxes(a, -1, -2)), requires_grad=True)
            for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    o = fn(numgrad, *[x.transpose(-1, -2) for x in ours])
    t = fn(torch, *theirs)
    o, t = (tuple(o), tuple(t)) if isinstance(t, tuple) else ((o,), (t,))
    for x, y in zip(o, t):
        np.testing.assert_allclose(x.detach().numpy(), y.detach().numpy(), rtol=1e-8, atol=1e-10)
    sum(x.sum() for x in o if x.requires_grad).backward()
    sum(y.sum() for y in t if y.requires_grad).backward()
    for x, y in zip(ours, theirs):
        np.testing.assert_allclose(np.swapaxes(x.grad.numpy(), -1, -2), y.grad.numpy(),
                                   rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("name", ["det", "slogdet", "inv", "solve", "cholesky", "qr", "eigh",
                                  "svd", "svdvals", "pinv", "lstsq", "matrix_power"])
def test_linalg_of_empty_batches(name):
    fn, shapes = CASES[name]
    arrays = [_data((0,) + s[-2:] if len(s) >= 2 else s, i) for i, s in enumerate(shapes)]
    if name == "solve":
        arrays[1] = _data((0, 3, 2))
    _compare(fn, *arrays)


ORDS = ["fro", "nuc", float("inf"), float("-inf"), 1, -1, 2, -2]


@pytest.mark.parametrize("ord", ORDS, ids=str)
def test_matrix_norms_of_every_order(ord):
    _compare(lambda m, a: (m.linalg.matrix_norm(a, ord), m.linalg.matrix_norm(a, ord, dim=(0, 2),
                                                                            keepdim=True),
                           m.linalg.norm(a[0], ord)), _data((2, 3, 4)))


@pytest.mark.parametrize("ord", [0, 0.5, 1, 1.5, 2, 3, float("inf"), -float("inf"), -1])
def test_vector_norms_of_every_order(ord):
    a = _data((3, 4), shift=0.0)
    a[0, 0] = 0.0  # (a zero: the subgradients of PyTorch's formulas)
    fn = (lambda m, x: (m.linalg.vector_norm(x, ord), m.linalg.vector_norm(x, ord, dim=1),
                        m.norm(x, p=ord, dim=0, keepdim=True), m.linalg.norm(x[1], ord)))
    _compare(fn, a, grad=ord >= 1 or ord in (0, float("-inf")))


def test_norm_dtype_argument_and_integer_inputs():
    a = _data((3, 4), dtype="float32")
    _compare(lambda m, x: m.linalg.vector_norm(x, 3, dtype=m.float64), a)
    for m in (numgrad, torch):
        with pytest.raises(RuntimeError, match="Expected a floating point or complex tensor"):
            m.linalg.vector_norm(m.ones(3, dtype=m.int64))


@pytest.mark.parametrize("case", [
    lambda m: m.linalg.det(m.tensor(_data((2, 3, 3)), requires_grad=True)),
    lambda m: m.linalg.slogdet(m.tensor(_data((3, 3)), requires_grad=True)).logabsdet,
    lambda m: m.linalg.solve(m.tensor(_data((3, 3), shift=3.0), requires_grad=True),
                             m.tensor(_data((2, 3), 1), requires_grad=True), left=False),
    lambda m: m.linalg.cholesky(_spd(m, m.tensor(_data((3, 3)), requires_grad=True)),
                                upper=True),
    lambda m: m.linalg.qr(m.tensor(_data((3, 5)), requires_grad=True)).Q,
    lambda m: _svd_parts(m.linalg.svd(m.tensor(_data((3, 4)), requires_grad=True)))[1],
    lambda m: m.linalg.lstsq(m.tensor(_data((2, 4)), requires_grad=True),
                             m.tensor(_data((2, 2), 1), requires_grad=True)).solution,
], ids=["det", "slogdet", "solve_right", "cholesky_upper", "qr_wide", "svd_wide", "lstsq_wide"])
def test_second_derivatives_match_pytorch(case):
    grads = []
    for m in (numgrad, torch):
        out = case(m)
        leaves = _leaves(out.grad_fn, set(), [])
        first = m.autograd.grad(out.pow(2).sum(), leaves, create_graph=True)
        second = m.autograd.grad(sum(g.pow(2).sum() for g in first), leaves)
        grads.append([g.detach().numpy() for g in first + tuple(second)])
    for o, t in zip(*grads):
        np.testing.assert_allclose(o, t, rtol=1e-7, atol=1e-9)


def _abs_of_both(r):
    return r.eigenvalues.abs(), r.eigenvectors.abs()


_EIG_PHASE_FREE = {  # (functions of eig that do not depend on each eigenvector's phase)
    "vectors": lambda m, a: (m.linalg.eig(a).eigenvectors.abs(),),
    "values_and_vectors": lambda m, a: _abs_of_both(m.linalg.eig(a)),
    "values": lambda m, a: (m.linalg.eig(a)[0].abs(),),  # (the vectors' output dropped)
    "eigvals": lambda m, a: (m.linalg.eigvals(a).abs(),),  # (no vectors' output at all)
}


@pytest.mark.parametrize("dtype", ["float64", "complex128"])
@pytest.mark.parametrize("case", list(_EIG_PHASE_FREE))
def test_eig_second_derivatives_of_phase_free_functions_match_pytorch(case, dtype):
    """The recorded backward of eig's outputs uses the forward's L and V (PyTorch's saved
    outputs), not a recomputed eig: the second backward then reaches V once, at its node, with
    the sum of what flows into it, whose phase part vanishes (it once reached two copies of V,
    the forward's through abs's backward and the recomputed one, and raised linalg_eig_backward's
    "specified up to multiplication by e^{i phi}" for each)."""
    fn = _EIG_PHASE_FREE[case]
    data = _data((3, 3))
    if dtype == "complex128":
        data = data + 1j * _data((3, 3), 1)
    rng = np.random.default_rng(2)
    seeds = [rng.standard_normal(o.shape) for o in fn(numgrad, numgrad.tensor(data))]
    seed2 = rng.standard_normal(data.shape).astype(dtype)
    got = []
    for m in (numgrad, torch):
        a = m.tensor(data, requires_grad=True)
        loss = sum((o * m.tensor(w)).sum() for o, w in zip(fn(m, a), seeds))
        (g,) = m.autograd.grad(loss, a, create_graph=True)
        (gg,) = m.autograd.grad((g * m.tensor(seed2).conj()).real.sum(), a)
        got.append((g.detach().numpy(), gg.numpy()))
    for o, t in zip(*got):
        np.testing.assert_allclose(o, t, rtol=1e-7, atol=1e-9)
    x = numgrad.tensor(data, requires_grad=True)
    assert numgrad.autograd.gradgradcheck(lambda a: fn(numgrad, a), (x,))


_WEIGHTS = np.random.default_rng(4).standard_normal((3, 3))
_DECOMPOSITION_LOSSES = {  # (sign- and phase-free functions of each decomposition's outputs)
    "eig": lambda m, A: (m.linalg.eig(A).eigenvectors.abs() * m.tensor(_WEIGHTS)).sum()
    + m.linalg.eig(A).eigenvalues.abs().sum(),
    "eigvals": lambda m, A: m.linalg.eigvals(A).abs().pow(3).sum(),
    "eigh": lambda m, A: (_eigh_squares(m.linalg.eigh(_sym(m, A)))[1] * m.tensor(_WEIGHTS)).sum()
    + m.linalg.eigh(_sym(m, A)).eigenvalues.pow(3).sum(),
    "svd": lambda m, A: (_svd_parts(m.linalg.svd(A))[1] * m.tensor(_WEIGHTS)).sum()
    + m.linalg.svd(A).S.pow(3).sum(),
    "svdvals": lambda m, A: m.linalg.svdvals(A).pow(3).sum(),
    "qr": lambda m, A: (m.linalg.qr(A).Q * m.tensor(_WEIGHTS)).sum()
    + m.linalg.qr(A).R.pow(2).sum(),
}


@pytest.mark.parametrize("name", list(_DECOMPOSITION_LOSSES))
def test_hessians_through_decompositions_match_pytorch(name):
    """Forward over reverse (``hessian``) and reverse over reverse (``jacrev(jacrev)``): the
    recorded backward of a decomposition rebuilds the forward's outputs, and those carry their
    tangents (``forward_ad._keep_for_saved_output``, ``rebuilds_output``)."""
    f = _DECOMPOSITION_LOSSES[name]
    data = _data((3, 3))
    for how in ("hessian", "jacrev_jacrev"):
        got = []
        for m in (numgrad, torch):
            g = (lambda h: m.func.hessian(h) if how == "hessian" else
                 m.func.jacrev(m.func.jacrev(h)))(lambda A: f(m, A))
            got.append(g(m.tensor(data)).detach().numpy())
        np.testing.assert_allclose(*got, rtol=1e-7, atol=1e-9, err_msg=how)


def _leaves(fn, seen, found):
    """The leaves a node's graph reaches, in a fixed order."""
    for nxt, _ in getattr(fn, "next_functions", ()):
        if nxt is None or id(nxt) in seen:
            continue
        seen.add(id(nxt))
        if hasattr(nxt, "variable"):
            found.append(nxt.variable)
        _leaves(nxt, seen, found)
    return found


def test_gradcheck_beyond_the_samples():
    check = numgrad.autograd.gradcheck
    x = numgrad.tensor(_data((2, 3, 3)), requires_grad=True)
    b = numgrad.tensor(_data((3, 2), 1), requires_grad=True)
    assert check(lambda a: numgrad.linalg.det(a), (x,))
    assert check(lambda a, c: numgrad.linalg.solve(a + 3 * numgrad.eye(3, dtype=a.dtype), c.mT,
                                                   left=False), (x, b))
    assert check(lambda a: numgrad.linalg.qr(a[0, :2]).Q, (x,))
    assert check(lambda a: numgrad.linalg.matrix_norm(a, "nuc"), (x,))
    assert numgrad.autograd.gradgradcheck(lambda a: numgrad.linalg.inv(
        a + 3 * numgrad.eye(3, dtype=a.dtype)), (x,))


def _cofactors(a):
    """The cofactor matrix of each square matrix of ``a`` from its minors (the oracle)."""
    n = a.shape[-1]
    out = np.empty_like(a)
    for i in range(n):
        for j in range(n):
            minor = np.delete(np.delete(a, i, axis=-2), j, axis=-1)
            out[..., i, j] = (-1) ** (i + j) * np.linalg.det(minor)
    return out


def test_det_gradient_at_singular_matrices_is_the_cofactors():
    """det is a polynomial: its gradient is the cofactor matrix everywhere, singular matrices
    included. The plain backward and the recorded one give it (the recorded one as PyTorch's,
    through the SVD); PyTorch's plain backward there depends on its LAPACK (0 where the solve of
    the singular LU stays 0, the cofactors where it gives NaN), so it is not the oracle."""
    singular = np.array([[1.0, 2, 3], [2, 4, 6], [1, 0, 1]])
    rank1 = np.outer([1.0, 2, 3], [1.0, -1, 2])
    batch = np.stack([singular, _data((3, 3)), rank1])
    _compare(lambda m, a: m.linalg.det(a), batch, grad=False)
    near = singular + np.diag([0.0, 1e-14, 0.0])
    # (near: not the plain backward, whose solve's LU and the determinant kernel's LU each round
    # the tiny pivot, so their quotient may differ by 1e-2 between LAPACK builds)
    runs = ((numgrad, False), (numgrad, True), (torch, True))  # (create_graph False: plain)
    for data, plain in ((batch, True), (near, False), (np.zeros((2, 2)), True)):
        got = []
        for m, create_graph in runs if plain else runs[1:]:
            x = m.tensor(data, requires_grad=True)
            (g,) = m.autograd.grad(m.linalg.det(x).sum(), x, create_graph=create_graph)
            got.append(g.detach().numpy())
        for g in got:
            np.testing.assert_allclose(g, _cofactors(data), rtol=1e-6, atol=1e-9)
    grad = numgrad.tensor([2.0, -1.0, 0.5])  # (a weighted sum: each matrix's own seed)
    x = numgrad.tensor(batch, requires_grad=True)
    numgrad.linalg.det(x).backward(grad)
    np.testing.assert_allclose(x.grad.numpy(), grad.numpy()[:, None, None] * _cofactors(batch),
                               rtol=1e-6, atol=1e-9)


def test_result_types_fields_and_dtypes():
    a = numgrad.tensor(_data((3, 3), shift=3.0))
    r = numgrad.linalg.slogdet(a)
    assert r.sign is r[0] and r.logabsdet is r[1] and "linalg_slogdet" in repr(r)
    q = numgrad.linalg.qr(a)
    assert q.Q is q[0] and q.R is q[1]
    _, _, Vh = numgrad.linalg.svd(a)
    assert numgrad.linalg.svd(a).Vh.shape == Vh.shape and numgrad.svd(a).V.shape == (3, 3)
    assert numgrad.linalg.eigh(a).eigenvalues.shape == (3,)
    _, info = numgrad.linalg.inv_ex(a)
    assert info.dtype is numgrad.int32 and numgrad.linalg.solve_ex(a, a).info.dtype is numgrad.int32
    assert numgrad.linalg.cholesky_ex(_spd(numgrad, a)).L.shape == (3, 3)
    lst = numgrad.linalg.lstsq(a, a[:, :2])
    tl = torch.linalg.lstsq(torch.tensor(a.numpy()), torch.tensor(a.numpy()[:, :2]))
    for o, t in zip(lst, tl):  # (gelsy: residuals and singular values empty, the rank int64)
        assert tuple(o.shape) == tuple(t.shape) and o.dtype.name == str(t.dtype)[6:]
    assert lst.rank.item() == 3 and numgrad.linalg.matrix_rank(a).dtype is numgrad.int64
    assert isinstance(numgrad.linalg.LinAlgError(), RuntimeError)
    np.testing.assert_array_equal(numgrad.linalg.matmul(a, a).numpy(), (a @ a).numpy())
    assert a.det().item() == pytest.approx(torch.tensor(a.numpy()).det().item())
    assert a.inverse().shape == (3, 3) and a.matrix_power(2).shape == (3, 3)
    assert a.slogdet()[1].item() == pytest.approx(r.logabsdet.item())


SING = np.array([[1.0, 2, 3], [2, 4, 6], [1, 1, 1]])
ERRORS = {
    "det_square": lambda m: m.linalg.det(m.ones(2, 3)),
    "det_1d": lambda m: m.linalg.det(m.ones(3)),
    "det_int": lambda m: m.linalg.det(m.ones(3, 3, dtype=m.int64)),
    "slogdet_square": lambda m: m.linalg.slogdet(m.ones(2, 3)),
    "inv_square": lambda m: m.linalg.inv(m.ones(2, 3)),
    "inv_int": lambda m: m.inverse(m.ones(3, 3, dtype=m.int64)),
    "inv_singular": lambda m: m.linalg.inv(m.tensor(SING)),
    "inv_singular_batch": lambda m: m.linalg.inv(m.tensor(np.stack([np.eye(3), SING]))),
    "inv_ex_check": lambda m: m.linalg.inv_ex(m.tensor(SING), check_errors=True),
    "solve_singular": lambda m: m.linalg.solve(m.tensor(SING), m.ones(3, dtype=m.float64)),
    "solve_singular_batch": lambda m: m.linalg.solve(m.tensor(np.stack([np.eye(3), SING])),
                                                     m.ones(2, 3, dtype=m.float64)),
    "solve_shapes": lambda m: m.linalg.solve(m.eye(3), m.ones(4)),
    "solve_dtypes": lambda m: m.linalg.solve(m.eye(3), m.ones(3, dtype=m.float64)),
    "solve_square": lambda m: m.linalg.solve(m.ones(2, 3), m.ones(2)),
    "cholesky_indefinite": lambda m: m.linalg.cholesky(-m.eye(3)),
    "cholesky_indefinite_batch": lambda m: m.linalg.cholesky(m.stack([m.eye(3), -m.eye(3)])),
    "cholesky_square": lambda m: m.linalg.cholesky(m.ones(2, 3)),
    "cholesky_int": lambda m: m.linalg.cholesky(m.ones(3, 3, dtype=m.int64)),
    "qr_1d": lambda m: m.linalg.qr(m.ones(3)),
    "qr_mode": lambda m: m.linalg.qr(m.ones(2, 3), mode="foo"),
    "eigh_square": lambda m: m.linalg.eigh(m.ones(2, 3)),
    "eigh_uplo": lambda m: m.linalg.eigh(m.ones(3, 3), UPLO="X"),
    "eigh_int": lambda m: m.linalg.eigh(m.ones(3, 3, dtype=m.int64)),
    "svd_1d": lambda m: m.linalg.svd(m.ones(3)),
    "svd_int": lambda m: m.linalg.svdvals(m.ones(3, 3, dtype=m.int64)),
    "svd_nan": lambda m: m.linalg.svd(m.tensor([[float("nan"), 1.0], [1.0, 2.0]])),
    "pinv_int": lambda m: m.linalg.pinv(m.ones(3, 3, dtype=m.int64)),
    "pinv_1d": lambda m: m.linalg.pinv(m.ones(3)),
    "lstsq_1d": lambda m: m.linalg.lstsq(m.ones(3), m.ones(3)),
    "lstsq_shapes": lambda m: m.linalg.lstsq(m.ones(2, 3), m.ones(3)),
    "lstsq_int": lambda m: m.linalg.lstsq(m.ones(3, 3, dtype=m.int64), m.ones(3, 3, dtype=m.int64)),
    "matrix_power_square": lambda m: m.linalg.matrix_power(m.ones(2, 3), 2),
    "matrix_power_1d": lambda m: m.linalg.matrix_power(m.ones(3), 2),
    "matrix_power_int_inverse": lambda m: m.linalg.matrix_power(m.ones(3, 3, dtype=m.int64), -1),
    "matrix_rank_int": lambda m: m.linalg.matrix_rank(m.ones(3, 3, dtype=m.int64)),
    "cross_length": lambda m: m.linalg.cross(m.ones(3, 4), m.ones(3, 4), dim=1),
    "vector_norm_int": lambda m: m.linalg.vector_norm(m.ones(3, dtype=m.int64)),
    "vector_norm_empty_inf": lambda m: m.linalg.vector_norm(m.ones(0, 3), float("inf")),
    "matrix_norm_1d": lambda m: m.linalg.matrix_norm(m.ones(3)),
    "matrix_norm_order": lambda m: m.linalg.matrix_norm(m.ones(2, 3), ord=3),
    "matrix_norm_int": lambda m: m.linalg.matrix_norm(m.ones(3, 3, dtype=m.int64)),
    "norm_3d_ord": lambda m: m.linalg.norm(m.ones(2, 2, 2), 2),
    "norm_fro_1d": lambda m: m.linalg.norm(m.ones(3), "fro"),
    "multi_dot_one": lambda m: m.linalg.multi_dot([m.ones(2, 2)]),
    "cholesky_solve_sizes": lambda m: m.cholesky_solve(m.ones(2, 3), m.eye(3)),
    "cholesky_solve_dtypes": lambda m: m.cholesky_solve(m.ones(3, 2), m.eye(3, dtype=m.float64)),
    "cholesky_inverse_square": lambda m: m.cholesky_inverse(m.ones(2, 3)),
    "cholesky_inverse_int": lambda m: m.cholesky_inverse(m.ones(3, 3, dtype=m.int64)),
    "multi_dot_3d": lambda m: m.linalg.multi_dot([m.ones(2, 3), m.ones(3, 2, 2)]),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors_match_pytorchs(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(Exception) as theirs:
            ERRORS[name](torch)
        with pytest.raises(Exception) as ours:
            ERRORS[name](numgrad)
    t, o = theirs.value, ours.value
    assert isinstance(o, type(t).__mro__[1] if type(t).__name__.startswith("_") else type(t))
    assert str(o) == str(t).split("\n")[0], (str(o), str(t))
    if isinstance(t, torch.linalg.LinAlgError):
        assert isinstance(o, numgrad.linalg.LinAlgError)


def test_info_of_the_ex_variants_matches_pytorch():
    for make in (lambda m: m.linalg.inv_ex(m.tensor(np.stack([np.eye(3), SING]))).info,
                 lambda m: m.linalg.solve_ex(m.tensor(SING), m.ones(3, dtype=m.float64)).info,
                 lambda m: m.linalg.cholesky_ex(m.tensor(np.diag([1.0, 2.0, -1.0]))).info):
        assert make(numgrad).tolist() == make(torch).tolist()


@pytest.mark.parametrize("call, message", [
    (lambda m: m.cross(m.ones(3, 2), m.ones(3, 2)), "Using torch.cross without specifying the dim"),
    (lambda m: m.cholesky(m.eye(2)), "torch.cholesky is deprecated"),
    (lambda m: m.qr(m.eye(2)), "torch.qr is deprecated"),
    (lambda m: m.chain_matmul(m.eye(2), m.eye(2)), "torch.chain_matmul is deprecated"),
])
def test_legacy_names_warn_as_pytorch(call, message):
    always = torch.is_warn_always_enabled()
    torch.set_warn_always(True)  # (PyTorch warns once a process: an earlier test may have)
    try:
        for m in (torch, numgrad):
            with pytest.warns(UserWarning, match=re.escape(message)):
                call(m)
    finally:
        torch.set_warn_always(always)


def test_out_keyword_as_pytorch():
    a = _data((3, 3), shift=3.0)
    for name, call in [("inv", lambda m, x, o: m.linalg.inv(x, out=o)),
                       ("solve", lambda m, x, o: m.linalg.solve(x, x, out=o)),
                       ("inverse", lambda m, x, o: m.inverse(x, out=o)),
                       ("matrix_power", lambda m, x, o: m.linalg.matrix_power(x, 3, out=o)),
                       ("pinv", lambda m, x, o: m.linalg.pinv(x, out=o)),
                       ("cholesky_solve", lambda m, x, o: m.cholesky_solve(x, x.tril(), out=o))]:
        results = []
        for m in (numgrad, torch):
            out = m.empty(3, 3, dtype=m.float64)
            assert call(m, m.tensor(a), out) is out, name
            results.append(out.numpy())
            try:  # (float32: not the result's dtype; some cast, some refuse)
                results.append(call(m, m.tensor(a), m.empty(3, 3)).dtype.is_floating_point)
            except RuntimeError as error:
                results.append(str(error))
            with pytest.raises(RuntimeError) as error:
                call(m, m.tensor(a, requires_grad=True), out)
            results.append(str(error.value))
        np.testing.assert_allclose(results[0], results[3], rtol=1e-10, atol=1e-12)
        assert results[1:3] == results[4:6], name
    x = numgrad.tensor(a)
    with pytest.raises(NotImplementedError, match="out= is not supported yet"):
        numgrad.linalg.qr(x, out=(numgrad.empty(3, 3), numgrad.empty(3, 3)))
    for m in (numgrad, torch):
        with pytest.raises(TypeError, match="unexpected keyword argument 'out'"):
            m.det(m.tensor(a), out=m.empty(()))


@pytest.mark.parametrize("shapes", [((5, 4, 3), (3, 6), True), ((2, 3, 4, 5), (5,), False),
                                    ((2, 3, 4), (4, 6), False), ((0, 3, 4), (4, 2), True)])
def test_a_batch_times_a_matrix_folds_into_one_product_as_pytorch(shapes):
    """PyTorch's ``should_fold``: a left operand of 3+ dimensions times a matrix (or vector) is
    one ``mm`` (``mv``) of its batch folded into rows, viewed back (``UnsafeViewBackward0`` of
    ``MmBackward0``), where the right one requires grad or the fold needs no copy: a ``Linear``
    of a sequence is one GEMM, not a batch of them against expanded copies of the weight."""
    a_shape, b_shape, b_grad = shapes
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal(a_shape), rng.standard_normal(b_shape)
    got, want = [], []
    for m, out in ((numgrad, got), (torch, want)):
        x, y = m.tensor(a, requires_grad=True), m.tensor(b, requires_grad=b_grad)
        z = x @ y
        z.sum().backward()
        out += [z.detach().numpy(), x.grad.numpy(), None if not b_grad else y.grad.numpy(),
                (type(z.grad_fn).__name__,
                 tuple(type(f[0]).__name__ for f in z.grad_fn.next_functions))]
    np.testing.assert_allclose(got[0], want[0], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-12, atol=1e-12)
    if b_grad:
        np.testing.assert_allclose(got[2], want[2], rtol=1e-12, atol=1e-12)
    assert got[3] == want[3]


def _rhs(m, A):
    return m.ones(tuple(A.shape[:-1]) + (2,), dtype=A.dtype)


def _tau(m, A):
    return m.ones(tuple(A.shape[:-2]) + (min(A.shape[-2:]),) if A.ndim >= 2 else (1,),
                  dtype=A.dtype)


def _pivots(m, A):
    return m.ones(tuple(A.shape[:-1]), dtype=m.int32)


HALF_CALLS = {  # (A a (batch of) float16/bfloat16 matrices, or a vector)
    "det": lambda m, A: m.linalg.det(A), "torch.det": lambda m, A: m.det(A),
    "slogdet": lambda m, A: m.linalg.slogdet(A), "logdet": lambda m, A: m.logdet(A),
    "solve": lambda m, A: m.linalg.solve(A, _rhs(m, A)),
    "solve_ex": lambda m, A: m.linalg.solve_ex(A, _rhs(m, A)),
    "tensorsolve": lambda m, A: m.linalg.tensorsolve(A, m.ones(A.shape[:1], dtype=A.dtype)),
    "lu": lambda m, A: m.linalg.lu(A), "lu_factor": lambda m, A: m.linalg.lu_factor(A),
    "lu_factor_ex": lambda m, A: m.linalg.lu_factor_ex(A), "torch.lu": lambda m, A: m.lu(A),
    "lu_solve": lambda m, A: m.linalg.lu_solve(A, _pivots(m, A), _rhs(m, A)),
    "cholesky": lambda m, A: m.linalg.cholesky(A),
    "cholesky_ex": lambda m, A: m.linalg.cholesky_ex(A),
    "torch.cholesky": lambda m, A: m.cholesky(A),
    "cholesky_solve": lambda m, A: m.cholesky_solve(_rhs(m, A), A),
    "cholesky_inverse": lambda m, A: m.cholesky_inverse(A),
    "svd": lambda m, A: m.linalg.svd(A), "svdvals": lambda m, A: m.linalg.svdvals(A),
    "torch.svd": lambda m, A: m.svd(A),
    "cond": lambda m, A: m.linalg.cond(A), "cond_1": lambda m, A: m.linalg.cond(A, 1),
    "cond_fro": lambda m, A: m.linalg.cond(A, "fro"),
    "cond_nuc": lambda m, A: m.linalg.cond(A, "nuc"),
    "eig": lambda m, A: m.linalg.eig(A), "eigvals": lambda m, A: m.linalg.eigvals(A),
    "eigh": lambda m, A: m.linalg.eigh(A), "eigvalsh": lambda m, A: m.linalg.eigvalsh(A),
    "qr": lambda m, A: m.linalg.qr(A), "torch.qr": lambda m, A: m.qr(A),
    "geqrf": lambda m, A: m.geqrf(A),
    "householder_product": lambda m, A: m.linalg.householder_product(A, _tau(m, A)),
    "ormqr": lambda m, A: m.ormqr(A, _tau(m, A), A),
    "solve_triangular": lambda m, A: m.linalg.solve_triangular(A, _rhs(m, A), upper=True),
    "triangular_solve": lambda m, A: m.triangular_solve(_rhs(m, A), A),
    "ldl_factor": lambda m, A: m.linalg.ldl_factor(A),
    "ldl_factor_ex": lambda m, A: m.linalg.ldl_factor_ex(A),
    "ldl_solve": lambda m, A: m.linalg.ldl_solve(A, _pivots(m, A), _rhs(m, A)),
    "inv": lambda m, A: m.linalg.inv(A), "inv_ex": lambda m, A: m.linalg.inv_ex(A),
    "inverse": lambda m, A: m.inverse(A),
    "tensorinv": lambda m, A: m.linalg.tensorinv(A, ind=1),
    "lstsq": lambda m, A: m.linalg.lstsq(A, _rhs(m, A)),
    "lstsq_rcond": lambda m, A: m.linalg.lstsq(A, _rhs(m, A), rcond=0.1),
    "matrix_rank": lambda m, A: m.linalg.matrix_rank(A),
    "matrix_rank_atol": lambda m, A: m.linalg.matrix_rank(A, atol=0.1),
    "matrix_rank_rtol": lambda m, A: m.linalg.matrix_rank(A, rtol=0.1),
    "matrix_rank_hermitian": lambda m, A: m.linalg.matrix_rank(A, hermitian=True, rtol=0.1),
    "pinv": lambda m, A: m.linalg.pinv(A), "pinverse": lambda m, A: m.pinverse(A),
    "pinv_atol": lambda m, A: m.linalg.pinv(A, atol=0.1),
    "pinv_hermitian": lambda m, A: m.linalg.pinv(A, hermitian=True),
}


def test_linalg_of_half_matrices_raises_pytorchs_errors():
    """float16/bfloat16 matrices: PyTorch 2.13's CPU refusals (a kernel without a half case, its
    NotImplementedError; inv and slogdet's "Low precision dtypes"; lstsq, matrix_rank and pinv's
    epsilon of a default tolerance, pinv's own check), each after the checks PyTorch makes
    first (a vector, a non-square matrix, the other arguments), and what it computes of empty
    matrices (ops/linalg_common.py, _HALF_REFUSALS): the exception class and message, or the
    results' dtypes and shapes, as PyTorch's."""
    def outcome(m, call, dtype, shape):
        A = m.ones(shape, dtype=m.float64)
        if len(shape) >= 2:
            A = A * 0.1 + 2 * m.eye(shape[-2], shape[-1], dtype=m.float64)
        try:
            result = call(m, A.to(getattr(m, dtype)))
        except Exception as error:
            return type(error).__name__, str(error).split("\n")[0]
        return [(str(r.dtype).split(".")[-1], tuple(r.shape))
                for r in (result if isinstance(result, tuple) else (result,))]

    mismatches = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, call in HALF_CALLS.items():
            for dtype in ("float16", "bfloat16"):
                for shape in ((3, 3), (2, 3, 3), (3, 4), (4, 3), (3,), (0, 0), (2, 0, 0)):
                    want = outcome(torch, call, dtype, shape)
                    got = outcome(numgrad, call, dtype, shape)
                    if got != want:
                        mismatches.append((name, dtype, shape, want, got))
    assert not mismatches, mismatches
