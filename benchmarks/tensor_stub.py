"""Writes the ops' part of ``src/numgrad/_tensor_methods.pyi``, the type stub of the Tensor methods
that ``numgrad/__init__.py`` binds at import, from the ``@export(method=True)`` flags
(``ops/_names.py``): one line ``name = _family.name`` a method, the family being the one whose
function ``ops.METHODS`` binds (a later family's wins), then ``numgrad.random``'s and
``numgrad.creation``'s; a name that ``Tensor``'s own class body defines is left to it. The rest of
the stub (the operators, properties and casts that ``_bind_methods`` spells out after those, which
win over a flagged method of the same name: ``polygamma``) is kept as it is written, from the line
``STUB_TAIL`` on, and so is its head (the docstring), up to the line ``STUB_HEAD``.

    python benchmarks/tensor_stub.py           # rewrites the stub
    python benchmarks/tensor_stub.py --check   # exits 1 if the stub differs from what it gives

``tests/test_typing.py`` checks that the committed stub is what this gives.
"""
from __future__ import annotations

import argparse
import ast
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STUB = os.path.join(ROOT, "src", "numgrad", "_tensor_methods.pyi")
STUB_HEAD = "from . import creation as _creation, random as _random"
STUB_TAIL = "    # The operators: the same functions (``x + y`` is ``numgrad.add(x, y)``)."


def _own_names(tensor_py: str) -> set:
    """The names that ``class Tensor``'s body in ``tensor_py`` defines."""
    with open(tensor_py, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Tensor")
    names = set()
    for node in cls.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return names


def methods(written: set = frozenset()) -> tuple[dict, dict]:
    """(ops name -> family module's last dotted part, random/creation name -> module's), without
    the names of ``written`` or of Tensor's own body."""
    import numgrad
    from numgrad import ops
    from numgrad.ops import _names

    own = _own_names(os.path.join(os.path.dirname(numgrad.__file__), "tensor.py")) | written
    families: dict[str, str] = {}
    for family in ops.FAMILIES:  # (a later family's name wins, as in ops.METHODS)
        for name in _names.methods(family.__name__):
            families.pop(name, None)
            families[name] = family.__name__.rsplit(".", 1)[1]
    others = {name: module.__name__.rsplit(".", 1)[1]
              for module in (numgrad.random, numgrad.creation)
              for name in _names.methods(module.__name__)}
    return ({n: m for n, m in families.items() if n not in own and n not in others},
            {n: m for n, m in others.items() if n not in own})


def render(current: str) -> str:
    """The stub: ``current`` with its part from ``STUB_HEAD`` to ``STUB_TAIL`` written anew."""
    for line in (STUB_HEAD, STUB_TAIL):
        if "\n" + line + "\n" not in current:
            raise ValueError(f"{STUB}: no line {line!r}")
    head = current[:current.index("\n" + STUB_HEAD + "\n") + 1]
    tail = current[current.index(STUB_TAIL):]
    ops_methods, other_methods = methods(set(re.findall(r"^    def (\w+)\(", tail, re.M)))
    lines = [STUB_HEAD,
             "from .ops import (  # (as _names: some families share a method's name)"]
    lines += [f"    {m} as _{m}," for m in sorted(set(ops_methods.values()))]
    lines += [")", "", "from .tensor import Tensor", "",
              "_Number = builtins.int | builtins.float | builtins.bool", "", "",
              "class _TensorMethods:",
              "    # The ops families' methods (numgrad.ops.METHODS: a later family's name wins)."]
    lines += [f"    {n} = _{m}.{n}" for n, m in ops_methods.items()]
    lines.append("    # numgrad.random's and numgrad.creation's methods")
    lines += [f"    {n} = _{m}.{n}" for n, m in other_methods.items()]
    return head + "\n".join(lines) + "\n\n" + tail


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true",
                        help="exit 1 if the stub differs from what this gives; write nothing")
    args = parser.parse_args(argv)
    with open(STUB, encoding="utf-8") as f:
        current = f.read()
    wanted = render(current)
    if args.check:
        if wanted != current:
            print(f"{STUB} differs from what benchmarks/tensor_stub.py gives: run it")
            return 1
        return 0
    if wanted != current:
        with open(STUB, "w", encoding="utf-8") as f:
            f.write(wanted)
        print(f"wrote {STUB}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
