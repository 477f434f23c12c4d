"""``einsum``, as PyTorch builds it: a composite of the ops (so its ``grad_fn`` is what PyTorch
shows for the same equation, and its backward is theirs).

Each operand's repeated subscripts are taken as a diagonal, its dimensions are permuted (and
missing subscripts unsqueezed) to one layout: the output's subscripts, then the summed ones. One
operand is then summed over the rest (``SumBackward1``; a plain permutation is a
``PermuteBackward0`` view). Operands are combined left to right: subscripts that no later operand
has and only one side carries are summed first, a pair with subscripts to contract becomes one
``bmm`` (permuted and reshaped to (batch, left, sum) @ (batch, sum, right), the result viewed and
permuted back, PyTorch's ``sumproduct_pair``), a pair without becomes a broadcast ``mul``; the
summed subscripts (size 1 by then) are finally dropped by a reshape (``ViewBackward0``).
"""
from __future__ import annotations

import math

from ..tensor import Tensor
from ..creation import arange
from ._names import export

_ELLIPSIS = "..."


def _fail(message: str):
    raise RuntimeError(f"einsum(): {message}")


def _parse_term(term: str, start: int, allow_repeats: bool = True) -> list:
    """The subscripts of one term (letters, and ``_ELLIPSIS`` once), ``start`` its position in
    the equation (for PyTorch's error)."""
    labels, i = [], 0
    while i < len(term):
        c = term[i]
        if c == ".":
            if term[i:i + 3] != _ELLIPSIS or _ELLIPSIS in labels:
                _fail("found '.' for operand that is not part of any ellipsis"
                      if term[i:i + 3] != _ELLIPSIS else
                      "found more than one ellipsis for one operand")
            labels.append(_ELLIPSIS)
            i += 3
            continue
        if not c.isascii() or not c.isalpha():
            _fail(f"invalid subscript given at index {start + i} in the equation string, "
                  "subscripts must be in [a-zA-Z]")
        labels.append(c)
        i += 1
    return labels


def _parse(equation: str, operands):
    equation = equation.replace(" ", "")
    lhs, arrow, rhs = equation.partition("->")
    terms, starts, pos = lhs.split(","), [], 0
    for t in terms:
        starts.append(pos)
        pos += len(t) + 1
    if len(terms) > len(operands):
        _fail("fewer operands were provided than specified in the equation")
    if len(terms) < len(operands):
        _fail("more operands were provided than specified in the equation")
    inputs, ell_ndim = [], 0
    for k, (term, start, op) in enumerate(zip(terms, starts, operands)):
        labels = _parse_term(term, start)
        n_labels = len(labels) - (_ELLIPSIS in labels)
        ndim = op._data.ndim
        if _ELLIPSIS not in labels and n_labels != ndim:
            _fail(f"the number of subscripts in the equation ({n_labels}) does not match the "
                  f"number of dimensions ({ndim}) for operand {k} and no ellipsis was given")
        if _ELLIPSIS in labels and n_labels > ndim:
            _fail(f"the number of subscripts in the equation ({n_labels}) is more than the "
                  f"number of dimensions ({ndim}) for operand {k}")
        if _ELLIPSIS in labels:  # the ellipsis' dimensions as labels 0, 1, ... (right-aligned)
            e = labels.index(_ELLIPSIS)
            covered = ndim - n_labels
            ell_ndim = max(ell_ndim, covered)
            labels = labels[:e] + [("ell", covered, j) for j in range(covered)] + labels[e + 1:]
        inputs.append(labels)
    # ellipsis labels aligned to the right of the widest ellipsis
    inputs = [[l if not isinstance(l, tuple) else ell_ndim - l[1] + l[2] for l in labels]
              for labels in inputs]
    ell = list(range(ell_ndim))
    seen = [l for labels in inputs for l in labels]
    if arrow:
        out_terms = _parse_term(rhs, len(lhs) + 2)
        output = []
        for l in out_terms:
            if l == _ELLIPSIS:
                output += ell
                continue
            if l in output:
                _fail(f"output subscript {l} appears more than once in the output")
            if l not in seen:
                _fail(f"output subscript {l} does not appear in the equation for any input "
                      "operand")
            output.append(l)
    else:
        letters = [l for l in seen if isinstance(l, str)]
        output = ell + sorted(l for l in set(letters) if letters.count(l) == 1)
    return inputs, output


