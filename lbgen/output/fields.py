"""Field files of a run folder: HDF5/npz, VTK ImageData (+ ParaView .pvd), and derived fields.

Conventions: every field is a numpy array of shape ``(LX, LY)`` indexed ``[x, y]``; x is
periodic, y runs from the bottom wall (y = 0) to the top wall (y = LY - 1) and gravity
points in -y.  The fields are the physical (half-step) ones the run reports (``FIELDS_MEANING``).
"""
from __future__ import annotations

import os
import re
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Dict, Optional, Union

import numpy as np

from lbgen.system.cache import atomic_output, atomic_write
from lbgen.codegen.diagnostics import rows_of_fields, scalars
from lbgen.model.catalog import field_names as names_of_dimension

PathLike = Union[str, os.PathLike]

#: the fields written to every field file, in this order
FIELD_NAMES = names_of_dimension(2)
#: ... of a 3D run: arrays of shape (LX, LY, LZ) indexed [x, y, z]
FIELD_NAMES3D = names_of_dimension(3)


def field_names(fields: dict) -> tuple:
    """The field names of a state: FIELD_NAMES3D when it has a uz (3D), else FIELD_NAMES."""
    return FIELD_NAMES3D if "uz" in fields else FIELD_NAMES
FIELDS_DIR, VTK_DIR, PVD_NAME = "fields", "vtk", "fields.pvd"
#: what rho, ux, uy, T of a field file are (an attribute of every .h5 file; docs/physics.md)
FIELDS_MEANING = ("physical (half-step) fields: rho, u = sum(xi f)/rho - a/2, T + |a|^2/8 of the stored "
                  "post-collision moments (a: force per unit mass per step, g/r); lengths in sites, velocities "
                  "in model units (u/r sites per step), T in units of T0 = 1")
FIELD_FORMATS = ("h5", "npz")


#: the step part of every per-step file name: 9 digits or more (``000001000``)
STEM_PATTERN = r"\d{9,}"


class OutputFileError(ValueError):
    """A file of a run folder that cannot be read (damaged, truncated, not what its name
    says); the message names the file and what is wrong."""


def stem(step: int) -> str:
    """The zero-padded step of every per-step file name (``step-000001000``)."""
    return f"{int(step):09d}"


def fields_name(step: int, fmt: str) -> str:
    """``step-000001000.h5``: the name of a field file in ``fields/`` (the one naming rule)."""
    return f"step-{stem(step)}.{fmt}"


def vti_name(step: int) -> str:
    """``step-000001000.vti``: the name of a VTK file in ``vtk/``."""
    return f"step-{stem(step)}.vti"


def field_array(fields: dict, name: str) -> np.ndarray:
    try:
        return np.asarray(fields[name], dtype=np.float64)
    except KeyError:
        raise KeyError(f"fields must contain {name!r} (have {sorted(fields)})") from None


def diagnostics(fields: dict, T_hot: float, T_cold: float) -> dict:
    """Global diagnostics of one state on the host (Python floats), the same numbers as
    ``Simulation.diagnostics`` computes on the backend (``lbgen.codegen.diagnostics.scalars``).

    mass = Σ ρ; momentum_x/y = Σ ρ u; energy = Σ ρ (T + |u|²/2); kinetic_energy = Σ ½ ρ|u|²;
    max_speed = max |u|; min_rho, min_T, max_T; nonfinite; mixing_width W = Σ_y 6c(1 − c)
    with c = (⟨T⟩_x − T_cold)/(T_hot − T_cold) clipped to [0, 1] (the thickness of a linear
    ramp, 0 for a sharp interface).
    """
    if T_hot == T_cold:
        raise ValueError("T_hot and T_cold must differ to define the mixing width")
    rho = field_array(fields, "rho")
    return scalars(rows_of_fields({n: field_array(fields, n) for n in FIELD_NAMES}), rho.shape[0], T_hot, T_cold)


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


