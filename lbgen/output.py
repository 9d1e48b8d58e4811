"""Run output: diagnostics, field files (HDF5/npz + VTK), pictures, time series, manifest.

Conventions: every field is a numpy array of shape ``(LX, LY)`` indexed ``[x, y]``;
x is periodic, y runs from the bottom wall (y = 0) to the top wall (y = LY - 1) and
gravity points in -y. Velocities are in model units (u = sum(xi f) / rho).

Layout of a run directory written by :class:`RunOutput`::

    run_dir/
      manifest.json                    write_manifest / read_manifest
      series.csv, series.png           append_series / plot_series
      fields/step-000001000.h5         write_fields (or .npz)
      vtk/step-000001000.vti           write_fields (VTK XML ImageData via pyevtk, point data)
      vtk/fields.pvd                   ParaView time-series collection of the .vti files
      pictures/T-000001000.png         write_pictures
"""
from __future__ import annotations

import csv
import importlib.metadata
import io
import json
import math
import os
import platform
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any, Iterable, Optional, Sequence, Union

import numpy as np

from .cache import atomic_output, atomic_write

__all__ = [
    "FIELD_NAMES",
    "PICTURE_QUANTITIES",
    "SERIES_COLUMNS",
    "diagnostics",
    "vorticity",
    "speed",
    "RunOutput",
    "write_vti",
    "read_vti",
    "read_manifest",
    "read_series",
    "environment_versions",
]

PathLike = Union[str, os.PathLike]

#: the fields written to every field file, in this order
FIELD_NAMES = ("rho", "ux", "uy", "T")
#: quantities write_pictures can draw
PICTURE_QUANTITIES = ("T", "rho", "vorticity", "speed")
#: columns of series.csv
SERIES_COLUMNS = ("step", "time", "mass", "momentum_x", "momentum_y", "energy", "kinetic_energy",
                  "mixing_width", "max_speed")

_FIELDS_DIR, _VTK_DIR, _PICTURES_DIR = "fields", "vtk", "pictures"
_SERIES_CSV, _SERIES_PNG, _MANIFEST, _PVD = "series.csv", "series.png", "manifest.json", "fields.pvd"


def _stem(step: int) -> str:
    return f"{int(step):09d}"


# =========================================================================== diagnostics
def _field(fields: dict, name: str) -> np.ndarray:
    try:
        return np.asarray(fields[name], dtype=np.float64)
    except KeyError:
        raise KeyError(f"fields must contain {name!r} (have {sorted(fields)})") from None


def diagnostics(fields: dict, T_hot: float, T_cold: float) -> dict:
    """Global diagnostics of one state; all values are Python floats.

    ``fields`` holds ``rho``, ``ux``, ``uy``, ``T`` of shape (LX, LY). Sums run over every
    site (lattice units, unit cell volume):

    * ``mass`` = Σ ρ
    * ``momentum_x``, ``momentum_y`` = Σ ρ u_x, Σ ρ u_y
    * ``energy`` = Σ ρ (T + |u|²/2)   (total energy in D = 2: internal ρT + kinetic)
    * ``kinetic_energy`` = Σ ½ ρ |u|²
    * ``max_speed`` = max |u|
    * ``mixing_width`` W: with the x-averaged temperature ⟨T⟩_x(y) and the
      concentration-like c(y) = (⟨T⟩_x(y) − T_cold) / (T_hot − T_cold) clipped to [0, 1],

          W = Σ_y 6 c(y) (1 − c(y)).

      Since ∫ 6c(1−c) dy over a linear ramp of c from 0 to 1 of thickness h equals h,
      W is the thickness (in lattice units) for a linear profile and 0 for a sharp
      interface where c is 0 or 1 everywhere. Mixed regions count wherever they are,
      so for Rayleigh–Taylor it measures the width of the mixing layer.
    """
    rho, ux, uy, T = (_field(fields, n) for n in FIELD_NAMES)
    if T_hot == T_cold:
        raise ValueError("T_hot and T_cold must differ to define the mixing width")
    u2 = ux * ux + uy * uy
    kinetic = 0.5 * rho * u2
    T_mean = T.mean(axis=0) if T.ndim == 2 else T
    c = np.clip((T_mean - T_cold) / (T_hot - T_cold), 0.0, 1.0)
    return {
        "mass": float(rho.sum()),
        "momentum_x": float((rho * ux).sum()),
        "momentum_y": float((rho * uy).sum()),
        "energy": float((rho * T).sum() + kinetic.sum()),
        "kinetic_energy": float(kinetic.sum()),
        "mixing_width": float((6.0 * c * (1.0 - c)).sum()),
        "max_speed": float(np.sqrt(u2.max())) if u2.size else 0.0,
    }


