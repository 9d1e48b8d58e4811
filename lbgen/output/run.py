"""RunOutput: writes everything a run produces into its folder (layout in lbgen.output)."""
from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Iterable, Mapping, Optional, Sequence, Union

import numpy as np
from lbgen.system.cache import atomic_write
from lbgen.output import series as series_mod
from lbgen.output.fields import (FIELDS_DIR, PVD_NAME, STEM_PATTERN, VTK_DIR, check_fields, fields_name,
                                 read_pvd, vti_name, write_h5, write_npz, write_pvd, write_vti)
from lbgen.output.manifest import MANIFEST_NAME, json_default, read_manifest
from lbgen.output.records import DIGESTS_KEY, FILES_KEY, OUTPUT_NAME, WRITING_KEY, recorded_digests, recorded_files
from lbgen.output.pictures import (AUTO, FRAMES_DIR, PICTURE_QUANTITIES, PICTURES_DIR, FieldPicture, auto_window,
                                   check_quantity, check_time_unit, check_window, default_limits, drawn_data,
                                   frame_name, parse_window, read_frame_file, union_rows, window_text,
                                   write_frame_file)
from lbgen.output.look import flow_time, plain_label
from lbgen.output.pictures import ARROW_QUANTITIES, in_plane_velocity, picture_name, save_png, unit_text

PathLike = Union[str, os.PathLike]
#: a picture's name: its quantity and step
PICTURE_NAME = re.compile(rf"{re.escape(PICTURES_DIR)}/({'|'.join(map(re.escape, PICTURE_QUANTITIES))})-"
                          rf"({STEM_PATTERN})\.png")
#: manifest.json keys RunOutput keeps: the window its pictures are drawn in ('x0:x1,y0:y1') and
#: the flow's time unit ({"steps": .., "label": ..}), for lbgen movie / plot to draw the same
WINDOW_KEY, TIME_UNIT_KEY = "picture_window", "time_unit"
#: the PNG text entry naming the window a picture was drawn in
WINDOW_METADATA = "Window"


def vtk_field_data(step: int, time_unit=None) -> dict:
    """The field data of a run's .vti: ``step`` and, with the flow's *time_unit*, the time in it,
    named ``time/<unit>`` (``time/t_RT``, ``time/L/U_lid``: :func:`lbgen.output.look.plain_label`)."""
    out = {"step": int(step)}
    time_unit = check_time_unit(time_unit)
    if time_unit is not None:
        out[f"time/{plain_label(time_unit.label)}"] = flow_time(step, time_unit)
    return out


def _step_of(name: str, default: float) -> float:
    """The step in a .vti's name (``step-000001000.vti``), else *default*."""
    match = re.fullmatch(rf"step-({STEM_PATTERN})\.vti", Path(name).name)
    return int(match.group(1)) if match else default