def check_fields(fields: dict) -> Dict[str, np.ndarray]:
    """The four fields as arrays of one 2-D shape, or -- with a uz -- the five of a 3D state
    of one 3-D shape (KeyError / ValueError naming what is wrong)."""
    names = field_names(fields)
    from lbgen.output.slabbed import is_slabbed
    if is_slabbed(fields):                 # made slab by slab from the populations: its shape is the lattice's
        if tuple(fields.names) != tuple(names) or fields.ndim != (3 if names is FIELD_NAMES3D else 2):
            raise ValueError(f"fields by slabs must be {list(names)} of one {len(names) - 2}-D shape")
        return fields
    arrays = {name: np.asarray(fields[name]) if name in fields else None for name in names}
    missing = [n for n, a in arrays.items() if a is None]
    if missing:
        raise KeyError(f"fields lack {missing} (need {list(names)})")
    shapes = {a.shape for a in arrays.values()}
    D = 3 if names is FIELD_NAMES3D else 2
    if len(shapes) != 1 or len(next(iter(shapes))) != D:
        raise ValueError(f"fields must be {D}-D arrays of one shape ({'LX, LY, LZ' if D == 3 else 'LX, LY'}), got "
                         f"shapes { {n: a.shape for n, a in arrays.items()} }")
    return arrays


# --------------------------------------------------------------------------- HDF5 / npz
#: the values write_h5 widens at once (a slab of X planes of a float32 field): 1 MiB of doubles
H5_SLAB = 1 << 17

