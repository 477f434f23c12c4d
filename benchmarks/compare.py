"""Side-by-side timings: numgrad eager and compiled against PyTorch, JAX (each when installed) and
NumPy, in one process.

    python benchmarks/compare.py [--repeat N] [--models [--model-repeat N]] [--sizes]

Prints, for each workload, the median microseconds of numgrad eager, numgrad compiled
(``numgrad.compile`` of the same function), PyTorch eager (two threads, as the issues measure
it), JAX ``jit(grad)`` and NumPy forward-only (the floor), with the ratios eager/PyTorch,
compiled/PyTorch and compiled/JAX. Then, per workload, what compiling costs in fresh processes:
the first compiled result with an empty cache for the compiled program (the eager kernels warm)
and with a warm one (re-traced, the generated code loaded). Also times fresh processes that
import numgrad and run the seed walkthrough, with an empty and with a warm Numba cache. Machines
are noisy: read medians and ratios, not single runs.

``--models`` times instead the training steps of the models people train (``models.py``: the
MNIST-example CNN, a word-level LSTM language model, a tiny GPT, a ResNet block, a transposed
convolution), in milliseconds, each after three warm-up steps (kernels compiled, the compiled step
traced and its program compiled), with the ratios to PyTorch eager. ``--sizes`` times large
elementwise ops at 4M and 10M elements (nanoseconds per element; issue 38's cliff).
With ``--own-process`` each library's step runs in a fresh process of its own, as a user's
training script runs it (in one process, what ran before changes glibc's heap thresholds for what
runs after). ``--formula`` times a user's fused formula (``numgrad.library.elementwise``) against the same math
composed from built-in ops, eager and compiled (``user_formula.py``; issue 36).
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

os.environ.setdefault("NUMGRAD_QUIET", "1")  # (no first-compile line inside the tables)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from models import MODELS  # noqa: E402
from workloads import WORKLOADS, chain_200_effect, jax_workloads  # noqa: E402  (shared with asv)

import numgrad  # noqa: E402

try:
    import torch
except ImportError:  # PyTorch is optional here
    torch = None


def median_us(fn, repeat: int) -> float:
    # PyTorch's OpenMP threads spin for a while after its last op; on a 2-core machine they would
    # steal the CPU from whatever is timed next. Let them go to sleep first.
    time.sleep(0.5)
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


def _user_env(**extra) -> dict:
    """The environment of a fresh process as a user's: Python writes and reads its bytecode
    caches (``pip install`` compiles them; a sandbox's PYTHONDONTWRITEBYTECODE would make every
    import compile every module from source again, for numgrad, NumPy, Numba and PyTorch)."""
    env = dict(os.environ, **extra)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def fresh_process_seconds(cache_dir: str, runs: int) -> list[float]:
    env = _user_env(NUMBA_CACHE_DIR=cache_dir)
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
        subprocess.run([sys.executable, "-c", script], check=True, env=_user_env())
        times.append(time.perf_counter() - start)
    return times


COMPILE_SCRIPT = """
import sys, time
sys.path.insert(0, {here!r})
start = time.perf_counter()
import numgrad
import workloads
imported = time.perf_counter()
make = dict((n, m) for n, (m, _) in workloads.WORKLOADS.items())[{name!r}]
if {warm_eager}:
    make(numgrad)()  # the eager kernels' cache, warm (not timed)
run = numgrad.compile(make(numgrad))
begin = time.perf_counter()
while True:
    run()
    if run._entries and not isinstance(run._entries[-1][1], numgrad.compiler._Eager):
        break
