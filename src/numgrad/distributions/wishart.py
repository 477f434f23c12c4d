"""The Wishart distribution over positive-definite matrices."""
from __future__ import annotations

import math
import warnings
from numbers import Number

import numgrad

from . import constraints
from .exp_family import ExponentialFamily
from .chi2 import Chi2
from .multivariate_normal import _precision_to_scale_tril
from .utils import _size, lazy_property, vec_to_tril_matrix

__all__ = ["Wishart"]

_LOG_2 = math.log(2)


def _mvdigamma(x, p: int):
    """The multivariate digamma function: sum over i < p of digamma(x - i/2)."""
    if not bool((x > (p - 1) / 2).all()):
        raise AssertionError("Wrong domain for multivariate digamma function.")
    halves = numgrad.arange(p, dtype=x.dtype, device=x.device) / 2
    return numgrad.digamma(x.unsqueeze(-1) - halves.expand(tuple(x.shape) + (-1,))).sum(-1)


class Wishart(ExponentialFamily):
    """Wishart(df, Σ) over p x p positive-definite matrices, Σ given as ``covariance_matrix``,
    ``precision_matrix`` or ``scale_tril`` (exactly one); df > p - 1. Draws by the Bartlett
    decomposition (L A)(L A)^T, A lower triangular with sqrt-chi-squared diagonal and normal
    entries below it, reparameterised."""

    support = constraints.positive_definite
    has_rsample = True
    _mean_carrier_measure = 0

    @property
    def arg_constraints(self):
        return {"covariance_matrix": constraints.positive_definite,
                "precision_matrix": constraints.positive_definite,
                "scale_tril": constraints.lower_cholesky,
                "df": constraints.greater_than(self.event_shape[-1] - 1)}

    def __init__(self, df, covariance_matrix=None, precision_matrix=None, scale_tril=None,
                 validate_args=None):
        if ((covariance_matrix is not None) + (scale_tril is not None)
                + (precision_matrix is not None)) != 1:
            raise AssertionError("Exactly one of covariance_matrix or precision_matrix or "
                                 "scale_tril may be specified.")
        param = next(p for p in (covariance_matrix, precision_matrix, scale_tril)
                     if p is not None)
        if param.dim() < 2:
            raise ValueError("scale_tril must be at least two-dimensional, with optional "
                             "leading batch dimensions")
        if isinstance(df, Number):
            batch_shape = tuple(param.shape[:-2])
            self.df = numgrad.tensor(df, dtype=param.dtype, device=param.device)
        else:
            batch_shape = tuple(numgrad.broadcast_shapes(tuple(param.shape[:-2]),
                                                         tuple(df.shape)))
            self.df = df.expand(batch_shape)
        event_shape = tuple(param.shape[-2:])
        if bool((self.df <= event_shape[-1] - 1).any()):
            raise ValueError(f"Value of df={df} expected to be greater than ndim - 1 = "
                             f"{event_shape[-1] - 1}.")
        if scale_tril is not None:
            self.scale_tril = param.expand(batch_shape + (-1, -1))
        elif covariance_matrix is not None:
            self.covariance_matrix = param.expand(batch_shape + (-1, -1))
        else:
            self.precision_matrix = param.expand(batch_shape + (-1, -1))
        if bool((self.df < event_shape[-1]).any()):
            warnings.warn("Low df values detected. Singular samples are highly likely to occur "
                          "for ndim - 1 < df < ndim.", stacklevel=2)
        super().__init__(batch_shape, event_shape, validate_args=validate_args)
        self._batch_dims = [-(x + 1) for x in range(len(self._batch_shape))]
        if scale_tril is not None:
            self._unbroadcasted_scale_tril = scale_tril
        elif covariance_matrix is not None:
            self._unbroadcasted_scale_tril = numgrad.linalg.cholesky(covariance_matrix)
        else:
            self._unbroadcasted_scale_tril = _precision_to_scale_tril(precision_matrix)
        self._dist_chi2 = self._chi2(self.df, batch_shape)

    def _chi2(self, df, batch_shape):
        """The chi-squared laws of the Bartlett factor's squared diagonal: df - i, i < p."""
        steps = numgrad.arange(self._event_shape[-1], dtype=self._unbroadcasted_scale_tril.dtype,
                               device=self._unbroadcasted_scale_tril.device)
        return Chi2(df=df.unsqueeze(-1) - steps.expand(tuple(batch_shape) + (-1,)))

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Wishart, _instance)
        batch_shape = _size(batch_shape)
        cov_shape = tuple(batch_shape) + tuple(self.event_shape)
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril.expand(cov_shape)
        new.df = self.df.expand(batch_shape)
        new._batch_dims = [-(x + 1) for x in range(len(batch_shape))]
        for name in ("covariance_matrix", "scale_tril", "precision_matrix"):
            if name in self.__dict__:
                setattr(new, name, self.__dict__[name].expand(cov_shape))
        super(Wishart, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._dist_chi2 = new._chi2(new.df, batch_shape)
        new._validate_args = self._validate_args
        return new

    def _matrix_shape(self):
        return tuple(self._batch_shape) + tuple(self._event_shape)

    @lazy_property
    def scale_tril(self):
        return self._unbroadcasted_scale_tril.expand(self._matrix_shape())

    @lazy_property
    def covariance_matrix(self):
        L = self._unbroadcasted_scale_tril
        return (L @ L.transpose(-2, -1)).expand(self._matrix_shape())

    @lazy_property
    def precision_matrix(self):
        identity = numgrad.eye(self._event_shape[-1], device=self._unbroadcasted_scale_tril.device,
                               dtype=self._unbroadcasted_scale_tril.dtype)
        return numgrad.cholesky_solve(identity, self._unbroadcasted_scale_tril).expand(
            self._matrix_shape())

    def _df_matrix(self, df):
        return df.expand(tuple(self._batch_shape)).reshape(tuple(self._batch_shape) + (1, 1))

    @property
    def mean(self):
        return self._df_matrix(self.df) * self.covariance_matrix

    @property
    def mode(self):
        factor = self.df - self.covariance_matrix.shape[-1] - 1
        factor = numgrad.where(factor <= 0, numgrad.full_like(factor, math.nan), factor)
        return self._df_matrix(factor) * self.covariance_matrix

    @property
    def variance(self):
        V = self.covariance_matrix
        diag_V = V.diagonal(dim1=-2, dim2=-1)
        return self._df_matrix(self.df) * (V.pow(2) + diag_V.unsqueeze(-1) * diag_V.unsqueeze(-2))

    def _bartlett_sampling(self, sample_shape=()):
        p = self._event_shape[-1]
        eps = numgrad.finfo(self._unbroadcasted_scale_tril.dtype).eps
        diagonal = self._dist_chi2.rsample(sample_shape).sqrt().clamp(min=eps)
        below = numgrad.randn(tuple(sample_shape) + tuple(self._batch_shape) + (p * (p - 1) // 2,),
                              dtype=diagonal.dtype, device=diagonal.device)
        noise = diagonal.diag_embed(dim1=-2, dim2=-1) + vec_to_tril_matrix(below, diag=-1)
        chol = self._unbroadcasted_scale_tril @ noise
        return chol @ chol.transpose(-2, -1)

    def rsample(self, sample_shape=(), max_try_correction=None):
        """A reparameterised draw; draws that come out singular (possible for df near p - 1)
        are drawn again, up to ``max_try_correction`` (10) times, with a warning."""
        if max_try_correction is None:
            max_try_correction = 10
        sample_shape = _size(sample_shape)
        sample = self._bartlett_sampling(sample_shape)
        is_singular = ~self.support.check(sample)
        if self._batch_shape:
            is_singular = is_singular.amax(self._batch_dims)
        if bool(is_singular.any()):
            warnings.warn("Singular sample detected.", stacklevel=2)
            for _ in range(max_try_correction):
                redraw = self._bartlett_sampling(sample_shape)
                mask = is_singular.reshape(tuple(is_singular.shape)
                                           + (1,) * (sample.dim() - is_singular.dim()))
                sample = numgrad.where(mask, redraw, sample)
                is_singular = ~self.support.check(sample)
                if self._batch_shape:
                    is_singular = is_singular.amax(self._batch_dims)
                if not bool(is_singular.any()):
                    break
        return sample

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        nu = self.df
        p = self._event_shape[-1]
        half_log_det = self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        return (-nu * (p * _LOG_2 / 2 + half_log_det) - numgrad.mvlgamma(nu / 2, p=p)
                + (nu - p - 1) / 2 * numgrad.linalg.slogdet(value).logabsdet
                - numgrad.cholesky_solve(value, self._unbroadcasted_scale_tril)
                .diagonal(dim1=-2, dim2=-1).sum(dim=-1) / 2)

    def entropy(self):
        nu = self.df
        p = self._event_shape[-1]
        half_log_det = self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        return ((p + 1) * (p * _LOG_2 / 2 + half_log_det) + numgrad.mvlgamma(nu / 2, p=p)
                - (nu - p - 1) / 2 * _mvdigamma(nu / 2, p=p) + nu * p / 2)

    @property
    def _natural_params(self):
        nu = self.df
        p = self._event_shape[-1]
        return -self.precision_matrix / 2, (nu - p - 1) / 2

    def _log_normalizer(self, x, y):
        p = self._event_shape[-1]
        return ((y + (p + 1) / 2) * (-numgrad.linalg.slogdet(-2 * x).logabsdet + _LOG_2 * p)
                + numgrad.mvlgamma(y + (p + 1) / 2, p=p))
