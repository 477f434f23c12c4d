"""The LKJ distribution over Cholesky factors of correlation matrices."""
from __future__ import annotations

import math

import numgrad

from . import constraints
from .beta import Beta
from .distribution import Distribution
from .utils import _size, broadcast_all

__all__ = ["LKJCholesky"]


class LKJCholesky(Distribution):
    """LKJ(dim, concentration) on the lower Cholesky factors L of dim x dim correlation
    matrices: density ∝ det(L L^T)^(concentration - 1) (Lewandowski, Kurowicka and Joe, 2009).
    Draws by the onion method: row i is a uniform direction scaled by the square root of a
    Beta draw, its diagonal completing the unit norm."""

    arg_constraints = {"concentration": constraints.positive}
    support = constraints.corr_cholesky

    def __init__(self, dim, concentration=1.0, validate_args=None):
        if dim < 2:
            raise ValueError(f"Expected dim to be an integer greater than or equal to 2. "
                             f"Found dim={dim}.")
        self.dim = dim
        (self.concentration,) = broadcast_all(concentration)
        batch_shape = self.concentration.size()
        event_shape = _size((dim, dim))
        # row i's squared off-diagonal norm ~ Beta(i/2, concentration + (dim - 2 - i)/2)
        marginal_conc = self.concentration + 0.5 * (self.dim - 2)
        offset = numgrad.arange(self.dim - 1, dtype=self.concentration.dtype,
                                device=self.concentration.device)
        offset = numgrad.cat([offset.new_zeros((1,)), offset])
        beta_conc1 = offset + 0.5
        beta_conc0 = marginal_conc.unsqueeze(-1) - 0.5 * offset
        self._beta = Beta(beta_conc1, beta_conc0)
        super().__init__(batch_shape, event_shape, validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(LKJCholesky, _instance)
        batch_shape = _size(batch_shape)
        new.dim = self.dim
        new.concentration = self.concentration.expand(batch_shape)
        new._beta = self._beta.expand(tuple(batch_shape) + (self.dim,))
        super(LKJCholesky, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def sample(self, sample_shape=()):
        with numgrad.no_grad():
            y = self._beta.sample(sample_shape).unsqueeze(-1)
            u_normal = numgrad.randn(tuple(self._extended_shape(sample_shape)), dtype=y.dtype,
                                     device=y.device).tril(-1)
            norm = u_normal.norm(dim=-1, keepdim=True)
            first_row = numgrad.arange(self.dim, device=y.device).unsqueeze(-1) == 0
            # (row 0 has no off-diagonal entries: its 0/0 direction is replaced by zeros)
            u_hypersphere = numgrad.where(first_row, numgrad.zeros_like(u_normal),
                                          u_normal / numgrad.where(first_row,
                                                                   numgrad.ones_like(norm),
                                                                   norm))
            w = numgrad.sqrt(y) * u_hypersphere
            tiny = numgrad.finfo(w.dtype).tiny
            diag_elems = numgrad.clamp(1 - numgrad.sum(w ** 2, dim=-1), min=tiny).sqrt()
            return w + numgrad.diag_embed(diag_elems)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        diag_elems = value.diagonal(dim1=-1, dim2=-2)[..., 1:]
        order = numgrad.arange(2, self.dim + 1, device=self.concentration.device)
        order = 2 * (self.concentration - 1).unsqueeze(-1) + self.dim - order
        unnormalized_log_pdf = numgrad.sum(order * diag_elems.log(), dim=-1)
        dm1 = self.dim - 1
        alpha = self.concentration + 0.5 * dm1
        denominator = numgrad.lgamma(alpha) * dm1
        numerator = numgrad.mvlgamma(alpha - 0.5, dm1)
        pi_constant = 0.5 * dm1 * math.log(math.pi)
        return unnormalized_log_pdf - (pi_constant + numerator - denominator)
