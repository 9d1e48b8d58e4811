"""``Bodies``: shapes (``lbgen.geometry.shapes``, ``lbgen.geometry.mesh``) on a lattice: the label of
every site (0 fluid, k the k-th body), the bodies' names, and the wall distance q of each link
from a fluid site to a solid one, exact for the analytic shapes (ray and sphere or cylinder), by
ray-triangle intersection for meshes.  Also the set-ups' geometries: the DFG cylinder of Schaefer
& Turek (1996) and one body centred in a periodic box (a periodic array)."""
from __future__ import annotations

from typing import Optional, Sequence, Tuple

import numpy as np

from lbgen.model.catalog import AXES
from lbgen.simulation.parameters import SimulationError


class Bodies:
    """The labelled solid sites of ``shapes`` (a shape or a sequence; label k = shapes[k - 1]) on a
    lattice of ``shape`` ((LX, LY) or (LX, LY, LZ)), named by ``names`` (default body1, ...).
    Refused before any work, naming the body: a shape of another D, a body outside the box, a
    body that covers no site, two bodies sharing a site."""

    def __init__(self, shape: Sequence[int], shapes, names: Optional[Sequence[str]] = None):
        self.shape = tuple(int(n) for n in shape)
        self.shapes = tuple(shapes) if isinstance(shapes, (list, tuple)) else (shapes,)
        D = len(self.shape)
        if not self.shapes:
            raise SimulationError("Bodies: no shape given")
        self.names = tuple(f"body{k}" for k in range(1, len(self.shapes) + 1)) if names is None else \
            tuple(str(n) for n in names)
        if len(self.names) != len(self.shapes) or len(set(self.names)) != len(self.names):
            raise SimulationError(f"Bodies: names {self.names!r}: give {len(self.shapes)} distinct names, one per shape")
        labels = np.zeros(self.shape, np.int32)
        box = np.array(self.shape, dtype=np.float64) - 1
        for k, (body, name) in enumerate(zip(self.shapes, self.names), start=1):
            if body.D != D:
                raise SimulationError(f"Bodies: {name} is a {body.D}D shape ({body!r}); this lattice is {D}D "
                                      f"{self.shape}")
            lo, hi = body.bounds()
            if np.any(hi < 0) or np.any(lo > box):
                raise SimulationError(f"Bodies: {name} lies outside the box: it spans "
                                      + ", ".join(f"{a} {max(lo[i], -1e300):g}..{min(hi[i], 1e300):g}"
                                                  for i, a in enumerate(AXES[:D]))
                                      + f"; the lattice's sites are 0..{', 0..'.join(str(n - 1) for n in self.shape)}")
            # only the sites of its bounding box are tested (a body small against a large lattice)
            box_lo = [max(0, int(np.ceil(v))) if np.isfinite(v) else 0 for v in lo]
            box_hi = [min(n - 1, int(np.floor(v))) if np.isfinite(v) else n - 1 for v, n in zip(hi, self.shape)]
            window = tuple(slice(a, b + 1) for a, b in zip(box_lo, box_hi))
            grid = np.indices([max(0, b + 1 - a) for a, b in zip(box_lo, box_hi)]).reshape(D, -1).T
            points = (grid + np.array(box_lo)).astype(np.float64)
            inside = body.inside(points).reshape(labels[window].shape) if len(points) else np.zeros(0, bool)
            if not inside.any():
                raise SimulationError(f"Bodies: {name} ({body!r}) covers no lattice site: it is smaller than the "
                                      f"lattice spacing or falls between sites")
            here = labels[window]
            both = inside & (here > 0)
            if both.any():
                at = tuple(int(i[0]) + a for i, a in zip(np.nonzero(both), box_lo))
                raise SimulationError(f"Bodies: {name} and {self.names[labels[at] - 1]} share the site "
                                      f"{at}; bodies must not overlap")
            here[inside] = k
        self.labels = labels

    def distance(self, sites, dirs) -> np.ndarray:
        """q of the links site -> site + dir (each ending in a solid site): the fraction of the link
        at which it meets its body's surface."""
        sites, dirs = np.asarray(sites), np.asarray(dirs)
        end = sites + dirs
        end = end % np.array(self.shape)
        label = self.labels[tuple(end.T)]
        q = np.full(len(sites), np.nan)
        for k, body in enumerate(self.shapes, start=1):
            on = label == k
            if on.any():
                q[on] = body.distance(sites[on].astype(np.float64), dirs[on].astype(np.float64))
                if getattr(body, "approximate", False):        # a mesh: a grazing ray may miss (half-way then)
                    q[on] = np.where(np.isnan(q[on]), 0.5, q[on])
        return q

    def __repr__(self) -> str:
        return f"Bodies({self.shape}, {', '.join(f'{n}: {b!r}' for n, b in zip(self.names, self.shapes))})"


class MaskBody:
    """A voxel mask as one body named ``name`` (its links' walls midway: q = 1/2)."""

    def __init__(self, mask, name: str = "body"):
        self.labels = (np.asarray(mask) != 0).astype(np.int32)
        self.names = (str(name),)
        self.distance = None


#: the DFG benchmark of Schaefer & Turek (1996): channel 2.2 x 0.41 (m), cylinder of diameter 0.1 at
#: (0.2, 0.2); 3D-1Z: the square duct 2.5 x 0.41 x 0.41 with the cylinder along z
DFG = {"length": 2.2, "height": 0.41, "diameter": 0.1, "centre": (0.2, 0.2), "length3d": 2.5}


def dfg_cylinder(cells_per_diameter: int, dimension: int = 2) -> Tuple[Tuple[int, ...], Bodies]:
    """(lattice shape, Bodies) of the DFG cylinder benchmark (Schaefer & Turek 1996) with
    ``cells_per_diameter`` sites across the cylinder: 2D 2.2 x 0.41 (2D-1, 2D-2); 3D the duct
    2.5 x 0.41 x 0.41 with the cylinder along z (3D-1Z).  The channel walls lie half a spacing
    outside the first and last sites (half-way bounce-back), so the height 0.41 is 4.1 N
    spacings: N a multiple of 10 keeps every length exact (others are rounded to the nearest
    site, which the set-up reports)."""
    N = int(cells_per_diameter)
    if N < 4:
        raise SimulationError(f"cells_per_diameter={cells_per_diameter!r}: the cylinder needs at least 4 sites "
                              f"across (typ. 10-40)")
    h = DFG["diameter"] / N
    length = DFG["length"] if dimension == 2 else DFG["length3d"]
    shape = (int(round(length / h)), int(round(DFG["height"] / h)))
    if dimension == 3:
        shape += (int(round(DFG["height"] / h)),)
    cx, cy = (c / h - 0.5 for c in DFG["centre"])      # the walls at -1/2 in lattice units
    from lbgen.geometry.shapes import Cylinder
    body = Cylinder((cx, cy), N / 2, axis=None if dimension == 2 else "z")
    return shape, Bodies(shape, [body], names=["cylinder"])


def periodic_array(size: int, radius: float, dimension: int) -> Bodies:
    """One disc (2D) or sphere (3D) of ``radius`` centred in a periodic box of ``size`` sites a side:
    a square (cubic) array of cylinders (spheres) of period ``size``."""
    from lbgen.geometry.shapes import Sphere
    c = (size - 1) / 2
    return Bodies((size,) * dimension, [Sphere((c,) * dimension, radius)], names=["sphere" if dimension == 3 else
                                                                                   "cylinder"])
