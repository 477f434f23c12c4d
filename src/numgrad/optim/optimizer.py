"""``Optimizer``: parameter groups, per-parameter state, ``zero_grad`` and ``state_dict``, as
PyTorch's. Subclasses implement ``step``."""
from __future__ import annotations

import copy
import functools
import warnings
from collections import defaultdict
from itertools import chain
from typing import Any

from ..autograd import grad_mode
from ..creation import tensor, zeros_like
from ..nn.parameter import reset_grads
from ..tensor import Tensor, _typename


class _RequiredParameter:
    """The default of an option that every parameter group must set."""

    def __repr__(self) -> str:
        return "<required parameter>"


required = _RequiredParameter()


def _no_grad_step(step):
    """Runs ``step`` with grad mode off: the updates are not recorded."""

    @functools.wraps(step)
    def wrapper(self, *args, **kwargs):
        with grad_mode.no_grad():
            return step(self, *args, **kwargs)

    return wrapper


def _call_closure(closure):
    """``closure()`` with grad mode on (it re-evaluates the loss), or None without one."""
    if closure is None:
        return None
    with grad_mode.enable_grad():
        return closure()


class Optimizer:
    """Base class of the optimizers.

    ``params`` is an iterable of tensors (or of ``(name, tensor)`` pairs), or of dicts that each
    define a parameter group: ``{"params": [...], "lr": ...}``; options a group does not set come
    from ``defaults``. ``state`` maps each parameter to its state (momentum buffers …).
    """

    def __init__(self, params, defaults: dict[str, Any]) -> None:
        self.defaults = defaults
        if isinstance(params, Tensor):
            raise TypeError(
                "params argument given to the optimizer should be an iterable of Tensors or "
                f"dicts, but got {_typename(params)}"
            )
        self.state: defaultdict = defaultdict(dict)
        self.param_groups: list[dict[str, Any]] = []
        groups = list(params)
        if not groups:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for group in groups:
            self.add_param_group(dict(group))

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Adds a group of parameters with its own options (e.g. to train a layer that was
        frozen until now)."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group)}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            params = [params]
        elif isinstance(params, set):
            raise TypeError(
                "optimizer parameters need to be organized in ordered collections, but the "
                "ordering of tensors in sets will change between runs. Please use a list instead."
            )
        params = list(params)
        names = [p[0] for p in params if isinstance(p, tuple)]
        params = [p[1] if isinstance(p, tuple) else p for p in params]
        if names:
            if len(names) != len(params):
                raise ValueError(
                    "all optimizer params should be with/without names. Some param names are "
                    "missing"
                )
            param_group["param_names"] = names
        param_group["params"] = params
        for p in params:
            if not isinstance(p, Tensor):
                raise TypeError(
                    f"optimizer can only optimize Tensors, but one of the params is {_typename(p)}"
                )
            if not (p.is_leaf or p.retains_grad):
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError(
                    "parameter group didn't specify a value of required optimization parameter "
                    f"{name}"
                )
            param_group.setdefault(name, default)
        if len(params) != len(set(params)):
            warnings.warn(
                "optimizer contains a parameter group with duplicate parameters; in future, this "
                "will cause an error; see github.com/pytorch/pytorch/issues/40967 for more "
                "information", stacklevel=3)
        existing = set()
        for group in self.param_groups:
            existing.update(group["params"])
            if ("param_names" in param_group) != ("param_names" in group):
                kind = "with names" if "param_names" in param_group else "without names"
                raise ValueError(
                    "all optimizer param groups should be with/without names. cannot add param "
                    f"group {kind} to the optimizer"
                )
        if not existing.isdisjoint(params):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Resets the gradients of all optimized tensors: to None by default (a parameter whose
        grad is None is then skipped by ``step``), else to zeros in place."""
        reset_grads(chain.from_iterable(group["params"] for group in self.param_groups), set_to_none)

    def step(self, closure=None):
        """Performs one optimization step (updates the parameters)."""
        raise NotImplementedError

    # ----------------------------------------------------------------- state
    def state_dict(self) -> dict[str, Any]:
        """The optimizer's state: ``{"state": {index: per-parameter state}, "param_groups": [...]}``
        with each group's ``params`` as indices into the order of all parameters (the tensors are
        the live state, not copies, as PyTorch)."""
        index: dict[int, int] = {}
        groups = []
        for group in self.param_groups:
            packed = {k: v for k, v in group.items() if k != "params"}
            for p in group["params"]:
                index.setdefault(id(p), len(index))
            packed["params"] = [index[id(p)] for p in group["params"]]
            groups.append(packed)
        state = {(index[id(k)] if isinstance(k, Tensor) else k): v for k, v in self.state.items()}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Loads a ``state_dict()``: its groups must match this optimizer's in number and size.
        State tensors are copied (and cast to their parameter's dtype, except ``step``)."""
        groups = self.param_groups
        saved_groups = copy.deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(groups, saved_groups)):
            raise ValueError(
                "loaded state dict contains a parameter group that doesn't match the size of "
                "optimizer's group"
            )
        id_map = dict(zip(chain.from_iterable(g["params"] for g in saved_groups),
                          chain.from_iterable(g["params"] for g in groups)))
        state = defaultdict(dict)
        for key, value in state_dict["state"].items():
            if key in id_map:
                param = id_map[key]
                state[param] = {k: _cast(param, v, k) for k, v in value.items()}
            else:
                state[key] = value
        for group, saved in zip(groups, saved_groups):
            saved["params"] = group["params"]
            if "param_names" in group and "param_names" not in saved:
                saved["param_names"] = group["param_names"]
        self.__setstate__({"state": state, "param_groups": saved_groups})

    def __getstate__(self) -> dict[str, Any]:
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)

    def __repr__(self) -> str:
        text = type(self).__name__ + " ("
        for i, group in enumerate(self.param_groups):
            text += f"\nParameter Group {i}\n"
            for key in sorted(group):
                if key != "params":
                    text += f"    {key}: {group[key]}\n"
        return text + ")"


