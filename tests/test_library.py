"""numgrad.library: users' kernels as ops (torch.library's API) and formulas as elementwise ops.

The newcomer's page, docs/custom_ops.md, is a program: its code blocks run here, in one
subprocess with Numba's CUDA simulator on, so its three ops (a formula, a row-wise kernel with
its backward, an in-place op) pass opcheck, gradcheck, numgrad.compile and the simulator as the
page shows. The rest checks what the page does not: fusion counted, the CUDA compile for real
GPUs, and PyTorch's errors.
"""
import importlib.util
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import numgrad
from numgrad import Tensor, library

ROOT = Path(__file__).parent.parent
PAGE = ROOT / "docs" / "custom_ops.md"


def _page_program() -> str:
    return "\n".join(re.findall(r"```python\n(.*?)```", PAGE.read_text(), re.S))


def _run(script: str, tmp_path, env: dict) -> subprocess.CompletedProcess:
    path = tmp_path / "program.py"  # (a file: Numba's cache=True needs one)
    path.write_text(script)
    return subprocess.run([sys.executable, str(path)], capture_output=True, text=True,
                          timeout=600, env={**os.environ, "NUMGRAD_QUIET": "1", **env})


@pytest.mark.skipif(importlib.util.find_spec("numba_cuda") is None,
                    reason="numba-cuda (the 'cuda' extra) is not installed")
def test_the_custom_ops_page_runs_eager_opcheck_compiled_and_in_the_cuda_simulator(tmp_path):
    script = _page_program() + "\nprint('CUDA SECTION RAN', numgrad.cuda.is_available())\n"
    done = _run(script, tmp_path, {"NUMBA_ENABLE_CUDASIM": "1"})
    assert done.returncode == 0, done.stderr[-4000:]
    assert "CUDA SECTION RAN True" in done.stdout



def test_the_custom_ops_notebook_is_the_page():
    """examples/custom_ops.ipynb runs the page's code, cell for cell (the page's test above runs
    it), after one cell that switches on the CUDA simulator where there is no GPU; committed
    without outputs."""
    nbformat = pytest.importorskip("nbformat")
    nb = nbformat.read(ROOT / "examples" / "custom_ops.ipynb", as_version=4)
    nbformat.validate(nb)
    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    assert all(cell.outputs == [] and cell.execution_count is None for cell in code)
    assert 'os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")' in code[0].source
    blocks = re.findall(r"```python\n(.*?)```", PAGE.read_text(), re.S)
    assert [cell.source.strip() for cell in code[1:]] == [block.strip() for block in blocks]

# ------------------------------------------------------------------ a formula, in this process
def _swish(x):
    return x / (type(x)(1) + math.exp(-x))


def _swish_grad(x):
    s = type(x)(1) / (type(x)(1) + math.exp(-x))
    return s * (type(x)(1) + x * (type(x)(1) - s))


SWISH = library.elementwise("test_library::swish", _swish, grad=_swish_grad)


def test_a_formula_matches_pytorch_and_passes_opcheck():
    torch = pytest.importorskip("torch")
    x = numgrad.tensor([-np.inf, -3.0, -0.0, 0.5, 20.0, np.nan], dtype=numgrad.float32)
    t = torch.tensor(x.numpy())
    np.testing.assert_allclose(numgrad.ops.test_library.swish(x).numpy(),
                               torch.nn.functional.silu(t).numpy(), rtol=1e-6, atol=1e-7)
    assert numgrad.ops.test_library.swish(numgrad.arange(3)).dtype == numgrad.float32
    empty = SWISH(numgrad.empty(0, 3)[:, ::2])
    assert empty.shape == (0, 2)
    assert library.opcheck(SWISH, (numgrad.randn(2, 3, requires_grad=True),)) == dict.fromkeys(
        library._TESTS, "SUCCESS")


def test_a_formula_fuses_into_one_numba_call_of_a_compiled_training_step():
    sys.path.insert(0, str(Path(__file__).parent))
    from test_compile import dispatches

    w = numgrad.linspace(-3, 3, 64, requires_grad=True)

    def step():
        (SWISH(w * 2.0) + 1.0).sum().backward()
        grad, w.grad = w.grad, None
        return grad

    compiled = numgrad.compile(step, fullgraph=True)
    for _ in range(3):
        np.testing.assert_allclose(compiled().numpy(), step().numpy(), rtol=1e-6)
    assert "replayed as a fused program" in numgrad.compiler.explain(compiled)
    assert dispatches(compiled) == {"numba": 1, "blas": 0, "registry": 0}


