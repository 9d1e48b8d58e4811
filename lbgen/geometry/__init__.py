"""Bodies for a lattice of any D (``Simulation(bodies=...)``): analytic shapes (``Sphere``, a disc in
2D; ``Cylinder``, 3D, along an axis), triangle meshes from STL files (``Mesh``, through trimesh), and
``Bodies``, the labelled voxel sets they cover with the exact wall distance q of every cut link.
Coordinates are lattice units with site (i, j[, k]) at the point (i, j[, k]); a site is solid when
its point lies inside (or on) a body."""
from __future__ import annotations

from lbgen.geometry.bodies import Bodies, MaskBody, dfg_cylinder, periodic_array
from lbgen.geometry.shapes import Cylinder, Sphere

__all__ = ["Bodies", "Cylinder", "MaskBody", "Mesh", "Sphere", "dfg_cylinder", "periodic_array"]


def __getattr__(name):
    if name == "Mesh":                    # trimesh loads only for meshes
        from lbgen.geometry.mesh import Mesh
        return Mesh
    raise AttributeError(name)
