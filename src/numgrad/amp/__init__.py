"""``numgrad.amp``: ``autocast`` and ``GradScaler`` with PyTorch's API (``torch.amp``); see
``autocast_mode`` (numgrad's ops stay in float32 under autocast) and ``grad_scaler``."""
from .autocast_mode import autocast, custom_bwd, custom_fwd, is_autocast_available
from .grad_scaler import GradScaler

__all__ = ["autocast", "custom_bwd", "custom_fwd", "is_autocast_available", "GradScaler"]