class RunOutput:
    """Writes everything a run produces into *run_dir* (see lbgen.output for the layout).

    ``pictures``: quantities drawn by :meth:`write_pictures` by default (subset of
    ``PICTURE_QUANTITIES``), and kept in the movie frames (:meth:`write_frame`). ``vtk``:
    write VTK ImageData (.vti, through pyevtk) and keep the ParaView collection (.pvd) up to
    date. ``fields_format``: ``"h5"``, ``"npz"`` or None.  ``colour_limits``: ``{quantity:
    (lo, hi)}`` used by every picture and frame (fixed for the run); ``dpi``: picture
    resolution (default: 1200 px on the long side).  ``window``: the pictures' window -- None
    (the lattice), ``((x0, x1), (y0, y1))`` in sites (or its ``--window`` text), or
    ``'auto'``: the rows where any frame recorded so far differs visibly from the wall layers
    (:func:`lbgen.output.pictures.auto_window`); :meth:`finish` draws every picture again in
    the final one.  ``time_unit``: ``(steps per unit, label)``, the flow's time unit of the
    titles and of series.png.

    ``dimension`` 3 (fields of shape (LX, LY, LZ): rho, ux, uy, uz, T): the same folder, field
    files, .vti (a 3D image) and .pvd, manifest and file list; series.csv with the 3D columns
    (``series.SERIES_COLUMNS3D``); pictures of the three mid-plane slices
    (``pictures/<q>-<plane>-<step>.png``, :func:`lbgen.output.pictures.mid_planes`) with the
    run's fixed colour limits; no movie frames and no picture window (the whole slices).
    ``periodic``: per axis, False on the run's wall axes (one-sided differences there).

    Every file it writes is recorded (:attr:`files`, relative paths) before it is written
    and kept in manifest.json under ``"files"`` (``FILES_KEY``): ``lbgen run --overwrite``
    removes those and nothing else.  A folder that already has a manifest (a resumed run)
    starts from its list.
    """

    def __init__(self, run_dir: PathLike, pictures: Sequence[str] = ("T",), vtk: bool = True,
                 fields_format: Optional[str] = "h5", colour_limits: Optional[Mapping[str, Sequence[float]]] = None,
                 dpi: Optional[float] = None, window=None, time_unit=None, physics: Optional[Mapping] = None,
                 dimension: int = 2, periodic: Optional[Sequence[bool]] = None):
        if dimension not in (2, 3):
            raise ValueError(f"dimension must be 2 or 3, not {dimension!r}")
        if dimension == 3 and window is not None:
            raise ValueError(f"window={window!r}: the pictures of a 3D run show the whole mid-plane slices; "
                             f"leave the window out")
        self.dimension = dimension
        self.periodic = tuple(bool(p) for p in (periodic if periodic is not None else (True,) * dimension))
        #: the solid sites of the run's bodies (lattice shape): grey in pictures, 'solid' in the .vti
        self.solid: Optional[np.ndarray] = None
        if len(self.periodic) != dimension:
            raise ValueError(f"periodic={periodic!r}: one flag per axis ({dimension})")
        self.run_dir = Path(run_dir)
        #: the run's physical numbers (lbgen.model.physics.run_numbers): h5 attributes physics_*
        self.physics = dict(physics or {})
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.pictures = tuple(check_quantity(q) for q in (pictures or ()))
        self.vtk = bool(vtk)
        if fields_format not in ("h5", "npz", None):
            raise ValueError(f"fields_format must be 'h5', 'npz' or None, not {fields_format!r}")
        self.fields_format = fields_format
        self.colour_limits = {q: tuple(v) for q, v in (colour_limits or {}).items()}
        self.dpi = dpi
        self.window = parse_window(window) if window is not None else None
        self.time_unit = check_time_unit(time_unit)
        self._files: dict = dict.fromkeys(recorded_files(self.run_dir) if self.manifest_path.is_file() else [])
        #: {relative path: SHA-256} of the files written (DIGESTS_KEY), a resumed run's first
        self._digests: dict = (recorded_digests(self.run_dir) or {}) if self.manifest_path.is_file() else {}
        self._writing: set = set()                   # files being written (WRITING_KEY)
        self._shape: Optional[tuple] = None          # the lattice, once a frame or picture has been drawn
        self._rows = self._unknown = object()        # the flow's rows over every frame ('auto'), read lazily
        self._frame_steps: set = set()               # frames written by this process

    # ------------------------------------------------------------------ the file list
    @property
    def files(self) -> list[str]:
        """The files this run wrote into its folder (relative, '/'-separated), sorted."""
        return sorted(self._files)

    def _relative(self, path: Path) -> str:
        return Path(path).relative_to(self.run_dir).as_posix()

    def record(self, paths: Iterable[PathLike]) -> None:
        """Add *paths* (inside the run folder) to the file list and mark them being written
        (``WRITING_KEY``); when the folder has a manifest, write it there at once -- before the
        files themselves, so a run killed in between still lists everything it may have written,
        and a file it was writing when it was killed (whose content no digest records) is known
        as its own.  ``seal`` ends the write."""
        rels = [self._relative(p) for p in paths]
        new = [rel for rel in rels if rel not in self._files]
        writing = [rel for rel in rels if rel not in self._writing]
        if not new and not writing:
            return
        self._files.update(dict.fromkeys(new))
        self._writing.update(writing)
        self._update_manifest(sync=bool(new))

    def seal(self, paths: Iterable[PathLike]) -> None:
        """Take the digests of *paths* (just written, inside the run folder), end their write,
        and write the manifest with them at once: the manifest always knows the content of the
        files this run wrote, so that --overwrite can tell them from files changed since."""
        from lbgen.system.cache import file_digest
        changed = False
        for path in paths:
            path = Path(path)
            rel = self._relative(path)
            if rel in self._writing:
                self._writing.discard(rel)
                changed = True
            if not path.is_file():
                continue
            digest = file_digest(path)
            if self._digests.get(rel) != digest:
                self._digests[rel], changed = digest, True
        if changed:
            self._update_manifest(sync=False)       # after every series row: no fsync (kill-safe)

    def _update_manifest(self, sync: bool) -> None:
        if self.manifest_path.is_file():
            try:
                data = read_manifest(self.run_dir)
            except (OSError, ValueError):
                return           # a damaged manifest: the run writes the whole one again soon
            self._dump_manifest(data, sync=sync)

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

    def frame_path(self, step: int) -> Path:
        return self.run_dir / FRAMES_DIR / frame_name(step)

    # ------------------------------------------------------------------ fields
    def write_fields(self, step: int, fields: dict, time: Optional[float] = None) -> list[Path]:
        """Write the field file (HDF5/npz), the .vti and update the .pvd; returns the paths written.

        HDF5: datasets ``rho``, ``ux``, ``uy``, ``T`` of shape (LX, LY) indexed [x, y]; file
        attributes ``step`` (and ``time`` when given: model time, steps / r). npz: the same
        arrays plus ``step``.  The .vti carries ``step`` and, with the run's time unit, the time
        in it (``time/t_RT``, :func:`vtk_field_data`) as field data; the .pvd lists every .vti
        present with timestep = its step.
        """
        arrays = check_fields(fields)
        self.record(([self.fields_path(step)] if self.fields_format else [])
                    + ([self.vti_path(step), self.pvd_path] if self.vtk else []))
        written: list[Path] = []
        if self.fields_format == "h5":
            written.append(write_h5(self.fields_path(step), step, arrays, time, attrs=self.physics,
                                    flow_time=vtk_field_data(step, self.time_unit)))
        elif self.fields_format == "npz":
            written.append(write_npz(self.fields_path(step), step, arrays, time))
        if self.vtk:
            solid = None if self.solid is None else {"solid": self.solid}      # widened per chunk
            vti = write_vti(self.vti_path(step), arrays, field_data=vtk_field_data(step, self.time_unit),
                            point_data=solid)
            written.append(vti)
            entries = {f: _step_of(f, t) for f, t in read_pvd(self.pvd_path).items()
                       if (self.pvd_path.parent / f).is_file()}            # an older lbgen's model times: steps
            entries[vti.name] = int(step)
            written.append(write_pvd(self.pvd_path, entries))
        self.seal(written)
        return written

    # ------------------------------------------------------------------ pictures and frames
    def _limits(self, quantity: str, fields: dict) -> tuple:
        """The run's colour limits of *quantity*; without them (a RunOutput made by hand) the
        first state's own range, kept for the rest of the run."""
        if quantity not in self.colour_limits:
            from lbgen.output.pictures import picture_data
            self.colour_limits[quantity] = default_limits(quantity, picture_data(quantity, fields))
        return self.colour_limits[quantity]

    def flow_rows(self) -> Optional[tuple]:
        """[y0, y1): the rows where any frame of the run (this process's and those already in
        the folder) differs visibly from the wall layers, or None."""
        if self._rows is self._unknown:
            rows = None
            for step, path in sorted(self._frame_files().items()):
                try:
                    frame = read_frame_file(path, data=False)
                except ValueError:
                    continue                  # a damaged frame of an earlier run: not this run's window
                rows = union_rows(rows, *frame.rows.values())
                self._shape = self._shape or frame.shape
            self._rows = rows
        return self._rows

    def _frame_files(self) -> dict:
        folder = self.run_dir / FRAMES_DIR
        out = {}
        if folder.is_dir():
            for p in folder.glob("step-*.npz"):
                rel = f"{FRAMES_DIR}/{p.name}"
                if OUTPUT_NAME.fullmatch(rel):
                    out[int(p.stem.split("-")[-1])] = p
        return out

    def current_window(self, shape: Optional[tuple] = None):
        """The window pictures are drawn in now, ``((x0, x1), (y0, y1))`` (None when the lattice
        is not known yet): the given one, or for 'auto' the window of the frames so far."""
        shape = shape or self._shape
        if shape is None:
            return None
        if self.window == AUTO:
            return auto_window(self.flow_rows(), shape)
        return check_window(self.window, shape)

    def write_frame(self, step: int, fields: dict, time: Optional[float] = None) -> Optional[Path]:
        """A movie frame of the picture quantities (``frames/step-<step>.npz``: their drawn
        values, 16-bit, with the run's colour limits; see lbgen.output.pictures); None when the
        run draws no pictures or is 3D (its pictures are slices drawn at the outputs).  ``lbgen
        movie`` makes its frames from these."""
        if not self.pictures or self.dimension == 3:
            return None
        drawn = {}
        for q in self.pictures:
            drawn[q] = self._body(drawn_data(q, fields, self._limits(q, fields)))
        path = self.frame_path(step)
        self.record([path])
        write_frame_file(path, step, time, drawn, self.colour_limits)
        self.seal([path])
        shape = next(iter(drawn.values())).shape
        self._shape = tuple(int(n) for n in shape)
        if self.window == AUTO:
            from lbgen.output.pictures import active_rows
            rows = self.flow_rows()                       # the folder's earlier frames first
            self._rows = union_rows(rows, *(active_rows(d, self.colour_limits[q]) for q, d in drawn.items()))
        self._frame_steps.add(int(step))
        return path

    def _body(self, data: np.ndarray, plane=None) -> np.ndarray:
        """*data* with the bodies' solid sites NaN (grey); ``plane``: (axes, index) of a 3D slice."""
        solid = self.solid if self.solid is None or plane is None else \
            np.take(self.solid, plane[1], axis=next(k for k, c in enumerate("xyz") if c not in plane[0]))
        return data if solid is None or solid.shape != data.shape else np.where(solid, np.nan, data)

    def _picture(self, quantity: str, fields: dict, step: int, time: Optional[float], window) -> Path:
        limits = self._limits(quantity, fields)
        data = self._body(drawn_data(quantity, fields, limits))
        picture = FieldPicture(quantity, data.shape, limits=limits, window=window, dpi=self.dpi,
                               time_unit=self.time_unit, r=self.physics.get("r"))
        fig = picture.draw(data, step, time)
        if quantity in ARROW_QUANTITIES:
            picture.arrows(*in_plane_velocity(fields))
        return save_png(fig, self.picture_path(quantity, step),
                        metadata={WINDOW_METADATA: window_text(picture.window)})

    def write_pictures(self, step: int, fields: dict, which: Optional[Iterable[str]] = None,
                       time: Optional[float] = None) -> list[Path]:
        """One PNG per quantity (``pictures/<q>-<step>.png``) with the run's colour limits,
        window and time unit; *which* defaults to ``self.pictures``.  The step's movie frame
        is written too (when this process has not written it yet)."""
        quantities = tuple(check_quantity(q) for q in (self.pictures if which is None else which))
        if self.dimension == 3:
            return self._slice_pictures(step, fields, quantities, time)
        if self.pictures and int(step) not in self._frame_steps:
            self.write_frame(step, fields, time)
        self.record(self.picture_path(q, step) for q in quantities)
        shape = tuple(int(n) for n in fields["T"].shape) if "T" in fields else None
        window = self.current_window(shape)
        written = [self._picture(q, fields, step, time, window) for q in quantities]
        self.seal(written)
        return written

    def finish(self) -> list[Path]:
        """At the end of a run: with the 'auto' window, draw every picture of the run that was
        drawn in another window again, in the final one (from its field file, else its movie
        frame), so that all pictures of the run show the same rows.  Returns the pictures drawn."""
        if self.window != AUTO:
            return []
        final = self.current_window()
        if final is None:
            return []
        from PIL import Image

        from lbgen.output.fields import FIELD_FORMATS, read_field_file
        again, marked = [], []
        for rel in self.files:
            match = PICTURE_NAME.fullmatch(rel)
            path = self.run_dir / rel
            if match is None or not path.is_file():
                continue
            try:
                with Image.open(path) as im:
                    drawn_in = im.text.get(WINDOW_METADATA)
            except OSError:
                drawn_in = None
            if drawn_in == window_text(final):
                continue
            quantity, step = match.group(1), int(match.group(2))
            self.record([path])
            marked.append(path)
            source = next((p for p in (self.fields_path(step, f) for f in FIELD_FORMATS) if p.is_file()), None)
            if source is not None:
                fields = read_field_file(source)
                again.append(self._picture(quantity, fields, step, fields.get("time"), final))
            elif self.frame_path(step).is_file():
                frame = read_frame_file(self.frame_path(step))
                if quantity not in frame.data:
                    continue
                picture = FieldPicture(quantity, frame.shape, limits=self.colour_limits.get(quantity) or
                                       default_limits(quantity, frame.data[quantity]), window=final, dpi=self.dpi,
                                       time_unit=self.time_unit, stride=frame.stride, r=self.physics.get("r"))
                fig = picture.draw(frame.data[quantity], step, frame.time)
                again.append(save_png(fig, path, metadata={WINDOW_METADATA: window_text(final)}))
        self.seal(marked)
        return again

    def slice_path(self, quantity: str, plane: str, step: int) -> Path:
        from lbgen.output.pictures import slice_picture_name
        return self.run_dir / PICTURES_DIR / slice_picture_name(quantity, plane, step)

    def _slice_pictures(self, step: int, fields: dict, quantities: Sequence[str], time: Optional[float]) -> list:
        """3D: one PNG per quantity and mid-plane slice, with the run's colour limits."""
        from lbgen.output.pictures import mid_planes, title_of
        planes = mid_planes(fields, self.periodic)
        self.record(self.slice_path(q, plane, step) for q in quantities for plane in planes)
        written = []
        for q in quantities:
            for plane, (axes, index, sl) in planes.items():
                limits = self._limits(q, sl)
                data = self._body(drawn_data(q, sl, limits), plane=(axes, index))
                picture = FieldPicture(q, data.shape, limits=limits, dpi=self.dpi, time_unit=self.time_unit,
                                       axes=axes, r=self.physics.get("r"))
                fig = picture.draw(data, step, time)
                if q in ARROW_QUANTITIES:
                    picture.arrows(sl["ua"], sl["ub"])
                normal = next(c for c in "xyz" if c not in axes)
                picture.title.set_text(title_of(q, step, time, self.time_unit) + f",  slice {normal} = {index}")
                if q == "vorticity":                      # its component normal to the slice
                    n = "xyz".index(normal)
                    a, b = "xyz"[(n + 1) % 3], "xyz"[(n + 2) % 3]
                    picture.colorbar.set_label(rf"$\omega_{normal} = \partial_{a} u_{b} - \partial_{b} u_{a}$ "
                                               f"({unit_text(q, self.physics.get('r'))})")
                written.append(save_png(fig, self.slice_path(q, plane, step)))
        self.seal(written)
        return written

    # ------------------------------------------------------------------ series
    def append_series(self, step: int, time: Optional[float], diag: dict, force=None, coefficients=None,
                      nusselt=None) -> None:
        """Append one row to series.csv (header written when the file is new or empty; the
        columns of the run's dimension, and with ``force`` (a run with a body: D components) the
        force on the body; ``coefficients`` its C_D, C_L; ``nusselt`` (a rayleigh-benard run)
        its Nusselt numbers)."""
        self.record([self.series_path])
        columns = series_mod.SERIES_COLUMNS3D if self.dimension == 3 else series_mod.SERIES_COLUMNS
        if nusselt is not None:
            columns = columns + series_mod.NUSSELT_COLUMNS
            diag = {**diag, **nusselt}
        if force is not None:
            columns = columns + series_mod.FORCE_COLUMNS[:len(force)]
            diag = {**diag, **dict(zip(series_mod.FORCE_COLUMNS, (float(c) for c in force)))}
        if coefficients is not None:      # a flow around a body: C_D, C_L
            columns, diag = columns + series_mod.COEFFICIENT_COLUMNS, {**diag, **dict(zip(("c_d", "c_l"), coefficients))}
        series_mod.append_row(self.series_path, step, time, diag, columns=columns)
        self.seal([self.series_path])

    def read_series(self) -> dict:
        """Columns of series.csv as float64 arrays."""
        return series_mod.read_series(self.series_path)

    def truncate_series(self, after_step: int) -> int:
        """Drop rows with step > *after_step* (resuming from a checkpoint); returns rows dropped."""
        return series_mod.truncate(self.series_path, after_step)

    def truncate(self, after_step: int) -> None:
        """Resume helper: truncate the series, drop .pvd entries and movie frames of steps
        after *after_step*."""
        self.record([self.series_path, self.pvd_path])
        self.truncate_series(after_step)
        for step, path in self._frame_files().items():
            if step > after_step:
                path.unlink(missing_ok=True)
        self._rows = self._unknown
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
        self.seal([self.series_path, self.pvd_path])

    def plot_series(self, T_walls: Optional[tuple] = None) -> Path:
        """series.png: every series quantity against the time (see series.series_figure)."""
        fig = series_mod.series_figure(self.read_series(), T_walls=T_walls, time_unit=self.time_unit,
                                       r=self.physics.get("r"))
        self.record([self.run_dir / series_mod.SERIES_PNG])
        path = save_png(fig, self.run_dir / series_mod.SERIES_PNG)
        self.seal([path])
        return path

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

    def _dump_manifest(self, data: dict, sync: bool = True) -> Path:
        data[FILES_KEY] = self.files
        data[DIGESTS_KEY] = {rel: self._digests[rel] for rel in self.files if rel in self._digests}
        data[WRITING_KEY] = sorted(self._writing)
        window = self.current_window() if self.window is not None else None
        if window is not None:
            data[WINDOW_KEY] = window_text(window)
        if self.time_unit is not None:
            data[TIME_UNIT_KEY] = {"steps": self.time_unit.steps, "label": self.time_unit.label}
        text = json.dumps(data, indent=2, default=json_default) + "\n"
        return atomic_write(self.manifest_path, lambda fh: fh.write(text.encode("utf-8")), sync=sync)

    def read_manifest(self, run_dir: Optional[PathLike] = None) -> dict:
        """Parse manifest.json of this run (or of *run_dir*)."""
        return read_manifest(self.run_dir if run_dir is None else run_dir)
