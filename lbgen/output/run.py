"""RunOutput: writes everything a run produces into its folder (layout in lbgen.output)."""
from __future__ import annotations

import json
import os
import re
from pathlib import Path, PurePosixPath
from typing import Iterable, Mapping, Optional, Sequence, Union

from lbgen.system.cache import atomic_write
from lbgen.output import series as series_mod
from lbgen.output.fields import (FIELD_FORMATS, FIELDS_DIR, PVD_NAME, STEM_PATTERN, VTK_DIR, check_fields, fields_name,
                                 read_pvd, vti_name, write_h5, write_npz, write_pvd, write_vti)
from lbgen.output.manifest import MANIFEST_NAME, json_default, read_manifest
from lbgen.output.pictures import (PICTURE_QUANTITIES, PICTURES_DIR, check_quantity, field_figure, picture_name,
                                   save_png)

PathLike = Union[str, os.PathLike]
#: manifest.json key: the files (relative paths, '/'-separated) RunOutput wrote into the run
#: folder -- what ``lbgen run --overwrite`` may remove, and nothing else
FILES_KEY = "files"
#: the names RunOutput gives its files (``fields/step-000001000.h5``, ...): for run folders
#: whose manifest has no file list (written by an older lbgen)
OUTPUT_NAME = re.compile("|".join([
    re.escape(MANIFEST_NAME), re.escape(series_mod.SERIES_CSV), re.escape(series_mod.SERIES_PNG),
    rf"{re.escape(FIELDS_DIR)}/step-{STEM_PATTERN}\.(?:{'|'.join(FIELD_FORMATS)})",
    rf"{re.escape(VTK_DIR)}/step-{STEM_PATTERN}\.vti", rf"{re.escape(VTK_DIR)}/{re.escape(PVD_NAME)}",
    rf"{re.escape(PICTURES_DIR)}/(?:{'|'.join(map(re.escape, PICTURE_QUANTITIES))})-{STEM_PATTERN}\.png",
]))


def safe_relative(name) -> Optional[str]:
    """*name* as a '/'-separated path inside a run folder, or None when it could point
    outside it (absolute, '..', empty) or is not a string."""
    if not isinstance(name, str) or not name or "\\" in name or "\0" in name:
        return None
    path = PurePosixPath(name)
    if path.is_absolute() or any(part in ("..", ".", "") for part in name.split("/")):
        return None
    return path.as_posix()


def recorded_files(run_dir: PathLike) -> list[str]:
    """The files of *run_dir* that lbgen wrote there (relative, '/'-separated), for
    ``--overwrite``: the manifest's file list (``"files"``), or -- when the manifest has none
    (an older lbgen), is damaged or missing -- the files present that carry RunOutput's own
    names (``OUTPUT_NAME``).  Paths are checked to stay inside the folder; the manifest
    itself is always included."""
    run_dir = Path(run_dir)
    try:
        listed = read_manifest(run_dir).get(FILES_KEY)
    except (OSError, ValueError):
        listed = None
    if isinstance(listed, list):
        names = [n for n in map(safe_relative, listed) if n is not None]
    else:
        names = []
        for folder in ("", FIELDS_DIR, VTK_DIR, PICTURES_DIR):
            where = run_dir / folder
            if not where.is_dir():
                continue
            for entry in sorted(where.iterdir()):
                rel = f"{folder}/{entry.name}" if folder else entry.name
                if OUTPUT_NAME.fullmatch(rel) and not entry.is_dir():
                    names.append(rel)
    return list(dict.fromkeys(names + [MANIFEST_NAME]))


