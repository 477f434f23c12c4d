"""Grad mode, one flag per thread (a ``no_grad`` in one thread never changes another)."""
from __future__ import annotations

import functools
import threading


class _State(threading.local):
    enabled = True


state = _State()


def is_grad_enabled() -> bool:
    """Returns True if grad mode is currently enabled in this thread."""
    return state.enabled


class _GradModeContext:
    """Base for the context managers that also work as decorators."""

    _mode: bool

    def __enter__(self):
        self._prev = state.enabled
        state.enabled = self._mode

    def __exit__(self, *exc):
        state.enabled = self._prev
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.__class__():
                return fn(*args, **kwargs)

        return wrapper


class _NoParamDecorator(_GradModeContext):
    """Allows ``@no_grad`` as well as ``@no_grad()``, as PyTorch does."""

    def __new__(cls, orig_func=None):
        if orig_func is None:
            return super().__new__(cls)
        return cls()(orig_func)


class no_grad(_NoParamDecorator):
    """Context manager (and decorator) that disables gradient recording in this thread."""

    _mode = False


class enable_grad(_NoParamDecorator):
    """Context manager (and decorator) that enables gradient recording in this thread."""

    _mode = True


class set_grad_enabled(_GradModeContext):
    """Sets grad mode on or off; takes effect at once, and also works as a context manager."""

    def __init__(self, mode: bool):
        self._prev = state.enabled
        self._mode = bool(mode)
        state.enabled = self._mode

    def __enter__(self):
        pass

    def __exit__(self, *exc):
        state.enabled = self._prev
        return False

    def __call__(self, fn):
        state.enabled = self._prev  # as a decorator it must not have changed the mode

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with set_grad_enabled(self._mode):
                return fn(*args, **kwargs)

        return wrapper


class _InferenceState(threading.local):
    enabled = False


inference_state = _InferenceState()


def is_inference_mode_enabled() -> bool:
    """Whether ``inference_mode`` is on in this thread."""
    return inference_state.enabled


class inference_mode(_GradModeContext):
    """``with inference_mode():`` (or ``@inference_mode()``, ``@inference_mode``): no gradient
    recording in this thread, as ``no_grad``; ``inference_mode(False)`` leaves grad mode as
    it is. (PyTorch's inference tensors also refuse later use in autograd; numgrad's tensors
    made inside are plain tensors that do not require grad.)"""

    def __new__(cls, mode=True):
        if callable(mode) and not isinstance(mode, bool):  # @inference_mode
            return cls()(mode)
        return super().__new__(cls)

    def __init__(self, mode: bool = True):
        if callable(mode) and not isinstance(mode, bool):
            return
        self._on = bool(mode)

    def __enter__(self):
        self._prev = state.enabled, inference_state.enabled
        if self._on:
            state.enabled = False
            inference_state.enabled = True

    def __exit__(self, *exc):
        state.enabled, inference_state.enabled = self._prev
        return False

    def __call__(self, fn):
        on = self._on

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with inference_mode(on):
                return fn(*args, **kwargs)

        return wrapper
