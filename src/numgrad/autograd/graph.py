"""``numgrad.autograd.graph``: the graph's nodes as PyTorch shows them, and saved-tensor hooks.

- ``Node``: PyTorch's abstract base class of ``grad_fn`` objects. numgrad's node classes
  (``autograd.node.Node`` and its subclasses: op nodes, ``AccumulateGrad``, custom Functions'
  nodes) are registered as its virtual subclasses, so ``isinstance(t.grad_fn, Node)`` holds; they
  have its ``name()``, ``next_functions``, ``metadata``, ``register_hook`` and
  ``register_prehook``.
- What a node saved for backward, under PyTorch's names: ``grad_fn._saved_<name>`` (the value,
  unpacked) and ``grad_fn._raw_saved_<name>`` (a ``SavedTensor`` whose ``register_hooks(pack,
  unpack)`` packs it now and unpacks it when backward reads it). The names come from each op's
  inputs, its output (``result``) and its parameters (``saved_fields``).
- ``saved_tensors_hooks(pack_hook, unpack_hook)``: while open, every tensor a node saves is
  handed to ``pack_hook`` when the node is recorded, and what it returned to ``unpack_hook``
  when backward (or ``_saved_<name>``) reads it; ``save_on_cpu`` is such a pair, and
  ``disable_saved_tensors_hooks`` forbids them. As in PyTorch, nothing checks the version of a
  tensor saved through hooks.

No work is added to recording an op while no hooks are open: opening the first makes every op
take the general path (``ops.registry.apply``, not the eager fast lane) and sets the packing
that the node constructor (``node.make``) applies to what a recorded node saved.
"""
from __future__ import annotations

import abc
import functools
import threading
from typing import NamedTuple

import numpy as np

from .. import _dtype
from . import grad_mode
from . import node as _node
from .node import _FREED, OpNode, Packed, SavedTensor, packed

__all__ = [
    "Node", "GradientEdge", "get_gradient_edge", "saved_tensors_hooks", "save_on_cpu",
    "disable_saved_tensors_hooks",
]


class Node(abc.ABC):
    """The base class of the nodes of the autograd graph (``tensor.grad_fn``)."""

    @abc.abstractmethod
    def name(self) -> str:
        """The node's name, e.g. ``MulBackward0``."""

    @property
    @abc.abstractmethod
    def next_functions(self) -> tuple:
        """One ``(node, output index)`` pair per input: ``(None, 0)`` where an input needs no
        gradient."""

    @property
    @abc.abstractmethod
    def metadata(self) -> dict:
        """A dict kept on the node for user code."""

    @abc.abstractmethod
    def register_hook(self, fn):
        """``fn(grad_inputs, grad_outputs) -> tuple or None``, run after the node."""

    @abc.abstractmethod
    def register_prehook(self, fn):
        """``fn(grad_outputs) -> tuple or None``, run before the node."""

    @classmethod
    def __subclasshook__(cls, C):
        if cls is Node and issubclass(C, _node.Node):
            return True
        return NotImplemented


Node.register(_node.Node)


class GradientEdge(NamedTuple):
    """An edge of the graph: a node and which of its outputs."""

    node: object
    output_nr: int


def get_gradient_edge(tensor) -> GradientEdge:
    """The edge through which gradients flow into ``tensor``'s history."""
    if not tensor.requires_grad:
        raise RuntimeError(
            "It is not possible to get the gradient edge for a Tensor that does not require "
            "gradients"
        )
    return GradientEdge(*tensor._edge_pair())


# ----------------------------------------------------------------- saved-tensor hooks

class _State(threading.local):
    def __init__(self):
        self.stack = []  # (pack, unpack) pairs, innermost last
        self.disabled = None  # the message of an open ``disable_saved_tensors_hooks``


_state = _State()
_open = 0  # hooks open in all threads (``node.make`` packs saved values while any are)
_lock = threading.Lock()


def _switch(delta: int) -> None:
    """Counts an opened (+1) or closed (-1) pair of hooks; the first opened has every node made
    for an op pack its saved values (``node._packing``), the last closed ends it."""
    global _open
    from ..ops import registry

    with _lock:
        _open += delta
        registry.closed += delta  # (every op through ``registry.apply`` while any are open)
        _node._packing = pack_all if _open else None  # (``node.make`` packs a node's saved)


class saved_tensors_hooks:
    """Context manager: the pack and unpack hooks of every tensor saved for backward while it
    is open, in this thread. ``pack_hook(tensor)`` runs (with grad mode off) when the node is
    recorded and may return anything; ``unpack_hook(packed)`` runs when the value is needed and
    must return a tensor of the saved one's value."""

    def __init__(self, pack_hook, unpack_hook) -> None:
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self):
        if _state.disabled is not None:
            raise RuntimeError(_state.disabled)
        _state.stack.append((self.pack_hook, self.unpack_hook))
        _switch(1)
        return self

    def __exit__(self, *exc) -> None:
        _state.stack.pop()
        _switch(-1)


class save_on_cpu(saved_tensors_hooks):
    """Saved-tensor hooks that keep every saved tensor on the CPU and move it back to its
    device for backward (on the CPU: kept as it is, no copy)."""

    def __init__(self, pin_memory: bool = False, device_type: str = "cuda") -> None:
        def pack_to_cpu(tensor):
            if not pin_memory:
                return (tensor.device, tensor.cpu())
            from ..creation import empty

            out = empty(tensor.size(), dtype=tensor.dtype)
            out.copy_(tensor)
            return (tensor.device, out)

        def unpack_from_cpu(packed):
            device, tensor = packed
            return tensor.to(device, non_blocking=pin_memory)

        super().__init__(pack_to_cpu, unpack_from_cpu)


