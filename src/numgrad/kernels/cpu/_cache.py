"""numgrad's kernel cache: Numba's on-disk cache for numgrad's kernels, made to heal, to work
read-only, and to refuse files someone else could have planted.

Numba's ``cache=True`` stores each compiled kernel as pickles (an index per function, a data file
per signature) and trusts them: a truncated or garbled file crashes every later process (EOFError,
UnpicklingError, LLVM parse errors, aborts), a folder where nothing can be written makes
``@njit(cache=True)`` itself raise at import ("no locator available"), a read-only
``NUMBA_CACHE_DIR`` is silently skipped, and a pickle planted in a folder others can write runs
code as the next user who loads it. For numgrad's own kernels (functions of ``numgrad.*`` modules)
``_KernelCache`` replaces Numba's cache, installed when ``njit(cache=True)`` enables caching
(``_enable_caching``); every other Numba function in the process is cached by Numba, unchanged.

- **Where.** ``$NUMBA_CACHE_DIR/<folder>_<hash>`` (Numba's name), then for numgrad's own
  sources their ``__pycache__``, only ever read, and ``kernels/<folder>_<hash>`` in numgrad's
  cache folder (``kernels/_cache_folder.py``: ``$NUMGRAD_CACHE_DIR``, else ``~/.cache/numgrad``), and
  for generated sources (in numgrad's cache folder already) their ``__pycache__``: nothing is
  written into the installed package. The first that can be written is where new kernels go;
  folders before it that can only be read (a warm, read-only cache: a system install, a
  container image) are still read. Folders numgrad creates
  are private (0700), and its files are never writable by group or others (0644), whatever the
  umask. With no writable folder, kernels missing from the cache are compiled in memory.
- **Whose.** A folder or file that another user could have written (owned by someone other than
  this user or root, or writable by group or others, except a group that is the user's own
  private group) is never loaded from: one warning names it, and its kernels are compiled.
- **Intact.** Each file starts with a header (format, Numba version), a SHA-256 of its contents
  and, for a data file, a digest of what it was written for (index key, function, source), all
  checked before a byte is unpickled or handed to LLVM: a truncated, garbled, emptied, swapped or
  unreadable file is never loaded but recompiled, and replaced where the folder can be written. The files have names
  of their own (``numgrad-*.nbi``, ``numgrad-*.nbc``), so Numba never reads them, nor numgrad
  Numba's.
- **Said once.** One ``KernelCacheWarning`` (a RuntimeWarning) per process for a damaged entry
  (``codegen``'s generated sources included), one where the cache cannot be written (a read-only
  ``NUMBA_CACHE_DIR`` included, once a kernel had to be compiled), one for each folder or file
  refused.
- **Light loading.** Loading a kernel does not refresh Numba's CPU target (see
  ``_KernelCache.load_overload``).

numgrad replaces and relies on Numba internals (``NUMBA_INTERNALS``): they are pinned to the
Numba versions tested, in ``pyproject.toml`` and by ``tests/test_cache_faults.py``, which fails
naming each internal that changed. Where they are missing, numgrad leaves Numba's cache alone.
"""
from __future__ import annotations

import ast
import functools
import hashlib
import importlib.util
import os
import pickle
import stat
import sys
import warnings

import numba
import numpy as np
from numba.core import caching, compiler, config, serialize
from numba.core import types
from numba.core.errors import (NumbaIRAssumptionWarning, NumbaNotImplementedError,
                               NumbaTypeError, NumbaValueError, NumbaWarning)
from numba.np import numpy_support
from numba.core.registry import CPUDispatcher
from numba.core.runtime import rtsys

# (KernelCacheWarning and the said-once set ``_said`` are named here too: where users and tests
# look for them)
from .._cache_folder import KernelCacheWarning, _said  # noqa: F401
from .._cache_folder import (cache_folder, make_private_folder, unsafe_reason, warn_once,
                             write_private)

try:
    from numba.core.typing import typeof
except ImportError:  # (Numba's internals moved: its own typeof stays)
    typeof = None

