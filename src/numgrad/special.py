"""``numgrad.special``: PyTorch's ``torch.special``, the functions numgrad has (the gamma family
in ``ops/special_functions.py``; the others are numgrad's ops under their ``special`` names)."""
from __future__ import annotations

import math as _math
import sys as _sys

from . import ops as _ops
from .ops import special_functions as _more
from .ops import bessel as _bessel  # (J, Y, K of orders 0 and 1; Airy's Ai)
from . import overrides as _overrides
from .ops._names import export as _export
from .ops._names import facade as _facade

# numgrad's ops under their torch.special names (each declared here, with export: __all__).
gammaln = _export(_ops.lgamma, "gammaln")
digamma = _export(_ops.digamma, "digamma")
psi = _export(_ops.digamma, "psi")
polygamma = _export(_ops.polygamma, "polygamma")
multigammaln = _export(_ops.mvlgamma, "multigammaln")
zeta = _export(_more.zeta, "zeta")
erf = _export(_ops.erf, "erf")
erfc = _export(_ops.erfc, "erfc")
expm1 = _export(_ops.expm1, "expm1")
exp2 = _export(_ops.exp2, "exp2")
log1p = _export(_ops.log1p, "log1p")
expit = _export(_ops.sigmoid, "expit")
logit = _export(_ops.logit, "logit")
xlogy = _export(_ops.xlogy, "xlogy")
sinc = _export(_ops.sinc, "sinc")
round = _export(_ops.round, "round")  # noqa: A001
logsumexp = _export(_ops.logsumexp, "logsumexp")
softmax = _export(_ops.softmax, "softmax")
log_softmax = _export(_ops.log_softmax, "log_softmax")
erfinv = _export(_ops.erfinv, "erfinv")
i0 = _export(_ops.i0, "i0")
i0e = _export(_more.special_i0e, "i0e")
i1 = _export(_more.special_i1, "i1")
i1e = _export(_more.special_i1e, "i1e")
erfcx = _export(_more.special_erfcx, "erfcx")
log_ndtr = _export(_more.special_log_ndtr, "log_ndtr")
ndtri = _export(_more.special_ndtri, "ndtri")
gammainc = _export(_ops.igamma, "gammainc")
gammaincc = _export(_ops.igammac, "gammaincc")


@_export
def ndtr(input):
    """The standard normal distribution function, ``erfc(-x / sqrt(2)) / 2``."""
    x = _ops._common._float_of(input)
    return _ops.erfc(x * (-1.0 / _math.sqrt(2.0))) * 0.5


@_export
def entr(input):
    """``-x log(x)`` elementwise: 0 at 0, -inf below."""
    return _ops.special_functions.entr(input)


@_export
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


@_export
def modified_bessel_i0(input):
    """The modified Bessel function of the first kind of order 0 (``i0``; not differentiable,
    as PyTorch's)."""
    return _ops.i0(_ops._common._float_of(input).detach())


@_export
def modified_bessel_i1(input):
    """The modified Bessel function of the first kind of order 1 (``i1``; not differentiable,
    as PyTorch's)."""
    return i1(_ops._common._float_of(input).detach())


@_export
def spherical_bessel_j0(input):
    """The spherical Bessel function of the first kind of order 0, ``sin(x) / x`` (1 at 0, 0 at
    +-inf; its series ``1 - x**2 / 6 + x**4 / 120`` near 0; not differentiable, as PyTorch's)."""
    _ops.bessel._real_only(input, "spherical_bessel_j0")
    x = _ops._common._float_of(input).detach()
    small = x.abs() < 1e-3
    x2 = x * x
    series = 1 - x2 / 6 + x2 * x2 / 120
    ratio = x.sin() / _ops.where(small, 1.0, x)
    return _ops.where(x.isinf(), 0.0, _ops.where(small, series, ratio))


# The ops that are torch.special's only (declared with export(special=) in their modules):
# the orthogonal polynomials, the Bessel functions J, Y and K and Airy's Ai.
_SPECIAL = _facade("special", (_more, _bessel))
globals().update(_SPECIAL)
__all__ += list(_SPECIAL)  # noqa: F821  (filled by _export above)
del _export, _facade

# The dispatching forms of the functions above (``__torch_function__``: numgrad/overrides.py), as
# numgrad.nn.functional binds its own: numgrad.special is imported on first use, after numgrad
# bound the others, and vmap reaches an op through its dispatch.
_overrides.wrap_namespace(_sys.modules[__name__], "torch.special.")
