"""The models of the real-model speed issue (``models.py``: the MNIST-example CNN, the word-LM
LSTM, a tiny GPT, a ResNet block and a transposed convolution), one training step each, eager
and compiled, and PyTorch's step beside them where PyTorch is installed. ``setup`` runs three
steps first (kernels compiled, a compiled step traced and its program built), so no sample,
``--quick``'s single one included, times a first call."""
from __future__ import annotations

from ._common import numgrad, pin_threads
from .models import MODELS

_MAKES = {make.__name__: make for make in MODELS.values()}


def _warm(step):
    for _ in range(3):
        step()
    return step


class Models:
    """numgrad's step, eagerly and through ``numgrad.compile``."""

    params = (list(_MAKES), ["eager", "compiled"])
    param_names = ["model", "mode"]
    number = 1
    repeat = (3, 5, 60.0)
    rounds = 2
    warmup_time = 0.0  # (setup has run three steps)
    timeout = 600

    def setup(self, model, mode):
        pin_threads()
        step = _MAKES[model](numgrad)
        self.step = _warm(numgrad.compile(step) if mode == "compiled" else step)

    def time_step(self, model, mode):
        self.step()


class ModelsTorchReference:
    """PyTorch's step of the same model (two threads, as ``compare.py`` measures it); skipped
    where PyTorch is not installed."""

    params = list(_MAKES)
    param_names = ["model"]
    number = 1
    repeat = (3, 5, 60.0)
    rounds = 2
    warmup_time = 0.0  # (setup has run three steps)
    timeout = 600

    def setup(self, model):
        try:
            import torch
        except ImportError:
            raise NotImplementedError("PyTorch is not installed") from None
        pin_threads()
        self.step = _warm(_MAKES[model](torch))

    def time_step(self, model):
        self.step()
