"""The CUDA target, tested in Numba's CUDA simulator.

The simulator must be switched on (``NUMBA_ENABLE_CUDASIM=1``) before numba-cuda is imported, and
the rest of this pytest process must keep compiling real CPU kernels, so the CUDA tests live in
``tests/cuda_sim/`` (ignored by this process's collection, see conftest.py) and run once, in one
subprocess, with the simulator on. Each registry-driven case is reported here under its own id,
from that run's JUnit XML; the memory pool and interop tests (test_cuda_memory.py) are reported
as one group, and every other test (device plumbing, numpy shim) as another.
"""
import importlib.util
import json
import os
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

import _background

HERE = Path(__file__).parent
SIM_DIR = HERE / "cuda_sim"

_spec = importlib.util.spec_from_file_location("_cuda_cases", SIM_DIR / "_cases.py")
cases = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cases)

pytestmark = [
    pytest.mark.skipif(importlib.util.find_spec("numba_cuda") is None,
                       reason="numba-cuda (the 'cuda' extra) is not installed"),
    pytest.mark.skipif(os.environ.get("NUMBA_ENABLE_CUDASIM") == "1",
                       reason="the simulator is on in this process: tests/cuda_sim runs here"),
]

OP_CASES = [("test_op_matches_cpu", cases.case_id(*c)) for c in cases.cuda_cases()]


class _Results(dict):
    """{test name: (outcome, message)}, and ``modules``: {test name: its module's dotted name}."""

    modules: dict


def start_background_run():
    """The one simulator run of this session, in a background process (see _background.py),
    recording every kernel launch (tests/cuda_sim/conftest.py)."""
    return _background.start(
        "cuda-sim",
        ["-m", "pytest", "-q", "-p", "no:cacheprovider", str(SIM_DIR),
         "--junitxml={folder}/results.xml"],
        {"NUMBA_ENABLE_CUDASIM": "1", "NUMGRAD_RECORD_LAUNCHES": "{folder}/launches.json"})


@pytest.fixture(scope="module")
def sim_run():
    run = start_background_run()
    text = run.wait(timeout=1200)
    if not (run.folder / "results.xml").exists():
        pytest.fail(f"the simulator run did not report:\n{text[-8000:]}")
    return run


@pytest.fixture(scope="module")
def sim_results(sim_run):
    """{test name: (outcome, message)} of one simulator run of tests/cuda_sim (a name that two
    modules use is kept as ``module::name`` from its second module on)."""
    results = _Results()
    results.modules = {}
    for case in ET.parse(sim_run.folder / "results.xml").getroot().iter("testcase"):
        name = case.get("name")
        if name in results:
            name = f"{(case.get('classname') or '').rpartition('.')[2]}::{name}"
        assert name not in results, f"{name} ran twice"
        outcome, message = "passed", ""
        for kind in ("failure", "error", "skipped"):
            node = case.find(kind)
            if node is not None:
                outcome, message = kind, (node.get("message") or "") + "\n" + (node.text or "")
        results[name] = (outcome, message)
        results.modules[name] = case.get("classname") or ""
    return results


def _check(results, name):
    assert name in results, f"{name} did not run in the simulator"
    outcome, message = results[name]
    assert outcome == "passed", f"{name}: {outcome}\n{message}"


@pytest.mark.parametrize("test, case", OP_CASES, ids=[c for _, c in OP_CASES])
def test_op_on_cuda_matches_cpu(sim_results, test, case):
    _check(sim_results, f"{test}[{case}]")


def test_memory_pool_and_cuda_array_interface(sim_results):
    """tests/cuda_sim/test_cuda_memory.py: the caching pool's bookkeeping (fake allocator), the
    simulator's pool, numba-cuda's DeviceNDArray glue, ``__cuda_array_interface__`` interop."""
    names = [n for n, m in sim_results.modules.items() if m.rpartition(".")[2] == "test_cuda_memory"]
    assert len(names) >= 20, f"only {len(names)} memory tests ran in the simulator"
    failed = {n: sim_results[n][1] for n in names if sim_results[n][0] != "passed"}
    assert not failed, "\n\n".join(f"{n}:\n{m}" for n, m in failed.items())