class RunOutput:
    """Writes everything a run produces into *run_dir* (see lbgen.output for the layout).

    ``pictures``: quantities drawn by :meth:`write_pictures` by default (subset of
    ``PICTURE_QUANTITIES``). ``vtk``: write VTK ImageData (.vti, through pyevtk) and keep the
    ParaView collection (.pvd) up to date. ``fields_format``: ``"h5"``, ``"npz"`` or None.
    ``colour_limits``: ``{quantity: (lo, hi)}`` used by every picture (fixed for the run);
    ``dpi``: picture resolution (default: 1200 px on the long side).

    Every file it writes is recorded (:attr:`files`, relative paths) before it is written
    and kept in manifest.json under ``"files"`` (``FILES_KEY``): ``lbgen run --overwrite``
    removes those and nothing else.  A folder that already has a manifest (a resumed run)
    starts from its list.
    """

    def __init__(self, run_dir: PathLike, pictures: Sequence[str] = ("T",), vtk: bool = True,
                 fields_format: Optional[str] = "h5", colour_limits: Optional[Mapping[str, Sequence[float]]] = None,
                 dpi: Optional[float] = None):
        self.run_dir = Path(run_dir)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.pictures = tuple(check_quantity(q) for q in (pictures or ()))
        self.vtk = bool(vtk)
        if fields_format not in ("h5", "npz", None):
            raise ValueError(f"fields_format must be 'h5', 'npz' or None, not {fields_format!r}")
        self.fields_format = fields_format
        self.colour_limits = {q: tuple(v) for q, v in (colour_limits or {}).items()}
        self.dpi = dpi
        self._files: dict = dict.fromkeys(recorded_files(self.run_dir) if self.manifest_path.is_file() else [])

    # ------------------------------------------------------------------ the file list
    @property
    def files(self) -> list[str]:
        """The files this run wrote into its folder (relative, '/'-separated), sorted."""
        return sorted(self._files)

    def _relative(self, path: Path) -> str:
        return Path(path).relative_to(self.run_dir).as_posix()

    def record(self, paths: Iterable[PathLike]) -> None:
        """Add *paths* (inside the run folder) to the file list; when the folder has a
        manifest and the list grew, write it there at once -- before the files themselves, so
        a run killed in between still lists everything it may have written."""
        new = [rel for rel in (self._relative(p) for p in paths) if rel not in self._files]
        if not new:
            return
        self._files.update(dict.fromkeys(new))
        if self.manifest_path.is_file():
            try:
                data = read_manifest(self.run_dir)
            except (OSError, ValueError):
                return           # a damaged manifest: the run writes the whole one again soon
            self._dump_manifest(data)

    # ------------------------------------------------------------------ paths
    @property
    def series_path(self) -> Path:
        return self.run_dir / series_mod.SERIES_CSV

    @property
    def manifest_path(self) -> Path:
        return self.run_dir / MANIFEST_NAME

    @property
    def pvd_path(self) -> Path:
        return self.run_dir / VTK_DIR / PVD_NAME

    def fields_path(self, step: int, fmt: Optional[str] = None) -> Path:
        return self.run_dir / FIELDS_DIR / fields_name(step, fmt or self.fields_format or "h5")

    def vti_path(self, step: int) -> Path:
        return self.run_dir / VTK_DIR / vti_name(step)

    def picture_path(self, quantity: str, step: int) -> Path:
        return self.run_dir / PICTURES_DIR / picture_name(quantity, step)

    # ------------------------------------------------------------------ fields
    def write_fields(self, step: int, fields: dict, time: Optional[float] = None) -> list[Path]:
        """Write the field file (HDF5/npz), the .vti and update the .pvd; returns the paths written.

        HDF5: datasets ``rho``, ``ux``, ``uy``, ``T`` of shape (LX, LY) indexed [x, y]; file
        attributes ``step`` (and ``time`` when given). npz: the same arrays plus ``step``.
        The .pvd lists every .vti present, with timestep = time if given, else step.
        """
        arrays = check_fields(fields)
        self.record(([self.fields_path(step)] if self.fields_format else [])
                    + ([self.vti_path(step), self.pvd_path] if self.vtk else []))
        written: list[Path] = []
        if self.fields_format == "h5":
            written.append(write_h5(self.fields_path(step), step, arrays, time))
        elif self.fields_format == "npz":
            written.append(write_npz(self.fields_path(step), step, arrays, time))
        if self.vtk:
            vti = write_vti(self.vti_path(step), arrays)
            written.append(vti)
            entries = {f: t for f, t in read_pvd(self.pvd_path).items() if (self.pvd_path.parent / f).is_file()}
            entries[vti.name] = float(step if time is None else time)
            written.append(write_pvd(self.pvd_path, entries))
        return written

    # ------------------------------------------------------------------ pictures
    def write_pictures(self, step: int, fields: dict, which: Optional[Iterable[str]] = None,
                       time: Optional[float] = None) -> list[Path]:
        """One PNG per quantity (``pictures/<q>-<step>.png``) with the run's colour limits;
        *which* defaults to ``self.pictures``."""
        quantities = tuple(check_quantity(q) for q in (self.pictures if which is None else which))
        self.record(self.picture_path(q, step) for q in quantities)
        written = []
        for q in quantities:
            fig = field_figure(check_quantity(q), fields, limits=self.colour_limits.get(q), step=step, time=time,
                               dpi=self.dpi)
            written.append(save_png(fig, self.picture_path(q, step)))
        return written

    # ------------------------------------------------------------------ series
    def append_series(self, step: int, time: Optional[float], diag: dict) -> None:
        """Append one row to series.csv (header written when the file is new or empty)."""
        self.record([self.series_path])
        series_mod.append_row(self.series_path, step, time, diag)

    def read_series(self) -> dict:
        """Columns of series.csv as float64 arrays."""
        return series_mod.read_series(self.series_path)

    def truncate_series(self, after_step: int) -> int:
        """Drop rows with step > *after_step* (resuming from a checkpoint); returns rows dropped."""
        return series_mod.truncate(self.series_path, after_step)

    def truncate(self, after_step: int) -> None:
        """Resume helper: truncate the series and drop .pvd entries of steps after *after_step*."""
        self.truncate_series(after_step)
        if self.pvd_path.is_file():
            entries = {}
            for f, t in read_pvd(self.pvd_path).items():
                try:
                    s = int(Path(f).stem.split("-")[-1])
                except ValueError:
                    s = None
                if s is None or s <= after_step:
                    entries[f] = t
            write_pvd(self.pvd_path, entries)

    def plot_series(self, T_walls: Optional[tuple] = None) -> Path:
        """series.png: every series quantity against the model time (see series.series_figure)."""
        fig = series_mod.series_figure(self.read_series(), T_walls=T_walls)
        self.record([self.run_dir / series_mod.SERIES_PNG])
        return save_png(fig, self.run_dir / series_mod.SERIES_PNG)

    # ------------------------------------------------------------------ manifest
    def write_manifest(self, data: dict, update: bool = False) -> Path:
        """Write manifest.json (indented, atomic). With *update*, merge into the existing one.
        The file list (``"files"``, :attr:`files`) is added to it."""
        if update and self.manifest_path.is_file():
            merged = read_manifest(self.run_dir)
            merged.update(data)
            data = merged
        self._files.setdefault(MANIFEST_NAME)
        return self._dump_manifest(dict(data))

    def _dump_manifest(self, data: dict) -> Path:
        data[FILES_KEY] = self.files
        text = json.dumps(data, indent=2, default=json_default) + "\n"
        return atomic_write(self.manifest_path, lambda fh: fh.write(text.encode("utf-8")))

    def read_manifest(self, run_dir: Optional[PathLike] = None) -> dict:
        """Parse manifest.json of this run (or of *run_dir*)."""
        return read_manifest(self.run_dir if run_dir is None else run_dir)
