"""Kernel caching in a read-only install, the warmup command, and concurrent use from threads."""
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
import torch

import numgrad
from numgrad.kernels.cpu.elementwise import PARALLEL_THRESHOLD

PROBE = """
import numpy as np
import numgrad
from numgrad.kernels import formulas
from numgrad.kernels.cpu import elementwise as E
x = numgrad.ones(2, 2, requires_grad=True)
out = ((x + 2) * (x + 2) * 3).mean()
out.backward()
assert float(x.grad.sum()) == 18.0
kernel = E._kernels(formulas.Binary.ADD, np.dtype("float32")).zip_1d_scalar
stats = kernel.stats
print("hits", sum(stats.cache_hits.values()), "misses", sum(stats.cache_misses.values()))
print("path", kernel._cache._cache_path)
"""


def _read_only_copy(tmp_path: Path) -> Path:
    """numgrad copied into a folder where no kernel cache can be written next to the source:
    without write permission, and (since root ignores permissions) with a file where each
    ``__pycache__`` folder would go."""
    site = tmp_path / "site"
    shutil.copytree(Path(numgrad.__file__).parent, site / "numgrad",
                    ignore=shutil.ignore_patterns("__pycache__"))
    for folder in (site / "numgrad").rglob("*"):
        if folder.is_dir():
            (folder / "__pycache__").write_text("not a folder")
    (site / "numgrad" / "__pycache__").write_text("not a folder")
    for path in sorted(site.rglob("*"), reverse=True):
        path.chmod(path.stat().st_mode & ~0o222)
    return site


def _probe(site: Path, cache_home: Path) -> dict:
    # (the user cache folder the install falls back to: neither cache variable of the caller)
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "NUMGRAD_CACHE_DIR")}
    env.update(PYTHONPATH=str(site), XDG_CACHE_HOME=str(cache_home), HOME=str(cache_home))
    out = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True,
                         timeout=300, check=True).stdout.split()
    return {"hits": int(out[1]), "misses": int(out[3]), "path": out[5]}


def test_read_only_install_caches_in_the_user_cache_folder(tmp_path):
    site = _read_only_copy(tmp_path)
    cache_home = tmp_path / "cache"
    first = _probe(site, cache_home)
    second = _probe(site, cache_home)
    assert Path(first["path"]).is_relative_to(cache_home)
    assert first["misses"] > 0  # compiled, and written to the user cache
    assert list((cache_home / "numgrad" / "kernels").rglob("*.nbi"))  # (numgrad's folder)
    assert second["misses"] == 0 and second["hits"] > 0  # loaded, not compiled again
    assert not list(site.rglob("*.nbi"))


SCIPY_PROBE = """
import importlib.util, sys
import numpy as np
import numgrad
from numba import njit
x = numgrad.ones(2, 2, requires_grad=True)
((x + 2) * (x + 2) * 3).mean().backward()
print("grad", float(x.grad.sum()))
print("linalg_imported", "scipy.linalg" in sys.modules)
print("arraymath_imported", "numba.np.arraymath" in sys.modules)
print("ma_imported", "numpy.ma" in sys.modules)
from numba.np import arraymath, linalg
print("have_blas", arraymath._HAVE_BLAS, importlib.util.find_spec("scipy") is not None)
print("ensure_blas_restored", arraymath.ensure_blas is linalg.ensure_blas)
print("user_dot", njit(lambda a: np.dot(a, a))(np.arange(3.0)))
from numba.core.errors import NumbaTypeError
try:
    njit(lambda a: a.sum())(np.ma.array([1.0, 2.0]))
except NumbaTypeError as e:
    print("masked_refused", str(e).split()[-1])
"""


