"""Shared values of the 3D kernel tests: a small lattice, random states, unit conversion to
the oracle (lbgen.reference.bulk3d works in lattice units: u_model = r u, a_model = r a),
and the programs (from the session's cache, tests/programs.py)."""
from __future__ import annotations

import numpy as np

from lbgen.reference import bulk3d as oracle

#: the lattice of the kernel tests: LZ = 16 takes VL = 4 and 8 with a one-row halo
SHAPE = (6, 5, 16)
#: the force of the oracle comparisons, lattice units (velocity gain per step)
FORCE = np.array([1e-4, -2e-4, 3e-4])
#: operator parameters: the oracle's and the kernels' (regularized: tau = 1/2 + C1/rho)
ORACLE_PARAMS = {"bgk": {"tau": 0.8}, "regularized": {"C1": 0.07}, "trt": {"tau": 0.8, "magic": 0.1},
                 "bgk-les": {"tau": 0.52, "smagorinsky": 0.17}, "trt-les": {"tau": 0.52, "magic": 0.25, "smagorinsky": 0.15},
                 "regularized-les": {"C1": 0.01, "smagorinsky": 0.12},
                 "cumulant": {"tau": 0.56, "omega_bulk": 1.3, "omega3": 0.9, "omega4": 1.2, "cumulant_limiter": 1e-3},
                 "mrt": {"tau": 0.56, "omega_bulk": 1.3, "omega3": 0.9, "omega4": 1.2},
                 "mrt-les": {"tau": 0.52, "omega_bulk": 1.1, "omega3": 1.2, "omega4": 0.9, "smagorinsky": 0.15},
                 "central": {"tau": 0.56, "omega_bulk": 1.3, "omega3": 0.8, "omega4": 1.4},
                 "kbc": {"tau": 0.53},
                 "cumulant-les": {"tau": 0.52, "omega_bulk": 1.1, "omega3": 1.2, "omega4": 0.9, "cumulant_limiter": 1e-3,
                                  "smagorinsky": 0.15}}
KERNEL_PARAMS = {**ORACLE_PARAMS, "regularized": {"C1": 0.07, "C2": 1e-3, "C3": 0.5},
                 "regularized-les": {"C1": 0.01, "C2": 1e-3, "C3": 0.5, "smagorinsky": 0.12}}
#: the operators of lbgen.reference.trt_les (TRT and the Smagorinsky subgrid model) and
#: lbgen.reference.cumulant (D3Q27 only: ``defined``) and lbgen.reference.mrt and lbgen.reference.central and lbgen.reference.kbc
NEW_OPERATORS = ("trt", "bgk-les", "regularized-les", "trt-les", "cumulant", "mrt", "mrt-les", "central",
                 "cumulant-les", "kbc")


#: the layouts every operator beyond bgk and regularized is swept on (one plain, one clustered): the
#: layout code is the operator's own nowhere (bgk and regularized sweep every layout, the site
#: function is shared), so the other operators' full layout sweeps added compiles, not coverage
SAMPLED_LAYOUTS = (("soa", None), ("caosoa", 8))


def swept(layout, vl, collision: str) -> bool:
    """Whether the layout sweep takes this operator on this layout (every layout: bgk, regularized)."""
    return collision in ("bgk", "regularized") or (layout, vl) in SAMPLED_LAYOUTS


def defined(name: str, collision: str) -> bool:
    """Whether the operator is defined on the set (the cumulant operator: D3Q27 only)."""
    from lbgen.model.operators import operator
    sets = operator(collision).sets
    return sets is None or name in sets
#: every 3D layout of the kernels: (layout, VL)
LAYOUTS3D = [("aos", None), ("soa", None), ("csoa", 4), ("csoa", 8), ("caosoa", 4), ("caosoa", 8)]
R = np.sqrt(3.0)       # d3q19 and d3q27: xi = sqrt(3) c


def random_state(name: str, shape=SHAPE, seed: int = 7, noise: float = 1e-2) -> np.ndarray:
    """Near-equilibrium (Q, LX, LY, LZ) populations with a random non-equilibrium part."""
    rng = np.random.default_rng(seed)
    lat = oracle.lattice(name)
    rho = 1.0 + 0.05 * rng.standard_normal(shape)
    u = 0.04 * rng.standard_normal((3,) + tuple(shape))
    return oracle.equilibrium(rho, u, lat) * (1.0 + noise * rng.standard_normal((lat.Q,) + tuple(shape)))


def kernel_params(collision: str, force=FORCE) -> dict:
    """The kernels' arguments for the oracle's parameters and force (model units)."""
    return {**KERNEL_PARAMS[collision], **dict(zip(("ax", "ay", "az"), R * np.asarray(force, dtype=float)))}


def oracle_run(f0, steps, name, collision, boundaries=None, force=FORCE):
    return oracle.run(f0.copy(), steps, collision, oracle.lattice(name), boundaries, force=force,
                      **ORACLE_PARAMS[collision])


def bounds(walls=(), lids=None, solid=None) -> dict:
    """The ``Program.set_boundaries`` arguments of 3D wall axes or faces, lids {face: (ux, uy, uz)}
    and a mask (lbgen.simulation.boundaries parses them, as a Simulation does)."""
    from lbgen.simulation.boundaries import face_bits, lid_faces
    bits, lid_bits, lid = face_bits(walls, lid_faces(lids, walls, D=3), 3)
    return dict(walls=bits, lids=lid_bits, lid=lid, solid=solid)


def kernel_run(program, f0, steps, collision, bc=None, force=FORCE, fused=True):
    """The buffer after ``steps`` steps from f0 with the boundaries ``bc`` (``bounds``; None: periodic)."""
    program.set_boundaries(**(bc or {}))
    f, g = program.pack(f0), program.allocate()
    params = kernel_params(collision, force)
    for _ in range(steps):
        program.step_halo(f)
        f, g = program.step(f, g, params, fused=fused)
    return f


def program3d(layout, vl, name="d3q19", collision="bgk", strict=False, precision="double", shape=SHAPE):
    """A compiled CProgram3D (one per spec, strictness and lattice: the session's cache)."""
    from programs import PROGRAMS
    return PROGRAMS.of("c", shape, strict, layout=layout, vl=vl, velocity_set=name, collision=collision,
                       precision=precision)
