"""``numgrad.cuda.amp``: PyTorch's deprecated ``torch.cuda.amp.autocast``, ``GradScaler``,
``custom_fwd`` and ``custom_bwd``, with its FutureWarnings: ``numgrad.amp``'s, for CUDA (where
numgrad has no GPU, disabled with PyTorch's warnings, as PyTorch's are on a machine without
one). This folder is ``numgrad.cuda``'s ``__path__``, so that ``import numgrad.cuda.amp`` and
``from torch.cuda.amp import GradScaler`` find it."""
from __future__ import annotations

import functools
import warnings

from ..amp import autocast_mode as _autocast_mode
from ..amp import grad_scaler as _grad_scaler

__all__ = ["autocast", "GradScaler", "custom_fwd", "custom_bwd"]


class autocast(_autocast_mode.autocast):
    """``numgrad.amp.autocast("cuda", ...)``, under its deprecated name."""

    def __init__(self, enabled: bool = True, dtype=None, cache_enabled: bool = True):
        warnings.warn(
            "`torch.cuda.amp.autocast(args...)` is deprecated. Please use "
            "`torch.amp.autocast('cuda', args...)` instead.",
            FutureWarning, stacklevel=2,
        )
        super().__init__("cuda", enabled=enabled, dtype=dtype, cache_enabled=cache_enabled)


class GradScaler(_grad_scaler.GradScaler):
    """``numgrad.amp.GradScaler("cuda", ...)``, under its deprecated name."""

    def __init__(self, init_scale: float = 2.0 ** 16, growth_factor: float = 2.0,
                 backoff_factor: float = 0.5, growth_interval: int = 2000,
                 enabled: bool = True) -> None:
        warnings.warn(
            "`torch.cuda.amp.GradScaler(args...)` is deprecated. Please use "
            "`torch.amp.GradScaler('cuda', args...)` instead.",
            FutureWarning, stacklevel=2,
        )
        super().__init__("cuda", init_scale=init_scale, growth_factor=growth_factor,
                         backoff_factor=backoff_factor, growth_interval=growth_interval,
                         enabled=enabled)


def custom_fwd(fwd=None, *, cast_inputs=None):
    """``numgrad.amp.custom_fwd(device_type="cuda")``, under its deprecated name."""
    warnings.warn(
        "`torch.cuda.amp.custom_fwd(args...)` is deprecated. Please use "
        "`torch.amp.custom_fwd(args..., device_type='cuda')` instead.",
        FutureWarning, stacklevel=2,
    )
    return functools.partial(_autocast_mode.custom_fwd, device_type="cuda")(
        fwd=fwd, cast_inputs=cast_inputs)


def custom_bwd(bwd):
    """``numgrad.amp.custom_bwd(device_type="cuda")``, under its deprecated name."""
    warnings.warn(
        "`torch.cuda.amp.custom_bwd(args...)` is deprecated. Please use "
        "`torch.amp.custom_bwd(args..., device_type='cuda')` instead.",
        FutureWarning, stacklevel=2,
    )
    return _autocast_mode.custom_bwd(bwd, device_type="cuda")
