"""The physics of a run as values: the collision operator with its parameters and gravity
(``Parameters``), and the thermal walls (``Walls``); what a run returns (``RunStats``).  Checked on construction against the
operator records of ``lbgen.model.operators``."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Mapping, Optional, Tuple

import numpy as np

from lbgen.model.operators import DEFAULT_OPERATOR, ParameterError, force_arguments, operator
from lbgen.model.catalog import AXES, DEFAULT_SCHEME as DEFAULT_WALL_SCHEME, SCHEMES as WALL_SCHEMES


class SimulationError(RuntimeError):
    """A run went wrong in a way the user must see (divergence, bad parameters)."""


@dataclass
class RunStats:
    """What ``run`` returns (2D and 3D simulations): steps, seconds, sites, and the MLUPS."""

    steps: int
    seconds: float
    sites: int

    @property
    def mlups(self) -> float:
        return self.steps * self.sites / self.seconds / 1e6 if self.seconds > 0 else float("nan")


class Parameters:
    """The physics of a run: collision operator, its parameters (checked against the
    operator's record, ``lbgen.model.operators``) and gravity (``dimension`` components: 2,
    or 3 for a 3D ``Simulation``; None: zero).  Fixed once built: ``Simulation.set_parameters``
    makes a new one and passes it to the kernels.

    >>> Parameters("bgk", {"tau": 0.7}).tau
    0.7
    """

    __slots__ = ("collision", "values", "gravity", "dimension")

    def __init__(self, collision: str = DEFAULT_OPERATOR, values: Optional[Mapping[str, float]] = None,
                 gravity: Optional[Tuple[float, ...]] = (0.0, 0.0), dimension: int = 2):
        try:
            op = operator(collision)
            checked = op.check(dict(values or {}))
        except ParameterError as e:
            raise SimulationError(str(e)) from None
        if gravity is None:
            gravity = (0.0,) * dimension
        try:
            g = tuple(float(x) for x in gravity)
        except (TypeError, ValueError):
            g = ()
        if len(g) != dimension or not all(np.isfinite(g)):
            names = ", ".join(f"g{axis}" for axis in "xyz"[:dimension])
            raise SimulationError(f"gravity={gravity!r} must be {({2: 'two', 3: 'three'}).get(dimension, dimension)} "
                                  f"finite numbers ({names})")
        object.__setattr__(self, "collision", op.name)
        object.__setattr__(self, "values", checked)
        object.__setattr__(self, "gravity", g)
        object.__setattr__(self, "dimension", int(dimension))

    def __getattr__(self, name):
        values = object.__getattribute__(self, "values")
        if name in values:
            return values[name]
        raise AttributeError(f"{name!r}: the {self.collision} operator has the parameters "
                             f"{', '.join(values) or 'none'}")

    def __setattr__(self, name, value):
        raise AttributeError(f"the parameters of a simulation are fixed; use sim.set_parameters({name}=...) "
                             f"to change {name} for the following steps")

    def __eq__(self, other):
        return isinstance(other, Parameters) and (self.collision, self.values, self.gravity, self.dimension) == (
            other.collision, other.values, other.gravity, other.dimension)

    def __repr__(self):
        return f"Parameters({self.collision!r}, {self.values!r}, gravity={self.gravity!r})"

    def replace(self, **changes) -> "Parameters":
        values = dict(self.values)
        gravity = changes.pop("gravity", self.gravity)
        values.update(changes)
        return Parameters(self.collision, values, gravity, self.dimension)

    def force(self, r: float) -> Tuple[float, ...]:
        return tuple(g / r for g in self.gravity)

    def kernel_parameters(self, r: float) -> Dict[str, float]:
        """The collide/fused kernel arguments, in the operator record's order."""
        return {**self.values, **dict(zip(force_arguments(self.dimension), self.force(r)))}


#: the spellings of a boolean wall flag accepted besides True and False (case and spaces ignored)
TRUE_WORDS = ("true", "yes", "on", "1")
FALSE_WORDS = ("false", "no", "off", "0")


def _flag(name: str, value) -> bool:
    """A real boolean (``True``/``False``, NumPy's too) or one of TRUE_WORDS/FALSE_WORDS; never
    truthiness: ``'no'``, ``'False'`` or ``2`` must not make a wall adiabatic."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in TRUE_WORDS + FALSE_WORDS:
        return value.strip().lower() in TRUE_WORDS
    raise SimulationError(f"Walls: {name}={value!r} must be True or False (or one of the strings "
                          f"{'/'.join(TRUE_WORDS + FALSE_WORDS)})")


def _temperature(name: str, value) -> float:
    """A positive finite real number (int, float or NumPy scalar; not a bool or a string)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise SimulationError(f"Walls: {name}={value!r} must be a number (a positive finite temperature, "
                              f"in the model's units: T = 1 is the reference temperature)")
    v = float(value)
    if not (np.isfinite(v) and v > 0):
        raise SimulationError(f"Walls: {name}={value!r} must be a positive finite temperature (T > 0, "
                              f"T = 1 is the reference temperature)")
    return v


