"""PyTorch's operator database as a test of numgrad (issue 35): every OpInfo of torch 2.13's
``op_db`` with a float32, float64 or int64 dtype, its first samples on each of those dtypes and
bool (and non-contiguous on one dtype), must give PyTorch's outputs and gradients, and so must
those of every OpInfo that takes complex128, on it alone (a pass of its own), and those of every
OpInfo that takes float16, bfloat16, int32, int16, int8 or uint8, on those (another); every
OpInfo's first samples under ``vmap`` must be the op on each example, their tangents under
``numgrad.func.jvp`` (in float64 and complex128, and in float16 and bfloat16) and their second
derivatives PyTorch's, and every 16th OpInfo's first
sample traced and replayed by ``numgrad.compile`` eager's, bit for bit; each runnable
error input must raise PyTorch's exception class with a message matching PyTorch's pattern
(``tests/_op_db.py`` runs and compares them).

What fails today is listed with its reason in ``tests/op_db_expected_failures.py``; an OpInfo (or
error input) that fails and is not listed fails here, and so does a listed one that passes, so the
lists only shrink. ``python tests/_op_db.py`` prints the counts.
"""
import pytest

from _op_db import (COMPLEX_DTYPE_NAMES, NARROW_DTYPE_NAMES, NARROW_JVP_DTYPE_NAMES,
                    VMAP_DTYPE_NAMES, check_error_inputs, check_op, check_op_compiled,
                    check_op_gradgrad, check_op_jvp, check_op_vmap, complex_op_db, dtypes_of,
                    narrow_op_db, op_db, op_id)
from op_db_expected_failures import (COMPLEX_SAMPLES, ERROR_INPUTS, GRADGRAD_SAMPLES,
                                     JVP_SAMPLES, NARROW_JVP_SAMPLES, NARROW_SAMPLES, SAMPLES,
                                     VMAP_SAMPLES)

OPS = op_db()
IDS = [op_id(op) for op in OPS]
WITH_ERRORS = [op for op in OPS if op.error_inputs_func is not None]
COMPLEX_OPS = complex_op_db()
NARROW_OPS = narrow_op_db()
# (the OpInfos PyTorch differentiates forward in float16 or bfloat16: the half jvp pass)
NARROW_JVP_OPS = [op for op in NARROW_OPS
                  if op.supports_forward_ad and dtypes_of(op, NARROW_JVP_DTYPE_NAMES)]
# (through numgrad.compile: every 16th OpInfo, a bounded sample of the whole, ``python
# tests/_op_db.py --compiled`` runs them all)
COMPILED_OPS = OPS[::16]


def test_expected_failures_name_opinfos_and_give_reasons():
    assert len(set(IDS)) == len(IDS)
    assert not set(SAMPLES) - set(IDS), sorted(set(SAMPLES) - set(IDS))
    assert not {k.split("#")[0] for k in ERROR_INPUTS} - set(IDS)
    assert not set(COMPLEX_SAMPLES) - {op_id(op) for op in COMPLEX_OPS}
    assert not set(NARROW_SAMPLES) - {op_id(op) for op in NARROW_OPS}
    assert not set(NARROW_JVP_SAMPLES) - {op_id(op) for op in NARROW_JVP_OPS}
    for listed in (VMAP_SAMPLES, JVP_SAMPLES, GRADGRAD_SAMPLES):
        assert not set(listed) - set(IDS), sorted(set(listed) - set(IDS))
    assert all(isinstance(r, str) and len(r) > 10
               for listed in (SAMPLES, ERROR_INPUTS, COMPLEX_SAMPLES, NARROW_SAMPLES,
                              VMAP_SAMPLES, JVP_SAMPLES, NARROW_JVP_SAMPLES, GRADGRAD_SAMPLES)
               for r in listed.values())


def _check_listed(op, why, expected: dict, listed_in: str) -> None:
    """The OpInfo passes (``why`` None) unless it is listed in ``expected`` (``listed_in`` of
    tests/op_db_expected_failures.py), and fails if so."""
    key = op_id(op)
    if key in expected:
        assert why is not None, (f"{key} passes now: remove its entry from {listed_in} in "
                                 "tests/op_db_expected_failures.py")
    else:
        assert why is None, f"{key}: {why}"