def vorticity(ux: np.ndarray, uy: np.ndarray, periodic_y: bool = False) -> np.ndarray:
    """ω = ∂x u_y − ∂y u_x on the (LX, LY) lattice (unit spacing).

    ∂x: periodic central difference. ∂y: ``np.gradient`` (central inside, first-order
    one-sided at the walls y = 0 and y = LY - 1), or periodic central when *periodic_y*.
    """
    ux = np.asarray(ux, dtype=np.float64)
    uy = np.asarray(uy, dtype=np.float64)
    if ux.shape != uy.shape or ux.ndim != 2:
        raise ValueError(f"ux and uy must be 2-D arrays of the same shape, got {ux.shape} and {uy.shape}")
    duy_dx = 0.5 * (np.roll(uy, -1, axis=0) - np.roll(uy, 1, axis=0))
    if periodic_y:
        dux_dy = 0.5 * (np.roll(ux, -1, axis=1) - np.roll(ux, 1, axis=1))
    elif ux.shape[1] >= 2:
        dux_dy = np.gradient(ux, axis=1, edge_order=1)
    else:
        dux_dy = np.zeros_like(ux)
    return duy_dx - dux_dy


def speed(ux: np.ndarray, uy: np.ndarray) -> np.ndarray:
    """|u| per site."""
    return np.hypot(np.asarray(ux, dtype=np.float64), np.asarray(uy, dtype=np.float64))


# =========================================================================== VTK
_NUMPY_TYPES = {"Float32": "float32", "Float64": "float64", "Int32": "int32", "Int64": "int64",
                "UInt8": "uint8", "UInt32": "uint32", "UInt64": "uint64"}


def write_vti(path: PathLike, fields: dict) -> Path:
    """VTK XML ImageData (.vti) of rho, ux, uy, T and the velocity vector, via pyevtk.

    Point (x, y) of the image is lattice site (x, y).  pyevtk stores the arrays as raw
    appended binary data, which ParaView and VTK read directly.  Written atomically.
    """
    from pyevtk.hl import imageToVTK

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)

    def as3d(a):
        a = np.asarray(a, dtype=np.float64)
        return np.ascontiguousarray(a.reshape(a.shape[0], a.shape[1], 1))

    point = {name: as3d(_field(fields, name)) for name in FIELD_NAMES}
    point["velocity"] = (point["ux"], point["uy"], np.zeros_like(point["ux"]))
    with atomic_output(path) as tmp:        # pyevtk appends ".vti" to the name it is given
        written = Path(imageToVTK(str(tmp.with_suffix("")), pointData=point))
        os.replace(written, tmp)
    return path


def read_vti(path: PathLike) -> dict:
    """Read a .vti written by :func:`write_vti` (raw appended arrays) back into numpy.

    Returns ``{name: array}``: scalars shaped (LX, LY), vectors (LX, LY, ncomp).  For tests
    and quick checks; ParaView is the real reader.
    """
    raw = Path(path).read_bytes()
    marker = raw.index(b"<AppendedData")
    root = ET.fromstring(raw[:marker].decode("ascii") + "</VTKFile>")
    header = np.dtype("<u8") if root.get("header_type") == "UInt64" else np.dtype("<u4")
    data = raw[raw.index(b"_", marker) + 1:]
    x0, x1, y0, y1, _z0, _z1 = (int(v) for v in root.find("ImageData").get("WholeExtent").split())
    lx, ly = x1 - x0 + 1, y1 - y0 + 1
    out = {}
    for da in root.iter("DataArray"):
        offset = int(da.get("offset"))
        nbytes = int(np.frombuffer(data[offset:offset + header.itemsize], header)[0])
        start = offset + header.itemsize
        values = np.frombuffer(data[start:start + nbytes], dtype=np.dtype(_NUMPY_TYPES[da.get("type")]).newbyteorder("<"))
        ncomp = int(da.get("NumberOfComponents", "1"))
        # VTK order: x fastest
        out[da.get("Name")] = (values.reshape(ly, lx).T if ncomp == 1
                               else values.reshape(ly, lx, ncomp).transpose(1, 0, 2)).copy()
    return out


