"""``numgrad.utils.dlpack``, as ``torch.utils.dlpack``: ``to_dlpack``, ``from_dlpack`` and
``DLDeviceType`` (``numgrad._dlpack`` has the details)."""
from .._dlpack import DLDeviceType, from_dlpack, to_dlpack  # noqa: F401

__all__ = ["DLDeviceType", "from_dlpack", "to_dlpack"]
