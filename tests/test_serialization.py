"""numgrad.save / numgrad.load: round trips of tensors of every dtype and layout, of module and
optimizer state dicts and of plain nested data, paths and file objects, map_location; and safety:
the default (weights_only=True) allows only PyTorch's weights-only globals, crafted files that
would run code are refused without running it, files of earlier numgrad releases (made here with
serialization._save_v1) still load, and other files get a clear error. The exchange with PyTorch
itself is tests/test_checkpoint_interop.py. PyTorch is the
reference for behaviours it shares (what a loaded tensor is, the structures, the error texts)."""
import collections
import io
import json
import math
import os
import pickle
import zipfile

import numpy as np
import pytest
import torch

import numgrad
from numgrad import nn


def _roundtrip(obj, **load_kwargs):
    buffer = io.BytesIO()
    numgrad.save(obj, buffer)
    buffer.seek(0)
    return numgrad.load(buffer, **load_kwargs)


def _torch_roundtrip(obj):
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    buffer.seek(0)
    return torch.load(buffer)


def _tensors(dtype):
    base = np.arange(24).reshape(4, 6)
    if dtype is numgrad.bool:
        base = base % 3 == 0
    x = numgrad.tensor(base.astype(dtype.np))
    return {
        "matrix": x, "zero_d": x[1, 2], "empty": x[:0], "empty_2d": x[:, :0],
        "transposed": x.T, "strided": x[::2, 1::3], "row": x[2],
    }


@pytest.mark.parametrize("dtype", [numgrad.float32, numgrad.float64, numgrad.int64,
                                   numgrad.int32, numgrad.bool], ids=str)
def test_tensor_roundtrip_every_dtype_and_layout(dtype):
    tensors = _tensors(dtype)
    assert not tensors["transposed"].is_contiguous() and not tensors["strided"].is_contiguous()
    for name, t in tensors.items():
        out = _roundtrip(t)
        assert type(out) is numgrad.Tensor, name
        assert out.dtype is dtype and out.shape == t.shape, name
        assert out.requires_grad is False and out.is_leaf, name
        np.testing.assert_array_equal(out.numpy(), t.numpy())
        assert out.stride() == t.stride() and out.storage_offset() == t.storage_offset(), name
    loaded = _roundtrip(tensors)
    assert list(loaded) == list(tensors)
    for name, t in tensors.items():
        np.testing.assert_array_equal(loaded[name].numpy(), t.numpy())


def test_views_load_sharing_storage():
    x = numgrad.arange(6.0)
    view = x[2:4]
    a, b = _roundtrip([x, view])
    b.add_(1.0)
    assert a.tolist() == [0.0, 1.0, 3.0, 4.0, 4.0, 5.0] and b.tolist() == [3.0, 4.0]
    assert b.storage_offset() == 2
    same = _roundtrip([x, x, {"again": x}])  # one object saved twice loads as one object
    assert same[0] is same[1] is same[2]["again"]


def test_requires_grad_and_parameters_as_torch():
    leaf = numgrad.randn(3, requires_grad=True)
    nonleaf = leaf * 2
    param = nn.Parameter(numgrad.randn(2, 2))
    frozen = nn.Parameter(numgrad.randn(2), requires_grad=False)
    ours = _roundtrip({"leaf": leaf, "nonleaf": nonleaf, "param": param, "frozen": frozen})
    t_leaf = torch.randn(3, requires_grad=True)
    theirs = _torch_roundtrip({"leaf": t_leaf, "nonleaf": t_leaf * 2,
                               "param": torch.nn.Parameter(torch.randn(2, 2)),
                               "frozen": torch.nn.Parameter(torch.randn(2), requires_grad=False)})
    for key in ours:
        a, b = ours[key], theirs[key]
        assert (a.requires_grad, a.is_leaf, a.grad_fn is None) == (
            b.requires_grad, b.is_leaf, b.grad_fn is None), key
        assert isinstance(a, nn.Parameter) == isinstance(b, torch.nn.Parameter), key
    np.testing.assert_array_equal(ours["nonleaf"].detach().numpy(), nonleaf.detach().numpy())
    ours["leaf"].sum().backward()
    assert ours["leaf"].grad.tolist() == [1.0, 1.0, 1.0]