class disable_saved_tensors_hooks:
    """Context manager: saved-tensor hooks are refused while it is open (a RuntimeError with
    ``error_message``), both opening them and saving a tensor under hooks opened before."""

    def __init__(self, error_message: str) -> None:
        self.error_message = error_message

    def __enter__(self):
        self._prev = _state.disabled
        _state.disabled = self.error_message
        return self

    def __exit__(self, *exc) -> None:
        _state.disabled = self._prev

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with disable_saved_tensors_hooks(self.error_message):
                return fn(*args, **kwargs)

        return wrapper


def current_hooks():
    """This thread's innermost (pack, unpack) pair, or None."""
    stack = _state.stack
    if not stack:
        return None
    if _state.disabled is not None:
        raise RuntimeError(_state.disabled)
    return stack[-1]


def pack_all(saved: tuple, node) -> tuple:
    """``saved`` (a node's saved values) with each tensor packed by this thread's innermost
    hooks; as it is where none are open."""
    hooks = current_hooks()
    if hooks is None:
        return saved
    pack, unpack = hooks
    out = list(saved)
    for k in _pack_order(node, len(saved)):
        s = out[k]
        if type(s) is SavedTensor and type(s.counter) is not Packed:
            is_output = s.tensor is None
            out[k] = packed(s.tensor if not is_output else s.unpack(node), is_output, pack, unpack)
    return tuple(out)


def _pack_order(node, n: int) -> list:
    """The positions of a node's saved values in the order PyTorch packs them: its generated
    nodes save their inputs by name, alphabetically, then the result (``mul``: other, self;
    ``mm``: mat2, self). A value numgrad keeps where PyTorch's node keeps none (``mm``'s self
    when only it requires grad) is not packed, as PyTorch calls no hook for it."""
    if type(node).op is None or not isinstance(node, OpNode):
        return list(range(n))
    fields = sorted((name == "result", name, where[1]) for name, where in
                    saved_fields(node).items() if where[0] == "saved")
    return [k for _, _, k in fields if k is not None]


# ----------------------------------------------------------------- saved values by name

# PyTorch's names of each op's inputs (derivatives.yaml), by numgrad op name, where they are not
# ``self`` and ``other``.
_INPUT_NAMES = {
    "mm": ("self", "mat2"), "bmm": ("self", "mat2"), "matmul": ("self", "other"),
    "addmm": ("self", "mat1", "mat2"), "addmv": ("self", "mat", "vec"),
    "baddbmm": ("self", "batch1", "batch2"), "mv": ("self", "vec"), "dot": ("self", "tensor"),
    "addcmul": ("self", "tensor1", "tensor2"), "addcdiv": ("self", "tensor1", "tensor2"),
    "pow": ("self", "exponent"), "rpow": ("exponent",), "index_add": ("self", "source"),
    "convolution": ("input", "weight", "bias"),
    "convolution_transpose": ("input", "weight", "bias"),
    "mse_loss": ("self", "target"), "huber_loss": ("self", "target"),
    "smooth_l1_loss": ("self", "target"), "soft_margin_loss": ("self", "target"),
    "binary_cross_entropy": ("self", "target", "weight"),
    "binary_cross_entropy_with_logits": ("self", "target", "weight"),
    "lerp_tensor": ("self", "end", "weight"), "prelu": ("self", "weight"),
    "clamp_tensor": ("self", "min", "max"), "cdist": ("x1", "x2"),
    "native_batch_norm": ("input", "weight", "bias", "running_mean", "running_var"),
    "native_group_norm": ("input", "weight", "bias"), "where": ("condition", "self", "other"),
    "native_layer_norm": ("input", "weight", "bias"),
    "silu_backward": ("grad_output", "self"), "mish_backward": ("grad_output", "self"),
    "embedding_bag": ("weight", "per_sample_weights"),
}
# {input: the input whose gradient alone needs it}, where PyTorch saves an input only for the
# other's gradient and numgrad saves both: shown as None, as PyTorch's, when that gradient is
# not needed.
_SHOWN_ONLY_FOR = {"mm": {0: 1, 1: 0}, "bmm": {0: 1, 1: 0}, "mv": {0: 1, 1: 0},
                   "dot": {0: 1, 1: 0}, "addmm": {1: 2, 2: 1}, "baddbmm": {1: 2, 2: 1},
                   "addmv": {1: 2, 2: 1}}
