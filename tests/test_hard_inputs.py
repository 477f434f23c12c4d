"""Hard inputs, each compared with PyTorch at test time (issue 14, items 3, 4 and 7): NaN and inf
forward and backward, empty and 0-d tensors, integers out of range, and PyTorch's own errors and
refusals where NumPy's used to leak through. Each case runs the same function on ``torch`` and on
``numgrad`` and compares values, dtypes, shapes, gradients and warnings, or the exception's class
and message."""

import math
import warnings

import numpy as np
import pytest
import torch

import numgrad as ng

INF, NAN = math.inf, math.nan


def _dtype_name(dtype) -> str:
    return str(dtype).rsplit(".", 1)[-1]


def _array(t) -> np.ndarray:
    return np.array(t.detach().tolist(), dtype=np.float64)


def _same(got, want, what: str) -> None:
    """Values, dtype and shape of a numgrad tensor against a torch tensor (NaN equals NaN)."""
    assert (got is None) == (want is None), what
    if want is None:
        return
    assert tuple(got.shape) == tuple(want.shape), what
    assert _dtype_name(got.dtype) == _dtype_name(want.dtype), what
    np.testing.assert_allclose(_array(got), _array(want), rtol=1e-6, atol=0, equal_nan=True,
                               err_msg=what)


def _messages(caught) -> list:
    # PyTorch's C++ warnings end with where they were triggered; the words before are compared.
    return [str(w.message).split(" (Triggered internally")[0] for w in caught]


# Warnings PyTorch (and numgrad) give once per process (TORCH_WARN_ONCE): whether one shows in a
# test depends on which earlier test set it off first, so they are left out of the comparison
# (tests/test_surface.py checks that numgrad gives them once).
_WARN_ONCE = ("Tensor.T is deprecated on 0-D tensors", "Tensor.mT is deprecated on 0-D tensors")


def _run(m, fn, arrays, grad, seed):
    xs = [m.tensor(a, requires_grad=grad and a.dtype.kind == "f") for a in arrays]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        y = fn(m, *xs)
        outs = list(y) if isinstance(y, (tuple, list)) else [y]
        if grad and any(o.requires_grad for o in outs):
            roots = [o for o in outs if o.requires_grad]
            m.autograd.backward(roots, [m.full(tuple(o.shape), seed, dtype=o.dtype) for o in roots])
    return outs, [x.grad for x in xs], caught


def check(fn, *arrays, grad=True, seed=1.0):
    """``fn(module, *tensors)`` on torch and numgrad: the outputs, the inputs' gradients (after a
    backward seeded with ``seed``) and the warnings are PyTorch's; numgrad leaks no NumPy
    RuntimeWarning."""
    arrays = [np.asarray(a, dtype=np.float32) if not isinstance(a, np.ndarray) else a
              for a in arrays]
    want, want_grads, want_warned = _run(torch, fn, arrays, grad, seed)
    got, got_grads, got_warned = _run(ng, fn, arrays, grad, seed)
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        _same(g, w, f"output {i}")
    for i, (g, w) in enumerate(zip(got_grads, want_grads)):
        _same(g, w, f"gradient of input {i}")
    assert not [w for w in got_warned if issubclass(w.category, RuntimeWarning)]
    want_user = _messages([w for w in want_warned if issubclass(w.category, UserWarning)])
    got_user = _messages([w for w in got_warned if issubclass(w.category, UserWarning)])
    assert ([m for m in got_user if not m.startswith(_WARN_ONCE)]
            == [m for m in want_user if not m.startswith(_WARN_ONCE)])


def check_raises(fn, *arrays):
    """``fn`` raises the same exception class with the same message (its first line) on both."""
    with pytest.raises(Exception) as want:
        fn(torch, *[torch.tensor(a) for a in arrays])
    with pytest.raises(Exception) as got:
        fn(ng, *[ng.tensor(a) for a in arrays])
    assert type(got.value) is type(want.value), (got.value, want.value)
    assert str(got.value).splitlines()[0] == str(want.value).splitlines()[0]


def _i32(values):
    return np.array(values, dtype=np.int32)


# --------------------------------------------------------------------------- integers
@pytest.mark.parametrize("fn", [
    lambda m, x: x.prod(), lambda m, x: x.prod(0), lambda m, x: m.prod(x, 0, keepdim=True),
    lambda m, x: x.sum(),
], ids=["prod", "prod_dim", "prod_keepdim", "sum"])
@pytest.mark.parametrize("values", [_i32([65536, 65536]), _i32([2**31 - 1, 1]),
                                    np.array([True, True]), np.array([True, False])],
                         ids=["int32_wraps", "int32_max", "bools", "bool_false"])
def test_integer_and_bool_products_and_sums_are_int64(fn, values):
    check(fn, values, grad=False)


