"""``numgrad.save`` and ``numgrad.load``: checkpoints in PyTorch's own format, which
``torch.load`` reads and which ``numgrad.load`` reads from ``torch.save``, with no PyTorch needed.

``numgrad.save`` writes the zip archive that ``torch.save`` writes (``numgrad._torch_format`` has
the layout): tensors keep their dtype, shape, strides, ``requires_grad``, ``nn.Parameter`` type and
shared storage, and ``torch.load(f, weights_only=True)`` reads a state dict, an optimizer's state
dict or nested containers of tensors, numbers, strings, dtypes and devices as PyTorch's own.

``numgrad.load`` reads

- PyTorch's zip archives (``torch.save``'s, and ``numgrad.save``'s): by default (``weights_only``
  True or None) with a restricted unpickler that allows exactly the globals PyTorch's
  weights-only unpickler allows, mapped to numgrad's tensors, dtypes, devices and containers, and
  refuses any other with PyTorch's ``UnpicklingError`` message before anything runs;
  ``weights_only=False`` unpickles fully (only for trusted files), PyTorch's names resolving to
  numgrad's;
- PyTorch's legacy format (``torch.save(..., _use_new_zipfile_serialization=False)``, pickles
  followed by the storages' bytes), with the same unpickler;
- the checkpoints of earlier numgrad releases (``numgrad/checkpoint.json`` and ``.npy`` arrays,
  described below), which still load.

The earlier numgrad format is a zip archive (stored, not compressed) holding

- ``numgrad/checkpoint.json``: ``{"format": "numgrad-checkpoint", "version": 1, "root": ...,
  "tensors": [...], "pickled": [...]}``, where ``root`` describes the saved object: JSON's
  ``null``, booleans, integers, floats, strings and lists stand for themselves, and every JSON
  object is a tagged node (``{"$": "tuple" | "dict" | "OrderedDict" | "tensor" | "ndarray" |
  "numpy_scalar" | "float" | "complex" | "bytes" | "dtype" | "device" | "size" | "pickle", ...}``;
  dict keys are nodes too, so integer keys stay integers); each entry of ``tensors`` gives an
  array's index, the dtype, shape, ``requires_grad``, whether it is an ``nn.Parameter``, and the
  device it was saved from;
- ``numgrad/data/<i>.npy``: the arrays, in NumPy's ``.npy`` format, read back with
  ``allow_pickle=False``;
- ``numgrad/objects.pkl``, only when the saved object holds something else: those objects,
  pickled, loaded only with ``weights_only=False``.
"""
from __future__ import annotations

import io
import json
import math
import os
import pickle
import warnings
import zipfile
from collections import OrderedDict
import mmap as _mmap

import numpy as np

import numgrad

from . import _lowp, cuda
from .creation import from_numpy
from ._dtype import device as _device
from ._dtype import dtype as _dtype_cls
from ._dtype import from_numpy_dtype
from .tensor import Size, Tensor
from . import _lazy

__all__ = ["add_safe_globals", "clear_safe_globals", "get_safe_globals", "load",
           "safe_globals", "save"]

FORMAT = "numgrad-checkpoint"
VERSION = 1
_HEADER = "numgrad/checkpoint.json"
_ARRAY = "numgrad/data/{}.npy"
_PICKLE = "numgrad/objects.pkl"
_TENSOR_PID = "numgrad.tensor"

UNSAFE_MESSAGE = (
    "Re-running `numgrad.load` with `weights_only` set to `False` will likely succeed, "
    "but it can result in arbitrary code execution. Do it only if you got the file from a "
    "trusted source."
)

_DTYPES = {"float32", "float64", "complex64", "complex128", "int64", "int32", "bool"}


