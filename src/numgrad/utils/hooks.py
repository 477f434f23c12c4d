"""``numgrad.utils.hooks``, as ``torch.utils.hooks``: the handle that hook registrations return,
and ``BackwardHook``, which runs a module's full backward hooks.

``BackwardHook`` works as PyTorch's: the module's tensor arguments and its outputs each pass
through one identity ``autograd.Function`` (``BackwardHookFunctionBackward``). The outputs' node
runs first in the backward: it records the gradients of the outputs (``grad_output``, after the
backward pre-hooks, which may replace them). The inputs' node runs when the gradients of the
inputs are complete: it calls each ``hook(module, grad_input, grad_output)``, which may return
new ``grad_input``. Positions that are not tensors (or get no gradient) are None."""
from __future__ import annotations

import warnings

import numgrad

from ..autograd.function import Function
from ..autograd.node import RemovableHandle
from ..tensor import Tensor

__all__ = ["BackwardHook", "RemovableHandle"]


class BackwardHookFunction(Function):
    """The identity on tensors, whose backward hands the gradients to a ``BackwardHook``."""

    @staticmethod
    def forward(ctx, callback, *tensors):
        ctx.callback = callback
        ctx.set_materialize_grads(False)
        outs = tuple(t.detach() for t in tensors)
        ctx.mark_non_differentiable(*[o for o, t in zip(outs, tensors) if not t.requires_grad])
        return outs

    @staticmethod
    def backward(ctx, *grads):
        return (None,) + tuple(ctx.callback(grads))


def _pack_with_none(indices, values, size: int) -> tuple:
    res = [None] * size
    for i, v in zip(indices, values):
        res[i] = v
    return tuple(res)


class BackwardHook:
    """One module call's backward hooks (``Module.register_full_backward_hook`` and
    ``register_full_backward_pre_hook``); made by the module's call when it has any."""

    def __init__(self, module, user_hooks, user_pre_hooks):
        self.module = module
        self.user_hooks = user_hooks
        self.user_pre_hooks = user_pre_hooks
        self.grad_outputs = None
        self.n_outputs = -1
        self.output_tensors_index = None
        self.n_inputs = -1
        self.input_tensors_index = None

    def _apply_on_tensors(self, callback, args: tuple):
        index = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        tensors = [args[i] for i in index]
        if not (numgrad.is_grad_enabled() and any(t.requires_grad for t in tensors)):
            return args, None
        new = BackwardHookFunction.apply(callback, *tensors)
        out = list(args)
        for i, t in zip(index, new):
            out[i] = t
        return tuple(out), index

    def setup_input_hook(self, args: tuple) -> tuple:
        def on_inputs(grads):
            if self.grad_outputs is None:  # (a gradient that reached the inputs without
                return grads               # passing through the outputs, as in PyTorch)
            # (as PyTorch's identity node, which materialises a missing gradient as zeros)
            grads = [g if g is not None else numgrad.zeros(shape, dtype=dtype, device=device)
                     for g, (shape, dtype, device) in zip(grads, self._input_meta)]
            res = _pack_with_none(self.input_tensors_index, grads, self.n_inputs)
            for hook in self.user_hooks:
                out = hook(self.module, res, self.grad_outputs)
                if out is None:
                    continue
                if len(out) != len(res):
                    raise RuntimeError("Backward hook returned an invalid number of grad_input, "
                                       f"got {len(out)}, but expected {len(res)}")
                res = out
            self.grad_outputs = None
            return tuple(res[i] for i in self.input_tensors_index)


        self._input_meta = [(tuple(a.shape), a.dtype, a.device) for a in args
                            if isinstance(a, Tensor)]
        res, index = self._apply_on_tensors(on_inputs, args)
        self.n_inputs, self.input_tensors_index = len(args), index
        return res

    def setup_output_hook(self, result):
        def on_outputs(grads):
            self.grad_outputs = _pack_with_none(self.output_tensors_index, grads,
                                                self.n_outputs)
            for hook in self.user_pre_hooks:
                new = hook(self.module, self.grad_outputs)
                if new is None:
                    continue
                if len(new) != len(self.grad_outputs):
                    raise RuntimeError("Backward pre hook returned an invalid number of "
                                       f"grad_output, got {len(new)}, but expected "
                                       f"{len(self.grad_outputs)}")
                self.grad_outputs = tuple(new)
            local = self.grad_outputs
            if self.input_tensors_index is None:  # no input needs a gradient: call them here
                warnings.warn("Full backward hook is firing when gradients are computed with "
                              "respect to module outputs since no inputs require gradients. See "
                              "https://docs.pytorch.org/docs/main/generated/torch.nn.Module.html"
                              "#torch.nn.Module.register_full_backward_hook for more details.",
                              stacklevel=2)
                grad_inputs = _pack_with_none([], [], self.n_inputs)
                for hook in self.user_hooks:
                    out = hook(self.module, grad_inputs, self.grad_outputs)
                    if out is not None and not (isinstance(out, tuple)
                                                and all(g is None for g in out)):
                        raise RuntimeError("Backward hook for Modules where no input requires "
                                           "gradient should always return None or None for "
                                           "all gradients.")
                self.grad_outputs = None
            return tuple(local[i] for i in self.output_tensors_index)

        single = not isinstance(result, tuple)
        args = (result,) if single else result
        res, index = self._apply_on_tensors(on_outputs, args)
        self.n_outputs, self.output_tensors_index = len(args), index
        return res[0] if single else res
