"""Property-based tests against PyTorch: random shapes, broadcasting pairs, dims and keepdim.

Each test draws inputs with hypothesis, runs the same expression in numgrad and in PyTorch, and
compares values, dtypes and the gradients of a random vector-Jacobian product.
"""
import numpy as np
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import numgrad

TOL = {"float32": dict(rtol=1e-4, atol=1e-5), "float64": dict(rtol=1e-9, atol=1e-11)}
dtypes = st.sampled_from(["float32", "float64"])
shapes = hnp.array_shapes(min_dims=0, max_dims=4, min_side=1, max_side=5)


def _pair(array: np.ndarray):
    return (numgrad.tensor(array, requires_grad=array.dtype.kind == "f"),
            torch.tensor(array, requires_grad=array.dtype.kind == "f"))


def _array(data, shape, dtype, low=-3.0, high=3.0) -> np.ndarray:
    seed = data.draw(st.integers(0, 2**32 - 1), label="seed")
    return np.random.default_rng(seed).uniform(low, high, size=shape).astype(dtype)


def _check(data, ours_in, theirs_in, fn, dtype):
    ours, theirs = fn(numgrad, *ours_in), fn(torch, *theirs_in)
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert ours.dtype.name == str(theirs.dtype).removeprefix("torch.")
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), **TOL[dtype])
    if not theirs.requires_grad:
        return
    seed = _array(data, tuple(theirs.shape), dtype)
    ours.backward(numgrad.tensor(seed))
    theirs.backward(torch.tensor(seed))
    for o, t in zip(ours_in, theirs_in):
        if t.grad is not None:
            np.testing.assert_allclose(o.grad.numpy(), t.grad.numpy(), **TOL[dtype])


BINARY = {
    "add": lambda m, a, b: a + b,
    "sub": lambda m, a, b: m.sub(a, b),
    "mul": lambda m, a, b: a * b,
    "div": lambda m, a, b: a / (b.abs() + 0.5),
    "pow": lambda m, a, b: (a.abs() + 0.5) ** b,
    "maximum": lambda m, a, b: m.maximum(a, b),
    "minimum": lambda m, a, b: m.minimum(a, b),
    "where": lambda m, a, b: m.where(a > b, a, b * 2),
    "rsub_scalar": lambda m, a, b: 1.5 - a * b,
}


@settings(max_examples=400)
@given(data=st.data(), op=st.sampled_from(sorted(BINARY)), dtype=dtypes,
       shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=4, max_side=4))
def test_binary_broadcasting(data, op, dtype, shapes):
    sa, sb = shapes.input_shapes
    a, ta = _pair(_array(data, sa, dtype))
    b, tb = _pair(_array(data, sb, dtype))
    _check(data, (a, b), (ta, tb), BINARY[op], dtype)


UNARY = {
    "neg": lambda m, a: -a, "exp": lambda m, a: a.exp(), "log": lambda m, a: (a.abs() + 0.1).log(),
    "log1p": lambda m, a: a.abs().log1p(), "expm1": lambda m, a: a.expm1(),
    "sqrt": lambda m, a: (a.abs() + 0.1).sqrt(), "rsqrt": lambda m, a: (a.abs() + 0.1).rsqrt(),
    "tanh": lambda m, a: a.tanh(), "sigmoid": lambda m, a: a.sigmoid(), "relu": lambda m, a: a.relu(),
    "abs": lambda m, a: a.abs(), "sin": lambda m, a: a.sin(), "cos": lambda m, a: a.cos(),
    "tan": lambda m, a: (a / 3).tan(), "sign": lambda m, a: a.sign() * a,
    "floor": lambda m, a: a.floor() + a, "ceil": lambda m, a: a.ceil() * a,
    "round": lambda m, a: a.round() - a, "reciprocal": lambda m, a: (a.abs() + 0.5).reciprocal(),
    "clamp": lambda m, a: a.clamp(-1, 1.5), "pow_scalar": lambda m, a: a**3 - a**2,
    "scalar_ops": lambda m, a: 2 / (a * a + 1) - 3 * a + a / 4,
}