def test_device_plumbing_and_numpy_shim(sim_results):
    """Every other simulator test (devices, transfers, errors, kernels, the numpy 2.5 shim)."""
    registry_driven = {f"{t}[{c}]" for t, c in OP_CASES}
    assert registry_driven <= set(sim_results)
    others = {n: r for n, r in sim_results.items() if n not in registry_driven}
    assert len(others) >= 20
    failed = {n: m for n, (o, m) in others.items() if o != "passed"}
    assert not failed, "\n\n".join(f"{n}:\n{m}" for n, m in failed.items())


def test_every_kernel_launch_is_in_the_compile_checks_catalogue(sim_run):
    """Each kernel the simulator suite launched, with its argument types, is among the
    signatures that the compile check compiles for real GPUs (tests/test_cuda_compile.py), so no
    launched kernel escapes it."""
    from numgrad.kernels.cuda import signatures

    launched = json.loads((sim_run.folder / "launches.json").read_text())
    declared: dict = {}
    for _, kernel, sigs in signatures.catalogue():
        name = f"{kernel.py_func.__module__}.{kernel.py_func.__qualname__}"
        declared.setdefault(name, set()).update(tuple(str(t) for t in sig) for sig in sigs)
    missing = [f"{name}{tuple(sig)}" for name, sigs in launched.items() for sig in sigs
               if tuple(sig) not in declared.get(name, ()) and not name.startswith(PROGRAMS)]
    assert len(launched) >= 30
    assert not missing, "launched but not in kernels/cuda/signatures.py:\n" + "\n".join(missing)


PROGRAMS = "numgrad.kernels.generated.program_"  # (numgrad.compile's fused kernels)


def _numba_type(text: str):
    """A Numba type from its name as the launch record writes it: "array(float32, 1d, C)"."""
    from numba.core import types

    found = re.fullmatch(r"array\((\w+), (\d+)d, (\w)\)", text)
    if found:
        return types.Array(getattr(types, found[1]), int(found[2]), found[3])
    return getattr(types, "boolean" if text == "bool" else text)


@pytest.mark.skipif(importlib.util.find_spec("cuda.core") is None,
                    reason="numba-cuda[cu12] (NVVM, nvJitLink) is not installed")
def test_every_fused_kernel_launched_compiles_for_gpus(sim_run):
    """numgrad.compile's kernels for a step on CUDA tensors are generated per program, so no
    catalogue lists them: each one the simulator suite launched (tests/cuda_sim/
    test_cuda_compiled.py) is compiled here from its module's text, for the argument types it
    was launched with, to PTX and a cubin for sm_80 and sm_90, as the compile check does."""
    import types

    from numgrad.kernels.cuda import compile_check

    launched = json.loads((sim_run.folder / "launches.json").read_text())
    texts = json.loads((sim_run.folder / "launches.json.programs.json").read_text())
    kernels = {name: sigs for name, sigs in launched.items() if name.startswith(PROGRAMS)}
    assert len(kernels) >= 5 and set(texts) == {n.rpartition(".")[0] for n in kernels}
    modules = {}
    for name, text in texts.items():
        modules[name] = types.ModuleType(name)
        exec(compile(text, name, "exec"), modules[name].__dict__)  # noqa: S102 (generated here)
    results = []
    for name, sigs in sorted(kernels.items()):
        module, _, function = name.rpartition(".")
        kernel = getattr(modules[module], function)
        for sig in sigs:
            for cc in compile_check.CCS:
                results.append(compile_check.compile_one(
                    name, kernel, tuple(_numba_type(t) for t in sig), cc))
    failed = [f"{r.kernel} {r.signature} {r.cc}: {r.error}" for r in results if r.error]
    assert not failed, "\n".join(failed)
