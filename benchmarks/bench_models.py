"""The models of the real-model speed issue (``models.py``: the MNIST-example CNN, the word-LM
LSTM, a tiny GPT, a ResNet block and a transposed convolution), one training step each, eager
and compiled, and PyTorch's step beside them where PyTorch is installed. ``setup`` runs the first
steps (kernels compiled or loaded, optimizer state made, a compiled step traced and its program
built), so no sample, ``--quick``'s single one included, times a first call. A model is built
once per process: asv re-runs ``setup`` before each timed call.

A step takes 0.1-1 s, so each case takes one sample of 2 steps in each of 2 rounds: still the
suite's largest family."""
from __future__ import annotations

from ._common import CPU_TIMER, Memo, numgrad, pin_threads
from .models import MODELS

try:
    # PyTorch's optimizers import torch._dynamo when the first one is made: about 800 modules,
    # over a second of CPU, in every ModelsTorchReference case. Imported here once, in the
    # process asv forks the cases from (Python modules only: no op runs, no thread starts).
    import torch
    import torch._dynamo  # noqa: F401
except ImportError:  # (PyTorch is optional: ModelsTorchReference then skips)
    torch = None

_MAKES = {make.__name__: make for make in MODELS.values()}
_memo = Memo()


def _warm(step, calls):
    for _ in range(calls):
        step()
    return step


class Models:
    """numgrad's step, eagerly and through ``numgrad.compile``."""

    params = (list(_MAKES), ["eager", "compiled"])
    param_names = ["model", "mode"]
    # Compiled: the CNN (convolutions, pooling, linear layers) and the LSTM (a recurrence of small
    # ops, where the compiler's fusion counts most). Tracing and compiling the tiny GPT's step
    # takes longer than the rest of the family together (37 s of setup in one trial on the loaded
    # 2-core machine), for each round and commit; the ResNet block's and the transposed
    # convolution's compiled steps are convolutions and BLAS, as the CNN's, and ran within 1% of
    # their eager steps. All are timed by ``python benchmarks/compare.py --models``.
    skip_params = [("tiny_gpt", "compiled"), ("resnet_block", "compiled"),
                   ("conv_transpose", "compiled")]
    timer = CPU_TIMER
    number = 2
    repeat = 1
    rounds = 2
    warmup_time = 0.0  # (setup has run the first steps)
    timeout = 600

    def setup(self, model, mode):
        pin_threads()
        self.step = _memo.get((model, mode), lambda: self._build(model, mode))

    @staticmethod
    def _build(model, mode):
        step = _MAKES[model](numgrad)
        if mode == "compiled":  # trace (twice where the first step makes optimizer state), compile
            return _warm(numgrad.compile(step), 3)
        return _warm(step, 2)  # kernels; then a step with the optimizer's state made

    def time_step(self, model, mode):
        self.step()


class ModelsTorchReference:
    """PyTorch's step of the same model (as many threads as numgrad's), to read numgrad's beside;
    skipped where PyTorch is not installed."""

    params = list(_MAKES)
    param_names = ["model"]
    timer = CPU_TIMER
    number = 2
    repeat = 1
    rounds = 2  # (one round is one sample: asv then calls any 10% move a change)
    warmup_time = 0.0  # (setup has run two steps)
    timeout = 600

    def setup(self, model):
        if torch is None:
            raise NotImplementedError("PyTorch is not installed")
        pin_threads()
        self.step = _memo.get(("torch", model), lambda: _warm(_MAKES[model](torch), 2))

    def time_step(self, model):
        self.step()
