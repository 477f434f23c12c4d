"""Which names each op gives, declared once beside its public function; every list derives from it.

``@export(method=True, out=True)`` above a family's function says what that function is:

- ``function`` (default True): ``numgrad.<name>`` (the name joins its module's ``__all__``; a
  module that is itself a namespace, ``numgrad/linalg.py``, declares its own names so);
- ``method``: ``Tensor.<name>`` (``ops.METHODS``, bound by ``numgrad/__init__.py``);
- ``out``: ``numgrad.<name>(..., out=t)`` (``_out.install`` wraps the public function); an
  ``Out(...)`` where its ``out=`` differs from the common rule (``Out``'s fields);
- ``aten``: ``numgrad.ops.<name>`` only (ATen's backward ops and the like, ``torch.ops.aten``'s
  names that are not ``torch.<name>``);
- ``inplace``: its in-place form ``<name>_`` (``numgrad.<name>_`` and ``Tensor.<name>_``;
  ``"method"``: the method only), which ``ops/inplace.py`` makes from the function;
- ``linalg``, ``functional``, ``special``: ``numgrad.linalg.<name>``,
  ``numgrad.nn.functional.<name>``, ``numgrad.special.<name>`` (True: under the declared name; a
  str: under that name). A value that is only a facade's (torch.linalg's
  form with its own ``out=``, ``export(_with_out(inv, "linalg_inv_ex"), function=False,
  linalg="inv")``) declares nothing of its module's; ``facade`` gives each facade its names.

A name bound by assignment is declared on its value, ``exp = export(_unary(Exp), "exp",
method=True, out=True, inplace=True)``, and a second name of the same function, with the same
flags, by ``multiply = alias(mul, "multiply")``. ``EXPORTS`` (module -> name -> ``Flags``, in
declaration order) is the one table: ``ops._load_families`` reads ``functions``/``methods``/
``aten_names`` from it (and each family's ``__all__`` is filled as it declares), ``_out.install``
reads ``out_names``, ``ops/inplace.py`` reads ``inplace_forms``, ``numgrad/__init__.py`` reads
``methods`` of ``random``/``creation``; ``FACADES`` (module -> (facade, name) -> value) is what
``numgrad/linalg.py``, ``nn/functional.py`` and ``special.py`` read through ``facade``. This
module imports nothing of numgrad's, and costs about 2 µs a declaration at import.
"""
from __future__ import annotations

import sys
from typing import Any, Callable, NamedTuple, TypeVar, overload

F = TypeVar("F")


class Out(NamedTuple):
    """How a function's ``out=`` differs from the common rule (``_out.with_out``: ``out`` of any
    dtype that can hold the result, which may also be an argument)."""
    same_dtype: bool | str = False  # out= of the result's dtype only (a str: PyTorch's message)
    several: bool = False  # several results: out= is a tuple of tensors
    no_overlap: bool = False  # out= may share no memory with an argument (assert_no_overlap)
    dtype_first: tuple[str, str] | None = None  # out='s dtype and PyTorch's message, checked
    # before the call (a function that draws random numbers leaves the generator as it was)
    any_dtype: bool = False  # the result cast to any dtype of out= (bernoulli's 0 and 1)


class Flags(NamedTuple):
    function: bool  # numgrad.<name>
    method: bool  # Tensor.<name>
    out: bool | Out  # numgrad.<name>(..., out=t)
    aten: bool  # numgrad.ops.<name> only
    inplace: bool | str  # <name>_ made by ops/inplace.py (True, or "method": Tensor's only)


EXPORTS: dict[str, dict[str, Flags]] = {}  # module name -> exported name -> flags
FACADES: dict[str, dict[tuple[str, str], Any]] = {}  # module -> (facade, name) -> value
_NAMESPACES: dict[str, dict] = {}  # module name -> the namespace that declared its EXPORTS


@overload
def export(fn: F, name: str | None = None, *, function: bool = True, method: bool = False,
           out: bool | Out = False, aten: bool = False, inplace: bool | str = False,
           linalg: bool | str = False, functional: bool | str = False,
           special: bool | str = False) -> F: ...


@overload
def export(fn: None = None, name: str | None = None, *, function: bool = True,
           method: bool = False, out: bool | Out = False, aten: bool = False,
           inplace: bool | str = False, linalg: bool | str = False,
           functional: bool | str = False,
           special: bool | str = False) -> Callable[[F], F]: ...


