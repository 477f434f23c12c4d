"""Indexing against PyTorch: reading and writing with random index expressions (hypothesis),
views sharing storage and version counters, and PyTorch's errors.

Every expected value, shape, node name and message comes from PyTorch; the registry-driven harness
(test_ops.py) separately gradchecks and gradgradchecks each indexing op's samples.
"""
import numpy as np
import pytest
import torch
from hypothesis import assume, given
from hypothesis import strategies as st

import numgrad as ng

SIZES = st.sampled_from([0] + [1, 2, 2, 3, 3, 4, 4, 5] * 4)
NAMED_WRITES = ("torch::autograd::CopySlices", "IndexPutBackward0")


# --------------------------------------------------------------------------- index expressions
# An expression is a list of items, each built for either library by ``_build``:
# ("int", i), ("int0d", i) (a 0-d integer tensor), ("slice", start, stop, step), ("none",),
# ("ellipsis",), ("bool", b), ("tensor", int array), ("list", [ints]), ("mask", bool array).
@st.composite
def shapes(draw, min_dims=0, max_dims=4):
    return tuple(draw(st.lists(SIZES, min_size=min_dims, max_size=max_dims)))


@st.composite
def _slices(draw, n):
    """A slice of a dimension of size ``n``: bounds written as None, positive, negative or past
    the end; rarely empty."""
    lo, hi = sorted((draw(st.integers(0, n)), draw(st.integers(0, n))))
    if lo == hi and n and draw(st.integers(0, 9)) != 5:
        lo, hi = (lo - 1, hi) if lo else (lo, hi + 1)
    start = draw(st.sampled_from([lo, lo - n] + ([None, -n - 2] if lo == 0 else [])))
    stop = draw(st.sampled_from([hi] + ([hi - n] if hi < n else [None, n + 2])))
    return ("slice", start, stop, draw(st.sampled_from([None, 1, 1, 2, 3])))


@st.composite
def _ints(draw, n):
    return (draw(st.sampled_from(["int", "int", "int0d"])), draw(st.integers(-n, n - 1)))


@st.composite
def _index_tensor(draw, n, adv_shape):
    """An integer index for a dimension of size ``n``, broadcastable to ``adv_shape``."""
    shape = list(adv_shape)
    drop = draw(st.integers(0, len(shape)))
    shape = [1 if draw(st.booleans()) and draw(st.booleans()) else s for s in shape[drop:]]
    size = int(np.prod(shape, dtype=np.int64))
    if n == 0 and size:
        shape, size = [0], 0  # only an empty index fits an empty dimension
    values = draw(st.lists(st.integers(-n, n - 1), min_size=size, max_size=size)) if n else []
    arr = np.array(values, dtype=np.int64).reshape(shape)
    if arr.ndim == 1 and draw(st.booleans()):
        return ("list", arr.tolist())
    return ("tensor", arr)


@st.composite
def index_exprs(draw, shape, mode=None):
    """A random index for a tensor of ``shape``. ``mode``: "basic" (ints, slices, None, ...),
    "int" (with integer index tensors) or "mask" (with at most one boolean mask)."""
    mode = mode or draw(st.sampled_from(["basic", "basic", "int", "int", "mask"]))
    adv_shape = draw(st.sampled_from([(1,), (2,), (3,), (2, 2), (3, 1), (2,), (3,), (0,)]))
    if mode == "mask":
        adv_shape = (1,)  # other index tensors must broadcast with any number of mask hits
    ndim = len(shape)
    consumed = draw(st.integers(min(1, ndim), ndim))
    ellipsis_at = draw(st.none() | st.integers(0, consumed))
    if ellipsis_at is None:
        segments = [list(range(consumed))]
    else:
        segments = [list(range(ellipsis_at)), list(range(ndim - consumed + ellipsis_at, ndim))]
    mask_left = mode == "mask"
    items = []
    for number, dims in enumerate(segments):
        if number:
            items.append(("ellipsis",))
        i = 0
        while i < len(dims):
            n = shape[dims[i]]
            if mask_left and draw(st.booleans()):
                k = draw(st.integers(1, min(2, len(dims) - i)))
                mask_shape = [shape[d] for d in dims[i:i + k]]
                size = int(np.prod(mask_shape, dtype=np.int64))
                bits = draw(st.lists(st.booleans(), min_size=size, max_size=size))
                items.append(("mask", np.array(bits, dtype=bool).reshape(mask_shape)))
                mask_left = False
                i += k
            else:
                choices = [_slices(n)]
                if n:
                    choices.append(_ints(n))
                if mode != "basic":
                    choices.append(_index_tensor(n, adv_shape))
                items.append(draw(st.one_of(*choices)))
                i += 1
            # (hypothesis favours an integer range's ends: a middle value keeps these rare)
            if draw(st.integers(0, 7)) == 3:
                items.append(("none",))
            if draw(st.integers(0, 15)) == 7:
                # False indexes by an empty tensor, which broadcasts with few others.
                items.append(("bool", draw(st.booleans()) if mode == "basic" else True))
    if draw(st.integers(0, 5)) == 3:
        items.insert(draw(st.integers(0, len(items))), ("none",))
    return items


