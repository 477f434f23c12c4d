"""``K.custom_call``: the kernel of a custom op (``numgrad.library.custom_op``), as one call.

numgrad.compile records it as one node of its trace, named by the op's qualified name (a
constant of the node), and its program calls it again with the same arguments: a custom op is
opaque to the compiler, neither a break nor an eager fallback. ``custom_call_into`` is the form of
an op that writes into an argument (``mutates_args``): that argument comes first, so that the
compiler knows which memory the call writes (``compiler/ir.WRITES``)."""
from ...library import call_kernel


def custom_call(qualname: str, *args):
    """The CUDA kernel of the custom op ``qualname`` on ``args`` (arrays and constants)."""
    return call_kernel(qualname, "cuda", args)


def custom_call_into(qualname: str, written, *args):
    """``custom_call`` of an op that writes into ``written`` (one of ``args``)."""
    return call_kernel(qualname, "cuda", args)
