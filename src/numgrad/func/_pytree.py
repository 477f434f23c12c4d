"""The nested containers ("pytrees") the transforms take and return: tuples, lists, dicts and
namedtuples of leaves (tensors, numbers, None …), flattened to a list of leaves and a spec that
rebuilds the same structure around new leaves."""
from __future__ import annotations


def _is_namedtuple(x) -> bool:
    """A tuple subclass (a namedtuple, or numgrad's ``(values, indices)`` results)."""
    return isinstance(x, tuple) and type(x) is not tuple


def tree_flatten(tree):
    """(leaves, spec): the leaves in order, and what ``tree_unflatten`` needs to rebuild."""
    leaves = []
    return leaves, _flatten(tree, leaves)


def _flatten(tree, leaves):
    if _is_namedtuple(tree):
        return (type(tree), [_flatten(v, leaves) for v in tree])
    if isinstance(tree, (tuple, list)):
        return (type(tree), [_flatten(v, leaves) for v in tree])
    if isinstance(tree, dict):
        return (dict, [(k, _flatten(v, leaves)) for k, v in tree.items()])
    leaves.append(tree)
    return None  # (a leaf)


def tree_unflatten(leaves, spec):
    """The structure of ``spec`` with ``leaves`` (a list, consumed in order) in it."""
    it = iter(leaves)
    return _unflatten(it, spec)


def _unflatten(it, spec):
    if spec is None:
        return next(it)
    kind, children = spec
    if kind is dict:
        return {k: _unflatten(it, c) for k, c in children}
    values = [_unflatten(it, c) for c in children]
    if kind is list:
        return values
    if kind is tuple:
        return tuple(values)
    return kind(*values)  # (a namedtuple)


def tree_map(fn, tree):
    leaves, spec = tree_flatten(tree)
    return tree_unflatten([fn(x) for x in leaves], spec)


def leaf_count(spec) -> int:
    if spec is None:
        return 1
    kind, children = spec
    if kind is dict:
        return sum(leaf_count(c) for _, c in children)
    return sum(leaf_count(c) for c in children)


def broadcast_prefix(prefix, tree, what: str = "in_dims"):
    """The leaves of ``prefix`` (an int, None, or a structure matching the top of ``tree``)
    repeated to one per leaf of ``tree``."""
    if prefix is None or isinstance(prefix, int):
        return [prefix] * leaf_count(tree_flatten(tree)[1])
    if isinstance(prefix, (tuple, list)) and not _is_namedtuple(prefix):
        if not isinstance(tree, (tuple, list)) or len(prefix) != len(tree):
            raise ValueError(f"{what} is not compatible with the structure of `inputs`. "
                             f"{what} has structure {prefix!r} but inputs has structure "
                             f"of {len(tree) if isinstance(tree, (tuple, list)) else 1} "
                             "elements.")
        out = []
        for p, t in zip(prefix, tree):
            out += broadcast_prefix(p, t, what)
        return out
    if isinstance(prefix, dict):
        if not isinstance(tree, dict) or set(prefix) != set(tree):
            raise ValueError(f"{what} is not compatible with the structure of `inputs`.")
        out = []
        for k in tree:
            out += broadcast_prefix(prefix[k], tree[k], what)
        return out
    raise ValueError(f"vmap: {what} must be an int, None or a (nested) tuple of them, got "
                     f"{prefix!r}")
