"""``autograd.Function``: differentiable operations whose forward and backward the user writes.

A subclass defines ``forward(ctx, *args, **kwargs)``, which runs with grad mode off on the
arguments as given, and ``backward(ctx, *grad_outputs)``, which returns one gradient per forward
argument (None for non-tensors and for inputs that need none); ``Cls.apply(*args)`` runs it and,
if an input requires grad, records a node. As in PyTorch the node *is* ``ctx``: its class is
``<Cls>Backward``, it is the outputs' ``grad_fn``, and it keeps what ``forward`` put on it.
Forward and backward may run any code, Numba kernels on ``t.detach().numpy()`` included; a
backward written with tensor ops is itself differentiable (``create_graph=True``).

Several outputs. A tensor knows its ``grad_fn`` but no output index, so a Function that returns
several tensors gives each differentiable output a small node of its own (``FunctionOutput``),
named like the Function's node, whose one edge points at the Function's node with the output's
index. The engine gathers the gradients of all the outputs into one list for that node and runs
the user's ``backward`` once, with all of them, as PyTorch does. (Giving each output a full node
that runs ``backward`` with the other gradients zero would call it once per output: wrong for a
``backward`` that is not linear in its gradients, slower, and it would free the saved tensors
after the first call.) The one visible difference from PyTorch: ``out.grad_fn`` of such an output
is that per-output node, and the Function's node is ``out.grad_fn.next_functions[0][0]``.
"""
from __future__ import annotations

import functools
import inspect
import sys
import warnings
import weakref

import numpy as np

from ..dispatch import note_created
from . import anomaly_mode, grad_mode, graph
from .engine import _expandable, _private
from .node import _FREED, Node, OpNode, SavedTensor
from ..tensor import Tensor
from .graph import RawSavedTensor
from ..ops import registry
from .forward_ad import FunctionLevels
from ..ops.indexing import write_view
from ..ops.registry import kernels_of


class FunctionCtx:
    """What ``forward`` (or ``setup_context``) uses to prepare ``backward``; any other attribute
    may be set on ``ctx`` too."""

    __slots__ = ()

    def save_for_backward(self, *tensors) -> None:
        """Saves tensors (or None) for ``backward``, which reads them back as
        ``ctx.saved_tensors``. Call it at most once, with inputs, outputs or intermediates; a
        saved tensor modified in place before backward makes backward raise, and saved tensors
        are freed by backward unless ``retain_graph=True``."""
        for i, t in enumerate(tensors):
            if t is not None and not isinstance(t, Tensor):
                raise TypeError(
                    f"save_for_backward can only save variables, but argument {i} is of type "
                    f"{type(t).__name__}"
                )
        self.to_save = tensors

    def mark_dirty(self, *tensors) -> None:
        """Marks inputs that ``forward`` modified in place: each is returned as an output (the
        same tensor object), whose history becomes this node, as PyTorch rebases it. Call it at
        most once, from ``forward`` (or ``setup_context``)."""
        self.dirty_tensors = tensors

    def mark_non_differentiable(self, *tensors) -> None:
        """Marks outputs as non-differentiable: they do not require grad, and ``backward`` still
        receives a gradient for each of them (zeros, or None without materialized grads)."""
        self.non_differentiable = tensors

    def save_for_forward(self, *tensors) -> None:
        """Saves tensors (or None) for ``jvp``, which reads them back as ``ctx.saved_tensors``
        (forward-mode AD)."""
        self.saved_for_forward = tensors

    def set_materialize_grads(self, value: bool) -> None:
        """Whether the gradients of outputs that received none reach ``backward`` as zeros
        (True, the default) or as None."""
        self.materialize_grads = bool(value)


