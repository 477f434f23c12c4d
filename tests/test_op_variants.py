"""The registry's samples on hard inputs (issue 14): every sample of every op, also on 0-d, empty,
non-contiguous (transposed, stepped), int64 and bool inputs and on NaN, ±inf and ±0 values, must
give what PyTorch gives: the same shapes, dtypes, values and input gradients, or an exception of
the same class (``tests/_variants.py`` builds and compares them).

A variant may be opted out with a written reason in ``OPT_OUT``, at most 5% of them; an opted-out
variant must still differ (so a fix removes its entry). A variant whose input has no unique
answer (``NOT_UNIQUE``: LAPACK picks one, and which one depends on the machine's build) is
compared in what it gives, not in its values.
"""
import pytest

from _variants import VARIANTS, _TorchNamespace, cases, compare

# (op, sample index, variant): why numgrad differs from PyTorch there, for now.
OPT_OUT = {
    ("mode", 0, "special-values"): "PyTorch's CPU mode returns NaN for a slice that holds a NaN "
    "and no repeated value (its sort compares NaN apart); numgrad returns the smallest value",
    ("mode", 1, "special-values"): "PyTorch's CPU mode returns NaN for a slice that holds a NaN "
    "and no repeated value (its sort compares NaN apart); numgrad returns the smallest value",
    ("std_mean", 0, "expanded"): "std of one value repeated: numgrad's mean (a sum divided) "
    "leaves rounding noise in the deviations, so std's gradient at 0 is noise; PyTorch's "
    "Welford mean is exact there (to fix: a Welford-exact mean in var/std)",
    ("std_mean_mean", 0, "special-values"): "PyTorch's std_mean/var_mean compute the mean by "
    "Welford's update, which gives NaN for a slice holding an infinity; numgrad's mean (a sum) "
    "gives the infinity, as PyTorch's mean() does",
    ("var_mean", 1, "special-values"): "PyTorch's std_mean/var_mean compute the mean by "
    "Welford's update, which gives NaN for a slice holding an infinity; numgrad's gives the "
    "infinity, as PyTorch's mean() does",
    ("cdist", 1, "special-values"): "the sign of a zero gradient next to NaN distances (-0 in "
    "numgrad, +0 in PyTorch)",
    **{("unfold_backward", i, variant): "numgrad's unfold_backward (ATen's internal backward of "
       "unfold, issue 31) does not take a 0-d gradient yet, and refuses an empty one with a "
       "ValueError where PyTorch raises a RuntimeError"
       for i, variant in ((0, "zero-dim"), (0, "empty"), (1, "zero-dim"), (2, "empty"))},
    **{(op, i, "empty"): "PyTorch's pixel_unshuffle returns an empty input unchanged (the wrong "
       "shape), so pixel_shuffle's backward and pixel_unshuffle of an empty batch raise there; "
       "numgrad gives the right shapes" for op in ("pixel_shuffle", "pixel_unshuffle")
       for i in (0, 1)},
    **{(f"{op}_polynomial_{kind}", i, variant): "integer x (0 and +-1, or up to 8): values "
       "that are 0 or cancel to near 0 in float32, where PyTorch's float32 rounding and "
       "numgrad's differ by more than the harness's 1e-8 absolute tolerance (-3.6e-8 and "
       "-3.9e-7 for T_7(0), whose value is 0)"
       for op, kind, i, variant in (("chebyshev", "t", 0, "bool"), ("chebyshev", "t", 1, "int64"),
                                    ("chebyshev", "u", 0, "bool"), ("chebyshev", "u", 1, "int64"),
                                    ("laguerre", "l", 0, "int64"))},
}

# The complex ops (issue 35's complex dtypes, new): where they differ from PyTorch on hard inputs,
# for now (each a defect of numgrad's, to fix, unless it says PyTorch raises).
OPT_OUT.update({
    ("conj", 0, "zero-dim"): "conj of a 0-d real tensor raises AttributeError where PyTorch "
    "raises RuntimeError (numgrad's defect: the error class)",
    ("fft_c2c", 0, "empty"): "PyTorch's MKL FFT raises on an empty transform; numgrad gives the "
    "empty result",
    **{("fft_c2c", i, "special-values"): "a NaN or infinity in the input: PyTorch's FFT keeps "
       "some outputs finite or infinite (its butterflies' order), numgrad's gives NaN in each"
       for i in (0, 2)},
    ("linalg_ldl_factor_ex", 1, "special-values"): "a NaN or infinity in the matrix: the "
    "factors after it differ from MKL's (the pivot test compares NaN otherwise)",
    ("polar", 0, "special-values"): "a gradient of NaN/inf inputs: the same values printed, "
    "differing in the sign of a NaN or a zero (numgrad's defect, to check)",
    **{("view_as_complex", i, "empty"): "PyTorch refuses an empty tensor's last dimension's "
       "stride; numgrad views it" for i in (0, 1)},
    **{("view_as_complex", i, "expanded"): "numgrad refuses an expanded tensor (stride 0) that "
       "PyTorch views when its last dimension has stride 1 (numgrad's defect)" for i in (0, 1)},
})

