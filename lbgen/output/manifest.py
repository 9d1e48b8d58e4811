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
    """Parse ``run_dir/manifest.json``."""
    with open(Path(run_dir) / MANIFEST_NAME, encoding="utf-8") as fh:
        return json.load(fh)


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
    return versions
