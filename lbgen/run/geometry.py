"""The body of a run (``--geometry FILE``): a voxel mask ``.npy`` ((LX, LY) in 2D, (LX, LY, LZ) in 3D),
read and checked (dtype, shape, size) from its header before any file is written, nothing
unpickled; or a closed triangle mesh (``.stl``, ``.obj``, ``.ply``; 3D), placed by ``--stl-scale``,
``--stl-rotate`` and ``--stl-offset`` (``lbgen.geometry.Mesh``) and voxelized once per process.
``run_bodies`` gives the lattice's ``bodies=`` (the mesh with its wall distances, or the mask's
labels)."""
from __future__ import annotations

import math
from pathlib import Path
from typing import Optional

import numpy as np

from lbgen.geometry.mesh import is_mesh
from lbgen.run.config import RunConfig
from lbgen.run.flows import FLOWS
from lbgen.simulation.boundaries import voxel_mask
from lbgen.simulation.parameters import SimulationError


def _npy_header(path: Path):
    """(shape, dtype, bytes of data after the header) of a .npy file from its header alone, or
    SimulationError naming the file and the reason (a folder, empty, not a .npy file, pickled
    objects, a header numpy cannot read)."""
    where = f"--geometry {path}"
    if path.is_dir():
        raise SimulationError(f"{where}: is a folder, not a .npy voxel mask")
    try:
        size = path.stat().st_size
        with open(path, "rb") as fh:
            if size == 0:
                raise SimulationError(f"{where}: the file is empty (0 bytes), not a .npy voxel mask")
            try:
                version = np.lib.format.read_magic(fh)
            except ValueError:
                raise SimulationError(f"{where}: not a .npy file (it does not start with NumPy's magic string "
                                      f"\\x93NUMPY; a text file?); save the mask with numpy.save") from None
            read = {(1, 0): np.lib.format.read_array_header_1_0}.get(version, np.lib.format.read_array_header_2_0)
            try:
                shape, _fortran, dtype = read(fh)
            except ValueError as e:
                raise SimulationError(f"{where}: damaged .npy header ({e})") from None
            offset = fh.tell()
    except OSError as e:
        from lbgen.system.paths import describe_os_error
        raise SimulationError(f"{where}: cannot read it ({describe_os_error(e, 'the file')})") from None
    if dtype.hasobject:
        raise SimulationError(f"{where}: holds Python objects (a pickled {dtype} array), which lbgen never "
                              f"unpickles; the voxel mask must be a bool or uint8 array")
    return tuple(int(n) for n in shape), dtype, size - offset


_MESHES: dict = {}


def _placement(cfg: RunConfig, name: str, default):
    text = getattr(cfg, name)
    if text is None:
        return default
    parts = [p for p in str(text).replace(" ", "").split(",") if p != ""]
    try:
        values = tuple(float(p) for p in parts)
    except ValueError:
        values = ()
    if len(values) != 3 or not all(math.isfinite(v) for v in values):
        flag = "--" + name.replace("_", "-")
        raise SimulationError(f"{flag} {text}: give three finite numbers X,Y,Z (e.g. {flag} "
                              f"{'0,0,90' if name == 'stl_rotate' else '40,20,20'})")
    return values