# (op, sample index, variant): why the result at that input is not unique, so only its structure
# (outputs' shapes and dtypes, which gradients exist, or the error class) is compared.
NOT_UNIQUE = {
    ("logit", 1, "special-values"): "the gradient at a NaN input with eps: PyTorch's is NaN run "
    "alone and 0 after the suite's earlier tests (which of its loops computes the element); "
    "numgrad's 0",
    ("_scaled_dot_product_flash_attention_for_cpu", 0, "special-values"): "NaN and inf in the "
    "queries and keys: PyTorch's CPU flash kernel gives 0 or NaN for a row by the state earlier "
    "calls leave (alone it differs from its own result after the suite's earlier tests); "
    "numgrad's softmax gives NaN",
    ("linalg_qr", 0, "expanded"): "QR of a rank-1 matrix (one value expanded): Q's later columns "
    "are any orthonormal completion and the gradient divides by R's zero diagonal; the values "
    "differ between LAPACK builds (one gradient -8 in numgrad, -4.99 in PyTorch on one machine)",
    ("linalg_svd", 0, "expanded"): "SVD of a rank-1 matrix: its two zero singular values' vectors "
    "are any orthonormal basis of their space, in an order each LAPACK build picks",
    ("linalg_svd_vh", 0, "expanded"): "Vh of a rank-1 matrix: as linalg_svd's (OpenBLAS's AVX-512 "
    "and AVX2 kernels pick different bases, and different gradients, NaN in PyTorch)",
    ("linalg_qr_r", 0, "expanded"): "R of a rank-1 matrix: as linalg_qr's (its gradient divides by "
    "R's zero diagonal: -9 here, NaN in PyTorch, by BLAS build)",
    ("linalg_eigh_vectors", 0, "expanded"): "eigenvectors of a matrix of one value: the zero "
    "eigenvalue's space is any orthonormal basis, which each LAPACK build picks its own way",
    **{(op, i, "expanded"): "eig of a rank-1 matrix (one value expanded): the order of its "
       "eigenvalues and the basis of the zero eigenvalue's space are LAPACK's choice"
       for op, i in (("linalg_eig", 0), ("linalg_eig", 1), ("linalg_eig_vectors", 0))},
    **{(op, 0, "special-values"): "the gradient at a NaN input: PyTorch's depends on which of "
       "its loops computes the element (NaN from its vector loop, the branch's derivative, as "
       "numgrad's, from its scalar loop and on AVX-512 machines); shapes and dtypes compared"
       for op in ("celu", "celu_", "elu", "elu_", "elu_backward", "hardswish",
                  "hardswish_backward", "selu", "selu_")},
    **{(f"{name}_polynomial_{kind}", i, "special-values"): "a NaN x: PyTorch's recurrence "
       "stops on NaN before its result is first assigned and returns an uninitialised value "
       "(0, 1 or 6.5e8 from run to run); numgrad gives NaN; shapes and dtypes are compared"
       for name, kinds in (("chebyshev", "tuvw"), ("shifted_chebyshev", "tuvw"),
                           ("hermite", ("h", "he")), ("laguerre", "l"), ("legendre", "p"))
       for kind in kinds for i in (0, 1)},
}

TORCH = _TorchNamespace()
CASES = cases()


def test_opt_outs_are_few_and_each_has_a_reason():
    assert all(isinstance(r, str) and len(r) > 20 for r in OPT_OUT.values())
    assert all(c in CASES for c in OPT_OUT), [c for c in OPT_OUT if c not in CASES]
    assert all(c in CASES and c not in OPT_OUT for c in NOT_UNIQUE)
    assert all(isinstance(r, str) and len(r) > 20 for r in NOT_UNIQUE.values())
    assert len(OPT_OUT) <= 0.05 * len(CASES), f"{len(OPT_OUT)} of {len(CASES)} opted out"


def test_every_variant_kind_is_generated():
    assert {v for _, _, v in CASES} == set(VARIANTS)


@pytest.mark.parametrize("name, index, variant", CASES,
                         ids=[f"{n}-{i}-{v}" for n, i, v in CASES])
def test_variant_matches_pytorch(name, index, variant):
    why = compare(name, index, variant, torch_ns=TORCH,
                  values=(name, index, variant) not in NOT_UNIQUE)
    if (name, index, variant) in OPT_OUT:
        assert why is not None, "fixed: remove its OPT_OUT entry"
        return
    assert why is None, why
