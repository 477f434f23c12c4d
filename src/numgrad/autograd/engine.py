"""The backward engine: runs the recorded graph in reverse.

Iterative, with dependency counts (a 100,000-node chain needs no recursion). Each node runs once,
after every node that feeds it a gradient has run; the gradients arriving at one node are summed in
a buffer. Gradients are checked and reduced to each input's shape and dtype here, in one place, as
PyTorch's ``validate_outputs`` does (so op formulas never "unbroadcast" by hand): a node must return
one gradient per input, each of a shape the input broadcasts to and on the input's device.
Everything that could fail is checked before any ``.grad`` changes: the writes to ``.grad`` are
applied together at the end, under one lock, so an error leaves nothing half-updated and threads
running backward into one shared leaf lose nothing.

A node with several outputs (split's parts, std_mean's pair: ``registry.apply_parts``; a custom
``Function`` returning several tensors) is reached through edges ``(node, output_nr)`` from the
nodes that use its results, as PyTorch's. The engine gathers the gradients into one list per such node (None
for an output that received none), so its backward runs once, with all of them; a tensor's hooks
and ``retain_grad`` on one of those outputs act on its own entry of that list.

A first gradient becomes ``.grad`` without a copy where the engine knows it made it and nothing
else holds it (``_adoptable``): a fresh buffer from a registered op's backward formula or from the
engine's own sums, not a seed, nothing user code (a hook, a custom ``Function``) returned or was
given, and not one already adopted in this backward. Everything else is copied.

In anomaly mode a node that fails (NaN gradients included, with ``check_nan``) warns with the stack
of the forward call that recorded it before the error propagates.
"""
from __future__ import annotations

import threading
import weakref

import numpy as np

from .._dtype import torch_name
from .. import _lazy, dispatch
from ..ops import check_accumulable, registry
from ..ops.registry import _wrap, kernels_of, plain_binary
from ..tensor import Tensor
from . import anomaly_mode, grad_mode
from .node import AccumulateGrad, OpNode, SavedTensor

# Guards every write into ``.grad`` (a leaf's, a retained one's): two threads running backward
# into one shared leaf must both be added, as PyTorch guarantees.
_GRAD_LOCK = threading.Lock()
_ADD = registry.cpu_kernels.ADD


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
        if isinstance(node, OpNode):  # (OpNode.check_saved, inline: most nodes are OpNodes)
            if node._released:
                node.check_saved()  # raises the "backward through the graph a second time" error
            for s in node._saved:
                if type(s) is SavedTensor and s.counter.value != s.version:
                    _check_saved(node)
        elif type(node) is not AccumulateGrad:  # (a leaf's node saves nothing)
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


def _check_saved(node):
    try:
        node.check_saved()
    except Exception:
        if anomaly_mode.state.enabled:
            anomaly_mode.warn_forward_trace(node)
        raise


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


def _expandable(shape: tuple, to: tuple) -> bool:
    """Whether ``shape`` broadcasts to ``to`` (PyTorch's ``is_expandable_to``)."""
    if len(shape) > len(to):
        return False
    for n, m in zip(reversed(shape), reversed(to)):
        if n != m and n != 1:
            return False
    return True


def _reduce_to(grad, shape, dtype):
    """Sums a broadcast gradient back to an input's shape and casts it to the input's dtype
    (a NumPy dtype); the caller has checked that ``shape`` broadcasts to the gradient's."""
    data = grad._data
    if data.shape != shape:
        lead = data.ndim - len(shape)
        dims = tuple(range(lead)) + tuple(
            lead + i for i, n in enumerate(shape) if n == 1 and data.shape[lead + i] != 1
        )
        if dims and not grad_mode.state.enabled and (
                data.dtype == np.float32 or data.dtype == np.float64):
            # A plain backward (no graph recorded): the sum's kernel, as ``grad.sum(dims,
            # keepdim=True)`` runs it, without the two ops around it (a bias's gradient).
            K = kernels_of(data)
            total = K.sum_dims(data, dims, True)
            grad = Tensor._wrap(K.reshape_view(total, shape) if lead else total)
        else:
            grad = grad.sum(dims, keepdim=True) if dims else grad
            if lead:
                grad = grad.reshape(shape)
    if grad._data.dtype != dtype:
        if grad._data.dtype.kind == "c" and dtype.kind != "c":
            grad = grad.real  # (a real input of a complex result: PyTorch's handle_r_to_c)
        grad = grad.to(dtype)
    return grad


