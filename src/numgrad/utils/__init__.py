"""``numgrad.utils``: ``numgrad.utils.data`` (datasets, samplers and ``DataLoader``), as
``torch.utils``."""
from . import data  # noqa: F401
