"""``numgrad.utils.hooks``, as ``torch.utils.hooks``: the handle that hook registrations return."""
from ..autograd.node import RemovableHandle

__all__ = ["RemovableHandle"]