def _fit(node, i, grad, shape, dtype):
    """Gradient ``i`` of ``node`` checked against its input (PyTorch's messages), summed to the
    input's shape and cast to its dtype."""
    data = grad._data
    if data.shape != shape and not _expandable(shape, data.shape):
        raise RuntimeError(
            f"Function {node.name()} returned an invalid gradient at index {i} - got "
            f"{list(data.shape)} but expected shape compatible with {list(shape)}"
        )
    if data.dtype.kind not in "fcV":  # ("V": bfloat16's storage, numgrad._lowp)
        raise RuntimeError(
            f"Function {node.name()} returned an invalid gradient at index {i} - expected a "
            f"floating point gradient, got {data.dtype.name}"
        )
    return _reduce_to(grad, shape, dtype)


def _device_name(data) -> str:
    return "cpu" if isinstance(data, np.ndarray) else "cuda:0"


def _check_devices(node, in_grads):
    """On a process that uses CUDA: each gradient on its input's device."""
    devices = node.input_devices
    if devices is None:
        return
    for i, g in enumerate(in_grads):
        if g is not None and devices[i] is not None and isinstance(g._data, np.ndarray) != devices[i]:
            raise RuntimeError(
                f"Function {node.name()} returned an invalid gradient at index {i} - expected "
                f"device {'cpu' if devices[i] else 'cuda:0'} but got {_device_name(g._data)}"
            )


def _wrong_count(node, in_grads):
    """PyTorch's error for a node that returned a gradient too many, or none for an input that
    needs one; None where the missing ones are for inputs that need none (constants)."""
    edges = node.next_functions
    if len(in_grads) < len(edges) and all(c is None for c, _ in edges[len(in_grads):]):
        return None
    return RuntimeError(
        f"Function {node.name()} returned an invalid number of gradients - expected "
        f"{len(edges)}, but got {len(in_grads)}"
    )


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
        inputs = [(_target(node), t) for node, t in inputs]
        capture = {node: None for node, _ in inputs}
        needed = _needed(roots, deps, capture)
    buffers = {}
    # What user code holds or may hold: the seeds, whatever hooks and custom Functions were given
    # or returned (tensors and their arrays, by id; each is alive while it matters). Never adopted.
    if len(roots) == 1:  # (``loss.backward()``: one root, which nothing else reaches)
        grad = grads[0]
        foreign = {id(grad), id(grad._data)}
        buffers[roots[0]] = grad
        ready = [roots[0]]
    else:
        foreign = set()
        for node, grad in zip(roots, grads):
            foreign.add(id(grad))
            foreign.add(id(grad._data))
            buffers[node] = buffers[node] + grad if node in buffers else grad
        ready = [n for n in dict.fromkeys(roots) if deps[n] == 0]
    writes = []  # (tensor, gradient) pairs for .grad, applied at the end
    accumulated = None  # leaf nodes with ``register_hook`` hooks, run after the writes
    prev_mode = grad_mode.state.enabled
    grad_mode.state.enabled = create_graph
    anomaly = anomaly_mode.state.enabled
    plain = capture is None and not anomaly  # (no hooks to check per node but the nodes')
    cuda = registry._cuda_kernels is not None
    node = None
    try:
        while ready:
            node = ready.pop()
            grad = buffers.pop(node, None)
            op = node.op  # (None: an AccumulateGrad, or a node of user code)
            if grad is None or (needed is not None and node not in needed):
                in_grads = None  # (not run: its children still count it as done)
            elif (op is not None and plain and node._pre_hooks is None
                    and node._retained is None):  # (the common case, first)
                # a registered op's node (OpNode.apply and .release, inline)
                in_grads = None
                if op.through is not None and not create_graph:
                    child = _sole_child(node, deps, buffers)
                    if child is not None:
                        in_grads = op.through(node, child, grad)
                        if in_grads is not None:  # (the child's backward ran too: on from it)
                            if not retain_graph:
                                node.release()
                            node, op = child, child.op
                if in_grads is None:
                    in_grads = op.backward(node, grad)
                if not retain_graph and node._saved:
                    node._saved = ()
                    node._released = True
            else:
                acc = type(node) is AccumulateGrad
                if node._pre_hooks is not None or node._retained is not None or (
                        acc and node.variable._hooks):
                    grad = _run_pre_hooks(node, grad, writes, foreign, capture is None)
                if acc:
                    if node._pre_hooks is not None and node._pre_hooks.post and capture is None:
                        # (a leaf node's own hooks: after its .grad is written, as PyTorch's)
                        if accumulated is None:
                            accumulated = []
                        accumulated.append((node, grad))
                    if capture is not None:
                        if node in capture:
                            capture[node] = grad
                    else:
                        writes.append((node.variable, grad))
                    continue
                if capture is not None and node in capture:
                    capture[node] = grad
                if capture is not None and node in capture and not any(
                        c in needed for c, _ in node.next_functions if c is not None):
                    in_grads = None  # (a target's node that leads to no other: not run)
                elif anomaly:
                    in_grads = _apply_anomaly(node, grad)
                else:
                    in_grads = node.apply(grad)
                if node._pre_hooks is not None and node._pre_hooks.post and in_grads is not None:
                    in_grads = _run_post_hooks(node, in_grads, grad, foreign)
                if not retain_graph and in_grads is not None:  # (a node not run keeps its
                    node.release()                              # saved values, as PyTorch's)
            # The gradients checked and handed to the children (``_propagate``, inline).
            edges = node.next_functions
            if in_grads is None:
                for child, _ in edges:
                    if child is not None:
                        left = deps[child] - 1
                        deps[child] = left
                        if not left:
                            ready.append(child)
                continue
            if len(in_grads) != len(edges):
                error = _wrong_count(node, in_grads)
                if error is not None:
                    raise error
                in_grads = tuple(in_grads) + (None,) * (len(edges) - len(in_grads))
            if op is None:  # user code made these (a custom Function's backward)
                for g in in_grads:
                    if g is not None:
                        foreign.add(id(g))
                        foreign.add(id(g._data))
            elif cuda:
                _check_devices(node, in_grads)
            shapes = node.input_shapes
            dtypes = node.input_dtypes
            for i, (child, nr) in enumerate(edges):
                if child is None:
                    continue
                g = in_grads[i]
                if g is not None:
                    data = g._data
                    if shapes is not None and (data.shape != shapes[i] or (
                            data.dtype is not dtypes[i] and data.dtype != dtypes[i])):
                        g = _fit(node, i, g, shapes[i], dtypes[i])
                    if child._num_outputs != 1:
                        _buffer_output(buffers, child, nr, g)
                    else:
                        held = buffers.get(child)
                        buffers[child] = g if held is None else _sum(held, g)
                left = deps[child] - 1
                deps[child] = left
                if not left:
                    ready.append(child)
    except Exception:
        if anomaly and node is not None:
            anomaly_mode.warn_forward_trace(node)
        raise
    finally:
        grad_mode.state.enabled = prev_mode
    grad = g = held = in_grads = None
    if capture is not None:
        return [_private(_output_grad(capture[node], t)) for node, t in inputs]
    accumulate(writes, create_graph, foreign)
    if accumulated is not None:
        for node, grad in accumulated:
            _run_post_hooks(node, (), grad, foreign)
    return None


