"""The one factory of the formula ops: every op that computes one formula of the formula table
(``kernels/formulas.py``), numgrad's own and a user's alike, is made by ``formula_op``.

``numgrad.library.elementwise(name, formula, grad=...)`` is a thin wrapper of this layer: it
declares the user's formula (``formulas.declare``, as numgrad's own formulas are declared), makes
the backward of its partial derivatives, and asks ``formula_op`` for the op. numgrad's own
elementwise ops come from the same call, one ``@formula_op(...)`` each in the module of their
concept (``ops/elementwise.py``, ``trigonometric.py`` ...): the decorated function is the op's
backward (PyTorch's formula of ``derivatives.yaml``, written with tensor ops so that it is
differentiable again, kept where it was chosen for accuracy or for NaN and inf), its name the
op's class name (``Exp``), and the op is registered where the decorator runs, so numgrad's
registry keeps its order.

An op's formula is named by ``code``: for numgrad's own, the name of its id in the kernel modules
(``"EXP"``, looked up on the kernel module the call runs on: the CPU's, CUDA's or the one
numgrad.compile's trace hands out); for a user's, its ``Open`` id. ``forward`` replaces the
single formula call where the op computes more (a user's formula of three or more numbers calls
its own loop).
"""
from __future__ import annotations

from typing import Callable

from . import _jvp
from .registry import REGISTRY, Op, register


MADE: list = []  # every op ``make`` made, numgrad's own and users', in the order made


class FormulaOp(Op):
    """An op that computes one formula of the table on its operands (what ``formula_op`` makes).
    ``code`` names the formula; ``arity`` is its number of operands."""

    jvp = _jvp.elementwise
    on_cuda = True
    code = ""
    arity = 1


class UnaryFormula(FormulaOp):
    """A formula of one operand, named by its id's name in the kernel modules."""

    @classmethod
    def forward(cls, K, a):
        return K.unary(getattr(K, cls.code), a)


class BinaryFormula(FormulaOp):
    """A formula of two operands, named by its id's name in the kernel modules."""

    arity = 2

    @classmethod
    def forward(cls, K, a, b):
        return K.binary(getattr(K, cls.code), a, b)


def _by_id(code, arity: int) -> Callable:
    """The forward of a formula known by its id (a user's ``Open`` id)."""
    if arity == 1:
        def forward(K, a):
            return K.unary(code, a)
    else:
        def forward(K, a, b):
            return K.binary(code, a, b)
    return staticmethod(forward)


def not_differentiable(opname: str) -> Callable:
    """The backward of a user's formula given no partial derivatives: it says so."""
    def backward(ctx, grad):
        raise RuntimeError(f"the derivative of {opname} is not implemented (give its partial "
                           "derivatives with grad=)")
    return backward


def make(name: str, node: str, code=None, *, arity: int = 1, backward: Callable | None = None,
         forward: Callable | None = None, base: type | None = None, own: bool = True,
         cls_name: str | None = None, module: str | None = None, doc: str | None = None,
         **attrs) -> type[Op]:
    """The op ``name`` (its node ``node``, PyTorch's ``ExpBackward0``) computing the formula
    ``code`` of ``arity`` operands: a string names numgrad's formula in the kernel modules
    (``"EXP"``), an int is a formula's id (a user's); ``forward(K, *arrays)`` computes it
    otherwise. ``backward(ctx, grad)`` gives the inputs' gradients (None: the base's).
    ``attrs`` are the op's other declarations
    (``save_inputs``, ``save_output``, ``samples``, ``jvp`` ...). ``base`` is the class it
    derives from (a family's shared declarations); ``own=False`` keeps it out of numgrad's
    registry (a user's op: the registry harness checks numgrad's ops). Returns the registered
    class, named ``cls_name`` in ``module``."""
    if arity != 1 and arity != 2 and forward is None:
        raise ValueError(f"a formula op of {arity} operands needs its forward")
    if base is None:
        base = FormulaOp if forward is not None or not isinstance(code, str) else \
            UnaryFormula if arity == 1 else BinaryFormula
    body = {"name": name, "node": node, "arity": arity, "__doc__": doc}
    if code is not None:
        body["code"] = code
    if forward is not None:
        body["forward"] = staticmethod(forward)
    elif not isinstance(code, str):
        body["forward"] = _by_id(code, arity)
    if backward is not None:
        body["backward"] = staticmethod(backward)
    body.update(attrs)
    if module is not None:
        body["__module__"] = module
    cls_name = cls_name or "_Formula"
    cls = type(cls_name, (base,), body)
    cls.__qualname__ = cls_name
    register(cls)
    MADE.append(cls)
    if not own:
        REGISTRY.pop(name, None)
    return cls


def formula_op(name: str, node: str, code=None, **declarations) -> Callable[[Callable], type]:
    """``make`` as a decorator of the op's backward ``(ctx, grad)``: the function's name is the
    op's class name and its module the op's."""
    def decorate(backward: Callable) -> type[Op]:
        return make(name, node, code, backward=backward, cls_name=backward.__name__,
                    module=backward.__module__, **declarations)
    return decorate
