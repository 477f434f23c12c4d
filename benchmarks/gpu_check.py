"""GPU checks and timings in one short run, for a machine that has a GPU (under 5 minutes):

    PYTHONPATH=src python3 benchmarks/gpu_check.py          # on a GPU machine
    NUMBA_ENABLE_CUDASIM=1 PYTHONPATH=src python3 benchmarks/gpu_check.py --small   # rehearsal

1. Parity: every registered op that runs on CUDA (``Op.on_cuda``), each of its samples, float32 and
   float64: values and input gradients on "cuda" equal the CPU's.
2. Bandwidth: a device-to-device copy of N float32 (N = 64M; the floor), and numgrad's elementwise
   forward+backward ``(tanh(x * 1.5 + 0.5) * sigmoid(x)).sum().backward()`` on N float32, reported
   as bytes that its kernels move per second and as a fraction of the copy's.
3. Small-op latency: ``(x * 2).sum().backward()`` on 1,000 elements, numgrad against PyTorch on the
   same GPU when PyTorch sees it.
4. Compute: the tiled GEMM (float32 and float64, 2048 x 2048) in GFLOP/s, checked against NumPy,
   and the block-parallel sum of N float32 (one output over many elements) in GB/s.
Timings are medians of several runs, each closed by a synchronize.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time

import numpy as np

import numgrad
from numgrad.ops import REGISTRY


def _median_seconds(fn, sync, repeat: int = 7) -> float:
    fn()
    sync()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


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
    for name, op in sorted(REGISTRY.items()):
        if not op.on_cuda:
            continue
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
    return failures


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


def small_op() -> None:
    sync = numgrad.cuda.synchronize
    x = numgrad.randn(1000, device="cuda", requires_grad=True)

    def ours():
        (x * 2).sum().backward()

    t_ours = _median_seconds(ours, sync, repeat=51)
    line = f"small op (x*2).sum().backward(), 1,000 float32: numgrad {t_ours * 1e6:.0f} µs"
    try:
        import torch

        if torch.cuda.is_available():
            y = torch.randn(1000, device="cuda", requires_grad=True)
            t_torch = _median_seconds(lambda: (y * 2).sum().backward(), torch.cuda.synchronize,
                                      repeat=51)
            line += f", PyTorch {t_torch * 1e6:.0f} µs (ratio {t_ours / t_torch:.2f})"
    except ImportError:
        line += " (PyTorch not installed)"
    print(line)


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
    if not numgrad.cuda.is_available():
        print("no CUDA device (and not the simulator): nothing to check")
        return 1
    start = time.perf_counter()
    failures = parity()
    bandwidth(4096 if args.small else 64 * 2**20)
    small_op()
    failures += compute(40 if args.small else 2048, 5000 if args.small else 64 * 2**20)
    print(f"done in {time.perf_counter() - start:.0f} s")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