def write_h5(path: Path, step: int, arrays: dict, time: Optional[float], attrs: Optional[dict] = None,
             flow_time: Optional[dict] = None) -> Path:
    """HDF5 datasets rho, ux, uy, T (LX, LY) with attributes step (and time: model time, steps
    / r, named so in ``time_meaning``), the time in the flow's own unit given ``flow_time`` (the
    .vti's field data: ``time/t_RT`` ...) and, given ``attrs``, the run's physical numbers as
    ``physics_<name>`` (units: ``physics_units``); atomic."""
    import h5py

    from lbgen.output.slabbed import is_slabbed
    with atomic_output(path) as tmp:
        with h5py.File(tmp, "w") as f:
            slabbed = is_slabbed(arrays)
            for name in arrays:
                if slabbed:              # fields made slab by slab: each dataset written as its slabs come
                    data = f.create_dataset(name, shape=arrays.shape, dtype=np.float64)
                    for x0, x1, values in arrays.slabs():
                        data[x0:x1] = values[name].astype(np.float64)
                        del values
                    continue
                arr = np.asarray(arrays[name])
                if arr.dtype == np.float64 or not arr.ndim:
                    f.create_dataset(name, data=np.asarray(arr, dtype=np.float64))
                    continue
                # float32 fields widened a slab of X planes at a time (the same file: one dataset,
                # written in parts; a whole field's float64 copy was 8 B a cell)
                data = f.create_dataset(name, shape=arr.shape, dtype=np.float64)
                width = max(1, H5_SLAB // max(arr[0].size, 1))
                for x0 in range(0, arr.shape[0], width):
                    data[x0:x0 + width] = arr[x0:x0 + width].astype(np.float64)
            f.attrs["step"] = int(step)
            if time is not None:
                f.attrs["time"] = float(time)
                f.attrs["time_meaning"] = "model time: steps / r (the flow's own time: the time/<unit> attribute)"
            for key, value in (flow_time or {}).items():
                if key.startswith("time/"):
                    f.attrs[key] = float(value)
            shape = arrays.shape if slabbed else next(iter(arrays.values())).shape
            f.attrs["shape"] = np.asarray(shape, dtype=np.int64)
            f.attrs["index_order"] = ("[x, y]; x periodic, y from bottom wall (0) to top wall (LY-1)" if len(shape) == 2
                                      else "[x, y, z]; site (x, y, z), periodic except on the run's wall axes")
            f.attrs["fields"] = FIELDS_MEANING
            for key, value in (attrs or {}).items():
                f.attrs[f"physics_{key}"] = value
    return path


def write_npz(path: Path, step: int, arrays: dict, time: Optional[float]) -> Path:
    extra = {"step": np.int64(step)}
    if time is not None:
        extra["time"] = np.float64(time)
    from lbgen.output.slabbed import is_slabbed, savez
    if is_slabbed(arrays):                 # each member streamed slab by slab: no field held whole
        return atomic_write(path, lambda fh: savez(fh, {**{n: (arrays, n) for n in arrays}, **extra}))
    from lbgen.output.widened import float64_members          # float32 fields written as float64, one at a time
    return atomic_write(path, lambda fh: np.savez(fh, **float64_members(arrays), **extra))


def read_field_file(path: PathLike) -> dict:
    """rho, ux, uy, T of a saved field file (.h5 or .npz), plus ``step`` and ``time`` (None if absent).

    A file that cannot be read (truncated, damaged, arrays missing or of different shapes)
    raises OutputFileError naming the file and what is wrong."""
    path = Path(path)
    if path.suffix not in (".h5", ".npz"):
        raise OutputFileError(f"{path}: not a field file (.h5 or .npz)")
    if not path.is_file():
        raise OutputFileError(f"{path}: no such field file")
    try:
        if path.suffix == ".h5":
            import h5py
            with h5py.File(path, "r") as f:
                names = FIELD_NAMES3D if "uz" in f else FIELD_NAMES
                missing = [n for n in names if n not in f] + (["step"] if "step" not in f.attrs else [])
                if missing:
                    raise OutputFileError(f"{path}: damaged field file: no {', '.join(missing)} in it "
                                          f"(a field file holds {', '.join(names)} and the attribute step)")
                out = {n: np.asarray(f[n]) for n in names}
                out["step"] = int(f.attrs["step"])
                out["time"] = float(f.attrs["time"]) if "time" in f.attrs else None
        else:
            with np.load(path, allow_pickle=False) as z:
                names = FIELD_NAMES3D if "uz" in z.files else FIELD_NAMES
                missing = [n for n in (*names, "step") if n not in z.files]
                if missing:
                    raise OutputFileError(f"{path}: damaged field file: no {', '.join(missing)} in it "
                                          f"(a field file holds {', '.join(names)} and step)")
                out = {n: np.asarray(z[n]) for n in names}
                out["step"] = int(z["step"])
                out["time"] = float(z["time"]) if "time" in z.files else None
    except OutputFileError:
        raise
    except Exception as e:  # noqa: BLE001 - truncated or damaged, whatever h5py / numpy / zipfile says
        reason = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise OutputFileError(f"{path}: cannot read the field file, it is truncated or damaged "
                              f"({type(e).__name__}: {reason})") from None
    shapes = {a.shape for n, a in out.items() if n in names}
    D = 3 if names is FIELD_NAMES3D else 2
    if len(shapes) != 1 or len(next(iter(shapes))) != D or 0 in next(iter(shapes)):
        raise OutputFileError(f"{path}: damaged field file: {', '.join(names)} must be non-empty {D}-D arrays "
                              f"of one shape, got {sorted(shapes)}")
    return out


def saved_steps(run_dir: PathLike) -> Dict[int, Path]:
    """{step: field file} of every saved field file of a run folder, in step order."""
    found = {}
    for fmt in FIELD_FORMATS:
        for p in (Path(run_dir) / FIELDS_DIR).glob(f"step-*.{fmt}"):
            if re.fullmatch(rf"step-{STEM_PATTERN}\.{fmt}", p.name):
                found[int(p.stem.split("-")[-1])] = p
    return dict(sorted(found.items()))


# --------------------------------------------------------------------------- VTK
_NUMPY_TYPES = {"Float32": "float32", "Float64": "float64", "Int32": "int32", "Int64": "int64",
                "UInt8": "uint8", "UInt32": "uint32", "UInt64": "uint64"}


def write_vti(path: PathLike, fields: dict, field_data: Optional[Dict[str, float]] = None,
              point_data: Optional[Dict[str, np.ndarray]] = None) -> Path:
    """VTK XML ImageData (.vti) of rho, ux, uy, T (3D: and uz) and the velocity vector, via pyevtk;
    *field_data* ``{name: number}``: one-value arrays of the image's FieldData (a run writes
    ``step`` and, with a flow time unit, ``time/t_RT`` etc.: ParaView shows them per file);
    *point_data* ``{name: array of the lattice's shape}``: more point arrays (a run with bodies
    writes ``solid``, 1 at their sites).

    Point (x, y) of the image is lattice site (x, y); of a 3D state (fields with a uz, of
    shape (LX, LY, LZ)) point (x, y, z) is site (x, y, z).  pyevtk's ``VtkFile`` writes the XML
    (grid, piece, data array headers with their offsets); the raw appended binary blocks
    (a UInt64 byte count, then the values, x fastest) are written here with numpy: pyevtk's
    own ``appendData`` packs one value per Python call (17 s for the two outputs of a
    1024 x 4096 run, against 0.3 s).  ParaView and VTK read the file directly.  Written
    atomically.
    """
    from pyevtk.vtk import VtkFile, VtkImageData

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)

    names = field_names(fields)

    def as3d(a):        # a view: float32 fields are widened per chunk as they are written (_vtk_blocks)
        a = np.asarray(a)
        return a.reshape(a.shape[0], a.shape[1], a.shape[2] if a.ndim == 3 else 1)

    from lbgen.output.slabbed import is_slabbed
    slabbed = is_slabbed(fields)             # made slab by slab: one field read at a time, below
    point = {} if slabbed else {name: as3d(fields[name] if name in fields else field_array(fields, name))
                                for name in names}
    point.update({name: as3d(value) for name, value in (point_data or {}).items()})
    names = list(names) + [name for name in (point_data or {}) if name not in names]
    shape = tuple(fields.shape) + (1,) * (3 - fields.ndim) if slabbed else point["rho"].shape
    end = tuple(n - 1 for n in shape)
    size = int(np.prod(shape))
    with atomic_output(path) as tmp:        # pyevtk appends ".vti" to the name it is given
        w = VtkFile(str(tmp.with_suffix("")), VtkImageData)
        w.openGrid(start=(0, 0, 0), end=end, origin=(0.0, 0.0, 0.0), spacing=(1.0, 1.0, 1.0))
        extra = {name: np.asarray([value], dtype="<i8" if isinstance(value, (int, np.integer)) else "<f8")
                 for name, value in (field_data or {}).items()}
        if extra:
            w.openData("Field")
            for name, block in extra.items():
                w.xml.openElement("DataArray")
                w.xml.addAttributes(Name=name, NumberOfTuples=1, NumberOfComponents=1,
                                    type="Int64" if block.dtype.kind == "i" else "Float64", format="appended",
                                    offset=w.offset)
                w.xml.closeElement()
                w.offset += block.nbytes + 8
            w.closeData("Field")
        w.openPiece(start=(0, 0, 0), end=end)
        w.openData("Point", scalars=names[0], vectors="velocity")
        for name in names:                  # every array Float64, whatever the fields' own dtype
            w.addHeader(name, "float64", size, 1)
        w.addHeader("velocity", "float64", size, 3)
        w.closeData("Point")
        w.closePiece()
        w.closeGrid()
        w.openAppendedData()
        stream = w.xml.stream
        for block in extra.values():
            stream.write(np.uint64(block.nbytes).astype("<u8").tobytes())
            stream.write(block.tobytes())
        if slabbed:
            _write_by_parts(stream, fields, names, point, size)
        velocity = [] if slabbed else [point["ux"], point["uy"], point["uz"] if "uz" in point else None]
        for arrays in ([] if slabbed else [[point[name]] for name in names] + [velocity]):
            stream.write(np.uint64(size * 8 * len(arrays)).astype("<u8").tobytes())
            for chunk in _vtk_blocks(arrays):
                stream.write(memoryview(chunk).cast("B"))
        w.save()
        os.replace(w.getFileName(), tmp)
    return path