# The Numba functions numgrad's cache replaces or mirrors, and a digest of their source in the
# Numba versions tested (``TESTED_NUMBA``); tests/test_cache_faults.py recomputes them
# (``numba_internals()`` there).
TESTED_NUMBA = ("0.68.1",)
NUMBA_INTERNALS = {
    # replaced, for numgrad's functions: Numba's version makes a FunctionCache
    "numba.core.dispatcher.Dispatcher.enable_caching": "8c75d787fa6845ba",
    # the caller: load_overload(sig, targetctx), then save_overload(sig, cres) after a miss
    "numba.core.dispatcher.Dispatcher.compile": "0ab4aee15e79bb1d",
    # mirrored: what loading, saving and keying an entry do
    "numba.core.caching.Cache.load_overload": "49a98e578d710b9b",
    "numba.core.caching.Cache._load_overload": "8cb8c1d9749fda3d",
    "numba.core.caching.Cache._save_overload": "cfe1bb44a31657d2",
    "numba.core.caching.Cache._index_key": "c861935e10096c3c",
    "numba.core.caching.CompileResultCacheImpl.check_cachable": "7646f78cf22ab4bf",
    "numba.core.caching.CompileResultCacheImpl.reduce": "8402910bbc243fb7",
    "numba.core.caching.CompileResultCacheImpl.rebuild": "f787ffdd965d1e79",
    "numba.core.caching.CacheImpl.__init__": "4d692ab2c1a932a3",
    "numba.core.caching.CacheImpl.get_filename_base": "3814d4542b4b98de",
    # mirrored: where Numba puts a function's cache, in its order
    "numba.core.caching._CacheLocator.get_suitable_cache_subpath": "de960e9da7384f5f",
    "numba.core.caching.UserProvidedCacheLocator.__init__": "4b00c7d709c4bee2",
    "numba.core.caching.InTreeCacheLocator.__init__": "1370a36e885e5cb1",
    "numba.core.caching.UserWideCacheLocator.__init__": "454542693bc10413",
    "numba.core.caching._SourceFileBackedLocatorMixin.get_source_stamp": "2bdbc1e9cb7eb464",
    # used: how a cached CompileResult is written and rebuilt
    "numba.core.compiler.CompileResult._reduce": "5f86eacfa5202c20",
    "numba.core.compiler.CompileResult._rebuild": "44fa9dc2255883ab",
    # skipped when loading (light loading), run by Numba's compiler before it compiles
    "numba.core.base.BaseContext.refresh": "83e8f5cc63a7fee8",
    # replaced for one import (_defer_scipy_linalg)
    "numba.np.linalg.ensure_blas": "8eb05e44427d5eb8",
    # replaced: typing an array without importing numpy.ma (_typeof_ndarray)
    "numba.core.typing.typeof._typeof_ndarray": "8188f9430f05899f",
}


# -- where: the folders a function's cache is read from and written to ------------------------

class _Plan:
    """The folders of one source folder's kernels: ``readers`` (the writer first, then the
    folders that can only be read), ``writer`` (or None) and ``problems``: (folder, why it
    cannot be written, whether that is NUMBA_CACHE_DIR's and still to be said)."""

    def __init__(self, readers, writer, problems):
        self.readers, self.writer, self.problems = readers, writer, problems


_plans: dict = {}


_PACKAGE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _candidates(source_folder: str) -> list:
    """The folders for functions of files in ``source_folder``, in order, as (folder, whether it
    is NUMBA_CACHE_DIR's, whether it may be written): ``$NUMBA_CACHE_DIR/<folder>_<hash>`` as
    Numba would; for numgrad's own sources, their ``__pycache__`` only to be read (a warm cache
    shipped with a read-only install: nothing is ever written into the package) and then
    ``kernels/<folder>_<hash>`` in numgrad's cache folder (``kernels/_cache_folder.py``); for
    generated sources, which live in numgrad's cache folder already, their ``__pycache__``."""
    sub = caching._CacheLocator.get_suitable_cache_subpath(os.path.join(source_folder, "x.py"))
    folders = [(os.path.join(config.CACHE_DIR, sub), True, True)] if config.CACHE_DIR else []
    if _inside(source_folder, _PACKAGE):
        folders.append((os.path.join(source_folder, "__pycache__"), False, False))
        folders.append((os.path.join(str(cache_folder()), "kernels", sub), False, True))
    else:
        folders.append((os.path.join(source_folder, "__pycache__"), False, True))
    return folders


def _inside(path: str, folder: str) -> bool:
    path, folder = os.path.abspath(path), os.path.abspath(folder)
    return path == folder or path.startswith(folder + os.sep)


