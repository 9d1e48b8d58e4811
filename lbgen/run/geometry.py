"""The voxel mask of a run (``--geometry FILE.npy``; (LX, LY) in 2D, (LX, LY, LZ) in 3D): read and checked (dtype, shape, size)
from its header before any file is written; nothing is unpickled."""
from __future__ import annotations

import math
from pathlib import Path
from typing import Optional

import numpy as np

from lbgen.run.config import RunConfig
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


def load_geometry(cfg: RunConfig) -> Optional[np.ndarray]:
    """The run's voxel mask (uint8, the lattice's shape (LX, LY) or (LX, LY, LZ)), or None: read
    from ``--geometry FILE.npy`` and checked by the lattice's rule (bool or uint8 0/1, the lattice's shape), naming the
    file, the shape expected and the one found.  The header is checked first (``_npy_header``:
    dtype, shape against the lattice, size against the memory available): nothing is read
    that the run could not use."""
    if not cfg.geometry:
        return None
    from lbgen.system.limits import available_memory
    path = Path(cfg.geometry)
    if not path.exists():
        raise SimulationError(f"--geometry {path}: no such file")
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
