"""``torch.torch_version.TorchVersion``: the type of ``__version__``, a string that compares with
version strings and tuples by their numbers (``"2.13.0" > "2.2"``, ``>= (2, 0)``), not by their
characters.

numgrad's own version is its package's (``0.1.0``). Where numgrad stands in for PyTorch
(``numgrad.install_as_torch()``, ``python -m numgrad run``), ``torch.__version__`` is the version of
PyTorch whose API numgrad follows and whose results its tests compare against, with numgrad's own
version as the local label (``2.13.0+numgrad.0.1.0``, the format of PyTorch's ``2.13.0+cpu``), so
that a program's version checks take the path they take on that PyTorch.
"""
from __future__ import annotations

import re

__all__ = ["TorchVersion", "internal_version"]

PYTORCH_API = "2.13.0"  # (the PyTorch whose API numgrad follows: its tests' oracle)


_PATTERN = re.compile(r"v?(\d+(?:\.\d+)*)(?:[-_.]?(a|b|rc|alpha|beta|c)[-_.]?(\d*))?"
                      r"(?:[-_.]?post[-_.]?(\d*))?(?:[-_.]?dev[-_.]?(\d*))?(?:\+([a-z0-9.]+))?")
_PRE = {"a": 0, "alpha": 0, "b": 1, "beta": 1, "c": 2, "rc": 2}


def _key(version) -> tuple:
    """The order of a version as PEP 440 (``packaging``) sorts it, for PyTorch's versions' forms:
    release numbers (trailing zeros ignored), a pre-release ``a``/``b``/``rc`` before the
    release and ``.dev`` before both, ``.post`` after, and a local label after none; a tuple or
    list of numbers is their dotted string, as PyTorch's TorchVersion takes it."""
    if isinstance(version, (tuple, list)):
        version = ".".join(str(part) for part in version)
    if not isinstance(version, str):
        raise TypeError(f"'{type(version).__name__}' object can not be compared to a version")
    found = _PATTERN.fullmatch(version.strip().lower())
    if found is None:
        raise ValueError(f"Invalid version: '{version}'")
    release = tuple(int(part) for part in found[1].split("."))
    while len(release) > 1 and release[-1] == 0:
        release = release[:-1]
    pre = (_PRE[found[2]], int(found[3] or 0)) if found[2] else None
    dev = int(found[5] or 0) if found[5] is not None else None
    post = int(found[4] or 0) if found[4] is not None else -1
    if pre is None:
        pre = (-1, 0) if dev is not None and post < 0 else (3, 0)
    local = () if found[6] is None else tuple(
        (1, int(part), "") if part.isdigit() else (0, 0, part)
        for part in re.split(r"[._-]", found[6]))
    return release, pre, post, (1, dev) if dev is not None else (2, 0), (bool(local), local)


class TorchVersion(str):
    """A version string compared as PyTorch's ``TorchVersion`` compares (``packaging``'s PEP 440
    order): ``"2.13.0" > "2.2"``, ``>= (2, 0)``, ``"2.13.0+cpu" > "2.13.0"``."""

    def _keys(self, other) -> tuple:
        return _key(str(self)), _key(other)

    def __eq__(self, other):
        try:
            a, b = self._keys(other)
        except (TypeError, ValueError):
            return NotImplemented
        return a == b

    def __ne__(self, other):
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    def __lt__(self, other):
        a, b = self._keys(other)
        return a < b

    def __le__(self, other):
        a, b = self._keys(other)
        return a <= b

    def __gt__(self, other):
        a, b = self._keys(other)
        return a > b

    def __ge__(self, other):
        a, b = self._keys(other)
        return a >= b

    __hash__ = str.__hash__


internal_version = TorchVersion("0.1.0")  # numgrad's own (the package's) version


def standing_in() -> TorchVersion:
    """``torch.__version__`` where numgrad stands in for PyTorch."""
    return TorchVersion(f"{PYTORCH_API}+numgrad.{internal_version}")
