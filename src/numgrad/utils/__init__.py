"""``numgrad.utils``: ``numgrad.utils.data`` (datasets, samplers and ``DataLoader``) and
``numgrad.utils.hooks`` (``RemovableHandle``), as ``torch.utils``."""
from . import data, hooks  # noqa: F401