def _write_pvd(pvd: Path, entries: dict) -> Path:
    """entries: relative file name -> timestep value."""
    root = ET.Element("VTKFile", type="Collection", version="0.1",
                      byte_order="LittleEndian" if sys.byteorder == "little" else "BigEndian")
    coll = ET.SubElement(root, "Collection")
    for fname, t in sorted(entries.items()):
        ET.SubElement(coll, "DataSet", timestep=repr(float(t)) if not float(t).is_integer() else str(int(t)),
                      group="", part="0", file=fname)
    ET.indent(root, space="  ")
    text = '<?xml version="1.0"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
    return atomic_write(pvd, lambda fh: fh.write(text.encode("utf-8")))


def _read_pvd(pvd: Path) -> dict:
    if not pvd.is_file():
        return {}
    try:
        root = ET.parse(pvd).getroot()
    except ET.ParseError:
        return {}
    return {ds.get("file"): float(ds.get("timestep", "0")) for ds in root.iter("DataSet") if ds.get("file")}


# =========================================================================== pictures
_PICTURE_STYLE = {
    # quantity: (colour-bar label, colormap, symmetric about 0)
    "T": ("temperature T", "RdYlBu_r", False),
    "rho": ("density ρ", "viridis", False),
    "vorticity": ("vorticity ω = ∂x u_y − ∂y u_x", "RdBu_r", True),
    "speed": ("speed |u|", "magma", False),
}


def _picture_data(quantity: str, fields: dict) -> np.ndarray:
    if quantity in ("T", "rho"):
        return _field(fields, quantity)
    if quantity == "vorticity":
        return vorticity(_field(fields, "ux"), _field(fields, "uy"))
    if quantity == "speed":
        return speed(_field(fields, "ux"), _field(fields, "uy"))
    raise ValueError(f"unknown picture quantity {quantity!r}; choose from {PICTURE_QUANTITIES}")


def _figure(figsize):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=figsize, dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _save_png(fig, path: Path) -> Path:
    return atomic_write(path, lambda fh: fig.savefig(fh, format="png"))


# =========================================================================== series
def read_series(path: PathLike) -> dict:
    """Columns of a series.csv as float64 arrays (empty arrays when there are no rows)."""
    path = Path(path)
    cols: dict[str, list] = {}
    if path.is_file():
        with open(path, newline="") as fh:
            reader = csv.DictReader(fh)
            names = reader.fieldnames or list(SERIES_COLUMNS)
            cols = {n: [] for n in names}
            for row in reader:
                for n in names:
                    v = row.get(n)
                    cols[n].append(float(v) if v not in (None, "") else math.nan)
    else:
        cols = {n: [] for n in SERIES_COLUMNS}
    return {n: np.asarray(v, dtype=np.float64) for n, v in cols.items()}


def _fmt(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)):
        return str(int(v))
    return repr(float(v))


# =========================================================================== manifest / environment
def _json_default(obj):
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
    with open(Path(run_dir) / _MANIFEST, encoding="utf-8") as fh:
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
        try:
            from . import __version__ as lbgen_version

            versions["lbgen"] = lbgen_version
        except ImportError:  # pragma: no cover
            pass
    try:
        proc = subprocess.run(["gcc", "--version"], capture_output=True, text=True, timeout=20)
        first = proc.stdout.splitlines()[0].strip() if proc.returncode == 0 and proc.stdout else None
    except (OSError, subprocess.SubprocessError):
        first = None
    versions["gcc"] = first
    versions["platform"] = platform.platform()
    return versions


