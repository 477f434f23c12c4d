"""The generalised Pareto distribution."""
from __future__ import annotations

import math
from numbers import Number, Real

import numgrad

from . import constraints
from .distribution import Distribution
from .utils import _size, broadcast_all

__all__ = ["GeneralizedPareto"]


class GeneralizedPareto(Distribution):
    """GeneralizedPareto(loc, scale, concentration ξ): survival (1 + ξ z)^(-1/ξ), z = (x -
    loc) / scale (exp(-z) at ξ = 0); support [loc, loc - scale/ξ] for ξ < 0, else [loc, ∞)."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive,
                       "concentration": constraints.real}
    has_rsample = True

    def __init__(self, loc, scale, concentration, validate_args=None):
        self.loc, self.scale, self.concentration = broadcast_all(loc, scale, concentration)
        if all(isinstance(v, Number) for v in (loc, scale, concentration)):
            batch_shape = _size()
        else:
            batch_shape = self.loc.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(GeneralizedPareto, _instance)
        batch_shape = _size(batch_shape)
        new.loc = self.loc.expand(batch_shape)
        new.scale = self.scale.expand(batch_shape)
        new.concentration = self.concentration.expand(batch_shape)
        super(GeneralizedPareto, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def rsample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        u = numgrad.rand(shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.icdf(u)

    def _zero_and_safe(self):
        """Where ξ is 0 (isclose), and ξ with those entries set to 1 (so that the ξ ≠ 0
        branch stays finite where it is not used)."""
        eq_zero = numgrad.isclose(self.concentration, numgrad.zeros_like(self.concentration))
        safe = numgrad.where(eq_zero, numgrad.ones_like(self.concentration), self.concentration)
        return eq_zero, safe

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        z = self._z(value)
        eq_zero, safe_conc = self._zero_and_safe()
        y = 1 / safe_conc + numgrad.ones_like(z)
        where_nonzero = numgrad.where(y == 0, y, y * numgrad.log1p(safe_conc * z))
        log_scale = math.log(self.scale) if isinstance(self.scale, Real) else self.scale.log()
        return -log_scale - numgrad.where(eq_zero, z, where_nonzero)

    def log_survival_function(self, value):
        if self._validate_args:
            self._validate_sample(value)
        z = self._z(value)
        eq_zero, safe_conc = self._zero_and_safe()
        where_nonzero = -numgrad.log1p(safe_conc * z) / safe_conc
        return numgrad.where(eq_zero, -z, where_nonzero)

    def log_cdf(self, value):
        return numgrad.log1p(-numgrad.exp(self.log_survival_function(value)))

    def cdf(self, value):
        return numgrad.exp(self.log_cdf(value))

    def icdf(self, value):
        eq_zero, safe_conc = self._zero_and_safe()
        logu = numgrad.log1p(-value)
        where_nonzero = self.loc + self.scale / safe_conc * numgrad.expm1(-safe_conc * logu)
        where_zero = self.loc - self.scale * logu
        return numgrad.where(eq_zero, where_zero, where_nonzero)

    def _z(self, x):
        return (x - self.loc) / self.scale

    @property
    def mean(self):
        valid = self.concentration < 1
        safe_conc = numgrad.where(valid, self.concentration,
                                  numgrad.full_like(self.concentration, 0.5))
        result = self.loc + self.scale / (1 - safe_conc)
        return numgrad.where(valid, result, numgrad.full_like(result, math.nan))

    @property
    def variance(self):
        valid = self.concentration < 0.5
        safe_conc = numgrad.where(valid, self.concentration,
                                  numgrad.full_like(self.concentration, 0.25))
        result = self.scale ** 2 / ((1 - safe_conc) ** 2 * (1 - 2 * safe_conc))
        return numgrad.where(valid, result, numgrad.full_like(result, math.nan))

    def entropy(self):
        ans = numgrad.log(self.scale) + self.concentration + 1
        return ans.broadcast_to(tuple(self._batch_shape))

    @property
    def mode(self):
        return self.loc

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        lower = self.loc
        upper = numgrad.where(self.concentration < 0, lower - self.scale / self.concentration,
                              numgrad.full_like(lower, math.inf))
        return constraints.interval(lower, upper)