class BackwardCFunction(FunctionCtx, OpNode):
    """The node of one ``Function.apply`` call, and the ``ctx`` its forward and backward get.

    Subclassed once per Function as ``<Cls>Backward``. Saved tensors, their version checks and
    their release after backward are ``OpNode``'s. Instances have a ``__dict__`` for what users
    put on ``ctx``.
    """

    _forward_cls = None  # the Function, set on each subclass
    to_save = ()
    non_differentiable = ()
    materialize_grads = True

    @property
    def saved_tensors(self) -> tuple:
        """The tensors given to ``save_for_backward`` (outputs come back with this node, or
        their per-output node, as ``grad_fn``)."""
        if "_in_jvp" in self.__dict__:  # (``jvp`` reads what ``save_for_forward`` kept)
            return tuple(self.__dict__.get("saved_for_forward", ()))
        if self._released:
            raise RuntimeError(_FREED)
        return tuple(s if s is None else s.unpack(self._output_node(k))
                     for s, k in zip(self._saved, self._saved_outputs))

    @property
    def _raw_saved_tensors(self) -> tuple:
        """The saved tensors as ``autograd.graph.RawSavedTensor`` objects, whose
        ``register_hooks(pack, unpack)`` hooks each (PyTorch's ``ctx._raw_saved_tensors``)."""
        return tuple(RawSavedTensor(self, k) for k in range(len(self._saved)))

    def _output_node(self, index):
        """This node, or where it has several outputs a node that hands output ``index``'s
        gradient to it: the ``grad_fn`` of a saved output unpacked, and of a view that
        ``forward`` modified in place (the outputs themselves have this node, with their
        ``output_nr``)."""
        if self._num_outputs == 1 or index is None:
            return self
        ref = self._output_refs[index]
        node = ref() if ref is not None else None
        if node is None:  # weakly held: the output tensor owns its node, this node does not
            node = FunctionOutput(self, index)
            self._output_refs[index] = weakref.ref(node)
        return node

    def apply(self, grad):
        grads = [_private(g) for g in grad] if self._num_outputs != 1 else [_private(grad)]
        if self.materialize_grads:
            grads = [_zeros(meta) if g is None and meta is not None else g
                     for g, meta in zip(grads, self._output_meta)]
        return self._input_gradients(self._forward_cls._backward_fn(self, *grads))

    def _input_gradients(self, result) -> tuple:
        """The gradients ``backward`` returned (one per forward argument), checked as PyTorch
        checks them, as one per edge (tensor argument)."""
        grads = result if isinstance(result, tuple) else (result,)
        n = len(self._is_tensor)
        if len(grads) > n and all(g is None for g in grads[n:]):
            grads = grads[:n]
        if len(grads) != n:
            raise RuntimeError(
                f"function {self.name()} returned an incorrect number of gradients (expected {n}, "
                f"got {len(grads)})"
            )
        per_edge = []
        for i, (g, is_tensor) in enumerate(zip(grads, self._is_tensor)):
            if not is_tensor:
                if g is not None:
                    raise RuntimeError(
                        f"function {self.name()} returned a gradient different than None at "
                        f"position {i + 1}, but the corresponding forward input was not a Variable"
                    )
                continue
            if g is not None and not isinstance(g, Tensor):
                raise RuntimeError(f"expected Variable or None (got {type(g).__name__})")
            k = len(per_edge)
            if g is not None and self.next_functions[k][0] is None:
                g = None  # the input needs no gradient
            if g is not None and not _expandable(self.input_shapes[k], g._data.shape):
                raise RuntimeError(
                    f"Function {self.name()} returned an invalid gradient at index {k} - got "
                    f"{list(g._data.shape)} but expected shape compatible with "
                    f"{list(self.input_shapes[k])}"
                )
            per_edge.append(g)  # the engine sums a broadcast gradient to the input's shape
        return tuple(per_edge)


class FunctionOutput(Node):
    """A node that hands a gradient to a node of several outputs as its output ``index`` (the
    ``grad_fn`` of a Function's saved output unpacked, or of a view modified in place)."""

    __slots__ = ()

    def __init__(self, owner: BackwardCFunction, index: int):
        super().__init__()
        self.next_functions = ((owner, index),)

    def name(self) -> str:
        return self.next_functions[0][0].name()

    def apply(self, grad):
        return (grad,)


class OutputRoot(FunctionOutput):
    """Where a backward from one of the several outputs of a registered op's node (``split``'s
    parts share one, as PyTorch's) starts, or what ``autograd.grad`` asks for: it hands the
    gradient to the node as that output's (the engine reads the node's own gradient list for a
    target)."""

    __slots__ = ()