def _net():
    return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))


def test_model_state_dict_into_a_fresh_model(tmp_path):
    numgrad.manual_seed(0)
    model = _net()
    x = numgrad.randn(5, 4)
    path = tmp_path / "model.pt"
    numgrad.save(model.state_dict(), path)
    state = numgrad.load(path)
    assert type(state) is collections.OrderedDict
    assert list(state) == list(model.state_dict())
    t_state = _torch_roundtrip(torch.nn.Sequential(
        torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3)).state_dict())
    assert list(state) == list(t_state) and type(t_state) is collections.OrderedDict
    for key in state:
        assert type(state[key]) is numgrad.Tensor and not state[key].requires_grad
        assert type(t_state[key]) is torch.Tensor and not t_state[key].requires_grad
    fresh = _net()
    assert not np.array_equal(fresh(x).detach().numpy(), model(x).detach().numpy())
    fresh.load_state_dict(state)
    np.testing.assert_array_equal(fresh(x).detach().numpy(), model(x).detach().numpy())
    numgrad.save(model.state_dict(), str(tmp_path / "as_str.pt"))  # a str path too
    assert list(numgrad.load(str(tmp_path / "as_str.pt"))) == list(state)


@pytest.mark.parametrize("make", [
    lambda ps: numgrad.optim.Adam(ps, lr=0.01, amsgrad=True),
    lambda ps: numgrad.optim.SGD(ps, lr=0.1, momentum=0.9, nesterov=True),
], ids=["Adam", "SGD"])
def test_optimizer_state_dict_resumes_training(make):
    numgrad.manual_seed(1)
    x, y = numgrad.randn(8, 4), numgrad.randn(8, 3)

    def train(model, opt, steps):
        for _ in range(steps):
            opt.zero_grad()
            nn.functional.mse_loss(model(x), y).backward()
            opt.step()

    model = _net()
    opt = make(model.parameters())
    train(model, opt, 3)
    buffer = io.BytesIO()
    numgrad.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "epoch": 3}, buffer)
    buffer.seek(0)
    checkpoint = numgrad.load(buffer)
    assert checkpoint["epoch"] == 3
    saved = opt.state_dict()
    loaded = checkpoint["optimizer"]
    assert loaded["param_groups"] == saved["param_groups"]  # numbers, tuples, None, lists
    assert list(loaded["state"]) == list(saved["state"]) == list(range(4))
    for index, state in saved["state"].items():
        assert list(loaded["state"][index]) == list(state)
    resumed = _net()
    resumed.load_state_dict(checkpoint["model"])
    resumed_opt = make(resumed.parameters())
    resumed_opt.load_state_dict(checkpoint["optimizer"])
    train(model, opt, 2)
    train(resumed, resumed_opt, 2)
    for a, b in zip(model.parameters(), resumed.parameters()):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())


def test_plain_data_roundtrip_as_torch():
    obj = {
        "none": None, "true": True, "int": 3, "big": 2**80, "neg": -7, "float": 0.1,
        "neg_zero": -0.0, "nan": float("nan"), "inf": float("inf"), "minus_inf": float("-inf"),
        "complex": 1 + 2j, "str": "ünïcode", "bytes": b"\x00\xff", "list": [1, [2, (3, "4")]],
        "tuple": (1.5, None), "empty": ([], (), {}), 7: "int key", (1, 2): "tuple key",
        1.5: "float key", None: "none key", "ordered": collections.OrderedDict(b=1, a=2),
        "nested": {"a": {"b": {"c": [numgrad.tensor([1, 2])]}}},
    }
    ours, theirs = _roundtrip(obj), _torch_roundtrip(obj | {
        "nested": {"a": {"b": {"c": [torch.tensor([1, 2])]}}}})

    def same(a, b):
        assert type(a) is type(b) or (isinstance(a, numgrad.Tensor) and isinstance(b, torch.Tensor))
        if isinstance(a, dict):
            assert list(a) == list(b)
            for k in a:
                same(a[k], b[k])
        elif isinstance(a, (list, tuple)):
            assert len(a) == len(b)
            for u, v in zip(a, b):
                same(u, v)
        elif isinstance(a, numgrad.Tensor):
            assert a.tolist() == b.tolist() and str(a.dtype)[8:] == str(b.dtype)[6:]
        elif isinstance(a, float) and math.isnan(a):
            assert math.isnan(b)
        else:
            assert a == b and repr(a) == repr(b)

    same(ours, theirs)
    assert ours["big"] == 2**80 and str(ours["neg_zero"]) == "-0.0"


