"""torch.linalg on CUDA in the simulator (run with tests/cuda_sim, see test_cuda_sim.py): the LU
kernels (det, slogdet, inv, solve with ``left=``), Cholesky (``upper=``), Householder QR (its
modes), the Jacobi eigh (``UPLO``) and SVD (``full_matrices``, tall and wide), pinv, lstsq and
matrix_rank against the CPU (LAPACK): values, node names and input gradients, batches, empty
batches and non-contiguous inputs; PyTorch's errors for singular and indefinite matrices (with
the batch element), the ``_ex`` variants' info; second derivatives of solve. The registry's
samples run on CUDA in test_cuda_sim.py; shapes stay small (the simulator runs each thread as
Python)."""
import re

import numpy as np
import pytest

import numgrad

TOL = {"float64": {"rtol": 1e-9, "atol": 1e-10}, "float32": {"rtol": 1e-4, "atol": 1e-5}}
LA = numgrad.linalg


def _host(t):
    return t.detach().cpu().numpy()


def _data(shape, dtype="float64", seed=0):
    return np.random.default_rng(seed).uniform(-2, 2, size=shape).astype(dtype)


def _on_both(fn, *arrays, grad=True, seed=0):
    """``fn(*tensors)`` of the same data on the CPU and on CUDA: the outputs and the input
    gradients of the same vector-Jacobian product."""
    results = []
    for device in ("cpu", "cuda"):
        xs = [numgrad.tensor(a, device=device, requires_grad=grad) for a in arrays]
        out = fn(*xs)
        out = tuple(out) if isinstance(out, (tuple, list)) else (out,)
        grads = None
        if grad:
            rng = np.random.default_rng(seed)
            diff = [o for o in out if o.requires_grad]
            seeds = [numgrad.tensor(rng.standard_normal(tuple(o.shape)).astype(o.dtype.name),
                                    device=device) for o in diff]
            numgrad.autograd.backward(diff, seeds)
            grads = [None if x.grad is None else _host(x.grad) for x in xs]
        results.append((out, grads))
    return results


def _check(fn, *arrays, grad=True, tol=None):
    (cpu, cpu_grads), (cuda, cuda_grads) = _on_both(fn, *arrays, grad=grad)
    tol = tol or TOL[arrays[0].dtype.name]
    assert len(cpu) == len(cuda)
    for c, g in zip(cpu, cuda):
        assert g.device.type == "cuda" and tuple(g.shape) == tuple(c.shape) and g.dtype is c.dtype
        assert (g.grad_fn is None) == (c.grad_fn is None)
        if c.grad_fn is not None:
            assert g.grad_fn.name() == c.grad_fn.name()
        np.testing.assert_allclose(_host(g), _host(c), **tol)
    if grad:
        for c, g in zip(cpu_grads, cuda_grads):
            assert (c is None) == (g is None)
            if c is not None:
                np.testing.assert_allclose(g, c, **tol)


def _spd(m, a):
    return a @ a.mT + m.eye(a.shape[-1], dtype=a.dtype, device=a.device)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_lu_family_matches_the_cpu(dtype):
    a = _data((2, 3, 3), dtype) + 3 * np.eye(3, dtype=dtype)
    b = _data((2, 3, 2), dtype, 1)
    _check(lambda x: (LA.det(x), LA.slogdet(x).logabsdet, LA.inv(x)), a)
    _check(lambda x, y: LA.solve(x, y), a, b)
    _check(lambda x, y: LA.solve(x, y.mT, left=False), a, b)
    _check(lambda x, y: LA.solve(x, y[0, :, 0]), a, b)  # (a vector, broadcast over the batch)
    _check(lambda x: numgrad.logdet(_spd(numgrad, x)), a)
    singular = np.stack([a[0], np.array([[1, 2, 3], [2, 4, 6], [1, 0, 1]], dtype)])
    _check(LA.det, singular)  # (the cofactors at the singular one, as on the CPU)


