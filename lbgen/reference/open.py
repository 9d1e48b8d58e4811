"""The oracle of open faces and bounce-back walls, any D, in plain NumPy and lattice units,
typed from the papers' rules (not from lbgen's templates or ``lbgen.simulation.open_faces``):

* no-slip wall / moving wall / velocity inlet -- (velocity) bounce-back, Ladd 1994; Krueger et
  al., The Lattice Boltzmann Method (2017), eq. 5.26:
  f_p(x, t+1) = f*_opp(p)(x, t) + 2 w_p rho(x, t) (c_p . u_w) / c_s^2,
  u_w the wall's (the inlet face site's) velocity, 0 for a resting wall or a solid cell;
* pressure outlet -- anti-bounce-back, Krueger et al. eq. 5.53:
  f_p(x, t+1) = -f*_opp(p)(x, t) + 2 w_p rho_w [1 + (c_p . u)^2 / (2 c_s^4) - u^2 / (2 c_s^2)],
  u = sum_q c_q f*_q(x, t) / rho(x, t) the boundary site's velocity;
* outflow -- zero normal gradient: f_p(x_b, t+1) = f_p(x_b - n, t+1) for the unknown p (the
  value the neighbour inward receives; n the outward normal);
* free slip -- specular reflection at the half-way face: the unknown p is the population p'
  (c_p with its normal component reversed) that left the site one tangential hop back
  (x - c_p with the normal component removed).

Sets whose hops are longer than 1 (the thermal sets: a link crosses an open face from up to
|c| layers deep; the rules of the virtual site x - c_p beyond the face that the link comes from):

* velocity inlet -- the equilibrium boundary (Krueger et al. 2017, ch. 5, the equilibrium
  scheme; Mohamad, Lattice Boltzmann Method, 2011): f_p(x, t+1) = f^eq_p(rho(x, t), u_in, T_in),
  rho the arriving site's post-collision density, f^eq the set's equilibrium (``equilibrium``);
* outflow -- zero gradient: the virtual site holds the face layer's post-collision
  populations (the source coordinate along the face's axis clamped into the lattice);
* free slip -- the virtual site is the mirror image in the half-way face (coordinate
  s -> -1 - s, 2 L - 1 - s) with the population's normal component reversed;
* a wall or lid bounces back as above; pressure outlets are not defined there.

For hops of 1 the outflow and slip rules above are these (the face layer is the site's own).

A link crossing several faces (edges, corners) takes, in this order: a wall, lid or inlet face
(bounce-back with the first moving face in axis order x, y, z; with longer hops a wall or
lid only, then the first inlet in axis order), else an outlet (the first in
axis order), else the outflow / slip rule on every face it crosses at once.  A link that
crosses no face but starts in a solid cell bounces back.  Populations are (Q, *shape) arrays
of post-collision values; solid cells hold 0.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from itertools import product
from typing import Callable, Dict, Optional, Tuple

import numpy as np

__all__ = ["OpenBoundaries", "run_open"]

_AXES = "xyz"
_SIDES = ("low", "high")


@dataclass
class OpenBoundaries:
    """Boundaries of a lattice of ``shape`` for the hops ``c`` (Q, D), weights ``w`` and c_s^2
    ``cs2`` (lattice units): ``kinds`` {'x-low': 'wall' | 'inlet' | 'outlet' | 'outflow' |
    'slip'} (a face not named is periodic), ``velocity`` {face: (D,) lid or inlet velocity, or an
    array of the face's sites x D}, ``rho_out`` {face: density}, ``solid`` a mask or None;
    with hops longer than 1, ``temperature`` {inlet face: T_in} (default 1) and ``equilibrium``
    (rho, u (D,), T) -> (Q,) the set's equilibrium (lattice units)."""

    shape: Tuple[int, ...]
    c: np.ndarray
    w: np.ndarray
    cs2: float
    kinds: Dict[str, str] = field(default_factory=dict)
    velocity: Dict[str, np.ndarray] = field(default_factory=dict)
    rho_out: Dict[str, float] = field(default_factory=dict)
    solid: Optional[np.ndarray] = None
    temperature: Dict[str, float] = field(default_factory=dict)
    equilibrium: Optional[Callable] = None

    def __post_init__(self):
        self.c = np.asarray(self.c, dtype=int)
        self.w = np.asarray(self.w, dtype=float)
        index = {tuple(v): i for i, v in enumerate(self.c.tolist())}
        self.index = index
        self.opp = np.array([index[tuple(-v for v in c)] for c in self.c.tolist()])
        self.long = int(np.abs(self.c).max()) > 1

    def _u_face(self, face: str, site) -> np.ndarray:
        D = len(self.shape)
        u = np.asarray(self.velocity.get(face, np.zeros(D)), dtype=float)
        if u.ndim == 1:
            return u
        a = _AXES.index(face[0])
        return u[tuple(i for b, i in enumerate(site) if b != a)]

    def apply(self, f: np.ndarray) -> np.ndarray:
        """Streaming (pull) of the post-collision ``f`` with the boundaries."""
        D, shape = len(self.shape), self.shape
        out = np.empty_like(f)
        for p in range(len(self.w)):
            out[p] = np.roll(f[p], shift=tuple(int(k) for k in self.c[p]), axis=tuple(range(D)))
        solid = None if self.solid is None else np.asarray(self.solid, bool)
        rho = f.sum(axis=0)
        for site in product(*[range(n) for n in shape]):
            for p, cp in enumerate(self.c.tolist()):
                if not any(cp):
                    continue
                crossed = []                       # (axis, face name) of the non-periodic faces crossed
                for a in range(D):
                    s = site[a] - cp[a]
                    name = f"{_AXES[a]}-low" if s < 0 else f"{_AXES[a]}-high" if s >= shape[a] else None
                    if name is not None and name in self.kinds:
                        crossed.append((a, name))
                kinds = [self.kinds[n] for _, n in crossed]
                if self.long and "inlet" in kinds and "wall" not in kinds:
                    face = next(n for _, n in crossed if self.kinds[n] == "inlet")
                    out[(p,) + site] = self.equilibrium(rho[site], self._u_face(face, site),
                                                        self.temperature.get(face, 1.0))[p]
                elif any(k in (("wall",) if self.long else ("wall", "inlet")) for k in kinds):
                    moving = [n for _, n in crossed if self.kinds[n] in ("wall",) + ("inlet",) * (not self.long)
                              and n in self.velocity]
                    uw = self._u_face(moving[0], site) if moving else np.zeros(D)
                    out[(p,) + site] = f[(self.opp[p],) + site] + 2 * self.w[p] * rho[site] * (
                        np.dot(cp, uw)) / self.cs2
                elif not crossed:
                    if solid is not None:
                        src = tuple((site[a] - cp[a]) % shape[a] for a in range(D))
                        if solid[src]:
                            out[(p,) + site] = f[(self.opp[p],) + site]
                elif "outlet" in kinds:
                    face = next(n for _, n in crossed if self.kinds[n] == "outlet")
                    u = np.array([np.dot(self.c[:, a], f[(slice(None),) + site]) for a in range(D)]) / rho[site]
                    cu = np.dot(cp, u)
                    out[(p,) + site] = -f[(self.opp[p],) + site] + 2 * self.w[p] * self.rho_out[face] * (
                        1 + cu * cu / (2 * self.cs2 ** 2) - np.dot(u, u) / (2 * self.cs2))
                else:
                    src, q = list(site), list(cp)
                    for a in range(D):
                        if a not in [b for b, _ in crossed]:
                            src[a] = (site[a] - cp[a]) % shape[a]
                    for a, n in crossed:
                        s = site[a] - cp[a]                # the virtual site beyond the face
                        if self.kinds[n] == "slip":
                            q[a] = -cp[a]
                            src[a] = -1 - s if s < 0 else 2 * shape[a] - 1 - s
                        else:
                            src[a] = 0 if s < 0 else shape[a] - 1
                    out[(p,) + site] = f[(self.index[tuple(q)],) + tuple(src)]
        if solid is not None:
            out[:, solid] = 0.0
        return out


def run_open(f0: np.ndarray, steps: int, boundaries: OpenBoundaries,
             collide: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """``steps`` steps (streaming with the boundaries, then ``collide``) from the post-collision
    state f0; solid cells hold 0."""
    f = f0.copy()
    for _ in range(steps):
        g = boundaries.apply(f)
        if boundaries.solid is not None:
            s = np.asarray(boundaries.solid, bool)
            with np.errstate(invalid="ignore", divide="ignore"):
                g = np.where(s, 1.0, g)
                f = collide(g)
            f[:, s] = 0.0
        else:
            f = collide(g)
    return f
