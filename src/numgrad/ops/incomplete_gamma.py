"""The regularized incomplete gamma functions ``igamma(a, x) = P(a, x)`` (lower) and
``igammac(a, x) = Q(a, x) = 1 - P`` (upper), also ``special.gammainc``/``gammaincc``.

Computed in float64 as Numerical Recipes does: the power series of ``P`` where ``x < a + 1``, the
continued fraction of ``Q`` (modified Lentz) elsewhere, each fed only the elements it is used
for, iterated until every element has converged; with PyTorch's values at the edges (0, inf,
NaN, negative arguments). Written with numgrad's ops, so the gradient (in ``x``, and in ``a``,
where PyTorch's is not implemented) follows the computation.

Two refinements keep float64's accuracy for large ``a`` (where ``x**a e^-x / Gamma(a)`` as
``exp(a log x - x - lgamma(a))`` cancels terms of ~``a``): from ``a = 20`` that factor is
``exp(-a f(x / a)) sqrt(a / 2 pi) / Gamma*(a)``, with ``f(l) = l - 1 - log l`` computed without
cancellation near ``l = 1`` and ``Gamma*`` Stirling's series; and above ``a = 200`` with ``x``
within ``4.5 sqrt(a)`` of ``a`` (PyTorch's regime for it), where the series and the fraction would
need ~``sqrt(a)`` terms, Temme's uniform asymptotic expansion (Temme 1979; DLMF 8.12.3-8.12.12):
``Q = erfc(eta sqrt(a / 2)) / 2 + exp(-a eta**2 / 2) / sqrt(2 pi a) sum_k C_k(eta) a**-k``, whose
``C_k`` Taylor coefficients are derived here once, exactly, by ``_temme_coefficients``.
"""
from __future__ import annotations

import functools
import math
from fractions import Fraction

from ..tensor import Tensor
from .._dtype import from_numpy_dtype, torch_name
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
    if a.dtype.kind not in "fV":  # ("V": bfloat16)
        raise NotImplementedError(f'"{name}_cpu" not implemented for \'{torch_name(a.dtype)}\'')
    ng = _ng()
    dtype = from_numpy_dtype(a.dtype)  # (the result's: float16's igamma is float16)
    if not isinstance(input, Tensor):
        input = ng.tensor(input, dtype=dtype)
    if not isinstance(other, Tensor):
        other = ng.tensor(other, dtype=dtype)
    shape = ng.broadcast_shapes(tuple(input.shape), tuple(other.shape))
    return input.to(ng.float64).expand(shape), other.to(ng.float64).expand(shape), dtype


_LARGE_A = 20.0     # from here the prefactor goes through Stirling's series
_TEMME_A = 200.0    # above it, Temme's expansion where |x - a| < 4.5 sqrt(a)
_TEMME_WIDTH = 4.5
_TEMME_TERMS = 7    # C_0 .. C_6: the next term is < 1e-19 of the sum above a = 200
_TEMME_DEGREE = 25  # |eta| < 0.33 there; the C_k converge for |eta| < 2 sqrt(pi)
# Gamma*(a) = Gamma(a) / (sqrt(2 pi / a) (a / e)**a) ~ sum_k GAMMA_STAR[k] a**-k (Stirling)
_GAMMA_STAR = (Fraction(1), Fraction(1, 12), Fraction(1, 288), Fraction(-139, 51840),
               Fraction(-571, 2488320), Fraction(163879, 209018880),
               Fraction(5246819, 75246796800))
# log Gamma*(a) ~ sum_k B_2k / (2k (2k - 1) a**(2k - 1)): 1/12, -1/360, 1/1260, ... (< 1e-18 at 20)
_LOG_GAMMA_STAR = (1 / 12, -1 / 360, 1 / 1260, -1 / 1680, 1 / 1188, -691 / 360360, 1 / 156)


@functools.cache
def _temme_coefficients() -> tuple:
    """``d[k][n]``, the Taylor coefficients of Temme's ``C_k(eta) = sum_n d[k][n] eta**n``, in exact
    rational arithmetic (float64 loses them: the recurrence cancels): ``lambda = x / a`` as a
    series in ``eta`` (``eta**2 / 2 = lambda - 1 - log lambda``) by Lagrange inversion, then
    ``C_0 = 1 / (lambda - 1) - 1 / eta`` and ``C_k = C_{k-1}' / eta + (-1)**k g_k / (lambda - 1)``,
    ``g_k`` Stirling's coefficients of ``Gamma*`` (the poles at ``eta = 0`` cancel). 0.3 s, once.
    """
    K, N = _TEMME_TERMS, _TEMME_DEGREE
    M = N + 2 * K + 1

    def product(p, q):
        out = [Fraction(0)] * M
        for i, u in enumerate(p):
            if u:
                for j in range(M - i):
                    out[i + j] += u * q[j]
        return out

    def reciprocal(p):
        out = [Fraction(0)] * M
        out[0] = 1 / p[0]
        for k in range(1, M):
            out[k] = -sum(p[j] * out[k - j] for j in range(1, k + 1)) / p[0]
        return out

    # eta = mu s(mu), mu = lambda - 1, s = sqrt(2 (mu - log(1 + mu)) / mu**2)
    h = [Fraction(2 * (-1) ** j, j) for j in range(2, M + 2)]
    s = [Fraction(1)] + [Fraction(0)] * (M - 1)
    for k in range(1, M):
        s[k] = (h[k] - sum(s[j] * s[k - j] for j in range(1, k))) / 2
    # mu = sum_n b_n eta**n, b_n = [w**(n - 1)] s(w)**-n / n
    inverse, power = reciprocal(s), [Fraction(1)] + [Fraction(0)] * (M - 1)
    mu = [Fraction(0)] * (M + 1)
    for n in range(1, M + 1):
        power = product(power, inverse)
        mu[n] = power[n - 1] / n
    r = reciprocal(mu[1:])  # 1 / mu = sum_n r[n] eta**(n - 1)
    series = [r[1:]]
    for k in range(1, K):
        prev, g = series[-1], (-1) ** k * _GAMMA_STAR[k]
        if prev[1] + g * r[0] != 0:  # (the pole of C_{k-1}' / eta against g_k / mu)
            raise AssertionError("Temme's coefficients: the poles do not cancel")
        series.append([(n + 2) * prev[n + 2] + g * r[n + 1] for n in range(len(prev) - 2)])
    return tuple(tuple(float(c) for c in ck[:N]) for ck in series)


