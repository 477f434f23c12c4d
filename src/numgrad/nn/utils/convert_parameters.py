"""``parameters_to_vector`` and ``vector_to_parameters``: a model's parameters as one flat
vector and back (PyTorch's ``torch.nn.utils.convert_parameters``)."""
from __future__ import annotations

from ...tensor import Tensor, _typename
from ...ops.shape import cat

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def _check_param_device(param: Tensor, old_param_device):
    """The device of the parameters so far (``old_param_device``; None for the first): a
    TypeError for parameters on two devices, as PyTorch's."""
    current = param.device
    if old_param_device is None:
        return current
    if current != old_param_device:
        raise TypeError(
            "Found two parameters on different devices, this is currently not supported.")
    return old_param_device


def parameters_to_vector(parameters) -> Tensor:
    """The parameters flattened and concatenated into one vector (differentiable)."""
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    device = None
    vec = []
    for param in parameters:
        device = _check_param_device(param, device)
        vec.append(param.view(-1))
    return cat(vec)


def vector_to_parameters(vec: Tensor, parameters) -> None:
    """Copies the slices of ``vec`` into the parameters, in order: each parameter's ``.data``
    becomes a view of its slice of ``vec``, as in PyTorch."""
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {_typename(vec)}")
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    device = None
    pointer = 0
    for param in parameters:
        device = _check_param_device(param, device)
        n = param.numel()
        param.data = vec[pointer:pointer + n].view_as(param).data
        pointer += n
