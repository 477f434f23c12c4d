"""``DataParallel``: PyTorch's wrapper that splits a batch over several GPUs, for programs written
for it. numgrad runs on the CPU or on one GPU, so it is the one-device case of PyTorch's: with no
GPU (PyTorch's ``device_ids == []``) a pass-through to ``module``; with numgrad's GPU, the module
moved there and the inputs moved to it before each call. The attributes (``module``,
``device_ids``, ``output_device``, ``dim``), the ``module.`` prefix of the state dict's keys and
the repr are PyTorch's. Several devices are refused: numgrad uses one.
"""
from __future__ import annotations

from itertools import chain

from ... import cuda as _cuda
from ...tensor import Tensor
from ..modules.module import Module

__all__ = ["DataParallel", "data_parallel"]


def _device_type():
    """``"cuda"`` where numgrad can use a GPU, else None (PyTorch's
    ``_get_available_device_type``)."""
    return "cuda" if _cuda.is_available() else None


def _device_index(device) -> int:
    if isinstance(device, int):
        return device
    if isinstance(device, str):
        device = device.split(":")
        return int(device[1]) if len(device) > 1 else 0
    index = getattr(device, "index", None)
    return 0 if index is None else index


def _one_device(device_ids) -> list:
    ids = [_device_index(d) for d in device_ids]
    if len(ids) != 1 or ids[0] != 0:
        raise RuntimeError(
            f"numgrad's DataParallel runs on one device (cuda:0), but device_ids={ids} were "
            "given: numgrad uses one GPU"
        )
    return ids


def _to_device(obj):
    """``obj`` with every tensor in it (in tuples, lists and dicts) on the GPU."""
    if isinstance(obj, Tensor):
        return obj if obj.is_cuda else obj.to("cuda")
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return type(obj)(*(_to_device(o) for o in obj))
    if isinstance(obj, (list, tuple)):
        return type(obj)(_to_device(o) for o in obj)
    if isinstance(obj, dict):
        return type(obj)((k, _to_device(v)) for k, v in obj.items())
    return obj


def _check_module_device(module) -> None:
    for t in chain(module.parameters(), module.buffers()):
        if not t.is_cuda:
            raise RuntimeError(
                "module must have its parameters and buffers on device cuda:0 (device_ids[0]) "
                f"but found one of them on device: {t.device}"
            )


class DataParallel(Module):
    """Runs ``module`` on the batch: on the CPU a pass-through, on numgrad's GPU with the inputs
    moved there (see the module's docstring)."""

    def __init__(self, module: Module, device_ids=None, output_device=None, dim: int = 0):
        super().__init__()
        if _device_type() is None:
            self.module = module
            self.device_ids = []
            return
        if device_ids is None:
            device_ids = [0]
        if output_device is None:
            output_device = device_ids[0]
        self.dim = dim
        self.module = module
        self.device_ids = _one_device(device_ids)
        self.output_device = _device_index(output_device)
        self.module.to("cuda")

    def forward(self, *inputs, **kwargs):
        if not self.device_ids:
            return self.module(*inputs, **kwargs)
        _check_module_device(self.module)
        return self.module(*_to_device(inputs), **_to_device(kwargs))

    def replicate(self, module, device_ids):
        raise RuntimeError("numgrad's DataParallel runs on one device: nothing to replicate")


def data_parallel(module: Module, inputs, device_ids=None, output_device=None, dim: int = 0,
                  module_kwargs=None):
    """``module(*inputs, **module_kwargs)`` on numgrad's GPU (the functional ``DataParallel``);
    PyTorch's error without one."""
    if not isinstance(inputs, tuple):
        inputs = (inputs,) if inputs is not None else ()
    if _device_type() is None:
        raise RuntimeError("device type could not be determined")
    _one_device([0] if device_ids is None else device_ids)
    _check_module_device(module)
    return module(*_to_device(inputs), **_to_device(module_kwargs or {}))