def _sole_child(node, deps, buffers):
    """The op node ``node``'s one input comes from, where ``node`` is its only consumer in this
    backward (no other has given it a gradient, and none will) and nothing observes the
    gradient between them (a hook, a retained grad): an ``Op.through`` may then run the two
    backwards at once. Else None."""
    edges = node.next_functions
    if len(edges) != 1:
        return None
    child = edges[0][0]
    if (child is None or getattr(child, "op", None) is None or deps.get(child) != 1
            or child in buffers
            or child._pre_hooks is not None or child._retained is not None
            or child._num_outputs != 1 or child._released):
        return None
    return child


def _target(node):
    """The node whose gradient ``autograd.grad`` reads for a target: for one of the several
    outputs of a node (an ``OutputRoot``), that node (its list holds the output's gradient)."""
    if type(node) is _lazy.module("autograd.function").OutputRoot:
        return node.next_functions[0][0]
    return node


def _output_grad(grad, tensor):
    """A target's gradient: its own output's, where its node has several outputs."""
    if isinstance(grad, list):
        return grad[tensor.output_nr]
    return grad


def _private(grad):
    """``grad``, or a copy of it where it is a ``SharedGrad`` (another tensor's data, passed on by
    ``ops.elementwise._times`` for ``1 * other``). Such a gradient lives inside the engine only:
    hooks, custom Functions, ``autograd.grad``'s results and ``.grad`` get a copy, as PyTorch's
    would be a fresh tensor."""
    if grad is not None and grad._shares_data:
        return Tensor._wrap(_copy(grad._data))
    return grad


def _typename(t) -> str:
    kind = torch_name(t._data.dtype)
    return f"numgrad.{kind}Tensor" if isinstance(t._data, np.ndarray) else \
        f"numgrad.cuda.{kind}Tensor"