def test_numpy_and_numgrad_values_roundtrip():
    obj = [np.arange(6, dtype=np.int16).reshape(2, 3).T, np.float32(2.5), np.bool_(True),
           np.array(3.0), np.zeros((0, 2), np.complex128), numgrad.float64, numgrad.int32,
           numgrad.bool, numgrad.device("cpu"), numgrad.Size([2, 3])]
    with pytest.raises(pickle.UnpicklingError, match="GLOBAL numpy.+was not an allowed global"):
        _roundtrip(obj)  # (NumPy's globals are not PyTorch's weights-only ones)
    out = _roundtrip(obj, weights_only=False)
    np.testing.assert_array_equal(out[0], obj[0])
    assert out[0].dtype == np.int16
    assert type(out[1]) is np.float32 and out[1] == 2.5 and type(out[2]) is np.bool_
    assert out[3].shape == () and out[4].shape == (0, 2) and out[4].dtype == np.complex128
    assert out[5] is numgrad.float64 and out[6] is numgrad.int32 and out[7] is numgrad.bool
    assert out[8] == numgrad.device("cpu") and type(out[9]) is numgrad.Size and out[9] == (2, 3)


class Custom:
    """A user's class: saved by pickling, loaded only with weights_only=False."""

    def __init__(self, tensor):
        self.tensor = tensor
        self.label = "custom"


def test_other_objects_need_weights_only_false():
    t = numgrad.tensor([1.0, 2.0])
    buffer = io.BytesIO()
    numgrad.save({"custom": Custom(t), "same": t, "set": {1, 2}}, buffer)
    buffer.seek(0)
    with pytest.raises(pickle.UnpicklingError) as want:
        torch.load(buffer, weights_only=True)
    for kwargs in ({}, {"weights_only": True}, {"weights_only": None}):
        buffer.seek(0)
        with pytest.raises(pickle.UnpicklingError) as e:
            numgrad.load(buffer, **kwargs)
        message = str(e.value)
        assert message.startswith("Weights only load failed. This file can still be loaded")
        assert f"GLOBAL {__name__}.Custom was not an allowed global" in message
        assert message == str(want.value).replace(
            torch.serialization.UNSAFE_MESSAGE, numgrad.serialization.UNSAFE_MESSAGE).replace(
            "torch.serialization", "numgrad.serialization").replace(
            "documentation of torch.load to learn more about types accepted by default with "
            "weights_only https://pytorch.org/docs/stable/generated/torch.load.html.",
            "documentation of numgrad.load to learn more about types accepted by default with "
            "weights_only (those of torch.load: "
            "https://pytorch.org/docs/stable/generated/torch.load.html).")
        assert torch.serialization.UNSAFE_MESSAGE.endswith(
            numgrad.serialization.UNSAFE_MESSAGE.replace("numgrad.load", "torch.load"))
    buffer.seek(0)
    with numgrad.serialization.safe_globals([Custom]):
        assert type(numgrad.load(buffer)["custom"]) is Custom
    buffer.seek(0)
    out = numgrad.load(buffer, weights_only=False)
    assert type(out["custom"]) is Custom and out["custom"].label == "custom"
    assert out["custom"].tensor is out["same"] and out["same"].tolist() == [1.0, 2.0]
    assert out["set"] == {1, 2}


def test_pickle_module_with_weights_only_is_refused_as_torch():
    buffer = io.BytesIO()
    numgrad.save(numgrad.zeros(1), buffer)
    with pytest.raises(RuntimeError) as want:
        torch.load(io.BytesIO(), pickle_module=pickle, weights_only=True)
    buffer.seek(0)
    with pytest.raises(RuntimeError) as got:
        numgrad.load(buffer, pickle_module=pickle, weights_only=True)
    assert str(got.value) == str(want.value)
    buffer.seek(0)
    assert numgrad.load(buffer, pickle_module=pickle, weights_only=False).tolist() == [0.0]


