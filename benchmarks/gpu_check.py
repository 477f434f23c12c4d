"""GPU checks and timings in one short run, for a machine that has a GPU (under 5 minutes):

    PYTHONPATH=src python3 benchmarks/gpu_check.py          # on a GPU machine
    NUMBA_ENABLE_CUDASIM=1 PYTHONPATH=src python3 benchmarks/gpu_check.py --small   # rehearsal

The output also goes to ``$OUT/gpu_check.txt`` when ``$OUT`` is set (line by line, so a run cut
short still leaves what it printed). Each section runs on its own: an exception is printed and
the next section runs; ops not on CUDA yet (NotImplementedError) are reported as such.

1. Pool: numgrad's caching allocator on real device memory: a freed block is reused, views outlive
   their base, a training loop stops allocating, ``empty_cache()`` gives memory back to the
   driver, and what an allocation costs against ``cuda.device_array``.
2. Interop: ``__cuda_array_interface__`` both ways with Numba device arrays and PyTorch CUDA
   tensors: shared pointers (no copy), writes seen across libraries, copies when converting.
3. Workloads (benchmarks/workloads.py, the speed issue's): the seed walkthrough, the 200-op chain,
   tanh·sigmoid on 1M, the 512 matmul and the MLP step, on the GPU, numgrad against PyTorch CUDA
   in the same process when PyTorch sees the GPU: medians and the ratios numgrad/PyTorch, and any
   warning raised while they ran.
4. Small-op latency: ``(x * 2).sum().backward()`` on 1,000 elements, numgrad against PyTorch.
5. Bandwidth: a device-to-device copy of N float32 (N = 64M; the floor), and numgrad's elementwise
   forward+backward ``(tanh(x * 1.5 + 0.5) * sigmoid(x)).sum().backward()`` on N float32, reported
   as bytes that its kernels move per second and as a fraction of the copy's.
6. Compute: the tiled GEMM (float32 and float64, 2048 x 2048) in GFLOP/s, checked against NumPy,
   and the block-parallel sum of N float32 (one output over many elements) in GB/s.
7. Special values: every unary op of the formula table on NaN, ±inf, ±0, halves (rounding), tiny
   and huge values, float32 and float64, and the integer ones on int64/int32 extremes, against
   PyTorch (on the GPU if PyTorch sees it, else on the CPU): what the CUDA simulator cannot tell,
   since it runs device functions as Python's ``math`` (tests/test_formulas.py checks the CPU).
8. Parity: every registered op that runs on CUDA (``Op.on_cuda``), each of its samples, float32 and
   float64: values and input gradients on "cuda" equal the CPU's (stopped at a deadline, so that
   the whole run stays within its time).
Timings are medians of several runs, each closed by a synchronize.
"""
from __future__ import annotations

import argparse
import collections
import gc
import os
import statistics
import sys
import time
import traceback
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numgrad  # noqa: E402
import workloads as W  # noqa: E402  (the speed issue's workloads, shared with the asv suite)

numgrad.cuda._apply_numpy_shims()  # np.row_stack for numba-cuda on numpy 2.5, before any import

from numgrad.ops import REGISTRY  # noqa: E402

START = time.perf_counter()
DEADLINE_S = 240  # parity, the last section, stops here (the run must end within 5 minutes)


class _Tee:
    """stdout, copied line by line to a file."""

    def __init__(self, stream, path):
        self.stream, self.file = stream, open(path, "w", buffering=1, encoding="utf-8")

    def write(self, text):
        self.stream.write(text)
        self.file.write(text)
        return len(text)

    def flush(self):
        self.stream.flush()
        self.file.flush()


def _elapsed() -> float:
    return time.perf_counter() - START


def _fmt(seconds: float) -> str:
    if seconds >= 1:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds * 1e6:.0f} µs"


def _median_seconds(fn, sync, repeat: int = 7, budget_s: float = 10.0) -> float:
    """Median of up to ``repeat`` timed runs after one untimed warm-up (compilation), fewer if
    they would take more than ``budget_s``."""
    fn()
    sync()
    times = []
    spent = time.perf_counter()
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - start)
        if time.perf_counter() - spent > budget_s:
            break
    return statistics.median(times)


