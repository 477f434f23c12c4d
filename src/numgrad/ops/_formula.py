"""The one declaration of the elementwise ops: every op that computes formulas of the formula
table (``kernels/formulas.py``), numgrad's own and a user's alike, is made by ``elementwise``,
which is ``numgrad.library.elementwise`` (defined here, where ``import numgrad`` loads it, and
re-exported by ``numgrad.library``).

A user's call, ``elementwise("ns::name", formula, grad=...)``, declares the user's formula
(``formulas.declare``, as numgrad's own formulas are declared), the backward of its partial
derivatives, and makes the op (``numgrad.library``'s ``ElementwiseOp``), whose op classes come
from ``elementwise`` again. numgrad's own elementwise ops are one call each in the module of
their concept (``ops/elementwise.py``, ``trigonometric.py`` ...), written as ``@formula_op(name,
node, code, ...)`` on the op's backward or ``make(name, node, code, ...)``, two spellings of
``elementwise(name, code, node=node, ...)``: the decorated function is the op's backward
(PyTorch's formula of ``derivatives.yaml``, written with tensor ops so that it is differentiable
again, kept where it was chosen for accuracy or for NaN and inf), its name the op's class name
(``Exp``), and the op is registered where the call runs, so numgrad's registry keeps its order.

An op's formula is named by ``code``: for numgrad's own, the name of its id in the kernel modules
(``"EXP"``, looked up on the kernel module the call runs on: the CPU's, CUDA's or the one
numgrad.compile's trace hands out); for a user's, its ``Open`` id. ``forward`` replaces the
single formula call where the op computes more (a user's formula of three or more numbers calls
its own loop).
"""
from __future__ import annotations

import linecache
from typing import Callable

import numpy as np

from .. import _lazy, dispatch
from ..kernels import formulas
from . import _jvp
from .registry import REGISTRY, Op, register


MADE: list = []  # every op ``make`` made, numgrad's own and users', in the order made


class FormulaOp(Op):
    """An op that computes formulas of the table on its operands (what ``formula_op`` makes).
    ``code`` names its formula (``codes``: every formula, where it runs several); ``arity`` is its
    number of array operands."""

    jvp = _jvp.elementwise
    on_cuda = True
    code = ""
    codes: tuple = ()  # every formula it runs (its ``code``; an op made from a term: the term's)
    forward_source = ""  # (an op made from a term: the text of the forward written from it)
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


# ----------------------------------------------------------------- ops of several formulas
# An op that runs more than one formula (``clamp``: maximum, then minimum), or a formula chosen by
# a parameter (``div``'s rounding mode), declares its forward as a term of its operands, and
# ``make`` writes the forward from it: the function the op would have by hand, one ``K.binary``
# (``K.unary``, ``K.where``) a formula, each code looked up on the kernel module the call runs on,
# so eager, CUDA and numgrad.compile's trace see the calls they saw. Its text is the op's
# ``forward_source``.
class Term:
    """A term of a formula op's forward (``arg``, ``number``, ``call``, ``select``, ``by``)."""

    __slots__ = ()


class _Arg(Term):
    __slots__ = ("index", "optional")

    def __init__(self, index: int, optional: bool):
        self.index, self.optional = index, optional


class _Number(Term):
    __slots__ = ("value", "optional")

    def __init__(self, value, optional: bool):
        self.value, self.optional = value, optional


class _Call(Term):
    __slots__ = ("code", "operands")

    def __init__(self, code: str, operands: tuple):
        self.code, self.operands = code, operands


class _Select(Term):
    __slots__ = ("operands",)

    def __init__(self, operands: tuple):
        self.operands = operands


class _By(Term):
    __slots__ = ("key", "cases")

    def __init__(self, key, cases: dict):
        self.key, self.cases = key, cases


def arg(index: int, optional: bool = False) -> Term:
    """The op's array operand ``index``; ``optional``: one that may be None, where the formula
    it is the second operand of is skipped (``clamp``'s tensor bounds)."""
    return _Arg(index, optional)


def number(value, optional: bool = False) -> Term:
    """A number: the parameter ``value`` names (a function of parameters: its value), as an array
    of the dtype of the array operand its formula starts from. ``optional``: a parameter that may
    be None, where the formula is skipped (``clamp``'s bounds)."""
    return _Number(value, optional)


def call(code: str, *operands: Term) -> Term:
    """The formula ``code`` of the table on one or two operands (a comparison gives bools).
    Where the second operand is ``optional`` and None, the first operand."""
    return _Call(code, operands)


def select(condition: Term, input: Term, other: Term) -> Term:
    """``input`` where ``condition`` else ``other`` (``K.where``)."""
    return _Select((condition, input, other))


def by(key, cases: dict) -> Term:
    """The term ``cases[key]``: ``key`` names a parameter, or is a function of parameters."""
    return _By(key, cases)


def _walk(term: Term):
    """``term`` and the terms in it, in the order written."""
    yield term
    inner = term.cases.values() if isinstance(term, _By) else getattr(term, "operands", ())
    for t in inner:
        yield from _walk(t)


