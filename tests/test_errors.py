"""The SPEC's error table: each misuse raises PyTorch's exception class with PyTorch's words, and
leaves no tensor, ``.grad`` or graph half-updated."""

import re

import numpy as np
import pytest
import torch

import numgrad as ng

FREED = "Trying to backward through the graph a second time"
INPLACE = ("one of the variables needed for gradient computation has been modified by an inplace "
           "operation")
ONLY_FLOAT = "Only Tensors of floating point and complex dtype can require gradients"
NUMPY_MSG = "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead."
LEAF_ONLY = "you can only change requires_grad flags of leaf variables"


def _np(t):
    return np.array(t.detach().tolist(), dtype=np.float64)


def _snapshot(*tensors):
    """The .grad of each tensor as (None or a copy of its values)."""
    return [None if t._grad is None else _np(t._grad) for t in tensors]


def _assert_same_grads(tensors, snapshot):
    for t, s in zip(tensors, snapshot):
        if s is None:
            assert t._grad is None
        else:
            assert t._grad is not None
            np.testing.assert_array_equal(_np(t._grad), s)


def _torch_message(fn):
    with pytest.raises(Exception) as info:
        fn(torch)
    return type(info.value), str(info.value)


# --------------------------------------------------------------------------- implicit gradient
def test_implicit_grad_on_non_scalar_raises_and_frees_nothing():
    x = ng.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * x
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar outputs"):
        y.backward()
    assert x.grad is None
    # the graph is intact: a proper call still works
    y.backward(ng.tensor([1.0, 1.0, 1.0]))
    np.testing.assert_allclose(_np(x.grad), [2.0, 4.0, 6.0])


def test_implicit_grad_on_non_scalar_keeps_old_grad():
    x = ng.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    (x * 2).sum().backward()
    before = _snapshot(x)
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar outputs"):
        (x * 3).backward()
    _assert_same_grads([x], before)


def test_implicit_grad_in_autograd_grad():
    x = ng.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar outputs"):
        ng.autograd.grad(x * 2, x)
    assert x.grad is None


# --------------------------------------------------------------------------- no grad
@pytest.mark.parametrize("make", [
    lambda: ng.ones(3).sum(),
    lambda: ng.tensor(2.0),
    lambda: ng.ones(3, requires_grad=True).detach().sum(),
], ids=["op_of_constants", "plain", "detached"])
def test_backward_on_tensor_not_requiring_grad(make):
    t = make()
    with pytest.raises(RuntimeError, match="does not require grad and does not have a grad_fn"):
        t.backward()
    assert t.grad is None


def test_backward_on_no_grad_output_leaves_leaf_untouched():
    x = ng.ones(3, requires_grad=True)
    with ng.no_grad():
        out = (x * 2).sum()
    with pytest.raises(RuntimeError, match="does not require grad and does not have a grad_fn"):
        out.backward()
    assert x.grad is None


def test_backward_on_several_tensors_one_without_grad_touches_nothing():
    x = ng.tensor([1.0, 2.0], requires_grad=True)
    good = (x * x).sum()
    bad = ng.ones(2).sum()
    with pytest.raises(RuntimeError, match="does not require grad and does not have a grad_fn"):
        ng.autograd.backward([good, bad])
    assert x.grad is None
    good.backward()  # the graph was not freed
    np.testing.assert_allclose(_np(x.grad), [2.0, 4.0])


