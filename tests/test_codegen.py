"""Kernels generated from the formula table (kernels/codegen.py): content-addressed source files
that Numba caches across processes, a first use that compiles only what it runs, and a cache
folder that heals, falls back when it cannot be written, and never runs a file it did not write."""
import os
import subprocess
import sys
from pathlib import Path

from numgrad.kernels import codegen

RUN = """
import os, sys
import numpy as np
import numgrad
from numgrad.kernels import codegen, formulas
from numgrad.kernels.cpu import elementwise as E
x = numgrad.tensor(np.linspace(-1, 1, 7, dtype=np.float32))
y = x.exp()
assert np.allclose(y.numpy(), np.exp(x.numpy()), rtol=1e-6)
kernel = E._kernels(formulas.Unary.EXP, np.dtype("float32"), True).map_1d
print("hits", sum(kernel.stats.cache_hits.values()), "misses", sum(kernel.stats.cache_misses.values()))
print("file", kernel.py_func.__code__.co_filename)
print("generated", sorted(m.rpartition(".")[2].rsplit("_", 1)[0] for m in sys.modules
                          if m.startswith("numgrad.kernels.generated.")))
"""


def _run(env_updates: dict) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "NUMGRAD_CACHE_DIR")}
    env.update(env_updates)
    done = subprocess.run([sys.executable, "-c", RUN], env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    result = {}
    for line in done.stdout.splitlines():
        key, _, value = line.partition(" ")
        result[key] = value
    result["stderr"] = done.stderr
    return result


def test_a_first_use_compiles_only_its_op_and_a_second_process_loads_it(tmp_path):
    env = {"NUMBA_CACHE_DIR": str(tmp_path / "cache")}
    first = _run(env)
    assert first["hits"].split()[0] == "0" and first["hits"].split()[2] == "1"
    # exp of a float32 tensor made the generated module of exp, and of no other op
    assert first["generated"] == "['cpu_unary_fast_exp']"
    folder = tmp_path / "cache" / "numgrad" / "generated"
    assert Path(first["file"]).parent == folder
    assert [p.name.rsplit("_", 1)[0] for p in folder.glob("*.py")] == ["cpu_unary_fast_exp"]
    assert (folder.stat().st_mode & 0o777) == 0o700
    second = _run(env)
    assert second["hits"] == "1 misses 0"  # loaded from the cache, not compiled
    assert second["file"] == first["file"]


def test_file_names_change_with_the_text_and_with_the_formula_sources(monkeypatch):
    text = codegen.source("cpu/unary", "scalar:neg")
    assert "from numgrad.kernels.scalar import neg as f" in text
    assert codegen.sources_digest("cpu")[:16] in text
    other = codegen.source("cpu/unary", "scalar:sqrt")
    assert "import sqrt as f" in other and other != text
    monkeypatch.setitem(codegen._state, "cpu", "0" * 64)  # as if a formula source changed
    assert codegen.source("cpu/unary", "scalar:neg") != text


def test_a_line_body_loop_names_the_body_operands_and_its_own_sources(monkeypatch):
    """The line bodies' template (``f(i, OPERANDS)``) is spelled with each body's parameters
    after the line's number, and its files are named after ``lines.py``'s digest: an edit of
    a line body renames them, an edit of an elementwise formula does not."""
    text = codegen.source("cpu/lines", "lines:mode_row")
    assert "def each_k(s, x, n, values, indices, count):" in text
    assert "f(i, s, x, n, values, indices)" in text and "OPERANDS" not in text
    assert codegen.sources_digest("cpu/lines")[:16] in text
    monkeypatch.setitem(codegen._state, "cpu", "0" * 64)
    assert codegen.source("cpu/lines", "lines:mode_row") == text
    monkeypatch.setitem(codegen._state, "cpu/lines", "0" * 64)  # as if lines.py changed
    assert codegen.source("cpu/lines", "lines:mode_row") != text


def test_a_damaged_or_planted_file_is_never_run_and_is_rewritten(tmp_path):
    env = {"NUMGRAD_CACHE_DIR": str(tmp_path / "kernels"), "NUMBA_CACHE_DIR": str(tmp_path / "nb")}
    first = _run(env)
    path = Path(first["file"])
    good = path.read_text()
    path.write_text("raise SystemExit('planted code ran')\n")  # what another user could write
    second = _run(env)  # (the planted text would have ended the process)
    assert path.read_text() == good
    assert second["hits"] == "1 misses 0"  # the machine code of the right text, from the cache
    path.write_text(good[: len(good) // 2])  # truncated
    assert _run(env)["file"] == first["file"]
    assert path.read_text() == good


def test_a_cache_folder_that_cannot_be_written_falls_back_with_one_warning(tmp_path):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")  # (root ignores permissions: a file where the folder should be)
    result = _run({"NUMGRAD_CACHE_DIR": str(blocker / "kernels"),
                   "NUMBA_CACHE_DIR": str(tmp_path / "nb")})
    assert "cannot write its kernel cache" in result["stderr"]
    assert result["stderr"].count("cannot write its kernel cache") == 1
    assert not Path(result["file"]).is_relative_to(blocker)


def test_the_templates_generate_what_they_hold_for_their_own_formula():
    """A template is the module it generates for the formula it imports (its marked line)."""
    for template, ref in (("cpu/unary", "scalar:neg"), ("cpu/binary", "scalar:add"),
                          ("cuda/unary", "scalar:neg"), ("cuda/binary", "scalar:add")):
        device, _, family = template.partition("/")
        path = Path(codegen.__file__).parent / device / "templates" / f"{family}.py"
        generated = codegen.source(template, ref)
        assert generated.split("\n", 1)[1] == path.read_text()


def test_the_first_compile_says_so_once_and_a_warm_cache_says_nothing(tmp_path):
    env = {"NUMBA_CACHE_DIR": str(tmp_path / "cache")}
    cold = _run(env)["stderr"]
    assert cold.count("numgrad: compiling kernels for their first use") == 1
    assert "python -m numgrad warmup" in cold and "NUMGRAD_QUIET=1" in cold
    assert "compiling" not in _run(env)["stderr"]
    quiet = _run({"NUMBA_CACHE_DIR": str(tmp_path / "other"), "NUMGRAD_QUIET": "1"})["stderr"]
    assert "compiling" not in quiet


STRICT = """
import warnings, numpy as np, numgrad
warnings.simplefilter("error", numgrad.KernelCompileWarning)  # (as pytest's filterwarnings=error)
try:
    print("result", float((numgrad.tensor(np.arange(4.0)).exp() * 2.0).sum()))
except numgrad.KernelCompileWarning:
    print("raised")
"""


def test_a_first_compile_warning_made_an_error_still_leaves_its_kernel_cached(tmp_path):
    """Under an "error" filter the first-compile warning is raised once the kernel is compiled
    and saved: each process then gets one kernel further, where it used to raise before the
    compilation, cache nothing and fail at the same call in every process."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("NUMBA_CACHE_DIR", "NUMGRAD_CACHE_DIR", "NUMGRAD_QUIET")}
    env.update(NUMBA_CACHE_DIR=str(tmp_path / "cache"), NUMGRAD_CACHE_DIR=str(tmp_path / "gen"))
    outputs = [subprocess.run([sys.executable, "-c", STRICT], env=env, capture_output=True,
                              text=True, timeout=300, check=True).stdout.strip()
               for _ in range(6)]
    assert outputs[0] == "raised"
    import numpy as np

    assert outputs[-1] == f"result {float(2 * np.exp(np.arange(4.0)).sum())!r}", outputs


def test_a_row_or_block_against_each_of_an_arrays_rows_takes_the_row_kernel(monkeypatch):
    """A bias (a row against each row) and a (T, C) block against each sample of a (B, T, C)
    batch take ``zip_rows``, whose first compilation is a fifth of ``zip_strided``'s (a first
    program's bias), on one thread and shared among threads, with NumPy's values; a broadcast
    along another dimension keeps the general kernel."""
    import numpy as np
    from numgrad.kernels.cpu import elementwise as E
    from numgrad.kernels.formulas import OP_CODES

    rng = np.random.default_rng(0)
    E.binary(OP_CODES["ADD"], np.ones((2, 3), np.float32), np.ones(3, np.float32))
    kernels = E._LOADED[OP_CODES["ADD"], np.dtype(np.float32), False]
    general = []
    monkeypatch.setattr(kernels, "zip_strided", lambda *a: general.append(a))
    monkeypatch.setattr(E, "PARALLEL_THRESHOLD", 64)
    for a_shape, b_shape in [((5, 7), (7,)), ((4, 6, 8), (6, 8)), ((4, 6, 8), (1, 6, 8)),
                             ((2, 3, 4), (1, 1, 4)), ((40, 9), (9,))]:  # (the last: threads)
        a, b = (rng.normal(size=s).astype(np.float32) for s in (a_shape, b_shape))
        np.testing.assert_array_equal(E.binary(OP_CODES["ADD"], a, b), a + b)
    assert general == []
    E.binary(OP_CODES["ADD"], np.ones((2, 3, 4), np.float32), np.ones((3, 1), np.float32))
    assert len(general) == 1
