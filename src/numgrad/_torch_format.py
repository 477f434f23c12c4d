"""PyTorch's checkpoint format, written and read without PyTorch: what ``numgrad.save`` writes and
``numgrad.load`` reads (``numgrad.serialization`` has the entry points).

The format (``torch.save``'s since PyTorch 1.6) is a zip archive, stored (not compressed), whose
records lie under one folder (``<name>/``, the file's stem or ``archive``):

- ``data.pkl``: the saved object, pickled (protocol 2). A tensor is the call
  ``torch._utils._rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad,
  backward_hooks)`` (a parameter wraps that in ``torch._utils._rebuild_parameter(tensor,
  requires_grad, backward_hooks)``), and each storage is a *persistent id*, the tuple
  ``("storage", torch.FloatStorage, key, location, numel)``: the pickle holds no bytes of data;
- ``data/<key>``: each storage's raw bytes, in the byte order that ``byteorder`` names, each
  record's data starting at a multiple of 64 bytes from the start of the file (``torch.load(...,
  mmap=True)`` maps them in place);
- ``byteorder`` (``little``), ``version`` (``3``), ``.format_version`` (``1``),
  ``.storage_alignment`` (``64``) and ``.data/serialization_id``.

Tensors that view one storage (a tensor and its slices, saved together) point at the same key, so
they load sharing memory again, as in PyTorch.

Writing: the pickle names PyTorch's globals (``torch._utils._rebuild_tensor_v2``,
``torch.FloatStorage``, ``torch.float32``, ``torch.device``, ``torch.Size``) without importing
them: a pickler (Python's own pickler, subclassed) writes those names as ``GLOBAL`` opcodes from
stand-ins (``_Global``) and turns numgrad's tensors, dtypes, devices and sizes into them.

Reading: an unpickler whose ``find_class`` maps PyTorch's names to numgrad's (the rebuild
functions to functions that build numgrad tensors over the loaded storages, ``torch.float32`` to
``numgrad.float32``, ``torch.device``, ``torch.Size``, ``torch.nn.parameter.Parameter`` ...). With
``weights_only=True`` it allows exactly the globals PyTorch's weights-only unpickler allows (plus
those a user adds with ``numgrad.serialization.add_safe_globals``) and refuses every other one
before anything is called, with PyTorch's ``UnpicklingError`` message: a pickle can only run code
through a global it names, so no code from the file runs.
"""
from __future__ import annotations

import _compat_pickle
import codecs
import hashlib
import importlib
import io
import os
import pickle
import re
import struct
import sys
import zipfile
from collections import Counter, OrderedDict

import numpy as np

import numgrad

from . import creation, serialization
from ._dtype import device as _device
from ._dtype import _NarrowDtype
from ._dtype import dtype as _dtype_cls
from .ops import registry
from .serialization import _place
from .tensor import Size, Tensor
from .nn.parameter import Parameter

ALIGNMENT = 64

# PyTorch's storage classes and the element type of each (None: a dtype numgrad has no type for,
# whose bytes load as raw words until a tensor of it is built, which numgrad refuses; "V2":
# bfloat16's storage, ``numgrad._lowp``).
_STORAGE_DTYPES = {
    "FloatStorage": ("float32", "f4"), "DoubleStorage": ("float64", "f8"),
    "HalfStorage": ("float16", "f2"), "BFloat16Storage": ("bfloat16", "V2"),
    "LongStorage": ("int64", "i8"), "IntStorage": ("int32", "i4"), "ShortStorage": ("int16", "i2"),
    "CharStorage": ("int8", "i1"), "ByteStorage": ("uint8", "u1"), "BoolStorage": ("bool", "?"),
    "ComplexFloatStorage": ("complex64", "c8"), "ComplexDoubleStorage": ("complex128", "c16"),
    "UntypedStorage": ("uint8", "u1"),
    "QInt8Storage": ("qint8", None), "QUInt8Storage": ("quint8", None),
    "QInt32Storage": ("qint32", None), "QUInt4x2Storage": ("quint4x2", None),
    "QUInt2x4Storage": ("quint2x4", None),
}
_STORAGE_OF = {"float32": "FloatStorage", "float64": "DoubleStorage", "int64": "LongStorage",
               "int32": "IntStorage", "bool": "BoolStorage",
               "complex64": "ComplexFloatStorage", "complex128": "ComplexDoubleStorage",
               "float16": "HalfStorage", "bfloat16": "BFloat16Storage", "void16": "BFloat16Storage",
               "int16": "ShortStorage", "int8": "CharStorage", "uint8": "ByteStorage"}
