"""A user's fused formula (``numgrad.library.elementwise``) against the same math composed from
built-in ops: GELU's tanh approximation, ``0.5 x (1 + tanh(k (x + 0.044715 x^3)))``, on 1M float32
elements. Composed, it is eight elementwise kernels forward (and more backward), each a pass over
memory; as a formula, one forward and one backward kernel. Shared by ``compare.py --formula`` and
the asv suite (``bench_user_formula.py``)."""
from __future__ import annotations

import math

import numpy as np

_K = math.sqrt(2.0 / math.pi)
_OP = []


def _gelu_tanh(x):
    c = type(x)(0.7978845608028654)
    inner = c * (x + type(x)(0.044715) * x * x * x)
    return type(x)(0.5) * x * (type(x)(1) + math.tanh(inner))


def _gelu_tanh_grad(x):
    c = type(x)(0.7978845608028654)
    t = math.tanh(c * (x + type(x)(0.044715) * x * x * x))
    return type(x)(0.5) * (type(x)(1) + t) + type(x)(0.5) * x * (type(x)(1) - t * t) * c * (
        type(x)(1) + type(x)(3 * 0.044715) * x * x)


def formula():
    """The formula's op, declared once per process."""
    if not _OP:
        from numgrad import library

        _OP.append(library.elementwise("bench::gelu_tanh", _gelu_tanh, grad=_gelu_tanh_grad))
    return _OP[0]


def composed(m, x):
    """The same math from ``m``'s built-in ops (numgrad or torch)."""
    return 0.5 * x * (1 + m.tanh(_K * (x + 0.044715 * x ** 3)))


def _x(m, n, requires_grad):
    data = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    return m.tensor(data, requires_grad=requires_grad)


def step(m, fused: bool, backward: bool = True, n: int = 1_000_000):
    """``f(x).sum().backward()`` (or ``f(x)`` alone), ``f`` the formula or the composition."""
    x = _x(m, n, backward)
    f = formula() if fused else (lambda t: composed(m, t))
    if not backward:
        return lambda: f(x)

    def run():
        f(x).sum().backward()
        grad, x.grad = x.grad, None
        return grad
    return run
