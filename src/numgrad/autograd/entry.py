"""The two entry points of a backward pass, ``numgrad.autograd.backward`` and ``grad``: the
seeds of the outputs' gradients, the run of the engine, and (``grad``, ``backward(inputs=...)``)
the gradients of given inputs only. ``numgrad.autograd`` exports them (imported on first use: they
need ``Tensor``, and tensor.py imports ``autograd.node``, which runs ``autograd/__init__`` first)."""
from __future__ import annotations

import threading

import numpy as np

from .. import ops  # (ops.stack: the package's name, bound once the families are loaded)
from ..creation import ones_like, zeros_like
from ..dispatch import note_created
from ..tensor import Tensor
from . import engine


def _as_tuple(x) -> tuple:
    if x is None:
        return ()
    return (x,) if isinstance(x, Tensor) else tuple(x)


def _seed_gradients(outputs: tuple, grad_outputs) -> list:
    """The gradient each output starts from: given, or 1 for a single-element output."""
    grads = list(_as_tuple(grad_outputs)) if grad_outputs is not None else [None] * len(outputs)
    if len(grads) != len(outputs):
        raise RuntimeError(
            "grad can be implicitly created only for scalar outputs"
            if not grads else
            f"Mismatch in number of tensors: got {len(grads)} gradients for {len(outputs)} outputs"
        )
    seeds = []
    for i, (out, g) in enumerate(zip(outputs, grads)):
        if not out._requires_grad:
            raise RuntimeError(
                f"element {i} of tensors does not require grad and does not have a grad_fn"
            )
        if g is None:
            if out._data.size != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            g = _one_like(out)
        elif not isinstance(g, Tensor):
            raise TypeError(f"gradients can be either Tensors or None, but got {type(g).__name__}")
        elif g._data.shape != out._data.shape:
            raise RuntimeError(
                f"Mismatch in shape: grad_output[{i}] has a shape of {g.shape} and output[{i}] has "
                f"a shape of {out.shape}."
            )
        elif g._data.dtype != out._data.dtype and out._data.itemsize == 2 and \
                out.dtype.is_floating_point and g.dtype.is_floating_point:
            g = g.to(out.dtype)  # (a float16/bfloat16 output's seed rounded to it, as PyTorch)
        seeds.append(g)
    return seeds


_ONES: dict = {}  # dtype -> a 0-d 1, copied for each seed


def _one_like(out):
    """The implicit seed of a single-element output: a fresh 1 of its shape, dtype and device."""
    data = out._data
    if isinstance(data, np.ndarray) and data.dtype.kind != "V":  # (not bfloat16: ones_like's)
        one = _ONES.get(data.dtype)
        if one is None:
            one = _ONES[data.dtype] = np.ones((), data.dtype)
        g = one.copy() if data.ndim == 0 else np.ones(data.shape, data.dtype)  # (np.ones: 0.6 us)
        note_created(g)
        return Tensor._wrap(g)
    return ones_like(out)


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph: bool = False,
             inputs=None) -> None:
    """Computes the sum of gradients of ``tensors`` with respect to the graph's leaves and
    accumulates them into the leaves' ``.grad`` (or only into ``inputs``' if given)."""
    if create_graph:
        _warn_create_graph()
    if (grad_tensors is None and inputs is None and type(tensors) is Tensor
            and tensors._data.size == 1):
        fn = tensors.grad_fn
        if fn is not None:
            # The common call, ``loss.backward()``: one output of a graph, seeded with 1.
            engine.run_backward([fn if fn._num_outputs == 1 else tensors._edge()],
                                [_one_like(tensors)],
                                create_graph if retain_graph is None else retain_graph,
                                create_graph)
            return
    outputs = _as_tuple(tensors)
    seeds = _seed_gradients(outputs, grad_tensors)
    if retain_graph is None:
        retain_graph = create_graph
    roots = [t._edge() for t in outputs]
    if inputs is None:
        engine.run_backward(roots, seeds, retain_graph, create_graph)
        return
    targets = _as_tuple(inputs)
    if not targets:
        raise RuntimeError("`inputs` argument to `backward()` cannot be empty.")
    pairs = [(_input_node(t), t) for t in targets]
    grads = _run_for_inputs(roots, seeds, retain_graph, create_graph, inputs=pairs)
    engine.accumulate([(t, g) for t, g in zip(targets, grads) if g is not None], create_graph)


class _TaskState(threading.local):
    """Whether the backward pass running in this thread was asked for given inputs only
    (``autograd.grad``, ``backward(inputs=...)``): PyTorch's ``_is_checkpoint_valid``, which
    the reentrant ``utils.checkpoint`` consults."""

    inputs_given = False


_task = _TaskState()


def _is_checkpoint_valid() -> bool:
    return not _task.inputs_given


def _run_for_inputs(*args, **kwargs):
    """``engine.run_backward`` for a pass asked for given inputs (see ``_TaskState``)."""
    prev = _task.inputs_given
    _task.inputs_given = True
    try:
        return engine.run_backward(*args, **kwargs)
    finally:
        _task.inputs_given = prev


def _warn_create_graph() -> None:
    """PyTorch's warning, once a process, for a backward that makes a graph of the gradients it
    accumulates into the leaves (each ``.grad`` then refers back to its leaf)."""
    import numgrad

    numgrad._warn_once(
        "Using backward() with create_graph=True will create a reference cycle between the "
        "parameter and its gradient which can cause a memory leak. We recommend using "
        "autograd.grad when creating the graph to avoid this. If you have to use this function, "
        "make sure to reset the .grad fields of your parameters to None after use to break the "
        "cycle and avoid the leak.")


def _input_node(t):
    if not t._requires_grad:
        raise RuntimeError("One of the differentiated Tensors does not require grad")
    return t._edge()


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph: bool = False,
         allow_unused=None, is_grads_batched: bool = False,
         materialize_grads: bool = False) -> tuple:
    """The gradients of ``outputs`` with respect to ``inputs``, returned, not accumulated. With
    ``is_grads_batched``, each of ``grad_outputs`` has a leading batch dimension and so does
    each gradient (one backward pass per seed of the batch)."""
    outs = _as_tuple(outputs)
    targets = _as_tuple(inputs)
    if is_grads_batched:
        seeds = _as_tuple(grad_outputs)
        per_seed = []
        for b in range(seeds[0].shape[0]):
            last = b == seeds[0].shape[0] - 1
            per_seed.append(grad(outs, targets, tuple(s[b] for s in seeds),
                                 retain_graph if last else True, create_graph, allow_unused,
                                 materialize_grads=materialize_grads))
        return tuple(None if g[0] is None else ops.stack(list(g)) for g in zip(*per_seed))
    seeds = _seed_gradients(outs, grad_outputs)
    if retain_graph is None:
        retain_graph = create_graph
    pairs = [(_input_node(t), t) for t in targets]
    grads = _run_for_inputs([t._edge() for t in outs], seeds, retain_graph, create_graph,
                            inputs=pairs)
    result = []
    for index, (t, g) in enumerate(zip(targets, grads)):
        if g is None:
            if materialize_grads:
                g = zeros_like(t)
            elif not allow_unused:
                raise RuntimeError(
                    f"The differentiated Tensor at index {index} appears to not have been used in "
                    "the graph. Set allow_unused=True if this is the desired behavior."
                )
        elif not create_graph:
            g = g.detach()
        result.append(g)
    return tuple(result)
