"""Checkpoints crossing between numgrad and PyTorch 2.13 in both directions, with no PyTorch inside
numgrad: torch.save -> numgrad.load and numgrad.save -> torch.load(weights_only=True), for state
dicts of a CNN, an LSTM, a Transformer layer and BatchNorm buffers, optimizer state dicts, nested
containers, views sharing storage, every dtype numgrad has; mmap; the malicious pickle (refused,
nothing runs); damaged and truncated zips (a clear error)."""
import collections
import io
import os
import pickle
import subprocess
import sys
import zipfile

import numpy as np
import pytest
import torch

import numgrad
from numgrad import nn

DTYPES = ["float32", "float64", "float16", "bfloat16", "complex64", "complex128", "int64", "int32",
          "int16", "int8", "uint8", "bool"]


def _to_numgrad(path_or_buffer, **kwargs):
    if isinstance(path_or_buffer, io.BytesIO):
        path_or_buffer.seek(0)
    return numgrad.load(path_or_buffer, **kwargs)


def _torch_saved(obj):
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    buffer.seek(0)
    return buffer


def _numgrad_saved(obj):
    buffer = io.BytesIO()
    numgrad.save(obj, buffer)
    buffer.seek(0)
    return buffer


def _same(ours, theirs, path="root"):
    """``ours`` (numgrad) and ``theirs`` (PyTorch) hold the same structure, values, dtypes,
    shapes and strides."""
    if isinstance(theirs, torch.Tensor):
        assert isinstance(ours, numgrad.Tensor), path
        assert isinstance(ours, nn.Parameter) == isinstance(theirs, torch.nn.Parameter), path
        assert str(ours.dtype).split(".")[1] == str(theirs.dtype).split(".")[1], path
        assert tuple(ours.shape) == tuple(theirs.shape), path
        assert ours.stride() == theirs.stride(), path
        assert ours.storage_offset() == theirs.storage_offset(), path
        assert ours.requires_grad == theirs.requires_grad, path
        if theirs.dtype == torch.bfloat16:  # (NumPy has none: read through float32, exactly)
            ours, theirs = ours.float(), theirs.float()
        np.testing.assert_array_equal(ours.detach().numpy(), theirs.detach().numpy())
        return
    if isinstance(theirs, torch.dtype):
        assert str(ours).split(".")[1] == str(theirs).split(".")[1], path
        return
    if isinstance(theirs, torch.device):
        assert str(ours) == str(theirs), path
        return
    if isinstance(theirs, torch.Size):
        assert type(ours) is numgrad.Size and tuple(ours) == tuple(theirs), path
        return
    assert type(ours) is type(theirs), (path, type(ours), type(theirs))
    if isinstance(theirs, dict):
        assert list(ours) == list(theirs), path
        for k in theirs:
            _same(ours[k], theirs[k], f"{path}[{k!r}]")
    elif isinstance(theirs, (list, tuple)):
        assert len(ours) == len(theirs), path
        for i, (a, b) in enumerate(zip(ours, theirs)):
            _same(a, b, f"{path}[{i}]")
    else:
        assert ours == theirs or (ours != ours and theirs != theirs), path


def _both_ways(make_torch):
    """PyTorch's object to numgrad through torch.save, and back through numgrad.save."""
    theirs = make_torch()
    ours = _to_numgrad(_torch_saved(theirs))
    _same(ours, theirs)
    back = torch.load(_numgrad_saved(ours), weights_only=True)
    _same(ours, back)
    return ours, back


def _models():
    torch.manual_seed(0)
    cnn = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4), torch.nn.ReLU(),
                              torch.nn.Flatten(), torch.nn.Linear(4 * 6 * 6, 5))
    cnn.train()
    cnn(torch.randn(2, 3, 8, 8))  # (BatchNorm's running stats and num_batches_tracked move)
    return {
        "cnn": (cnn, lambda: nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU(),
                                           nn.Flatten(), nn.Linear(4 * 6 * 6, 5)),
                (2, 3, 8, 8)),
        "lstm": (torch.nn.LSTM(4, 6, num_layers=2, batch_first=True),
                 lambda: nn.LSTM(4, 6, num_layers=2, batch_first=True), (2, 5, 4)),
        "transformer": (torch.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0,
                                                         batch_first=True),
                        lambda: nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0,
                                                           batch_first=True), (2, 3, 8)),
    }