def test_start_up_skips_scipy_linalg_and_leaves_numba_blas_working(tmp_path):
    """A fresh process never imports scipy.linalg for numgrad (0.3 s, see kernels/cpu/__init__.py):
    with an empty cache Numba compiles the kernels with its BLAS flag set without importing it;
    with a warm cache the kernels load without Numba's full target set-up, so not even
    numba.np.arraymath is imported. Either way Numba's flag is what Numba itself would set, and a
    user's own njit np.dot still compiles and works afterwards. Typing the arrays does not import
    numpy.ma either (``_cache._typeof_ndarray``), and Numba still refuses a MaskedArray."""
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"))
    results = []
    for _ in ("cold", "warm"):
        run = subprocess.run([sys.executable, "-c", SCIPY_PROBE], capture_output=True, text=True,
                             timeout=300, check=True, env=env)
        results.append({line.split()[0]: line.split()[1:] for line in run.stdout.splitlines()})
    for result in results:
        assert result["grad"] == ["18.0"]
        assert result["linalg_imported"] == ["False"]
        have_blas, scipy_installed = result["have_blas"]
        assert have_blas == scipy_installed
        assert result["ensure_blas_restored"] == ["True"]
        assert result["user_dot"] == ["5.0"]
        assert result["masked_refused"] == ["numpy.ma.MaskedArray."]
    assert results[1]["ma_imported"] == ["False"]
    assert results[0]["arraymath_imported"] == ["True"]  # compiled: Numba's target was set up
    assert results[1]["arraymath_imported"] == ["False"]  # loaded: it was not


WARM_PROBE = """
import sys
import numpy as np
import numgrad
from numba import njit
from numgrad import _warmup
from numgrad.kernels.cpu.elementwise import PARALLEL_THRESHOLD

_warmup.warmup(names=sys.argv[1:])
kernels = _warmup.kernels()
print("misses", sum(sum(k.stats.cache_misses.values()) for k in kernels))
print("hits", sum(sum(k.stats.cache_hits.values()) for k in kernels))
print("signatures", sum(len(k.signatures) for k in kernels))
print("arraymath_imported", "numba.np.arraymath" in sys.modules)
data = np.random.default_rng(0).standard_normal(PARALLEL_THRESHOLD + 1000)
x = numgrad.tensor(data, requires_grad=True)
(numgrad.tanh(x * 1.5 + 0.5) * numgrad.sigmoid(x)).sum().backward()
t, s = np.tanh(data * 1.5 + 0.5), 1 / (1 + np.exp(-data))
want = 1.5 * (1 - t * t) * s + t * s * (1 - s)
print("parallel_grad_error", float(np.abs(x.grad.numpy() - want).max()))
print("user_kernel", njit(lambda a: np.dot(a, a) + a.sum())(np.arange(3.0)))
"""


# A few ops of the default work and its first programs: the whole default plan takes ~150 s on two
# cores; what it holds is checked by test_warmup_leaves_out_only_the_rare_families_unless_all.
WARM_ITEMS = ["add", "mul", "tanh", "sigmoid", "sum", "mm", "programs"]


def test_warmup_command_compiles_and_reports_the_cache(tmp_path):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"),
               NUMGRAD_CACHE_DIR=str(tmp_path / "generated"))
    run = subprocess.run([sys.executable, "-m", "numgrad", "warmup", "--jobs", "2", *WARM_ITEMS],
                         env=env, capture_output=True, text=True, timeout=1800, check=True)
    out = run.stdout
    assert "kernel signatures" in out
    assert "compiling kernels (2 processes)" in run.stdout + run.stderr  # (tqdm: on stderr)
    assert "left to compile on first use" not in out  # (the items named are all the work)
    assert str(tmp_path / "cache") in out
    assert list((tmp_path / "cache").rglob("*.nbi"))
    # A second process with that cache loads every kernel (the lighter way numgrad loads them,
    # see kernels/cpu/__init__.py), compiles none, and the loaded kernels, the parallel ones
    # included, and a user's own Numba function compiled afterwards all work.
    probe = subprocess.run([sys.executable, "-c", WARM_PROBE, *WARM_ITEMS], env=env,
                           capture_output=True, text=True, timeout=1800, check=True).stdout
    result = {line.split()[0]: line.split()[1] for line in probe.splitlines() if line[:1].isalpha()}
    assert result["misses"] == "0"
    assert result["hits"] == result["signatures"] and int(result["hits"]) > 0
    assert result["arraymath_imported"] == "False"
    assert float(result["parallel_grad_error"]) < 1e-12
    assert result["user_kernel"] == "8.0"



