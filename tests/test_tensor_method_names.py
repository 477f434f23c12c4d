"""PyTorch's Tensor methods and functions that programs call by name: the in-place forms (``eq_``,
``digamma_``, ``cumsum_``, ``float_power_``, ``divide_`` ...), the aliases (``greater``,
``absolute`` ...), the predicates and properties (``is_signed``, ``get_device``, ``layout`` ...),
the legacy ``new``, and the in-place view ops (``t_``, ``squeeze_``, ``as_strided_`` ...). Each
case runs the same program on numgrad and on PyTorch: values and dtypes, or the exception's
class and first line; gradients where PyTorch records the op."""
import numpy as np
import pytest
import torch

import numgrad

X = np.array([[0.3, 0.6, 0.9], [0.15, 0.45, 0.8]])
W = np.array([[1.0, -2.0, 0.5], [3.0, 0.25, -1.5]])


def _t(m, values, dtype=None):
    return m.tensor(values, dtype=dtype if dtype is None else getattr(m, dtype))


def _run(call, m):
    try:
        return call(m), None
    except Exception as e:  # noqa: BLE001 (compared with PyTorch's below)
        return None, e


def _name(value) -> str:
    return str(value).rpartition(".")[2]


def _assert_same(ours, theirs):
    if isinstance(theirs, torch.Tensor):
        assert isinstance(ours, numgrad.Tensor), type(ours)
        assert tuple(ours.shape) == tuple(theirs.shape)
        assert _name(ours.dtype) == _name(theirs.dtype)
        theirs = theirs.detach().resolve_conj().resolve_neg()
        if theirs._is_zerotensor():  # (PyTorch's gradient of a constant: no memory of its own)
            theirs = torch.zeros(theirs.shape, dtype=theirs.dtype)
        np.testing.assert_allclose(ours.detach().cpu().numpy(), theirs.numpy(),
                                   rtol=1e-6, atol=1e-7, equal_nan=True)
    elif isinstance(theirs, (tuple, list)):
        assert len(ours) == len(theirs)
        for o, t in zip(ours, theirs):
            _assert_same(o, t)
    elif isinstance(theirs, (torch.dtype, torch.layout, torch.device)):
        assert _name(ours) == _name(theirs)
    else:
        assert type(ours) is type(theirs) and ours == theirs, (ours, theirs)


def _compare(call):
    ours, our_error = _run(call, numgrad)
    theirs, their_error = _run(call, torch)
    if their_error is not None:
        assert our_error is not None, f"PyTorch raises {their_error!r}; numgrad gives {ours}"
        assert type(our_error).__name__ == type(their_error).__name__, (our_error, their_error)
        line = str(their_error).splitlines()[0].replace("torch.", "numgrad.")
        assert str(our_error).splitlines()[0] == line
        return
    if our_error is not None:
        raise our_error
    _assert_same(ours, theirs)


