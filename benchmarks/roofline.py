"""How fast a model's training step could be on this machine at best (issue 29): the matrix
products of one numgrad step, counted, against the machine's fastest matrix product.

    python benchmarks/roofline.py [MODEL ...] [--threads N] [--repeat N]

For each model of ``models.py`` (MODEL a prefix of its name; all by default):

- **GFLOP**: the floating-point operations of the step's matrix products (``2·m·k·n`` a
  product, batched ones times their batch), counted by wrapping ``numpy.matmul`` and
  ``numpy.dot`` around one eager numgrad step: every product numgrad runs (linear layers,
  convolutions through their GEMMs, the LSTM's gates, attention's batched products) goes
  through one of the two. Elementwise work, reductions, copies and the optimizer are not
  counted: the bound below leaves them out, so it is lower than any real step.
- **products ms**: the same products replayed back to back as contiguous ``numpy.matmul`` calls
  of their shapes at ``--threads`` BLAS threads, and as ``torch.matmul`` calls (PyTorch's
  BLAS): the time the products alone take here by either library's kernels.
- **in step ms**: the wall time a real eager numgrad step spends inside those products (the
  union of their calls' intervals, on any thread; median of the steps): against the replay, what
  the step's setting costs them (caches, threads, their hand-over), or gains them: numgrad
  splits a large product over its threads, each part on one BLAS thread, and runs independent
  products at once, which can take less time than the replay's products on BLAS's threads.
- **peak ms**: GFLOP at the machine's fastest product (the best of a 2048³ float32 product by
  NumPy's BLAS and by PyTorch, at the same threads): no kernel of any library does them faster.
- **PyTorch ms**: PyTorch's eager step, median, in the same run; ``products/PT`` is the faster
  replay's share of it, the least ratio that a step whose products run on this machine's BLAS
  libraries can reach; ``bound/PT`` the least that any step doing these products can reach
  (peak ms / PyTorch ms).

A ratio goal below ``bound/PT`` is out of reach on this machine whatever is fused: the step's
products alone, at the machine's peak, take longer.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import threading
import time

os.environ.setdefault("NUMGRAD_QUIET", "1")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from models import MODELS  # noqa: E402

import numpy as np  # noqa: E402

import numgrad  # noqa: E402

try:
    import torch
except ImportError:  # PyTorch is optional here
    torch = None


def _product_shape(a, b):
    """``(batch, m, k, n, dtype)`` of ``a @ b`` (NumPy's matmul rules), or None for a product
    that is not of float arrays."""
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype.kind not in "fc" or b.dtype.kind not in "fc" or a.ndim == 0 or b.ndim == 0:
        return None
    m = a.shape[-2] if a.ndim >= 2 else 1
    k = a.shape[-1]
    n = b.shape[-1] if b.ndim >= 2 else 1
    batch = int(np.prod(np.broadcast_shapes(a.shape[:-2], b.shape[:-2]))) if (
        a.ndim > 2 or b.ndim > 2) else 1
    return batch, m, k, n, np.result_type(a, b)


def covered(intervals) -> float:
    """The length of the union of ``(start, end)`` intervals: the time at least one ran."""
    total, reach = 0.0, None
    for start, end in sorted(intervals):
        if reach is None or start > reach:
            total += end - start
            reach = end
        elif end > reach:
            total += end - reach
            reach = end
    return total


class Products:
    """Within ``with Products() as p:``, every ``numpy.matmul``/``numpy.dot`` of float arrays
    is recorded in ``p.calls`` as ``(batch, m, k, n, dtype)``, and its ``(start, end)``
    ``perf_counter`` times in ``p.intervals``, from any thread."""

    def __enter__(self):
        self.calls, self.intervals, lock = [], [], threading.Lock()
        self._saved = np.matmul, np.dot

        def recorder(fn):
            def recorded(a, b, *args, **kwargs):
                shape = _product_shape(a, b)
                start = time.perf_counter()
                result = fn(a, b, *args, **kwargs)
                if shape is not None:
                    end = time.perf_counter()
                    with lock:
                        self.calls.append(shape)
                        self.intervals.append((start, end))
                return result
            return recorded

        np.matmul, np.dot = recorder(np.matmul), recorder(np.dot)
        return self

    def __exit__(self, *exc):
        np.matmul, np.dot = self._saved
        return False

    @property
    def flops(self) -> int:
        return sum(2 * batch * m * k * n for batch, m, k, n, _ in self.calls)


def median_ms(fn, repeat: int) -> float:
    for _ in range(2):
        fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def replay(calls, lib=np):
    """A function that runs ``calls``' products back to back, contiguous, at their shapes, by
    ``lib.matmul`` (NumPy's BLAS, or PyTorch's)."""
    operands = []
    rng = np.random.default_rng(0)
    for batch, m, k, n, dtype in calls:
        lead = (batch,) if batch > 1 else ()
        a = rng.standard_normal(lead + (m, k)).astype(dtype)
        b = rng.standard_normal(lead + (k, n)).astype(dtype)
        out = np.empty(lead + (m, n), dtype)
        if lib is not np:
            a, b, out = lib.from_numpy(a), lib.from_numpy(b), lib.from_numpy(out)
        operands.append((a, b, out))
    matmul = lib.matmul

    def run():
        for a, b, out in operands:
            matmul(a, b, out=out)
    return run


def peak_gflops(repeat: int) -> tuple[float, float]:
    """GFLOP/s of a 2048³ float32 product: NumPy's BLAS, and PyTorch's (nan without it)."""
    size = 2048
    a = np.random.default_rng(0).standard_normal((size, size)).astype(np.float32)
    out = np.empty_like(a)
    flop = 2 * size ** 3
    ours = flop / median_ms(lambda: np.matmul(a, a, out=out), repeat) / 1e6
    theirs = float("nan")
    if torch is not None:
        t = torch.from_numpy(a)
        o = torch.empty_like(t)
        theirs = flop / median_ms(lambda: torch.mm(t, t, out=o), repeat) / 1e6
    return ours, theirs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=9)
    args = parser.parse_args()
    numgrad.set_num_threads(args.threads)
    if torch is not None:
        torch.set_num_threads(args.threads)
    ours, theirs = peak_gflops(args.repeat)
    peak = max(ours, theirs) if theirs == theirs else ours
    print(f"{args.threads} thread(s); the fastest float32 product (2048^3): NumPy's BLAS "
          f"{ours:.0f} GFLOP/s, PyTorch {theirs:.0f} GFLOP/s; medians of {args.repeat}")
    print(f"{'model':52s} {'GFLOP':>6s} {'products':>8s} {'by PT':>6s} {'in step':>7s} "
          f"{'peak':>6s} {'PyTorch':>7s} {'products/PT':>11s} {'bound/PT':>8s}")
    for name, make in MODELS.items():
        if args.models and not any(name.startswith(p) for p in args.models):
            continue
        step = make(numgrad)
        step()
        step()
        with Products() as products:
            step()
        gflop = products.flops / 1e9
        inside = []
        for _ in range(args.repeat):
            with Products() as timed:
                step()
            inside.append(covered(timed.intervals) * 1e3)
        in_step = statistics.median(inside)
        products_ms = median_ms(replay(products.calls), args.repeat)
        nan = float("nan")
        by_torch = median_ms(replay(products.calls, torch), args.repeat) if torch else nan
        fastest = min(products_ms, by_torch) if by_torch == by_torch else products_ms
        peak_ms = gflop / peak * 1e3
        theirs_ms = median_ms(make(torch), args.repeat) if torch is not None else nan
        print(f"{name:52s} {gflop:6.2f} {products_ms:8.1f} {by_torch:6.1f} {in_step:7.1f} "
              f"{peak_ms:6.1f} {theirs_ms:7.1f} {fastest / theirs_ms:11.2f} "
              f"{peak_ms / theirs_ms:8.2f}")


if __name__ == "__main__":
    main()
