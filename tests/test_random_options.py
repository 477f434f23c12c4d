"""Random-number options (``generator=`` on every sampler, ``randint_like``, ``seed``,
``initial_seed``, ``get_rng_state`` / ``set_rng_state``, ``Generator.get_state`` / ``set_state``)
and ``set_printoptions``, against PyTorch where PyTorch's behaviour is observable (shapes,
dtypes, ranges, errors, printed text). numgrad's streams are its own (Philox4x32-10), so values
are checked for reproducibility, not against PyTorch's numbers."""
import math

import numpy as np
import pytest
import torch

import numgrad

SAMPLERS = {
    "rand": lambda m, g: m.rand(3, 4, generator=g),
    "rand_size": lambda m, g: m.rand((2, 5), generator=g, dtype=m.float64),
    "randn": lambda m, g: m.randn(4, generator=g),
    "randint": lambda m, g: m.randint(3, 10, (5,), generator=g),
    "randint_high": lambda m, g: m.randint(7, (2, 2), generator=g),
    "rand_like": lambda m, g: m.rand_like(m.zeros(2, 3, dtype=m.float64), generator=g),
    "randn_like": lambda m, g: m.randn_like(m.zeros(3), generator=g),
    "randint_like": lambda m, g: m.randint_like(m.zeros(2, 3), 10, generator=g),
    "randint_like_low": lambda m, g: m.randint_like(m.zeros(4, dtype=m.int64), -3, 3,
                                                    generator=g),
    "randperm": lambda m, g: m.randperm(6, generator=g),
    "normal": lambda m, g: m.normal(0.0, 2.0, (3,), generator=g),
    "bernoulli": lambda m, g: m.bernoulli(m.full((5,), 0.5), generator=g),
    "multinomial": lambda m, g: m.multinomial(m.ones(4), 2, generator=g),
}


@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_generator_reproduces_and_matches_torch_shape_dtype(name):
    fn = SAMPLERS[name]
    a = fn(numgrad, numgrad.Generator().manual_seed(3))
    b = fn(numgrad, numgrad.Generator().manual_seed(3))
    c = fn(numgrad, numgrad.Generator().manual_seed(4))
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    t = fn(torch, torch.Generator().manual_seed(3))
    assert tuple(a.shape) == tuple(t.shape)
    assert a.dtype.name == str(t.dtype).removeprefix("torch.")
    assert a.requires_grad is False
    if a.numel() > 3 and name not in ("bernoulli",):
        assert not np.array_equal(a.numpy(), c.numpy())


def test_ranges():
    g = numgrad.Generator().manual_seed(0)
    x = numgrad.randint(3, 10, (1000,), generator=g).numpy()
    assert x.min() == 3 and x.max() == 9
    y = numgrad.randint_like(numgrad.zeros(1000), -2, 2, generator=g).numpy()
    assert set(np.unique(y)) == {-2.0, -1.0, 0.0, 1.0}
    u = numgrad.rand(1000, generator=g).numpy()
    assert 0 <= u.min() and u.max() < 1
    assert numgrad.rand_like(numgrad.zeros(2), requires_grad=True).requires_grad


def test_a_generator_does_not_touch_the_default_stream():
    numgrad.manual_seed(11)
    first = numgrad.rand(4).numpy()
    numgrad.manual_seed(11)
    numgrad.rand(4, generator=numgrad.Generator().manual_seed(0))
    np.testing.assert_array_equal(numgrad.rand(4).numpy(), first)


def test_manual_seed_seed_initial_seed():
    g = numgrad.manual_seed(123)
    assert isinstance(g, numgrad.Generator) and g is numgrad.default_generator
    assert numgrad.initial_seed() == 123
    a = numgrad.randn(3).numpy()
    numgrad.manual_seed(123)
    np.testing.assert_array_equal(numgrad.randn(3).numpy(), a)
    s = numgrad.seed()
    assert isinstance(s, int) and numgrad.initial_seed() == s
    assert isinstance(torch.seed(), int)  # (the same kind of result as PyTorch's)


def test_rng_state_round_trip():
    numgrad.manual_seed(5)
    numgrad.rand(3)
    state = numgrad.get_rng_state()
    assert isinstance(state, numgrad.Tensor) and state.ndim == 1
    snapshot = state.numpy().copy()
    want = [numgrad.rand(4).numpy(), numgrad.randn(2).numpy(), numgrad.randperm(5).numpy()]
    numgrad.rand(100)
    numgrad.set_rng_state(state)
    got = [numgrad.rand(4).numpy(), numgrad.randn(2).numpy(), numgrad.randperm(5).numpy()]
    for w, g in zip(want, got):
        np.testing.assert_array_equal(w, g)
    # the state is a snapshot: later draws do not change it
    np.testing.assert_array_equal(state.numpy(), snapshot)