def test_warmup_leaves_out_only_the_rare_families_unless_all(capsys):
    from numgrad import _warmup
    from numgrad.ops import REGISTRY

    def names(items):
        return [name for item in items for name in item]

    default, everything = names(_warmup.plan()), names(_warmup.plan(everything=True))
    # --all: every registered op once, and the extra items (large arrays, first programs)
    assert len(everything) == len(set(everything))
    assert sorted(n for n in everything if n in REGISTRY) == sorted(REGISTRY)
    assert {"large:float32", "large:float64", "programs"} <= set(everything)
    # the default: the same work, in the same order, less the rare families' ops and items
    assert default == [n for n in everything if _warmup.rare(n) is None]
    left_out = set(everything) - set(default)
    assert {"avg_pool3d", "upsample_bilinear2d", "linalg_svd", "col2im", "cdist", "median",
            "large:float64"} <= left_out
    # ... and never what a first program uses
    first_programs = {"add", "mul", "div", "exp", "log", "pow", "tanh", "sigmoid", "relu", "gelu",
                      "silu", "leaky_relu", "clamp", "where", "eq", "sum", "mean", "amax",
                      "max_dim", "var", "mm", "addmm", "bmm", "softmax", "log_softmax",
                      "nll_loss", "mse_loss", "binary_cross_entropy_with_logits", "index",
                      "index_put", "index_select", "gather", "convolution",
                      "convolution_backward_input", "convolution_backward_weight",
                      "max_pool2d_with_indices", "avg_pool2d", "adaptive_avg_pool2d",
                      "native_batch_norm", "native_group_norm", "cat", "large:float32",
                      "programs"}
    assert first_programs <= set(default)
    assert _warmup.main(["--help"]) == 0
    assert "--all" in capsys.readouterr().out
    assert _warmup.main(["--jobs"]) == 2  # (argparse says what is wrong)
    assert _warmup.main(["add", "conv2d"]) == 2  # (PyTorch's name; the registry's: convolution)
    assert "unknown warmup item(s): conv2d" in capsys.readouterr().err
    # NAME ...: those items alone, in that order, once each, rare or not
    assert _warmup.plan(names=["mm", "avg_pool3d", "mm", "programs"]) == [
        ("mm",), ("avg_pool3d",), ("programs",)]

def _work(seed: int, size: int):
    rng = np.random.default_rng(seed)
    data = rng.standard_normal(size).astype(np.float32)
    ours = numgrad.tensor(data, requires_grad=True)
    (numgrad.tanh(ours * 1.5 + 0.5) * numgrad.sigmoid(ours)).sum().backward()
    theirs = torch.tensor(data, requires_grad=True)
    (torch.tanh(theirs * 1.5 + 0.5) * torch.sigmoid(theirs)).sum().backward()
    return ours.grad.numpy(), theirs.grad.numpy()


@pytest.mark.parametrize("size", [1_000, PARALLEL_THRESHOLD + 1_000])  # serial and parallel kernels
def test_eight_threads_forward_and_backward_at_once(size):
    results, errors = {}, []
    barrier = threading.Barrier(8, timeout=60)

    def run(i):
        try:
            barrier.wait()
            for _ in range(3):
                results[i] = _work(i, size)
        except Exception as exc:  # collected and re-raised in the main thread
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors, errors
    assert len(results) == 8
    for ours, theirs in results.values():
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)


