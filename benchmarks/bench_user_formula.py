"""A user's fused formula (``numgrad.library.elementwise``) against the same math composed from
built-in ops, 1M float32 elements, eager and compiled (``user_formula.py``)."""
from __future__ import annotations

from ._common import numgrad, pin_threads
from .user_formula import step


class UserFormula1M:
    """GELU's tanh approximation on 1M float32: forward, and forward + backward."""

    params = (["fused formula", "composed ops"], ["eager", "compiled"])
    param_names = ["how", "mode"]
    number = 5
    repeat = (5, 10, 10.0)
    warmup_time = 0.5

    def setup(self, how, mode):
        pin_threads()
        fused = how == "fused formula"
        try:
            import numgrad.library  # noqa: F401  (a commit before it: nothing to time)
        except ImportError:
            raise NotImplementedError("numgrad.library is not in this commit") from None
        self.forward = step(numgrad, fused, backward=False)
        self.train = step(numgrad, fused, backward=True)
        if mode == "compiled":
            self.forward = numgrad.compile(self.forward)
            self.train = numgrad.compile(self.train)
        self.forward()
        self.train()  # (kernels compiled, the compiled step traced)

    def time_forward(self, how, mode):
        self.forward()

    def time_forward_backward(self, how, mode):
        self.train()
