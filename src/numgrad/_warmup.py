"""``python -m numgrad warmup``: compile every kernel ahead of use and say where the cache is.

Numba compiles a kernel for each signature on its first call and, with ``cache=True``, stores the
machine code so later processes load it. Warming up runs every registered op's samples forward and
backward in float32 and float64, which calls every kernel with the signatures real programs use,
then large arrays (the multi-threaded kernels) and an optimiser step, in one process per core.
Where the package folder is not writable (a system-wide or read-only install), Numba keeps the
cache in the user's cache folder instead (``$XDG_CACHE_HOME/numba`` or ``~/.cache/numba``), or in
``NUMBA_CACHE_DIR`` if that is set; the generated elementwise kernels live in numgrad's own cache
folder (``kernels/codegen.py``).
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


def _run_samples(names, done=None) -> None:
    """Runs the samples of the ops ``names`` forward and backward in float32 and float64."""
    import numgrad
    from numgrad.ops import REGISTRY

    rng = np.random.default_rng(0)
    for name in names:
        for sample in REGISTRY[name].samples:
            for dtype in ("float32", "float64"):
                args = [numgrad.tensor(rng.uniform(sample.low, sample.high, s).astype(dtype),
                                       requires_grad=sample.grad) for s in sample.shapes]
                out = sample.call(numgrad, *args)
                outs = out if isinstance(out, tuple) else (out,)
                outs = [o for o in outs if o.requires_grad]
                if outs:
                    numgrad.autograd.backward(outs, [numgrad.ones_like(o) for o in outs])
        if done is not None:
            done(name)


def _part(index: int, parts: int) -> None:
    """One worker's share of the ops (every ``parts``-th, from ``index``); the first worker also
    takes the large-array and optimiser kernels. Prints each op's name when it is done."""
    import numgrad
    from numgrad.ops import REGISTRY

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _run_samples(sorted(REGISTRY)[index::parts], lambda name: print(name, flush=True))
        if index == 0:
            _large_and_optimiser_kernels(numgrad, np.random.default_rng(0))
            print("large and optimiser kernels", flush=True)


def warmup(jobs: int | None = None) -> float:
    """Compiles every kernel: every registered op's samples forward and backward in float32 and
    float64, then large arrays (the multi-threaded kernels) and an optimiser step. The work is
    shared by ``jobs`` processes (one per core by default: Numba compiles holding the GIL, so
    threads would not help), each writing to the same cache; this process then runs it all once
    more, loading what they compiled (and compiling anything their concurrent writes to a
    cache index lost)."""
    import os
    import subprocess
    import sys
    import threading

    import numgrad
    from numgrad.ops import REGISTRY

    start = time.perf_counter()
    jobs = max(1, jobs or min(os.cpu_count() or 1, 4))
    if jobs > 1:
        env = dict(os.environ, NUMGRAD_QUIET="1")
        code = "import sys; from numgrad._warmup import _part; _part(int(sys.argv[1]), int(sys.argv[2]))"
        workers = [subprocess.Popen([sys.executable, "-c", code, str(i), str(jobs)], env=env,
                                    stdout=subprocess.PIPE, text=True) for i in range(jobs)]
        items = sorted(REGISTRY) + ["large and optimiser kernels"]
        bar = iter(_progress(items, f"compiling kernels ({jobs} processes)"))

        def follow(worker, lock=threading.Lock()):
            for _ in worker.stdout:
                with lock:
                    next(bar, None)

        readers = [threading.Thread(target=follow, args=(w,)) for w in workers]
        for reader in readers:
            reader.start()
        for reader, worker in zip(readers, workers):
            reader.join()
            if worker.wait():
                raise RuntimeError(f"a warmup worker failed (exit code {worker.returncode})")
        for _ in bar:  # (closes the bar)
            pass
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _run_samples(sorted(REGISTRY) if jobs > 1 else _progress(sorted(REGISTRY),
                                                                 "compiling kernels"))
        _large_and_optimiser_kernels(numgrad, np.random.default_rng(0))
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


def main(argv=()) -> int:
    jobs = None
    if argv[:1] == ["--jobs"] and len(argv) == 2:
        jobs = int(argv[1])
    elif argv:
        print("usage: python -m numgrad warmup [--jobs N]")
        return 2
    seconds = warmup(jobs)
    signatures = sum(len(k.signatures) for k in kernels())
    print(f"compiled or loaded {signatures} kernel signatures in {seconds:.1f} s")
    print("kernel cache:")
    for path in cache_locations():
        print(f"  {path}")
    return 0