THREADS_PROBE = """
import numpy as np
import numgrad
from numba.np.ufunc import parallel
from numgrad.kernels.cpu import _workers
from numgrad.kernels.cpu.elementwise import PARALLEL_THRESHOLD

n = PARALLEL_THRESHOLD
x = numgrad.tensor(np.linspace(-2, 2, n, dtype=np.float32), requires_grad=True)
w = numgrad.tensor(np.linspace(-1, 1, 64 * 64, dtype=np.float32).reshape(64, 64),
                   requires_grad=True)

def step(x, w):  # large elementwise work, a sum, a log_softmax and a matrix product
    h = numgrad.tanh(x * 1.5 + 0.5) * numgrad.sigmoid(x)
    z = h.reshape(-1, 64) @ w
    return numgrad.nn.functional.log_softmax(z, -1).sum() + h.sum()

eager = step(x, w)
eager.backward()
grads = x.grad.clone(), w.grad.clone()
x.grad = w.grad = None
compiled = numgrad.compile(step)
for _ in range(3):
    x.grad = w.grad = None
    out = compiled(x, w)
    out.backward()
print("same", bool(out.item() == eager.item()), bool(numgrad.equal(x.grad, grads[0])),
      bool(numgrad.equal(w.grad, grads[1])))
print("pool", _workers._pool is not None)
print("numba_threads", parallel._is_initialized)

def elementwise(x):  # fused loops only: they split over Numba's threads
    return numgrad.tanh(x * 1.5 + 0.5) * numgrad.sigmoid(x)

fused = numgrad.compile(elementwise)
results = [fused(x.detach()) for _ in range(3)]
print("fused_same", all(bool(numgrad.equal(r, elementwise(x.detach()))) for r in results))
print("numba_threads_after", parallel._is_initialized)
"""


def test_large_kernels_and_blas_steps_never_start_numbas_threads():
    # numgrad's large kernels share their work among its own worker threads, and a compiled
    # step that multiplies matrices keeps its fused loops on one thread: OpenMP's threads
    # (Numba's default layer) spin after each parallel region and took BLAS's core on 2 cores.
    env = dict(os.environ, NUMGRAD_QUIET="1", NUMGRAD_BUSY_LOAD="inf")
    out = subprocess.run([sys.executable, "-c", THREADS_PROBE], env=env, capture_output=True,
                         text=True, timeout=900, check=True).stdout
    result = {line.split()[0]: line.split()[1:] for line in out.splitlines()}
    assert result["same"] == ["True", "True", "True"]
    assert result["pool"] == ["True"]  # (the work was shared: numgrad's threads started)
    assert result["numba_threads"] == ["False"]
    assert result["fused_same"] == ["True"]
    assert result["numba_threads_after"] == ["True"]  # (a program of fused loops only did split)


BLAS_WAIT_PROBE = """
import os
import numpy as np
import numgrad
from numgrad import _threads

a = np.random.default_rng(0).standard_normal((400, 300)).astype(np.float32)
before = a @ a.T  # (OpenBLAS's threads started, spinning when idle)
print("env_before", os.environ.get("OPENBLAS_THREAD_TIMEOUT"))
print("done", numgrad.set_runtime_defaults(blas_wait="passive"))
print("env_after", os.environ.get("OPENBLAS_THREAD_TIMEOUT"))
library = _threads._blas_library
able = all(hasattr(library, name) for name in
           ("openblas_read_env", "blas_thread_shutdown_", "openblas_thread_timeout"))
print("able", able)
print("timeout", library.openblas_thread_timeout() if able else None)
print("same", bool(np.array_equal(a @ a.T, before)))  # (threads started again: same product)
try:
    numgrad.set_runtime_defaults(blas_wait="spin")
except ValueError as error:
    print("refused", "blas_wait must be 'passive'" in str(error))
"""


def test_blas_passive_wait_is_opt_in_and_keeps_products():
    # OpenBLAS's idle threads spin for up to 2**28 cycles after a threaded product and took the
    # core numgrad's own worker threads needed; set_runtime_defaults(blas_wait="passive") makes
    # them sleep at once (the process's environment is changed only when asked).
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_THREAD_TIMEOUT"}
    out = subprocess.run([sys.executable, "-c", BLAS_WAIT_PROBE], env=env, capture_output=True,
                         text=True, timeout=300, check=True).stdout
    result = {line.split()[0]: line.split(None, 1)[1] for line in out.splitlines()}
    assert result["env_before"] == "None"
    if result["able"] == "True":  # (NumPy's OpenBLAS, as its wheels ship it)
        assert result["done"] == "{'blas_wait': True}"
        assert result["env_after"] == "4" and result["timeout"] == "4"
    else:  # (another BLAS: nothing changed, and it says so)
        assert result["done"] == "{'blas_wait': False}" and result["env_after"] == "None"
    assert result["same"] == "True"
    assert result["refused"] == "True"