_ITEMSIZE = {"bfloat16": 2, "qint8": 1, "quint8": 1, "qint32": 4, "quint4x2": 1, "quint2x4": 1}

# PyTorch's dtypes, as named in its allowlist (``torch.float32``...): numgrad has five of them.
_TORCH_DTYPES = (
    "float32 float64 float16 bfloat16 complex32 complex64 complex128 uint8 int8 int16 int32 int64 "
    "bool qint8 quint8 qint32 quint4x2 quint2x4 bits1x8 bits2x4 bits4x2 bits8 bits16 "
    "float8_e5m2 float8_e4m3fn float8_e5m2fnuz float8_e4m3fnuz float8_e8m0fnu float4_e2m1fn_x2 "
    "uint16 uint32 uint64 uint1 uint2 uint3 uint4 uint5 uint6 uint7 int1 int2 int3 int4 int5 "
    "int6 int7"
).split()
_TENSOR_CLASSES = ("DoubleTensor FloatTensor BFloat16Tensor LongTensor IntTensor ShortTensor "
                   "HalfTensor CharTensor ByteTensor BoolTensor").split()
_QSCHEMES = ("per_tensor_affine per_tensor_symmetric per_channel_affine per_channel_symmetric "
             "per_channel_affine_float_qparams").split()
_BLOCKED_MODULES = ("sys", "os", "posix", "nt")


# ======================================================================================== writing
class _Global:
    """Stands for a global of PyTorch's (``torch._utils._rebuild_tensor_v2``, ``torch.float32``)
    in a pickle being written: pickled as a ``GLOBAL module name`` opcode, never imported."""

    __slots__ = ("module", "name")
    _made: dict = {}

    def __new__(cls, module: str, name: str):
        g = cls._made.get((module, name))
        if g is None:
            g = cls._made[(module, name)] = object.__new__(cls)
            g.module, g.name = module, name
        return g

    def __call__(self, *args):  # (pickle wants the function of a reduction to be callable)
        raise TypeError(f"a stand-in for {self.module}.{self.name}, for pickling only")

    def __repr__(self) -> str:
        return f"{self.module}.{self.name}"


class _StorageRef:
    __slots__ = ("key", "storage_type", "location", "numel")

    def __init__(self, key, storage_type, location, numel):
        self.key, self.storage_type, self.location, self.numel = key, storage_type, location, numel


class _Plain:
    """A parameter's data, pickled as a plain tensor that does not require grad."""

    __slots__ = ("tensor",)

    def __init__(self, tensor):
        self.tensor = tensor


class _Root:
    __slots__ = ("ref", "flat", "address", "dtype")


def _contiguous_strides(shape) -> tuple:
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


