"""``numgrad.utils.checkpoint``: activation checkpointing, as ``torch.utils.checkpoint``.

``checkpoint(fn, *args, use_reentrant=False)`` runs ``fn`` keeping none of the tensors its ops
save for backward: each is packed as its position (``autograd.graph.saved_tensors_hooks``), and
the first one backward asks for runs ``fn`` again on the same inputs, with grad mode on and the
random state the forward had (so dropout draws the same mask), collecting the recomputed tensors
in the same order; every unpack then hands back its recomputed tensor. The outputs keep their real
``grad_fn`` (``SinBackward0``, not a checkpoint node), and ``autograd.grad`` works through them.

``use_reentrant=True`` (PyTorch's default when the argument is left out, with its warning) is
PyTorch's older variant: a custom Function whose forward runs ``fn`` under ``no_grad`` and whose
backward re-runs it on detached inputs and calls ``autograd.backward`` inside the backward.
``checkpoint_sequential`` checkpoints all but the last of ``segments`` runs of a sequence of
modules.
"""
from __future__ import annotations

import contextlib
import warnings

from .. import _lazy, autograd
from .. import random as _random
from ..autograd import Function, backward as _backward
from ..autograd.grad_mode import enable_grad, no_grad
from ..autograd.graph import saved_tensors_hooks
from ..tensor import Tensor

__all__ = ["checkpoint", "checkpoint_sequential", "CheckpointError", "detach_variable",
           "check_backward_validity", "noop_context_fn"]


class CheckpointError(RuntimeError):
    """Raised when what a recomputation saved differs from what the forward saved."""


def noop_context_fn():
    return contextlib.nullcontext(), contextlib.nullcontext()


def detach_variable(inputs: tuple) -> tuple:
    """Each tensor of ``inputs`` detached, keeping whether it requires grad."""
    if not isinstance(inputs, tuple):
        raise RuntimeError(
            f"Only tuple of tensors is supported. Got Unsupported input type: "
            f"{type(inputs).__name__}")
    out = []
    for inp in inputs:
        if not isinstance(inp, Tensor):
            out.append(inp)
            continue
        x = inp.detach()
        x.requires_grad = inp.requires_grad
        out.append(x)
    return tuple(out)


def check_backward_validity(inputs) -> None:
    if not any(isinstance(inp, Tensor) and inp.requires_grad for inp in inputs):
        warnings.warn("None of the inputs have requires_grad=True. Gradients will be None",
                      stacklevel=3)


class CheckpointFunction(Function):
    """The reentrant variant: the node of one checkpointed call."""

    @staticmethod
    def forward(ctx, run_function, preserve_rng_state, *args):
        check_backward_validity(args)
        ctx.run_function = run_function
        ctx.preserve_rng_state = preserve_rng_state
        if preserve_rng_state:
            ctx.fwd_cpu_state = _random.get_rng_state()
        ctx.inputs = []
        ctx.tensor_indices = []
        tensors = []
        for i, arg in enumerate(args):
            if isinstance(arg, Tensor):
                tensors.append(arg)
                ctx.tensor_indices.append(i)
                ctx.inputs.append(None)
            else:
                ctx.inputs.append(arg)
        ctx.save_for_backward(*tensors)
        with no_grad():
            outputs = run_function(*args)
        return outputs

    @staticmethod
    def backward(ctx, *grads):
        if not autograd._is_checkpoint_valid():
            raise RuntimeError(
                "When use_reentrant=True, torch.utils.checkpoint is incompatible with .grad() or "
                "passing an `inputs` parameter to .backward(). To resolve this error, you can "
                "either set use_reentrant=False, or call .backward() without passing the "
                "`inputs` argument."
            )
        inputs = list(ctx.inputs)
        for i, t in zip(ctx.tensor_indices, ctx.saved_tensors):
            inputs[i] = t
        with _random.fork_rng(devices=[], enabled=ctx.preserve_rng_state):
            if ctx.preserve_rng_state:
                _random.set_rng_state(ctx.fwd_cpu_state)
            detached = detach_variable(tuple(inputs))
            with enable_grad():
                outputs = ctx.run_function(*detached)
        if isinstance(outputs, Tensor):
            outputs = (outputs,)
        with_grad, seeds = [], []
        for out, g in zip(outputs, grads):
            if isinstance(out, Tensor) and out.requires_grad:
                with_grad.append(out)
                seeds.append(g)
        if not with_grad:
            raise RuntimeError(
                "none of output has requires_grad=True, this checkpoint() is not necessary")
        _backward(with_grad, seeds)
        return (None, None) + tuple(
            inp.grad if isinstance(inp, Tensor) else None for inp in detached)