def test_singular_matrices_raise_pytorchs_errors_on_cuda():
    sing = np.array([[1.0, 2, 3], [2, 4, 6], [1, 1, 1]])
    batch = np.stack([np.eye(3), sing])
    for data, prefix in ((sing, ""), (batch, "(Batch element 1): ")):
        x = numgrad.tensor(data, device="cuda")
        with pytest.raises(LA.LinAlgError, match="^" + re.escape(
                f"linalg.inv: {prefix}The diagonal element 3 is zero, the inversion could not be "
                "completed because the input matrix is singular.")):
            LA.inv(x)
        with pytest.raises(RuntimeError, match="torch.linalg.solve: .*input matrix is singular"):
            LA.solve(x, numgrad.ones(3, device="cuda", dtype=numgrad.float64))
    x = numgrad.tensor(batch, device="cuda")
    inverse, info = LA.inv_ex(x)
    assert info.device.type == "cuda" and info.dtype is numgrad.int32
    assert info.cpu().tolist() == [0, 3]
    np.testing.assert_allclose(_host(inverse)[0], np.eye(3))
    np.testing.assert_allclose(_host(LA.det(x)), [1.0, 0.0], atol=1e-12)
    sign, logabs = LA.slogdet(x)
    assert _host(sign).tolist() == [1.0, 0.0] and _host(logabs)[1] == -np.inf


@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_matches_the_cpu_and_reports_the_minor(upper):
    a = _data((2, 3, 3))
    _check(lambda x: LA.cholesky(_spd(numgrad, x), upper=upper), a)
    bad = np.stack([np.eye(3), np.diag([1.0, -1.0, 1.0])])
    x = numgrad.tensor(bad, device="cuda")
    with pytest.raises(LA.LinAlgError, match=re.escape("(Batch element 1): ") + ".*" + re.escape(
            "(the leading minor of order 2 is not positive-definite).")):
        LA.cholesky(x, upper=upper)
    L, info = LA.cholesky_ex(x, upper=upper)
    assert info.cpu().tolist() == [0, 2]
    cpu = LA.cholesky_ex(numgrad.tensor(bad), upper=upper)
    np.testing.assert_array_equal(_host(L), _host(cpu.L))


@pytest.mark.parametrize("shape, mode", [((4, 3), "reduced"), ((2, 3, 4), "reduced"),
                                         ((2, 3), "complete"), ((3, 2), "r")])
def test_qr_matches_lapacks_signs(shape, mode):
    a = _data(shape)
    if mode == "r":
        _check(lambda x: LA.qr(x, mode="r").R, a, grad=False)
        assert tuple(LA.qr(numgrad.tensor(a, device="cuda"), mode="r").Q.shape) == (0,)
    else:
        _check(lambda x: tuple(LA.qr(x, mode=mode)), a)


@pytest.mark.parametrize("uplo", ["L", "U"])
def test_eigh_matches_the_cpu_up_to_the_vectors_signs(uplo):
    a = _data((2, 4, 4))

    def fn(x):
        w, v = LA.eigh(x + x.mT, UPLO=uplo)
        return w, v.pow(2), LA.eigvalsh(x + x.mT, UPLO=uplo)

    _check(fn, a)
    # (the triangle read: a non-symmetric input's eigenvalues are those of its UPLO triangle)
    (cpu, _), (cuda, _) = _on_both(lambda x: LA.eigvalsh(x, UPLO=uplo), a, grad=False)
    np.testing.assert_allclose(_host(cuda[0]), _host(cpu[0]), **TOL["float64"])


@pytest.mark.parametrize("shape, full", [((4, 3), False), ((3, 4), False), ((2, 4, 3), True),
                                         ((3, 5), True)])