def _wall_tau(value) -> float:
    """The wall rows' relaxation time: the kernels' one rule (lbgen.backends.base.check_tau_wall)."""
    from lbgen.backends.base import check_tau_wall
    try:
        return check_tau_wall(value)
    except ValueError as e:
        raise SimulationError(f"Walls: {e}") from None


@dataclass(frozen=True)
class Walls:
    """Thermal no-slip walls below y = 0 and above y = LY-1 (X stays periodic).

    A fixed wall imposes its temperature at the last wall row (extrapolated into the rows
    nearer the wall); an adiabatic wall copies the first bulk row's temperature (see
    lbgen.model.walls).  The bulk sees the walls elsewhere: the effective no-slip and
    isothermal planes, measured per operator, are in lbgen.model.wall_planes (docs/physics.md).  Isothermal velocity sets (D2Q9) take only the default temperatures.
    ``scheme``: "lbgen" (default) or "reference", the production code's bc (every row keeps
    its own mass, bare bracket, first-bulk-row temperature T + |a|^2/8).
    ``tau_wall``: the relaxation time of the rows next to each wall (BGK's tau there; all
    three regularized relaxation times there), finite and > 1/2; 1 (the default) relaxes
    them to the equilibrium of the moments the bc imposed.
    ``axis``: the axis the walls stand across, None (the default) the last one (y in 2D, z in
    3D); any other axis of the lattice too, 'x' in 2D (lbgen's scheme), 'x' or 'y' in 3D
    (bottom: the low face, top: the high face).

    Checked on construction: temperatures positive and finite, adiabatic flags real booleans
    (or the words true/false, yes/no, on/off, 1/0), a known scheme; anything else is refused
    naming the field and the value.
    """

    T_bottom: float = 1.0
    T_top: float = 1.0
    adiabatic_bottom: bool = False
    adiabatic_top: bool = False
    scheme: str = DEFAULT_WALL_SCHEME
    tau_wall: float = 1.0
    axis: Optional[str] = None

    def __post_init__(self):
        """Every field checked (and normalised: real floats and bools) before any kernel sees it;
        a bad value is refused naming the field, never read by its truthiness."""
        scheme = self.scheme
        if not isinstance(scheme, str) or scheme not in WALL_SCHEMES:
            raise SimulationError(f"Walls: wall scheme {scheme!r} is not one of {', '.join(WALL_SCHEMES)} "
                                  f"(the scheme= field)")
        for name in ("T_bottom", "T_top"):
            object.__setattr__(self, name, _temperature(name, getattr(self, name)))
        for name in ("adiabatic_bottom", "adiabatic_top"):
            object.__setattr__(self, name, _flag(name, getattr(self, name)))
        object.__setattr__(self, "tau_wall", _wall_tau(self.tau_wall))
        if self.axis is not None and (not isinstance(self.axis, str) or self.axis not in AXES):
            raise SimulationError(f"Walls: axis={self.axis!r} is not one of {', '.join(AXES)} (the axis the walls "
                                  f"stand across; None: the last axis, y in 2D, z in 3D)")

    def axis_of(self, D: int) -> str:
        """The axis the walls stand across on a D-dimensional lattice (refused where D has no such walls)."""
        axis = self.axis or AXES[D - 1]
        if AXES.index(axis) >= D:
            raise SimulationError(f"Walls(axis={self.axis!r}): the {D}D thermal walls stand across "
                                  f"{' or '.join(AXES[:D])}")
        if D == 2 and self.scheme == "reference" and axis != "y":
            raise SimulationError(f"Walls(axis={axis!r}, scheme='reference'): the production code's scheme is the "
                                  f"2D walls across y only (its rows whose unknowns share one e_y); walls across "
                                  f"{axis} take lbgen's scheme (scheme='lbgen')")
        return axis

    def check(self, vs) -> None:
        """Isothermal sets (D2Q9) have no wall temperature: only the defaults are allowed."""
        if vs.isothermal and self != Walls(scheme=self.scheme, tau_wall=self.tau_wall, axis=self.axis):
            raise SimulationError(f"{vs.name} is isothermal: its walls impose no temperature, so T_bottom, "
                                  f"T_top (got {self.T_bottom}, {self.T_top}) must stay 1 and no wall can be "
                                  f"adiabatic; use d2q37 for thermal walls")


def check_thermal_walls(walls, set_name, D, time_block) -> str:
    """What the thermal walls of a D-dimensional lattice cannot run with, refused in words before any
    work; returns the axis they stand across (``Walls.axis_of``)."""
    from lbgen.codegen.spec import time_block_walls_refusal
    from lbgen.model.catalog import set_entry
    entry = set_entry(set_name)
    if entry.isothermal and D == 3:
        raise SimulationError(f"walls={walls!r}: lbgen.Walls are thermal walls; {entry.label} is an isothermal 3D set: "
                              f"give its bounce-back walls as a string or a sequence of 'x', 'y', 'z' (e.g. "
                              f"walls='z') or faces ('z-low'), or take d3q39 / d3q103 for thermal walls")
    axis = walls.axis_of(D)
    refusal = time_block_walls_refusal(D, axis) if time_block not in (None, 1) else None
    if refusal:                         # across the last axis they are (fused_tb: the bc of each blocked line)
        raise SimulationError(f"time_block={time_block!r}: {refusal}")
    return axis