def codes(term: Term) -> tuple:
    """Every formula code ``term`` calls, once each, in the order written."""
    return tuple(dict.fromkeys(t.code for t in _walk(term) if isinstance(t, _Call)))


def _params_of(fn: Callable) -> tuple:
    return fn.__code__.co_varnames[:fn.__code__.co_argcount]


class _Writer:
    """Writes a term's forward as Python, a statement a line."""

    def __init__(self, term: Term):
        seen: set = set()
        # the numbers (not optional) and the calls the term uses more than once: made once
        self.shared = set()
        for t in _walk(term):
            if isinstance(t, _Call) or isinstance(t, _Number) and not t.optional:
                (self.shared if t in seen else seen).add(t)
        self.made: dict = {}
        self.lines: list = []
        self.params: list = []
        self.env: dict = {"_asarray": dispatch.number_array, "_bool": np.bool_}
        self.temps = 0

    def param(self, name: str) -> str:
        if name not in self.params:
            self.params.append(name)
        return name

    def function(self, fn: Callable) -> str:
        """A call of ``fn`` on the parameters its arguments name."""
        name = f"_f{len(self.env)}"
        self.env[name] = fn
        return f"{name}({', '.join(self.param(p) for p in _params_of(fn))})"

    def temp(self) -> str:
        self.temps += 1
        return f"t{self.temps}"

    @staticmethod
    def first(term: Term) -> _Arg:
        """The array operand a term's value starts from (its dtype is the numbers')."""
        while not isinstance(term, _Arg):
            term = (term.operands[1] if isinstance(term, _Select) else term.operands[0]) \
                if not isinstance(term, _By) else next(iter(term.cases.values()))
        return term

    def number(self, term: _Number, like: Term, indent: str) -> str:
        value = self.param(term.value) if isinstance(term.value, str) else \
            self.function(term.value) if callable(term.value) else repr(term.value)
        text = f"_asarray({value}, a{self.first(like).index}.dtype)"
        if term not in self.shared:
            return text
        if term not in self.made:  # (a number the term uses twice: made once)
            self.made[term] = t = self.temp()
            self.lines.append(f"{indent}{t} = {text}")
        return self.made[term]

    def write(self, term: Term, indent: str, like: Term | None = None) -> str:
        """Lines computing ``term`` (at ``indent``) and the expression of its value."""
        if isinstance(term, _Arg):
            return f"a{term.index}"
        if isinstance(term, _Number):
            return self.number(term, like, indent)
        if isinstance(term, _Select):
            return self.select(term, indent)
        if isinstance(term, _By):
            return self.by(term, indent)
        if term not in self.shared:
            return self.call(term, indent)
        if term not in self.made:  # (a call the term uses twice: computed once, first use)
            value = self.call(term, indent)
            self.made[term] = t = self.temp()
            self.lines.append(f"{indent}{t} = {value}")
        return self.made[term]

    def call(self, term: _Call, indent: str) -> str:
        first = self.write(term.operands[0], indent)
        if len(term.operands) == 1:
            return f"K.unary(K.{term.code}, {first})"
        other = term.operands[1]
        second = self.write(other, indent, like=term.operands[0])
        bools = ", _bool" if formulas.family(formulas.OP_CODES[term.code]) is \
            formulas.Compare else ""
        if not (isinstance(other, (_Arg, _Number)) and other.optional):
            return f"K.binary(K.{term.code}, {first}, {second}{bools})"
        # (an operand the caller left out, None: the formula is skipped)
        t = self.temp()
        given = second if isinstance(other, _Arg) else self.param(other.value)
        self.lines += [f"{indent}{t} = {first}", f"{indent}if {given} is not None:",
                       f"{indent}    {t} = K.binary(K.{term.code}, {t}, {second}{bools})"]
        return t

    def select(self, term: _Select, indent: str) -> str:
        c, x, y = term.operands
        cond = self.write(c, indent)
        xs = self.write(x, indent, like=y)
        ys = self.write(y, indent, like=x)
        return f"K.where({cond}, {xs}, {ys})"

    def by(self, term: _By, indent: str) -> str:
        t = self.temp()
        key = self.param(term.key) if isinstance(term.key, str) else self.function(term.key)
        cases = list(term.cases.items())
        made = self.made
        for i, (value, case) in enumerate(cases):
            self.made = dict(made)  # (what one case makes, the others do not see)
            head = "if" if i == 0 else "else" if i == len(cases) - 1 else "elif"
            self.lines.append(f"{indent}{head} {key} == {value!r}:" if head != "else" else
                              f"{indent}else:")
            self.lines.append(f"{indent}    {t} = {self.write(case, indent + '    ')}")
        self.made = made
        return t


