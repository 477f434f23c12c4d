"""``numgrad.safetensors``: Hugging Face's safetensors files, as ``safetensors.torch`` reads and
writes them (``save_file``, ``load_file``, ``safe_open``, ``save``, ``load``), implemented here
(the ``safetensors`` package is not needed; files round-trip with it).

The format: an 8-byte little-endian header length ``N``; ``N`` bytes of JSON (padded with spaces
to a multiple of 8), mapping each tensor's name to ``{"dtype": "F32", "shape": [...],
"data_offsets": [begin, end]}`` (offsets into the data that follows) and ``"__metadata__"`` to a
dict of strings; then the tensors' bytes, C-contiguous and little-endian. Loading runs no code
from the file: it parses JSON and copies bytes.
"""
from __future__ import annotations

import json
import os
import struct
import sys

import numpy as np

from ._dtype import _BY_NAME
from .creation import from_numpy
from .tensor import Tensor

__all__ = ["SafetensorError", "load", "load_file", "safe_open", "save", "save_file"]

_CODES = {"float32": "F32", "float64": "F64", "int64": "I64", "int32": "I32", "bool": "BOOL",
          "float16": "F16", "bfloat16": "BF16", "int8": "I8", "uint8": "U8", "int16": "I16",
          "complex64": "C64"}
_NAMES = {v: k for k, v in _CODES.items()}
_OTHER = {"U16": "uint16", "U32": "uint32", "U64": "uint64", "F8_E4M3": "float8_e4m3fn",
          "F8_E5M2": "float8_e5m2"}
_MAX_HEADER = 100_000_000


class SafetensorError(Exception):
    """A file or buffer that is not a valid safetensors file (``safetensors.SafetensorError``)."""


def _tensor_bytes(name, t) -> tuple[str, list[int], np.ndarray]:
    if not isinstance(t, Tensor):
        raise ValueError(f"Key `{name}` is invalid, expected numgrad.Tensor but received "
                         f"{type(t)}")
    data = t.detach()._host()
    if t.dtype.name not in _CODES:  # (complex128: safetensors has no code for it)
        raise TypeError(f"tensor {name!r} is of dtype {t.dtype.name}, which safetensors cannot "
                        "hold")
    code = _CODES[t.dtype.name]
    a = data.copy(order="C") if not data.flags.c_contiguous else data
    if a.dtype.byteorder == ">" or (a.dtype.byteorder == "=" and sys.byteorder == "big"):
        a = a.astype(a.dtype.newbyteorder("<"))
    return code, list(data.shape), a.reshape(-1).view(np.uint8)


def save(tensors: dict, metadata: dict | None = None) -> bytes:
    """The bytes of a safetensors file holding ``tensors`` (a dict of names to tensors) and
    ``metadata`` (a dict of strings)."""
    if not isinstance(tensors, dict):
        raise ValueError(f"Expected a dict of [str, numgrad.Tensor] but received {type(tensors)}")
    header: dict = {}
    if metadata is not None:
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()):
            raise ValueError("metadata must be a dict of str to str")
        header["__metadata__"] = dict(metadata)
    parts, offset = [], 0
    # (larger elements first, then by name: safetensors' order, which keeps every tensor aligned)
    for name in tensors:
        if not isinstance(name, str):
            raise ValueError(f"Key `{name}` is invalid, expected str")
    packed = {name: _tensor_bytes(name, t) for name, t in tensors.items()}
    order = sorted(packed, key=lambda k: (-tensors[k].element_size(), k))
    for name in order:
        code, shape, flat = packed[name]
        header[name] = {"dtype": code, "shape": shape,
                        "data_offsets": [offset, offset + flat.nbytes]}
        parts.append(flat)
        offset += flat.nbytes
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return b"".join([struct.pack("<Q", len(text)), text] + [p.tobytes() for p in parts])


def save_file(tensors: dict, filename, metadata: dict | None = None) -> None:
    """Writes ``tensors`` (and ``metadata``) to the safetensors file ``filename``."""
    with open(os.fspath(filename), "wb") as f:
        f.write(save(tensors, metadata))


