"""The on-disk cache: the one deliberate piece of shared state, keyed and locked.

Used for sympy derivations (pickled assignment lists) and compiled kernels.  Location:
``$LBGEN_CACHE_DIR`` or the user cache dir (platformdirs).  Entries are written to a
temporary file and renamed, under a file lock, so concurrent processes never see a
half-written entry.
"""
from __future__ import annotations

import hashlib
import os
import pickle
import tempfile
from pathlib import Path
from typing import Any, Callable

import platformdirs
from filelock import FileLock


def cache_dir(kind: str = "") -> Path:
    root = Path(os.environ.get("LBGEN_CACHE_DIR") or platformdirs.user_cache_dir("lbgen"))
    path = root / kind if kind else root
    path.mkdir(parents=True, exist_ok=True)
    return path


def digest(*parts: Any) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(repr(p).encode() if not isinstance(p, (bytes, str)) else (p.encode() if isinstance(p, str) else p))
        h.update(b"\0")
    return h.hexdigest()[:24]


def atomic_write_bytes(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


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