@pytest.mark.parametrize("data, dtype", [
    ([2**63], None), (2**63, None), ([-2**63 - 1], None), ([[1], [2**63]], None),
    ([1, 2**63], None), ([2**64, True], None), ([2**63], "int32"), ([2**40], "int32"),
    (2**31, "int32"), ([[1], [-2**31 - 1]], "int32"),
], ids=str)
def test_python_ints_out_of_range_raise(data, dtype):
    check_raises(lambda m: m.tensor(data, dtype=None if dtype is None else getattr(m, dtype)))


@pytest.mark.parametrize("data, dtype", [
    ([-2**63], None), ([2.0, 2**64], None), ([2**63], "float32"), ([2**64], "float64"),
    ([2**63], "bool"),
], ids=str)
def test_python_ints_beyond_int64_in_float_or_bool_data(data, dtype):
    check(lambda m: m.tensor(data, dtype=None if dtype is None else getattr(m, dtype)), grad=False)




@pytest.mark.parametrize("data", [
    np.float64(1.5), np.float32(1.5), np.int32(3), np.int64(3), np.bool_(True),
    [np.float64(1.5), 2.0], [1.0, np.float64(2.0)], [[np.float64(1.0)], [2.0]],
    [np.float32(1.5), 2.0], [np.int32(1)], [np.int32(1), 5], [np.int32(1), 2.0], [1.5, 2.5],
], ids=repr)
def test_numpy_scalars_keep_their_dtype_in_inference(data):
    """``tensor(np.float64(x))`` is float64 in PyTorch, as is a list holding one (Python floats
    alone give the default float32); NumPy int32 scalars alone give int32."""
    check(lambda m: m.tensor(data), grad=False)
@pytest.mark.parametrize("value, dtype", [(2**63, None), (2**63, "int64"), (2**40, "int32"),
                                          (2**64, None), (-2**63 - 1, None)], ids=str)
def test_full_with_an_int_out_of_range_raises(value, dtype):
    check_raises(lambda m: m.full((2,), value, dtype=None if dtype is None else getattr(m, dtype)))


# --------------------------------------------------------------------------- NaN and inf
@pytest.mark.parametrize("fn", [
    lambda m, x: m.softmax(x, 0), lambda m, x: m.log_softmax(x, 0),
    lambda m, x: m.logsumexp(x, 0), lambda m, x: m.softmax(x.reshape(3, 1), 0),
    lambda m, x: m.log_softmax(x.reshape(3, 1), 0),
], ids=["softmax", "log_softmax", "logsumexp", "softmax_dim0", "log_softmax_dim0"])
@pytest.mark.parametrize("values", [[0.0, INF, 1.0], [0.0, -INF, 1.0], [-INF, -INF, -INF],
                                    [NAN, 1.0, 2.0], [INF, -INF, 0.0]], ids=str)
def test_softmax_family_with_infinities_and_nan(fn, values):
    check(fn, values)


@pytest.mark.parametrize("fn", [
    lambda m, x: x.max(), lambda m, x: x.min(), lambda m, x: m.max(x),
    lambda m, x: x.amax(), lambda m, x: x.amin(0), lambda m, x: x.reshape(1, 4).amax(1),
    lambda m, x: x.reshape(2, 2).max(1).values, lambda m, x: x.reshape(2, 2).min(0)[0],
    lambda m, x: x.reshape(2, 2).max(1).indices,
], ids=["max", "min", "torch.max", "amax", "amin_dim", "amax_2d", "max_dim", "min_dim",
        "max_dim_indices"])
@pytest.mark.parametrize("values", [[1.0, NAN, 2.0, 0.0], [1.0, NAN, NAN, 0.0],
                                    [2.0, 1.0, 2.0, 2.0], [NAN, NAN, NAN, NAN]], ids=str)
def test_max_and_min_gradients_at_nan(fn, values):
    check(fn, values)


def test_max_of_all_is_zero_off_the_extreme_whatever_the_gradient():
    check(lambda m, x: x.max(), [1.0, NAN, 2.0], seed=NAN)


@pytest.mark.parametrize("fn", [lambda m, a, b: m.maximum(a, b), lambda m, a, b: m.minimum(a, b),
                                lambda m, a, b: m.max(a, b)], ids=["maximum", "minimum", "max"])
def test_maximum_and_minimum_gradients_at_nan_and_ties(fn):
    check(fn, [NAN, 1.0, NAN, 1.0, 2.0, 0.0], [1.0, NAN, NAN, 1.0, 0.0, 2.0])


def test_clamp_gradient_at_nan():
    check(lambda m, x: x.clamp(0.0, 1.0), [NAN, 2.0, -1.0, 0.5])