# Parameters PyTorch's node shows that numgrad's op has fixed (its other cases are other ops):
# values, or functions of the node.
_FIXED_PARAMS = {
    "addmm": {"alpha": 1, "beta": 1}, "add": {"alpha": 1}, "sub": {"alpha": 1},
    "convolution": {"transposed": False,
                    "output_padding": lambda node: (0,) * len(_conv_sizes(node, "stride"))},
    "convolution_transpose": {"transposed": True},
    "gelu": {"approximate": "none"}, "gelu_tanh": {"approximate": "tanh"},
    "gather": {"sparse_grad": False},
    "elu": {"scale": 1, "input_scale": 1}, "selu": {"scale": 1.0507009873554805, "input_scale": 1},
    "rsub": {"alpha": 1},
}
# Nodes whose parameters PyTorch does not show (a reduction of everything keeps no dims).
_NO_PARAMS = {"SumBackward0", "MeanBackward0", "MaxBackward1", "MinBackward1", "ProdBackward0"}
# The inputs whose sizes PyTorch's node keeps (``_saved_self_sym_sizes``), by node name.
_SIZES = {name: ("self",) for name in (
    "SumBackward0", "SumBackward1", "MeanBackward0", "MeanBackward1", "ViewBackward0",
    "ExpandBackward0", "IndexBackward0", "UnsafeViewBackward0", "RepeatBackward0",
    "DiagonalBackward0", "DiagonalBackward0_copy", "IndexSelectBackward0", "SortBackward0",
    "TopkBackward0", "SortBackward1", "MedianBackward1", "NanmedianBackward1", "ModeBackward0",
    "KthvalueBackward0",
    "TraceBackward0",
    "SplitBackward0", "SplitWithSizesBackward0", "UnsafeSplitBackward0",
    "UnsafeSplitWithSizesBackward0", "UnfoldBackward0", "UpsampleNearest1DBackward0",
    "UpsampleNearest2DBackward0", "UpsampleNearest3DBackward0", "UpsampleLinear1DBackward0",
    "UpsampleBilinear2DBackward0", "UpsampleBicubic2DBackward0", "UpsampleTrilinear3DBackward0",
    "SqueezeBackward0", "SqueezeBackward1", "SqueezeBackward2")}
_SIZES["MmBackward0"] = ("self", "mat2")
_SIZES["AddmmBackward0"] = ("mat1", "mat2")
_NUMEL = {"MeanBackward0", "MeanBackward1"}  # (and ``_saved_self_sym_numel``)
# Per-op parameter names where the general renaming is not PyTorch's.
_OP_PARAM_NAMES = {
    "permute": {"dims": "dims"}, "flip": {"dims": "dims"}, "roll": {"dims": "dims"},
    "smooth_l1_loss": {"param": "beta"}, "huber_loss": {"param": "delta"},
    "pixel_shuffle": {"factor": "upscale_factor"}, "pixel_unshuffle": {"factor": "downscale_factor"},
    **{f"{kind}_pad{d}d": {"pad": "padding"} for kind in ("reflection", "replication")
       for d in (1, 2, 3)},
}
_REDUCTIONS = {"none": 0, "mean": 1, "sum": 2}  # (PyTorch keeps the enum's value)
# numgrad's parameter names -> PyTorch's, and the parameters PyTorch's nodes show.
_PARAM_NAMES = {"dims": "dim", "slope": "negative_slope", "kernel": "kernel_size",
                "base": "self", "lo": "min_val", "hi": "max_val"}
_PARAMS_SHOWN = {
    "dim", "keepdim", "exponent", "alpha", "beta", "negative_slope", "min", "max", "min_val",
    "max_val", "kernel_size", "stride", "padding", "dilation", "groups", "ceil_mode",
    "count_include_pad", "divisor_override", "p", "reduction", "eps", "lambd", "value",
    "threshold", "correction", "margin", "self", "nan", "posinf", "neginf", "n", "index",
    "training", "num_groups", "upper", "ord", "dim0", "dim1", "dims", "ignore_index", "target",
    "weight", "transposed", "output_padding", "approximate", "sparse_grad", "normalized_shape",
    "padding_idx", "scale_grad_by_freq", "sparse", "repeats", "shifts", "diagonal", "offset",
    "dim2", "beta", "delta", "upscale_factor", "downscale_factor", "pad", "mask", "split_size",
    "split_sizes", "rounding_mode",
}


def _input_names(op, n: int) -> tuple:
    names = _INPUT_NAMES.get(op.name)
    if names is None:
        names = ("self", "other")
    if len(names) < n:
        names = names + tuple(f"input{i}" for i in range(len(names), n))
    return names


def saved_fields(node) -> dict:
    """{PyTorch name: where}: ``("saved", k)`` for the node's k-th saved value, ``("param",
    key)`` for a parameter. Empty for nodes other than registered ops'."""
    op = type(node).op
    if op is None or not isinstance(node, OpNode):
        return {}
    shapes = node.input_shapes or ()
    names = _input_names(op, len(shapes))
    fields = {}
    k = 0
    only_for = _SHOWN_ONLY_FOR.get(op.name, {})
    needs = node.needs_input_grad
    for i, _ in op._save_plan:
        j = only_for.get(i)
        shown = None if j is not None and not needs[j] else k
        fields[names[i] if i < len(names) else f"input{i}"] = ("saved", shown)
        k += 1
    if op.save_output:
        fields["result"] = ("saved", k)
    node_name = type(node).__name__
    if node_name not in _NO_PARAMS:
        renames = _OP_PARAM_NAMES.get(op.name, {})
        for key in (node.params or {}):
            name = renames.get(key) or _PARAM_NAMES.get(key, key)
            if name in _PARAMS_SHOWN and name not in fields:
                fields[name] = ("param", key)
        for name, value in _FIXED_PARAMS.get(op.name, {}).items():
            fields.setdefault(name, ("fixed", value))
    for name in _SIZES.get(node_name, ()):
        if names.index(name) < len(shapes) and shapes[names.index(name)] is not None:
            fields[name + "_sym_sizes"] = ("size", names.index(name))
            if node_name in _NUMEL:
                fields[name + "_sym_numel"] = ("numel", names.index(name))
    computed = _COMPUTED.get(node_name)
    if computed is not None:
        for name, fn in computed.items():
            if fn is None:
                fields.pop(name, None)
            else:
                fields[name] = ("computed", fn)
    return fields


# ----------------------------------------------------------------- values PyTorch's nodes keep
# that numgrad's node derives (from its parameters, input shapes or saved inputs)

