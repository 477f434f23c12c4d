"""The workloads of issue 4, timed forward + backward (the same code as benchmarks/compare.py).

Left out for now: the MLP step (64×784 input, 784→256 relu → 10, log-softmax loss with an
integer-index gather, backward, SGD update under ``no_grad``). It needs ``log_softmax``/
``cross_entropy``, integer-tensor indexing, ``nn.Linear`` and ``optim.SGD``, which numgrad does not
have yet; add ``time_mlp_step`` here when they land.
"""
from __future__ import annotations

import numpy as np

from ._common import Memo, numgrad, randn


def seed_walkthrough():
    x = numgrad.ones(2, 2, requires_grad=True)
    y = x + 2
    out = (y * y * 3).mean()
    out.backward()
    return x.grad


class SeedWalkthrough:
    """``ones(2, 2, requires_grad=True)``, ``+ 2``, ``* y * 3``, ``mean``, ``backward``."""

    def setup(self):
        seed_walkthrough()  # first call compiles / loads the kernels

    def time_seed_walkthrough(self):
        seed_walkthrough()


class Chain200:
    """200 × (``y = y * 1.001 + 0.001``) on 100 float64 elements, ``sum``, ``backward``:
    400 small ops, so this is the per-op Python overhead (dispatch, graph recording, engine)."""

    def setup(self):
        self.x = numgrad.tensor(np.linspace(-1, 1, 100), dtype=numgrad.float64, requires_grad=True)
        self.time_chain_200_float64_100()

    def time_chain_200_float64_100(self):
        y = self.x
        for _ in range(200):
            y = y * 1.001 + 0.001
        y.sum().backward()
        self.x.grad = None


_elementwise_memo = Memo()


class Elementwise1M:
    """``(tanh(x * 1.5 + 0.5) * sigmoid(x)).sum().backward()``, x of 1,000,000 float32."""

    def setup(self):
        def build():
            x = randn(1_000_000, "float32")
            self._run(x)
            return x

        self.x = _elementwise_memo.get("x", build)

    @staticmethod
    def _run(x):
        (numgrad.tanh(x * 1.5 + 0.5) * numgrad.sigmoid(x)).sum().backward()
        x.grad = None

    def time_tanh_sigmoid_1m_float32(self):
        self._run(self.x)


class Matmul512:
    """``(a @ b).sum().backward()``, a and b 512×512 float32."""

    def setup(self):
        self.a = randn((512, 512), "float32", seed=0)
        self.b = randn((512, 512), "float32", seed=1)
        self.time_matmul_512_float32()

    def time_matmul_512_float32(self):
        (self.a @ self.b).sum().backward()
        self.a.grad = self.b.grad = None
