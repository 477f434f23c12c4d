"""Every CUDA kernel compiles for real GPUs (compute capabilities 8.0 and 9.0), checked with no GPU.

The simulator suite (tests/test_cuda.py) runs kernels as Python and cannot tell whether they lower
for a GPU; ``numgrad.kernels.cuda.compile_check`` compiles each kernel of the signature catalogue
(``kernels/cuda/signatures.py``) to PTX with NVVM and links a cubin with nvJitLink, the toolchain
wheels of ``numba-cuda[cu12]``. The whole check runs in a background process started at
collection (tests/_background.py), so that it overlaps with the rest of the suite; the tests here
that need no compiling run in this process.
"""
import ast
import importlib
import importlib.util
import json
import pkgutil
from pathlib import Path

import numpy as np
import pytest

import _background
import numgrad



def _toolchain_missing() -> str:
    """Why the check cannot run here, or "" when NVVM and nvJitLink are found (the cu12 wheels of
    the compile-check extra, or a CUDA toolkit on the system)."""
    if importlib.util.find_spec("numba_cuda") is None or \
            importlib.util.find_spec("cuda.core") is None:
        return "numba-cuda is not installed"
    try:
        from cuda import pathfinder
    except ImportError:
        return "cuda.pathfinder is not installed"
    for lib in ("nvvm", "nvJitLink"):
        try:
            pathfinder.load_nvidia_dynamic_lib(lib)
        except Exception as e:  # (pathfinder's DynamicLibNotFoundError and its kin)
            return f"the CUDA toolchain's {lib} is not found ({type(e).__name__})"
    return ""


_MISSING = _toolchain_missing()
pytestmark = pytest.mark.skipif(
    bool(_MISSING),
    reason=f"{_MISSING}: install numgrad's compile-check extra (pip install \".[compile-check]\") "
           "for the no-GPU compile check")

PACKAGE = Path(numgrad.__file__).parent  # (installed or in the checkout: the one imported)


def start_background_run():
    return _background.start(
        "cuda-compile",
        ["-m", "numgrad.kernels.cuda.compile_check", "--json", "{folder}/results.json"],
        {"NUMBA_ENABLE_CUDASIM": "0"})


@pytest.fixture(scope="module")
def compile_results():
    from numgrad.kernels.cuda import compile_check

    run = start_background_run()
    text = run.wait(timeout=1500)
    path = run.folder / "results.json"
    if not path.exists():
        pytest.fail(f"the compile check did not report:\n{text[-8000:]}")
    return [compile_check.Result(**r) for r in json.loads(path.read_text())]


def test_every_kernel_compiles_to_ptx_and_a_cubin_for_sm80_and_sm90(compile_results, capsys):
    from numgrad.kernels.cuda import compile_check, signatures

    summary = compile_check.summary(compile_results)
    with capsys.disabled():  # shown in CI's output: the counts and each kernel's resources
        print("\n" + summary + "\n" + compile_check.table(compile_results))
    assert {r.cc for r in compile_results} == {"sm_80", "sm_90"}
    assert {r.kernel for r in compile_results} == {name for name, _, _ in signatures.catalogue()}
    failed = [f"{r.kernel} {r.signature} {r.cc}: {r.error}" for r in compile_results if r.error]
    assert not failed, "\n".join(failed)


def test_the_check_reports_a_kernel_that_does_not_lower_with_its_signature():
    """A kernel outside the package calling ``np.sqrt``, which numba-cuda 0.30.4 does not lower
    on the CUDA target (the cause of every unary op failing on GPUs before the formula table)."""
    from numba import cuda, types

    from numgrad.kernels.cuda import compile_check

    @cuda.jit
    def root(x, out):
        for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
            out[i] = np.sqrt(x[i])

    vector = types.Array(types.float32, 1, "C")
    results = compile_check.check([("outside.root", root, [(vector, vector)])], ccs=((9, 0),))
    assert len(results) == 1
    (result,) = results
    assert result.error.startswith("KeyError") and "sqrt" in result.error
    report = compile_check.summary(results)
    assert "0/1 kernels and 0/1 signatures" in report
    assert ("FAILED outside.root (array(float32, 1d, C), array(float32, 1d, C)) sm_90: "
            "KeyError: <ufunc 'sqrt'>") in report


def _cuda_modules():
    """Every module of numgrad.kernels.cuda but the templates, imported."""
    import numgrad.kernels.cuda as package

    names = [info.name for info in pkgutil.walk_packages(package.__path__, package.__name__ + ".")
             if ".templates" not in info.name]
    return [importlib.import_module(name) for name in names]


def _kernels_in(value):
    from numba.cuda.dispatcher import CUDADispatcher

    values = value.values() if isinstance(value, dict) else [value]
    return [v for v in values if isinstance(v, CUDADispatcher) and not v.targetoptions.get("device")]


def test_every_cuda_kernel_of_the_package_has_signatures_in_the_catalogue():
    """The catalogue names every kernel: those at module level, the factory-built ones (held in
    module dicts), every ``@cuda.jit`` kernel written anywhere in the package's source, and every
    kernel of each template; and each has at least one signature."""
    from numgrad.kernels.cuda import signatures

    catalogue = signatures.catalogue()
    catalogued = {id(kernel) for _, kernel, _ in catalogue}
    assert all(sigs for _, _, sigs in catalogue), [n for n, _, sigs in catalogue if not sigs]
    found = [k for module in _cuda_modules() for value in vars(module).values()
             for k in _kernels_in(value)]
    assert len(found) >= 30
    missing = [f"{k.py_func.__module__}.{k.py_func.__qualname__}" for k in found
               if id(k) not in catalogued]
    assert not missing, f"kernels missing from kernels/cuda/signatures.py: {missing}"

    # Source: each kernel definition (a function under a bare ``@cuda.jit``) outside the
    # templates is the code of a catalogued kernel.
    codes = {(Path(k.py_func.__code__.co_filename).resolve(), k.py_func.__code__.co_firstlineno)
             for _, k, _ in catalogue}
    written = []
    for path in sorted((PACKAGE / "kernels").rglob("*.py")):
        if "templates" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef) and any(
                    ast.unparse(d) == "cuda.jit" for d in node.decorator_list):
                first = min(d.lineno for d in node.decorator_list)
                written.append((path.resolve(), first, node.name))
    assert len(written) >= 25
    uncovered = [f"{p.name}:{line} {name}" for p, line, name in written
                 if (p, line) not in codes]
    assert not uncovered, f"@cuda.jit kernels missing from the catalogue: {uncovered}"

    # Templates: every kernel in each template has a signature pattern, and nothing else does.
    for template, patterns in signatures.TEMPLATES.items():
        device, _, family = template.partition("/")
        tree = ast.parse((PACKAGE / "kernels" / device / "templates" / f"{family}.py").read_text())
        kernels = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)
                   and any(ast.unparse(d) == "cuda.jit" for d in n.decorator_list)}
        assert kernels == set(patterns), (template, kernels, set(patterns))
    # (the line bodies' template: its two loops, one catalogued for each body of LINES)
    tree = ast.parse((PACKAGE / "kernels" / "cuda" / "templates" / "lines.py").read_text())
    assert {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)} == \
        {"each_k", "each_line_k"}
    assert {f"cuda/lines[cuda.lines:{body}].{signatures.LINE_KERNELS.get(body, 'each_line_k')}"
            for body in signatures.LINES} <= {name for name, _, _ in catalogue}
