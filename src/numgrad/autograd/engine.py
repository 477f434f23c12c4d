"""The backward engine: runs the recorded graph in reverse.

Iterative, with dependency counts (a 100,000-node chain needs no recursion). Each node runs once,
after every node that feeds it a gradient has run; the gradients arriving at one node are summed in
a buffer. Gradients are reduced to each input's shape and dtype here, in one place, so op formulas
never "unbroadcast" by hand. Everything that could fail is checked before any ``.grad`` changes,
and the writes to ``.grad`` are applied together at the end, so an error leaves nothing half-updated.

A node with several outputs (a custom ``Function`` returning a tuple) is reached through one
single-output node per output whose edge carries the output's index; the engine gathers those
gradients into one list per such node, so its backward runs once, with all of them.

In anomaly mode a node that fails (NaN gradients included, with ``check_nan``) warns with the stack
of the forward call that recorded it before the error propagates.
"""
from __future__ import annotations

import sys

import numpy as np

from ..compiler.traced import graph_break
from ..ops.registry import kernels_of
from ..tensor import Tensor
from . import anomaly_mode, grad_mode
from .node import AccumulateGrad


def _discover(roots):
    """Dependency counts of every node reachable from ``roots``, checking that each can run."""
    deps = {}
    stack = []
    for node in roots:
        if node not in deps:
            deps[node] = 0
            stack.append(node)
    while stack:
        node = stack.pop()
        try:
            node.check_saved()
        except Exception:
            if anomaly_mode.state.enabled:
                anomaly_mode.warn_forward_trace(node)
            raise
        for child, _ in node.next_functions:
            if child is None:
                continue
            if child in deps:
                deps[child] += 1
            else:
                deps[child] = 1
                stack.append(child)
    return deps


def _needed(roots, deps, targets):
    """The nodes from which some target node can be reached (only these need to run)."""
    needed = set(targets)
    order = []  # nodes in an order where every node comes after all its parents
    remaining = dict(deps)
    ready = [n for n in roots if remaining[n] == 0]
    seen = set(ready)
    while ready:
        node = ready.pop()
        order.append(node)
        for child, _ in node.next_functions:
            if child is None:
                continue
            remaining[child] -= 1
            if remaining[child] == 0 and child not in seen:
                seen.add(child)
                ready.append(child)
    for node in reversed(order):
        if node not in needed and any(c in needed for c, _ in node.next_functions if c is not None):
            needed.add(node)
    return needed


def _reduce_to(grad, shape, dtype):
    """Sums a broadcast gradient back to an input's shape and casts it to the input's dtype
    (a NumPy dtype)."""
    data = grad._data
    if data.shape != shape:
        lead = data.ndim - len(shape)
        dims = tuple(range(lead)) + tuple(
            lead + i for i, n in enumerate(shape) if n == 1 and data.shape[lead + i] != 1
        )
        grad = grad.sum(dims, keepdim=True) if dims else grad
        if lead or grad._data.shape != shape:
            grad = grad.reshape(shape)
    if grad._data.dtype != dtype:
        grad = grad.to(dtype)
    return grad


def run_backward(roots, grads, retain_graph: bool, create_graph: bool, inputs=None):
    """Runs backward from ``roots`` (nodes) seeded with ``grads`` (tensors).

    Without ``inputs``, gradients are accumulated into the ``.grad`` of the leaves reached. With
    ``inputs`` (a sequence of (node, tensor) pairs), only those tensors' gradients are computed and
    returned, in order, and no ``.grad`` is touched.
    """
    deps = _discover(roots)
    capture = None
    needed = None
    if inputs is not None:
        capture = {node: None for node, _ in inputs}
        needed = _needed(roots, deps, capture)
    buffers = {}
    for node, grad in zip(roots, grads):
        buffers[node] = buffers[node] + grad if node in buffers else grad
    ready = [n for n in dict.fromkeys(roots) if deps[n] == 0]
    writes = []  # (tensor, gradient) pairs for .grad, applied at the end
    prev_mode = grad_mode.state.enabled
    grad_mode.state.enabled = create_graph
    node = None
    # The common case (no anomaly mode, no ``inputs``, a node without hooks) runs inline.
    plain = needed is None and not anomaly_mode.state.enabled
    try:
        while ready:
            node = ready.pop()
            grad = buffers.pop(node, None)
            if (plain and grad is not None and node._pre_hooks is None and node._retained is None
                    and type(node) is not AccumulateGrad):
                in_grads = node.apply(grad)
                if not retain_graph:
                    node.release()
                _propagate(node, in_grads, deps, buffers, ready)
                continue
            if (grad is not None and (needed is None or node in needed)
                    and (node._pre_hooks or node._retained is not None
                         or type(node) is AccumulateGrad)):
                grad = _run_pre_hooks(node, grad, writes)
            if grad is None or (needed is not None and node not in needed):
                in_grads = ()
            elif capture is not None and node in capture:
                capture[node] = grad
                in_grads = () if type(node) is AccumulateGrad else _apply(node, grad, retain_graph)
            elif type(node) is AccumulateGrad:
                writes.append((node.variable, grad))
                in_grads = ()
            else:
                in_grads = _apply(node, grad, retain_graph)
            _propagate(node, in_grads, deps, buffers, ready)
    except Exception:
        if anomaly_mode.state.enabled and node is not None:
            anomaly_mode.warn_forward_trace(node)
        raise
    finally:
        grad_mode.state.enabled = prev_mode
    grad = in_grads = None  # so that the gradients in ``writes`` are held there alone
    accumulate(writes, create_graph)
    if capture is not None:
        return [_private(capture[node]) for node, _ in inputs]
    return None