def test_generator_state_round_trip():
    g = numgrad.Generator().manual_seed(9)
    g_state = g.get_state()
    a = numgrad.randn(5, generator=g).numpy()
    g.set_state(g_state)
    np.testing.assert_array_equal(numgrad.randn(5, generator=g).numpy(), a)
    h = numgrad.Generator().set_state(g_state)  # a state moves between generators
    np.testing.assert_array_equal(numgrad.randn(5, generator=h).numpy(), a)
    assert g.initial_seed() == 9


def test_nn_init_and_data_loading_take_a_generator():
    def init(seed):
        w = numgrad.empty(3, 4)
        g = numgrad.Generator().manual_seed(seed)
        numgrad.nn.init.normal_(w, generator=g)
        numgrad.nn.init.uniform_(w[0], generator=g)
        numgrad.nn.init.kaiming_uniform_(w, generator=g)
        return w.numpy()

    np.testing.assert_array_equal(init(1), init(1))
    assert not np.array_equal(init(1), init(2))
    data = numgrad.utils.data.TensorDataset(numgrad.arange(10))

    def order(seed):
        loader = numgrad.utils.data.DataLoader(data, batch_size=3, shuffle=True,
                                               generator=numgrad.Generator().manual_seed(seed))
        return [b[0].tolist() for b in loader]

    assert order(4) == order(4)


def test_cuda_seeding_functions_and_fork_rng():
    for name in ("manual_seed", "manual_seed_all", "seed", "seed_all", "initial_seed",
                 "get_rng_state", "set_rng_state", "get_rng_state_all", "set_rng_state_all"):
        assert hasattr(torch.cuda, name) and callable(getattr(numgrad.cuda, name)), name
    numgrad.cuda.manual_seed_all(21)
    first = numgrad.randn(3).numpy()
    numgrad.cuda.manual_seed(21)
    np.testing.assert_array_equal(numgrad.randn(3).numpy(), first)
    assert numgrad.cuda.initial_seed() == 21
    states = numgrad.cuda.get_rng_state_all()
    again = numgrad.rand(2).numpy()
    numgrad.cuda.set_rng_state_all(states)
    np.testing.assert_array_equal(numgrad.rand(2).numpy(), again)
    numgrad.manual_seed(1)
    with numgrad.random.fork_rng():
        inside = numgrad.rand(4).numpy()
    np.testing.assert_array_equal(numgrad.rand(4).numpy(), inside)  # (restored on exit)
    with torch.random.fork_rng():  # (PyTorch's, for the API)
        torch.rand(1)


def _same_error(fn, error=Exception):
    with pytest.raises(error) as theirs:
        fn(torch)
    with pytest.raises(type(theirs.value)) as ours:
        fn(numgrad)
    return str(ours.value), str(theirs.value)


def test_errors():
    o, t = _same_error(lambda m: m.set_rng_state([1, 2]), TypeError)
    assert o == t
    with pytest.raises(RuntimeError, match="Expected a CPUGeneratorImplState of size"):
        numgrad.set_rng_state(numgrad.zeros(3, dtype=numgrad.int64))
    o, t = _same_error(lambda m: m.randint(5, 2, (3,)))
    assert o == t
    o, t = _same_error(lambda m: m.randint_like(m.zeros(2), -1))
    assert o == t
    o, t = _same_error(lambda m: m.randint_like(m.zeros(2, dtype=m.bool), 3))
    assert o == t
    _same_error(lambda m: m.rand(2, generator=3), TypeError)


# ------------------------------------------------------------------ set_printoptions
@pytest.fixture
def restore_printoptions():
    yield
    numgrad.set_printoptions(profile="default")
    torch.set_printoptions(profile="default")


def _numgrad_repr(t):
    """PyTorch's repr with numgrad's dtype names (swapped inside torch's printer, so that the
    longer name wraps where numgrad's does)."""
    printer = torch._tensor_str
    printer.str = lambda obj: (str(obj).replace("torch.", "numgrad.")
                               if isinstance(obj, torch.dtype) else str(obj))
    try:
        return repr(t)
    finally:
        del printer.str


