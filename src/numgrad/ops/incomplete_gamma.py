"""The regularized incomplete gamma functions ``igamma(a, x) = P(a, x)`` (lower) and
``igammac(a, x) = Q(a, x) = 1 - P`` (upper), also ``special.gammainc``/``gammaincc``.

Computed in float64 as Numerical Recipes does: the power series of ``P`` where ``x < a + 1``, the
continued fraction of ``Q`` (modified Lentz) elsewhere, each fed only the elements it is used
for, iterated until every element has converged; with PyTorch's values at the edges (0, inf,
NaN, negative arguments). Written with numgrad's ops, so the gradient (in ``x``, and in ``a``,
where PyTorch's is not implemented) follows the computation.
"""
from __future__ import annotations

import math

from ..tensor import Tensor
from .._dtype import torch_name
from ._names import export
from ._promote import binary_operands
import numgrad
from .elementwise import where

_EPS = 1e-16
_TINY = 1e-300


def _ng():
    return numgrad


def _operands(name: str, input, other):
    a, _ = binary_operands(input, other)
    if a.dtype.kind != "f":
        raise NotImplementedError(f'"{name}_cpu" not implemented for \'{torch_name(a.dtype)}\'')
    ng = _ng()
    dtype = ng.float64 if a.dtype.itemsize == 8 else ng.float32
    if not isinstance(input, Tensor):
        input = ng.tensor(input, dtype=dtype)
    if not isinstance(other, Tensor):
        other = ng.tensor(other, dtype=dtype)
    shape = ng.broadcast_shapes(tuple(input.shape), tuple(other.shape))
    return input.to(ng.float64).expand(shape), other.to(ng.float64).expand(shape), dtype


def _prefactor(a: Tensor, x: Tensor) -> Tensor:
    """``x**a e^-x / Gamma(a)``, in logs."""
    return (a * x.log() - x - a.lgamma()).exp()


def _series(a: Tensor, x: Tensor) -> Tensor:
    """``P(a, x)`` by its power series (for ``x < a + 1``)."""
    term = 1 / a
    total = term
    ap = a
    for n in range(1, 4000):
        ap = ap + 1
        term = term * x / ap
        total = total + term
        if n % 16 == 0 and not bool((term.detach().abs() > _EPS * total.detach().abs()).any()):
            break
    return total * _prefactor(a, x)


def _fraction(a: Tensor, x: Tensor) -> Tensor:
    """``Q(a, x)`` by its continued fraction (for ``x >= a + 1``)."""
    def guarded(v):
        return where(v.detach().abs() < _TINY, _TINY, v)

    b = x + 1 - a
    c = b * 0 + 1 / _TINY
    d = 1 / guarded(b)
    h = d
    for i in range(1, 2000):
        an = -i * (i - a)
        b = b + 2
        d = 1 / guarded(an * d + b)
        c = guarded(b + an / c)
        step = d * c
        h = h * step
        if not bool(((step.detach() - 1).abs() > _EPS).any()):
            break
    return h * _prefactor(a, x)


def _lower_upper(name: str, input, other) -> tuple:
    """(P, Q, the result dtype), PyTorch's values at the edges in both."""
    a, x, dtype = _operands(name, input, other)
    ad, xd = a.detach(), x.detach()
    regular = (ad > 0) & (xd > 0) & ad.isfinite() & xd.isfinite()
    use_series = regular & (xd < ad + 1)
    use_fraction = regular & ~use_series
    p = _series(where(use_series, a, 1.0), where(use_series, x, 0.5))
    q = _fraction(where(use_fraction, a, 1.0), where(use_fraction, x, 3.0))
    nan = math.nan
    # (the edges, tested in PyTorch's order (``calc_igamma``), where a NaN compares false: NaN
    # where an argument is negative; at a = 0, P = 1 where x > 0, else NaN; then P = 0 at
    # x = 0 (a NaN too); then at a = inf, NaN where x is infinite, else P = 0 (x NaN too); then
    # P = 1 at x = inf (a NaN too); NaN for the other NaN arguments)
    edge = ~((xd < 0) | (ad < 0))
    a_zero = edge & (ad == 0)
    edge = edge & ~a_zero
    x_zero = edge & (xd == 0)
    edge = edge & ~x_zero
    a_inf = edge & (ad == math.inf)
    x_inf = edge & ~a_inf & (xd == math.inf)
    zero_p = x_zero | (a_inf & ~xd.isinf())
    one_p = (a_zero & (xd > 0)) | x_inf
    P = where(use_series, p, 1 - q)
    Q = where(use_series, 1 - p, q)
    P = where(zero_p, 0.0, where(one_p, 1.0, where(regular, P, nan)))
    Q = where(zero_p, 1.0, where(one_p, 0.0, where(regular, Q, nan)))
    return P, Q, dtype


@export(method=True)
def igamma(input, other) -> Tensor:
    """The regularized lower incomplete gamma function ``P(input, other)``."""
    P, _, dtype = _lower_upper("igamma", input, other)
    return P.to(dtype)


@export(method=True)
def igammac(input, other) -> Tensor:
    """The regularized upper incomplete gamma function ``Q(input, other) = 1 - P``."""
    _, Q, dtype = _lower_upper("igammac", input, other)
    return Q.to(dtype)


@export(function=False, method=True)
def igamma_(input: Tensor, other) -> Tensor:
    """``igamma`` in place."""
    return input.copy_(igamma(input, other))


@export(function=False, method=True)
def igammac_(input: Tensor, other) -> Tensor:
    """``igammac`` in place."""
    return input.copy_(igammac(input, other))