def _plan(source_folder: str) -> _Plan:
    plan = _plans.get((source_folder, config.CACHE_DIR))
    if plan is None:
        plan = _plans[(source_folder, config.CACHE_DIR)] = _make_plan(source_folder)
    return plan


def _make_plan(source_folder: str) -> _Plan:
    readers, problems = [], []
    for folder, from_env, may_write in _candidates(source_folder):
        try:
            if not os.path.isdir(folder):
                if not may_write:
                    continue
                make_private_folder(folder)
            st = os.stat(folder)
        except OSError as error:
            problems.append((folder, error.strerror or str(error), from_env))
            continue
        reason = unsafe_reason(st)
        if reason is not None:
            warn_once(("unsafe", folder), _refused_folder(folder, reason))
            problems.append((folder, f"refused: {reason}", False))  # (said just now)
            continue
        if may_write and os.access(folder, os.W_OK | os.X_OK):
            return _Plan([folder] + readers, folder, problems)
        if os.access(folder, os.R_OK | os.X_OK):
            readers.append(folder)
        if may_write:
            problems.append((folder, "read-only" if folder in readers else "not accessible",
                             from_env))
    return _Plan(readers, None, problems)


def _refused_folder(folder: str, reason: str) -> str:
    return (f"numgrad refuses to load cached kernels from {folder}: the folder is {reason}, so "
            f"another user could plant a file there, and cache files are pickles that run as "
            f"code when loaded. Its kernels are compiled instead; make the folder private "
            f"(chmod 700 {folder}) or point NUMBA_CACHE_DIR or NUMGRAD_CACHE_DIR at a private "
            f"folder.")


def _unwritable(plan: _Plan, error: OSError | None = None) -> str:
    if error is not None:
        return (f"numgrad cannot write its kernel cache in {plan.writer} "
                f"({error.strerror or error}); "
                f"kernels compiled in this process are kept in memory only (set "
                f"NUMBA_CACHE_DIR to a writable folder)")
    if plan.writer is not None:  # NUMBA_CACHE_DIR could not be written, another folder was
        folder, why, _ = next(p for p in plan.problems if p[2])
        return (f"numgrad cannot write its kernel cache in NUMBA_CACHE_DIR ({folder}: {why}); "
                f"kernels compiled in this process are cached in {plan.writer} instead")
    tried = ("; ".join(f"{folder}: {why}" for folder, why, _ in plan.problems)
             or "the kernel's generated source could not be written anywhere")
    return (f"numgrad cannot write its kernel cache in any folder ({tried}); kernels compiled "
            f"in this process are kept in memory only (set NUMBA_CACHE_DIR to a writable "
            f"folder)")


_NO_PLAN = _Plan([], None, [])


# -- intact: numgrad's cache files --------------------------------------------------------------

_MAGIC = b"numgrad kernel cache "
_HEADER = _MAGIC + f"1, numba {numba.__version__}\n".encode()
_DIGEST = 32  # bytes of SHA-256


class _Damaged(Exception):
    """A cache file that must not be loaded: damaged (or refused, with ``refused`` set)."""

    def __init__(self, reason: str, refused: bool = False):
        super().__init__(reason)
        self.refused = refused
        self.path = None  # (the file's, set where it is known)


class _Stale(Exception):
    """A cache file of another format or Numba version, or for other source: not an error."""


def _pack(body: bytes) -> bytes:
    return _HEADER + hashlib.sha256(body).digest() + body


