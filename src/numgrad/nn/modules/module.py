"""``Module``: the base class of every layer and model, with PyTorch's registration, traversal,
``state_dict`` and repr."""
from __future__ import annotations

from collections import OrderedDict, namedtuple
from typing import Any, Callable, Iterator

import numpy as np

from ..._dtype import device as _device
from ... import compiler, creation, cuda
from ...autograd import grad_mode
from ...dispatch import graph_break
from ...tensor import Tensor, _typename
from ..parameter import Parameter, reset_grads
from ..._dtype import to_dtype
from ... import _lazy
import numgrad


def _addindent(s: str, spaces: int) -> str:
    """Indents every line but the first (blank lines stay empty), as PyTorch's repr does."""
    lines = s.split("\n")
    if len(lines) == 1:
        return s
    first = lines.pop(0)
    return first + "\n" + "\n".join((spaces * " ") + line if line.strip() else "" for line in lines)


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    """What ``load_state_dict`` returns: the keys it missed and the ones it did not expect."""

    __slots__ = ()

    def __repr__(self) -> str:
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


class Module:
    """Base class for all neural network modules.

    Assigning a ``Parameter`` or a ``Module`` as an attribute registers it, so that
    ``parameters()``, ``state_dict()``, ``train()``/``eval()`` and ``to()`` reach it. Subclasses
    call ``super().__init__()`` first and define ``forward``; calling the module calls ``forward``.
    """

    training: bool
    _parameters: dict
    _buffers: dict
    _modules: dict

    def __init__(self, *args, **kwargs) -> None:
        if args or kwargs:
            unexpected = ", ".join([repr(a) for a in args] + list(kwargs))
            raise TypeError(
                f"{type(self).__name__}.__init__() got unexpected arguments: {unexpected}"
            )
        set_ = object.__setattr__
        set_(self, "training", True)
        set_(self, "_parameters", {})
        set_(self, "_buffers", {})
        set_(self, "_non_persistent_buffers_set", set())
        set_(self, "_modules", {})

    def forward(self, *input: Any) -> Any:
        """The computation performed at every call; every subclass defines it."""
        raise NotImplementedError(
            f'Module [{type(self).__name__}] is missing the required "forward" function'
        )

    def __call__(self, *args, **kwargs):
        d = self.__dict__
        compiled = d.get("_compiled_call")
        if ("_forward_hooks" in d or "_forward_pre_hooks" in d or "_backward_hooks" in d
                or "_backward_pre_hooks" in d):
            return self._call_with_hooks(compiled, args, kwargs)
        if compiled is not None:
            return compiled(*args, **kwargs)
        return self.forward(*args, **kwargs)

    # ----------------------------------------------------------------- forward hooks
    def register_forward_pre_hook(self, hook: Callable, *, prepend: bool = False,
                                  with_kwargs: bool = False):
        """Registers ``hook(module, args)`` (``with_kwargs``: ``hook(module, args, kwargs)``),
        called before each ``forward``; it may return new positional arguments (a tuple, or one
        value) or, with ``with_kwargs``, a new ``(args, kwargs)`` pair. Returns a handle whose
        ``remove()`` unregisters it."""
        return self._add_hook("_forward_pre_hooks", hook, prepend, with_kwargs, False)

    def register_forward_hook(self, hook: Callable, *, prepend: bool = False,
                              with_kwargs: bool = False, always_call: bool = False):
        """Registers ``hook(module, args, output)`` (``with_kwargs``: ``hook(module, args,
        kwargs, output)``), called after each ``forward``; it may return a new output.
        ``always_call``: called also when ``forward`` raises (with ``output`` None), before the
        error propagates."""
        return self._add_hook("_forward_hooks", hook, prepend, with_kwargs, always_call)

    def register_full_backward_hook(self, hook: Callable, prepend: bool = False):
        """Registers ``hook(module, grad_input, grad_output)``, called when the gradients of
        this module's tensor arguments have been computed (``grad_input``: one per positional
        argument, None where it is not a tensor or gets no gradient; ``grad_output``: one per
        output). It may return a new ``grad_input``. Returns a handle whose ``remove()``
        unregisters it."""
        return self._add_hook("_backward_hooks", hook, prepend, False, False)

    def register_full_backward_pre_hook(self, hook: Callable, prepend: bool = False):
        """Registers ``hook(module, grad_output)``, called when the gradients of this module's
        outputs have been computed, before those of its inputs; it may return a new
        ``grad_output``. Returns a handle whose ``remove()`` unregisters it."""
        return self._add_hook("_backward_pre_hooks", hook, prepend, False, False)

    def _add_hook(self, kind: str, hook, prepend: bool, with_kwargs: bool, always_call: bool):
        RemovableHandle = _lazy.module("utils.hooks").RemovableHandle

        d = self.__dict__
        if kind not in d:  # (made on first use: a module without hooks pays nothing per call)
            object.__setattr__(self, kind, OrderedDict())
            object.__setattr__(self, kind + "_flags", {})
        hooks = d[kind]
        handle = RemovableHandle(hooks, extra_dict=d[kind + "_flags"])
        hooks[handle.id] = hook
        d[kind + "_flags"][handle.id] = (with_kwargs, always_call)
        if prepend:
            hooks.move_to_end(handle.id, last=False)
        return handle

    def _call_with_hooks(self, compiled, args, kwargs):
        """A call with forward hooks, as PyTorch's ``_call_impl`` runs them. (Their Python runs
        at every call: inside ``numgrad.compile`` they end the trace.)"""
        d = self.__dict__
        pre, post = d.get("_forward_pre_hooks") or {}, d.get("_forward_hooks") or {}
        backward, backward_pre = d.get("_backward_hooks") or {}, d.get("_backward_pre_hooks") or {}
        if pre or post:
            graph_break("a module's forward hook (Python code that runs at each call)")
        if backward or backward_pre:
            graph_break("a module's backward hook (Python code that runs in the backward)")
        flags = d.get("_forward_pre_hooks_flags", {})
        for key, hook in list(pre.items()):
            if flags[key][0]:
                result = hook(self, args, kwargs)
                if result is not None:
                    if not (isinstance(result, tuple) and len(result) == 2):
                        raise RuntimeError("forward pre-hook must return None or a tuple of "
                                           f"(new_args, new_kwargs), but got {result}.")
                    args, kwargs = result
            else:
                result = hook(self, args)
                if result is not None:
                    args = result if isinstance(result, tuple) else (result,)
        bw_hook = None
        if backward or backward_pre:
            BackwardHook = _lazy.module("utils.hooks").BackwardHook

            bw_hook = BackwardHook(self, list(backward.values()), list(backward_pre.values()))
            args = bw_hook.setup_input_hook(args)
        flags = d.get("_forward_hooks_flags", {})
        try:
            out = compiled(*args, **kwargs) if compiled is not None else \
                self.forward(*args, **kwargs)
        except Exception:
            for key, hook in list(post.items()):
                with_kwargs, always_call = flags[key]
                if always_call:
                    try:
                        hook(self, args, kwargs, None) if with_kwargs else hook(self, args, None)
                    except Exception:
                        pass
            raise
        for key, hook in list(post.items()):
            result = hook(self, args, kwargs, out) if flags[key][0] else hook(self, args, out)
            if result is not None:
                out = result
        if bw_hook is not None:
            out = bw_hook.setup_output_hook(out)
        return out

    def compile(self, *args, **kwargs) -> None:
        """Compiles this module's call with ``numgrad.compile`` (the arguments are its own): as
        PyTorch's, the module is changed in place and its calls go through the compiled
        function from now on."""
        compiled = compiler.compile(self.forward, *args, **kwargs)
        object.__setattr__(self, "_compiled_call", compiled)

    # ----------------------------------------------------------------- registration
    def _check_name(self, name, kind: str) -> None:
        if not isinstance(name, str):
            raise TypeError(f"{kind} name should be a string. Got {type(name).__name__}")
        if "." in name:
            raise KeyError(f'{kind} name can\'t contain "."')
        if name == "":
            raise KeyError(f'{kind} name can\'t be empty string ""')

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        """Adds a parameter (or None, a declared but absent one) under ``name``."""
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        self._check_name(name, "parameter")
        if hasattr(self, name) and name not in self._parameters:
            raise KeyError(f"attribute '{name}' already exists")
        if param is None:
            self._parameters[name] = None
            return
        if not isinstance(param, Parameter):
            raise TypeError(
                f"cannot assign '{_typename(param)}' object to parameter '{name}' "
                "(numgrad.nn.Parameter or None required)"
            )
        if param.grad_fn is not None:
            raise ValueError(
                f"Cannot assign non-leaf Tensor to parameter '{name}'. Model parameters must be "
                "created explicitly. To express '{name}' as a function of another Tensor, compute "
                "the value in the forward() method."
            )
        self._parameters[name] = param

    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        """Adds a buffer: state that is not a parameter (saved in ``state_dict`` if
        ``persistent``, converted by ``to()``)."""
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        self._check_name(name, "buffer")
        if hasattr(self, name) and name not in self._buffers:
            raise KeyError(f"attribute '{name}' already exists")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(
                f"cannot assign '{_typename(tensor)}' object to buffer '{name}' "
                "(numgrad Tensor or None required)"
            )
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def add_module(self, name: str, module: "Module | None") -> None:
        """Adds a child module under ``name`` (reachable as an attribute)."""
        if not isinstance(module, Module) and module is not None:
            raise TypeError(f"{_typename(module)} is not a Module subclass")
        self._check_name(name, "module")
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        self._modules[name] = module

    register_module = add_module

    def __getattr__(self, name: str):
        # Only called when normal lookup fails: the registered members live in these dicts.
        d = self.__dict__
        for registry in ("_parameters", "_buffers", "_modules"):
            if registry in d and name in d[registry]:
                return d[registry][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __setattr__(self, name: str, value) -> None:
        d = self.__dict__
        params = d.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            self._remove_member(name, "_buffers", "_modules")
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(
                    f"cannot assign '{_typename(value)}' as parameter '{name}' "
                    "(numgrad.nn.Parameter or None expected)"
                )
            self.register_parameter(name, value)
        elif isinstance(value, Module):
            if d.get("_modules") is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            self._remove_member(name, "_parameters", "_buffers")
            self._modules[name] = value
        elif name in d.get("_modules", ()):
            if value is not None:
                raise TypeError(
                    f"cannot assign '{_typename(value)}' as child module '{name}' "
                    "(numgrad.nn.Module or None expected)"
                )
            self._modules[name] = None
        elif name in d.get("_buffers", ()):
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(
                    f"cannot assign '{_typename(value)}' as buffer '{name}' "
                    "(numgrad Tensor or None expected)"
                )
            self._buffers[name] = value
        else:
            object.__setattr__(self, name, value)

    def _remove_member(self, name: str, *registries: str) -> None:
        self.__dict__.pop(name, None)
        for registry in registries:
            self.__dict__[registry].pop(name, None)
        if "_buffers" in registries:
            self._non_persistent_buffers_set.discard(name)

    def __delattr__(self, name: str) -> None:
        for registry in ("_parameters", "_buffers", "_modules"):
            if name in self.__dict__.get(registry, ()):
                del self.__dict__[registry][name]
                self._non_persistent_buffers_set.discard(name)
                return
        object.__delattr__(self, name)

    def __dir__(self):
        keys = list(dir(type(self))) + list(self.__dict__) + list(self._parameters) + list(
            self._modules) + list(self._buffers)
        return sorted(k for k in keys if not k[0].isdigit())

    # ----------------------------------------------------------------- traversal
    def named_modules(self, memo: set | None = None, prefix: str = "",
                      remove_duplicate: bool = True) -> Iterator[tuple[str, "Module"]]:
        """This module and every module below it, with dotted names, each once."""
        if memo is None:
            memo = set()
        if self in memo and remove_duplicate:
            return
        if remove_duplicate:
            memo.add(self)
        yield prefix, self
        for name, module in self._modules.items():
            if module is None:
                continue
            sub = prefix + ("." if prefix else "") + name
            yield from module.named_modules(memo, sub, remove_duplicate)

    def get_submodule(self, target: str) -> "Module":
        """The module at the dotted path ``target`` below this one ("" is this one), with
        PyTorch's AttributeError naming the first name that is missing or not a module."""
        module = self
        for name in target.split(".") if target else ():
            if not hasattr(module, name):
                raise AttributeError(f"{type(module).__name__} has no attribute `{name}`")
            module = getattr(module, name)
            if not isinstance(module, Module):
                raise AttributeError(f"`{name}` is not an nn.Module")
        return module

    def _owner_of(self, target: str) -> tuple:
        """(the module holding the dotted name ``target``, the last name), with the error of a
        missing attribute."""
        path, _, name = target.rpartition(".")
        owner = self.get_submodule(path)
        if not hasattr(owner, name):
            raise AttributeError(f"{type(owner).__name__} has no attribute `{name}`")
        return owner, name

    def get_parameter(self, target: str):
        """The parameter at the dotted path ``target`` (``"encoder.0.weight"``)."""
        owner, name = self._owner_of(target)
        value = getattr(owner, name)
        if not isinstance(value, Parameter):
            raise AttributeError(f"`{name}` is not an nn.Parameter")
        return value

    def get_buffer(self, target: str):
        """The buffer at the dotted path ``target`` (``"bn.running_mean"``)."""
        owner, name = self._owner_of(target)
        if name not in owner._buffers:
            raise AttributeError(f"`{name}` is not a buffer")
        return getattr(owner, name)

    def set_submodule(self, target: str, module: "Module", strict: bool = False) -> None:
        """Puts ``module`` at the dotted path ``target``, replacing what is there (a module);
        with ``strict``, only where a name is there already."""
        if target == "":
            raise ValueError("Cannot set the submodule without a target name!")
        if not isinstance(module, Module):
            raise ValueError(f"`module` is not an nn.Module, found {type(module)}")
        path, _, name = target.rpartition(".")
        parent = self.get_submodule(path)
        if strict and not hasattr(parent, name):
            raise AttributeError(f"{type(parent).__name__} has no attribute `{name}`")
        if hasattr(parent, name) and not isinstance(getattr(parent, name), Module):
            raise AttributeError(f"`{name}` is not an nn.Module")
        setattr(parent, name, module)

    def modules(self) -> Iterator["Module"]:
        """This module and every module below it, each once."""
        for _, module in self.named_modules():
            yield module

    def named_children(self) -> Iterator[tuple[str, "Module"]]:
        """The immediate child modules, with their names."""
        memo = set()
        for name, module in self._modules.items():
            if module is not None and module not in memo:
                memo.add(module)
                yield name, module

    def children(self) -> Iterator["Module"]:
        """The immediate child modules."""
        for _, module in self.named_children():
            yield module

    def _named_members(self, members: Callable, prefix: str, recurse: bool,
                       remove_duplicate: bool = True):
        memo = set()
        modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse \
            else [(prefix, self)]
        for module_prefix, module in modules:
            for name, value in members(module).items():
                if value is None or value in memo:
                    continue
                if remove_duplicate:
                    memo.add(value)
                yield module_prefix + ("." if module_prefix else "") + name, value

    def named_parameters(self, prefix: str = "", recurse: bool = True,
                         remove_duplicate: bool = True) -> Iterator[tuple[str, Parameter]]:
        """The parameters with dotted names (``0.weight``), each once, in registration order."""
        yield from self._named_members(lambda m: m._parameters, prefix, recurse, remove_duplicate)

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        """The parameters of this module (and, with ``recurse``, of all modules below it)."""
        for _, param in self.named_parameters(recurse=recurse):
            yield param

    def named_buffers(self, prefix: str = "", recurse: bool = True,
                      remove_duplicate: bool = True) -> Iterator[tuple[str, Tensor]]:
        """The buffers with dotted names."""
        yield from self._named_members(lambda m: m._buffers, prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        """The buffers of this module (and of the modules below it)."""
        for _, buf in self.named_buffers(recurse=recurse):
            yield buf

    def apply(self, fn: Callable[["Module"], None]) -> "Module":
        """Calls ``fn`` on every child module (recursively), then on this one; returns self."""
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    # ----------------------------------------------------------------- modes and gradients
    def train(self, mode: bool = True) -> "Module":
        """Sets training mode (``.training``) on this module and every module below it."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for module in self.children():
            module.train(mode)
        return self

    def eval(self) -> "Module":
        """Sets evaluation mode: ``train(False)``."""
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> "Module":
        """Sets ``requires_grad`` on every parameter."""
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Resets the gradients of all parameters: to None by default, else to zeros in place."""
        reset_grads(self.parameters(), set_to_none)

    # ----------------------------------------------------------------- state
    def _local_state(self) -> dict:
        state = {k: v for k, v in self._parameters.items() if v is not None}
        state.update((k, v) for k, v in self._buffers.items()
                     if v is not None and k not in self._non_persistent_buffers_set)
        return state

    def state_dict(self, *, destination=None, prefix: str = "", keep_vars: bool = False):
        """An OrderedDict of every parameter and persistent buffer by dotted name, detached
        (sharing storage) unless ``keep_vars``."""
        if destination is None:
            destination = OrderedDict()
        for module, key, value, full_key in self._state_entries(prefix):
            destination[full_key] = value if keep_vars else value.detach()
        return destination

    def _state_entries(self, prefix: str = ""):
        """``(module, key, tensor, prefixed key)`` for every state entry, recursing through every
        child (a module registered twice appears under both names, as in PyTorch)."""
        for key, value in self._local_state().items():
            yield self, key, value, prefix + key
        for name, child in self._modules.items():
            if child is not None:
                yield from child._state_entries(prefix + name + ".")

    def load_state_dict(self, state_dict, strict: bool = True, assign: bool = False):
        """Copies parameters and buffers from ``state_dict`` (in place, under ``no_grad``).

        With ``strict``, the keys must match ``state_dict()``'s exactly. Shapes must match. Values
        may be numgrad tensors or anything NumPy can read (arrays; PyTorch CPU tensors). Every key
        is checked before anything is copied, so a failed load changes nothing. With ``assign``,
        the module's tensors are replaced by the loaded ones instead.
        """
        if not isinstance(state_dict, dict):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        targets = [(module, key, value, key in module._parameters, full_key)
                   for module, key, value, full_key in self._state_entries()]
        expected = {t[4] for t in targets}
        missing = [t[4] for t in targets if t[4] not in state_dict]
        unexpected = [k for k in state_dict if k not in expected]
        errors = []
        if strict:
            if missing:
                errors.append("Missing key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in missing)))
            if unexpected:
                errors.append("Unexpected key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in unexpected)))
        copies = []
        for module, key, current, is_param, full_key in targets:
            if full_key not in state_dict:
                continue
            value = _as_tensor(state_dict[full_key])
            if value is None:
                errors.append(
                    f'While copying the parameter named "{full_key}", expected numgrad Tensor or '
                    f"Tensor-like object from checkpoint but received {type(state_dict[full_key])}"
                )
                continue
            if current.ndim == 0 and value.shape == (1,):
                value = value.reshape(())
            if value.shape != current.shape:
                errors.append(
                    f"size mismatch for {full_key}: copying a param with shape {value.shape} from "
                    f"checkpoint, the shape in current model is {current.shape}."
                )
                continue
            copies.append((module, key, current, is_param, value))
        if errors:
            raise RuntimeError("Error(s) in loading state_dict for {}:\n\t{}".format(
                type(self).__name__, "\n\t".join(errors)))
        with grad_mode.no_grad():
            for module, key, current, is_param, value in copies:
                if not assign:
                    current.copy_(value)
                elif is_param:
                    module._parameters[key] = Parameter(value.detach(), current.requires_grad)
                else:
                    module._buffers[key] = value
        return _IncompatibleKeys(missing, unexpected)

    # ----------------------------------------------------------------- conversion
    def _apply(self, fn: Callable[[Tensor], Tensor]) -> "Module":
        """Converts every parameter (in place: the Parameter objects, and their ``.grad``, keep
        their identity, as PyTorch's ``param.data = fn(param)``) and buffer of every module."""
        for module in self.modules():
            for p in module._parameters.values():
                if p is None:
                    continue
                p._data = fn(p.detach())._data
                if p._grad is not None:
                    p._grad._data = fn(p._grad.detach())._data
            for key, buf in module._buffers.items():
                if buf is not None:
                    module._buffers[key] = fn(buf)
        return self

    def to(self, *args, **kwargs) -> "Module":
        """``to(dtype)``, ``to(device)``, ``to(tensor)``: converts the floating-point parameters
        and buffers in place; returns self."""
        dtype = kwargs.pop("dtype", None)
        device = kwargs.pop("device", None)
        kwargs.pop("non_blocking", None)
        if kwargs:
            raise TypeError(f"to() got unexpected keyword arguments: {', '.join(kwargs)}")
        for a in args:
            if isinstance(a, Tensor):
                dtype, device = a.dtype, a.device
            elif isinstance(a, str) or type(a).__name__ == "device":
                device = a
            elif a is not None:
                dtype = a
        if dtype is not None:
            dtype = to_dtype(dtype)
            if not dtype.is_floating_point:
                raise TypeError(
                    "nn.Module.to only accepts floating point or complex dtypes, but got desired "
                    f"dtype={dtype}"
                )
        if device is not None:
            device = _device(device)
            if device.type == "cuda":
                cuda.kernels()  # "No CUDA GPUs are available" before anything is converted
        if dtype is None and device is None:
            return self

        def convert(t):
            if dtype is not None and t.is_floating_point():
                t = t.to(dtype)
            return t if device is None else t.to(device)

        return self._apply(convert)

    def double(self) -> "Module":
        """Casts floating-point parameters and buffers to float64."""
        return self.to(np.float64)

    def float(self) -> "Module":
        """Casts floating-point parameters and buffers to float32."""
        return self.to(np.float32)

    def half(self) -> "Module":
        """Casts floating-point parameters and buffers to float16, where numgrad has it."""
        return self._to_missing_dtype("half", "float16")

    def bfloat16(self) -> "Module":
        """Casts floating-point parameters and buffers to bfloat16, where numgrad has it."""
        return self._to_missing_dtype("bfloat16", "bfloat16")

    def _to_missing_dtype(self, method: str, name: str) -> "Module":
        target = getattr(numgrad, name, None)
        if target is not None:
            return self.to(target)
        raise TypeError(
            f"Module.{method}(): numgrad has no {name} dtype; its floating-point dtypes are "
            "float32 and float64: use .float() or .double()"
        )

    def cpu(self) -> "Module":
        return self.to("cpu")

    def cuda(self, device=None) -> "Module":
        return self.to("cuda")

    # ----------------------------------------------------------------- repr
    def extra_repr(self) -> str:
        """The module's own settings, shown inside its repr; subclasses override it."""
        return ""

    def _get_name(self) -> str:
        return type(self).__name__

    def __repr__(self) -> str:
        extra = self.extra_repr()
        extra_lines = extra.split("\n") if extra else []
        child_lines = [f"({key}): " + _addindent(repr(module), 2)
                       for key, module in self._modules.items()]
        lines = extra_lines + child_lines
        main = self._get_name() + "("
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                main += extra_lines[0]
            else:
                main += "\n  " + "\n  ".join(lines) + "\n"
        return main + ")"


def _as_tensor(value) -> Tensor | None:
    """A state-dict value as a numgrad Tensor, or None if it is not tensor-like."""
    if isinstance(value, Tensor):
        return value
    if isinstance(value, np.ndarray) or hasattr(value, "__array__"):
        try:
            return creation.tensor(np.asarray(value))
        except TypeError:
            return None
    return None