def _build(m, items, single_ok=True):
    """The index for library ``m`` (numgrad or torch); a lone item is sometimes passed bare."""
    out = []
    for item in items:
        kind = item[0]
        if kind == "int":
            out.append(item[1])
        elif kind == "int0d":
            out.append(m.tensor(item[1]))
        elif kind == "slice":
            out.append(slice(*item[1:]))
        elif kind == "none":
            out.append(None)
        elif kind == "ellipsis":
            out.append(Ellipsis)
        elif kind == "bool":
            out.append(item[1])
        elif kind == "list":
            out.append(list(item[1]))
        else:  # "tensor", "mask"
            out.append(m.tensor(item[1]))
    if single_ok and len(out) == 1:
        return out[0]
    return tuple(out)


def _values(data, shape, lo=-3.0, hi=3.0):
    seed = data.draw(st.integers(0, 2**32 - 1), label="seed")
    return np.random.default_rng(seed).uniform(lo, hi, size=shape)


def _np(t):
    return np.array(t.detach().tolist(), dtype=np.float64).reshape(tuple(t.shape))


def _same_error(torch_exc, call):
    """``call()`` (numgrad) raises what PyTorch raised: same class, same words."""
    with pytest.raises(type(torch_exc)) as info:
        call()
    assert str(info.value) == str(torch_exc).replace("torch.", "numgrad.")


def _value_for(data, target, dtype=np.float64):
    """A tensor value broadcasting to ``target``: dims dropped on the left, some set to 1, and
    sometimes extra leading 1s (which setitem strips, as PyTorch does); or None for a number."""
    if data.draw(st.integers(0, 4), label="number") == 0:
        return None
    shape = list(target)[data.draw(st.integers(0, len(target)), label="drop"):]
    shape = [1 if data.draw(st.booleans(), label="one") else s for s in shape]
    shape = [1] * data.draw(st.integers(0, 1), label="lead") + shape
    return _values(data, tuple(shape)).astype(dtype)


def _has_duplicates(shape, index):
    positions = torch.arange(int(np.prod(shape, dtype=np.int64))).reshape(shape)[index]
    return positions.numel() != positions.unique().numel()


# --------------------------------------------------------------------------- reading
@given(data=st.data())
def test_getitem_matches_torch(data):
    shape = data.draw(shapes(), label="shape")
    items = data.draw(index_exprs(shape), label="index")
    arr = _values(data, shape)
    tx = torch.tensor(arr, requires_grad=True)
    nx = ng.tensor(arr, requires_grad=True)
    try:
        ty = tx[_build(torch, items)]
    except (IndexError, ValueError, RuntimeError, TypeError) as exc:
        _same_error(exc, lambda: nx[_build(ng, items)])
        return
    ny = nx[_build(ng, items)]
    assert tuple(ny.shape) == tuple(ty.shape)
    np.testing.assert_array_equal(_np(ny), _np(ty))
    assert ny.grad_fn.name() == ty.grad_fn.name()
    if ty._is_view():
        assert ny._version_counter is nx._version_counter
        assert ny.numel() == 0 or np.shares_memory(ny.detach().numpy(), nx.detach().numpy())
    else:
        assert not np.shares_memory(ny.detach().numpy(), nx.detach().numpy())
    seed = _values(data, tuple(ty.shape))
    ty.backward(torch.tensor(seed))
    ny.backward(ng.tensor(seed))
    np.testing.assert_allclose(_np(nx.grad), _np(tx.grad), rtol=1e-12, atol=1e-12)


