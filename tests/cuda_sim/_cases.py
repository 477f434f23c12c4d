"""The registry-driven CUDA cases, importable without CUDA (tests/test_cuda.py lists them too,
so that each case is reported once by the main pytest run)."""
from numgrad.ops import REGISTRY

DTYPES = ("float32", "float64")


# The ops declared ``on_cuda = False`` (no CUDA kernel yet: they raise NotImplementedError on
# CUDA tensors, tests/cuda_sim/test_cuda_sim.py checks each does), with why. The list may only
# shrink.
CPU_ONLY = {
    **{name: "complex tensors have no CUDA kernels yet (issue 35's complex dtypes, CPU first)"
       for name in ("abs_complex", "angle_complex", "complex", "conj", "fft_c2c", "imag",
                    "polar", "real", "view_as_complex", "view_as_real", "linalg_eig",
                    "linalg_eig_vectors")},
    "linalg_ldl_factor_ex": "Bunch-Kaufman LDL has a CPU kernel only",
    "linalg_ldl_solve": "Bunch-Kaufman LDL has a CPU kernel only",
    "hash_tensor": "CPU only, as PyTorch's (its CUDA kernel raises too)",
    "_upsample_bilinear2d_aa": "the anti-aliased resampling has a CPU kernel only",
    "_upsample_bilinear2d_aa_backward": "the anti-aliased resampling has a CPU kernel only",
    "_upsample_bicubic2d_aa": "the anti-aliased resampling has a CPU kernel only",
    "_upsample_bicubic2d_aa_backward": "the anti-aliased resampling has a CPU kernel only",
    "embedding_bag": "one CPU kernel (kernels/bags.py's bodies, a CUDA twin to come); CUDA "
    "tensors take nn.functional.embedding_bag's composition (embedding, index_add, scatter_reduce)",
    "_scaled_dot_product_flash_attention_for_cpu": "PyTorch's CPU flash attention; on CUDA "
    "nn.functional.scaled_dot_product_attention composes matmul and softmax (the math path)",
}


def cuda_cases():
    """(op name, sample index, dtype) of every sample of every op that runs on CUDA."""
    return [
        (name, i, dtype)
        for name, op in sorted(REGISTRY.items()) if op.on_cuda
        for i in range(len(op.samples))
        for dtype in DTYPES
    ]


def case_id(*parts) -> str:
    return "-".join(str(p) for p in parts)