run()  # the first compiled result
print(time.perf_counter() - begin, begin - imported)
"""


def compile_seconds(name: str) -> tuple[float, float]:
    """(first compiled result with an empty program cache and warm eager kernels, the same in
    a second process with the program cache warm: from just after ``import numgrad``)."""
    here = os.path.dirname(os.path.abspath(__file__))
    folder = tempfile.mkdtemp(prefix="numgrad-compile-")
    env = _user_env(NUMGRAD_CACHE_DIR=folder, NUMBA_CACHE_DIR=folder, NUMGRAD_QUIET="1")
    try:
        results = []
        for warm_eager in (True, False):
            script = COMPILE_SCRIPT.format(here=here, name=name, warm_eager=warm_eager)
            out = subprocess.run([sys.executable, "-c", script], env=env, check=True,
                                 capture_output=True, text=True).stdout.split()
            results.append(float(out[0]))
        return results[0], results[1]
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def blas_line() -> str:
    """Which kernels NumPy's BLAS runs (threadpoolctl, where installed) and the OpenBLAS settings
    of the environment. numgrad's matrix products are NumPy's, so they decide the workloads with
    products; PyTorch's (MKL) and JAX's (XLA) are not affected by them. Some machines pin
    OPENBLAS_CORETYPE because older OpenBLAS builds fail on their processor; with a current
    NumPy that can cost a modern x86 processor its AVX-512 kernels (on this project's machines,
    Haswell's instead of SkylakeX's made a 64x784 @ 784x256 float32 product 1.6x slower)."""
    pinned = ", ".join(f"{k}={os.environ[k]}" for k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
                       if k in os.environ) or "none"
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return f"NumPy's BLAS: unknown (no threadpoolctl); OpenBLAS settings: {pinned}"
    blas = [i for i in threadpool_info() if i.get("user_api") == "blas"]
    kind = "; ".join(f"{i.get('internal_api')} {i.get('version')} ({i.get('architecture')} "
                     f"kernels, {i.get('num_threads')} threads)" for i in blas) or "not found"
    return f"NumPy's BLAS: {kind}; OpenBLAS settings in the environment: {pinned}"


MIN_TIMED_S = 1.0  # seconds of timed steps of each library and model, at least (``models``)


def models(repeat: int, cpu_time: bool = False, rounds: int = 3) -> None:
    """The models' steps beside PyTorch's. ``cpu_time``: the process's CPU time instead of the
    wall clock; with ``--threads 1`` (both libraries on one thread) it measures the work of a
    step apart from how it is shared among threads, and a busy machine changes it little.

    The three steps of a model (numgrad eager, compiled, PyTorch) take turns, ``rounds`` turns
    each of ``repeat / rounds`` timed steps, and each median is over all of its turns: a shared
    machine's speed drifts over seconds, and steps timed one library after the other would
    charge the drift to whichever ran in the slow part. Each turn first runs one untimed step,
    while the library that ran before it lets its idle threads go (OpenBLAS's and OpenMP's
    threads spin a while after their last work). A model whose steps are short takes more turns,
    until each library's timed steps add up to ``MIN_TIMED_S`` (the small models' 5-20 ms
    steps: 21 of them read 0.95 in one run and 1.26 in the next)."""
    clock = time.process_time if cpu_time else time.perf_counter
    print(f"numgrad {numgrad.__version__}, torch {torch.__version__ if torch else 'absent'}; "
          f"training steps, medians of {repeat} or more after 3 warm-up steps, in {rounds} turns "
          f"or more (at least {MIN_TIMED_S:g} s of steps each), ms "
          f"{'of CPU time' if cpu_time else 'of wall time'}, {numgrad.get_num_threads()} "
          f"thread(s)")
    print(f"{'model':52s} {'eager':>9s} {'compiled':>9s} {'PyTorch':>9s} {'eager/PT':>8s} "
          f"{'comp/PT':>8s}  compiled key")
    nan = float("nan")
    per_turn = max(1, -(-repeat // rounds))
    for name, make in MODELS.items():
        compiled_step = numgrad.compile(make(numgrad))
        steps = {"eager": make(numgrad), "compiled": compiled_step}
        if torch:
            steps["torch"] = make(torch)
        times: dict = {key: [] for key in steps}
        for key, step in steps.items():
            for _ in range(3):  # (kernels compiled; the compiled step traced, its program built)
                start = time.perf_counter()
                step()
            if key == "eager":
                last = time.perf_counter() - start  # (the third step's time)
        turns = max(rounds, -(-MIN_TIMED_S // max(per_turn * last, 1e-6)))
        for _ in range(int(turns)):
            for key, step in steps.items():
                step()
                for _ in range(per_turn):
                    start = clock()
                    step()
                    times[key].append(clock() - start)
        ours, compiled, theirs = (statistics.median(times[key]) * 1e3 if times.get(key) else nan
                                  for key in ("eager", "compiled", "torch"))
        how = numgrad.compiler.explain(compiled_step).splitlines()[-1].strip()
        print(f"{name:52s} {ours:9.1f} {compiled:9.1f} {theirs:9.1f} {ours / theirs:8.2f} "
              f"{compiled / theirs:8.2f}  {how[:70]}")


OWN_PROCESS_SCRIPT = """
import os, statistics, sys, time
os.environ.setdefault("NUMGRAD_QUIET", "1")
sys.path.insert(0, {folder!r})
from models import MODELS
lib, which, repeat, threads, cpu = {lib!r}, {which!r}, {repeat}, {threads}, {cpu}
if lib == "torch":
    import torch as m
else:
    import numgrad as m
m.set_num_threads(threads)
step = MODELS[which](m)
if lib == "compiled":
    step = m.compile(step)
clock = time.process_time if cpu else time.perf_counter
for _ in range(3):
    step()
times = []
for _ in range(repeat):
    start = clock()
    step()
    times.append(clock() - start)
