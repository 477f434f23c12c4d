"""What a new user's first runs compile, and how long each compilation takes (empty kernel cache).

    python benchmarks/compile_times.py [--src PATH] [--models]

Runs three programs, each in a fresh process with an empty Numba cache (``NUMBA_CACHE_DIR`` a new
folder): the README's demonstration (``python -m numgrad``), the example notebook's training loop
(the digits MLP with Adam and cross-entropy, on data of the digits' shape), and a first training
script (a 784-256-10 MLP, Adam, cross-entropy) up to its first printed loss; with ``--models``,
instead each model of ``models.py`` built and its first training step run (issue 29's models: a
new user's first step of a CNN, an LSTM language model, a small GPT). Each process records
Numba's compiler events (``numba:compile``, sent only when a dispatcher compiles, never when it
loads from the cache) and prints every signature compiled with its seconds; nested compilations
(a kernel's callee compiled while the kernel is) are indented under their caller. ``--src`` runs
another checkout's ``src`` folder (an earlier commit, for a before/after table).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RECORDER = r'''
import json, sys, time
from numba.core import event

class _Compiles(event.Listener):
    def __init__(self):
        self.open, self.done, self.started = [], [], 0
    def on_start(self, ev):
        self.open.append((self.started, time.perf_counter(), ev.data["dispatcher"], ev.data["args"]))
        self.started += 1
    def on_end(self, ev):
        order, start, dispatcher, args = self.open.pop()
        func = dispatcher.py_func
        module = func.__module__.replace("numgrad.kernels.generated.", "generated:")
        self.done.append({"function": f"{module}.{func.__qualname__}", "order": order,
                          "signature": str(tuple(args)), "seconds": time.perf_counter() - start,
                          "depth": len(self.open)})

_compiles = _Compiles()
event.register("numba:compile", _compiles)
_start = time.perf_counter()

def _report(label):
    done = sorted(_compiles.done, key=lambda c: c["order"])
    print("COMPILES " + json.dumps({"label": label, "wall": time.perf_counter() - _start,
                                    "compiles": done}), flush=True)
'''

PROGRAMS = {
    "demo (python -m numgrad)": r'''
import numgrad.__main__ as demo
import contextlib, io
with contextlib.redirect_stdout(io.StringIO()):
    demo.main([])
_report("demo")
''',
    "notebook training loop (digits MLP, Adam)": r'''
import numpy as np
import numgrad as torch
from numgrad import nn, optim
rng = np.random.default_rng(0)
X = rng.uniform(0, 1, (1347, 64)).astype(np.float32)  # the digits' training split
y = rng.integers(0, 10, 1347)
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))
loss_fn = nn.CrossEntropyLoss()
optimizer = optim.Adam(model.parameters(), lr=1e-2)
order = rng.permutation(len(X))
for i in range(0, len(X), 64):
    idx = order[i:i + 64]
    optimizer.zero_grad()
    loss = loss_fn(model(torch.from_numpy(X[idx])), torch.from_numpy(y[idx]))
    loss.backward()
    optimizer.step()
    loss.item()
model.eval()
with torch.no_grad():
    predicted = model(torch.from_numpy(X)).argmax(dim=1)
float((predicted.numpy() == y).mean())
_report("notebook")
''',
    "first training script (784-256-10 MLP, Adam) to its first loss": r'''
import numpy as np
import numgrad as torch
import numgrad.nn.functional as F
rng = np.random.default_rng(0)
X = torch.tensor(rng.standard_normal((64, 784)).astype(np.float32))
y = torch.tensor(rng.integers(0, 10, 64))
model = torch.nn.Sequential(torch.nn.Linear(784, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
optimizer.zero_grad()
loss = F.cross_entropy(model(X), y)
loss.backward()
optimizer.step()
print(f"loss {loss.item():.4f}")
_report("first script")
''',
}


MODEL_PROGRAM = r'''
import sys
sys.path.insert(0, {folder!r})
from models import MODELS
import numgrad
step = MODELS[{name!r}](numgrad)
step()
_report({name!r})
'''


def model_programs() -> dict:
    """``--models``: each model's first training step, a program each (its construction
    included)."""
    sys.path.insert(0, str(Path(__file__).parent))
    from models import MODELS

    folder = str(Path(__file__).parent)
    return {f"{name}: built, first step": MODEL_PROGRAM.format(folder=folder, name=name)
            for name in MODELS}


def run(program: str, src: str) -> dict:
    empty = tempfile.mkdtemp(prefix="numgrad-compile-times-")  # (Numba's cache and the
    env = dict(os.environ, NUMBA_CACHE_DIR=empty, PYTHONPATH=src,  # generated kernels': empty)
               NUMGRAD_CACHE_DIR=os.path.join(empty, "numgrad"), NUMGRAD_QUIET="1")
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", RECORDER + program], env=env,
                          capture_output=True, text=True, check=True)
    seconds = time.perf_counter() - start
    line = next(l for l in done.stdout.splitlines() if l.startswith("COMPILES "))
    result = json.loads(line[len("COMPILES "):])
    result["process"] = seconds
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--src", default=str(Path(__file__).parent.parent / "src"))
    parser.add_argument("--models", action="store_true",
                        help="each model's first training step (models.py), not the programs")
    args = parser.parse_args()
    for title, program in (model_programs() if args.models else PROGRAMS).items():
        result = run(program, args.src)
        top = [c for c in result["compiles"] if c["depth"] == 0]
        compiling = sum(c["seconds"] for c in top)
        print(f"\n## {title}: {len(top)} signatures compiled in {compiling:.1f} s "
              f"({len(result['compiles'])} compilations with the nested ones); the whole "
              f"process {result['process']:.1f} s")
        print(f"{'s':>6}  function and signature")
        for c in result["compiles"]:
            indent = "  " * c["depth"]
            print(f"{c['seconds']:6.2f}  {indent}{c['function']} {c['signature']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
