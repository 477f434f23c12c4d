"""Cache faults (kernels/cpu/_cache.py, kernels/codegen.py): every kind of cache file truncated,
emptied, garbled, deleted, swapped, replaced by a folder or made writable by others, and cache
folders made read-only or writable by others; each time a fresh process gives the right answer,
with at most the one warning that says what happened, and damaged files are replaced.

A fresh process first makes a warm cache (in temporary folders only: NUMBA_CACHE_DIR,
NUMGRAD_CACHE_DIR, HOME, XDG_CACHE_HOME and TMPDIR all point into ``tmp_path``) for one real op
(``neg``) and for one tiny generated kernel per damage (``x * k - 1``: cheap to recompile, and a
data file of one swapped for another's gives a visibly wrong answer). The damages are then made
and one fresh process meets them all, one kernel each (the once-per-process warnings are reset
between kernels, so each damage's own warning is seen); a third process finds everything
replaced. Each folder-level fault needs its own process.

Read-only cases: root writes where permission bits forbid. When the tests run as root, the
processes that must meet a read-only cache drop root's CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH
(``prctl(PR_CAPBSET_DROP)`` before exec), so that the bits apply to them as to any user, and each
such process checks with ``os.access`` that the folder really is read-only to it; an in-process
test also runs the folder choice with writability simulated, which needs no privilege at all."""
import ctypes
import hashlib
import json
import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import numba
import pytest

from numgrad.kernels.cpu import _cache

ROOT = os.geteuid() == 0

CHILD = r"""
import json, os, sys, tempfile, warnings
config = json.loads(sys.argv[1])
if config.get("umask") is not None:
    os.umask(config["umask"])
if config.get("tempdir"):
    tempfile.tempdir = config["tempdir"]  # (where this process's temporary folders would go)
import numgrad
from numgrad.kernels import codegen
from numgrad.kernels.cpu import _cache

TINY = "from numba import njit\n\n\n@njit(cache=True)\ndef tiny(x):\n    return x * {k} - 1.0\n"
out = {"writable": {p: os.access(p, os.W_OK) for p in config.get("probe", [])}}


def tiny(k):
    module = codegen.load_text(f"tiny{k}", TINY.format(k=k))
    value = module.tiny(2.0)
    stats, files = module.tiny.stats, module.tiny._cache._files
    return {"value": value, "hits": sum(stats.cache_hits.values()),
            "misses": sum(stats.cache_misses.values()), "py": module.__file__,
            "index": files[0].index_path if files else None, "path": stats.cache_path}


OPS = {"neg": lambda: {"value": numgrad.tensor([1., 2.]).neg().tolist()},
       "exp": lambda: {"value": numgrad.tensor([0., 1.]).exp().tolist()}}
for item in config["items"]:
    if config.get("isolate", True):
        _cache._said.clear()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = OPS[item]() if item in OPS else tiny(int(item))
    result["warnings"] = [str(w.message) for w in caught
                          if issubclass(w.category, _cache.KernelCacheWarning)]
    out[item] = result
print("RESULT", json.dumps(out))
"""


def _unprivileged():  # (run in the child, before exec)
    libc = ctypes.CDLL(None, use_errno=True)
    for capability in (1, 2):  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH
        if libc.prctl(24, capability, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP) failed")