# --------------------------------------------------------------------------- integer requires_grad
@pytest.mark.parametrize("make", [
    lambda m: m.tensor([1, 2, 3], requires_grad=True),
    lambda m: m.tensor([True, False], requires_grad=True),
    lambda m: m.tensor(5, requires_grad=True),
    lambda m: m.zeros(2, dtype=m.int64, requires_grad=True),
    lambda m: m.ones(2, dtype=m.int32, requires_grad=True),
    lambda m: m.ones(2, dtype=m.bool, requires_grad=True),
    lambda m: m.empty(2, dtype=m.long, requires_grad=True),
    lambda m: m.arange(3, requires_grad=True),
    lambda m: m.full((2,), 3, requires_grad=True),
    lambda m: m.zeros_like(m.tensor([1, 2]), requires_grad=True),
    lambda m: m.ones_like(m.ones(2), dtype=m.int64, requires_grad=True),
], ids=["tensor_int", "tensor_bool", "tensor_scalar_int", "zeros_int64", "ones_int32",
        "ones_bool", "empty_long", "arange_int", "full_int", "zeros_like_int", "ones_like_dtype"])
def test_requires_grad_on_integer_or_bool_creation(make):
    with pytest.raises(RuntimeError, match=re.escape(ONLY_FLOAT)):
        make(ng)
    tcls, tmsg = _torch_message(make)
    assert tcls is RuntimeError and ONLY_FLOAT in tmsg


@pytest.mark.parametrize("make", [
    lambda: ng.tensor([1, 2, 3]),
    lambda: ng.tensor([True, False]),
    lambda: ng.zeros(2, dtype=ng.int32),
    lambda: ng.ones(2, 2) > 0,
], ids=["int64", "bool", "int32", "comparison"])
def test_requires_grad_on_integer_or_bool_tensor_via_requires_grad_(make):
    t = make()
    with pytest.raises(RuntimeError, match=re.escape(ONLY_FLOAT)):
        t.requires_grad_()
    assert t.requires_grad is False
    with pytest.raises(RuntimeError, match=re.escape(ONLY_FLOAT)):
        t.requires_grad_(True)
    assert t.requires_grad is False
    with pytest.raises(RuntimeError, match=re.escape(ONLY_FLOAT)):
        t.requires_grad = True
    assert t.requires_grad is False
    assert t.is_leaf and t.grad_fn is None
    t.requires_grad_(False)  # turning it off is always fine
    assert t.requires_grad is False


# --------------------------------------------------------------------------- second backward
def test_second_backward_raises_and_keeps_grads():
    x = ng.tensor([1.0, 2.0, 3.0], requires_grad=True)
    w = ng.tensor([0.5, -1.0, 2.0], requires_grad=True)
    out = (x * w).exp().sum()
    out.backward()
    before = _snapshot(x, w)
    with pytest.raises(RuntimeError, match=FREED) as info:
        out.backward()
    assert "retain_graph=True" in str(info.value)
    _assert_same_grads([x, w], before)
    e = np.exp(np.array([0.5, -2.0, 6.0]))
    np.testing.assert_allclose(_np(x.grad), e * [0.5, -1.0, 2.0], rtol=1e-5)


def test_second_backward_through_shared_freed_subgraph_touches_no_grad():
    """y's branch could run, but the graph also reaches a freed node: nothing may change."""
    x = ng.tensor([1.0, 2.0], requires_grad=True)
    y = ng.tensor([3.0, 4.0], requires_grad=True)
    c = ng.tensor([5.0, 6.0])
    a = x * c
    (a * a).sum().backward()  # frees a's node (and the node of a * a)
    before = _snapshot(x, y)
    np.testing.assert_allclose(before[0], 2 * np.array([1.0, 2.0]) * np.array([25.0, 36.0]))
    out2 = (a * a).sum() + (y * y).sum()
    with pytest.raises(RuntimeError, match=FREED) as info:
        out2.backward()
    assert "retain_graph=True" in str(info.value)
    _assert_same_grads([x, y], before)
    assert y.grad is None


def test_second_backward_after_retain_graph_then_free():
    x = ng.tensor([2.0], requires_grad=True)
    out = (x * x).sum()
    out.backward(retain_graph=True)
    out.backward()
    np.testing.assert_allclose(_np(x.grad), [8.0])
    with pytest.raises(RuntimeError, match=FREED):
        out.backward()
    np.testing.assert_allclose(_np(x.grad), [8.0])


