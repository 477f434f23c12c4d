"""Tensor: an array with a dtype, a device and, for autograd, ``requires_grad``, ``grad`` and
``grad_fn``. The arithmetic lives in ``numgrad.ops``; this class only binds it as methods."""
from __future__ import annotations

import warnings
import weakref
from typing import TYPE_CHECKING, overload

import numpy as np

from . import _dtype, _lazy, _lowp
from ._dtype import CPU, CUDA, DLDeviceType, from_numpy_dtype, torch_name
from ._tensor_str import format_tensor
from . import autograd
from .autograd import grad_mode
from .autograd.node import AccumulateGrad, Node, RemovableHandle
from . import dispatch

if TYPE_CHECKING:
    # The methods and operators that numgrad/__init__.py binds at import, declared for type
    # checkers (a stub, _tensor_methods.pyi); at run time Tensor derives from object alone.
    from ._tensor_methods import _TensorMethods as _Methods
else:
    _Methods = object

_NONLEAF_GRAD_WARNING = (
    "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad "
    "attribute won't be populated during autograd.backward(). If you indeed want the .grad field "
    "to be populated for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor. If you "
    "access the non-leaf Tensor by mistake, make sure you access the leaf Tensor instead."
)
_ONLY_FLOAT = "Only Tensors of floating point and complex dtype can require gradients"

# Called with each subclass of Tensor once its class statement has run. overrides.py adds the
# one that switches ``__torch_function__`` dispatch on for a subclass defined outside numgrad:
# the layer above registers here, so this module imports nothing above it.
_subclass_hooks: list = []


def _legacy_data(args: tuple, np_dtype) -> np.ndarray:
    """The data of a legacy constructor call (``Tensor(...)``, ``FloatTensor(...)``)."""
    if not args:
        return np.empty(0, np_dtype)
    if all(isinstance(a, (int, np.integer)) and not isinstance(a, bool) for a in args):
        if any(a < 0 for a in args):
            raise RuntimeError(f"Trying to create tensor with negative dimension {min(args)}: "
                               f"{list(args)}")
        return np.empty(tuple(int(a) for a in args), np_dtype)
    if len(args) == 1 and isinstance(args[0], Size):
        return np.empty(tuple(args[0]), np_dtype)
    if len(args) != 1:
        raise TypeError("new(): invalid data type: expected sizes or a single sequence")
    data = args[0]
    if isinstance(data, Tensor):
        data = data._host()
    if np_dtype.kind == "V":  # (bfloat16: rounded from float32)
        return _lowp.cast(np.array(data, dtype=np.float32), np_dtype)
    return np.array(data, dtype=np_dtype)


# numgrad.autograd.backward and numgrad.ops.accumulate_into, once loaded (``_load_late``: both
# import this module, so they are looked up on first use, not here; a function-level import
# statement costs as much as a small op on every call)
_autograd_backward = _accumulate_into = None


def _grad_enabled() -> bool:
    return grad_mode.state.enabled


def _load_late() -> None:
    global _autograd_backward, _accumulate_into
    _autograd_backward, _accumulate_into = autograd.backward, _lazy.module("ops").accumulate_into


def _typename(obj) -> str:
    """``torch.typename``: ``numgrad.FloatTensor`` for a tensor, else the qualified type name."""
    if isinstance(obj, Tensor):
        return f"numgrad.{torch_name(obj._data.dtype)}Tensor"
    cls = type(obj)
    module = cls.__module__
    return cls.__qualname__ if module in ("", "builtins") else f"{module}.{cls.__qualname__}"


def _no_numpy_bfloat16(data) -> None:
    """PyTorch's refusal: NumPy has no bfloat16 (``t.float().numpy()`` is the way)."""
    if data.dtype.kind == "V":
        raise TypeError("Got unsupported ScalarType BFloat16")


class _VersionCounter:
    """Counts in-place modifications; shared by a tensor and every view of its storage."""

    __slots__ = ("value",)

    def __init__(self):
        self.value = 0


class _OutputHook:
    """``Tensor.register_hook``'s hook on one output of a node with several (``split``'s parts):
    run on that output's gradient, in the list of them the node gets (not run where that output
    received none)."""

    __slots__ = ("hook", "nr", "__name__")

    def __init__(self, hook, nr: int):
        self.hook = hook
        self.nr = nr
        self.__name__ = getattr(hook, "__name__", type(hook).__name__)

    def __call__(self, grads):
        grad = grads[self.nr]
        if grad is None:
            return None
        result = self.hook(grad)
        if result is None:
            return None
        autograd.engine._check_hook_result(self.hook, grad, result)
        grads = list(grads)
        grads[self.nr] = result
        return grads


class Tensor(_Methods):
    """A multi-dimensional array that can record the operations applied to it."""

    __slots__ = (
        "_data", "_requires_grad", "_grad", "_grad_fn", "_version_counter", "_hooks",
        "_accumulator", "_base", "_view_version", "_output_nr", "_multi_nr", "__weakref__",
    )
    __array_priority__ = 1000  # so that ndarray ⊕ Tensor defers to Tensor's reflected operators
    _shares_data = False  # True for a SharedGrad

    def __init__(self, *args, requires_grad: bool = False):
        """PyTorch's legacy constructor, a tensor of the default float dtype: ``Tensor()``
        (empty), ``Tensor(2, 3)`` (uninitialised, of that size), ``Tensor(data)`` (a copy of a
        sequence, an array or a tensor's values)."""
        self._adopt(_legacy_data(args, _dtype.default_for_category(_dtype.FLOAT).np), False)
        if requires_grad:
            self.requires_grad_(True)

    def __init_subclass__(cls, **kwargs):
        """A subclass defined outside numgrad switches ``__torch_function__`` dispatch on."""
        super().__init_subclass__(**kwargs)
        for hook in _subclass_hooks:
            hook(cls)

    def __format__(self, format_spec: str) -> str:
        """``f"{loss:.4f}"``: a 0-d tensor formats as its value, as in PyTorch; any other tensor
        as its ``str`` (with an empty spec)."""
        if self._data.ndim == 0 and type(self) is Tensor:
            return self.item().__format__(format_spec)
        return object.__format__(self, format_spec)

    def type(self, dtype=None, non_blocking: bool = False):
        """With no argument, the legacy type name (``'numgrad.FloatTensor'``); else this tensor
        cast to ``dtype`` (a dtype, a legacy type such as ``numgrad.LongTensor``, or its name)."""
        if dtype is None:
            return _legacy_name(self)
        if isinstance(dtype, str):
            name = dtype.replace("torch.", "numgrad.")
            cuda = ".cuda." in name
            kind = name.rsplit(".", 1)[-1]
            if kind not in _LEGACY_KINDS:
                raise ValueError(f"invalid type: '{dtype}'")
            out = self.to(_dtype._BY_NAME[_LEGACY_KINDS[kind]])
            return out.cuda() if cuda and not out.is_cuda else out
        legacy = getattr(dtype, "_legacy_dtype", None)
        return self.to(_dtype._BY_NAME[legacy] if legacy is not None else dtype)

    @classmethod
    def _wrap(cls, data: np.ndarray, requires_grad: bool = False) -> "Tensor":
        """The fast constructor used by ops: wraps an array that the caller owns."""
        t = object.__new__(cls)
        t._data = data  # (``_adopt``, inline: this runs for every op's result)
        t._requires_grad = requires_grad
        t._grad = t._grad_fn = t._hooks = t._accumulator = t._base = None
        t._version_counter = _VersionCounter()
        return t

    def _adopt(self, data: np.ndarray, requires_grad: bool) -> None:
        """Sets every slot: ``data`` with a fresh autograd state."""
        self._data = data
        self._requires_grad = requires_grad
        self._grad = None
        self._grad_fn = None
        self._version_counter = _VersionCounter()
        self._hooks = None
        self._accumulator = None
        self._base = None

    # ----------------------------------------------------------------- metadata
    @property
    def dtype(self) -> _dtype.dtype:
        return from_numpy_dtype(self._data.dtype)

    @property
    def device(self) -> _dtype.device:
        return CPU if isinstance(self._data, np.ndarray) else CUDA

    @property
    def is_cuda(self) -> bool:
        return not isinstance(self._data, np.ndarray)

    @property
    def is_cpu(self) -> bool:
        """Whether the data is in host memory."""
        return isinstance(self._data, np.ndarray)

    @property
    def layout(self) -> _dtype.layout:
        """``numgrad.strided``: numgrad's tensors are all dense and strided."""
        return _dtype.strided

    @property
    def is_sparse(self) -> bool:
        """False: numgrad has no sparse tensors."""
        return False

    @property
    def is_quantized(self) -> bool:
        """False: numgrad has no quantized tensors."""
        return False

    @property
    def is_meta(self) -> bool:
        """False: numgrad has no meta device (every tensor has its data)."""
        return False

    @property
    def is_nested(self) -> bool:
        """False: numgrad has no nested tensors."""
        return False

    def _host(self) -> np.ndarray:
        """The data as a NumPy array: itself on the CPU, a copy from a GPU (a sync, which raises
        an index that an earlier kernel found out of range)."""
        data = self._data
        if isinstance(data, np.ndarray):
            return data
        # (ops.registry's CUDA kernels, the ones numgrad.compile records; the registry imports
        # this module)
        return _lazy.module("ops.registry").kernels_of(data).to_host(data)

    @property
    def __cuda_array_interface__(self) -> dict:
        """The CUDA Array Interface of a CUDA tensor's memory, for CuPy, PyTorch, Numba and
        others to use it without a copy; like PyTorch, an AttributeError on CPU tensors (so that
        ``hasattr`` says no) and a RuntimeError on tensors that require grad."""
        if isinstance(self._data, np.ndarray):
            raise AttributeError(
                f"Can't get __cuda_array_interface__ on non-CUDA tensor type: {_typename(self)} "
                "If CUDA data is required use tensor.cuda() to copy tensor to device memory."
            )
        if self._requires_grad:
            raise RuntimeError(
                "Can't get __cuda_array_interface__ on Variable that requires grad. If gradients "
                "aren't required, use var.detach() to get Variable that doesn't require grad."
            )
        return _lazy.module("kernels.cuda.interop").export_interface(self._data)

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """A DLPack capsule over this tensor's memory (``numgrad.utils.dlpack``): for NumPy's,
        PyTorch's, JAX's ``from_dlpack`` to share it without a copy. As in PyTorch, refused
        (BufferError) for a tensor that requires grad; a versioned capsule when ``max_version``
        is at least (1, 0). CUDA tensors are shared through ``__cuda_array_interface__``."""
        if self._requires_grad:
            raise BufferError("Can't export tensors that require gradient, use tensor.detach()")
        if stream is not None and type(stream) is not int:
            raise TypeError("stream must be ``int`` or ``none``")
        if not isinstance(self._data, np.ndarray):
            raise BufferError(
                "numgrad's CUDA tensors are not exported through DLPack (their device arrays have "
                "no DLPack support); use __cuda_array_interface__ (torch.as_tensor, cupy.asarray "
                "and numba.cuda.as_cuda_array take it), or tensor.cpu()")
        if stream is not None and stream != -1:
            raise AssertionError("stream should be None on cpu.")
        self._value_read("__dlpack__ of a tensor (its memory leaves the trace)")
        kwargs = {"copy": copy}
        if max_version is not None:
            kwargs["max_version"] = tuple(max_version)
        if dl_device is not None:
            kwargs["dl_device"] = tuple(dl_device)
        return self._data.__dlpack__(**kwargs)

    def __dlpack_device__(self) -> tuple:
        """``(DLDeviceType.kDLCPU, 0)`` or ``(DLDeviceType.kDLCUDA, index)``."""
        if isinstance(self._data, np.ndarray):
            return (DLDeviceType.kDLCPU, 0)
        return (DLDeviceType.kDLCUDA, self.device.index or 0)

    def _check_host(self) -> None:
        if not isinstance(self._data, np.ndarray):
            raise TypeError(
                "can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() to copy the "
                "tensor to host memory first."
            )

    @property
    def shape(self) -> "Size":
        return Size(self._data.shape)

    @overload
    def size(self, dim: None = None) -> "Size": ...
    @overload
    def size(self, dim: int) -> int: ...

    def size(self, dim: int | None = None) -> "Size | int":
        """The shape, or the size of dimension ``dim``."""
        if dim is None:
            return Size(self._data.shape)
        return self._data.shape[_wrap_dim(dim, self._data.ndim)]

    @property
    def ndim(self) -> int:
        return self._data.ndim

    def dim(self) -> int:
        return self._data.ndim

    ndimension = dim

    def numel(self) -> int:
        return self._data.size

    nelement = numel

    @property
    def itemsize(self) -> int:
        """Bytes per element."""
        return self._data.dtype.itemsize

    def element_size(self) -> int:
        """Bytes per element."""
        return self._data.dtype.itemsize

    @property
    def nbytes(self) -> int:
        """Bytes of the elements (``numel() * itemsize``, as PyTorch: not of the storage)."""
        return self._data.size * self._data.dtype.itemsize

    @overload
    def stride(self, dim: None = None) -> tuple[int, ...]: ...
    @overload
    def stride(self, dim: int) -> int: ...

    def stride(self, dim: int | None = None) -> "tuple[int, ...] | int":
        """The step in elements between neighbours along each dimension (of ``dim``). The
        strides of dimensions of size 1 and of empty tensors do not move through memory; they
        are PyTorch's (a new dimension's stride is the next one's extent, an empty tensor's
        are a contiguous one's), not the placeholders NumPy keeps there."""
        data = self._data
        shape = data.shape
        item = data.dtype.itemsize
        steps = [s // item for s in data.strides]
        if data.size == 0 and not any(steps):
            steps = [1] * len(shape)
            for d in range(len(shape) - 2, -1, -1):
                steps[d] = steps[d + 1] * max(shape[d + 1], 1)
        else:
            for d in range(len(shape) - 1, -1, -1):
                if shape[d] == 1 and steps[d] == 0:
                    steps[d] = steps[d + 1] * shape[d + 1] if d + 1 < len(shape) else 1
        steps = tuple(steps)
        return steps if dim is None else steps[_wrap_dim(dim, data.ndim)]

    def storage_offset(self) -> int:
        """The offset in elements of the first element from the start of the storage it
        shares with its base (0 for a tensor with storage of its own)."""
        data = self._data
        if isinstance(data, np.ndarray):
            root = data
            while isinstance(root.base, np.ndarray):
                root = root.base
        else:
            root = self._base._data if self._base is not None else data
        if root is data:
            return 0
        return (self.data_ptr() - _address(root)) // data.dtype.itemsize

    def data_ptr(self) -> int:
        """The address of the first element."""
        return _address(self._data)

    def is_floating_point(self) -> bool:
        return self.dtype.is_floating_point

    def is_complex(self) -> bool:
        """Whether the dtype is a complex one (``complex64``, ``complex128``)."""
        return self.dtype.is_complex

    def is_contiguous(self) -> bool:
        """Whether the elements lie in memory in row-major order without gaps."""
        data = self._data
        if isinstance(data, np.ndarray):
            return bool(data.flags.c_contiguous)
        return bool(data.is_c_contiguous())

    def __len__(self) -> int:
        if self._data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    @property
    def _version(self) -> int:
        return self._version_counter.value

    # ----------------------------------------------------------------- autograd state
    @property
    def requires_grad(self) -> bool:
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        self.requires_grad_(value)

    def requires_grad_(self, requires_grad: bool = True) -> "Tensor":
        """Sets ``requires_grad`` in place on a leaf."""
        if self.grad_fn is not None:
            if requires_grad:
                return self
            raise RuntimeError(
                "you can only change requires_grad flags of leaf variables. If you want to use a "
                "computed variable in a subgraph that doesn't require differentiation use "
                "var_no_grad = var.detach()."
            )
        if requires_grad and self.dtype._category < _dtype.FLOAT:
            raise RuntimeError(_ONLY_FLOAT)
        self._requires_grad = bool(requires_grad)
        return self

    @property
    def is_leaf(self) -> bool:
        return self.grad_fn is None

    @property
    def grad(self) -> "Tensor | None":
        if self.grad_fn is not None and not self.retains_grad and self._grad is None:
            warnings.warn(_NONLEAF_GRAD_WARNING, UserWarning, stacklevel=2)
        return self._grad

    @grad.setter
    def grad(self, value: "Tensor | None") -> None:
        if value is not None:
            if not isinstance(value, Tensor):
                raise TypeError(f"assigned grad expected to be a Tensor or None but got grad of type {type(value).__name__}")
            if value.dtype is not self.dtype:
                raise RuntimeError("assigned grad has data of a different type")
            if value.shape != self.shape:
                raise RuntimeError("assigned grad has data of a different size")
        self._grad = value

    @property
    def retains_grad(self) -> bool:
        fn = self.grad_fn
        if fn is None or fn._retained is None:
            return False
        ref = fn._retained.get(self.output_nr) if type(fn._retained) is dict else fn._retained
        return ref is not None and ref() is self

    def retain_grad(self) -> None:
        """Makes ``backward()`` fill this non-leaf tensor's ``.grad``; a no-op on leaves."""
        fn = self.grad_fn
        if fn is None:
            if not self._requires_grad:
                raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
            return
        if fn._num_outputs != 1:  # (one of several outputs: {output_nr: tensor}, see engine)
            if fn._retained is None:
                fn._retained = {}
            fn._retained[self.output_nr] = weakref.ref(self)
        else:
            fn._retained = weakref.ref(self)

    @property
    def output_nr(self) -> int:
        """Which output of its ``grad_fn`` this tensor is (0 for a leaf, and for the result of
        an op with one output): ``split``'s parts are outputs 0, 1, ... of one node."""
        fn = self.grad_fn
        if fn is None:
            return 0
        if fn._num_outputs != 1:
            return getattr(self, "_output_nr", 0)
        if type(fn) is _lazy.module("autograd.function").FunctionOutput:  # (a custom Function's)
            return fn.next_functions[0][1]
        return 0

    def register_hook(self, hook) -> RemovableHandle:
        """Registers ``hook(grad)``, called with this tensor's gradient during backward; it may
        return a replacement gradient. Returns a handle whose ``remove()`` unregisters it."""
        if not self._requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        fn = self.grad_fn
        if fn is not None:
            if fn._num_outputs != 1:  # (its own output's gradient, of the node's several)
                hook = _OutputHook(hook, self.output_nr)
            return fn._tensor_prehook(hook)
        if self._hooks is None:
            self._hooks = {}
        handle = RemovableHandle(self._hooks)
        self._hooks[handle.id] = hook
        return handle

    def register_post_accumulate_grad_hook(self, hook) -> RemovableHandle:
        """Registers ``hook(tensor)`` on a leaf, called after backward has accumulated its
        gradient into ``.grad`` (not by ``autograd.grad``, which accumulates nothing)."""
        if not self._requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self.grad_fn is not None:
            raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
        hooks = autograd.engine.post_accumulate_hooks(self)
        handle = RemovableHandle(hooks)
        hooks[handle.id] = hook
        return handle

    def _grad_accumulator(self) -> AccumulateGrad:
        """This leaf's ``AccumulateGrad`` node; one per leaf while the graph holds it."""
        node = self._accumulator() if self._accumulator is not None else None
        if node is None:
            node = AccumulateGrad.__new__(AccumulateGrad)  # (AccumulateGrad(self), inline:
            node.next_functions = ()                        # made once per leaf and graph)
            node._pre_hooks = node._retained = None
            node.variable = self
            self._accumulator = weakref.ref(node)
        return node

    def _edge(self):
        """The node a backward from this tensor starts at: its ``grad_fn`` (or its leaf's
        ``AccumulateGrad``); for one of a node's several outputs, a node that hands the
        gradient on to that output (``autograd.function.OutputRoot``)."""
        fn = self.grad_fn
        if fn is None:
            return self._grad_accumulator()
        if fn._num_outputs != 1:
            return _lazy.module("autograd.function").OutputRoot(fn, self.output_nr)
        return fn

    def _edge_pair(self) -> tuple:
        """The edge to this tensor's history: ``(node, output_nr)``, as PyTorch's."""
        fn = self.grad_fn
        if fn is None:
            return self._grad_accumulator(), 0
        return fn, (0 if fn._num_outputs == 1 else getattr(self, "_output_nr", 0))

    @property
    def grad_fn(self) -> "Node | None":
        """The node that made this tensor (None for a leaf). A view (``_base`` set: its root
        base, whose storage and version counter it shares) whose base was written in place after
        its history was recorded (by an op on the base or on another of its views) gets a fresh
        one, ``AsStridedBackward0`` of the base's current history, as PyTorch regenerates it: no
        stale history is ever used."""
        fn = self._grad_fn
        if self._base is not None and self._view_version != self._version_counter.value:
            fn = _lazy.module("ops.indexing").regenerate_view(self)
        return fn

    @grad_fn.setter
    def grad_fn(self, fn) -> None:
        self._grad_fn = fn
        if self._base is not None:
            self._view_version = self._version_counter.value

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None) -> None:
        """Computes the gradient of this tensor with respect to the graph's leaves and
        accumulates it into their ``.grad``. ``gradient`` is required unless this tensor holds a
        single element; it is the vector of the vector-Jacobian product."""
        if _autograd_backward is None:
            _load_late()
        _autograd_backward(self, gradient, retain_graph, create_graph, inputs=inputs)

    def detach(self) -> "Tensor":
        """A tensor sharing this one's data, with no history."""
        t = Tensor._wrap(self._data)
        t._version_counter = self._version_counter
        return t

    def detach_(self) -> "Tensor":
        """Detaches this tensor from the graph that created it, making it a leaf. A view (of any
        tensor, made in any mode) refuses, with PyTorch's error."""
        if self._base is not None:
            raise RuntimeError(
                "Can't detach views in-place. Use detach() instead. If you are using "
                "DistributedDataParallel (DDP) for training, and gradient_as_bucket_view is set "
                "as True, gradients are views of DDP buckets, and hence detach_() cannot be "
                "called on these gradients. To fix this error, please refer to the "
                "Optimizer.zero_grad() function in torch/optim/optimizer.py as the solution.")
        self._grad_fn = None
        self._requires_grad = False
        return self

    @property
    def data(self) -> "Tensor":
        """The values without history. Unlike ``detach()``, changes made through ``.data`` are not
        seen by autograd's version checks (as in PyTorch)."""
        return Tensor._wrap(self._data)

    @data.setter
    def data(self, value: "Tensor") -> None:
        self._data = value._data

    # ----------------------------------------------------------------- legacy and aliases
    def new(self, *args, device=None) -> "Tensor":
        """PyTorch's legacy constructor of this tensor's dtype and device: ``x.new()`` (empty),
        ``x.new(2, 3)`` (uninitialised, of that size), ``x.new(data)`` (a copy of a sequence);
        ``x.new(t)`` of a tensor ``t`` of the same dtype and device is ``t``'s alias (a view,
        ``AliasBackward0`` where it requires grad), of another PyTorch's TypeError."""
        if len(args) == 1 and isinstance(args[0], Tensor):
            other = args[0]
            if other._data.dtype != self._data.dtype or other.device != self.device:
                raise TypeError(f"expected {_options(self)} (got {_options(other)})")
            return other[...]
        if len(args) == 1 and isinstance(args[0], (bool, float, complex)):
            raise TypeError(f"new(): data must be a sequence (got {type(args[0]).__name__})")
        if len(args) > 1 and isinstance(args[0], int):
            for i, a in enumerate(args):
                if not isinstance(a, (int, np.integer)) or isinstance(a, bool):
                    raise TypeError(
                        f"new(): argument 'size' failed to unpack the object at pos {i + 1} with "
                        f"error \"type must be tuple of ints,but got {type(a).__name__}\"")
        out = Tensor._wrap(_legacy_data(args, self._data.dtype))
        target = self.device if device is None else device
        return out if str(target) == "cpu" else out.to(target)

    def where(self, condition: "Tensor", other) -> "Tensor":
        """``numgrad.where(condition, self, other)``: this tensor's elements where ``condition``,
        else ``other``'s."""
        return _lazy.module("ops").where(condition, self, other)

    # ----------------------------------------------------------------- conversion
    def numpy(self) -> np.ndarray:
        """The data as a NumPy array, sharing memory."""
        if self._requires_grad and _grad_enabled():  # (in no_grad it is allowed, as in PyTorch)
            raise RuntimeError(
                "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() "
                "instead."
            )
        self._check_host()
        self._value_read("Tensor.numpy() (the values leave the trace)")
        _no_numpy_bfloat16(self._data)
        return self._data

    def __array__(self, dtype=None, copy=None):
        if self._requires_grad and _grad_enabled():
            raise RuntimeError(
                "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() "
                "instead."
            )
        self._check_host()
        self._value_read("np.asarray of a tensor (the values leave the trace)")
        _no_numpy_bfloat16(self._data)
        if dtype is not None and np.dtype(dtype) != self._data.dtype:
            return self._data.astype(dtype)
        return self._data.copy() if copy else self._data

    def _value_read(self, what: str) -> None:
        """While numgrad.compile traces, the data leaving as an array (``numpy()``, NumPy's
        ``asarray``) is a break: the caller could hold or change it behind the recorded
        program."""
        if dispatch._pushed:
            mode = dispatch.stands_for(self._data)
            if mode is not None:
                mode.graph_break(what)

    def _number_read(self, what: str) -> None:
        """While numgrad.compile traces, a value read out as Python numbers (``item()``,
        ``bool()``, printing) is told to the dispatch mode (``numgrad.dispatch``): the call's
        Python then runs at every call, on the re-run path, which computes what is pending
        before it reads."""
        if dispatch._pushed:
            mode = dispatch.stands_for(self._data)
            if mode is not None:
                mode.read(what)

    def item(self) -> "int | float | bool":
        """The value of a one-element tensor as a Python number."""
        self._number_read("Tensor.item() (a value read from a tensor)")
        if self._data.size != 1:
            raise RuntimeError(
                f"a Tensor with {self._data.size} elements cannot be converted to Scalar"
            )
        return _lowp.to_float(self._host()).reshape(-1)[0].item()

    def tolist(self):
        self._number_read("Tensor.tolist() (a value read from a tensor)")
        return _lowp.to_float(self._host()).tolist()

    def __float__(self) -> float:
        self._number_read("float() of a tensor (a value read from a tensor)")
        if self._requires_grad:
            import numgrad

            numgrad._warn_once("Converting a tensor with requires_grad=True to a scalar may lead "
                               "to unexpected behavior.\nConsider using tensor.detach() first.")
        self._one_element()
        return float(self.item())

    def __complex__(self) -> complex:
        self._number_read("complex() of a tensor (a value read from a tensor)")
        self._one_element()
        return complex(self.item())

    def __int__(self) -> int:
        self._number_read("int() of a tensor (a value read from a tensor)")
        self._one_element()
        return int(self.item())

    def _one_element(self) -> None:
        """PyTorch's error for ``float()``, ``int()`` or ``complex()`` of a tensor that does not
        hold one element (``item()`` words it otherwise)."""
        if self._data.size != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")

    def __bool__(self) -> bool:
        self._number_read("bool() of a tensor (Python control flow on a tensor's value)")
        if self._data.size != 1:
            raise RuntimeError(
                "Boolean value of Tensor with more than one value is ambiguous"
            )
        return bool(self.item())

    def __index__(self) -> int:
        if self.dtype._category >= _dtype.FLOAT or self._data.size != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    def __repr__(self) -> str:
        self._number_read("printing a tensor (its values are read)")
        suffixes = []
        if self.grad_fn is not None:
            suffixes.append(f"grad_fn=<{type(self.grad_fn).__name__}>")
        elif self._requires_grad:
            suffixes.append("requires_grad=True")
        data = self._host()
        return format_tensor(data, self.dtype.name, device=str(self.device), suffixes=suffixes)

    def __hash__(self) -> int:
        return id(self)

    def __iter__(self):
        if self._data.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self._data.shape[0]))

    def _add_inplace_data(self, data: np.ndarray, checked: bool = False) -> None:
        """``self += data`` on the raw data, bumping the version (used to accumulate ``.grad``;
        ``checked``: the caller has run ``ops.check_accumulable`` on it)."""
        if _accumulate_into is None:
            _load_late()
        _accumulate_into(self._data, data, checked)
        self._version_counter.value += 1


def _options(t: Tensor) -> str:
    """PyTorch's ``TensorOptions`` of a tensor, as its messages print them."""
    return (f"TensorOptions(dtype={_dtype.c_name(t._data.dtype)}, device={t.device}, "
            "layout=Strided, requires_grad=false (default), pinned_memory=false (default), "
            "memory_format=(nullopt))")


def _address(data) -> int:
    """The address of an array's first element (host or device)."""
    return _lazy.module("ops.registry").kernels_of(data).address(data)


class Size(tuple):
    """A tensor's shape: a tuple that prints as ``numgrad.Size([2, 3])``."""

    def numel(self) -> int:
        n = 1
        for s in self:
            n *= s
        return n

    def __repr__(self) -> str:
        return f"numgrad.Size({list(self)})"


def _wrap_dim(dim: int, ndim: int) -> int:
    """A dimension index made non-negative, with PyTorch's error for one out of range."""
    lo, hi = (-1, 0) if ndim == 0 else (-ndim, ndim - 1)
    if not lo <= dim <= hi:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{lo}, {hi}], but got {dim})"
        )
    return dim + ndim if dim < 0 else dim


class SharedGrad(Tensor):
    """A gradient inside the backward engine that is another tensor's data, passed on without a
    copy (``1 * other`` in ``ops.elementwise._times``). The engine only reads it: it never adopts
    it as ``.grad`` nor writes into it, and ``engine._private`` gives user code (hooks, custom
    Functions' backward, ``autograd.grad``'s results) a copy instead."""

    __slots__ = ()
    _shares_data = True