class Case:
    def __init__(self, tmp: Path):
        self.tmp = tmp
        self.nb = tmp / "nb"  # NUMBA_CACHE_DIR
        self.home = tmp / "home"
        self.temp = tmp / "temp"
        for folder in (self.home, self.temp):
            folder.mkdir()

    def env(self, **changes) -> dict:
        env = {k: v for k, v in os.environ.items()
               if k not in ("NUMBA_CACHE_DIR", "NUMGRAD_CACHE_DIR", "NUMGRAD_QUIET")}
        env.update(NUMBA_CACHE_DIR=str(self.nb), HOME=str(self.home),
                   XDG_CACHE_HOME=str(self.home / ".cache"), TMPDIR=str(self.temp),
                   NUMGRAD_QUIET="1")
        env.update(changes)
        return env

    def run(self, items, env=None, unprivileged=False, **config) -> dict:
        config["items"] = [str(i) for i in items]
        done = subprocess.run(
            [sys.executable, "-c", CHILD, json.dumps(config)], check=False, env=env or self.env(),
            capture_output=True, text=True, timeout=300, cwd=self.tmp,
            preexec_fn=_unprivileged if unprivileged and ROOT else None)
        assert done.returncode == 0, done.stderr[-3000:]
        lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
        assert lines, done.stdout + done.stderr
        return json.loads(lines[-1][len("RESULT "):])


