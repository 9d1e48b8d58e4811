"""Output paths checked before any work: a folder created (or found) writable, a file's
folder likewise, with messages that name the path and the reason -- never a raw
PermissionError after a long run."""
from __future__ import annotations

import errno
import os
import tempfile
from pathlib import Path
from typing import Union

PathLike = Union[str, os.PathLike]


class PathError(ValueError):
    """An output path that cannot be written; the message names the path and the reason."""


def _reason(e: OSError) -> str:
    if isinstance(e, PermissionError) or e.errno in (errno.EACCES, errno.EPERM):
        return "permission denied"
    if e.errno == errno.EROFS:
        return "read-only file system"
    if e.errno in (errno.ENOSPC, errno.EDQUOT):
        return "no space left on the device"
    return e.strerror or str(e)


def writable_folder(path: PathLike, what: str) -> Path:
    """Create `path` (with its parents) or confirm it is a writable folder; returns it.

    `what` names the option in messages (e.g. "--out").
    """
    folder = Path(path)
    if folder.exists() and not folder.is_dir():
        raise PathError(f"{what} {folder}: exists and is not a folder")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise PathError(f"{what} {folder}: cannot create the folder ({_reason(e)})") from None
    try:   # os.access is not enough (read-only mounts, ACLs): try to create a file
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".lbgen-probe-"):
            pass
    except OSError as e:
        raise PathError(f"{what} {folder}: the folder is not writable ({_reason(e)})") from None
    return folder


def writable_file(path: PathLike, what: str) -> Path:
    """Check that `path` can be written (its folder is created if missing); returns it."""
    file = Path(path)
    if file.is_dir():
        raise PathError(f"{what} {file}: is a folder; give a file name")
    writable_folder(file.parent if str(file.parent) else Path("."), f"{what} {file}: its folder")
    if file.exists() and not os.access(file, os.W_OK):
        raise PathError(f"{what} {file}: the file exists and is not writable (permission denied)")
    return file


def describe_os_error(e: OSError, what: str) -> str:
    """One line for an OSError met while writing `what` (a run folder, a file)."""
    where = f" {e.filename}" if getattr(e, "filename", None) else ""
    return f"cannot write {what}{where}: {_reason(e)}"


def is_disk_full(e: BaseException) -> bool:
    return isinstance(e, OSError) and e.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)
