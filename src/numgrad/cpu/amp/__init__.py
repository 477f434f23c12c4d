"""``numgrad.cpu.amp``: PyTorch's deprecated ``torch.cpu.amp.autocast`` and
``torch.cpu.amp.GradScaler``, with its FutureWarnings: ``numgrad.amp``'s, on the CPU."""
from __future__ import annotations

import warnings

from ... import amp as _amp

__all__ = ["autocast", "GradScaler"]


class autocast(_amp.autocast):
    """``numgrad.amp.autocast("cpu", ...)``, under its deprecated name."""

    def __init__(self, enabled: bool = True, dtype=None, cache_enabled: bool = True):
        warnings.warn(
            "`torch.cpu.amp.autocast(args...)` is deprecated. Please use "
            "`torch.amp.autocast('cpu', args...)` instead.",
            FutureWarning, stacklevel=2,
        )
        super().__init__("cpu", enabled=enabled, dtype=dtype, cache_enabled=cache_enabled)


class GradScaler(_amp.GradScaler):
    """``numgrad.amp.GradScaler("cpu", ...)``, under its deprecated name."""

    def __init__(self, init_scale: float = 2.0 ** 16, growth_factor: float = 2.0,
                 backoff_factor: float = 0.5, growth_interval: int = 2000,
                 enabled: bool = True) -> None:
        warnings.warn(
            "`torch.cpu.amp.GradScaler(args...)` is deprecated. Please use "
            "`torch.amp.GradScaler('cpu', args...)` instead.",
            FutureWarning, stacklevel=2,
        )
        super().__init__("cpu", init_scale=init_scale, growth_factor=growth_factor,
                         backoff_factor=backoff_factor, growth_interval=growth_interval,
                         enabled=enabled)