# --------------------------------------------------------------------------- writing
@given(data=st.data())
def test_setitem_values_match_torch(data):
    shape = data.draw(shapes(), label="shape")
    items = data.draw(index_exprs(shape), label="index")
    arr = _values(data, shape)
    tx, nx = torch.tensor(arr), ng.tensor(arr)
    try:
        target = tuple(tx[_build(torch, items)].shape)
    except (IndexError, ValueError, RuntimeError, TypeError):
        return  # reading errors are test_getitem_matches_torch's
    value = _value_for(data, target)
    if value is None or _has_duplicates(shape, _build(torch, items)):
        # Which of two writes to one element wins is unspecified: write one number.
        number = data.draw(st.floats(-5, 5) | st.integers(-5, 5), label="number")
        tv, nv = number, number
    else:
        tv, nv = torch.tensor(value), ng.tensor(value)
    tx[_build(torch, items)] = tv
    nx[_build(ng, items)] = nv
    np.testing.assert_array_equal(_np(nx), _np(tx))
    assert nx._version == tx._version == 1


@given(data=st.data())
def test_setitem_gradients_match_torch(data):
    shape = data.draw(shapes(), label="shape")
    items = data.draw(index_exprs(shape), label="index")
    arr = _values(data, shape)
    tx = torch.tensor(arr, requires_grad=True)
    nx = ng.tensor(arr, requires_grad=True)
    try:
        target = tuple(tx[_build(torch, items)].shape)
    except (IndexError, ValueError, RuntimeError, TypeError):
        return
    value = _value_for(data, target)
    if value is None:
        tv = nv = 1.5
    else:
        tv = torch.tensor(value, requires_grad=True)
        nv = ng.tensor(value, requires_grad=True)
    ty, ny = tx * 2, nx * 2
    ty[_build(torch, items)] = tv
    ny[_build(ng, items)] = nv
    if not _has_duplicates(shape, _build(torch, items)):
        np.testing.assert_allclose(_np(ny), _np(ty), rtol=1e-12, atol=1e-12)
    if ty.grad_fn.name() in NAMED_WRITES:
        assert ny.grad_fn.name() == ty.grad_fn.name()
    seed = _values(data, shape)
    ty.backward(torch.tensor(seed))
    ny.backward(ng.tensor(seed))
    np.testing.assert_allclose(_np(nx.grad), _np(tx.grad), rtol=1e-12, atol=1e-12)
    if value is not None:
        np.testing.assert_allclose(_np(nv.grad), _np(tv.grad), rtol=1e-12, atol=1e-12)


