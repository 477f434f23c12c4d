"""Issue 31 on CUDA tensors (the simulator): DataParallel on numgrad's one GPU (module and inputs
moved there, several devices refused), saved-tensor hooks and save_on_cpu (saved values kept on
the host, unpacked back to the device), and utils.checkpoint's recomputation on the device."""
import numpy as np
import pytest

import numgrad


def test_data_parallel_moves_the_module_and_inputs_to_the_gpu():
    net = numgrad.nn.Linear(3, 2).double()
    dp = numgrad.nn.DataParallel(net)
    assert (dp.device_ids, dp.output_device, dp.dim) == ([0], 0, 0)
    assert net.weight.is_cuda
    x = numgrad.tensor(np.arange(12.0).reshape(4, 3))
    y = dp(x)
    assert y.is_cuda
    y.sum().backward()
    assert net.weight.grad.is_cuda
    np.testing.assert_allclose(net.weight.grad.cpu().numpy(),
                               np.tile(np.arange(12.0).reshape(4, 3).sum(0), (2, 1)))
    assert list(dp.state_dict()) == ["module.weight", "module.bias"]
    with pytest.raises(RuntimeError, match="runs on one device"):
        numgrad.nn.DataParallel(numgrad.nn.Linear(2, 1), device_ids=[0, 1])
    out = numgrad.nn.parallel.data_parallel(dp.module, x)
    assert out.is_cuda


def test_save_on_cpu_keeps_saved_values_on_the_host():
    seen = []
    values = np.linspace(-1.0, 1.0, 6)
    x = numgrad.tensor(values, device="cuda", requires_grad=True)

    def pack(t):
        seen.append(t.is_cuda)
        return t.device, t.cpu()

    def unpack(packed):
        device, t = packed
        assert not t.is_cuda
        return t.to(device)

    with numgrad.autograd.graph.saved_tensors_hooks(pack, unpack):
        y = (x.sin() * x).sum()
    y.backward()
    assert seen and all(seen)
    np.testing.assert_allclose(x.grad.cpu().numpy(), np.cos(values) * values + np.sin(values))
    x.grad = None
    with numgrad.autograd.graph.save_on_cpu():
        y = (x.exp() * x).sum()
    y.backward()
    assert x.grad.is_cuda
    np.testing.assert_allclose(x.grad.cpu().numpy(), np.exp(values) * (values + 1))


def test_checkpoint_recomputes_on_the_device():
    values = np.arange(6.0) / 4
    w = numgrad.tensor(values, device="cuda", requires_grad=True)
    for reentrant in (False, True):
        w.grad = None
        y = numgrad.utils.checkpoint.checkpoint(lambda t: (t * t).exp(), w,
                                                use_reentrant=reentrant)
        y.sum().backward()
        assert w.grad.is_cuda
        np.testing.assert_allclose(w.grad.cpu().numpy(), 2 * values * np.exp(values ** 2))
