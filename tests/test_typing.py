"""numgrad's annotations, as a type checker sees them (numgrad ships ``py.typed``).

mypy checks tests/typing/user_program.py, a small program written as a user would, with
``--disallow-any-expr``: an ``Any`` that numgrad's API lets into the user's expressions (a method
that type checkers cannot see, a function without a return type) is an error there, and the
program's ``reveal_type`` lines must show ``Tensor``, ``Size`` and the other types listed below.
"""
from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import numgrad

HERE = Path(__file__).resolve().parent
PROGRAM = HERE / "typing" / "user_program.py"
SRC = HERE.parent / "src" / "numgrad"

TENSOR = "numgrad.tensor.Tensor"
# What each reveal_type(...) line of the program must show, in order.
EXPECTED = {
    "x": TENSOR, "hidden": TENSOR, "out": TENSOR, "loss": TENSOR, "x + 1": TENSOR,
    "2 * x": TENSOR, "x.exp()": TENSOR, "x.exp_()": TENSOR, "x.sum()": TENSOR,
    "x.grad": f"{TENSOR} | None", "shape": "numgrad.tensor.Size", "rows": "int",
    "x.shape": "numgrad.tensor.Size", "mask": TENSOR, "picked": TENSOR, "total": TENSOR,
    "value": "int | float", "numgrad.ones_like(x)": TENSOR,
}


def test_py_typed_marker_is_in_the_package():
    assert (SRC / "py.typed").is_file()
    assert (Path(numgrad.__file__).parent / "py.typed").is_file()


def test_mypy_sees_tensor_types_and_no_any_in_a_user_program(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--disallow-any-expr", "--no-error-summary",
         "--cache-dir", str(tmp_path / "mypy-cache"), "--python-version",
         f"{sys.version_info.major}.{sys.version_info.minor}", str(PROGRAM)],
        capture_output=True, text=True, cwd=tmp_path, timeout=300)
    lines = result.stdout.splitlines()
    errors = [line for line in lines if ": error:" in line]
    assert not errors, "mypy reports errors in the user program:\n" + "\n".join(errors)
    assert result.returncode == 0, result.stdout + result.stderr
    source = PROGRAM.read_text().splitlines()
    revealed = {}
    for line in lines:
        m = re.match(r".*user_program\.py:(\d+): note: Revealed type is \"(.*)\"$", line)
        if m:
            expr = re.match(r"reveal_type\((.*)\)$", source[int(m.group(1)) - 1]).group(1)
            revealed[expr] = m.group(2)
    assert revealed == EXPECTED


def _class_names(file: str, name: str) -> set:
    """The names that the body of class ``name`` of ``file`` defines."""
    tree = ast.parse((SRC / file).read_text())
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name)
    names = set()
    for node in ast.walk(cls):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return names


def test_every_bound_method_is_declared_for_type_checkers():
    """numgrad/__init__.py binds the ops to Tensor at import; _tensor_methods.pyi declares each of
    them for type checkers (a stub of Tensor's base class while type checking). A method bound but
    not declared would be invisible to mypy."""
    import pickle

    pickle.dumps(numgrad.ones(1))  # (copyreg then caches __slotnames__ on the class, as after
    # any test that pickles a tensor: the check must not depend on the order tests run in)
    declared = _class_names("_tensor_methods.pyi", "_TensorMethods")
    own = _class_names("tensor.py", "Tensor")
    overrides = {"__torch_function__", "as_subclass", "_make_subclass"}  # (overrides._install)
    bound = {name for name in vars(numgrad.Tensor)
             if not (name.startswith("_") and not name.startswith("__"))}
    missing = sorted(bound - own - overrides - declared - set(vars(object))
                     - {"__dict__", "__module__", "__weakref__",
                        "__slotnames__"})  # (copyreg's cache, set once a Tensor is pickled)
    assert not missing, f"bound at import, not declared in _tensor_methods.pyi: {missing}"
    # and everything declared there is a real method of Tensor
    extra = sorted(n for n in declared if not n.startswith("__") and not hasattr(numgrad.Tensor, n))
    assert not extra


def test_the_stubs_method_lines_are_what_the_script_writes():
    """benchmarks/tensor_stub.py writes the stub's lines for the flagged methods (``@export(
    method=True)``): a method added, moved or dropped is a stub out of date until it is run."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "tensor_stub", HERE.parent / "benchmarks" / "tensor_stub.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    current = (SRC / "_tensor_methods.pyi").read_text()
    assert script.render(current) == current, "run: python benchmarks/tensor_stub.py"
    assert "    exp = _elementwise.exp\n" in current and "    stft = _spectral.stft\n" in current
