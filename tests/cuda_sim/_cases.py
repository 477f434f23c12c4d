"""The registry-driven CUDA cases, importable without CUDA (tests/test_cuda.py lists them too,
so that each case is reported once by the main pytest run)."""
from numgrad.ops import REGISTRY

DTYPES = ("float32", "float64")


def cuda_cases():
    """(op name, sample index, dtype) of every sample of every op (each runs on CUDA)."""
    return [
        (name, i, dtype)
        for name, op in sorted(REGISTRY.items())
        for i in range(len(op.samples))
        for dtype in DTYPES
    ]


def case_id(*parts) -> str:
    return "-".join(str(p) for p in parts)
