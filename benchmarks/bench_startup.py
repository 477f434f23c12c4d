"""Fresh-process costs (``timeraw_``: each sample is a new ``python`` process, timed inside it).

* ``import numgrad`` alone;
* the seed walkthrough's first call with the Numba cache warm, import excluded (the kernels load
  from the cache): with ``import numgrad`` above, what a user's script pays after the first run;
* ``import numgrad`` + the seed walkthrough with an empty Numba cache (``NUMBA_CACHE_DIR`` pointed
  at a new empty directory before Numba is imported): the compile cost a first-time user pays.

No warm-up sample (``warmup_time = 0``): asv's default runs one whole sample, a fresh process,
before the timed one. One sample in each round.
"""
from __future__ import annotations

from ._common import numgrad  # (puts the checkout's src/ on PYTHONPATH when needed)
from .workloads import seed_walkthrough

SEED = """
import numgrad as torch
x = torch.ones(2, 2, requires_grad=True)
y = x + 2
out = (y * y * 3).mean()
out.backward()
assert float(x.grad.sum()) == 18.0
"""

FIRST_CALL = """
x = torch.ones(2, 2, requires_grad=True)
y = x + 2
out = (y * y * 3).mean()
out.backward()
assert float(x.grad.sum()) == 18.0
"""

EMPTY_CACHE = """
import atexit, os, shutil, tempfile
os.environ["NUMBA_CACHE_DIR"] = tempfile.mkdtemp(prefix="numgrad-asv-cache-")
atexit.register(shutil.rmtree, os.environ["NUMBA_CACHE_DIR"], True)
"""


def timeraw_import_numgrad():
    return "import numgrad"


# Each sample is a fresh process of about half a second: one in each of 3 rounds.
timeraw_import_numgrad.repeat = 1
timeraw_import_numgrad.rounds = 3
timeraw_import_numgrad.warmup_time = 0.0


class WarmCache:
    repeat = 1
    rounds = 3
    warmup_time = 0.0

    def setup(self):
        seed_walkthrough(numgrad)()  # compiles here if needed, which writes the on-disk cache

    def timeraw_first_call_seed_walkthrough(self):
        return FIRST_CALL, "import numgrad as torch"


class EmptyCache:
    # Seconds of compilation per sample: one sample in each of 2 rounds.
    repeat = 1
    rounds = 2
    warmup_time = 0.0
    timeout = 600

    def timeraw_import_and_seed_walkthrough_empty_cache(self):
        return SEED, EMPTY_CACHE
