"""``numgrad.utils``: ``numgrad.utils.data`` (datasets, samplers and ``DataLoader``),
``numgrad.utils.hooks`` (``RemovableHandle``) and ``numgrad.utils.dlpack``, as ``torch.utils``."""
from . import data, dlpack, hooks  # noqa: F401
