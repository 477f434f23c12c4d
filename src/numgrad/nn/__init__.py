"""``numgrad.nn``: modules, parameters, initialisation and the functional API, with PyTorch's
names (``numgrad.nn.Linear``, ``numgrad.nn.functional.cross_entropy`` …)."""
from . import functional, init, utils  # noqa: F401
from .modules import *  # noqa: F401,F403
from .modules import __all__ as _modules_all
from .parameter import Parameter
from . import parallel  # noqa: F401
from .parallel import DataParallel  # noqa: F401

__all__ = ["Parameter", "functional", "init", "utils", "parallel", "DataParallel", *_modules_all]
