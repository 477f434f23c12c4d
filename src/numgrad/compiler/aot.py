"""A compiled function that returns a tensor whose graph is alive: ``loss = compiled(x)``, then
``loss.backward()`` outside it, as ``torch.compile(model)`` is used.

As PyTorch's AOTAutograd does, the trace runs the forward and then, still recording, the backward
of the outputs with respect to every tensor the function reads that requires grad (its
arguments, the modules' parameters), seeded by placeholder gradients. The recorded program is
split there: the forward replay computes the outputs and the values the backward reads, and wraps
the outputs with one node, ``CompiledFunctionBackward``, whose backward replays the recorded
backward on the gradients the engine hands it. The engine then goes on as for any node: the
parameters' gradients are accumulated into ``.grad`` (with their hooks), and the gradients of
arguments that have a history flow on into it.
"""
from __future__ import annotations

import numpy as np

from .. import autograd  # (autograd.grad read at call time: the dispatching form)
from ..autograd import grad_mode
from ..autograd.function import BackwardCFunction, Function, _record
from ..autograd.node import _FREED, AccumulateGrad
from ..autograd.node import make as make_node
from ..tensor import Tensor

_DOUBLE_BACKWARD = "torch.compile with aot_autograd does not currently support double backward"


class AOT:
    """What the trace of the backward found: where the backward's nodes start in the trace, the
    live outputs, the inputs (tensors requiring grad) and their gradients (tensors or None),
    and the placeholder values the output gradients stand for."""

    def __init__(self, split, outs, ins, placeholders, grads):
        self.split, self.outs, self.ins = split, outs, ins
        self.placeholders, self.grads = placeholders, grads


def _freed_graph(node) -> bool:
    """Whether a backward already ran through ``node``'s graph (a node in it released its saved
    values): a second backward through it raises, before it does anything, in eager as in the
    replay's freed node."""
    seen, stack = set(), [node]
    while stack:
        n = stack.pop()
        if n is None or id(n) in seen:
            continue
        seen.add(id(n))
        if n.released():
            return True
        stack.extend(child for child, _ in n.next_functions)
    return False


def live_outputs(result) -> list:
    """The tensors in the return value whose graph a backward may still run through."""
    found = []

    def walk(r):
        if isinstance(r, Tensor):
            fn = r._grad_fn
            if r._requires_grad and fn is not None and not _freed_graph(fn) and \
                    all(r is not o for o in found):
                found.append(r)
        elif isinstance(r, (tuple, list)):
            for x in r:
                walk(x)
        elif isinstance(r, dict):
            for x in r.values():
                walk(x)

    walk(result)
    return found


def trace_backward(trace, found: dict, outs: list):
    """Records, into ``trace``, the backward of ``outs`` with respect to the tensors in ``found``
    that require grad, from placeholder gradients; returns the ``AOT`` description, or a
    sentence saying why the graph cannot be compiled this way."""
    ins = [t for t in found["tensors"].values() if t._requires_grad]
    stops = {id(t._edge()) for t in ins}
    seen, stack = set(), [o._grad_fn for o in outs]
    while stack:  # the graph must lead only to the inputs: no leaf made by the function
        n = stack.pop()
        if n is None or id(n) in seen or id(n) in stops:
            continue
        seen.add(id(n))
        if isinstance(n, AccumulateGrad):
            return ("its result's graph reaches a tensor that requires grad and is not an input "
                    "it reads (a leaf made in the function)")
        stack.extend(child for child, _ in n.next_functions)
    split = len(trace.nodes)
    seeds, placeholders = [], []
    for k, out in enumerate(outs):
        data = out._data
        ones = np.ones(data.shape, data.dtype)
        value = trace._value("grad_output", ones, k)
        placeholders.append(value)
        seeds.append(Tensor._wrap(trace.traced(ones, value)))
    grads = autograd.grad(outs, ins, seeds, retain_graph=True, allow_unused=True)
    return AOT(split, outs, ins, placeholders, list(grads))


class CompiledFunction(Function):
    """The node of a compiled function's outputs (PyTorch's ``CompiledFunctionBackward``)."""

    @staticmethod
    def forward(ctx, *args):  # (never called: the forward replay makes the outputs)
        raise RuntimeError("CompiledFunction is applied by a compiled function's replay")

    @staticmethod
    def backward(ctx, *grads):
        if grad_mode.state.enabled:  # (the engine runs with create_graph's mode)
            raise RuntimeError(_DOUBLE_BACKWARD)
        if ctx._released:
            raise RuntimeError(_FREED)
        ctx.saved_tensors  # noqa: B018  (the version checks of the inputs the backward reads)
        arrays = []
        for g, layout in zip(grads, ctx.layouts):
            a = g._data
            if a.strides != layout:  # (the recorded backward reads C-contiguous gradients)
                a = np.ascontiguousarray(a)
                if a.strides != layout:  # (strides of size-1 dimensions)
                    a = np.lib.stride_tricks.as_strided(a, a.shape, layout)
            arrays.append(a)
        results = ctx.backward_replay(arrays, ctx.saved_arrays)
        return tuple(None if r is None else Tensor._wrap(r) for r in results)


class CompiledFunctionBackward(BackwardCFunction):
    _forward_cls = CompiledFunction

    def release(self) -> None:
        self._saved = ()
        self._released = True
        self.saved_arrays = None


CompiledFunction._backward_cls = CompiledFunctionBackward


def wrap_outputs(backward_replay, layouts, ins: tuple, arrays: tuple, saved: tuple,
                 checked: tuple) -> tuple:
    """The outputs of one forward replay: tensors of ``arrays`` with one node, whose backward
    replays ``backward_replay`` on their gradients and the ``saved`` arrays (and first checks
    that the ``checked`` tensors, whose data it reads, were not modified in place since)."""
    ctx = make_node(CompiledFunctionBackward, (), tuple(t._requires_grad for t in ins), (), (),
                    None, {}, ())  # (its edges, shapes and dtypes: ``_record``'s)
    ctx.backward_replay = backward_replay
    ctx.layouts = layouts
    ctx.saved_arrays = saved
    ctx.to_save = checked
    return _record(ctx, ins, tuple(Tensor._wrap(a) for a in arrays))