def _deviation(a: Tensor, x: Tensor):
    """``(mu, f, g)``: ``mu = (x - a) / a``, ``f = mu - log(1 + mu)`` (``lambda - 1 - log lambda``)
    and, where ``|mu| < 1/2``, ``g = 2 f / mu**2`` (1 at ``mu = 0``, smooth: ``eta = mu sqrt(g)``).
    Near 0 by ``log(1 + mu) = 2 atanh(u)``, ``u = mu / (2 + mu)``: ``f = u mu - 2 sum_j u**(2j+1) /
    (2j + 1)``, no cancellation; elsewhere ``mu - (log x - log a)`` (exact for tiny ``x / a``)."""
    mu = (x - a) / a
    near = mu.detach().abs() < 0.5
    m = where(near, mu, 0.25)
    u = m / (2 + m)
    u2 = u * u
    tail = u2 * 0 + 1 / 37
    for j in range(17, 0, -1):  # |u| < 1/3: u**36 < 1e-17
        tail = tail * u2 + 1 / (2 * j + 1)
    g = (2 - 4 * u * tail / (2 + m)) / (2 + m)
    far = mu - (x.log() - a.log())
    return mu, where(near, m * m * g / 2, far), g


def _log_gamma_star(a: Tensor) -> Tensor:
    """``log Gamma*(a)`` by Stirling's series (``a >= 20``)."""
    inverse = 1 / a
    inverse2 = inverse * inverse
    total = inverse2 * 0 + _LOG_GAMMA_STAR[-1]
    for c in _LOG_GAMMA_STAR[-2::-1]:
        total = total * inverse2 + c
    return total * inverse


def _prefactor(a: Tensor, x: Tensor) -> Tensor:
    """``x**a e^-x / Gamma(a)``: in logs below ``a = 20``; from there as
    ``exp(-a f) sqrt(a / 2 pi) / Gamma*(a)`` (``f`` of ``_deviation``), where the logs cancel."""
    small = a.detach() < _LARGE_A
    a_small, a_large = where(small, a, 1.0), where(small, _LARGE_A, a)
    logs = a_small * x.log() - x - a_small.lgamma()
    _, f, _ = _deviation(a_large, x)
    stirling = -a_large * f - _log_gamma_star(a_large) + 0.5 * (a_large / (2 * math.pi)).log()
    return where(small, logs, stirling).exp()


def _temme(a: Tensor, x: Tensor) -> tuple:
    """``(P, Q)`` by Temme's uniform expansion (``a`` large, ``x`` near ``a``)."""
    mu, _, g = _deviation(a, x)
    eta = mu * g.sqrt()
    d = _temme_coefficients()
    inverse = 1 / a
    total = None
    for n in range(_TEMME_DEGREE - 1, -1, -1):  # sum_n eta**n sum_k d[k][n] a**-k
        coefficient = inverse * 0 + d[-1][n]
        for k in range(_TEMME_TERMS - 2, -1, -1):
            coefficient = coefficient * inverse + d[k][n]
        total = coefficient if total is None else total * eta + coefficient
    tail = (-a * eta * eta / 2).exp() / (2 * math.pi * a).sqrt() * total
    scaled = eta * (a / 2).sqrt()
    return (-scaled).erfc() / 2 - tail, scaled.erfc() / 2 + tail


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
    use_temme = regular & (ad > _TEMME_A) & ((xd - ad).abs() < _TEMME_WIDTH * ad.sqrt())
    use_series = regular & ~use_temme & (xd < ad + 1)
    use_fraction = regular & ~use_temme & ~use_series
    p = _series(where(use_series, a, 1.0), where(use_series, x, 0.5))
    q = _fraction(where(use_fraction, a, 1.0), where(use_fraction, x, 3.0))
    if bool(use_temme.any()):
        p_t, q_t = _temme(where(use_temme, a, 400.0), where(use_temme, x, 400.0))
        p = where(use_temme, p_t, p)
        q = where(use_temme, q_t, q)
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
    P = where(use_series | use_temme, p, 1 - q)
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
