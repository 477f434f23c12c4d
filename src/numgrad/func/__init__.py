"""``numgrad.func``: PyTorch's function transforms (``torch.func``), composable and nestable.

``grad``, ``grad_and_value``, ``vjp`` and ``jacrev`` differentiate by numgrad's reverse-mode
engine (``autograd.grad``, with ``create_graph`` where an enclosing transform differentiates the
result again); ``jvp``, ``linearize`` and ``jacfwd`` push tangents forward by the ops' forward
rules (``autograd.forward_ad``, a level of their own each, so that they nest); ``vmap`` maps by
the ops' batching rules (``func._vmap``); ``hessian`` is ``jacfwd(jacrev(f))``. Inside ``vmap``
the differentiating transforms work on each example's copy of what they differentiate, so
``vmap(grad(loss), in_dims=(None, 0, 0))(params, x, y)`` gives per-example gradients.
"""
from __future__ import annotations

import functools
import warnings

from .. import eye, stack  # (numgrad is imported before its lazy submodule func)
from ..autograd import forward_ad, grad_mode
from ..autograd import grad as autograd_grad
from ..creation import ones_like, zeros, zeros_like
from ..ops import registry
from ..tensor import Tensor
from . import _pytree, _vmap
from . import _vmap_composite, _vmap_indexing  # noqa: F401  (more batching rules, in _vmap.RULES)
from ._vmap import vmap
from ..nn.modules.batchnorm import _BatchNorm

__all__ = ["grad", "grad_and_value", "vjp", "jvp", "linearize", "jacrev", "jacfwd", "hessian",
           "vmap", "functional_call", "stack_module_state", "functionalize",
           "replace_all_batch_norm_modules_", "debug_unwrap"]


# ------------------------------------------------------------------------------ reverse mode
def _argnums_tuple(argnums, nargs, fname):
    """(whether ``argnums`` is one int, the argument positions), with PyTorch's errors."""
    single = isinstance(argnums, int)
    if not single and not isinstance(argnums, tuple):
        raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(argnums)}")
    nums = (argnums,) if single else argnums
    if not nums:
        raise RuntimeError("argnums must be non-empty")
    for a in nums:
        if not isinstance(a, int):
            raise RuntimeError(f"argnum must be int, got: {type(a)}")
        if not -nargs <= a < nargs:
            raise RuntimeError(f"Got argnum={a}, but only {nargs} positional inputs")
    nums = tuple(a % nargs for a in nums)
    if len(set(nums)) != len(nums):
        raise RuntimeError(f"argnums elements must be unique, got {nums}")
    return single, nums


def _needs_graph(leaves) -> tuple:
    """(record, keep): whether the gradients must be recorded, for an enclosing transform that
    differentiates them by forward mode (an open forward-AD level: tangents flow through the
    backward formulas) or by reverse mode (an input that requires grad), and whether they stay
    connected to the caller's graph (the latter)."""

    if not grad_mode.state.enabled:
        return False, False
    keep = any(isinstance(x, Tensor) and _vmap.innermost(x).requires_grad for x in leaves)
    return keep or registry._forward_ad is not None, keep


def _detach(t):
    """``t`` detached, its forward-AD tangents kept."""

    return forward_ad.detach(t) if forward_ad._levels else t.detach()


def _release(tree, keep: bool):
    """The transform's results: detached (their tangents kept) unless the caller's graph
    reaches them."""
    if keep:
        return tree
    return _pytree.tree_map(lambda x: _vmap.rewrap(_detach(_vmap.innermost(x)),
                                                   _vmap.chain_of(x))
                            if isinstance(x, Tensor) else x, tree)


