"""``python -m numgrad warmup``: compile the kernels ahead of use and say where the cache is.

Numba compiles a kernel for each signature on its first call and, with ``cache=True``, stores the
machine code so later processes load it. Warming up runs registered ops' samples forward and
backward in float32 and float64, which calls their kernels with the signatures real programs use,
then large arrays (the multi-threaded kernels), optimiser steps and a few first programs. By
default it leaves out the families a first program rarely uses (``RARE_FAMILIES``: 3-D pooling,
interpolation, linalg decompositions ...), which compile on their first use as before;
``--all`` compiles those too. The work is handed out, largest first, to one process per core.
Where the package folder is not writable (a system-wide or read-only install), Numba keeps the
cache in the user's cache folder instead (``$XDG_CACHE_HOME/numba`` or ``~/.cache/numba``), or in
``NUMBA_CACHE_DIR`` if that is set; the generated elementwise kernels live in numgrad's own cache
folder (``kernels/codegen.py``).
"""
from __future__ import annotations

import importlib
import os
import subprocess
import sys
import threading
import time
import warnings
import pkgutil
import argparse

import numpy as np
from numba.core.registry import CPUDispatcher
import numgrad
from . import kernels as package
from numgrad.ops import REGISTRY
from numgrad.kernels.cpu.elementwise import PARALLEL_THRESHOLD


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
    """Runs the samples of the ops ``names`` forward and backward in float32 and float64 (each op's
    inputs drawn from its own seeded generator, so every process calls it with the same ones)."""
    for name in names:
        rng = np.random.default_rng(0)
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


# The families a first program rarely uses. ``python -m numgrad warmup`` leaves them out (their
# kernels compile on first use, as without a warmup: a second or a few a family); ``--all``
# compiles them too. Each is a description and a test of (the op's name or an extra item's, the
# ``numgrad.ops`` module that registers the op).
RARE_FAMILIES = (
    ("3-D pooling and padding",
     lambda op, module: module in ("pooling", "padding") and "3d" in op),
    ("interpolation (F.interpolate, nn.Upsample)",
     lambda op, module: module == "upsample" and "upsample" in op),
    ("torch.linalg's decompositions, inverses and solvers",
     lambda op, module: module in ("linalg_solve", "linalg_decompositions", "linalg_determinants",
                                   "linalg_ldl")),
    ("fold/unfold and transposed convolution",
     lambda op, module: op in ("im2col", "col2im") or op.startswith("convolution_transpose")),
    ("distances (cdist, dist)", lambda op, module: op in ("cdist", "_euclidean_dist", "dist")),
    ("median and mode", lambda op, module: op.startswith(("median", "nanmedian", "mode"))),
    ("activations beyond the common ones (Mish, SELU, CELU, Hardswish, Hardsigmoid, LogSigmoid)",
     lambda op, module: module == "activation"
     and op.startswith(("mish", "selu", "celu", "hardswish", "hardsigmoid", "log_sigmoid"))),
    ("special functions (logaddexp, logaddexp2, hypot, xlogy, atan2, sinc)",
     lambda op, module: op.startswith(("logaddexp", "hypot", "xlogy", "atan2", "sinc"))),
    ("the multi-threaded kernels of float64 arrays of 2**19 elements or more",
     lambda op, module: op == "large:float64"),
    ("histc, bincount, searchsorted, cummax/cummin, logcumsumexp",
     lambda op, module: op in ("histc", "bincount", "searchsorted", "cummax", "cummin",
                               "logcumsumexp")),
)

# The families whose kernels the others reuse (the basic binary and unary ones, reductions)
# come first, so that two workers seldom compile one signature each; then the rest by name.
_FIRST = ("elementwise", "reduction", "linalg", "activation", "loss", "normalization", "indexing",
          "gather", "conv", "pooling", "exponents_and_rounding", "trigonometric",
          "special_functions", "ternary", "division", "logical_bitwise")