PRODUCTS_PROBE = """
import os
import time
import numpy as np
import numgrad
from numgrad.kernels.cpu import _workers, linalg

def cpu_seconds(skip):  # (user + system time of this process's threads not in skip)
    total = 0
    for tid in os.listdir("/proc/self/task"):
        if int(tid) in skip:
            continue
        try:
            with open(f"/proc/self/task/{tid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")

rng = np.random.default_rng(0)
a = numgrad.tensor(rng.standard_normal((256, 384)).astype(np.float32), requires_grad=True)
w = numgrad.tensor(rng.standard_normal((384, 320)).astype(np.float32), requires_grad=True)

def step(a, w):  # products of 31M and 39M multiply-adds, forward and backward
    return numgrad.tanh(a @ w).square().sum()

numgrad.manual_seed(0)
lstm = numgrad.nn.LSTM(32, 64)  # (its weight gradient: a product of 1.3M multiply-adds)
seq = numgrad.tensor(rng.standard_normal((10, 8, 32)).astype(np.float32))

def layer():
    lstm(seq)[0].sum().backward()

step(a, w).backward()  # (kernels compiled, the worker threads started)
layer()
pool = {h.thread.native_id for h in _workers._pool} | {__import__("threading").get_native_id()}
others = cpu_seconds(pool)
for _ in range(10):
    a.grad = w.grad = None
    eager = step(a, w)
    eager.backward()
    layer()
    time.sleep(0.03)  # (where BLAS's own threads ran the products, they spin meanwhile)
print("others_cpu", cpu_seconds(pool) - others)
grads = a.grad.clone(), w.grad.clone()
compiled = numgrad.compile(step)
for _ in range(3):
    a.grad = w.grad = None
    out = compiled(a, w)
    out.backward()
print("same", bool(out.item() == eager.item()), bool(numgrad.equal(a.grad, grads[0])),
      bool(numgrad.equal(w.grad, grads[1])))
x, y = a.detach().numpy(), w.detach().numpy()
threaded = linalg.matmul(x, y)
_workers.threads_for = lambda parts, large: 1  # (as on a busy machine: the parts one by one)
print("serial_same", bool(np.array_equal(linalg.matmul(x, y), threaded)))
print("close", bool(np.allclose(threaded, x.astype(np.float64) @ y, rtol=1e-4, atol=1e-4)))
"""


def test_large_products_split_on_numgrads_threads_never_wake_blas_threads():
    # A product of more than one BLAS thread's size is split into blocks on numgrad's worker
    # threads, one BLAS thread each: OpenBLAS's own threads, once woken, spin for ~0.1 s and
    # took the core numgrad's next kernels needed. The split depends on the shape only, so the
    # blocks run one by one (a busy machine) give the same bits, and a compiled step the same.
    env = dict(os.environ, NUMGRAD_QUIET="1", NUMGRAD_BUSY_LOAD="inf")
    out = subprocess.run([sys.executable, "-c", PRODUCTS_PROBE], env=env, capture_output=True,
                         text=True, timeout=600, check=True).stdout
    result = {line.split()[0]: line.split()[1:] for line in out.splitlines()}
    # (products on BLAS's own threads: their spinning through the sleeps, 0.3 s; here none)
    assert float(result["others_cpu"][0]) < 0.1, result
    assert result["same"] == ["True", "True", "True"]
    assert result["serial_same"] == ["True"] and result["close"] == ["True"]


