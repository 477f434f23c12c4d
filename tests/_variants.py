"""Hard-input variants of the op registry's samples (issue 14): the same calls on 0-d, empty,
non-contiguous, integer and bool inputs, on NaN, ±inf and ±0, and on one value expanded (every
input a 0-d leaf expanded to its shape, and the backward seeded with an expanded 1, as a ``sum``'s
or ``mean``'s gradient is; PyTorch gets the inputs materialised), run on numgrad and on PyTorch.

A variant's outcome is what the call gave (shapes, dtypes, values, the input gradients of a
backward seeded with ones) or the class of the exception it raised; numgrad's must be PyTorch's.
Used by tests/test_op_variants.py; ``python tests/_variants.py`` lists the variants that differ.
"""
from __future__ import annotations

import builtins

import numpy as np

VARIANTS = ("zero-dim", "empty", "non-contiguous", "special-values", "int64", "bool", "expanded")
SPECIAL = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0])


def _arrays(sample, variant: str, seed: int):
    """The input arrays of ``sample`` for ``variant``, and whether they require grad."""
    rng = np.random.default_rng(seed)
    shapes = list(sample.shapes)
    if variant == "zero-dim":
        shapes = [() for _ in shapes]
    elif variant == "empty":
        shapes = [(0,) + tuple(s[1:]) if len(s) else () for s in shapes]
    arrays = [rng.uniform(sample.low, sample.high, size=s) for s in shapes]
    grad = sample.grad
    if variant == "special-values":
        for a in arrays:
            flat = a.reshape(-1)
            flat[::2] = SPECIAL[np.arange(flat[::2].size) % SPECIAL.size]
    elif variant == "int64":
        arrays = [np.round(a * 3).astype(np.int64) for a in arrays]
        grad = False
    elif variant == "bool":
        arrays = [a > 0 for a in arrays]
        grad = False
    return arrays, grad


def _tensors(m, arrays, grad: bool, variant: str):
    """(inputs for the call, the leaves whose gradients are compared)."""
    leaves, inputs = [], []
    for a in arrays:
        if variant == "non-contiguous" and a.ndim:
            if a.ndim >= 2:  # a transpose of a contiguous leaf
                leaf = m.tensor(np.ascontiguousarray(np.swapaxes(a, -1, -2)), requires_grad=grad)
                inputs.append(leaf.transpose(-1, -2))
            else:  # every other element of a leaf twice as long
                wide = np.repeat(a, 2)
                leaf = m.tensor(wide, requires_grad=grad)
                inputs.append(leaf[::2])
        elif variant == "expanded" and a.size:  # one value, broadcast (strides 0)
            leaf = m.tensor(a.reshape(-1)[0], requires_grad=grad)
            wide = leaf.expand(tuple(a.shape))
            # (PyTorch, the oracle, gets the same values materialised: its CPU median along a
            # dim of a stride-0 tensor reads garbage, 0 or 5.6e-307, in 2.13)
            inputs.append(wide.clone() if getattr(m, "__name__", "") == "torch" else wide)
        else:
            leaf = m.tensor(a, requires_grad=grad)
            inputs.append(leaf)
        leaves.append(leaf)
    return inputs, leaves


def _exception_class(e: BaseException) -> str:
    """The builtin class of an exception (PyTorch raises private subclasses of them)."""
    for cls in type(e).__mro__:
        if getattr(builtins, cls.__name__, None) is cls:
            return cls.__name__
    return type(e).__name__


def outcome(m, call, sample, variant: str, seed: int):
    """What ``call(m, *inputs)`` gives for ``variant``: ("error", class) or ("ok", outputs,
    gradients), with arrays as NumPy arrays."""
    arrays, grad = _arrays(sample, variant, seed)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            inputs, leaves = _tensors(m, arrays, grad, variant)
            out = call(m, *inputs)
            outs = out if isinstance(out, tuple) else (out,)
            result = [(tuple(o.shape), str(o.dtype).split(".")[-1], o.detach().cpu().numpy().copy())
                      for o in outs]
            grads = None
            differentiable = [o for o in outs if o.requires_grad]
            if grad and differentiable:
                if variant == "expanded":  # (a seed of one value, as a mean's gradient)
                    seeds = [m.ones((), dtype=o.dtype).expand(tuple(o.shape)) for o in differentiable]
                else:
                    seeds = [m.ones_like(o) for o in differentiable]
                m.autograd.backward(differentiable, seeds)
                grads = [None if t.grad is None else t.grad.numpy().copy() for t in leaves]
        except Exception as e:  # noqa: BLE001 (the class is the outcome)
            return ("error", _exception_class(e), str(e).split("\n")[0][:160])
    return ("ok", result, grads)


