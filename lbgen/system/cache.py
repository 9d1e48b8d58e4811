"""The on-disk cache: the one deliberate piece of shared state, keyed and locked.

Used for sympy derivations (pickled assignment lists), rendered kernels, tune choices and
compiled kernels.  Location:
``$LBGEN_CACHE_DIR`` or the user cache dir (platformdirs); when that cannot be written, a
private folder in the system's temporary folder (with a warning).  Entries are written to a
temporary file and renamed, under a file lock, so concurrent processes never see a
half-written entry.  Every entry carries the SHA-256 of its payload (``checked_bytes``,
``read_checked``; compiled libraries a ``.sha256`` beside them), checked on every read: a
damaged entry is rebuilt, never used.
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
    """SHA-256 of a file's bytes: recorded beside each cached library (checked before loading),
    for every file a run writes (manifest ``file_sha256``), and of a run's --init, --geometry and
    --save files."""
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


def fsync_dir(folder: Path) -> None:
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
def atomic_output(path, mode: int = 0o644, sync: bool = True) -> Iterator[Path]:
    """A temporary path next to ``path`` to write; on success it is fsync'ed and renamed
    over ``path``, on any exception removed (``path`` is left as it was).  For writers
    that need a file name (h5py, pyevtk); ``atomic_write`` is the file-handle form.
    ``sync=False``: renamed without the fsyncs -- still all or nothing for a killed process
    (the page cache outlives it), not across a power cut; for small records rewritten often."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp = Path(tmp)
    try:
        yield tmp
        if sync:
            with open(tmp, "rb+") as fh:
                os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    if sync:
        fsync_dir(path.parent)


def atomic_write(path, writer, mode: int = 0o644, sync: bool = True) -> Path:
    """Call ``writer(fh)`` on a temporary file next to ``path``, fsync it, then rename it
    over ``path`` -- the one atomic writer of lbgen (cache entries, checkpoints, outputs,
    manifests).  On any exception the temporary file is removed and ``path`` is left as it was."""
    path = Path(path)
    with atomic_output(path, mode, sync) as tmp:
        with open(tmp, "wb") as fh:
            writer(fh)
    return path


def atomic_write_bytes(path, data: bytes) -> Path:
    return atomic_write(path, lambda fh: fh.write(data))


#: first bytes of every checked cache entry; the SHA-256 (hex) of the payload follows, then
#: a newline, then the payload
ENTRY_MAGIC = b"lbgen-cache-entry sha256="
_DIGEST_CHARS = 64


class DamagedEntry(ValueError):
    """A cache entry that is not what was written: its checksum fails, it is truncated, or
    it has no checksum header (written by an older lbgen, or the header itself was damaged).
    ``reason`` completes the sentence "cache entry KIND/FILE ..."."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def checked_bytes(payload: bytes) -> bytes:
    """``payload`` with its checksum header: what every cache writer stores (see read_checked)."""
    return ENTRY_MAGIC + hashlib.sha256(payload).hexdigest().encode() + b"\n" + payload


def verify_bytes(data: bytes) -> bytes:
    """The payload of an entry written by ``checked_bytes``; DamagedEntry unless its checksum holds."""
    if not data.startswith(ENTRY_MAGIC):
        raise DamagedEntry("has no checksum header (older format or a damaged header)")
    head = len(ENTRY_MAGIC)
    recorded, newline = data[head:head + _DIGEST_CHARS], data[head + _DIGEST_CHARS:head + _DIGEST_CHARS + 1]
    if newline != b"\n":
        raise DamagedEntry("has no checksum header (older format or a damaged header)")
    payload = data[head + _DIGEST_CHARS + 1:]
    if hashlib.sha256(payload).hexdigest().encode() != recorded:
        raise DamagedEntry("failed its checksum")
    return payload


def write_checked(path, payload: bytes) -> Path:
    """Write a cache entry atomically, with the checksum of its payload in its header."""
    return atomic_write_bytes(path, checked_bytes(payload))


def read_checked(path) -> Optional[bytes]:
    """The verified payload of the cache entry at ``path``; None when there is none;
    DamagedEntry when it cannot be read or fails its checksum."""
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        return None
    except OSError as e:
        raise DamagedEntry(f"could not be read ({e.strerror or e})") from None
    return verify_bytes(data)


def warn_rebuilt(kind: str, path, reason: str, action: str = "rebuilt") -> None:
    """The one line written for a damaged cache entry that is being replaced."""
    path = Path(path)
    print(f"lbgen: warning: cache entry {kind}/{path.name} {reason}; {action} ({path})", file=sys.stderr)


def _load_pickle(path: Path):
    """(True, value) for an intact entry, (False, None) for none; DamagedEntry otherwise."""
    payload = read_checked(path)
    if payload is None:
        return False, None
    try:
        return True, pickle.loads(payload)
    except Exception as e:  # noqa: BLE001 - checksum holds but the pickle is not loadable here
        raise DamagedEntry(f"could not be unpickled ({type(e).__name__})") from None


def cached_pickle(kind: str, key: str, build: Callable[[], Any]) -> Any:
    """Return the cached value for key, building (once across processes) if needed.

    Entries carry the SHA-256 of their pickle (``checked_bytes``), verified on every read:
    a damaged, truncated or unchecked (older) entry is rebuilt and rewritten, with one
    warning line on stderr naming it.
    """
    directory = cache_dir(kind)
    path = directory / f"{key}.pickle"
    try:
        found, value = _load_pickle(path)
        if found:
            return value
    except DamagedEntry:
        pass                                    # checked again under the lock: warned once, there
    with FileLock(str(path) + ".lock"):
        try:
            found, value = _load_pickle(path)   # another process may have built it meanwhile
            if found:
                return value
        except DamagedEntry as e:
            warn_rebuilt(kind, path, e.reason)
        value = build()
        write_checked(path, pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))
        return value