VALUES = {
    # comparisons in place: 0 and 1 in the tensor's own dtype
    "eq_": lambda m: _t(m, X).eq_(0.6),
    "ne_": lambda m: _t(m, X).ne_(_t(m, [0.3, 0.0, 0.9])),
    "lt_int": lambda m: _t(m, [1, 2, 3]).lt_(2),
    "le_int32_float": lambda m: _t(m, [1, 2, 3], "int32").le_(_t(m, [1.5, 1.5, 4.0])),
    "gt_bool": lambda m: _t(m, [True, False]).gt_(0),
    "ge_broadcast_error": lambda m: _t(m, [1, 2]).ge_(_t(m, [[1], [2]])),
    "greater_": lambda m: _t(m, X).greater_(0.5),
    "not_equal_": lambda m: _t(m, [1, 2, 3]).not_equal_(2),
    "less_equal_": lambda m: _t(m, X).less_equal_(0.45),
    # aliases
    "greater": lambda m: m.greater(_t(m, X), 0.5),
    "less": lambda m: _t(m, X).less(0.5),
    "greater_equal": lambda m: m.greater_equal(_t(m, [1, 2]), _t(m, [2, 2])),
    "less_equal_out": lambda m: m.less_equal(_t(m, X), 0.6, out=m.empty(2, 3, dtype=m.bool)),
    "not_equal": lambda m: m.not_equal(_t(m, [1, 2]), 2),
    "absolute": lambda m: m.absolute(_t(m, [-1, 2])),
    "absolute_": lambda m: _t(m, [-1.5, 2.0]).absolute_(),
    "divide_": lambda m: _t(m, X).divide_(4),
    "divide_floor": lambda m: _t(m, X).divide_(0.2, rounding_mode="floor"),
    "true_divide_int": lambda m: _t(m, [1, 2]).true_divide_(2),
    "multiply_": lambda m: _t(m, [1, 2]).multiply_(3),
    "subtract_": lambda m: _t(m, X).subtract_(_t(m, [1.0, 2.0, 3.0]), alpha=2),
    # unary and binary in-place forms
    "digamma_": lambda m: _t(m, X).digamma_(),
    "digamma_int": lambda m: _t(m, [1, 2]).digamma_(),
    "erfinv_": lambda m: _t(m, X).erfinv_(),
    "lgamma_": lambda m: _t(m, X).lgamma_(),
    "i0_": lambda m: m.i0_(_t(m, X)),
    "logit_eps": lambda m: m.logit_(_t(m, X), 0.2),
    "sgn_int": lambda m: _t(m, [-3, 0, 2]).sgn_(),
    "sgn_complex": lambda m: _t(m, [3 + 4j, 0j]).sgn_(),
    "cumsum_": lambda m: _t(m, X).cumsum_(1),
    "cumsum_int32": lambda m: _t(m, [1, 2, 3], "int32").cumsum_(0),
    "cumsum_dtype_error": lambda m: _t(m, X).cumsum_(0, dtype=m.float64),
    "cumprod_bool_error": lambda m: _t(m, [True]).cumprod_(0),
    "cumprod_": lambda m: _t(m, X).cumprod_(0),
    "mvlgamma_": lambda m: (_t(m, X) + 1).mvlgamma_(2),
    "mvlgamma_int_error": lambda m: _t(m, [3, 4]).mvlgamma_(1),
    "heaviside_": lambda m: _t(m, [-1.0, 0.0, 2.0]).heaviside_(_t(m, 0.5)),
    "heaviside_dtype_error": lambda m: _t(m, [1.0]).heaviside_(_t(m, [1.0], "float64")),
    "copysign_": lambda m: _t(m, X).copysign_(_t(m, [-1.0, 0.0, -0.0])),
    "copysign_int_error": lambda m: _t(m, [1, 2]).copysign_(-1),
    "nextafter_": lambda m: _t(m, X, "float64").nextafter_(_t(m, 1.0, "float64")),
    "float_power_": lambda m: _t(m, X, "float64").float_power_(2.5),
    "float_power_float_error": lambda m: _t(m, X).float_power_(2),
    "float_power_complex_error": lambda m: _t(m, [1.0 + 1j]).float_power_(2),
    "float_power_int_error": lambda m: _t(m, [1, 2]).float_power_(2),
    "ldexp_": lambda m: m.ldexp_(_t(m, X), _t(m, [1, 2, 3])),
    "ldexp_int_error": lambda m: _t(m, [1, 2]).ldexp_(_t(m, [1, 1])),
    "renorm_": lambda m: _t(m, X).renorm_(2, 0, 0.5),
    "conj_physical_": lambda m: m.conj_physical_(_t(m, [1 + 2j, -3j])),
    "polygamma_": lambda m: _t(m, X).polygamma_(2),
    "addmm_": lambda m: m.ones(2, 2, dtype=m.float64).addmm_(_t(m, X), _t(m, X).t(), beta=0.5),
    "addmm_shape_error": lambda m: m.zeros(3).addmm_(m.ones(2, 3), m.ones(3, 3)),
    "addbmm_": lambda m: m.ones(2, 2, dtype=m.float64).addbmm_(_t(m, X)[None], _t(m, X).t()[None],
                                                               alpha=2),
    "addr_": lambda m: m.ones(2, 3).addr_(_t(m, [1.0, 2.0]), _t(m, [1.0, 0.0, -1.0])),
    "addr_1d_error": lambda m: m.zeros(3).addr_(m.ones(2), m.ones(3)),
    "addr_size_error": lambda m: m.zeros(1, 3).addr_(m.ones(2), m.ones(3)),
    "gcd_": lambda m: m.gcd_(_t(m, [4, 6, 0]), _t(m, [6, 4, 5])),
    "lcm_": lambda m: m.lcm_(_t(m, [4, 6, 0]), _t(m, [6, 4, 5])),
    "index_put_": lambda m: m.index_put_(m.zeros(4), (_t(m, [1, 3]),), _t(m, [5.0, 6.0])),
    "addmv_": lambda m: m.addmv_(m.ones(2), _t(m, X), _t(m, [1.0, 2.0, 3.0])),
    "detach_": lambda m: m.detach_(_t(m, X) * 1),
    "as_strided_": lambda m: m.as_strided_(m.arange(6.0), (2, 2), (1, 2), 1),
    # predicates, properties, plain methods
    "is_signed": lambda m: [m.is_signed(m.ones(1, dtype=d)) for d in (
        m.uint8, m.int8, m.bool, m.float32, m.complex64, m.int64)],
    "is_signed_method": lambda m: m.ones(2, dtype=m.uint8).is_signed(),
    "is_conj": lambda m: (_t(m, [1j]).is_conj(), m.is_conj(_t(m, [1.0]).conj())),
    "is_neg": lambda m: (_t(m, [1.0]).is_neg(), m.is_neg(_t(m, [1j]))),
    "is_inference": lambda m: (m.ones(1).is_inference(), m.is_inference(m.ones(1))),
    "is_same_size": lambda m: (m.ones(2).is_same_size(m.zeros(2)),
                               m.is_same_size(m.ones(2), m.ones(2, 1))),
    "get_device": lambda m: (m.ones(2).get_device(), m.get_device(m.ones(2))),
    "is_cpu": lambda m: m.ones(2).is_cpu,
    "ndimension": lambda m: m.ones(2, 3, 1).ndimension(),
    "layout": lambda m: m.ones(2).layout,
    "not_sparse_and_co": lambda m: [getattr(m.ones(1), n) for n in (
        "is_sparse", "is_quantized", "is_meta", "is_nested")],
    "adjoint": lambda m: _t(m, [[1 + 2j, 3j]]).adjoint(),
    "adjoint_fn": lambda m: m.adjoint(_t(m, X)),
    "adjoint_view": lambda m: m.adjoint(_t(m, X))._base is not None,
    "adjoint_1d_error": lambda m: m.ones(3).adjoint(),
    "narrow_copy": lambda m: _t(m, X).narrow_copy(1, 1, 2),
    "where": lambda m: _t(m, X).where(_t(m, X) > 0.5, -1.0),
    "hardshrink": lambda m: _t(m, [-1.0, 0.2, 0.7]).hardshrink(),
    "hardshrink_lambd": lambda m: _t(m, [-1.0, 0.2, 0.7]).hardshrink(0.8),
    "prelu": lambda m: _t(m, X).prelu(_t(m, [0.25])),
    "new_empty": lambda m: m.ones(2, 3, dtype=m.int32).new().shape,
    "new_sizes": lambda m: (lambda t: (t.shape, t.dtype))(m.ones(2, dtype=m.float64).new(2, 3)),
    "new_size": lambda m: m.ones(2).new(m.Size([4, 1])).shape,
    "new_data": lambda m: m.ones(2, dtype=m.int32).new([1, 2]),
    "new_tuple": lambda m: m.ones(2, dtype=m.float64).new((2, 3)),
    "new_alias": lambda m: (lambda a, b: (b, b._base is a))(*(lambda a: (a, a.new(a)))(
        m.arange(3.0))),
    "new_float_error": lambda m: m.ones(2).new(2.5),
    "new_dtype_error": lambda m: m.ones(2, dtype=m.float64).new(m.arange(2)),
    "new_negative_error": lambda m: m.ones(2).new(-1),
    "new_sizes_error": lambda m: m.ones(2).new(2, 3.0),
    "fill_diagonal_": lambda m: m.zeros(3, 4).fill_diagonal_(2.5),
    "fill_diagonal_wrap": lambda m: m.zeros(7, 2, dtype=m.int64).fill_diagonal_(1.5, wrap=True),
    "fill_diagonal_tall": lambda m: m.zeros(5, 2).fill_diagonal_(1),
    "fill_diagonal_3d": lambda m: m.zeros(2, 2, 2).fill_diagonal_(1),
    "fill_diagonal_1d_error": lambda m: m.zeros(3).fill_diagonal_(1),
    "fill_diagonal_shape_error": lambda m: m.zeros(2, 3, 2).fill_diagonal_(1),
}