def test_autograd_grad_twice_raises():
    x = ng.tensor([1.0, 2.0], requires_grad=True)
    out = (x * x).sum()
    (g,) = ng.autograd.grad(out, x)
    np.testing.assert_allclose(_np(g), [2.0, 4.0])
    with pytest.raises(RuntimeError, match=FREED):
        ng.autograd.grad(out, x)
    assert x.grad is None


# --------------------------------------------------------------------------- in-place version check
def _versioned_graph():
    """out = (u * u).sum() + ((exp(x) * t) * 2).sum(): u's gradient is two steps from the root,
    x's is deep, t (a constant) is saved by the multiplication by t, and the multiplication by 2
    (which saves its inputs too) runs before the one that finds t modified."""
    u = ng.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
    x = ng.tensor([[0.1, 0.2, 0.3], [0.4, 0.5, 0.6]], requires_grad=True)
    t = ng.tensor([[1.0, -1.0, 2.0], [0.5, 3.0, -2.0]])
    out = (u * u).sum() + ((x.exp() * t) * 2.0).sum()
    return u, x, t, out


def _check_inplace_message(msg, seen, expected):
    assert INPLACE in msg
    assert "[2, 3]" in msg
    assert re.search(rf"is at version {seen}\b", msg), msg
    assert re.search(rf"expected version {expected}\b", msg), msg


def test_modified_saved_tensor_raises_and_touches_nothing():
    u, x, t, out = _versioned_graph()
    t._version_counter.value += 1  # as an in-place op on t would
    with pytest.raises(RuntimeError) as info:
        out.backward()
    _check_inplace_message(str(info.value), 1, 0)
    assert u.grad is None
    assert x.grad is None


def test_modified_saved_tensor_keeps_previous_grads_and_graph():
    u, x, t, out = _versioned_graph()
    out.backward(retain_graph=True)
    before = _snapshot(u, x)
    t._version_counter.value += 2
    with pytest.raises(RuntimeError) as info:
        out.backward()
    _check_inplace_message(str(info.value), 2, 0)
    _assert_same_grads([u, x], before)
    # nothing in the graph was freed by the failed call: undo the "modification" and it runs
    t._version_counter.value -= 2
    out.backward()
    uv = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    xv = np.array([[0.1, 0.2, 0.3], [0.4, 0.5, 0.6]])
    tv = np.array([[1.0, -1.0, 2.0], [0.5, 3.0, -2.0]])
    np.testing.assert_allclose(_np(u.grad), 2 * (2 * uv))  # two passes
    np.testing.assert_allclose(_np(x.grad), 2 * (2 * np.exp(xv) * tv), rtol=1e-5)


def test_modified_saved_output_names_the_node():
    x = ng.tensor([[0.1, 0.2, 0.3], [0.4, 0.5, 0.6]], requires_grad=True)
    u = ng.tensor([[1.0, 1.0, 1.0], [1.0, 1.0, 1.0]], requires_grad=True)
    e = x.exp()  # ExpBackward0 saves its output
    out = (u * 2).sum() + e.sum()
    e._version_counter.value += 1
    with pytest.raises(RuntimeError) as info:
        out.backward()
    msg = str(info.value)
    _check_inplace_message(msg, 1, 0)
    assert "output 0 of Exp" in msg
    assert u.grad is None and x.grad is None


def test_modified_saved_leaf_input_of_mul():
    x = ng.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
    w = ng.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
    out = (x * w).sum()
    x._version_counter.value += 1
    with pytest.raises(RuntimeError) as info:
        out.backward()
    _check_inplace_message(str(info.value), 1, 0)
    assert x.grad is None and w.grad is None