def _cast(param: Tensor, value, key=None):
    """A copy of a loaded state value, tensors cast to the parameter's dtype (but ``step``) and
    moved to its device (``step`` too: numgrad keeps it beside the parameter, as PyTorch's
    ``capturable`` and ``fused`` optimizers do)."""
    if isinstance(value, Tensor):
        value = value.detach().clone()
        if key != "step" and param.is_floating_point() and value.is_floating_point():
            value = value.to(param.dtype)
        if value.device != param.device:
            value = value.to(param.device)
        return value
    if isinstance(value, dict):
        return {k: _cast(param, v, k) for k, v in value.items()}
    if isinstance(value, (list, tuple)):  # (LBFGS's history of directions)
        return type(value)(_cast(param, v, key) for v in value)
    return copy.deepcopy(value)


_HYPERPARAMETER_NAMES = {"lr": "learning rate", "eps": "epsilon value"}


def _check_nonnegative(**values) -> None:
    """PyTorch's ValueError for the first of ``values`` below 0 (``Invalid learning rate: -1.0``,
    ``Invalid weight_decay value: -1``), in the order given, as each optimizer checks them."""
    for name, value in values.items():
        if not 0.0 <= value:
            raise ValueError(f"Invalid {_HYPERPARAMETER_NAMES.get(name, name + ' value')}: "
                             f"{value}")


def _unsupported(**flags) -> None:
    """Raises for the options of PyTorch's fused, capturable (CUDA graphs) and differentiable
    implementations, which numgrad does not have; ``foreach`` is accepted and changes nothing."""
    for name, value in flags.items():
        if value:
            raise NotImplementedError(
                f"{name}=True is not supported by numgrad's optimizers; leave it unset"
            )


