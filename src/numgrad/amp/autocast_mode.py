"""``autocast``: PyTorch's automatic mixed precision context, on numgrad's dtypes.

PyTorch runs some ops in a lower precision (bfloat16 on the CPU, float16 on CUDA) inside an
autocast region. numgrad has neither dtype, so inside the region every op runs as outside it, in
float32 (the issue's "float32 kept"): programs written for autocast run unchanged, with float32's
results. The context itself is PyTorch's: its arguments and checks, its warnings when it disables
itself, the per-device enabled flag and dtype that ``is_autocast_enabled`` and
``get_autocast_dtype`` report, nesting, and use as a decorator. Where numgrad has a lower
precision dtype (``numgrad.bfloat16``, ``numgrad.float16``), it is the default dtype reported.
"""
from __future__ import annotations

import functools
import threading
import warnings

import numgrad

from .. import cuda
from .._dtype import device as _device

__all__ = ["autocast", "is_autocast_available", "custom_fwd", "custom_bwd"]

_DEVICES = ("cpu", "cuda")


class _State(threading.local):
    def __init__(self):
        self.enabled = {}  # device type -> bool
        self.dtype = {}  # device type -> dtype
        self.cache_enabled = True
        self.nesting = 0


_state = _State()


def _lower_dtypes() -> list:
    """The lower-precision dtypes autocast may run in: those of PyTorch's (bfloat16, float16)
    that numgrad has."""
    return [d for d in (getattr(numgrad, "bfloat16", None), getattr(numgrad, "float16", None))
            if d is not None]


def _default_dtype(device_type: str):
    preferred = "bfloat16" if device_type == "cpu" else "float16"
    return getattr(numgrad, preferred, None) or numgrad.float32


def is_autocast_available(device_type: str) -> bool:
    """Whether ``autocast`` accepts ``device_type`` ("cpu" and "cuda")."""
    return device_type in _DEVICES


def is_autocast_enabled(device_type: str | None = None) -> bool:
    """Whether an autocast region is open for ``device_type`` (None: CUDA, as PyTorch's)."""
    return _state.enabled.get("cuda" if device_type is None else device_type, False)


def set_autocast_enabled(device_type, enabled=None) -> None:
    if enabled is None:  # (the old one-argument form: CUDA)
        device_type, enabled = "cuda", device_type
    _state.enabled[device_type] = bool(enabled)


def get_autocast_dtype(device_type: str):
    """The dtype autocast uses for ``device_type`` (see the module's docstring)."""
    return _state.dtype.get(device_type) or _default_dtype(device_type)


def set_autocast_dtype(device_type: str, dtype) -> None:
    _state.dtype[device_type] = dtype


def is_autocast_cpu_enabled() -> bool:
    return is_autocast_enabled("cpu")


def get_autocast_cpu_dtype():
    return get_autocast_dtype("cpu")


def is_autocast_cache_enabled() -> bool:
    return _state.cache_enabled


def set_autocast_cache_enabled(enabled: bool) -> None:
    _state.cache_enabled = bool(enabled)


def clear_autocast_cache() -> None:
    """Nothing is cached (numgrad casts nothing under autocast)."""


def autocast_increment_nesting() -> int:
    _state.nesting += 1
    return _state.nesting


def autocast_decrement_nesting() -> int:
    _state.nesting -= 1
    return _state.nesting


class autocast:
    """``with numgrad.autocast("cpu"):`` (or ``numgrad.amp.autocast``): a mixed-precision region,
    its ops in float32 (see the module's docstring). Also a decorator."""

    def __init__(self, device_type: str, dtype=None, enabled: bool = True,
                 cache_enabled: bool | None = None):
        if not isinstance(device_type, str):
            raise ValueError(
                f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        if dtype is None:
            _device(device_type)  # (PyTorch's error for a string that names no device type)
        self.fast_dtype = get_autocast_dtype(device_type) if dtype is None else dtype
        self.device = device_type
        if not is_autocast_available(device_type):
            raise RuntimeError(
                f"User specified an unsupported autocast device_type '{device_type}'")
        self._cache_enabled = is_autocast_cache_enabled() if cache_enabled is None else \
            cache_enabled
        device_name = device_type.upper()
        if enabled:
            if device_type == "cuda":
                if not cuda.is_available():
                    warnings.warn(
                        "CUDA is not available or torch_xla is imported. Disabling autocast.",
                        stacklevel=2,
                    )
                    enabled = False
            elif dtype is not None and self.fast_dtype not in _lower_dtypes():
                names = ", ".join(["torch.bfloat16", "torch.float16"])
                warnings.warn(
                    f"In {device_name} autocast, but the target dtype is not supported. "
                    f"Disabling autocast.\n{device_name} Autocast only supports dtypes of "
                    f"{names} currently.",
                    stacklevel=2,
                )
                enabled = False
        self._enabled = enabled

    def __enter__(self):
        self.prev_cache_enabled = is_autocast_cache_enabled()
        self.prev = is_autocast_enabled(self.device)
        self.prev_fastdtype = get_autocast_dtype(self.device)
        set_autocast_enabled(self.device, self._enabled)
        set_autocast_dtype(self.device, self.fast_dtype)
        autocast_increment_nesting()
        set_autocast_cache_enabled(self._cache_enabled)
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        if autocast_decrement_nesting() == 0:
            clear_autocast_cache()
        set_autocast_enabled(self.device, self.prev)
        set_autocast_dtype(self.device, self.prev_fastdtype)
        set_autocast_cache_enabled(self.prev_cache_enabled)
        return False

    def __call__(self, func):
        @functools.wraps(func)
        def decorate_autocast(*args, **kwargs):
            with self:
                return func(*args, **kwargs)

        return decorate_autocast


def custom_fwd(fwd=None, *, device_type: str, cast_inputs=None):
    """PyTorch's decorator for a custom Function's ``forward`` under autocast: ``forward`` runs
    with autocast's state noted on ``ctx`` (and, with ``cast_inputs``, outside autocast)."""
    if not isinstance(device_type, str):
        raise ValueError(
            f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def decorate_fwd(*args, **kwargs):
        args[0]._dtype = get_autocast_dtype(device_type)
        if cast_inputs is None:
            args[0]._fwd_used_autocast = is_autocast_enabled(device_type)
            return fwd(*args, **kwargs)
        autocast_context = is_autocast_enabled(device_type)
        args[0]._fwd_used_autocast = False
        if autocast_context:
            with autocast(device_type=device_type, enabled=False):
                return fwd(*args, **kwargs)
        return fwd(*args, **kwargs)

    return decorate_fwd


def custom_bwd(bwd=None, *, device_type: str):
    """PyTorch's decorator for a custom Function's ``backward``: it runs with the autocast state
    its forward ran with."""
    if not isinstance(device_type, str):
        raise ValueError(
            f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def decorate_bwd(*args, **kwargs):
        with autocast(device_type=device_type, enabled=args[0]._fwd_used_autocast):
            return bwd(*args, **kwargs)

    return decorate_bwd