# --------------------------------------------------------------------------- numpy()
def test_numpy_on_tensor_requiring_grad():
    x = ng.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    for t in (x, y):
        with pytest.raises(RuntimeError, match=re.escape(NUMPY_MSG)):
            t.numpy()
        with pytest.raises(RuntimeError, match=re.escape(NUMPY_MSG)):
            np.asarray(t)
        assert t.requires_grad is True
    assert x.is_leaf and x.grad_fn is None and y.grad_fn.name() == "MulBackward0"
    np.testing.assert_array_equal(y.detach().numpy(), [2.0, 4.0])
    # the same phrase as PyTorch
    tcls, tmsg = _torch_message(lambda m: m.tensor([1.0], requires_grad=True).numpy())
    assert tcls is RuntimeError and tmsg == NUMPY_MSG


# --------------------------------------------------------------------------- requires_grad_(False)
def test_requires_grad_false_on_non_leaf():
    x = ng.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3
    fn = y.grad_fn
    with pytest.raises(RuntimeError, match=LEAF_ONLY):
        y.requires_grad_(False)
    with pytest.raises(RuntimeError, match=LEAF_ONLY):
        y.requires_grad = False
    assert y.requires_grad is True and y.grad_fn is fn and not y.is_leaf
    y.sum().backward()
    np.testing.assert_allclose(_np(x.grad), [3.0, 3.0])
    tcls, tmsg = _torch_message(lambda m: (m.ones(1, requires_grad=True) * 2).requires_grad_(False))
    assert tcls is RuntimeError and LEAF_ONLY in tmsg


# --------------------------------------------------------------------------- broadcasting
@pytest.mark.parametrize("op", [
    lambda a, b: a + b, lambda a, b: a - b, lambda a, b: a * b, lambda a, b: a / b,
    lambda a, b: a ** b, lambda a, b: a < b,
], ids=["add", "sub", "mul", "div", "pow", "lt"])
@pytest.mark.parametrize("sa,sb", [((2, 3), (4, 3)), ((2, 3), (4,)), ((5, 1, 3), (2, 2))])
def test_shapes_that_do_not_broadcast(op, sa, sb):
    a = ng.ones(*sa, requires_grad=True)
    b = ng.full(sb, 2.0, requires_grad=True)
    with pytest.raises(RuntimeError) as info:
        op(a, b)
    msg = str(info.value)
    with pytest.raises(RuntimeError) as tinfo:
        op(torch.ones(*sa), torch.full(sb, 2.0))
    assert msg == str(tinfo.value)
    assert "must match the size of tensor b" in msg
    # nothing recorded or changed
    assert a.grad is None and b.grad is None
    assert a._version == 0 and b._version == 0
    np.testing.assert_array_equal(_np(a), np.ones(sa))
    np.testing.assert_array_equal(_np(b), np.full(sb, 2.0))


def test_broadcast_message_has_both_sizes():
    with pytest.raises(RuntimeError) as info:
        ng.ones(2, 3) + ng.ones(4, 3)
    assert str(info.value) == ("The size of tensor a (2) must match the size of tensor b (4) at "
                               "non-singleton dimension 0")


# --------------------------------------------------------------------------- matmul size mismatch
@pytest.mark.parametrize("call,sa,sb", [
    (lambda m, a, b: m.mm(a, b), (2, 3), (4, 5)),
    (lambda m, a, b: a.mm(b), (3, 2), (3, 2)),
    (lambda m, a, b: a @ b, (2, 3), (4, 5)),
    (lambda m, a, b: m.matmul(a, b), (3,), (4, 5)),
    (lambda m, a, b: a @ b, (2, 3), (4,)),
    (lambda m, a, b: a @ b, (3,), (4,)),
    (lambda m, a, b: m.dot(a, b), (3,), (4,)),
], ids=["mm", "mm_method", "matmul_2d", "matmul_1d_2d", "mv", "dot_via_matmul", "dot"])
def test_matmul_size_mismatch(call, sa, sb):
    a = ng.ones(*sa, requires_grad=True)
    b = ng.ones(*sb, requires_grad=True)
    with pytest.raises(RuntimeError) as info:
        call(ng, a, b)
    msg = str(info.value)
    with pytest.raises(RuntimeError) as tinfo:
        call(torch, torch.ones(*sa), torch.ones(*sb))
    assert msg == str(tinfo.value)
    assert a.grad is None and b.grad is None


