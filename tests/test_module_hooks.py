"""A module's forward hooks and pre-hooks, as PyTorch's: the arguments and outputs they see and
replace, their order (``prepend``), ``with_kwargs``, ``always_call``, ``remove()``; and inside
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