def _zeros(meta):
    """Zeros of an output's (shape, dtype): the gradient of an output that received none."""
    shape, dtype = meta
    zeros = np.zeros(shape, dtype)
    note_created(zeros)
    return Tensor._wrap(zeros)


class Function(FunctionCtx):
    """Base class for differentiable operations with a custom forward and backward.

    Define ``forward(ctx, *args, **kwargs)`` and ``backward(ctx, *grad_outputs)`` as static
    methods (or ``forward(*args, **kwargs)`` plus ``setup_context(ctx, inputs, output)``) and
    call ``Cls.apply(*args)``. ``backward`` gets one gradient per output of ``forward`` and returns
    one per input of it.
    """

    _backward_cls = BackwardCFunction

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls._backward_cls = type(cls.__name__ + "Backward", (BackwardCFunction,),
                                 {"_forward_cls": cls})
        # backward and vjp are one method under two names: whichever the subclass defines
        overrides_vjp = cls.__dict__.get("vjp") is not None and cls.backward is Function.backward
        cls._backward_fn = staticmethod(getattr(cls, "vjp" if overrides_vjp else "backward"))

    def __init__(self, *args, **kwargs):
        warnings.warn(
            f"{self.__class__} should not be instantiated. Methods on autograd functions are all "
            "static, so you should invoke them on the class itself. Instantiating an autograd "
            "function will raise an error in a future version of PyTorch.",
            DeprecationWarning, stacklevel=2)

    def __call__(self, *args, **kwargs):
        raise RuntimeError(
            "Legacy autograd function with non-static forward method is deprecated. Please use "
            "new-style autograd function with static forward method. (Example: "
            "https://pytorch.org/docs/stable/autograd.html#torch.autograd.Function)")

    @staticmethod
    def forward(ctx, *args, **kwargs):
        """Computes the outputs (tensors, or a tuple of them), with grad mode off."""
        raise NotImplementedError(
            "You must implement the forward function for custom autograd.Function."
        )

    @staticmethod
    def setup_context(ctx, inputs: tuple, output) -> None:
        """Optional: prepares ``ctx`` from the inputs and output, for a ``forward`` without ctx."""
        raise NotImplementedError("setup_context is not implemented.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        """The gradients of the inputs, given those of the outputs."""
        raise NotImplementedError(
            "You must implement either the backward or vjp method for your custom "
            "autograd.Function to use it with backward mode AD."
        )

    @staticmethod
    def vjp(ctx, *grad_outputs):
        """``backward`` under its other name (define either)."""
        raise NotImplementedError(
            "You must implement either the backward or vjp method for your custom "
            "autograd.Function to use it with backward mode AD."
        )

    # Under ``numgrad.func.vmap``: run the user's forward and backward on batched tensors
    # (``generate_vmap_rule = True``), or the ``vmap`` staticmethod below, overridden.
    generate_vmap_rule = False

    @staticmethod
    def vmap(info, in_dims, *args):
        """The outputs of ``forward`` on the batch (``info.batch_size``, ``info.randomness``)
        of arguments batched along ``in_dims`` (one per argument, None where unbatched), and
        the dimension of each output that is the batch's: ``(outputs, out_dims)``."""
        raise NotImplementedError("To use autograd.Function with vmap, you must either override "
                                  "the vmap staticmethod or set generate_vmap_rule=True.")

    @staticmethod
    def jvp(ctx, *grad_inputs):
        """Forward-mode AD: the tangents of the outputs given those of the inputs (one per input
        of ``forward``, None where it has none); ``ctx.saved_tensors`` gives what
        ``save_for_forward`` kept."""
        raise NotImplementedError(
            "You must implement the jvp function for custom autograd.Function to use it with "
            "forward mode AD."
        )

    @classmethod
    def apply(cls, *args, **kwargs):
        """Runs ``forward`` and, if grad mode is on and a tensor argument requires grad, records
        ``backward`` for the outputs."""
        vmapped = sys.modules.get("numgrad.func._vmap")  # (inside vmap: its rule for Functions)
        if vmapped is not None and vmapped._levels and not kwargs and any(
                type(a) is vmapped.BatchedTensor for a in args):
            return vmapped.function_apply(cls, args)
        separate = cls.setup_context is not Function.setup_context
        if separate:
            bound = inspect.signature(cls.forward).bind(*args, **kwargs)
            bound.apply_defaults()
            args, kwargs = bound.args, bound.kwargs
        inputs = args + tuple(kwargs.values())
        record = grad_mode.state.enabled and any(
            isinstance(a, Tensor) and a._requires_grad for a in inputs)
        ctx = cls._backward_cls()
        ctx._saved = ()
        ctx._released = False
        ctx.needs_input_grad = tuple(  # as PyTorch: whatever the grad mode
            isinstance(a, Tensor) and a._requires_grad for a in inputs)
        prev = grad_mode.state.enabled
        grad_mode.state.enabled = False
        dual = _forward_ad_levels(inputs)  # (forward AD: the inputs' levels, hidden from forward)
        try:
            if separate:
                outputs = cls.forward(*args, **kwargs)
                cls.setup_context(ctx, args, outputs)
            else:
                outputs = cls.forward(ctx, *args, **kwargs)
        finally:
            grad_mode.state.enabled = prev
            if dual is not None:
                dual.restore()
        dirty = ctx.__dict__.get("dirty_tensors")
        if dirty:
            _check_dirty(dirty, outputs)
            for t in dirty:  # (PyTorch bumps a dirty tensor's version once more)
                t._version_counter.value += 1
        if not record:
            ctx.__dict__.pop("dirty_tensors", None)
        else:
            outputs = _record(ctx, inputs, outputs)
        if dual is not None:
            dual.push_forward(cls, ctx, inputs, outputs)
        return outputs


def _forward_ad_levels(inputs):
    """``autograd.forward_ad.FunctionLevels`` where a forward-AD level is open and an input has
    a tangent, else None."""
    if registry._forward_ad is None:
        return None
    return FunctionLevels.of(inputs)


def _check_dirty(dirty, outputs) -> None:
    """PyTorch's checks of ``mark_dirty``: a leaf that requires grad must not be modified in
    place (grad mode on), and each dirty tensor must be returned."""
    outs = outputs if isinstance(outputs, tuple) else (outputs,)
    for t in dirty:
        if not isinstance(t, Tensor):
            raise TypeError("mark_dirty can only accept variables, but argument 0 is of type "
                            f"{type(t).__name__}")
        if grad_mode.state.enabled and t._requires_grad and t.grad_fn is None:
            raise RuntimeError(
                "a leaf Variable that requires grad has been used in an in-place operation.")
        if not any(o is t for o in outs):
            raise RuntimeError("Some elements marked as dirty during the forward method were not "
                               "returned as output. The inputs that are modified inplace must "
                               "all be outputs of the Function.")


def _rebase_view(view, node) -> None:
    """A view that ``forward`` modified in place (marked dirty) gets its new history through its
    base, as an in-place op on a view does (``CopySlices`` over the base's old history, routing
    the view's elements through ``node``)."""
    carrier = Tensor._wrap(kernels_of(view._data).copy(view._data), True)
    carrier.grad_fn = node
    write_view(view, None, carrier)
    view._requires_grad = True
    view.grad_fn  # noqa: B018 (the view's history, regenerated from its base's now)


def _record(ctx: BackwardCFunction, inputs: tuple, outputs):
    """Connects ``ctx`` to the inputs' nodes and makes it (or a per-output node) the outputs'
    ``grad_fn``; then saves what ``forward`` asked to save."""
    tensors = [a for a in inputs if isinstance(a, Tensor)]
    ctx._is_tensor = tuple(isinstance(a, Tensor) for a in inputs)
    ctx.next_functions = tuple(t._edge_pair() if t._requires_grad else (None, 0) for t in tensors)
    ctx.input_shapes = tuple(t._data.shape for t in tensors)
    ctx.input_dtypes = tuple(t._data.dtype for t in tensors)
    is_tuple = isinstance(outputs, tuple)
    outs = list(outputs) if is_tuple else [outputs]
    if len(outs) > 1:
        ctx._num_outputs = len(outs)
        ctx._output_refs = [None] * len(outs)
    non_differentiable = {id(t) for t in ctx.__dict__.pop("non_differentiable", ())}
    dirty = {id(t) for t in ctx.__dict__.pop("dirty_tensors", ())}
    seen = {id(t) for t in tensors}
    seen_out = set()
    meta = []
    for k, out in enumerate(outs):
        if not isinstance(out, Tensor):
            meta.append(None)
            continue
        differentiable = id(out) not in non_differentiable and (out.dtype.is_floating_point
                                                                    or out.dtype.is_complex)
        if id(out) in dirty and id(out) not in seen_out:  # modified in place: the same tensor,
            seen_out.add(id(out))  # its history rebased onto this node
        elif id(out) in seen:  # an input (or a repeated output) returned as is: a new tensor
            out = outs[k] = out.detach()  # sharing its data, as PyTorch returns a view of it
        seen.add(id(out))
        meta.append((out._data.shape, out._data.dtype))
        if differentiable and id(out) in dirty and out._base is not None:
            _rebase_view(out, ctx._output_node(k))
        elif differentiable:  # (one of several outputs: output k of this one node, as PyTorch)
            out._requires_grad = True
            out.grad_fn = ctx
            if ctx._num_outputs != 1:
                out._output_nr = k
        elif id(out) in dirty:
            out.grad_fn = None
    ctx._output_meta = tuple(meta)
    index = {id(o): k for k, o in enumerate(outs) if isinstance(o, Tensor)}
    to_save = ctx.__dict__.pop("to_save", ())  # not kept: an output there would form a cycle
    ctx._saved_outputs = tuple(None if t is None else index.get(id(t)) for t in to_save)
    ctx._saved = tuple(None if t is None else SavedTensor(t, id(t) in index) for t in to_save)
    if ctx._saved and graph._open:  # (saved-tensor hooks open: the tensors packed)
        ctx._saved = tuple(s if s is None else graph.pack_all((s,), ctx._output_node(k))[0]
                           for s, k in zip(ctx._saved, ctx._saved_outputs))
    if anomaly_mode.state.enabled:
        anomaly_mode.record(ctx)
    return tuple(outs) if is_tuple else outs[0]


_TWICE = "trying to differentiate twice a function that was marked with @once_differentiable"


class Error(Node):
    """The node ``once_differentiable`` puts after a backward that must not be differentiated
    (PyTorch's ``DelayedError``, whose node is ``torch::autograd::Error``): running it raises."""

    __slots__ = ("message",)
    _name = "torch::autograd::Error"

    def __init__(self, message: str, leaf):
        super().__init__()
        self.message = message
        self.next_functions = (leaf._edge_pair(),)

    def apply(self, grad):
        raise RuntimeError(self.message)


def once_differentiable(fn):
    """Decorates a ``backward`` that cannot itself be differentiated: it runs with grad mode
    off, and where its gradients would be needed for a second derivative (``create_graph=True``
    with a gradient output that requires grad) they get a node that raises PyTorch's error."""

    @functools.wraps(fn)
    def wrapper(ctx, *args):
        with grad_mode.no_grad():
            outputs = fn(ctx, *args)
        if not grad_mode.state.enabled:
            return outputs
        if not any(isinstance(a, Tensor) and a._requires_grad for a in args):
            return outputs
        is_tuple = isinstance(outputs, tuple)
        outs = []
        for g in (outputs if is_tuple else (outputs,)):
            if isinstance(g, Tensor):
                # As PyTorch's: the error node hangs off a fresh leaf, not off the graph, so
                # that only a backward through it (not a grad w.r.t. the inputs) raises.
                leaf = g.detach()
                leaf._requires_grad = True
                g = g.detach()
                g._requires_grad = True
                g.grad_fn = Error(_TWICE, leaf)
            outs.append(g)
        return tuple(outs) if is_tuple else outs[0]

    return wrapper
