"""torch.special's Bessel functions of integer order and the Airy function: ``bessel_j0/j1``,
``bessel_y0/y1``, ``modified_bessel_k0/k1`` and their scaled forms ``exp(x) K``, ``airy_ai``.

Written with numgrad's ops (not differentiable, as PyTorch's):

- ``J_0``, ``J_1``, ``Y_0``, ``Y_1``: the rational approximations PyTorch evaluates (Cephes'
  coefficients, in the input's floating dtype): ``x^2`` rationals up to 5, the asymptotic form
  ``sqrt(2 / (pi x)) (P cos(chi) - (5 / x) Q sin(chi))`` with rationals of ``25 / x^2`` beyond.
  PyTorch evaluates some denominators without Cephes' implied leading term 1 (``QQ`` of the
  asymptotic forms, ``YQ`` of ``Y_0``), so its float64 values are off from the true ones by up to
  9e-7 near x = 5; numgrad's are PyTorch's, to rounding;
- ``K_n`` (and ``exp(x) K_n``): ``int_0^inf exp(-x (cosh t - 1)) cosh(n t) dt`` by Gauss-Legendre
  quadrature over the part that is not negligible;
- ``Ai``: its Maclaurin series on [-8, 2], ``sqrt(x / 3) K_{1/3}(2/3 x^{3/2}) / pi`` above, the
  asymptotic expansion of ``Ai(-z)`` below.

Against SciPy's ``airy``, ``k0``, ``k1`` (x from 1e-6 to 316, both signs) these agree to 3e-12
(``K`` to 1e-14 relative of PyTorch's); PyTorch 2.13's float64 ``Ai`` is off by up to 7e-7. At
+-inf they give NaN, as PyTorch's.
"""
from __future__ import annotations

import math

import numpy as np
import numgrad

from ._names import export

_NODES, _WEIGHTS = np.polynomial.legendre.leggauss(96)  # (on [-1, 1])
_U, _W = (_NODES + 1) / 2, _WEIGHTS / 2  # (on [0, 1])


def _ng():
    return numgrad


def _real_only(input, name: str):
    """PyTorch's refusal of a complex input (these functions are real ones)."""
    if input.dtype.is_complex:
        raise NotImplementedError(f'"{name}_cpu" not implemented for '
                                  f"'{numgrad._dtype.torch_name(input._data.dtype)}'")


def _float64(input, name: str):
    _real_only(input, name)
    ng = _ng()
    return input.detach().to(ng.float64)


def _finish(value, input):
    ng = _ng()
    dtype = input.dtype if input.dtype.is_floating_point else ng.get_default_dtype()
    return value.to(dtype)


def _nodes(like):
    ng = _ng()
    return (ng.tensor(_U, dtype=ng.float64, device=like.device),
            ng.tensor(_W, dtype=ng.float64, device=like.device))


# PyTorch's coefficients (Cephes'), highest power first
_PP0 = (7.96936729297347051624e-04, 8.28352392107440799803e-02, 1.23953371646414299388e+00,
        5.44725003058768775090e+00, 8.74716500199817011941e+00, 5.30324038235394892183e+00,
        9.99999999999999997821e-01)
_PQ0 = (9.24408810558863637013e-04, 8.56288474354474431428e-02, 1.25352743901058953537e+00,
        5.47097740330417105182e+00, 8.76190883237069594232e+00, 5.30605288235394617618e+00,
        1.00000000000000000218e+00)
_QP0 = (-1.13663838898469149931e-02, -1.28252718670509318512e+00, -1.95539544257735972385e+01,
        -9.32060152123768231369e+01, -1.77681167980488050595e+02, -1.47077505154951170175e+02,
        -5.14105326766599330220e+01, -6.05014350600728481186e+00)
_QQ0 = (6.43178256118178023184e+01, 8.56430025976980587198e+02, 3.88240183605401609683e+03,
        7.24046774195652478189e+03, 5.93072701187316984827e+03, 2.06209331660327847417e+03,
        2.42005740240291393179e+02)
_RP0 = (-4.79443220978201773821e+09, 1.95617491946556577543e+12, -2.49248344360967716204e+14,
        9.70862251047306323952e+15)
_RQ0 = (4.99563147152651017219e+02, 1.73785401676374683123e+05, 4.84409658339962045305e+07,
        1.11855537045356834862e+10, 2.11277520115489217587e+12, 3.10518229857422583814e+14,
        3.18121955943204943306e+16, 1.71086294081043136091e+18)
_YP0 = (1.55924367855235737965e+04, -1.46639295903971606143e+07, 5.43526477051876500413e+09,
        -9.82136065717911466409e+11, 8.75906394395366999549e+13, -3.46628303384729719441e+15,
        4.42733268572569800351e+16, -1.84950800436986690637e+16)
_YQ0 = (1.04128353664259848412e+03, 6.26107330137134956842e+05, 2.68919633393814121987e+08,
        8.64002487103935000337e+10, 2.02979612750105546709e+13, 3.17157752842975028269e+15,
        2.50596256172653059228e+17)
