"""KL divergence KL(p || q) between distributions: a registry of closed forms by the pair of
types (``register_kl``), looked up for the most specific registered pair (``kl_divergence``)."""
from __future__ import annotations

import math
import warnings
from functools import total_ordering

import numgrad

from .bernoulli import Bernoulli
from .binomial import Binomial
from .categorical import Categorical, OneHotCategorical
from .cauchy import Cauchy
from .dirichlet import Beta, Dirichlet
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .exponential import Exponential
from .gamma import Gamma
from .geometric import Geometric
from .gumbel import _EULER, Gumbel
from .half_normal import HalfNormal
from .independent import Independent
from .laplace import Laplace
from .multivariate_normal import MultivariateNormal, _batch_mahalanobis
from .normal import Normal
from .pareto import Pareto
from .poisson import Poisson
from .transformed_distribution import TransformedDistribution
from .uniform import Uniform
from .utils import _sum_rightmost

__all__ = ["kl_divergence", "register_kl"]

_KL_REGISTRY: dict = {}  # {(type_p, type_q): fn}, as registered
_KL_MEMOIZE: dict = {}  # {(type_p, type_q): fn}, the dispatch's answers


def register_kl(type_p, type_q):
    """A decorator registering ``fn(p, q)`` as KL(p || q) for instances of ``type_p`` and
    ``type_q`` (Distribution subclasses; subclasses of them use it unless a more specific pair
    is registered)."""
    if not isinstance(type_p, type) or not issubclass(type_p, Distribution):
        raise TypeError(f"Expected type_p to be a Distribution subclass but got {type_p}")
    if not isinstance(type_q, type) or not issubclass(type_q, Distribution):
        raise TypeError(f"Expected type_q to be a Distribution subclass but got {type_q}")

    def decorator(fun):
        _KL_REGISTRY[type_p, type_q] = fun
        _KL_MEMOIZE.clear()
        return fun

    return decorator


@total_ordering
class _Match:
    """A pair of types ordered by how specific it is (all entries no less specific: smaller)."""

    __slots__ = ["types"]

    def __init__(self, *types):
        self.types = types

    def __eq__(self, other):
        return self.types == other.types

    def __le__(self, other):
        for x, y in zip(self.types, other.types):
            if not issubclass(x, y):
                return False
            if x is not y:
                break
        return True


def _dispatch_kl(type_p, type_q):
    """The registered function of the most specific pair matching (type_p, type_q), or
    NotImplemented; warns when the pair's two orders of specificity disagree."""
    matches = [(sp, sq) for sp, sq in _KL_REGISTRY
               if issubclass(type_p, sp) and issubclass(type_q, sq)]
    if not matches:
        return NotImplemented
    left_p, left_q = min(_Match(*m) for m in matches).types
    right_q, right_p = min(_Match(*reversed(m)) for m in matches).types
    left_fun = _KL_REGISTRY[left_p, left_q]
    right_fun = _KL_REGISTRY[right_p, right_q]
    if left_fun is not right_fun:
        warnings.warn(f"Ambiguous kl_divergence({type_p.__name__}, {type_q.__name__}). "
                      f"Please register_kl({left_p.__name__}, {right_q.__name__})",
                      RuntimeWarning, stacklevel=2)
    return left_fun


def _infinite_like(tensor):
    return numgrad.full_like(tensor, math.inf)


def kl_divergence(p, q):
    """KL(p || q) = E_p[log p(x) - log q(x)], batched over the two distributions' batch
    shapes. Raises NotImplementedError for a pair of types with no registered closed form."""
    try:
        fun = _KL_MEMOIZE[type(p), type(q)]
    except KeyError:
        fun = _dispatch_kl(type(p), type(q))
        _KL_MEMOIZE[type(p), type(q)] = fun
    if fun is NotImplemented:
        raise NotImplementedError(f"No KL(p || q) is implemented for p type "
                                  f"{p.__class__.__name__} and q type {q.__class__.__name__}")
    return fun(p, q)


def _softplus(x):
    return numgrad.nn.functional.softplus(x)


@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(p, q):
    t1 = p.probs * (_softplus(-q.logits) - _softplus(-p.logits))
    t1 = numgrad.where(q.probs == 0, _infinite_like(t1), t1)
    t1 = numgrad.where(p.probs == 0, numgrad.zeros_like(t1), t1)
    t2 = (1 - p.probs) * (_softplus(q.logits) - _softplus(p.logits))
    t2 = numgrad.where(q.probs == 1, _infinite_like(t2), t2)
    t2 = numgrad.where(p.probs == 1, numgrad.zeros_like(t2), t2)
    return t1 + t2