@given(data=st.data())
def test_write_through_view_matches_torch(data):
    """``y[view_index][index] = v``: the write reaches ``y``'s storage and ``y``'s history."""
    shape = data.draw(shapes(min_dims=1), label="shape")
    view_items = data.draw(index_exprs(shape, mode="basic"), label="view index")
    arr = _values(data, shape)
    tx = torch.tensor(arr, requires_grad=True)
    nx = ng.tensor(arr, requires_grad=True)
    ty, ny = tx * 2, nx * 2
    try:
        tview = ty[_build(torch, view_items)]
    except (IndexError, ValueError, RuntimeError, TypeError):
        return
    nview = ny[_build(ng, view_items)]
    items = data.draw(index_exprs(tuple(tview.shape)), label="index")
    try:
        target = tuple(tview[_build(torch, items)].shape)
    except (IndexError, ValueError, RuntimeError, TypeError):
        return
    assume(not _has_duplicates(tuple(tview.shape), _build(torch, items)))
    value = _value_for(data, target)
    if value is None:
        tv = nv = -0.5
    else:
        tv = torch.tensor(value, requires_grad=True)
        nv = ng.tensor(value, requires_grad=True)
    tview[_build(torch, items)] = tv
    nview[_build(ng, items)] = nv
    np.testing.assert_allclose(_np(ny), _np(ty), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(_np(nview), _np(tview), rtol=1e-12, atol=1e-12)
    assert ny.grad_fn.name() == ty.grad_fn.name()
    assert ny._version == ty._version and nview._version == tview._version
    seed = _values(data, shape)
    view_seed = _values(data, tuple(tview.shape))
    torch.autograd.backward([ty, tview], [torch.tensor(seed), torch.tensor(view_seed)])
    ng.autograd.backward([ny, nview], [ng.tensor(seed), ng.tensor(view_seed)])
    np.testing.assert_allclose(_np(nx.grad), _np(tx.grad), rtol=1e-12, atol=1e-12)
    if value is not None:
        np.testing.assert_allclose(_np(nv.grad), _np(tv.grad), rtol=1e-12, atol=1e-12)


# --------------------------------------------------------------------------- views
def test_basic_indexing_returns_views_sharing_storage_and_version():
    x = ng.zeros(3, 4)
    row, col, block = x[1], x[:, 2], x[None, 1:, ::2]
    for v in (row, col, block):
        assert v._version_counter is x._version_counter
    x[1, 2] = 7.0
    assert row.tolist() == [0.0, 0.0, 7.0, 0.0] and col.tolist() == [0.0, 7.0, 0.0]
    assert block.tolist() == [[[0.0, 7.0], [0.0, 0.0]]]
    assert x._version == row._version == col._version == 1


def test_writes_into_an_expanded_view_reach_its_base():
    t, n = torch.zeros(3), ng.zeros(3)
    for index in ((0, 1), 1):
        t.expand(2, 3)[index] = 5.0
        n.expand(2, 3)[index] = 5.0
        assert n.tolist() == t.tolist()


def test_writes_from_disjoint_or_coinciding_memory():
    t, n = torch.arange(6.0).reshape(2, 3), ng.arange(6.0).reshape(2, 3)
    t[1:] = t[:-1]
    n[1:] = n[:-1]
    t[0] = t[0] * 1
    n[0] = n[0]
    assert n.tolist() == t.tolist()


def test_advanced_indexing_copies():
    x = ng.zeros(3, 4)
    picked, masked = x[[0, 2]], x[x == 0]
    x[0, 0] = 1.0
    assert picked.tolist()[0][0] == 0.0 and masked.tolist()[0] == 0.0
    assert picked._version_counter is not x._version_counter


def test_write_through_a_view_modifies_the_base():
    expected = torch.zeros(3, 4)
    expected[0][1] = 5
    expected[:, 2][[0, 2]] = 8
    x = ng.zeros(3, 4)
    x[0][1] = 5
    x[:, 2][[0, 2]] = 8
    assert x.tolist() == expected.tolist()
    assert x._version == expected._version


def test_write_through_view_in_grad_mode_rebases_the_base():
    tx = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
    nx = ng.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
    tv = torch.tensor(10.0, requires_grad=True)
    nv = ng.tensor(10.0, requires_grad=True)
    ty, ny = tx * tx, nx * nx
    ty[1][2] = tv * 3
    ny[1][2] = nv * 3
    assert ny.grad_fn.name() == ty.grad_fn.name()
    (ty * ty).sum().backward()
    (ny * ny).sum().backward()
    assert nx.grad.tolist() == tx.grad.tolist()
    assert nv.grad.item() == tv.grad.item()


def test_view_made_before_a_write_to_its_base_sees_the_write_in_backward():
    grads = []
    for m in (torch, ng):
        x = m.arange(6.0).requires_grad_()
        y = x * 1
        tail = y[2:]
        y[3] = 0.0
        tail.sum().backward()
        grads.append(x.grad.tolist())
    assert grads[1] == grads[0]


def test_iterating_yields_select_views():
    x = ng.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    rows = list(x)
    assert [r.grad_fn.name() for r in rows] == ["SelectBackward0"] * 2
    (rows[0] * 2 + rows[1]).sum().backward()
    assert x.grad.tolist() == [[2.0, 2.0], [1.0, 1.0]]


def test_index_backward_accumulates_duplicates():
    t = torch.arange(5.0, requires_grad=True)
    n = ng.arange(5.0, requires_grad=True)
    index = [4, 0, 4, 4, 1, 0]
    (t[index] * torch.arange(6.0)).sum().backward()
    (n[index] * ng.arange(6.0)).sum().backward()
    assert n.grad.tolist() == t.grad.tolist()


@pytest.mark.parametrize("accumulate", [False, True])
def test_index_put_and_index_put_(accumulate):
    rows, cols = [0, 2, 2], [1, 3, 3]
    tx, nx = torch.zeros(3, 4), ng.zeros(3, 4)
    tv, nv = torch.tensor([1.0, 2.0, 3.0]), ng.tensor([1.0, 2.0, 3.0])
    tz = torch.index_put(tx, (torch.tensor(rows), torch.tensor(cols)), tv, accumulate)
    nz = ng.index_put(nx, (ng.tensor(rows), ng.tensor(cols)), nv, accumulate)
    assert nz.tolist() == tz.tolist() and nx.tolist() == tx.tolist()
    tx.index_put_((torch.tensor(rows), torch.tensor(cols)), tv, accumulate=accumulate)
    nx.index_put_((ng.tensor(rows), ng.tensor(cols)), nv, accumulate=accumulate)
    assert nx.tolist() == tx.tolist() and nx._version == tx._version



@pytest.mark.parametrize("case", ["two", "one-3d", "scalar", "int", "negative", "empty"])
def test_row_scatter_add_matches_pytorch(case):
    """``index_put_(accumulate=True)`` with one or two index tensors on leading dimensions (the
    compiled row scatter behind ``z[rows, target]``'s backward): duplicates add up, negative
    indices count from the end, values broadcast, integer tensors too."""
    shape, dtype = (4, 5), "float64"
    idx = ([0, 3, 3, -1, 2], [1, 4, 4, 0, -5])
    values = np.arange(1.0, 6.0)
    if case == "one-3d":
        shape, idx, values = (4, 2, 3), ([1, -4, 1],), np.arange(18.0).reshape(3, 2, 3)
    elif case == "scalar":
        values = np.array(2.5)
    elif case == "int":
        dtype, values = "int64", np.arange(5)
    elif case == "negative":
        idx = ([-4, -1, -1], [-5, -1, 3])
        values = np.array([1.0, 2.0, 3.0])
    elif case == "empty":
        idx, values = ([], []), np.zeros(0)
    outs = []
    for m in (torch, ng):
        x = m.zeros(*shape, dtype=getattr(m, dtype))
        indices = tuple(m.tensor(i, dtype=m.int64) for i in idx)
        x.index_put_(indices, m.tensor(values, dtype=getattr(m, dtype)), accumulate=True)
        outs.append(x.tolist())
    assert outs[1] == outs[0]


def test_row_scatter_add_out_of_range_raises_before_writing():
    """PyTorch's IndexError; unlike PyTorch's CPU kernel (which has added the rows before the bad
    one by then), nothing is written."""
    messages = []
    for m in (torch, ng):
        x = m.zeros(3, 4)
        with pytest.raises(IndexError) as info:
            x.index_put_((m.tensor([0, 1, 2]), m.tensor([1, 4, 0])), m.ones(3), accumulate=True)
        messages.append(str(info.value))
    assert x.tolist() == [[0.0] * 4] * 3
    assert messages[1] == messages[0]


def test_gather_by_rows_and_targets_backward_matches_pytorch():
    """The log-likelihood pick of a classifier, ``logp[rows, target]``: its gradient."""
    z = np.random.default_rng(0).standard_normal((6, 4))
    target = [3, 0, 0, 2, 1, 3]
    grads = []
    for m in (torch, ng):
        x = m.tensor(z, requires_grad=True)
        (-x.log_softmax(1)[m.arange(6), m.tensor(target)].mean()).backward()
        grads.append(x.grad.numpy())
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-12, atol=1e-15)