# ----------------------------------------------------------------------------------------- save
class _Writer:
    """Turns an object into the JSON description, the tensors' table and the arrays."""

    def __init__(self):
        self.arrays: list[np.ndarray] = []
        self.tensors: list[dict] = []
        self.tensor_index: dict[int, int] = {}
        self.keep: list = []  # (keeps the memoised objects alive, so their ids stay theirs)
        self.pickled: list = []
        self.open: set[int] = set()

    def array(self, a: np.ndarray) -> int:
        self.arrays.append(a)
        return len(self.arrays) - 1

    def tensor(self, t: Tensor) -> int:
        index = self.tensor_index.get(id(t))
        if index is None:
            Parameter = _lazy.module("nn.parameter").Parameter

            data = t._host()
            index = len(self.tensors)
            self.tensors.append({
                "array": self.array(data), "dtype": t.dtype.name, "shape": list(data.shape),
                "requires_grad": bool(t.requires_grad), "parameter": isinstance(t, Parameter),
                "device": str(t.device),
            })
            self.tensor_index[id(t)] = index
            self.keep.append(t)
        return index

    def encode(self, obj):
        kind = type(obj)
        if obj is None or kind in (bool, int, str):
            return obj
        if kind is float:
            return obj if math.isfinite(obj) else {"$": "float", "value": repr(obj)}
        if isinstance(obj, Tensor):
            return {"$": "tensor", "index": self.tensor(obj)}
        if kind is np.ndarray and obj.dtype.kind in "biufc":
            return {"$": "ndarray", "array": self.array(obj)}
        if isinstance(obj, (np.bool_, np.number)):
            return {"$": "numpy_scalar", "array": self.array(np.asarray(obj))}
        if kind is complex:
            return {"$": "complex", "real": self.encode(obj.real), "imag": self.encode(obj.imag)}
        if kind is bytes:
            return {"$": "bytes", "hex": obj.hex()}
        if kind is _dtype_cls:
            return {"$": "dtype", "name": obj.name}
        if kind is _device:
            return {"$": "device", "name": str(obj)}
        if kind is Size:
            return {"$": "size", "items": list(obj)}
        if kind in (list, tuple, dict, OrderedDict):
            if id(obj) in self.open:
                raise ValueError("numgrad.save: a container that contains itself cannot be saved")
            self.open.add(id(obj))
            try:
                if kind is list:
                    return [self.encode(v) for v in obj]
                if kind is tuple:
                    return {"$": "tuple", "items": [self.encode(v) for v in obj]}
                return {"$": kind.__name__,
                        "items": [[self.encode(k), self.encode(v)] for k, v in obj.items()]}
            finally:
                self.open.discard(id(obj))
        self.pickled.append(obj)
        return {"$": "pickle", "index": len(self.pickled) - 1}

    def pickle_objects(self, pickle_module, protocol) -> bytes | None:
        """The objects JSON cannot describe, pickled, their tensors stored as arrays."""
        if not self.pickled:
            return None
        writer = self
        buffer = io.BytesIO()

        class _Pickler(pickle_module.Pickler):
            def persistent_id(self, obj):
                if isinstance(obj, Tensor):
                    return (_TENSOR_PID, writer.tensor(obj))
                return None

        _Pickler(buffer, protocol=protocol).dump(self.pickled)
        return buffer.getvalue()


def save(obj, f, pickle_module=pickle, pickle_protocol: int = 2,
         _use_new_zipfile_serialization: bool = True, _disable_byteorder_record: bool = False):
    """Saves ``obj`` to ``f`` (a path, ``str`` or ``os.PathLike``, or a binary file object) in
    PyTorch's checkpoint format: ``torch.load`` reads the file, and so does ``numgrad.load``.

    ``obj`` may be a tensor (its dtype, shape, strides, ``requires_grad`` and ``nn.Parameter`` type
    are kept, and tensors that view one storage are saved over that one storage, as PyTorch saves
    them), a number, a string, bytes, None, a numgrad dtype, device or Size, or dicts
    (``OrderedDict`` too), lists, tuples and sets of these: a module's or an optimizer's
    ``state_dict()``. Those load with the default ``weights_only=True``, in numgrad and in
    PyTorch. Anything else (an instance of a user's class, a NumPy array) is pickled as it is and
    loads only with ``weights_only=False`` (or its globals allowed by ``add_safe_globals``), as in
    PyTorch. ``pickle_protocol`` is the pickle's protocol (2, as PyTorch's default);
    ``pickle_module`` is accepted for PyTorch's signature (numgrad's pickler writes the pickle).
    """
    if not _use_new_zipfile_serialization:
        raise NotImplementedError("numgrad.save writes PyTorch's zip format only "
                                  "(_use_new_zipfile_serialization=True)")
    _check_cycles(obj)
    _torch_format = _lazy.module("_torch_format")

    with _open_write(f) as fileobj:
        _torch_format.save(obj, fileobj, _torch_format.archive_name(f), pickle_protocol)


