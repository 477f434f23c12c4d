"""Counts the imports of ``src/`` by where they stand: the function-local ones (whose nearest
enclosing scope is a function or lambda) and the ``noqa: E402`` marks (module-level imports below
code; ``noqa: F401,E402`` and the like count too). Imports inside a module-level ``try``/``if`` or
a class body are not function-local.

    python benchmarks/count_imports.py [--list] [--src PATH]

``--list`` prints each function-local import as ``path:line: statement``, most per file first.
"""
from __future__ import annotations

import argparse
import ast
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
_E402 = re.compile(r"noqa:[^#]*\bE402\b")


def function_local_imports(path: str) -> list[tuple[int, str]]:
    """(line, source) of each import in the file ``path`` whose nearest enclosing scope is a
    function (``def``, ``async def`` or ``lambda``)."""
    with open(path, encoding="utf-8") as f:
        source = f.read()
    tree = ast.parse(source, filename=path)
    lines = source.splitlines()
    found = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)) and in_function:
                found.append((child.lineno, lines[child.lineno - 1].strip()))
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                visit(child, True)
            elif isinstance(child, ast.ClassDef):
                visit(child, False)  # (a class body is its own scope, not a function's)
            else:
                visit(child, in_function)

    visit(tree, False)
    return found


def count(src: str) -> tuple[dict[str, list[tuple[int, str]]], int]:
    """The function-local imports by file and the number of ``noqa: E402`` marks under ``src``."""
    local, e402 = {}, 0
    for root, dirs, files in os.walk(src):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            if not name.endswith(".py"):
                continue
            path = os.path.join(root, name)
            found = function_local_imports(path)
            if found:
                local[os.path.relpath(path, src)] = found
            with open(path, encoding="utf-8") as f:
                e402 += sum(bool(_E402.search(line)) for line in f)
    return local, e402


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--list", action="store_true", help="print each function-local import")
    parser.add_argument("--src", default=os.path.join(HERE, os.pardir, "src"))
    args = parser.parse_args(argv)
    local, e402 = count(args.src)
    if args.list:
        for path, found in sorted(local.items(), key=lambda kv: (-len(kv[1]), kv[0])):
            for line, text in found:
                print(f"{path}:{line}: {text}")
    total = sum(len(found) for found in local.values())
    print(f"function-local imports: {total} in {len(local)} files; noqa: E402: {e402}")


if __name__ == "__main__":
    sys.exit(main())
