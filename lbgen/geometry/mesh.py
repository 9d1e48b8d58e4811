"""Bodies from triangle meshes (STL and the other formats trimesh reads), 3D: ``Mesh``.  The mesh is
read through trimesh, refused in words when it cannot be a body (no file, unreadable, no
triangles, not watertight, no volume), placed in the lattice by ``scale``, ``rotate`` and
``offset``, and answers the inside test of sites (trimesh's ray-parity test, on the sites within
its bounding box only) and the wall distance of links by ray-triangle intersection."""
from __future__ import annotations

import math
from pathlib import Path
from typing import Tuple

import numpy as np

from lbgen.simulation.parameters import SimulationError


#: the file endings read as triangle meshes (trimesh); ``lbgen run --geometry`` reads anything else
#: as a .npy voxel mask
MESH_SUFFIXES = (".stl", ".obj", ".ply", ".off")


def is_mesh(path) -> bool:
    """Whether ``path`` names a triangle mesh (by its ending, MESH_SUFFIXES)."""
    return Path(str(path)).suffix.lower() in MESH_SUFFIXES


def rotation(degrees) -> np.ndarray:
    """The 3 x 3 rotation by angles (ax, ay, az) in degrees about x, then y, then z."""
    ax, ay, az = (math.radians(float(a)) for a in degrees)
    cx, sx, cy, sy, cz, sz = math.cos(ax), math.sin(ax), math.cos(ay), math.sin(ay), math.cos(az), math.sin(az)
    rx = np.array([[1, 0, 0], [0, cx, -sx], [0, sx, cx]])
    ry = np.array([[cy, 0, sy], [0, 1, 0], [-sy, 0, cy]])
    rz = np.array([[cz, -sz, 0], [sz, cz, 0], [0, 0, 1]])
    return rz @ ry @ rx


class Mesh:
    """A closed triangle mesh read from ``path``, placed in lattice units: every vertex v becomes
    R(rotate) (scale v) + offset (rotation angles in degrees about x, y, z in that order, about
    the file's origin).  Refused before any work, naming the file: missing, unreadable, no
    triangles, not watertight (open edges), no enclosed volume; a scale that is not a finite
    number > 0."""

    #: ray casts can graze an edge and miss: such links fall back to q = 1/2 (lbgen.geometry.Bodies)
    approximate = True
    D = 3

    def __init__(self, path, scale: float = 1.0, offset=(0.0, 0.0, 0.0), rotate=(0.0, 0.0, 0.0)):
        self.path = Path(path)
        where = f"mesh {self.path}"
        if not self.path.is_file():
            raise SimulationError(f"{where}: no such file" + (" (a folder)" if self.path.is_dir() else ""))
        try:
            import trimesh
        except ImportError:
            raise SimulationError(f"{where}: reading meshes needs trimesh: pip install 'lbgen[stl]'") from None
        try:
            scale = float(scale)
        except (TypeError, ValueError):
            scale = float("nan")
        if not (math.isfinite(scale) and scale > 0):
            raise SimulationError(f"{where}: scale={scale!r}; a scale is a finite number > 0")
        offset = _three(where, "offset", offset)
        rotate = _three(where, "rotate", rotate)
        if self.path.stat().st_size == 0:
            raise SimulationError(f"{where}: the file is empty (0 bytes), not a mesh")
        try:
            mesh = trimesh.load(str(self.path), force="mesh")
        except Exception as e:       # trimesh raises many kinds on a bad file
            raise SimulationError(f"{where}: cannot read it as a mesh ({type(e).__name__}: {e})") from None
        if not isinstance(mesh, trimesh.Trimesh) or len(mesh.faces) == 0:
            raise SimulationError(f"{where}: holds no triangles (an empty mesh); a body needs a closed surface")
        if not mesh.is_watertight:
            open_edges = int(len(trimesh.grouping.group_rows(mesh.edges_sorted, require_count=1)))
            raise SimulationError(f"{where}: the mesh is not watertight ({open_edges} open edges); a body needs a "
                                  f"closed surface (repair it, e.g. trimesh.repair.fill_holes)")
        transform = np.eye(4)
        transform[:3, :3] = rotation(rotate) * scale
        transform[:3, 3] = offset
        mesh = mesh.copy()
        mesh.apply_transform(transform)
        if not mesh.volume or abs(mesh.volume) < 1e-12:
            raise SimulationError(f"{where}: the mesh encloses no volume; a body needs a closed surface around a volume")
        if mesh.volume < 0:
            mesh.invert()                                       # inward normals: flipped
        self.mesh = mesh
        self.scale, self.offset, self.rotate = scale, offset, rotate

    def __repr__(self) -> str:
        return f"Mesh({str(self.path)!r}, scale={self.scale:g}, offset={self.offset}, rotate={self.rotate})"

    def bounds(self) -> Tuple[np.ndarray, np.ndarray]:
        lo, hi = self.mesh.bounds
        return np.asarray(lo, dtype=np.float64), np.asarray(hi, dtype=np.float64)

    def inside(self, points) -> np.ndarray:
        p = np.asarray(points, dtype=np.float64)
        lo, hi = self.bounds()
        near = np.all((p >= lo) & (p <= hi), axis=1)
        out = np.zeros(len(p), bool)
        if near.any():
            out[near] = self.mesh.contains(p[near])
        return out

    def distance(self, points, dirs) -> np.ndarray:
        """The first crossing t in (0, 1] of p + t c with the surface (NaN where none)."""
        p, c = np.asarray(points, dtype=np.float64), np.asarray(dirs, dtype=np.float64)
        q = np.full(len(p), np.nan)
        if not len(p):
            return q
        locations, ray, _ = self.mesh.ray.intersects_location(p, c, multiple_hits=True)
        if len(ray):
            t = np.einsum("ij,ij->i", locations - p[ray], c[ray]) / np.einsum("ij,ij->i", c[ray], c[ray])
            ok = (t > 0) & (t <= 1 + 1e-9)
            best = np.full(len(p), np.inf)
            np.minimum.at(best, ray[ok], t[ok])
            hit = np.isfinite(best)
            q[hit] = np.minimum(best[hit], 1.0)
        return q


def _three(where: str, name: str, values) -> Tuple[float, float, float]:
    try:
        out = tuple(float(v) for v in values)
    except (TypeError, ValueError):
        out = ()
    if len(out) != 3 or not all(math.isfinite(v) for v in out):
        raise SimulationError(f"{where}: {name}={values!r}; give three finite numbers (x, y, z)")
    return out
