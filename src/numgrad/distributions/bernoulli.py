"""The Bernoulli distribution (a coin: 1 with probability ``probs``)."""
from __future__ import annotations

import numgrad

from . import constraints
from .exp_family import ExponentialFamily
from .utils import _ProbsOrLogits, _batch_shape, _expand_params, broadcast_all

__all__ = ["Bernoulli"]


def _bce_with_logits(logits, target):
    """-(target·log σ(logits) + (1 - target)·log(1 - σ(logits))), elementwise and stable (with
    the smooth gradient σ(logits) - target, also at logits = 0)."""
    return numgrad.nn.functional.binary_cross_entropy_with_logits(logits, target,
                                                                  reduction="none")


class Bernoulli(ExponentialFamily, _ProbsOrLogits):
    """Bernoulli(probs) (or given ``logits``, the log-odds): exactly one of the two."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.boolean
    has_enumerate_support = True
    _mean_carrier_measure = 0

    def __init__(self, probs=None, logits=None, validate_args=None):
        self._set_probs_or_logits(probs, logits)
        batch_shape = _batch_shape([logits if probs is None else probs], self._param)
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return _expand_params(self, Bernoulli, batch_shape, _instance, probs_or_logits=True)

    @property
    def mean(self):
        return self.probs

    @property
    def mode(self):
        mode = (self.probs >= 0.5).to(self.probs.dtype)
        return mode.masked_fill(self.probs == 0.5, float("nan"))

    @property
    def variance(self):
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        with numgrad.no_grad():
            return numgrad.bernoulli(self.probs.expand(shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return -_bce_with_logits(logits, value)

    def entropy(self):
        return _bce_with_logits(self.logits, self.probs)

    def enumerate_support(self, expand: bool = True):
        values = numgrad.arange(2, dtype=self._param.dtype, device=self._param.device)
        values = values.view((-1,) + (1,) * len(self._batch_shape))
        if expand:
            values = values.expand((-1,) + tuple(self._batch_shape))
        return values

    @property
    def _natural_params(self):
        return (numgrad.logit(self.probs),)

    def _log_normalizer(self, x):
        return numgrad.log1p(numgrad.exp(x))