@register_kl(Beta, Beta)
def _kl_beta_beta(p, q):
    sum_params_p = p.concentration1 + p.concentration0
    sum_params_q = q.concentration1 + q.concentration0
    t1 = (q.concentration1.lgamma() + q.concentration0.lgamma() + sum_params_p.lgamma())
    t2 = (p.concentration1.lgamma() + p.concentration0.lgamma() + sum_params_q.lgamma())
    t3 = (p.concentration1 - q.concentration1) * numgrad.digamma(p.concentration1)
    t4 = (p.concentration0 - q.concentration0) * numgrad.digamma(p.concentration0)
    t5 = (sum_params_q - sum_params_p) * numgrad.digamma(sum_params_p)
    return t1 - t2 + t3 + t4 + t5


@register_kl(Binomial, Binomial)
def _kl_binomial_binomial(p, q):
    if bool((p.total_count < q.total_count).any()):
        raise NotImplementedError("KL between Binomials where q.total_count > p.total_count is "
                                  "not implemented")
    kl = p.total_count * (p.probs * (p.logits - q.logits) + (-p.probs).log1p()
                          - (-q.probs).log1p())
    return numgrad.where(p.total_count > q.total_count, _infinite_like(kl), kl)


@register_kl(Categorical, Categorical)
def _kl_categorical_categorical(p, q):
    t = p.probs * (p.logits - q.logits)
    t = numgrad.where((q.probs == 0).expand_as(t), _infinite_like(t), t)
    t = numgrad.where((p.probs == 0).expand_as(t), numgrad.zeros_like(t), t)
    return t.sum(-1)


@register_kl(Cauchy, Cauchy)
def _kl_cauchy_cauchy(p, q):
    t1 = ((p.scale + q.scale).pow(2) + (p.loc - q.loc).pow(2)).log()
    t2 = (4 * p.scale * q.scale).log()
    return t1 - t2


@register_kl(Dirichlet, Dirichlet)
def _kl_dirichlet_dirichlet(p, q):
    sum_p_concentration = p.concentration.sum(-1)
    sum_q_concentration = q.concentration.sum(-1)
    t1 = sum_p_concentration.lgamma() - sum_q_concentration.lgamma()
    t2 = (p.concentration.lgamma() - q.concentration.lgamma()).sum(-1)
    t3 = p.concentration - q.concentration
    t4 = p.concentration.digamma() - sum_p_concentration.digamma().unsqueeze(-1)
    return t1 - t2 + (t3 * t4).sum(-1)


@register_kl(Exponential, Exponential)
def _kl_exponential_exponential(p, q):
    rate_ratio = q.rate / p.rate
    t1 = -rate_ratio.log()
    return t1 + rate_ratio - 1


@register_kl(ExponentialFamily, ExponentialFamily)
def _kl_expfamily_expfamily(p, q):
    """Two members of one exponential family: the Bregman divergence of the log normaliser,
    F(θq) - F(θp) - <θq - θp, ∇F(θp)>."""
    if type(p) is not type(q):
        raise NotImplementedError("The cross KL-divergence between different exponential "
                                  "families cannot be computed using Bregman divergences")
    p_nparams = [np_.detach().requires_grad_() for np_ in p._natural_params]
    q_nparams = q._natural_params
    with numgrad.enable_grad():
        lg_normal = p._log_normalizer(*p_nparams)
        gradients = numgrad.autograd.grad(lg_normal.sum(), p_nparams, create_graph=True)
    result = q._log_normalizer(*q_nparams) - lg_normal
    for pnp, qnp, g in zip(p_nparams, q_nparams, gradients):
        term = (qnp - pnp) * g
        result = result - _sum_rightmost(term, len(q.event_shape))
    return result


@register_kl(Gamma, Gamma)
def _kl_gamma_gamma(p, q):
    t1 = q.concentration * numgrad.log(p.rate / q.rate)
    t2 = numgrad.lgamma(q.concentration) - numgrad.lgamma(p.concentration)
    t3 = (p.concentration - q.concentration) * numgrad.digamma(p.concentration)
    t4 = (q.rate - p.rate) * (p.concentration / p.rate)
    return t1 + t2 + t3 + t4


@register_kl(Geometric, Geometric)
def _kl_geometric_geometric(p, q):
    return -p.entropy() - numgrad.log1p(-q.probs) / p.probs - q.logits