def test_a_bias_row_added_per_block_of_a_split_product_gives_the_general_sums():
    # F.linear/addmm with a bias row and a product split over the threads add the row to each
    # block on the thread that computed it (kernels/cpu/linalg.matmul_add_row): the same bits
    # as the product then the general row addition (float32 blocks start from the row, GEMM's
    # beta 1: the same where the depth, here 64, is one of GEMM's blocks), split by rows or by
    # columns, operands transposed or not, on a busy machine (one thread) or not, NaN and inf
    # in the row.
    from numgrad.kernels import cpu as K
    from numgrad.kernels.cpu import _workers

    rng = np.random.default_rng(0)
    row = rng.standard_normal(300).astype(np.float32)
    row[:3] = [np.nan, np.inf, -np.inf]
    cases = [(rng.standard_normal((600, 64)).astype(np.float32),  # (rows split)
              rng.standard_normal((64, 300)).astype(np.float32), row),
             (rng.standard_normal((40, 700)).astype(np.float64),  # (columns split)
              rng.standard_normal((700, 300)).astype(np.float64), row.astype(np.float64)),
             (rng.standard_normal((5, 4)).astype(np.float32),  # (too small: the general way)
              rng.standard_normal((4, 300)).astype(np.float32), row)]
    busy = _workers._busy[:]
    try:
        for a, b, c in cases:
            want = K.binary(K.ADD, K.matmul(a, b), c)
            for busy_now in (False, True):
                _workers._busy[:] = [float("inf"), busy_now]  # (read as fresh until reset)
                got = K.matmul_add_row(a, b, c)
                assert got.tobytes() == want.tobytes()
                got_t = K.matmul_add_row(np.ascontiguousarray(a.T), np.ascontiguousarray(b.T),
                                         c, True, True)
                assert got_t.tobytes() == want.tobytes()
    finally:
        _workers._busy[:] = busy
    assert K.ROW_BIAS_FUSED_MACS is not None and 600 * 64 * 300 > K.ROW_BIAS_FUSED_MACS
    x = numgrad.tensor(cases[0][0], requires_grad=True)
    w = numgrad.tensor(np.ascontiguousarray(cases[0][1].T), requires_grad=True)
    bias = numgrad.tensor(row, requires_grad=True)
    out = numgrad.nn.functional.linear(x, w, bias)
    assert out.grad_fn.name() == "AddmmBackward0"
    assert out.detach().numpy().tobytes() == K.binary(K.ADD, K.matmul(*cases[0][:2]),
                                                      row).tobytes()


FIRST_USE_PROBE = """
import threading
import numgrad

x = numgrad.ones(3)
barrier, results, errors = threading.Barrier(8), [], []

def run():
    try:
        barrier.wait()
        results.append(numgrad.compile(lambda t: (t * 2).sum())(x).item())
    except Exception as error:
        errors.append(repr(error))

threads = [threading.Thread(target=run) for _ in range(8)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(errors or results)
"""


def test_eight_threads_first_using_the_compiler_at_once():
    # The compiler's modules load on first use (``_lazy.module``): a thread that found one in
    # sys.modules while another thread was still importing it got the half-made module
    # ("partially initialized module 'numgrad.compiler.tracer' has no attribute 'discover'").
    out = subprocess.run([sys.executable, "-c", FIRST_USE_PROBE], capture_output=True,
                         text=True, timeout=300, check=True,
                         env=dict(os.environ, NUMGRAD_QUIET="1")).stdout
    assert out.strip() == str([6.0] * 8)


def test_forward_ad_in_one_thread_hides_no_tangent_from_another():
    # A jvp rule running in one thread hid its level from other threads' ops (a process-wide
    # limit), and a bfloat16 op's widened call turned forward AD off for every thread: another
    # thread's float32 duals came out without tangents (None), silently.
    import numgrad.autograd.forward_ad as fwAD

    errors, stop = [], threading.Event()
    x16 = numgrad.ones(4096, dtype=numgrad.bfloat16)
    x32, t32 = numgrad.ones(8), numgrad.full((8,), 2.0)

    def narrow():
        while not stop.is_set():
            fwAD.unpack_dual((fwAD.make_dual(x16, x16) * x16).exp().sum())

    def wide():
        try:
            for _ in range(2000):
                t = fwAD.unpack_dual(fwAD.make_dual(x32, t32) * 3.0).tangent
                if t is None or t.tolist() != [6.0] * 8:
                    errors.append(t)
        finally:
            stop.set()

    with fwAD.dual_level():
        threads = [threading.Thread(target=narrow), threading.Thread(target=wide)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert not errors, errors[:3]
