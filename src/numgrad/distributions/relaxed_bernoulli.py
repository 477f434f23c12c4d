"""The relaxed Bernoulli (binary Concrete) distribution and its logit form."""
from __future__ import annotations

import numgrad

from . import constraints
from .distribution import Distribution
from .transformed_distribution import TransformedDistribution
from .transforms import SigmoidTransform
from .utils import (_OfRelaxedBase, _ProbsOrLogits, _batch_shape, _expand_params, broadcast_all,
                    clamp_probs)

__all__ = ["LogitRelaxedBernoulli", "RelaxedBernoulli"]


class LogitRelaxedBernoulli(Distribution, _ProbsOrLogits):
    """The logit of a RelaxedBernoulli: (logit(u) + logits) / temperature, u uniform (Maddison
    et al., 2017)."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.real

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        self.temperature = temperature
        self._set_probs_or_logits(probs, logits)
        batch_shape = _batch_shape([logits if probs is None else probs], self._param)
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = _expand_params(self, LogitRelaxedBernoulli, batch_shape, _instance,
                             probs_or_logits=True)
        new.temperature = self.temperature
        return new

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        probs = clamp_probs(self.probs.expand(shape))
        uniforms = clamp_probs(numgrad.rand(tuple(shape), dtype=probs.dtype,
                                            device=probs.device))
        return (uniforms.log() - (-uniforms).log1p() + probs.log()
                - (-probs).log1p()) / self.temperature

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        diff = logits - value.mul(self.temperature)
        return self.temperature.log() + diff - 2 * diff.exp().log1p()


class RelaxedBernoulli(_OfRelaxedBase, TransformedDistribution):
    """A continuous relaxation of Bernoulli(probs) on (0, 1): sigmoid of a
    LogitRelaxedBernoulli; ``temperature`` sets how close draws are to 0 and 1."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        base_dist = LogitRelaxedBernoulli(temperature, probs, logits)
        super().__init__(base_dist, SigmoidTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(RelaxedBernoulli, _instance)
        return super().expand(batch_shape, _instance=new)
