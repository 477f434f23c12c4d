"""The formula table (kernels/formulas.py): op ids, rows, dtypes, and PyTorch's results for the hard
values of every elementwise op, computed by the kernels generated from it."""
import importlib
import math
import re

import numpy as np
import pytest
import torch

import numgrad
import numgrad.library
from numgrad.kernels import cpu as K
from numgrad.kernels import formulas
from numgrad.kernels.formulas import Binary, Compare, Unary


def test_op_ids_are_unique_across_families_and_an_unknown_id_raises():
    ids = [int(member) for family in formulas.FAMILIES for member in family]
    assert len(ids) == len(set(ids))
    ranges = [(min(map(int, f)), max(map(int, f))) for f in formulas.FAMILIES]
    for (lo, hi), (lo2, hi2) in zip(sorted(ranges), sorted(ranges)[1:]):
        assert hi < lo2  # each family its own range
    assert set(formulas.TABLE) == set(Unary) | set(Binary) | set(Compare)
    x = np.ones(3, np.float32)
    for bad in (0, 999, formulas.Reduce.MAX):
        with pytest.raises(ValueError, match="no elementwise formula"):
            formulas.rows(bad)
        with pytest.raises(ValueError, match="no elementwise formula"):
            K.unary(bad, x)
        with pytest.raises(ValueError, match="no elementwise formula"):
            K.binary(bad, x, x)
    with pytest.raises(ValueError, match="is not a unary op"):
        K.unary(Binary.ADD, x)
    with pytest.raises(ValueError, match="is not a binary op"):
        K.binary(Unary.EXP, x, x)



def test_a_formula_declared_after_numgrads_table_gets_an_open_id_outside_it():
    """``declare`` is how every formula enters: numgrad's own while formulas.py loads (the
    enums are made from them), any later one (numgrad.library.elementwise's) with an Open id."""
    before = dict(formulas.TABLE)
    op = formulas.declare("test_formulas::negate", 1, "scalar:neg")
    assert isinstance(op, formulas.Open) and op not in formulas.TABLE and formulas.TABLE == before
    assert formulas.is_unary(op) and formulas.rows(op)[0].cuda == "scalar:neg"
    x = np.array([1.5, -2.0, 0.0])
    np.testing.assert_array_equal(K.unary(op, x), [-1.5, 2.0, -0.0])
    with pytest.raises(NotImplementedError, match="\"negate\" not implemented for 'Bool'"):
        K.unary(op, np.array([True]))
    with pytest.raises(ValueError, match="numgrad's own formulas"):
        formulas.declare("test_formulas::eq", 2, "scalar:eq", result="bool")
    with pytest.raises(ValueError, match="1 or 2 arguments, not 3"):
        formulas.declare("test_formulas::three", 3, "scalar:neg")

def test_every_row_names_functions_that_exist_and_dtypes_numgrad_has():
    from numba.core.registry import CPUDispatcher

    from numgrad.kernels.cpu import mathfuncs

    known = set(formulas.ALL) | set(formulas.COMPLEX)
    overloaded = {mathfuncs.fast_exp, mathfuncs.fast_log, mathfuncs.fast_tanh,
                  mathfuncs.fast_sigmoid}  # (Python functions with a Numba overload each)
    for op, rows in formulas.TABLE.items():
        served = [d for row in rows for d in row.dtypes]
        assert len(served) == len(set(served)), f"{op!r}: two rows serve one dtype"
        for row in rows:
            assert set(row.dtypes) <= known
            module, _, name = row.cpu.partition(":")
            function = getattr(importlib.import_module(f"numgrad.kernels.{module}"), name)
            assert isinstance(function, CPUDispatcher) or function in overloaded
            module, _, name = row.cuda.partition(":")
            path = importlib.util.find_spec(f"numgrad.kernels.{module}").origin
            assert f"def {name}(" in open(path).read()  # (importing cuda.* needs numba-cuda)


def test_a_dtype_no_row_serves_gets_pytorchs_error():
    with pytest.raises(NotImplementedError, match="\"abs\" not implemented for 'Bool'"):
        numgrad.tensor([True, False]).abs()
    with pytest.raises(NotImplementedError, match="\"floor\" not implemented for 'Bool'"):
        numgrad.tensor([True]).floor()
    for name, call in [("neg", lambda t: -t), ("relu", lambda t: t.relu()),
                       ("sub", lambda t: t - t), ("rsub", lambda t: 1 - t),
                       ("sub int", lambda t: t - 1)]:
        ours, theirs = numgrad.tensor([True, False]), torch.tensor([True, False])
        with pytest.raises(RuntimeError) as caught:
            call(theirs)
        with pytest.raises(type(caught.value), match=caught.value.args[0][:40].replace("(", ".")):
            call(ours)