def _diagonal(x: Tensor, labels: list, k: int):
    """``x`` with each repeated subscript taken once (its diagonal, moved last), and its
    subscripts."""
    while True:
        repeated = next((l for l in labels if labels.count(l) > 1), None)
        if repeated is None:
            return x, labels
        i = labels.index(repeated)
        j = labels.index(repeated, i + 1)
        n, m = x._data.shape[i], x._data.shape[j]
        if n != m:
            _fail(f"subscript {repeated} is repeated for operand {k} but the sizes don't match, "
                  f"{m} != {n}")
        rest = [d for d in range(len(labels)) if d not in (i, j)]
        x = x.permute(tuple(rest + [i, j]))
        ar = arange(n, device=x.device)
        x = x[(Ellipsis, ar, ar)]
        labels = [labels[d] for d in rest] + [repeated]


def _sumproduct_pair(left: Tensor, right: Tensor, sum_dims: list) -> Tensor:
    """``(left * right).sum(sum_dims, keepdim=True)`` for two operands of one layout, as one bmm
    (PyTorch's sumproduct_pair)."""
    if not sum_dims:
        return left * right
    ls, rs = left._data.shape, right._data.shape
    nd = len(ls)
    lro = [d for d in range(nd) if d not in sum_dims and ls[d] != 1 and rs[d] != 1]
    lo = [d for d in range(nd) if d not in sum_dims and ls[d] != 1 and rs[d] == 1]
    ro = [d for d in range(nd) if d not in sum_dims and ls[d] == 1 and rs[d] != 1]
    ones = [d for d in range(nd) if d not in sum_dims and ls[d] == 1 and rs[d] == 1]
    size = lambda shape, dims: math.prod(shape[d] for d in dims)
    b, nl, nr, ns = size(ls, lro), size(ls, lo), size(rs, ro), size(ls, sum_dims)
    a = left.permute(tuple(lro + lo + sum_dims + ro + ones)).reshape(b, nl, ns)
    c = right.permute(tuple(lro + sum_dims + ro + lo + ones)).reshape(b, ns, nr)
    out = a.bmm(c)
    order = lro + lo + ro + sum_dims + ones
    out = out.view(*([ls[d] for d in lro + lo] + [rs[d] for d in ro] + [1] * (len(sum_dims)
                                                                             + len(ones))))
    return out.permute(tuple(order.index(d) for d in range(nd)))


@export
def einsum(equation: str, *operands) -> Tensor:
    """The sum of products of the operands' elements that ``equation`` (NumPy's subscripts:
    ``"ij,jk->ik"``, ``"bij,bjk->bik"``, ``"ii->i"``, ``"...ij,...jk->...ik"``, an implicit
    output...) describes."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if not operands:
        _fail("must provide at least one operand")
    inputs, output = _parse(equation, operands)
    summed = []
    for labels in inputs:
        for l in labels:
            if l not in output and l not in summed:
                summed.append(l)
    summed.sort(key=lambda l: (isinstance(l, str), str(l)))
    layout = output + summed
    sizes: dict = {}
    ops = []
    for k, (x, labels) in enumerate(zip(operands, inputs)):
        x, labels = _diagonal(x, labels, k)
        for l, n in zip(labels, x._data.shape):
            seen = sizes.get(l)
            if seen is not None and n != 1 and seen != 1 and n != seen:
                _fail(f"subscript {l} has size {n} for operand {k} which does not broadcast with "
                      f"previously seen size {seen}" if isinstance(l, str) else
                      "operands do not broadcast with remapped shapes (original->remapped)")
            if seen is None or seen == 1:
                sizes[l] = n
        for l in layout:
            if l not in labels:
                x = x.unsqueeze(-1)
                labels = labels + [l]
        ops.append(x.permute(tuple(labels.index(l) for l in layout)))
    n_out = len(output)
    if len(ops) == 1:
        result = ops[0]
        if summed:
            result = result.sum(tuple(range(n_out, len(layout))))
        return result
    last_use = {l: max(k for k, labels in enumerate(inputs) if l in labels) for l in summed}
    result = ops[0]
    for k in range(1, len(ops)):
        right = ops[k]
        done = [n_out + j for j, l in enumerate(summed) if last_use[l] <= k]
        ls, rs = result._data.shape, right._data.shape
        only_left = tuple(d for d in done if ls[d] != 1 and rs[d] == 1)
        only_right = tuple(d for d in done if rs[d] != 1 and ls[d] == 1)
        if only_left:
            result = result.sum(only_left, keepdim=True)
        if only_right:
            right = right.sum(only_right, keepdim=True)
        both = [d for d in done if ls[d] != 1 and rs[d] != 1]
        result = _sumproduct_pair(result, right, both)
    if summed:
        result = result.reshape(tuple(result._data.shape[:n_out]))
    return result
