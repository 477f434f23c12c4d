"""The workloads of the speed issue, timed forward + backward: the same code as
``benchmarks/compare.py`` runs, from ``workloads.py``."""
from __future__ import annotations

import os

from ._common import CPU_TIMER, ROUNDS, Memo, numgrad, pin_threads
from .workloads import chain_200, elementwise_1m, matmul_512, mlp_step, seed_walkthrough


_memo = Memo()


class _Workload:
    make = None
    timer = CPU_TIMER
    # Fixed sample sizes (so that every run times the same loop, and ``--quick`` one call of an
    # already warm workload); no warm-up phase: ``setup`` has made the first call.
    number = 50
    repeat = 1
    rounds = ROUNDS
    warmup_time = 0.0

    def setup(self):
        pin_threads()
        self.run = _memo.get(type(self), lambda: _warm(type(self).make(numgrad), 1))


def _warm(run, calls):
    for _ in range(calls):  # the first call compiles / loads the kernels
        run()
    return run


class SeedWalkthrough(_Workload):
    """``ones(2, 2, requires_grad=True)``, ``+ 2``, ``* y * 3``, ``mean``, ``backward``."""

    make = staticmethod(seed_walkthrough)
    number = 1000

    def time_seed_walkthrough(self):
        self.run()


class Chain200(_Workload):
    """200 × (``y = y * 1.001 + 0.001``) on 100 float64 elements, ``sum``, ``backward``:
    400 small ops, so this is the per-op Python overhead (dispatch, graph recording, engine)."""

    make = staticmethod(chain_200)

    def time_chain_200_float64_100(self):
        self.run()


class Elementwise1M(_Workload):
    """``(tanh(x * 1.5 + 0.5) * sigmoid(x)).sum().backward()``, x of 1,000,000 float32."""

    make = staticmethod(elementwise_1m)

    def time_tanh_sigmoid_1m_float32(self):
        self.run()


class Matmul512(_Workload):
    """``(a @ b).sum().backward()``, a and b 512×512 float32."""

    make = staticmethod(matmul_512)

    def time_matmul_512_float32(self):
        self.run()


class MlpStep(_Workload):
    """An MLP training step: 64×784 → 256 relu → 10, log-softmax loss gathered by integer
    index, backward, SGD update."""

    make = staticmethod(mlp_step)

    def time_mlp_step(self):
        self.run()


class Compiled:
    """The same workloads through ``numgrad.compile``: a call is a guard check and the replay of
    the traced program (fused Numba functions, BLAS for the products)."""

    params = ["seed", "chain", "elementwise_1m", "matmul_512", "mlp_step"]
    param_names = ["workload"]
    timer = CPU_TIMER
    number = 50
    repeat = 1
    rounds = ROUNDS
    warmup_time = 0.0  # (setup has made the first calls)
    _makes = {"seed": seed_walkthrough, "chain": chain_200, "elementwise_1m": elementwise_1m,
              "matmul_512": matmul_512, "mlp_step": mlp_step}

    def setup(self, workload):
        pin_threads()
        # Three calls: trace (twice where a first step makes optimizer state), compile.
        self.run = _memo.get(("compiled", workload),
                             lambda: _warm(numgrad.compile(self._makes[workload](numgrad)), 3))

    def time_compiled(self, workload):
        self.run()


class CompileCost:
    """What compiling costs a fresh process: the first compiled result of the seed walkthrough
    with the program cache empty (``timeraw_``: a new process each). One sample per round: each
    is seconds of Numba compilation. The MLP step's costs about 4x the seed's (45 s against 12 s
    in one trial on the loaded 2-core machine), too much for every commit: it is in
    ``python benchmarks/compare.py``'s compile table."""

    repeat = 1
    rounds = 2
    # No warm-up sample: asv's default (0.1 s) runs one whole sample, a fresh process compiling
    # for seconds, before the timed one.
    warmup_time = 0.0
    timeout = 300

    def timeraw_compile_seed_empty_program_cache(self):
        return _COMPILE.format(here=_HERE, make="seed_walkthrough")


_HERE = os.path.dirname(os.path.abspath(__file__))
_COMPILE = """
import os, sys, tempfile
os.environ["NUMGRAD_CACHE_DIR"] = tempfile.mkdtemp(prefix="numgrad-asv-programs-")
sys.path.insert(0, {here!r})
import numgrad
from workloads import {make}
run = numgrad.compile({make}(numgrad))
for _ in range(3):
    run()
"""
