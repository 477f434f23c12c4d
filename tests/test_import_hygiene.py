"""What ``import numgrad`` does to the process of a library that imports it: nothing outside
numgrad's own objects. A fresh process imports NumPy and Numba (their own effects are theirs),
takes a snapshot of the process-wide state, imports numgrad and runs an op, a backward pass and
a class with ``__torch_function__``, and finds the state as it was; the files it made are all in
numgrad's cache folder. The opt-in settings (``numgrad.set_runtime_defaults``) do what they say."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numgrad

PACKAGE = Path(numgrad.__file__).resolve().parent
SRC = str(PACKAGE.parent)

SNAPSHOT = """
def snapshot():
    import builtins, gc, os, signal, sys, warnings
    import numba
    return {
        "__build_class__": repr(builtins.__build_class__),
        "gc": [gc.isenabled(), gc.get_freeze_count(), gc.get_threshold()],
        "threading layer": numba.config.THREADING_LAYER,
        "warnings filters": [repr(f) for f in warnings.filters],
        "showwarning": repr(warnings.showwarning),
        "environ": dict(os.environ),
        "signals": {str(s): repr(signal.getsignal(s)) for s in signal.valid_signals()
                    if s not in (signal.SIGKILL, signal.SIGSTOP)},
        "hooks": [repr(sys.excepthook), repr(sys.displayhook), repr(sys.unraisablehook)],
        "sys": [sys.getrecursionlimit(), sys.getswitchinterval(), len(sys.meta_path),
                len(sys.path_hooks)],
        "cwd": os.getcwd(),
    }
"""


def _run(code: str, env: dict, cwd: Path) -> dict:
    environ = {k: v for k, v in os.environ.items()
               if not k.startswith(("NUMGRAD_", "NUMBA_", "MALLOC_")) and k != "GLIBC_TUNABLES"}
    environ.update(PYTHONPATH=SRC, PYTHONDONTWRITEBYTECODE="1", **env)
    proc = subprocess.run([sys.executable, "-c", SNAPSHOT + code], capture_output=True,
                          text=True, env=environ, cwd=cwd, timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _files(folder: Path) -> dict:
    return {str(p): p.stat().st_mtime_ns for p in folder.rglob("*") if p.is_file()}


def test_import_and_use_leave_the_process_and_the_file_system_as_they_were(tmp_path):
    home, cwd, temp = tmp_path / "home", tmp_path / "cwd", tmp_path / "tmp"
    for folder in (home, cwd, temp):
        folder.mkdir()
    package_before = _files(PACKAGE)
    out = _run(
        "import json, numpy, numba\n"
        "before = snapshot()\n"
        "import numgrad\n"
        "x = numgrad.ones(3, requires_grad=True)\n"
        "(x * 2).relu().sum().backward()\n"
        "class Like:\n"
        "    @classmethod\n"
        "    def __torch_function__(cls, func, types, args=(), kwargs=None):\n"
        "        return 'like'\n"
        "after = snapshot()\n"
        "print(json.dumps({'changed': sorted(k for k in before if before[k] != after[k]),\n"
        "                  'before': before, 'after': after,\n"
        "                  'like': numgrad.add(x, Like()), 'grad': x.grad.tolist()}))\n",
        {"HOME": str(home), "TMPDIR": str(temp), "XDG_CACHE_HOME": str(home / ".cache")}, cwd)
    changed = {k: (out["before"][k], out["after"][k]) for k in out["changed"]}
    assert changed == {}
    assert out["grad"] == [2.0, 2.0, 2.0]
    assert out["like"] == "like"  # (dispatch found the class where it met numgrad)
    # files: only in numgrad's cache folder; none in the package, the working folder or TMPDIR
    assert _files(PACKAGE) == package_before
    assert not any(cwd.iterdir()) and not any(temp.iterdir())
    made = [Path(p) for p in _files(home)]
    assert made and all(p.is_relative_to(home / ".cache" / "numgrad") for p in made), made


def test_the_opt_in_settings_do_what_they_say(tmp_path):
    out = _run(
        "import json\n"
        "import numgrad, numba, gc\n"
        "before = [gc.get_freeze_count(), numba.config.THREADING_LAYER]\n"
        "done = numgrad.set_runtime_defaults(gc_freeze=True, threading_layer='threadsafe')\n"
        "print(json.dumps([before, done, gc.get_freeze_count() > 1000,\n"
        "                  numba.config.THREADING_LAYER]))\n",
        {"NUMGRAD_QUIET": "1"}, tmp_path)
    assert out == [[0, "default"], {"gc_freeze": True, "threading_layer": True}, True,
                   "threadsafe"]
    frozen = _run("import json, gc, numgrad\nprint(json.dumps(gc.get_freeze_count() > 1000))\n",
                  {"NUMGRAD_GC_FREEZE": "1", "NUMGRAD_QUIET": "1"}, tmp_path)
    assert frozen is True