def _torch_cuda():
    """PyTorch if it is installed and sees the GPU, else None."""
    try:
        import torch
    except ImportError:
        return None
    try:
        return torch if torch.cuda.is_available() else None
    except Exception:
        return None


def _address(a) -> int:
    """The device address of a numgrad tensor or a device array."""
    from numgrad.kernels.cuda import interop

    data = a._data if isinstance(a, numgrad.Tensor) else a
    return interop.export_interface(data)["data"][0]


def _check(label: str, ok: bool, detail: str = "") -> bool:
    print(f"  {'ok  ' if ok else 'FAIL'} {label}{': ' + detail if detail else ''}")
    return ok


# ---------------------------------------------------------------------- 1. pool
def pool_check(small: bool) -> int:
    from numba import config, cuda

    from numgrad.kernels.cuda import memory
    from numgrad.kernels.cuda import pool as P

    pool = P.pool()
    print(f"pool: {type(pool).__name__} on {type(getattr(pool, 'backend', None)).__name__}")
    bad = 0
    a = memory.empty((1000,), np.float32)
    address = _address(a)
    del a
    b = memory.empty((900,), np.float32)
    bad += not _check("a freed block is reused by the next request of its class",
                      _address(b) == address)
    del b

    host = np.arange(4 * 256, dtype=np.float32).reshape(4, 256)
    a = memory.empty((4, 256), np.float32)
    a.copy_to_device(host)
    view = a[1:3]
    address = _address(a)
    del a
    others = [memory.empty((4, 256), np.float32) for _ in range(4)]
    for o in others:
        o.copy_to_device(np.full((4, 256), -1, np.float32))
    cuda.synchronize()
    bad += not _check("a view outlives its base (its block is not handed out again)",
                      all(_address(o) != address for o in others)
                      and np.array_equal(view.copy_to_host(), host[1:3]))
    del view, others

    n = 256 if small else 1_000_000
    x = numgrad.randn(n, device="cuda", requires_grad=True)
    counts = []
    for _ in range(5):
        (numgrad.tanh(x * 1.5 + 0.5) * numgrad.sigmoid(x)).sum().backward()
        x.grad = None
        counts.append(numgrad.cuda.memory_stats()["raw_allocs"])
    stats = numgrad.cuda.memory_stats()
    bad += not _check("a training loop stops allocating after its first step",
                      counts[1:] == [counts[0]] * 4,
                      f"raw allocations after each of 5 steps {counts}, {stats['reuses']} reuses")
    del x

    iterations = 200 if small else 5000
    start = time.perf_counter()
    for _ in range(iterations):
        memory.empty((1000,), np.float32)
    pooled = (time.perf_counter() - start) / iterations
    start = time.perf_counter()
    for _ in range(iterations):
        cuda.device_array((1000,), np.float32)
    plain = (time.perf_counter() - start) / iterations
    print(f"  allocation + free of 4 KB: pool {pooled * 1e6:.1f} µs, cuda.device_array "
          f"{plain * 1e6:.1f} µs")

    if not config.ENABLE_CUDASIM:
        gc.collect()
        numgrad.cuda.empty_cache()
        context = cuda.current_context()
        free0 = context.get_memory_info()[0]
        big = memory.empty((2**28,), np.float32)  # 1 GiB
        cuda.synchronize()
        free1 = context.get_memory_info()[0]
        reserved = numgrad.cuda.memory_reserved()
        del big
        free2 = context.get_memory_info()[0]
        numgrad.cuda.empty_cache()
        free3 = context.get_memory_info()[0]
        gib = 2**30
        bad += not _check(
            "empty_cache() gives a freed 1 GiB block back to the driver",
            free0 - free1 >= gib and abs(free2 - free1) < gib // 2 and free3 - free2 >= gib,
            f"driver free memory {free0 / gib:.2f} → {free1 / gib:.2f} (allocated) → "
            f"{free2 / gib:.2f} (freed, cached) → {free3 / gib:.2f} GiB (empty_cache); "
            f"reserved while allocated {reserved / gib:.2f} GiB")
    stats = numgrad.cuda.memory_stats()
    print(f"  memory_allocated {numgrad.cuda.memory_allocated():,} B, memory_reserved "
          f"{numgrad.cuda.memory_reserved():,} B, peak {numgrad.cuda.max_memory_allocated():,} B; "
          f"{stats['raw_allocs']} raw allocations, {stats['raw_frees']} frees, "
          f"{stats['reuses']} reuses")
    return bad


