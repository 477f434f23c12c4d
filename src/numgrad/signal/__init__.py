"""``numgrad.signal``: PyTorch's ``torch.signal`` (its ``windows``)."""
from . import windows  # noqa: F401

__all__ = ["windows"]