_UINT64 = 1 << 64
# Arguments PyTorch's nodes keep as int64 and show through an unsigned conversion (its
# ``_saved_dim`` of ``x.sum(-1)`` is 2**64 - 1); its Scalars (``min``, ``value``...) stay signed.
_INT_ARGS = {"dim", "dims", "dim0", "dim1", "dim2", "ignore_index", "start", "end", "step",
             "index", "padding_idx", "offset", "diagonal", "shifts"}
# Parameters PyTorch's node saves as tensors (or None), so it also has ``_raw_saved_<name>``.
_TENSOR_PARAMS = {"target", "weight", "index", "indices", "mask", "pos_weight"}
_INT64_MAX = (1 << 63) - 1


def keep_given(result, **given) -> None:
    """Keeps on the node that made ``result`` arguments as the caller wrote them where the op
    keeps them normalised (a negative ``dim``, dims in the caller's order, a Python int where
    the op keeps a float): PyTorch's node shows them as given. Keyed by the op's parameter
    names; ops call it only when a value differs, so the common call pays one comparison."""
    node = result._grad_fn
    params = getattr(node, "params", None)  # (None: no node recorded, grad mode off)
    if params is not None:
        if "_given" in params:
            given = {**params["_given"], **given}
        node.params = {**params, "_given": given}


def given_dims(dim, dims: tuple):
    """``dim`` as the caller gave it (an int or a sequence) where it differs from ``dims``, the
    op's normalised tuple; else None."""
    if isinstance(dim, (int, np.integer)):
        return None if (dim,) == dims else (int(dim),)
    if dim is None:
        return None
    given = tuple(int(d) for d in dim)
    return None if given == dims else given


def _param(node, key):
    """Parameter ``key`` of ``node`` as the caller gave it (``keep_given``)."""
    params = node.params
    given = params.get("_given")
    if given is not None and key in given:
        return given[key]
    return params[key]


def _unsigned(value):
    """An int64 argument as PyTorch's node shows it: a negative one as its unsigned bits."""
    if type(value) is int and value < 0:
        return value + _UINT64
    if type(value) is tuple:
        return tuple(_unsigned(v) for v in value)
    return value


def _as_tensor(array):
    """A saved array (host or device) as a tensor, or None."""
    if array is None:
        return None
    from ..tensor import Tensor

    return Tensor._wrap(array)


def _strides(i: int):
    """``<input i>_sym_strides``: the input's strides in elements where PyTorch's node keeps
    them (its own gradient is needed), else ``()``."""
    def strides(node):
        if not node.needs_input_grad[i]:
            return ()
        saved = _saved_input(node, i)
        if saved is not None:
            return tuple(saved.stride())
        shape, out, step = node.input_shapes[i], [], 1
        for n in reversed(shape):
            out.append(step)
            step *= max(n, 1)
        return tuple(reversed(out))
    return strides


def _saved_input(node, i: int):
    """The tensor ``node`` saved for its input ``i`` (not unpacked through hooks), or None."""
    if node._released:
        return None
    for k, (j, _) in enumerate(type(node).op._save_plan):
        if j == i and k < len(node._saved):
            s = node._saved[k]
            return s.tensor if type(s) is SavedTensor else None
    return None


def _view_arg(k: int):
    """One of the arguments of the last view op of an indexing key (``Key.view``), or of
    ``narrow`` as PyTorch's ``slice``: (dim, start, end, step, sizes) / (dim, index, sizes)."""
    def arg(node):
        p = node.params
        if "key" in p:
            key = p["key"]
            if key.view is not None:
                return key.view[k]
            # (a key made without the parser: ``(:,) * d + (i,)``, a select)
            d = len(key.basic) - 1
            return (d, key.basic[d], tuple(node.input_shapes[0]))[k]
        name = type(node).op.name
        if name in ("real", "imag"):  # (PyTorch's select(-1, 0 or 1) of view_as_real)
            return (-1, int(name == "imag"), tuple(node.input_shapes[0]) + (2,))[k]
        if name != "narrow":  # (unsqueeze)
            return _param(node, "dim")
        dim, start, length = _param(node, "dim"), p["start"], p["length"]
        size = node.input_shapes[0][dim]
        start = start + size if start < 0 else start
        return (dim, start, start + length, 1, tuple(node.input_shapes[0]))[k]
    return arg


def _dim_given(node):
    """``dim`` as the caller gave it (None: every dimension, as PyTorch shows it)."""
    p = node.params
    return p["dim"] if "dim" in p else p["dims"]


def _extreme_dim(node):
    p = node.params
    return p["dim"] if p.get("dim") is not None else (p["dims"][0] if p["dims"] else 0)


def _nll_total_weight(node):
    """The weight of the rows that count (targets not ``ignore_index``), a 0-d tensor of the
    input's dtype, as PyTorch's ``nll_loss_forward`` returns it."""
    from ..ops.registry import kernels_of

    p = node.params
    target, weight = p["target"], p["weight"]
    if not isinstance(target, np.ndarray):
        K = kernels_of(target)
        target = K.to_host(target)
        weight = None if weight is None else K.to_host(weight)
    t = np.asarray(target).reshape(-1)
    live = t[t != p["ignore_index"]]
    dtype = node.input_dtypes[0]
    total = live.size if weight is None else np.asarray(weight)[live].sum(dtype=np.float64)
    from ..creation import tensor

    out = tensor(np.asarray(total, dtype=dtype))
    return out if node.input_devices is None or node.input_devices[0] is not False else \
        out.cuda()


