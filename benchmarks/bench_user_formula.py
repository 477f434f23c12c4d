"""A user's fused formula (``numgrad.library.elementwise``) against the same math composed from
built-in ops, 1M float32 elements, eager and compiled (``user_formula.py``)."""
from __future__ import annotations

from ._common import CPU_TIMER, ROUNDS, Memo, numgrad, pin_threads
from .user_formula import step

_memo = Memo()


class UserFormula1M:
    """GELU's tanh approximation on 1M float32, forward + backward (a training step's use of
    it): the formula's one kernel each way against the composition's eight-plus passes. The
    step is built once per process (asv re-runs ``setup`` before every timed call): its
    kernels compiled or loaded, and in ``compiled`` mode the step traced and its program built,
    before any sample."""

    params = (["fused formula", "composed ops"], ["eager", "compiled"])
    param_names = ["how", "mode"]
    timer = CPU_TIMER
    number = 10
    repeat = 1
    rounds = ROUNDS
    warmup_time = 0.0  # (setup has made the first calls)
    timeout = 300

    def setup(self, how, mode):
        pin_threads()
        try:
            import numgrad.library  # noqa: F401  (a commit before it: nothing to time)
        except ImportError:
            raise NotImplementedError("numgrad.library is not in this commit") from None
        self.train = _memo.get((how, mode), lambda: self._build(how, mode))

    @staticmethod
    def _build(how, mode):
        train = step(numgrad, how == "fused formula", backward=True)
        if mode == "compiled":
            train = numgrad.compile(train)
        for _ in range(3):  # kernels compiled or loaded; compiled: traced, then the program
            train()
        return train

    def time_forward_backward(self, how, mode):
        self.train()
