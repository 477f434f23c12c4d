"""Compare numgrad's tensor formatting with ``repr()`` of real torch tensors."""

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

_SRC = Path(__file__).resolve().parents[1] / "src"


def _load_format_tensor():
    if str(_SRC) not in sys.path:
        sys.path.insert(0, str(_SRC))
    try:
        from numgrad._tensor_str import format_tensor
    except Exception:  # package __init__ missing or half-written
        path = _SRC / "numgrad" / "_tensor_str.py"
        spec = importlib.util.spec_from_file_location("_numgrad_tensor_str", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        format_tensor = module.format_tensor
    return format_tensor


format_tensor = _load_format_tensor()

_TORCH_DTYPES = {
    "float32": torch.float32,
    "float64": torch.float64,
    "int64": torch.int64,
    "int32": torch.int32,
    "bool": torch.bool,
}


def _rng(seed):
    return np.random.default_rng(1234 + seed)


def _normal(shape, scale=1.0, dtype="float32", seed=0):
    return (_rng(seed).standard_normal(shape) * scale).astype(dtype)


def _uniform(shape, low, high, dtype="float32", seed=0):
    return _rng(seed).uniform(low, high, shape).astype(dtype)


def _ints(shape, low, high, dtype="int64", seed=0):
    return _rng(seed).integers(low, high, shape).astype(dtype)


def _special(dtype="float32"):
    return np.array([1.5, np.nan, np.inf, -np.inf, -0.0, 0.0, -2.25], dtype=dtype)


CASES = {
    # 0-d
    "scalar_int_valued": np.array(27.0, dtype="float32"),
    "scalar_frac": np.array(-3.14159, dtype="float32"),
    "scalar_big": np.array(1e10, dtype="float32"),
    "scalar_tiny": np.array(1e-7, dtype="float64"),
    "scalar_nan": np.array(np.nan, dtype="float32"),
    "scalar_neg_inf": np.array(-np.inf, dtype="float64"),
    "scalar_neg_zero": np.array(-0.0, dtype="float32"),
    "scalar_zero": np.array(0.0, dtype="float32"),
    "scalar_int64": np.array(-7, dtype="int64"),
    "scalar_int32": np.array(12, dtype="int32"),
    "scalar_bool": np.array(True),
    # empty
    "empty_1d": np.zeros((0,), dtype="float32"),
    "empty_2d": np.zeros((0, 3), dtype="float32"),
    "empty_3d": np.zeros((2, 0, 4), dtype="float64"),
    "empty_int64": np.zeros((0,), dtype="int64"),
    "empty_int32_2d": np.zeros((3, 0), dtype="int32"),
    "empty_bool": np.zeros((0,), dtype="bool"),
    # float32 random
    "normal_vec": _normal(5),
    "normal_2x2": _normal((2, 2), seed=1),
    "normal_4x7": _normal((4, 7), seed=2),
    "normal_long_row": _normal(40, seed=3),
    "normal_wrap_2d": _normal((3, 25), seed=4),
    "normal_3d": _normal((2, 3, 4), seed=5),
    "normal_4d": _normal((2, 2, 3, 2), seed=6),
    "normal_5d": _normal((2, 1, 2, 1, 3), seed=7),
    "normal_scale_100": _normal((3, 5), 100.0, seed=8),
    "normal_scale_1e4": _normal((3, 5), 1e4, seed=9),
    "normal_scale_1e-5": _normal((4, 4), 1e-5, seed=10),
    "normal_scale_1e10": _normal((4, 4), 1e10, seed=11),
    "normal_scale_1e10_long": _normal(30, 1e10, seed=12),
    "uniform_0_1": _uniform((6, 6), 0.0, 1.0, seed=13),
    "uniform_1e-5": _uniform(12, 0.0, 1e-5, seed=14),
    "uniform_1e10": _uniform((3, 3), 0.0, 1e10, seed=15),
    "uniform_mixed_range": _uniform(8, 0.001, 100.0, seed=16),
    "ratio_over_1000": np.array([0.01, 20.0, 3.0], dtype="float32"),
    "min_below_1e-4": np.array([5e-5, 0.5], dtype="float32"),
    "max_above_1e8": np.array([2e8, 3e8], dtype="float32"),
    "int_valued": np.array([[3.0, 3.0], [3.0, 3.0]], dtype="float32"),
    "int_valued_mixed": np.array([-1.0, 200.0, 7.0, 0.0], dtype="float32"),
    "int_valued_sci": np.array([1.0, 1e10, -5.0], dtype="float32"),
    "int_valued_long": np.arange(-20, 40, dtype="float32").reshape(3, 20),
    "rounding_edges": np.array([0.00005, 0.99995, 1.23455, 2.5], dtype="float32"),
    "specials": _special(),
    "specials_f64": _special("float64"),
    "nan_only": np.array([np.nan, np.nan], dtype="float32"),
    "inf_and_ints": np.array([np.inf, 2.0, -np.inf], dtype="float32"),
    "nan_and_frac": np.array([np.nan, 0.25], dtype="float32"),
    "nan_and_sci": np.array([np.nan, 1e-6, 1.0], dtype="float32"),
    "zeros": np.zeros((2, 3), dtype="float32"),
    "neg_zeros": np.array([-0.0, 0.0, -0.0], dtype="float32"),
    "neg_zero_and_ints": np.array([-0.0, 1.0, 2.0], dtype="float32"),
    "neg_zero_and_frac": np.array([-0.0, 1.5], dtype="float32"),
    "neg_zero_and_sci": np.array([-0.0, 1e-7], dtype="float32"),
    # float64 (dtype suffix)
    "f64_normal": _normal((3, 4), dtype="float64", seed=17),
    "f64_long": _normal(50, 1e3, dtype="float64", seed=18),
    "f64_ints": np.array([1.0, 2.0], dtype="float64"),
    "f64_tiny": _normal((2, 3), 1e-12, dtype="float64", seed=19),
    "f64_huge": _normal((2, 3), 1e200, dtype="float64", seed=20),
    # ints and bools
    "int64_vec": _ints(10, -100, 100, seed=21),
    "int64_2d": _ints((4, 6), -5, 1000, seed=22),
    "int64_long_row": _ints(60, -1000000, 1000000, seed=23),
    "int64_3d": _ints((2, 2, 3), 0, 10, seed=24),
    "int64_huge": np.array([2**62, -(2**62), 1], dtype="int64"),
    "int32_vec": _ints(8, -50, 50, dtype="int32", seed=25),
    "int32_2d": _ints((3, 30), -9, 9, dtype="int32", seed=26),
    "bool_vec": np.array([True, False]),
    "bool_2d": _rng(27).random((5, 7)) > 0.5,
    "bool_long": _rng(28).random(40) > 0.5,
    "bool_false": np.array([False, False]),
    # summarization (> 1000 elements)
    "summ_1d": _normal(1001, seed=29),
    "summ_2d": _normal((40, 30), seed=30),
    "summ_2d_narrow": _normal((500, 3), seed=31),
    "summ_2d_wide": _normal((3, 500), seed=32),
    "summ_3d": _normal((10, 11, 12), seed=33),
    "summ_4d": _normal((7, 2, 8, 10), seed=34),
    "summ_sci": _normal((50, 50), 1e6, seed=35),
    "summ_hidden_outlier": np.concatenate(
        [np.ones(500), [1e12], np.ones(600)]
    ).astype("float32"),
    "summ_int64": np.arange(2000, dtype="int64").reshape(40, 50),
    "summ_int32": np.arange(-1500, 1500, dtype="int32"),
    "summ_bool": _rng(36).random((30, 40)) > 0.5,
    "summ_f64": _normal((1200,), dtype="float64", seed=37),
    "summ_arange_float": np.arange(1001, dtype="float32"),
    "exactly_1000": _normal((10, 100), seed=38),
}


def _dtype_as_numgrad(obj):
    text = str(obj)
    return text.replace("torch.", "numgrad.") if isinstance(obj, torch.dtype) else text


def numgrad_repr(tensor):
    """``repr(tensor)`` with ``numgrad.`` in place of ``torch.`` in the dtype.

    A plain ``.replace("torch.", "numgrad.")`` on the repr is not enough: the
    longer name can push a following suffix past the linewidth, so the name is
    swapped inside torch's own printer, before it lays out the suffixes.
    """
    printer = torch._tensor_str
    printer.str = _dtype_as_numgrad  # shadows the builtin for that module only
    try:
        return repr(tensor)
    finally:
        del printer.str


def _expected(array):
    return numgrad_repr(torch.from_numpy(array))


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_torch_repr(name):
    array = CASES[name]
    assert format_tensor(array, str(array.dtype)) == _expected(array)


@pytest.mark.parametrize("name", ["normal_4x7", "normal_3d", "int64_2d", "summ_2d"])
def test_non_contiguous(name):
    array = CASES[name].swapaxes(0, -1)
    assert not array.flags.c_contiguous
    assert format_tensor(array, str(array.dtype)) == _expected(array.copy(order="C"))


@pytest.mark.parametrize("name", ["normal_4x7", "specials", "summ_3d", "scalar_frac"])
def test_strided_slice(name):
    array = CASES[name][..., ::2] if CASES[name].ndim else CASES[name]
    expected = _expected(array.copy(order="C"))
    assert format_tensor(array, str(array.dtype)) == expected


GRAD_CASES = {
    "small": _normal((2, 2), seed=40),
    "row_near_linewidth": _normal(9, seed=41),
    "long_rows": _normal((3, 20), seed=42),
    "f64": _normal((2, 3), dtype="float64", seed=43),
    "f64_long": _normal(10, 1e-6, dtype="float64", seed=44),
    "scalar": np.array(2.5, dtype="float32"),
    "summarized": _normal((40, 40), seed=45),
    "empty": np.zeros((0, 2), dtype="float32"),
}


@pytest.mark.parametrize("name", sorted(GRAD_CASES))
def test_requires_grad_suffix(name):
    leaf = torch.from_numpy(GRAD_CASES[name]).requires_grad_()
    got = format_tensor(GRAD_CASES[name], str(leaf.dtype)[6:], suffixes=["requires_grad=True"])
    assert got == numgrad_repr(leaf)


@pytest.mark.parametrize("name", sorted(GRAD_CASES))
def test_grad_fn_suffix(name):
    leaf = torch.from_numpy(GRAD_CASES[name]).requires_grad_()
    result = leaf + leaf
    values = result.detach().numpy()
    got = format_tensor(values, str(values.dtype), suffixes=["grad_fn=<AddBackward0>"])
    assert got == numgrad_repr(result)


def test_docstring_example():
    values = np.full((2, 2), 3.0, dtype="float32")
    got = format_tensor(values, "float32", suffixes=["grad_fn=<AddBackward0>"])
    assert got == "tensor([[3., 3.],\n        [3., 3.]], grad_fn=<AddBackward0>)"


DEVICE_CASES = [
    (np.array([1.0, 2.0], dtype="float32"), "float32", (),
     "tensor([1., 2.], device='cuda:0')"),
    (np.array(27.0, dtype="float32"), "float32", ("requires_grad=True",),
     "tensor(27., device='cuda:0', requires_grad=True)"),
    (np.array([[1, 2], [3, 4]], dtype="int32"), "int32", (),
     "tensor([[1, 2],\n        [3, 4]], device='cuda:0', dtype=numgrad.int32)"),
    (np.array([0.5, 1.25], dtype="float64"), "float64", ("grad_fn=<MulBackward0>",),
     "tensor([0.5000, 1.2500], device='cuda:0', dtype=numgrad.float64,\n"
     "       grad_fn=<MulBackward0>)"),
    (np.zeros((0, 3), dtype="float32"), "float32", (),
     "tensor([], device='cuda:0', size=(0, 3))"),
    (np.zeros((0,), dtype="int64"), "int64", (),
     "tensor([], device='cuda:0', dtype=numgrad.int64)"),
]


@pytest.mark.parametrize("values,dtype_name,suffixes,expected", DEVICE_CASES)
def test_device_suffix_by_hand(values, dtype_name, suffixes, expected):
    got = format_tensor(values, dtype_name, device="cuda:0", suffixes=suffixes)
    assert got == expected


@pytest.mark.parametrize("name", ["row_near_linewidth", "long_rows", "f64", "summarized"])
def test_device_suffix_from_cpu_repr(name):
    """Rebuild a CUDA repr from the CPU one: device goes first among the suffixes."""
    leaf = torch.from_numpy(GRAD_CASES[name]).requires_grad_()
    cpu = repr(leaf).replace("torch.", "numgrad.")
    body, _, _ = cpu.rpartition(")")
    body = body.replace(",\n       requires_grad=True", "").replace(", requires_grad=True", "")
    body = body.replace(",\n       dtype=numgrad.float64", "").replace(
        ", dtype=numgrad.float64", ""
    )
    items = ["device='cuda:1'"]
    if leaf.dtype == torch.float64:
        items.append("dtype=numgrad.float64")
    items.append("requires_grad=True")
    expected = body
    last_line = len(body) - body.rfind("\n") + 1
    for item in items:
        if last_line + len(item) + 2 > 80:
            expected += ",\n       " + item
            last_line = 7 + len(item)
        else:
            expected += ", " + item
            last_line += len(item) + 2
    expected += ")"
    got = format_tensor(
        GRAD_CASES[name], str(leaf.dtype)[6:], device="cuda:1", suffixes=["requires_grad=True"]
    )
    assert got == expected


def test_casts_values_to_dtype_name():
    values = np.array([1.0, 2.5, 3.0], dtype="float64")
    assert format_tensor(values, "float32") == "tensor([1.0000, 2.5000, 3.0000])"


def _random_case(seed):
    """A random tensor of random shape, dtype, scale and special values."""
    rng = _rng(1000 + seed)
    ndim = int(rng.integers(0, 5))
    shape = tuple(int(n) for n in rng.integers(1, 12 if ndim <= 2 else 6, ndim))
    dtype = str(rng.choice(list(_TORCH_DTYPES)))
    if dtype == "bool":
        return np.array(rng.random(shape) > 0.5)
    if dtype.startswith("int"):
        bound = 10 ** int(rng.integers(1, 10))
        return np.array(rng.integers(-bound, bound, shape), dtype=dtype)
    values = rng.standard_normal(shape) * 10.0 ** int(rng.integers(-12, 14))
    if rng.random() < 0.3:
        values = np.round(values)
    values = np.array(values, dtype=dtype)
    if rng.random() < 0.3:
        flat = values.reshape(-1)
        flat[rng.integers(0, flat.size)] = rng.choice([np.nan, np.inf, -np.inf, -0.0])
    return values


@pytest.mark.parametrize("seed", range(200))
def test_random_tensors(seed):
    array = _random_case(seed)
    assert format_tensor(array, str(array.dtype)) == _expected(array)


def test_accepts_numpy_scalar():
    assert format_tensor(np.float32(27.0), "float32") == "tensor(27.)"


def test_dtype_suffix_follows_set_default_dtype():
    """After ``set_default_dtype(float64)`` a float64 tensor (and a complex128 one) prints
    without ``dtype=``, a float32 one with it, as PyTorch prints them."""
    import numgrad

    def reprs(lib):
        return [repr(t) for t in (
            lib.tensor([1.5, 2.0]), lib.tensor([1.5, 2.0], dtype=lib.float32),
            lib.tensor([1.5j]), lib.tensor([1.5j], dtype=lib.complex64), lib.tensor([]),
            lib.tensor([], dtype=lib.float32), lib.tensor([3, 4]))]

    for default in ("float64", "float32"):
        theirs, ours = {}, {}
        for lib, out in ((torch, theirs), (numgrad, ours)):
            before = lib.get_default_dtype()
            lib.set_default_dtype(getattr(lib, default))
            try:
                out[default] = reprs(lib)
            finally:
                lib.set_default_dtype(before)
        assert ours[default] == [r.replace("torch.", "numgrad.") for r in theirs[default]]