def _layer_norm_stat(node, which: str):
    """A layer norm's row statistic (its forward's ``mean`` or ``rstd``), shaped as PyTorch's
    ``result1``/``result2``: the input's shape with the normalised sizes 1."""
    from ..ops.normalization import stats_shape
    from ..ops.registry import kernels_of

    array = getattr(node.params["stats"], which)
    shape = stats_shape(node.input_shapes[0], len(node.params["normalized_shape"]))
    return _as_tensor(kernels_of(array).reshape_view(array, shape))


def _indices(node):
    """The indices an op kept in its parameters (sort, topk, cummax...), as a tensor."""
    return _as_tensor(node.params["indices"])


def _kept_indices(node):
    """The indices a reduction over one dim kept with that dim (median, mode), shaped as its
    output, as PyTorch's node keeps them."""
    out = _as_tensor(node.params["indices"])
    shape = node.input_shapes[0]
    if not node.params["keepdim"] and shape and out.ndim == len(shape):
        out = out.squeeze(node.params["dim"])
    return out


def _pool_indices(node):
    """The indices a max pool kept (PyTorch's ``result1``), as a tensor."""
    indices = node.params["indices"]
    return _as_tensor(indices[0] if type(indices) is list else indices)


def _bag_offsets(node):
    """The offsets of an embedding bag's bags: those given, or for a 2-D input those of its rows
    (PyTorch's node keeps the ones it made)."""
    offsets, indices = node.params["offsets"], node.params["indices"]
    if offsets is None:
        offsets = np.arange(len(node.params["results"][1]), dtype=np.int64) * indices.shape[1]
    return _as_tensor(offsets)


def _index_indices(node):
    """An advanced index's tensors, as PyTorch's ``IndexBackward0`` keeps them: one per indexed
    dimension, None for a dimension taken whole."""
    return tuple(None if isinstance(a, slice) else _as_tensor(a)
                 for a in node.params["key"].adv or ())


def _batch_norm_stat(node, which: str):
    """A batch norm's batch mean or 1/std as its forward computed them (PyTorch's ``result1``,
    ``result2``); empty where it normalised with the running statistics."""
    array = node.params[which]
    if not node.params["training"]:
        from ..ops.registry import kernels_of

        array = kernels_of(array).empty((0,), array.dtype)
    return _as_tensor(array)


def _index_view_sizes(node):
    """The sizes of what PyTorch's ``index`` reads: the input after the key's basic part (its
    slices, ints and Nones, which PyTorch records as view nodes of their own)."""
    shape = tuple(node.input_shapes[0])
    view = np.lib.stride_tricks.as_strided(np.zeros(1), shape, (0,) * len(shape))
    return tuple(view[node.params["key"].basic + (Ellipsis,)].shape)


def _prod(sizes) -> int:
    n = 1
    for d in sizes:
        n *= d
    return n


def _group_norm_stat(node, which: int):
    """A group norm's per-(sample, group) mean (0) or 1/std (1), shaped ``(N, group)``, as
    PyTorch's forward returns them: recomputed from the saved input."""
    if node._released:
        raise RuntimeError(_FREED)
    x = node._saved[0].unpack(node)
    n, g = x.shape[0], node.params["num_groups"]
    with grad_mode.no_grad():
        rows = x.detach().reshape(n, g, -1)
        mean = rows.mean(-1)
        out = mean if which == 0 else (rows.var(-1, unbiased=False) + node.params["eps"]).rsqrt()
    return out.requires_grad_(x.requires_grad)


def _upsample_fields(d: int, linear: bool) -> dict:
    """PyTorch's fields of an upsampling node of ``d`` spatial dimensions."""
    names = ("scales",) if d == 1 else ("scales_h", "scales_w") if d == 2 else (
        "scales_d", "scales_h", "scales_w")
    fields = {"output_size": lambda n: tuple(n.params["out_size"])}
    for k, name in enumerate(names):
        fields[name] = lambda n, k=k: (n.params.get("scales") or (None,) * d)[k]
    if linear:
        fields["align_corners"] = lambda n: n.params["align_corners"]
    return fields


def _log_sigmoid_buffer(node):
    """``exp(-|x|)``, what PyTorch's CPU ``log_sigmoid_forward`` returns beside its result."""
    if node._released:
        raise RuntimeError(_FREED)
    x = node._saved[0].unpack(node)
    with grad_mode.no_grad():
        return x.detach().abs().neg().exp()


def _std_of_pair(node):
    """``std_mean``'s std (PyTorch's ``result0``): the std's node has it saved; the mean's
    computes it from the input (requiring grad, as PyTorch's saved result does)."""
    if node._released:
        raise RuntimeError(_FREED)
    if type(node).op.save_output:
        return node._saved[-1].unpack(node)
    x = node._saved[0].unpack(node)
    p = node.params
    with grad_mode.no_grad():
        out = x.detach().std(p["dims"], correction=p["correction"], keepdim=p["keepdim"])
    return out.requires_grad_(x.requires_grad)


def _rrelu_noise(node):
    """The slopes, shaped as the input, as PyTorch's node keeps them: in training 1 where the
    input is positive; in eval PyTorch's is left unwritten (its values mean nothing), numgrad's
    holds the slope used."""
    if node._released:
        raise RuntimeError(_FREED)
    x = node._saved[0].unpack(node)
    noise = _as_tensor(node.params["noise"])
    with grad_mode.no_grad():
        x = x.detach()
        noise = noise.to(x.dtype).expand(x.shape).clone()
        return noise.masked_fill(x > 0, 1.0) if node.params["training"] else noise


