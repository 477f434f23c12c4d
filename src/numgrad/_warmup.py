"""``python -m numgrad warmup``: compile every kernel ahead of use and say where the cache is.

Numba compiles a kernel for each signature on its first call and, with ``cache=True``, stores the
machine code so later processes load it. Warming up runs every registered op's samples forward and
backward in float32 and float64, which calls every kernel with the signatures real programs use,
then large arrays (the multi-threaded kernels) and an optimiser step.
Where the package folder is not writable (a system-wide or read-only install), Numba keeps the
cache in the user's cache folder instead (``$XDG_CACHE_HOME/numba`` or ``~/.cache/numba``), or in
``NUMBA_CACHE_DIR`` if that is set.
"""
from __future__ import annotations

import time
import warnings

import numpy as np


def _progress(items, desc: str):
    try:
        from tqdm.auto import tqdm
    except ImportError:  # tqdm is optional: plain lines instead of a bar
        items = list(items)
        for i, item in enumerate(items, 1):
            if i == 1 or i == len(items) or i % 10 == 0:
                print(f"{desc}: {i}/{len(items)}", flush=True)
            yield item
        return
    yield from tqdm(items, desc=desc, unit="op")


def kernels() -> list:
    """Every CPU Numba dispatcher of ``numgrad.kernels`` and of the kernel modules generated so
    far in this process (``kernels/codegen.py``; templates are not kernels)."""
    import importlib
    import pkgutil
    import sys

    from numba.core.registry import CPUDispatcher

    from . import kernels as package

    modules = [importlib.import_module(info.name)
               for info in pkgutil.walk_packages(package.__path__, package.__name__ + ".")
               if ".templates" not in info.name]
    modules += [m for name, m in list(sys.modules.items())
                if name.startswith("numgrad.kernels.generated.cpu_")]
    return [v for m in modules for v in vars(m).values() if isinstance(v, CPUDispatcher)]


def cache_locations() -> list[str]:
    """The folders the kernels' caches are in (one per kernel module)."""
    paths = set()
    for k in kernels():
        cache = getattr(k, "_cache", None)
        locator = getattr(cache, "_cache_path", None)
        if locator:
            paths.add(locator)
    return sorted(paths)


def warmup() -> float:
    """Runs every registered op's samples forward and backward in float32 and float64."""
    import numgrad
    from numgrad.ops import REGISTRY

    start = time.perf_counter()
    rng = np.random.default_rng(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in _progress(sorted(REGISTRY), "compiling kernels"):
            for sample in REGISTRY[name].samples:
                for dtype in ("float32", "float64"):
                    args = [numgrad.tensor(rng.uniform(sample.low, sample.high, s).astype(dtype),
                                           requires_grad=sample.grad) for s in sample.shapes]
                    out = sample.call(numgrad, *args)
                    outs = out if isinstance(out, tuple) else (out,)
                    outs = [o for o in outs if o.requires_grad]
                    if outs:
                        numgrad.autograd.backward(outs, [numgrad.ones_like(o) for o in outs])
        _large_and_optimiser_kernels(numgrad, rng)
    return time.perf_counter() - start


def _large_and_optimiser_kernels(numgrad, rng) -> None:
    """The kernels the samples (all small) do not reach: the multi-threaded variants that float
    arrays of ``PARALLEL_THRESHOLD`` elements or more use (unary, binary, with a number, sum, the
    optimisers' fused update), in float32 and float64, and the large integer sum."""
    from numgrad.kernels.cpu.elementwise import PARALLEL_THRESHOLD

    n = PARALLEL_THRESHOLD
    for dtype in ("float32", "float64"):
        x = numgrad.tensor(rng.uniform(-1, 1, n).astype(dtype), requires_grad=True)
        y = numgrad.tensor(rng.uniform(-1, 1, n).astype(dtype))
        out = (numgrad.tanh(x * 1.5 + 0.5) * numgrad.sigmoid(x) + x / y - x.relu()).sum()
        out.backward()
        optimiser = numgrad.optim.SGD([x], lr=0.1)
        optimiser.step()
        small = numgrad.tensor(rng.uniform(-1, 1, 8).astype(dtype), requires_grad=True)
        small.grad = numgrad.ones_like(small)
        numgrad.optim.SGD([small], lr=0.1).step()
    numgrad.tensor(rng.integers(-5, 5, n)).sum()


def main() -> int:
    seconds = warmup()
    signatures = sum(len(k.signatures) for k in kernels())
    print(f"compiled or loaded {signatures} kernel signatures in {seconds:.1f} s")
    print("kernel cache:")
    for path in cache_locations():
        print(f"  {path}")
    return 0
