"""Compiles every CUDA kernel of numgrad for real GPUs, on a machine without one.

    python -m numgrad.kernels.cuda.compile_check [--cc 8.0 9.0] [--only TEXT] [--json FILE]

Numba's CUDA simulator runs kernels as Python and never lowers them, so it cannot tell whether a
kernel compiles for a GPU. This does: each kernel of ``signatures.catalogue()``, for each of its
signatures and compute capabilities, goes through numba-cuda's compiler to PTX (NVVM) and is then
linked to a cubin, the GPU's machine code, by nvJitLink, which also reports its resources
(registers, shared memory, stack, spills). Both come as pip wheels with ``numba-cuda[cu12]``; no
driver is needed, except that numba-cuda 0.30 asks the current device for its compute capability
whenever a kernel calls a device function, even when ``cc=`` is given: while compiling, that
lookup answers the capability being compiled for (``_answering_cc``), nothing else is changed.
It relies on that internal, which is why the ``cuda`` extra pins numba-cuda's version.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import re
import sys
import time
from typing import NamedTuple

from numba import config, cuda
from numba.cuda import dispatcher

from ... import _lazy
from . import signatures

CCS = ((8, 0), (9, 0))  # A100, and H100/H200


class Result(NamedTuple):
    kernel: str
    signature: str
    cc: str
    error: str  # "" when it compiled and linked
    registers: int = -1
    shared: int = -1  # bytes of static shared memory
    stack: int = -1
    spills: int = -1  # bytes of spill stores + loads
    local: int = -1  # bytes of local memory
    seconds: float = 0.0


@contextlib.contextmanager
def _answering_cc(cc: tuple):
    """numba-cuda's ``get_current_device().compute_capability`` answers ``cc`` meanwhile."""
    class _Device:
        compute_capability = cc

    real = dispatcher.get_current_device
    dispatcher.get_current_device = lambda: _Device()
    try:
        yield
    finally:
        dispatcher.get_current_device = real


def _linker():
    """cuda-core's ``Linker``, ``LinkerOptions`` and ``ObjectCode`` (an optional dependency: the
    ``cuda`` extra)."""
    core = _lazy.optional("cuda.core")
    if not hasattr(core, "Linker"):  # cuda-core before 0.4
        core = _lazy.optional("cuda.core.experimental")
    return core.Linker, core.LinkerOptions, core.ObjectCode


def _first_line(error: BaseException) -> str:
    """The first line of an error that says more than which compiler stage failed."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    useful = [line for line in lines if not line.startswith(("Failed in", "During:"))]
    return f"{type(error).__name__}: {(useful or lines or [''])[0]}"


def _resources(log: str) -> dict:
    def number(pattern):
        found = re.findall(pattern, log)
        return max(int(v) for v in found) if found else 0

    return {
        "registers": number(r"used (\d+) registers"),
        "shared": number(r"(\d+) bytes smem"),
        "stack": number(r"(\d+) stack"),
        "spills": number(r"(\d+) bytes spill stores") + number(r"(\d+) bytes spill loads"),
        "local": number(r"(\d+) bytes lmem"),
    }


def compile_one(name: str, kernel, signature: tuple, cc: tuple) -> Result:
    """``kernel`` (a numba-cuda dispatcher) compiled for ``signature`` to PTX and a cubin for
    compute capability ``cc``, with its own target options."""
    Linker, LinkerOptions, ObjectCode = _linker()
    sig = "(" + ", ".join(str(t) for t in signature) + ")"
    label = f"sm_{cc[0]}{cc[1]}"
    options = kernel.targetoptions
    start = time.perf_counter()
    try:
        with _answering_cc(cc):
            ptx, _ = cuda.compile_ptx(
                kernel.py_func, signature, cc=cc, fastmath=options.get("fastmath", False),
                debug=options.get("debug"), lineinfo=options.get("lineinfo", False),
                opt=options.get("opt", True))
        linker = Linker(ObjectCode.from_ptx(ptx.encode()),
                        options=LinkerOptions(arch=label, verbose=True))
        linker.link("cubin")
        found = _resources(linker.get_info_log() or "")
    except Exception as error:  # reported, with the kernel and signature, not raised
        return Result(name, sig, label, _first_line(error),
                      seconds=time.perf_counter() - start)
    return Result(name, sig, label, "", seconds=time.perf_counter() - start, **found)


def check(entries, ccs=CCS, progress=None) -> list:
    """Every (name, kernel, signatures) of ``entries`` compiled for every capability of ``ccs``."""
    results = []
    for name, kernel, signatures in entries:
        for signature in signatures:
            for cc in ccs:
                results.append(compile_one(name, kernel, signature, cc))
        if progress is not None:
            progress(name)
    return results


def summary(results: list) -> str:
    """"N/N kernels and M/M signatures compiled for sm_80, sm_90" and the failures."""
    kernels = sorted({r.kernel for r in results})
    bad_kernels = sorted({r.kernel for r in results if r.error})
    signatures = {(r.kernel, r.signature) for r in results}
    bad_signatures = {(r.kernel, r.signature) for r in results if r.error}
    ccs = ", ".join(sorted({r.cc for r in results}))
    lines = [f"{len(kernels) - len(bad_kernels)}/{len(kernels)} kernels and "
             f"{len(signatures) - len(bad_signatures)}/{len(signatures)} signatures compiled "
             f"to PTX and linked cubins for {ccs} "
             f"({sum(r.seconds for r in results):.0f} s)"]
    lines += [f"FAILED {r.kernel} {r.signature} {r.cc}: {r.error}" for r in results if r.error]
    return "\n".join(lines)


def table(results: list) -> str:
    """Per kernel: signatures, the most registers, shared memory, stack, spills, local memory
    over its signatures and capabilities."""
    rows: dict = {}
    for r in results:
        if r.error:
            continue
        row = rows.setdefault(r.kernel, {"sigs": set(), "registers": 0, "shared": 0, "stack": 0,
                                         "spills": 0, "local": 0})
        row["sigs"].add(r.signature)
        for key in ("registers", "shared", "stack", "spills", "local"):
            row[key] = max(row[key], getattr(r, key))
    width = max((len(k) for k in rows), default=6)
    out = [f"{'kernel':<{width}}  sigs  regs  smem B  stack B  spill B  local B"]
    for name in sorted(rows):
        row = rows[name]
        out.append(f"{name:<{width}}  {len(row['sigs']):>4}  {row['registers']:>4}  "
                   f"{row['shared']:>6}  {row['stack']:>7}  {row['spills']:>7}  {row['local']:>7}")
    return "\n".join(out)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cc", nargs="+", default=[f"{a}.{b}" for a, b in CCS])
    parser.add_argument("--only", default="", help="only kernels whose name contains this")
    parser.add_argument("--json", help="also write every result to this file")
    args = parser.parse_args(argv)
    ccs = tuple(tuple(int(p) for p in cc.split(".")) for cc in args.cc)

    if config.ENABLE_CUDASIM:
        print("the CUDA simulator is on (NUMBA_ENABLE_CUDASIM=1): nothing can be compiled",
              file=sys.stderr)
        return 2
    entries = [e for e in signatures.catalogue() if args.only in e[0]]
    results = check(entries, ccs)
    if args.json:
        with open(args.json, "w") as f:
            json.dump([r._asdict() for r in results], f, indent=1)
    print(summary(results))
    print(table(results))
    return 1 if any(r.error for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