@pytest.mark.parametrize("name", sorted(VALUES))
def test_values_and_errors_as_pytorch(name):
    _compare(VALUES[name])


# In-place view ops: the tensor itself gets the view's shape and strides, sharing its memory.
def _views(m, op):
    base = m.arange(6.0)
    a = base.view(1, 2, 3) if op.startswith("squeeze") else base.view(2, 3)
    out = {
        "t_": lambda: a.t_(), "transpose_": lambda: a.transpose_(0, 1),
        "swapaxes_": lambda: a.swapaxes_(1, 0), "swapdims_": lambda: a.swapdims_(-1, 0),
        "squeeze_": lambda: a.squeeze_(), "squeeze_dim": lambda: a.squeeze_(0),
        "squeeze_dims": lambda: a.squeeze_((0, 1)), "unsqueeze_": lambda: a.unsqueeze_(-1),
        "as_strided_": lambda: a.as_strided_((2, 2), (1, 3)),
        "t_3d_error": lambda: a.unsqueeze(0).t_(),
        "transpose_dim_error": lambda: a.transpose_(0, 2),
        "squeeze_repeated_error": lambda: a.squeeze_((0, 0)),
    }[op]()
    version = a._version
    a.mul_(10)  # (through the new strides, into the memory the base shares)
    return out is a, tuple(a.shape), a.stride(), a.is_contiguous(), version, a, base


