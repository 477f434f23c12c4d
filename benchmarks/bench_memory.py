"""Peak memory of forward + backward over a chain of 20 elementwise ops on 10,000,000 float32, and
of a training step of each model of ``models.py`` against PyTorch's (``ModelsPeak``; the table:
``python -m benchmarks.bench_memory``).

The chain is 4 × (``* 1.01``, ``+ 0.01``, ``tanh``, ``sigmoid``, ``exp``): three of every five ops
save their output for backward, so the peak shows whether saved values are freed as soon as the
engine no longer needs them. ``peakmem_`` is the process's maximum resident set size, so it also
counts the interpreter, NumPy, Numba, what asv's import of the suite loads before it forks the
case (numgrad's packages in ``_common.PREIMPORTED``, PyTorch and its ``torch._dynamo``, which
``benchmarks/compare.py`` and ``bench_models.py`` import) and the 40 MB input; ``track_*_peak_increase`` resets the kernel's high-water mark
after setup (Linux) and reports only what forward + backward added on top, in MB. The PyTorch
reference runs the same chain (skipped when PyTorch is not installed), for the issue's target:
numgrad's peak at most PyTorch's.
"""
from __future__ import annotations

from ._common import numgrad, pin_threads, randn

SIZE = 10_000_000


def chain20(m, x):
    y = x
    for _ in range(4):
        y = m.exp(m.sigmoid(m.tanh(y * 1.01 + 0.01)))
    y.sum().backward()
    x.grad = None


def _status_kb(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise NotImplementedError(f"no {field} in /proc/self/status")


def _reset_peak_rss() -> None:
    """Resets VmHWM (the peak RSS) to the current RSS: Linux ≥ 4.0, ``echo 5 > clear_refs``."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError as e:
        raise NotImplementedError(f"cannot reset the peak RSS here: {e}") from e


def _peak_increase_mb(m, x) -> float:
    _reset_peak_rss()
    base = _status_kb("VmRSS")
    chain20(m, x)
    return round((_status_kb("VmHWM") - base) / 1024, 1)


class Chain20Numgrad:
    timeout = 300

    def setup(self):
        pin_threads()
        # Above any plausible parallel-kernel threshold, so every kernel the big run uses is
        # compiled (or loaded) here, yet small next to the measured run.
        chain20(numgrad, randn(1_000_000, "float32", seed=1))
        self.x = randn(SIZE, "float32")

    def peakmem_chain20_fwd_bwd_10m_float32(self):
        chain20(numgrad, self.x)

    def track_chain20_fwd_bwd_10m_float32_peak_increase(self):
        return _peak_increase_mb(numgrad, self.x)

    track_chain20_fwd_bwd_10m_float32_peak_increase.unit = "MB"


class Chain20TorchReference:
    timeout = 300

    def setup(self):
        try:
            import torch
        except ImportError:
            raise NotImplementedError("PyTorch is not installed") from None
        self.torch = torch
        pin_threads()
        x = randn(SIZE, "float32", requires_grad=False).numpy()
        self.x = torch.from_numpy(x).requires_grad_(True)
        chain20(torch, torch.randn(1_000_000, requires_grad=True))

    def peakmem_chain20_fwd_bwd_10m_float32_torch_reference(self):
        chain20(self.torch, self.x)

    def track_chain20_fwd_bwd_10m_float32_peak_increase_torch_reference(self):
        return _peak_increase_mb(self.torch, self.x)

    track_chain20_fwd_bwd_10m_float32_peak_increase_torch_reference.unit = "MB"


def _step_peak_increase_mb(m, step) -> float:
    """What one training step adds to the peak RSS, in MB (after warm-up steps: kernels loaded,
    optimizer state made), over the RSS once the heap's free memory is given back (glibc's
    ``malloc_trim``), numgrad's and PyTorch's alike."""
    import ctypes
    import gc

    gc.collect()
    if m is numgrad:
        numgrad.empty_cache()  # (the pool's large buffers, given back: counted again if used)
    try:  # (freed memory the C heap keeps would hide what the step allocates again)
        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):
        pass
    _reset_peak_rss()
    base = _status_kb("VmRSS")
    step()
    return round((_status_kb("VmHWM") - base) / 1024, 1)


def _model_step(m, model):
    from .models import MODELS

    step = {make.__name__: make for make in MODELS.values()}[model](m)
    for _ in range(3):
        step()
    return step


class ModelsPeak:
    """Peak memory a training step of each model of ``models.py`` adds (issue 29: within 1.2x
    PyTorch's step), numgrad's and PyTorch's (``torch_reference``)."""

    params = (["cnn", "lstm_lm", "tiny_gpt", "resnet_block", "conv_transpose"],
              ["numgrad", "torch_reference"])
    param_names = ["model", "library"]
    timeout = 600

    def setup(self, model, library):
        if library == "numgrad":
            m = numgrad
        else:
            try:
                import torch as m
            except ImportError:
                raise NotImplementedError("PyTorch is not installed") from None
        pin_threads()
        self.m, self.step = m, _model_step(m, model)

    def track_step_peak_increase(self, model, library):
        return _step_peak_increase_mb(self.m, self.step)

    track_step_peak_increase.unit = "MB"


if __name__ == "__main__":  # python -m benchmarks.bench_memory: the models' table
    import torch

    print(f"{'model':16s} {'numgrad MB':>11s} {'PyTorch MB':>11s} {'ratio':>6s}")
    for model in ModelsPeak.params[0]:
        ours = _step_peak_increase_mb(numgrad, _model_step(numgrad, model))
        theirs = _step_peak_increase_mb(torch, _model_step(torch, model))
        print(f"{model:16s} {ours:11.1f} {theirs:11.1f} {ours / max(theirs, 0.1):6.2f}")
