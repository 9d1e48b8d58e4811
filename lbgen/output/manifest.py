"""manifest.json of a run folder, and the versions of everything a run depends on."""
from __future__ import annotations

import importlib.metadata
import json
import os
import platform
import subprocess
from pathlib import Path
from typing import Optional, Union

import numpy as np

from lbgen.output.fields import OutputFileError

MANIFEST_NAME = "manifest.json"
PathLike = Union[str, os.PathLike]


def json_default(obj):
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, (Path, os.PathLike)):
        return os.fspath(obj)
    if isinstance(obj, (set, frozenset)):
        return sorted(obj)
    raise TypeError(f"{type(obj).__name__} is not JSON serialisable")


def read_manifest(run_dir: PathLike) -> dict:
    """Parse ``run_dir/manifest.json``.  OSError when it cannot be opened (missing,
    unreadable); OutputFileError (a ValueError) naming the file when it is not a JSON object
    (damaged, truncated, not lbgen's)."""
    path = Path(run_dir) / MANIFEST_NAME
    raw = path.read_bytes()
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        where = f" at line {e.lineno} column {e.colno}" if isinstance(e, json.JSONDecodeError) else ""
        what = "it is empty" if not raw.strip() else f"not valid JSON{where}"
        raise OutputFileError(f"{path}: damaged manifest ({what}); a run folder's manifest.json is the JSON "
                              f"object lbgen run writes") from None
    if not isinstance(data, dict):
        raise OutputFileError(f"{path}: damaged manifest (a JSON {type(data).__name__}, not an object); a run "
                              f"folder's manifest.json is the JSON object lbgen run writes")
    return data


_VERSIONED = {"numpy": "numpy", "sympy": "sympy", "jinja2": "Jinja2", "cffi": "cffi", "matplotlib": "matplotlib",
              "h5py": "h5py", "pyevtk": "pyevtk", "lbgen": "lbgen"}


def environment_versions() -> dict:
    """Versions of Python, the libraries a run depends on and gcc (None where missing)."""
    versions: dict[str, Optional[str]] = {"python": platform.python_version()}
    for key, dist in _VERSIONED.items():
        try:
            versions[key] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            versions[key] = None
    if versions["lbgen"] is None:
        from lbgen import __version__ as lbgen_version
        versions["lbgen"] = lbgen_version
    try:
        proc = subprocess.run(["gcc", "--version"], capture_output=True, text=True, timeout=20)
        first = proc.stdout.splitlines()[0].strip() if proc.returncode == 0 and proc.stdout else None
    except (OSError, subprocess.SubprocessError):
        first = None
    versions["gcc"] = first
    versions["platform"] = platform.platform()
    versions["lbgen_commit"] = source_commit()
    return versions


def source_commit() -> Optional[str]:
    """The git commit of the lbgen source tree this process runs (with '+dirty' for local
    changes), or None outside a git checkout (an installed wheel)."""
    here = Path(__file__).resolve().parents[2]
    if not (here / ".git").exists():
        return None
    try:
        commit = subprocess.run(["git", "-C", str(here), "rev-parse", "HEAD"], capture_output=True, text=True,
                                timeout=10)
        dirty = subprocess.run(["git", "-C", str(here), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    if commit.returncode != 0:
        return None
    return commit.stdout.strip() + ("+dirty" if dirty.returncode == 0 and dirty.stdout.strip() else "")
