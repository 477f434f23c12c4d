"""``numgrad.backends``: the switches that PyTorch programs set in their first lines
(``torch.backends.cudnn.benchmark = True``, ``torch.backends.mps.is_available()``), and the
process-wide settings ``use_deterministic_algorithms`` and ``set_float32_matmul_precision``.

numgrad has no cuDNN, MPS or TF32: its kernels are its own, deterministic, and compute float32
matmuls in float32. The switches hold what is set, as PyTorch's do, and change nothing.
"""
from __future__ import annotations

import warnings

from . import cuda, cudnn, mps  # noqa: F401

_deterministic = {"mode": False, "warn_only": False}
_matmul_precision = ["highest"]


def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """Asks for deterministic algorithms (numgrad's are: the flag is kept, for its getters)."""
    for name, position, value in (("mode", 1, mode), ("warn_only", 2, warn_only)):
        if not isinstance(value, bool):
            raise TypeError(f"_set_deterministic_algorithms(): argument '{name}' (position "
                            f"{position}) must be bool, not {type(value).__name__}")
    _deterministic["mode"], _deterministic["warn_only"] = mode, warn_only


def are_deterministic_algorithms_enabled() -> bool:
    return _deterministic["mode"]


def is_deterministic_algorithms_warn_only_enabled() -> bool:
    return _deterministic["warn_only"]


def get_deterministic_debug_mode() -> int:
    """0 (off), 1 (warn) or 2 (error), as ``use_deterministic_algorithms`` set it."""
    if not _deterministic["mode"]:
        return 0
    return 1 if _deterministic["warn_only"] else 2


def set_deterministic_debug_mode(debug_mode) -> None:
    """``"default"``/0, ``"warn"``/1 or ``"error"``/2."""
    names = {"default": 0, "warn": 1, "error": 2}
    if isinstance(debug_mode, str):
        if debug_mode not in names:
            raise RuntimeError("invalid value of debug_mode, expected one of `default`, `warn`, "
                               f"`error`, but got {debug_mode}")
        debug_mode = names[debug_mode]
    if debug_mode not in (0, 1, 2):
        raise RuntimeError("invalid value of debug_mode, expected 0, 1, or 2, but got "
                           f"{debug_mode}")
    use_deterministic_algorithms(debug_mode != 0, warn_only=debug_mode == 1)


def set_float32_matmul_precision(precision: str) -> None:
    """``"highest"``, ``"high"`` or ``"medium"``: kept for ``get_float32_matmul_precision``
    (numgrad's float32 matmuls are float32 at every setting); another value is ignored with
    PyTorch's warning."""
    if precision not in ("highest", "high", "medium"):
        warnings.warn(f"{precision} is not one of 'highest', 'high', or 'medium'; the current"
                      "setFloat32MatmulPrecision call has no effect.", UserWarning, stacklevel=2)
        return
    _matmul_precision[0] = precision


def get_float32_matmul_precision() -> str:
    return _matmul_precision[0]