_PP1 = (7.62125616208173112003e-04, 7.31397056940917570436e-02, 1.12719608129684925192e+00,
        5.11207951146807644818e+00, 8.42404590141772420927e+00, 5.21451598682361504063e+00,
        1.00000000000000000254e+00)
_PQ1 = (5.71323128072548699714e-04, 6.88455908754495404082e-02, 1.10514232634061696926e+00,
        5.07386386128601488557e+00, 8.39985554327604159757e+00, 5.20982848682361821619e+00,
        9.99999999999999997461e-01)
_QP1 = (5.10862594750176621635e-02, 4.98213872951233449420e+00, 7.58238284132545283818e+01,
        3.66779609360150777800e+02, 7.10856304998926107277e+02, 5.97489612400613639965e+02,
        2.11688757100572135698e+02, 2.52070205858023719784e+01)
_QQ1 = (7.42373277035675149943e+01, 1.05644886038262816351e+03, 4.98641058337653607651e+03,
        9.56231892404756170795e+03, 7.99704160447350683650e+03, 2.82619278517639096600e+03,
        3.36093607810698293419e+02)
_RP1 = (-8.99971225705559398224e+08, 4.52228297998194034323e+11, -7.27494245221818276015e+13,
        3.68295732863852883286e+15)
_RQ1 = (6.20836478118054335476e+02, 2.56987256757748830383e+05, 8.35146791431949253037e+07,
        2.21511595479792499675e+10, 4.74914122079991414898e+12, 7.84369607876235854894e+14,
        8.95222336184627338078e+16, 5.32278620332680085395e+18)
_YP1 = (1.26320474790178026440e+09, -6.47355876379160291031e+11, 1.14509511541823727583e+14,
        -8.12770255501325109621e+15, 2.02439475713594898196e+17, -7.78877196265950026825e+17)
_YQ1 = (5.94301592346128195359e+02, 2.35564092943068577943e+05, 7.34811944459721705660e+07,
        1.87601316108706159478e+10, 3.88231277496238566008e+12, 6.20557727146953693363e+14,
        6.87141087355300489866e+16, 3.97270608116560655612e+18)
_SQRT_2_PI = 0.797884560802865355879892119868763737  # sqrt(2 / pi)
_TWO_PI = 0.636619772367581343075535053490057448  # 2 / pi


def _poly(coefficients, z):
    """The polynomial of ``z`` with these coefficients (highest power first), by Horner."""
    out = z * coefficients[0] + coefficients[1]
    for c in coefficients[2:]:
        out = out * z + c
    return out


def _working(input, name: str):
    """The input in the dtype PyTorch computes in: its own floating dtype, else the default."""
    _real_only(input, name)
    ng = _ng()
    x = input.detach()
    return x if x.dtype.is_floating_point else x.to(ng.get_default_dtype())


def _asymptotic(n: int, x, second: bool):
    """``J_n`` (``second``: ``Y_n``) of ``x`` > 5 by PyTorch's asymptotic form."""
    if n == 0:
        z, (pp, pq, qp, qq), phase = 25.0 / (x * x), (_PP0, _PQ0, _QP0, _QQ0), math.pi / 4
    else:
        z, (pp, pq, qp, qq), phase = 5.0 / x * (5.0 / x), (_PP1, _PQ1, _QP1, _QQ1), 0.75 * math.pi
    p = _poly(pp, z) / _poly(pq, z)
    q = 5.0 / x * (_poly(qp, z) / _poly(qq, z))
    chi = x - phase
    value = p * chi.sin() + q * chi.cos() if second else p * chi.cos() - q * chi.sin()
    return value * _SQRT_2_PI / x.sqrt()


def _j(n: int, x):
    """PyTorch's ``J_n`` (n = 0, 1) of ``x`` in its dtype."""
    ng = _ng()
    ax = x.abs()
    z = ax * ax
    if n == 0:
        near = (z - 5.78318596294678452118e+00) * (z - 3.04712623436620863991e+01) * _poly(
            _RP0, z) / _poly(_RQ0, z)
        near = ng.where(ax < 1e-5, 1.0 - z / 4.0, near)
    else:
        near = _poly(_RP1, z) / _poly(_RQ1, z) * ax * (z - 1.46819706421238932572e+01) * (
            z - 4.92184563216946036703e+01)
    out = ng.where(ax <= 5.0, near, _asymptotic(n, ax, False))
    return out if n == 0 else ng.where(x < 0, -out, out)


def _y(n: int, x):
    """PyTorch's ``Y_n`` (n = 0, 1) of ``x`` in its dtype: -inf at 0, NaN below."""
    ng = _ng()
    z = x * x
    if n == 0:
        near = _poly(_YP0, z) / _poly(_YQ0, z) + _TWO_PI * x.log() * _j(0, x)
    else:
        near = x * (_poly(_YP1, z) / _poly(_YQ1, z)) + _TWO_PI * (_j(1, x) * x.log() - 1.0 / x)
    near = ng.where(x == 0, -math.inf, ng.where(x < 0, math.nan, near))
    return ng.where(x <= 5.0, near, _asymptotic(n, x, True))