#: fields made by slabs: write_vti makes them this many parts of whole Z planes at a time (an
#: eighth of the five fields held, not one whole field)
VTK_PARTS = 8


def _write_by_parts(stream, fields, names: list, point: dict, size: int) -> None:
    """write_vti's appended blocks (each scalar, then the velocity vector) of fields made by slabs
    (``lbgen.output.slabbed``): the fields of a part of whole Z planes are made at once
    (``VTK_PARTS`` parts) and each block's bytes of those planes written at their offset in the
    file (x fastest, then y, then z: a part's planes are one run of each block) -- the same file,
    one part's fields held instead of one field or three."""
    lx, ly = fields.shape[:2]
    lz = fields.shape[2] if fields.ndim == 3 else 1
    at, offsets = stream.tell(), {}
    for name, k in [(name, 1) for name in names] + [("velocity", 3)]:
        stream.seek(at)
        stream.write(np.uint64(size * 8 * k).astype("<u8").tobytes())
        offsets[name], at = at + 8, at + 8 + size * 8 * k
    own = [name for name in names if name not in point]          # the fields themselves
    components = ("ux", "uy", "uz")[:fields.ndim]
    step = -(-lz // VTK_PARTS)
    for z0 in range(0, lz, step):
        index = (slice(None), slice(None), slice(z0, z0 + step)) if fields.ndim == 3 else ()
        part = {n: a.reshape(lx, ly, -1) for n, a in fields.part(own, index).items()}
        for name, arrays in [(n, [part[n] if n in part else point[n][:, :, z0:z0 + step]]) for n in names] + \
                [("velocity", [part[c] for c in components] + [None] * (3 - len(components)))]:
            stream.seek(offsets[name] + z0 * lx * ly * 8 * (3 if name == "velocity" else 1))
            for chunk in _vtk_blocks(arrays):
                stream.write(memoryview(chunk).cast("B"))
        del part
    stream.seek(at)


#: the values of one appended chunk of write_vti (a plane of x-y, or part of one): 1 MiB of doubles
VTK_CHUNK = 1 << 17


def _vtk_blocks(arrays: list):
    """The appended bytes of one data array of write_vti in chunks, x fastest (the Fortran order
    of the (LX, LY, LZ) arrays): a scalar's values, or (three arrays, the last None in 2D) the
    vector's components interleaved per point, as little-endian float64 chunks of about
    ``VTK_CHUNK`` values -- no copy of a whole field (a 3D run's five fields and their velocity
    vector were 64 B a cell at once)."""
    lx, ly, lz = arrays[0].shape
    rows = max(1, VTK_CHUNK // max(lx * len(arrays), 1))
    for z in range(lz):
        for y in range(0, ly, rows):
            out = np.zeros((min(rows, ly - y), lx, len(arrays)), dtype="<f8")
            for c, a in enumerate(arrays):
                if a is not None:
                    out[:, :, c] = a[:, y:y + rows, z].T
            yield out


def read_vti(path: PathLike) -> dict:
    """Read a .vti written by :func:`write_vti` (raw appended arrays) back into numpy.

    Returns ``{name: array}``: scalars shaped (LX, LY), vectors (LX, LY, ncomp); of a 3D image
    (LX, LY, LZ) and (LX, LY, LZ, ncomp); FieldData arrays as given (``step``: shape (1,)).
    For tests and quick checks; ParaView is the real reader.
    """
    raw = Path(path).read_bytes()
    marker = raw.index(b"<AppendedData")
    root = ET.fromstring(raw[:marker].decode("ascii") + "</VTKFile>")
    header = np.dtype("<u8") if root.get("header_type") == "UInt64" else np.dtype("<u4")
    data = raw[raw.index(b"_", marker) + 1:]
    x0, x1, y0, y1, z0, z1 = (int(v) for v in root.find("ImageData").get("WholeExtent").split())
    lx, ly, lz = x1 - x0 + 1, y1 - y0 + 1, z1 - z0 + 1
    out = {}
    field = {id(da) for fd in root.iter("FieldData") for da in fd.iter("DataArray")}
    for da in root.iter("DataArray"):
        offset = int(da.get("offset"))
        nbytes = int(np.frombuffer(data[offset:offset + header.itemsize], header)[0])
        start = offset + header.itemsize
        values = np.frombuffer(data[start:start + nbytes],
                               dtype=np.dtype(_NUMPY_TYPES[da.get("type")]).newbyteorder("<"))
        ncomp = int(da.get("NumberOfComponents", "1"))
        if id(da) in field:
            out[da.get("Name")] = values.copy()
            continue
        # VTK order: x fastest
        if lz > 1:
            out[da.get("Name")] = (values.reshape(lz, ly, lx).transpose(2, 1, 0) if ncomp == 1
                                   else values.reshape(lz, ly, lx, ncomp).transpose(2, 1, 0, 3)).copy()
        else:
            out[da.get("Name")] = (values.reshape(ly, lx).T if ncomp == 1
                                   else values.reshape(ly, lx, ncomp).transpose(1, 0, 2)).copy()
    return out


def write_pvd(pvd: Path, entries: dict) -> Path:
    """ParaView collection; entries: relative file name -> timestep value."""
    root = ET.Element("VTKFile", type="Collection", version="0.1",
                      byte_order="LittleEndian" if sys.byteorder == "little" else "BigEndian")
    coll = ET.SubElement(root, "Collection")
    for fname, t in sorted(entries.items()):
        ET.SubElement(coll, "DataSet", timestep=repr(float(t)) if not float(t).is_integer() else str(int(t)),
                      group="", part="0", file=fname)
    ET.indent(root, space="  ")
    text = '<?xml version="1.0"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
    return atomic_write(pvd, lambda fh: fh.write(text.encode("utf-8")))


def read_pvd(pvd: Path) -> dict:
    if not pvd.is_file():
        return {}
    try:
        root = ET.parse(pvd).getroot()
    except ET.ParseError:
        return {}
    return {ds.get("file"): float(ds.get("timestep", "0")) for ds in root.iter("DataSet") if ds.get("file")}