@settings(max_examples=400)
@given(data=st.data(), op=st.sampled_from(sorted(UNARY)), dtype=dtypes, shape=shapes)
def test_unary(data, op, dtype, shape):
    a, ta = _pair(_array(data, shape, dtype))
    _check(data, (a,), (ta,), UNARY[op], dtype)


REDUCTIONS = {
    "sum": lambda m, a, d, k: a.sum(d, keepdim=k),
    "mean": lambda m, a, d, k: a.mean(d, keepdim=k),
    "prod": lambda m, a, d, k: (a.abs() + 0.5).prod(d[0], keepdim=k),
    "amax": lambda m, a, d, k: a.amax(d, keepdim=k),
    "amin": lambda m, a, d, k: m.amin(a, d, keepdim=k),
    "var": lambda m, a, d, k: a.var(d, keepdim=k),
    "std": lambda m, a, d, k: a.std(d, keepdim=k, correction=0),
    "norm": lambda m, a, d, k: a.norm(dim=d[:2], keepdim=k),  # PyTorch: more dims is an error
    "logsumexp": lambda m, a, d, k: a.logsumexp(d, keepdim=k),
    "softmax": lambda m, a, d, k: a.softmax(d[0]),
    "log_softmax": lambda m, a, d, k: m.log_softmax(a, d[0]),
    "max_dim": lambda m, a, d, k: a.max(d[0], keepdim=k).values,
    "min_dim": lambda m, a, d, k: a.min(d[0], keepdim=k)[0],
    "argmax": lambda m, a, d, k: a.argmax(d[0], keepdim=k),
}


@settings(max_examples=400)
@given(data=st.data(), op=st.sampled_from(sorted(REDUCTIONS)), dtype=dtypes,
       shape=hnp.array_shapes(min_dims=1, max_dims=4, min_side=1, max_side=5), keepdim=st.booleans())
def test_reductions(data, op, dtype, shape, keepdim):
    nd = len(shape)
    dims = data.draw(st.lists(st.integers(-nd, nd - 1), min_size=1, max_size=nd,
                              unique_by=lambda d: d % nd), label="dims")
    if op in ("var", "std") and np.prod([shape[d] for d in dims]) < 2:
        dims = list(range(nd))  # a variance needs at least two values per slice
    if op in ("var",) and np.prod([shape[d] for d in dims]) < 2:
        return
    a, ta = _pair(_array(data, shape, dtype))
    dims = tuple(dims)
    _check(data, (a,), (ta,), lambda m, x: REDUCTIONS[op](m, x, dims, keepdim), dtype)


@settings(max_examples=300)
@given(data=st.data(), dtype=dtypes,
       shape=hnp.array_shapes(min_dims=1, max_dims=4, min_side=1, max_side=4),
       kind=st.sampled_from(["permute", "transpose", "reshape", "flatten", "unsqueeze", "squeeze",
                             "cat", "stack", "split", "chunk", "repeat", "expand", "narrow", "t"]))
