"""Running PyTorch code as it is: ``import torch`` (and ``from torch import nn``,
``torch.nn.functional``, ``torch.optim``, ``torch.utils.data`` …) resolving to numgrad.

``numgrad.install_as_torch()`` does it for the rest of a process (a notebook: run it in the first
cell); ``python -m numgrad run script.py [args]`` runs a script with it done. ``torch.X`` is
``numgrad.X`` for every module numgrad has; a module it lacks raises ModuleNotFoundError naming it.
It refuses to mix with a real PyTorch already imported: the two cannot share tensors, and the mix is
what fails as ``argument 'input' must be Tensor, not Tensor``.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import runpy
import sys
import numgrad
import numgrad.version
from numgrad import torch_version


class _TorchFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Resolves ``torch`` and ``torch.X`` to ``numgrad`` and ``numgrad.X``."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "torch" and not fullname.startswith("torch."):
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec):
        target = "numgrad" + spec.name[len("torch"):]
        try:
            return importlib.import_module(target)
        except ModuleNotFoundError as e:
            if e.name != target:
                raise
            raise ModuleNotFoundError(
                f"No module named '{spec.name}': numgrad, standing in for PyTorch here, has no "
                f"'{target}'", name=spec.name) from None

    def exec_module(self, module):
        pass  # (the numgrad module is imported already)


_FINDER = _TorchFinder()


def _real_torch_loaded() -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and not getattr(torch, "__name__", "").startswith("numgrad")


def install_as_torch(quiet: bool | None = None) -> None:
    """Makes ``import torch`` (and every ``torch.X``) give numgrad for the rest of this process.
    Raises RuntimeError if the real PyTorch is imported already. Says what it did on stderr
    unless ``quiet`` (by default: unless NUMGRAD_QUIET=1)."""
    if quiet is None:
        quiet = __import__("os").environ.get("NUMGRAD_QUIET") == "1"
    if _real_torch_loaded():
        raise RuntimeError(
            "numgrad.install_as_torch(): the real PyTorch is already imported in this process; "
            "numgrad cannot stand in for it now (their tensors do not mix). Call it before "
            "anything imports torch (in a notebook: in the first cell, after a kernel restart).")

    if _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)
    # (torch.__version__: the PyTorch whose API numgrad follows, numgrad's own as the local
    # label, so that the program's version checks take that PyTorch's path)
    numgrad.__version__ = numgrad.version.__version__ = torch_version.standing_in()
    sys.modules["torch"] = numgrad
    for name, module in list(sys.modules.items()):  # numgrad's submodules imported already
        if name.startswith("numgrad.") and module is not None:
            sys.modules.setdefault("torch" + name[len("numgrad"):], module)
    if not quiet:
        print(f"numgrad {torch_version.internal_version} stands in for PyTorch "
              f"{torch_version.PYTORCH_API}: `import torch` and "
              "`torch.X` give numgrad and numgrad.X in this process", file=sys.stderr)


def run(argv: list[str]) -> int:
    """``python -m numgrad run script.py [args]``: runs ``script.py`` as ``__main__`` with
    ``import torch`` resolving to numgrad; ``-m module`` runs a module instead."""
    if not argv:
        print("usage: python -m numgrad run script.py [args] | -m module [args]", file=sys.stderr)
        return 2
    install_as_torch()
    if argv[0] == "-m" and len(argv) > 1:
        sys.argv = argv[1:]
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
        return 0
    sys.argv = list(argv)
    sys.path.insert(0, __import__("os").path.dirname(__import__("os").path.abspath(argv[0])))
    runpy.run_path(argv[0], run_name="__main__")
    return 0