@pytest.mark.parametrize("shapes", [
    ((3,), (2, 3), (3, 4)), ((3, 4), (2, 3), (3, 4)), ((2, 5), (2, 3), (3, 4)),
    ((4,), (2, 3), (4, 4)), ((4,), (3,), (3, 4)),
], ids=["bias_row", "bias_rows", "bias_cols", "product", "mat1_1d"])
def test_addmm_errors_as_pytorch(shapes):
    tensors = [ng.ones(*s, requires_grad=True) for s in shapes]
    with pytest.raises(RuntimeError) as info:
        ng.addmm(*tensors)
    with pytest.raises(RuntimeError) as tinfo:
        torch.addmm(*[torch.ones(*s) for s in shapes])
    assert str(info.value) == str(tinfo.value)
    assert all(t.grad is None for t in tensors)


def test_mm_message_names_both_shapes():
    with pytest.raises(RuntimeError) as info:
        ng.mm(ng.ones(2, 3), ng.ones(4, 5))
    assert "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)" in str(info.value)


# --------------------------------------------------------------------------- bad dim
@pytest.mark.parametrize("call", [
    lambda x: x.sum(2),
    lambda x: x.sum(dim=(0, -3)),
    lambda x: x.mean(5),
    lambda x: x.transpose(0, 3),
    lambda x: x.unsqueeze(4),
    lambda x: x.unsqueeze(-4),
    lambda x: x.squeeze(3),
    lambda x: x.size(2),
    lambda x: x.norm(dim=3),
    lambda x: x.flatten(0, 5),
    lambda x: x.permute(0, 5),
], ids=["sum", "sum_tuple", "mean", "transpose", "unsqueeze", "unsqueeze_neg", "squeeze", "size",
        "norm", "flatten", "permute"])
def test_bad_dim_raises_index_error(call):
    x = ng.ones(2, 3, requires_grad=True)
    with pytest.raises(IndexError, match="Dimension out of range") as info:
        call(x)
    with pytest.raises(IndexError) as tinfo:
        call(torch.ones(2, 3, requires_grad=True))
    assert str(info.value) == str(tinfo.value)
    assert x.grad is None and x._version == 0


# --------------------------------------------------------------------------- gradient shape
@pytest.mark.parametrize("gshape", [(3, 2), (3,), (6,), (1, 2, 3)])
def test_gradient_of_wrong_shape(gshape):
    x = ng.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
    y = x * x
    with pytest.raises(RuntimeError) as info:
        y.backward(ng.ones(*gshape))
    msg = str(info.value)
    assert "Mismatch in shape" in msg
    assert str(list(gshape)) in msg and "[2, 3]" in msg
    assert x.grad is None
    # torch refuses the same gradient with the same words
    with pytest.raises(RuntimeError) as tinfo:
        (torch.ones(2, 3, requires_grad=True) * 2).backward(torch.ones(*gshape))
    assert msg.replace("numgrad.", "torch.") == str(tinfo.value)
    # the graph was not freed
    y.backward(ng.ones(2, 3))
    np.testing.assert_allclose(_np(x.grad), 2 * np.arange(1.0, 7.0).reshape(2, 3))


def test_gradient_of_wrong_shape_keeps_old_grad():
    x = ng.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 4
    y.backward(ng.ones(3), retain_graph=True)
    before = _snapshot(x)
    with pytest.raises(RuntimeError, match="Mismatch in shape") as info:
        y.backward(ng.ones(2, 3))
    assert "[2, 3]" in str(info.value) and "[3]" in str(info.value)
    _assert_same_grads([x], before)
    np.testing.assert_allclose(_np(x.grad), [4.0, 4.0, 4.0])


