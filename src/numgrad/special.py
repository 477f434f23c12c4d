"""``numgrad.special``: PyTorch's ``torch.special``, the functions numgrad has (the gamma family
in ``ops/special_functions.py``; the others are numgrad's ops under their ``special`` names)."""
from __future__ import annotations

import math as _math
import sys as _sys

from . import ops as _ops
from .ops import special_functions as _more
from .ops import bessel as _bessel  # (J, Y, K of orders 0 and 1; Airy's Ai)
from . import overrides as _overrides

gammaln = _ops.lgamma
digamma = psi = _ops.digamma
polygamma = _ops.polygamma
multigammaln = _ops.mvlgamma
zeta = _more.zeta
erfinv = _ops.erfinv
i0 = _ops.i0
i0e, i1, i1e = _more.special_i0e, _more.special_i1, _more.special_i1e
erfcx, log_ndtr, ndtri = _more.special_erfcx, _more.special_log_ndtr, _more.special_ndtri
erf, erfc = _ops.erf, _ops.erfc
expm1, exp2, log1p = _ops.expm1, _ops.exp2, _ops.log1p
expit = _ops.sigmoid
logit = _ops.logit
xlogy = _ops.xlogy
sinc = _ops.sinc
round = _ops.round  # noqa: A001
logsumexp = _ops.logsumexp
softmax, log_softmax = _ops.softmax, _ops.log_softmax


globals().update(_more.POLYNOMIALS)


def ndtr(input):
    """The standard normal distribution function, ``erfc(-x / sqrt(2)) / 2``."""
    x = _ops._common._float_of(input)
    return _ops.erfc(x * (-1.0 / _math.sqrt(2.0))) * 0.5


def entr(input):
    """``-x log(x)`` elementwise: 0 at 0, -inf below."""
    x = _ops._common._float_of(input)
    inside = -x * x.log()
    zero = x.detach() == 0
    return _ops.where(x.detach() < 0, -_math.inf, _ops.where(zero, 0.0, inside))


def xlog1py(input, other):
    """``input * log1p(other)``, 0 where ``input`` is 0 (unless ``other`` is NaN)."""
    ng = _ops._common._ng()
    if not isinstance(input, ng.Tensor) and not isinstance(other, ng.Tensor):
        raise TypeError("xlog1py(): argument 'other' (position 2) must be Tensor, not "
                        f"{type(other).__name__}")
    if not isinstance(input, ng.Tensor):
        input = ng.tensor(input, dtype=other.dtype if other.dtype.is_floating_point else None)
    if not isinstance(other, ng.Tensor):
        other = ng.tensor(other, dtype=input.dtype if input.dtype.is_floating_point else None)
    x, y = _ops._common._float_of(input), _ops._common._float_of(other)
    product = x * y.log1p()
    return _ops.where((x.detach() == 0) & ~y.detach().isnan(), 0.0, product)


globals().update({_name: getattr(_bessel, _name) for _name in _bessel.NAMES})


gammainc, gammaincc = _ops.igamma, _ops.igammac


def modified_bessel_i0(input):
    """The modified Bessel function of the first kind of order 0 (``i0``; not differentiable,
    as PyTorch's)."""
    return _ops.i0(_ops._common._float_of(input).detach())


def modified_bessel_i1(input):
    """The modified Bessel function of the first kind of order 1 (``i1``; not differentiable,
    as PyTorch's)."""
    return i1(_ops._common._float_of(input).detach())


def spherical_bessel_j0(input):
    """The spherical Bessel function of the first kind of order 0, ``sin(x) / x`` (1 at 0, 0 at
    +-inf; its series ``1 - x**2 / 6 + x**4 / 120`` near 0; not differentiable, as PyTorch's)."""
    x = _ops._common._float_of(input).detach()
    small = x.abs() < 1e-3
    x2 = x * x
    series = 1 - x2 / 6 + x2 * x2 / 120
    ratio = x.sin() / _ops.where(small, 1.0, x)
    return _ops.where(x.isinf(), 0.0, _ops.where(small, series, ratio))


__all__ = ["gammaln", "digamma", "psi", "polygamma", "multigammaln", "zeta", "erf", "erfc",
           "expm1", "exp2", "log1p", "expit", "logit", "xlogy", "sinc", "round", "logsumexp",
           "softmax", "log_softmax", "ndtr", "entr", "xlog1py", "erfinv", "i0", "i0e", "i1",
           "i1e", "erfcx", "log_ndtr", "ndtri", "modified_bessel_i0", "modified_bessel_i1",
           "spherical_bessel_j0", "gammainc", "gammaincc", *_bessel.NAMES,
           *_more.POLYNOMIALS]

# The dispatching forms of the functions above (``__torch_function__``: numgrad/overrides.py), as
# numgrad.nn.functional binds its own: numgrad.special is imported on first use, after numgrad
# bound the others, and vmap reaches an op through its dispatch.
_overrides.wrap_namespace(_sys.modules[__name__], "torch.special.")