def test_a_formula_has_jvp_and_batching_rules():
    x = numgrad.randn(3, 4, dtype=numgrad.float64)
    np.testing.assert_array_equal(numgrad.func.vmap(SWISH)(x).numpy(), SWISH(x).numpy())
    _, tangent = numgrad.func.jvp(SWISH, (x,), (numgrad.ones_like(x),))
    xr = x.clone().requires_grad_()
    SWISH(xr).sum().backward()
    np.testing.assert_allclose(tangent.numpy(), xr.grad.numpy(), rtol=1e-12)


_COMPILE_CHECK = """
import math
from numgrad import library
from numgrad.kernels import codegen, formulas
from numgrad.kernels.cuda import compile_check, signatures


def swish(x, beta):
    return x / (type(x)(1) + math.exp(-beta * x))


library.elementwise("cc::swish", swish, grad=(lambda x, b: x, lambda x, b: b))
entries = []
for code, (row,) in formulas.OPEN.items():
    template = "cuda/unary" if formulas.is_unary(code) else "cuda/binary"
    module = codegen.load(template, row.cuda)
    for kernel, pattern in signatures.TEMPLATES[template].items():
        sigs = [pattern(signatures._BY_NAME[d], signatures._BY_NAME[d]) for d in row.dtypes]
        entries.append((f"{template}[{row.cuda}].{kernel}", getattr(module, kernel), sigs))
library.elementwise("cc::lerp", lambda a, b, w: a + w * (b - a))  # (three numbers: one loop)
loop = library._INTERNAL["cc::lerp#loop"].module("cuda").loop
A = signatures.A
entries.append(("nary[cc::lerp].loop", loop, [(A(t),) * 4 for t in (signatures.F32,
                                                                      signatures.F64)]))
results = compile_check.check(entries)
print(compile_check.summary(results))
assert results and not [r for r in results if r.error], [r for r in results if r.error]
"""


def test_a_formula_compiles_for_sm_80_and_sm_90_without_a_gpu(tmp_path):
    spec = importlib.util.spec_from_file_location("_tcc", Path(__file__).parent /
                                                  "test_cuda_compile.py")
    missing = ""
    if importlib.util.find_spec("numba_cuda") is None:
        missing = "numba-cuda is not installed"
    else:
        module = importlib.util.module_from_spec(spec)
        try:
            spec.loader.exec_module(module)
            missing = module._MISSING
        except Exception as error:  # (its collection needs the test helpers)
            missing = str(error)
    if missing:
        pytest.skip(missing)
    done = _run(_COMPILE_CHECK, tmp_path, {"NUMBA_ENABLE_CUDASIM": "0"})
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    assert "13/13 kernels and 26/26 signatures compiled" in done.stdout
    assert "sm_80, sm_90" in done.stdout


# ------------------------------------------------------------------ custom ops and their errors
@library.custom_op("test_library::double", mutates_args=())
def _double(x: np.ndarray) -> Tensor:
    return x * 2


@library.custom_op("test_library::bad_shape", mutates_args=())
def _bad_shape(x: np.ndarray) -> Tensor:
    return x[:1].copy()


@_bad_shape.register_fake
def _(x):
    return numgrad.empty_like(x)


def test_a_custom_op_registers_once_with_pytorchs_error():
    with pytest.raises(RuntimeError, match=re.escape(
            "Tried to register an operator (test_library::double(Tensor x) -> Tensor) with the "
            "same name and overload name multiple times. Each overload's schema should only be "
            "registered with a single call to def(). Duplicate registration: registered at ")):
        library.custom_op("test_library::double", lambda x: x, schema="(Tensor x) -> Tensor",
                          mutates_args=())
    with pytest.raises(RuntimeError, match="Tried to register an operator "
                                           r"\(test_library::swish\(Tensor x\) -> Tensor\)"):
        library.elementwise("test_library::swish", _swish)
    with pytest.raises(RuntimeError, match="Tried to register an operator"):
        library.Library("test_library", "FRAGMENT").define("double(Tensor x) -> Tensor")