def _conv_bias_sizes(node):
    shape = node.input_shapes[2] if len(node.input_shapes) > 2 else None
    return tuple(shape) if shape is not None else (0,)


# {node name: {PyTorch name: function of the node (None: a field numgrad's params would give
# that PyTorch's node does not show)}}
_COMPUTED = {
    "MmBackward0": {"self_sym_strides": _strides(0), "mat2_sym_strides": _strides(1)},
    "AddmmBackward0": {"mat1_sym_strides": _strides(1), "mat2_sym_strides": _strides(2)},
    "SliceBackward0": {"dim": _view_arg(0), "start": _view_arg(1), "end": _view_arg(2),
                       "step": _view_arg(3), "self_sym_sizes": _view_arg(4)},
    "SelectBackward0": {"dim": _view_arg(0), "index": _view_arg(1),
                        "self_sym_sizes": _view_arg(2)},
    "UnsqueezeBackward0": {"dim": _view_arg(0)},
    "UnbindBackward0": {"dim": lambda n: len(n.params["key"].basic) - 1},
    "MaxBackward0": {"dim": _extreme_dim, "indices": lambda n: _as_tensor(n.params["indices"])},
    "MinBackward0": {"dim": _extreme_dim, "indices": lambda n: _as_tensor(n.params["indices"])},
    "LinalgVectorNormBackward0": {"dim": _dim_given,
                                  "ord": lambda n: n.params.get("shown_ord", 2)},
    "NllLossBackward0": {"total_weight": _nll_total_weight},
    "ProdBackward1": {"dim": lambda n: _param(n, "dims")[0]},
    "RollBackward0": {"dims": lambda n: _param(n, "dims") or ()},
    "SortBackward0": {"indices": _indices}, "SortBackward1": {"indices": _indices},
    "TopkBackward0": {"indices": _indices}, "MedianBackward1": {"indices": _kept_indices},
    "NanmedianBackward1": {"indices": _kept_indices}, "ModeBackward0": {"indices": _kept_indices},
    "KthvalueBackward0": {"indices": _kept_indices},
    "CummaxBackward0": {"indices": _indices}, "CumminBackward0": {"indices": _indices},
    "MaxPool2DWithIndicesBackward0": {"result1": _pool_indices},
    "MaxPool3DWithIndicesBackward0": {"result1": _pool_indices},
    "AdaptiveMaxPool2DBackward0": {"result1": _pool_indices},
    "AdaptiveMaxPool3DBackward0": {"result1": _pool_indices},
    "IndexBackward0": {"indices": _index_indices, "self_sym_sizes": _index_view_sizes},
    "MaskedFillBackward0": {"value": None},
    "IndexAddBackward0": {"index": lambda n: _as_tensor(n.params["index"]) if
                          n.needs_input_grad[1] else None,
                          "source_dim": lambda n: len(n.input_shapes[1])},
    "LogSigmoidBackward0": {"buffer": _log_sigmoid_buffer},
    "ClampMinBackward0": {"max": None}, "ClampMaxBackward0": {"min": None},
    "StdMeanBackward0": {"result": None, "result0": _std_of_pair},
    **{name: {"lower": lambda n: n.params["lower"], "upper": lambda n: n.params["upper"],
              "training": lambda n: n.params["training"], "noise": _rrelu_noise}
       for name in ("RreluWithNoiseBackward0", "RreluWithNoiseBackward1")},
    "NativeBatchNormBackward0": {
        "result1": lambda n: _batch_norm_stat(n, "mean"),
        "result2": lambda n: _batch_norm_stat(n, "invstd"),
        "running_mean": lambda n: n.params.get("_given", {}).get("running_mean"),
        "running_var": lambda n: n.params.get("_given", {}).get("running_var")},
    "ScatterBackward1": {"value": None}, "ThresholdBackward0": {"value": None},
    "NanToNumBackward0": {"nan": None, "posinf": None, "neginf": None},
    "ConstantPadNdBackward0": {"value": None},
    "BinaryCrossEntropyWithLogitsBackward0": {
        "pos_weight": lambda n: _as_tensor(n.params.get("pos_weight"))},
    "UnfoldBackward0": {"dim": None, "dimension": lambda n: _param(n, "dim"),
                        "size": lambda n: n.params["size"], "step": lambda n: n.params["step"]},
    "NativeGroupNormBackward0": {
        "num_groups": None, "N": lambda n: n.input_shapes[0][0],
        "C": lambda n: n.input_shapes[0][1] if len(n.input_shapes[0]) > 1 else 1,
        "HxW": lambda n: _prod(n.input_shapes[0][2:]), "group": lambda n: n.params["num_groups"],
        "result1": lambda n: _group_norm_stat(n, 0), "result2": lambda n: _group_norm_stat(n, 1)},
    **{name: _upsample_fields(d, linear) for name, d, linear in (
        ("UpsampleNearest1DBackward0", 1, False), ("UpsampleNearest2DBackward0", 2, False),
        ("UpsampleNearest3DBackward0", 3, False), ("UpsampleLinear1DBackward0", 1, True),
        ("UpsampleBilinear2DBackward0", 2, True), ("UpsampleBicubic2DBackward0", 2, True),
        ("UpsampleTrilinear3DBackward0", 3, True))},
    "ConvolutionBackward0": {"bias_sym_sizes_opt": _conv_bias_sizes},
    "EmbeddingBackward0": {"indices": lambda n: _as_tensor(n.params["indices"]),
                           "weight_sym_argsize_0": lambda n: n.input_shapes[0][0]},
    "EmbeddingDenseBackwardBackward0": {"indices": lambda n: _as_tensor(n.params["indices"]),
                                        "scale_grad_by_freq": None},
    "NativeLayerNormBackward0": {"eps": None, "result1": lambda n: _layer_norm_stat(n, "mean"),
                                 "result2": lambda n: _layer_norm_stat(n, "rstd")},
    "EmbeddingBagBackward0": {
        "indices": lambda n: _as_tensor(n.params["indices"].reshape(-1)),
        "offsets": _bag_offsets,
        "mode": lambda n: n.params["mode"], "include_last_offset": None,
        "weight_sym_argsize_0": lambda n: n.input_shapes[0][0],
        "result1": lambda n: _as_tensor(n.params["results"][0]),
        "result2": lambda n: _as_tensor(n.params["results"][1]),
        "result3": lambda n: _as_tensor(n.params["results"][2])},
}
_SIZES["MaxBackward0"] = _SIZES["MinBackward0"] = ("self",)
# Computed values that are tensors in PyTorch's node (so it has ``_raw_saved_<name>`` too).
_COMPUTED_TENSORS = {"indices", "total_weight", "result1", "result2", "pos_weight",
                     "running_mean", "running_var", "buffer", "result0", "noise"}