def _check_cycles(obj) -> None:
    """A list, tuple or dict that contains itself: refused (PyTorch's pickle would write it, but
    the weights-only unpickler of either library cannot rebuild it)."""
    open_ids: set[int] = set()

    def walk(o):
        kind = type(o)
        if kind not in (list, tuple, dict, OrderedDict):
            return
        if id(o) in open_ids:
            raise ValueError("numgrad.save: a container that contains itself cannot be saved")
        open_ids.add(id(o))
        for v in (o.items() if kind in (dict, OrderedDict) else o):
            walk(v)
        open_ids.discard(id(o))

    walk(obj)


def _save_v1(obj, f, pickle_module=pickle, pickle_protocol: int = 2):
    """The format of earlier numgrad releases (kept to test that their files still load)."""
    writer = _Writer()
    root = writer.encode(obj)
    pickled = writer.pickle_objects(pickle_module, pickle_protocol)
    header = {
        "format": FORMAT, "version": VERSION, "root": root, "tensors": writer.tensors,
        "pickled": [f"{type(o).__module__}.{type(o).__qualname__}" for o in writer.pickled],
    }
    text = json.dumps(header, allow_nan=False, separators=(",", ":")).encode()
    with _open_write(f) as fileobj, zipfile.ZipFile(fileobj, "w", zipfile.ZIP_STORED) as zf:
        zf.writestr(_HEADER, text)
        if pickled is not None:
            zf.writestr(_PICKLE, pickled)
        for i, a in enumerate(writer.arrays):
            if not a.flags.c_contiguous:  # (np.ascontiguousarray would make 0-d 1-d)
                a = a.copy(order="C")
            with zf.open(_ARRAY.format(i), "w", force_zip64=a.nbytes > 2**30) as out:
                np.lib.format.write_array(out, a, allow_pickle=False)


class _path_or_file:
    """The context of ``numgrad.save``'s or ``numgrad.load``'s ``f``: a path, opened on entry
    (and closed on exit), or a binary file object, left open."""

    def __init__(self, f):
        self.f, self.opened = f, None

    def _open_or_check(self, mode: str, function: str, method: str):
        """The file: ``f`` opened in ``mode`` if it is a path, else ``f`` itself, with the
        TypeError of ``numgrad.<function>`` where it is a text file or lacks ``method``."""
        f = self.f
        if isinstance(f, (str, os.PathLike)):
            self.opened = open(os.fspath(f), mode)
            return self.opened
        if isinstance(f, io.TextIOBase):
            raise TypeError(f"numgrad.{function} needs a binary file object (opened with "
                            f"'{mode}'), got a text file")
        if not callable(getattr(f, method, None)):
            raise TypeError("f must be a path (str or os.PathLike) or a binary file object with "
                            f"{method}(), but got {type(f).__name__}")
        return f

    def __exit__(self, *exc):
        if self.opened is not None:
            self.opened.close()


class _open_write(_path_or_file):
    def __enter__(self):
        return self._open_or_check("wb", "save", "write")