def mesh_bodies(cfg: RunConfig):
    """The ``lbgen.geometry.Bodies`` of a --geometry mesh on the run's lattice (voxelized once per
    process and placement), refused in words: a 2D run, a mesh that cannot be a body, one outside
    the box, one that covers no site."""
    path = Path(cfg.geometry)
    if len(cfg.shape) != 3:
        raise SimulationError(f"--geometry {path}: a triangle mesh is a 3D body; this run is 2D ({cfg.velocity_set}): "
                              f"give a 2D voxel mask .npy of shape (LX, LY), or a 3D velocity set")
    rotate, offset = _placement(cfg, "stl_rotate", (0.0, 0.0, 0.0)), _placement(cfg, "stl_offset", (0.0, 0.0, 0.0))
    try:
        stamp = path.stat().st_mtime_ns
    except OSError:
        stamp = None
    key = (str(path.resolve()), stamp, cfg.stl_scale, rotate, offset, tuple(cfg.shape))
    if key not in _MESHES:
        from lbgen.geometry import Bodies, Mesh
        try:
            body = Mesh(path, scale=cfg.stl_scale, offset=offset, rotate=rotate)
            _MESHES.clear()
            _MESHES[key] = Bodies(tuple(cfg.shape), [body], names=[path.stem or "body"])
        except SimulationError as e:
            text = str(e)
            raise SimulationError(text if text.startswith(("mesh ", "--")) else f"--geometry {path}: {text}") from None
    return _MESHES[key]


def run_bodies(cfg: RunConfig, mask: Optional[np.ndarray]):
    """The lattice's ``bodies=`` of a run with --geometry: the mesh's ``Bodies`` (wall distances
    from its surface), or the mask's labels (one body, named after the file; walls midway)."""
    if cfg.setup in FLOWS and mask is not None:          # a flow around a body: its analytic shape
        return FLOWS[cfg.setup].bodies(cfg.cells_per_diameter)
    if not cfg.geometry or mask is None:
        return None
    if is_mesh(cfg.geometry):
        return mesh_bodies(cfg)
    from lbgen.geometry import MaskBody
    return MaskBody(mask, Path(cfg.geometry).stem or "body")


def load_geometry(cfg: RunConfig) -> Optional[np.ndarray]:
    """The run's voxel mask (uint8, the lattice's shape (LX, LY) or (LX, LY, LZ)), or None: read
    from ``--geometry FILE.npy`` and checked by the lattice's rule (bool or uint8 0/1, the lattice's shape), naming the
    file, the shape expected and the one found.  The header is checked first (``_npy_header``:
    dtype, shape against the lattice, size against the memory available): nothing is read
    that the run could not use."""
    if cfg.setup in FLOWS:                   # a flow around a body (lbgen.run.flows): its shape's sites
        return np.ascontiguousarray(FLOWS[cfg.setup].bodies(cfg.cells_per_diameter).labels > 0, dtype=np.uint8)
    if not cfg.geometry:
        return None
    from lbgen.system.limits import available_memory
    path = Path(cfg.geometry)
    if not path.exists():
        raise SimulationError(f"--geometry {path}: no such file")
    if is_mesh(path):
        return np.ascontiguousarray(mesh_bodies(cfg).labels > 0, dtype=np.uint8)
    shape, dtype, stored = _npy_header(path)
    expected = tuple(cfg.shape)
    names = "(" + ", ".join(f"L{a}" for a in "XYZ"[:len(expected)]) + ")"
    if dtype != np.bool_ and dtype != np.uint8:
        raise SimulationError(f"--geometry {path}: a {dtype} array; the voxel mask must be a bool array (True: "
                              f"solid) or a uint8 array of 0 and 1, of shape {names} = {expected}")
    if shape != expected:
        raise SimulationError(f"--geometry {path}: shape {shape}; the voxel mask must have the lattice's shape "
                              f"{names} = {expected}")
    nbytes = math.prod(shape) * dtype.itemsize
    have = available_memory()
    if have is not None and nbytes > have:
        raise SimulationError(f"--geometry {path}: its {nbytes / 2**30:.3g} GiB do not fit in the "
                              f"{have / 2**30:.3g} GiB of memory available here")
    if stored < nbytes:
        raise SimulationError(f"--geometry {path}: truncated: its header promises {nbytes} bytes of data for shape "
                              f"{shape} {dtype}, the file holds {stored}")
    try:
        mask = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as e:
        raise SimulationError(f"--geometry {path}: cannot read a .npy voxel mask ({e})") from None
    try:
        return voxel_mask(mask, cfg.shape)
    except SimulationError as e:
        raise SimulationError(f"--geometry {path}: {e}") from None
