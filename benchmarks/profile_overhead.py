"""Where the time of the small-tensor workloads goes: per-op and per-node costs of numgrad and
PyTorch, the floors under numgrad's (a Numba call, an allocation, a Tensor), the MLP step split
into its matrix products and the rest, and a fresh process split into its imports and first call.

    python benchmarks/profile_overhead.py

``compare.py`` gives the ratios; this says why the ones above their targets are there, with the
budget each target leaves per op. Medians in one process; the machine is shared and noisy.
"""
from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
import timeit

import numpy as np

os.environ.setdefault("NUMGRAD_QUIET", "1")  # (no first-compile line inside the tables)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from workloads import _normal, chain_200, mlp_step, seed_walkthrough  # noqa: E402

import numgrad  # noqa: E402
from numgrad.kernels import cpu as K  # noqa: E402
from numgrad.kernels.cpu import elementwise as E  # noqa: E402

try:
    import torch
except ImportError:
    torch = None

# The goals of the issue on eager cost: numgrad / PyTorch per workload, and µs per op and node.
TARGETS = {"seed": 1.0, "chain": 1.0, "mlp": 1.0}
PER_OP_GOALS = (2.8, 1.8, 2.5)  # recorded op, unrecorded op, backward node


def us(fn, number=2000, repeat=9) -> float:
    fn()
    return statistics.median(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e6


def per_op(m):
    """A recorded op, the same op with nothing recorded, and a backward node, on 100 float64."""
    x = m.tensor(np.linspace(-1, 1, 100), dtype=m.float64, requires_grad=True)
    recorded = us(lambda: x * 1.001)
    with m.no_grad():
        plain = us(lambda: x * 1.001)

    def chain(n):
        y = x
        for _ in range(n):
            y = y * 1.001 + 0.001
        return y.sum()

    def backward_only(n):
        times = []
        for _ in range(41):
            out = chain(n)
            start = time.perf_counter()
            out.backward()
            times.append(time.perf_counter() - start)
            x.grad = None
        return statistics.median(times) * 1e6

    node = (backward_only(200) - backward_only(20)) / 360  # 2 nodes per step, fixed costs cancel
    return recorded, plain, node


def floors():
    """What one numgrad op cannot do without: a Numba call, an output, a Tensor."""
    a = np.linspace(-1, 1, 100)
    out = np.empty_like(a)
    s = np.float64(1.001)
    kernel = E._kernels(K.MUL, a.dtype).zip_1d_scalar
    return {
        "Numba dispatch of the kernel (3 arguments, output given)": us(lambda: kernel(a, s, out)),
        "K.binary: kernel entry (output allocated, dispatch)": us(lambda: K.binary(K.MUL, a, s)),
        "np.empty(100)": us(lambda: np.empty(a.shape, a.dtype)),
        "Tensor._wrap (a Tensor object for an array)": us(lambda: numgrad.Tensor._wrap(a)),
        "np.multiply (NumPy's C ufunc, for scale)": us(lambda: np.multiply(a, s)),
    }


def workload(make, m, number=200) -> float:
    fn = make(m)
    return us(fn, number=number, repeat=15)


def mlp_split(m):
    """The MLP step's five matrix products alone (the same shapes and layouts) and the step."""
    x = m.tensor(_normal((64, 784)))
    w1, w2 = m.tensor(_normal((256, 784), 2)), m.tensor(_normal((10, 256), 3))
    h, g2, g1 = m.tensor(_normal((64, 256), 4)), m.tensor(_normal((64, 10), 5)), m.tensor(_normal((64, 256), 6))
    with m.no_grad():
        gemms = us(lambda: (x @ w1.t(), h @ w2.t(), g2 @ w2, g2.t() @ h, g1.t() @ x), number=200)
    return gemms, workload(mlp_step, m)


def fresh_split() -> dict:
    """Seconds of fresh processes (warm caches): Python alone, +NumPy, +Numba, +numgrad, +seed."""
    scripts = {
        "python -c pass": "pass",
        "import numpy": "import numpy",
        "import numba": "import numba",
        "import numgrad": "import numgrad",
        "import numgrad + seed walkthrough": (
            "import numgrad as torch\nx = torch.ones(2, 2, requires_grad=True); y = x + 2; "
            "(y * y * 3).mean().backward()"),
    }
    if torch:
        scripts["import torch + seed walkthrough"] = scripts[
            "import numgrad + seed walkthrough"].replace("import numgrad as torch", "import torch")
    out = {}
    env = dict(os.environ)  # (bytecode cached, as after ``pip install``: see compare.py)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    for name, code in scripts.items():
        subprocess.run([sys.executable, "-c", code], check=True, env=env)  # warm the caches
        runs = []
        for _ in range(5):
            start = time.perf_counter()
            subprocess.run([sys.executable, "-c", code], check=True, env=env)
            runs.append(time.perf_counter() - start)
        out[name] = statistics.median(runs)
    return out


def main() -> None:
    if torch is None:
        sys.exit("profile_overhead.py compares with PyTorch: install torch first")
    torch.set_num_threads(2)
    print("Per op and per node, 100 float64 elements (µs):")
    ng, pt = per_op(numgrad), per_op(torch)
    for label, a, b, goal in zip(("recorded op (x * 1.001)", "same op, nothing recorded",
                                  "backward node (chain)"), ng, pt, PER_OP_GOALS):
        print(f"  {label:44s} numgrad {a:6.2f}   PyTorch {b:6.2f}   goal {goal:.1f}")
    print("Floors under a numgrad op (µs):")
    for label, value in floors().items():
        print(f"  {label:60s} {value:6.2f}")

    seed_ng, seed_pt = workload(seed_walkthrough, numgrad), workload(seed_walkthrough, torch)
    chain_ng, chain_pt = workload(chain_200, numgrad, 20), workload(chain_200, torch, 20)
    print("Targets and the budget they leave (µs):")
    # seed: ones, +2, *, *3, mean forward (5 ops) and 4 backward nodes + the .grad write
    budget = TARGETS["seed"] * seed_pt
    print(f"  seed walkthrough: numgrad {seed_ng:.1f}, PyTorch {seed_pt:.1f}; target "
          f"{TARGETS['seed']} x PyTorch = {budget:.1f} for 5 ops + 5 nodes = {budget / 10:.2f} per step")
    budget = TARGETS["chain"] * chain_pt
    print(f"  200-op chain: numgrad {chain_ng:.0f}, PyTorch {chain_pt:.0f}; target "
          f"{TARGETS['chain']} x PyTorch = {budget:.0f} for 401 ops + 401 nodes = "
          f"{budget / 802:.2f} per op or node")
    gemm_ng, mlp_ng = mlp_split(numgrad)
    gemm_pt, mlp_pt = mlp_split(torch)
    budget = TARGETS["mlp"] * mlp_pt
    print(f"  MLP step: numgrad {mlp_ng:.0f} (its 5 matrix products {gemm_ng:.0f}, the rest "
          f"{mlp_ng - gemm_ng:.0f}), PyTorch {mlp_pt:.0f} (products {gemm_pt:.0f}, rest "
          f"{mlp_pt - gemm_pt:.0f}); target {TARGETS['mlp']} x PyTorch = {budget:.0f}, which leaves "
          f"{budget - gemm_ng:.0f} beside numgrad's products")
    print("Fresh processes, warm caches (s):")
    for label, seconds in fresh_split().items():
        print(f"  {label:40s} {seconds:6.3f}")


if __name__ == "__main__":
    main()