@pytest.mark.parametrize("fn, values", [
    (lambda m, x: x.norm(), [1e30]), (lambda m, x: x.norm(), [-1e30]),
    (lambda m, x: x.norm(), [[1e30]]), (lambda m, x: x.norm(), [1e-30]),
    (lambda m, x: x.norm(), [1e30, 1e30]), (lambda m, x: x.norm(dim=1), [[1e30], [2.0]]),
    (lambda m, x: x.norm(dim=1, keepdim=True), [[-1e30], [0.0]]),
    (lambda m, x: x.norm(), [INF]), (lambda m, x: x.norm(), [NAN]),
    (lambda m, x: x.norm(), [0.0]), (lambda m, x: x.norm(dim=0), [[3.0, 1e30], [4.0, 0.0]]),
], ids=str)
def test_norm_of_one_element_is_its_absolute_value(fn, values):
    check(fn, values)


def test_norm_of_one_element_float64():
    check(lambda m, x: x.norm(), np.array([1e200]))


@pytest.mark.parametrize("fn, values", [
    (lambda m, x: x.var(), [1.0]), (lambda m, x: x.std(), [1.0]),
    (lambda m, x: x.var(0), [[1.0, 2.0]]), (lambda m, x: x.std(0), [[1.0, 2.0]]),
    (lambda m, x: x.var(correction=2), [1.0]), (lambda m, x: x.var(correction=3), [1.0, 3.0]),
    (lambda m, x: x.var(0, correction=3), [1.0, 3.0]),
    (lambda m, x: x.std(correction=3), [1.0, 3.0]), (lambda m, x: m.var(x), np.float32(2.0)),
    (lambda m, x: x.var(), [1.0, 2.0]), (lambda m, x: x.var(correction=0), [1.0]),
    (lambda m, x: x.reshape(2, 0).var(0), np.zeros(0, np.float32)),
    (lambda m, x: x.reshape(0, 2).var(0), np.zeros(0, np.float32)),
], ids=str)
def test_var_and_std_without_degrees_of_freedom(fn, values):
    check(fn, values)


# --------------------------------------------------------------------------- empty tensors
@pytest.mark.parametrize("fn", [
    lambda m, x: m.softmax(x, 1), lambda m, x: m.log_softmax(x, 1), lambda m, x: m.logsumexp(x, 1),
    lambda m, x: m.logsumexp(x, (0, 1)), lambda m, x: m.logsumexp(x, 1, keepdim=True),
    lambda m, x: m.softmax(x, 0), lambda m, x: m.logsumexp(x, 0),
    lambda m, x: m.softmax(x.t(), 1), lambda m, x: m.log_softmax(x.t(), 1),
], ids=["softmax", "log_softmax", "logsumexp", "logsumexp_all", "logsumexp_keepdim",
        "softmax_dim0", "logsumexp_dim0", "softmax_other_empty", "log_softmax_other_empty"])
def test_softmax_family_over_an_empty_dim(fn):
    check(fn, np.zeros((2, 0), np.float32))


@pytest.mark.parametrize("fn, shape", [
    (lambda m, x: m.nanmedian(x, 1), (3, 0)), (lambda m, x: m.aminmax(x, dim=1), (3, 0)),
    (lambda m, x: m.nanquantile(x, 0.5), (0, 4)), (lambda m, x: m.nanquantile(x, 1.5), (3, 4)),
    (lambda m, x: m.linalg.vector_norm(x, ord=INF, dim=1), (3, 0)),
    (lambda m, x: m.linalg.vector_norm(x, ord=-1.0, dim=(0, 1)), (3, 0, 2)),
    (lambda m, x: m.linalg.vector_norm(x, ord=-INF, dim=-2), (3, 0, 2)),
    (lambda m, x: m.linalg.vector_norm(x, ord=INF), (3, 0)),
], ids=["nanmedian", "aminmax", "nanquantile", "nanquantile_q", "norm_inf_dim", "norm_dims",
        "norm_negative_dim", "norm_all"])
def test_reductions_without_identity_over_an_empty_dim_raise_pytorchs_words(fn, shape):
    check_raises(fn, np.zeros(shape, np.float32))


@pytest.mark.parametrize("fn", [
    lambda m: m.zeros(-1), lambda m: m.zeros((3, -1)), lambda m: m.ones(2, -3),
    lambda m: m.empty(-2), lambda m: m.full((2, -1), 2.0), lambda m: m.randn(3, -1),
    lambda m: m.randint(0, 5, (-1,)), lambda m: m.randperm(-1), lambda m: m.normal(0.0, 1.0, (-1,)),
    lambda m: m.empty_strided((2, -1), (1, 1)), lambda m: m.ones(2).new_zeros(-1),
    lambda m: m.ones(2).new_full((-1,), 1.0),
    lambda m: m.where(m.tensor([True, False]), m.ones(3, 4), m.ones(3, 4)),
    lambda m: m.where(m.ones(3, 4) > 0, m.ones(3, 2), 0.0),
    lambda m: m.where(m.ones(3, 1) > 0, m.ones(1, 4), m.ones(2, 1)),
], ids=["zeros", "zeros_tuple", "ones", "empty", "full", "randn", "randint", "randperm", "normal",
        "empty_strided", "new_zeros", "new_full", "where_condition", "where_input", "where_other"])
