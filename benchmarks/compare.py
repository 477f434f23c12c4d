"""Side-by-side timings: numgrad against PyTorch (when installed) and NumPy, in one process.

    python benchmarks/compare.py [--repeat N]

Prints, for each workload, the median microseconds of numgrad, PyTorch (two threads, as the issue
measures it) and NumPy forward-only (the floor), and the ratio numgrad/PyTorch. Also times fresh
processes that import numgrad and run the seed walkthrough, with an empty and with a warm Numba
cache. Machines are noisy: read medians and ratios, not single runs.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import timeit

import numpy as np

import numgrad

try:
    import torch

    torch.set_num_threads(2)
except ImportError:  # PyTorch is optional here
    torch = None


def seed_walkthrough(m):
    def run():
        x = m.ones(2, 2, requires_grad=True)
        y = x + 2
        out = (y * y * 3).mean()
        out.backward()
        return x.grad

    return run


def seed_walkthrough_numpy():
    def run():
        x = np.ones((2, 2), np.float32)
        y = x + 2
        return (y * y * 3).mean()

    return run


def chain_200(m):
    x = m.tensor(np.linspace(-1, 1, 100), dtype=m.float64, requires_grad=True)

    def run():
        y = x
        for _ in range(200):
            y = y * 1.001 + 0.001
        y.sum().backward()
        x.grad = None

    return run


def chain_200_numpy():
    x = np.linspace(-1, 1, 100)

    def run():
        y = x
        for _ in range(200):
            y = y * 1.001 + 0.001
        return y.sum()

    return run


def elementwise_1m(m):
    x = m.tensor(np.random.default_rng(0).standard_normal(1_000_000).astype(np.float32),
                 requires_grad=True)

    def run():
        (m.tanh(x * 1.5 + 0.5) * m.sigmoid(x)).sum().backward()
        x.grad = None

    return run


def elementwise_1m_numpy():
    x = np.random.default_rng(0).standard_normal(1_000_000).astype(np.float32)

    def run():
        return (np.tanh(x * np.float32(1.5) + np.float32(0.5)) / (1 + np.exp(-x))).sum()

    return run


def matmul_512(m):
    rng = np.random.default_rng(0)
    a = m.tensor(rng.standard_normal((512, 512)).astype(np.float32), requires_grad=True)
    b = m.tensor(rng.standard_normal((512, 512)).astype(np.float32), requires_grad=True)

    def run():
        (a @ b).sum().backward()
        a.grad = b.grad = None

    return run


def matmul_512_numpy():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((512, 512)).astype(np.float32)
    b = rng.standard_normal((512, 512)).astype(np.float32)
    return lambda: (a @ b).sum()


WORKLOADS = {
    "seed walkthrough (fwd+bwd)": (seed_walkthrough, seed_walkthrough_numpy),
    "200-op chain, 100 float64 (fwd+bwd)": (chain_200, chain_200_numpy),
    "tanh(x*1.5+0.5)*sigmoid(x), 1M float32 (fwd+bwd)": (elementwise_1m, elementwise_1m_numpy),
    "(a @ b).sum(), 512x512 float32 (fwd+bwd)": (matmul_512, matmul_512_numpy),
}


def median_us(fn, repeat: int) -> float:
    fn()  # warm up (compiles kernels on first use)
    number = 1
    while timeit.timeit(fn, number=number) < 0.02:
        number *= 2
    times = timeit.repeat(fn, number=number, repeat=repeat)
    return statistics.median(times) / number * 1e6


SEED_SCRIPT = (
    "import numgrad as torch\n"
    "x = torch.ones(2, 2, requires_grad=True); y = x + 2; out = (y * y * 3).mean(); "
    "out.backward(); assert float(x.grad.sum()) == 18.0\n"
)


def fresh_process_seconds(cache_dir: str, runs: int) -> list[float]:
    env = dict(os.environ, NUMBA_CACHE_DIR=cache_dir)
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", SEED_SCRIPT], check=True, env=env)
        times.append(time.perf_counter() - start)
    return times


def torch_fresh_process_seconds(runs: int) -> list[float]:
    script = SEED_SCRIPT.replace("import numgrad as torch", "import torch")
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", script], check=True)
        times.append(time.perf_counter() - start)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--fresh-runs", type=int, default=5)
    args = parser.parse_args()
    print(f"numgrad {numgrad.__version__}, torch {torch.__version__ if torch else 'absent'}, "
          f"numpy {np.__version__}; medians of {args.repeat} repeats, µs")
    print(f"{'workload':52s} {'numgrad':>10s} {'PyTorch':>10s} {'NumPy fwd':>10s} {'ng/PT':>7s}")
    for name, (make, make_numpy) in WORKLOADS.items():
        ours = median_us(make(numgrad), args.repeat)
        theirs = median_us(make(torch), args.repeat) if torch else float("nan")
        floor = median_us(make_numpy(), args.repeat)
        print(f"{name:52s} {ours:10.1f} {theirs:10.1f} {floor:10.1f} {ours / theirs:7.2f}")
    cache = tempfile.mkdtemp(prefix="numgrad-cache-")
    try:
        cold = fresh_process_seconds(cache, 1)[0]
        warm = statistics.median(fresh_process_seconds(cache, args.fresh_runs))
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    line = f"fresh process, import + seed walkthrough: cold cache {cold:.2f} s, warm cache {warm:.2f} s"
    if torch:
        pt = statistics.median(torch_fresh_process_seconds(args.fresh_runs))
        line += f"; PyTorch {pt:.2f} s (warm/PT {warm / pt:.2f})"
    print(line)


if __name__ == "__main__":
    main()
