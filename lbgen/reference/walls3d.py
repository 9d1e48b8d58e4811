"""The NumPy oracle's thermal walls in 3D (D3Q39, D3Q103): a wall pair across any axis,
typed from the scheme's description (docs/physics.md, "Thermal walls in 3D") in the 3D
oracle's own lattice units (:mod:`lbgen.reference.bulk3d`: hops c, c_s^2), independent of
the sympy derivation in :mod:`lbgen.model.walls` it checks.

After the stream, the planes j = 0 .. H-1 next to a wall (H: the largest hop) miss the
populations that would have come from outside, those with s c_a >= j + 1 (s = +1 at the low
face, -1 at the high face, a the wall's axis).  Each such plane gets

    f_i = N w_i (1 + c_i . p + |c_i|^2 E / 2) / sum_U w_i (1 + c_i . p + |c_i|^2 E / 2)

with (p, E) such that the site carries momentum -rho a / 2 (at rest for the physical
velocity u + a/2) and energy rho (D c_s^2 T_j / 2 + |a|^2 / 8) (temperature T_j; theta,
``bulk3d.temperature``).  Conditions whose moment depends on the others on the unknown set
are left to the mass.  A plane j > 0 with exactly as many unknowns as conditions meets them
directly (no N); the others take the mass that left them towards the wall in the same
stream, N_j = L_j, and plane 0 the column's rest, so no mass crosses a wall.  T_j: the fixed
wall temperature at plane H-1, extrapolated linearly through the first bulk plane H
(T_j = T_w + (H-1-j)(T_w - T_H)); adiabatic walls copy T_H into every wall plane.
The wall planes relax with tau_wall (default 1), the bulk with tau.
"""
from __future__ import annotations

import numpy as np

from lbgen.reference import bulk3d

__all__ = ["apply_walls", "step_walls", "wall_mask"]


def _conditions(lat):
    """Moment functions besides mass, per population: c_x, c_y, c_z, |c|^2/2 (thermal)."""
    c = lat.c.astype(float)
    funcs = [c[:, 0], c[:, 1], c[:, 2]]
    if lat.thermal:
        funcs.append(0.5 * (c ** 2).sum(1))
    return np.array(funcs)


def _targets_coefficient(lat, Tw, a):
    """k_m with target_m = k_m rho: momentum -a/2 per axis, energy D cs2 Tw/2 + |a|^2/8."""
    k = [-0.5 * a[0], -0.5 * a[1], -0.5 * a[2]]
    if lat.thermal:
        k.append(1.5 * lat.cs2 * Tw + 0.125 * float(np.dot(a, a)))
    return np.array(k)


def _rebuild(f_site, known, unknown, N, Tw, a, lat):
    """The unknown populations of one site (1D arrays), N None: solved directly."""
    phi = _conditions(lat)
    k = _targets_coefficient(lat, Tw, a)
    rhoK = f_site[known].sum()
    known_m = phi[:, known] @ f_site[known]
    if N is None:
        # phi_U g - k (rhoK + sum g) = -known_m
        A = phi[:, unknown] - np.outer(k, np.ones(len(unknown)))
        return np.linalg.solve(A, k * rhoK - known_m)
    targets = k * (rhoK + N) - known_m
    keep = []
    for m in range(phi.shape[0]):
        trial = np.vstack([np.ones(len(unknown))] + [phi[j, unknown] for j in keep + [m]])
        if np.linalg.matrix_rank(trial) == trial.shape[0]:
            keep.append(m)
    w = lat.w[unknown]
    if not keep:
        return N * w / w.sum()
    basis = w[:, None] * np.column_stack([np.ones(len(unknown))] + [phi[m, unknown] for m in keep])
    M = np.outer(targets[keep], basis.sum(0)) - N * phi[keep][:, unknown] @ basis
    z = np.linalg.solve(M[:, 1:], -M[:, 0])
    b = basis @ np.concatenate([[1.0], z])
    return N * b / b.sum()


def _plane(arr, axis, index):
    """Index tuple of one plane normal to `axis` of a (Q, LX, LY, LZ) array."""
    sl = [slice(None)] * 4
    sl[1 + axis] = index
    return tuple(sl)


def apply_walls(g, f_before, axis=2, T_low=1.0, T_high=1.0, adiabatic=(False, False), force=(0.0, 0.0, 0.0),
                lat="d3q39", sides=(True, True)):
    """The bc after the stream on the wall pair across `axis` (0, 1, 2): g, the streamed
    populations (changed in place and returned); f_before, those before the stream."""
    lat = bulk3d.lattice(lat)
    a = np.asarray(force, dtype=float)
    H = int(np.abs(lat.c).max())
    n = g.shape[1 + axis]
    conditions = _conditions(lat).shape[0]
    for s, T_wall, adiabatic_side, present in ((1, T_low, adiabatic[0], sides[0]),
                                               (-1, T_high, adiabatic[1], sides[1])):
        if not present:
            continue
        at = (lambda j: j) if s > 0 else (lambda j: n - 1 - j)
        T_bulk = bulk3d.temperature(g[_plane(g, axis, at(H))], lat)
        temps = [T_bulk if adiabatic_side else T_wall + (H - 1 - j) * (T_wall - T_bulk) for j in range(H)]
        unknown = [[i for i in range(lat.Q) if s * lat.c[i, axis] >= j + 1] for j in range(H)]
        left = [f_before[_plane(f_before, axis, at(j))][[lat.opposite[i] for i in unknown[j]]].sum(0)
                for j in range(H)]
        entered = np.zeros_like(left[0])
        for j in range(H - 1, -1, -1):
            U = unknown[j]
            known = [i for i in range(lat.Q) if i not in U]
            plane = g[_plane(g, axis, at(j))]                      # (Q, n1, n2), a copy
            new = np.empty((len(U),) + plane.shape[1:])
            for idx in np.ndindex(*plane.shape[1:]):
                if j > 0 and len(U) == conditions:
                    N = None
                elif j == 0:
                    N = sum(x[idx] for x in left) - entered[idx]
                else:
                    N = left[j][idx]
                Tw = temps[j] if np.ndim(temps[j]) == 0 else temps[j][idx]
                new[(slice(None),) + idx] = _rebuild(plane[(slice(None),) + idx], known, U, N, Tw, a, lat)
            plane[U] = new
            g[_plane(g, axis, at(j))] = plane
            entered = entered + new.sum(0)
    return g


def wall_mask(shape, axis=2, lat="d3q39", sides=(True, True)):
    """True on the H wall planes at each wall of the pair (where tau = tau_wall)."""
    H = int(np.abs(bulk3d.lattice(lat).c).max())
    mask = np.zeros(shape, dtype=bool)
    n = shape[axis]
    for present, rows in ((sides[0], range(H)), (sides[1], range(n - H, n))):
        if present:
            for j in rows:
                mask[_plane(mask[None], axis, j)[1:]] = True
    return mask


def step_walls(f, tau, axis=2, T_low=1.0, T_high=1.0, adiabatic=(False, False), force=(0.0, 0.0, 0.0),
               lat="d3q39", tau_wall=1.0, sides=(True, True)):
    """stream -> bc (walls across `axis`) -> BGK; the wall planes relax with tau_wall."""
    g = apply_walls(bulk3d.stream(f, lat), f, axis, T_low, T_high, adiabatic, force, lat, sides)
    bulk = bulk3d.collide_bgk(g, tau, force, lat)
    wall = bulk3d.collide_bgk(g, tau_wall, force, lat)
    return np.where(wall_mask(f.shape[1:], axis, lat, sides)[None], wall, bulk)