def test_negative_sizes_and_shapes_that_do_not_broadcast_raise_pytorchs_words(fn):
    """(NumPy's ValueError used to leak from the creation functions and ``where``)"""
    check_raises(fn)


@pytest.mark.parametrize("a, b", [
    ((2, 3, 0), (0, 4)), ((0,), (0,)), ((2, 0), (0,)), ((0,), (0, 3)), ((0, 3), (3, 4)),
    ((2, 3), (3, 0)), ((0, 2, 3), (3, 4)), ((2, 0), (5, 0, 3)), ((2, 3, 0), (2, 0, 4)),
    ((3, 0), (0, 4)), ((0,), (2, 0, 3)), ((2, 3, 0), (0,)),
], ids=str)
def test_matmul_with_empty_dims(a, b):
    check(lambda m, x, y: x @ y, np.zeros(a, np.float32), np.ones(b, np.float32))


@pytest.mark.parametrize("fn", [lambda m, a, b: m.mm(a, b), lambda m, a, b: m.bmm(a.unsqueeze(0), b.unsqueeze(0))],
                         ids=["mm", "bmm"])
def test_mm_and_bmm_with_an_empty_inner_dim(fn):
    check(fn, np.zeros((3, 0), np.float32), np.zeros((0, 4), np.float32))


@pytest.mark.parametrize("fn, shape", [
    (lambda m, x: x.chunk(2), (0,)), (lambda m, x: x.chunk(3), (0,)),
    (lambda m, x: x.chunk(2, 1), (2, 0)), (lambda m, x: m.chunk(x, 3), (1,)),
    (lambda m, x: x.split(2), (0,)), (lambda m, x: x.split([0, 0]), (0,)),
], ids=str)
def test_chunk_and_split_of_empty_tensors(fn, shape):
    check(fn, np.zeros(shape, np.float32))


@pytest.mark.parametrize("fn, shape", [
    (lambda m, x: x.chunk(0), (0,)), (lambda m, x: x.chunk(-1), (3,)),
    (lambda m, x: x.split(0), (3,)), (lambda m, x: x.split(-1), (3,)),
    (lambda m, x: x.split([4, -1]), (3,)),
], ids=str)
def test_chunk_and_split_refuse_bad_sizes(fn, shape):
    check_raises(fn, np.zeros(shape, np.float32))


@pytest.mark.parametrize("fn, shape", [
    (lambda m, x: x.amax(), (0,)), (lambda m, x: x.amin(), (2, 0)), (lambda m, x: x.max(), (0,)),
    (lambda m, x: x.amax(1), (2, 0)), (lambda m, x: x.amin(-1), (2, 0)),
    (lambda m, x: x.amax((2, 1)), (2, 0, 0)), (lambda m, x: x.max(1), (2, 0)),
    (lambda m, x: x.min(-1), (2, 0)), (lambda m, x: x.argmax(), (0,)),
    (lambda m, x: x.argmin(), (2, 0)), (lambda m, x: x.argmax(1), (2, 0)),
    (lambda m, x: x.argmin(-1), (2, 0)), (lambda m, x: x.max(0), (0, 2)),
], ids=str)
def test_extremes_of_nothing_raise(fn, shape):
    check_raises(fn, np.zeros(shape, np.float32))


@pytest.mark.parametrize("fn", [lambda m, x: x.amax(0), lambda m, x: x.max(0).values,
                                lambda m, x: x.argmax(0), lambda m, x: x.amin((0,), keepdim=True)],
                         ids=["amax", "max", "argmax", "amin_keepdim"])
def test_extremes_over_a_non_empty_dim_of_an_empty_tensor(fn):
    check(fn, np.zeros((2, 0), np.float32))


# --------------------------------------------------------------------------- 0-d tensors
@pytest.mark.parametrize("fn", [
    lambda m, x: x.transpose(0, -1), lambda m, x: m.transpose(x, 0, 0), lambda m, x: x.t(),
    lambda m, x: x.T, lambda m, x: x.mT, lambda m, x: x.permute(()), lambda m, x: x.max(0).values,
    lambda m, x: x.softmax(0),
], ids=["transpose", "transpose_00", "t", "T", "mT", "permute", "max_dim", "softmax"])
def test_zero_dim_shape_ops(fn):
    check(fn, np.float32(3.0))