class _Frame:
    """One non-reentrant checkpointed call: what recomputing it needs, and what it gave."""

    def __init__(self, fn, args, kwargs, rng_state, context_fn):
        self.fn, self.args, self.kwargs = fn, args, kwargs
        self.rng_state = rng_state
        self.context_fn = context_fn
        self.count = 0  # tensors saved in the forward
        self.recomputed = None  # the recomputation's saved tensors, in order
        self.metadata = []  # (shape, dtype) of each, as the forward saved it
        self.unpacked = set()  # the positions handed out since the last recomputation

    def pack(self, tensor):
        index = self.count
        self.count += 1
        self.metadata.append((tuple(tensor.shape), tensor.dtype))
        return index

    def unpack(self, index):
        """The recomputed tensor ``index``. Once each has been handed out, the recomputed
        tensors are let go, so that another backward through a retained graph recomputes
        them, as PyTorch recomputes once per backward pass."""
        recomputed = self.recomputed
        if recomputed is None:
            recomputed = self.recompute()
        if index >= len(recomputed):
            raise CheckpointError(
                "torch.utils.checkpoint: trying to save more tensors during recomputation than "
                "during the original forward pass."
            )
        self.unpacked.add(index)
        if len(self.unpacked) == self.count:
            self.recomputed = None
            self.unpacked = set()
        return recomputed[index]

    def recompute(self):
        saved = []

        def pack(t):
            saved.append(t.detach())
            return None

        with _random.fork_rng(devices=[], enabled=self.rng_state is not None):
            if self.rng_state is not None:
                _random.set_rng_state(self.rng_state)
            _, recompute_context = self.context_fn()
            with enable_grad(), recompute_context, saved_tensors_hooks(pack, lambda _: None):
                self.fn(*self.args, **self.kwargs)
        if len(saved) != self.count:
            raise CheckpointError(
                "torch.utils.checkpoint: A different number of tensors was saved during the "
                "original forward and recomputation.\n"
                f"Number of tensors saved during forward: {self.count}\n"
                f"Number of tensors saved during recomputation: {len(saved)}"
            )
        for k, (t, (shape, dtype)) in enumerate(zip(saved, self.metadata)):
            if tuple(t.shape) != shape or t.dtype != dtype:
                raise CheckpointError(
                    "torch.utils.checkpoint: Recomputed values for the following tensors have "
                    "different metadata than during the forward pass.\n"
                    f"tensor at position {k}:\n"
                    f"saved metadata: {{'shape': numgrad.Size({list(shape)}), 'dtype': {dtype}}}\n"
                    f"recomputed metadata: {{'shape': numgrad.Size({list(t.shape)}), "
                    f"'dtype': {t.dtype}}}\n"
                )
        self.recomputed = saved
        return saved


def _warn_reentrant(where: str) -> None:
    if where == "checkpoint":
        message = (
            "torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. "
            "Starting in PyTorch 2.9, calling checkpoint without use_reentrant will raise an "
            "exception. use_reentrant=False is recommended, but if you need to preserve the "
            "current default behavior, you can pass use_reentrant=True. Refer to docs for more "
            "details on the differences between the two variants."
        )
    else:
        message = (
            "torch.utils.checkpoint.checkpoint_sequential: the use_reentrant parameter should be "
            "passed explicitly. In version 2.9 we will raise an exception if use_reentrant is not "
            "passed. use_reentrant=False is recommended, but if you need to preserve the current "
            "default behavior, you can pass use_reentrant=True. Refer to docs for more details "
            "on the differences between the two variants."
        )
    warnings.warn(message, stacklevel=3)


def checkpoint(function, *args, use_reentrant: bool | None = None, context_fn=noop_context_fn,
               determinism_check: str = "default", debug: bool = False, early_stop: bool = True,
               **kwargs):
    """``function(*args, **kwargs)``, its intermediate results recomputed in backward instead of
    kept (see the module's docstring). ``preserve_rng_state=True`` (a keyword) restores the
    forward's random state for the recomputation."""
    if use_reentrant is None:
        _warn_reentrant("checkpoint")
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs and use_reentrant:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))
    if use_reentrant:
        if context_fn is not noop_context_fn or debug is not False:
            raise ValueError(
                "Passing `context_fn` or `debug` is only supported when use_reentrant=False.")
        return CheckpointFunction.apply(function, preserve, *args)
    if determinism_check not in ("default", "none"):
        raise ValueError(
            "determinism_check should be one of ['default', 'none'], but got "
            f"{determinism_check}")
    forward_context, _ = context_fn()
    frame = _Frame(function, args, kwargs, _random.get_rng_state() if preserve else None,
                   context_fn)
    with forward_context, saved_tensors_hooks(frame.pack, frame.unpack):
        return function(*args, **kwargs)


def checkpoint_sequential(functions, segments, input, use_reentrant: bool | None = None,
                          **kwargs):
    """Runs ``functions`` (a list of modules or an ``nn.Sequential``) on ``input`` in
    ``segments`` runs, each but the last checkpointed."""
    if use_reentrant is None:
        _warn_reentrant("checkpoint_sequential")
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))

    def run_function(start, end, functions):
        def forward(input):
            for j in range(start, end + 1):
                input = functions[j](input)
            return input
        return forward

    if isinstance(functions, _lazy.module("nn").Sequential):  # (nn stays off this import)
        functions = list(functions.children())
    segment_size = len(functions) // segments
    end = -1
    for start in range(0, segment_size * (segments - 1), segment_size):
        end = start + segment_size - 1
        input = checkpoint(run_function(start, end, functions), input,
                           use_reentrant=use_reentrant, preserve_rng_state=preserve)
    return run_function(end + 1, len(functions) - 1, functions)(input)
