"""The Laplace (double exponential) distribution."""
from __future__ import annotations

import numgrad

from . import constraints
from .distribution import Distribution, _LocCentred
from .utils import _batch_shape, _expand_params, broadcast_all

__all__ = ["Laplace"]


class Laplace(_LocCentred, Distribution):
    """Laplace(loc, scale): density exp(-|x - loc| / scale) / (2 scale)."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    @property
    def variance(self):
        return 2 * self.scale.pow(2)

    @property
    def stddev(self):
        return (2 ** 0.5) * self.scale

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = broadcast_all(loc, scale)
        super().__init__(_batch_shape([loc, scale], self.loc), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return _expand_params(self, Laplace, batch_shape, _instance, ("loc", "scale"))

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        eps = numgrad.finfo(self.loc.dtype).eps
        u = numgrad.empty(tuple(shape), dtype=self.loc.dtype,
                          device=self.loc.device).uniform_(eps - 1, 1)
        return self.loc - self.scale * u.sign() * numgrad.log1p(-u.abs())

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return -numgrad.log(2 * self.scale) - (value - self.loc).abs() / self.scale

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return 0.5 - 0.5 * (value - self.loc).sign() * numgrad.expm1(
            -(value - self.loc).abs() / self.scale)

    def icdf(self, value):
        term = value - 0.5
        return self.loc - self.scale * term.sign() * numgrad.log1p(-2 * term.abs())

    def entropy(self):
        return 1 + numgrad.log(2 * self.scale)


