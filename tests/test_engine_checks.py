"""The engine's guarantees: every gradient a node or a hook returns is checked (PyTorch's
messages) before any ``.grad`` changes, concurrent backward passes into one leaf lose nothing,
and a buffer becomes ``.grad`` without a copy only where the engine knows nothing else holds it."""
import sys
import threading

import numpy as np
import pytest
import torch

import numgrad
from numgrad.ops import elementwise


def _error(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 (the exception itself is what is compared)
        return e
    raise AssertionError("no error")


def _same_error(ours, theirs):
    a, b = _error(ours), _error(theirs)
    assert type(a).__name__ == type(b).__name__, (a, b)
    assert str(a).replace("numgrad", "torch") == str(b), (str(a), str(b))


def _hooked(m, hook, leaf: bool, dtype="float32"):
    def run():
        x = m.ones(3, dtype=getattr(m, dtype), requires_grad=True)
        y = x * 2
        (x if leaf else y).register_hook(hook)
        (y * 1).sum().backward()
    return run


@pytest.mark.parametrize("leaf", [True, False])
def test_hook_changing_the_size_or_type_of_a_gradient_raises_as_pytorch(leaf):
    def wrong_size(m):
        def shrink(g):
            return m.ones(2)
        return shrink

    _same_error(_hooked(numgrad, wrong_size(numgrad), leaf),
                _hooked(torch, wrong_size(torch), leaf))
    _same_error(_hooked(numgrad, lambda g: g.double(), leaf),
                _hooked(torch, lambda g: g.double(), leaf))
    _same_error(_hooked(numgrad, lambda g: 3, leaf), _hooked(torch, lambda g: 3, leaf))


def test_failed_hook_check_leaves_every_grad_untouched():
    a = numgrad.ones(3, requires_grad=True)
    b = numgrad.ones(3, requires_grad=True)
    (a * b).sum().backward()
    before = a.grad.numpy().copy(), b.grad.numpy().copy()
    b.register_hook(lambda g: numgrad.ones(2))
    with pytest.raises(RuntimeError, match="changed the size"):
        (a * b * 5).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), before[0])
    np.testing.assert_array_equal(b.grad.numpy(), before[1])


def test_op_gradient_of_an_incompatible_shape_raises_as_pytorch(monkeypatch):
    # A registered op's backward that returns a gradient the input does not broadcast to is
    # refused, even where the element count matches (it was reshaped into place before).
    monkeypatch.setattr(elementwise.Mul, "backward",
                        staticmethod(lambda ctx, grad: (grad.reshape(3, 2), None)))
    x = numgrad.ones(2, 3, requires_grad=True)
    with pytest.raises(RuntimeError) as info:
        (x * 2).sum().backward()
    assert str(info.value) == ("Function MulBackward0 returned an invalid gradient at index 0 - "
                               "got [3, 2] but expected shape compatible with [2, 3]")
    assert x.grad is None


def test_op_gradient_that_broadcasts_is_summed_to_the_input():
    # (what the shape check allows: a gradient the input broadcasts to, as PyTorch's sum_to)
    x = numgrad.ones(3, requires_grad=True)
    t = torch.ones(3, requires_grad=True)
    (x * numgrad.ones(2, 3)).sum().backward()
    (t * torch.ones(2, 3)).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), t.grad.numpy())


def test_op_returning_too_few_gradients_raises_as_pytorch(monkeypatch):
    monkeypatch.setattr(elementwise.Mul, "backward", staticmethod(lambda ctx, grad: (grad,)))
    a = numgrad.ones(3, requires_grad=True)
    b = numgrad.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError) as info:
        (a * b).sum().backward()
    assert str(info.value) == ("Function MulBackward0 returned an invalid number of gradients - "
                               "expected 2, but got 1")
    assert a.grad is None and b.grad is None


def test_eight_threads_into_one_shared_leaf_lose_no_gradient():
    """Eight threads each run ``(w * (i + 1)).sum().backward()`` into one leaf, with the
    interpreter forced to switch threads every microsecond: the gradient is the sum of all."""
    previous = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        wrong = 0
        for _ in range(300):
            w = numgrad.zeros(4, requires_grad=True)
            start = threading.Barrier(8)

            def run(i, w=w, start=start):
                start.wait()
                (w * float(i + 1)).sum().backward()

            threads = [threading.Thread(target=run, args=(i,)) for i in range(8)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            wrong += not np.array_equal(w.grad.numpy(), np.full(4, 36.0, np.float32))
    finally:
        sys.setswitchinterval(previous)
    assert wrong == 0, f"{wrong} of 300 trials lost a gradient"


def test_a_gradient_passed_through_to_two_writes_is_adopted_once():
    # z's retained gradient passes through AddBackward unchanged to x: the one buffer may
    # become one of the two .grad tensors, not both (an in-place accumulation into one would
    # change the other).
    x = numgrad.ones(3, requires_grad=True)
    z = x + 1
    z.retain_grad()
    (z * 3).sum().backward()
    assert not np.shares_memory(x.grad.numpy(), z.grad.numpy())
    (z * 3).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [6, 6, 6])
    np.testing.assert_array_equal(z.grad.numpy(), [6, 6, 6])


def test_seeds_and_what_hooks_were_given_are_never_adopted():
    x = numgrad.ones(3, requires_grad=True)
    seed = numgrad.full((3,), 2.0)
    (x + 1).backward(seed)  # AddBackward hands the seed itself on
    assert not np.shares_memory(x.grad.numpy(), seed.numpy())
    kept = []
    y = numgrad.ones(3, requires_grad=True)
    y.register_hook(lambda g: kept.append(g))
    (y * 3).sum().backward()
    (y * 3).sum().backward()  # accumulates into y.grad in place
    np.testing.assert_array_equal(kept[0].numpy(), [3, 3, 3])
    np.testing.assert_array_equal(y.grad.numpy(), [6, 6, 6])


def test_a_grad_that_cannot_accumulate_refuses_before_any_grad_is_written():
    # b.grad is an expanded view (one element repeated): adding into it is PyTorch's overlap
    # error, raised before a.grad, written first, changes.
    a = numgrad.ones(3, requires_grad=True)
    b = numgrad.ones(3, requires_grad=True)
    a.grad = numgrad.ones(3)
    b.grad = numgrad.zeros(1).expand(3)
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        (a * b).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), [1, 1, 1])