class _Exploit:
    """Unpickling this writes ``marker``: a stand-in for arbitrary code."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (exec, (f"open({self.marker!r}, 'w').write('ran')",))


def _crafted_checkpoint(header_changes, entries):
    """A zip laid out as numgrad.save's, with a changed header and extra entries."""
    buffer = io.BytesIO()
    numgrad.serialization._save_v1({"w": numgrad.ones(2)}, buffer)
    buffer.seek(0)
    with zipfile.ZipFile(buffer) as zf:
        files = {n: zf.read(n) for n in zf.namelist()}
    header = json.loads(files["numgrad/checkpoint.json"])
    header.update(header_changes)
    files["numgrad/checkpoint.json"] = json.dumps(header).encode()
    files.update(entries)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    out.seek(0)
    return out


def test_malicious_pickles_never_run(tmp_path):
    marker = tmp_path / "pwned"
    payload = pickle.dumps(_Exploit(marker))
    raw = tmp_path / "raw.pkl"
    raw.write_bytes(payload)
    for weights_only in (True, False):  # a plain pickle is not a numgrad checkpoint either way
        with pytest.raises(RuntimeError, match="is not a checkpoint .*: it is a pickle"):
            numgrad.load(raw, weights_only=weights_only)
    assert not marker.exists()
    objects = pickle.dumps([_Exploit(marker)])
    honest = _crafted_checkpoint({"root": {"$": "pickle", "index": 0}, "pickled": ["x.Exploit"]},
                                 {"numgrad/objects.pkl": objects})
    with pytest.raises(pickle.UnpicklingError, match="Weights only load failed"):
        numgrad.load(honest)
    lying = _crafted_checkpoint({"root": [{"$": "pickle", "index": 0}], "pickled": []},
                                {"numgrad/objects.pkl": objects})
    with pytest.raises(pickle.UnpicklingError, match="Weights only load failed"):
        numgrad.load(lying)
    object_array = io.BytesIO()
    np.save(object_array, np.array([_Exploit(marker)], dtype=object), allow_pickle=True)
    in_array = _crafted_checkpoint({}, {"numgrad/data/0.npy": object_array.getvalue()})
    with pytest.raises(RuntimeError, match="damaged numgrad checkpoint: numgrad/data/0.npy cannot "
                                           "be read .*allow_pickle=False"):
        numgrad.load(in_array)
    assert not marker.exists()
    honest.seek(0)
    numgrad.load(honest, weights_only=False)  # (the payload does run when the user says so)
    assert marker.read_text() == "ran"


def test_files_numgrad_did_not_write(tmp_path):
    cases = {
        "empty": (b"", "it is empty"),
        "text": (b"hello world", r"it is not a zip archive \(it starts with b'hello wo'\)"),
        "legacy": (pickle.dumps({"a": 1}, protocol=2), "it is a pickle"),
    }
    npy = io.BytesIO()
    np.save(npy, np.zeros(3))
    cases["npy"] = (npy.getvalue(), r"it is a NumPy .npy file")
    other_zip = io.BytesIO()
    with zipfile.ZipFile(other_zip, "w") as zf:
        zf.writestr("hello.txt", "hi")
    cases["zip"] = (other_zip.getvalue(), "it is a zip archive without a data.pkl record")
    for name, (content, message) in cases.items():
        path = tmp_path / name
        path.write_bytes(content)
        with pytest.raises(RuntimeError, match=message):
            numgrad.load(path)
        with pytest.raises(RuntimeError, match=message):
            numgrad.load(io.BytesIO(content))
    newer = _crafted_checkpoint({"version": 99}, {})
    with pytest.raises(RuntimeError, match="written by a newer numgrad"):
        numgrad.load(newer)
    damaged = _crafted_checkpoint({"tensors": [{"array": 0, "dtype": "float32", "shape": [3]}]}, {})
    with pytest.raises(RuntimeError, match=r"damaged .*float32\[2\] where the table says "
                                           r"float32\[3\]"):
        numgrad.load(damaged)


