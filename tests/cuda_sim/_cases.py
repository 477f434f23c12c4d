"""The registry-driven CUDA cases, importable without CUDA (tests/test_cuda.py lists them too,
so that each case is reported once by the main pytest run)."""
from numgrad.ops import REGISTRY

# Ops whose forward or backward still calls NumPy directly: on CUDA inputs they raise
# NotImplementedError. Porting an op to CUDA means setting ``on_cuda = True`` in its declaration
# and moving it out of this list.
CPU_ONLY = {
    "cat", "copy_", "fill_", "getitem_alias", "getitem_select", "getitem_select_backward",
    "getitem_slice", "getitem_slice_backward", "getitem_unsqueeze", "getitem_unsqueeze_backward",
    "index", "index_put", "index_put_impl", "narrow", "permute", "repeat", "reshape_copy",
    "setitem", "squeeze", "squeeze_", "squeeze_all", "stack", "t", "transpose", "unsqueeze",
    "zero_",
}

# Samples of CUDA ops that also call a CPU-only op (so they raise NotImplementedError on CUDA).
SAMPLES_WITH_CPU_ONLY_OPS = {
    ("clone", 1),  # a.t()
    # matmul with batch dimensions: bmm's output takes its final shape through reshape_copy
    # (UnsafeViewBackward0), and a vector operand goes through unsqueeze
    ("bmm", 1), ("bmm", 2), ("bmm", 3), ("bmm", 4), ("bmm", 5),
}

DTYPES = ("float32", "float64")


def cuda_cases():
    """(op name, sample index, dtype) of every sample of every CUDA op that runs on CUDA."""
    return [
        (name, i, dtype)
        for name, op in sorted(REGISTRY.items()) if op.on_cuda
        for i in range(len(op.samples)) if (name, i) not in SAMPLES_WITH_CPU_ONLY_OPS
        for dtype in DTYPES
    ]


def cpu_only_cases():
    """(op name, sample index) of the samples expected to raise NotImplementedError on CUDA."""
    return sorted({(name, 0) for name in REGISTRY if not REGISTRY[name].on_cuda}
                  | SAMPLES_WITH_CPU_ONLY_OPS)


def case_id(*parts) -> str:
    return "-".join(str(p) for p in parts)