SPECIAL = [math.nan, math.inf, -math.inf, 0.0, -0.0, 0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 1.0, -1.0,
           3.0, 1e-30, -1e-30, 1e-300, 100.0, -100.0, 1e30, -1e30, 89.0, -89.0, 710.0, -710.0]
UNARY = ["neg", "exp", "log", "log1p", "expm1", "sqrt", "rsqrt", "abs", "sin", "cos", "tan",
         "tanh", "sigmoid", "relu", "sign", "floor", "ceil", "round", "reciprocal"]


def _same(ours: np.ndarray, theirs: np.ndarray, ulps: int) -> np.ndarray:
    """Equal, NaN for NaN, the sign of zero kept; within ``ulps`` for finite results, and within
    the smallest normal number where PyTorch flushes a subnormal result to 0 (sigmoid of -89
    in float32: 1 / (1 + inf))."""
    same_nan = np.isnan(ours) & np.isnan(theirs)
    exact = (ours == theirs) & (np.signbit(ours) == np.signbit(theirs))
    tiny = np.finfo(theirs.dtype).tiny
    with np.errstate(invalid="ignore"):  # (inf - inf where both are inf: caught by ``exact``)
        close = np.isfinite(theirs) & np.isfinite(ours) & (
            np.abs(ours - theirs) <= np.maximum(ulps * np.spacing(np.abs(theirs)), tiny))
    return same_nan | exact | (close & (theirs != 0)) | (close & (np.abs(ours) < tiny))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_every_unary_op_gives_pytorchs_special_values(dtype):
    """NaN, ±inf, ±0, halves (rounding), tiny and huge values, on the CPU against PyTorch 2.13
    (``sign(nan)`` is 0 and ``relu(nan)`` NaN there). benchmarks/gpu_check.py checks the same
    values on a GPU."""
    data = np.array(SPECIAL, dtype)
    bad = {}
    for name in UNARY:
        ours = getattr(numgrad, name)(numgrad.tensor(data)).numpy()
        theirs = getattr(torch, name)(torch.tensor(data)).numpy()
        assert ours.dtype == theirs.dtype
        wrong = ~_same(ours, theirs, ulps=4)
        if wrong.any():
            bad[name] = [(v, o, t) for v, o, t in zip(data[wrong], ours[wrong], theirs[wrong])]
    assert not bad, bad


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_special_functions_at_large_arguments_and_signed_zeros_match_pytorch(dtype):
    """i0e and i1e past I0's overflow (they were NaN from |x| ~ 713: exp(-|x|) times inf), the
    sign of I1's zero, digamma and zeta at negative integers past 2**63 (``math.floor`` gave
    an int64 there: float32's -1e20 had digamma 52.5, not NaN)."""
    x = np.array([-0.0, 0.0, 0.5, -10.0, 49.9, 50.1, -51.0, 80.0, 700.0, 713.0, 1e3, -1e5, 1e10,
                  -1e20, 3e38, np.inf, -np.inf, np.nan], dtype)
    bad = {}
    for name in ("i0e", "i1e", "i1", "i0"):
        ours = getattr(numgrad.special, name)(numgrad.tensor(x)).numpy()
        theirs = getattr(torch.special, name)(torch.tensor(x)).numpy()
        wrong = ~_same(ours, theirs, ulps=16)
        if wrong.any():
            bad[name] = list(zip(x[wrong], ours[wrong], theirs[wrong]))
    poles = np.array([-1.0, -2.0, -1e7, -1e20, -3e38, -0.0, 0.0, -2.5], dtype)
    ours = numgrad.digamma(numgrad.tensor(poles)).numpy()
    theirs = torch.digamma(torch.tensor(poles)).numpy()
    if not _same(ours, theirs, ulps=16).all():
        bad["digamma"] = list(zip(poles, ours, theirs))
    s, q = np.full(4, 2.0, dtype), np.array([-1e20, -3.0, -2.5, 1.5], dtype)
    ours = numgrad.special.zeta(numgrad.tensor(s), numgrad.tensor(q)).numpy()
    theirs = torch.special.zeta(torch.tensor(s), torch.tensor(q)).numpy()
    if not _same(ours, theirs, ulps=16).all():
        bad["zeta"] = list(zip(q, ours, theirs))
    assert not bad, bad