def _truncate(p: Path):
    p.write_bytes(p.read_bytes()[: p.stat().st_size // 2])


def _garble(p: Path, at=None):
    data = bytearray(p.read_bytes())
    start = len(data) // 2 if at is None else at
    data[start:start + 64] = bytes(b ^ 0x5A for b in data[start:start + 64])
    p.write_bytes(bytes(data))


def _folder_in_place(p: Path):
    p.unlink()
    p.mkdir()
    (p / "x").write_text("")


DAMAGED, SOURCE, REFUSED = ("found a damaged kernel cache file", "found a damaged kernel source file",
                            "refuses to load the cached kernel")
# kernel number: (file, damage, the warning it gets (None: none), loaded from the cache anyway)
DAMAGES = {
    1: ("index", _truncate, DAMAGED, False),
    2: ("index", lambda p: p.write_bytes(b""), DAMAGED, False),
    3: ("index", _garble, DAMAGED, False),
    4: ("index", Path.unlink, None, False),  # a cold entry
    5: ("data", _truncate, DAMAGED, False),
    6: ("data", lambda p: p.write_bytes(b""), DAMAGED, False),
    7: ("data", _garble, DAMAGED, False),  # the machine code: LLVM would fail or crash
    8: ("data", lambda p: _garble(p, at=0), DAMAGED, False),  # the header
    9: ("data", Path.unlink, DAMAGED, False),  # the index names a file that is gone
    10: ("data", _folder_in_place, DAMAGED, False),  # unreadable (root reads any file)
    11: ("data", "swap", None, False),  # kernel 12's machine code, whole: a wrong answer if run
    12: ("data", lambda p: None, None, True),
    13: ("data", lambda p: p.chmod(0o666), REFUSED, False),  # writable by everyone
    14: ("source", _truncate, SOURCE, True),  # the machine code in the cache is still right
    15: ("source", _garble, SOURCE, True),
    16: ("source", Path.unlink, None, True),
}
if ROOT:  # (only root can give a file to another user)
    DAMAGES[17] = ("index", lambda p: os.chown(p, 12345, 12345), REFUSED, False)


def _data(index: str) -> Path:
    return Path(index[: -len(".nbi")] + ".1.nbc")


def _tree(folder: Path) -> dict:
    return {str(p.relative_to(folder)): (p.stat().st_mode, p.stat().st_size, p.stat().st_mtime_ns)
            for p in sorted(folder.rglob("*"))}


def _copy(source: Path, target: Path) -> None:
    if target.exists():
        for p in [target, *target.rglob("*")]:  # (a read-only copy, as a user other than root)
            if p.is_dir() and not p.is_symlink():
                p.chmod(0o700)
        shutil.rmtree(target)
    shutil.copytree(source, target, symlinks=True)


def _read_only(folder: Path) -> None:
    for p in sorted(folder.rglob("*"), reverse=True) + [folder]:
        p.chmod(stat.S_IMODE(p.stat().st_mode) & ~0o222)


def test_every_damaged_cache_file_is_recompiled_with_one_warning_and_replaced(tmp_path):
    case = Case(tmp_path)
    kernels = sorted(DAMAGES)
    warm = case.run(["neg", *kernels], umask=0o002)  # (a umask that would leave files group-writable)
    assert warm["neg"]["value"] == [-1.0, -2.0]
    for k in kernels:
        assert warm[str(k)]["value"] == 2 * k - 1 and warm[str(k)]["misses"] == 1
        assert warm[str(k)]["warnings"] == []
    # every folder numgrad made is private to the user, and no file is writable by others
    for p in [case.nb, *case.nb.rglob("*")]:
        mode = stat.S_IMODE(p.stat().st_mode)
        assert mode == 0o700 if p.is_dir() else not mode & 0o022, (p, oct(mode))
    pristine = tmp_path / "pristine"
    _copy(case.nb, pristine)

    files = {}
    for k, (kind, damage, _, _) in DAMAGES.items():
        index = warm[str(k)]["index"]
        path = {"index": Path(index), "data": _data(index), "source": Path(warm[str(k)]["py"])}[kind]
        files[k] = path
        if damage == "swap":
            shutil.copy(_data(warm["12"]["index"]), path)
        else:
            damage(path)

    check = case.run(["neg", *kernels])
    assert check["neg"] == {"value": [-1.0, -2.0], "warnings": []}
    for k, (kind, _, warning, hit) in DAMAGES.items():
        got = check[str(k)]
        assert got["value"] == 2 * k - 1, (k, kind, got)
        assert (got["hits"], got["misses"]) == ((1, 0) if hit else (0, 1)), (k, kind, got)
        if warning is None:
            assert got["warnings"] == [], (k, kind, got)
        else:
            assert len(got["warnings"]) == 1 and warning in got["warnings"][0], (k, kind, got)
            assert str(files[k]) in got["warnings"][0]
    # every damaged entry was replaced: a third process loads them all, silently
    again = case.run(kernels)
    for k in kernels:
        got = again[str(k)]
        assert (got["value"], got["hits"], got["misses"], got["warnings"]) == (2 * k - 1, 1, 0, []), \
            (k, DAMAGES[k][:2], got)

    # -- folders ------------------------------------------------------------------------------
    # Numba's cache folder of the generated kernels, writable by everyone: refused, once
    _copy(pristine, case.nb)
    numba_folder = Path(warm["1"]["path"])
    numba_folder.chmod(0o777)
    got = case.run(["neg", 1, 2])
    assert got["neg"]["value"] == [-1.0, -2.0] and len(got["neg"]["warnings"]) == 1
    assert "refuses to load cached kernels from" in got["neg"]["warnings"][0]
    assert str(numba_folder) in got["neg"]["warnings"][0]
    for k in (1, 2):
        assert (got[str(k)]["value"], got[str(k)]["misses"]) == (2 * k - 1, 1)
        assert got[str(k)]["path"] != str(numba_folder)

    # numgrad's folder of generated sources, someone else's (as root) or writable by everyone
    _copy(pristine, case.nb)
    generated = case.nb / "numgrad" / "generated"
    os.chown(generated, 12345, 12345) if ROOT else generated.chmod(0o777)
    got = case.run(["neg", 1])
    assert got["neg"]["value"] == [-1.0, -2.0] and len(got["neg"]["warnings"]) == 1
    assert "refuses to use its kernel cache folder" in got["neg"]["warnings"][0]
    assert got["1"]["value"] == 1 and not Path(got["1"]["py"]).is_relative_to(generated)

    # a warm cache that is read-only, and no folder anywhere that can be written (NUMBA_CACHE_DIR,
    # the sources' __pycache__, the user's cache folder, the temporary folder): the warm kernels
    # load without a word; a new op and a new kernel are compiled in memory, with one warning
    _copy(pristine, case.nb)
    _read_only(case.nb)
    (tmp_path / "ro-temp").mkdir(mode=0o555)
    case.home.chmod(0o555)
    before = _tree(case.nb)
    got = case.run(["neg", 1, "exp", 99], unprivileged=True, isolate=False,
                   tempdir=str(tmp_path / "ro-temp"),
                   probe=[str(case.nb), str(generated), str(numba_folder), str(case.home),
                          str(tmp_path / "ro-temp")])
    case.home.chmod(0o755)
    assert not any(got["writable"].values()), got["writable"]  # (really read-only to it)
    assert got["neg"] == {"value": [-1.0, -2.0], "warnings": []}
    assert (got["1"]["value"], got["1"]["hits"], got["1"]["warnings"]) == (1, 1, [])
    assert got["exp"]["value"] == pytest.approx([1.0, 2.718281828], rel=1e-6)
    assert got["99"]["value"] == 197 and got["99"]["misses"] == 1
    said = got["exp"]["warnings"] + got["99"]["warnings"]
    assert len(said) == 1 and "cannot write its kernel cache" in said[0], said
    assert _tree(case.nb) == before


def test_a_read_only_numba_cache_dir_is_reported_once(tmp_path):
    """A read-only, empty NUMBA_CACHE_DIR: with numgrad's folder in it (the default), and with
    NUMGRAD_CACHE_DIR elsewhere; Numba would silently cache somewhere else."""
    case = Case(tmp_path)
    case.nb.mkdir(mode=0o555)
    got = case.run(["neg"], unprivileged=True, probe=[str(case.nb)])
    assert got["writable"] == {str(case.nb): False}
    assert got["neg"]["value"] == [-1.0, -2.0] and len(got["neg"]["warnings"]) == 1
    message = got["neg"]["warnings"][0]
    assert "cannot write its kernel cache" in message and str(case.nb) in message
    assert "NUMBA_CACHE_DIR" in message

    kernels = tmp_path / "kernels"
    got = case.run(["neg", 5], case.env(NUMGRAD_CACHE_DIR=str(kernels)), unprivileged=True,
                   isolate=False)
    assert got["neg"]["value"] == [-1.0, -2.0] and got["5"]["value"] == 9
    [message] = got["neg"]["warnings"] + got["5"]["warnings"]
    assert f"cannot write its kernel cache in NUMBA_CACHE_DIR ({case.nb}" in message
    assert f"cached in {kernels / 'generated' / '__pycache__'} instead" in message
    assert list(case.nb.iterdir()) == []


def test_folder_choice_with_read_only_folders_simulated(tmp_path, monkeypatch):
    """The folder choice itself, with writability simulated (no privileges needed): the first
    writable folder is written, the read-only ones before it are read, and with none writable a
    compiled kernel is kept in memory with one warning. The package's own ``__pycache__`` is
    only ever read: numgrad's kernels are written in its cache folder, never in the package."""
    env_folder, package, user = tmp_path / "env", tmp_path / "package", tmp_path / "user"
    source = package / "kernels"
    (source / "__pycache__").mkdir(parents=True)
    monkeypatch.setattr(numba.config, "CACHE_DIR", str(env_folder))
    monkeypatch.setattr(_cache, "_PACKAGE", str(package))
    monkeypatch.setenv("NUMGRAD_CACHE_DIR", str(user))
    monkeypatch.setattr(_cache, "_plans", {})
    read_only = set()
    real_access = os.access

    def access(path, mode):
        if mode & os.W_OK and any(str(path).startswith(str(p)) for p in read_only):
            return False
        return real_access(path, mode)

    monkeypatch.setattr(_cache.os, "access", access)
    candidates = _cache._candidates(str(source))
    names = [str(c) for c, _, _ in candidates]
    assert names[0].startswith(str(env_folder)) and names[1] == str(source / "__pycache__")
    assert names[2].startswith(str(user / "kernels"))
    assert [may_write for _, _, may_write in candidates] == [True, False, True]
    plan = _cache._make_plan(str(source))  # (the package's folder is writable, and not written)
    assert plan.writer == names[0] and plan.readers == [names[0]]
    read_only.add(env_folder)
    plan = _cache._make_plan(str(source))
    assert plan.writer == names[2] and plan.readers == [names[2], names[0], names[1]]
    assert plan.problems == [(names[0], "read-only", True)]
    assert "cannot write its kernel cache in NUMBA_CACHE_DIR" in _cache._unwritable(plan)
    read_only.update((package, user))
    plan = _cache._make_plan(str(source))
    assert plan.writer is None and plan.readers == names
    assert "kept in memory only" in _cache._unwritable(plan)
    # a generated source (in numgrad's cache folder, outside the package): its __pycache__
    generated = user / "generated"
    assert [(str(c), w) for c, _, w in _cache._candidates(str(generated))][1:] == [
        (str(generated / "__pycache__"), True)]


def test_an_index_naming_one_data_file_for_two_keys_heals_without_breaking_either(tmp_path):
    """Processes saving signatures of one kernel at once can leave an index that names one data
    file for two keys (it holds one of them): the other is a silent miss, and saving it again
    gives it a file of its own instead of overwriting the one the first key loads."""
    entry = _cache._EntryFile(str(tmp_path), "numgrad-m.f-1.py311", b"stamp")
    one, two = ("sig one",), ("sig two",)
    entry.save(one, "code one")
    entry.save(two, "code two")
    assert entry.load(one)[0] == "code one" and entry.load(two)[0] == "code two"
    index = entry._index()
    shutil.copy(tmp_path / index[two], tmp_path / index[one])  # the file holds two's
    _cache.write_private(entry.index_path, _cache._pack(_cache.serialize.dumps(
        (b"stamp", {one: index[one], two: index[one]}))))
    assert entry.load(one) is None and entry.load(two)[0] == "code two"
    entry.save(one, "code one")  # (what the process that missed does after compiling)
    assert entry.load(one)[0] == "code one" and entry.load(two)[0] == "code two"
    assert len(set(entry._index().values())) == 2


def _stat(mode, uid=None, gid=12345):
    uid = os.geteuid() if uid is None else uid
    return os.stat_result((mode, 0, 0, 1, uid, gid, 0, 0, 0, 0))


def test_what_counts_as_writable_by_others():
    me = os.geteuid()
    assert _cache.unsafe_reason(_stat(stat.S_IFDIR | 0o700)) is None
    assert _cache.unsafe_reason(_stat(stat.S_IFREG | 0o644)) is None
    assert _cache.unsafe_reason(_stat(stat.S_IFDIR | 0o555, uid=0)) is None  # root's: a system cache
    assert "every user" in _cache.unsafe_reason(_stat(stat.S_IFDIR | 0o777))
    assert "every user" in _cache.unsafe_reason(_stat(stat.S_IFDIR | 0o1777))  # sticky too
    assert "its group" in _cache.unsafe_reason(_stat(stat.S_IFREG | 0o664, gid=54321))
    if me != 54321:
        assert "another user" in _cache.unsafe_reason(_stat(stat.S_IFREG | 0o600, uid=54321))


def numba_internals() -> dict:
    """The digest of the source of each of ``_cache.NUMBA_INTERNALS`` in the Numba installed
    ("missing" where it is gone): print it to update the pinned ones after checking _cache.py."""
    import importlib
    import inspect

    digests = {}
    for name in _cache.NUMBA_INTERNALS:
        parts = name.split(".")
        for split in range(len(parts) - 1, 0, -1):
            try:
                obj = importlib.import_module(".".join(parts[:split]))
                break
            except ImportError:
                continue
        try:
            for attr in parts[split:]:
                obj = getattr(obj, attr)
            source = inspect.getsource(obj)
        except (AttributeError, OSError, TypeError):
            digests[name] = "missing"
            continue
        digests[name] = hashlib.sha256(source.encode()).hexdigest()[:16]
    return digests


def test_numba_internals_are_the_ones_numgrad_was_written_for():
    """numgrad's kernel cache replaces Numba's for its kernels and mirrors what Numba's does
    (kernels/cpu/_cache.py): on a Numba whose internals changed, this fails, naming them."""
    changed = {name: digest for name, digest in numba_internals().items()
               if digest != _cache.NUMBA_INTERNALS[name]}
    tested = numba.__version__ in _cache.TESTED_NUMBA
    assert tested and not changed, (
        f"numba {numba.__version__}: {'' if tested else 'not a version numgrad was tested with ('}"
        f"{'' if tested else ', '.join(_cache.TESTED_NUMBA) + '); '}the Numba internals "
        f"numgrad's kernel cache replaces or mirrors that changed: {', '.join(changed) or 'none'}"
        f". Check src/numgrad/kernels/cpu/_cache.py against them, then update NUMBA_INTERNALS, "
        f"TESTED_NUMBA and the numba bound in pyproject.toml.")
    from numba.core import caching
    from numba.core.registry import CPUDispatcher

    order = [c.__name__ for c in caching.CacheImpl._locator_classes[:3]]
    assert order == ["UserProvidedCacheLocator", "InTreeCacheLocator", "UserWideCacheLocator"], (
        f"Numba's cache locators (numba.core.caching.CacheImpl._locator_classes) changed: {order}")
    assert _cache._SUPPORTED and CPUDispatcher.enable_caching is _cache._enable_caching
    # pyproject.toml allows only the tested minor version of numba
    text = (Path(__file__).parents[1] / "pyproject.toml").read_text()
    [spec] = re.findall(r'"numba([<>=!~][^"]*)"', text)
    from packaging.specifiers import SpecifierSet

    allowed = SpecifierSet(spec)
    assert all(v in allowed for v in _cache.TESTED_NUMBA), spec
    major, minor = map(int, max(_cache.TESTED_NUMBA).split(".")[:2])
    assert f"{major}.{minor + 1}.0" not in allowed and f"{major + 1}.0.0" not in allowed, spec


def test_a_kernels_stamp_covers_the_kernel_modules_it_imports(tmp_path, monkeypatch):
    # Numba's cache knows a kernel's own file only; numgrad's kernels inline bodies and freeze
    # numbers from the kernel modules they import (softmax: the vectorised math, and through it
    # the scalar formulas), so those files' contents are part of its stamp, and only those: an
    # edit of one recompiles the kernels made from it, not all of numgrad's.
    from numgrad.kernels.cpu import _cache, softmax

    kernel = next(v for v in vars(softmax).values() if hasattr(v, "py_func")
                  and v.py_func.__module__ == softmax.__name__)
    path = os.path.abspath(kernel.py_func.__code__.co_filename)
    own = _cache._source_stamp(path)
    assert _cache._KernelCache(kernel.py_func)._files[0].stamp == \
        own + _cache._dependency_stamp(path)
    imported = {os.path.relpath(p, _cache._KERNELS) for p in _cache._kernel_imports(path)}
    assert {os.path.join("cpu", "mathfuncs.py"), os.path.join("cpu", "elementwise.py")} <= imported
    assert not {"codegen.py", os.path.join("cpu", "_cache.py")} & imported
    # a package of three modules: a imports b (``from .b import``), b imports c (``from . import
    # c``), d stands alone
    package = tmp_path / "kernels"
    package.mkdir()
    for name, text in {"a": "from .b import f\n", "b": "from . import c\nf = 1\n",
                       "c": "g = 2\n", "d": "h = 3\n"}.items():
        (package / f"{name}.py").write_text(text)
    monkeypatch.setattr(_cache, "_KERNELS", str(package))

    def stamp():
        monkeypatch.setattr(_cache, "_imports_of", {})
        monkeypatch.setattr(_cache, "_dependency_stamps", {})
        return _cache._dependency_stamp(str(package / "a.py"))

    before = stamp()
    (package / "d.py").write_text("h = 4\n")
    assert stamp() == before  # (a module it does not import)
    (package / "c.py").write_text("g = 5\n")
    assert stamp() != before  # (one it imports through another)
