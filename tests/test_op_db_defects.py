"""The defects issue 35 lists (found running PyTorch's operator database), each reproduced
against PyTorch: numgrad must give what PyTorch gives."""
import numpy as np
import pytest
import torch

import numgrad

F_NG, F_T = numgrad.nn.functional, torch.nn.functional


def _same(ours, theirs, rtol=1e-6):
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=rtol,
                               atol=1e-7)


def test_masked_fill_with_a_0d_value_that_requires_grad_passes_it_the_gradient():
    """1: the filled positions' gradient reaches the value (the graph was cut: no grad)."""
    results = []
    for m in (numgrad, torch):
        a = m.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
        v = m.tensor(5.0, dtype=m.float64, requires_grad=True)  # (cast to a's float32)
        y = a.masked_fill(m.tensor([True, False, True, True]), v)
        assert y.requires_grad and y.dtype == m.float32
        y.backward(m.tensor([1.0, 2.0, 3.0, 4.0]))
        results.append((y, a.grad, v.grad))
    for ours, theirs in zip(*results):
        _same(ours, theirs)


def test_normal_of_0d_mean_and_std_is_0d():
    """2: ``normal(mean, std)`` of 0-d tensors has shape () (it was (1,))."""
    for mean, std in ((0.0, 1.0), (2.0, 0.5)):
        for m_kind in ("tensor", "number"):
            ng = numgrad.normal(numgrad.tensor(mean), numgrad.tensor(std) if m_kind == "tensor"
                                else std)
            t = torch.normal(torch.tensor(mean), torch.tensor(std) if m_kind == "tensor"
                             else std)
            assert tuple(ng.shape) == tuple(t.shape) == ()
            assert ng.dtype == numgrad.float32


@pytest.mark.parametrize("call", [
    lambda m, x: x.std(keepdim=True),
    lambda m, x: x.var(keepdim=True),
    lambda m, x: m.var(x, correction=0, keepdim=True),
    lambda m, x: m.std_mean(x, keepdim=True, correction=0),
    lambda m, x: m.var_mean(x, keepdim=True),
])
def test_std_var_keepdim_without_dim_keeps_every_dimension(call):
    """3: ``keepdim=True`` without ``dim`` keeps each dimension as 1 (it gave shape ())."""
    x = np.random.default_rng(3).standard_normal((2, 3, 4))
    results = []
    for m in (numgrad, torch):
        t = m.tensor(x, requires_grad=True)
        out = call(m, t)
        outs = out if isinstance(out, tuple) else (out,)
        sum(o.sum() for o in outs).backward()
        results.append((*outs, t.grad))
    for ours, theirs in zip(*results):
        _same(ours, theirs)


@pytest.mark.parametrize("a, b", [(4, 2), (4.0, 2), (1.5, 2.5), (True, False), (3, True)])
def test_where_with_two_python_numbers(a, b):
    """4: ``where(cond, 4, 2)`` gives PyTorch's dtype (int64, the default float, bool)."""
    ours = numgrad.where(numgrad.tensor([True, False, True]), a, b)
    theirs = torch.where(torch.tensor([True, False, True]), a, b)
    _same(ours, theirs)


@pytest.mark.parametrize("src, dst", [("float32", "int32"), ("float64", "int64"),
                                      ("int64", "float64"), ("float32", "float32"),
                                      ("float32", "float64"), ("float64", "int32")])
def test_view_as_another_dtype(src, dst):
    """5: ``x.view(dtype)`` reads the same bytes as another dtype (it raised TypeError)."""
    x = np.arange(24).reshape(2, 3, 4).astype(src) * (1.5 if src.startswith("float") else 3)
    ours = numgrad.tensor(x).view(getattr(numgrad, dst))
    theirs = torch.tensor(x).view(getattr(torch, dst))
    _same(ours, theirs)
    assert not numgrad.tensor(x, requires_grad=src.startswith("float")).view(
        getattr(numgrad, dst)).requires_grad
    # one memory: a write through the original shows through the view
    base = numgrad.tensor(x)
    view = base.view(getattr(numgrad, dst))
    base.zero_()
    assert not view.numpy().any()


def test_view_as_a_dtype_of_another_size_refuses_what_pytorch_refuses():
    for make in (lambda m: m.ones(()), lambda m: m.ones(3), lambda m: m.ones(4, 2).t()):
        with pytest.raises(RuntimeError) as theirs:
            make(torch).view(torch.float64)
        with pytest.raises(RuntimeError, match=str(theirs.value).split(" to view")[0]
                           .replace("(", r"\(").replace(")", r"\)")):
            make(numgrad).view(numgrad.float64)


