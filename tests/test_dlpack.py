"""DLPack and the array protocols: numgrad tensors shared with NumPy and PyTorch without a copy (a
write through each side is seen by the other), numgrad.from_dlpack and numgrad.utils.dlpack as
PyTorch's, version counters as PyTorch keeps them, refusals in PyTorch's words; CUDA tensors under
the simulator through __cuda_array_interface__."""
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

import numgrad
from numgrad.utils import dlpack


def test_numpy_shares_memory_both_ways():
    t = numgrad.arange(6.0).reshape(2, 3)
    a = np.from_dlpack(t)
    assert a.dtype == np.float32 and a.shape == (2, 3)
    a[0, 1] = 10.0  # NumPy's write is seen by numgrad
    assert t[0, 1].item() == 10.0
    t[1, 2] = -1.0  # numgrad's write is seen by NumPy
    assert a[1, 2] == -1.0
    view = t.T[1:]  # strided views export their strides
    assert np.from_dlpack(view).strides == view.numpy().strides
    b = np.arange(4, dtype=np.int64)
    u = numgrad.from_dlpack(b)
    b[0] = 7
    u.add_(1)
    assert u.tolist() == [8, 2, 3, 4] and b.tolist() == [8, 2, 3, 4]
    assert u.dtype is numgrad.int64 and u._version == 1


def test_torch_shares_memory_both_ways():
    t = numgrad.zeros(3)
    p = torch.from_dlpack(t)
    p[0] = 5.0
    assert t.tolist() == [5.0, 0.0, 0.0]
    t[2] = 7.0
    assert p.tolist() == [5.0, 0.0, 7.0]
    theirs = torch.arange(4, dtype=torch.int32)
    ours = numgrad.from_dlpack(theirs)
    theirs[1] = 40
    ours[3] = 30
    assert ours.tolist() == [0, 40, 2, 30] and theirs.tolist() == [0, 40, 2, 30]
    # legacy capsules, as torch.utils.dlpack's, both ways
    q = torch.utils.dlpack.from_dlpack(dlpack.to_dlpack(t))
    q[1] = 1.0
    assert t[1].item() == 1.0
    r = dlpack.from_dlpack(torch.utils.dlpack.to_dlpack(theirs))
    r[0] = -9
    assert theirs[0].item() == -9


def test_version_counters_as_torch():
    # PyTorch: the imported tensor has a counter of its own; an in-place op bumps only its own
    t_src = torch.zeros(3)
    t_dst = torch.from_dlpack(t_src)
    t_dst.add_(1)
    src = numgrad.zeros(3)
    dst = numgrad.from_dlpack(src)
    dst.add_(1)
    assert (src._version, dst._version) == (t_src._version, t_dst._version) == (0, 1)
    assert src.tolist() == [1.0, 1.0, 1.0]


def test_protocol_details_as_torch():
    t = numgrad.ones(2)
    assert t.__dlpack_device__() == (dlpack.DLDeviceType.kDLCPU, 0)
    assert torch.ones(2).__dlpack_device__() == (1, 0)
    # versioned capsules when the consumer asks for DLPack >= 1.0
    versioned = t.__dlpack__(max_version=(1, 0))
    assert type(versioned).__name__ == "PyCapsule"
    copied = numgrad.from_dlpack(t, copy=True)
    copied[0] = 3.0
    assert t[0].item() == 1.0
    a = np.from_dlpack(t, copy=True)
    a[0] = 4.0
    assert t[0].item() == 1.0
    g = numgrad.ones(2, requires_grad=True)
    with pytest.raises(BufferError) as want:
        torch.ones(2, requires_grad=True).__dlpack__()
    with pytest.raises(BufferError) as got:
        g.__dlpack__()
    assert str(got.value) == str(want.value)
    np.from_dlpack(g.detach())  # (detached: fine)
    with pytest.raises(TypeError, match="can't convert np.ndarray of type numpy.uint16"):
        numgrad.from_dlpack(np.zeros(2, np.uint16))
    with pytest.raises(TypeError, match="expected an object with __dlpack__"):
        numgrad.from_dlpack([1, 2])


_CUDA_SCRIPT = """
import numgrad
from numgrad.utils.dlpack import DLDeviceType
t = numgrad.arange(4.0, device="cuda")
assert t.__dlpack_device__() == (DLDeviceType.kDLCUDA, 0)
try:
    t.__dlpack__()
    raise SystemExit("no BufferError")
except BufferError as e:
    assert "__cuda_array_interface__" in str(e)
class Foreign:  # another library's CUDA array: DLPack says CUDA, memory through the interface
    def __init__(self, a):
        self.a = a
        self.__cuda_array_interface__ = a.__cuda_array_interface__
    def __dlpack__(self, **kw):
        raise BufferError("not used")
    def __dlpack_device__(self):
        return (2, 0)
source = numgrad.arange(3.0, device="cuda")  # (the simulator's exporter: numgrad's own)
u = numgrad.from_dlpack(Foreign(source))
assert u.is_cuda and u.tolist() == [0.0, 1.0, 2.0]
u.add_(1.0)
assert source.tolist() == [1.0, 2.0, 3.0]
print("ok")
"""


def test_cuda_under_the_simulator():
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1", NUMGRAD_QUIET="1")
    done = subprocess.run([sys.executable, "-c", _CUDA_SCRIPT], env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr


def test_a_torch_tensor_is_read_through_dlpack_once_dispatch_is_on():
    """PyTorch's own tensors do not take part in numgrad's ``__torch_function__`` dispatch (their
    method calls the function again under PyTorch's switch, which would recurse): once a
    tensor-like has turned dispatch on, ``from_dlpack`` of a torch tensor still reads it."""
    class Like:
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            return "dispatched"

    assert numgrad.add(Like(), 1) == "dispatched"
    theirs = torch.arange(3)
    ours = numgrad.from_dlpack(theirs)
    theirs[0] = 9
    assert ours.tolist() == [9, 1, 2]
