"""The core layer imports nothing above it. Each core module (dtypes, dispatch, the tensor, the
autograd node, graph and engine, the op registry) is imported alone in a fresh process in which
``numgrad/__init__.py`` does not run (the package is a bare namespace, so only what the module
imports itself is imported) and a meta-path finder refuses every higher layer (the compiler,
``nn``, ``optim``, ``func``, ``distributions``, the public facades ``linalg``/``fft``/``special``
...) and every op family (``numgrad.ops.<family>``: only the registry, with the eager fast lane,
and the table of exported names ``ops._names``, which imports nothing, are core):
an import of one of them fails the test, naming the chain that reached it."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import numgrad

PACKAGE = str(Path(numgrad.__file__).resolve().parent)

HIGHER = ("compiler", "nn", "optim", "func", "distributions", "distributed", "amp", "utils",
          "linalg", "fft", "special", "signal", "masked", "library", "onnx", "viz", "testing",
          "serialization", "safetensors", "_torch_format", "_dlpack", "_as_torch", "cuda",
          "backends", "accelerator", "_warmup", "__main__",
          # the layers just above the core: __torch_function__ (overrides.py registers its hook
          # for Tensor's subclasses in tensor._subclass_hooks), the factories, random, out=, and
          # the parts of autograd made of the core (backward/grad, Function, forward AD, checks)
          "overrides", "creation", "random", "_out", "autograd.entry", "autograd.function",
          "autograd.forward_ad", "autograd.functional", "autograd.gradcheck", "autograd.variable")

# The modules of numgrad.ops that belong to the core (the others are the op families, a layer above)
CORE_OPS = ("registry", "_names")

PROBE = r"""
import importlib, importlib.abc, importlib.machinery, json, sys, traceback, types
PACKAGE, HIGHER, MODULE = sys.argv[1], tuple(json.loads(sys.argv[2])), sys.argv[3]
CORE_OPS = tuple(json.loads(sys.argv[4]))
blocked = tuple("numgrad." + h for h in HIGHER)


class Refuse(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name in blocked or name.startswith(tuple(b + "." for b in blocked)):
            raise ImportError(f"a core module imported the higher layer {name}")
        parts = name.split(".")
        if parts[:2] == ["numgrad", "ops"] and len(parts) > 2 and parts[2] not in CORE_OPS:
            raise ImportError(f"a core module imported the op family {name}")
        return None


sys.meta_path.insert(0, Refuse())
spec = importlib.machinery.ModuleSpec("numgrad", None, is_package=True)
spec.submodule_search_locations = [PACKAGE]
package = types.ModuleType("numgrad")
package.__path__, package.__spec__ = [PACKAGE], spec
sys.modules["numgrad"] = package  # (a bare package: numgrad/__init__.py does not run)
try:
    importlib.import_module(MODULE)
    result = {"ok": True}
except Exception as error:
    chain = [f"{f.filename.rsplit('numgrad', 1)[-1]}:{f.lineno}"
             for f in traceback.extract_tb(error.__traceback__) if "numgrad" in f.filename]
    result = {"ok": False, "error": f"{type(error).__name__}: {error}", "chain": chain}
print(json.dumps(result))
"""

CORE = ["numgrad._dtype", "numgrad.dispatch", "numgrad.tensor", "numgrad.autograd.node",
        "numgrad.autograd.graph", "numgrad.autograd.engine", "numgrad.ops.registry"]


def _probe(module: str, higher: tuple = HIGHER) -> dict:
    environ = dict(os.environ, NUMGRAD_QUIET="1")
    proc = subprocess.run([sys.executable, "-c", PROBE, PACKAGE, json.dumps(higher), module,
                           json.dumps(CORE_OPS)], capture_output=True, text=True, env=environ,
                          timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("module", CORE)
def test_a_core_module_imports_alone_without_the_layers_above_it(module):
    result = _probe(module)
    assert result["ok"], f"{result['error']} (through {' -> '.join(result['chain'])})"


def test_the_tensor_imports_no_module_of_the_core_above_it():
    """Inside the core, ``tensor.py`` (with the ``autograd`` package it imports) stands below the
    graph's saved-tensor views, the engine and the op registry: it reaches them only through
    ``_lazy`` at call time, so none of them is in an import circle with it."""
    result = _probe("numgrad.tensor", HIGHER + ("autograd.graph", "autograd.engine", "ops"))
    assert result["ok"], f"{result['error']} (through {' -> '.join(result['chain'])})"


def test_the_probe_refuses_a_higher_layer_and_an_op_family():
    """The finder does refuse: a higher-layer module and an op family themselves fail to import
    (and so would any core module that reached one)."""
    result = _probe("numgrad.optim")
    assert not result["ok"] and "higher layer numgrad.optim" in result["error"]
    result = _probe("numgrad.ops.elementwise")
    assert not result["ok"] and "op family numgrad.ops.elementwise" in result["error"]


def test_every_family_is_imported_in_the_registry_order():
    """``ops._load_families`` imports ``IMPORT_ORDER`` (the order of REGISTRY) and binds
    ``FAMILY_NAMES``: a family named in one list only would be imported out of that order."""
    from numgrad import ops

    assert set(ops.FAMILY_NAMES) <= set(ops.IMPORT_ORDER)
    assert [f.__name__.rsplit(".", 1)[1] for f in ops.FAMILIES] == list(ops.FAMILY_NAMES)


def test_every_public_name_of_the_light_packages_resolves():
    """``numgrad.autograd`` and ``numgrad.ops`` give some names on first use (PEP 562): each name
    of their ``__all__`` is listed by ``dir`` and resolves, and ``autograd.gradcheck`` is the
    function, not the submodule of the same name."""
    import types

    from numgrad import autograd, ops

    for package in (autograd, ops):
        listed = dir(package)
        for name in package.__all__:
            assert name in listed, name
            assert getattr(package, name) is not None, name
    assert isinstance(autograd.gradcheck, types.FunctionType)
    assert isinstance(autograd.engine, types.ModuleType)
    assert isinstance(autograd.Function, type) and isinstance(autograd.Variable, type)