def test_setitem_casts_to_the_tensor_dtype():
    for dtype, value in ((torch.int64, 2.7), (torch.bool, 2), (torch.float32, True)):
        t = torch.zeros(3, dtype=dtype)
        n = ng.zeros(3, dtype=getattr(ng, str(dtype).removeprefix("torch.")))
        t[1] = value
        n[1] = value
        assert n.tolist() == t.tolist() and n.dtype.name == str(t.dtype).removeprefix("torch.")
    t, n = torch.zeros(2, 3), ng.zeros(2, 3)
    t[0] = torch.tensor([1, 2, 3])
    n[0] = ng.tensor([1, 2, 3])
    assert n.tolist() == t.tolist() and n.dtype is ng.float32


# --------------------------------------------------------------------------- autograd rules
def test_setitem_on_leaf_requiring_grad_raises_and_changes_nothing():
    for index in (0, (slice(None), 1), [0, 1], "mask"):
        t = torch.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
        n = ng.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
        with pytest.raises(RuntimeError) as expected:
            t[t > 2 if index == "mask" else index] = 0.0
        with pytest.raises(RuntimeError) as got:
            n[n > 2 if index == "mask" else index] = 0.0
        assert str(got.value) == str(expected.value)
        assert "a leaf Variable that requires grad is being used in an in-place operation." in str(
            got.value)
        assert n.tolist() == [[1.0, 2.0], [3.0, 4.0]] and n._version == 0
        assert n.grad_fn is None and n.is_leaf