class _Writer:
    """Collects the storages of the tensors being pickled: ``storages[key]`` is a flat uint8 array
    of each one's bytes."""

    def __init__(self):
        self.storages: dict[str, np.ndarray] = {}
        self.roots: dict[int, _Root] = {}
        self.keep: list = []

    def new_storage(self, flat: np.ndarray, dtype: np.dtype, location: str) -> _StorageRef:
        key = str(len(self.storages))
        self.storages[key] = flat
        return _StorageRef(key, _STORAGE_OF[dtype.name], location, flat.nbytes // dtype.itemsize)

    def reduce_tensor(self, t: Tensor, requires_grad: bool):
        ref, offset, stride = self.storage_of(t)
        return (_Global("torch._utils", "_rebuild_tensor_v2"),
                (ref, offset, tuple(t.shape), stride, bool(requires_grad), OrderedDict()))

    def storage_of(self, t: Tensor):
        """The storage ``t`` is saved in, its offset there and its strides (in elements): the whole
        memory of the array it views when that can be described so (as PyTorch saves a view's
        whole storage), else a contiguous copy of its own."""
        data = t._data
        location = str(t.device)
        on_host = isinstance(data, np.ndarray)
        if on_host:
            root = data
            while isinstance(root.base, np.ndarray):
                root = root.base
        else:
            root = t._base._data if t._base is not None else data
        entry = self.roots.get(id(root))
        if entry is None:
            entry = _Root()
            self.keep.append(root)
            self.roots[id(root)] = entry
            entry.ref = None
            host = root if on_host else _to_host(root)
            if (host.dtype.name in _STORAGE_OF and host.size
                    and (host.flags.c_contiguous or host.flags.f_contiguous)):
                entry.flat = host.ravel(order="A").view(np.uint8)
                entry.address = _address(root)
                entry.dtype = host.dtype
            else:
                entry.flat = None
        item = data.dtype.itemsize
        if entry.flat is not None and data.dtype == entry.dtype:
            offset = _address(data) - entry.address
            strides = tuple(t.stride())
            end = offset + (item + sum((n - 1) * s * item for n, s in zip(data.shape, strides))
                            if data.size else 0)
            if (0 <= offset and offset % item == 0 and end <= entry.flat.nbytes
                    and all(s >= 0 for s in strides) and all(
                        s * item == b for n, s, b in zip(data.shape, strides, data.strides)
                        if n > 1)):
                if entry.ref is None:
                    entry.ref = self.new_storage(entry.flat, entry.dtype, location)
                return entry.ref, offset // item, tuple(t.stride())
        host = t._host()
        flat = host.copy(order="C").reshape(-1).view(np.uint8)
        return self.new_storage(flat, host.dtype, location), 0, _contiguous_strides(host.shape)


def _to_host(a) -> np.ndarray:
    return registry.kernels_of(a).to_host(a)


def _address(a) -> int:
    if isinstance(a, np.ndarray):
        return a.__array_interface__["data"][0]
    return registry.kernels_of(a).address(a)


class _Pickler(pickle._Pickler):  # (Python's pickler: its dispatch table can be extended)
    dispatch = dict(pickle._Pickler.dispatch)

    def __init__(self, file, protocol, writer: _Writer):
        super().__init__(file, protocol)
        self.writer = writer

    def save_torch_global(self, obj):
        self.write(pickle.GLOBAL + obj.module.encode() + b"\n" + obj.name.encode() + b"\n")
        self.memoize(obj)

    def save_dtype(self, obj):
        self.save(_Global("torch", obj.name))

    dispatch[_Global] = save_torch_global
    dispatch[_dtype_cls] = save_dtype
    dispatch[_NarrowDtype] = save_dtype  # (float16, bfloat16 and the small integers)

    def persistent_id(self, obj):
        if type(obj) is _StorageRef:
            return ("storage", _Global("torch", obj.storage_type), obj.key, obj.location,
                    obj.numel)
        return None

    def reducer_override(self, obj):
        kind = type(obj)
        if kind is _Plain:
            return self.writer.reduce_tensor(obj.tensor, False)
        if isinstance(obj, Tensor):
            if isinstance(obj, Parameter):
                return (_Global("torch._utils", "_rebuild_parameter"),
                        (_Plain(obj), obj.requires_grad, OrderedDict()))
            return self.writer.reduce_tensor(obj, obj.requires_grad)
        if kind is Size:
            return (_Global("torch", "Size"), (tuple(obj),))
        if kind is _device:
            return (_Global("torch", "device"),
                    (obj.type,) if obj.index is None else (obj.type, obj.index))
        return NotImplemented


def _record_padding(position: int, name: bytes, size: int) -> bytes:
    """The extra field of a record's local header that puts its data at a multiple of
    ``ALIGNMENT`` bytes (PyTorch's writer pads with an extra field of id ``FB`` too)."""
    zip64 = 20 if size * 1.05 > zipfile.ZIP64_LIMIT else 0  # (as zipfile decides it)
    start = position + 30 + len(name) + 4 + zip64
    return b"FB" + struct.pack("<H", -start % ALIGNMENT) + b"Z" * (-start % ALIGNMENT)


def _write_record(zf: zipfile.ZipFile, fileobj, base: int, name: str, data) -> None:
    view = memoryview(data).cast("B")
    info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
    info.compress_type = zipfile.ZIP_STORED
    info.file_size = view.nbytes
    try:
        position = fileobj.tell() - base
    except (OSError, AttributeError):
        position = None
    if position is not None:
        info.extra = _record_padding(position, name.encode("utf-8"), view.nbytes)
    with zf.open(info, "w") as out:
        step = 1 << 26
        for i in range(0, view.nbytes, step):
            out.write(view[i:i + step])


def save(obj, fileobj, archive: str, protocol: int = 2) -> None:
    """Writes ``obj`` to the binary file ``fileobj`` in PyTorch's zip format."""
    writer = _Writer()
    buffer = io.BytesIO()
    _Pickler(buffer, protocol, writer).dump(obj)
    pickled = buffer.getvalue()
    serialization_id = str(int(hashlib.sha1(pickled).hexdigest(), 16))[:40].rjust(40, "0")
    try:
        base = fileobj.tell()
    except (OSError, AttributeError):
        base = 0
    with zipfile.ZipFile(fileobj, "w", zipfile.ZIP_STORED) as zf:
        records = [("data.pkl", pickled), (".format_version", b"1"),
                   (".storage_alignment", str(ALIGNMENT).encode()),
                   ("byteorder", sys.byteorder.encode())]
        records += [(f"data/{key}", flat) for key, flat in writer.storages.items()]
        records += [("version", b"3\n"), (".data/serialization_id", serialization_id.encode())]
        for name, data in records:
            _write_record(zf, fileobj, base, f"{archive}/{name}", data)


def archive_name(f) -> str:
    """The folder of the records: the file's stem for a path (as PyTorch names it), else
    ``archive``."""
    if isinstance(f, (str, os.PathLike)):
        stem = os.path.splitext(os.path.basename(os.fspath(f)))[0]
        if stem and "/" not in stem and stem.isprintable():
            return stem
    return "archive"


# ======================================================================================== reading
class _ForeignDtype:
    """A PyTorch dtype that numgrad has no type for (``torch.float16``...): loads as a value (in
    a config, say), refused when a tensor of it is built."""

    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __repr__(self) -> str:
        return f"torch.{self.name}"

    def __eq__(self, other) -> bool:
        return type(other) is _ForeignDtype and other.name == self.name

    def __hash__(self) -> int:
        return hash(("torch", self.name))


class _StorageType:
    """PyTorch's storage class ``name`` (``FloatStorage``), as ``find_class`` gives it."""

    __slots__ = ("name", "dtype_name", "np")

    def __init__(self, name):
        self.name = name
        self.dtype_name, code = _STORAGE_DTYPES[name]
        self.np = np.dtype(code) if code else None

    @property
    def itemsize(self) -> int:
        return self.np.itemsize if self.np is not None else _ITEMSIZE[self.dtype_name]

    def __call__(self, *args, **kwargs):
        raise pickle.UnpicklingError(f"numgrad cannot build a torch.{self.name} from a pickle")

    def __repr__(self) -> str:
        return f"torch.{self.name}"


class _Storage:
    """A storage read from the archive: its bytes as a flat array of its element type."""

    __slots__ = ("array", "location", "type")

    def __init__(self, array, location, storage_type):
        self.array, self.location, self.type = array, location, storage_type


_FOREIGN = {name: _ForeignDtype(name) for name in _TORCH_DTYPES}


def _numgrad_dtype(name):
    d = getattr(numgrad, name, None)
    return d if isinstance(d, _dtype_cls) else None


def _unsupported(what):
    def refuse(*args, **kwargs):
        raise pickle.UnpicklingError(f"the checkpoint holds {what}, which numgrad does not have")

    return refuse


class _Parameter:
    """``torch.nn.parameter.Parameter`` as the pickle's NEWOBJ calls it: builds numgrad's."""

    def __new__(cls, data=None, requires_grad=True, *rest):
        return Parameter(data, requires_grad)


class _Loader:
    """One load of a PyTorch zip archive: its storages, the rebuild functions over them and the
    unpickler's globals."""

    def __init__(self, zf: zipfile.ZipFile, prefix: str, name: str, map_location, mmap_file):
        self.zf, self.prefix, self.name = zf, prefix, name
        self.map_location = map_location
        self.mmap = mmap_file
        self.storages: dict[str, _Storage] = {}
        self.legacy = zf is None  # (the legacy format: storages' bytes follow the pickle)
        order = zf.read(prefix + "byteorder").decode() if zf is not None and (
            prefix + "byteorder" in zf.NameToInfo) else sys.byteorder if zf is None else "little"
        if order not in ("little", "big"):
            raise ValueError("Unknown endianness type: " + order)
        self.swap = order != sys.byteorder
        self.globals = self.allowed_globals()

    def corrupt(self, why: str) -> RuntimeError:
        return RuntimeError(f"{self.name} is a damaged PyTorch checkpoint: {why}")

    # -- the globals
    def allowed_globals(self) -> dict:
        """PyTorch's weights-only allowlist, mapped to numgrad's objects."""
        g = {
            "collections.OrderedDict": OrderedDict, "collections.Counter": Counter,
            "torch.nn.parameter.Parameter": _Parameter,
            "torch.serialization._get_layout": _get_layout,
            "torch.Size": Size, "torch.Tensor": Tensor, "torch.device": _device,
            "_codecs.encode": codecs.encode, "builtins.bytearray": bytearray,
            "builtins.set": set, "builtins.complex": complex,
        }
        for name in _TORCH_DTYPES:
            g[f"torch.{name}"] = _numgrad_dtype(name) or _FOREIGN[name]
        for name in _TENSOR_CLASSES:
            legacy = getattr(numgrad, name, None)
            g[f"torch.{name}"] = legacy or _unsupported(f"a legacy torch.{name}")
            g[f"torch.cuda.{name}"] = _unsupported(f"a legacy torch.cuda.{name}")
        for name in _STORAGE_DTYPES:
            g[f"torch.{name}"] = _StorageType(name)
            g[f"torch.cuda.{name}"] = _StorageType(name)
        g["torch.storage.UntypedStorage"] = g["torch.UntypedStorage"]
        g["torch.storage.TypedStorage"] = _unsupported("a TypedStorage saved on its own")
        for name in _QSCHEMES:
            g[f"torch.{name}"] = _ForeignDtype(name)
        u = "torch._utils."
        g[u + "_rebuild_tensor"] = self.rebuild_tensor
        g[u + "_rebuild_tensor_v2"] = self.rebuild_tensor_v2
        g[u + "_rebuild_tensor_v3"] = self.rebuild_tensor_v3
        g[u + "_rebuild_parameter"] = self.rebuild_parameter
        g[u + "_rebuild_parameter_with_state"] = self.rebuild_parameter_with_state
        g[u + "_rebuild_device_tensor_from_cpu_tensor"] = self.rebuild_from_cpu_tensor
        g[u + "_rebuild_device_tensor_from_numpy"] = self.rebuild_from_numpy
        for kind, what in (("qtensor", "a quantized tensor"), ("sparse_tensor", "a sparse tensor"),
                           ("meta_tensor_no_storage", "a meta tensor"),
                           ("nested_tensor", "a nested tensor"),
                           ("wrapper_subclass", "a tensor subclass without storage")):
            g[f"{u}_rebuild_{kind}"] = _unsupported(what)
        g["torch._tensor._rebuild_from_type_v2"] = _rebuild_from_type_v2
        g.update(serialization._user_globals())
        return g

    def find_class(self, module: str, name: str, weights_only: bool, fallback):
        if (module, name) in _compat_pickle.NAME_MAPPING:
            module, name = _compat_pickle.NAME_MAPPING[(module, name)]
        elif module in _compat_pickle.IMPORT_MAPPING:
            module = _compat_pickle.IMPORT_MAPPING[module]
        full = f"{module}.{name}"
        found = self.globals.get(full)
        if found is not None:
            return found
        if weights_only:
            if module in _BLOCKED_MODULES:
                raise pickle.UnpicklingError(
                    f"Trying to load unsupported GLOBAL {full} whose module {module} is blocked.")
            shown = full[len("builtins."):] if full.startswith("builtins.") else full
            raise pickle.UnpicklingError(
                f"Unsupported global: GLOBAL {shown} was not an allowed global by default. "
                f"Please use `numgrad.serialization.add_safe_globals([{shown}])` or the "
                f"`numgrad.serialization.safe_globals([{shown}])` context manager to allowlist "
                "this global if you trust this class/function.")
        if module == "torch" or module.startswith("torch."):
            return _numgrad_equivalent(module, name)
        return fallback(module, name)

    # -- storages
    def storage(self, pid):
        if self.legacy and isinstance(pid, tuple) and len(pid) == 6 and pid[5] is None:
            pid = pid[:5]  # (a legacy storage id: its view metadata, None but for old views)
        if not isinstance(pid, tuple) or len(pid) != 5:
            raise pickle.UnpicklingError(f"unsupported persistent id {pid!r}")
        kind, storage_type, key, location, numel = pid
        if isinstance(kind, bytes):
            kind = kind.decode("ascii")
        if kind != "storage":
            raise pickle.UnpicklingError(
                f"Only persistent_load of storage is allowed, but got {kind!r}")
        if type(storage_type) is not _StorageType:
            raise pickle.UnpicklingError(f"a storage of unknown type {storage_type!r}")
        if isinstance(key, bytes):
            key = key.decode("ascii")
        if isinstance(location, bytes):
            location = location.decode("ascii")
        cached = self.storages.get(key)
        if cached is not None:
            return cached
        if type(numel) is not int or numel < 0 or not isinstance(key, str):
            raise self.corrupt(f"bad storage id {pid!r}")
        array = self.read_storage(key, numel, storage_type)
        s = self.storages[key] = _Storage(array, str(location), storage_type)
        return s

    def read_storage(self, key: str, numel: int, storage_type: _StorageType) -> np.ndarray:
        if self.legacy:
            return np.empty(numel, storage_type.np if storage_type.np is not None else np.dtype(
                f"u{storage_type.itemsize}"))  # (filled once the pickle is read)
        record = f"{self.prefix}data/{key}"
        info = self.zf.NameToInfo.get(record)
        if info is None:
            raise self.corrupt(f"its storage record {record} is missing")
        nbytes = numel * storage_type.itemsize
        if info.file_size != nbytes:
            raise self.corrupt(f"{record} holds {info.file_size} bytes where its storage of "
                               f"{numel} elements needs {nbytes}")
        code = storage_type.np if storage_type.np is not None else np.dtype(
            f"u{storage_type.itemsize}")
        if self.mmap is not None and info.compress_type == zipfile.ZIP_STORED:
            start = self.data_offset(info)
            if start % code.alignment == 0:
                array = np.ndarray((numel,), code, buffer=self.mmap, offset=start)
                return array.byteswap() if self.swap else array
        array = np.empty(numel, code)  # (the root of its tensors, as a storage of this type)
        try:
            with self.zf.open(info) as stream:
                view, done = memoryview(array.view(np.uint8)), 0
                while done < nbytes:
                    n = stream.readinto(view[done:])
                    if not n:
                        break
                    done += n
                stream.read(1)  # (reaches the end, where zipfile checks the CRC)
        except (zipfile.BadZipFile, OSError, EOFError, ValueError) as e:
            raise self.corrupt(f"{record} cannot be read ({e})") from None
        if done != nbytes:
            raise self.corrupt(f"{record} ends after {done} of its {nbytes} bytes")
        if self.swap:
            array.byteswap(inplace=True)
        return array

    def data_offset(self, info) -> int:
        header = bytes(self.mmap[info.header_offset:info.header_offset + 30])
        if len(header) != 30 or header[:4] != b"PK\x03\x04":
            raise self.corrupt(f"the local header of {info.filename} is damaged")
        name_length, extra_length = struct.unpack("<HH", header[26:30])
        return info.header_offset + 30 + name_length + extra_length

    # -- tensors
    def rebuild_tensor(self, storage, storage_offset, size, stride):
        return self.build(storage, storage_offset, size, stride, False, None)

    def rebuild_tensor_v2(self, storage, storage_offset, size, stride, requires_grad,
                          backward_hooks, metadata=None):
        return self.build(storage, storage_offset, size, stride, requires_grad, None)

    def rebuild_tensor_v3(self, storage, storage_offset, size, stride, requires_grad,
                          backward_hooks, dtype, metadata=None):
        return self.build(storage, storage_offset, size, stride, requires_grad, dtype)

    def rebuild_parameter(self, data, requires_grad, backward_hooks):
        return Parameter(data, requires_grad)

    def rebuild_parameter_with_state(self, data, requires_grad, backward_hooks, state):
        return self.rebuild_parameter(data, requires_grad, backward_hooks)

    def rebuild_from_cpu_tensor(self, data, dtype, device, requires_grad):
        t = data.to(device)
        return t.requires_grad_(True) if requires_grad else t

    def rebuild_from_numpy(self, data, dtype, device, requires_grad):
        return creation.tensor(data, device=device, requires_grad=requires_grad)

    def build(self, storage, offset, size, stride, requires_grad, dtype) -> Tensor:
        if type(storage) is not _Storage:
            raise pickle.UnpicklingError(f"a tensor over {type(storage).__name__}, not a storage")
        array = storage.array
        if dtype is not None:  # (v3: an untyped storage viewed as ``dtype``)
            name = dtype.name
            if isinstance(dtype, _dtype_cls):
                array = array.view(np.uint8).view(dtype.np)
        else:
            name = storage.type.dtype_name
        if isinstance(dtype, _ForeignDtype) or name not in _STORAGE_OF:
            raise TypeError(
                f"{self.name} holds a tensor of dtype torch.{name}, which numgrad does not have "
                "(its dtypes: float32, float64, float16, bfloat16, complex64, complex128, int64, "
                "int32, int16, int8, uint8 and bool); "
                "convert it with PyTorch first (tensor.float(), say)")
        try:
            size = tuple(int(n) for n in size)
            stride = tuple(int(s) for s in stride)
            item = array.dtype.itemsize
            if len(size) != len(stride) or min(size, default=0) < 0 or int(offset) < 0:
                raise ValueError("bad size, stride or offset")
            try:
                data = np.ndarray(size, array.dtype, buffer=array, offset=int(offset) * item,
                                  strides=tuple(s * item for s in stride))
            except ValueError:
                if 0 not in size:
                    raise
                data = np.empty(size, array.dtype)  # (an empty tensor past its storage's end)
        except (ValueError, TypeError) as e:
            raise self.corrupt(f"a tensor of size {size}, stride {stride} and offset {offset} "
                               f"does not fit its storage of {array.size} elements ({e})") from None
        t = _place(Tensor._wrap(data), storage.location, self.map_location)
        if requires_grad:
            t.requires_grad_(True)
        return t


def _get_layout(name):
    layout = getattr(numgrad, str(name).rpartition(".")[2], None)
    if layout is None:
        raise pickle.UnpicklingError(f"numgrad has no layout {name}")
    return layout


def _rebuild_from_type_v2(func, new_type, args, state):
    out = func(*args)
    if isinstance(new_type, type) and issubclass(new_type, Tensor) and not isinstance(
            out, new_type) and new_type is not Tensor:
        raise pickle.UnpicklingError(f"numgrad cannot rebuild a tensor of type {new_type}")
    if state:
        raise pickle.UnpicklingError("numgrad cannot rebuild a tensor with Python attributes")
    return out


def _numgrad_equivalent(module: str, name: str):
    """``weights_only=False``: PyTorch's ``module.name`` as numgrad's ``numgrad...name``."""
    target = "numgrad" + module[len("torch"):]
    try:
        obj = importlib.import_module(target)
        for part in name.split("."):
            obj = getattr(obj, part)
        return obj
    except (ImportError, AttributeError):
        raise pickle.UnpicklingError(
            f"the checkpoint needs {module}.{name}, which numgrad does not have") from None


def _unpickler(loader: _Loader, weights_only: bool, pickle_module, pickle_load_args: dict):
    """The unpickler class that reads a PyTorch file's pickles, and the keyword arguments to
    build it with: ``pickle``'s (always with ``weights_only``) or ``pickle_module``'s, with
    ``encoding`` "utf-8" unless ``pickle_load_args`` says, its classes found by ``loader``
    (allowed ones only with ``weights_only``) and its storages read by ``loader``."""
    module = pickle if weights_only or pickle_module is None else pickle_module
    args = dict(pickle_load_args)
    args.setdefault("encoding", "utf-8")

    class Unpickler(module.Unpickler):
        def find_class(self, mod_name, global_name):
            return loader.find_class(mod_name, global_name, weights_only, super().find_class)

        def persistent_load(self, pid):
            return loader.storage(pid)

    return Unpickler, args


def archive_prefix(names: list[str]) -> str | None:
    """The ``<name>/`` folder of a PyTorch archive's records (None if it is not one)."""
    if not names:
        return None
    prefix = names[0].split("/", 1)[0] + "/"
    return prefix if prefix + "data.pkl" in names else None


def load(zf: zipfile.ZipFile, prefix: str, name: str, map_location, weights_only: bool,
         pickle_module, pickle_load_args: dict, mmap_file):
    """Reads the object a PyTorch zip archive holds."""
    if prefix + "constants.pkl" in zf.NameToInfo:
        raise RuntimeError(f"{name} is a TorchScript archive (torch.jit.save), which numgrad "
                           "cannot load")
    loader = _Loader(zf, prefix, name, map_location, mmap_file)
    try:
        pickled = zf.read(prefix + "data.pkl")
    except (zipfile.BadZipFile, OSError, EOFError) as e:
        raise loader.corrupt(f"{prefix}data.pkl cannot be read ({e})") from None
    Unpickler, args = _unpickler(loader, weights_only, pickle_module, pickle_load_args)
    unpickler = Unpickler(io.BytesIO(pickled), **args)
    if not weights_only:
        return unpickler.load()
    try:
        return unpickler.load()
    except pickle.UnpicklingError as e:
        raise pickle.UnpicklingError(weights_only_message(str(e))) from None
    except (EOFError, ValueError, KeyError, IndexError, struct.error) as e:
        raise loader.corrupt(f"its {prefix}data.pkl is not a complete pickle ({type(e).__name__}:"
                             f" {e})") from None


LEGACY_MAGIC = 0x1950A86A20F9469CFC6C


def load_legacy(fileobj, name: str, map_location, weights_only: bool, pickle_module,
                pickle_load_args: dict):
    """Reads the legacy (before PyTorch 1.6, ``_use_new_zipfile_serialization=False``) format: the
    pickles of a magic number, a protocol version and the system's description, the object's
    pickle, the pickle of its storages' keys, then each storage as its element count (8 bytes,
    little-endian) and its bytes."""
    loader = _Loader(None, "", name, map_location, None)
    Unpickler, args = _unpickler(loader, weights_only, pickle_module, pickle_load_args)
    try:
        try:
            if Unpickler(fileobj, **args).load() != LEGACY_MAGIC:
                raise RuntimeError(f"{name} is not a checkpoint: it is a pickle that is not a "
                                   "torch.save file (no PyTorch magic number)")
            if Unpickler(fileobj, **args).load() != 1001:
                raise RuntimeError(f"{name}: an unknown legacy torch.save protocol version")
            info = Unpickler(fileobj, **args).load()
            if isinstance(info, dict) and info.get("little_endian") is not None:
                loader.swap = bool(info["little_endian"]) != (sys.byteorder == "little")
            result = Unpickler(fileobj, **args).load()
            keys = Unpickler(fileobj, **args).load()
        except pickle.UnpicklingError as e:
            if weights_only:
                raise pickle.UnpicklingError(weights_only_message(str(e))) from None
            raise
        for key in keys:
            storage = loader.storages.get(key)
            if storage is None:
                raise loader.corrupt(f"storage {key!r} is listed but never used")
            head = fileobj.read(8)
            count = int.from_bytes(head, "little") if len(head) == 8 else -1
            array = storage.array
            if count != array.size:
                raise loader.corrupt(f"storage {key!r} holds {count} elements where its id says "
                                     f"{array.size}")
            view = memoryview(array.view(np.uint8))
            if fileobj.readinto(view) != array.nbytes:
                raise loader.corrupt(f"storage {key!r} ends early")
            if loader.swap:
                array.byteswap(inplace=True)
    except (EOFError, struct.error) as e:
        raise loader.corrupt(f"the file ends early ({type(e).__name__}: {e})") from None
    return result


UNSAFE_MESSAGE = (
    "Re-running `numgrad.load` with `weights_only` set to `False` will likely succeed, "
    "but it can result in arbitrary code execution. Do it only if you got the file from a "
    "trusted source."
)
_DOCS_MESSAGE = (
    "\n\nCheck the documentation of numgrad.load to learn more about types accepted by default "
    "with weights_only (those of torch.load: "
    "https://pytorch.org/docs/stable/generated/torch.load.html)."
)


def weights_only_message(message: str) -> str:
    """PyTorch's text around a weights-only unpickler's error (``torch.load``'s
    ``_get_wo_message``), with numgrad's names."""
    if re.search(r"GLOBAL (\S+) was not an allowed global by default.", message):
        out = ("Weights only load failed. This file can still be loaded, to do so you have two "
               "options, \033[1mdo those steps only if you trust the source of the "
               f"checkpoint\033[0m. \n\t(1) {UNSAFE_MESSAGE}\n\t(2) Alternatively, to load with "
               "`weights_only=True` please check the recommended steps in the following error "
               "message.\n\tWeightsUnpickler error: " + message)
    else:
        out = f"Weights only load failed. {UNSAFE_MESSAGE}\n"
        if not re.search(r"whose module (\S+) is blocked", message):
            out += ("Please file an issue with the following so that we can make "
                    "`weights_only=True` compatible with your use case: WeightsUnpickler error: ")
        out += "\n\n" + message
    return out + _DOCS_MESSAGE