@pytest.mark.parametrize("name", ["cnn", "lstm", "transformer"])
def test_model_state_dicts_both_ways(name, tmp_path):
    theirs, make, shape = _models()[name]
    theirs.eval()
    path = tmp_path / f"{name}.pt"
    torch.save(theirs.state_dict(), path)
    state = numgrad.load(path)
    assert type(state) is collections.OrderedDict
    _same(state, theirs.state_dict())
    ours = make()
    ours.load_state_dict(state)
    ours.eval()
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    with torch.no_grad():
        want = theirs(torch.from_numpy(x))
    got = ours(numgrad.tensor(x))
    if name == "lstm":
        want, got = want[0], got[0]
    np.testing.assert_allclose(got.detach().numpy(), want.numpy(), rtol=1e-5, atol=1e-6)
    back = tmp_path / f"{name}_numgrad.pt"
    numgrad.save(ours.state_dict(), back)
    loaded = torch.load(back, weights_only=True)
    _same(ours.state_dict(), loaded)
    fresh = _models()[name][0]
    fresh.load_state_dict(loaded)
    fresh.eval()
    with torch.no_grad():
        again = fresh(torch.from_numpy(x))
    np.testing.assert_array_equal((again[0] if name == "lstm" else again).numpy(), want.numpy())
    if name == "cnn":
        assert state["1.num_batches_tracked"].dtype is numgrad.int64
        assert state["1.num_batches_tracked"].item() == 1


def test_optimizer_state_dicts_and_nested_containers():
    def make():
        torch.manual_seed(0)
        model = torch.nn.Linear(3, 2)
        opt = torch.optim.Adam(model.parameters(), lr=0.01, amsgrad=True)
        model(torch.randn(4, 3)).sum().backward()
        opt.step()
        return {
            "model": model.state_dict(), "optimizer": opt.state_dict(), "epoch": 3,
            "nested": {"list": [torch.arange(3), (torch.ones(2, dtype=torch.float64), None)],
                       "ordered": collections.OrderedDict(b=1.5, a=torch.tensor(True)),
                       7: "int key", "set": {1, 2}, "bytes": b"\x00\xff", "complex": 1 + 2j,
                       "big": 2**80, "counter": collections.Counter("aab")},
            "dtype": torch.float64, "device": torch.device("cpu"), "size": torch.Size([2, 3]),
            "param": torch.nn.Parameter(torch.ones(2)),
            "frozen": torch.nn.Parameter(torch.zeros(1), requires_grad=False),
            "leaf": torch.ones(2, requires_grad=True),
        }

    ours, back = _both_ways(make)
    assert ours["dtype"] is numgrad.float64 and ours["device"] == numgrad.device("cpu")
    assert back["dtype"] is torch.float64
    # the numgrad optimizer resumes from PyTorch's state
    model = nn.Linear(3, 2)
    model.load_state_dict(ours["model"])
    opt = numgrad.optim.Adam(model.parameters(), lr=0.01, amsgrad=True)
    opt.load_state_dict(ours["optimizer"])
    assert opt.state_dict()["state"][0]["step"].item() == 1