# ----------------------------------------------------------------------------------------- load
def _place(t: Tensor, location: str, m) -> Tensor:
    """``t`` (on the CPU) moved where ``map_location`` (``m``) says for a tensor saved on
    ``location``: the rule of both formats' loaders (this module's and ``_torch_format``'s)."""
    if t._data.dtype.num in _lowp.NARROW:  # (float16, bfloat16 ...: the ops' test switched on)
        _lowp.active = True
    if callable(m) and not isinstance(m, (str, _device, dict)):
        out = m(t, location)
        if isinstance(out, Tensor):
            return out
        target = location
    elif m is None:
        target = location
    elif isinstance(m, dict):
        target = m.get(location, location)
    else:
        target = m
    target = _device(target)
    if target.type == "cuda":
        if not cuda.is_available():
            raise RuntimeError(
                "Attempting to deserialize object on a CUDA device but "
                "numgrad.cuda.is_available() is False. If you are running on a CPU-only "
                "machine, please use numgrad.load with map_location=numgrad.device('cpu') to "
                "map your storages to the CPU.")
        return t.to(target)
    return t


class _Reader:
    """Rebuilds the saved object from an open archive and its JSON description."""

    def __init__(self, zf: zipfile.ZipFile, header: dict, map_location, weights_only: bool,
                 pickle_module, pickle_load_args, name: str):
        self.zf, self.header, self.name = zf, header, name
        self.map_location = map_location
        self.weights_only = weights_only
        self.pickle_module = pickle_module or pickle
        self.pickle_load_args = pickle_load_args
        self.tensors: dict[int, Tensor] = {}
        self.pickled = None
        entries = header.get("tensors")
        if not isinstance(entries, list):
            raise self.corrupt("its tensor table is missing")
        self.entries = entries

    def corrupt(self, why: str) -> RuntimeError:
        return RuntimeError(f"{self.name} is a damaged numgrad checkpoint: {why}")

    def array(self, index) -> np.ndarray:
        if type(index) is not int or index < 0:
            raise self.corrupt(f"bad array reference {index!r}")
        name = _ARRAY.format(index)
        try:
            with self.zf.open(name) as stream:
                a = np.lib.format.read_array(stream, allow_pickle=False)
        except KeyError:
            raise self.corrupt(f"{name} is missing") from None
        except (ValueError, OSError, EOFError, zipfile.BadZipFile) as e:
            raise self.corrupt(f"{name} cannot be read ({e})") from None
        if not a.dtype.isnative:
            a = a.astype(a.dtype.newbyteorder("="))
        return a

    def tensor(self, index) -> Tensor:
        if type(index) is not int or not 0 <= index < len(self.entries):
            raise self.corrupt(f"bad tensor reference {index!r}")
        t = self.tensors.get(index)
        if t is None:
            t = self.tensors[index] = self.build_tensor(self.entries[index])
        return t

    def build_tensor(self, entry) -> Tensor:
        if not isinstance(entry, dict) or entry.get("dtype") not in _DTYPES:
            raise self.corrupt(f"bad tensor entry {entry!r}")
        a = self.array(entry.get("array"))
        if a.dtype.name != entry["dtype"] or list(a.shape) != entry.get("shape"):
            raise self.corrupt(f"an array is {a.dtype.name}{list(a.shape)} where the table says "
                               f"{entry['dtype']}{entry.get('shape')}")
        from_numpy_dtype(a.dtype)
        t = from_numpy(a)
        location = str(entry.get("device", "cpu"))
        t = _place(t, location, self.map_location)
        requires_grad = bool(entry.get("requires_grad", False))
        if entry.get("parameter"):
            Parameter = _lazy.module("nn.parameter").Parameter

            return Parameter(t, requires_grad=requires_grad)
        if requires_grad:
            t.requires_grad_(True)
        return t

    def objects(self) -> list:
        if self.weights_only:
            raise pickle.UnpicklingError(_weights_only_message(self.header.get("pickled")))
        if self.pickled is None:
            reader = self
            try:
                data = self.zf.read(_PICKLE)
            except KeyError:
                raise self.corrupt(f"{_PICKLE} is missing") from None

            class _Unpickler(self.pickle_module.Unpickler):
                def persistent_load(self, pid):
                    if (isinstance(pid, tuple) and len(pid) == 2 and pid[0] == _TENSOR_PID):
                        return reader.tensor(pid[1])
                    raise pickle.UnpicklingError(f"unknown persistent id {pid!r}")

            self.pickled = _Unpickler(io.BytesIO(data), **self.pickle_load_args).load()
        return self.pickled

    def decode(self, node):
        if node is None or type(node) in (bool, int, float, str):
            return node
        if type(node) is list:
            return [self.decode(v) for v in node]
        if type(node) is not dict:
            raise self.corrupt(f"unexpected {type(node).__name__} in its description")
        tag = node.get("$")
        if tag == "tensor":
            return self.tensor(node.get("index"))
        if tag == "tuple":
            return tuple(self.decode(v) for v in self.items(node))
        if tag in ("dict", "OrderedDict"):
            out = {} if tag == "dict" else OrderedDict()
            for pair in self.items(node):
                if type(pair) is not list or len(pair) != 2:
                    raise self.corrupt("bad dict entry")
                out[self.decode(pair[0])] = self.decode(pair[1])
            return out
        if tag == "ndarray":
            return self.array(node.get("array"))
        if tag == "numpy_scalar":
            a = self.array(node.get("array"))
            if a.ndim:
                raise self.corrupt("a NumPy scalar with dimensions")
            return a[()]
        if tag == "float":
            if node.get("value") not in ("nan", "inf", "-inf"):
                raise self.corrupt(f"bad float {node.get('value')!r}")
            return float(node["value"])
        if tag == "complex":
            return complex(self.decode(node.get("real")), self.decode(node.get("imag")))
        if tag == "bytes":
            return bytes.fromhex(str(node.get("hex")))
        if tag == "dtype":
            name = node.get("name")
            if name not in _DTYPES:
                raise self.corrupt(f"unknown dtype {name!r}")
            return getattr(numgrad, name)
        if tag == "device":
            return _device(str(node.get("name")))
        if tag == "size":
            return Size(int(v) for v in self.items(node))
        if tag == "pickle":
            objects = self.objects()
            index = node.get("index")
            if type(index) is not int or not 0 <= index < len(objects):
                raise self.corrupt(f"bad object reference {index!r}")
            return objects[index]
        raise self.corrupt(f"unknown node {tag!r}")

    def items(self, node) -> list:
        items = node.get("items")
        if type(items) is not list:
            raise self.corrupt(f"a {node.get('$')} node without items")
        return items


