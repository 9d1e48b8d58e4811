"""Shared values of the 3D thermal-wall kernel tests (issue 39): a small D3Q39 lattice, a
random near-equilibrium state, the kernels' steps (propagate, bc, collide) and the independent
NumPy oracle's (``lbgen.reference.walls3d``), in the oracle's lattice units."""
from __future__ import annotations

import numpy as np

from lbgen.reference import bulk3d, walls3d

#: LZ = 12: VL = 4 with the 3-row halo, and the 2 x (3 + 1) planes the walls need
SHAPE = (3, 4, 12)
#: lattice units (the oracle's); the kernels take r x this
FORCE = np.array([1e-4, -2e-4, -3e-4])
TAU = 0.8


def state(name: str = "d3q39", seed: int = 1, shape=SHAPE) -> np.ndarray:
    """(Q, LX, LY, LZ) populations near a thermal equilibrium with a random non-equilibrium part."""
    lat = bulk3d.lattice(name)
    rng = np.random.default_rng(seed)
    rho = 1 + 0.01 * rng.standard_normal(shape)
    u = 0.02 * rng.standard_normal((3,) + tuple(shape))
    T = 1 + 0.02 * rng.standard_normal(shape)
    return bulk3d.equilibrium(rho, u, lat, T) * (1 + 1e-3 * rng.standard_normal((lat.Q,) + tuple(shape)))


def kernel_params(name: str = "d3q39") -> dict:
    """The kernels' BGK parameters and force (model units: r x the oracle's)."""
    r = np.sqrt(1.0 / bulk3d.lattice(name).cs2)
    return {"tau": TAU, **dict(zip(("ax", "ay", "az"), r * FORCE))}


def run(program, f0, steps, walls, sides=(True, True), name="d3q39", fused=False):
    """`steps` kernel steps (halo, propagate, bc, collide; ``fused``: halo, fused_walls) from the
    populations f0; unpacked."""
    params = kernel_params(name)
    f, g = program.pack(f0), program.allocate()
    for _ in range(steps):
        program.step_halo(f)
        f, g = program.step(f, g, params, walls=walls, fused=fused, sides=sides)
    return program.unpack(f)


def oracle(f0, steps, walls, sides=(True, True), name="d3q39", axis="z"):
    """The oracle's steps (stream, bc, BGK) with the walls across `axis` (z: the default)."""
    f = f0.copy()
    for _ in range(steps):
        f = walls3d.step_walls(f, TAU, "xyz".index(axis), walls.T_bottom, walls.T_top,
                               (walls.adiabatic_bottom, walls.adiabatic_top), FORCE, name, walls.tau_wall, sides)
    return f


#: a lattice per wall axis: 8 sites across the walls (2 x (3 + 1) planes), LZ = 12 (VL = 4)
AXIS_SHAPES = {"x": (8, 4, 12), "y": (3, 8, 12), "z": SHAPE}