# ---------------------------------------------------------------------- 2. interop
def interop_check(small: bool) -> int:
    from numba import config, cuda

    bad = 0
    t = numgrad.arange(10, dtype=numgrad.float32, device="cuda")
    desc = t.__cuda_array_interface__
    print(f"interop: a CUDA tensor's interface {desc}")
    if config.ENABLE_CUDASIM:
        print("  (simulator: device arrays have no __cuda_array_interface__ there; "
              "tests/cuda_sim/test_cuda_memory.py covers the plumbing)")
        return bad
    d = cuda.as_cuda_array(t)
    bad += not _check("numgrad → Numba without a copy", d.device_ctypes_pointer.value == _address(t))
    nd = cuda.to_device(np.arange(6, dtype=np.float32).reshape(2, 3))
    s = numgrad.as_tensor(nd)
    bad += not _check("Numba → numgrad.as_tensor without a copy",
                      _address(s) == nd.device_ctypes_pointer.value
                      and s.tolist() == [[0, 1, 2], [3, 4, 5]])
    nd.copy_to_device(np.full((2, 3), 7, np.float32))
    bad += not _check("a write through Numba is seen by the tensor", s.tolist() == [[7] * 3] * 2)
    c = numgrad.tensor(nd)
    w = numgrad.as_tensor(nd, dtype=numgrad.float64)
    bad += not _check("numgrad.tensor and a dtype conversion copy",
                      _address(c) != _address(s) and _address(w) != _address(s)
                      and w.dtype is numgrad.float64 and w.tolist() == [[7.0] * 3] * 2)
    torch = _torch_cuda()
    if torch is None:
        print("  PyTorch with CUDA is not available: PyTorch interop not checked")
        return bad
    tt = torch.arange(10, dtype=torch.float32, device="cuda")
    n = numgrad.as_tensor(tt)
    bad += not _check("PyTorch → numgrad.as_tensor without a copy",
                      _address(n) == tt.data_ptr() and n.device.type == "cuda")
    tt.mul_(3)
    torch.cuda.synchronize()
    bad += not _check("a PyTorch in-place write is seen by numgrad", n.tolist() == tt.tolist())
    r = (n * 2 + 1).sum()
    bad += not _check("numgrad computes on PyTorch's memory", r.item() == float((tt * 2 + 1).sum()))
    doubled = n * 2
    back = torch.as_tensor(doubled, device="cuda")
    bad += not _check("numgrad → torch.as_tensor without a copy",
                      back.data_ptr() == _address(doubled) and back.tolist() == (tt * 2).tolist())
    strided = torch.arange(12, dtype=torch.float64, device="cuda").view(3, 4).t()
    ns = numgrad.as_tensor(strided)
    bad += not _check("a strided PyTorch tensor becomes a contiguous copy",
                      ns.shape == (4, 3) and ns.tolist() == strided.tolist())
    ti = torch.tensor([1, 2, 3], dtype=torch.int32, device="cuda")
    bad += not _check("int32 keeps its dtype", numgrad.as_tensor(ti).dtype is numgrad.int32)
    g = torch.ones(3, device="cuda", requires_grad=True)
    try:
        numgrad.as_tensor(g)
        bad += not _check("a PyTorch tensor that requires grad is refused (as PyTorch does)", False)
    except RuntimeError:
        _check("a PyTorch tensor that requires grad is refused (as PyTorch does)", True)
    return bad


# ---------------------------------------------------------------------- 3. workloads
class _OnCuda:
    """A module with PyTorch's API (numgrad or torch) whose creation functions default to
    ``device="cuda"`` and whose nn modules are moved there once built, so that the workloads of
    benchmarks/workloads.py run unchanged on the GPU."""

    CREATE = {"tensor", "as_tensor", "ones", "zeros", "full", "empty", "arange", "rand", "randn",
              "randint", "linspace", "eye"}
    device = "cuda"

    def __init__(self, module):
        self._module = module
        self.nn = _NnOnCuda(module.nn, self.device)

    def __getattr__(self, name):
        attr = getattr(self._module, name)
        if name in self.CREATE:
            def on_cuda(*args, **kwargs):
                kwargs.setdefault("device", self.device)
                return attr(*args, **kwargs)
            return on_cuda
        return attr


