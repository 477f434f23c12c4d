"""The continuous Bernoulli distribution on [0, 1] (Loaiza-Ganem and Cunningham, 2019)."""
from __future__ import annotations

import math
from numbers import Number

import numgrad

from . import constraints
from .exp_family import ExponentialFamily
from .utils import _size, broadcast_all, clamp_probs, lazy_property, logits_to_probs
from .utils import probs_to_logits

__all__ = ["ContinuousBernoulli"]


def _bce_with_logits(logits, target):
    """-(target·log σ(logits) + (1 - target)·log(1 - σ(logits))), elementwise and stable (with
    the smooth gradient σ(logits) - target, also at logits = 0)."""
    return numgrad.nn.functional.binary_cross_entropy_with_logits(logits, target,
                                                                  reduction="none")


class ContinuousBernoulli(ExponentialFamily):
    """ContinuousBernoulli(probs): density C(λ) λ^x (1-λ)^(1-x) on [0, 1]. Near λ = 1/2
    (inside ``lims``) the normaliser, moments and cdf use their Taylor expansions, where the
    closed forms lose precision."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    _mean_carrier_measure = 0
    has_rsample = True

    def __init__(self, probs=None, logits=None, lims=(0.499, 0.501), validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            is_scalar = isinstance(probs, Number)
            (self.probs,) = broadcast_all(probs)
            if validate_args is not None:
                if not bool(self.arg_constraints["probs"].check(self.probs).all()):
                    raise ValueError("The parameter probs has invalid values")
            self.probs = clamp_probs(self.probs)
        else:
            is_scalar = isinstance(logits, Number)
            (self.logits,) = broadcast_all(logits)
        self._param = self.probs if probs is not None else self.logits
        batch_shape = _size() if is_scalar else self._param.size()
        self._lims = lims
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(ContinuousBernoulli, _instance)
        new._lims = self._lims
        batch_shape = _size(batch_shape)
        if "probs" in self.__dict__:
            new.probs = self.probs.expand(batch_shape)
            new._param = new.probs
        if "logits" in self.__dict__:
            new.logits = self.logits.expand(batch_shape)
            new._param = new.logits
        super(ContinuousBernoulli, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _new(self, *args, **kwargs):
        return self._param.new(*args, **kwargs)

    def _outside_unstable_region(self):
        return (self.probs <= self._lims[0]) | (self.probs > self._lims[1])

    def _cut_probs(self):
        """probs, with those inside ``lims`` moved to its edge (their closed forms are not
        used, but must stay finite for the gradient)."""
        return numgrad.where(self._outside_unstable_region(), self.probs,
                             numgrad.full_like(self.probs, self._lims[0]))

    def _cont_bern_log_norm(self):
        """log C(λ) = log(|log(1-λ) - log λ| / |1 - 2λ|), or its expansion about 1/2."""
        cut = self._cut_probs()
        below = numgrad.where(cut <= 0.5, cut, numgrad.zeros_like(cut))
        above = numgrad.where(cut >= 0.5, cut, numgrad.ones_like(cut))
        log_norm = (numgrad.log(numgrad.abs(numgrad.log1p(-cut) - numgrad.log(cut)))
                    - numgrad.where(cut <= 0.5, numgrad.log1p(-2.0 * below),
                                    numgrad.log(2.0 * above - 1.0)))
        x = (self.probs - 0.5).pow(2)
        taylor = math.log(2.0) + (4.0 / 3.0 + 104.0 / 45.0 * x) * x
        return numgrad.where(self._outside_unstable_region(), log_norm, taylor)

    @property
    def mean(self):
        cut = self._cut_probs()
        mus = cut / (2.0 * cut - 1.0) + 1.0 / (numgrad.log1p(-cut) - numgrad.log(cut))
        x = self.probs - 0.5
        taylor = 0.5 + (1.0 / 3.0 + 16.0 / 45.0 * x.pow(2)) * x
        return numgrad.where(self._outside_unstable_region(), mus, taylor)

    @property
    def stddev(self):
        return numgrad.sqrt(self.variance)

    @property
    def variance(self):
        cut = self._cut_probs()
        variances = (cut * (cut - 1.0) / (1.0 - 2.0 * cut).pow(2)
                     + 1.0 / (numgrad.log1p(-cut) - numgrad.log(cut)).pow(2))
        x = (self.probs - 0.5).pow(2)
        taylor = 1.0 / 12.0 - (1.0 / 15.0 - 128.0 / 945.0 * x) * x
        return numgrad.where(self._outside_unstable_region(), variances, taylor)

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return clamp_probs(logits_to_probs(self.logits, is_binary=True))

    @property
    def param_shape(self):
        return self._param.size()

    def sample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        u = numgrad.rand(shape, dtype=self.probs.dtype, device=self.probs.device)
        with numgrad.no_grad():
            return self.icdf(u)

    def rsample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        u = numgrad.rand(shape, dtype=self.probs.dtype, device=self.probs.device)
        return self.icdf(u)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return -_bce_with_logits(logits, value) + self._cont_bern_log_norm()

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        cut = self._cut_probs()
        cdfs = ((cut.pow(value) * (1.0 - cut).pow(1.0 - value) + cut - 1.0)
                / (2.0 * cut - 1.0))
        unbounded = numgrad.where(self._outside_unstable_region(), cdfs, value)
        return numgrad.where(value <= 0.0, numgrad.zeros_like(value),
                             numgrad.where(value >= 1.0, numgrad.ones_like(value), unbounded))

    def icdf(self, value):
        cut = self._cut_probs()
        return numgrad.where(
            self._outside_unstable_region(),
            (numgrad.log1p(-cut + value * (2.0 * cut - 1.0)) - numgrad.log1p(-cut))
            / (numgrad.log(cut) - numgrad.log1p(-cut)),
            value)

    def entropy(self):
        log_probs0 = numgrad.log1p(-self.probs)
        log_probs1 = numgrad.log(self.probs)
        return (self.mean * (log_probs0 - log_probs1) - self._cont_bern_log_norm()
                - log_probs0)

    @property
    def _natural_params(self):
        return (self.logits,)

    def _log_normalizer(self, x):
        """The log normaliser in the natural parameter x (the logits), with its expansion
        about 0."""
        outside = (x <= self._lims[0] - 0.5) | (x > self._lims[1] - 0.5)
        cut = numgrad.where(outside, x, numgrad.full_like(x, self._lims[0] - 0.5))
        log_norm = numgrad.log(numgrad.abs(numgrad.expm1(cut))) - numgrad.log(numgrad.abs(cut))
        taylor = 0.5 * x + x.pow(2) / 24.0 - x.pow(4) / 2880.0
        return numgrad.where(outside, log_norm, taylor)
