"""Exponential families: p(x; θ) = exp(<t(x), θ> - F(θ) + k(x)). The entropy (and the KL
divergence between two members of one family) follow from the log normaliser F by autograd."""
from __future__ import annotations

import numgrad

from .distribution import Distribution

__all__ = ["ExponentialFamily"]


class ExponentialFamily(Distribution):
    """A distribution of an exponential family: subclasses give ``_natural_params``,
    ``_log_normalizer`` and ``_mean_carrier_measure`` (E[k(x)])."""

    @property
    def _natural_params(self):
        raise NotImplementedError

    def _log_normalizer(self, *natural_params):
        raise NotImplementedError

    @property
    def _mean_carrier_measure(self):
        raise NotImplementedError

    def entropy(self):
        """-E[log p] = F(θ) - <θ, ∇F(θ)> - E[k(x)] (the Bregman divergence form)."""
        result = -self._mean_carrier_measure
        nparams = [p.detach().requires_grad_() for p in self._natural_params]
        with numgrad.enable_grad():
            lg_normal = self._log_normalizer(*nparams)
            gradients = numgrad.autograd.grad(lg_normal.sum(), nparams, create_graph=True)
        result = result + lg_normal
        for np_, g in zip(nparams, gradients):
            result = result - (np_ * g).reshape(tuple(self._batch_shape) + (-1,)).sum(-1)
        return result
