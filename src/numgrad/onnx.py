"""``numgrad.onnx``: present so that ``import torch.onnx`` succeeds in programs that export at
their end; numgrad cannot export ONNX graphs, and ``export`` says so."""
from __future__ import annotations


def export(model, args=(), f=None, *pargs, **kwargs):
    """Raises NotImplementedError: numgrad has no ONNX exporter."""
    raise NotImplementedError(
        "numgrad.onnx.export: numgrad cannot export models to ONNX; export the model with "
        "PyTorch itself.")


def is_in_onnx_export() -> bool:
    """False: numgrad never exports."""
    return False