# ... and those whose name is a number elsewhere (SelectBackward0's index), by node
_COMPUTED_NODE_TENSORS = {("IndexAddBackward0", "index"), ("EmbeddingBagBackward0", "offsets"),
                          ("EmbeddingBagBackward0", "result3")}


def _computed_tensor(node, name: str) -> bool:
    return name in _COMPUTED_TENSORS or (type(node).__name__, name) in _COMPUTED_NODE_TENSORS


class RawSavedTensor:
    """A value a node saved for backward, as ``grad_fn._raw_saved_<name>`` gives it (PyTorch's
    ``torch._C._autograd.SavedTensor``)."""

    __slots__ = ("_node", "_index")

    def __init__(self, node, index: int):
        self._node = node
        self._index = index

    def register_hooks(self, pack_hook, unpack_hook) -> None:
        """Packs the saved tensor now with ``pack_hook``; backward reads it back through
        ``unpack_hook``. Once per saved tensor."""
        node = self._node
        if node._released:
            raise RuntimeError(
                "Calling register_hooks on a saved tensor after it has been freed. Saved "
                "intermediate values of the graph are freed when you call .backward() or "
                "autograd.grad(). Specify retain_graph=True if you need to backward through the "
                "graph a second time or if you need to access saved variables after calling "
                "backward."
            )
        saved = None if self._index is None else node._saved[self._index]
        if saved is None:
            raise RuntimeError(
                "Calling register_hooks on a saved tensor with value None is forbidden")
        if not callable(pack_hook) or not callable(unpack_hook):
            raise TypeError("register_hooks expects two callables, a pack hook and an unpack hook")
        if type(saved) is not SavedTensor:
            raise RuntimeError(
                "Calling register_hooks on a saved Python number is not supported by numgrad")
        if type(saved.counter) is Packed:
            raise RuntimeError(
                "Calling register_hooks on a saved tensor whose hooks have already been set. "
                "Hint: only one pair of hooks is allowed at a time."
            )
        is_output = saved.tensor is None
        outputs = getattr(node, "_saved_outputs", None)  # (a custom Function's node)
        value = saved.unpack(node if outputs is None else node._output_node(outputs[self._index]))
        entries = list(node._saved)
        entries[self._index] = packed(value, is_output, pack_hook, unpack_hook)
        node._saved = tuple(entries)

    def __repr__(self) -> str:
        return f"<numgrad._C._autograd.SavedTensor object at {hex(id(self))}>"


def _wrapped_number(value):
    """A Python number an op saved, as PyTorch shows it: a 0-d tensor of the number's default
    wide dtype (a wrapped number)."""
    from ..creation import tensor  # (creation imports tensor.py, which imports this module)

    if isinstance(value, bool):
        return tensor(value)
    if isinstance(value, int):
        return tensor(value, dtype=_dtype.int64)
    if isinstance(value, float):
        return tensor(value, dtype=_dtype.float64)
    if isinstance(value, complex):
        return tensor(value, dtype=_dtype.complex128)
    return value


def _conv_sizes(node, name: str) -> tuple:
    """A convolution's ``stride``/``padding``/``dilation`` as PyTorch's node keeps them: one per
    spatial dimension (numgrad keeps a padding per side, and a 1-d convolution as a 2-d one)."""
    value = tuple(node.params[name])
    if name == "padding":
        value = value[::2]
    if node.params.get("one_d"):
        value = value[1:]
    return value


def _param_value(name: str, value):
    """A parameter as PyTorch's node shows it: an index array as a tensor, a reduction as the
    value of PyTorch's enum."""
    if isinstance(value, np.ndarray):
        from ..creation import tensor

        return tensor(value)
    if name == "reduction" and isinstance(value, str):
        return _REDUCTIONS.get(value, value)
    if isinstance(value, np.generic):  # (a number an op kept as NumPy's: PyTorch's is Python's)
        return value.item()
    return value


