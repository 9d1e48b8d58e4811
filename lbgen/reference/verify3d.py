"""`lbgen verify` in 3D: every available backend x 3D layout x operator against the NumPy 3D
oracle (``lbgen.reference.bulk3d``), the same judgement as in 2D (``lbgen.reference.verify``).

All runs start from the same random near-equilibrium state (seeded) of a D3Q19 or D3Q27
lattice and take N steps under a force, unfused (halo, propagate, collide) and fused (halo,
fused), in a periodic box, or with ``boundaries=True``: half-way bounce-back walls on y and
z, the z-high face moving as a lid and a random voxel mask of 15 % solid sites (links into
them bounce back, they hold 0).  Each result is compared with the oracle (max |f - f_ref| /
max |f_ref|) against the rounding bound C (eps_s N + eps_a N Q) of the 2D module (bounce-back
rebuilds nothing, so W = 0) and with the C backend's result for the same configuration; in
strict builds (no FMA contraction) C, OpenCL and the CUDA shim must be bit-identical.

The oracle is typed from the textbook: D3Q19 and D3Q27 with both operators, the thermal
D3Q39 (its random state then has a temperature field too) with BGK; its regularized
operator is second order, so D3Q39 with the regularized operator is refused in words (those
kernels are checked by the tests: the measured nu, kappa and c_s).
"""
from __future__ import annotations

import itertools
from typing import Callable, Optional, Sequence, Tuple

import numpy as np

from lbgen.backends import compile3d, spec_backend
from lbgen.codegen.layouts import CLUSTERED
from lbgen.codegen.render import generate
from lbgen.codegen.kernel_api import check_sizes3d
from lbgen.codegen.spec import KernelSpec, SpecError
from lbgen.reference import VERIFY_LATTICE_3D, bulk3d as oracle
from lbgen.reference.verify import (DEFAULT_LAYOUTS, MAX_TOLERANCE, PARAMS, VERIFY_BACKENDS, NothingVerified, Report, Row,
                                    available_backends, check_arguments, judge_runs, rounding_bound)

#: the force, lattice units (velocity gain per step); the kernels take r times it
FORCE3D = (1e-4, -2e-4, 3e-4)
#: the boundaries of ``boundaries=True``: wall axes, the moving face and its velocity (lattice
#: units), the solid fraction of the voxel mask
WALL_AXES3D = ("y", "z")
LID3D = {("z", "high"): (0.05, -0.02, 0.0)}
SOLID_FRACTION = 0.15


def boundaries_description() -> str:
    lids = ", ".join(f"{a}-{s} moving at {','.join(f'{v:g}' for v in u)}" for (a, s), u in LID3D.items())
    return (f"walls on {' and '.join(WALL_AXES3D)}, lid {lids} (lattice units), "
            f"{SOLID_FRACTION:.0%} solid voxels")


def initial_state3d(shape, name: str, seed: int = 0, solid: Optional[np.ndarray] = None) -> np.ndarray:
    """Near-equilibrium (Q, LX, LY, LZ) populations with a random non-equilibrium part (0 in solid voxels)."""
    rng = np.random.default_rng(seed)
    lat = oracle.lattice(name)
    rho = 1.0 + 0.05 * rng.standard_normal(shape)
    u = 0.04 * rng.standard_normal((3,) + tuple(shape))
    T = 1.0 + 0.05 * rng.standard_normal(shape) if lat.thermal else 1.0
    f = oracle.equilibrium(rho, u, lat, T) * (1.0 + 1e-2 * rng.standard_normal((lat.Q,) + tuple(shape)))
    if solid is not None:
        f[:, solid] = 0.0
    return f


def solid_mask(shape, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed + 1).random(shape) < SOLID_FRACTION


def _oracle_parameters(collision: str) -> dict:
    """The oracle's operator parameters for the kernels' defaults (regularized: tau = 1/2 + C1/rho)."""
    p = PARAMS[collision]
    return {"tau": p["tau"]} if collision == "bgk" else {"C1": p["C1"]}


def run_program3d(prog, f0: np.ndarray, steps: int, path: str, collision: str, bc, r: float) -> np.ndarray:
    params = dict(PARAMS[collision], **dict(zip(("ax", "ay", "az"), (r * a for a in FORCE3D))))
    f, g = prog.pack(f0), prog.allocate()
    for _ in range(steps):
        f, g = prog.step(f, g, params, bc, fused=path == "fused")
    return prog.unpack(f)