_CHUNK = 6  # ops of one family handed to a worker at a time
# Work that is not an op's samples: the multi-threaded kernels of large arrays with optimiser
# steps, per dtype (the largest items, handed out first), and a few first programs.
_LARGE = ("large:float32", "large:float64")
_PROGRAMS = "programs"


def rare(name: str) -> str | None:
    """The description of the rarely used family that the op or extra item ``name`` belongs to;
    None for a common one."""
    module = REGISTRY[name].__module__.rsplit(".", 1)[-1] if name in REGISTRY else ""
    return next((family for family, test in RARE_FAMILIES if test(name, module)), None)


def plan(everything: bool = False, names=None) -> list[tuple[str, ...]]:
    """The work, in the order it is handed out: the large arrays (the largest items) first, then
    tuples of op names (a few ops of one family at a time: they share kernels, which then compile
    in one process), then the first programs. Without ``everything`` the ops and items of
    ``RARE_FAMILIES`` are left out; with it their ops come last, a family at a time. ``names``
    (op names and extra items, rare or not), if given, is all the work, in that order."""
    if names is not None:
        unknown = [n for n in names if n not in REGISTRY and n not in (*_LARGE, _PROGRAMS)]
        if unknown:
            raise ValueError(f"unknown warmup item(s): {', '.join(unknown)} (registered op names "
                             f"of numgrad.ops.REGISTRY, {', '.join(_LARGE)} or {_PROGRAMS})")
        return [(name,) for name in dict.fromkeys(names)]
    families = [family for family, _ in RARE_FAMILIES]
    common: dict[tuple, list[str]] = {}
    rarely: dict[tuple, list[str]] = {}
    for op in sorted(REGISTRY):
        family = rare(op)
        if family is None:
            module = REGISTRY[op].__module__.rsplit(".", 1)[-1]
            key = (_FIRST.index(module) if module in _FIRST else len(_FIRST), module)
            common.setdefault(key, []).append(op)
        elif everything:
            rarely.setdefault((families.index(family),), []).append(op)

    def chunks(groups):
        return [tuple(ops[i:i + _CHUNK]) for _, ops in sorted(groups.items())
                for i in range(0, len(ops), _CHUNK)]

    large = [(item,) for item in _LARGE if everything or rare(item) is None]
    return large + chunks(common) + [(_PROGRAMS,)] + chunks(rarely)


def _run_items(names) -> None:
    """Runs the work ``names`` (op names and the extra items of ``plan``)."""
    for name in names:
        if name in _LARGE:
            _large_and_optimiser_kernels(numgrad, np.random.default_rng(0), name.split(":")[1])
        elif name == _PROGRAMS:
            _first_programs(numgrad)
        else:
            _run_samples([name])


_DONE = "numgrad-warmup: done"