def _check_hook_result(hook, original, result):
    """PyTorch's checks of what a hook returned in place of a gradient."""
    if not isinstance(result, Tensor):
        raise TypeError(f"expected Variable, but hook returned '{type(result).__name__}'")
    name = getattr(hook, "__name__", type(hook).__name__)
    a, b = original._data, result._data
    if a.dtype != b.dtype or isinstance(a, np.ndarray) != isinstance(b, np.ndarray):
        raise RuntimeError(f"hook '{name}' has changed the type of value (was "
                           f"{_typename(original)} got {_typename(result)})")
    if a.shape != b.shape:
        raise RuntimeError(f"hook '{name}' has changed the size of value")


def _run_post_hooks(node, in_grads, grad, foreign):
    """The hooks of ``Node.register_hook``, in order: ``hook(grad_inputs, grad_outputs)`` with
    the gradients of the node's inputs, checked and reduced to the inputs' shapes (as PyTorch
    validates them before its post hooks), and those of its outputs; a tuple returned replaces
    the gradients of the inputs."""
    dispatch.graph_break("a node hook (Python code that runs in the backward)")
    edges = node.next_functions
    if len(in_grads) < len(edges):
        error = _wrong_count(node, in_grads)
        if error is not None:
            raise error
    grads = []
    shapes, dtypes = node.input_shapes, node.input_dtypes
    for i, g in enumerate(in_grads):
        if g is not None:
            g = _private(g)
            if shapes is not None and i < len(shapes) and shapes[i] is not None and (
                    g._data.shape != shapes[i] or g._data.dtype != dtypes[i]):
                g = _fit(node, i, g, shapes[i], dtypes[i])
            foreign.add(id(g))
            foreign.add(id(g._data))
        grads.append(g)
    grads = tuple(grads) + (None,) * (len(edges) - len(grads))
    outputs = tuple(grad) if isinstance(grad, list) else (grad,)
    for hook in tuple(node._pre_hooks.post.values()):
        result = hook(grads, outputs)
        if result is not None:
            result = tuple(result)
            if len(result) != len(grads):
                name = getattr(hook, "__name__", type(hook).__name__)
                raise RuntimeError(
                    f"hook '{name}' has returned an incorrect number of values (got "
                    f"{len(result)}, but expected {len(grads)})"
                )
            for g in result:
                if g is not None:
                    foreign.add(id(g))
                    foreign.add(id(g._data))
            grads = result
    return grads


def _run_pre_hooks(node, grad, writes, foreign, accumulating=True):
    if type(node) is AccumulateGrad:
        hooks = node.variable._hooks
        if node._pre_hooks and accumulating:  # (``register_prehook`` on the leaf's node: after
            hooks = {**(hooks or {}), **node._pre_hooks}  # the tensor's; not run by grad())
    else:
        hooks = node._pre_hooks
    if hooks or node._retained is not None:  # (their Python runs at each backward)
        dispatch.graph_break("a hook or retain_grad() (Python code that runs in the backward)")
    several = isinstance(grad, list)  # (a node of several outputs: one gradient each)
    if hooks:
        grad = [_private(g) for g in grad] if several else _private(grad)
        for hook in tuple(hooks.values()):
            _foreign(grad, foreign)  # (the hook may keep what it was given)
            result = hook(grad)
            if result is not None:
                if several:  # (the hooks given a list check what they return themselves:
                    grad = list(result)  # ``_Prehook``, ``tensor._OutputHook``)
                else:
                    _check_hook_result(hook, grad, result)
                    grad = result
        _foreign(grad, foreign)
    retained = node._retained
    if retained is not None:
        if type(retained) is dict:  # (outputs of a node of several: {output_nr: tensor})
            for nr, ref in retained.items():
                tensor = ref()
                if tensor is not None and grad[nr] is not None:
                    writes.append((tensor, grad[nr]))
        else:
            tensor = retained()
            if tensor is not None:
                writes.append((tensor, grad))
    return grad


def _foreign(grad, foreign) -> None:
    """Notes a gradient (or each of a list of them) as held by user code."""
    for g in grad if isinstance(grad, list) else (grad,):
        if g is not None:
            foreign.add(id(g))
            foreign.add(id(g._data))


def _apply_anomaly(node, grad):
    with anomaly_mode.running(node):  # nodes its backward records get it as their parent
        in_grads = node.apply(grad)
    if anomaly_mode.state.check_nan:
        _check_nan(node, in_grads)
    return in_grads


def _check_nan(node, in_grads):
    """Anomaly mode: a node may not return NaN for an input that receives a gradient. (On CUDA
    each gradient is read back: a sync per node, which the user asked for by turning anomaly
    detection on; PyTorch's check syncs too.)"""
    for i, (child, _) in enumerate(node.next_functions):
        g = in_grads[i] if i < len(in_grads) else None
        if child is not None and g is not None and np.isnan(g._host()).any():
            raise RuntimeError(f"Function '{node.name()}' returned nan values in its {i}th output.")