def _scaled_k(nu: float, x):
    """``exp(x) K_nu(x)`` for ``x`` > 0 (a float64 tensor; other elements: any value)."""
    ng = _ng()
    u, w = _nodes(x)
    pos = ng.where(x > 0, x, 1.0).unsqueeze(-1)
    top = (1 + 40.0 / pos).acosh()  # (beyond: exp(-x (cosh t - 1)) < e^{-40})
    t = u * top
    f = (-pos * (t.cosh() - 1)).exp() * (nu * t).cosh()
    return (f * w).sum(-1) * top.squeeze(-1)


def _modified_k(nu: float, input, scaled: bool):
    ng = _ng()
    x = _float64(input, f"{'scaled_' if scaled else ''}modified_bessel_k{int(nu)}")
    out = _scaled_k(nu, x)
    if not scaled:
        out = out * (-x).exp()
    out = ng.where(x == 0, math.inf, ng.where(x < 0, math.nan, out))
    out = ng.where(x == math.inf, 0.0, out)
    return _finish(ng.where(x.isnan(), x, out), input)


_AI0 = 0.355028053887817239  # Ai(0)
_AIP0 = 0.258819403792806798  # -Ai'(0)


@export(function=False, special=True)
def airy_ai(input):
    """The Airy function ``Ai``."""
    ng = _ng()
    x = _float64(input, "airy_ai")
    # Maclaurin series on [-8, 2]
    xs = ng.where((x >= -8) & (x <= 2), x, 0.0)
    cube = xs * xs * xs
    f, g = xs * 0 + 1.0, xs
    tf, tg = f, g
    for k in range(1, 60):
        tf = tf * cube / ((3 * k - 1) * (3 * k))
        tg = tg * cube / ((3 * k) * (3 * k + 1))
        f, g = f + tf, g + tg
    series = _AI0 * f - _AIP0 * g
    # above 2: through K_{1/3}
    xp = ng.where(x > 2, x, 3.0)
    zeta = xp.pow(1.5) * (2.0 / 3.0)
    above = (xp / 3).sqrt() / math.pi * _scaled_k(1 / 3, zeta) * (-zeta).exp()
    # below -8: the asymptotic expansion of Ai(-z)
    z = ng.where(x < -8, -x, 9.0)
    zeta = z.pow(1.5) * (2.0 / 3.0)
    u, even, odd = 1.0, 0.0, 0.0
    for k in range(0, 24):
        term = u * zeta.pow(-k)
        if k % 2 == 0:
            even = even + (-1) ** (k // 2) * term
        else:
            odd = odd + (-1) ** (k // 2) * term
        k1 = k + 1
        u = u * (6 * k1 - 5) * (6 * k1 - 3) * (6 * k1 - 1) / ((2 * k1 - 1) * 216 * k1)
    phase = zeta + math.pi / 4
    below = (phase.sin() * even - phase.cos() * odd) / (math.sqrt(math.pi) * z.pow(0.25))
    out = ng.where(x > 2, above, ng.where(x < -8, below, series))
    out = ng.where(x.isinf(), math.nan, out)  # (PyTorch's value at +-inf)
    return _finish(ng.where(x.isnan(), x, out), input)


@export(function=False, special=True)
def bessel_j0(input):
    """The Bessel function of the first kind of order 0."""
    return _j(0, _working(input, "bessel_j0"))


@export(function=False, special=True)
def bessel_j1(input):
    """The Bessel function of the first kind of order 1."""
    return _j(1, _working(input, "bessel_j1"))


@export(function=False, special=True)
def bessel_y0(input):
    """The Bessel function of the second kind of order 0 (NaN below 0, -inf at 0)."""
    return _y(0, _working(input, "bessel_y0"))


@export(function=False, special=True)
def bessel_y1(input):
    """The Bessel function of the second kind of order 1 (NaN below 0, -inf at 0)."""
    return _y(1, _working(input, "bessel_y1"))


@export(function=False, special=True)
def modified_bessel_k0(input):
    """The modified Bessel function of the second kind of order 0 (NaN below 0, inf at 0)."""
    return _modified_k(0.0, input, False)


@export(function=False, special=True)
def modified_bessel_k1(input):
    """The modified Bessel function of the second kind of order 1 (NaN below 0, inf at 0)."""
    return _modified_k(1.0, input, False)


@export(function=False, special=True)
def scaled_modified_bessel_k0(input):
    """``exp(x) K_0(x)``."""
    return _modified_k(0.0, input, True)


@export(function=False, special=True)
def scaled_modified_bessel_k1(input):
    """``exp(x) K_1(x)``."""
    return _modified_k(1.0, input, True)
