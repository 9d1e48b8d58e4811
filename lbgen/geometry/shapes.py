"""Analytic bodies: ``Sphere`` (any D: a disc in 2D, a ball in 3D) and ``Cylinder`` (3D, infinite
along an axis), each with the inside test of sites and the exact wall distance along a link.
Every shape answers ``inside(points)`` ((n, D) floats -> (n,) bool) and ``distance(points,
directions)``: the fraction t of the link p -> p + c at which it first meets the surface
(NaN where it does not, in (0, 1])."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional, Tuple

import numpy as np

from lbgen.model.catalog import AXES
from lbgen.simulation.parameters import SimulationError


def _numbers(what: str, values, n: int) -> Tuple[float, ...]:
    try:
        out = tuple(float(v) for v in values)
    except (TypeError, ValueError):
        out = ()
    if len(out) != n or not all(math.isfinite(v) for v in out):
        raise SimulationError(f"{what}={values!r}: give {n} finite numbers (lattice units)")
    return out


def _radius(what: str, radius) -> float:
    try:
        r = float(radius)
    except (TypeError, ValueError):
        r = float("nan")
    if not (math.isfinite(r) and r > 0):
        raise SimulationError(f"{what}: radius={radius!r}; a radius is a finite number > 0 (lattice units)")
    return r


def _ray_ball(points: np.ndarray, dirs: np.ndarray, centre: np.ndarray, radius: float) -> np.ndarray:
    """First t in (0, 1] with |p + t c - centre| = radius (p outside), else NaN."""
    d = points - centre
    a = np.einsum("ij,ij->i", dirs, dirs)
    b = np.einsum("ij,ij->i", d, dirs)
    c = np.einsum("ij,ij->i", d, d) - radius * radius
    disc = b * b - a * c
    with np.errstate(invalid="ignore"):
        t = (-b - np.sqrt(disc)) / a
    ok = (disc >= 0) & (t > 0) & (t <= 1 + 1e-12)
    return np.where(ok, np.minimum(t, 1.0), np.nan)


@dataclass(frozen=True)
class Sphere:
    """A ball of ``radius`` about ``centre`` (D numbers: a disc in 2D), lattice units."""

    centre: Tuple[float, ...]
    radius: float

    def __post_init__(self):
        c = self.centre
        n = len(c) if isinstance(c, (tuple, list, np.ndarray)) and len(c) in (2, 3) else 3
        object.__setattr__(self, "centre", _numbers("Sphere centre", c, n))
        object.__setattr__(self, "radius", _radius("Sphere", self.radius))

    @property
    def D(self) -> int:
        return len(self.centre)

    def inside(self, points) -> np.ndarray:
        d = np.asarray(points, dtype=np.float64) - np.asarray(self.centre)
        return np.einsum("ij,ij->i", d, d) <= self.radius ** 2

    def distance(self, points, dirs) -> np.ndarray:
        return _ray_ball(np.asarray(points, np.float64), np.asarray(dirs, np.float64), np.asarray(self.centre),
                         self.radius)

    def bounds(self) -> Tuple[np.ndarray, np.ndarray]:
        c = np.asarray(self.centre)
        return c - self.radius, c + self.radius


@dataclass(frozen=True)
class Cylinder:
    """A circular cylinder of ``radius`` along ``axis`` ('x', 'y' or 'z') through ``centre`` (3D: the
    two coordinates across the axis, in x, y, z order; infinite along it).  In 2D (axis None) the
    disc of ``Sphere``."""

    centre: Tuple[float, ...]
    radius: float
    axis: Optional[str] = "z"

    def __post_init__(self):
        object.__setattr__(self, "centre", _numbers("Cylinder centre", self.centre, 2))
        object.__setattr__(self, "radius", _radius("Cylinder", self.radius))
        if self.axis is not None and (not isinstance(self.axis, str) or self.axis.lower() not in AXES):
            raise SimulationError(f"Cylinder axis={self.axis!r}: 'x', 'y' or 'z' (3D), or None (a 2D disc)")
        object.__setattr__(self, "axis", None if self.axis is None else self.axis.lower())

    @property
    def D(self) -> int:
        return 2 if self.axis is None else 3

    def _across(self):
        return [k for k in range(self.D) if self.axis is None or AXES[k] != self.axis]

    def inside(self, points) -> np.ndarray:
        p = np.asarray(points, dtype=np.float64)[:, self._across()] - np.asarray(self.centre)
        return np.einsum("ij,ij->i", p, p) <= self.radius ** 2

    def distance(self, points, dirs) -> np.ndarray:
        k = self._across()
        p, c = np.asarray(points, np.float64)[:, k], np.asarray(dirs, np.float64)[:, k]
        out = np.full(len(p), np.nan)
        moving = np.einsum("ij,ij->i", c, c) > 0           # a link along the axis never meets the mantle
        out[moving] = _ray_ball(p[moving], c[moving], np.asarray(self.centre), self.radius)
        return out

    def bounds(self) -> Tuple[np.ndarray, np.ndarray]:
        lo, hi = np.full(self.D, -np.inf), np.full(self.D, np.inf)
        for j, k in enumerate(self._across()):
            lo[k], hi[k] = self.centre[j] - self.radius, self.centre[j] + self.radius
        return lo, hi
