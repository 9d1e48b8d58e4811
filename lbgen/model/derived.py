"""The model's derived assignments, cached: ``collide``, ``equilibrium_assignments``,
``macroscopic_assignments``, ``physical_assignments``, ``wall_assignments`` and the one
``Model`` value.

These are the cached entry points (cache key: ``model_digest()`` -- the model's own source
and sympy's version -- and the arguments; entries checksummed by ``cached_pickle``), so only
the first process pays for sympy.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Optional, Tuple

import sympy

from lbgen.system.cache import cached_pickle, digest, source_digest
from lbgen.model.assignments import AssignmentList
from lbgen.model.catalog import CHANNEL_WALLS
from lbgen.model.operators import Operator, operator
from lbgen.model.velocity_set import VelocitySet, velocity_set

__all__ = ["Model", "build_model", "collide", "equilibrium_assignments", "macroscopic_assignments",
           "model_digest", "physical_assignments", "physical_fields", "wall_assignments"]

#: the sources that derive the model's assignments (every module of lbgen/model)
MODEL_SOURCES = Path(__file__).parent


def model_digest() -> str:
    """SHA-256 of the model's sources and sympy's version: the cache-key part of everything
    derived from the model (these assignments, and the kernels rendered from them)."""
    return digest(source_digest(str(MODEL_SOURCES)), sympy.__version__)


def _cached(what: str, vs_name: str, *args):
    from lbgen.model import collision as c
    from lbgen.model import walls as w

    def build():
        vs = velocity_set(vs_name)
        if what == "collide":
            return c.collision(vs, args[0], specialised=args[1:] == ("special",))
        if what == "wall":
            return w.wall_assignments(vs, *args)
        if what == "equilibrium":
            return c.equilibrium(vs)
        if what == "physical":
            return c.physical(vs)
        return c.macroscopic(vs)

    key = digest(model_digest(), what, vs_name, *args)
    return cached_pickle("model", key, build)


@lru_cache(maxsize=None)
def collide(operator: str, vs_name: str = "d2q37", specialised: bool = False) -> AssignmentList:
    """Collide kernel body (cached on disk); ``specialised``: the body derived with the operator's
    ``specialised`` parameters at their defaults (lbgen.model.collision.collision)."""
    from lbgen.model.operators import operator as record
    record(operator)                      # ParameterError naming the choices
    return _cached("collide", vs_name, operator, *(("special",) if specialised else ()))


@lru_cache(maxsize=None)
def wall_assignments(side: str, row: int, vs_name: str = "d2q37", scheme: str = "lbgen",
                     axis: Optional[str] = None) -> AssignmentList:
    """bc body of one wall row under a wall scheme (cached on disk); see lbgen.model.walls.
    ``axis``: the axis the walls stand across (None: the last, y in 2D, z in 3D; the cache key
    of the default is that of the walls before the axis existed)."""
    from lbgen.model.walls import check_scheme
    return _cached("wall", vs_name, side, row, check_scheme(scheme), *(() if axis is None else (axis,)))


@lru_cache(maxsize=None)
def equilibrium_assignments(vs_name: str = "d2q37") -> AssignmentList:
    return _cached("equilibrium", vs_name)


@lru_cache(maxsize=None)
def macroscopic_assignments(vs_name: str = "d2q37") -> AssignmentList:
    """The stored moments of populations (what the walls use; lbgen.model.collision.macroscopic)."""
    return _cached("macroscopic", vs_name)


@lru_cache(maxsize=None)
def physical_assignments(vs_name: str = "d2q37") -> AssignmentList:
    """The physical (half-step) fields of the stored moments (lbgen.model.collision.physical)."""
    return _cached("physical", vs_name)


def physical_fields(vs_name: str, f, ax: float, ay: float):
    """(rho, ux, uy, T) physical fields of (Q, ...) populations f under the force per unit
    mass per step (ax, ay), through NumPy: ``macroscopic`` then ``physical`` -- in double the
    bits of a strict build of the fields kernel."""
    moments = macroscopic_assignments(vs_name).evaluate(f)
    return physical_assignments(vs_name).evaluate(moments, ax=ax, ay=ay)


@dataclass(frozen=True)
class Model:
    """One model, derived once and handed down: the velocity set, the collision operator
    (its record and its assignments), the equilibrium (of physical fields), macroscopic
    (stored moments) and physical (half-step correction) assignments, and the wall rows
    ((side, row, assignments), nearest the bulk first) when there are walls; ``collide_special``: the
    collision with the operator's ``specialised`` parameters at their defaults (None: it has none)."""

    vs: VelocitySet
    operator: Operator
    collide: AssignmentList
    equilibrium: AssignmentList
    macroscopic: AssignmentList
    physical: AssignmentList
    wall_scheme: str = "lbgen"
    walls: Optional[Tuple[Tuple[str, int, AssignmentList], ...]] = None
    collide_special: Optional[AssignmentList] = None


@lru_cache(maxsize=None)
def build_model(velocity_set_name: str = "d2q37", collision: str = "bgk", walls: bool = False,
                wall_scheme: str = "lbgen", wall_axis: Optional[str] = None) -> Model:
    """The Model of a velocity set, an operator and (optionally) thermal walls (across
    ``wall_axis``; None: the last axis)."""
    from lbgen.model.walls import wall_row_count
    vs = velocity_set(velocity_set_name)
    rows = None
    if walls:      # 2D: across y (bottom, top); 3D: across z or wall_axis (low, high, named bottom and top too)
        rows = tuple((side, row, wall_assignments(side, row, velocity_set_name, wall_scheme, wall_axis))
                     for side in CHANNEL_WALLS for row in range(wall_row_count(vs) - 1, -1, -1))
    record = operator(collision)
    return Model(vs=vs, operator=record, collide=collide(collision, velocity_set_name),
                 collide_special=collide(collision, velocity_set_name, True) if record.specialised else None,
                 equilibrium=equilibrium_assignments(velocity_set_name),
                 macroscopic=macroscopic_assignments(velocity_set_name),
                 physical=physical_assignments(velocity_set_name), wall_scheme=wall_scheme, walls=rows)