def _weights_only_message(types) -> str:
    listed = ", ".join(str(t) for t in types) if isinstance(types, list) and types else "objects"
    return (
        f"Weights only load failed. {UNSAFE_MESSAGE}\n\n"
        f"The checkpoint holds objects that only unpickling can rebuild ({listed}); with "
        "weights_only=True numgrad.load reads tensors, NumPy arrays, numbers, strings, bytes, "
        "None, dtypes, devices, and dicts, lists and tuples of them."
    )


def load(f, map_location=None, pickle_module=None, *, weights_only: bool | None = None,
         mmap: bool | None = None, **pickle_load_args):
    """Loads an object saved by ``torch.save`` or ``numgrad.save`` (this release's or an
    earlier one's) from ``f`` (a path or a binary file object).

    With ``weights_only=True`` (the default, None, as in PyTorch ≥ 2.6) no code from the file is
    run: the pickle may name only the globals PyTorch's weights-only unpickler allows (tensors,
    storages, dtypes, ``torch.device``, ``torch.Size``, ``OrderedDict``, ``Counter``, sets,
    bytes, complex numbers) and those added with ``add_safe_globals``; any other is refused with
    PyTorch's ``pickle.UnpicklingError`` before it is called. ``weights_only=False`` unpickles
    everything (with ``pickle_module``, by default ``pickle``, and ``pickle_load_args``), PyTorch's
    names standing for numgrad's: only for trusted files.

    ``map_location`` puts the tensors where they should go: None (where they were saved), a
    device or its name (all of them there), a dict from saved location names to new ones
    (``{"cuda:0": "cpu"}``), or a callable ``fn(tensor, location)`` given each tensor on the CPU
    and its saved location name, returning the tensor to use (or anything else for the default,
    so ``lambda storage, loc: storage`` works). ``mmap=True`` (``f`` a path) maps the file's
    storages into memory, copy-on-write as in PyTorch, instead of reading them.

    Tensors saved over one storage load over one NumPy array again (writes through one are seen
    through the others). PyTorch tensors of a dtype numgrad lacks (float16, bfloat16, uint8 ...)
    are refused with a TypeError naming it. PyTorch's legacy (non-zip) format is read too. Any
    other file (a damaged or truncated zip, a plain pickle ...) gets a RuntimeError that says
    what it is.
    """
    if weights_only is None:
        weights_only = True
    if weights_only and pickle_module is not None:
        raise RuntimeError("Can not safely load weights when explicit pickle_module is specified")
    if pickle_load_args and weights_only:
        warnings.warn("pickle_load_args only works if `weights_only=False`.", stacklevel=2)
    if mmap and not isinstance(f, (str, os.PathLike)):
        raise ValueError("f must be a file path in order to use the mmap argument")
    with _open_read(f) as (fileobj, name):
        start = fileobj.tell()
        head = fileobj.read(8)
        fileobj.seek(start)
        if head[:4] != b"PK\x03\x04" or not zipfile.is_zipfile(fileobj):
            if head[:4] == b"PK\x03\x04":
                raise RuntimeError(
                    f"{name} is a damaged checkpoint: it starts as a zip archive but its end (the "
                    "central directory) is missing or unreadable: the file is truncated or "
                    "corrupted (PytorchStreamReader failed reading zip archive: failed finding "
                    "central directory)")
            if head[:1] == b"\x80" and _is_legacy_torch(fileobj, start):
                if mmap:
                    raise RuntimeError(
                        "mmap can only be used with files saved with "
                        "`torch.save(_use_new_zipfile_serialization=True), please torch.save your "
                        "checkpoint with this option in order to use mmap.")
                _torch_format = _lazy.module("_torch_format")

                return _torch_format.load_legacy(fileobj, name, map_location, weights_only,
                                                 pickle_module, pickle_load_args)
            raise _not_a_checkpoint(name, head)
        fileobj.seek(start)
        try:
            zf = zipfile.ZipFile(fileobj)
        except (zipfile.BadZipFile, OSError, ValueError) as e:
            raise RuntimeError(f"{name} is a damaged checkpoint: its zip directory cannot be read "
                               f"({e})") from None
        with zf:
            names = zf.namelist()
            if _HEADER in names:
                return _load_v1(zf, name, head, names, map_location, weights_only, pickle_module,
                                pickle_load_args)
            _torch_format = _lazy.module("_torch_format")

            prefix = _torch_format.archive_prefix(names)
            if prefix is None:
                raise _not_a_checkpoint(name, head, names)
            if mmap:
                if start:
                    raise ValueError("mmap=True needs the checkpoint at the start of its file")
                # (copy-on-write, as PyTorch maps it: MAP_PRIVATE; the arrays over it keep it)
                mapped = _mmap.mmap(fileobj.fileno(), 0, access=_mmap.ACCESS_COPY)
            else:
                mapped = None
            return _torch_format.load(zf, prefix, name, map_location, weights_only,
                                      pickle_module, pickle_load_args, mapped)


