"""Instructions per call of the single-threaded eager workloads, counted by valgrind's callgrind:
a noise-free A/B measure for the interpreter-bound paths, where timings on a shared machine swing
by 20-40 % between minutes.

    python benchmarks/count_instructions.py [seed] [chain] [rerun] [--src PATH] [--calls N] [--nogc]

``--src`` puts another checkout's ``src`` first on the path (a ``git worktree`` of the commit
before a change), so both sides are counted by one command. Only the calls themselves are counted:
callgrind collects inside ``functools.reduce``, which runs them (after 20 warm-up calls). The
counts repeat to a few instructions per call on one machine and Python; they are not seconds
(an allocation and a cache miss count alike), and workloads that start threads (BLAS) are not
counted, since valgrind serialises threads and their spinning counts too. ``--nogc`` turns the
garbage collector off for the counted calls: a full collection that falls in the window (every few
hundred calls, by the number of objects made) otherwise decides the count of a short run.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
CALLS = {"seed": 500, "chain": 10, "rerun": 10}


def _child(name: str, calls: int, nogc: bool = False) -> None:
    """Runs ``calls`` calls of workload ``name`` inside ``functools.reduce`` (what is counted)."""
    import functools

    sys.path.insert(0, HERE)
    import workloads

    import numgrad

    if name == "rerun":  # (the chain compiled, on the re-run path: its Python has an effect)
        numgrad.compiler.choose_faster = False
        run = numgrad.compile(workloads.chain_200_effect(numgrad))
    else:
        run = {"seed": workloads.seed_walkthrough, "chain": workloads.chain_200}[name](numgrad)
    for _ in range(20):
        run()
    if nogc:
        import gc

        gc.collect()
        gc.disable()
    functools.reduce(lambda _, i: run(), range(calls), None)


def count(name: str, calls: int, src: str | None = None, nogc: bool = False) -> float:
    """Instructions per call of workload ``name``."""
    env = dict(os.environ, NUMGRAD_QUIET="1", PYTHONDONTWRITEBYTECODE="1")
    if src:
        env["PYTHONPATH"] = os.path.abspath(src) + os.pathsep + env.get("PYTHONPATH", "")
    with tempfile.TemporaryDirectory() as tmp:
        out = subprocess.run(
            ["valgrind", "--tool=callgrind", "--collect-atstart=no",
             "--toggle-collect=functools_reduce", f"--callgrind-out-file={tmp}/cg.out",
             sys.executable, os.path.abspath(__file__), "--child", name, str(calls)]
            + (["--nogc"] if nogc else []),
            env=env, capture_output=True, text=True, check=True)
    found = re.search(r"Collected : (\d+)", out.stderr)
    if found is None:
        raise RuntimeError(f"callgrind printed no count:\n{out.stderr[-2000:]}")
    return int(found.group(1)) / calls


def main() -> None:
    if sys.argv[1:2] == ["--child"]:
        _child(sys.argv[2], int(sys.argv[3]), "--nogc" in sys.argv[4:])
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("workloads", nargs="*", default=list(CALLS), choices=list(CALLS))
    parser.add_argument("--src", help="another checkout's src folder, first on the path")
    parser.add_argument("--calls", type=int, help="calls counted (default: per workload)")
    parser.add_argument("--nogc", action="store_true", help="the garbage collector off while counted")
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        sys.exit("count_instructions.py needs valgrind (apt-get install valgrind)")
    for name in args.workloads:
        per_call = count(name, args.calls or CALLS[name], args.src, args.nogc)
        print(f"{name:6s} {per_call:14,.0f} instructions per call"
              + (f"  ({args.src})" if args.src else ""))


if __name__ == "__main__":
    main()
