"""Samplers the distributions need beyond numgrad's generator functions: standard gamma (with its
implicit reparameterisation gradient), Poisson and binomial draws. Each is a vectorised rejection
(or inversion) loop over numgrad's own uniform and normal draws (``numgrad.rand`` / ``randn``),
so the default generator's seed reproduces them."""
from __future__ import annotations

import numgrad
from numgrad.autograd import Function

from .utils import _is_any_true

__all__ = ["standard_gamma", "standard_gamma_grad", "poisson", "binomial"]


def _rand(like):
    return numgrad.rand(tuple(like.shape), dtype=like.dtype, device=like.device)


def _randn(like):
    return numgrad.randn(tuple(like.shape), dtype=like.dtype, device=like.device)


def _gamma_draw(alpha):
    """Gamma(alpha, 1) values (alpha > 0 elementwise): Marsaglia and Tsang's method (2000), with
    alpha < 1 boosted by U^(1/alpha) from alpha + 1. Works in float64, returns alpha's dtype."""
    a = alpha.detach().to(numgrad.float64)
    small = a < 1
    a1 = numgrad.where(small, a + 1, a)
    d = a1 - 1.0 / 3.0
    c = 1.0 / (9.0 * d).sqrt()
    out = numgrad.zeros_like(a)
    pending = numgrad.ones_like(a, dtype=numgrad.bool)
    while _is_any_true(pending):
        x = _randn(a)
        v = (1 + c * x) ** 3
        u = _rand(a)
        ok = v > 0
        log_v = numgrad.where(ok, v, numgrad.ones_like(v)).log()
        accept = pending & ok & (u.log() < 0.5 * x * x + d - d * v + d * log_v)
        out = numgrad.where(accept, d * v, out)
        pending = pending & ~accept
    if _is_any_true(small):
        u = _rand(a)
        out = numgrad.where(small, out * u.pow(1.0 / a), out)
    out = out.to(alpha.dtype)
    return out.clamp(min=numgrad.finfo(alpha.dtype).tiny)


def standard_gamma_grad(alpha, x):
    """d x / d alpha for x ~ Gamma(alpha, 1) drawn by inversion (the implicit reparameterisation
    gradient): -(dP(alpha, x)/dalpha) / p(x; alpha), with P the regularised lower incomplete gamma
    function and p the density. dP/dalpha is a central difference of P (or of its complement
    Q above the median, so that the smaller of the two is differenced) in float64."""
    with numgrad.no_grad():
        a = alpha.detach().to(numgrad.float64)
        xx = x.detach().to(numgrad.float64).clamp(min=numgrad.finfo(numgrad.float64).tiny)
        a, xx = numgrad.broadcast_tensors(a, xx)
        h = 1e-5 * a.clamp(min=1e-3)
        # P(alpha, x) < 1/2 about where x < alpha - 1/3 (the median): P is differenced there,
        # -Q elsewhere, each element evaluated twice
        lower = xx < a - 1.0 / 3.0
        dp_da = numgrad.zeros_like(a)
        for mask, fn, sign in ((lower, numgrad.special.gammainc, 1.0),
                               (~lower, numgrad.special.gammaincc, -1.0)):
            if _is_any_true(mask):
                am, xm, hm = a[mask], xx[mask], h[mask]
                dp_da[mask] = sign * (fn(am + hm, xm) - fn(am - hm, xm)) / (2 * hm)
        log_density = (a - 1) * xx.log() - xx - numgrad.lgamma(a)
        grad = -dp_da * (-log_density).exp()
        grad = numgrad.where(dp_da == 0, numgrad.zeros_like(grad), grad)  # (far tails)
        return grad.to(alpha.dtype)


class _StandardGamma(Function):
    """Gamma(alpha, 1) draws whose gradient in alpha is the implicit reparameterisation one."""

    @staticmethod
    def forward(ctx, alpha):
        x = _gamma_draw(alpha)
        ctx.save_for_backward(alpha, x)
        return x

    @staticmethod
    def backward(ctx, grad_output):
        alpha, x = ctx.saved_tensors
        return grad_output * standard_gamma_grad(alpha, x)


def standard_gamma(alpha):
    """Gamma(alpha, 1) draws of alpha's shape, differentiable in alpha (reparameterised)."""
    if alpha.requires_grad and numgrad.is_grad_enabled():
        return _StandardGamma.apply(alpha)
    return _gamma_draw(alpha)


