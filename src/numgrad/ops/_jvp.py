"""The forward-mode (jvp) rules shared by families of ops: an op declares ``jvp = <rule>`` next
to its backward (see ``registry.Op.jvp``). Each rule gets ``ctx`` (an
``autograd.forward_ad.JvpContext``) and one tangent (or None) per input, and returns the output's
tangent, computed with recorded ops so that it is itself differentiable and carries the tangents
of outer levels.

- ``linear``: the op is linear in its float inputs (sums, means, views, reshapes, ``add``,
  ``cat``, ``gather`` in its source …): its tangent is the op itself applied to the tangents.
- ``bilinear``: linear in each of two inputs (``mul``, ``mm``, ``dot`` …): ``op(ta, b) + op(a,
  tb)``; ``bilinear_with`` names the pair and a bias (``addmm``).
- ``elementwise``: each output element depends on the same element of each (broadcast) input, so
  the Jacobian is diagonal and equals its transpose: the backward formula, given the tangent as
  the output gradient, gives the tangent (PyTorch derives these rows of derivatives.yaml from the
  same formulas). One formula, both modes.
- ``symmetric``: the same rule for an op of one input whose Jacobian is symmetric though not
  diagonal (``softmax``: ``diag(y) - y y^T``).
- ``zero``: piecewise-constant ops (``floor``, ``sign`` …): a zero tangent.
- ``transposed_backward``: any op whose backward is linear in the output gradient and recorded
  (every op whose second derivatives are gradchecked): the jvp is the vjp of the vjp, ``J t =
  d/dg <J^T g, t>``. Slower (a small backward pass) but exact; the rule of ops with no cheaper
  one.
"""
from __future__ import annotations

import numpy as np

from ..autograd import grad_mode
from ..tensor import Tensor
from . import registry
from .._dtype import from_numpy_dtype
from .._lowp import BF16
from ..creation import zeros_like
from ..autograd import grad as autograd_grad


def _is_float(t) -> bool:
    return isinstance(t, Tensor) and (t._data.dtype.kind in "fc" or t._data.dtype == BF16)


def _zeros_for(t: Tensor) -> Tensor:
    return zeros_like(t)


def _run(ctx, inputs) -> Tensor:
    """``ctx.op`` on ``inputs``: the tensors among them replaced (tangents, zeros) have their
    own arrays, the others the arrays the op had (numbers promoted, as its public function did)."""
    arrays = tuple(t._data if isinstance(t, Tensor) and t is not x else a
                   for t, x, a in zip(inputs, ctx.inputs, ctx.arrays))
    return registry.apply(ctx.op, inputs, arrays, **ctx.params)


def _as_dtype(tangent: Tensor, like) -> Tensor:
    """``tangent`` in the dtype of ``like`` (a tensor, or an array the op was given promoted)."""
    dtype = like._data.dtype if isinstance(like, Tensor) else like.dtype
    return tangent if tangent._data.dtype == dtype else tangent.to(_torch_dtype(dtype))


def _torch_dtype(np_dtype):
    return from_numpy_dtype(np_dtype)


def linear(ctx, *tangents):
    """The op applied to the tangents (zeros for float inputs without one); other inputs (index
    tensors, conditions, numbers) kept."""
    args, arrays = [], []
    for x, a, t in zip(ctx.inputs, ctx.arrays, tangents):
        if _is_float(x):
            t = _as_dtype(t if t is not None else _zeros_for(x), a)
            args.append(t)
            arrays.append(t._data)
        elif not isinstance(x, Tensor) and getattr(a, "dtype", None) is not None and \
                (a.dtype.kind in "fc" or a.dtype == BF16):
            args.append(0.0)  # (``x + 2.5`` is affine: the number drops out)
            arrays.append(a.dtype.type(0) if np.ndim(a) == 0 and not isinstance(a, np.ndarray)
                          else np.zeros_like(a))
        else:
            args.append(x)
            arrays.append(a)
    params = ctx.params
    if params.get("inplace"):  # (a write in place: the tangent's, out of place, never in another's)
        params = {**params, "inplace": False}
    return registry.apply(ctx.op, tuple(args), tuple(arrays), **params)


