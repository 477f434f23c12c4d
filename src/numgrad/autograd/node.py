"""Graph nodes (``grad_fn``): what the engine runs backwards.

A node holds edges to the nodes of its inputs (``next_functions``), the shapes and dtypes its
input gradients must have, and the values its backward formula needs. It never holds its own
output: a saved output is kept as bare data and rebuilt on unpacking, so graphs have no reference
cycles and die by reference counting as soon as the last tensor goes.
"""
from __future__ import annotations

import itertools
import sys
import textwrap
import weakref

from .. import _lazy
from .._dtype import torch_name
from . import anomaly_mode
from .grad_mode import no_grad

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

    def __new__(cls, tensor, is_output: bool):
        return save(tensor, is_output)

    def check_version(self, node=None) -> None:
        if self.counter.value == self.version:
            return
        if type(self.counter) is Packed:  # (packed by hooks: PyTorch tracks no version then)
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
            if type(self.counter) is Packed:  # (packed by saved-tensor hooks: never equal)
                return self.counter.unpack(node)
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


def save(tensor, is_output: bool, _new=object.__new__) -> SavedTensor:
    """``SavedTensor(tensor, is_output)``: the one rule by which a node saves a tensor (a plain
    function, which the ops' generated recorders call: ``ops.registry``)."""
    s = _new(SavedTensor)
    s.counter = counter = tensor._version_counter
    s.version = counter.value
    if is_output:
        s.tensor = None
        s.data = tensor._data
        s.requires_grad = tensor._requires_grad
    else:
        s.tensor = tensor
        s.data = None
    return s


class Packed:
    """What a ``SavedTensor`` packed by saved-tensor hooks (``autograd.graph.saved_tensors_hooks``,
    ``register_hooks`` of ``grad_fn._raw_saved_<name>``) keeps, in its ``counter`` slot: the pack
    hook's result and the unpack hook, and the autograd metadata the unpacked tensor gets (as
    PyTorch's ``SavedVariable`` with hooks). Its ``value`` never equals a version, so every
    access to the saved value goes through ``SavedTensor.unpack``'s slow branch, here, and the
    fast paths that read an unwritten input need no test of their own. As in PyTorch, no version
    is tracked through hooks."""

    __slots__ = ("value", "packed", "unpack_hook", "is_output", "requires_grad", "grad_fn",
                 "accumulator")

    def __init__(self, tensor, is_output: bool, pack_hook, unpack_hook):
        self.value = None
        self.is_output = is_output
        self.requires_grad = tensor._requires_grad
        self.grad_fn = None if is_output else tensor.grad_fn
        self.accumulator = tensor._grad_accumulator() if (
            tensor._requires_grad and self.grad_fn is None and not is_output) else None
        self.unpack_hook = unpack_hook
        counter = tensor._version_counter
        before = counter.value
        with no_grad():
            self.packed = pack_hook(tensor)
        if counter.value != before:
            raise RuntimeError(
                "A saved tensor pack hook is modifying its input in place. Tensors provided as "
                "input to pack hook cannot be modified by in-place operations as this can lead to "
                "unexpected side-effects. Please open an issue if you need to perform in-place "
                "operations on the input to a pack hook."
            )

    def unpack(self, node):
        data = self.unpack_hook(self.packed)
        if not isinstance(data, _lazy.module("tensor").Tensor):  # (tensor.py imports this module)
            raise TypeError(
                "Output of saved tensor unpack_hook expected to be a Tensor but got result of "
                f"type {type(data).__name__}"
            )
        out = _new_tensor()
        out._data = data._data
        out._grad = out._hooks = out._accumulator = out._base = None
        out._version_counter = data._version_counter
        fn = node if self.is_output else self.grad_fn
        out._requires_grad = self.requires_grad
        out._grad_fn = fn if self.requires_grad else None
        if self.accumulator is not None:  # (a leaf's copy accumulates into the leaf)

            out._accumulator = weakref.ref(self.accumulator)
        return out


def packed(tensor, is_output: bool, pack_hook, unpack_hook) -> SavedTensor:
    """A ``SavedTensor`` of ``tensor`` packed by ``pack_hook``."""
    s = object.__new__(SavedTensor)
    s.tensor = s.data = None
    s.requires_grad = tensor._requires_grad
    s.counter = Packed(tensor, is_output, pack_hook, unpack_hook)
    s.version = 0
    return s


def _new_tensor():
    """A bare ``Tensor`` (its slots unset), for ``SavedTensor.unpack``. tensor.py imports this
    module, so ``Tensor`` cannot be imported here at load: the first call looks it up and rebinds
    this name to a function without the look-up."""
    global _new_tensor

    def _new_tensor(new=object.__new__, cls=_lazy.module("tensor").Tensor):
        return new(cls)

    return _new_tensor()


class _NodeHooks(dict):
    """A node's ``_pre_hooks``: {handle id: hook(grad)} run in order on the gradient of its
    output before it runs (tensor hooks, and ``register_prehook``'s hooks adapted), and in
    ``post`` the hooks ``register_hook`` added, run on its result. A node with none keeps None
    there, and the engine runs it on its fast path."""

    __slots__ = ("post",)

    def __init__(self):
        super().__init__()
        self.post = {}


