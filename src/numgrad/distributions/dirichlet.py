"""The Dirichlet distribution on the simplex."""
from __future__ import annotations

import numgrad

from . import constraints
from ._sampling import standard_gamma
from .exp_family import ExponentialFamily
from .utils import _size

__all__ = ["Dirichlet"]


class Dirichlet(ExponentialFamily):
    """Dirichlet(concentration) over the last dimension of ``concentration`` (the event; K >= 1
    categories). ``rsample`` normalises independent gamma draws, differentiable through their
    implicit reparameterisation."""

    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, concentration, validate_args=None):
        if concentration.dim() < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        batch_shape = concentration.shape[:-1]
        event_shape = concentration.shape[-1:]
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Dirichlet, _instance)
        batch_shape = _size(batch_shape)
        new.concentration = self.concentration.expand(tuple(batch_shape)
                                                      + tuple(self.event_shape))
        super(Dirichlet, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        gammas = standard_gamma(self.concentration.expand(shape))
        return gammas / gammas.sum(-1, keepdim=True)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return (numgrad.xlogy(self.concentration - 1.0, value).sum(-1)
                + numgrad.lgamma(self.concentration.sum(-1))
                - numgrad.lgamma(self.concentration).sum(-1))

    @property
    def mean(self):
        return self.concentration / self.concentration.sum(-1, True)

    @property
    def mode(self):
        concentrationm1 = (self.concentration - 1).clamp(min=0.0)
        mode = concentrationm1 / concentrationm1.sum(-1, True)
        mask = (self.concentration < 1).all(-1, keepdim=True)
        one_hot = numgrad.nn.functional.one_hot(
            mode.argmax(-1), concentrationm1.shape[-1]).to(mode.dtype)
        return numgrad.where(mask, one_hot, mode)

    @property
    def variance(self):
        con0 = self.concentration.sum(-1, True)
        return (self.concentration * (con0 - self.concentration)
                / (con0.pow(2) * (con0 + 1)))

    def entropy(self):
        k = self.concentration.size(-1)
        a0 = self.concentration.sum(-1)
        return (numgrad.lgamma(self.concentration).sum(-1) - numgrad.lgamma(a0)
                - (k - a0) * numgrad.digamma(a0)
                - ((self.concentration - 1.0) * numgrad.digamma(self.concentration)).sum(-1))

    @property
    def _natural_params(self):
        return (self.concentration,)

    def _log_normalizer(self, x):
        return x.lgamma().sum(-1) - numgrad.lgamma(x.sum(-1))