def test_views_share_storage_both_ways():
    def make():
        x = torch.arange(24.0).reshape(4, 6)
        return {"x": x, "row": x[2], "cols": x[:, 1::2], "t": x.t(), "flat": x.view(-1)[5:9],
                "empty": x[:, :0], "other": torch.arange(3)}

    ours, back = _both_ways(make)
    ours["row"][0] = -1.0  # one storage again: a write through one is seen by the others
    assert ours["x"][2, 0].item() == -1.0 and ours["t"][0, 2].item() == -1.0
    back["cols"][0, 0] = -5.0
    assert back["x"][0, 1].item() == -5.0 and back["flat"].untyped_storage().data_ptr() == \
        back["x"].untyped_storage().data_ptr()
    # numgrad's own views (not from PyTorch) are saved over one storage too
    x = numgrad.arange(10.0)
    theirs = torch.load(_numgrad_saved([x, x[3:7], x[::3]]), weights_only=True)
    assert theirs[1].storage_offset() == 3 and theirs[2].stride() == (3,)
    theirs[1][0] = 100.0
    assert theirs[0][3].item() == 100.0 and theirs[2][1].item() == 100.0
    assert len({t.untyped_storage().data_ptr() for t in theirs}) == 1


@pytest.mark.parametrize("dtype", DTYPES)
def test_every_dtype_both_ways(dtype):
    def make():
        base = torch.arange(-6, 6).reshape(3, 4)
        t = (base % 3 == 0) if dtype == "bool" else base.to(getattr(torch, dtype))
        if dtype.startswith("complex"):
            t = t + 1j * t.flip(0)
        return {"t": t, "T": t.t(), "0d": t[1, 2], "dtype": t.dtype}

    ours, _ = _both_ways(make)
    assert ours["t"].dtype is getattr(numgrad, dtype)


def test_dtypes_numgrad_lacks_are_named():
    path = _torch_saved({"h": torch.ones(2, dtype=torch.uint16), "dtype": torch.float8_e4m3fn})
    with pytest.raises(TypeError, match="holds a tensor of dtype torch.uint16, which numgrad "
                                        "does not have"):
        _to_numgrad(path)
    assert repr(_to_numgrad(_torch_saved({"dtype": torch.float8_e4m3fn}))["dtype"]) == \
        "torch.float8_e4m3fn"


def test_mmap_and_map_location(tmp_path):
    path = tmp_path / "w.pt"
    x = torch.arange(12.0).reshape(3, 4)
    torch.save({"x": x, "row": x[1]}, path)
    out = numgrad.load(path, mmap=True, map_location="cpu")
    np.testing.assert_array_equal(out["x"].numpy(), x.numpy())
    out["row"][0] = 50.0  # copy-on-write, as torch.load(mmap=True): the file is not changed
    assert out["x"][1, 0].item() == 50.0
    assert numgrad.load(path)["x"][1, 0].item() == 4.0
    assert numgrad.load(path, map_location=lambda storage, loc: storage)["x"].shape == (3, 4)
    # numgrad's records are 64-byte aligned, as PyTorch's: torch.load(mmap=True) reads them
    numgrad.save({"w": numgrad.ones(5), "b": numgrad.arange(3)}, tmp_path / "n.pt")
    with zipfile.ZipFile(tmp_path / "n.pt") as zf:
        raw = (tmp_path / "n.pt").read_bytes()
        for info in zf.infolist():
            n, m = int.from_bytes(raw[info.header_offset + 26:info.header_offset + 28], "little"), \
                int.from_bytes(raw[info.header_offset + 28:info.header_offset + 30], "little")
            assert (info.header_offset + 30 + n + m) % 64 == 0, info.filename
        assert {i.filename for i in zf.infolist()} >= {"n/data.pkl", "n/byteorder", "n/version",
                                                       "n/data/0", "n/data/1"}
    mapped = torch.load(tmp_path / "n.pt", mmap=True, weights_only=True)
    assert mapped["w"].tolist() == [1.0] * 5 and mapped["b"].tolist() == [0, 1, 2]
    with pytest.raises(ValueError, match="f must be a file path"):
        numgrad.load(io.BytesIO(path.read_bytes()), mmap=True)