def export(fn: Any = None, name: str | None = None, *, function: bool = True,
           method: bool = False, out: bool | Out = False, aten: bool = False,
           inplace: bool | str = False, linalg: bool | str = False,
           functional: bool | str = False, special: bool | str = False) -> Any:
    """Declares ``fn`` as ``name`` (default ``fn.__name__``) of the calling module, with the given
    flags, and returns it unchanged; without ``fn``, a decorator that does so."""
    module = sys._getframe(1).f_globals  # (the family module's namespace: its body calls this)
    if inplace not in (False, True, "method"):
        raise ValueError(f"inplace={inplace!r}: True, False or 'method'")
    flags = Flags(function and not aten, method, out, aten, inplace)
    facades = [(facade, given) for facade, given in (
        ("linalg", linalg), ("functional", functional), ("special", special)) if given]

    def declare(f: Any) -> Any:
        own = name or f.__name__
        if any(flags):
            _declare(module, own, flags)
        for facade, given in facades:
            _declare_facade(module, facade, own if given is True else given, f)
        return f

    return declare if fn is None else declare(fn)


def alias(fn: F, name: str) -> F:
    """``fn`` under a second name of the calling module, with the flags ``fn`` was declared with
    there (``multiply = alias(mul, "multiply")``)."""
    module = sys._getframe(1).f_globals
    table = EXPORTS.get(module["__name__"], {})
    flags = next((f for n, f in table.items() if module.get(n) is fn), None)
    if flags is None:
        raise ValueError(f"alias {name!r}: {getattr(fn, '__name__', fn)!r} is not exported by "
                         f"{module['__name__']}")
    _declare(module, name, flags)
    return fn


def _tables(module: dict) -> str:
    """The calling module's name, its tables emptied where it runs anew."""
    key = module["__name__"]
    if _NAMESPACES.get(key) is not module:  # (the module's first run, or a rerun: a reload, or
        _NAMESPACES[key] = module  # an import retried after an error: it declares anew)
        EXPORTS[key] = {}
        FACADES[key] = {}
    return key


def _declare_facade(module: dict, facade: str, name: str, value: Any) -> None:
    table = FACADES[_tables(module)]
    if (facade, name) in table:
        raise ValueError(f"{module['__name__']} gives {facade}.{name} twice")
    table[facade, name] = value


def _declare(module: dict, name: str, flags: Flags) -> None:
    table = EXPORTS[_tables(module)]
    if name in table:
        raise ValueError(f"{module['__name__']} exports {name!r} twice")
    table[name] = flags
    if flags.function:
        module.setdefault("__all__", []).append(name)


def facade(name: str, modules: tuple) -> dict[str, Any]:
    """``numgrad.<name>``'s names given by ``modules`` (imported), in their order and each one's
    declaration order: name -> value. A name given twice is an error."""
    given: dict[str, Any] = {}
    for module in modules:
        for (kind, public), value in FACADES.get(module.__name__, {}).items():
            if kind == name:
                if public in given:
                    raise ValueError(f"{name}.{public} given by two modules")
                given[public] = value
    return given


def functions(module: str) -> list[str]:
    """The names ``module`` gives as ``numgrad.<name>`` (its ``__all__``)."""
    return [n for n, f in EXPORTS.get(module, {}).items() if f.function]


def methods(module: str) -> list[str]:
    """The names ``module`` gives as Tensor methods."""
    return [n for n, f in EXPORTS.get(module, {}).items() if f.method]


def aten_names(module: str) -> list[str]:
    """The names ``module`` gives as ``numgrad.ops.<name>`` only."""
    return [n for n, f in EXPORTS.get(module, {}).items() if f.aten]


def inplace_forms(module: str) -> list[tuple[str, bool]]:
    """The names of ``module`` flagged ``inplace``, each with whether its in-place form is a
    function (``numgrad.<name>_``) as well as a Tensor method."""
    return [(n, f.inplace is True) for n, f in EXPORTS.get(module, {}).items() if f.inplace]


def out_names() -> list[str]:
    """Every name declared so far that takes ``out=``."""
    return list(out_specs())


def out_specs() -> dict[str, Out]:
    """Every name declared so far that takes ``out=``, with its rule (``_out.install``)."""
    return {n: f.out if isinstance(f.out, Out) else Out()
            for table in EXPORTS.values() for n, f in table.items() if f.out}
