"""The negative binomial distribution."""
from __future__ import annotations

import numgrad

from . import constraints
from ._sampling import poisson
from .distribution import Distribution
from .gamma import Gamma
from .utils import _ProbsOrLogits, _expand_params, lazy_property

__all__ = ["NegativeBinomial"]


def _logsigmoid(x):
    return numgrad.nn.functional.logsigmoid(x)


class NegativeBinomial(Distribution, _ProbsOrLogits):
    """NegativeBinomial(total_count, probs): the number of successes (each of probability
    ``probs``) before ``total_count`` failures; a Poisson whose rate is gamma-distributed."""

    arg_constraints = {"total_count": constraints.greater_than_eq(0),
                       "probs": constraints.half_open_interval(0.0, 1.0),
                       "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, total_count, probs=None, logits=None, validate_args=None):
        self._set_count_and_probs_or_logits(total_count, probs, logits)
        super().__init__(self._param.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return _expand_params(self, NegativeBinomial, batch_shape, _instance, ("total_count",),
                              probs_or_logits=True)

    @property
    def mean(self):
        return self.total_count * numgrad.exp(self.logits)

    @property
    def mode(self):
        return ((self.total_count - 1) * self.logits.exp()).floor().clamp(min=0.0)

    @property
    def variance(self):
        return self.mean / numgrad.sigmoid(-self.logits)

    @lazy_property
    def _gamma(self):
        return Gamma(concentration=self.total_count, rate=numgrad.exp(-self.logits),
                     validate_args=False)

    def sample(self, sample_shape=()):
        with numgrad.no_grad():
            rate = self._gamma.sample(sample_shape=sample_shape)
            return poisson(rate)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        log_unnormalized_prob = (self.total_count * _logsigmoid(-self.logits)
                                 + value * _logsigmoid(self.logits))
        log_normalization = (-numgrad.lgamma(self.total_count + value)
                             + numgrad.lgamma(1.0 + value) + numgrad.lgamma(self.total_count))
        log_normalization = log_normalization.masked_fill(self.total_count + value == 0.0, 0.0)
        return log_unnormalized_prob - log_normalization