def _read(path: str) -> bytes | None:
    """The checked contents of the cache file ``path`` (after header and checksum), None if it
    does not exist. _Damaged where it cannot be read, is not whole or others could write it;
    _Stale for another format or Numba version."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    except OSError as error:
        raise _Damaged(f"it cannot be read: {error.strerror}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise _Damaged("it is not a file")
        reason = unsafe_reason(st)
        if reason is not None:
            raise _Damaged(reason, refused=True)
        with os.fdopen(os.dup(fd), "rb") as f:
            raw = f.read()
    except OSError as error:
        raise _Damaged(f"it cannot be read: {error.strerror}") from None
    finally:
        os.close(fd)
    if not raw.startswith(_HEADER):
        end = raw.find(b"\n", 0, 100)
        if raw.startswith(_MAGIC) and end > 0 and raw[:end + 1].isascii():
            raise _Stale()
        raise _Damaged("it is empty" if not raw else "it does not start with numgrad's header")
    body = raw[len(_HEADER) + _DIGEST:]
    if hashlib.sha256(body).digest() != raw[len(_HEADER):len(_HEADER) + _DIGEST]:
        raise _Damaged("its checksum does not match its contents: truncated or garbled")
    return body


def _key_digest(key, base: str, stamp: bytes) -> bytes:
    """What a data file is for: its index key, its function (``base``) and the source's stamp.
    (Numba's key alone does not tell apart two functions of the same bytecode, say ones that
    differ in a constant: a data file of one, copied over the other's, would run.)"""
    return hashlib.sha256(repr(key).encode() + b"\0" + base.encode() + b"\0" + stamp).digest()


class _EntryFile:
    """One folder's files of one function: ``<base>.nbi``, its index (the source's stamp and a
    data file name per key), and ``<base>.<n>.nbc``, one compiled signature each."""

    def __init__(self, folder: str, base: str, stamp: bytes):
        self.folder, self.base, self.stamp = folder, base, stamp
        self.index_path = os.path.join(folder, base + ".nbi")

    def _index(self) -> dict:
        """The index's overloads; {} where there is none or it is stale; _Damaged."""
        body = _read(self.index_path)
        if body is None:
            return {}
        try:
            stamp, overloads = pickle.loads(body)
        except Exception as error:  # noqa: BLE001  (checksummed: a bug, or a changed Numba)
            raise _Damaged(f"it cannot be unpickled: {error!r}") from None
        if not isinstance(overloads, dict):
            raise _Damaged("it holds no index")
        return overloads if stamp == self.stamp else {}

    def load(self, key):
        """The reduced CompileResult stored for ``key`` and its file's path, or None;
        _Damaged, with the path."""
        try:
            name = self._index().get(key)
        except _Stale:
            return None
        except _Damaged as damage:
            damage.path = self.index_path
            raise
        if name is None:
            return None
        path = os.path.join(self.folder, name)
        try:
            if not (isinstance(name, str) and os.path.basename(name) == name
                    and name.startswith(self.base)):
                raise _Damaged("the index names no data file of its function")
            body = _read(path)
            if body is None:
                raise _Damaged("the index names it but it does not exist")
            if body[:_DIGEST] != _key_digest(key, self.base, self.stamp):
                return None  # written for another key, function or source: a miss
            try:
                return pickle.loads(body[_DIGEST:]), path
            except Exception as error:  # noqa: BLE001  (as the index's)
                raise _Damaged(f"it cannot be unpickled: {error!r}") from None
        except _Stale:
            return None
        except _Damaged as damage:
            damage.path = path
            raise

    def save(self, key, payload) -> None:
        """Stores ``payload`` (a reduced CompileResult) for ``key``: the data file first, then the
        index, so an index never names a data file not yet written. A data file is never shared
        by two keys (processes saving at once could make an index name one file for both: the
        next save of either gives it a file of its own, rather than take the other's)."""
        data = _pack(_key_digest(key, self.base, self.stamp) + serialize.dumps(payload))
        overloads = self._quiet_index()
        name = self._name_for(key, overloads)
        try:
            write_private(os.path.join(self.folder, name), data)
        except FileNotFoundError:  # the folder was removed since: make it again
            make_private_folder(self.folder)
            write_private(os.path.join(self.folder, name), data)
        except IsADirectoryError:  # something else took the name: another one
            overloads[key] = None
            name = self._name_for(key, overloads)
            write_private(os.path.join(self.folder, name), data)
        fresh = self._quiet_index()  # (another process may have saved since)
        if fresh.get(key) != name or self._shared(key, name, fresh):
            if self._shared(key, name, fresh):
                fresh[key] = None
                name = self._name_for(key, fresh)
                write_private(os.path.join(self.folder, name), data)
            fresh[key] = name
            write_private(self.index_path, _pack(serialize.dumps((self.stamp, fresh))))

    @staticmethod
    def _shared(key, name: str, overloads: dict) -> bool:
        return any(other != key and used == name for other, used in overloads.items())

    def _name_for(self, key, overloads: dict) -> str:
        """``key``'s data file name in ``overloads`` unless another key uses it too; else one no
        key uses and nothing on disk but a file has."""
        name = overloads.get(key)
        if name is not None and not self._shared(key, name, overloads):
            return name
        taken = set(overloads.values())
        n = 1
        while (f"{self.base}.{n}.nbc" in taken
               or (os.path.lexists(path := os.path.join(self.folder, f"{self.base}.{n}.nbc"))
                   and not os.path.isfile(path))):
            n += 1
        return f"{self.base}.{n}.nbc"

    def flush(self) -> None:
        write_private(self.index_path, _pack(serialize.dumps((self.stamp, {}))))

    def _quiet_index(self) -> dict:
        try:
            return self._index()
        except (_Damaged, _Stale):
            return {}  # (replaced by the write that follows)


@functools.cache
def _hash_source(path: str, mtime_ns: int, size: int) -> bytes:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).digest()