def test_compiling_a_custom_op_without_a_fake_is_pytorchs_error():
    x = numgrad.ones(3)
    np.testing.assert_array_equal(numgrad.ops.test_library.double(x).numpy(), [2, 2, 2])
    with pytest.raises(RuntimeError, match=re.escape(
            "There was no fake impl registered for <CustomOpDef(test_library::double)>. This is "
            "necessary for torch.compile/export/fx tracing to work. Please use "
            "`double.register_fake` to add an fake impl.")):
        numgrad.compile(lambda t: _double(t) + 1, fullgraph=True)(x)


def test_a_kernel_returning_the_wrong_shape_is_pytorchs_error():
    message = ("When comparing the output of test_library.bad_shape.default on FakeTensor and "
               "concrete Tensors, found mismatched tensor metadata: Shapes numgrad.Size([1]) and "
               "numgrad.Size([3]) are not equal!")
    with pytest.raises(library.OpCheckError, match=re.escape(
            f"opcheck(op, ...): test_faketensor failed with {message}")):
        library.opcheck(_bad_shape, (numgrad.ones(3),))
    with pytest.raises(RuntimeError, match=re.escape(message)):
        numgrad.compile(lambda t: _bad_shape(t) + 1, fullgraph=True)(numgrad.ones(3))


def test_a_custom_op_in_a_compiled_step_is_one_opaque_call():
    sys.path.insert(0, str(Path(__file__).parent))
    from test_compile import dispatches

    library.register_fake("test_library::double", lambda x: numgrad.empty_like(x))
    x = numgrad.arange(4.0)
    compiled = numgrad.compile(lambda t: _double(t * 3.0) + 1.0, fullgraph=True)
    for _ in range(3):
        np.testing.assert_array_equal(compiled(x).numpy(), [1, 7, 13, 19])
    assert "replayed as a fused program" in numgrad.compiler.explain(compiled)
    counts = dispatches(compiled, x)
    assert counts["registry"] == 0 and counts["numba"] <= 2


def test_library_define_impl_and_a_vmap_rule():
    lib = library.Library("test_library_lib", "DEF")
    lib.define("rowsum(Tensor x) -> Tensor")
    lib.impl("rowsum", lambda x: x.sum(-1), "CPU")
    rowsum = numgrad.ops.test_library_lib.rowsum
    x = numgrad.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(rowsum(x).numpy(), [3, 12])
    seen = []

    @library.register_vmap("test_library_lib::rowsum")
    def _(info, in_dims, x):
        seen.append((info.batch_size, in_dims))
        return rowsum(x.movedim(in_dims[0], 0)), 0

    np.testing.assert_array_equal(numgrad.func.vmap(rowsum, in_dims=1)(x).numpy(), [3, 5, 7])
    assert [size for size, _ in seen] == [3]  # (numgrad batches batch-first: in_dims (0,))
    with pytest.raises(AttributeError, match="'_OpNamespace' 'test_library_lib' object has no "
                                             "attribute 'nope'"):
        numgrad.ops.test_library_lib.nope
    with pytest.raises(ValueError, match="Unsupported kind: XYZ"):
        library.Library("test_library_lib", "XYZ")


def test_a_formula_of_three_numbers_matches_pytorch_with_its_backward():
    torch = pytest.importorskip("torch")
    lerp = library.elementwise("test_library::lerp", lambda a, b, w: a + w * (b - a), grad=(
        lambda a, b, w: 1 - w, lambda a, b, w: w, lambda a, b, w: b - a))
    rng = np.random.default_rng(0)
    a, b, w = rng.standard_normal((3, 1)), rng.standard_normal(4), rng.random((3, 4))
    ours = [numgrad.tensor(v, requires_grad=True) for v in (a, b, w)]
    theirs = [torch.tensor(v, requires_grad=True) for v in (a, b, w)]
    out, expected = lerp(*ours), torch.lerp(*theirs)
    np.testing.assert_allclose(out.detach().numpy(), expected.detach().numpy(), rtol=1e-12)
    out.sum().backward()
    expected.sum().backward()
    for o, t in zip(ours, theirs):
        np.testing.assert_allclose(o.grad.numpy(), t.grad.numpy(), rtol=1e-12)
    assert lerp(numgrad.arange(3), numgrad.arange(3), 1).dtype == numgrad.float32
    compiled = numgrad.compile(lambda x: lerp(x * 2.0, x, 0.5) + 1.0, fullgraph=True)
    np.testing.assert_allclose(compiled(ours[1].detach()).numpy(), b * 1.5 + 1.0, rtol=1e-12)
