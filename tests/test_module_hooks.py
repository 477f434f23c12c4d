"""A module's forward hooks and pre-hooks, and its full backward hooks and pre-hooks, as
PyTorch's: the arguments, outputs and gradients they see and replace, their order
(``prepend``), ``with_kwargs``, ``always_call``, ``remove()``, the errors; and inside
``numgrad.compile``, where their Python must run at every call."""
import warnings

import numpy as np
import pytest
import torch

import numgrad


def _pair(seed=0):
    """The same Linear in both libraries."""
    t = torch.nn.Linear(3, 2).double()
    n = numgrad.nn.Linear(3, 2).double()
    n.weight.data = numgrad.tensor(t.weight.detach().numpy().copy())
    n.bias.data = numgrad.tensor(t.bias.detach().numpy().copy())
    return t, n


def _run(lib, module, x, register):
    seen = []
    handles = register(lib, module, seen)
    out = module(x)
    return out, seen, handles


def _hooks(lib, module, seen):
    def pre(m, args):
        seen.append(("pre", args[0].shape[0]))
        return args[0] * 2  # (one value: becomes the arguments' tuple)

    def pre_first(m, args):
        seen.append(("pre_first",))

    def post(m, args, out):
        seen.append(("post", tuple(out.shape)))
        return out + 1

    def post_kwargs(m, args, kwargs, out):
        seen.append(("post_kwargs", sorted(kwargs)))

    return [module.register_forward_pre_hook(pre),
            module.register_forward_pre_hook(pre_first, prepend=True),
            module.register_forward_hook(post),
            module.register_forward_hook(post_kwargs, with_kwargs=True)]


def test_hooks_see_and_replace_arguments_and_output_in_order_as_in_pytorch():
    t, n = _pair()
    x = np.arange(6.0).reshape(2, 3)
    got, seen_n, handles_n = _run(numgrad, n, numgrad.tensor(x), _hooks)
    want, seen_t, handles_t = _run(torch, t, torch.tensor(x), _hooks)
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-12)
    assert seen_n == seen_t
    for h in handles_n + handles_t:
        h.remove()
    np.testing.assert_allclose(n(numgrad.tensor(x)).detach().numpy(),
                               t(torch.tensor(x)).detach().numpy(), rtol=1e-12)
    assert isinstance(handles_n[0], numgrad.utils.hooks.RemovableHandle)


def test_a_pre_hook_with_kwargs_and_its_errors():
    for lib in (numgrad, torch):
        m = lib.nn.Identity()
        m.register_forward_pre_hook(lambda mod, args, kwargs: ((args[0] + 1,), kwargs),
                                    with_kwargs=True)
        assert m(lib.tensor([1.0])).tolist() == [2.0]
        bad = lib.nn.Identity()
        bad.register_forward_pre_hook(lambda mod, args, kwargs: 3, with_kwargs=True)
        with pytest.raises(RuntimeError, match="forward pre-hook must return None or a tuple"):
            bad(lib.tensor([1.0]))


def test_always_call_runs_when_forward_raises():
    for lib in (numgrad, torch):
        calls = []

        class Failing(lib.nn.Module):
            def forward(self, x):
                raise ValueError("no")

        m = Failing()
        m.register_forward_hook(lambda mod, args, out: calls.append(out), always_call=True)
        m.register_forward_hook(lambda mod, args, out: calls.append("plain"))
        with pytest.raises(ValueError):
            m(lib.tensor([1.0]))
        assert calls == [None]