def _serve() -> None:
    """A worker process: runs the items named on each line of its stdin, answering each line with
    ``_DONE`` when it is done, until stdin closes."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for line in sys.stdin:
            _run_items(line.split())
            print(_DONE, flush=True)


class _Bar:
    """A progress bar (tqdm's where it is installed, else a line every tenth of the way)."""

    def __init__(self, total: int, desc: str):
        self.total, self.desc, self.n = total, desc, 0
        try:
            from tqdm.auto import tqdm
        except ImportError:  # tqdm is optional: plain lines instead of a bar
            self.bar = None
            print(f"{desc}: 0/{total}", flush=True)
        else:
            self.bar = tqdm(total=total, desc=desc, unit="op")

    def update(self, n: int) -> None:
        if self.bar is not None:
            self.bar.update(n)
            return
        step = max(1, self.total // 10)
        if (self.n + n) // step > self.n // step or self.n + n == self.total:
            print(f"{self.desc}: {self.n + n}/{self.total}", flush=True)
        self.n += n

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _share(items, jobs: int) -> None:
    """Runs ``items`` in ``jobs`` worker processes (Numba compiles holding the GIL, so threads
    would not help), each writing to the same cache: each worker is handed the next item as soon
    as it is done with its last, so the work stays balanced to the end."""
    env = dict(os.environ, NUMGRAD_QUIET="1")
    code = "from numgrad._warmup import _serve; _serve()"
    workers = [subprocess.Popen([sys.executable, "-c", code], env=env, stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, text=True)
               for _ in range(min(jobs, len(items)))]
    queue, lock, failed = iter(items), threading.Lock(), []
    bar = _Bar(sum(len(item) for item in items), f"compiling kernels ({len(workers)} processes)")

    def feed(worker) -> None:
        try:
            while not failed:
                with lock:
                    item = next(queue, None)
                if item is None:
                    break
                worker.stdin.write(" ".join(item) + "\n")
                worker.stdin.flush()
                if not any(line.strip() == _DONE for line in worker.stdout):  # (stops at _DONE)
                    failed.append(worker)  # it exited: its traceback is on stderr
                    break
                with lock:
                    bar.update(len(item))
        except OSError:  # (a broken pipe: it exited)
            failed.append(worker)
        finally:
            try:
                worker.stdin.close()
            except OSError:
                pass

    feeders = [threading.Thread(target=feed, args=(w,)) for w in workers]
    for feeder in feeders:
        feeder.start()
    for feeder in feeders:
        feeder.join()
    bar.close()
    codes = [worker.wait() for worker in workers]
    if failed or any(codes):
        raise RuntimeError(f"a warmup worker failed (exit codes {codes})")


def warmup(jobs: int | None = None, everything: bool = False, names=None) -> float:
    """Compiles the kernels of ``plan(everything)``: registered ops' samples forward and backward
    in float32 and float64, large arrays (the multi-threaded kernels) with optimiser steps, and a
    few first programs; ``everything`` adds the ``RARE_FAMILIES``; ``names`` chooses the work
    instead (see ``plan``). The work is shared by ``jobs``
    processes (one per core by default), largest items first; this process then runs it all once
    more, loading what they compiled (and compiling anything their concurrent writes to a cache
    index lost). Returns the seconds it took."""
    start = time.perf_counter()
    items = plan(everything, names)
    jobs = max(1, jobs or min(os.cpu_count() or 1, 4))
    if jobs > 1:
        _share(items, jobs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        bar = _Bar(sum(len(item) for item in items), "compiling kernels") if jobs == 1 else None
        for item in items:
            _run_items(item)
            if bar is not None:
                bar.update(len(item))
        if bar is not None:
            bar.close()
    return time.perf_counter() - start


def _large_and_optimiser_kernels(numgrad, rng, dtype: str = "float32") -> None:
    """The kernels the samples (all small) do not reach: the multi-threaded variants that float
    arrays of ``PARALLEL_THRESHOLD`` elements or more use (unary, binary, with a number, sum, the
    optimisers' fused update) in ``dtype``, and with float32 the large integer sum."""
    n = PARALLEL_THRESHOLD
    x = numgrad.tensor(rng.uniform(-1, 1, n).astype(dtype), requires_grad=True)
    y = numgrad.tensor(rng.uniform(-1, 1, n).astype(dtype))
    out = (numgrad.tanh(x * 1.5 + 0.5) * numgrad.sigmoid(x) + x / y - x.relu()).sum()
    out.backward()
    optimiser = numgrad.optim.SGD([x], lr=0.1)
    optimiser.step()
    small = numgrad.tensor(rng.uniform(-1, 1, 8).astype(dtype), requires_grad=True)
    small.grad = numgrad.ones_like(small)
    numgrad.optim.SGD([small], lr=0.1).step()
    if dtype == "float32":
        numgrad.tensor(rng.integers(-5, 5, n)).sum()


def _first_programs(numgrad) -> None:
    """A few steps of a first program's models in float32 (an MLP and a small CNN with
    cross-entropy, SGD with momentum and Adam, the accuracy of their argmax; an embedding with
    LayerNorm and GELU), for the signatures their idioms add to the samples' (integer
    comparisons, broadcasting). The global random state is left as it was."""
    nn, F, optim = numgrad.nn, numgrad.nn.functional, numgrad.optim
    with numgrad.random.fork_rng():
        x, labels = numgrad.randn(8, 1, 12, 12), numgrad.randint(0, 10, (8,))
        numgrad.randperm(8)  # (a DataLoader's shuffle)
        cnn = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(),
                            nn.MaxPool2d(2), nn.Dropout(0.25), nn.Flatten(), nn.Linear(144, 10))
        mlp = nn.Sequential(nn.Flatten(), nn.Linear(144, 32), nn.ReLU(), nn.Dropout(0.2),
                            nn.Linear(32, 10))
        for model in (mlp, cnn):
            for optimiser in (optim.SGD(model.parameters(), lr=0.01, momentum=0.9),
                              optim.Adam(model.parameters()), optim.AdamW(model.parameters())):
                optimiser.zero_grad()
                logits = model(x)
                F.cross_entropy(logits, labels).backward()
                optimiser.step()
                with numgrad.no_grad():
                    (logits.argmax(1) == labels).float().mean().item()
                    F.softmax(logits, dim=1).max(1)
            model.eval()
            model(x)
        tokens, target = numgrad.randint(0, 20, (4, 6)), numgrad.randn(4, 1)
        embed, norm, head = nn.Embedding(20, 8), nn.LayerNorm(8), nn.Linear(8, 1)
        optimiser = optim.Adam([*embed.parameters(), *norm.parameters(), *head.parameters()])
        optimiser.zero_grad()
        F.mse_loss(head(F.gelu(norm(embed(tokens))).mean(1)), target).backward()
        optimiser.step()


def main(argv=()) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m numgrad warmup",
        description="Compiles numgrad's CPU kernels ahead of use, so that a program's first run "
        "does not wait for them, and prints where they are cached. By default it compiles what "
        "PyTorch programs use most, in float32 and float64: elementwise math, reductions, "
        "matmul, softmax/log_softmax and the losses, indexing, conv2d and 2-D pooling, "
        "BatchNorm/LayerNorm/GroupNorm, embedding, dropout, the optimisers, and the "
        "multi-threaded kernels of large float32 arrays. The rarely used families listed under "
        "--all are left to compile on their first use (a second or a few each), as they would "
        "without a warmup.")
    parser.add_argument("--all", dest="everything", action="store_true",
                        help="also compile the rarely used families: "
                        + "; ".join(family for family, _ in RARE_FAMILIES))
    parser.add_argument("--jobs", type=int, metavar="N",
                        help="compile in N processes (default: one per core, at most 4)")
    parser.add_argument("names", nargs="*", metavar="NAME",
                        help="compile only these: registered op names (numgrad.ops.REGISTRY, "
                        f"such as addmm or convolution), {', '.join(_LARGE)} (the "
                        f"multi-threaded kernels of large arrays) or {_PROGRAMS} (a few first "
                        "programs' steps)")
    try:
        args = parser.parse_args(list(argv))
        if args.names:
            plan(names=args.names)
    except SystemExit as exit:  # --help, or a usage error (argparse printed which)
        return exit.code or 0
    except ValueError as error:
        parser.print_usage(sys.stderr)
        print(f"{parser.prog}: error: {error}", file=sys.stderr)
        return 2
    seconds = warmup(args.jobs, args.everything, args.names or None)
    signatures = sum(len(k.signatures) for k in kernels())
    print(f"compiled or loaded {signatures} kernel signatures in {seconds:.1f} s")
    if not args.everything and not args.names:
        print("left to compile on first use (`--all` compiles them too): "
              + "; ".join(family for family, _ in RARE_FAMILIES))
    print("kernel cache:")
    for path in cache_locations():
        print(f"  {path}")
    return 0
