"""``nn.functional.scaled_dot_product_attention`` alone, forward and backward, at the tiny GPT's
shape (``models.tiny_gpt``: batch 16, 4 heads, 64 positions, head size 32, float32), the heads
a view of a (B, T, H, E) tensor as nanoGPT makes them: causal, with a bool mask, and PyTorch's
call beside it where PyTorch is installed. numgrad takes its one op there
(``ScaledDotProductFlashAttentionForCpuBackward0``), PyTorch its CPU flash kernel. ``setup``
runs the first calls (kernels compiled or loaded). ``causal_long`` is one sample of a long
sequence, (1, 1024, 4, 64), causal: the queries' blocks skip the keys past their diagonal and the
threads share the sample's heads."""
from __future__ import annotations

import numpy as np

from ._common import CPU_TIMER, Memo, numgrad, pin_threads

try:
    import torch
except ImportError:  # (PyTorch is optional: the reference then skips)
    torch = None

SHAPE = (16, 64, 4, 32)  # (B, T, H, E)
LONG = (1, 1024, 4, 64)
_memo = Memo()


def _case(m, kind):
    """A function running one forward and backward of attention on module ``m``."""
    rng = np.random.default_rng(0)
    shape = LONG if kind == "causal_long" else SHAPE
    leaves = [m.tensor(rng.standard_normal(shape).astype(np.float32), requires_grad=True)
              for _ in range(3)]
    b, t, h, e = shape
    grad = m.ones(b, h, t, e)
    kw = dict(is_causal=True) if kind.startswith("causal") else \
        dict(attn_mask=m.tensor(rng.uniform(size=(t, t)) > 0.2))
    sdpa = m.nn.functional.scaled_dot_product_attention

    def run():
        q, k, v = (x.transpose(1, 2) for x in leaves)
        sdpa(q, k, v, **kw).backward(grad)

    run()
    run()
    return run


class Attention:
    params = (["numgrad", "torch"], ["causal", "bool_mask", "causal_long"])
    param_names = ["library", "mask"]
    timer = CPU_TIMER
    number = 5
    rounds = 3
    warmup_time = 0.0

    def setup(self, library, mask):
        if library == "torch" and torch is None:
            raise NotImplementedError("PyTorch is not installed")
        pin_threads()
        module = numgrad if library == "numgrad" else torch
        self.run = _memo.get((library, mask), lambda: _case(module, mask))

    def time_forward_backward(self, library, mask):
        self.run()