@pytest.mark.parametrize("fn", [
    lambda m, x: m.cat([x, x]), lambda m, x: m.cat([x.reshape(1), x]), lambda m, x: x.split(1),
    lambda m, x: x.split([1]), lambda m, x: x.narrow(0, 0, 1), lambda m, x: x.chunk(1),
    lambda m, x: x.transpose(0, 1), lambda m, x: x.permute(), lambda m, x: m.permute(x),
], ids=["cat", "cat_position_1", "split", "split_sizes", "narrow", "chunk", "transpose_01",
        "permute_no_dims", "torch.permute"])
def test_zero_dim_refusals(fn):
    check_raises(fn, np.float32(2.0))


@pytest.mark.parametrize("fn", [lambda m, x: x.permute(), lambda m, x: x.mT],
                         ids=["permute_no_dims", "mT"])
def test_one_dim_refusals(fn):
    check_raises(fn, np.zeros(2, np.float32))


# --------------------------------------------------------------------------- refusals
@pytest.mark.parametrize("fn", [
    lambda m, x: m.softmax(x, 0), lambda m, x: x.softmax(-1), lambda m, x: m.log_softmax(x, 0),
    lambda m, x: m.softmax(x.reshape(1, -1), 0), lambda m, x: m.log_softmax(x.reshape(1, -1), 0),
    lambda m, x: m.nn.functional.softmax(x, 0), lambda m, x: m.nn.functional.log_softmax(x, 0),
    lambda m, x: x.var(), lambda m, x: x.std(0), lambda m, x: m.var(x, correction=0),
    lambda m, x: x.norm(), lambda m, x: x.norm(dim=0), lambda m, x: x.mean(),
], ids=["softmax", "softmax_method", "log_softmax", "softmax_dim0", "log_softmax_dim0",
        "F.softmax", "F.log_softmax", "var", "std", "var_correction", "norm", "norm_dim", "mean"])
@pytest.mark.parametrize("values", [np.array([1, 2, 3]), _i32([1, 2]), np.array([True, False])],
                         ids=["long", "int", "bool"])
def test_integer_and_bool_refusals(fn, values):
    check_raises(fn, values)


@pytest.mark.parametrize("fn, values", [
    (lambda m, x: m.softmax(x, 1), np.zeros((2, 0), np.int64)),
    (lambda m, x: m.log_softmax(x.t(), 1), np.zeros((2, 0), np.int64)),
    (lambda m, x: m.softmax(x, 1, dtype=m.float64), np.array([[1, 2, 3]])),
    (lambda m, x: m.logsumexp(x, 1), np.array([[1, 2, 3]])),
], ids=["softmax_empty", "log_softmax_empty", "softmax_dtype", "logsumexp"])
def test_integer_softmax_that_pytorch_runs(fn, values):
    check(fn, values, grad=False)


# --------------------------------------------------------------------------- an expanded .grad
def test_accumulating_into_an_expanded_grad_raises_pytorchs_error_and_writes_nothing():
    def attempt(m):
        x = m.tensor([1.0, 2.0, 3.0], requires_grad=True)
        x.grad = m.zeros(1).expand(3)
        with pytest.raises(Exception) as info:
            (x * 2).sum().backward()
        return x, info.value

    (tx, want), (nx, got) = attempt(torch), attempt(ng)
    assert type(got) is type(want)
    assert str(got) == str(want)
    _same(nx.grad, tx.grad, "the .grad")


def _outcome(fn, m):
    try:
        y = fn(m)
    except Exception as e:  # (the class and the first line of the message are compared)
        return type(e).__name__, str(e).splitlines()[0]
    return _dtype_name(y.dtype), y.tolist()


def _I8(m):
    return m.tensor([3, 1], dtype=m.int8)


def _U8(m):
    return m.tensor([3, 1], dtype=m.uint8)


def _YES(m):
    return m.tensor([True, False])