def test_shape_ops(data, dtype, shape, kind):
    nd = len(shape)
    a, ta = _pair(_array(data, shape, dtype))
    dim = data.draw(st.integers(-nd, nd - 1), label="dim")
    if kind == "permute":
        order = tuple(data.draw(st.permutations(range(nd)), label="order"))
        fn = lambda m, x: x.permute(*order) * 2  # noqa: E731
    elif kind == "transpose":
        other = data.draw(st.integers(-nd, nd - 1), label="other")
        fn = lambda m, x: x.transpose(dim, other).exp()  # noqa: E731
    elif kind == "reshape":
        fn = lambda m, x: x.transpose(0, -1).reshape(-1, shape[0]) * 3  # noqa: E731
    elif kind == "flatten":
        fn = lambda m, x: x.flatten(0 if nd == 1 else 1) + 1  # noqa: E731
    elif kind == "unsqueeze":
        d = data.draw(st.integers(-nd - 1, nd), label="new dim")
        fn = lambda m, x: x.unsqueeze(d) * x.unsqueeze(d)  # noqa: E731
    elif kind == "squeeze":
        fn = lambda m, x: x.unsqueeze(0).squeeze(dim if dim < 0 else 0).squeeze() * 2  # noqa: E731
    elif kind == "cat":
        fn = lambda m, x: m.cat([x, x * 2, x], dim)  # noqa: E731
    elif kind == "stack":
        fn = lambda m, x: m.stack([x, x.exp()], dim)  # noqa: E731
    elif kind == "split":
        size = data.draw(st.integers(1, 4), label="size")
        fn = lambda m, x: m.cat([p * (i + 1) for i, p in enumerate(x.split(size, dim))], dim)  # noqa: E731
    elif kind == "chunk":
        n = data.draw(st.integers(1, 4), label="chunks")
        fn = lambda m, x: m.cat([p * (i + 1) for i, p in enumerate(x.chunk(n, dim))], dim)  # noqa: E731
    elif kind == "repeat":
        reps = data.draw(st.lists(st.integers(1, 3), min_size=nd, max_size=nd + 1), label="reps")
        fn = lambda m, x: x.repeat(*reps) * 2  # noqa: E731
    elif kind == "expand":
        fn = lambda m, x: x.sum(dim, keepdim=True).expand(*shape) * x  # noqa: E731
    elif kind == "narrow":
        size = shape[dim]
        start = data.draw(st.integers(0, size - 1), label="start")
        length = data.draw(st.integers(0, size - start), label="length")
        fn = lambda m, x: x.narrow(dim, start, length) * 2  # noqa: E731
    else:
        fn = lambda m, x: x.flatten().t() if nd > 2 else x.t() * 2  # noqa: E731
    _check(data, (a,), (ta,), fn, dtype)


@settings(max_examples=300)
@given(data=st.data(), dtype=dtypes,
       lead=hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=2, max_side=3),
       n=st.integers(1, 4), k=st.integers(1, 4), m_=st.integers(1, 4),
       vector=st.sampled_from(["none", "left", "right", "both"]))
def test_matmul_shapes(data, dtype, lead, n, k, m_, vector):
    sa = lead.input_shapes[0] + (n, k) if vector not in ("left", "both") else (k,)
    sb = lead.input_shapes[1] + (k, m_) if vector not in ("right", "both") else (k,)
    a, ta = _pair(_array(data, sa, dtype))
    b, tb = _pair(_array(data, sb, dtype))
    _check(data, (a, b), (ta, tb), lambda m, x, y: x @ y, dtype)


SCALARS = st.one_of(st.integers(-3, 3), st.floats(-3, 3, allow_nan=False, width=32), st.booleans())
ALL_DTYPES = st.sampled_from(["float32", "float64", "int64", "int32", "bool"])


@settings(max_examples=400)
@given(data=st.data(), da=ALL_DTYPES, db=ALL_DTYPES, zero_dim=st.booleans(), scalar=SCALARS,
       op=st.sampled_from(["add", "mul", "sub", "div", "eq", "lt", "maximum"]))
def test_type_promotion(data, da, db, zero_dim, scalar, op):
    """Result dtypes and values of mixed-dtype expressions, with 0-d tensors and Python scalars."""
    if op == "sub" and "bool" in (da, db):
        return  # PyTorch refuses bool subtraction
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16), label="seed"))

    def make(dtype, shape):
        values = rng.integers(-3, 4, size=shape)
        return values.astype(dtype) if dtype != "bool" else values > 0

    a = make(da, (2, 3))
    b = make(db, () if zero_dim else (3,))
    use_scalar = op != "maximum" and data.draw(st.booleans(), label="use scalar")
    if op == "sub" and use_scalar and isinstance(scalar, bool) or (da == "bool" and op == "sub"):
        return
    outs = []
    for m in (numgrad, torch):
        x, y = m.tensor(a), (scalar if use_scalar else m.tensor(b))
        outs.append(getattr(m, op)(x, y))
    ours, theirs = outs
    assert ours.dtype.name == str(theirs.dtype).removeprefix("torch."), (ours.dtype, theirs.dtype)
    np.testing.assert_allclose(ours.numpy().astype(np.float64), theirs.numpy().astype(np.float64),
                               rtol=1e-6)