class _Prehook:
    """PyTorch's node pre-hook, ``hook(grad_outputs) -> tuple or None``, as a hook on the one
    gradient the engine hands the node."""

    __slots__ = ("hook", "__name__")

    def __init__(self, hook):
        self.hook = hook
        self.__name__ = getattr(hook, "__name__", type(hook).__name__)

    def __call__(self, grad):
        several = isinstance(grad, list)
        result = self.hook(tuple(grad) if several else (grad,))
        if result is None:
            return None
        result = tuple(result)
        expected = len(grad) if several else 1
        if len(result) != expected:
            raise RuntimeError(
                f"hook '{self.__name__}' has returned an incorrect number of values (got "
                f"{len(result)}, but expected {expected})"
            )
        return list(result) if several else result[0]


class Node:
    """A backward function. ``name()`` is PyTorch's (``MulBackward0``).

    ``_anomaly`` is set only on nodes recorded in anomaly mode (``anomaly_mode.record``);
    ``_metadata`` on those whose ``metadata`` was asked for.
    """

    __slots__ = ("next_functions", "_pre_hooks", "_retained", "_anomaly", "_metadata",
                 "__weakref__")
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

    def _hooks(self) -> _NodeHooks:
        if self._pre_hooks is None:
            self._pre_hooks = _NodeHooks()
        return self._pre_hooks

    def _tensor_prehook(self, hook) -> RemovableHandle:
        """``hook(grad)`` run on the gradient of this node's output before the node runs (what
        ``Tensor.register_hook`` adds to the node of a non-leaf)."""
        hooks = self._hooks()
        handle = RemovableHandle(hooks)
        hooks[handle.id] = hook
        return handle

    def register_prehook(self, hook) -> RemovableHandle:
        """PyTorch's ``Node.register_prehook``: ``hook(grad_outputs) -> tuple of Tensor or
        None``, run before the node with the gradients of its outputs; a tuple returned replaces
        them."""
        return self._tensor_prehook(_Prehook(hook))

    def register_hook(self, hook) -> RemovableHandle:
        """PyTorch's ``Node.register_hook``: ``hook(grad_inputs, grad_outputs) -> tuple of
        Tensor or None``, run after the node with the gradients it computed for its inputs and
        those of its outputs it was given; a tuple returned replaces the gradients of the
        inputs."""
        post = self._hooks().post
        handle = RemovableHandle(post)
        post[handle.id] = hook
        return handle

    @property
    def metadata(self) -> dict:
        """A dict of whatever user code keeps on this node (empty at first), as PyTorch's."""
        try:
            return self._metadata
        except AttributeError:
            self._metadata = {}
            return self._metadata

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
    _name = "torch::autograd::AccumulateGrad"  # (PyTorch's ``name()``, a C++ node's qualified one)

    def __init__(self, variable):
        super().__init__()
        self.variable = variable

    def apply(self, grad):
        return ()


# ``autograd.graph.pack_all`` while saved-tensor hooks are open in some thread, else None
# (``graph._switch``): a node made for an op's output packs its saved values with it.
_packing = None

# The body of the one ``OpNode`` constructor, ``make``, with its fields' values in braces
# (``{edges}``...): ``make`` fills them with its parameters' names, and the ops' generated
# recorders (``ops.registry``), which write it inline, with the values themselves. ``MADE`` is
# what follows for a node made for an op's output.
MAKE = """\
node = _new_node({cls})
node._pre_hooks = node._retained = None
node.next_functions = {edges}
node.needs_input_grad = {needs}
node.input_shapes = {shapes}
node.input_dtypes = {dtypes}
node.input_devices = {devices}
node.params = {params}
node._saved = {saved}
node._released = {released}"""
MADE = """\
if _anomaly.enabled:  # (anomaly mode: the forward stack, on the node)
    _note_stack(node)
{output}._grad_fn = node  # (a fresh result: not a view yet, so no version to note)
if _node._packing is not None and node._saved:  # (saved-tensor hooks open: packed)
    node._saved = _node._packing(node._saved, node)"""
# The names ``MAKE`` and ``MADE`` read besides the fields.
MAKE_NAMES = {"_new_node": object.__new__, "_anomaly": anomaly_mode.state,
              "_note_stack": anomaly_mode.record, "_node": sys.modules[__name__]}
_FIELDS = ("cls", "edges", "needs", "shapes", "dtypes", "devices", "params", "saved", "released")

exec(compile(  # (a file name in the package: anomaly mode's forward stack leaves it out)
    "def make(cls, edges, needs, shapes, dtypes, devices, params, saved, output=None,\n"
    "         released=False):\n" + textwrap.indent(MAKE.format(**{f: f for f in _FIELDS}),
                                                    "    ") +
    "\n    if output is not None:\n" + textwrap.indent(MADE.format(output="output"), "        ") +
    "\n    return node\n", __file__[:-len("node.py")] + "<node.make>", "exec"), MAKE_NAMES)
make = MAKE_NAMES.pop("make")
make.__doc__ = """The one constructor of an ``OpNode`` (of class ``cls``) from its fields: the edges
    to its inputs' nodes (``next_functions``), ``needs_input_grad``, the inputs' shapes, dtypes and
    devices (None: no CUDA in use), the op's params and its saved values (``SavedTensor``s, None
    or constants). With ``output`` (the fresh result the node is recorded for, as by an op), the
    node becomes its ``grad_fn``, anomaly mode notes the forward stack on it and open
    saved-tensor hooks pack its saved values, in that order (``MAKE``, its body)."""


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

    def __dir__(self):
        own = {a for a in super().__dir__()  # (the class has every name's property: its own)
               if not (a.startswith("_saved_") or a.startswith("_raw_saved_"))}
        graph = _lazy.module("autograd.graph")  # (graph imports this module)
        return sorted(own | set(graph.saved_names(self)))
