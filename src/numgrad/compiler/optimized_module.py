"""``numgrad.compile(module)``: the module wrapped, as PyTorch's ``OptimizedModule``."""
from __future__ import annotations

from ..nn.modules.module import Module


class OptimizedModule(Module):
    """A module whose calls go through ``numgrad.compile`` of the module it wraps,
    ``_orig_mod``: its parameters, buffers and ``state_dict`` are the wrapped module's (under
    ``_orig_mod.``, as PyTorch names them), and any other attribute is read from it."""

    def __init__(self, mod: Module, compiled):
        super().__init__()
        self._orig_mod = mod
        object.__setattr__(self, "_compiled_forward", compiled)

    def forward(self, *args, **kwargs):
        return self._compiled_forward(*args, **kwargs)

    def __getattr__(self, name):
        try:
            return super().__getattr__(name)
        except AttributeError:
            inner = self.__dict__.get("_modules", {}).get("_orig_mod")
            if inner is None:
                raise
            return getattr(inner, name)
