"""Both kernel modules implement the one interface the ops call (kernels/interface.py), so no op
branches on the device."""
import importlib.util
import inspect
import re
from pathlib import Path

import pytest

from numgrad.kernels import cpu, formulas
from numgrad.kernels.interface import Kernels

OPS = Path(cpu.__file__).parent.parent.parent / "ops"


def _modules():
    found = [cpu]
    if importlib.util.find_spec("numba_cuda") is not None:
        from numgrad.kernels import cuda

        found.append(cuda)
    return found


def _members():
    return {name: value for name, value in vars(Kernels).items()
            if callable(value) and not name.startswith("_")}


@pytest.mark.parametrize("module", _modules(), ids=lambda m: m.__name__)
def test_the_kernel_module_implements_the_protocol(module):
    assert isinstance(module, Kernels)
    assert module.DEVICE in ("cpu", "cuda")
    members = _members()
    assert len(members) >= 40
    for name, declared in members.items():
        implemented = getattr(module, name)
        lazy = getattr(module, "_LAZY_FUNCTIONS", {}).get(name)
        if getattr(implemented, "_lowp", False) and lazy and not hasattr(implemented,
                                                                           "__wrapped__"):
            # (the narrow-dtype wrapper of a kernel whose module loads at its first call: the
            # kernel itself, read from its module without binding it on the package)
            implemented = getattr(importlib.import_module(f"{module.__name__}.{lazy}"), name)
        want = [p for p in inspect.signature(declared).parameters.values() if p.name != "self"]
        got = list(inspect.signature(implemented).parameters.values())
        assert [(p.name, p.default) for p in got] == [(p.name, p.default) for p in want], name
    for name in ("nll_loss_forward", "nll_loss_backward"):
        assert callable(getattr(module.loss, name))
    for name, op in formulas.OP_CODES.items():
        assert getattr(module, name) is op


def test_the_two_modules_take_the_same_parameters_for_losses():
    modules = _modules()
    for name in ("nll_loss_forward", "nll_loss_backward"):
        names = {tuple(inspect.signature(getattr(m.loss, name)).parameters) for m in modules}
        assert len(names) == 1, name


def test_no_op_branches_on_the_device_of_its_kernels():
    for path in sorted(OPS.glob("*.py")):
        text = path.read_text()
        assert not re.search(r"\bK\.DEVICE\b", text), f"{path.name} branches on K.DEVICE"