def saved_attribute(node, attr: str):
    """``node._saved_<name>`` or ``node._raw_saved_<name>`` (``OpNode.__getattr__``)."""
    raw = attr.startswith("_raw_saved_")
    name = attr[len("_raw_saved_"):] if raw else attr[len("_saved_"):]
    fields = saved_fields(node)
    where = fields.get(name)
    if where is None:
        if not raw and name.endswith("_sym_sizes") and fields:
            names = _input_names(type(node).op, len(node.input_shapes or ()))
            base = name[: -len("_sym_sizes")]
            if base in names and names.index(base) < len(node.input_shapes) and \
                    node.input_shapes[names.index(base)] is not None:
                return tuple(node.input_shapes[names.index(base)])
        raise AttributeError(f"'{type(node).__name__}' object has no attribute '{attr}'")
    kind, key = where
    if kind != "saved":
        if raw:
            if kind == "computed" and _computed_tensor(node, name) or kind == "param" and \
                    name in _TENSOR_PARAMS and _is_array_or_none(node.params[key]):
                if type(node).__name__ == "IndexBackward0":  # (a tuple of them)
                    return tuple(ComputedItemSavedTensor(node, name, k)
                                 for k in range(len(node.params["key"].adv or ())))
                return ComputedSavedTensor(node, name)
            raise AttributeError(f"'{type(node).__name__}' object has no attribute '{attr}'")
        if kind == "computed":
            if node._released and _computed_tensor(node, name):
                raise RuntimeError(_FREED)
            value = key(node)
            return _unsigned(value) if name in _INT_ARGS else value
        if kind == "fixed":
            given = node.params.get("_given")
            if given is not None and name in given:
                return given[name]
            return key(node) if callable(key) else key
        if kind == "size":
            return tuple(node.input_shapes[key])
        if kind == "numel":
            n = 1
            for d in node.input_shapes[key]:
                n *= d
            return n
        if type(node).op.name in ("convolution", "convolution_transpose") and name in (
                "stride", "padding", "dilation"):
            return _conv_sizes(node, key)
        value = _param_value(name, _param(node, key))
        return _unsigned(value) if name in _INT_ARGS else value
    if raw:
        return RawSavedTensor(node, key)
    if node._released:
        raise RuntimeError(_FREED)
    if key is None:
        return None
    value = node._saved[key]
    if value is None:
        return None
    if type(value) is SavedTensor:
        return value.unpack(node)
    return _wrapped_number(value)


def _is_array_or_none(value) -> bool:
    return value is None or hasattr(value, "shape") and hasattr(value, "dtype")


class ComputedSavedTensor(RawSavedTensor):
    """``_raw_saved_<name>`` of a tensor PyTorch's node saves and numgrad's derives when asked
    (``_saved_total_weight`` of ``nll_loss``, the indices of ``max(dim)``...): its backward does
    not read it, so hooks registered on it are checked as PyTorch checks them and the pack hook
    runs on the value now; nothing unpacks it."""

    __slots__ = ()

    def _value(self):
        return saved_attribute(self._node, "_saved_" + self._index)

    def register_hooks(self, pack_hook, unpack_hook) -> None:
        node = self._node
        if node._released:
            RawSavedTensor(node, None).register_hooks(pack_hook, unpack_hook)  # (its message)
        value = self._value()
        if value is None:
            raise RuntimeError(
                "Calling register_hooks on a saved tensor with value None is forbidden")
        if not callable(pack_hook) or not callable(unpack_hook):
            raise TypeError("register_hooks expects two callables, a pack hook and an unpack hook")
        pack_hook(value)


class ComputedItemSavedTensor(ComputedSavedTensor):
    """One of a tuple of derived saved tensors (``IndexBackward0``'s ``_raw_saved_indices``)."""

    __slots__ = ("_item",)

    def __init__(self, node, name: str, item: int):
        super().__init__(node, name)
        self._item = item

    def _value(self):
        return super()._value()[self._item]


def saved_names(node) -> list:
    """The ``_saved_<name>`` and ``_raw_saved_<name>`` attributes of ``node``, for ``dir``."""
    out = []
    for name, (kind, key) in saved_fields(node).items():
        out.append("_saved_" + name)
        if kind == "saved" or kind == "computed" and _computed_tensor(node, name) or \
                kind == "param" and name in _TENSOR_PARAMS and \
                _is_array_or_none(node.params[key]):
            out.append("_raw_saved_" + name)
    return out


def _saved_property(attr: str) -> property:
    def get(self):
        return saved_attribute(self, attr)

    get.__name__ = attr
    return property(get, doc=f"``{attr}``: what the node saved, under PyTorch's name.")


def _install_saved_properties() -> None:
    """``_saved_<name>`` and ``_raw_saved_<name>`` as properties of ``OpNode``, for every name
    ``saved_fields`` can give (a property that does not apply raises AttributeError). Properties,
    not a ``__getattr__``: a class with ``__getattr__`` loses CPython's specialised attribute
    loads on every access, which cost the engine ~4% of a backward-heavy eager step."""
    names = {"self", "other", "result"} | _PARAMS_SHOWN
    names |= {f"input{i}" for i in range(2, 12)}
    for inputs in _INPUT_NAMES.values():
        names.update(inputs)
    for fixed in _FIXED_PARAMS.values():
        names.update(fixed)
    for computed in _COMPUTED.values():
        names.update(computed)
    for node_name, inputs in _SIZES.items():
        for name in inputs:
            names.add(name + "_sym_sizes")
            if node_name in _NUMEL:
                names.add(name + "_sym_numel")
    for name in names:
        for attr in ("_saved_" + name, "_raw_saved_" + name):
            if attr not in vars(OpNode):
                setattr(OpNode, attr, _saved_property(attr))


_install_saved_properties()