def test_a_hook_registered_after_compiling_runs_at_every_call():
    numgrad.manual_seed(0)
    model = numgrad.nn.Sequential(numgrad.nn.Linear(3, 3), numgrad.nn.Tanh()).double()
    x = numgrad.tensor(np.ones((2, 3)))
    compiled = numgrad.compile(lambda: model(x).sum())
    plain = compiled().item()
    assert compiled().item() == plain
    calls = []
    handle = model[1].register_forward_hook(lambda m, a, out: calls.append(1) or out * 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # (it runs eagerly, with a warning)
        for _ in range(3):
            assert compiled().item() == pytest.approx(2 * plain, rel=1e-12)
    assert calls == [1, 1, 1]
    handle.remove()
    assert compiled().item() == plain


class _TwoInputs:
    """``forward(x, scale, y)``: a tensor, a number and a tensor in; two outputs."""

    @staticmethod
    def make(lib):
        base = lib.nn.Module

        class Two(base):
            def forward(self, x, scale, y):
                return x * y * scale, (x + 1).sum()

        return Two()


def _backward_hook_run(lib, y_requires_grad, replace):
    seen = []
    m = _TwoInputs.make(lib)

    def pre(mod, grad_output):
        seen.append(("pre", [None if g is None else g.detach().numpy().tolist()
                             for g in grad_output]))
        return (grad_output[0] * 2, grad_output[1])

    def hook(mod, grad_input, grad_output):
        seen.append(("hook", [None if g is None else g.detach().numpy().tolist()
                              for g in grad_input],
                     [None if g is None else g.detach().numpy().tolist() for g in grad_output]))
        if replace:
            return (grad_input[0] + 10, None, grad_input[2])

    handles = [m.register_full_backward_pre_hook(pre), m.register_full_backward_hook(hook)]
    x = lib.tensor([1.0, 2.0], dtype=lib.float64, requires_grad=True)
    y = lib.tensor([3.0, -1.0], dtype=lib.float64, requires_grad=y_requires_grad)
    a, b = m(x, 0.5, y)
    (a.sum() * 3 + b).backward()
    grads = [x.grad.numpy().tolist(), None if y.grad is None else y.grad.numpy().tolist()]
    for h in handles:
        h.remove()
    a, b = m(x.detach().requires_grad_(), 0.5, y)  # (removed: the hooks see nothing more)
    (a.sum() + b).backward()
    return seen, grads


@pytest.mark.parametrize("y_requires_grad, replace", [(True, False), (False, True)])
def test_full_backward_hooks_see_and_replace_gradients_as_in_pytorch(y_requires_grad, replace):
    expected = _backward_hook_run(torch, y_requires_grad, replace)
    got = _backward_hook_run(numgrad, y_requires_grad, replace)
    assert got == expected
    assert expected[0][0][0] == "pre" and expected[0][1][0] == "hook"


def test_a_backward_hook_without_inputs_that_need_grad_and_its_errors():
    for lib in (torch, numgrad):
        lin = lib.nn.Linear(2, 1).double()
        calls = []
        lin.register_full_backward_hook(lambda m, gi, go: calls.append((gi, go[0].shape)))
        with pytest.warns(UserWarning, match="^Full backward hook is firing when gradients are "
                                             "computed with respect to module outputs since no "
                                             "inputs require gradients"):
            lin(lib.ones(3, 2, dtype=lib.float64)).sum().backward()  # (only the weights need it)
        assert calls == [((None,), (3, 1))]
        bad = lib.nn.Linear(2, 1).double()
        bad.register_full_backward_hook(lambda m, gi, go: (gi[0], gi[0]))
        x = lib.ones(3, 2, dtype=lib.float64, requires_grad=True)
        with pytest.raises(RuntimeError, match="^Backward hook returned an invalid number of "
                                               "grad_input, got 2, but expected 1$"):
            bad(x).sum().backward()


def test_a_backward_hook_registered_after_compiling_runs():
    model = numgrad.nn.Linear(3, 2).double()
    x = numgrad.ones(4, 3, dtype=numgrad.float64, requires_grad=True)
    step = numgrad.compile(lambda v: model(v).sum())
    step(x).backward()
    calls = []
    model.register_full_backward_hook(lambda m, gi, go: calls.append(gi[0].shape))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        step(x).backward()
    assert calls == [(4, 3)]