def _private(grad):
    """``grad``, or a copy of it where it is a ``SharedGrad`` (another tensor's data, passed on by
    ``ops.elementwise._times`` for ``1 * other``). Such a gradient lives inside the engine only:
    hooks, custom Functions, ``autograd.grad``'s results and ``.grad`` get a copy, as PyTorch's
    would be a fresh tensor."""
    if grad is not None and grad._shares_data:
        return Tensor._wrap(_copy(grad._data))
    return grad


def _run_pre_hooks(node, grad, writes):
    if type(node) is AccumulateGrad:
        hooks = node.variable._hooks
    else:
        hooks = node._pre_hooks
    if hooks or node._retained is not None:  # (their Python runs at each backward)
        graph_break("a hook or retain_grad() (Python code that runs in the backward)")
    if hooks:
        grad = _private(grad)
        for hook in tuple(hooks.values()):
            result = hook(grad)
            if result is not None:
                grad = result
    if node._retained is not None:
        tensor = node._retained()
        if tensor is not None:
            writes.append((tensor, grad))
    return grad


def _apply(node, grad, retain_graph):
    if anomaly_mode.state.enabled:
        with anomaly_mode.running(node):  # nodes its backward records get it as their parent
            in_grads = node.apply(grad)
        if anomaly_mode.state.check_nan:
            _check_nan(node, in_grads)
    else:
        in_grads = node.apply(grad)
    if not retain_graph:
        node.release()
    return in_grads


def _check_nan(node, in_grads):
    """Anomaly mode: a node may not return NaN for an input that receives a gradient. (On CUDA
    each gradient is read back: a sync per node, which the user asked for by turning anomaly
    detection on; PyTorch's check syncs too.)"""
    for i, (child, _) in enumerate(node.next_functions):
        g = in_grads[i] if i < len(in_grads) else None
        if child is not None and g is not None and np.isnan(g._host()).any():
            raise RuntimeError(f"Function '{node.name()}' returned nan values in its {i}th output.")


def _propagate(node, in_grads, deps, buffers, ready):
    shapes = getattr(node, "input_shapes", None)
    n = len(in_grads)
    i = -1
    for child, nr in node.next_functions:
        i += 1
        if child is None:
            continue
        g = in_grads[i] if i < n else None
        if g is not None:
            if shapes is not None:
                data = g._data
                if data.shape != shapes[i] or data.dtype != node.input_dtypes[i]:
                    g = _reduce_to(g, shapes[i], node.input_dtypes[i])
            if child._num_outputs != 1:
                _buffer_output(buffers, child, nr, g)
            else:
                held = buffers.get(child)
                buffers[child] = g if held is None else _sum(held, g)
        left = deps[child] - 1
        deps[child] = left
        if not left:
            ready.append(child)


def _sum(held, grad):
    """Two gradients of one node's output added: in a plain backward (no graph recorded) on one
    dtype and shape, straight to the kernel (the same values as ``held + grad``)."""
    a, b = held._data, grad._data
    if not grad_mode.state.enabled and a.dtype == b.dtype and a.shape == b.shape:
        K = kernels_of(a)
        if K is kernels_of(b):
            return Tensor._wrap(K.binary(K.ADD, a, b))
    return held + grad


def _buffer_output(buffers, node, nr, grad):
    """Adds ``grad`` to the gradient of output ``nr`` of a node with several outputs."""
    grads = buffers.get(node)
    if grads is None:
        grads = buffers[node] = [None] * node._num_outputs
    grads[nr] = grad if grads[nr] is None else _sum(grads[nr], grad)


def _owned(grad) -> bool:
    """Whether nothing but the engine's write list holds ``grad`` and its data (a fresh result of
    a kernel): then it can become ``.grad`` as it is, without a copy, as PyTorch steals such
    buffers. Anything shared (a seed the caller holds, a gradient passed to two leaves, one a hook
    kept, a view) is copied. The references counted for ``grad`` are the write-list tuple, the
    caller's loop variable, this parameter and getrefcount's argument; for its data, the tensor,
    the local ``data`` and the argument."""
    data = grad._data
    if not isinstance(data, np.ndarray) or grad._shares_data:  # (device arrays: views are not
        return False  # told apart yet; a SharedGrad is another tensor's data)
    if not (sys.getrefcount(grad) <= 4 and sys.getrefcount(data) <= 3
            and data.flags.writeable and data.flags.c_contiguous):
        return False
    base = data.base
    if base is None:
        return True
    # A contiguous view of all of a fresh array (a transpose back of a column-major product, see
    # Mm.backward; a reshape of a sum) is as good, if nothing else holds that array: its
    # references are the view's ``base``, the local ``base``, getrefcount's argument and, where
    # the view was made by a view op, the base tensor's ``_data`` (the base tensor being held by
    # the view's ``_base`` alone).
    if not (type(base) is np.ndarray and base.base is None and base.size == data.size
            and base.ctypes.data == data.ctypes.data):
        return False
    base_tensor = grad._base
    if base_tensor is None:
        return sys.getrefcount(base) <= 3
    return (base_tensor._data is base and sys.getrefcount(base_tensor) <= 3
            and sys.getrefcount(base) <= 4)


def _copy(data):
    """A copy of host or device array data."""
    return kernels_of(data).copy(data)


def accumulate(writes, create_graph: bool) -> None:
    """Applies gradient writes (tensor, gradient): into a leaf's ``.grad``, or a retained one's.
    A first gradient is copied so ``.grad`` never aliases another tensor's data."""
    for tensor, grad in writes:
        if tensor._grad is None:
            if create_graph or _owned(grad):
                tensor._grad = grad
            else:
                tensor._grad = Tensor._wrap(_copy(grad._data))
        elif create_graph:
            tensor._grad = tensor._grad + grad
        else:
            tensor._grad._add_inplace_data(grad._data)