@pytest.mark.parametrize("dtype", ["int64", "int32"])
def test_integer_unary_ops_are_exact_in_their_own_dtype(dtype):
    info = np.iinfo(dtype)
    data = np.array([info.min, info.min + 1, -(2**53) - 1, -3, -1, 0, 1, 2, 2**31 - 1, 2**53 + 1,
                     info.max] if dtype == "int64" else [info.min, -3, 0, 5, info.max], dtype)
    for name in ("neg", "abs", "sign", "floor", "ceil", "round", "relu"):
        ours = getattr(numgrad, name)(numgrad.tensor(data))
        theirs = getattr(torch, name)(torch.tensor(data))
        assert ours.dtype.name == str(theirs.dtype).split(".")[1], name
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy(), err_msg=name)


def test_comparisons_and_maximum_on_nan_and_signed_zero_match_pytorch():
    a = np.array([math.nan, 0.0, -0.0, 1.0, math.inf, math.nan], np.float32)
    b = np.array([1.0, -0.0, 0.0, math.nan, math.inf, math.nan], np.float32)
    for name in ("eq", "ne", "lt", "le", "gt", "ge", "maximum", "minimum"):
        ours = getattr(numgrad, name)(numgrad.tensor(a), numgrad.tensor(b)).numpy()
        theirs = getattr(torch, name)(torch.tensor(a), torch.tensor(b)).numpy()
        np.testing.assert_array_equal(ours, theirs, err_msg=name)


def test_relu_passes_nan_in_its_gradient_as_pytorch():
    data = [math.nan, -1.0, 2.0, -0.0]
    ours = numgrad.tensor(data, requires_grad=True)
    theirs = torch.tensor(data, requires_grad=True)
    ours.relu().sum().backward()
    theirs.relu().sum().backward()
    np.testing.assert_array_equal(ours.grad.numpy(), theirs.grad.numpy())


# The formula ops: numgrad's own and a user's are made by one function (library.elementwise).
_FORMULA_OPS = ("exp", "log", "tanh", "sign", "floor", "asin", "rad2deg", "erf", "special_ndtri",
                "log2", "frac", "atan2", "hypot", "zeta", "floor_divide", "fmod", "remainder",
                "logaddexp", "maximum", "eq", "ge", "logical_and", "bitwise_right_shift",
                "chebyshev_polynomial_t", "silu", "gelu_backward", "log_sigmoid",
                "hardswish_backward", "add", "sub", "rsub", "mul", "div", "neg", "pow",
                "pow_scalar", "rpow", "tanh_backward", "sigmoid_backward", "threshold_backward",
                "leaky_relu", "leaky_relu_", "elu", "selu", "celu_", "softplus", "xlogy",
                "xlogy_scalar_other", "polygamma", "bitwise_not", "logical_not",
                # (of several formulas, or of one chosen by a parameter: made from a term)
                "clamp", "clamp_min", "clamp_max", "clamp_tensor", "hardtanh", "hardtanh_backward",
                "div_mode", "round_decimals", "where", "leaky_relu_backward", "elu_backward",
                "softplus_backward", "fmod_scalar", "remainder_scalar", "rsub_tensor", "lerp",
                "lerp_tensor", "softshrink", "hardshrink", "prelu", "threshold", "threshold_", "logit",
                "addcmul", "addcdiv")


def test_numgrads_formula_ops_are_made_by_the_factory_each_naming_a_formula_of_the_table():
    from numgrad.ops import _formula
    from numgrad.ops.registry import REGISTRY

    made = [op for op in _formula.MADE if REGISTRY.get(op.name) is op]
    assert {op.name for op in made} >= set(_FORMULA_OPS)
    assert len(made) == 149  # (the formula ops converted so far: issue 36)
    for op in made:
        assert op.__qualname__ == op.__name__ and op.__module__.startswith("numgrad.ops.")
        assert op.codes or op.name == "where"  # (where selects: no formula)
        for code in op.codes:
            formulas.rows(getattr(K, code))  # (a formula of the table)
        if not op.forward_source:  # (one formula: of the op's arity)
            assert op.codes == (op.code,) and op.arity in (1, 2)
            assert formulas.is_unary(getattr(K, op.code)) == (op.arity == 1), op.name
    # what numgrad's own look like from outside is PyTorch's, as before the factory
    exp = REGISTRY["exp"]
    assert (exp.__name__, exp.node, exp.save_output) == ("Exp", "ExpBackward0", True)
    x = numgrad.tensor([0.5, 1.0], requires_grad=True)
    assert type(x.exp().grad_fn).__name__ == "ExpBackward0"