# =========================================================================== RunOutput
class RunOutput:
    """Writes everything a run produces into *run_dir* (see the module docstring for the layout).

    ``pictures``: quantities drawn by :meth:`write_pictures` by default (subset of
    ``PICTURE_QUANTITIES``). ``vtk``: write VTK ImageData (.vti, through pyevtk) and keep the
    ParaView collection (.pvd) up to date. ``fields_format``: ``"h5"``, ``"npz"`` or None.
    """

    def __init__(self, run_dir: PathLike, pictures: Sequence[str] = ("T",), vtk: bool = True,
                 fields_format: Optional[str] = "h5"):
        self.run_dir = Path(run_dir)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.pictures = tuple(pictures or ())
        for q in self.pictures:
            if q not in PICTURE_QUANTITIES:
                raise ValueError(f"unknown picture quantity {q!r}; choose from {PICTURE_QUANTITIES}")
        self.vtk = bool(vtk)
        if fields_format not in ("h5", "npz", None):
            raise ValueError(f"fields_format must be 'h5', 'npz' or None, not {fields_format!r}")
        self.fields_format = fields_format

    # ------------------------------------------------------------------ paths
    @property
    def series_path(self) -> Path:
        return self.run_dir / _SERIES_CSV

    @property
    def manifest_path(self) -> Path:
        return self.run_dir / _MANIFEST

    @property
    def pvd_path(self) -> Path:
        return self.run_dir / _VTK_DIR / _PVD

    def fields_path(self, step: int, fmt: Optional[str] = None) -> Path:
        return self.run_dir / _FIELDS_DIR / f"step-{_stem(step)}.{fmt or self.fields_format or 'h5'}"

    def vti_path(self, step: int) -> Path:
        return self.run_dir / _VTK_DIR / f"step-{_stem(step)}.vti"

    def picture_path(self, quantity: str, step: int) -> Path:
        return self.run_dir / _PICTURES_DIR / f"{quantity}-{_stem(step)}.png"

    # ------------------------------------------------------------------ fields
    @staticmethod
    def _check_fields(fields: dict) -> dict:
        arrays = {name: np.asarray(fields[name]) if name in fields else None for name in FIELD_NAMES}
        missing = [n for n, a in arrays.items() if a is None]
        if missing:
            raise KeyError(f"fields lack {missing} (need {list(FIELD_NAMES)})")
        shapes = {a.shape for a in arrays.values()}
        if len(shapes) != 1 or len(next(iter(shapes))) != 2:
            raise ValueError(f"fields must be 2-D arrays of one shape (LX, LY), got shapes "
                             f"{ {n: a.shape for n, a in arrays.items()} }")
        return arrays

    def write_fields(self, step: int, fields: dict, time: Optional[float] = None) -> list[Path]:
        """Write the field file (HDF5/npz), the .vti and update the .pvd; returns the paths written.

        HDF5: datasets ``rho``, ``ux``, ``uy``, ``T`` of shape (LX, LY) indexed [x, y]; file
        attributes ``step`` (and ``time`` when given). npz: the same arrays plus ``step``.
        The .pvd lists every .vti present, with timestep = time if given, else step.
        """
        arrays = self._check_fields(fields)
        written: list[Path] = []
        if self.fields_format == "h5":
            written.append(self._write_h5(self.fields_path(step), step, arrays, time))
        elif self.fields_format == "npz":
            extra = {"step": np.int64(step)}
            if time is not None:
                extra["time"] = np.float64(time)
            written.append(atomic_write(self.fields_path(step),
                                        lambda fh: np.savez(fh, **arrays, **extra)))
        if self.vtk:
            vti = write_vti(self.vti_path(step), arrays)
            written.append(vti)
            entries = {f: t for f, t in _read_pvd(self.pvd_path).items() if (self.pvd_path.parent / f).is_file()}
            entries[vti.name] = float(step if time is None else time)
            written.append(_write_pvd(self.pvd_path, entries))
        return written

    @staticmethod
    def _write_h5(path: Path, step: int, arrays: dict, time: Optional[float]) -> Path:
        import h5py

        with atomic_output(path) as tmp:
            with h5py.File(tmp, "w") as f:
                for name, arr in arrays.items():
                    f.create_dataset(name, data=arr)
                f.attrs["step"] = int(step)
                if time is not None:
                    f.attrs["time"] = float(time)
                f.attrs["shape"] = np.asarray(next(iter(arrays.values())).shape, dtype=np.int64)
                f.attrs["index_order"] = "[x, y]; x periodic, y from bottom wall (0) to top wall (LY-1)"
        return path

    # ------------------------------------------------------------------ pictures
    def write_pictures(self, step: int, fields: dict, which: Optional[Iterable[str]] = None) -> list[Path]:
        """One PNG per quantity (``pictures/<q>-<step>.png``); *which* defaults to ``self.pictures``."""
        quantities = tuple(self.pictures if which is None else which)
        written = []
        for q in quantities:
            data = _picture_data(q, fields)
            label, cmap, symmetric = _PICTURE_STYLE[q]
            lx, ly = data.shape
            aspect = ly / max(lx, 1)
            if aspect >= 1:
                h = 7.0
                w = float(np.clip(h / aspect * 0.85 + 1.8, 3.5, 14.0))
            else:
                w = 10.0
                h = float(np.clip((w - 1.8) * aspect + 1.2, 2.5, 10.0))
            fig = _figure((w, h))
            ax = fig.add_subplot(1, 1, 1)
            finite = data[np.isfinite(data)]
            vmin = vmax = None
            if symmetric and finite.size:
                vmax = float(np.abs(finite).max()) or 1.0
                vmin = -vmax
            im = ax.imshow(data.T, origin="lower", aspect="equal", cmap=cmap, vmin=vmin, vmax=vmax,
                           extent=(-0.5, lx - 0.5, -0.5, ly - 0.5))
            ax.set_xlabel("x")
            ax.set_ylabel("y")
            ax.set_title(f"{q} — step {int(step)}")
            cb = fig.colorbar(im, ax=ax, shrink=0.9)
            cb.set_label(label)
            written.append(_save_png(fig, self.picture_path(q, step)))
        return written

    # ------------------------------------------------------------------ series
    def append_series(self, step: int, time: Optional[float], diag: dict) -> None:
        """Append one row to series.csv (header written when the file is new or empty)."""
        path = self.series_path
        new = not path.is_file() or path.stat().st_size == 0
        row = [_fmt(step), _fmt(time)] + [_fmt(diag.get(c)) for c in SERIES_COLUMNS[2:]]
        with open(path, "a", newline="") as fh:
            w = csv.writer(fh, lineterminator="\n")
            if new:
                w.writerow(SERIES_COLUMNS)
            w.writerow(row)

    def read_series(self) -> dict:
        """Columns of series.csv as float64 arrays."""
        return read_series(self.series_path)

    def truncate_series(self, after_step: int) -> int:
        """Drop rows with step > *after_step* (resuming from a checkpoint); returns rows dropped."""
        path = self.series_path
        if not path.is_file():
            return 0
        with open(path, newline="") as fh:
            rows = list(csv.reader(fh))
        if not rows:
            return 0
        header, body = rows[0], rows[1:]
        keep = [r for r in body if r and float(r[0]) <= after_step]
        dropped = sum(1 for r in body if r) - len(keep)
        if dropped:
            buf = io.StringIO()
            w = csv.writer(buf, lineterminator="\n")
            w.writerow(header)
            w.writerows(keep)
            atomic_write(path, lambda fh: fh.write(buf.getvalue().encode("utf-8")))
        return dropped

    def truncate(self, after_step: int) -> None:
        """Resume helper: truncate the series and drop .pvd entries of steps after *after_step*."""
        self.truncate_series(after_step)
        if self.pvd_path.is_file():
            entries = {}
            for f, t in _read_pvd(self.pvd_path).items():
                try:
                    s = int(Path(f).stem.split("-")[-1])
                except ValueError:
                    s = None
                if s is None or s <= after_step:
                    entries[f] = t
            _write_pvd(self.pvd_path, entries)

    def plot_series(self) -> Path:
        """Plot series.csv vs step into series.png: relative change of mass and energy,
        kinetic energy, mixing width and max speed."""
        s = self.read_series()
        step = s.get("step", np.empty(0))
        fig = _figure((10.0, 7.0))
        axes = [fig.add_subplot(2, 2, i + 1) for i in range(4)]

        def rel(col):
            v = s.get(col, np.full_like(step, np.nan))
            if v.size and np.isfinite(v[0]) and v[0] != 0.0:
                return (v - v[0]) / v[0]
            return v * np.nan

        if step.size:
            axes[0].plot(step, rel("mass"), label="mass")
            axes[0].plot(step, rel("energy"), label="energy")
            axes[0].legend()
            axes[1].plot(step, s.get("kinetic_energy", step * np.nan), color="C2")
            axes[2].plot(step, s.get("mixing_width", step * np.nan), color="C3")
            axes[3].plot(step, s.get("max_speed", step * np.nan), color="C4")
        else:
            for ax in axes:
                ax.text(0.5, 0.5, "no data yet", ha="center", va="center", transform=ax.transAxes)
        titles = ["relative change (X − X₀)/X₀", "kinetic energy Σ ½ρ|u|²", "mixing width W", "max |u|"]
        for ax, title in zip(axes, titles):
            ax.set_title(title)
            ax.set_xlabel("step")
            ax.grid(True, alpha=0.3)
        axes[0].ticklabel_format(axis="y", style="sci", scilimits=(-2, 2), useOffset=False)
        return _save_png(fig, self.run_dir / _SERIES_PNG)

    # ------------------------------------------------------------------ manifest
    def write_manifest(self, data: dict, update: bool = False) -> Path:
        """Write manifest.json (indented, atomic). With *update*, merge into the existing one."""
        if update and self.manifest_path.is_file():
            merged = read_manifest(self.run_dir)
            merged.update(data)
            data = merged
        text = json.dumps(data, indent=2, default=_json_default) + "\n"
        return atomic_write(self.manifest_path, lambda fh: fh.write(text.encode("utf-8")))

    def read_manifest(self, run_dir: Optional[PathLike] = None) -> dict:
        """Parse manifest.json of this run (or of *run_dir*)."""
        return read_manifest(self.run_dir if run_dir is None else run_dir)