@pytest.mark.parametrize("dims", [(0, 2), (2, 0), (1,), (-1, 0), (), (0, 1, 2, 3)])
def test_squeeze_a_tuple_of_dims(dims):
    """6: ``squeeze((0, 2))`` removes each given dim of size 1 (it raised TypeError)."""
    x = np.random.default_rng(6).standard_normal((1, 3, 1, 2))
    results = []
    for m in (numgrad, torch):
        t = m.tensor(x, requires_grad=True)
        out = t.squeeze(dims)
        (out * m.arange(out.numel(), dtype=m.float64).reshape(out.shape)).sum().backward()
        results.append((out, t.grad))
    for ours, theirs in zip(*results):
        _same(ours, theirs)
    with pytest.raises(RuntimeError, match="appears multiple times"):
        numgrad.ones(1, 2).squeeze((0, 0))


@pytest.mark.parametrize("sa, sb, dims", [((2, 1), (3, 2), ([1], [0])),
                                          ((2, 3), (1, 4), ([1], [0])),
                                          ((2, 1, 3), (4, 3, 5), ([1, 2], [0, 1]))])
def test_tensordot_broadcasts_contracted_dims_of_size_1(sa, sb, dims):
    """7: a contracted dim of size 1 against size n: PyTorch sums the other side (it raised)."""
    rng = np.random.default_rng(7)
    a, b = rng.standard_normal(sa), rng.standard_normal(sb)
    results = []
    for m in (numgrad, torch):
        ta, tb = m.tensor(a, requires_grad=True), m.tensor(b, requires_grad=True)
        out = m.tensordot(ta, tb, dims=dims)
        out.sum().backward()
        results.append((out, ta.grad, tb.grad))
    for ours, theirs in zip(*results):
        _same(ours, theirs)


@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_of_an_empty_1d_input(training):
    """8: ``batch_norm`` of an empty input returns it empty (it raised IndexError)."""
    for m in (numgrad, torch):
        out = m.nn.functional.batch_norm(m.zeros(0), m.zeros(0), m.ones(0), training=training)
        assert tuple(out.shape) == (0,)


@pytest.mark.parametrize("driver", ["gels", "gelsy", "gelsd", "gelss"])
@pytest.mark.parametrize("sa, sb", [((5, 3), (5, 2)), ((3, 5), (3, 2)), ((2, 4, 3), (2, 4, 1)),
                                    ((4, 3), (4,))])
def test_lstsq_answers_as_the_driver_asked(driver, sa, sb):
    """9: each driver's residuals, rank and singular values as PyTorch's (``'gels'`` answered
    as ``'gelsy'``)."""
    rng = np.random.default_rng(9)
    a, b = rng.standard_normal(sa), rng.standard_normal(sb)
    results = []
    for m in (numgrad, torch):
        ta, tb = m.tensor(a, requires_grad=True), m.tensor(b, requires_grad=True)
        out = m.linalg.lstsq(ta, tb, driver=driver)
        loss = out.solution.sum() + (out.residuals.sum() if out.residuals.numel() else 0)
        loss.backward()
        results.append((*out, ta.grad, tb.grad))
    for ours, theirs in zip(*results):
        _same(ours, theirs, rtol=1e-5)


def test_lstsq_refuses_an_unknown_driver():
    with pytest.raises(RuntimeError, match="should be one of"):
        numgrad.linalg.lstsq(numgrad.eye(2), numgrad.ones(2, 1), driver="gelsx")


@pytest.mark.parametrize("loss", ["cross_entropy", "nll_loss"])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weighted", [False, True])
def test_k_dimensional_cross_entropy_and_nll_loss(loss, reduction, weighted):
    """10: an (N, C, d1, d2) input with an (N, d1, d2) target (it raised NotImplementedError)."""
    rng = np.random.default_rng(10)
    x = rng.standard_normal((3, 5, 4, 2))
    target = rng.integers(0, 5, (3, 4, 2))
    target[0, 1, 1] = -100  # (ignore_index)
    w = rng.uniform(0.5, 2.0, 5)
    results = []
    for m in (numgrad, torch):
        t = m.tensor(x, requires_grad=True)
        kwargs = {"weight": m.tensor(w)} if weighted else {}
        out = getattr(m.nn.functional, loss)(t, m.tensor(target), reduction=reduction, **kwargs)
        out.sum().backward()
        results.append((out, t.grad))
    for ours, theirs in zip(*results):
        _same(ours, theirs)


def test_k_dimensional_nll_loss_refuses_a_target_of_the_wrong_size():
    x = numgrad.zeros(3, 5, 4)
    with pytest.raises(RuntimeError, match=r"Expected target size \[3, 4\], got \[3, 5\]"):
        F_NG.nll_loss(x, numgrad.zeros(3, 5, dtype=numgrad.int64))
    with pytest.raises(ValueError, match=r"Expected input batch_size \(3\) to match target "
                                         r"batch_size \(2\)"):
        F_NG.nll_loss(x, numgrad.zeros(2, 4, dtype=numgrad.int64))
