"""The Fisher-Snedecor (F) distribution."""
from __future__ import annotations

import math
from numbers import Number

import numgrad

from . import constraints
from .distribution import Distribution
from .gamma import Gamma
from .utils import _size, broadcast_all

__all__ = ["FisherSnedecor"]


def _nan_where(mask, x):
    return numgrad.where(mask, numgrad.full_like(x, math.nan), x)


class FisherSnedecor(Distribution):
    """F(df1, df2): (X1 / df1) / (X2 / df2) for chi-squared X1, X2 (drawn as a ratio of
    gammas, reparameterised)."""

    arg_constraints = {"df1": constraints.positive, "df2": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, df1, df2, validate_args=None):
        self.df1, self.df2 = broadcast_all(df1, df2)
        self._gamma1 = Gamma(self.df1 * 0.5, self.df1)
        self._gamma2 = Gamma(self.df2 * 0.5, self.df2)
        if isinstance(df1, Number) and isinstance(df2, Number):
            batch_shape = _size()
        else:
            batch_shape = self.df1.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(FisherSnedecor, _instance)
        batch_shape = _size(batch_shape)
        new.df1 = self.df1.expand(batch_shape)
        new.df2 = self.df2.expand(batch_shape)
        new._gamma1 = self._gamma1.expand(batch_shape)
        new._gamma2 = self._gamma2.expand(batch_shape)
        super(FisherSnedecor, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self):
        df2 = _nan_where(self.df2 <= 2, self.df2)
        return df2 / (df2 - 2)

    @property
    def mode(self):
        mode = (self.df1 - 2) / self.df1 * self.df2 / (self.df2 + 2)
        return _nan_where(self.df1 <= 2, mode)

    @property
    def variance(self):
        df2 = _nan_where(self.df2 <= 4, self.df2)
        return (2 * df2.pow(2) * (self.df1 + df2 - 2)
                / (self.df1 * (df2 - 2).pow(2) * (df2 - 4)))

    def rsample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        x1 = self._gamma1.rsample(sample_shape).reshape(shape)
        x2 = self._gamma2.rsample(sample_shape).reshape(shape)
        tiny = numgrad.finfo(x2.dtype).tiny
        x2 = x2 + (x2.detach().clamp(min=tiny) - x2.detach())
        y = x1 / x2
        return y + (y.detach().clamp(min=tiny) - y.detach())

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        ct1 = self.df1 * 0.5
        ct2 = self.df2 * 0.5
        ct3 = self.df1 / self.df2
        t1 = (ct1 + ct2).lgamma() - ct1.lgamma() - ct2.lgamma()
        t2 = ct1 * ct3.log() + (ct1 - 1) * numgrad.log(value)
        t3 = (ct1 + ct2) * numgrad.log1p(ct3 * value)
        return t1 + t2 - t3
