"""``stft``: the short-time Fourier transform, composed as PyTorch's: the signal padded (when
``center``), cut into frames every ``hop_length`` samples (``unfold``, a view), each frame times
the window, then the transform of each frame (``numgrad.fft``), so that its gradient is the
composition's."""
from __future__ import annotations

import warnings

from ..tensor import Tensor
from ._names import export
import numgrad

_RETURN_COMPLEX = ("stft requires the return_complex parameter be given for real inputs, and will "
                   "further require that return_complex=True in a future PyTorch release.")


@export(method=True)
def stft(input: Tensor, n_fft: int, hop_length: int | None = None, win_length: int | None = None,
         window: Tensor | None = None, center: bool = True, pad_mode: str = "reflect",
         normalized: bool = False, onesided: bool | None = None,
         return_complex: bool | None = None) -> Tensor:
    """The short-time Fourier transform of a 1-D signal or a batch of them: shape
    ``(batch?, n_fft // 2 + 1 or n_fft, frames)``, ``frames = 1 + (length - n_fft) //
    hop_length`` (the length after ``center``'s padding of ``n_fft // 2`` on each side).
    ``window`` (``win_length`` samples, centred in ``n_fft``; ones by default) multiplies each
    frame; ``normalized`` scales by ``n_fft ** -0.5``; ``onesided`` keeps the non-negative
    frequencies (the default for a real signal and window)."""
    complex_in = input.dtype.is_complex or (window is not None and window.dtype.is_complex)
    if return_complex is None and not complex_in:
        raise RuntimeError(_RETURN_COMPLEX)
    if center:
        signal_dim = input.ndim
        pad = n_fft // 2
        padded = numgrad.nn.functional.pad(input.view((1,) * (3 - signal_dim) + input.shape),
                                           [pad, pad], pad_mode)
        input = padded.view(padded.shape[-signal_dim:])
    hop_length = n_fft >> 2 if hop_length is None else hop_length
    win_length = n_fft if win_length is None else win_length

    def error(what: str) -> RuntimeError:  # (PyTorch's message names the call first)
        shown = "None" if window is None else f"{window.type()}{{{list(window.shape)}}}"
        return RuntimeError(
            f"stft({input.type()}{list(input.shape)}, n_fft={n_fft}, hop_length={hop_length}, "
            f"win_length={win_length}, window={shown}, normalized={int(normalized)}, "
            f"onesided={onesided}, return_complex={int(bool(return_complex))}, "
            f"align_to_window=None) : {what}")

    if input.ndim not in (1, 2):
        raise error("expected a 1D or 2D tensor")
    batched = input.ndim == 2
    x = input if batched else input.unsqueeze(0)
    length = x.shape[1]
    if n_fft <= 0 or n_fft > length:
        raise error(f"expected 0 < n_fft < {length}, but got n_fft={n_fft}")
    if hop_length <= 0:
        raise error(f"expected hop_length > 0, but got hop_length={hop_length}")
    if win_length <= 0 or win_length > n_fft:
        raise error(f"expected 0 < win_length <= n_fft, but got win_length={win_length}")
    if window is not None and (window.ndim != 1 or window.shape[0] != win_length):
        raise error(f"expected a 1D window tensor of size equal to win_length={win_length}, but "
                    f"got window with size {list(window.shape)}")
    frames = x.unfold(-1, n_fft, hop_length)  # (batch, frames, n_fft)
    if window is not None:
        if win_length < n_fft:
            left = (n_fft - win_length) // 2
            window = numgrad.nn.functional.pad(window, [left, n_fft - win_length - left])
        frames = frames * window
    elif win_length < n_fft:
        left = (n_fft - win_length) // 2
        frames = frames * numgrad.nn.functional.pad(
            numgrad.ones(win_length, dtype=frames.dtype.to_real(), device=frames.device),
            [left, n_fft - win_length - left])
    onesided = not complex_in if onesided is None else onesided
    if onesided and complex_in:
        raise RuntimeError("Cannot have onesided output if window or input is complex")
    norm = "ortho" if normalized else "backward"
    out = (numgrad.fft.rfft if onesided else numgrad.fft.fft)(frames, dim=-1, norm=norm)
    out = out.transpose(1, 2)
    if not batched:
        out = out.squeeze(0)
    if return_complex or return_complex is None and complex_in:  # (complex input: complex)
        return out
    warnings.warn("stft with return_complex=False is deprecated. In a future pytorch release, stft "
                  "will return complex tensors for all inputs, and return_complex=False will "
                  "raise an error.\nNote: you can still call torch.view_as_real on the complex "
                  "output to recover the old return format.", UserWarning, stacklevel=2)
    return numgrad.view_as_real(out)