class _NnOnCuda:
    def __init__(self, nn, device):
        self._nn, self._device = nn, device

    def __getattr__(self, name):
        attr = getattr(self._nn, name)
        if isinstance(attr, type) and issubclass(attr, self._nn.Module):
            def build(*args, **kwargs):
                module = attr(*args, **kwargs)
                try:
                    return module.to(self._device)
                except RuntimeError:  # numgrad's Module.to does not move to CUDA yet
                    if not hasattr(module, "_apply"):
                        raise
                    return module._apply(lambda t: t.to(self._device))
            return build
        return attr


def _workload_list(small: bool):
    """(label, make(m), repeat): the speed issue's workloads, tiny for the simulator."""
    if small:
        return [
            ("seed walkthrough (fwd+bwd)", W.seed_walkthrough, 3),
            ("20-op chain, 100 float64 (fwd+bwd)", lambda m: W.chain_200(m, length=20), 2),
            ("tanh(x*1.5+0.5)*sigmoid(x), 256 float32 (fwd+bwd)",
             lambda m: W.elementwise_1m(m, n=256), 3),
            ("(a @ b).sum(), 8x8 float32 (fwd+bwd)", lambda m: W.matmul_512(m, n=8), 2),
            ("MLP step 4x8 -> 8 -> 10, SGD (fwd+bwd+step)",
             lambda m: W.mlp_step(m, batch=4, features=8, hidden=8), 2),
        ]
    return [
        ("seed walkthrough (fwd+bwd)", W.seed_walkthrough, 101),
        ("200-op chain, 100 float64 (fwd+bwd)", W.chain_200, 11),
        ("tanh(x*1.5+0.5)*sigmoid(x), 1M float32 (fwd+bwd)", W.elementwise_1m, 51),
        ("(a @ b).sum(), 512x512 float32 (fwd+bwd)", W.matmul_512, 51),
        ("MLP step 64x784 -> 256 -> 10, SGD (fwd+bwd+step)", W.mlp_step, 51),
    ]


def _time_workload(module, make, repeat, sync, compiled: bool = False):
    """The median seconds of ``make(module on cuda)`` (with ``compiled``, of its
    ``numgrad.compile``: traced once, then fused CUDA kernels), or the reason it could not
    run."""
    try:
        fn = make(_OnCuda(module))
        if compiled:
            fn = numgrad.compile(fn)
            fn()  # (a step traces twice: before its .grad exist, and with them)
        return _median_seconds(fn, sync, repeat=repeat)
    except NotImplementedError as exc:
        return f"not on CUDA yet ({str(exc).splitlines()[0][:70]})"
    except Exception as exc:
        return f"error: {type(exc).__name__}: {str(exc).splitlines()[0][:90] if str(exc) else ''}"