@pytest.mark.parametrize("op", OPS, ids=IDS)
def test_opinfo_samples_match_pytorch(op):
    _check_listed(op, check_op(op)[0], SAMPLES, "SAMPLES")


@pytest.mark.parametrize("op", COMPLEX_OPS, ids=[op_id(op) for op in COMPLEX_OPS])
def test_opinfo_complex_samples_match_pytorch(op):
    # (the OpInfos that take complex128, on it alone: values, and gradients with a complex
    # cotangent, PyTorch's conjugate Wirtinger convention)
    _check_pass(op, COMPLEX_DTYPE_NAMES, COMPLEX_SAMPLES, "COMPLEX_SAMPLES")


def _check_pass(op, names, expected: dict, listed_in: str) -> None:
    """A pass of its own on the dtypes ``names``: the OpInfo passes every sample unless it is
    listed in ``expected`` (``listed_in`` of tests/op_db_expected_failures.py), and fails if so."""
    _check_listed(op, check_op(op, names=names)[0], expected, listed_in)


@pytest.mark.parametrize("op", NARROW_OPS, ids=[op_id(op) for op in NARROW_OPS])
def test_opinfo_narrow_samples_match_pytorch(op):
    # (the OpInfos that take float16, bfloat16, int32, int16, int8 or uint8, on those: values to
    # a few units in the last place of the half types, integers exactly, and gradients)
    _check_pass(op, NARROW_DTYPE_NAMES, NARROW_SAMPLES, "NARROW_SAMPLES")


@pytest.mark.parametrize("op", COMPILED_OPS, ids=[op_id(op) for op in COMPILED_OPS])
def test_opinfo_samples_run_compiled_as_eager(op):
    # (a trace and a replay of the first float32 sample: its result, its inputs after the call,
    # its gradients and its exceptions bit for bit as eager numgrad's)
    why = check_op_compiled(op)
    assert why is None, f"{op_id(op)}: {why}"


@pytest.mark.parametrize("op", OPS, ids=IDS)
def test_opinfo_samples_under_vmap_match_each_example(op):
    # (the first two samples in float64, int64 and complex128, every tensor argument batched:
    # vmap's result must be the op's on each example, stacked)
    _check_listed(op, check_op_vmap(op, names=VMAP_DTYPE_NAMES), VMAP_SAMPLES, "VMAP_SAMPLES")


@pytest.mark.parametrize("op", OPS, ids=IDS)
def test_opinfo_samples_jvp_matches_pytorchs(op):
    # (the first three samples in float64 and complex128, every floating or complex tensor a
    # primal with a random tangent: numgrad.func.jvp's tangents must be torch.func.jvp's)
    _check_listed(op, check_op_jvp(op), JVP_SAMPLES, "JVP_SAMPLES")


@pytest.mark.parametrize("op", NARROW_JVP_OPS, ids=[op_id(op) for op in NARROW_JVP_OPS])
def test_opinfo_half_samples_jvp_matches_pytorchs(op):
    # (the first three samples in float16 and bfloat16, tangents of the primal's dtype:
    # numgrad.func.jvp's tangents must have torch.func.jvp's dtype and its values to a few
    # units in the last place of the half type)
    _check_listed(op, check_op_jvp(op, names=NARROW_JVP_DTYPE_NAMES), NARROW_JVP_SAMPLES,
                  "NARROW_JVP_SAMPLES")


@pytest.mark.parametrize("op", OPS, ids=IDS)
def test_opinfo_samples_gradgrad_matches_pytorchs(op):
    # (the first three samples in float64 and complex128: the gradients of a random cotangent of
    # the gradients of a random cotangent must be PyTorch's)
    _check_listed(op, check_op_gradgrad(op), GRADGRAD_SAMPLES, "GRADGRAD_SAMPLES")


@pytest.mark.parametrize("op", WITH_ERRORS, ids=[op_id(op) for op in WITH_ERRORS])
def test_opinfo_error_inputs_raise_pytorchs_error(op):
    problems = []
    for key, why in check_error_inputs(op):
        if key in ERROR_INPUTS and why is None:
            problems.append(f"{key} passes now: remove its entry from "
                            "tests/op_db_expected_failures.py")
        elif key not in ERROR_INPUTS and why is not None:
            problems.append(f"{key}: {why}")
    assert not problems, "\n".join(problems)
