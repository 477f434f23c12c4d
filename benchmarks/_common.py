"""Shared helpers for the asv suites (asv finds no benchmarks here: no ``time_``/``peakmem_`` names).

Importing this module makes sure the right numgrad is imported:

* under ``asv run --python=same`` (asv's "existing" environment, which installs nothing) and
  outside asv, the checkout's ``src/`` goes first on ``sys.path`` and on ``PYTHONPATH`` (so that the
  fresh processes of ``timeraw_`` benchmarks see it too): a fresh clone benchmarks its own code
  without an install, and never a stale numgrad installed elsewhere;
* in the environments asv builds itself (``virtualenv``, used by ``asv continuous`` and by runs over
  commit ranges), the numgrad that asv installed for the commit under test is imported.

Every benchmark module imports this one before numgrad.
"""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"


def _use_checkout_source() -> bool:
    return (os.environ.get("ASV_ENV_TYPE", "existing") == "existing"
            and (SRC / "numgrad" / "__init__.py").is_file())


if _use_checkout_source():
    _src = str(SRC)
    if _src not in sys.path:
        sys.path.insert(0, _src)
    _pythonpath = os.environ.get("PYTHONPATH", "")
    if _src not in _pythonpath.split(os.pathsep):
        os.environ["PYTHONPATH"] = _src + (os.pathsep + _pythonpath if _pythonpath else "")

import importlib  # noqa: E402

import numpy as np  # noqa: E402

import numgrad  # noqa: E402

# The packages numgrad imports on first use that the suites' cases use (layers, optimizers, the
# compiler, function transforms, user formulas), imported here: asv imports the suite once in the
# process it forks every case from ("launch_method": "forkserver"), so each case starts with them
# instead of importing them again (over a second of CPU per case where Python compiles their
# sources, as with PYTHONDONTWRITEBYTECODE). Python modules only: no kernel is loaded and no
# thread started before the fork. A package missing from an older commit is skipped.
PREIMPORTED = ("numgrad.nn", "numgrad.nn.functional", "numgrad.optim", "numgrad.func",
               "numgrad.library", "numgrad.compiler.tracer", "numgrad.compiler.program",
               "numgrad.compiler.lower", "numgrad.compiler.whole", "numgrad.compiler.aot")
for _name in PREIMPORTED:
    try:
        importlib.import_module(_name)
    except ImportError:
        pass

DTYPES = {"float32": np.float32, "float64": np.float64}

# Threads every benchmark runs with (numgrad's kernels and BLAS, and PyTorch's where it is the
# reference): a fixed count, so that a result does not move with the machine's free cores. One by
# default: a second thread on a 2-core machine shares its core with asv and with whatever else
# runs, and a parallel kernel waits for its slowest thread, so a busy core slows a 2-thread
# kernel by more than its share. NUMGRAD_ASV_THREADS=2 measures the threaded path.
THREADS = int(os.environ.get("NUMGRAD_ASV_THREADS", "1"))
_pinned: set = set()

# What a sample measures (asv's ``timer`` attribute, set on every timed suite): the process's CPU
# time, not wall time. On one thread that is the work the call did, which other processes on the
# machine stretch far less than the wall clock, where a call waits while they run. (The
# ``timeraw_`` start-up benchmarks time a fresh process by the wall clock, asv's only way there.)
CPU_TIMER = time.process_time

# Rounds of the timed suites: one sample each (see bench_ops.py), the two commits of
# ``asv continuous`` alternating. With 3 samples a commit asv's rank test cannot reach its
# threshold, so it reports a change only where the two commits' confidence intervals, built from
# the rounds, do not overlap.
ROUNDS = 3


def pin_threads() -> None:
    """Called by each suite's ``setup``: numgrad (and PyTorch, if imported) on ``THREADS``. asv
    re-runs ``setup`` before every timed call, so only the first call in a process (or the first
    after PyTorch is imported) does anything."""
    if "numgrad" not in _pinned:
        numgrad.set_num_threads(min(THREADS, os.cpu_count() or 1))
        _pinned.add("numgrad")
    torch = sys.modules.get("torch")
    if torch is not None and "torch" not in _pinned:
        torch.set_num_threads(THREADS)
        _pinned.add("torch")


def randn(shape, dtype: str = "float32", requires_grad: bool = True, seed: int = 0):
    """A numgrad leaf of standard-normal values, built by NumPy (no numgrad kernel involved)."""
    data = np.random.default_rng(seed).standard_normal(shape, dtype=DTYPES[dtype])
    return numgrad.from_numpy(data).requires_grad_(requires_grad)


class Memo:
    """A one-entry cache. asv re-runs ``setup`` before every timed call (and every sample), so a
    suite's inputs, its warm-up call (which compiles or loads the kernels), a model or a compiled
    program are built once per parameter set through this, and ``setup`` is a lookup after that."""

    def __init__(self):
        self.key = None
        self.value = None

    def get(self, key, build):
        if key != self.key:
            self.key, self.value = None, None  # free the previous inputs before building new ones
            self.value = build()
            self.key = key
        return self.value