def test_svd_matches_the_cpu_on_functions_that_ignore_signs(shape, full):
    a = _data(shape)

    def fn(x):
        U, S, Vh = LA.svd(x, full_matrices=full)
        k = S.shape[-1]
        return S, U[..., :k] @ Vh[..., :k, :], LA.svdvals(x)

    _check(fn, a)
    U, S, Vh = LA.svd(numgrad.tensor(a, device="cuda"), full_matrices=full)
    m, n = shape[-2:]
    eye_u = np.broadcast_to(np.eye(U.shape[-1]), tuple(U.shape[:-2]) + (U.shape[-1],) * 2)
    np.testing.assert_allclose(_host(U.mT @ U), eye_u, atol=1e-12)  # (orthonormal, completed)
    np.testing.assert_allclose(_host((U[..., :min(m, n)] * S.unsqueeze(-2)) @
                                     Vh[..., :min(m, n), :]), a, atol=1e-12)


def test_rank_deficient_svd_completes_u_and_pinv_lstsq_rank_match_the_cpu():
    a = _data((4, 2)) @ _data((2, 3), seed=1)  # rank 2
    b = _data((4, 2), seed=2)
    _check(lambda x: LA.pinv(x), a, grad=False)
    _check(lambda x, y: LA.lstsq(x, y).solution, a, b, grad=False)
    x = numgrad.tensor(a, device="cuda")
    assert LA.matrix_rank(x).item() == 2
    # (on CUDA, lstsq's driver is 'gels', as PyTorch's: it computes no rank, an empty tensor)
    assert LA.lstsq(x, numgrad.tensor(b, device="cuda")).rank.numel() == 0
    U = LA.svd(x).U
    np.testing.assert_allclose(_host(U.mT @ U), np.eye(4), atol=1e-12)
    _check(lambda x, y: (LA.pinv(x), LA.lstsq(x, y).solution), _data((3, 3)) + 3 * np.eye(3),
           b[:3])


def test_empty_batches_and_non_contiguous_inputs():
    for device in ("cpu", "cuda"):
        e = numgrad.zeros(0, 3, 3, dtype=numgrad.float64, device=device)
        assert tuple(LA.det(e).shape) == (0,) and tuple(LA.inv(e).shape) == (0, 3, 3)
        assert tuple(LA.svd(e).S.shape) == (0, 3) and tuple(LA.eigh(e)[1].shape) == (0, 3, 3)
        assert LA.det(numgrad.zeros(0, 0, dtype=numgrad.float64, device=device)).item() == 1.0
    a = _data((3, 3, 2)) + np.eye(3, 2)
    _check(lambda x: (LA.det(x[:, :, :1].expand(3, 3, 3) + numgrad.eye(3, dtype=x.dtype,
                                                                         device=x.device)),
                      LA.svdvals(x.transpose(0, 1))), a)


def test_second_derivatives_of_solve_and_inv_match_the_cpu():
    a = _data((3, 3)) + 3 * np.eye(3)
    b = _data((3,), seed=1)
    grads = []
    for device in ("cpu", "cuda"):
        x = numgrad.tensor(a, device=device, requires_grad=True)
        y = numgrad.tensor(b, device=device, requires_grad=True)
        (gx,) = numgrad.autograd.grad((LA.solve(x, y) ** 2).sum() + LA.inv(x).sum(), x,
                                      create_graph=True)
        gx.pow(2).sum().backward()
        grads.append((_host(gx), _host(x.grad), _host(y.grad)))
    for c, g in zip(*grads):
        np.testing.assert_allclose(g, c, **TOL["float64"])


def test_norms_and_matrix_power_on_cuda():
    a = _data((2, 3, 3))
    _check(lambda x: (LA.vector_norm(x, 3, dim=-1), LA.vector_norm(x, float("inf")),
                      LA.matrix_norm(x, 1), LA.matrix_norm(x, "fro"), LA.norm(x, dim=(1, 2)),
                      LA.matrix_power(x, 3)), a)
    _check(lambda x: (LA.matrix_norm(x, "nuc"), LA.matrix_norm(x, -2),
                      LA.matrix_power(x + 3 * numgrad.eye(3, dtype=x.dtype, device=x.device), -2)),
           a)
