"""The discrete Fourier transform along one dimension, the primitive of ``numgrad.fft``.

``fft_c2c(x, dim, forward, scale)`` is ``scale`` times the unnormalised complex-to-complex DFT of
``x`` along ``dim`` (the exponent's sign negative when ``forward``). Its gradient, in PyTorch's
convention, is the adjoint: the transform the other way with the same scale. The kernel
(``kernels/cpu/fft.py``) is numgrad's own: radix 2, or Bluestein's algorithm for other lengths.
"""
from __future__ import annotations

from ..tensor import Tensor
from . import _jvp
from .registry import Op, Sample, apply, register


@register
class FftC2C(Op):
    name, node = "fft_c2c", "FftC2CBackward0"
    complex_ok = True
    jvp = _jvp.linear
    samples = (
        Sample(lambda m, a: m.view_as_real(m.fft.fft(a)), ((3, 5),)),
        Sample(lambda m, a: (m.fft.ifft(a, n=8, dim=0, norm="ortho") * (1 + 2j)).imag,
               ((6, 2),)),
        Sample(lambda m, a: m.view_as_real(m.fft.rfft2(a, norm="forward")), ((4, 6),)),
    )

    @staticmethod
    def forward(K, a, *, dim, forward, scale):
        return K.fft_c2c(a, dim, forward, scale)

    @staticmethod
    def backward(ctx, grad):
        p = ctx.params
        return (fft_c2c(grad, p["dim"], not p["forward"], p["scale"]),)


def fft_c2c(input: Tensor, dim: int, forward: bool, scale: float) -> Tensor:
    """``scale`` times the DFT of complex ``input`` along ``dim`` (``forward``: e^{-i...})."""
    return apply(FftC2C, (input,), (input._data,), dim=dim, forward=forward, scale=float(scale))
