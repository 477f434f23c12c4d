"""``numgrad.autograd``: running backward, ``grad``, custom ``Function``s, ``functional``
(jacobian, hessian, vjp, jvp, hvp, vhp), anomaly detection, and the tools to check gradients.

This package's own import is light: tensor.py imports ``autograd.node``, which runs this file
first, before ``Tensor`` exists. So it imports here only the modules that import nothing above
the tensor (grad mode, anomaly mode, the node classes, the profiler); the others (``backward``,
``grad``, ``Function``, ``Variable``, ``forward_ad``, ``functional``, the ``gradcheck`` family,
the engine, and ``graph``, whose ``_saved_<name>`` properties read ops and factories) are imported
on first use (PEP 562 ``__getattr__``), from the module each is named with in ``_LAZY``; the op
registry imports ``graph`` itself, before any op node exists. ``import numgrad`` loads them all at
its end, so the package a user gets holds them as before. Type checkers read their names from
``__init__.pyi``.
"""
from __future__ import annotations

import importlib

from .anomaly_mode import (  # noqa: F401
    detect_anomaly, is_anomaly_check_nan_enabled, is_anomaly_enabled, set_detect_anomaly,
)
from .grad_mode import enable_grad, is_grad_enabled, no_grad, set_grad_enabled  # noqa: F401
from .grad_mode import inference_mode, is_inference_mode_enabled  # noqa: F401
from .node import AccumulateGrad, Node  # noqa: F401
from . import profiler  # noqa: F401

# name -> the submodule that defines it (None: the name is the submodule itself)
_LAZY = {
    "backward": "entry", "grad": "entry", "_is_checkpoint_valid": "entry",
    "Function": "function", "Variable": "variable",
    "gradcheck": "gradcheck", "gradgradcheck": "gradcheck", "GradcheckError": "gradcheck",
    "engine": None, "entry": None, "function": None, "forward_ad": None, "functional": None,
    "variable": None, "graph": None,
}


def __getattr__(name: str) -> object:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module = importlib.import_module(f"{__name__}.{_LAZY[name] or name}")
    value = module if _LAZY[name] is None else getattr(module, name)
    globals()[name] = value  # (a plain attribute from now on: no call here again)
    return value


def __dir__() -> list:
    return sorted({*globals(), *_LAZY})


def _load() -> None:
    """Binds every name of ``_LAZY`` (``import numgrad`` calls it once ``Tensor`` and the ops
    exist, so that the package holds what it always held)."""
    for name in _LAZY:
        __getattr__(name)  # (each: also rebinds ``gradcheck``, which its submodule's import
        # binds to that submodule, to the function)


__all__ = [
    "backward", "grad", "gradcheck", "gradgradcheck", "GradcheckError", "no_grad", "enable_grad",
    "set_grad_enabled", "is_grad_enabled", "Node", "AccumulateGrad", "Function", "functional",
    "set_detect_anomaly", "detect_anomaly", "is_anomaly_enabled", "is_anomaly_check_nan_enabled",
    "Variable", "forward_ad",
]