@pytest.mark.parametrize("fn", [
    # an operand wraps into the tensor's dtype, as PyTorch's C conversion does
    lambda m: _I8(m) + 1000, lambda m: _I8(m) * 1000, lambda m: _I8(m) == 1000,
    lambda m: _I8(m) < 1000, lambda m: _I8(m) // 1000, lambda m: _U8(m) - 300,
    lambda m: _U8(m) * -1, lambda m: _U8(m) & -1, lambda m: _I8(m).add_(1000),
    lambda m: m.tensor([3]) + 2**63, lambda m: m.tensor([3], dtype=m.int32) // 2**32,
    lambda m: m.tensor([3]) + 2**64, lambda m: m.tensor([3]) - (-2**63 - 1),
    # a number written into a tensor is checked: PyTorch's error naming the C type
    lambda m: _I8(m).fill_(1000), lambda m: m.full((2,), 1000, dtype=m.int8),
    lambda m: _I8(m).masked_fill(_YES(m), 1000), lambda m: _I8(m).clamp(max=1000),
    lambda m: _I8(m).clamp(-1000, 5), lambda m: m.where(_YES(m), _I8(m), 1000),
    lambda m: m.where(_YES(m), 1000, _I8(m)), lambda m: _I8(m).index_fill(0, m.tensor([0]), 1000),
    lambda m: _I8(m) ** 128, lambda m: _I8(m) ** 127, lambda m: _U8(m) ** -1,
    lambda m: _U8(m).fill_(-1), lambda m: _U8(m).fill_(-256),
    lambda m: m.full((2,), -1, dtype=m.uint8), lambda m: _U8(m).clamp(max=-1),
    lambda m: _U8(m).clamp(min=-1), lambda m: m.tensor([3], dtype=m.int32).fill_(2**31),
    lambda m: _I8(m).fill_(127.9), lambda m: m.tensor([3]).fill_(2**63),
    lambda m: m.tensor([3.0]).fill_(1e300), lambda m: m.tensor([3.0]).clamp(max=1e300),
    lambda m: m.tensor([3.0, 1.0]).masked_fill(_YES(m), -1e300),
    lambda m: _I8(m).clamp(max=1000.0),
    # Python numbers into an integer dtype at creation
    lambda m: m.tensor(-256, dtype=m.uint8), lambda m: m.tensor(-1, dtype=m.uint8),
    lambda m: m.tensor([1, 127.9], dtype=m.int8), lambda m: m.tensor([[math.nan]], dtype=m.int64),
    lambda m: m.tensor([INF], dtype=m.uint8), lambda m: m.as_tensor([-0.5], dtype=m.uint8),
    lambda m: m.tensor([9.3e18], dtype=m.int64), lambda m: m.tensor([2**63], dtype=m.int64),
])
def test_python_numbers_beyond_a_dtype_wrap_or_raise_as_pytorch(fn):
    """(numgrad raised NumPy's OverflowError "Python integer 1000 out of bounds for int8" for
    int8's ``x + 1000``, where PyTorch adds -24; its checked writes named every dtype "int",
    wrapped in ``index_fill`` and ``clamp``, and ``tensor([127.9], dtype=int8)`` truncated)"""
    assert _outcome(fn, ng) == _outcome(fn, torch)


@pytest.mark.parametrize("fn", [
    lambda m, x: x + 1e300, lambda m, x: x * 1e39, lambda m, x: x.t()[::2] - 1e300,
    lambda m, x: (x * 1).add_(1e300), lambda m, x: x ** 1e39, lambda m, x: 1e39 ** x,
    lambda m, x: x.double().mul(1e300).float(), lambda m, x: (x * 1e39).long(),
    lambda m, x: (x * 1e39).to(m.uint8), lambda m, x: x.half() * 60000.0,
    lambda m, x: (60000.0 ** x.half()).detach(),
    lambda m, x: m.tensor(1e300, dtype=m.float32) + x,
    lambda m, x: m.where(x > 0, x, m.tensor(-1e300, dtype=m.float64).float()),
], ids=["add", "mul", "strided", "add_", "pow", "rpow", "narrowing", "to_long", "to_uint8",
        "half", "half_rpow", "tensor", "where"])
def test_numbers_beyond_float32_overflow_to_inf_without_numpys_warning(fn):
    """(NumPy's "RuntimeWarning: overflow encountered in cast" leaked from converting the number,
    narrowing a result or casting inf and NaN to integers: an error under pytest's
    ``filterwarnings = error``; PyTorch gives inf, or the machine's integer, silently)"""
    check(fn, np.array([3.0, -1.0, 0.5], np.float32), seed=1.0)


def _grid(m, dtype=None):
    return m.tensor([[1.0, 0.0, 3.0], [2.0, 5.0, 0.0]], dtype=dtype)


@pytest.mark.parametrize("fn", [
    lambda m: _grid(m).sum(()), lambda m: _grid(m).sum([], keepdim=True),
    lambda m: _grid(m).mean(()), lambda m: _grid(m).nanmean([]), lambda m: _grid(m).var(()),
    lambda m: _grid(m).std([]), lambda m: _grid(m).amax([]), lambda m: _grid(m).norm(dim=()),
    lambda m: m.linalg.vector_norm(_grid(m), dim=[]), lambda m: _grid(m, m.int64).sum(()),
    lambda m: m.ones(0, 2).mean(()), lambda m: _grid(m).all(dim=()),
    lambda m: _grid(m).sum((0, 0)), lambda m: _grid(m).mean((1, -1)),
    lambda m: _grid(m, m.bool).argmax(), lambda m: _grid(m, m.bool).argmin(1),
    lambda m: _grid(m, m.uint8).any(1), lambda m: _grid(m, m.uint8).all(),
    lambda m: _grid(m, m.float16).quantile(0.5),
])
def test_reductions_over_no_dims_and_their_dtype_rules_as_pytorch(fn):
    """(``x.sum(())`` returned ``x`` unreduced, where PyTorch reduces every dimension: a silent
    value difference; a repeated dim's error did not name it; argmax of bools, any/all of uint8
    (uint8 in PyTorch) and quantile of float16 differed)"""
    ours, theirs = _outcome(fn, ng), _outcome(fn, torch)
    assert ours[0] == theirs[0]
    if isinstance(theirs[1], str):
        assert ours[1] == theirs[1]
    else:
        np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-6, equal_nan=True)