def verify3d(backends: Sequence[str] = VERIFY_BACKENDS, layouts: Sequence[Tuple[str, Optional[int]]] = (),
             collisions: Sequence[str] = ("bgk", "regularized"), precisions: Sequence[str] = ("double",),
             steps: int = 20, shape: Tuple[int, int, int] = VERIFY_LATTICE_3D, strict: bool = False,
             boundaries: bool = False, seed: int = 0, progress: Optional[Callable[[Row], None]] = None,
             velocity_set: str = "d3q19", on_plan: Optional[Callable[[int], None]] = None) -> Report:
    """Run every planned 3D configuration and compare it (module doc).  Bad arguments raise
    SpecError, a case that verifies nothing NothingVerified, both before any kernel is built."""
    from lbgen.model.velocity_set import velocity_set as get_velocity_set
    lx, ly, lz = shape
    check_arguments(backends, layouts, collisions, precisions, steps, lx, ly, seed)
    if isinstance(lz, bool) or not isinstance(lz, (int, np.integer)) or lz < 1:
        raise SpecError(f"verify: lz={lz!r} must be an integer >= 1")
    name = str(velocity_set).lower()
    if name not in oracle.LATTICES:
        raise SpecError(f"verify: {name} has no 3D oracle: lbgen.reference.bulk3d has {', '.join(oracle.LATTICES)}")
    if oracle.lattice(name).thermal and "regularized" in collisions:
        raise SpecError(f"verify: the 3D oracle's regularized operator is second order; {name} (third order) is "
                        f"verified with --collision bgk (its regularized kernels: tests/model/test_physics3d.py)")
    vs = get_velocity_set(name)
    explicit = bool(layouts)
    chosen = []
    for layout, vl in (list(layouts) or DEFAULT_LAYOUTS):
        spec = KernelSpec(layout=layout, vl=vl, velocity_set=name).validate()
        problem = check_sizes3d(spec, vs, lx, ly, lz)
        if problem and explicit:     # a layout asked for that this lattice cannot take: refused
            raise SpecError(f"verify: {layout}{'-vl' + str(vl) if vl else ''} on {lx} x {ly} x {lz}: {problem}")
        if not problem:
            chosen.append((layout, vl))
    names, skipped = available_backends(backends)
    if not names:
        why = "; ".join(f"{b}: {w}" for b, w in skipped.items())
        raise NothingVerified(f"nothing was verified: every backend asked for is unavailable here ({why})")
    order = sorted(names, key=lambda n: n != "c")     # C first: the others are compared with it
    plan = []
    for backend, (layout, vl), collision, precision, path in itertools.product(
            order, chosen, collisions, precisions, ("unfused", "fused")):
        spec = KernelSpec(backend=spec_backend(backend), layout=layout, vl=vl if layout in CLUSTERED else None,
                          precision=precision, collision=collision, velocity_set=name)
        try:
            spec.validate()
        except SpecError:
            continue     # a combination this backend does not offer
        plan.append((backend, layout, spec, path))
    if not plan:
        raise NothingVerified(f"nothing was verified: no backend here ({', '.join(names)}) offers precision "
                              f"{', '.join(precisions)} on {lx} x {ly} x {lz} with the layouts asked for")
    for precision in sorted({spec.precision for _, _, spec, _ in plan}):
        tol = rounding_bound(precision, steps, vs.Q)
        if not tol <= MAX_TOLERANCE[precision]:
            raise NothingVerified(f"nothing was verified: rounding alone may move {precision} precision by {tol:.2g} "
                                  f"relative after {steps} steps, more than {MAX_TOLERANCE[precision]:g}, so a wrong "
                                  f"kernel could not be told from a right one; try fewer --steps or double precision")
    solid = solid_mask(shape, seed) if boundaries else None
    f0 = initial_state3d(shape, name, seed, solid)
    lat = oracle.lattice(name)
    where = oracle.Boundaries(shape, lat, walls=WALL_AXES3D, lids=LID3D, solid=solid) if boundaries else None
    references = {c: oracle.run(f0.copy(), steps, c, lat, where, force=FORCE3D, **_oracle_parameters(c))
                  for c in collisions}
    report = Report(skipped=skipped, strict=strict, steps=steps, lattice=tuple(shape), walls=boundaries,
                    velocity_set=name, boundaries=boundaries_description() if boundaries else "")
    report.planned = len(plan)
    if on_plan:
        on_plan(len(plan))
    r = float(vs.r)
    lids = {face: r * np.asarray(u) for face, u in LID3D.items()}

    def run(backend, spec, path):
        prog = compile3d(backend, generate(spec), shape, strict=strict)
        bc = prog.boundaries(WALL_AXES3D, lids, solid.astype(np.uint8)) if boundaries else None
        return run_program3d(prog, f0, steps, path, spec.collision, bc, r)

    runs = ((Row(backend, layout, spec.vl, spec.collision, spec.precision, path,
                 tolerance=rounding_bound(spec.precision, steps, vs.Q)),
             (lambda b=backend, s=spec, p=path: run(b, s, p)), references[spec.collision])
            for backend, layout, spec, path in plan)
    return judge_runs(report, runs, strict, progress)