def test_file_objects():
    t = numgrad.arange(5)

    class Unseekable(io.RawIOBase):
        def __init__(self, data):
            self.inner = io.BytesIO(data)

        def readable(self):
            return True

        def readinto(self, b):
            return self.inner.readinto(b)

    buffer = io.BytesIO()
    numgrad.save(t, buffer)
    assert numgrad.load(Unseekable(buffer.getvalue())).tolist() == [0, 1, 2, 3, 4]
    prefixed = io.BytesIO(b"prefix" + buffer.getvalue())  # read from the current position
    prefixed.seek(6)
    assert numgrad.load(prefixed).tolist() == [0, 1, 2, 3, 4]
    with pytest.raises(TypeError, match="binary file object"):
        numgrad.save(t, io.StringIO())
    with pytest.raises(TypeError, match="must be a path"):
        numgrad.save(t, 3)
    with pytest.raises(TypeError, match="must be a path"):
        numgrad.load(3)
    loop = []
    loop.append(loop)
    with pytest.raises(ValueError, match="contains itself"):
        numgrad.save(loop, io.BytesIO())


def test_path_like_and_open_file(tmp_path):
    path = tmp_path / "t.pt"
    with open(path, "wb") as f:
        numgrad.save([numgrad.ones(2)], f)
    with open(path, "rb") as f:
        assert numgrad.load(f)[0].tolist() == [1.0, 1.0]
    assert numgrad.load(os.fspath(path))[0].tolist() == [1.0, 1.0]


def test_map_location():
    t = numgrad.tensor([1.0, 2.0])
    for location in ("cpu", numgrad.device("cpu"), {"cuda:0": "cpu"}):
        assert _roundtrip(t, map_location=location).device == numgrad.device("cpu")
    seen = []

    def mapper(tensor, location):
        seen.append((tensor.device, location))
        return tensor * 10

    assert _roundtrip(t, map_location=mapper).tolist() == [10.0, 20.0]
    assert seen == [(numgrad.device("cpu"), "cpu")]
    assert _roundtrip(t, map_location=lambda tensor, location: None).tolist() == [1.0, 2.0]
    on_cuda = _crafted_checkpoint({"root": {"$": "tensor", "index": 0}, "tensors": [
        {"array": 0, "dtype": "float32", "shape": [2], "requires_grad": False,
         "parameter": False, "device": "cuda:0"}]}, {})
    for location in ("cpu", {"cuda:0": "cpu"}, numgrad.device("cpu")):
        on_cuda.seek(0)
        assert numgrad.load(on_cuda, map_location=location).device == numgrad.device("cpu")
    if not numgrad.cuda.is_available():
        on_cuda.seek(0)
        with pytest.raises(RuntimeError) as e:
            numgrad.load(on_cuda)
        assert str(e.value) == (
            "Attempting to deserialize object on a CUDA device but "
            "numgrad.cuda.is_available() is False. If you are running on a CPU-only machine, "
            "please use numgrad.load with map_location=numgrad.device('cpu') to map your storages "
            "to the CPU.")


_CUDA_SCRIPT = """
import io, numgrad
t = numgrad.tensor([1.0, 2.0], device="cuda").requires_grad_()
p = numgrad.nn.Parameter(numgrad.ones(2, device="cuda"))
buffer = io.BytesIO()
numgrad.save({"t": t, "p": p}, buffer)
buffer.seek(0)
out = numgrad.load(buffer)
assert out["t"].is_cuda and out["t"].requires_grad and out["t"].tolist() == [1.0, 2.0]
assert out["p"].is_cuda and type(out["p"]) is numgrad.nn.Parameter
buffer.seek(0)
out = numgrad.load(buffer, map_location="cpu")
assert not out["t"].is_cuda and not out["p"].is_cuda and type(out["p"]) is numgrad.nn.Parameter
buffer = io.BytesIO()
numgrad.save(numgrad.arange(3.0), buffer)
buffer.seek(0)
assert numgrad.load(buffer, map_location={"cpu": "cuda"}).is_cuda
print("ok")
"""


def test_cuda_tensors_under_the_simulator():
    """CUDA tensors save from the device and load back onto it (or where map_location says),
    run under Numba's CUDA simulator in a subprocess (it must be chosen before numba-cuda loads)."""
    import subprocess
    import sys

    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1", NUMGRAD_QUIET="1")
    done = subprocess.run([sys.executable, "-c", _CUDA_SCRIPT], env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr
