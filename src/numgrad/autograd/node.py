"""Graph nodes (``grad_fn``): what the engine runs backwards.

A node holds edges to the nodes of its inputs (``next_functions``), the shapes and dtypes its
input gradients must have, and the values its backward formula needs. It never holds its own
output: a saved output is kept as bare data and rebuilt on unpacking, so graphs have no reference
cycles and die by reference counting as soon as the last tensor goes.
"""
from __future__ import annotations

import itertools

from .._dtype import torch_name
from . import anomaly_mode

_FREED = (
    "Trying to backward through the graph a second time (or directly access saved tensors after "
    "they have already been freed). Saved intermediate values of the graph are freed when you call "
    ".backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the "
    "graph a second time or if you need to access saved tensors after calling backward."
)

_HINT_ANOMALY_OFF = (
    "Hint: enable anomaly detection to find the operation that failed to compute its gradient, "
    "with numgrad.autograd.set_detect_anomaly(True, check_nan=False)."
)
_HINT_ANOMALY_ON = (
    "Hint: the backtrace further above shows the operation that failed to compute its gradient. "
    "The variable in question was changed in there or anywhere later. Good luck!"
)

_handle_ids = itertools.count()


class RemovableHandle:
    """Returned by ``register_hook`` (and a module's ``register_forward_hook``...);
    ``remove()`` unregisters the hook (and its entry in ``extra_dict``). Also
    ``numgrad.utils.hooks.RemovableHandle``."""

    __slots__ = ("_hooks", "_extra", "id")

    def __init__(self, hooks: dict, *, extra_dict: dict | None = None):
        self._hooks = hooks
        self._extra = extra_dict
        self.id = next(_handle_ids)

    def remove(self) -> None:
        self._hooks.pop(self.id, None)
        if self._extra is not None:
            self._extra.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


class SavedTensor:
    """A tensor saved for backward, with the version it had when saved.

    An input is kept as the tensor itself. The node's own output is kept as its data and version
    counter only, and unpacked as a fresh tensor whose ``grad_fn`` is the node (as PyTorch does),
    so no cycle node → output → node is formed.
    """

    __slots__ = ("tensor", "data", "counter", "version", "requires_grad")

    def __init__(self, tensor, is_output: bool):
        self.counter = tensor._version_counter
        self.version = self.counter.value
        if is_output:
            self.tensor = None
            self.data = tensor._data
            self.requires_grad = tensor.requires_grad
        else:
            self.tensor = tensor
            self.data = None

    def check_version(self, node=None) -> None:
        if self.counter.value == self.version:
            return
        t = self.tensor
        data = t._data if t is not None else self.data
        kind = torch_name(data.dtype)
        owner = t.grad_fn if t is not None else node
        made_by = f", which is output 0 of {owner.name()}," if owner is not None else ""
        raise RuntimeError(
            "one of the variables needed for gradient computation has been modified by an "
            f"inplace operation: [numgrad.{kind}Tensor {list(data.shape)}]{made_by} is at version "
            f"{self.counter.value}; expected version {self.version} instead. "
            + (_HINT_ANOMALY_ON if anomaly_mode.state.enabled else _HINT_ANOMALY_OFF)
        )

    def unpack(self, node):
        if self.counter.value != self.version:
            self.check_version(node)
        if self.tensor is not None:
            return self.tensor
        # A saved output, rebuilt (``Tensor._wrap`` inline, with the saved counter and the node:
        # this runs in the backward of every op that saves its output, relu, tanh, exp ...).
        out = _new_tensor()
        out._data = self.data
        out._requires_grad = requires_grad = self.requires_grad
        out._grad_fn = node if requires_grad else None
        out._grad = out._hooks = out._accumulator = out._base = None
        out._version_counter = self.counter
        return out


def _new_tensor():
    """A bare ``Tensor`` (its slots unset), for ``SavedTensor.unpack``. tensor.py imports this
    module, so ``Tensor`` cannot be imported here at load: the first call imports it and rebinds
    this name to a function without the import."""
    global _new_tensor
    from ..tensor import Tensor

    def _new_tensor(new=object.__new__, cls=Tensor):
        return new(cls)

    return _new_tensor()


class Node:
    """A backward function. ``name()`` is PyTorch's (``MulBackward0``).

    ``_anomaly`` is set only on nodes recorded in anomaly mode (``anomaly_mode.record``).
    """

    __slots__ = ("next_functions", "_pre_hooks", "_retained", "_anomaly", "__weakref__")
    _num_outputs = 1  # a node with several outputs gets one gradient each (a list) in apply
    # What the engine checks each input's gradient against (None: nothing; OpNode and custom
    # Functions' nodes set them per node).
    input_shapes = input_dtypes = None
    op = None  # the op declaration of a registered op's node (``ops.registry``); None: user code

    def __init__(self):
        self.next_functions = ()
        self._pre_hooks = None
        self._retained = None

    _name = None  # the full name where it differs from the class name (torch::autograd::…)

    @classmethod
    def name(cls) -> str:
        return cls._name or cls.__name__

    def apply(self, grad):
        """The gradients of the inputs, one per edge in ``next_functions`` (None where unused)."""
        raise NotImplementedError

    def register_prehook(self, hook) -> RemovableHandle:
        """A hook run on the gradient of this node's output before the node runs."""
        if self._pre_hooks is None:
            self._pre_hooks = {}
        handle = RemovableHandle(self._pre_hooks)
        self._pre_hooks[handle.id] = hook
        return handle

    # The engine asks these; nodes that save nothing can always run again.
    def released(self) -> bool:
        return False

    def check_saved(self) -> None:
        pass

    def release(self) -> None:
        pass

    def __repr__(self) -> str:
        return f"<{type(self).__name__} object at {hex(id(self))}>"


class AccumulateGrad(Node):
    """The node of a leaf that requires grad: adds the incoming gradient into ``leaf.grad``."""

    __slots__ = ("variable",)

    def __init__(self, variable):
        super().__init__()
        self.variable = variable

    def apply(self, grad):
        return ()


class OpNode(Node):
    """The node recorded by a registered op; subclassed once per op under PyTorch's node name."""

    __slots__ = ("_saved", "_released", "params", "input_shapes", "input_dtypes", "needs_input_grad",
                 "input_devices")
    op = None  # the op declaration, set on each subclass

    def released(self) -> bool:
        return self._released

    def check_saved(self) -> None:
        if self._released:
            raise RuntimeError(_FREED)
        for s in self._saved:
            if type(s) is SavedTensor:
                s.check_version(self)

    @property
    def saved_tensors(self) -> tuple:
        if self._released:
            raise RuntimeError(_FREED)
        saved = self._saved
        if len(saved) == 2:  # (most binary ops: unrolled, without the comprehension's frame)
            a, b = saved
            if type(a) is SavedTensor:
                a = a.tensor if a.tensor is not None and a.counter.value == a.version else \
                    a.unpack(self)
            if type(b) is SavedTensor:
                b = b.tensor if b.tensor is not None and b.counter.value == b.version else \
                    b.unpack(self)
            return a, b
        # (an input saved and not written since, the common case, without the call)
        return tuple([(s.tensor if s.tensor is not None and s.counter.value == s.version
                       else s.unpack(self)) if type(s) is SavedTensor else s for s in saved])

    def release(self) -> None:
        if self._saved:
            self._saved = ()
            self._released = True

    def apply(self, grad):
        return self.op.backward(self, grad)