class _Exploit:
    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def test_malicious_pickle_is_refused_and_nothing_runs(tmp_path):
    marker = tmp_path / "pwned"
    path = tmp_path / "evil.pt"
    torch.save({"weights": torch.ones(2), "payload": _Exploit(marker)}, path)
    with pytest.raises(pickle.UnpicklingError) as got:
        numgrad.load(path)
    with pytest.raises(pickle.UnpicklingError) as want:
        torch.load(path, weights_only=True)
    assert not marker.exists()
    assert str(got.value).startswith("Weights only load failed.")
    assert "Trying to load unsupported GLOBAL posix.system whose module posix is blocked." in str(
        got.value) and "posix.system whose module posix is blocked" in str(want.value)
    # a global that is not blocked but not allowed either: PyTorch's message too
    honest = tmp_path / "custom.pt"
    torch.save({"c": collections.defaultdict(int)}, honest)
    with pytest.raises(pickle.UnpicklingError, match="GLOBAL collections.defaultdict was not an "
                                                     "allowed global by default"):
        numgrad.load(honest)
    assert numgrad.load(honest, weights_only=False)["c"] == {}


def test_damaged_and_truncated_zips(tmp_path):
    path = tmp_path / "ok.pt"
    numgrad.save({"w": numgrad.arange(100.0)}, path)
    raw = path.read_bytes()
    truncated = tmp_path / "truncated.pt"
    truncated.write_bytes(raw[: len(raw) // 2])
    with pytest.raises(RuntimeError, match="truncated.pt' is a damaged checkpoint: it starts as a "
                                           "zip archive but its end .* is missing"):
        numgrad.load(truncated)
    corrupted = bytearray(raw)
    with zipfile.ZipFile(path) as zf:
        info = zf.getinfo("ok/data/0")
    corrupted[info.header_offset + 200] ^= 0xFF  # (inside the storage's bytes)
    bad = tmp_path / "corrupted.pt"
    bad.write_bytes(bytes(corrupted))
    with pytest.raises(RuntimeError, match=r"corrupted.pt' is a damaged PyTorch checkpoint: "
                                           r"ok/data/0 cannot be read \(Bad CRC-32"):
        numgrad.load(bad)
    corrupted = bytearray(raw)
    with zipfile.ZipFile(path) as zf:
        info = zf.getinfo("ok/data.pkl")
    start = raw.index(b"\x80\x02", info.header_offset)
    corrupted[start + 1: start + 40] = b"\x00" * 39
    bad.write_bytes(bytes(corrupted))
    with pytest.raises(RuntimeError, match="damaged"):
        numgrad.load(bad)


def test_earlier_numgrad_files_still_load(tmp_path):
    path = tmp_path / "old.pt"
    numgrad.serialization._save_v1({"w": numgrad.arange(3.0), "n": 2}, path)
    out = numgrad.load(path)
    assert out["w"].tolist() == [0.0, 1.0, 2.0] and out["n"] == 2


_NO_TORCH = """
import io, sys
import numgrad
buffer = io.BytesIO()
numgrad.save({"w": numgrad.ones(2), "p": numgrad.nn.Parameter(numgrad.zeros(1))}, buffer)
buffer.seek(0)
out = numgrad.load(buffer)
assert out["w"].tolist() == [1.0, 1.0] and type(out["p"]) is numgrad.nn.Parameter
assert "torch" not in sys.modules, "numgrad imported torch"
print("ok")
"""


def test_save_and_load_never_import_torch():
    done = subprocess.run([sys.executable, "-c", _NO_TORCH], capture_output=True, text=True,
                          timeout=120, env=dict(os.environ, NUMGRAD_QUIET="1"))
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr


def test_legacy_format(tmp_path):
    x = torch.arange(6.0).reshape(2, 3)
    path = tmp_path / "legacy.pt"
    torch.save({"x": x, "row": x[1], "p": torch.nn.Parameter(torch.ones(2))}, path,
               _use_new_zipfile_serialization=False)
    out = numgrad.load(path)
    _same(out, torch.load(path, weights_only=True))
    out["row"][0] = 9.0
    assert out["x"][1, 0].item() == 9.0
    marker = tmp_path / "pwned"
    torch.save({"payload": _Exploit(marker)}, tmp_path / "evil.pt",
               _use_new_zipfile_serialization=False)
    with pytest.raises(pickle.UnpicklingError, match="posix.system whose module posix is blocked"):
        numgrad.load(tmp_path / "evil.pt")
    assert not marker.exists()