def _forward_of(name: str, term: Term, arity: int) -> tuple[Callable, str]:
    """The forward ``term`` describes, and its text."""
    w = _Writer(term)
    result = w.write(term, "    ")
    body = w.lines + [f"    return {result}"]
    args = ", ".join(["K"] + [f"a{i}" for i in range(arity)])
    if w.params:
        args += ", *, " + ", ".join(w.params)
    source = f"def forward({args}):\n" + "\n".join(body) + "\n"
    filename = f"<numgrad formula op {name}>"
    namespace = dict(w.env)
    exec(compile(source, filename, "exec"), namespace)  # noqa: S102 (numgrad's own terms)
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    return namespace["forward"], source


def not_differentiable(opname: str) -> Callable:
    """The backward of a user's formula given no partial derivatives: it says so."""
    def backward(ctx, grad):
        raise RuntimeError(f"the derivative of {opname} is not implemented (give its partial "
                           "derivatives with grad=)")
    return backward


def elementwise(name: str, formula=None, *, grad=None, dtypes=("float32", "float64"),
                node: str | None = None, **declarations):
    """``numgrad.library.elementwise``: the one function that declares an elementwise op,
    numgrad's own and a user's alike (the factory of every formula op).

    A user's op: ``name`` is ``"ns::name"``, ``formula`` a scalar function of one or more numbers
    (compilable by Numba), ``grad`` its partial derivatives (formulas too) and ``dtypes`` the
    dtypes it takes; its formula enters the table (``formulas.declare``) and its op comes from
    this function again, kept out of numgrad's registry (``numgrad.library``'s
    ``ElementwiseOp``).

    numgrad's own op (one that names its ``node``, PyTorch's ``ExpBackward0``): ``formula`` names
    its formula of the table, by its name in the kernel modules (``"EXP"``) or its id (a user's
    ``Open`` id), or is a term of several formulas (``call``, ``select``, ``by`` ...) from which
    its forward is written (``forward_source``; ``codes`` lists its formulas); ``declarations``
    are the op's others: ``arity`` (its array operands, 1 where not given), ``backward(ctx,
    grad)`` (None: the base's), ``forward(K, *arrays)`` (where it computes more than one
    formula call), ``base`` (the class it derives from: a family's shared declarations),
    ``cls_name`` and ``module`` (its class's name and module), ``doc``, ``save_inputs``,
    ``save_output``, ``samples``, ``jvp`` .... A name without a namespace is registered in
    numgrad's registry (a user's ``"ns::name"`` is not: the registry harness checks numgrad's
    ops). Returns the op class."""
    if node is None:  # (a user's formula)
        if declarations:
            raise TypeError(f"elementwise() got an unexpected keyword argument "
                            f"'{next(iter(declarations))}'")
        return _lazy.module("library")._user_elementwise(name, formula, grad, dtypes)
    if grad is not None:
        raise TypeError("elementwise: an op that names its node gives backward=, not grad=")
    term = formula if isinstance(formula, Term) else declarations.pop("term", None)
    code = None if isinstance(formula, Term) else formula
    if term is not None and code is not None:
        raise ValueError(f"elementwise: {name} gives both a formula and a term")
    arity = declarations.pop("arity", 1)
    forward = declarations.pop("forward", None)
    backward = declarations.pop("backward", None)
    base = declarations.pop("base", None)
    cls_name = declarations.pop("cls_name", None)
    module = declarations.pop("module", None)
    doc = declarations.pop("doc", None)
    if arity != 1 and arity != 2 and forward is None and term is None:
        raise ValueError(f"a formula op of {arity} operands needs its forward")
    if base is None:
        base = FormulaOp if forward is not None or term is not None or \
            not isinstance(code, str) else UnaryFormula if arity == 1 else BinaryFormula
    body = {"name": name, "node": node, "arity": arity, "__doc__": doc}
    if code is not None:
        body["code"], body["codes"] = code, (code,)
    if term is not None:
        forward, body["forward_source"] = _forward_of(name, term, arity)
        body["codes"] = codes(term)
    if forward is not None:
        body["forward"] = staticmethod(forward)
    elif code is not None and not isinstance(code, str):
        body["forward"] = _by_id(code, arity)
    if backward is not None:
        body["backward"] = staticmethod(backward)
    body.update(declarations)
    if module is not None:
        body["__module__"] = module
    cls_name = cls_name or "_Formula"
    cls = type(cls_name, (base,), body)
    cls.__qualname__ = cls_name
    register(cls)
    MADE.append(cls)
    if "::" in name:  # (a user's op: out of numgrad's registry)
        REGISTRY.pop(name, None)
    return cls


def make(name: str, node: str, code=None, **declarations) -> type[Op]:
    """``elementwise(name, code, node=node, ...)``: numgrad's own op ``name`` (its node ``node``)
    computing the formula ``code`` (or the term ``term=``), as the op modules write it."""
    return elementwise(name, code, node=node, **declarations)


def formula_op(name: str, node: str, code=None, **declarations) -> Callable[[Callable], type]:
    """``elementwise`` as a decorator of the op's backward ``(ctx, grad)``: the function's name
    is the op's class name and its module the op's."""
    def decorate(backward: Callable) -> type[Op]:
        return elementwise(name, code, node=node, backward=backward, cls_name=backward.__name__,
                           module=backward.__module__, **declarations)
    return decorate
