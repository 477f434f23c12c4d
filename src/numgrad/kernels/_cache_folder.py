"""numgrad's kernel cache folder and the private files in it, below both of their users: Numba's
cache of numgrad's kernels (``cpu/_cache.py``) and the generated kernel sources
(``codegen.py``). Where the folder is (``cache_folder``); whose a folder or file is
(``unsafe_reason``: one another user could have written is refused); how folders and files are
made private to the user (``make_private_folder``, ``write_private``); and each problem said
once (``warn_once``, a ``KernelCacheWarning``).
"""
from __future__ import annotations

import functools
import os
import stat
import threading
import uuid
import warnings
from pathlib import Path

try:
    import grp
    import pwd
except ImportError:  # (not on Windows: a group is never taken for private there)
    grp = pwd = None


def cache_folder() -> Path:
    """Where generated kernels are written: ``$NUMGRAD_CACHE_DIR``, else ``numgrad`` in
    ``$NUMBA_CACHE_DIR`` when that is set, else ``numgrad`` in the user's cache folder
    (``$XDG_CACHE_HOME`` or ``~/.cache``)."""
    if os.environ.get("NUMGRAD_CACHE_DIR"):
        return Path(os.environ["NUMGRAD_CACHE_DIR"])
    if os.environ.get("NUMBA_CACHE_DIR"):
        return Path(os.environ["NUMBA_CACHE_DIR"]) / "numgrad"
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "numgrad"


class KernelCacheWarning(RuntimeWarning):
    """numgrad's kernel cache could not be used as it is: a damaged entry was recompiled, a
    folder could not be written, or a folder or file others could write was refused."""


_said: set = set()
_said_lock = threading.Lock()


def warn_once(key, message: str, stacklevel: int = 3) -> None:
    """``message`` as a KernelCacheWarning, the first time this process says ``key``."""
    with _said_lock:
        if key in _said:
            return
        _said.add(key)
    warnings.warn(message, KernelCacheWarning, stacklevel=stacklevel)


# -- whose: folders and files another user could have written ---------------------------------

def unsafe_reason(st: os.stat_result) -> str | None:
    """Why a folder or file with status ``st`` could have been written by another user (owned by
    someone other than this user or root, or writable by group or others), or None. A group that
    is this user's own private group (named after the user, no other member: the convention of
    Debian and others, whose default umask leaves folders group-writable) is not another user.
    (Not checked where there are no POSIX owners and modes: Windows.)"""
    if not hasattr(os, "geteuid"):
        return None
    uid = os.geteuid()
    if st.st_uid not in (uid, 0):
        return f"owned by another user (uid {st.st_uid})"
    mode = stat.S_IMODE(st.st_mode)
    if mode & 0o002:
        return f"writable by every user (mode {mode:o})"
    if mode & 0o020 and not _private_group(st.st_gid):
        return f"writable by its group (mode {mode:o})"
    return None


@functools.cache
def _private_group(gid: int) -> bool:
    if grp is None:  # (not on Windows)
        return False
    try:
        user = pwd.getpwuid(os.geteuid()).pw_name
        group = grp.getgrgid(gid)
    except KeyError:
        return False
    return gid == os.getegid() and group.gr_name == user and set(group.gr_mem) <= {user}


def make_private_folder(path: str) -> None:
    """Creates ``path`` and any missing parents, each private to the user (0700)."""
    missing = []
    while path and not os.path.isdir(path):
        missing.append(path)
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    for folder in reversed(missing):
        try:
            os.mkdir(folder, 0o700)
        except FileExistsError:
            if not os.path.isdir(folder):
                raise


def write_private(path: str, data: bytes) -> None:
    """Writes ``data`` to ``path`` atomically (readers see the whole file or the old one), as a
    file no other user can write (0644 at most)."""
    temporary = f"{path}.tmp.{uuid.uuid4().hex[:16]}"
    try:
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(temporary, path)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise
