"""Containers: ``Sequential``, ``ModuleList``, ``ModuleDict``, ``ParameterList`` and
``ParameterDict``."""
from __future__ import annotations

import operator
from collections import OrderedDict
from collections import abc as container_abcs
from itertools import islice
from typing import Any, Iterable, Iterator

from ...tensor import Tensor, _typename
from ..parameter import Parameter
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


class ModuleDict(Module):
    """An ordered dictionary of modules, registered so that their parameters belong to the
    owner (keys in insertion order; a mapping's order is kept)."""

    def __init__(self, modules=None) -> None:
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key: str) -> Module:
        return self._modules[key]

    def __setitem__(self, key: str, module: Module) -> None:
        self.add_module(key, module)

    def __delitem__(self, key: str) -> None:
        del self._modules[key]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[str]:
        return iter(self._modules)

    def __contains__(self, key: str) -> bool:
        return key in self._modules

    def clear(self) -> None:
        """Removes every module."""
        self._modules.clear()

    def pop(self, key: str) -> Module:
        """Removes ``key`` and returns its module."""
        v = self[key]
        del self[key]
        return v

    def keys(self):
        return self._modules.keys()

    def items(self):
        return self._modules.items()

    def values(self):
        return self._modules.values()

    def update(self, modules) -> None:
        """Adds (or replaces) the modules of a mapping or of an iterable of (key, module)
        pairs."""
        if not isinstance(modules, container_abcs.Iterable):
            raise TypeError("ModuleDict.update should be called with an iterable of key/value "
                            "pairs, but got " + type(modules).__name__)
        if isinstance(modules, (OrderedDict, ModuleDict, container_abcs.Mapping)):
            for key, module in modules.items():
                self[key] = module
        else:
            for j, m in enumerate(modules):
                if not isinstance(m, container_abcs.Iterable):
                    raise TypeError("ModuleDict update sequence element #" + str(j)
                                    + " should be Iterable; is" + type(m).__name__)
                if not len(m) == 2:
                    raise ValueError("ModuleDict update sequence element #" + str(j)
                                     + " has length " + str(len(m)) + "; 2 is required")
                self[m[0]] = m[1]


def _parameter_line(key, p, typename: bool = False) -> str:
    """PyTorch's line for one entry of a ParameterList's repr (the dtype) or a ParameterDict's
    (``typename``: the tensor type's name)."""
    if isinstance(p, Tensor):
        size_str = "x".join(str(size) for size in p.size())
        device_str = f" ({p.device})" if p.device.type == "cuda" else ""
        kind = "Parameter" if isinstance(p, Parameter) else "Tensor"
        what = _typename(p) if typename else p.dtype
        return f"  ({key}): {kind} containing: [{what} of size {size_str}{device_str}]"
    return f"  ({key}): Object of type: {type(p).__name__}"


class ParameterList(Module):
    """A list of parameters, registered (as ``0``, ``1`` ...) so that they belong to the owner;
    a plain tensor put in it becomes a ``Parameter``."""

    def __init__(self, values: Iterable[Any] | None = None) -> None:
        super().__init__()
        self._size = 0
        if values is not None:
            self += values

    def _get_abs_string_index(self, idx) -> str:
        idx = operator.index(idx)
        if not (-len(self) <= idx < len(self)):
            raise IndexError(f"index {idx} is out of range")
        if idx < 0:
            idx += len(self)
        return str(idx)

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            start, stop, step = idx.indices(len(self))
            out = self.__class__()
            for i in range(start, stop, step):
                out.append(self[i])
            return out
        return getattr(self, self._get_abs_string_index(idx))

    def __setitem__(self, idx: int, param) -> None:
        idx = self._get_abs_string_index(idx)
        if isinstance(param, Tensor) and not isinstance(param, Parameter):
            param = Parameter(param)
        setattr(self, str(idx), param)

    def __len__(self) -> int:
        return self._size

    def __iter__(self) -> Iterator[Any]:
        return iter(self[i] for i in range(len(self)))

    def __iadd__(self, parameters: Iterable[Any]) -> "ParameterList":
        return self.extend(parameters)

    def __dir__(self):
        return [key for key in super().__dir__() if not key.isdigit()]

    def append(self, value: Any) -> "ParameterList":
        """Adds ``value`` at the end."""
        new_idx = len(self)
        self._size += 1
        self[new_idx] = value
        return self

    def extend(self, values: Iterable[Any]) -> "ParameterList":
        """Adds each of ``values`` at the end."""
        if not isinstance(values, container_abcs.Iterable) or isinstance(values, Tensor):
            raise TypeError("ParameterList.extend should be called with an iterable, but got "
                            + type(values).__name__)
        for value in values:
            self.append(value)
        return self

    def extra_repr(self) -> str:
        return "\n".join(_parameter_line(k, p) for k, p in enumerate(self))

    def __call__(self, *args, **kwargs):
        raise RuntimeError("ParameterList should not be called.")