def _load_v1(zf, name, head, names, map_location, weights_only, pickle_module, pickle_load_args):
    """Loads a checkpoint of earlier numgrad releases (``numgrad/checkpoint.json``)."""
    try:
        header = json.loads(zf.read(_HEADER))
    except (ValueError, UnicodeDecodeError) as e:
        raise RuntimeError(f"{name} is a damaged numgrad checkpoint: its {_HEADER} is "
                           f"not JSON ({e})") from None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise _not_a_checkpoint(name, head, names)
    version = header.get("version")
    if type(version) is not int or version > VERSION:
        raise RuntimeError(f"{name} was written by a newer numgrad (checkpoint format "
                           f"version {version!r}); this numgrad reads version {VERSION}")
    if weights_only and header.get("pickled"):
        raise pickle.UnpicklingError(_weights_only_message(header["pickled"]))
    reader = _Reader(zf, header, map_location, weights_only, pickle_module,
                     pickle_load_args, name)
    return reader.decode(header.get("root"))


# Globals a user allows in weights-only loads (``add_safe_globals``), by their full name.
_SAFE_GLOBALS: dict[str, object] = {}


def _global_name(g) -> tuple[str, object]:
    if isinstance(g, tuple):
        if len(g) != 2:
            raise ValueError(f"Expected tuple of length 2 (global, str of callable full path), "
                             f"but got tuple of length: {len(g)}")
        if type(g[1]) is not str:
            raise TypeError("Expected second item in tuple to be str of callable full path, but "
                            f"got: {type(g[1])}")
        return g[1], g[0]
    return f"{g.__module__}.{g.__qualname__}", g