class _Calls:
    """A kernel module that records the formula calls of an op's forward (arrays: their names)."""

    def __init__(self):
        self.calls = []

    def __getattr__(self, code):
        return code

    def unary(self, code, a):
        self.calls.append((code, a))
        return f"{code}({a})"

    def binary(self, code, a, b, dtype=None):
        self.calls.append((code, a, float(b) if isinstance(b, np.ndarray) else b))
        return f"{code}({a})"

    def where(self, cond, a, b):
        self.calls.append(("where", cond, a, float(b) if isinstance(b, np.ndarray) else b))
        return "where"


class _Named(str):
    dtype = np.dtype(np.float32)


def test_an_op_of_several_formulas_runs_the_calls_its_term_writes():
    from numgrad.ops.registry import REGISTRY

    def calls(name, *arrays, **params):
        k = _Calls()
        REGISTRY[name].forward(k, *(a and _Named(a) for a in arrays), **params)
        return k.calls

    # a bound left out (None) skips its formula; the numbers in the operand's dtype
    assert calls("clamp", "x", min=None, max=0.5) == [("MINIMUM", "x", 0.5)]
    assert calls("clamp", "x", min=-1, max=2) == [("MAXIMUM", "x", -1.0),
                                                  ("MINIMUM", "MAXIMUM(x)", 2.0)]
    assert calls("clamp_tensor", "x", None, "hi") == [("MINIMUM", "x", "hi")]
    # a formula chosen by a parameter
    assert calls("div_mode", "a", "b", rounding_mode="floor") == [("DIV_FLOOR", "a", "b")]
    assert calls("round_decimals", "x", decimals=-2) == [("DIV", "x", 100.0), ("ROUND", "DIV(x)"),
                                                         ("MUL", "ROUND(DIV(x))", 100.0)]
    assert calls("elu_backward", "g", "x", kind="selu", alpha=1.5) == [
        ("SELU_GRAD", "x"), ("MUL", "g", "SELU_GRAD(x)")]
    assert calls("softplus_backward", "g", "x", beta=1.0, threshold=20.0) == [
        ("SOFTPLUS_GRAD", "x", 20.0), ("MUL", "g", "SOFTPLUS_GRAD(x)")]
    assert calls("hardtanh_backward", "g", "x", lo=-0.5, hi=1.0) == [
        ("GT", "x", -0.5), ("LT", "x", 1.0), ("where", "LT(x)", "g", 0.0),
        ("where", "GT(x)", "where", 0.0)]
    # a call the term uses twice (lerp's ``end - input``) is computed once
    assert calls("lerp", "a", "b", weight=0.75) == [("SUB", "b", "a"), ("MUL", "SUB(b)", 0.25),
                                                    ("SUB", "b", "MUL(SUB(b))")]
    assert [c[0] for c in calls("lerp_tensor", "a", "b", "w")] == [
        "SUB", "ABS", "LT", "MUL", "ADD", "RSUB", "MUL", "SUB", "where"]
    source = REGISTRY["div_mode"].forward_source
    assert "K.DIV_TRUNC" in source and "K.DIV_FLOOR" in source


# Run in a fresh process: every op class numgrad's registry is given while numgrad, its nn, func
# and library load, and a user's formula op, with the calls on the stack when it is registered.
_DECLARED_THROUGH = """
import os
import sys

registered = []


def profile(frame, event, arg):
    code = frame.f_code
    if event == "call" and code.co_name == "register" and code.co_filename.endswith(
            os.path.join("numgrad", "ops", "registry.py")):
        f, through = frame.f_back, []
        while f is not None:
            through.append(f.f_code)
            f = f.f_back
        registered.append((frame.f_locals["op"], through))


sys.setprofile(profile)
import numgrad
import numgrad.func, numgrad.library, numgrad.nn.functional
user = numgrad.library.elementwise("declared::cube", lambda x: x * x * x,
                                   grad=lambda x: 3.0 * x * x)
sys.setprofile(None)

from numgrad.ops import _formula
from numgrad.ops.registry import REGISTRY

public = numgrad.library.elementwise
assert public is _formula.elementwise
own = [op for op in REGISTRY.values() if issubclass(op, _formula.FormulaOp)]
assert own and len({op.name for op in own}) == len(own)
outside = [op.name for op, through in registered if issubclass(op, _formula.FormulaOp)
           and public.__code__ not in through]
assert not outside, outside
made = [op for op, through in registered if public.__code__ in through]
assert set(own) <= set(made), set(own) - set(made)  # (every formula op of the registry)
assert user._op in made and user._bwd in made and "declared::cube" not in REGISTRY
print(len(own), len(made))
"""