def workloads_check(small: bool) -> None:
    torch = _torch_cuda()
    print("workloads on the GPU: numgrad" + (" against PyTorch CUDA (ratio = numgrad/PyTorch)"
                                             if torch else " (PyTorch with CUDA not available)"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for label, make, repeat in _workload_list(small):
            ours = _time_workload(numgrad, make, repeat, numgrad.cuda.synchronize)
            fused = _time_workload(numgrad, make, repeat, numgrad.cuda.synchronize, True)
            line = f"  {label:<52} numgrad {_fmt(ours) if isinstance(ours, float) else ours}"
            line += f" | compiled {_fmt(fused) if isinstance(fused, float) else fused}"
            if torch is not None:
                theirs = _time_workload(torch, make, repeat, torch.cuda.synchronize)
                if isinstance(theirs, float):
                    line += f" | PyTorch {_fmt(theirs)}"
                    if isinstance(ours, float):
                        line += f" | ratio {ours / theirs:.2f}"
                else:
                    line += f" | PyTorch {theirs}"
            print(line)
    _report_warnings(caught, "while the workloads ran")


def _report_warnings(caught, when: str) -> None:
    if not caught:
        print(f"  warnings {when}: none")
        return
    counts = collections.Counter((w.category.__name__, str(w.message)[:120]) for w in caught)
    print(f"  warnings {when}:")
    for (category, message), count in counts.most_common(10):
        print(f"    {count} × {category}: {message}")


# ---------------------------------------------------------------------- 4. small op
def small_op() -> None:
    sync = numgrad.cuda.synchronize
    x = numgrad.randn(1000, device="cuda", requires_grad=True)

    def ours():
        (x * 2).sum().backward()

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t_ours = _median_seconds(ours, sync, repeat=51)
    line = f"small op (x*2).sum().backward(), 1,000 float32: numgrad {t_ours * 1e6:.0f} µs"
    torch = _torch_cuda()
    if torch is not None:
        y = torch.randn(1000, device="cuda", requires_grad=True)
        t_torch = _median_seconds(lambda: (y * 2).sum().backward(), torch.cuda.synchronize,
                                  repeat=51)
        line += f", PyTorch {t_torch * 1e6:.0f} µs (ratio {t_ours / t_torch:.2f})"
    else:
        line += " (PyTorch with CUDA not available)"
    print(line)
    _report_warnings(caught, "in 52 small-op steps")


# ---------------------------------------------------------------------- 5. bandwidth
def bandwidth(n: int) -> None:
    from numba import cuda

    sync = numgrad.cuda.synchronize
    src = cuda.to_device(np.ones(n, np.float32))
    dst = cuda.device_array(n, np.float32)
    copy = _median_seconds(lambda: dst.copy_to_device(src), sync)
    copy_rate = 2 * 4 * n / copy  # bytes read + written
    x = numgrad.tensor(np.random.default_rng(0).standard_normal(n).astype(np.float32),
                       device="cuda", requires_grad=True)

    def step():
        (numgrad.tanh(x * 1.5 + 0.5) * numgrad.sigmoid(x)).sum().backward()
        x.grad = None

    elementwise = _median_seconds(step, sync, repeat=5)
    # Bytes the unfused kernels move: forward 5 elementwise passes + the sum, backward 6 passes;
    # each elementwise pass reads one or two arrays and writes one (counted as 3 arrays).
    moved = (11 * 3 + 1) * 4 * n
    rate = moved / elementwise
    print(f"copy: {copy * 1e3:.2f} ms for {n:,} float32 = {copy_rate / 1e9:.0f} GB/s")
    print(f"elementwise fwd+bwd: {elementwise * 1e3:.2f} ms = {rate / 1e9:.0f} GB/s of kernel "
          f"traffic, {rate / copy_rate:.0%} of the copy's bandwidth")


# ---------------------------------------------------------------------- 7. special values
SPECIAL = [float("nan"), float("inf"), -float("inf"), 0.0, -0.0, 0.5, 1.5, 2.5, -0.5, -1.5, -2.5,
           1.0, -1.0, 3.0, 1e-30, -1e-30, 1e-300, 100.0, -100.0, 1e30, -1e30, 89.0, -89.0, 710.0,
           -710.0]
INTEGER_OPS = ("neg", "abs", "sign", "floor", "ceil", "round", "relu")


def _matches(ours: np.ndarray, theirs: np.ndarray, ulps: int = 4) -> np.ndarray:
    """Equal (NaN for NaN, the sign of zero kept), or within ``ulps`` where finite, or both
    below the smallest normal number (a flushed subnormal)."""
    tiny = np.finfo(theirs.dtype).tiny if theirs.dtype.kind == "f" else 0
    with np.errstate(invalid="ignore"):
        exact = (ours == theirs) & (np.signbit(ours) == np.signbit(theirs))
        if theirs.dtype.kind != "f":
            return ours == theirs
        close = np.isfinite(ours) & np.isfinite(theirs) & (
            np.abs(ours - theirs) <= np.maximum(ulps * np.spacing(np.abs(theirs)), tiny))
    return exact | (np.isnan(ours) & np.isnan(theirs)) | (close & ((theirs != 0) | (np.abs(ours) < tiny)))


def special_values() -> int:
    """Every unary op on special values on the GPU against PyTorch; returns the mismatches."""
    from numba import config

    from numgrad.kernels.formulas import Unary

    if config.ENABLE_CUDASIM:
        print("special values: skipped in the simulator (it runs device functions as Python's "
              "math, where log(0) raises): they need a GPU")
        return 0
    import torch

    device = "cuda" if _torch_cuda() is not None else "cpu"
    names = [op.name.lower() for op in Unary]
    failures = checked = 0
    cases = [(name, dtype, np.array(SPECIAL, dtype)) for name in names
             for dtype in ("float32", "float64")]
    for dtype in ("int64", "int32"):
        info = np.iinfo(dtype)
        data = np.array([info.min, info.min + 1, -3, -1, 0, 1, 2, info.max - 1, info.max], dtype)
        cases += [(name, dtype, data) for name in INTEGER_OPS]
    for name, dtype, data in cases:
        checked += 1
        ours = getattr(numgrad, name)(numgrad.tensor(data, device="cuda")).cpu().numpy()
        theirs = getattr(torch, name)(torch.tensor(data, device=device)).cpu().numpy()
        good = _matches(ours, theirs) if ours.dtype == theirs.dtype else np.zeros(len(data), bool)
        if not good.all():
            failures += 1
            wrong = [(float(v), o.item(), t.item()) for v, o, t, g in zip(data, ours, theirs, good)
                     if not g]
            print(f"  MISMATCH {name} {dtype} ({ours.dtype} vs {theirs.dtype}): "
                  f"(input, numgrad, PyTorch) {wrong[:6]}")
    print(f"special values: {checked - failures}/{checked} (op, dtype) cases match PyTorch "
          f"({device}) on {len(SPECIAL)} float values and the int64/int32 extremes")
    return failures


# ---------------------------------------------------------------------- 8. parity
def _run_sample(sample, arrays, device):
    xs = [numgrad.tensor(a, device=device, requires_grad=sample.grad) for a in arrays]
    out = sample.call(numgrad, *xs)
    outs = out if isinstance(out, tuple) else (out,)
    tracked = [o for o in outs if o.requires_grad]
    if tracked:
        numgrad.autograd.backward(tracked, [numgrad.ones_like(o) for o in tracked])
    values = [o.cpu().detach().numpy() for o in outs]
    grads = [None if x.grad is None else x.grad.cpu().numpy() for x in xs]
    return values, grads


def parity() -> int:
    """Checks every CUDA op's samples against the CPU; returns the number of mismatches."""
    failures = checked = 0
    needs_cpu_only = set()
    stopped = None
    for name, op in sorted(REGISTRY.items()):
        if not op.on_cuda:
            continue
        if _elapsed() > DEADLINE_S:
            stopped = name
            break
        for index, sample in enumerate(op.samples):
            for dtype, tol in (("float32", 1e-5), ("float64", 1e-12)):
                rng = np.random.default_rng(index)
                arrays = [rng.uniform(sample.low, sample.high, s).astype(dtype) for s in sample.shapes]
                cpu = _run_sample(sample, arrays, "cpu")
                try:
                    gpu = _run_sample(sample, arrays, "cuda")
                except NotImplementedError:  # the sample also calls an op not yet on CUDA
                    needs_cpu_only.add((name, index))
                    continue
                except Exception as exc:
                    failures += 1
                    print(f"  ERROR {name} sample {index} {dtype}: {type(exc).__name__}: {exc}")
                    continue
                checked += 1
                try:
                    for a, b in zip(cpu[0] + cpu[1], gpu[0] + gpu[1]):
                        if a is None or b is None:
                            assert a is None and b is None
                        else:
                            np.testing.assert_allclose(b, a, rtol=tol, atol=tol)
                except AssertionError as exc:
                    failures += 1
                    print(f"  MISMATCH {name} sample {index} {dtype}: {str(exc).splitlines()[0]}")
    cpu_only = sorted(n for n, op in REGISTRY.items() if not op.on_cuda)
    print(f"parity: {checked - failures}/{checked} CUDA sample runs match the CPU; "
          f"{len(cpu_only)} ops are CPU-only so far, and {len(needs_cpu_only)} samples of CUDA ops "
          f"also call one of them: {sorted(needs_cpu_only)}")
    if stopped is not None:
        print(f"parity: stopped at the {DEADLINE_S} s deadline, at op {stopped!r} (the ops from "
              f"there on, alphabetically, were not checked)")
    return failures


# ---------------------------------------------------------------------- main
def _section(title: str, fn, *args):
    """Runs one section; an exception is printed and counts as one failure."""
    print(f"\n== {title} ({_elapsed():.0f} s)")
    try:
        result = fn(*args)
        return int(result or 0)
    except Exception:
        print(f"{title}: the section failed:")
        traceback.print_exc(file=sys.stdout)
        return 1
    finally:
        sys.stdout.flush()


def compute(n_gemm: int, n_sum: int) -> int:
    """GEMM throughput and accuracy, and the tree sum's bandwidth; returns the mismatches."""
    K = numgrad.cuda.kernels()
    sync = numgrad.cuda.synchronize
    rng = np.random.default_rng(0)
    failures = 0
    for dtype, tol in (("float32", 1e-4), ("float64", 1e-10)):
        a = rng.standard_normal((n_gemm, n_gemm)).astype(dtype)
        b = rng.standard_normal((n_gemm, n_gemm)).astype(dtype)
        da, db = K.upload(a), K.upload(b)
        seconds = _median_seconds(lambda: K.matmul(da, db), sync, repeat=5)
        rows = slice(0, min(n_gemm, 64))  # a band of rows against NumPy in float64
        expected = a[rows].astype(np.float64) @ b.astype(np.float64)
        got = K.to_host(K.matmul(da, db))[rows]
        error = float(np.max(np.abs(got - expected)) / np.max(np.abs(expected)))
        ok = error < tol
        failures += not ok
        print(f"gemm {dtype} {n_gemm}x{n_gemm}: {seconds * 1e3:.2f} ms = "
              f"{2 * n_gemm ** 3 / seconds / 1e9:.0f} GFLOP/s, max error {error:.1e} "
              f"{'ok' if ok else 'MISMATCH'}")
    x = K.upload(rng.standard_normal((1, n_sum)).astype(np.float32))
    seconds = _median_seconds(lambda: K.sum_dims(x, (0, 1), False), sync)
    print(f"tree sum of {n_sum:,} float32: {seconds * 1e3:.3f} ms = {4 * n_sum / seconds / 1e9:.0f} GB/s")
    return failures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true",
                        help="small sizes, for a rehearsal in Numba's CUDA simulator")
    args = parser.parse_args()
    if os.environ.get("OUT"):
        os.makedirs(os.environ["OUT"], exist_ok=True)
        sys.stdout = _Tee(sys.stdout, os.path.join(os.environ["OUT"], "gpu_check.txt"))
    versions = [f"numpy {np.__version__}"]
    for name in ("numba", "numba_cuda", "torch"):
        try:
            versions.append(f"{name} {__import__(name).__version__}")
        except Exception:
            versions.append(f"{name} absent")
    print(f"gpu_check{' --small' if args.small else ''}: python {sys.version.split()[0]}, "
          + ", ".join(versions))
    if not numgrad.cuda.is_available():
        print("no CUDA device (and not the simulator): nothing to check")
        return 1
    try:
        from numba import cuda

        device = cuda.get_current_device()
        name = getattr(device, "name", "Numba's CUDA simulator")
        print(f"device: {name.decode() if isinstance(name, bytes) else name}")
    except Exception as exc:
        print(f"device: ({type(exc).__name__}: {exc})")
    small = args.small
    failures = 0
    failures += _section("pool", pool_check, small)
    failures += _section("interop", interop_check, small)
    failures += _section("workloads", workloads_check, small)
    failures += _section("small op", small_op)
    failures += _section("bandwidth", bandwidth, 4096 if small else 64 * 2**20)
    failures += _section("compute", compute, 40 if small else 2048, 5000 if small else 64 * 2**20)
    failures += _section("special values", special_values)
    failures += _section("parity", parity)
    print(f"\ndone in {_elapsed():.0f} s; {failures} failure(s)")
    sys.stdout.flush()
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