def _differentiable(x: Tensor):
    """(the tensor ``f`` gets in place of ``x``, the physical tensor to differentiate): ``x``
    batched at every open vmap level, its innermost value made to require grad (a detached
    alias of it where it did not)."""
    if not isinstance(x, Tensor):
        raise RuntimeError(f"Expected a Tensor to differentiate with respect to, got {type(x)}")
    inner = _vmap.innermost(x)
    if not (inner.is_floating_point() or inner.is_complex()):  # (bfloat16's array is "V2")
        raise RuntimeError("only Tensors of floating point dtype can require gradients")
    if not inner.requires_grad:
        chain = _vmap.chain_of(x)
        inner = _detach(inner).requires_grad_(True)
        x = _vmap.rewrap(inner, chain)
    else:
        inner = inner.view_as(inner)  # (its own node: the gradient stops here)
        x = _vmap.rewrap(inner, _vmap.chain_of(x))
    batched = _vmap.batch_at_all_levels(x)
    return batched, _vmap.innermost(batched)


def _prepare(args, argnums, fname):
    single, nums = _argnums_tuple(argnums, len(args), fname)
    args = list(args)
    specs, wrt, physical = [], [], []
    for a in nums:
        leaves, spec = _pytree.tree_flatten(args[a])
        pairs = [_differentiable(x) for x in leaves]
        args[a] = _pytree.tree_unflatten([p[0] for p in pairs], spec)
        specs.append(spec)
        wrt.append([p[0] for p in pairs])
        physical.append([p[1] for p in pairs])
    return single, nums, args, specs, wrt, physical


def _gradients(outputs, physical_in, cotangents, create_graph, retain_graph=None):
    """The physical gradients of the physical ``outputs`` with respect to ``physical_in``
    (zeros where unused)."""

    flat_in = [p for group in physical_in for p in group]
    outs, seeds = [], []
    for o, c in zip(outputs, cotangents):
        if o.requires_grad:
            outs.append(o)
            seeds.append(c)
    if outs:
        grads = autograd_grad(outs, flat_in, seeds, retain_graph=retain_graph,
                              create_graph=create_graph, allow_unused=True)
    else:
        grads = [None] * len(flat_in)
    return [zeros_like(p) if g is None else g for p, g in zip(flat_in, grads)]


def _regroup(flat, like_groups, specs, single):
    out, i = [], 0
    for group, spec in zip(like_groups, specs):
        leaves = []
        for template in group:
            leaves.append(_vmap.rewrap(flat[i], _vmap.chain_of(template)))
            i += 1
        out.append(_pytree.tree_unflatten(leaves, spec))
    return out[0] if single else tuple(out)


def _split_aux(output, has_aux, fname):
    if not has_aux:
        return output, None
    if not (isinstance(output, tuple) and len(output) == 2):
        raise RuntimeError(f"{fname}(f, ...)(*args): output of function f should be a tuple: "
                           "(output, aux) if has_aux is True")
    return output