@pytest.mark.parametrize("fn", [
    lambda m, x: x.median(1), lambda m, x: x.median(), lambda m, x: x.nanmedian(0),
    lambda m, x: x.kthvalue(2, 0), lambda m, x: x.mode(1), lambda m, x: x.cummax(0),
    lambda m, x: x.cummin(1), lambda m, x: x.histc(4), lambda m, x: x.unique(),
    lambda m, x: x.unique(return_counts=True),
], ids=["median_dim", "median", "nanmedian", "kthvalue", "mode", "cummax", "cummin", "histc",
        "unique", "unique_counts"])
def test_order_statistics_of_float16_as_pytorch(fn):
    """(each raised Numba's bare ``NotImplementedError: float16``: their kernels, called on the
    array directly, now run on it widened to float32, which is exact for these)"""
    def run(m):
        y = fn(m, m.tensor([[1.5, 0, 3], [2, 5, 0.25], [7, 1, 1]], dtype=m.float16))
        return [(_dtype_name(t.dtype), t.tolist()) for t in (y if isinstance(y, tuple) else (y,))]
    assert run(ng) == run(torch)


@pytest.mark.parametrize("fn", [
    lambda m, x: x[m.tensor([1, 0], dtype=m.uint8)],
    lambda m, x: x[:, m.tensor([1, 0, 1], dtype=m.uint8)],
    lambda m, x: x[m.tensor([[0, 1, 1], [1, 0, 0]], dtype=m.uint8)],
    lambda m, x: x[m.tensor([1], dtype=m.int8)], lambda m, x: x[m.tensor([1], dtype=m.int16)],
    lambda m, x: x[m.tensor([1, 0], dtype=m.int32)],
], ids=["uint8_mask", "uint8_mask_dim1", "uint8_mask_2d", "int8", "int16", "int32"])
def test_index_tensors_of_small_integer_dtypes_as_pytorch(fn):
    """(a uint8 index tensor was read as indices, where PyTorch reads it as a mask, with its
    deprecation warning: ``x[tensor([1, 0], dtype=uint8)]`` gave rows 1 and 0 instead of row 0;
    int8 and int16 index tensors, which PyTorch refuses, were accepted)"""
    def run(m):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                out = fn(m, m.arange(6).view(2, 3)).tolist()
            except IndexError as e:
                out = str(e)
        return out, [str(w.message).split(" (Triggered")[0] for w in caught]
    assert run(ng) == run(torch)


@pytest.mark.parametrize("fn", [
    lambda m, a, b: m.mm(a, b), lambda m, a, b: m.nn.functional.linear(a, b.t()),
    lambda m, a, b: m.nn.functional.linear(a, b.t(), m.ones(3)),
    lambda m, a, b: m.addmm(m.ones(3, dtype=m.float64), a, b),
    lambda m, a, b: m.addmm(m.ones(3), a, b, beta=2), lambda m, a, b: m.bmm(a[None], b[None]),
    lambda m, a, b: m.mv(a, m.ones(2)), lambda m, a, b: m.dot(a[0], m.ones(2)),
    lambda m, a, b: m.matmul(b.t().double()[0], b), lambda m, a, b: m.mm(a.long(), b),
    lambda m, a, b: m.nn.Embedding(3, 2)(m.tensor([1.0])),
], ids=["mm", "linear", "linear_bias", "addmm_self", "addmm_beta", "bmm", "mv", "dot",
        "matmul_1d_2d", "mm_long", "embedding"])
def test_products_of_two_dtypes_raise_pytorchs_words(fn):
    """(each product gave numgrad's own wording with NumPy's dtype names, where PyTorch has one
    per product: ``expected m1 and m2 to have the same dtype, but got: double != float``,
    ``mat1 and mat2 must have the same dtype, but got Double and Float``, ...)"""
    check_raises(lambda m: fn(m, m.ones(4, 2, dtype=m.float64), m.ones(2, 3)))


@pytest.mark.parametrize("fn", [
    lambda m: m.cat([m.ones(0), m.ones(2, 3)], 1), lambda m: m.cat([m.ones(0), m.ones(0)]),
    lambda m: m.cat([m.ones(0, dtype=m.float64), m.ones(2, 3), m.ones(0)], -1),
    lambda m: m.cat([]), lambda m: m.stack([]), lambda m: m.ones(2, 3).flatten(1, 0),
], ids=["legacy_empty", "all_empty", "legacy_empty_promotes", "cat_nothing", "stack_nothing",
        "flatten_backwards"])
