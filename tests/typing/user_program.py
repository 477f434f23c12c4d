"""A small program written against numgrad's public API, as a user would, for the type check of
tests/test_typing.py: mypy runs on it with ``--disallow-any-expr``, so an ``Any`` that numgrad's
annotations let into a user's expressions fails the test, and the ``reveal_type`` lines are checked
against the types listed in that test. It is never imported or run by the test suite."""
from __future__ import annotations

import numgrad
from numgrad import Size, Tensor


def mse(prediction: Tensor, target: Tensor) -> Tensor:
    return ((prediction - target) ** 2).mean()


x = numgrad.ones(4, 3, requires_grad=True)
w = numgrad.randn(3, 2, requires_grad=True)
b = numgrad.zeros(2, requires_grad=True)
target = numgrad.zeros_like(numgrad.ones(4, 2))

hidden = numgrad.tanh(x @ w + b)
out = numgrad.relu(hidden) * 2.0 - 1 + numgrad.exp(-hidden) / 3
loss = mse(out.sigmoid(), target) + out.sum() * 0.0
loss.backward()

with numgrad.no_grad():
    w -= 0.1 * w.grad if w.grad is not None else 0.0
    w.add_(b.sum())

shape = x.size()
rows = x.size(0)
flat = x.view(-1).reshape(3, 4).permute(1, 0).transpose(0, 1).contiguous()
mask = flat > 0.5
picked = numgrad.where(mask, flat, numgrad.zeros_like(flat))
value = loss.item()
total = numgrad.cat([picked, flat], dim=0).detach().clone()

reveal_type(x)
reveal_type(hidden)
reveal_type(out)
reveal_type(loss)
reveal_type(x + 1)
reveal_type(2 * x)
reveal_type(x.exp())
reveal_type(x.exp_())
reveal_type(x.sum())
reveal_type(x.grad)
reveal_type(shape)
reveal_type(rows)
reveal_type(x.shape)
reveal_type(mask)
reveal_type(picked)
reveal_type(total)
reveal_type(value)
reveal_type(numgrad.ones_like(x))