def test_every_formula_op_numgrads_and_a_users_is_declared_through_library_elementwise():
    """The public ``numgrad.library.elementwise`` is the one path: each formula op of numgrad's
    registry, and a user's op with its backward's, was registered inside a call of it."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", _DECLARED_THROUGH], capture_output=True,
                          text=True, timeout=300, env={**__import__("os").environ,
                                                       "NUMGRAD_QUIET": "1"})
    assert done.returncode == 0, done.stderr[-3000:]
    own, made = map(int, done.stdout.split())
    assert own == 149 and made == own + 2  # (numgrad's 149, the user's op and its backward's)


def test_a_users_formula_op_comes_from_the_same_factory_kept_out_of_the_registry(monkeypatch):
    from numgrad.ops import _formula
    from numgrad.ops.registry import REGISTRY

    made = []
    real = numgrad.library.elementwise

    def recording(*args, **kwargs):
        op = real(*args, **kwargs)
        if "node" in kwargs:  # (an op class; the call without node is the user's)
            made.append(op)
        return op

    monkeypatch.setattr(numgrad.library, "elementwise", recording)
    op = numgrad.library.elementwise("formulas_test::cube", lambda x: x * x * x,
                                     grad=lambda x: 3.0 * x * x)
    try:
        assert len(made) == 2  # (the op and its backward's op)
        assert all(issubclass(cls, _formula.FormulaOp) for cls in made)
        assert made[-1] is op._op and op._op.code == op.code
        assert "formulas_test::cube" not in REGISTRY
        x = numgrad.tensor([1.0, -2.0], dtype=numgrad.float64, requires_grad=True)
        y = op(x)
        y.sum().backward()
        assert y.tolist() == [1.0, -8.0] and x.grad.tolist() == [3.0, 12.0]
        assert type(y.grad_fn).__name__ == "formulas_test_cubeBackward0"
    finally:
        numgrad.library._OPS.pop("formulas_test::cube", None)


def test_threshold_of_an_integer_tensor_refuses_a_number_its_dtype_cannot_hold_as_pytorch():
    """threshold's numbers become arrays of the input's dtype (its term's ``number``): one the
    dtype cannot hold is PyTorch's error, where a cast would have wrapped it (300 -> 44 in int8)
    or made NaN the lowest int64."""
    F = numgrad.nn.functional
    for dtype, threshold, value in (("int8", 0, 300), ("int64", 0, float("nan")),
                                    ("int16", 1e30, 1), ("int64", 0, -2**63), ("int8", 0, 7.9)):
        data = [127, 1, 0]
        expected = error = None
        try:
            expected = torch.nn.functional.threshold(
                torch.tensor(data, dtype=getattr(torch, dtype)), threshold, value).tolist()
        except RuntimeError as e:
            error = str(e)
        x = numgrad.tensor(data, dtype=getattr(numgrad, dtype))
        for inplace in (False, True):
            if error is None:
                assert F.threshold(x.clone(), threshold, value, inplace).tolist() == expected
            else:
                with pytest.raises(RuntimeError, match=re.escape(error)):
                    F.threshold(x.clone(), threshold, value, inplace)


def test_scalar_formulas_compiled_alone_take_numpys_error_model():
    """A kernel reuses its callee's overload whatever flags the callee was first compiled with:
    ``trigamma`` first called from Python (Numba's default error model raises ZeroDivisionError)
    made every ``polygamma(1, x)`` kernel compiled after it in that process raise at x = 0, and
    the kernel was cached so. Each formula of ``kernels/scalar.py`` that Numba compiles alone
    takes NumPy's error model, as the kernels do: from Python too, 1/0 is inf."""
    from numba.core.registry import CPUDispatcher

    from numgrad.kernels import scalar

    alone = [f for f in vars(scalar).values() if isinstance(f, CPUDispatcher)
             and f.__module__ == scalar.__name__ and f.targetoptions.get("inline") != "always"]
    assert len(alone) >= 20
    assert all(f.targetoptions.get("error_model") == "numpy" for f in alone), \
        [f.__name__ for f in alone if f.targetoptions.get("error_model") != "numpy"]
    assert scalar.trigamma(0.0) == float("inf")
    assert numgrad.polygamma(1, numgrad.tensor([1.0, 0.0])).tolist()[1] == float("inf")