def test_setitem_on_view_of_leaf_requiring_grad_raises():
    n = ng.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad"):
        n[1:][0] = 2.0
    assert n.tolist() == [1.0, 1.0, 1.0]


def test_setitem_on_leaf_under_no_grad_just_writes():
    n = ng.ones(3, requires_grad=True)
    with ng.no_grad():
        n[1] = 5.0
        n[[0, 2]] = ng.tensor([7.0, 8.0])
    assert n.tolist() == [7.0, 5.0, 8.0] and n.is_leaf and n.grad_fn is None
    assert n._version == 2


def test_setitem_of_grad_requiring_value_into_plain_tensor_records_history():
    tv, nv = torch.tensor([1.0, 2.0], requires_grad=True), ng.tensor([1.0, 2.0], requires_grad=True)
    tz, nz = torch.zeros(2, 3), ng.zeros(2, 3)
    tz[:, 1] = tv * 2
    nz[:, 1] = nv * 2
    assert nz.requires_grad and nz.grad_fn.name() == tz.grad_fn.name()
    tz.sum().backward()
    nz.sum().backward()
    assert nv.grad.tolist() == tv.grad.tolist()


def test_setitem_bumps_the_version_guarding_saved_tensors():
    x = ng.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 1
    z = y * y  # saves y
    y[0] = 5.0
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()


def test_double_backward_through_advanced_index():
    t = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    n = ng.tensor([1.0, 2.0, 3.0], requires_grad=True)
    (tg,) = torch.autograd.grad((t[[0, 0, 2]] ** 3).sum(), t, create_graph=True)
    (ng_,) = ng.autograd.grad((n[[0, 0, 2]] ** 3).sum(), n, create_graph=True)
    assert ng_.tolist() == tg.tolist()
    tg.sum().backward()
    ng_.sum().backward()
    assert n.grad.tolist() == t.grad.tolist()