def add_safe_globals(safe_globals: list) -> None:
    """Allows these globals (classes, functions, or ``(global, "module.name")`` pairs) in
    ``weights_only`` loads, as ``torch.serialization.add_safe_globals``: only for ones you trust
    (``numpy.core.multiarray._reconstruct``, ``numpy.ndarray`` and ``numpy.dtype`` for NumPy
    arrays, say)."""
    for g in safe_globals:
        key, value = _global_name(g)
        _SAFE_GLOBALS[key] = value


def get_safe_globals() -> list:
    """The globals ``add_safe_globals`` allowed."""
    return list(_SAFE_GLOBALS.values())


def clear_safe_globals() -> None:
    """Forgets every global ``add_safe_globals`` allowed."""
    _SAFE_GLOBALS.clear()


class safe_globals:
    """``with numgrad.serialization.safe_globals([...]):`` allows these globals inside the block."""

    def __init__(self, safe_globals: list):
        self.safe_globals = safe_globals
        self.added: list[str] = []

    def __enter__(self):
        for g in self.safe_globals:
            key, value = _global_name(g)
            if key not in _SAFE_GLOBALS:
                self.added.append(key)
            _SAFE_GLOBALS[key] = value

    def __exit__(self, *exc):
        for key in self.added:
            _SAFE_GLOBALS.pop(key, None)
        self.added = []


def _user_globals() -> dict:
    return dict(_SAFE_GLOBALS)
class _open_read(_path_or_file):
    def __enter__(self):
        f = self._open_or_check("rb", "load", "read")
        if self.opened is not None:
            return f, repr(os.fspath(self.f))
        seekable = getattr(f, "seekable", None)
        if not (callable(seekable) and seekable()):
            f = io.BytesIO(f.read())
        name = getattr(self.f, "name", None)
        return f, (repr(name) if isinstance(name, str) else "the file")


def _is_legacy_torch(fileobj, start: int) -> bool:
    """Whether the file starts with the pickle of PyTorch's legacy magic number (read without
    unpickling: it is a protocol-2 LONG1 opcode and its bytes)."""
    LEGACY_MAGIC = _lazy.module("_torch_format").LEGACY_MAGIC

    head = fileobj.read(32)
    fileobj.seek(start)
    body = LEGACY_MAGIC.to_bytes(10, "little")
    return head[2:4] == b"\x8a\x0a" and head[4:14] == body


def _not_a_checkpoint(name: str, head: bytes, names=None) -> RuntimeError:
    """The error for a file that is not a checkpoint numgrad reads, saying what it looks like."""
    if names is not None:
        what = "a zip archive without a data.pkl record or numgrad/checkpoint.json"
    elif not head:
        what = "empty"
    elif head[:1] == b"\x80" or head[:1] in (b"(", b"]", b"}"):
        what = ("a pickle (perhaps a legacy-format torch.save file: numgrad reads the zip format "
                "that torch.save writes by default; re-save it with PyTorch, or load it with "
                "pickle only if you trust it)")
    elif head.startswith(b"\x93NUMPY"):
        what = "a NumPy .npy file (load it with numpy.load)"
    else:
        what = f"not a zip archive (it starts with {head!r})"
    return RuntimeError(f"{name} is not a checkpoint (a file written by torch.save or "
                        f"numgrad.save): it is {what}.")