def bilinear_with(pair=(0, 1), bias=None):
    """The rule of an op linear in each of the inputs ``pair`` (the other held) plus, if
    ``bias`` is an index, linear in that input added: ``addmm(c, a, b)`` is
    ``bilinear_with((1, 2), 0)``. The tangent is the op run once per input with a tangent: that
    tangent in its place, the other input of the pair (or, for the bias, both of the pair) zero
    and the bias zero."""
    first, second = pair

    def rule(ctx, *tangents):
        inputs = ctx.inputs
        out = None
        for i, t in enumerate(tangents):
            if t is None:
                continue
            args = list(inputs)
            if bias is not None and i != bias and _is_float(args[bias]):
                args[bias] = _zeros_for(args[bias])
            if i == bias:  # (both of the pair zero: no 0 * inf of a product in the bias term)
                args[first] = _zeros_for(inputs[first])
                args[second] = _zeros_for(inputs[second])
            elif i not in pair:
                continue  # (a float input the op is not linear in: none of these ops has one)
            args[i] = _as_dtype(t, ctx.arrays[i])
            term = _run(ctx, tuple(args))
            out = term if out is None else out + term
        return out

    rule.__name__ = rule.__qualname__ = f"bilinear_with{pair, bias}"
    return rule


bilinear = bilinear_with()
bilinear.__doc__ = "``op(ta, b) + op(a, tb)``: an op linear in each of its two inputs."


def _expand_to(t: Tensor, shape) -> Tensor:
    return t if tuple(t._data.shape) == tuple(shape) else t.expand(tuple(shape))


def elementwise(ctx, *tangents):
    """The backward formula with the tangent as the output gradient, input by input (a diagonal
    Jacobian is its own transpose). A complex result's op is holomorphic (the complex ops that
    take this rule are): its backward multiplies by the conjugate derivative, so the tangent is
    the conjugate of the backward of the conjugate tangent."""
    shape = ctx.result._data.shape
    needs = ctx.needs_input_grad
    cx = ctx.result._data.dtype.kind == "c"
    out = None
    for i, t in enumerate(tangents):
        if t is None:
            continue
        ctx.needs_input_grad = tuple(j == i for j in range(len(needs)))
        t = _expand_to(_as_dtype(t, ctx.result), shape)
        g = ctx.op.backward(ctx, t.conj() if cx else t)[i]
        if g is None:
            continue
        if cx:
            g = g.conj()
        if tuple(g._data.shape) != tuple(shape):
            g = _expand_to(g, shape)
        out = g if out is None else out + g
    ctx.needs_input_grad = needs
    return out


symmetric = elementwise  # (a symmetric Jacobian is its own transpose too)


def zero(ctx, *tangents):
    """Piecewise-constant ops: a zero tangent."""
    return _zeros_for(ctx.result)


def _sum_to(g: Tensor, shape) -> Tensor:
    shape = tuple(shape)
    if tuple(g._data.shape) == shape:
        return g
    lead = g.ndim - len(shape)
    dims = tuple(range(lead)) + tuple(lead + i for i, n in enumerate(shape)
                                      if n == 1 and g._data.shape[lead + i] != 1)
    if dims:
        g = g.sum(dims, keepdim=True)
    return g.reshape(shape) if lead else g


def transposed_backward(ctx, *tangents):
    """``J t`` as the gradient, with respect to a zero output gradient ``g``, of ``<J^T g, t>``:
    the backward formula run with ``g`` recorded, then a backward pass through it."""
    result = ctx.result
    with grad_mode.enable_grad():
        g = zeros_like(result).requires_grad_(True)
        grads = ctx.op.backward(ctx, g)
        if isinstance(grads, Tensor):
            grads = (grads,)
        outs, seeds = [], []
        for x, gi, t in zip(ctx.inputs, grads, tangents):
            if t is None or gi is None or not gi.requires_grad:
                continue
            outs.append(_sum_to(gi, x._data.shape))
            seeds.append(_as_dtype(t, gi))
        if not outs:
            return None
        (jt,) = autograd_grad(outs, (g,), seeds, create_graph=True, allow_unused=True)
    return jt


def unsupported(aten_name: str):
    """The rule of an op PyTorch does not differentiate forward either: PyTorch's error."""
    def rule(ctx, *tangents):
        raise NotImplementedError(f"Trying to use forward AD with {aten_name} that does not "
                                  "support it.")

    rule.__name__ = rule.__qualname__ = f"unsupported({aten_name!r})"
    return rule


# --- rules written as PyTorch's forward formulas, where the backward's transpose differs from
# them at NaN (a NaN comparison is false: PyTorch's tangent is then the other operand's)
def _tangent_or_zeros(t, x):
    return _zeros_for(x) if t is None else t


