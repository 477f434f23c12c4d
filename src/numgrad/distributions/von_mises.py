"""The von Mises distribution: a circular normal on [-π, π)."""
from __future__ import annotations

import math

import numgrad

from . import constraints
from .distribution import Distribution, _LocCentred
from .utils import _is_all_true, _size, broadcast_all, lazy_property

__all__ = ["VonMises"]


def _log_i0(x):
    """log I0(x) for x > 0, from the exponentially scaled Bessel function (no overflow)."""
    return numgrad.special.i0e(x).log() + x


def _log_i1(x):
    return numgrad.special.i1e(x).log() + x


class VonMises(_LocCentred, Distribution):
    """VonMises(loc, concentration): density exp(κ cos(x - loc)) / (2π I0(κ)) on the circle.
    ``mean`` and ``variance`` are the circular ones; draws by Best and Fisher's rejection
    method (1979), in float64."""

    arg_constraints = {"loc": constraints.real, "concentration": constraints.positive}
    support = constraints.real
    has_rsample = False

    def __init__(self, loc, concentration, validate_args=None):
        self.loc, self.concentration = broadcast_all(loc, concentration)
        super().__init__(self.loc.shape, _size(), validate_args)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return (self.concentration * numgrad.cos(value - self.loc) - math.log(2 * math.pi)
                - _log_i0(self.concentration))

    @lazy_property
    def _loc(self):
        return self.loc.to(numgrad.float64)

    @lazy_property
    def _concentration(self):
        return self.concentration.to(numgrad.float64)

    @lazy_property
    def _proposal_r(self):
        kappa = self._concentration
        tau = 1 + (1 + 4 * kappa ** 2).sqrt()
        rho = (tau - (2 * tau).sqrt()) / (2 * kappa)
        r = (1 + rho ** 2) / (2 * rho)
        return numgrad.where(kappa < 1e-5, 1 / kappa + kappa, r)  # (its Taylor form near 0)

    def sample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        with numgrad.no_grad():
            loc, kappa, r = self._loc, self._concentration, self._proposal_r
            x = numgrad.zeros(shape, dtype=numgrad.float64, device=self.loc.device)
            done = numgrad.zeros(shape, dtype=numgrad.bool, device=self.loc.device)
            while not _is_all_true(done):
                u1, u2, u3 = numgrad.rand((3,) + shape, dtype=numgrad.float64,
                                          device=self.loc.device).unbind()
                z = numgrad.cos(math.pi * u1)
                f = (1 + r * z) / (r + z)
                c = kappa * (r - f)
                accept = ~done & (((c * (2 - c) - u2) > 0) | ((c / u2).log() + 1 - c >= 0))
                x = numgrad.where(accept, (u3 - 0.5).sign() * f.acos(), x)
                done = done | accept
            return ((x + math.pi + loc) % (2 * math.pi) - math.pi).to(self.loc.dtype)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(VonMises, _instance)
        batch_shape = _size(batch_shape)
        new.loc = self.loc.expand(batch_shape)
        new.concentration = self.concentration.expand(batch_shape)
        super(VonMises, new).__init__(batch_shape, _size(), validate_args=False)
        new._validate_args = self._validate_args
        return new

    @lazy_property
    def variance(self):
        return 1 - (_log_i1(self.concentration) - _log_i0(self.concentration)).exp()
