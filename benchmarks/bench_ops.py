"""Per-op costs: forward alone, and forward + backward, across sizes and float dtypes.

``size`` is the number of elements of each input (a 1-D tensor); for ``matmul`` both inputs are
n×n with n = round(√size). Inputs require grad, so ``time_forward`` includes recording the graph
(what a training step pays); ``time_forward_backward`` seeds the backward pass with a precomputed
gradient of ones (or, for the scalar results of ``sum``/``mean``, with the implicit 1), so neither
timing includes a reduction that the op itself does not do. ``setup`` builds the inputs and runs the
op once, forward and backward, so the first call's Numba compilation (or cache load) is not timed.
"""
from __future__ import annotations

import math

import numpy as np

from ._common import CPU_TIMER, ROUNDS, Memo, numgrad, pin_threads, randn

UNARY = {
    "exp": numgrad.exp,
    "relu": numgrad.relu,
    "sum": numgrad.sum,
}
BINARY = {"add": numgrad.add, "matmul": numgrad.matmul}
# One op per kind of kernel: binary elementwise (add; mul and the others run the same loop and
# the same dispatch), a transcendental (exp; tanh and sigmoid run the same loop), a masked one
# (relu), a reduction (sum; mean is sum and a scale) and BLAS (matmul). The sizes: 10 elements, where an op costs its Python overhead (dispatch, graph
# recording, engine); 1,000,000, its kernel's throughput; 10,000,000, where outputs come from
# numgrad's pool of large buffers (32 MiB and up) instead of fresh mappings. float32 only: float64
# runs the same code.
OVERHEAD_OPS = ["add", "exp", "relu", "sum", "matmul"]
THROUGHPUT_OPS = ["add", "exp", "relu", "sum"]
# matmul of n×n at 10,000,000 elements (n = 3162) is ~190 GFLOP forward + backward: minutes per
# run, for a number Matmul512 (bench_workloads) already tracks.
MATMUL_MAX_SIZE = 100_000

_memo = Memo()


class Case:
    def __init__(self, op: str, size: int, dtype: str):
        if op == "matmul":
            n = round(math.sqrt(size))
            shapes = [(n, n), (n, n)]
        else:
            shapes = [(size,)] * (2 if op in BINARY else 1)
        self.inputs = [randn(shape, dtype, seed=i) for i, shape in enumerate(shapes)]
        self.fn = BINARY.get(op) or UNARY[op]
        # One forward + backward compiles (or loads from the Numba cache) every kernel involved.
        out = self.fn(*self.inputs)
        self.grad_out = None if out.ndim == 0 else numgrad.ones_like(out)
        out.backward(self.grad_out)
        for t in self.inputs:
            t.grad = None

    def forward(self):
        return self.fn(*self.inputs)

    def forward_backward(self):
        out = self.fn(*self.inputs)
        if self.grad_out is None:
            out.backward()
        else:
            out.backward(self.grad_out)
        for t in self.inputs:
            t.grad = None


# Sampling. Each parameter case is a process (asv forks it from a server that imported the
# suite once, "launch_method": "forkserver" in asv.conf.json), and a round runs every case once,
# the two commits of ``asv continuous`` alternating round by round. On a shared machine the noise
# is in the round (what else runs then), not in the calls within it: samples of one round move
# together, and asv, which takes samples as independent, called many of them a change. So each
# round takes one sample, the mean of ``number`` calls (``repeat = 1``), and asv compares the
# rounds' samples (``_common.ROUNDS``).


class OpsOverhead:
    """Per-op overhead: forward, and forward + backward, of 10-element float32 tensors (matmul:
    3×3). Fixed ``number`` and ``repeat``, so that every run and ``--quick`` time the same loop."""

    params = OVERHEAD_OPS
    param_names = ["op"]
    timer = CPU_TIMER
    number = 1000
    repeat = 1
    rounds = ROUNDS
    warmup_time = 0.0  # (setup has made the first calls)

    def setup(self, op):
        pin_threads()
        self.case = _memo.get((op, 10), lambda: Case(op, 10, "float32"))

    def time_forward(self, op):
        self.case.forward()

    def time_forward_backward(self, op):
        self.case.forward_backward()


class OpsThroughput:
    """Kernel throughput: forward + backward of 1,000,000 and 10,000,000 float32 elements."""

    params = (THROUGHPUT_OPS, [1_000_000, 10_000_000])
    param_names = ["op", "size"]
    timer = CPU_TIMER
    number = 5
    repeat = 1
    rounds = ROUNDS
    warmup_time = 0.0  # (setup has made the first calls)
    timeout = 300

    def setup(self, op, size):
        pin_threads()
        self.case = _memo.get((op, size), lambda: Case(op, size, "float32"))

    def time_forward_backward(self, op, size):
        self.case.forward_backward()


class RandomDraws:
    """Draws from the Philox stream (``rand``, ``randn``) and dropout's forward + backward (its
    mask is a Bernoulli draw), against NumPy's PCG64 draws of the same size as the floor: 1M
    float32, the generator's throughput (a small draw's cost is the per-op overhead that
    ``OpsOverhead`` times)."""

    params = ([1_000_000], ["float32"])
    param_names = ["size", "dtype"]
    timer = CPU_TIMER
    number = 10
    repeat = 1
    rounds = ROUNDS
    warmup_time = 0.0  # (setup has made the first calls)

    def setup(self, size, dtype):
        pin_threads()
        self.dtype, self.x, self.rng = _memo.get(("random", size, dtype),
                                                 lambda: self._build(size, dtype))

    @staticmethod
    def _build(size, dtype):
        dt = getattr(numgrad, dtype)
        x = randn((size,), dtype)
        numgrad.rand(size, dtype=dt), numgrad.randn(size, dtype=dt)
        numgrad.nn.functional.dropout(x, 0.5).sum().backward()
        x.grad = None
        return dt, x, np.random.default_rng(0)

    def time_rand(self, size, dtype):
        numgrad.rand(size, dtype=self.dtype)

    def time_randn(self, size, dtype):
        numgrad.randn(size, dtype=self.dtype)

    def time_numpy_random(self, size, dtype):
        self.rng.random(size, dtype=np.dtype(dtype))

    def time_dropout_forward_backward(self, size, dtype):
        numgrad.nn.functional.dropout(self.x, 0.5).sum().backward()
        self.x.grad = None
