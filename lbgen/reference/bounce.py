"""The 2D oracle of bounce-back boundaries: half-way bounce-back no-slip walls on any face,
moving walls (Ladd) and solid cells, in plain NumPy, typed from the textbook rule (Ladd 1994;
Krüger et al., The Lattice Boltzmann Method, 2017, section 5.3.3) in the model's units, not
from lbgen's templates:

    f_p(x, t+1) = f*_opp(p)(x, t) + 2 w_p rho(x, t) (xi_p . u_w) / c_s^2

for every link whose source x - e_p lies beyond a wall face or in a solid cell; f* are the
post-collision populations (the state), rho(x, t) = sum_q f*_q(x, t), xi_p = r e_p and
c_s^2 = 1 (the model's reference temperature T0 = 1: its equilibrium is a Hermite expansion
about a unit-variance Maxwellian).  u_w is the velocity of the moving face the link crosses
(a link across two faces, at a corner: the x face if it moves, else the y face); a resting
wall or a solid cell has u_w = 0.  Solid cells hold no populations (0).

Populations are (Q, LX, LY) arrays as in :mod:`lbgen.reference.bulk`.
"""
from __future__ import annotations

import numpy as np

from lbgen.reference.bulk import collide, propagate, set_of

__all__ = ["bounce_propagate", "step_bounce"]

#: c_s^2 of the model's units (T0 = 1)
CS2 = 1.0


def bounce_propagate(f, walls=(), lid=None, solid=None, vs=None):
    """Pull streaming with the boundaries: ``walls`` the axes ('x', 'y') whose two faces are
    walls, ``lid`` {'y-high': (ux, uy), ...} the moving faces, ``solid`` an (LX, LY) mask."""
    vs = set_of(vs)
    lid = dict(lid or {})
    Q, LX, LY = f.shape
    out = propagate(f, vs)
    rho = f.sum(axis=0)
    x = np.arange(LX)[:, None]
    y = np.arange(LY)[None, :]
    for p, (ex, ey) in enumerate(vs.e):
        ex, ey = int(ex), int(ey)
        sx, sy = x - ex, y - ey                                  # the link's source, unwrapped
        cross = {"x-low": sx < 0, "x-high": sx >= LX, "y-low": sy < 0, "y-high": sy >= LY}
        hit = np.zeros((LX, LY), bool)
        for face, crossed in cross.items():
            if face[0] in walls:
                hit |= np.broadcast_to(crossed, (LX, LY))
        if solid is not None:
            hit |= np.asarray(solid, bool)[sx % LX, sy % LY]
        uw = np.zeros((2, LX, LY))
        taken = np.zeros((LX, LY), bool)
        for face in ("x-low", "x-high", "y-low", "y-high"):      # the x face first at a corner
            if face in lid and face[0] in walls:
                at = np.broadcast_to(cross[face], (LX, LY)) & ~taken
                for c in range(2):
                    uw[c][at] = lid[face][c]
                taken |= at
        xi = vs.xi[p]
        push = 2.0 * vs.weights[p] * rho * (xi[0] * uw[0] + xi[1] * uw[1]) / CS2
        out[p] = np.where(hit, f[vs.opposite[p]] + push, out[p])
    return out


def step_bounce(f, operator="bgk", walls=(), lid=None, solid=None, **params):
    """One step: streaming with the boundaries, then the collision; solid cells hold 0."""
    vs = params.get("vs")
    g = bounce_propagate(f, walls, lid, solid, vs)
    with np.errstate(invalid="ignore", divide="ignore"):   # solid cells: 0 populations, zeroed below
        out = collide(g, operator, **params)
    if solid is not None:
        out[:, np.asarray(solid, bool)] = 0.0
    return out
