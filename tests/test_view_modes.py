"""Views and grad modes, PyTorch's rules word for word (torch 2.13): ``detach_()`` refuses every
view; an in-place write in grad mode into a view made in no_grad mode (or into a view of one)
is refused when it would be recorded, and nothing is written; the same write where nothing is
recorded, and every write inside no_grad, are allowed."""
import pytest
import torch

import numgrad


def _no_grad_view(m, base_requires_grad=True):
    x = m.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=base_requires_grad)
    b = x * 1 if base_requires_grad else x.clone()
    with m.no_grad():
        v = b[:2]
    return b, v


WRITES = {
    "mul_ by a number": lambda m, b, v: v.mul_(2),
    "add_ of a tensor that requires grad": lambda m, b, v: v.add_(m.ones(2, requires_grad=True)),
    "copy_": lambda m, b, v: v.copy_(m.ones(2)),
    "setitem (through Select)": lambda m, b, v: v.__setitem__(0, 5.0),
    "mul_ of a view of it (Slice)": lambda m, b, v: v[:1].mul_(2),
    "mul_ of a view of it (View)": lambda m, b, v: v.view(2).mul_(2),
}


def _outcome(m, write, base_requires_grad=True):
    b, v = _no_grad_view(m, base_requires_grad)
    try:
        write(m, b, v)
        error = None
    except RuntimeError as e:
        error = str(e)
    return error, b.detach().tolist()


@pytest.mark.parametrize("write", list(WRITES))
@pytest.mark.parametrize("base_requires_grad", [True, False])
def test_write_into_a_view_made_in_no_grad_mode(write, base_requires_grad):
    assert _outcome(numgrad, WRITES[write], base_requires_grad) == \
        _outcome(torch, WRITES[write], base_requires_grad)


def test_writes_inside_no_grad_and_grad_mode_views_are_allowed():
    for m in (numgrad, torch):
        b, v = _no_grad_view(m)
        with m.no_grad():
            v.mul_(2)
        x = m.tensor([1.0, 2.0], requires_grad=True)
        y = x * 1
        y[:1].mul_(3)  # (a view made in grad mode: recorded)
        y.sum().backward()
        assert x.grad.tolist() == [3.0, 1.0] and b.detach().tolist() == [2.0, 4.0, 3.0, 4.0]


def _detach_cases(m):
    x = m.tensor([1.0, 2.0, 3.0], requires_grad=True)
    with m.no_grad():
        made_in_no_grad = x[:2]
    return {"view of a leaf": x[:2], "view of a plain tensor": m.zeros(3)[1:],
            "made in no_grad": made_in_no_grad, "view of a result": (x * 2).view(3),
            "split's part": x.split(2)[0], "not a view": x * 2}


def test_detach_in_place_refuses_views():
    got, want = _detach_cases(numgrad), _detach_cases(torch)
    for name in want:
        outcomes = []
        for t in (got[name], want[name]):
            try:
                t.detach_()
                outcomes.append((t.requires_grad, t.grad_fn))
            except RuntimeError as e:
                outcomes.append(str(e))
        assert outcomes[0] == outcomes[1], name
