"""What ``import numgrad`` does to a fresh process: the subpackages it imports on first use
(``numgrad.nn``, ``optim``, ``utils``, ``viz``) are reachable as before, and the garbage
collector is left as it was (nothing frozen unless asked for: test_import_hygiene.py). Each case runs in a fresh process, as
the module states it checks only exist before anything else imported them."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numgrad

SRC = str(Path(numgrad.__file__).resolve().parents[1])
LAZY = ("nn", "optim", "utils", "viz")


def _run(code: str, **env) -> dict:
    """The JSON that ``code`` prints last, run in a fresh process on the numgrad under test."""
    environ = dict(os.environ, PYTHONPATH=SRC + os.pathsep + os.environ.get("PYTHONPATH", ""),
                   NUMGRAD_QUIET="1", **env)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=environ, timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_the_seed_walkthrough_imports_no_subpackage_it_does_not_use():
    out = _run(
        f"LAZY = {LAZY!r}\n"
        "import gc, json, sys\n"
        "import numgrad as torch\n"
        "names = dir(torch)\n"
        "x = torch.ones(2, 2, requires_grad=True); y = x + 2; out = (y * y * 3).mean()\n"
        "out.backward()\n"
        "print(json.dumps({'grad': float(x.grad.sum()),\n"
        "  'loaded': sorted(n for n in LAZY if 'numgrad.' + n in sys.modules),\n"
        "  'listed': sorted(n for n in LAZY if n in names),\n"
        "  'gc': [gc.isenabled(), gc.get_freeze_count() > 0]}))\n")
    assert out == {"grad": 18.0, "loaded": [], "listed": sorted(LAZY), "gc": [True, False]}


def test_the_subpackages_are_reachable_as_attributes_imports_and_from_imports():
    out = _run(
        "import json, pickle\n"
        "import numgrad\n"
        "from numgrad.nn import MultiheadAttention\n"
        "from numgrad import optim\n"
        "import numgrad.utils.data\n"
        "print(json.dumps([\n"
        "  numgrad.nn.MultiheadAttention is MultiheadAttention, numgrad.nn.LSTM.__name__,\n"
        "  numgrad.nn.functional.interpolate.__name__, numgrad.linalg.svd.__name__,\n"
        "  optim is numgrad.optim, numgrad.optim.SGD.__name__,\n"
        "  numgrad.utils.data.DataLoader.__name__, numgrad.viz.make_dot.__name__,\n"
        "  hasattr(numgrad, 'no_such_name')]))\n")
    assert out == [True, "LSTM", "interpolate", "linalg_svd", True, "SGD", "DataLoader",
                   "make_dot", False]


def test_the_registry_holds_nn_functionals_ops_before_numgrad_nn_is_imported():
    out = _run(
        "import json, sys\n"
        "import numgrad\n"
        "from numgrad.ops import REGISTRY\n"
        "before = sorted(REGISTRY)\n"
        "assert 'numgrad.nn' not in sys.modules\n"
        "import numgrad.nn\n"
        "print(json.dumps([before, sorted(REGISTRY)]))\n")
    before, after = out
    assert before == after
    assert {"threshold", "prelu", "glu"} <= set(before)


def test_a_module_saved_loads_in_a_process_that_never_imported_numgrad_nn(tmp_path):
    path = tmp_path / "model.pt"
    model = numgrad.nn.Sequential(numgrad.nn.Linear(3, 2), numgrad.nn.ReLU())
    numgrad.save(model, path)
    numgrad.save(model.state_dict(), tmp_path / "state.pt")
    out = _run(
        "import json, sys\n"
        "import numgrad\n"
        f"m = numgrad.load({str(path)!r}, weights_only=False)\n"
        f"s = numgrad.load({str(tmp_path / 'state.pt')!r})\n"
        "print(json.dumps([type(m).__name__, [type(c).__name__ for c in m],\n"
        "  m[0].weight.tolist(), s['0.weight'].tolist(), m[0].weight.requires_grad]))\n")
    weight = model[0].weight.tolist()
    assert out == ["Sequential", ["Linear", "ReLU"], weight, weight, True]


def test_torch_function_dispatch_switches_on_in_a_fresh_process():
    out = _run(
        "import json\n"
        "import numgrad\n"
        "seen = []\n"
        "class Logged:\n"
        "    def __init__(self, t): self.t = t\n"
        "    @classmethod\n"
        "    def __torch_function__(cls, func, types, args=(), kwargs=None):\n"
        "        seen.append(func.__name__)\n"
        "        args = [a.t if isinstance(a, Logged) else a for a in args]\n"
        "        return func(*args, **(kwargs or {}))\n"
        "x = Logged(numgrad.ones(2))\n"
        "r = numgrad.add(x, 1)\n"
        "f = numgrad.nn.functional.relu(x)\n"
        "print(json.dumps([seen, r.tolist(), f.tolist()]))\n")
    assert out == [["add", "relu"], [2.0, 2.0], [1.0, 1.0]]


def test_the_collector_is_left_as_the_user_had_it():
    code = ("import gc, json\n{before}\nimport numgrad\n"
            "print(json.dumps([gc.isenabled(), gc.get_freeze_count()]))\n")
    assert _run(code.format(before="gc.disable()")) == [False, 0]
    assert _run(code.format(before="")) == [True, 0]
    failed = _run(
        "import gc, json, sys\n"
        "sys.modules['numgrad.random'] = None  # (an import that fails halfway)\n"
        "try:\n"
        "    import numgrad\n"
        "except ImportError:\n"
        "    pass\n"
        "print(json.dumps([gc.isenabled(), gc.get_freeze_count()]))\n")
    assert failed == [True, 0]


def test_import_loads_no_kernel_module_that_is_loaded_on_first_use():
    """``kernels/cpu``'s ``_LAZY_FUNCTIONS`` and ``_LAZY_MODULES`` are imported at their first
    use, not by ``import numgrad`` (numgrad's own wrappers of them, ``_lowp``, included)."""
    out = _run(
        "import json, sys\n"
        "import numgrad\n"
        "from numgrad.kernels import cpu\n"
        "lazy = set(cpu._LAZY_FUNCTIONS.values()) | set(cpu._LAZY_MODULES)\n"
        "print(json.dumps(sorted(m for m in lazy if 'numgrad.kernels.cpu.' + m in sys.modules)))\n")
    assert out == []