@pytest.mark.parametrize("op", ["t_", "transpose_", "swapaxes_", "swapdims_", "squeeze_",
                                "squeeze_dim", "squeeze_dims", "unsqueeze_", "as_strided_",
                                "t_3d_error", "transpose_dim_error", "squeeze_repeated_error"])
def test_inplace_view_ops_restride_the_tensor_as_pytorch(op):
    _compare(lambda m: _views(m, op))


# Gradients: through a non-leaf written in place, against PyTorch's (and its node's name).
GRADS = {
    "digamma_": lambda x: x.digamma_(),
    "lgamma_": lambda x: x.lgamma_(),
    "erfinv_": lambda x: x.erfinv_(),
    "i0_": lambda x: x.i0_(),
    "logit_": lambda x: x.logit_(),
    "cumprod_": lambda x: x.cumprod_(1),
    "cumsum_": lambda x: x.cumsum_(0),
    "sgn_": lambda x: x.sgn_(),
    "absolute_": lambda x: x.absolute_(),
    "renorm_": lambda x: x.renorm_(2, 0, 0.5),
    "divide_": lambda x: x.divide_(3.0),
    "eq_": lambda x: x.eq_(0.6),
    "lt_tensor": lambda x: x.lt_(x.detach() * 0 + 0.5),
    "t_": lambda x: x.t_(),
    "transpose_": lambda x: x.transpose_(1, 0),
    "squeeze_": lambda x: x.unsqueeze(0).squeeze_(),
    "squeeze_dim": lambda x: x.unsqueeze(0).squeeze_(0),
    "squeeze_dims": lambda x: x.unsqueeze(0).squeeze_((0,)),
    "unsqueeze_": lambda x: x.unsqueeze_(1),
    "t_of_a_view": lambda x: x[:, :2].t_(),
    "fill_diagonal_": lambda x: x.fill_diagonal_(0.5),
}
NODE_DIFFERS = {"renorm_", "fill_diagonal_", "sgn_"}  # (composites in numgrad: gradients only)


@pytest.mark.parametrize("name", sorted(GRADS))
def test_gradients_through_the_inplace_forms_as_pytorch(name):
    results = []
    for m in (numgrad, torch):
        x = m.tensor(X, dtype=m.float64, requires_grad=True)
        y = GRADS[name](x * 1)
        y.backward(m.ones(tuple(y.shape), dtype=m.float64) * 0.5 + y.detach() * 0)
        results.append((y, x.grad, y.grad_fn.name(), y.requires_grad))
    (y, grad, node, req), (ty, tgrad, tnode, treq) = results
    _assert_same((y, grad), (ty, tgrad))
    assert req == treq
    if name not in NODE_DIFFERS:
        assert node == tnode


@pytest.mark.parametrize("name", ["t_", "digamma_", "eq_", "squeeze_", "fill_diagonal_",
                                  "cumsum_"])
def test_a_leaf_that_requires_grad_is_refused_as_pytorch(name):
    def call(m):
        return GRADS[name](m.tensor(X, dtype=m.float64, requires_grad=True))

    _compare(call)


def test_the_names_are_where_pytorch_has_them():
    """Each new name is a Tensor method (or property), and ``numgrad.<name>`` exactly where
    ``torch.<name>`` exists."""
    names = ("eq_ ne_ lt_ le_ gt_ ge_ digamma_ erfinv_ lgamma_ i0_ logit_ sgn_ cumsum_ "
             "cumprod_ mvlgamma_ heaviside_ copysign_ nextafter_ float_power_ ldexp_ renorm_ "
             "addmm_ addbmm_ addr_ conj_physical_ polygamma_ divide_ multiply_ subtract_ "
             "true_divide_ gcd_ lcm_ index_put_ detach_ addmv_ as_strided_ greater greater_ "
             "greater_equal greater_equal_ less less_ less_equal less_equal_ not_equal "
             "not_equal_ absolute absolute_ is_signed is_conj is_neg is_inference is_same_size "
             "get_device adjoint is_cpu ndimension layout is_sparse is_quantized is_meta "
             "is_nested narrow_copy where hardshrink prelu new t_ transpose_ squeeze_ "
             "unsqueeze_ swapaxes_ swapdims_ fill_diagonal_").split()
    assert [n for n in names if not hasattr(numgrad.Tensor, n)] == []
    wrong = [n for n in names if n not in ("hardshrink", "prelu")
             and hasattr(numgrad, n) != hasattr(torch, n)]
    assert wrong == []