def test_cat_of_legacy_empty_tensors_and_shape_misuse_as_pytorch(fn):
    """(``cat`` refused PyTorch's legacy empty 1-D tensors beside others; ``flatten(1, 0)``
    returned a tensor of a made-up shape, where PyTorch refuses; the empty lists' words)"""
    assert _outcome(fn, ng) == _outcome(fn, torch)
    x, y = ng.ones(0, requires_grad=True), ng.ones(2, 3, requires_grad=True)
    ng.cat([x, y]).sum().backward()
    assert x.grad.shape == (0,) and y.grad.tolist() == [[1.0] * 3] * 2


@pytest.mark.parametrize("fn", [
    lambda m, x: x.sum(dtype=m.int64), lambda m, x: x.sum(1, dtype=m.int32),
    lambda m, x: x.prod(dtype=m.int64), lambda m, x: x.cumsum(0, dtype=m.int64),
    lambda m, x: x.cumprod(0, dtype=m.int64), lambda m, x: x.nansum(dtype=m.int64),
    lambda m, x: x.sum(dtype=m.bool), lambda m, x: m.linalg.vector_norm(x, dtype=m.int64),
], ids=["sum", "sum_dim", "prod", "cumsum", "cumprod", "nansum", "sum_bool", "vector_norm"])
def test_integer_dtype_for_a_tensor_that_requires_grad_raises_pytorchs_error(fn):
    """(numgrad returned an integer result that silently dropped the graph; PyTorch refuses:
    ``Autograd not support dtype: Long``; under no_grad both compute it)"""
    check_raises(lambda m: fn(m, m.ones(2, 3, requires_grad=True)))
    with ng.no_grad():
        assert ng.ones(2, 3, requires_grad=True).sum(dtype=ng.int64).item() == 6


def test_entr_derivative_at_zero_and_below_as_pytorch():
    # (entr was a masked composite: its gradient was NaN at 0 (PyTorch: inf) and its forward-mode
    # tangent 0 at 0 and below (PyTorch: inf and NaN), where PyTorch's formula is -(1 + log x))
    got = []
    for m in (ng, torch):
        x = m.tensor([-1.0, 0.0, 2.0, float("nan")], dtype=m.float64, requires_grad=True)
        y = m.special.entr(x)
        (g,) = m.autograd.grad(y.sum(), x, create_graph=True)
        (gg,) = m.autograd.grad(g[2], x)
        tangent = m.func.jvp(m.special.entr, (x.detach(),), (m.ones(4, dtype=m.float64),))[1]
        got.append([t.tolist() for t in (y, g, gg, tangent)] + [y.grad_fn.name()])
    assert str(got[0]) == str(got[1])


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_xlogy_gradients_at_zero_are_pytorchs(dtype):
    # (PyTorch 2.13's formulas: self's gradient is xlogy(grad, other), 0 only where self is 0
    # and other <= 0 (the derivative along x = 0: log(other) where other > 0); numgrad's
    # grad * xlogy(self != 0, other) gave 0 at self = 0, -0 for a -0 gradient, and xlogy(x, s)'s
    # grad * log(s) skipped the conversion of s to the dtype; xlogy(s, y)'s grad * s / y the
    # number as given, not rounded to float16)
    x = np.array([0.0, -0.0, 0.0, 0.0, 0.0, 1.5, -2.0, NAN, 3.0, 0.0, -0.25, 7.0], np.float32)
    y = np.array([2.0, 0.5, 0.0, -1.5, NAN, 0.0, -1.0, 2.0, INF, 1e-3, 0.3, 0.1], np.float32)
    g = np.array([1.0, -0.0, 2.0, 3.0, 1.0, 0.0, 1.5, 1.0, -2.0, 0.0, -0.7, 1.3], np.float32)

    def grads(m):
        dt = getattr(m, dtype)
        t = lambda v: m.tensor(v).to(dt)
        out = []
        a, b = t(x).requires_grad_(), t(y).requires_grad_()
        out += m.autograd.grad(m.xlogy(a, b), (a, b), t(g))
        for s in (2.0, 0.1, 0.0, -1.0, NAN):
            a, b = t(x).requires_grad_(), t(y).abs().requires_grad_()
            out += m.autograd.grad(m.xlogy(a, s), a, t(g))
            out += m.autograd.grad(m.xlogy(s, b), b, t(g))
        return out

    for ours, theirs in zip(grads(ng), grads(torch)):
        assert _dtype_name(ours.dtype) == _dtype_name(theirs.dtype)
        got, want = _array(ours), _array(theirs)
        np.testing.assert_array_equal(got, want)  # (NaN where PyTorch's is)
        assert (np.signbit(got) == np.signbit(want))[~np.isnan(want)].all()  # (and -0 as -0)
