"""In-place ops through views on CUDA give the CPU's values, gradients and node names (the CPU
results are compared with PyTorch in tests/test_inplace_views.py)."""
import numpy as np
import pytest

import numgrad
from numgrad.ops import _names, elementwise

# (the forms of elementwise.py's ops, which their @export flags declare, and two written out)
FORMS = (*(n for n, _ in _names.inplace_forms(elementwise.__name__)),
         "clamp_min", "clamp_max")
ARGS = {"pow": (2.0,), "clamp_min": (0.6,), "clamp_max": (0.9,)}
VIEWS = {
    "stepped-slice": lambda y: y[1:, ::2],
    "transpose": lambda y: y.t(),
    "reshape-view": lambda y: y.view(2, 6),
}
PROGRAMS = {
    "setitem-scale": lambda y, w: y[:, 0].mul_(2),
    "row-add": lambda y, w: y[1].add_(w),
    "copy-column": lambda y, w: y[:, 1].copy_(w[:3]),
    "stale-view": lambda y, w: (y[:2], y.mul_(w))[0],
    "mask": lambda y, w: y.__setitem__(y > 0.9, 0.0),
}


def _run(device, write):
    rng = np.random.default_rng(0)
    x = numgrad.tensor(rng.uniform(0.2, 1.5, (3, 4)), device=device, requires_grad=True)
    w = numgrad.tensor(rng.uniform(0.2, 1.5, (4,)), device=device, requires_grad=True)
    y = x * 1
    v = write(y, w)
    outs = (y,) if v is None else (y, v)
    names = [o.grad_fn.name() for o in outs]
    sum((o * (i + 2)).sum() for i, o in enumerate(outs)).backward()
    host = [o.detach().cpu().numpy() for o in outs]
    grads = [None if t.grad is None else t.grad.cpu().numpy() for t in (x, w)]
    return names, host, grads


def _same(cases):
    cpu, cuda = (_run(d, cases) for d in ("cpu", "cuda"))
    assert cpu[0] == cuda[0]
    for a, b in zip(cpu[1] + cpu[2], cuda[1] + cuda[2]):
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_allclose(b, a, rtol=1e-12, atol=1e-14)


# Each form on one kind of view, the kinds taken in turn (the simulator is slow; the CPU tests
# run every form on every kind).
CASES = [(name, list(VIEWS)[i % len(VIEWS)]) for i, name in enumerate(FORMS)]


@pytest.mark.parametrize("name, view", CASES, ids=[f"{n}-{v}" for n, v in CASES])
def test_in_place_form_on_a_view_matches_cpu(name, view):
    def write(y, w):
        v = VIEWS[view](y)
        getattr(v, name + "_")(*ARGS.get(name, ()))
        return v

    _same(write)


@pytest.mark.parametrize("program", PROGRAMS, ids=list(PROGRAMS))
def test_writes_through_views_match_cpu(program):
    _same(PROGRAMS[program])


def test_set_default_device_puts_new_tensors_on_the_gpu():
    numgrad.set_default_device("cuda")
    try:
        made = [numgrad.zeros(2), numgrad.ones(2, 3), numgrad.tensor([1.0, 2.0]), numgrad.rand(3),
                numgrad.arange(4), numgrad.nn.Linear(2, 2).weight]
        assert all(t.is_cuda for t in made)
        assert numgrad.get_default_device().type == "cuda"
    finally:
        numgrad.set_default_device(None)
    assert not numgrad.zeros(2).is_cuda


@pytest.mark.parametrize("write", ["add_", "mul_", "zero_", "exp_", "fill_", "clamp_"])
def test_in_place_ops_on_empty_cuda_tensors_run_as_on_the_cpu(write):
    """An empty tensor has no elements that could share memory: writing it in place is allowed
    (the CUDA layout check used to refuse it as an expanded view)."""
    args = {"add_": (1.0,), "mul_": (2.0,), "zero_": (), "exp_": (), "fill_": (3.0,),
            "clamp_": (0.0, 1.0)}[write]
    shapes = []
    for device in ("cpu", "cuda"):
        x = numgrad.zeros(0, 3, device=device)
        out = getattr(x, write)(*args)
        assert out is x and x._version == 1
        shapes.append(tuple(x.shape))
    assert shapes[0] == shapes[1]
