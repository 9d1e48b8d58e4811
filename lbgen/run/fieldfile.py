"""`--init` field files: an .npz with float arrays rho, ux, uy, T of one shape (LX, LY); in
3D rho, ux, uy, uz, T of one shape (LX, LY, LZ) (``dimension=3``).

`inspect_fields(path)` reads only the archive's array headers (kind, keys, shapes,
dtypes), so the lattice size is known -- and checked against memory -- before anything
large is read; `load_fields(path)` then reads and checks the values (finite; density
and temperature positive).  Messages name the file and the array; pickled data is never
loaded.
"""
from __future__ import annotations

import zipfile
from pathlib import Path
from typing import Dict, Optional, Tuple

import numpy as np

from lbgen.model.catalog import field_names

FIELD_KEYS = field_names(2)
#: the arrays of a 3D field file
FIELD_KEYS_3D = field_names(3)


def field_keys(dimension: int = 2) -> Tuple[str, ...]:
    """The arrays of a field file of a 2D or 3D run."""
    return FIELD_KEYS_3D if dimension == 3 else FIELD_KEYS


def _shape_names(dimension: int) -> str:
    return "(LX, LY, LZ)" if dimension == 3 else "(LX, LY)"


def _what(dimension: int) -> str:
    return (f"an --init file of a {dimension}D run is an .npz (numpy.savez) with float arrays "
            f"{', '.join(field_keys(dimension))} of one shape {_shape_names(dimension)}")


def _at(index) -> str:
    return ", ".join(f"{axis}={int(i)}" for axis, i in zip("xyz", index))


class FieldFileError(ValueError):
    """An --init file that is not a valid field file; the message names the file and the key."""


def _array_header(zf: zipfile.ZipFile, member: str):
    with zf.open(member) as fh:
        version = np.lib.format.read_magic(fh)
        if version == (1, 0):
            return np.lib.format.read_array_header_1_0(fh)
        if version == (2, 0):
            return np.lib.format.read_array_header_2_0(fh)
        return np.lib.format.read_array_header_2_0(fh) if version[0] >= 2 else None


def inspect_fields(path, dimension: int = 2) -> Tuple[int, ...]:
    """Check kind, keys, shapes and dtypes of a field file from its headers; returns (LX, LY),
    or (LX, LY, LZ) for ``dimension`` 3."""
    path = Path(path)
    keys, what = field_keys(dimension), _what(dimension)
    if not path.is_file():
        raise FieldFileError(f"--init {path}: no such file")
    if not zipfile.is_zipfile(path):
        raise FieldFileError(f"--init {path}: not an .npz archive; {what}")
    shapes = {}
    try:
        with zipfile.ZipFile(path) as zf:
            members = {name[:-4]: name for name in zf.namelist() if name.endswith(".npy")}
            missing = [k for k in keys if k not in members]
            if missing:
                raise FieldFileError(f"--init {path}: missing arrays {missing} (has {sorted(members)}); {what}")
            for key in keys:
                shape, _fortran, dtype = _array_header(zf, members[key])
                if dtype.hasobject or dtype.kind not in "fiu":
                    raise FieldFileError(f"--init {path}: array {key!r} has dtype {dtype} "
                                         f"(allowed: real numbers, float or integer)")
                shapes[key] = tuple(shape)
    except FieldFileError:
        raise
    except Exception as e:  # noqa: BLE001 - a damaged archive or array header, whatever numpy says
        raise FieldFileError(f"--init {path}: damaged archive or array header ({type(e).__name__}: {e}); "
                             f"{what}") from None
    if len(set(shapes.values())) != 1 or len(shapes["rho"]) != dimension:
        raise FieldFileError(f"--init {path}: arrays must share one {dimension}-D shape {_shape_names(dimension)} (a {dimension}D "
                             f"run); got {shapes}")
    if min(shapes["rho"]) < 1:
        raise FieldFileError(f"--init {path}: empty arrays of shape {shapes['rho']}")
    return tuple(int(n) for n in shapes["rho"])