@register_kl(Gumbel, Gumbel)
def _kl_gumbel_gumbel(p, q):
    ct1 = p.scale / q.scale
    ct2 = q.loc / q.scale
    ct3 = p.loc / q.scale
    t1 = -ct1.log() - ct2 + ct3
    t2 = ct1 * _EULER
    t3 = numgrad.exp(ct2 + (1 + ct1).lgamma() - ct3)
    return t1 + t2 + t3 - (1 + _EULER)


@register_kl(HalfNormal, HalfNormal)
def _kl_halfnormal_halfnormal(p, q):
    return _kl_normal_normal(p.base_dist, q.base_dist)


@register_kl(Pareto, Pareto)
def _kl_pareto_pareto(p, q):
    scale_ratio = p.scale / q.scale
    alpha_ratio = q.alpha / p.alpha
    t1 = q.alpha * scale_ratio.log()
    t2 = -alpha_ratio.log()
    result = t1 + t2 + alpha_ratio - 1
    # p puts mass below q's lower bound
    return numgrad.where(p.support.lower_bound < q.support.lower_bound,
                         _infinite_like(result), result)


@register_kl(Laplace, Laplace)
def _kl_laplace_laplace(p, q):
    scale_ratio = p.scale / q.scale
    loc_abs_diff = (p.loc - q.loc).abs()
    t1 = -scale_ratio.log()
    t2 = loc_abs_diff / q.scale
    t3 = scale_ratio * numgrad.exp(-loc_abs_diff / p.scale)
    return t1 + t2 + t3 - 1


@register_kl(MultivariateNormal, MultivariateNormal)
def _kl_multivariatenormal_multivariatenormal(p, q):
    if p.event_shape != q.event_shape:
        raise ValueError("KL-divergence between two Multivariate Normals with different event "
                         "shapes cannot be computed")
    half_term1 = (q._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
                  - p._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1))
    combined_batch_shape = numgrad.broadcast_shapes(
        tuple(q._unbroadcasted_scale_tril.shape[:-2]),
        tuple(p._unbroadcasted_scale_tril.shape[:-2]))
    n = p.event_shape[0]
    q_scale_tril = q._unbroadcasted_scale_tril.expand(tuple(combined_batch_shape) + (n, n))
    p_scale_tril = p._unbroadcasted_scale_tril.expand(tuple(combined_batch_shape) + (n, n))
    # tr(Σq^-1 Σp) = ||Lq^-1 Lp||_F^2
    term2 = numgrad.linalg.solve_triangular(q_scale_tril, p_scale_tril, upper=False).pow(
        2).sum((-2, -1))
    term3 = _batch_mahalanobis(q._unbroadcasted_scale_tril, q.loc - p.loc)
    return half_term1 + 0.5 * (term2 + term3 - n)


@register_kl(Normal, Normal)
def _kl_normal_normal(p, q):
    var_ratio = (p.scale / q.scale).pow(2)
    t1 = ((p.loc - q.loc) / q.scale).pow(2)
    return 0.5 * (var_ratio + t1 - 1 - var_ratio.log())


@register_kl(OneHotCategorical, OneHotCategorical)
def _kl_onehotcategorical_onehotcategorical(p, q):
    return _kl_categorical_categorical(p._categorical, q._categorical)


@register_kl(Poisson, Poisson)
def _kl_poisson_poisson(p, q):
    return p.rate * (p.rate.log() - q.rate.log()) - (p.rate - q.rate)


@register_kl(TransformedDistribution, TransformedDistribution)
def _kl_transformed_transformed(p, q):
    if p.transforms != q.transforms:
        raise NotImplementedError
    if p.event_shape != q.event_shape:
        raise NotImplementedError
    extra_event_dim = len(p.event_shape) - len(p.base_dist.event_shape)
    return _sum_rightmost(kl_divergence(p.base_dist, q.base_dist), extra_event_dim)


@register_kl(Uniform, Uniform)
def _kl_uniform_uniform(p, q):
    result = ((q.high - q.low) / (p.high - p.low)).log()
    outside = (q.low > p.low) | (q.high < p.high)
    return numgrad.where(outside, _infinite_like(result), result)


def _kl_infinite(p, q):
    """p puts mass where q has none (a real line against a bounded or positive support)."""
    return _infinite_like(p.loc)


for _p in (Normal, Laplace):
    for _q in (Beta, Exponential, Gamma, Uniform):
        register_kl(_p, _q)(_kl_infinite)


@register_kl(Independent, Independent)
def _kl_independent_independent(p, q):
    if p.reinterpreted_batch_ndims != q.reinterpreted_batch_ndims:
        raise NotImplementedError
    result = kl_divergence(p.base_dist, q.base_dist)
    return _sum_rightmost(result, p.reinterpreted_batch_ndims)
