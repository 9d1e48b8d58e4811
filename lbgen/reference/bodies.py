"""The oracle of bodies (any D), in plain NumPy, typed from the papers, not from lbgen's link
lists or templates: the linear interpolated bounce-back of Bouzidi, Firdaouss & Lallemand, Phys.
Fluids 13, 3452 (2001), and the momentum exchange of Ladd, J. Fluid Mech. 271, 285
(1994) as Mei et al., Phys. Rev. E 65, 041203 (2002) write it for curved walls.

For a fluid node x whose neighbour x + e_i is solid, with the wall at the fraction q of the
link, the population arriving at x from the wall, f_ibar(x, t+1) (ibar: opposite(i)), is

    q < 1/2:  2q f*_i(x) + (1 - 2q) f*_i(x - e_i)       (x - e_i a fluid node; else f*_i(x))
    q >= 1/2: f*_i(x) / (2q) + (2q - 1)/(2q) f*_ibar(x)

(half-way bounce-back: f*_i(x) for every q); their quadratic interpolation (``scheme='quadratic'``,
the same paper; Krueger et al., The Lattice Boltzmann Method, Springer 2017, section 11.3) is

    q < 1/2:  q(1 + 2q) f*_i(x) + (1 - 4q^2) f*_i(x - e_i) - q(1 - 2q) f*_i(x - 2e_i)
    q >= 1/2: f*_i(x) / (q(2q + 1)) + (2q - 1)/q f*_ibar(x) - (2q - 1)/(2q + 1) f*_ibar(x - e_i)

(the linear value where x - e_i, or for q < 1/2 x - 2e_i, is not a fluid node), f* the
post-collision populations; and the force
on the body during that streaming is  F = sum over links of e_i (f*_i(x) + f_ibar(x, t+1)).
Axes named in ``walls`` end at walls (a link beyond them is not a body link); the others wrap.
"""
from __future__ import annotations

import numpy as np

__all__ = ["body_boundary"]


def body_boundary(post, streamed, solid, e, opposite, q_of=None, scheme="bouzidi", walls=(), labels=None):
    """(streamed populations with the body links' arrivals replaced, {label: force (lattice units)}).
    ``post``: the populations before streaming (Q, *shape); ``streamed``: after the periodic /
    wall streaming (any value at the replaced entries); ``solid``: bool mask; ``q_of(x, e)``:
    the wall fraction of links from the nodes x ((n, D)) along e ((n, D)) (None: 1/2);
    ``labels``: the body of each solid node (None: 1)."""
    post = np.asarray(post, dtype=np.float64)
    out = np.array(streamed, dtype=np.float64, copy=True)
    shape = solid.shape
    D = len(shape)
    labels = np.where(solid, 1, 0) if labels is None else np.asarray(labels)
    forces = {}
    grid = np.indices(shape)
    for i, ei in enumerate(np.asarray(e, dtype=int)):
        if not ei.any():
            continue
        ib = opposite[i]
        nb = [grid[k] + ei[k] for k in range(D)]
        ok = np.ones(shape, bool)
        for k in range(D):
            if "xyz"[k] in walls:
                ok &= (nb[k] >= 0) & (nb[k] < shape[k])
        nbw = tuple(np.clip(nb[k], 0, shape[k] - 1) if "xyz"[k] in walls else nb[k] % shape[k] for k in range(D))
        link = ok & ~solid & solid[nbw]
        xs = np.argwhere(link)
        if not len(xs):
            continue
        dirs = np.broadcast_to(ei, xs.shape)
        q = np.full(len(xs), 0.5) if q_of is None else np.asarray(q_of(xs, dirs), dtype=np.float64)
        fi = post[i][tuple(xs.T)]
        fib = post[ib][tuple(xs.T)]
        def fluid_at(steps):
            """(the nodes x - steps e_i clipped into the box, whether each is a fluid node inside it)"""
            up = xs - steps * ei
            ok = np.ones(len(xs), bool)
            for k in range(D):
                if "xyz"[k] in walls:
                    ok &= (up[:, k] >= 0) & (up[:, k] < shape[k])
                else:
                    up[:, k] %= shape[k]
            upc = np.clip(up, 0, np.array(shape) - 1)
            return upc, ok & ~solid[tuple(upc.T)]
        upc, up_ok = fluid_at(1)
        upc2, up2_ok = fluid_at(2)
        up2_ok &= up_ok
        fup = post[i][tuple(upc.T)]
        if scheme == "halfway":
            arrive = fi
        else:
            arrive = np.where(q < 0.5, np.where(up_ok, 2 * q * fi + (1 - 2 * q) * fup, fi),
                              fi / (2 * q) + (2 * q - 1) / (2 * q) * fib)
        if scheme == "quadratic":
            fup2 = post[i][tuple(upc2.T)]
            fibup = post[ib][tuple(upc.T)]
            near = q * (1 + 2 * q) * fi + (1 - 4 * q * q) * fup - q * (1 - 2 * q) * fup2
            far = fi / (q * (2 * q + 1)) + (2 * q - 1) / q * fib - (2 * q - 1) / (2 * q + 1) * fibup
            arrive = np.where(q < 0.5, np.where(up2_ok, near, arrive), np.where(up_ok, far, arrive))
        out[ib][tuple(xs.T)] = arrive
        body = labels[tuple(np.array(nbw)[:, link].reshape(D, -1))]
        for k in np.unique(body):
            sel = body == k
            forces[int(k)] = forces.get(int(k), np.zeros(D)) + ei * np.sum(fi[sel] + arrive[sel])
    return out, forces
