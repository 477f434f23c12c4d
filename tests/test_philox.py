"""The Philox4x32-10 generator behind uniform, normal and Bernoulli draws of CPU tensors
(``kernels/cpu/philox.py``): Random123's known answers, the conversion to floats, the state it
advances, and the generator API around it (seeding, state round trips, ``generator=``)."""
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
