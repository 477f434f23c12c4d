"""Student's t distribution."""
from __future__ import annotations

import math

import numgrad

from . import constraints
from .distribution import Distribution
from .chi2 import Chi2
from .utils import _size, _standard_normal, broadcast_all

__all__ = ["StudentT"]


class StudentT(Distribution):
    """StudentT(df, loc, scale): loc + scale · Z / sqrt(V / df), Z standard normal, V
    chi-squared with ``df`` degrees of freedom."""

    arg_constraints = {"df": constraints.positive, "loc": constraints.real,
                       "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    @property
    def mean(self):
        m = self.loc.clone(memory_format=numgrad.contiguous_format)
        return numgrad.where(self.df <= 1, numgrad.full_like(m, float("nan")), m)

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        df = self.df
        finite = self.scale.pow(2) * df / (df - 2)
        m = numgrad.where(df > 2, finite, numgrad.full_like(finite, float("inf")))
        return numgrad.where(df <= 1, numgrad.full_like(m, float("nan")), m)

    def __init__(self, df, loc=0.0, scale=1.0, validate_args=None):
        self.df, self.loc, self.scale = broadcast_all(df, loc, scale)
        self._chi2 = Chi2(self.df)
        batch_shape = self.df.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(StudentT, _instance)
        batch_shape = _size(batch_shape)
        new.df = self.df.expand(batch_shape)
        new.loc = self.loc.expand(batch_shape)
        new.scale = self.scale.expand(batch_shape)
        new._chi2 = self._chi2.expand(batch_shape)
        super(StudentT, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        x = _standard_normal(shape, dtype=self.df.dtype, device=self.df.device)
        z = self._chi2.rsample(sample_shape)
        y = x * numgrad.rsqrt(z / self.df)
        return self.loc + self.scale * y

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        y = (value - self.loc) / self.scale
        z = (self.scale.log() + 0.5 * self.df.log() + 0.5 * math.log(math.pi)
             + numgrad.lgamma(0.5 * self.df) - numgrad.lgamma(0.5 * (self.df + 1.0)))
        return -0.5 * (self.df + 1.0) * numgrad.log1p(y ** 2.0 / self.df) - z

    def entropy(self):
        lbeta = (numgrad.lgamma(0.5 * self.df) + math.lgamma(0.5)
                 - numgrad.lgamma(0.5 * (self.df + 1)))
        return (self.scale.log()
                + 0.5 * (self.df + 1)
                * (numgrad.digamma(0.5 * (self.df + 1)) - numgrad.digamma(0.5 * self.df))
                + 0.5 * self.df.log() + lbeta)