def _check_betas(betas) -> None:
    """PyTorch's ValueError for a beta outside [0, 1)."""
    for i in (0, 1):
        if not 0.0 <= betas[i] < 1.0:
            raise ValueError(f"Invalid beta parameter at index {i}: {betas[i]}")


def _lerp_(start: Tensor, end: Tensor, weight: float) -> Tensor:
    """``start.lerp_(end, weight)`` with PyTorch's CPU formula, so that the roundings agree:
    ``start + weight * (end - start)`` for a weight under 0.5, else
    ``end - (end - start) * (1 - weight)``."""
    if abs(weight) < 0.5:
        return start.add_((end - start) * weight)
    return start.copy_(end - (end - start) * (1 - weight))


def _check_adam_like(lr, betas, eps, weight_decay) -> None:
    """PyTorch's checks of the options of Adam's kin, in its order (so that the first wrong one
    is the one named): a tensor ``lr`` of one element, ``lr`` and ``eps`` not below 0, ``betas``
    in [0, 1), ``weight_decay`` not below 0."""
    _check_tensor_lr(lr)
    _check_nonnegative(lr=lr, eps=eps)
    _check_betas(betas)
    _check_nonnegative(weight_decay=weight_decay)


def _check_tensor_lr(lr) -> None:
    """PyTorch's ValueError for a learning rate given as a tensor of more than one element."""
    if isinstance(lr, Tensor) and lr.numel() != 1:
        raise ValueError("Tensor lr must be 1-element")


class _SingleTensorOptimizer(Optimizer):
    """An optimizer whose ``step`` is the loop of PyTorch's single-tensor path, which Adadelta,
    Adagrad, Adamax, NAdam, RAdam and RMSprop share: ``closure`` is called first, with grad mode
    on, and its loss returned; then, group by group and in order, each parameter ``p`` whose
    ``grad`` is not None gets ``self._update(group, lr, p, grad, state)``, where ``lr`` is the
    group's learning rate as a Python number (read once per group, also where it is a tensor),
    ``grad`` is ``p.grad`` (negated where the group maximizes) and ``state`` is ``p``'s state
    (``self._state(p, group)``) with its ``step`` already advanced by one.

    A subclass names in ``_buffers`` the tensors of a parameter's state other than ``step``
    (created as zeros on first use) and in ``_late_options`` the options, with their defaults,
    that ``__setstate__`` sets in groups pickled before those options existed."""

    _buffers: tuple[str, ...] = ()
    _late_options: dict[str, Any] = {}

    def _state(self, p: Tensor, group: dict[str, Any]) -> dict:
        """``p``'s state, created on first use: ``step`` (a float32 0-d tensor on ``p``'s
        device, as Adam's) and, for each name in ``_buffers``, zeros shaped as ``p`` (a subclass
        whose state depends on ``group``'s options makes its own)."""
        state = self.state[p]
        if not state:
            state["step"] = tensor(0.0, device=p.device)
            for name in self._buffers:
                state[name] = zeros_like(p)
        return state

    @_no_grad_step
    def step(self, closure=None):
        """Performs one optimization step; ``closure`` (re-evaluating the loss, with grad mode
        on) is called first if given, and its loss returned."""
        loss = _call_closure(closure)
        for group in self.param_groups:
            lr = group["lr"]
            if isinstance(lr, Tensor):
                lr = lr.item()
            for p in group["params"]:
                if p.grad is None:
                    continue
                grad = -p.grad if group["maximize"] else p.grad
                state = self._state(p, group)
                state["step"] += 1
                self._update(group, lr, p, grad, state)
        return loss

    def _update(self, group: dict[str, Any], lr: float, p: Tensor, grad: Tensor,
                state: dict) -> None:
        """Updates ``p`` and its ``state`` from ``grad`` with the options of ``group``."""
        raise NotImplementedError

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        for group in self.param_groups:
            for key, value in self._late_options.items():
                group.setdefault(key, value)