_LEGACY_KINDS = {"FloatTensor": "float32", "DoubleTensor": "float64", "LongTensor": "int64",
                 "IntTensor": "int32", "BoolTensor": "bool", "HalfTensor": "float16",
                 "BFloat16Tensor": "bfloat16", "ByteTensor": "uint8", "CharTensor": "int8",
                 "ShortTensor": "int16"}
_LEGACY_BY_DTYPE = {v: k for k, v in _LEGACY_KINDS.items()}
_LEGACY_BY_DTYPE.update(complex64="ComplexFloatTensor", complex128="ComplexDoubleTensor")


def _legacy_name(t: Tensor) -> str:
    kind = _LEGACY_BY_DTYPE.get(t.dtype.name, "FloatTensor")
    return f"numgrad.{kind}" if isinstance(t._data, np.ndarray) else f"numgrad.cuda.{kind}"


class _LegacyType(type):
    """The metaclass of the legacy typed constructors: ``isinstance(t, numgrad.LongTensor)``
    asks whether ``t`` is a host tensor of that dtype, as in PyTorch."""

    def __instancecheck__(cls, obj) -> bool:
        return (isinstance(obj, Tensor) and isinstance(obj._data, np.ndarray)
                and obj.dtype.name == cls._legacy_dtype)

    def __repr__(cls) -> str:
        return f"<class 'numgrad.{cls.__name__}'>"


def _legacy_class(name: str, np_name: str):
    def __new__(cls, *args, device=None):
        t = Tensor._wrap(_legacy_data(args, _dtype._BY_NAME[np_name].np))
        return t if device is None else t.to(device)

    doc = (f"``numgrad.{name}(...)``: PyTorch's legacy constructor of {np_name} tensors (sizes, "
           "or data); ``isinstance`` checks the dtype.")
    return _LegacyType(name, (), {"__new__": __new__, "_legacy_dtype": np_name, "__doc__": doc})


(FloatTensor, DoubleTensor, LongTensor, IntTensor, BoolTensor, HalfTensor, BFloat16Tensor,
 ByteTensor, CharTensor, ShortTensor) = (
    _legacy_class(name, np_name) for name, np_name in _LEGACY_KINDS.items())