RNG = np.random.default_rng(2)
ARRAYS = {
    "normal": RNG.standard_normal((4, 7)),
    "long": RNG.standard_normal(2000),
    "big": RNG.standard_normal((30, 40)) * 1e5,
    "tiny": np.array([1e-6, 1.0, 3.0]),
    "integral": np.arange(20.0).reshape(4, 5),
    "integral_wide": np.array([1.0, 2.0, 3e5]),
    "scalar": np.array(math.pi),
    "specials": np.array([math.nan, math.inf, -1.5, 0.0]),
    "ints": np.arange(30).reshape(3, 10),
}
OPTIONS = [
    dict(precision=2), dict(precision=7), dict(threshold=5), dict(edgeitems=1, threshold=10),
    dict(linewidth=40), dict(profile="short"), dict(profile="full"), dict(sci_mode=True),
    dict(sci_mode=False), dict(precision=6, sci_mode=True), dict(profile="short", precision=5),
]


@pytest.mark.parametrize("options", OPTIONS, ids=[str(o) for o in OPTIONS])
def test_set_printoptions_matches_torch(options, restore_printoptions):
    numgrad.set_printoptions(**options)
    torch.set_printoptions(**options)
    assert numgrad.get_printoptions() == torch._tensor_str.get_printoptions()
    for name, a in ARRAYS.items():
        for dtype in ("float32", "float64") if a.dtype.kind == "f" else (a.dtype.name,):
            x = a.astype(dtype)
            ours = numgrad.tensor(x)
            assert repr(ours) == _numgrad_repr(torch.tensor(x)), (name, dtype)
            assert str(ours) == repr(ours)
            view = numgrad.tensor(x).t() if x.ndim == 2 else ours
            assert repr(view) == _numgrad_repr(torch.tensor(x).t() if x.ndim == 2
                                               else torch.tensor(x)), (name, dtype, "view")


def test_sci_mode_resets_with_each_call(restore_printoptions):
    numgrad.set_printoptions(sci_mode=True)
    numgrad.set_printoptions(precision=3)
    assert numgrad.get_printoptions()["sci_mode"] is None
    x = numgrad.tensor([1.23456, 2.0], requires_grad=True) * 2
    torch_x = torch.tensor([1.23456, 2.0], requires_grad=True) * 2
    torch.set_printoptions(precision=3)
    assert repr(x) == _numgrad_repr(torch_x)


def test_complex_and_half_precision_draws_and_integer_refusals_as_pytorchs():
    """(complex draws had imaginary parts of 0: ``randn(dtype=complex64)`` now has real and
    imaginary parts each of variance 1/2, ``rand`` both uniform, ``normal_(m, s)`` both of mean
    m and variance s**2 / 2, as PyTorch's; ``rand`` of float16 and bfloat16 raised Numba's
    errors: now on their own grid, below 1; integer dtypes get PyTorch's refusal)"""
    import torch

    numgrad.manual_seed(0)
    n = 200_000
    z = numgrad.randn(n, dtype=numgrad.complex64).numpy()
    u = numgrad.rand(n, dtype=numgrad.complex128).numpy()
    w = numgrad.empty(n, dtype=numgrad.complex64).normal_(1.0, 2.0).numpy()
    for part in (z.real, z.imag):
        assert abs(part.mean()) < 0.01 and abs(part.var() - 0.5) < 0.01
    for part in (u.real, u.imag):
        assert 0 <= part.min() and part.max() < 1 and abs(part.mean() - 0.5) < 0.01
    for part in (w.real, w.imag):
        assert abs(part.mean() - 1.0) < 0.02 and abs(part.var() - 2.0) < 0.04
    for dtype, digits in ((numgrad.float16, 11), (numgrad.bfloat16, 8)):
        h = numgrad.rand(n, dtype=dtype).float().numpy()
        assert h.min() == 0.0 and h.max() == 1 - 2.0 ** -digits
        assert (h * 2 ** digits == np.floor(h * 2 ** digits)).all()
        scalar = numgrad.rand((), dtype=dtype)  # (a 0-d draw: a 0-d tensor, not a NumPy scalar)
        assert scalar.shape == () and 0 <= scalar.item() < 1 and scalar.add_(1).item() >= 1
    for fn in (lambda m: m.rand(2, dtype=m.int64), lambda m: m.randn(2, dtype=m.int8),
               lambda m: m.rand_like(m.ones(2, dtype=m.bool))):
        with pytest.raises(NotImplementedError) as ours:
            fn(numgrad)
        with pytest.raises(NotImplementedError) as theirs:
            fn(torch)
        assert str(ours.value) == str(theirs.value)
