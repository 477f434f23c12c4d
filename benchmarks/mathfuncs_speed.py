"""Speed of numgrad's vectorisable exp/log/tanh/sigmoid against NumPy, 1,000,000 elements.

    PYTHONPATH=src python benchmarks/mathfuncs_speed.py [--repeat N] [--n N] [--cpu-time]

For each function and dtype, the median microseconds per call of:

- ``fast_*``: a plain ``@njit(cache=True)`` loop ``out[i] = fast_exp(x[i])`` over
  ``numgrad.kernels.cpu.mathfuncs``;
- ``np.* in njit``: the same loop calling ``np.exp`` etc. (scalar libm: what to avoid);
- ``NumPy``: the ufunc into a preallocated output (sigmoid, which has none:
  ``np.exp(-x, out); out += 1; np.reciprocal(out, out)``);
- ``torch``: one thread, into a preallocated output, when PyTorch is installed.

The candidates are timed in turns, so load from other processes spreads over all of them.
``--cpu-time`` times with this process's CPU time instead of the wall clock: steadier on a busy
machine. Read medians, and run it twice.
"""
from __future__ import annotations

import argparse
import statistics
import time
import timeit

import numpy as np
from numba import njit

from numgrad.kernels.cpu.mathfuncs import fast_exp, fast_log, fast_sigmoid, fast_tanh

try:
    import torch
except ImportError:  # PyTorch is optional here
    torch = None


@njit(cache=True)
def exp_loop(x, out):
    for i in range(x.size):
        out[i] = fast_exp(x[i])


@njit(cache=True)
def log_loop(x, out):
    for i in range(x.size):
        out[i] = fast_log(x[i])


@njit(cache=True)
def tanh_loop(x, out):
    for i in range(x.size):
        out[i] = fast_tanh(x[i])


@njit(cache=True)
def sigmoid_loop(x, out):
    for i in range(x.size):
        out[i] = fast_sigmoid(x[i])


@njit(cache=True)
def np_exp_loop(x, out):
    for i in range(x.size):
        out[i] = np.exp(x[i])


@njit(cache=True)
def np_log_loop(x, out):
    for i in range(x.size):
        out[i] = np.log(x[i])


@njit(cache=True)
def np_tanh_loop(x, out):
    for i in range(x.size):
        out[i] = np.tanh(x[i])


@njit(cache=True)
def np_sigmoid_loop(x, out):
    for i in range(x.size):
        out[i] = 1 / (1 + np.exp(-x[i]))


def numpy_sigmoid(x, out):
    np.negative(x, out=out)
    np.exp(out, out=out)
    out += 1
    np.reciprocal(out, out=out)


CASES = {
    "exp": (exp_loop, np_exp_loop, lambda x, o: np.exp(x, out=o)),
    "log": (log_loop, np_log_loop, lambda x, o: np.log(x, out=o)),
    "tanh": (tanh_loop, np_tanh_loop, lambda x, o: np.tanh(x, out=o)),
    "sigmoid": (sigmoid_loop, np_sigmoid_loop, numpy_sigmoid),
}


def medians_us(candidates, repeat, timer):
    """Median microseconds per call of each callable, timed in turns."""
    for fn, _ in candidates.values():
        fn()  # compile / warm up
    times = {name: [] for name in candidates}
    for _ in range(repeat):
        for name, (fn, number) in candidates.items():
            times[name].append(timeit.timeit(fn, number=number, timer=timer) / number)
    return {name: statistics.median(t) * 1e6 for name, t in times.items()}


def main():
    if torch:
        torch.set_num_threads(1)  # here, not at import: asv imports every file in benchmarks/
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=25)
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--cpu-time", action="store_true", help="time CPU time, not wall clock")
    args = ap.parse_args()
    timer = time.process_time if args.cpu_time else time.perf_counter
    rng = np.random.default_rng(0)
    cols = ["fast_*", "np.* in njit", "NumPy"] + (["torch"] if torch else [])
    print(f"n = {args.n:,}, median us per call ({'CPU' if args.cpu_time else 'wall'} time)")
    head = f"{'function':9s}{'dtype':9s}" + "".join(f"{c:>14s}" for c in cols)
    print(head + f"{'fast/NumPy':>12s}")
    for name, (fast, slow, ref) in CASES.items():
        for dt in (np.float32, np.float64):
            x = rng.uniform(-10, 10, args.n).astype(dt)
            if name == "log":
                x = np.abs(x) + dt(1e-3)
            out = np.empty_like(x)
            cands = {
                "fast_*": (lambda: fast(x, out), 5),
                "np.* in njit": (lambda: slow(x, out), 1),
                "NumPy": (lambda: ref(x, out), 5),
            }
            if torch:
                tx, to = torch.from_numpy(x), torch.from_numpy(out)
                tf = {"sigmoid": torch.sigmoid}.get(name) or getattr(torch, name)
                cands["torch"] = (lambda: tf(tx, out=to), 5)
            t = medians_us(cands, args.repeat, timer)
            print(f"{name:9s}{dt.__name__:9s}" + "".join(f"{t[c]:14.0f}" for c in cols)
                  + f"{t['fast_*'] / t['NumPy']:12.2f}")


if __name__ == "__main__":
    main()