def difference(ours, theirs, values: bool = True) -> str | None:
    """Why two outcomes differ, or None; without ``values``, only in what they are (error
    classes, the number, shapes and dtypes of outputs, which gradients exist)."""
    if ours[0] != theirs[0]:
        what = ours[2] if ours[0] == "error" else theirs[2]
        return f"numgrad {ours[0]}, PyTorch {theirs[0]} ({what})"
    if ours[0] == "error":
        return None if ours[1] == theirs[1] else f"raises {ours[1]}, PyTorch {theirs[1]}"
    if len(ours[1]) != len(theirs[1]):
        return "a different number of outputs"
    for (s1, d1, v1), (s2, d2, v2) in zip(ours[1], theirs[1]):
        if s1 != s2:
            return f"shape {s1}, PyTorch {s2}"
        if d1 != d2:
            return f"dtype {d1}, PyTorch {d2}"
        if values and not _close(v1, v2):
            return f"values {v1.ravel()[:6]}, PyTorch {v2.ravel()[:6]}"
    g1, g2 = ours[2], theirs[2]
    if (g1 is None) != (g2 is None):
        return f"gradients {'missing' if g1 is None else 'present'}, PyTorch's not"
    if g1 is not None:
        for a, b in zip(g1, g2):
            if (a is None) != (b is None):
                return "an input gradient is None on one side only"
            if values and a is not None and not _close(a, b):
                return f"gradients {a.ravel()[:6]}, PyTorch {b.ravel()[:6]}"
    return None


def _close(a, b) -> bool:
    if a.shape != b.shape:
        return False
    if a.dtype.kind in "biu" or b.dtype.kind in "biu":
        return np.array_equal(a, b)
    # float64 to 1e-6; float32 to 1e-5 (~80 of its ulps): PyTorch sums and log-sum-exps float32
    # in float32 where numgrad accumulates in float64, and the 1-ulp differences of exp grow
    # along a chain (exp(exp(4)) differs by 4e-6), beyond 1e-6's 8 ulps.
    rtol = 1e-6 if a.dtype == np.float64 else 1e-5
    return bool(np.allclose(a, b, rtol=rtol, atol=1e-8, equal_nan=True))


def cases():
    """(op name, sample index, variant) of every generated variant."""
    from numgrad.ops import REGISTRY

    return [(name, i, v) for name, op in sorted(REGISTRY.items())
            for i in range(len(op.samples)) for v in VARIANTS]


class _TorchNamespace:
    """``torch`` as the samples see it (``m.ops.X`` is ATen's ``X``)."""

    def __init__(self):
        import torch

        self.ops = torch.ops.aten
        self._torch = torch

    def __getattr__(self, name):
        return getattr(self._torch, name)


def compare(name: str, index: int, variant: str, torch_ns=None, values: bool = True):
    import numgrad
    from numgrad.ops import REGISTRY

    sample = REGISTRY[name].samples[index]
    seed = 5000 + index
    theirs = outcome(torch_ns or _TorchNamespace(), sample.call, sample, variant, seed)
    ours = outcome(numgrad, sample.call, sample, variant, seed)
    return difference(ours, theirs, values)


if __name__ == "__main__":
    ns = _TorchNamespace()
    found = [(c, compare(*c, torch_ns=ns)) for c in cases()]
    bad = [(c, d) for c, d in found if d]
    for c, d in bad:
        print(*c, "|", d)
    print(f"{len(bad)} of {len(found)} variants differ")
