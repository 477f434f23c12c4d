"""The multinomial distribution: counts of ``total_count`` categorical draws."""
from __future__ import annotations

import math

import numgrad

from . import constraints
from .binomial import Binomial
from .categorical import Categorical
from .distribution import Distribution
from .utils import _OfCategorical, _size, broadcast_all

__all__ = ["Multinomial"]


class Multinomial(_OfCategorical, Distribution):
    """Multinomial(total_count, probs): the counts per category (the event, of length K) of
    ``total_count`` draws from Categorical(probs). ``total_count`` is one int (``log_prob``
    takes counts of any total)."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}

    @property
    def mean(self):
        return self.probs * self.total_count

    @property
    def variance(self):
        return self.total_count * self.probs * (1 - self.probs)

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        if not isinstance(total_count, int):
            raise NotImplementedError("inhomogeneous total_count is not supported")
        self.total_count = total_count
        self._categorical = Categorical(probs=probs, logits=logits)
        self._binomial = Binomial(total_count=total_count, probs=self.probs)
        batch_shape = self._categorical.batch_shape
        event_shape = self._categorical.param_shape[-1:]
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Multinomial, _instance)
        batch_shape = _size(batch_shape)
        new.total_count = self.total_count
        new._categorical = self._categorical.expand(batch_shape)
        super(Multinomial, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @constraints.dependent_property(is_discrete=True, event_dim=1)
    def support(self):
        return constraints.multinomial(self.total_count)

    def sample(self, sample_shape=()):
        sample_shape = _size(sample_shape)
        samples = self._categorical.sample(_size((self.total_count,) + tuple(sample_shape)))
        order = list(range(1, samples.dim())) + [0]  # (the draws last)
        samples = samples.permute(*order)
        counts = numgrad.zeros(tuple(self._extended_shape(sample_shape)), dtype=samples.dtype,
                               device=samples.device)
        counts = counts.scatter_add(-1, samples, numgrad.ones_like(samples))
        return counts.type_as(self.probs)

    def entropy(self):
        n = numgrad.tensor(float(self.total_count), dtype=self.probs.dtype)
        cat_entropy = self._categorical.entropy()
        term1 = n * cat_entropy - numgrad.lgamma(n + 1)
        support = self._binomial.enumerate_support(expand=False)[1:]
        binomial_probs = numgrad.exp(self._binomial.log_prob(support))
        weights = numgrad.lgamma(support + 1)
        term2 = (binomial_probs * weights).sum([0, -1])
        return term1 + term2

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        log_factorial_n = numgrad.lgamma(value.sum(-1) + 1)
        log_factorial_xs = numgrad.lgamma(value + 1).sum(-1)
        # 0 · log 0 is 0: an impossible category drawn no times
        logits = numgrad.where((value == 0) & (logits == -math.inf),
                               numgrad.zeros_like(logits), logits)
        log_powers = (logits * value).sum(-1)
        return log_factorial_n - log_factorial_xs + log_powers
