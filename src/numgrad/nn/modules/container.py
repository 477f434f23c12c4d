"""Containers: ``Sequential`` and ``ModuleList``."""
from __future__ import annotations

import operator
from collections import OrderedDict
from itertools import islice
from typing import Iterable, Iterator

from .module import Module, _addindent


def _index(size: int, idx) -> int:
    idx = operator.index(idx)
    if not -size <= idx < size:
        raise IndexError(f"index {idx} is out of range")
    return idx % size


class _ModuleSequence(Module):
    """What Sequential and ModuleList share: length, iteration, deletion and appending."""

    def __delitem__(self, idx) -> None:
        keys = list(self._modules)
        for key in (keys[idx] if isinstance(idx, slice) else [keys[_index(len(self), idx)]]):
            delattr(self, key)
        # Renumber, as PyTorch does, so that indices stay 0, 1, ...
        self._modules = OrderedDict((str(i), m) for i, m in enumerate(self._modules.values()))

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def append(self, module: Module):
        """Adds ``module`` at the end."""
        self.add_module(str(len(self)), module)
        return self


class Sequential(_ModuleSequence):
    """Modules applied in order, each to the output of the previous one. Built from modules
    (named ``0``, ``1`` …) or from an OrderedDict of named modules; indexable, sliceable,
    iterable."""

    def __init__(self, *args) -> None:
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for key, module in args[0].items():
                self.add_module(key, module)
        else:
            for i, module in enumerate(args):
                self.add_module(str(i), module)

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return type(self)(OrderedDict(list(self._modules.items())[idx]))
        i = _index(len(self), idx)
        return next(islice(self._modules.values(), i, None))

    def __setitem__(self, idx: int, module: Module) -> None:
        key = list(self._modules)[_index(len(self), idx)]
        setattr(self, key, module)

    def forward(self, input):
        for module in self:
            input = module(input)
        return input


class ModuleList(_ModuleSequence):
    """A list of modules, registered so that their parameters belong to the owner."""

    def __init__(self, modules: Iterable[Module] | None = None) -> None:
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return type(self)(list(self._modules.values())[idx])
        return self._modules[str(_index(len(self), idx))]

    def __setitem__(self, idx: int, module: Module) -> None:
        setattr(self, str(_index(len(self), idx)), module)

    def extend(self, modules: Iterable[Module]) -> "ModuleList":
        """Adds each of ``modules`` at the end."""
        for module in modules:
            self.append(module)
        return self

    def __repr__(self) -> str:
        """PyTorch's repr, which folds runs of identical modules into ``(0-2): 3 x Linear(...)``."""
        reprs = [repr(m) for m in self]
        if not reprs:
            return self._get_name() + "()"
        runs = []  # [start, end, repr]
        for i, r in enumerate(reprs):
            if runs and runs[-1][2] == r:
                runs[-1][1] = i
            else:
                runs.append([i, i, r])
        lines = []
        for start, end, r in runs:
            count = end - start + 1
            label = f"({start}): {r}" if count == 1 else f"({start}-{end}): {count} x {r}"
            lines.append(_addindent(label, 2))
        return self._get_name() + "(\n  " + "\n  ".join(lines) + "\n)"
