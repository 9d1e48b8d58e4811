"""The on-disk cache: the one deliberate piece of shared state, keyed and locked.

Used for sympy derivations (pickled assignment lists) and compiled kernels.  Location:
``$LBGEN_CACHE_DIR`` or the user cache dir (platformdirs); when that cannot be written, a
private folder in the system's temporary folder (with a warning).  Entries are written to a
temporary file and renamed, under a file lock, so concurrent processes never see a
half-written entry.
"""
from __future__ import annotations

import contextlib
import hashlib
import os
import pickle
import sys
import tempfile
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Iterator, Optional

import platformdirs
from filelock import FileLock


def _usable(folder: Path) -> Optional[str]:
    """None when `folder` can be created and written, else the reason."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".probe-"):
            pass
    except OSError as e:
        return e.strerror or str(e)
    return None


@lru_cache(maxsize=None)
def _root(configured: str) -> Path:
    """The configured cache folder, or -- when it cannot be written (HOME=/, a read-only
    home, a full disk) -- a private folder under the system's temporary folder, with a warning."""
    folder = Path(configured)
    reason = _usable(folder)
    if reason is None:
        return folder
    fallback = Path(tempfile.gettempdir()) / f"lbgen-cache-{os.getuid() if hasattr(os, 'getuid') else 'user'}"
    second = _usable(fallback)
    if second is not None:
        raise CacheError(f"no usable cache folder: {folder} ({reason}) and {fallback} ({second}); "
                         f"set LBGEN_CACHE_DIR to a writable folder")
    print(f"lbgen: warning: the cache folder {folder} is not writable ({reason}); using {fallback} "
          f"(set LBGEN_CACHE_DIR to choose another)", file=sys.stderr)
    return fallback


class CacheError(OSError):
    """Neither the cache folder nor its fallback can be written."""


def cache_dir(kind: str = "") -> Path:
    root = _root(os.environ.get("LBGEN_CACHE_DIR") or platformdirs.user_cache_dir("lbgen"))
    path = root / kind if kind else root
    path.mkdir(parents=True, exist_ok=True)
    return path


def file_digest(path: Path) -> str:
    """SHA-256 of a file's bytes (recorded beside each cached library, checked before loading)."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


@lru_cache(maxsize=None)
def source_digest(root: str, patterns: tuple = ("*.py",)) -> str:
    """SHA-256 of the code under `root` (a file, or every file below a folder matching
    `patterns`, in sorted order, names included): a cache-key part that changes whenever
    the code that derives a cached value does."""
    base = Path(root)
    files = [base] if base.is_file() else sorted(
        f for pattern in patterns for f in base.rglob(pattern) if f.is_file() and "__pycache__" not in f.parts)
    h = hashlib.sha256()
    for f in files:
        h.update(str(f.relative_to(base) if f != base else f.name).encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()


def digest(*parts: Any) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(repr(p).encode() if not isinstance(p, (bytes, str)) else (p.encode() if isinstance(p, str) else p))
        h.update(b"\0")
    return h.hexdigest()[:24]


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:  # pragma: no cover - e.g. platforms without directory fds
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover
        pass
    finally:
        os.close(fd)


@contextlib.contextmanager
def atomic_output(path, mode: int = 0o644) -> Iterator[Path]:
    """A temporary path next to ``path`` to write; on success it is fsync'ed and renamed
    over ``path``, on any exception removed (``path`` is left as it was).  For writers
    that need a file name (h5py, pyevtk); ``atomic_write`` is the file-handle form."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp = Path(tmp)
    try:
        yield tmp
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _fsync_dir(path.parent)


def atomic_write(path, writer, mode: int = 0o644) -> Path:
    """Call ``writer(fh)`` on a temporary file next to ``path``, fsync it, then rename it
    over ``path`` -- the one atomic writer of lbgen (cache entries, checkpoints, outputs,
    manifests).  On any exception the temporary file is removed and ``path`` is left as it was."""
    path = Path(path)
    with atomic_output(path, mode) as tmp:
        with open(tmp, "wb") as fh:
            writer(fh)
    return path


def atomic_write_bytes(path, data: bytes) -> Path:
    return atomic_write(path, lambda fh: fh.write(data))


def cached_pickle(kind: str, key: str, build: Callable[[], Any]) -> Any:
    """Return the cached value for key, building (once across processes) if needed."""
    directory = cache_dir(kind)
    path = directory / f"{key}.pickle"
    if path.exists():
        try:
            return pickle.loads(path.read_bytes())
        except Exception:
            pass  # corrupt or incompatible entry: rebuild below
    with FileLock(str(path) + ".lock"):
        if path.exists():
            try:
                return pickle.loads(path.read_bytes())
            except Exception:
                path.unlink()
        value = build()
        atomic_write_bytes(path, pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))
        return value