def _source_stamp(path: str) -> bytes | None:
    """A digest of the source file's contents (what Numba 0.68 stamps its index with), or None
    where the file is not on disk."""
    try:
        st = os.stat(path)
        return _hash_source(path, st.st_mtime_ns, st.st_size)
    except OSError:
        return None


# What a kernel's machine code is made of besides its own file: the kernel modules it imports,
# and theirs. Numba inlines ``inline="always"`` functions from them (the scalar formulas, the
# line bodies shared with CUDA, the vectorised math, softmax's lanes in attention) and freezes
# their module-level numbers (``PARALLEL_THRESHOLD``) into the code, but its cache knows a
# kernel's own file only. So a kernel's stamp is its file's digest and the digests of the
# ``numgrad.kernels`` files it imports, directly or through them: an edit or upgrade of one of
# them recompiles the kernels made from it, and only those (a stamp shared by every kernel made
# an edit of one inlined file recompile all of numgrad's kernels: CI's 1,355 s became 2,628 s).
_KERNELS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_imports_of: dict = {}
_dependency_stamps: dict = {}
# (modules that make, load or run kernels but lend them no code: not part of a kernel's stamp)
_MACHINERY = ("_cache.py", "_cache_folder.py", "codegen.py", "_workers.py", "__init__.py")


def _kernel_imports(path: str) -> list:
    """The files of ``numgrad.kernels`` that the module at ``path`` imports (relative imports,
    and absolute ones of ``numgrad.kernels``: a generated source's), read from its text."""
    found = _imports_of.get(path)
    if found is not None:
        return found
    found = []
    try:
        with open(path, "rb") as f:
            tree = ast.parse(f.read())
    except (OSError, SyntaxError, ValueError):
        _imports_of[path] = found
        return found
    package = os.path.dirname(path)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package
                for _ in range(node.level - 1):
                    base = os.path.dirname(base)
            elif (node.module or "").startswith("numgrad.kernels"):
                base, node_module = _KERNELS, node.module[len("numgrad.kernels"):].lstrip(".")
                found.extend(_module_files(base, node_module, node.names))
                continue
            else:
                continue
            found.extend(_module_files(base, node.module or "", node.names))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("numgrad.kernels."):
                    found.extend(_module_files(_KERNELS, alias.name[16:], ()))
    found = sorted({f for f in found if _inside(f, _KERNELS) and f != path
                    and os.path.basename(f) not in _MACHINERY})
    _imports_of[path] = found
    return found


def _module_files(base: str, module: str, names) -> list:
    """The files that ``from <base>.<module> import <names>`` takes code or numbers from: the
    module's own file, or, for ``from <package> import <names>``, each name's that is a module."""
    folder = os.path.join(base, *module.split(".")) if module else base
    if module:
        return [folder + ".py"] if os.path.isfile(folder + ".py") else []
    return [os.path.join(folder, alias.name + ".py") for alias in names
            if os.path.isfile(os.path.join(folder, alias.name + ".py"))]


def _kernel_dependencies(py_file: str) -> set:
    """Every ``numgrad.kernels`` file that ``py_file`` imports, directly or through them (its
    own excluded)."""
    seen, todo = set(), list(_kernel_imports(py_file))
    while todo:
        path = todo.pop()
        if path not in seen and path != py_file:
            seen.add(path)
            todo.extend(_kernel_imports(path))
    return seen


def _dependency_stamp(py_file: str) -> bytes:
    """A digest of the contents of ``_kernel_dependencies(py_file)``."""
    stamp = _dependency_stamps.get(py_file)
    if stamp is None:
        seen = _kernel_dependencies(py_file)
        digest = hashlib.sha256()
        for path in sorted(seen):
            digest.update(os.path.relpath(path, _KERNELS).encode() + b"\0")
            try:
                with open(path, "rb") as f:
                    digest.update(f.read())
            except OSError:
                digest.update(b"missing")
        stamp = _dependency_stamps[py_file] = digest.digest()
    return stamp


# -- the cache ---------------------------------------------------------------------------------

class _KernelCache(caching._Cache):
    """The on-disk cache of one numgrad kernel (see the module's docstring).

    Light loading: before it loads a cached function, Numba refreshes its CPU target: it imports
    and installs every typing and lowering registry (arrays, linalg, typed containers, jitclass,
    random, ...). Compiling needs them; loading machine code does not. That refresh was most of
    the ~115 ms a fresh process spent on its first kernel call. Loading needs Numba's runtime
    (NRT), which the kernels link against, and each cached function's own ``reload_init`` hooks
    (the threading layer of the parallel kernels), which ``CompileResult._rebuild`` runs. On a
    miss nothing is skipped: Numba's compiler refreshes the target itself before it compiles."""

    def __init__(self, py_func):
        self._name = repr(py_func)
        self._py_func = py_func
        self._lineno = py_func.__code__.co_firstlineno
        py_file = os.path.abspath(py_func.__code__.co_filename)
        self._py_file = py_file
        modname = os.path.splitext(os.path.basename(py_file))[0]
        qualname = getattr(py_func, "__qualname__", py_func.__name__)
        fullname = f"{modname}.{qualname}".replace("<", "").replace(">", "")
        base = (f"numgrad-{fullname}-{self._lineno}.py{sys.version_info[0]}"
                f"{sys.version_info[1]}{getattr(sys, 'abiflags', '')}")
        stamp = _source_stamp(py_file)
        if stamp is not None:
            stamp += _dependency_stamp(py_file)
        self._plan = _plan(os.path.dirname(py_file)) if stamp is not None else _NO_PLAN
        self._files = [_EntryFile(folder, base, stamp) for folder in self._plan.readers]
        self._writer = self._files[0] if self._plan.writer is not None else None
        self._cache_path = self._plan.writer or (self._plan.readers or [None])[0]
        self._enabled = True
        self._raise_saved = None  # (see save_overload)

    def __repr__(self):
        return f"<{type(self).__name__} py_func={self._name}>"

    @property
    def cache_path(self):
        return self._cache_path

    def enable(self):
        self._enabled = True

    def disable(self):
        self._enabled = False

    def flush(self):
        if self._writer is not None:
            try:
                self._writer.flush()
            except OSError:
                pass

    def load_overload(self, sig, target_context):
        rtsys.initialize(target_context)
        cres = self._load_overload(sig, target_context) if self._enabled else None
        if cres is None:  # about to compile: the target refresh will import numba.np.arraymath
            _defer_scipy_linalg()
            try:
                say_compiling()
            except KernelCompileWarning as raised:  # (an "error" filter: raised once this
                self._raise_saved = raised  # kernel is compiled and saved, by save_overload)
        return cres

    def _load_overload(self, sig, target_context):
        key = self._index_key(sig, target_context.codegen())
        for entry in self._files:
            try:
                found = entry.load(key)
            except _Damaged as damage:
                self._report(damage, damage.path, entry is self._writer)
                continue
            if found is None:
                continue
            payload, path = found
            try:
                return compiler.CompileResult._rebuild(target_context, *payload)
            except Exception as error:  # noqa: BLE001  (whole and ours, yet not loadable)
                self._report(_Damaged(f"Numba could not load it: {error!r}"), path,
                             entry is self._writer)
        return None

    def _report(self, damage: _Damaged, path: str, writable: bool) -> None:
        then = ("compiled again and the file replaced" if writable else
                "compiled again (the folder cannot be written, so the file stays)")
        if damage.refused:
            warn_once(("unsafe", path), f"numgrad refuses to load the cached kernel {path}: the "
                      f"file is {damage}, so another user could have planted it, and cache files "
                      f"are pickles that run as code when loaded. The kernel is {then}.")
        else:
            warn_once("damaged", f"numgrad found a damaged kernel cache file, {path} ({damage}); "
                      f"the kernel is {then}. (Other damaged files this process meets are "
                      f"handled alike, without a warning.)")

    def save_overload(self, sig, cres):
        """Saves the kernel, then raises the first-compile warning that an "error" filter made
        an exception (``load_overload``): raised before the compilation, it left nothing in the
        cache, and every later process raised it again at the same call."""
        self._save(sig, cres)
        raised, self._raise_saved = self._raise_saved, None
        if raised is not None:
            raise raised

    def _save(self, sig, cres):
        if not self._enabled or not self._cachable(cres):
            return
        if self._writer is None:
            warn_once("unwritable", _unwritable(self._plan))
            return
        key = self._index_key(sig, cres.codegen)
        try:
            self._writer.save(key, cres._reduce())
        except OSError as error:
            warn_once("unwritable", _unwritable(self._plan, error))
            self._writer = None
            return
        if any(from_env for _, _, from_env in self._plan.problems):
            warn_once("unwritable", _unwritable(self._plan))

    def _cachable(self, cres) -> bool:
        """Numba's check (CompileResultCacheImpl.check_cachable): no lifted loops, no dynamic
        globals."""
        reason = None
        if any(not x.can_cache for x in cres.lifted):
            reason = "as it uses lifted code"
        elif cres.library.has_dynamic_globals:
            reason = ("as it uses dynamic globals (such as ctypes pointers and large global "
                      "arrays)")
        if reason:
            warnings.warn_explicit(f'Cannot cache compiled function '
                                   f'"{cres.fndesc.qualname.split(".")[-1]}" {reason}',
                                   NumbaWarning, self._py_file, self._lineno)
            return False
        return True

    def _index_key(self, sig, codegen):
        """Numba's key (Cache._index_key): the signature, the target (triple, CPU, features) and
        digests of the function's bytecode and closure variables."""
        codebytes = self._py_func.__code__.co_code
        if self._py_func.__closure__ is not None:
            cvarbytes = serialize.dumps(tuple(c.cell_contents for c in self._py_func.__closure__))
        else:
            cvarbytes = b""
        return (sig, codegen.magic_tuple(), (hashlib.sha256(codebytes).hexdigest(),
                                             hashlib.sha256(cvarbytes).hexdigest()))