print(statistics.median(times) * 1e3)
"""


def models_own_process(repeat: int, threads: int, cpu_time: bool = False) -> None:
    """``models``, each library's step in a fresh process of its own, as a user's training
    script runs it: nothing another workload did before (glibc's heap, whose thresholds only
    grow within a process; threads started) helps or hurts it."""
    print(f"numgrad {numgrad.__version__}, torch {torch.__version__ if torch else 'absent'}; "
          f"training steps, each in a fresh process of its own, medians of {repeat} after 3 "
          f"warm-up steps, ms {'of CPU time' if cpu_time else 'of wall time'}, {threads} "
          f"thread(s)")
    print(f"{'model':52s} {'eager':>9s} {'compiled':>9s} {'PyTorch':>9s} {'eager/PT':>8s} "
          f"{'comp/PT':>8s}")
    folder = os.path.dirname(os.path.abspath(__file__))

    def run(lib: str, which: str) -> float:
        script = OWN_PROCESS_SCRIPT.format(folder=folder, lib=lib, which=which, repeat=repeat,
                                           threads=threads, cpu=cpu_time)
        out = subprocess.run([sys.executable, "-c", script], check=True, capture_output=True,
                             text=True, env=dict(os.environ, PYTHONPATH=os.pathsep.join(
                                 p for p in sys.path if p)))
        return float(out.stdout.strip().splitlines()[-1])

    for name in MODELS:
        ours, compiled = run("numgrad", name), run("compiled", name)
        theirs = run("torch", name) if torch else float("nan")
        print(f"{name:52s} {ours:9.1f} {compiled:9.1f} {theirs:9.1f} {ours / theirs:8.2f} "
              f"{compiled / theirs:8.2f}")


def rerun_line(repeat: int) -> None:
    """The re-run path's cost per recorded kernel call: the 200-op chain with a Python effect
    (its Python runs at every call, its kernel calls recorded and run fused) against the same
    function eagerly."""
    keep, numgrad.compiler.choose_faster = numgrad.compiler.choose_faster, False
    try:
        step = numgrad.compile(chain_200_effect(numgrad))
        rerun = median_us(step, repeat)
        (_, entry), = step._entries
        calls = len(entry.plans[0].calls)
    finally:
        numgrad.compiler.choose_faster = keep
    eager = median_us(chain_200_effect(numgrad), repeat)
    print(f"re-run path, 200-op chain with a Python effect ({calls} kernel calls recorded): "
          f"{rerun:.0f} µs re-run, {eager:.0f} µs eagerly; {rerun / calls:.2f} µs per recorded "
          f"call ({eager / calls:.2f} eagerly)")


def size_lines(repeat: int) -> None:
    """Large elementwise ops (float64, forward): nanoseconds per element at 4M and at 10M
    elements, numgrad against PyTorch, and the ratio 10M/4M (above 32 MiB an output is a fresh
    mapping each time, page-faulted in, unless something reuses it: numgrad's pool does)."""
    print("large ops, float64, ns per element: numgrad / PyTorch at 4M, at 10M; 10M/4M for each")
    rng = np.random.default_rng(0)
    for name in ("relu", "exp", "add"):
        per = {}
        for size in (4_000_000, 10_000_000):
            a = rng.standard_normal(size)
            for lib in (numgrad, torch) if torch else (numgrad,):
                x = lib.tensor(a)
                fn = {"relu": lambda: lib.relu(x), "exp": lambda: lib.exp(x),
                      "add": lambda: x + x}[name]
                per[lib.__name__, size] = median_us(fn, repeat) * 1e3 / size
        ours = per["numgrad", 10_000_000] / per["numgrad", 4_000_000]
        theirs = (per["torch", 10_000_000] / per["torch", 4_000_000]) if torch else float("nan")
        print(f"  {name:5s} {per['numgrad', 4_000_000]:6.2f} / "
              f"{per.get(('torch', 4_000_000), float('nan')):6.2f}   "
              f"{per['numgrad', 10_000_000]:6.2f} / "
              f"{per.get(('torch', 10_000_000), float('nan')):6.2f}   "
              f"10M/4M {ours:5.2f} / {theirs:5.2f}")


def formula_lines(repeat: int) -> None:
    """GELU's tanh approximation on 1M float32 elements: a user's fused formula against the same
    math composed from eight built-in ops, forward and forward + backward, eager and compiled,
    with PyTorch's composition for reference (ms, medians). The two numgrad variants are timed
    in alternation, call by call, so that a load that comes and goes (a shared machine) weighs
    on both alike; the ratio is the median of the per-pair ratios."""
    import user_formula

    print(f"user formula vs composed built-in ops, gelu-tanh on 1M float32; medians of "
          f"{repeat} alternating pairs, ms")
    print(f"{'':28s} {'composed':>9s} {'formula':>9s} {'composed/formula':>17s} {'PyTorch':>9s}")
    clock = time.perf_counter
    for backward in (False, True):
        for mode in ("eager", "compiled"):
            wrap = numgrad.compile if mode == "compiled" else (lambda f: f)
            steps = [wrap(user_formula.step(numgrad, fused, backward)) for fused in (False, True)]
            for s in steps:
                s(), s()  # (kernels compiled, a compiled step traced and its program built)
            times: list = [[], []]
            for _ in range(repeat):
                for which, s in enumerate(steps):
                    start = clock()
                    s()
                    times[which].append(clock() - start)
            ratio = statistics.median(a / b for a, b in zip(*times))
            composed, fused = (statistics.median(t) * 1e3 for t in times)
            theirs = median_us(user_formula.step(torch, False, backward), repeat) / 1e3 \
                if torch and mode == "eager" else float("nan")
            label = f"{'fwd+bwd' if backward else 'forward'}, {mode}"
            print(f"  {label:26s} {composed:9.2f} {fused:9.2f} {ratio:17.2f} {theirs:9.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--fresh-runs", type=int, default=5)
    parser.add_argument("--models", action="store_true", help="the models' training steps")
    parser.add_argument("--model-repeat", type=int, default=7)
    parser.add_argument("--rounds", type=int, default=3,
                        help="with --models: the turns that numgrad's and PyTorch's steps take "
                        "(--rounds 1: each library's steps all at once, one after the other)")
    parser.add_argument("--threads", type=int, default=2,
                        help="threads of numgrad and PyTorch alike (default 2, as the speed issue "
                        "measures)")
    parser.add_argument("--own-process", action="store_true",
                        help="with --models: each library's step in a fresh process of its own "
                        "(as a user's script runs it), not all in this one")
    parser.add_argument("--cpu-time", action="store_true",
                        help="with --models: CPU time instead of wall time (with --threads 1, "
                        "each step's work apart from its threading)")
    parser.add_argument("--sizes", action="store_true", help="large ops at 4M and 10M elements")
    parser.add_argument("--formula", action="store_true",
                        help="a user's fused formula against composed built-in ops")
    parser.add_argument("--blas-wait-passive", action="store_true",
                        help="numgrad.set_runtime_defaults(blas_wait='passive') first: OpenBLAS's "
                        "idle threads sleep at once (PyTorch's products are not OpenBLAS's)")
    args = parser.parse_args()
    if args.blas_wait_passive:
        print("set_runtime_defaults:", numgrad.set_runtime_defaults(blas_wait="passive"))
    numgrad.set_num_threads(args.threads)
    if torch:
        torch.set_num_threads(args.threads)  # (2 by default, as the speed issue measured it;
        # here, not at import: asv imports every file in benchmarks/)
    if args.models and args.own_process:
        models_own_process(args.model_repeat, args.threads, args.cpu_time)
        return
    if args.models:
        models(args.model_repeat, args.cpu_time, args.rounds)
        return
    if args.sizes:
        size_lines(args.repeat)
        return
    if args.formula:
        formula_lines(args.repeat)
        return
    print(f"numgrad {numgrad.__version__}, torch {torch.__version__ if torch else 'absent'}, "
          f"numpy {np.__version__}; medians of {args.repeat} repeats, µs")
    print(blas_line())
    jax = jax_workloads()
    print(f"{'workload':52s} {'eager':>9s} {'compiled':>9s} {'PyTorch':>9s} {'JAX jit':>9s} "
          f"{'NumPy':>9s} {'eager/PT':>8s} {'comp/PT':>8s} {'comp/JAX':>8s}")
    nan = float("nan")
    for name, (make, make_numpy) in WORKLOADS.items():
        ours = median_us(make(numgrad), args.repeat)
        compiled = median_us(numgrad.compile(make(numgrad)), args.repeat)
        theirs = median_us(make(torch), args.repeat) if torch else nan
        anchor = median_us(jax[name](), args.repeat) if name in jax else nan
        floor = median_us(make_numpy(), args.repeat)
        print(f"{name:52s} {ours:9.1f} {compiled:9.1f} {theirs:9.1f} {anchor:9.1f} {floor:9.1f} "
              f"{ours / theirs:8.2f} {compiled / theirs:8.3f} {compiled / anchor:8.2f}")
    rerun_line(args.repeat)
    print("compiling, first compiled result of a fresh process (s): empty program cache with the "
          "eager kernels warm / warm program cache, after import")
    for name in WORKLOADS:
        cold, warm = compile_seconds(name)
        print(f"  {name:52s} {cold:6.2f} / {warm:6.2f}")
    if args.fresh_runs < 1:  # (--fresh-runs 0: no fresh-process timings)
        return
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
