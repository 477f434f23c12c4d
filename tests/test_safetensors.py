"""numgrad.safetensors, as safetensors.torch: files and bytes round-trip with the safetensors
package (PyTorch's tensors on its side), metadata, safe_open, and damaged files refused."""
import numpy as np
import pytest
import torch

import numgrad
from numgrad import safetensors as st

st_torch = pytest.importorskip("safetensors.torch")


def _ours():
    x = numgrad.arange(12.0).reshape(3, 4)
    return {"w": x, "wT": x.T, "b": numgrad.tensor([1, 2], dtype=numgrad.int32),
            "i": numgrad.arange(3), "d": numgrad.ones(2, dtype=numgrad.float64),
            "m": numgrad.tensor([True, False]), "s": numgrad.tensor(2.5), "e": numgrad.zeros(0, 3)}


def test_round_trips_with_safetensors_torch(tmp_path):
    ours = _ours()
    path = tmp_path / "n.safetensors"
    st.save_file(ours, path, metadata={"format": "pt"})
    theirs = st_torch.load_file(path)
    assert sorted(theirs) == sorted(ours)
    for k, t in ours.items():
        assert str(theirs[k].dtype)[6:] == str(t.dtype)[8:] and tuple(theirs[k].shape) == t.shape
        np.testing.assert_array_equal(theirs[k].numpy(), t.numpy())
    assert st_torch.load(st.save(ours)).keys() == theirs.keys()
    back = tmp_path / "t.safetensors"
    st_torch.save_file(theirs, back, metadata={"step": "3"})
    again = st.load_file(back)
    for k, t in ours.items():
        assert again[k].dtype is t.dtype
        np.testing.assert_array_equal(again[k].numpy(), t.numpy())
    assert st.load(st_torch.save(theirs))["w"].tolist() == ours["w"].tolist()
    with st.safe_open(back, framework="pt") as f:
        assert f.keys() == sorted(ours) and f.metadata() == {"step": "3"}
        assert f.get_slice("w").get_shape() == [3, 4] and f.get_slice("w")[1:].shape == (2, 4)
        assert f.get_tensor("i").tolist() == [0, 1, 2]
    # numgrad's own file read by the package's safe_open, metadata included
    with st_torch.safe_open(path, framework="pt") as f:
        assert f.metadata() == {"format": "pt"} and f.get_tensor("m").tolist() == [True, False]


def test_refusals(tmp_path):
    path = tmp_path / "h.safetensors"
    st_torch.save_file({"h": torch.ones(2, dtype=torch.uint16)}, path)
    with pytest.raises(TypeError, match="uint16 .U16., which numgrad does not have"):
        st.load_file(path)
    good = st.save({"w": numgrad.ones(4)})
    with pytest.raises(st.SafetensorError, match="truncated"):
        st.load(good[:-20][:10])
    with pytest.raises(st.SafetensorError, match="outside"):
        st.load(good[:-4])
    with pytest.raises(st.SafetensorError, match="not JSON"):
        st.load(good[:8] + b"x" + good[9:])
    with pytest.raises(ValueError, match="expected numgrad.Tensor"):
        st.save({"w": np.ones(2)})