def _defer_scipy_linalg() -> None:
    """Keeps Numba from importing scipy.linalg (~0.3 s) when it first compiles a kernel.

    Before compiling, Numba refreshes its CPU target and imports ``numba.np.arraymath``, which
    calls ``ensure_blas()`` only to set a flag, ``_HAVE_BLAS`` (whether np.correlate/np.convolve
    may call np.dot), and ``ensure_blas`` imports ``scipy.linalg.cython_blas`` and with it all of
    scipy.linalg. numgrad's kernels use no BLAS, so during that one import the flag is computed
    from whether SciPy is installed, without importing it; ``ensure_blas`` is the real one again
    right after, and every Numba function that does use BLAS (np.dot in the user's own kernels)
    calls it, and imports scipy.linalg, at its own compilation, as before. Skipped where
    arraymath is already imported or Numba's internals differ."""
    if "numba.np.arraymath" in sys.modules:
        return
    try:
        from numba.np import linalg
        real = linalg.ensure_blas
    except (ImportError, AttributeError):
        return

    def scipy_installed():
        if importlib.util.find_spec("scipy") is None:
            raise ImportError("scipy 0.16+ is required for linear algebra")

    linalg.ensure_blas = scipy_installed
    try:
        from numba.np import arraymath
    finally:
        linalg.ensure_blas = real
    if getattr(arraymath, "ensure_blas", None) is scipy_installed:
        arraymath.ensure_blas = real


def _typeof_ndarray(val, c):
    """Numba's typing of an ndarray (``numba.core.typing.typeof._typeof_ndarray``), less its
    import of numpy.ma. Numba types an array in Python the first time it meets its dtype, number
    of dimensions and layout, and its first test, ``isinstance(val, np.ma.MaskedArray)``, imports
    numpy.ma (~40 ms, a tenth of a warm process's import and first backward). An array cannot be
    a MaskedArray before numpy.ma is imported, so the test waits until then; the rest is
    Numba's, line for line."""
    masked = sys.modules.get("numpy.ma")
    if masked is not None and isinstance(val, masked.MaskedArray):
        raise NumbaTypeError("Unsupported array type: numpy.ma.MaskedArray.")
    try:
        dtype = numpy_support.from_dtype(val.dtype)
    except NumbaNotImplementedError:
        raise NumbaValueError(f"Unsupported array dtype: {val.dtype}")
    layout = numpy_support.map_layout(val)
    readonly = not val.flags.writeable
    return types.Array(dtype, val.ndim, layout, readonly=readonly)


