"""The CUDA target, tested in Numba's CUDA simulator.

The simulator must be switched on (``NUMBA_ENABLE_CUDASIM=1``) before numba-cuda is imported, and
the rest of this pytest process must keep compiling real CPU kernels, so the CUDA tests live in
``tests/cuda_sim/`` (ignored by this process's collection, see conftest.py) and run once, in one
subprocess, with the simulator on. Each registry-driven case is reported here under its own id,
from that run's JUnit XML; the memory pool and interop tests (test_cuda_memory.py) are reported
as one group, and every other test (device plumbing, numpy shim) as another.
"""
import importlib.util
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

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


_RUN: dict = {}  # the one simulator run of this session: its process, XML report and output


def start_simulator_run() -> None:
    """Starts the simulator run of tests/cuda_sim in a background process, once. conftest.py
    calls this as soon as collection has picked any test here, so that the simulator (one core)
    runs while the rest of the suite does (the other): CI's wall time is the longer of the two,
    not their sum."""
    if _RUN:
        return
    folder = Path(tempfile.mkdtemp(prefix="numgrad-cuda-sim-"))
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    src = str(HERE.parent / "src")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (src, env.get("PYTHONPATH")) if p)
    output = open(folder / "output.txt", "w+")
    _RUN["xml"] = folder / "results.xml"
    _RUN["output"] = output
    _RUN["process"] = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(SIM_DIR),
         f"--junitxml={_RUN['xml']}"],
        cwd=HERE.parent, env=env, stdout=output, stderr=subprocess.STDOUT, text=True,
    )


def stop_simulator_run() -> None:
    """Ends a simulator run still going when the session ends (an interrupted session)."""
    process = _RUN.get("process")
    if process is not None and process.poll() is None:
        process.kill()
        process.wait()
    if _RUN.get("output") is not None and not _RUN["output"].closed:
        _RUN["output"].close()


@pytest.fixture(scope="module")
def sim_results():
    """{test name: (outcome, message)} of one simulator run of tests/cuda_sim."""
    start_simulator_run()
    process, xml, output = _RUN["process"], _RUN["xml"], _RUN["output"]
    try:
        process.wait(timeout=1200)
    except subprocess.TimeoutExpired:
        stop_simulator_run()
    output.seek(0)
    text = output.read()
    output.close()
    if not xml.exists():
        pytest.fail(f"the simulator run did not report:\n{text[-8000:]}")
    results = _Results()
    results.modules = {}
    for case in ET.parse(xml).getroot().iter("testcase"):
        name = case.get("name")
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