def poisson(rate):
    """Poisson(rate) draws of rate's shape and dtype (rate >= 0): multiplying uniforms until
    the product falls below exp(-rate) where rate < 10, Hörmann's transformed rejection (PTRS,
    1993) elsewhere."""
    with numgrad.no_grad():
        lam = rate.detach().to(numgrad.float64)
        out = numgrad.zeros_like(lam)
        small = lam < 10
        if _is_any_true(small):
            limit = (-numgrad.where(small, lam, numgrad.zeros_like(lam))).exp()
            prod = numgrad.ones_like(lam)
            pending = small.clone()
            count = numgrad.zeros_like(lam)
            while _is_any_true(pending):
                prod = prod * _rand(lam)
                stop = pending & (prod <= limit)
                pending = pending & ~stop
                count = numgrad.where(pending, count + 1, count)
            out = numgrad.where(small, count, out)
        big = ~small
        if _is_any_true(big):
            lam_b = numgrad.where(big, lam, numgrad.full_like(lam, 10.0))
            slam = lam_b.sqrt()
            loglam = lam_b.log()
            b = 0.931 + 2.53 * slam
            a = -0.059 + 0.02483 * b
            inv_alpha = 1.1239 + 1.1328 / (b - 3.4)
            vr = 0.9277 - 3.6224 / (b - 2)
            pending = big.clone()
            while _is_any_true(pending):
                u = _rand(lam) - 0.5
                v = _rand(lam)
                us = 0.5 - u.abs()
                k = ((2 * a / us + b) * u + lam_b + 0.43).floor()
                quick = (us >= 0.07) & (v <= vr)
                valid = (k >= 0) & ~((us < 0.013) & (v > us))
                k_safe = k.clamp(min=0)
                slow = (v.log() + inv_alpha.log() - (a / (us * us) + b).log()
                        <= -lam_b + k_safe * loglam - numgrad.lgamma(k_safe + 1))
                accept = pending & (quick | (valid & slow))
                out = numgrad.where(accept, k, out)
                pending = pending & ~accept
        return out.to(rate.dtype)


def binomial(count, prob):
    """Binomial(count, prob) draws of their broadcast shape, in prob's dtype: inversion (a
    sequential search) where count * min(p, 1-p) < 10, Hörmann's BTRS (1993) elsewhere; p > 1/2
    is drawn as count minus a draw at 1 - p."""
    with numgrad.no_grad():
        n, p = numgrad.broadcast_tensors(count.detach().to(numgrad.float64),
                                         prob.detach().to(numgrad.float64))
        flip = p > 0.5
        p = numgrad.where(flip, 1 - p, p)
        q = 1 - p
        out = numgrad.zeros_like(p)
        small = n * p < 10
        if _is_any_true(small):
            # inversion: walk k up while the running cdf stays below a uniform
            pmf = numgrad.where(small, q.pow(n), numgrad.ones_like(q))
            cdf = pmf.clone()
            u = _rand(p)
            k = numgrad.zeros_like(p)
            pending = small & (u > cdf) & (p > 0)
            ratio = p / numgrad.where(q > 0, q, numgrad.ones_like(q))
            while _is_any_true(pending):
                pmf = pmf * (n - k) / (k + 1) * ratio
                k = numgrad.where(pending, k + 1, k)
                cdf = cdf + pmf
                pending = pending & (u > cdf) & (k < n)
            out = numgrad.where(small, numgrad.minimum(k, n), out)
        big = ~small
        if _is_any_true(big):
            nb = numgrad.where(big, n, numgrad.full_like(n, 100.0))
            pb = numgrad.where(big, p, numgrad.full_like(p, 0.5))
            qb = 1 - pb
            spq = (nb * pb * qb).sqrt()
            b = 1.15 + 2.53 * spq
            a = -0.0873 + 0.0248 * b + 0.01 * pb
            c = nb * pb + 0.5
            alpha = (2.83 + 5.1 / b) * spq
            vr = 0.92 - 4.2 / b
            m = ((nb + 1) * pb).floor()
            lpq = (pb / qb).log()
            h = numgrad.lgamma(m + 1) + numgrad.lgamma(nb - m + 1)
            pending = big.clone()
            while _is_any_true(pending):
                u = _rand(p) - 0.5
                v = _rand(p)
                us = 0.5 - u.abs()
                k = ((2 * a / us + b) * u + c).floor()
                valid = (k >= 0) & (k <= nb)
                quick = valid & (us >= 0.07) & (v <= vr)
                ks = k.clamp(min=0).minimum(nb)
                bound = h - numgrad.lgamma(ks + 1) - numgrad.lgamma(nb - ks + 1) + (ks - m) * lpq
                slow = valid & ((v * alpha / (a / (us * us) + b)).log() <= bound)
                accept = pending & (quick | slow)
                out = numgrad.where(accept, k, out)
                pending = pending & ~accept
        out = numgrad.where(flip, n - out, out)
        return out.to(prob.dtype)