def _install_typeof_ndarray() -> None:
    """Registers ``_typeof_ndarray`` for np.ndarray where Numba's is the one tested."""
    if typeof is None:
        return
    if typeof.typeof_impl.dispatch(np.ndarray) is getattr(typeof, "_typeof_ndarray", None):
        typeof.typeof_impl.register(np.ndarray)(_typeof_ndarray)


_said_compiling: list = []


class KernelCompileWarning(UserWarning):
    """``numgrad.KernelCompileWarning``: said once per process, the first time numgrad compiles a
    kernel (a cold cache): a new user's first run would otherwise sit silent for seconds. A
    warning, so that a host filters it the standard way (``warnings.filterwarnings("ignore",
    category=numgrad.KernelCompileWarning)``); ``NUMGRAD_QUIET=1`` silences it too."""


def say_compiling() -> None:
    """The first time this process compiles a kernel: one ``KernelCompileWarning`` saying so.
    Never on a warm cache; never with ``NUMGRAD_QUIET=1``."""
    if _said_compiling or os.environ.get("NUMGRAD_QUIET", "") not in ("", "0"):
        return
    _said_compiling.append(True)
    warnings.warn("numgrad: compiling kernels for their first use; they are cached on disk, so "
                  "this happens once (`python -m numgrad warmup` compiles them all ahead of "
                  "time; NUMGRAD_QUIET=1 or a filter of numgrad.KernelCompileWarning hides this "
                  "line)", KernelCompileWarning, stacklevel=2)


# -- installing it -----------------------------------------------------------------------------

def _numgrad_function(py_func) -> bool:
    return (getattr(py_func, "__module__", None) or "").startswith("numgrad.")


_SUPPORTED = (hasattr(CPUDispatcher, "enable_caching") and hasattr(caching, "_Cache")
              and hasattr(caching._CacheLocator, "get_suitable_cache_subpath")
              and hasattr(compiler.CompileResult, "_rebuild")
              and hasattr(compiler.CompileResult, "_reduce") and hasattr(config, "CACHE_DIR")
              and hasattr(serialize, "dumps") and hasattr(rtsys, "initialize"))
_numba_enable_caching = CPUDispatcher.enable_caching


def _enable_caching(self) -> None:
    """``njit(cache=True)``: numgrad's cache for numgrad's functions (unless the user chose
    Numba's cache locators, NUMBA_CACHE_LOCATOR_CLASSES), Numba's for every other."""
    if _numgrad_function(self.py_func) and not getattr(config, "CACHE_LOCATOR_CLASSES", None):
        self._cache = _KernelCache(self.py_func)
    else:
        _numba_enable_caching(self)
    if _numgrad_function(self.py_func) and not sys.warnoptions:
        self.compile = _quiet_compile(self.compile)


def _quiet_compile(compile_):
    """A numgrad dispatcher's ``compile`` that ignores Numba's ``NumbaIRAssumptionWarning``
    while it runs: Numba's SSA pass says, as "an internal pedantic check", that a function
    inlined with inline="always" (``mathfuncs.py``) appears twice in one compiled function, as in
    a fused program with two ``tanh`` loops; the code compiled is correct, and the user could do
    nothing about it. Scoped to numgrad's compilations (which hold Numba's compiler lock, as
    Numba's own ``catch_warnings`` do); not under ``-W`` options."""

    @functools.wraps(compile_)
    def compile(sig):
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", category=NumbaIRAssumptionWarning)
            return compile_(sig)

    return compile


if _SUPPORTED:
    CPUDispatcher.enable_caching = _enable_caching
    _install_typeof_ndarray()


def light_cache(module) -> None:
    """Gives every dispatcher of ``module`` that Numba cached (one decorated before this module
    was imported) numgrad's cache instead; those decorated since have it already."""
    if not _SUPPORTED:
        return
    for value in vars(module).values():
        if (isinstance(value, CPUDispatcher) and type(value._cache) is caching.FunctionCache
                and not getattr(config, "CACHE_LOCATOR_CLASSES", None)):
            value._cache = _KernelCache(value.py_func)

