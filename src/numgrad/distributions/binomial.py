"""The binomial distribution."""
from __future__ import annotations

import numgrad

from . import constraints
from ._sampling import binomial
from .distribution import Distribution
from .utils import _ProbsOrLogits, _expand_params

__all__ = ["Binomial"]


def _clamp_by_zero(x):
    # clamp(min=0) with a gradient of 1/2 at 0 (the mean of its two one-sided slopes)
    return (x.clamp(min=0) + x - x.clamp(max=0)) / 2


class Binomial(Distribution, _ProbsOrLogits):
    """Binomial(total_count, probs): the number of successes in ``total_count`` independent
    trials (``probs`` or ``logits``, exactly one)."""

    arg_constraints = {"total_count": constraints.nonnegative_integer,
                       "probs": constraints.unit_interval, "logits": constraints.real}
    has_enumerate_support = True

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        self._set_count_and_probs_or_logits(total_count, probs, logits)
        super().__init__(self._param.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return _expand_params(self, Binomial, batch_shape, _instance, ("total_count",),
                              probs_or_logits=True)

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self.total_count)

    @property
    def mean(self):
        return self.total_count * self.probs

    @property
    def mode(self):
        return ((self.total_count + 1) * self.probs).floor().clamp(max=self.total_count)

    @property
    def variance(self):
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        with numgrad.no_grad():
            return binomial(self.total_count.expand(shape), self.probs.expand(shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        log_factorial_n = numgrad.lgamma(self.total_count + 1)
        log_factorial_k = numgrad.lgamma(value + 1)
        log_factorial_nmk = numgrad.lgamma(self.total_count - value + 1)
        # k log p + (n - k) log(1 - p), through the logits: stable where p is near 0 or 1
        normalize_term = (self.total_count * _clamp_by_zero(self.logits)
                          + self.total_count * numgrad.log1p(numgrad.exp(-self.logits.abs()))
                          - log_factorial_n)
        return value * self.logits - log_factorial_k - log_factorial_nmk - normalize_term

    def entropy(self):
        total_count = int(self.total_count.max())
        if not bool((self.total_count == total_count).all()):
            raise NotImplementedError("Inhomogeneous total count not supported by `entropy`.")
        log_prob = self.log_prob(self.enumerate_support(False))
        return -(numgrad.exp(log_prob) * log_prob).sum(0)

    def enumerate_support(self, expand: bool = True):
        total_count = int(self.total_count.max())
        if not bool((self.total_count == total_count).all()):
            raise NotImplementedError(
                "Inhomogeneous total count not supported by `enumerate_support`.")
        values = numgrad.arange(1 + total_count, dtype=self._param.dtype,
                                device=self._param.device)
        values = values.view((-1,) + (1,) * len(self._batch_shape))
        if expand:
            values = values.expand((-1,) + tuple(self._batch_shape))
        return values