# --------------------------------------------------------------------------- CUDA without a GPU
_CUDA_CALLS = {
    "zeros": lambda: ng.zeros(2, device="cuda"),
    "zeros_index": lambda: ng.zeros(2, device="cuda:0"),
    "zeros_device_obj": lambda: ng.zeros(2, device=ng.device("cuda")),
    "ones": lambda: ng.ones(2, 2, device="cuda"),
    "randn": lambda: ng.randn(3, device="cuda"),
    "tensor": lambda: ng.tensor([1.0, 2.0], device="cuda"),
    "arange": lambda: ng.arange(3, device="cuda"),
    "full": lambda: ng.full((2,), 1.0, device="cuda"),
    "requires_grad": lambda: ng.zeros(2, device="cuda", requires_grad=True),
}


def _check_no_cuda_message(msg):
    assert re.search(r"no cuda (gpus?|devices?)", msg, re.IGNORECASE), msg
    assert "available" in msg
    assert "cuda.is_available()" in msg


@pytest.mark.parametrize("name", list(_CUDA_CALLS))
def test_cuda_tensor_without_gpu(name):
    if ng.cuda.is_available():
        t = _CUDA_CALLS[name]()
        assert t.device.type == "cuda"
        return
    with pytest.raises(RuntimeError) as info:
        _CUDA_CALLS[name]()
    _check_no_cuda_message(str(info.value))


@pytest.mark.parametrize("move", [lambda x: x.to("cuda"), lambda x: x.cuda(),
                                  lambda x: x.to(ng.device("cuda"))], ids=["to", "cuda", "to_device"])
def test_moving_to_cuda_without_gpu_leaves_tensor_unchanged(move):
    x = ng.tensor([1.0, 2.0], requires_grad=True)
    if ng.cuda.is_available():
        assert move(x).device.type == "cuda"
        return
    with pytest.raises(RuntimeError) as info:
        move(x)
    _check_no_cuda_message(str(info.value))
    assert x.device.type == "cpu" and x.requires_grad and x.is_leaf
    assert x.detach().tolist() == [1.0, 2.0]


# --------------------------------------------------------------------------- an error mid-backward
def test_exception_in_a_hook_writes_no_grad():
    """A hook on x raises during backward: w, whose gradient was computed in the same pass, must
    not have received it either."""
    x = ng.tensor([1.0, 2.0], requires_grad=True)
    w = ng.tensor([3.0, 4.0], requires_grad=True)
    (x * w).sum().backward()
    before = _snapshot(x, w)

    def bad_hook(g):
        raise ValueError("hook failed")

    x.register_hook(bad_hook)
    out = (x * w).sum() + (w * 2).sum()
    with pytest.raises(ValueError, match="hook failed"):
        out.backward()
    _assert_same_grads([x, w], before)


@pytest.mark.parametrize("name", ["mm", "bmm", "dot", "matmul", "kron", "take", "cdist", "vdot",
                                  "inner", "mv", "cosine_similarity", "slice_scatter",
                                  "lu_unpack", "tensordot"])
def test_a_number_where_a_tensor_is_expected_raises_pytorchs_type_error(name):
    # (each raised an AttributeError from inside, "'int' object has no attribute '_data'")
    with pytest.raises(TypeError) as ours:
        getattr(ng, name)(ng.ones(2, 2), 1)
    try:
        getattr(torch, name)(torch.ones(2, 2), 1)
    except TypeError as theirs:
        assert str(ours.value) == str(theirs)
    except AttributeError:  # (PyTorch's Python-level tensordot: its own AttributeError)
        assert "must be Tensor, not int" in str(ours.value)


def test_group_norm_refuses_a_number_of_groups_below_one_in_pytorchs_words():
    for groups in (0, -1):
        with pytest.raises(RuntimeError, match=f"Expected num groups to be greater than 0, got "
                                               f"{groups}"):
            ng.group_norm(ng.ones(2, 3), groups)
