"""``K.custom_call`` and ``custom_call_into`` on CUDA: the custom op's ``"cuda"`` kernel, as one
call (how the compiler records it: ``kernels/cpu/custom.py``)."""
from ...library import call_kernel


def custom_call(qualname: str, *args):
    """The CUDA kernel of the custom op ``qualname`` on ``args`` (arrays and constants)."""
    return call_kernel(qualname, "cuda", args)


def custom_call_into(qualname: str, written, *args):
    """``custom_call`` of an op that writes into ``written`` (one of ``args``)."""
    return call_kernel(qualname, "cuda", args)
