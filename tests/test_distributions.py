"""numgrad.distributions against torch.distributions (issue 37, item 4): every family's
log_prob, entropy, moments, cdf / icdf and the KL pairs at the same parameters; rsample's
gradients with the base noise fixed; gradcheck in float64; validation errors in PyTorch's words;
sample shapes and (seeded, loose) statistics."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import numgrad
import numgrad.distributions as D

torch = pytest.importorskip("torch")
TD = torch.distributions

RNG = np.random.default_rng(37)


def ng(a, dtype=np.float64, requires_grad=False):
    return numgrad.tensor(np.asarray(a, dtype=dtype), requires_grad=requires_grad)


def th(a, dtype=np.float64, requires_grad=False):
    return torch.tensor(np.array(a, dtype=dtype, copy=True), requires_grad=requires_grad)


def close(ours, theirs, rtol=1e-6, atol=1e-8):
    a = ours.detach().numpy() if hasattr(ours, "detach") else np.asarray(ours)
    b = theirs.detach().numpy() if hasattr(theirs, "detach") else np.asarray(theirs)
    assert a.shape == b.shape, (a.shape, b.shape)
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, equal_nan=True)


def _spelled(text):
    """PyTorch's text with numgrad's spelling of its names (``torch.float64``...)."""
    return text.replace("torch.", "numgrad.")


def _pos(*shape, lo=0.5, hi=2.5):
    return RNG.uniform(lo, hi, size=shape)


def _probs(*shape):
    p = RNG.uniform(0.1, 1.0, size=shape)
    return p / p.sum(-1, keepdims=True)


def _spd(n, batch=()):
    a = RNG.normal(size=batch + (n, n))
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


# (name, make(module, convert) -> distribution, values to score (numpy), methods beyond the
#  common log_prob / entropy / mean / variance / stddev / mode)
CASES = {
    "Normal": (lambda M, c: M.Normal(c(RNG_P["loc"]), c(RNG_P["scale"])),
               lambda: RNG.normal(size=(4, 3)), ("cdf", "icdf")),
    "Bernoulli": (lambda M, c: M.Bernoulli(probs=c(RNG_P["p"])),
                  lambda: RNG.integers(0, 2, size=(4, 3)).astype(float), ()),
    "BernoulliLogits": (lambda M, c: M.Bernoulli(logits=c(RNG_P["loc"])),
                        lambda: RNG.integers(0, 2, size=(4, 3)).astype(float), ()),
    "Categorical": (lambda M, c: M.Categorical(probs=c(RNG_P["simplex"])),
                    lambda: RNG.integers(0, 4, size=(5, 3)).astype(np.int64), ()),
    "CategoricalLogits": (lambda M, c: M.Categorical(logits=c(RNG_P["logits"])),
                          lambda: RNG.integers(0, 4, size=(5, 3)).astype(np.int64), ()),
    "OneHotCategorical": (lambda M, c: M.OneHotCategorical(probs=c(RNG_P["simplex"])),
                          lambda: np.eye(4)[RNG.integers(0, 4, size=(5, 3))], ()),
    "Uniform": (lambda M, c: M.Uniform(c(RNG_P["loc"]) - 3, c(RNG_P["loc"]) + 3),
                lambda: RNG.uniform(-1, 1, size=(4, 3)), ("cdf", "icdf")),
    "Laplace": (lambda M, c: M.Laplace(c(RNG_P["loc"]), c(RNG_P["scale"])),
                lambda: RNG.normal(size=(4, 3)), ("cdf", "icdf")),
    "Exponential": (lambda M, c: M.Exponential(c(RNG_P["scale"])),
                    lambda: RNG.uniform(0, 3, size=(4, 3)), ("cdf", "icdf")),
    "LogNormal": (lambda M, c: M.LogNormal(c(RNG_P["loc"]), c(RNG_P["scale"])),
                  lambda: RNG.uniform(0.1, 3, size=(4, 3)), ("cdf", "icdf")),
    "Cauchy": (lambda M, c: M.Cauchy(c(RNG_P["loc"]), c(RNG_P["scale"])),
               lambda: RNG.normal(size=(4, 3)), ("cdf", "icdf")),
    "Independent": (lambda M, c: M.Independent(M.Normal(c(RNG_P["loc"]), c(RNG_P["scale"])), 1),
                    lambda: RNG.normal(size=(4, 3)), ()),
    "MultivariateNormal": (lambda M, c: M.MultivariateNormal(c(RNG_P["mvn_loc"]),
                                                            covariance_matrix=c(RNG_P["spd"])),
                           lambda: RNG.normal(size=(5, 2, 3)), ()),
    "MultivariateNormalTril": (lambda M, c: M.MultivariateNormal(
        c(RNG_P["mvn_loc"]), scale_tril=c(np.linalg.cholesky(RNG_P["spd"]))),
        lambda: RNG.normal(size=(5, 2, 3)), ()),
    "MultivariateNormalPrecision": (lambda M, c: M.MultivariateNormal(
        c(RNG_P["mvn_loc"]), precision_matrix=c(RNG_P["spd"])),
        lambda: RNG.normal(size=(5, 2, 3)), ()),
    "Beta": (lambda M, c: M.Beta(c(RNG_P["scale"]), c(RNG_P["scale2"])),
             lambda: RNG.uniform(0.05, 0.95, size=(4, 3)), ()),
    "Gamma": (lambda M, c: M.Gamma(c(RNG_P["scale"]), c(RNG_P["scale2"])),
              lambda: RNG.uniform(0.1, 4, size=(4, 3)), ("cdf",)),
    "Chi2": (lambda M, c: M.Chi2(c(RNG_P["scale"] * 3)),
             lambda: RNG.uniform(0.1, 4, size=(4, 3)), ()),
    "Dirichlet": (lambda M, c: M.Dirichlet(c(RNG_P["conc"])),
                  lambda: _probs(5, 3, 4), ()),
    "Poisson": (lambda M, c: M.Poisson(c(RNG_P["scale"] * 3)),
                lambda: RNG.integers(0, 8, size=(4, 3)).astype(float), ()),
    "Binomial": (lambda M, c: M.Binomial(c(np.full(3, 10.0)), probs=c(RNG_P["p"])),
                 lambda: RNG.integers(0, 11, size=(4, 3)).astype(float), ()),
    "BinomialLogits": (lambda M, c: M.Binomial(c(np.array([3.0, 7.0, 12.0])),
                                               logits=c(RNG_P["loc"])),
                       lambda: RNG.integers(0, 4, size=(4, 3)).astype(float), ()),
    "StudentT": (lambda M, c: M.StudentT(c(np.array([0.7, 1.5, 4.0])), c(RNG_P["loc"]),
                                         c(RNG_P["scale"])),
                 lambda: RNG.normal(size=(4, 3)), ()),
    "RelaxedBernoulli": (lambda M, c: M.RelaxedBernoulli(c(0.7), probs=c(RNG_P["p"])),
                         lambda: RNG.uniform(0.05, 0.95, size=(4, 3)), ()),
    "RelaxedOneHotCategorical": (lambda M, c: M.RelaxedOneHotCategorical(
        c(0.8), probs=c(RNG_P["simplex"])), lambda: _probs(5, 3, 4), ()),
    "MixtureSameFamily": (lambda M, c: M.MixtureSameFamily(
        M.Categorical(probs=c(RNG_P["simplex"])),
        M.Normal(c(RNG_P["mix_loc"]), c(RNG_P["mix_scale"]))),
        lambda: RNG.normal(size=(5, 3)), ("cdf",)),
    "MixtureSameFamilyMVN": (lambda M, c: M.MixtureSameFamily(
        M.Categorical(probs=c(RNG_P["simplex"][0])),
        M.Independent(M.Normal(c(RNG_P["mix_loc"][0][:, None].repeat(2, 1)),
                               c(RNG_P["mix_scale"][0][:, None].repeat(2, 1))), 1)),
        lambda: RNG.normal(size=(5, 2)), ()),
    "TransformedAffineTanh": (lambda M, c: M.TransformedDistribution(
        M.Normal(c(RNG_P["loc"]), c(RNG_P["scale"])),
        [M.AffineTransform(0.5, 2.0), M.TanhTransform()]),
        lambda: RNG.uniform(-0.9, 0.9, size=(4, 3)), ("cdf", "icdf")),
    "TransformedSigmoid": (lambda M, c: M.TransformedDistribution(
        M.Laplace(c(RNG_P["loc"]), c(RNG_P["scale"])),
        M.ComposeTransform([M.SigmoidTransform(), M.AffineTransform(1.0, -3.0)])),
        lambda: RNG.uniform(-1.9, 0.9, size=(4, 3)), ("cdf", "icdf")),
    "TransformedStickBreaking": (lambda M, c: M.TransformedDistribution(
        M.Independent(M.Normal(c(RNG_P["mvn_loc"]), c(RNG_P["mvn_scale"])), 1),
        M.StickBreakingTransform()), lambda: _probs(5, 2, 4), ()),
    "Geometric": (lambda M, c: M.Geometric(probs=c(np.array([0.2, 0.5, 1.0]))),
                  lambda: RNG.integers(0, 6, size=(4, 3)).astype(float), ()),
    "GeometricLogits": (lambda M, c: M.Geometric(logits=c(RNG_P["loc"])),
                        lambda: RNG.integers(0, 6, size=(4, 3)).astype(float), ()),
    "Gumbel": (lambda M, c: M.Gumbel(c(RNG_P["loc"]), c(RNG_P["scale"])),
               lambda: RNG.normal(size=(4, 3)), ("cdf", "icdf")),
    "HalfNormal": (lambda M, c: M.HalfNormal(c(RNG_P["scale"])),
                   lambda: RNG.uniform(0, 3, size=(4, 3)), ("cdf", "icdf")),
    "HalfCauchy": (lambda M, c: M.HalfCauchy(c(RNG_P["scale"])),
                   lambda: RNG.uniform(0, 3, size=(4, 3)), ("cdf", "icdf")),
    "Pareto": (lambda M, c: M.Pareto(c(RNG_P["scale"]), c(np.array([0.7, 1.5, 3.0]))),
               lambda: RNG.uniform(2.6, 5, size=(4, 3)), ("cdf", "icdf")),
    "Weibull": (lambda M, c: M.Weibull(c(RNG_P["scale"]), c(RNG_P["scale2"])),
                lambda: RNG.uniform(0.1, 3, size=(4, 3)), ("cdf", "icdf")),
    "InverseGamma": (lambda M, c: M.InverseGamma(c(np.array([0.7, 1.5, 3.0])), c(RNG_P["scale"])),
                     lambda: RNG.uniform(0.1, 3, size=(4, 3)), ()),
    "Multinomial": (lambda M, c: M.Multinomial(5, probs=c(RNG_P["simplex"])),
                    lambda: RNG.multinomial(5, [0.25] * 4, size=(2, 3)).astype(float), ()),
    "NegativeBinomial": (lambda M, c: M.NegativeBinomial(c(RNG_P["scale"] * 2),
                                                         probs=c(RNG_P["p"])),
                         lambda: RNG.integers(0, 9, size=(4, 3)).astype(float), ()),
    "NegativeBinomialLogits": (lambda M, c: M.NegativeBinomial(c(np.array([0.0, 1.5, 4.0])),
                                                               logits=c(RNG_P["loc"])),
                               lambda: RNG.integers(1, 9, size=(4, 3)).astype(float), ()),
    "FisherSnedecor": (lambda M, c: M.FisherSnedecor(c(np.array([1.5, 3.0, 6.0])),
                                                     c(np.array([1.5, 3.0, 8.0]))),
                       lambda: RNG.uniform(0.1, 3, size=(4, 3)), ()),
    "Kumaraswamy": (lambda M, c: M.Kumaraswamy(c(np.array([0.7, 1.5, 3.0])), c(RNG_P["scale"])),
                    lambda: RNG.uniform(0.05, 0.95, size=(4, 3)), ("cdf", "icdf")),
    "LogisticNormal": (lambda M, c: M.LogisticNormal(c(RNG_P["mvn_loc"]), c(RNG_P["mvn_scale"])),
                       lambda: _probs(5, 2, 4), ()),
    "LowRankMultivariateNormal": (lambda M, c: M.LowRankMultivariateNormal(
        c(RNG_P["mvn_loc"]), c(RNG_P["W"]), c(RNG_P["mvn_scale"])),
        lambda: RNG.normal(size=(5, 2, 3)), ()),
    "VonMises": (lambda M, c: M.VonMises(c(RNG_P["loc"]), c(np.array([0.3, 2.0, 8.0]))),
                 lambda: RNG.uniform(-3, 3, size=(4, 3)), ()),
    "ContinuousBernoulli": (lambda M, c: M.ContinuousBernoulli(
        probs=c(np.array([0.2, 0.4995, 0.8]))), lambda: RNG.uniform(0.05, 0.95, size=(4, 3)),
        ("cdf", "icdf")),
    "ContinuousBernoulliLogits": (lambda M, c: M.ContinuousBernoulli(logits=c(RNG_P["loc"])),
                                  lambda: RNG.uniform(0.05, 0.95, size=(4, 3)), ("cdf", "icdf")),
    "Wishart": (lambda M, c: M.Wishart(c(np.array([3.5, 6.0])), covariance_matrix=c(RNG_P["spd"])),
                lambda: _spd(3, (4, 2)) / 3, ()),
    "WishartTril": (lambda M, c: M.Wishart(5.0, scale_tril=c(np.linalg.cholesky(
        RNG_P["spd"][0]))),
                    lambda: _spd(3, (4, 2)) / 3, ()),
    "WishartPrecision": (lambda M, c: M.Wishart(c(np.array([3.5, 4.0])),
                                                precision_matrix=c(RNG_P["spd"])),
                         lambda: _spd(3, (4, 2)) / 3, ()),
    "LKJCholesky": (lambda M, c: M.LKJCholesky(3, c(np.array([0.5, 1.0, 3.0]))),
                    lambda: D.CorrCholeskyTransform()(ng(RNG.normal(size=(4, 3, 3)))).numpy(), ()),
}

RNG_P = {
    "loc": RNG.normal(size=3), "scale": _pos(3), "scale2": _pos(3), "p": RNG.uniform(0.1, 0.9, 3),
    "simplex": _probs(3, 4), "logits": RNG.normal(size=(3, 4)), "mvn_loc": RNG.normal(size=(2, 3)),
    "mvn_scale": _pos(2, 3), "spd": _spd(3, (2,)), "conc": _pos(3, 4),
    "mix_loc": RNG.normal(size=(3, 4)), "mix_scale": _pos(3, 4), "W": RNG.normal(size=(3, 2)),
}
MOMENTS = ("mean", "variance", "stddev", "mode")
# PyTorch's VonMises takes log I0 and log I1 from polynomial approximations (Abramowitz and
# Stegun 9.8.1-4, |error| < 2e-7), numgrad's from the exponentially scaled Bessel functions
# Multinomial.entropy: PyTorch takes lgamma(total_count + 1) of an int64 tensor, so in float32
# (5.6e-8 off in float64); numgrad's is in the probabilities' dtype
ATOL = {"VonMises": 1e-6, "Multinomial": 1e-6}
# what PyTorch itself leaves unimplemented (NotImplementedError): skipped for both
_TORCH_LACKS = {}


def _pair(name):
    make, values, extra = CASES[name]
    ours = make(D, lambda a: ng(a))
    theirs = make(TD, lambda a: th(a))
    return ours, theirs, values, extra


def _both(fn_ours, fn_theirs):
    try:
        b = fn_theirs()
    except NotImplementedError:
        with pytest.raises(NotImplementedError):
            fn_ours()
        return None, None
    return fn_ours(), b


@pytest.mark.parametrize("name", list(CASES))
def test_family_matches_pytorch(name):
    ours, theirs, values, extra = _pair(name)
    assert tuple(ours.batch_shape) == tuple(theirs.batch_shape)
    assert tuple(ours.event_shape) == tuple(theirs.event_shape)
    assert ours.has_rsample == theirs.has_rsample
    assert ours.has_enumerate_support == theirs.has_enumerate_support
    v = values()
    dtype = np.int64 if v.dtype == np.int64 else np.float64
    a, b = _both(lambda: ours.log_prob(ng(v, dtype)), lambda: theirs.log_prob(th(v, dtype)))
    if b is not None:
        close(a, b, rtol=1e-6, atol=ATOL.get(name, 1e-9))
    a, b = _both(ours.entropy, theirs.entropy)
    if b is not None:
        close(a, b, rtol=1e-6, atol=ATOL.get(name, 1e-9))
    for m in MOMENTS:
        a, b = _both(lambda: getattr(ours, m), lambda: getattr(theirs, m))
        if b is not None:
            close(a, b, rtol=1e-6, atol=ATOL.get(name, 1e-9))
    if "cdf" in extra:
        close(ours.cdf(ng(v)), theirs.cdf(th(v)), rtol=1e-6, atol=ATOL.get(name, 1e-9))
    if "icdf" in extra:
        u = RNG.uniform(0.05, 0.95, size=(4, 3))
        close(ours.icdf(ng(u)), theirs.icdf(th(u)), rtol=1e-6, atol=ATOL.get(name, 1e-9))
    if theirs.has_enumerate_support:
        for expand in (True, False):
            a, b = _both(lambda: ours.enumerate_support(expand),
                         lambda: theirs.enumerate_support(expand))
            if b is not None:
                close(a, b)
    assert repr(ours.support) == _spelled(repr(theirs.support))
    assert {k: repr(c) for k, c in ours.arg_constraints.items()} == \
        {k: _spelled(repr(c)) for k, c in theirs.arg_constraints.items()}


@pytest.mark.filterwarnings("ignore:Singular sample detected")  # (PyTorch's Wishart.rsample
# warns about its valid draws: it takes support.check's True for "singular")
@pytest.mark.parametrize("name", list(CASES))
def test_sample_shapes_and_expand(name):
    ours, theirs, _, _ = _pair(name)
    numgrad.manual_seed(0)
    for sample_shape in [(), (2,), (2, 3)]:
        x = ours.sample(sample_shape)
        assert tuple(x.shape) == tuple(theirs.sample(sample_shape).shape)
        assert bool(ours.support.check(x).all()) if not isinstance(
            ours.support, type(D.constraints.dependent)) else True
        assert not x.requires_grad
        if ours.has_rsample:
            assert tuple(ours.rsample(sample_shape).shape) == tuple(x.shape)
    big = (2,) + tuple(ours.batch_shape)
    e_ours, e_theirs = ours.expand(big), theirs.expand(big)
    assert tuple(e_ours.batch_shape) == tuple(e_theirs.batch_shape)
    assert tuple(e_ours.sample().shape) == tuple(e_theirs.sample().shape)
    a, b = _both(lambda: e_ours.mean, lambda: e_theirs.mean)
    if b is not None:
        close(a, b)
    x = e_ours.sample()
    close(e_ours.log_prob(x), e_theirs.log_prob(th(x.numpy(), x.numpy().dtype)), rtol=1e-6,
          atol=ATOL.get(name, 1e-9))


# ---------------------------------------------------------------- KL divergence
KL_PAIRS = {
    "Normal": lambda M, c: (M.Normal(c(RNG_P["loc"]), c(RNG_P["scale"])),
                           M.Normal(c(RNG_P["loc"] * 2), c(RNG_P["scale2"]))),
    "Bernoulli": lambda M, c: (M.Bernoulli(c(RNG_P["p"])),
                               M.Bernoulli(c(np.array([0.0, 0.5, 1.0])))),
    "BernoulliEdge": lambda M, c: (M.Bernoulli(c(np.array([0.0, 1.0, 0.3]))),
                                   M.Bernoulli(c(RNG_P["p"]))),
    "Categorical": lambda M, c: (M.Categorical(c(RNG_P["simplex"])),
                                 M.Categorical(logits=c(RNG_P["logits"]))),
    "OneHotCategorical": lambda M, c: (M.OneHotCategorical(c(RNG_P["simplex"])),
                                       M.OneHotCategorical(logits=c(RNG_P["logits"]))),
    "NormalGamma": lambda M, c: (M.Normal(c(RNG_P["loc"]), c(RNG_P["scale"])),
                                 M.Gamma(c(RNG_P["scale"]), c(RNG_P["scale2"]))),
    "LaplaceUniform": lambda M, c: (M.Laplace(c(RNG_P["loc"]), c(RNG_P["scale"])),
                                    M.Uniform(c(RNG_P["loc"]) - 1, c(RNG_P["loc"]) + 1)),
    "NormalBeta": lambda M, c: (M.Normal(c(RNG_P["loc"]), c(RNG_P["scale"])),
                                M.Beta(c(RNG_P["scale"]), c(RNG_P["scale2"]))),
    "LaplaceExponential": lambda M, c: (M.Laplace(c(RNG_P["loc"]), c(RNG_P["scale"])),
                                        M.Exponential(c(RNG_P["scale2"]))),
    "Geometric": lambda M, c: (M.Geometric(c(RNG_P["p"])), M.Geometric(logits=c(RNG_P["loc"]))),
    "Gumbel": lambda M, c: (M.Gumbel(c(RNG_P["loc"]), c(RNG_P["scale"])),
                            M.Gumbel(c(RNG_P["loc"] * 2), c(RNG_P["scale2"]))),
    "HalfNormal": lambda M, c: (M.HalfNormal(c(RNG_P["scale"])), M.HalfNormal(c(RNG_P["scale2"]))),
    "Pareto": lambda M, c: (M.Pareto(c(RNG_P["scale"]), c(RNG_P["scale2"])),
                            M.Pareto(c(RNG_P["scale2"]), c(RNG_P["scale"]))),
    "Uniform": lambda M, c: (M.Uniform(c(np.array([0.0, -1.0, 0.5])), c(np.array([1.0, 1, 2]))),
                             M.Uniform(c(np.array([-1.0, -0.5, 0.0])), c(np.array([2.0, 3, 2])))),
    "Exponential": lambda M, c: (M.Exponential(c(RNG_P["scale"])),
                                 M.Exponential(c(RNG_P["scale2"]))),
    "Laplace": lambda M, c: (M.Laplace(c(RNG_P["loc"]), c(RNG_P["scale"])),
                             M.Laplace(c(RNG_P["loc"] * 0.3), c(RNG_P["scale2"]))),
    "Beta": lambda M, c: (M.Beta(c(RNG_P["scale"]), c(RNG_P["scale2"])),
                          M.Beta(c(RNG_P["scale2"]), c(RNG_P["scale"] + 1))),
    "Gamma": lambda M, c: (M.Gamma(c(RNG_P["scale"]), c(RNG_P["scale2"])),
                           M.Gamma(c(RNG_P["scale2"]), c(RNG_P["scale"] + 1))),
    "Dirichlet": lambda M, c: (M.Dirichlet(c(RNG_P["conc"])), M.Dirichlet(c(RNG_P["conc"][::-1]))),
    "MultivariateNormal": lambda M, c: (
        M.MultivariateNormal(c(RNG_P["mvn_loc"]), covariance_matrix=c(RNG_P["spd"])),
        M.MultivariateNormal(c(RNG_P["mvn_loc"][0]), scale_tril=c(np.linalg.cholesky(
            RNG_P["spd"][1])))),
    "Independent": lambda M, c: (
        M.Independent(M.Normal(c(RNG_P["mvn_loc"]), c(RNG_P["mvn_scale"])), 1),
        M.Independent(M.Normal(c(RNG_P["mvn_loc"] + 1), c(RNG_P["mvn_scale"] * 2)), 1)),
    "Poisson": lambda M, c: (M.Poisson(c(RNG_P["scale"])), M.Poisson(c(RNG_P["scale2"]))),
    "Binomial": lambda M, c: (M.Binomial(10, c(RNG_P["p"])),
                              M.Binomial(c(np.array([10.0, 10, 4])), c(RNG_P["p"][::-1]))),
    "Cauchy": lambda M, c: (M.Cauchy(c(RNG_P["loc"]), c(RNG_P["scale"])),
                            M.Cauchy(c(RNG_P["loc"] * 2), c(RNG_P["scale2"]))),
    "LogNormal": lambda M, c: (M.LogNormal(c(RNG_P["loc"]), c(RNG_P["scale"])),
                               M.LogNormal(c(RNG_P["loc"] * 2), c(RNG_P["scale2"]))),
}


@pytest.mark.parametrize("name", list(KL_PAIRS))
def test_kl_matches_pytorch(name):
    p, q = KL_PAIRS[name](D, lambda a: ng(a))
    tp, tq = KL_PAIRS[name](TD, lambda a: th(a))
    if name == "Binomial":
        with pytest.raises(NotImplementedError, match="q.total_count > p.total_count"):
            D.kl_divergence(q, p)
    close(D.kl_divergence(p, q), TD.kl_divergence(tp, tq), rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("name", [n for n in KL_PAIRS if n not in ("NormalGamma", "LaplaceUniform",
                                                                    "NormalBeta",
                                                                    "LaplaceExponential")])
def test_kl_gradients_match_pytorch(name):
    ours_leaves, theirs_leaves = [], []

    def leaf(a, convert, leaves):
        t = convert(a, requires_grad=True)
        leaves.append(t)
        return t

    ours = D.kl_divergence(*KL_PAIRS[name](D, lambda a: leaf(a, ng, ours_leaves)))
    theirs = TD.kl_divergence(*KL_PAIRS[name](TD, lambda a: leaf(a, th, theirs_leaves)))
    keep = np.isfinite(theirs.detach().numpy())
    ours_total = numgrad.where(ng(keep, bool), ours, numgrad.zeros_like(ours)).sum()
    theirs_total = torch.where(th(keep, bool), theirs, torch.zeros_like(theirs)).sum()
    ours_grads = numgrad.autograd.grad(ours_total, ours_leaves, allow_unused=True)
    theirs_grads = torch.autograd.grad(theirs_total, theirs_leaves, allow_unused=True)
    for a, b in zip(ours_grads, theirs_grads):
        if b is None:
            assert a is None or not np.any(a.numpy())
        else:
            close(a, b, rtol=1e-6, atol=1e-9)


def test_kl_gradients_and_registry():
    loc = ng(RNG_P["loc"], requires_grad=True)
    tloc = th(RNG_P["loc"], requires_grad=True)
    D.kl_divergence(D.Normal(loc, 1.5), D.Normal(0.0, 1.0)).sum().backward()
    TD.kl_divergence(TD.Normal(tloc, 1.5), TD.Normal(0.0, 1.0)).sum().backward()
    close(loc.grad, tloc.grad)
    # the exponential-family fallback (Bregman divergence) where no pair is registered
    for make in (lambda M, c: (M.Poisson(c([1.5])), M.Poisson(c([2.5]))),
                 lambda M, c: (M.Gamma(c([1.5]), c([0.7])), M.Gamma(c([2.5]), c([1.1]))),
                 lambda M, c: (M.Normal(c([1.5]), c([0.7])), M.Normal(c([-2.5]), c([1.1]))),
                 KL_PAIRS["Beta"], KL_PAIRS["Dirichlet"], KL_PAIRS["Exponential"]):
        close(D.kl._kl_expfamily_expfamily(*make(D, ng)),
              TD.kl_divergence(*make(TD, th)), rtol=1e-6, atol=1e-9)
    with pytest.raises(NotImplementedError, match="No KL\\(p \\|\\| q\\) is implemented for p "
                                                  "type Normal and q type Cauchy"):
        D.kl_divergence(D.Normal(0.0, 1.0), D.Cauchy(0.0, 1.0))

    class MyNormal(D.Normal):
        pass

    # a subclass uses its parent's pair until it registers its own
    close(D.kl_divergence(MyNormal(ng(0.0), ng(1.0)), D.Normal(ng(1.0), ng(1.0))), ng(0.5))

    @D.register_kl(MyNormal, D.Normal)
    def _kl_mine(p, q):
        return numgrad.zeros(p.batch_shape)

    assert float(D.kl_divergence(MyNormal(0.0, 1.0), D.Normal(1.0, 1.0))) == 0.0
    with pytest.raises(TypeError, match="Expected type_p to be a Distribution subclass"):
        D.register_kl(int, D.Normal)


# ---------------------------------------------------------------- rsample with the noise fixed
class _Noise:
    """Records the base noise numgrad's rsample draws (its normal_, uniform_, cauchy_,
    exponential_ fills and rand calls, in order) and replays it to PyTorch's same draws, so
    that the two rsamples are the same function of the same noise."""

    FILLS = ("normal_", "uniform_", "cauchy_", "exponential_")

    def __init__(self, monkeypatch):
        self.mp = monkeypatch
        self.drawn = []

    def record(self):
        for name in self.FILLS:
            original = getattr(numgrad.Tensor, name)

            def fill(t, *args, _original=original, **kwargs):
                out = _original(t, *args, **kwargs)
                self.drawn.append(out.numpy().copy())
                return out

            self.mp.setattr(numgrad.Tensor, name, fill)
        rand = numgrad.rand

        def recorded_rand(*args, **kwargs):
            out = rand(*args, **kwargs)
            self.drawn.append(out.numpy().copy())
            return out

        self.mp.setattr(numgrad, "rand", recorded_rand)

    def replay(self):
        self.mp.undo()
        queue = list(self.drawn)

        def fill(t, *args, **kwargs):
            with torch.no_grad():
                return t.copy_(torch.from_numpy(queue.pop(0)))

        for name in self.FILLS:
            self.mp.setattr(torch.Tensor, name, fill)
        self.mp.setattr(torch, "rand", lambda *a, **k: torch.from_numpy(queue.pop(0)))
        return queue


RSAMPLE_CASES = {
    "Normal": (lambda M, a, b: M.Normal(a, b.exp()), lambda x: (x ** 2).sin()),
    "Uniform": (lambda M, a, b: M.Uniform(a, a + b.exp()), lambda x: x.cos()),
    "Laplace": (lambda M, a, b: M.Laplace(a, b.exp()), lambda x: x.tanh()),
    "Exponential": (lambda M, a, b: M.Exponential(b.exp()), lambda x: (x + 1).log()),
    "Cauchy": (lambda M, a, b: M.Cauchy(a, b.exp()), lambda x: x.atan()),
    "LogNormal": (lambda M, a, b: M.LogNormal(a, b.exp()), lambda x: x.sqrt()),
    "Independent": (lambda M, a, b: M.Independent(M.Normal(a, b.exp()), 1), lambda x: x.sin()),
    "MultivariateNormal": (lambda M, a, b: M.MultivariateNormal(
        a, scale_tril=(b.exp().diag_embed() + 0.3 * b.unsqueeze(-1) * b.unsqueeze(-2)).tril()),
        lambda x: x.sin()),
    "RelaxedBernoulli": (lambda M, a, b: M.RelaxedBernoulli(b.exp(), logits=a),
                         lambda x: x.square()),
    "RelaxedOneHotCategorical": (lambda M, a, b: M.RelaxedOneHotCategorical(b.exp()[0],
                                                                            logits=a),
                                 lambda x: x.square().cumsum(-1)),
    "Transformed": (lambda M, a, b: M.TransformedDistribution(
        M.Normal(a, b.exp()), [M.AffineTransform(0.5, 2.0), M.TanhTransform(),
                               M.AffineTransform(b, a)]), lambda x: x.exp()),
    "LowRankMultivariateNormal": (lambda M, a, b: M.LowRankMultivariateNormal(
        a, a.unsqueeze(-1) * b.unsqueeze(-2), b.exp()), lambda x: x.sin()),
    "Kumaraswamy": (lambda M, a, b: M.Kumaraswamy(a.exp(), b.exp()), lambda x: x.square()),
    "LogisticNormal": (lambda M, a, b: M.LogisticNormal(a, b.exp()), lambda x: x.cumsum(-1)),
    "Gumbel": (lambda M, a, b: M.Gumbel(a, b.exp()), lambda x: x.sin()),
    "HalfNormal": (lambda M, a, b: M.HalfNormal(b.exp()), lambda x: x.sqrt()),
    "Weibull": (lambda M, a, b: M.Weibull(a.exp(), b.exp()), lambda x: x.sqrt()),
    "Pareto": (lambda M, a, b: M.Pareto(a.exp(), b.exp()), lambda x: x.log()),
    "ContinuousBernoulli": (lambda M, a, b: M.ContinuousBernoulli(logits=a * b),
                            lambda x: x.square()),
    "OneHotStraightThrough": (lambda M, a, b: M.OneHotCategoricalStraightThrough(logits=a * b),
                              lambda x: x * x.new_tensor([1.0, -2.0, 3.0])),
}


@pytest.mark.parametrize("name", list(RSAMPLE_CASES))
def test_rsample_gradients_with_the_noise_fixed(name, monkeypatch):
    make, f = RSAMPLE_CASES[name]
    a0, b0 = RNG.normal(size=3), RNG.normal(size=3) * 0.5
    a, b = ng(a0, requires_grad=True), ng(b0, requires_grad=True)
    ta, tb = th(a0, requires_grad=True), th(b0, requires_grad=True)
    noise = _Noise(monkeypatch)
    numgrad.manual_seed(1)
    if name == "OneHotStraightThrough":  # (its noise is a multinomial draw: the draw itself)
        x = make(D, a, b).rsample((4,))
        dist = make(TD, ta, tb)
        monkeypatch.setattr(TD.OneHotCategorical, "sample",
                            lambda self, shape=(): torch.from_numpy(x.detach().numpy().copy()))
        tx = dist.rsample((4,))
    else:
        noise.record()
        x = make(D, a, b).rsample((4,))
        queue = noise.replay()
        assert noise.drawn, "rsample drew no noise"
        tx = make(TD, ta, tb).rsample((4,))
        assert not queue, "PyTorch's rsample drew less noise than numgrad's"
    close(x, tx, rtol=1e-10, atol=1e-12)
    f(x).sum().backward()
    f(tx).sum().backward()
    for ours, theirs in ((a.grad, ta.grad), (b.grad, tb.grad)):
        assert (ours is None) == (theirs is None)
        if ours is not None:
            close(ours, theirs, rtol=1e-8, atol=1e-10)


# ---------------------------------------------------------------- gamma's reparameterisation
def test_standard_gamma_grad_matches_pytorch():
    from numgrad.distributions._sampling import standard_gamma_grad

    alpha = np.repeat([0.05, 0.3, 1.0, 2.5, 7.0, 30.0, 200.0], 5)
    q = np.tile([0.05, 0.25, 0.5, 0.75, 0.95], 7)
    stats = pytest.importorskip("scipy.stats")  # (the quantiles: PyTorch's Gamma has no icdf)

    x = stats.gamma.ppf(q, alpha)
    ours = standard_gamma_grad(ng(alpha), ng(x))
    theirs = torch._standard_gamma_grad(th(alpha), th(x))
    close(ours, theirs, rtol=5e-3, atol=1e-8)
    # and the exact value, d x(α, q) / dα at a fixed quantile q, by a central difference
    h = 1e-6 * alpha
    exact = (stats.gamma.ppf(q, alpha + h) - stats.gamma.ppf(q, alpha - h)) / (2 * h)
    close(ours, exact, rtol=1e-4, atol=1e-8)


@pytest.mark.parametrize("name", ["Gamma", "Beta", "Dirichlet", "StudentT", "Chi2"])
def test_rsample_through_gamma_is_differentiable_and_unbiased(name):
    """The pathwise gradient of E[f(x)] from rsample, averaged over many draws, is the exact
    gradient of the expectation (closed forms through PyTorch's mean and variance)."""
    numgrad.manual_seed(3)
    n = 8000
    if name == "Gamma":
        p = ng([0.7, 3.0], requires_grad=True)
        make = lambda M, c: M.Gamma(c, 2.0)  # noqa: E731
    elif name == "Chi2":
        p = ng([0.7, 3.0], requires_grad=True)
        make = lambda M, c: M.Chi2(c)  # noqa: E731
    elif name == "Beta":
        p = ng([0.7, 3.0], requires_grad=True)
        make = lambda M, c: M.Beta(c, c.flip(0) + 0.5)  # noqa: E731
    elif name == "Dirichlet":
        p = ng([0.7, 3.0, 1.5], requires_grad=True)
        make = lambda M, c: M.Dirichlet(c)  # noqa: E731
    else:
        p = ng([5.0, 9.0], requires_grad=True)
        make = lambda M, c: M.StudentT(c, 0.5, 2.0)  # noqa: E731
    x = make(D, p).rsample((n,))
    assert x.requires_grad
    (x ** 2).mean(0).sum().backward()
    tp = th(p.detach().numpy(), requires_grad=True)
    td = make(TD, tp)
    (td.variance + td.mean ** 2).sum().backward()
    close(p.grad, tp.grad, rtol=0.08, atol=0.02)


# ---------------------------------------------------------------- gradcheck (float64)
GRADCHECK = {
    "Normal": (lambda a, b: D.Normal(a, b.exp()), (4, 3)),
    "Laplace": (lambda a, b: D.Laplace(a, b.exp()), (4, 3)),
    "Cauchy": (lambda a, b: D.Cauchy(a, b.exp()), (4, 3)),
    "LogNormal": (lambda a, b: D.LogNormal(a, b.exp()), (4, 3)),
    "Gamma": (lambda a, b: D.Gamma(a.exp(), b.exp()), (4, 3)),
    "Beta": (lambda a, b: D.Beta(a.exp(), b.exp()), (4, 3)),
    "StudentT": (lambda a, b: D.StudentT(a.exp() + 1, a, b.exp()), (4, 3)),
    "Bernoulli": (lambda a, b: D.Bernoulli(logits=a * b), (4, 3)),
    "Binomial": (lambda a, b: D.Binomial(9, logits=a * b), (4, 3)),
    "Poisson": (lambda a, b: D.Poisson(a.exp()), (4, 3)),
    "Categorical": (lambda a, b: D.Categorical(logits=a.unsqueeze(-1) * b), (4, 3)),
    "Dirichlet": (lambda a, b: D.Dirichlet((a + b).exp()), (4, 3)),
    "MultivariateNormal": (lambda a, b: D.MultivariateNormal(
        a, scale_tril=(b.exp().diag_embed() + 0.3 * a.unsqueeze(-1) * b.unsqueeze(-2)).tril()),
        (4, 3)),
    "RelaxedBernoulli": (lambda a, b: D.RelaxedBernoulli(b.exp()[0], logits=a), (4, 3)),
    "Mixture": (lambda a, b: D.MixtureSameFamily(D.Categorical(logits=a),
                                                 D.Normal(b, a.exp())), (4,)),
}


@pytest.mark.parametrize("name", list(GRADCHECK))
def test_gradcheck_log_prob_entropy_and_rsample(name):
    make, shape = GRADCHECK[name]
    a = ng(RNG.normal(size=3) * 0.5, requires_grad=True)
    b = ng(RNG.normal(size=3) * 0.5, requires_grad=True)
    numgrad.manual_seed(5)
    with numgrad.no_grad():
        value = make(a, b).sample(shape[:1])

    assert numgrad.autograd.gradcheck(lambda a, b: make(a, b).log_prob(value), (a, b))
    try:
        make(a, b).entropy()
    except NotImplementedError:
        pass
    else:
        assert numgrad.autograd.gradcheck(lambda a, b: make(a, b).entropy(), (a, b))
    if make(a, b).has_rsample and name not in ("Gamma", "Beta", "StudentT", "Dirichlet"):

        def draw(a, b):
            numgrad.manual_seed(11)  # (the same noise at every evaluation)
            return make(a, b).rsample((2,))

        assert numgrad.autograd.gradcheck(draw, (a, b))


def test_func_transforms_and_compile_see_the_graph():
    import numgrad.func as F

    value = ng([0.3, 1.0])
    loc = ng([0.1, 0.2])
    grad = F.grad(lambda m: D.Normal(m, 2.0).log_prob(value).sum())(loc)
    close(grad, (value - loc).numpy() / 4.0)
    logits = numgrad.tensor(RNG.normal(size=(4, 3)))
    # (argument validation works under vmap, over the whole batch, as PyTorch's does)
    batched = F.vmap(lambda x: D.Categorical(logits=x).entropy())(logits)
    close(batched, TD.Categorical(logits=th(logits.numpy())).entropy())
    scales = RNG.uniform(0.5, 2.0, size=4)
    close(F.vmap(lambda s: D.Normal(0.3, s).log_prob(ng(0.5)))(ng(scales)),
          torch.func.vmap(lambda s: TD.Normal(0.3, s).log_prob(th(0.5)))(th(scales)))
    with pytest.raises(ValueError, match="to satisfy the constraint GreaterThan"):
        F.vmap(lambda s: D.Normal(0.0, s).log_prob(ng(0.5)))(ng([1.0, -1.0]))
    # rsample under vmap: PyTorch's randomness rules for its in-place fill of fresh noise
    draw = lambda m: D.Normal(m, 1.0).rsample((2,))  # noqa: E731
    with pytest.raises(RuntimeError, match="randomness error mode"):
        F.vmap(draw)(ng([0.0, 10.0]))
    with pytest.raises(RuntimeError, match="Cannot ask for different inplace randomness"):
        F.vmap(draw, randomness="different")(ng([0.0, 10.0]))
    same = F.vmap(draw, randomness="same")(ng([0.0, 10.0]))
    close(same[1] - same[0], np.full(2, 10.0))
    # the rejection samplers under vmap (randomness="different"), as PyTorch's gamma sampler
    numgrad.manual_seed(6)
    rates = ng([1.0, 30.0, 400.0])
    gammas = F.vmap(lambda a: D.Gamma(a, 1.0).rsample((2000,)), randomness="different")(rates)
    assert tuple(gammas.shape) == (3, 2000)
    np.testing.assert_allclose(gammas.numpy().mean(1), rates.numpy(), rtol=0.08)
    counts = F.vmap(lambda r: D.Poisson(r).sample((2000,)), randomness="different")(rates)
    np.testing.assert_allclose(counts.numpy().mean(1), rates.numpy(), rtol=0.08)
    draws = F.vmap(lambda p: D.Binomial(ng(50.0), p).sample((2000,)),
                   randomness="different")(ng([0.1, 0.5, 0.9]))
    np.testing.assert_allclose(draws.numpy().mean(1), [5.0, 25.0, 45.0], rtol=0.05)
    close(F.vmap(lambda p: D.Binomial(ng(50.0), p).log_prob(ng(3.0)))(ng([0.1, 0.5, 0.9])),
          torch.func.vmap(lambda p: TD.Binomial(th(50.0), p).log_prob(th(3.0)))(
              th([0.1, 0.5, 0.9])))

    @numgrad.compile
    def nll(m, s):
        return -D.Normal(m, s, validate_args=False).log_prob(value).sum()

    for shift in (0.0, 0.5):
        m = ng([0.1 + shift, 0.2])
        tm = th([0.1 + shift, 0.2])
        close(nll(m, ng([1.5, 2.0])), -TD.Normal(tm, th([1.5, 2.0])).log_prob(th([0.3, 1.0]))
              .sum())

    @numgrad.compile
    def energy(m, s):  # (a compiled rsample draws what eager draws, and advances the seed)
        return (D.Normal(m, s, validate_args=False).rsample((3,)) ** 2).sum()

    m, s = ng([0.0, 1.0], requires_grad=True), ng([1.0, 2.0], requires_grad=True)
    numgrad.manual_seed(0)
    compiled = [energy(m, s) for _ in range(3)]
    numgrad.manual_seed(0)
    eager = [(D.Normal(m, s).rsample((3,)) ** 2).sum() for _ in range(3)]
    for a, b in zip(compiled, eager):
        close(a, b, rtol=1e-12, atol=0)
    ga = numgrad.autograd.grad(compiled[1], (m, s))
    gb = numgrad.autograd.grad(eager[1], (m, s))
    for a, b in zip(ga, gb):
        close(a, b, rtol=1e-12, atol=0)


# ---------------------------------------------------------------- validation, PyTorch's words
def _message(fn):
    try:
        fn()
    except (ValueError, NotImplementedError, TypeError, AssertionError) as e:
        return type(e), " ".join(_spelled(str(e)).split())
    raise AssertionError("no error raised")


VALIDATION = {
    "negative scale": lambda M, c: M.Normal(c([0.0, 1.0]), c([1.0, -1.0]), validate_args=True),
    "probs and logits": lambda M, c: M.Bernoulli(probs=c(0.3), logits=c(0.1)),
    "neither": lambda M, c: M.Categorical(),
    "probs > 1": lambda M, c: M.Bernoulli(c([0.3, 1.5]), validate_args=True),
    "Uniform low >= high": lambda M, c: M.Uniform(c([0.0, 2.0]), c([1.0, 1.0]),
                                                  validate_args=True),
    "outside the support": lambda M, c: M.Exponential(c([1.0]), validate_args=True).log_prob(
        c([-1.0])),
    "not a tensor": lambda M, c: M.Normal(c(0.0), c(1.0), validate_args=True).log_prob(0.5),
    "event shape": lambda M, c: M.MultivariateNormal(c([0.0, 0.0]), c(np.eye(2)),
                                                     validate_args=True).log_prob(c([1.0, 2, 3])),
    "not broadcastable": lambda M, c: M.Normal(c([0.0, 1.0]), c([1.0, 1.0]),
                                               validate_args=True).log_prob(c([1.0, 2, 3])),
    "categorical value": lambda M, c: M.Categorical(c([0.2, 0.8]), validate_args=True).log_prob(
        c(np.array(2), np.int64)),
    "mvn two matrices": lambda M, c: M.MultivariateNormal(c([0.0, 0.0]), c(np.eye(2)),
                                                          scale_tril=c(np.eye(2))),
    "mvn not pd": lambda M, c: M.MultivariateNormal(c([0.0, 0.0]), c([[1.0, 2], [2, 1]]),
                                                    validate_args=True),
    "loc 0-dim": lambda M, c: M.MultivariateNormal(c(0.0), c(np.eye(2))),
    "independent ndims": lambda M, c: M.Independent(M.Normal(c([0.0]), c([1.0])), 2),
    "mixture": lambda M, c: M.MixtureSameFamily(M.Categorical(c([0.5, 0.5])),
                                                M.Normal(c([0.0, 1, 2]), c([1.0, 1, 1]))),
    "dirichlet support": lambda M, c: M.Dirichlet(c([1.0, 2.0]), validate_args=True).log_prob(
        c([0.5, 0.6])),
    "binomial count": lambda M, c: M.Binomial(c([2.5]), c([0.5]), validate_args=True),
    "kl unregistered": lambda M, c: M.kl_divergence(M.StudentT(3.0), M.Normal(0.0, 1.0)),
    "kl exponential families": lambda M, c: M.kl.kl_divergence.__globals__[
        "_kl_expfamily_expfamily"](M.Poisson(1.0), M.Gamma(1.0, 1.0)),
    "transforms": lambda M, c: M.TransformedDistribution(M.Normal(0.0, 1.0), "exp"),
    "cache_size": lambda M, c: M.ExpTransform(cache_size=2),
    "geometric probs 0": lambda M, c: M.Geometric(c([0.0, 0.5]), validate_args=True),
    "categorical 0-dim": lambda M, c: M.Categorical(c(0.5)),
    "dirichlet 0-dim": lambda M, c: M.Dirichlet(c(0.5)),
    "multinomial count": lambda M, c: M.Multinomial(c(3.0), c([0.5, 0.5])),
    "multinomial support": lambda M, c: M.Multinomial(3, c([0.5, 0.5]),
                                                      validate_args=True).log_prob(c([2.0, 2.0])),
    "lkj dim": lambda M, c: M.LKJCholesky(1),
    "wishart df": lambda M, c: M.Wishart(c([1.5]), c(np.eye(3))),
    "wishart two": lambda M, c: M.Wishart(4.0, c(np.eye(2)), scale_tril=c(np.eye(2))),
    "lowrank shape": lambda M, c: M.LowRankMultivariateNormal(c([0.0, 0.0]), c(np.ones((3, 1))),
                                                              c([1.0, 1.0])),
    "lowrank diag": lambda M, c: M.LowRankMultivariateNormal(c([0.0, 0.0]), c(np.ones((2, 1))),
                                                             c([1.0, 1.0, 1.0])),
    "poisson negative": lambda M, c: M.Poisson(c([-1.0]), validate_args=True),
    "gamma value": lambda M, c: M.Gamma(c([1.0]), c([1.0]), validate_args=True).log_prob(
        c([-1.0])),
    "beta value": lambda M, c: M.Beta(c([1.0]), c([1.0]), validate_args=True).log_prob(
        c([1.5])),
    "student df": lambda M, c: M.StudentT(c([-1.0]), validate_args=True),
    "relaxed temperature": lambda M, c: M.RelaxedBernoulli(c(1.0), probs=c([0.5]),
                                                           logits=c([0.0])),
    "one-hot value": lambda M, c: M.OneHotCategorical(c([0.5, 0.5]),
                                                      validate_args=True).log_prob(c([1.0, 1.0])),
    "von mises concentration": lambda M, c: M.VonMises(c([0.0]), c([-1.0]), validate_args=True),
    "pareto support": lambda M, c: M.Pareto(c([2.0]), c([1.0]), validate_args=True).log_prob(
        c([1.0])),
    "independent value": lambda M, c: M.Independent(
        M.Normal(c([0.0, 0.0]), c([1.0, 1.0])), 1, validate_args=True).log_prob(
        c([1.0, 2.0, 3.0])),
    "transformed support": lambda M, c: M.LogNormal(c([0.0]), c([1.0]),
                                                    validate_args=True).log_prob(c([-1.0])),
    "mixture value": lambda M, c: M.MixtureSameFamily(
        M.Categorical(c([0.5, 0.5])), M.Gamma(c([1.0, 2.0]), c([1.0, 1.0])),
        validate_args=True).log_prob(c(-1.0)),
}


@pytest.mark.parametrize("case", list(VALIDATION))
def test_validation_errors_in_pytorchs_words(case):
    make = VALIDATION[case]
    ours = _message(lambda: make(D, lambda a, d=np.float64: ng(a, d)))
    theirs = _message(lambda: make(TD, lambda a, d=np.float64: th(a, d)))
    assert ours == theirs


def test_default_validation_switch():
    assert D.Distribution._validate_args is TD.Distribution._validate_args
    try:
        D.Distribution.set_default_validate_args(False)
        D.Normal(0.0, -1.0)  # (not checked)
        assert D.Normal(0.0, 1.0, validate_args=True)._validate_args
        D.Distribution.set_default_validate_args(True)
        with pytest.raises(ValueError, match="to satisfy the constraint GreaterThan"):
            D.Normal(0.0, -1.0)
        with pytest.raises(ValueError):
            D.Distribution.set_default_validate_args(2)
    finally:
        D.Distribution.set_default_validate_args(True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        D.Normal(0.0, -1.0, validate_args=False).log_prob(ng(0.5))


# ---------------------------------------------------------------- draws: rough statistics
STATS = {
    "Normal": lambda M, c: M.Normal(c([0.5, -2.0]), c([1.0, 3.0])),
    "Bernoulli": lambda M, c: M.Bernoulli(c([0.1, 0.7])),
    "Categorical": lambda M, c: M.Categorical(c([[0.1, 0.6, 0.3], [0.5, 0.25, 0.25]])),
    "OneHotCategorical": lambda M, c: M.OneHotCategorical(c([0.1, 0.6, 0.3])),
    "Uniform": lambda M, c: M.Uniform(c([0.0, -3.0]), c([1.0, 5.0])),
    "Laplace": lambda M, c: M.Laplace(c([0.5, -2.0]), c([1.0, 3.0])),
    "Exponential": lambda M, c: M.Exponential(c([0.5, 4.0])),
    "LogNormal": lambda M, c: M.LogNormal(c([0.0, 0.5]), c([0.3, 0.5])),
    "Gamma": lambda M, c: M.Gamma(c([0.2, 1.0, 4.0, 80.0]), c([1.0, 2.0, 0.5, 3.0])),
    "Beta": lambda M, c: M.Beta(c([0.3, 2.0, 5.0]), c([0.5, 2.0, 1.0])),
    "Dirichlet": lambda M, c: M.Dirichlet(c([0.3, 2.0, 5.0])),
    "Poisson": lambda M, c: M.Poisson(c([0.0, 0.3, 4.0, 25.0, 400.0])),
    "Binomial": lambda M, c: M.Binomial(c([0.0, 5.0, 30.0, 200.0, 50.0]),
                                        c([0.3, 0.9, 0.5, 0.2, 1.0])),
    "StudentT": lambda M, c: M.StudentT(c([6.0, 10.0]), c([0.5, -1.0]), c([1.0, 2.0])),
    "MultivariateNormal": lambda M, c: M.MultivariateNormal(c([1.0, -1.0]),
                                                            c([[2.0, 0.6], [0.6, 1.0]])),
    "MixtureSameFamily": lambda M, c: M.MixtureSameFamily(M.Categorical(c([0.3, 0.7])),
                                                          M.Normal(c([-2.0, 3.0]), c([0.5, 1.0]))),
    "RelaxedBernoulli": lambda M, c: M.RelaxedBernoulli(c(0.5), c([0.2, 0.8])),
    "Geometric": lambda M, c: M.Geometric(c([0.2, 0.7])),
    "Gumbel": lambda M, c: M.Gumbel(c([0.5, -2.0]), c([1.0, 3.0])),
    "HalfNormal": lambda M, c: M.HalfNormal(c([0.5, 2.0])),
    "Weibull": lambda M, c: M.Weibull(c([0.5, 2.0]), c([1.5, 3.0])),
    "InverseGamma": lambda M, c: M.InverseGamma(c([6.0, 9.0]), c([1.0, 3.0])),
    "NegativeBinomial": lambda M, c: M.NegativeBinomial(c([3.0, 10.0]), c([0.3, 0.6])),
    "Multinomial": lambda M, c: M.Multinomial(7, c([0.2, 0.5, 0.3])),
    "Wishart": lambda M, c: M.Wishart(c(6.0), c([[2.0, 0.6], [0.6, 1.0]])),
    "FisherSnedecor": lambda M, c: M.FisherSnedecor(c([5.0, 10.0]), c([12.0, 20.0])),
    "ContinuousBernoulli": lambda M, c: M.ContinuousBernoulli(c([0.2, 0.4995, 0.9])),
    "Kumaraswamy": lambda M, c: M.Kumaraswamy(c([0.7, 2.0]), c([1.5, 3.0])),
    "LowRankMultivariateNormal": lambda M, c: M.LowRankMultivariateNormal(
        c([1.0, -1.0]), c([[1.0], [0.5]]), c([0.5, 1.0])),
}


def test_generalized_pareto_matches_pytorch():
    """(In float32: PyTorch's GeneralizedPareto compares its concentration with a float32 zero,
    which fails for float64 parameters.)"""
    f32 = np.float32
    args = (RNG_P["loc"], RNG_P["scale"], np.array([-0.3, 0.0, 0.4]))
    ours = D.GeneralizedPareto(*[ng(a, f32, requires_grad=True) for a in args])
    theirs = TD.GeneralizedPareto(*[th(a, f32, requires_grad=True) for a in args])
    v = RNG_P["loc"] + RNG.uniform(0.05, 1.0, size=(4, 3)) * RNG_P["scale"]
    u = RNG.uniform(0.05, 0.95, size=(4, 3))
    for fn in (lambda d, c: d.log_prob(c(v, f32)), lambda d, c: d.cdf(c(v, f32)),
               lambda d, c: d.icdf(c(u, f32)), lambda d, c: d.entropy(),
               lambda d, c: d.mean, lambda d, c: d.variance, lambda d, c: d.mode):
        close(fn(ours, ng), fn(theirs, th), rtol=2e-6, atol=1e-6)
    assert repr(ours.support) == _spelled(repr(theirs.support))
    assert tuple(ours.expand((2, 3)).sample((5,)).shape) == (5, 2, 3)
    numgrad.manual_seed(0)
    x = ours.rsample((1000,))
    assert bool(ours.support.check(x).all())
    a = [p for p in (ours.loc, ours.scale, ours.concentration)]
    ta = [p for p in (theirs.loc, theirs.scale, theirs.concentration)]
    ga = numgrad.autograd.grad(ours.log_prob(ng(v, f32)).sum(), a)
    gb = torch.autograd.grad(theirs.log_prob(th(v, f32)).sum(), ta)
    for x, y in zip(ga, gb):
        close(x, y, rtol=1e-5, atol=1e-5)


def test_von_mises_draws():
    numgrad.manual_seed(4)
    loc, kappa = np.array([0.5, -2.5, 3.0]), np.array([0.3, 2.0, 20.0])
    x = D.VonMises(ng(loc), ng(kappa)).sample((20000,)).numpy()
    assert x.shape == (20000, 3) and np.all(np.abs(x) <= np.pi)
    # the circular mean direction and mean resultant length I1(κ)/I0(κ)
    resultant = np.exp(1j * x).mean(0)
    np.testing.assert_allclose(np.angle(resultant * np.exp(-1j * loc)), 0, atol=0.06)
    expected = 1 - TD.VonMises(th(loc), th(kappa)).variance.numpy()
    np.testing.assert_allclose(np.abs(resultant), expected, atol=0.02)


@pytest.mark.parametrize("name", list(STATS))
def test_sample_statistics(name):
    numgrad.manual_seed(2024)
    n = 20000
    ours = STATS[name](D, ng)
    x = ours.sample((n,))
    assert tuple(x.shape) == (n,) + tuple(ours.batch_shape) + tuple(ours.event_shape)
    assert bool(ours.support.check(x).all())
    x = x.numpy().astype(np.float64)
    if name == "RelaxedBernoulli":  # (no closed-form mean: compare with PyTorch's own draws)
        torch.manual_seed(0)
        ref = STATS[name](TD, th).sample((n,)).numpy()
        np.testing.assert_allclose(x.mean(0), ref.mean(0), atol=0.02)
        return
    theirs = STATS[name](TD, th)
    mean, var = theirs.mean.numpy(), theirs.variance.numpy()
    if name == "MultivariateNormal":
        np.testing.assert_allclose(np.cov(x.T), theirs.covariance_matrix.numpy(), atol=0.08)
    if name == "Categorical":
        freq = np.stack([(x == k).mean(0) for k in range(3)], -1)
        np.testing.assert_allclose(freq, theirs.probs.numpy(), atol=0.015)
        return
    se = np.sqrt(var / n)
    assert np.all(np.abs(x.mean(0) - mean) <= 5 * se + 1e-12), (x.mean(0), mean)
    np.testing.assert_allclose(x.var(0), var, rtol=0.1, atol=1e-12)


def test_seeded_draws_repeat_and_torch_spelling():
    numgrad.manual_seed(7)
    a = D.Gamma(ng([0.5, 3.0]), 1.0).sample((5,))
    numgrad.manual_seed(7)
    b = D.Gamma(ng([0.5, 3.0]), 1.0).sample((5,))
    close(a, b, rtol=0, atol=0)
    import subprocess
    import sys

    code = ("import numgrad; numgrad.install_as_torch(quiet=True)\n"
            "import torch\nfrom torch.distributions import Normal, kl_divergence\n"
            "import torch.distributions.constraints as C\n"
            "assert torch.distributions is numgrad.distributions and C.positive.lower_bound == 0\n"
            "print(float(kl_divergence(Normal(0.0, 1.0), Normal(1.0, 1.0))))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "0.5"


# ---------------------------------------------------------------- transforms
TRANSFORMS = {
    "Exp": (lambda M, c: M.ExpTransform(), lambda: RNG.normal(size=(4, 3))),
    "Affine": (lambda M, c: M.AffineTransform(c(RNG_P["loc"]), c(-RNG_P["scale"])),
               lambda: RNG.normal(size=(4, 3))),
    "AffineNumbers": (lambda M, c: M.AffineTransform(0.5, -2.0), lambda: RNG.normal(size=(4, 3))),
    "AffineEvent": (lambda M, c: M.AffineTransform(c(RNG_P["loc"]), c(RNG_P["scale"]),
                                                   event_dim=1), lambda: RNG.normal(size=(4, 3))),
    "Sigmoid": (lambda M, c: M.SigmoidTransform(), lambda: RNG.normal(size=(4, 3)) * 3),
    "Tanh": (lambda M, c: M.TanhTransform(), lambda: RNG.normal(size=(4, 3)) * 2),
    "Softplus": (lambda M, c: M.SoftplusTransform(), lambda: RNG.normal(size=(4, 3)) * 3),
    "Power": (lambda M, c: M.PowerTransform(c(RNG_P["scale"])), lambda: _pos(4, 3)),
    "Abs": (lambda M, c: M.AbsTransform(), lambda: RNG.normal(size=(4, 3))),
    "Softmax": (lambda M, c: M.SoftmaxTransform(), lambda: RNG.normal(size=(4, 3))),
    "StickBreaking": (lambda M, c: M.StickBreakingTransform(), lambda: RNG.normal(size=(4, 3))),
    "Compose": (lambda M, c: M.ComposeTransform([M.AffineTransform(0.3, 2.0), M.TanhTransform(),
                                                 M.AffineTransform(1.0, 0.5)]),
                lambda: RNG.normal(size=(4, 3))),
    "ComposeEvent": (lambda M, c: M.ComposeTransform([M.ExpTransform(),
                                                      M.StickBreakingTransform()]),
                     lambda: RNG.normal(size=(4, 3))),
    "Independent": (lambda M, c: M.IndependentTransform(M.SigmoidTransform(), 1),
                    lambda: RNG.normal(size=(4, 3))),
    "Reshape": (lambda M, c: M.ReshapeTransform((3,), (3, 1)), lambda: RNG.normal(size=(4, 3))),
    "Inverse": (lambda M, c: M.ExpTransform().inv, lambda: _pos(4, 3)),
    "Cat": (lambda M, c: M.CatTransform([M.ExpTransform(), M.AffineTransform(1.0, 2.0),
                                         M.SigmoidTransform()], dim=-1, lengths=[1, 1, 1]),
            lambda: RNG.normal(size=(4, 3))),
    "CatRows": (lambda M, c: M.CatTransform([M.ExpTransform(), M.TanhTransform()], dim=0,
                                            lengths=[1, 3]), lambda: RNG.normal(size=(4, 3))),
    "CorrCholesky": (lambda M, c: M.CorrCholeskyTransform(), lambda: RNG.normal(size=(4, 6))),
    "CumulativeDistribution": (lambda M, c: M.CumulativeDistributionTransform(
        (D if M is D else TD).Normal(c(RNG_P["loc"]), c(RNG_P["scale"]))),
        lambda: RNG.normal(size=(4, 3))),
    "Stack": (lambda M, c: M.StackTransform([M.ExpTransform(), M.AffineTransform(1.0, 2.0),
                                             M.SigmoidTransform()], dim=1),
              lambda: RNG.normal(size=(4, 3))),
}
MATRIX_TRANSFORMS = {
    "LowerCholesky": lambda M: M.LowerCholeskyTransform(),
    "PositiveDefinite": lambda M: M.PositiveDefiniteTransform(),
}


@pytest.mark.parametrize("name", list(MATRIX_TRANSFORMS))
def test_matrix_transforms_match_pytorch(name):
    ours, theirs = MATRIX_TRANSFORMS[name](D), MATRIX_TRANSFORMS[name](TD.transforms)
    x = RNG.normal(size=(2, 3, 3))
    y, ty = ours(ng(x)), theirs(th(x))
    close(y, ty, rtol=1e-10, atol=1e-12)
    close(ours.inv(y), theirs.inv(ty), rtol=1e-8, atol=1e-10)
    assert bool(ours.codomain.check(y).all())
    assert repr(ours.codomain) == repr(theirs.codomain)


REGISTRY_CONSTRAINTS = {
    "real": lambda M, c: M.constraints.real,
    "positive": lambda M, c: M.constraints.positive,
    "nonnegative": lambda M, c: M.constraints.nonnegative,
    "greater_than": lambda M, c: M.constraints.greater_than(c(RNG_P["loc"])),
    "greater_than_eq": lambda M, c: M.constraints.greater_than_eq(2.5),
    "less_than": lambda M, c: M.constraints.less_than(c(RNG_P["loc"])),
    "unit_interval": lambda M, c: M.constraints.unit_interval,
    "interval": lambda M, c: M.constraints.interval(c(RNG_P["loc"]), c(RNG_P["loc"] + 2)),
    "half_open_interval": lambda M, c: M.constraints.half_open_interval(-1.0, 3.0),
    "simplex": lambda M, c: M.constraints.simplex,
    "independent": lambda M, c: M.constraints.independent(M.constraints.positive, 1),
    "cat": lambda M, c: M.constraints.cat([M.constraints.positive, M.constraints.real,
                                           M.constraints.unit_interval], dim=-1),
    "corr_cholesky": lambda M, c: M.constraints.corr_cholesky,
    "stack": lambda M, c: M.constraints.stack([M.constraints.positive, M.constraints.real,
                                               M.constraints.unit_interval], dim=-1),
}


@pytest.mark.parametrize("registry", ["biject_to", "transform_to"])
@pytest.mark.parametrize("name", list(REGISTRY_CONSTRAINTS))
def test_constraint_registry_matches_pytorch(name, registry):
    constraint = REGISTRY_CONSTRAINTS[name](D, ng)
    t_constraint = REGISTRY_CONSTRAINTS[name](TD, th)
    ours, theirs = getattr(D, registry)(constraint), getattr(TD, registry)(t_constraint)
    assert type(ours).__name__ == type(theirs).__name__
    x = RNG.normal(size=(4, 3))
    y, ty = ours(ng(x)), theirs(th(x))
    close(y, ty, rtol=1e-10, atol=1e-12)
    assert bool(constraint.check(y).all())
    if name != "simplex" or registry == "biject_to":
        close(ours.inv(y), theirs.inv(ty), rtol=1e-7, atol=1e-9)
        close(ours.log_abs_det_jacobian(ng(x), y), theirs.log_abs_det_jacobian(th(x), ty),
              rtol=1e-8, atol=1e-10)


def test_constraint_registry_errors_and_matrices():
    with pytest.raises(NotImplementedError, match="Cannot transform _Boolean constraints"):
        D.biject_to(D.constraints.boolean)
    with pytest.raises(TypeError, match="Expected constraint to be either a Constraint"):
        D.biject_to.register(int, lambda c: None)
    x = RNG.normal(size=(3, 3))
    close(D.transform_to(D.constraints.positive_definite)(ng(x)),
          TD.transform_to(TD.constraints.positive_definite)(th(x)), rtol=1e-10)
    close(D.transform_to(D.constraints.lower_cholesky)(ng(x)),
          TD.transform_to(TD.constraints.lower_cholesky)(th(x)), rtol=1e-10)


@pytest.mark.parametrize("name", list(TRANSFORMS))
def test_transforms_match_pytorch(name):
    make, values = TRANSFORMS[name]
    ours, theirs = make(D, ng), make(TD.transforms, th)
    x = values()
    y, ty = ours(ng(x)), theirs(th(x))
    close(y, ty, rtol=1e-10, atol=1e-12)
    if name not in ("Abs", "Softmax"):
        close(ours.inv(y), theirs.inv(ty), rtol=1e-8, atol=1e-10)
        close(ours.log_abs_det_jacobian(ng(x), y), theirs.log_abs_det_jacobian(th(x), ty),
              rtol=1e-8, atol=1e-10)
    assert ours.bijective == theirs.bijective
    assert repr(ours.domain) == _spelled(repr(theirs.domain))
    assert repr(ours.codomain) == _spelled(repr(theirs.codomain))
    assert ours.inv.inv is ours
    shape = (4, 3)
    assert tuple(ours.forward_shape(shape)) == tuple(theirs.forward_shape(shape))
    out_shape = tuple(theirs.forward_shape(shape))
    assert tuple(ours.inverse_shape(out_shape)) == tuple(theirs.inverse_shape(out_shape))
    cached = ours.with_cache(1)
    xt = ng(x)
    assert cached.inv(cached(xt)) is xt


@pytest.mark.parametrize("name", ["Normal", "Bernoulli", "Exponential", "Gamma", "Beta",
                                  "Dirichlet"])
def test_exponential_family_entropy_by_autograd(name):
    ours, theirs, _, _ = _pair(name)
    a, b = _both(lambda: D.ExponentialFamily.entropy(ours),
                 lambda: TD.ExponentialFamily.entropy(theirs))
    if b is not None:  # (Beta and Dirichlet: no carrier measure in PyTorch either)
        close(a, theirs.entropy(), rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("name", list(CASES))
def test_parameter_gradients_match_pytorch(name):
    """The gradients of log_prob + entropy (+ mean, where finite) in every tensor parameter,
    against PyTorch's."""
    make, values, _ = CASES[name]
    ours_leaves, theirs_leaves = [], []

    def leaf(a, convert, leaves):
        t = convert(a, requires_grad=True)
        leaves.append(t)
        return t

    ours = make(D, lambda a: leaf(a, ng, ours_leaves))
    theirs = make(TD, lambda a: leaf(a, th, theirs_leaves))
    assert repr(ours) == _spelled(repr(theirs))
    v = values()
    dtype = np.int64 if v.dtype == np.int64 else np.float64

    def objective(dist, convert, module):
        total = dist.log_prob(convert(v, dtype)).sum()
        try:
            total = total + dist.entropy().sum()
        except NotImplementedError:
            pass
        try:
            mean = dist.mean
        except NotImplementedError:
            return total
        finite = module.isfinite(mean)
        return total + module.where(finite, mean, module.zeros_like(mean)).sum()

    ours_total = objective(ours, ng, numgrad)
    theirs_total = objective(theirs, th, torch)
    close(ours_total, theirs_total, rtol=1e-6, atol=ATOL.get(name, 1e-9))
    ours_grads = numgrad.autograd.grad(ours_total, ours_leaves, allow_unused=True)
    theirs_grads = torch.autograd.grad(theirs_total, theirs_leaves, allow_unused=True)
    for a, b in zip(ours_grads, theirs_grads):
        if b is None:
            assert a is None or not np.any(a.numpy())
        else:
            close(a, b, rtol=1e-6, atol=max(ATOL.get(name, 1e-9), 1e-8))


# every pair PyTorch registers, each family at fixed parameters (batch shape (3,))
KL_FAMILIES = {
    "Bernoulli": lambda M, c: M.Bernoulli(c([0.2, 0.6, 0.9])),
    "Beta": lambda M, c: M.Beta(c([0.7, 2.0, 3.5]), c([1.5, 0.8, 2.5])),
    "Binomial": lambda M, c: M.Binomial(c([5.0, 5.0, 5.0]), c([0.2, 0.6, 0.9])),
    "Categorical": lambda M, c: M.Categorical(c(RNG_P["simplex"])),
    "Cauchy": lambda M, c: M.Cauchy(c([0.3, -1.0, 2.0]), c([0.5, 1.0, 2.0])),
    "ContinuousBernoulli": lambda M, c: M.ContinuousBernoulli(c([0.2, 0.4995, 0.9])),
    "Dirichlet": lambda M, c: M.Dirichlet(c(RNG_P["conc"])),
    "Exponential": lambda M, c: M.Exponential(c([0.5, 1.3, 2.0])),
    "Gamma": lambda M, c: M.Gamma(c([0.7, 2.0, 3.5]), c([1.5, 0.8, 2.5])),
    "Geometric": lambda M, c: M.Geometric(c([0.2, 0.6, 0.9])),
    "Gumbel": lambda M, c: M.Gumbel(c([0.3, -1.0, 2.0]), c([0.5, 1.0, 2.0])),
    "HalfNormal": lambda M, c: M.HalfNormal(c([0.5, 1.0, 2.0])),
    "Laplace": lambda M, c: M.Laplace(c([0.3, -1.0, 2.0]), c([0.5, 1.0, 2.0])),
    "LowRankMultivariateNormal": lambda M, c: M.LowRankMultivariateNormal(
        c(RNG_P["mvn_loc"]), c(RNG_P["W"]), c(RNG_P["mvn_scale"])),
    "MultivariateNormal": lambda M, c: M.MultivariateNormal(c(RNG_P["mvn_loc"][::-1]),
                                                            covariance_matrix=c(RNG_P["spd"])),
    "Normal": lambda M, c: M.Normal(c([0.3, -1.0, 2.0]), c([0.5, 1.0, 2.0])),
    "OneHotCategorical": lambda M, c: M.OneHotCategorical(c(RNG_P["simplex"])),
    "Pareto": lambda M, c: M.Pareto(c([0.5, 1.0, 2.0]), c([0.7, 1.5, 3.5])),
    "Poisson": lambda M, c: M.Poisson(c([0.5, 1.3, 2.0])),
    "Uniform": lambda M, c: M.Uniform(c([0.1, 0.3, 1.5]), c([0.6, 2.0, 4.0])),
}
KL_SECOND = {  # (a second instance of the family, for pairs of one family)
    "Normal": lambda M, c: M.Normal(c([-0.4, 0.5, 1.0]), c([1.5, 0.7, 1.0])),
    "Uniform": lambda M, c: M.Uniform(c([0.0, 0.2, 1.0]), c([0.8, 2.5, 5.0])),
    "Pareto": lambda M, c: M.Pareto(c([0.4, 1.0, 2.5]), c([1.5, 0.9, 2.0])),
}
_TORCH_KL_PAIRS = sorted((p.__name__, q.__name__) for p, q in TD.kl._KL_REGISTRY
                         if p.__name__ in KL_FAMILIES and q.__name__ in KL_FAMILIES)


@pytest.mark.parametrize("pair", _TORCH_KL_PAIRS, ids=lambda p: f"{p[0]}-{p[1]}")
def test_every_pytorch_kl_pair(pair):
    pn, qn = pair
    make_q = KL_SECOND.get(qn, KL_FAMILIES[qn]) if pn == qn else KL_FAMILIES[qn]
    p, q = KL_FAMILIES[pn](D, ng), make_q(D, ng)
    tp, tq = KL_FAMILIES[pn](TD, th), make_q(TD, th)
    close(D.kl_divergence(p, q), TD.kl_divergence(tp, tq), rtol=1e-6, atol=1e-9)


def test_the_kl_registry_holds_pytorchs_pairs():
    ours = {(p.__name__, q.__name__) for p, q in D.kl._KL_REGISTRY}
    theirs = {(p.__name__, q.__name__) for p, q in TD.kl._KL_REGISTRY}
    assert theirs - ours == set()


def test_the_api_surface_is_pytorchs():
    for ours, theirs in ((D, TD), (D.transforms, TD.transforms),
                         (D.constraints, TD.constraints), (D.utils, TD.utils)):
        missing = [n for n in theirs.__all__ if not hasattr(ours, n)] if hasattr(
            theirs, "__all__") else []
        assert missing == [], (ours.__name__, missing)
    assert D.utils.euler_constant == TD.utils.euler_constant
    # and PyTorch's module paths: from torch.distributions.one_hot_categorical import ...
    import importlib
    import pkgutil

    for info in pkgutil.iter_modules(TD.__path__):
        ours = importlib.import_module(f"numgrad.distributions.{info.name}")
        theirs = importlib.import_module(f"torch.distributions.{info.name}")
        assert [n for n in getattr(theirs, "__all__", []) if not hasattr(ours, n)] == [], \
            info.name
    for name in ("Distribution", "ExponentialFamily", "TransformedDistribution"):
        assert hasattr(D, name)


def test_distributions_pickle():
    import pickle

    for d in (D.Normal(ng([0.0, 1.0]), ng([1.0, 2.0])), D.Categorical(logits=ng(RNG_P["logits"])),
              D.LogNormal(0.0, 1.0), D.MultivariateNormal(ng(RNG_P["mvn_loc"]), ng(RNG_P["spd"])),
              D.Bernoulli(probs=ng(0.3)), D.TransformedDistribution(
                  D.Normal(0.0, 1.0), [D.AffineTransform(1.0, 2.0), D.ExpTransform()])):
        d.entropy() if not isinstance(d, D.TransformedDistribution) else None  # (lazy
        # attributes made first, probs from logits and the like: they travel too)
        e = pickle.loads(pickle.dumps(d))
        assert type(e) is type(d) and e.batch_shape == d.batch_shape
        x = d.sample()
        close(e.log_prob(x), d.log_prob(x), rtol=0, atol=0)
