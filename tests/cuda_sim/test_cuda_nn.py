"""nn.Module on CUDA: ``Module.to("cuda")``, ``.cuda()`` and ``.cpu()`` move parameters (in place,
with their gradients) and buffers, as PyTorch's do."""
import numpy as np
import pytest

import numgrad
from numgrad import nn


def test_module_to_cuda_and_back_moves_parameters_in_place():
    numgrad.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    params = list(model.parameters())
    before = [p.detach().numpy().copy() for p in params]
    params[0].grad = numgrad.ones(4, 3)
    assert model.to("cuda") is model
    after = list(model.parameters())
    assert [id(p) for p in after] == [id(p) for p in params]  # the same Parameter objects
    for p, values in zip(after, before):
        assert p.is_cuda and p.device == numgrad.device("cuda", 0)
        assert p.requires_grad and p.is_leaf
        np.testing.assert_array_equal(p.detach().cpu().numpy(), values)
    assert params[0].grad.is_cuda
    model.cpu()
    for p, values in zip(model.parameters(), before):
        assert not p.is_cuda
        np.testing.assert_array_equal(p.detach().numpy(), values)
    assert not params[0].grad.is_cuda


def test_module_cuda_with_dtype_and_like_a_tensor():
    model = nn.Linear(2, 2)
    model.cuda()
    assert all(p.is_cuda for p in model.parameters())
    model.to(numgrad.zeros(1, dtype=numgrad.float64))  # to(tensor): its dtype and its device (cpu)
    assert all(not p.is_cuda and p.dtype is numgrad.float64 for p in model.parameters())
    model.to("cuda", numgrad.float32)
    assert all(p.is_cuda and p.dtype is numgrad.float32 for p in model.parameters())


def test_module_to_a_bad_device_changes_nothing():
    model = nn.Linear(2, 2)
    with pytest.raises(RuntimeError, match="Expected one of cpu, cuda device type"):
        model.to("tpu")
    assert all(not p.is_cuda for p in model.parameters())


@pytest.mark.parametrize("make", [
    lambda p: numgrad.optim.Adam(p, lr=0.01, weight_decay=0.1),
    lambda p: numgrad.optim.AdamW(p, lr=0.01, amsgrad=True),
    lambda p: numgrad.optim.RMSprop(p, lr=0.01, centered=True),
    lambda p: numgrad.optim.Adagrad(p, lr=0.1, lr_decay=0.01),
], ids=["adam", "adamw-amsgrad", "rmsprop", "adagrad-decay"])
def test_optimizers_step_cuda_parameters_as_cpu_ones(make):
    """Their step count (and the bias corrections made from it) lives on the parameter's device,
    so nothing mixes the devices; the steps equal the CPU's, and a state saved on the CPU loads
    onto CUDA parameters (moved to their device, ``step`` too)."""
    values = np.linspace(-1, 1, 6).reshape(2, 3)
    params, opts = [], []
    for device in ("cpu", "cuda"):
        p = numgrad.tensor(values, device=device, requires_grad=True)
        params.append(p)
        opts.append(make([p]))
        for _ in range(3):
            opts[-1].zero_grad()
            (p * p * p).sum().backward()
            opts[-1].step()
    assert all(v.is_cuda for v in opts[1].state[params[1]].values())
    np.testing.assert_allclose(params[1].detach().cpu().numpy(), params[0].detach().numpy(),
                               rtol=1e-12, atol=1e-15)
    moved = make([params[1]])
    moved.load_state_dict(opts[0].state_dict())
    assert all(v.is_cuda for v in moved.state[params[1]].values())
    (params[1] * 2).sum().backward()
    moved.step()  # (no device mixed)
