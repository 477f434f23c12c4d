"""The Philox4x32-10 generator behind every random draw (``kernels/cpu/philox.py``): Random123's
known answers, the conversion to floats, the state it advances, the generator API around it
(seeding, state round trips, ``generator=``), the distributions of the integer, permutation,
exponential, Bernoulli and multinomial draws (statistics of large draws, loose bounds, fixed
seeds), and compiled functions drawing eager's numbers with each."""
import itertools
import math
import warnings

import numpy as np
import pytest

import numgrad
from numgrad.kernels.cpu import philox

U = np.uint64
ONES = 0xFFFFFFFF


@pytest.mark.parametrize("counter, key, expected", [
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((ONES,) * 4, (ONES, ONES), (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
     (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)),
], ids=["zeros", "ones", "pi"])
def test_the_block_function_gives_random123s_known_answers(counter, key, expected):
    words = philox._block(*(U(c) for c in counter), *(U(k) for k in key))
    assert tuple(int(w) for w in words) == expected


def test_uniforms_are_in_range_and_a_draw_continues_the_stream():
    state = np.array([7, 0], np.int64)
    whole = philox.philox_uniform(state, (10,), np.float32)
    assert state.tolist() == [7, 3]  # (four float32 a counter)
    state = np.array([7, 0], np.int64)
    first = philox.philox_uniform(state, (4,), np.float32)
    rest = philox.philox_uniform(state, (6,), np.float32)
    assert np.array_equal(np.concatenate([first, rest]), whole)
    big = philox.philox_uniform(np.array([1, 0], np.int64), (100000,), np.float64)
    assert big.dtype == np.float64 and 0 <= big.min() and big.max() < 1
    assert abs(big.mean() - 0.5) < 0.01 and len(np.unique(big)) == big.size
    z = philox.philox_normal(np.array([1, 0], np.int64), (100001,), np.float32)
    assert z.dtype == np.float32 and abs(z.mean()) < 0.02 and abs(z.std() - 1) < 0.02
    assert np.isfinite(z).all()


def test_seeding_the_state_round_trip_and_generator_objects():
    numgrad.manual_seed(3)
    a = numgrad.rand(5)
    state = numgrad.get_rng_state()
    b, n = numgrad.rand(5), numgrad.randn(2, 3, dtype=numgrad.float64)
    numgrad.set_rng_state(state)
    assert numgrad.rand(5).tolist() == b.tolist()
    assert numgrad.randn(2, 3, dtype=numgrad.float64).tolist() == n.tolist()
    numgrad.manual_seed(3)
    assert numgrad.rand(5).tolist() == a.tolist()
    g = numgrad.Generator().manual_seed(3)
    assert numgrad.rand(5, generator=g).tolist() == a.tolist()
    with pytest.raises(RuntimeError, match="of size 53"):
        numgrad.set_rng_state(numgrad.zeros(37, dtype=numgrad.int64))


def test_fills_and_bernoulli_draw_from_it():
    numgrad.manual_seed(0)
    x = numgrad.empty(1000).uniform_(-2.0, 3.0)
    assert -2 <= x.min().item() and x.max().item() < 3
    m = numgrad.empty(1000, dtype=numgrad.float64).bernoulli_(0.25)
    assert set(m.tolist()) == {0.0, 1.0} and 0.2 < m.mean().item() < 0.3
    w = numgrad.empty(3, 4, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        w.normal_()
    with numgrad.no_grad():
        w.normal_(1.0, 0.5)
    assert w._version_counter.value == 1 and w.requires_grad


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_normals_are_box_muller_of_the_counters_words_on_any_threads(dtype, monkeypatch):
    """Each value is Box-Muller of its counter's words (float32: two pairs of 24-bit uniforms a
    counter, four values; float64: one pair of 53-bit uniforms, two values), checked against
    NumPy's log, cos and sin in float64 (the kernel's series: a few units in the last place);
    a draw of more counters than the kernel makes at a time (``_CHUNK``), and of a count that
    ends inside a counter, on one thread and on two, gives the same bits, scaled by numbers in
    float64 before rounding, and is a prefix of a longer draw."""
    per = 4 if dtype == np.float32 else 2
    n = per * (philox._CHUNK * 2 + 5) + per - 1
    words = np.empty(4 * ((n + per - 1) // per), np.uint32)
    philox._bits(5, 9, words)
    words = words.astype(np.float64)
    if per == 4:
        u = np.floor(words / 256) / 2 ** 24
        u1, u2 = u[0::2], u[1::2]
    else:
        u = (np.floor(words[0::2] / 32) * 2 ** 26 + np.floor(words[1::2] / 64)) / 2 ** 53
        u1, u2 = u[0::2], u[1::2]
    r = np.sqrt(-2 * np.log1p(-u1))
    expected = np.stack([r * np.cos(2 * np.pi * u2), r * np.sin(2 * np.pi * u2)], 1).reshape(-1)
    draws = []
    for threads in (1, 2):
        monkeypatch.setattr(philox._workers, "threads_for", lambda parts, large, t=threads: t)
        state = np.array([5, 9], np.int64)
        draws.append((philox.philox_normal(state, (n,), dtype),
                      philox.philox_normal(np.array([5, 9], np.int64), (n,), dtype, 0.5, 3.0)))
        assert state.tolist() == [5, 9 + (n + per - 1) // per]
    (z, scaled), (z2, scaled2) = draws
    assert z.dtype == scaled.dtype == dtype
    assert z.tobytes() == z2.tobytes() and scaled.tobytes() == scaled2.tobytes()
    ulp = np.finfo(dtype).eps
    np.testing.assert_allclose(z, expected[:n], rtol=0, atol=6 * ulp * max(1.0, r.max()))
    np.testing.assert_array_equal(scaled, (z.astype(np.float64) * 3.0 + 0.5).astype(dtype))
    longer = philox.philox_normal(np.array([5, 9], np.int64), (n + 7,), dtype)
    assert longer[:n].tobytes() == z.tobytes()


# ------------------------------------------------------------------ the other draws
def _within(counts, probabilities, sigmas=5.0):
    """Whether each count is within ``sigmas`` binomial standard deviations of its expectation."""
    counts = np.asarray(counts, np.float64)
    n, p = counts.sum(), np.asarray(probabilities, np.float64)
    return bool(np.all(np.abs(counts - n * p) <= sigmas * np.sqrt(n * p * (1 - p)) + 1))


@pytest.mark.parametrize("low, span", [(0, 10), (-5, 3 << 30), (0, 1 << 32), (7, 3 << 62),
                                       (-(1 << 63), 1 << 64)],
                         ids=["small", "narrow-rejecting", "2**32", "wide-rejecting", "2**64"])
def test_integers_are_uniform_and_advance_the_offset_by_a_fixed_count(low, span):
    """Uniform in [low, low + span): the classes mod 3 (mod 2 for powers of two) are equally
    likely, as they are not without the rejection: 3 * 2**30 (of 2**32 words) and 3 * 2**62 (of
    2**64) give a third of the values two words and the rest one."""
    n = 300000
    state = np.array([11, 5], np.int64)
    x = philox.philox_integers(state, (n,), low, low + span, np.int64)
    per = 4 if span <= 1 << 32 else 2
    assert state.tolist() == [11, 5 + -(-n // per)]  # (retries never move the offset)
    assert x.dtype == np.int64 and x.shape == (n,)
    values = x.view(np.uint64) - np.uint64(low % 2 ** 64)  # (the draws less low, exactly)
    assert int(values.max()) < span
    if span > 100:
        k = 2 if span & (span - 1) == 0 else 3
        assert _within(np.bincount((values % np.uint64(k)).astype(np.int64), minlength=k),
                       [1 / k] * k)
        eighths = (values // np.uint64(span // 8)).astype(np.int64)
        assert _within(np.bincount(eighths, minlength=8), [1 / 8] * 8)
    else:
        assert _within(np.bincount(values.astype(np.int64), minlength=span), [1 / span] * span)
    again = philox.philox_integers(np.array([11, 5], np.int64), (n,), low, low + span, np.int64)
    assert np.array_equal(again, x)


def test_randint_random_and_randint_like_draw_from_philox():
    numgrad.manual_seed(0)
    state = numgrad.default_generator._philox.tolist()
    x = numgrad.randint(-3, 4, (100000,)).numpy()
    assert numgrad.default_generator._philox.tolist() == [state[0], state[1] + 25000]
    assert x.dtype == np.int64 and _within(np.bincount(x + 3), [1 / 7] * 7)
    y = numgrad.randint_like(numgrad.zeros(100000), 5).numpy()
    assert y.dtype == np.float32 and _within(np.bincount(y.astype(int)), [0.2] * 5)
    r = numgrad.empty(100000, dtype=numgrad.int32).random_(-2, 2).numpy()
    assert r.dtype == np.int32 and _within(np.bincount(r + 2), [0.25] * 4)
    f = numgrad.empty(100000).random_().numpy()  # (float32: [0, 2**24])
    assert f.min() >= 0 and f.max() <= 2 ** 24 and abs(f.mean() / 2 ** 23 - 1) < 0.02
    b = numgrad.empty(100000, dtype=numgrad.bool).random_().numpy()
    assert abs(b.mean() - 0.5) < 0.01
    big = numgrad.empty(100000, dtype=numgrad.int64).random_().numpy()  # ([0, 2**63))
    assert big.min() >= 0 and abs(big.astype(np.float64).mean() / 2 ** 62 - 1) < 0.02


def test_randperm_is_a_uniform_permutation():
    state = np.array([3, 0], np.int64)
    counts = {}
    for _ in range(24000):
        p = tuple(philox.philox_permutation(state, 4, np.int64).tolist())
        counts[p] = counts.get(p, 0) + 1
    assert sorted(counts) == sorted(itertools.permutations(range(4)))
    assert _within(list(counts.values()), [1 / 24] * 24)
    assert state.tolist() == [3, 24000]  # (four 32-bit slots: one counter a draw)
    numgrad.manual_seed(1)
    big = numgrad.randperm(100000, dtype=numgrad.int32).numpy()
    assert big.dtype == np.int32 and np.array_equal(np.sort(big), np.arange(100000))
    assert abs(np.corrcoef(big, np.arange(100000))[0, 1]) < 0.02
    # each value's place is uniform: the first place's value, over many draws of 10
    firsts = [numgrad.randperm(10)[0].item() for _ in range(5000)]
    assert _within(np.bincount(firsts, minlength=10), [0.1] * 10)
    assert numgrad.randperm(0).tolist() == [] and numgrad.randperm(1).tolist() == [0]


def test_exponential_values_follow_their_distribution():
    numgrad.manual_seed(2)
    e = numgrad.empty(200000, dtype=numgrad.float64).exponential_(4.0).numpy()
    assert e.min() >= 0 and np.isfinite(e).all()
    assert abs(e.mean() - 0.25) < 0.005 and abs(e.std() - 0.25) < 0.005
    for q in (0.1, 0.5, 0.9, 0.99):  # the CDF 1 - exp(-4 x) at its quantiles
        assert abs(np.mean(e < -math.log(1 - q) / 4.0) - q) < 0.005
    f = numgrad.empty(10001).exponential_().numpy()
    assert f.dtype == np.float32 and abs(f.mean() - 1) < 0.05


def test_bernoulli_with_tensor_probabilities_and_normal_with_tensor_parameters():
    numgrad.manual_seed(4)
    p = numgrad.tensor([0.0, 0.1, 0.5, 0.9, 1.0]).expand(40000, 5).contiguous()
    b = numgrad.bernoulli(p).numpy()
    assert b.dtype == np.float32 and set(np.unique(b)) == {0.0, 1.0}
    assert np.allclose(b.mean(0), [0.0, 0.1, 0.5, 0.9, 1.0], atol=0.01)
    b_ = numgrad.empty(40000, 5, dtype=numgrad.float64).bernoulli_(p[0]).numpy()
    assert np.allclose(b_.mean(0), [0.0, 0.1, 0.5, 0.9, 1.0], atol=0.01)
    with pytest.raises(RuntimeError, match="Expected p_in >= 0 && p_in <= 1"):
        numgrad.bernoulli(numgrad.tensor([0.5, float("nan")]))
    mean, std = numgrad.tensor([[-1.0], [2.0]]), numgrad.tensor([0.5, 3.0, 0.0])
    z = numgrad.stack([numgrad.normal(mean, std) for _ in range(20000)]).numpy()
    assert z.shape == (20000, 2, 3)
    assert np.allclose(z.mean(0), [[-1] * 3, [2] * 3], atol=0.1)
    assert np.allclose(z.std(0), [[0.5, 3.0, 0.0]] * 2, atol=0.1)
    with pytest.raises(RuntimeError, match="normal expects all elements of std >= 0.0"):
        numgrad.normal(mean, -std)


def test_multinomial_with_and_without_replacement_follows_the_weights():
    numgrad.manual_seed(5)
    w = numgrad.tensor([[1.0, 2.0, 3.0, 4.0], [0.0, 0.0, 5.0, 5.0]])
    drawn = numgrad.multinomial(w, 50000, replacement=True).numpy()
    assert drawn.shape == (2, 50000) and drawn.dtype == np.int64
    assert _within(np.bincount(drawn[0], minlength=4), [0.1, 0.2, 0.3, 0.4])
    assert _within(np.bincount(drawn[1], minlength=4), [0, 0, 0.5, 0.5])
    firsts, pairs = [], []
    for _ in range(4000):
        a, b = numgrad.multinomial(w[0], 2).tolist()
        firsts.append(a)
        pairs.append(b)
    p = np.array([0.1, 0.2, 0.3, 0.4])
    second = [sum(p[i] * p[j] / (1 - p[i]) for i in range(4) if i != j) for j in range(4)]
    assert _within(np.bincount(firsts, minlength=4), p)  # (sampling without replacement:
    assert _within(np.bincount(pairs, minlength=4), second)  # the second of the rest's)
    assert all(a != b for a, b in zip(firsts, pairs))
    # the guide table's search finds what a binary search finds (weights of 0 never drawn)
    rng = np.random.default_rng(0)
    weights = rng.random((3, 50)) * (rng.random((3, 50)) < 0.7)
    cdf, u = np.cumsum(weights, axis=1), rng.random((3, 20000))
    u[:, :3] = [0.0, 0.5, 1 - 2 ** -53]
    got = np.empty(u.shape, np.int64)
    philox._categorical(cdf, u, got)
    for r in range(3):
        want = np.searchsorted(cdf[r], u[r] * cdf[r, -1], "right")
        assert np.array_equal(got[r], want) and (weights[r, got[r]] > 0).all()
    full = numgrad.multinomial(numgrad.ones(2, 1000), 1000).numpy()
    assert all(np.array_equal(np.sort(row), np.arange(1000)) for row in full)
    for weights, message in [([1.0, -1.0], "element < 0"), ([0.0, 0.0], "sum of probabilities"),
                             ([1.0, float("inf")], "inf")]:
        with pytest.raises(RuntimeError, match=message):
            numgrad.multinomial(numgrad.tensor(weights), 1)


def test_nn_init_draws_from_philox_and_a_numpy_generator_still_works():
    numgrad.manual_seed(6)
    state = numgrad.default_generator._philox.tolist()
    w = numgrad.empty(200, 300)
    numgrad.nn.init.kaiming_uniform_(w, a=math.sqrt(5))
    assert numgrad.default_generator._philox.tolist() == [state[0], state[1] + 15000]
    bound = 1 / math.sqrt(300)
    assert -bound <= w.min().item() and w.max().item() < bound
    numgrad.nn.init.orthogonal_(w)
    assert np.allclose(w.numpy() @ w.numpy().T, np.eye(200), atol=1e-4)
    numgrad.nn.init.trunc_normal_(w, std=0.5, a=-1.0, b=1.0)
    assert -1 <= w.min().item() and w.max().item() <= 1 and abs(w.mean().item()) < 0.01
    a, b = numgrad.empty(3, 4), numgrad.empty(3, 4)
    numgrad.nn.init.normal_(a, generator=np.random.default_rng(0))
    numgrad.nn.init.normal_(b, generator=np.random.default_rng(0))
    assert np.array_equal(a.numpy(), b.numpy())


# ------------------------------------------------------------------ compiled draws
DRAWS = {
    "randint": (lambda x: x + numgrad.randint(0, 10, (4,)), True),
    "randint_like": (lambda x: x + numgrad.randint_like(x, -3, 3), True),
    "randperm": (lambda x: x[numgrad.randperm(4)] + numgrad.randperm(4), True),
    "exponential_": (lambda x: x + numgrad.empty(4).exponential_(2.0), True),
    "random_": (lambda x: x + numgrad.empty(4, dtype=numgrad.int64).random_(3, 7), True),
    "normal_tensor": (lambda x: numgrad.normal(x, x + 1.0), True),
    "normal_numbers": (lambda x: x + numgrad.normal(0.0, 2.0, (4,)), True),
    "bernoulli_tensor": (lambda x: numgrad.bernoulli(x / 4), True),
    "bernoulli__tensor": (lambda x: numgrad.empty(4).bernoulli_(x / 4), True),
    "multinomial": (lambda x: numgrad.multinomial(x + 1.0, 3), True),
    "multinomial_replacement": (lambda x: numgrad.multinomial(x + 1.0, 6, replacement=True),
                                True),
    "uniform__int": (lambda x: x + numgrad.empty(4, dtype=numgrad.int64).uniform_(0, 9), True),
    "nn_init_uniform_": (lambda x: x + numgrad.nn.init.uniform_(numgrad.empty(4), -1.0, 1.0),
                         True),
    "nn_init_trunc_normal_": (lambda x: x + numgrad.nn.init.trunc_normal_(numgrad.empty(4)),
                              False),
}


@pytest.mark.parametrize("name", sorted(DRAWS))
def test_a_compiled_draw_gives_eagers_numbers(name):
    """Four calls of a compiled function drawing with each op give eager's numbers from the
    same seed, and leave the generator where eager leaves it; the function replays (``explain``
    says so), but for nn.init's fills computed on the host (``trunc_normal_``'s inverse error
    function): those run eagerly, ``explain`` saying why."""
    fn, replays = DRAWS[name]
    compiled = numgrad.compile(fn)
    runs = []
    for f in (fn, compiled):
        numgrad.manual_seed(7)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            runs.append(([f(numgrad.arange(4.0)).tolist() for _ in range(4)],
                         numgrad.get_rng_state().tolist()))
    assert runs[0] == runs[1]
    assert len({str(r) for r in runs[0][0]}) > 1  # (not frozen)
    assert ("replayed" in numgrad.compiler.explain(compiled)) is replays
    if not replays:
        assert "eager, because" in numgrad.compiler.explain(compiled)


def test_a_replay_whose_draw_raises_runs_eagerly_with_eagers_error_and_state():
    """A replay whose multinomial raises (weights that sum to 0) puts the generator back, and
    the call runs eagerly: eager's error, and eager's state (its randn drew)."""
    def draw(w):
        return numgrad.randn(2), numgrad.multinomial(w, 1)

    compiled = numgrad.compile(draw)
    numgrad.manual_seed(8)
    compiled(numgrad.ones(3))
    compiled(numgrad.ones(3))
    assert "replayed" in numgrad.compiler.explain(compiled)
    before = numgrad.get_rng_state()
    with pytest.raises(RuntimeError, match="sum of probabilities <= 0"):
        compiled(numgrad.zeros(3))
    after = numgrad.get_rng_state().tolist()
    numgrad.set_rng_state(before)
    with pytest.raises(RuntimeError, match="sum of probabilities <= 0"):
        draw(numgrad.zeros(3))
    assert numgrad.get_rng_state().tolist() == after != before.tolist()


@pytest.mark.parametrize("draw", ["multinomial", "bernoulli", "normal"])
def test_a_draw_that_raises_after_a_write_leaves_eagers_tensors(draw):
    draws = {"multinomial": lambda p: numgrad.multinomial(p, 1), "bernoulli": numgrad.bernoulli,
             "normal": lambda p: numgrad.normal(p * 0, p)}
    x = numgrad.zeros(3)

    def step(p):
        x.add_(1)
        return draws[draw](p)

    compiled = numgrad.compile(step)
    for _ in range(2):
        compiled(numgrad.full((3,), 0.5))
    with pytest.raises(RuntimeError):
        compiled(numgrad.tensor([-1.0, 0.5, 0.5]))
    assert x.tolist() == [3.0] * 3