# --------------------------------------------------------------------------- errors
ERRORS = {
    "int out of range": lambda m, x: x[5],
    "negative int out of range": lambda m, x: x[-4],
    "second int out of range": lambda m, x: x[0, 7],
    "int after None out of range": lambda m, x: x[None, 0, ..., 9],
    "too many indices": lambda m, x: x[0, 0, 0, 0],
    "too many with a mask": lambda m, x: x[0, 1, m.tensor([[True, False]])],
    "mask shape": lambda m, x: x[m.tensor([True, False])],
    "mask shape inner": lambda m, x: x[1:, m.tensor([True, False, True])],
    "index tensor out of range": lambda m, x: x[m.tensor([0, 5])],
    "index tensor out of range, second": lambda m, x: x[:, m.tensor([0]), m.tensor([-6])],
    "index tensors do not broadcast": lambda m, x: x[[0, 1], [0, 1, 2]],
    "float index": lambda m, x: x[1.5],
    "float index tensor": lambda m, x: x[m.tensor([1.0])],
    "zero step": lambda m, x: x[::0],
    "negative step": lambda m, x: x[::-1],
    "0-dim int": lambda m, x: m.tensor(3.0)[0],
    "0-dim slice": lambda m, x: m.tensor(3.0)[:],
    "setitem out of range": lambda m, x: x.__setitem__(3, 1.0),
    "setitem value shape (basic)": lambda m, x: x.__setitem__(0, m.ones(3)),
    "setitem value dims (basic)": lambda m, x: x.__setitem__(0, m.ones(2, 4, 5)),
    "setitem value shape (advanced)": lambda m, x: x.__setitem__([0, 1], m.ones(3, 4, 5)),
    "setitem value shape (mask)": lambda m, x: x.__setitem__(x > 0, m.ones(3)),
    "setitem a list": lambda m, x: x.__setitem__(0, [1.0, 2.0]),
    "index_put dtypes": lambda m, x: m.index_put(x, (m.tensor([0]),), m.ones(4, 5).double()),
    "setitem from overlapping memory": lambda m, x: x.view(-1).__setitem__(
        slice(1, None), x.view(-1)[:-1]),
    "setitem from overlapping memory (advanced)": lambda m, x: x[0].__setitem__(
        [1, 2], x[0, 1:3]),
    "setitem into repeated memory": lambda m, x: x[0, 0].expand(2, 3).__setitem__(
        (slice(None), 1), 5.0),
}


@pytest.mark.parametrize("name", list(ERRORS))
def test_errors_match_torch(name):
    call = ERRORS[name]
    arr = np.random.default_rng(0).uniform(-1, 1, (3, 4, 5)).astype(np.float32)
    tx, nx = torch.tensor(arr), ng.tensor(arr)
    with pytest.raises(Exception) as expected:
        call(torch, tx)
    with pytest.raises(type(expected.value)) as got:
        call(ng, nx)
    assert str(got.value) == str(expected.value).replace("torch.", "numgrad.")
    assert nx.tolist() == tx.tolist() and nx._version == 0  # a failed write changes nothing


@pytest.mark.parametrize("index", [
    lambda m: (range(3), [0, 1, 3]), lambda m: range(2), lambda m: range(0),
    lambda m: (slice(None), range(1, 4, 2)), lambda m: (range(3), m.tensor([3, 2, 0])),
    lambda m: (range(-3, 0), 1),
])
def test_a_range_indexes_as_a_list_does_as_pytorch(index):
    """``y_hat[range(n), y]``: a Python range is an index tensor, for reading, gradients and
    writing."""
    outs = []
    for m in (ng, torch):
        x = m.arange(12.0).view(3, 4).requires_grad_()
        y = x[index(m)]
        y.sum().backward()
        z = x.detach().clone()
        z[index(m)] = -1.0
        outs.append((y.detach().numpy(), x.grad.numpy(), z.numpy()))
    for ours, theirs in zip(*outs):
        np.testing.assert_array_equal(ours, theirs)
    with pytest.raises(IndexError) as theirs:
        torch.zeros(3)[range(4)]
    with pytest.raises(IndexError) as ours:
        ng.zeros(3)[range(4)]
    assert str(ours.value) == str(theirs.value)