def grad_and_value(func, argnums=0, has_aux: bool = False):
    """``func``'s gradient with respect to the inputs ``argnums`` (and ``func``'s value, and
    its auxiliary output with ``has_aux``): ``(grad, value)`` or ``(grad, (value, aux))``.
    ``func`` must return a 0-d tensor."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        leaves = _pytree.tree_flatten(args)[0]
        create, keep = _needs_graph(leaves)
        with grad_mode.enable_grad():
            single, nums, new_args, specs, wrt, physical = _prepare(args, argnums,
                                                                    "grad_and_value")
            output = func(*new_args, **kwargs)
            output, aux = _split_aux(output, has_aux, "grad_and_value")
            if not isinstance(output, Tensor):
                raise RuntimeError("grad_and_value(f)(*args): Expected f(*args) to return a "
                                   f"Tensor, got {type(output)}")
            if output.dim() != 0:
                raise RuntimeError("grad_and_value(f)(*args): Expected f(*args) to return a "
                                   f"scalar Tensor, got tensor with {output.dim()} dims. Maybe "
                                   "you wanted to use the vjp or jacrev APIs instead?")
            out_p = _vmap.innermost(output)

            flat = _gradients([out_p], physical, [ones_like(out_p)], create)
        grads = _release(_regroup(flat, wrt, specs, single), keep)
        value = _release(output, keep)
        if has_aux:
            return grads, (value, _release(aux, keep))
        return grads, value

    return wrapper


def grad(func, argnums=0, has_aux: bool = False):
    """The gradient of ``func`` (which returns a 0-d tensor) with respect to its inputs
    ``argnums`` (an int or a tuple of them; each input a tensor or a structure of them):
    ``grad(f)(x)`` is ``df/dx`` at ``x``; with ``has_aux``, ``(grad, aux)``."""
    gv = grad_and_value(func, argnums, has_aux)

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        grads, value = gv(*args, **kwargs)
        return (grads, value[1]) if has_aux else grads

    return wrapper


def vjp(func, *primals, has_aux: bool = False):
    """``(func(*primals), vjp_fn)``: ``vjp_fn(cotangents)`` gives the vector-Jacobian products
    with respect to each primal (a tuple, one per primal)."""
    leaves = _pytree.tree_flatten(primals)[0]
    create, keep = _needs_graph(leaves)
    with grad_mode.enable_grad():
        _, nums, new_args, specs, wrt, physical = _prepare(primals, tuple(range(len(primals))),
                                                           "vjp")
        output = func(*new_args)
        output, aux = _split_aux(output, has_aux, "vjp")
    out_leaves, out_spec = _pytree.tree_flatten(output)
    for o in out_leaves:
        if not isinstance(o, Tensor):
            raise RuntimeError("vjp(f, *primals): expected f(*primals) to return only tensors, "
                               f"got unsupported type {type(o)}")
        if not o.dtype.is_floating_point:
            raise RuntimeError("vjp(f, ...): All outputs of f must be floating-point or complex "
                               f"Tensors, got Tensor with dtype {o.dtype}")
    known = {lvl.id for lvl in _vmap.active_levels()}  # (the levels the graph was made under)
    versions = [x._version for x in leaves if isinstance(x, Tensor)]
    leaves = [x for x in leaves if isinstance(x, Tensor)]

    def vjp_fn(cotangents, *, retain_graph=True, create_graph=None):
        cg = create if create_graph is None else create_graph
        ct_leaves, ct_spec = _pytree.tree_flatten(cotangents)
        if ct_spec != out_spec and not (len(ct_leaves) == len(out_leaves)):
            raise RuntimeError("Expected pytree structure of cotangents to be the same as "
                               "pytree structure of outputs to the function.")
        for c, o in zip(ct_leaves, out_leaves):
            if tuple(c.shape) != tuple(o.shape):
                raise RuntimeError(
                    f"Mismatch in shape: grad_output[0] has a shape of {c.shape} and "
                    f"output[0] has a shape of {o.shape}.")
        newer = [lvl.id for c in ct_leaves for lvl in _vmap.chain_of(c) if lvl.id not in known]
        if newer:  # (vmap over vjp_fn: the batched backward of a batched forward, else a loop)
            lvl = _vmap._level(max(newer))
            if versions == [x._version for x in leaves]:
                done = _batched_rerun(func, primals, has_aux, cotangents, lvl, cg)
                if done is not None:
                    return done
            return _vmap._fallback(lambda *cs: vjp_fn(_pytree.tree_unflatten(list(cs), ct_spec)),
                                   lvl, tuple(ct_leaves), {}, "vjp_fn")
        outs, seeds = [], []
        for c, o in zip(ct_leaves, out_leaves):
            op = _vmap.innermost(o)
            outs.append(op)
            seeds.append(_vmap.innermost(_vmap.batch_like(c, o)))
        with grad_mode.enable_grad():
            flat = _gradients(outs, physical, seeds, cg, retain_graph=True)
        return _release(_regroup(flat, wrt, specs, False), keep)

    out = _release(output, keep)
    if has_aux:
        return out, vjp_fn, _release(aux, keep)
    return out, vjp_fn


def _batched_rerun(func, primals, has_aux, cotangents, lvl, create_graph):
    """``vjp_fn(cotangents)`` with the cotangents batched at a level newer than the graph (vmap
    over vjp_fn, as the neural tangent kernel's vjp-then-jvp form does): instead of one backward
    pass per example, ``func`` runs again at that level on the same primals (each example its
    own copy, as ``jacrev`` runs it), so one batched forward and one backward pass give every
    example's products. The primals are unchanged since (checked by the caller); a function that
    draws random numbers (its draws would differ) or fails batched gives None: the loop."""
    saved = lvl.randomness
    lvl.randomness = "error"  # (a random draw raises: caught, the loop runs instead)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", UserWarning)  # (a loop inside: the outer loop instead)
            out = vjp(func, *primals, has_aux=has_aux)
        return out[1](cotangents, create_graph=create_graph)
    except Exception:  # noqa: BLE001  (the loop runs it, and raises what it raises)
        return None
    finally:
        lvl.randomness = saved


def jacrev(func, argnums=0, *, has_aux: bool = False, chunk_size=None, _preallocate_and_copy=False):
    """The Jacobian of ``func`` with respect to the inputs ``argnums`` by reverse mode: the
    vector-Jacobian products of every output element at once (``vmap`` over the basis of the
    outputs, ``chunk_size`` of them at a time). Its shape is the output's then the input's."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        if not has_aux:
            return _jacrev_by_vmap(func, args, kwargs, argnums, chunk_size)

        leaves = _pytree.tree_flatten(args)[0]
        create, keep = _needs_graph(leaves)
        with grad_mode.enable_grad():
            single, nums, new_args, specs, wrt, physical = _prepare(args, argnums, "jacrev")
            output = func(*new_args, **kwargs)
            output, aux = _split_aux(output, has_aux, "jacrev")
            out_leaves, out_spec = _pytree.tree_flatten(output)
            per_output = []
            for o in out_leaves:
                if not isinstance(o, Tensor):
                    raise RuntimeError("jacrev(f, ...)(*args): Expected f to be a function that "
                                       f"has non-empty output that are tensors, got {type(o)}")
                op = _vmap.innermost(o)
                oshape = tuple(o.shape)
                n = 1
                for s in oshape:
                    n *= s
                rows = []
                for j in range(n):
                    e = zeros(n, dtype=o.dtype)
                    e[j] = 1
                    seed = e.reshape(oshape).expand(tuple(op.shape))
                    rows.append(_gradients([op], physical, [seed], create, retain_graph=True))
                jac = []
                for k, p in enumerate(p for g in physical for p in g):
                    lead = p.ndim - len(_logical_shape_of(k, wrt))
                    pshape = tuple(p.shape)
                    if n:
                        col = stack([r[k] for r in rows], lead)
                    else:
                        col = zeros((*pshape[:lead], 0, *pshape[lead:]), dtype=p.dtype)
                    jac.append(col.reshape((*pshape[:lead], *oshape, *pshape[lead:])))
                per_output.append(_regroup(jac, wrt, specs, single))
        result = _release(_pytree.tree_unflatten(per_output, out_spec), keep)
        if has_aux:
            return result, _release(aux, keep)
        return result

    return wrapper


def _jacrev_by_vmap(func, args, kwargs, argnums, chunk_size):
    """``jacrev`` as ``vjp`` once, then ``vmap`` of its ``vjp_fn`` over the unit cotangents (a
    batched backward: the function run again at the vmap's level, each example its own copy
    of the inputs, one backward pass for every row; where that cannot be, a function that
    draws random numbers or fills a tensor of its own with the inputs' values, one backward
    pass per row of the graph made once)."""

    single, nums = _argnums_tuple(argnums, len(args), "jacrev")
    primals = [args[i] for i in nums]

    def partial(*diff):
        full = list(args)
        for i, d in zip(nums, diff):
            full[i] = d
        return func(*full, **kwargs)

    probe, vjp_fn = vjp(partial, *primals)
    out_leaves, out_spec = _pytree.tree_flatten(probe)
    shapes = [tuple(o.shape) for o in out_leaves]
    sizes = [o.numel() for o in out_leaves]
    total = sum(sizes)
    if not total:  # (an empty output: the loop, which makes the empty Jacobian's shape)
        return _jacrev_loop(func, args, kwargs, argnums)
    basis = eye(total, dtype=out_leaves[0].dtype)
    parts, start = [], 0
    for shape, n in zip(shapes, sizes):
        parts.append(basis[:, start:start + n].reshape((total, *shape)))
        start += n

    def rows(*cotangents):
        return vjp_fn(_pytree.tree_unflatten(list(cotangents), out_spec))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # (the loop, where it runs, is by design)
        mapped = vmap(rows, chunk_size=chunk_size)(*parts)
    per_output, start = [], 0
    for shape, n in zip(shapes, sizes):
        def piece(x, shape=shape, n=n, start=start):
            return x[start:start + n].reshape((*shape, *tuple(x.shape)[1:]))
        grouped = [_pytree.tree_map(piece, m) for m in mapped]
        per_output.append(grouped[0] if single else tuple(grouped))
        start += n
    return _pytree.tree_unflatten(per_output, out_spec)


def _jacrev_loop(func, args, kwargs, argnums):
    return jacrev(lambda *a, **k: (func(*a, **k), None), argnums, has_aux=True)(
        *args, **kwargs)[0]


def _logical_shape_of(k, wrt):
    flat = [x for g in wrt for x in g]
    return tuple(flat[k].shape)


# ------------------------------------------------------------------------------ forward mode
def jvp(func, primals, tangents, *, strict: bool = False, has_aux: bool = False):
    """``(func(*primals), J t)``: the Jacobian-vector product of ``func`` at ``primals`` with
    ``tangents`` (a tuple matching ``primals``), by forward mode."""

    if not isinstance(primals, tuple):
        raise RuntimeError("jvp(f, primals, tangents): Expected primals to be a tuple. E.g. it "
                           "should be valid to call f(*primals).")
    if not isinstance(tangents, tuple) or len(tangents) != len(primals):
        raise RuntimeError("jvp(f, primals, tangents): Expected primals and tangents to have the "
                           "same python structure. For example, if primals is a tuple of 3 "
                           "tensors, tangents also must be. Got primals with structure "
                           f"{_pytree.tree_flatten(primals)[1]} and tangents with structure "
                           f"{_pytree.tree_flatten(tangents)[1]}")
    p_leaves, p_spec = _pytree.tree_flatten(primals)
    t_leaves, t_spec = _pytree.tree_flatten(tangents)
    if p_spec != t_spec:
        raise RuntimeError("jvp(f, primals, tangents): Expected primals and tangents to have the "
                           "same python structure.")
    for p, t in zip(p_leaves, t_leaves):
        if tuple(p.shape) != tuple(t.shape):
            raise RuntimeError("jvp(f, primals, tangents): Expected primals and tangents to have "
                               f"the same shape, got {tuple(p.shape)} and {tuple(t.shape)}")
    level = forward_ad._open_level()
    try:
        duals = [forward_ad.make_dual(p, t, level=level) for p, t in zip(p_leaves, t_leaves)]
        output = func(*_pytree.tree_unflatten(duals, p_spec))
        output, aux = _split_aux(output, has_aux, "jvp")
        out_leaves, out_spec = _pytree.tree_flatten(output)
        primal_out, tangent_out = [], []
        for o in out_leaves:
            if not isinstance(o, Tensor):
                raise RuntimeError("jvp(f, primals, tangents): Expected f(*primals) to return "
                                   f"only tensors, got unsupported type {type(o)}")
            p, t = forward_ad.unpack_dual(o, level=level)
            if t is None:
            
                t = zeros_like(p)
            primal_out.append(p)
            tangent_out.append(t)
    finally:
        forward_ad._close_level(level)
    result = (_pytree.tree_unflatten(primal_out, out_spec),
              _pytree.tree_unflatten(tangent_out, out_spec))
    return (*result, aux) if has_aux else result


def linearize(func, *primals):
    """``(func(*primals), jvp_fn)``: ``jvp_fn(*tangents)`` gives ``J t`` at ``primals``."""
    output = func(*primals)

    def jvp_fn(*tangents):
        return jvp(func, primals, tangents)[1]

    return output, jvp_fn


def jacfwd(func, argnums=0, has_aux: bool = False, *, randomness: str = "error"):
    """The Jacobian of ``func`` with respect to the inputs ``argnums`` by forward mode: ``vmap``
    of ``jvp`` over the basis of the inputs. Its shape is the output's then the input's."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
    
        single, nums = _argnums_tuple(argnums, len(args), "jacfwd")
        groups = [_pytree.tree_flatten(args[a]) for a in nums]
        flat_in = [x for leaves, _ in groups for x in leaves]
        sizes = [x.numel() for x in flat_in]
        total = sum(sizes)
        basis = eye(total, dtype=flat_in[0].dtype)
        parts, start = [], 0
        for x, n in zip(flat_in, sizes):
            parts.append(basis[:, start:start + n].reshape((total, *tuple(x.shape))))
            start += n

        def push(*tangent_leaves):
            it = iter(tangent_leaves)
            tangents, primals = [], []
            for i, a in enumerate(args):
                if i in nums:
                    leaves, spec = groups[nums.index(i)]
                    tangents.append(_pytree.tree_unflatten([next(it) for _ in leaves], spec))
                    primals.append(a)

            def partial(*diff):
                full = list(args)
                for i, d in zip(nums, diff):
                    full[i] = d
                return func(*full, **kwargs)

            out = jvp(partial, tuple(primals), tuple(tangents), has_aux=has_aux)
            return (out[1], out[2]) if has_aux else out[1]

        try:
            mapped = vmap(push, randomness=randomness)(*parts)
        except RuntimeError as error:  # (a write of the inputs' values into a tensor the
            if "index_put_" not in str(error):  # function made itself: one jvp per column)
                raise
            columns = [push(*[p[i] for p in parts]) for i in range(total)]
            flat = [_pytree.tree_flatten(c)[0] for c in columns]
            mapped = _pytree.tree_unflatten(
                [stack([f[k] for f in flat]) if isinstance(flat[0][k], Tensor) else flat[0][k]
                 for k in range(len(flat[0]))], _pytree.tree_flatten(columns[0])[1])
        if has_aux:
            mapped, aux = mapped
            aux = _pytree.tree_map(lambda a: a[0] if isinstance(a, Tensor) else a, aux)
        out_leaves, out_spec = _pytree.tree_flatten(mapped)
        per_output = []
        for o in out_leaves:
            oshape = tuple(o.shape)[1:]
            pieces, start = [], 0
            for x, n in zip(flat_in, sizes):
                piece = o[start:start + n]
                start += n
                piece = piece.movedim(0, -1) if piece.ndim > 1 else piece
                pieces.append(piece.reshape((*oshape, *tuple(x.shape))))
            it = iter(pieces)
            grouped = [_pytree.tree_unflatten([next(it) for _ in leaves], spec)
                       for leaves, spec in groups]
            per_output.append(grouped[0] if single else tuple(grouped))
        result = _pytree.tree_unflatten(per_output, out_spec)
        return (result, aux) if has_aux else result

    return wrapper


def hessian(func, argnums=0):
    """The Hessian of ``func`` (a scalar function) with respect to the inputs ``argnums``:
    ``jacfwd(jacrev(func))``, forward-over-reverse."""
    return jacfwd(jacrev(func, argnums), argnums)


# ------------------------------------------------------------------------------- modules
def functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *,
                    tie_weights: bool = True, strict: bool = False):
    """Calls ``module`` with its parameters and buffers replaced by those of
    ``parameter_and_buffer_dicts`` (a dict of names to tensors, or a tuple of dicts) for this
    call only."""
    if isinstance(parameter_and_buffer_dicts, dict):
        mapping = dict(parameter_and_buffer_dicts)
    else:
        mapping = {}
        for d in parameter_and_buffer_dicts:
            for k, v in d.items():
                if k in mapping:
                    raise ValueError(f"{k} appeared in multiple dictionaries; behavior of "
                                     "functional call is ambiguous")
                mapping[k] = v
    if strict:
        expected = {n for n, _ in module.named_parameters()} | \
            {n for n, _ in module.named_buffers()}
        missing = sorted(expected - set(mapping))
        unexpected = sorted(set(mapping) - expected)
        if missing or unexpected:
            raise RuntimeError("Error(s) in reparametrizing for " + type(module).__name__ +
                               f": missing keys {missing}, unexpected keys {unexpected}")
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    saved = []
    try:
        for name, value in mapping.items():
            owner, leaf = _owner(module, name)
            for registry in ("_parameters", "_buffers"):
                table = owner.__dict__.get(registry)
                if table is not None and leaf in table:
                    saved.append((table, leaf, table[leaf]))
                    table[leaf] = value
                    break
            else:
                saved.append((owner.__dict__, leaf, owner.__dict__.get(leaf, _MISSING)))
                owner.__dict__[leaf] = value
        return module(*args, **(kwargs or {}))
    finally:
        for table, leaf, old in reversed(saved):
            if old is _MISSING:
                table.pop(leaf, None)
            else:
                table[leaf] = old


_MISSING = object()


def _owner(module, name: str):
    *path, leaf = name.split(".")
    owner = module
    for part in path:
        owner = getattr(owner, part)
    return owner, leaf


def stack_module_state(models) -> tuple:
    """``(params, buffers)``: each parameter and buffer of ``models`` (modules of one
    structure) stacked along a new first dimension, by name; the stacked parameters are new
    leaves that require grad (for ``vmap`` over ``functional_call``: model ensembling)."""

    models = list(models)
    if not models:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if not (all(m.training for m in models) or not any(m.training for m in models)):
        raise RuntimeError("stack_module_state: Expected all models to have the same training/"
                           "eval mode.")
    first = type(models[0])
    if not all(type(m) is first for m in models):
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")
    params = {}
    for name, p in models[0].named_parameters():
        stacked = stack([dict(m.named_parameters())[name].detach() for m in models])
        params[name] = stacked.requires_grad_(p.requires_grad)
    buffers = {}
    for name, _ in models[0].named_buffers():
        buffers[name] = stack([dict(m.named_buffers())[name] for m in models])
    return params, buffers


# ---------------------------------------------------------------------------- functionalize
_REMOVE = ("mutations", "mutations_and_views")


def functionalize(func, *, remove: str = "mutations"):
    """``func`` without its mutations and aliasing, as PyTorch's eager ``functionalize`` behaves:
    ``func`` runs on private copies of its tensor inputs, so that no output aliases an input
    (nor one another through them: an output that is a view is copied); an input ``func``
    wrote in place gets the new values copied back, once, at the end. Composes with every
    transform (the copies are recorded, so gradients flow through them)."""
    if remove not in _REMOVE:
        raise RuntimeError(
            f"functionalize(f, remove='mutations'): received invalid argument for remove={remove}."
            " Valid options are:\n     remove='mutations': all inplace and out= operators will "
            "be removed from the program, and replaced with their out-of-place equivalents.\n"
            "     remove='mutations_and_views': In addition to the above, all aliasing operators "
            "{view} will be replaced with their non-aliasing counterparts, {view}_copy.\n")

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        leaves, spec = _pytree.tree_flatten((args, kwargs))
        private = [x.clone() if isinstance(x, Tensor) else x for x in leaves]
        versions = [x._version if isinstance(x, Tensor) else None for x in private]
        new_args, new_kwargs = _pytree.tree_unflatten(private, spec)
        out = func(*new_args, **new_kwargs)
        for x, p, v in zip(leaves, private, versions):
            if isinstance(x, Tensor) and p._version != v:
                x.copy_(p)  # (the input's mutation, copied back)
        return _pytree.tree_map(
            lambda y: y.clone() if isinstance(y, Tensor) and y._base is not None else y, out)

    return wrapper


# ------------------------------------------------------------------------------ utilities
def replace_all_batch_norm_modules_(root):
    """Every batch-norm module under ``root`` made to use its batch's statistics, in place:
    running statistics dropped and no longer tracked (what ``vmap`` over a model in training
    needs, as PyTorch's per-sample-gradient tutorial does). Returns ``root``."""
    for module in root.modules():
        if isinstance(module, _BatchNorm) and module.track_running_stats:
            module.running_mean = None
            module.running_var = None
            module.num_batches_tracked = None
            module.track_running_stats = False
    return root


def debug_unwrap(tensor, *, recurse: bool = True):
    """The tensor a ``vmap``-batched tensor wraps: its physical value at its level (batch
    dimension first), or, with ``recurse``, at every level down to a plain tensor."""
    if not isinstance(tensor, _vmap.BatchedTensor):
        return tensor
    return _vmap.innermost(tensor) if recurse else tensor._value