def _sum(held, grad):
    """Two gradients of one node's output added: in a plain backward (no graph recorded) on one
    dtype and shape, straight to the kernel (the same values as ``held + grad``)."""
    a, b = held._data, grad._data
    if not grad_mode.state.enabled and a.dtype == b.dtype and a.shape == b.shape:
        out = plain_binary(_ADD, a, b)  # (float host arrays: the kernel, directly)
        if out is not None:
            return _wrap(out)
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


def _adoptable(grad, foreign, adopted) -> bool:
    """Whether ``grad`` can become ``.grad`` as it is, without a copy, as PyTorch steals such
    buffers: a host array that owns its memory (or a contiguous view of all of such an array: a
    transpose back of a column-major product, see Mm.backward; a reshape of a sum), made in this
    backward by a registered formula or the engine (not ``foreign``), not adopted already
    (``adopted``: ids of the arrays given away in this backward) and not a ``SharedGrad``."""
    data = grad._data
    if dispatch._pushed and dispatch.stands_for(data):  # (numgrad.compile's array: the array
        if id(data) in foreign:  # it stands for, so that a replay adopts where eager does)
            return False
        data = data.base
        if type(data) is not np.ndarray or data.shape != grad._data.shape:
            return False
    if (not isinstance(data, np.ndarray) or grad._shares_data or id(grad) in foreign
            or not data.flags.c_contiguous or not data.flags.writeable):
        return False
    base = data.base
    if base is None:
        owner = data
    elif (type(base) is np.ndarray and base.base is None and base.size == data.size
            and base.nbytes == data.nbytes):
        # (a C-contiguous view of as many bytes as its base's whole buffer starts where the
        # buffer does: the same test as comparing addresses, without ``.ctypes``'s 1-3 us)
        owner = base
    else:
        return False
    key = id(owner)
    if key in foreign or key in adopted or id(data) in foreign:
        return False
    adopted.add(key)
    return True


def _copy(data):
    """A copy of host or device array data."""
    return kernels_of(data).copy(data)


def accumulate(writes, create_graph: bool, foreign=None) -> None:
    """Applies gradient writes (tensor, gradient): into a leaf's ``.grad``, or a retained one's,
    under the lock that makes concurrent backward passes into one leaf add up. A first gradient
    is adopted where ``_adoptable`` says so (``foreign`` given: the engine's own run), else
    copied, so ``.grad`` never aliases another tensor's data."""
    adopted = set()
    with _GRAD_LOCK:
        if not create_graph:  # (a .grad that cannot take the sum refuses before any is written)
            for tensor, _ in writes:
                if tensor._grad is not None:
                    check_accumulable(tensor._grad._data)
        for tensor, grad in writes:
            if tensor._grad is None:
                if create_graph or (foreign is not None and _adoptable(grad, foreign, adopted)):
                    tensor._grad = grad
                else:
                    tensor._grad = Tensor._wrap(_copy(grad._data))
            elif create_graph:
                tensor._grad = tensor._grad + grad
            else:
                tensor._grad._add_inplace_data(grad._data, True)  # (checked above)
    if POST_ACCUMULATE:
        _run_post_accumulate(writes)


# The hooks of ``Tensor.register_post_accumulate_grad_hook``: id(leaf) -> (weak reference to
# the leaf, {handle id: hook}); an entry goes with its leaf.
POST_ACCUMULATE: dict = {}


def post_accumulate_hooks(leaf) -> dict:
    """The dict of post-accumulate-grad hooks of ``leaf``, made on first use."""
    key = id(leaf)
    entry = POST_ACCUMULATE.get(key)
    if entry is None or entry[0]() is not leaf:
        entry = POST_ACCUMULATE[key] = (
            weakref.ref(leaf, lambda _, key=key, table=POST_ACCUMULATE: table.pop(key, None)),
            {})
    return entry[1]


def _run_post_accumulate(writes) -> None:
    """Each leaf written with its post-accumulate-grad hooks, ``hook(leaf)``, after its
    ``.grad`` holds the new sum (outside the lock: a hook may step an optimizer)."""
    done = set()
    for tensor, _ in writes:
        entry = POST_ACCUMULATE.get(id(tensor))
        if entry is None or entry[0]() is not tensor or id(tensor) in done:
            continue
        done.add(id(tensor))
        for hook in tuple(entry[1].values()):
            hook(tensor)
