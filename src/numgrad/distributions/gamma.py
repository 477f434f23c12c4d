"""The gamma distribution."""
from __future__ import annotations

from numbers import Number

import numgrad

from . import constraints
from ._sampling import standard_gamma
from .exp_family import ExponentialFamily
from .utils import _size, broadcast_all

__all__ = ["Gamma"]


class Gamma(ExponentialFamily):
    """Gamma(concentration, rate): density ∝ x^(concentration-1) exp(-rate x) on x > 0.
    ``rsample`` is differentiable in both parameters (implicit reparameterisation)."""

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _mean_carrier_measure = 0

    @property
    def mean(self):
        return self.concentration / self.rate

    @property
    def mode(self):
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    @property
    def variance(self):
        return self.concentration / self.rate.pow(2)

    def __init__(self, concentration, rate, validate_args=None):
        self.concentration, self.rate = broadcast_all(concentration, rate)
        if isinstance(concentration, Number) and isinstance(rate, Number):
            batch_shape = _size()
        else:
            batch_shape = self.concentration.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Gamma, _instance)
        batch_shape = _size(batch_shape)
        new.concentration = self.concentration.expand(batch_shape)
        new.rate = self.rate.expand(batch_shape)
        super(Gamma, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        value = standard_gamma(self.concentration.expand(shape)) / self.rate.expand(shape)
        # values that underflowed to 0 are raised to the smallest normal number, the gradient
        # left as it was (PyTorch clamps the data in place)
        tiny = numgrad.finfo(value.dtype).tiny
        return value + (value.detach().clamp(min=tiny) - value.detach())

    def log_prob(self, value):
        value = numgrad.as_tensor(value, dtype=self.rate.dtype, device=self.rate.device)
        if self._validate_args:
            self._validate_sample(value)
        return (numgrad.xlogy(self.concentration, self.rate)
                + numgrad.xlogy(self.concentration - 1, value)
                - self.rate * value - numgrad.lgamma(self.concentration))

    def entropy(self):
        return (self.concentration - numgrad.log(self.rate) + numgrad.lgamma(self.concentration)
                + (1.0 - self.concentration) * numgrad.digamma(self.concentration))

    @property
    def _natural_params(self):
        return (self.concentration - 1, -self.rate)

    def _log_normalizer(self, x, y):
        return numgrad.lgamma(x + 1) + (x + 1) * numgrad.log(-y.reciprocal())

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return numgrad.special.gammainc(self.concentration, self.rate * value)