def load_fields(path, dimension: int = 2) -> Dict[str, np.ndarray]:
    """The checked fields of a field file as float64 (LX, LY) arrays ((LX, LY, LZ) in 3D)."""
    inspect_fields(path, dimension)
    try:
        with np.load(path, allow_pickle=False) as data:
            fields = {k: np.array(data[k], dtype=np.float64) for k in field_keys(dimension)}
    except Exception as e:  # noqa: BLE001 - truncated data after valid headers
        raise FieldFileError(f"--init {path}: cannot read the arrays ({type(e).__name__}); "
                             f"{_what(dimension)}") from None
    for key, a in fields.items():
        bad = ~np.isfinite(a)
        if bad.any():
            first = tuple(v[0] for v in np.nonzero(bad))
            raise FieldFileError(f"--init {path}: array {key!r} has {int(bad.sum())} NaN/Inf values "
                                 f"(first at {_at(first)})")
    for key in ("rho", "T"):
        bad = fields[key] <= 0
        if bad.any():
            first = tuple(v[0] for v in np.nonzero(bad))
            raise FieldFileError(f"--init {path}: array {key!r} must be positive everywhere; "
                                 f"{fields[key][first]:g} at {_at(first)}")
    return fields


#: the one suffix of a --save file (numpy would append it to any other name)
SAVE_SUFFIX = ".npz"


def check_save_path(path, overwrite: bool = False, written: Optional[str] = None, resume: bool = False) -> Path:
    """``--save``, checked before any work: a name ending in .npz (the file is written under
    exactly that name), not a folder, its folder writable (created when missing), and -- the
    rule of lbgen plot and movie's ``-o`` (lbgen.output.folder.check_replaceable) -- not there
    yet unless *overwrite*, or unless it is the file this run saved before (*written*: the
    SHA-256 its manifest recorded; a *resume* saves again over its own file, and no other);
    returns it.
    FieldFileError / PathError / RunResultsError (ValueErrors) naming the path and what is allowed."""
    from lbgen.output.folder import check_replaceable
    from lbgen.system.cache import file_digest
    from lbgen.system.paths import writable_file
    file = Path(path)
    if file.suffix.lower() != SAVE_SUFFIX:
        raise FieldFileError(f"--save {file}: the final fields are written as an .npz archive; give a file name "
                             f"ending in {SAVE_SUFFIX} (not {file.suffix or 'no suffix'!r})")
    if file.is_dir():
        raise FieldFileError(f"--save {file}: is a folder, not a file")
    if written is not None and file.is_file() and not file.is_symlink():
        overwrite = overwrite or file_digest(file) == written
    if resume and not overwrite and (file.exists() or file.is_symlink()):
        raise FieldFileError(f"--save {file}: exists, and it is not the file this run saved (or it changed since); "
                             f"a resumed run never replaces it: give another --save, or move it")
    check_replaceable(file, overwrite, "--save")
    return writable_file(file, "--save")


def save_fields(path, fields: Dict[str, np.ndarray], **metadata) -> Path:
    """Write rho, ux, uy, T (3D fields, those with uz: rho, ux, uy, uz, T) and *metadata* as
    arrays to exactly *path*, an .npz (other suffixes are refused, see check_save_path);
    atomic: a failed write leaves no file."""
    from lbgen.system.cache import atomic_write
    file = Path(path)
    if file.suffix.lower() != SAVE_SUFFIX:
        raise FieldFileError(f"--save {file}: give a file name ending in {SAVE_SUFFIX} (not "
                             f"{file.suffix or 'no suffix'!r})")
    keys = field_keys(3 if "uz" in fields else 2)
    extra = {k: np.asarray(v) for k, v in metadata.items()}
    from lbgen.output.slabbed import is_slabbed, savez
    if is_slabbed(fields):               # fields made by slabs: each member streamed, none held whole
        fields = getattr(fields, "fields", fields)
        return atomic_write(file, lambda fh: savez(fh, {**{k: (fields, k) for k in keys}, **extra}))
    arrays = {k: fields[k] for k in keys}
    from lbgen.output.widened import float64_members          # float32 fields written as float64, one at a time
    return atomic_write(file, lambda fh: np.savez(fh, **float64_members(arrays), **extra))


def saved_record(run_dir) -> Optional[dict]:
    """The --save file the run in *run_dir* wrote, as its manifest records it ({"path", "sha256"}),
    or None."""
    from lbgen.output.manifest import read_manifest
    try:
        saved = read_manifest(run_dir).get("saved")
    except (OSError, ValueError):
        return None
    return saved if isinstance(saved, dict) and isinstance(saved.get("sha256"), str) else None