def _parse(buffer, where: str) -> tuple[dict, dict | None, int]:
    if len(buffer) < 8:
        raise SafetensorError(f"Error while deserializing header: {where} is too small (its "
                              "8-byte header length is missing)")
    (n,) = struct.unpack("<Q", bytes(buffer[:8]))
    if n > _MAX_HEADER or 8 + n > len(buffer):
        raise SafetensorError(f"Error while deserializing header: {where}'s header length {n} "
                              "is too large (the file is truncated or not a safetensors file)")
    try:
        header = json.loads(bytes(buffer[8:8 + n]))
    except (ValueError, UnicodeDecodeError) as e:
        raise SafetensorError(f"Error while deserializing header: {where}'s header is not JSON "
                              f"({e})") from None
    if not isinstance(header, dict):
        raise SafetensorError(f"Error while deserializing header: {where}'s header is not a dict")
    metadata = header.pop("__metadata__", None)
    size = len(buffer) - 8 - n
    for name, entry in header.items():
        ok = (isinstance(entry, dict) and isinstance(entry.get("dtype"), str)
              and isinstance(entry.get("shape"), list)
              and all(type(s) is int and s >= 0 for s in entry["shape"])
              and isinstance(entry.get("data_offsets"), list) and len(entry["data_offsets"]) == 2
              and all(type(o) is int for o in entry["data_offsets"]))
        if not ok:
            raise SafetensorError(f"Error while deserializing header: bad entry for {name!r}")
        begin, end = entry["data_offsets"]
        if not 0 <= begin <= end <= size:
            raise SafetensorError(f"Error while deserializing header: {name!r}'s data offsets "
                                  f"{[begin, end]} lie outside the {size} bytes of data")
    return header, metadata, 8 + n


def _tensor(buffer, start: int, name: str, entry: dict, device):
    code = entry["dtype"]
    if code not in _NAMES:
        other = _OTHER.get(code, code)
        raise TypeError(f"tensor {name!r} is of dtype {other} ({code}), which numgrad does not "
                        "have (its dtypes: float32, float64, float16, bfloat16, complex64, int64, "
                        "int32, int16, int8, uint8 and bool)")
    dtype = _BY_NAME[_NAMES[code]].np.newbyteorder("<")
    begin, end = entry["data_offsets"]
    shape = tuple(entry["shape"])
    count = int(np.prod(shape, dtype=np.int64))
    if count * dtype.itemsize != end - begin:
        raise SafetensorError(f"Error while deserializing header: {name!r} of shape "
                              f"{list(shape)} needs {count * dtype.itemsize} bytes, its offsets "
                              f"give {end - begin}")
    a = np.frombuffer(buffer, dtype, count, start + begin).astype(dtype.newbyteorder("="))
    t = from_numpy(a.reshape(shape))
    return t if device in (None, "cpu") else t.to(device)


def load(data: bytes) -> dict:
    """The tensors of a safetensors file's bytes, as a dict of names to tensors."""
    header, _, start = _parse(data, "the buffer")
    return {name: _tensor(data, start, name, entry, "cpu") for name, entry in header.items()}


def load_file(filename, device="cpu") -> dict:
    """The tensors of the safetensors file ``filename`` (on ``device``)."""
    with safe_open(filename, framework="pt", device=device) as f:
        return {name: f.get_tensor(name) for name in f.keys()}


class _Slice:
    """``safe_open(...).get_slice(name)``: the tensor's dtype and shape, and ``[index]``."""

    def __init__(self, opened, name):
        self.opened, self.name = opened, name

    def get_shape(self) -> list:
        return list(self.opened._header[self.name]["shape"])

    def get_dtype(self) -> str:
        return self.opened._header[self.name]["dtype"]

    def __getitem__(self, index):
        return self.opened.get_tensor(self.name)[index]


class safe_open:
    """``with safe_open(filename, framework="pt", device="cpu") as f``: ``f.keys()``,
    ``f.get_tensor(name)``, ``f.get_slice(name)``, ``f.metadata()``; the file is mapped, and each
    tensor is copied out of it when asked for."""

    def __init__(self, filename, framework: str = "pt", device="cpu"):
        path = os.fspath(filename)
        self._map = np.memmap(path, np.uint8, mode="r") if os.path.getsize(path) else b""
        self._header, self._metadata, self._start = _parse(self._map, repr(path))
        self.device = device

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._map = None

    def keys(self) -> list:
        return sorted(self._header)

    def offset_keys(self) -> list:
        return sorted(self._header, key=lambda k: self._header[k]["data_offsets"][0])

    def metadata(self) -> dict | None:
        return self._metadata

    def get_tensor(self, name: str):
        if name not in self._header:
            raise SafetensorError(f"File does not contain tensor {name}")
        return _tensor(self._map, self._start, name, self._header[name], self.device)

    def get_slice(self, name: str) -> _Slice:
        if name not in self._header:
            raise SafetensorError(f"File does not contain tensor {name}")
        return _Slice(self, name)