def max_min(greater: bool):
    """``maximum`` / ``minimum``: ``other_t + w * (self_t - other_t)``, ``w`` 1/2 at a tie, else
    whether ``self`` wins (a NaN never does)."""
    def rule(ctx, ta, tb):
        from .elementwise import where

        a, b = ctx.inputs
        ta, tb = _tangent_or_zeros(ta, a), _tangent_or_zeros(tb, b)
        wins = (a > b) if greater else (a < b)
        weight = where(a == b, 0.5, wins.to(_torch_dtype(ctx.result._data.dtype)))
        return _expand_to(tb + weight * (ta - tb), ctx.result._data.shape)

    rule.__name__ = rule.__qualname__ = "max_min(greater=%s)" % greater
    return rule


def evenly_read(ctx, t):
    """``max()`` / ``min()`` of all elements: the mean of the tangents where the input equals
    the result (NaN where none does: a NaN result)."""
    mask = ctx.inputs[0] == ctx.result
    return (mask * (t / mask.sum())).sum()


def clamp(ctx, t, t_lo, t_hi):
    """``clamp`` with tensor bounds: the tangent of whichever the result is (``max``'s where the
    bounds cross; ``self``'s where a comparison with NaN decides nothing)."""
    from .elementwise import where

    a, lo, hi = ctx.inputs
    shape = ctx.result._data.shape
    out = _tangent_or_zeros(t, a)
    if lo is not None and hi is not None:
        t_lo, t_hi = _tangent_or_zeros(t_lo, lo), _tangent_or_zeros(t_hi, hi)
        out = where(lo > hi, t_hi, where(a < lo, t_lo, where(a > hi, t_hi, out)))
    elif lo is not None:
        out = where(a > lo, out, _tangent_or_zeros(t_lo, lo))
    elif hi is not None:
        out = where(a < hi, out, _tangent_or_zeros(t_hi, hi))
    return _expand_to(out, shape)


def prelu(ctx, t, t_w):
    """``prelu``: ``self_t`` where ``x`` is positive, else ``w * self_t + w_t * x`` (at NaN the
    second, as PyTorch's formula)."""
    from .elementwise import where

    x, w = ctx.inputs
    t, t_w = _tangent_or_zeros(t, x), _tangent_or_zeros(t_w, w)
    return _expand_to(where(x >= 0, t, w * t + t_w * x), ctx.result._data.shape)


def lerp(ctx, t_a, t_b, t_w):
    """``lerp(a, b, w)`` with a tensor weight: ``lerp(a_t, b_t, w) + w_t * (b - a)``, PyTorch's
    formula (the lerp of the tangents, not their weighted sum: so at an infinite weight)."""
    from .ternary import lerp as lerp_

    a, b, w = ctx.inputs
    t_a, t_b = _tangent_or_zeros(t_a, a), _tangent_or_zeros(t_b, b)
    out = lerp_(t_a, t_b, w)
    if t_w is not None:
        out = out + t_w * (b - a)
    return _expand_to(out, ctx.result._data.shape)


def quotient(ctx, t_a, t_b):
    """``div``: ``(self_t - other_t * result) / other``, PyTorch's formula (its rounding: the
    transposed backward's ``t_a / b - t_b * ((a / b) / b)`` rounds other steps, which float16
    and bfloat16 show); a missing tangent a zero one, which drops out."""
    b, result = ctx.inputs[1], ctx.result
    if t_b is None:
        out = t_a / b
    else:
        term = t_b * result
        out = (-term if t_a is None else t_a - term) / b
    return _expand_to(out, result._data.shape)


def finite_only(ctx, t):
    """``nan_to_num``: ``t * isfinite(x)``, PyTorch's formula (a product: a NaN tangent stays
    NaN where the input was not finite)."""
    return t * ctx.inputs[0].isfinite()


def cumprod(ctx, t):
    """``cumprod`` along ``dim``: ``cumsum(t / x) * result`` where no zero has been met; from a
    slice's first zero on, the running product with that zero's place taken by its tangent
    (and 0 after a second zero), as PyTorch's formula (NaN and infinities spread as there)."""
    from .elementwise import where

    x, result = ctx.inputs[0], ctx.result
    dim = ctx.params["dim"]
    plain = (t / x).cumsum(dim) * result
    zero = x == 0
    if not x._data.ndim:
        return where(zero, t, plain)
    first = zero.logical_and(zero.long().cumsum(dim) == 1)
    after = first.long().cumsum(dim) > 0
    return where(after, where(first, t, x).cumprod(dim), plain)