class ParameterDict(Module):
    """An ordered dictionary of parameters, registered under their keys so that they belong
    to the owner; a plain tensor put in it becomes a ``Parameter``. As PyTorch, ``update``
    with a plain (unordered) mapping adds its items sorted by key."""

    def __init__(self, parameters: Any = None) -> None:
        super().__init__()
        self._keys: dict[str, None] = {}
        if parameters is not None:
            self.update(parameters)

    def _key_to_attr(self, key) -> str:
        if not isinstance(key, str):
            raise TypeError(
                "Index given to ParameterDict cannot be used as a key as it is not a string "
                f"(type is '{type(key).__name__}'). Open an issue on github if you need "
                "non-string keys.")
        return key

    def __getitem__(self, key: str) -> Any:
        return getattr(self, self._key_to_attr(key))

    def __setitem__(self, key: str, value: Any) -> None:
        self._keys[key] = None
        attr = self._key_to_attr(key)
        if isinstance(value, Tensor) and not isinstance(value, Parameter):
            value = Parameter(value)
        setattr(self, attr, value)

    def __delitem__(self, key: str) -> None:
        del self._keys[key]
        delattr(self, self._key_to_attr(key))

    def __len__(self) -> int:
        return len(self._keys)

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)

    def __reversed__(self) -> Iterator[str]:
        return reversed(list(self._keys))

    def copy(self) -> "ParameterDict":
        """A new ParameterDict holding the same parameters."""
        return ParameterDict(OrderedDict((k, self[k]) for k in self._keys))

    def __contains__(self, key: str) -> bool:
        return key in self._keys

    def setdefault(self, key: str, default: Any = None) -> Any:
        if key not in self:
            self[key] = default
        return self[key]

    def clear(self) -> None:
        for k in self._keys.copy():
            del self[k]

    def pop(self, key: str) -> Any:
        v = self[key]
        del self[key]
        return v

    def popitem(self) -> tuple[str, Any]:
        k, _ = self._keys.popitem()
        self._keys[k] = None  # (so that __delitem__ finds it)
        val = self[k]
        del self[k]
        return k, val

    def get(self, key: str, default: Any = None) -> Any:
        return self[key] if key in self else default

    def fromkeys(self, keys: Iterable[str], default: Any = None) -> "ParameterDict":
        return ParameterDict((k, default) for k in keys)

    def keys(self):
        return self._keys.keys()

    def items(self):
        return ((k, self[k]) for k in self._keys)

    def values(self):
        return (self[k] for k in self._keys)

    def update(self, parameters) -> None:
        """Adds (or replaces) the entries of a mapping or of an iterable of (key, value)
        pairs."""
        if not isinstance(parameters, container_abcs.Iterable):
            raise TypeError("ParametersDict.update should be called with an iterable of "
                            "key/value pairs, but got " + type(parameters).__name__)
        if isinstance(parameters, (OrderedDict, ParameterDict)):
            for key, parameter in parameters.items():
                self[key] = parameter
        elif isinstance(parameters, container_abcs.Mapping):
            for key, parameter in sorted(parameters.items()):
                self[key] = parameter
        else:
            for j, p in enumerate(parameters):
                if not isinstance(p, container_abcs.Iterable):
                    raise TypeError("ParameterDict update sequence element #" + str(j)
                                    + " should be Iterable; is" + type(p).__name__)
                if not len(p) == 2:
                    raise ValueError("ParameterDict update sequence element #" + str(j)
                                     + " has length " + str(len(p)) + "; 2 is required")
                self[p[0]] = p[1]

    def extra_repr(self) -> str:
        return "\n".join(_parameter_line(k, p, True) for k, p in self.items())

    def __call__(self, input):
        raise RuntimeError("ParameterDict should not be called.")

    def __or__(self, other: "ParameterDict") -> "ParameterDict":
        copy = self.copy()
        copy.update(other)
        return copy

    def __ror__(self, other: "ParameterDict") -> "ParameterDict":
        copy = other.copy()
        copy.update(self)
        return copy

    def __ior__(self, other: "ParameterDict") -> "ParameterDict":
        self.update(other)
        return self
