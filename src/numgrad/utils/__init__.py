"""``numgrad.utils``: ``numgrad.utils.data`` (datasets, samplers and ``DataLoader``),
``numgrad.utils.hooks`` (``RemovableHandle``), ``numgrad.utils.dlpack`` and
``numgrad.utils.checkpoint`` (activation checkpointing), as ``torch.utils``."""
from . import checkpoint, data, dlpack, hooks  # noqa: F401
