"""`lbgen verify`: every available backend x layout x VL against a NumPy oracle, in any D.

All runs start from the same random near-equilibrium state (seeded), take N steps under a
force, unfused (halo, propagate[, bc], collide) and fused (halo, fused or, with 2D walls,
fused_walls), and are compared with the oracle (max |f - f_ref| / max |f_ref|) within the
rounding bound of ``lbgen.reference.judge`` and with the C backend's result for the same
configuration; in strict mode (no FMA contraction anywhere) C, OpenCL and the CUDA shim must
also be bit-identical.  One plan, one judgement and one report serve every dimension; what
the dimension decides is only the lattice and the oracle (``_Case``: ``_case2d``, ``_case3d``):

* 2D (``lbgen.reference.bulk`` + ``walls``, a 6 x 96 lattice): ``walls=True`` adds the thermal
  channel walls on y (the bc kernel, ``wall_scheme`` lbgen or reference), whose rebuilt rows
  give the bound its wall term W (``wall_amplification``);
* 3D (``lbgen.reference.bulk3d``, 6 x 5 x 32; D3Q19, D3Q27 with both operators, the thermal
  D3Q39 and D3Q103 with BGK, the oracle's regularized operator being second order):
  ``walls=True`` adds half-way bounce-back walls on y and z, the z-high face moving as a lid
  and a random voxel mask of 15 % solid sites (bounce-back rebuilds nothing: W = 0); the
  thermal walls' ``wall_scheme`` does not apply and is refused.  ``thermal_walls=True``
  (D3Q39, D3Q103, BGK) adds instead the thermal walls across z (the bc kernel: propagate, bc,
  collide, and the one fused_walls sweep; ``WALLS3D``) against ``lbgen.reference.walls3d``; the
  bound takes no wall term there (W = 0).

The default layouts are those the lattice takes; a layout given that it cannot take is
refused, naming the rule.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from lbgen.reference import VERIFY_LAYOUTS, VERIFY_SHAPES, bulk as ref, bulk3d as oracle3d
from lbgen.reference import walls as refw, walls3d as refw3d
from lbgen.reference.judge import (BOUND_FACTOR, EPSILON, MAX_TOLERANCE, NothingVerified, ReferenceRun,  # noqa: F401
                                   Report, Row, judge_runs, max_tolerance, rounding_bound)
from lbgen.codegen.spec import PRECISIONS, KernelSpec, SpecError
from lbgen.codegen.storage import STORAGES, check_storage
from lbgen.codegen.render import generate
from lbgen.codegen.layouts import CLUSTERED
from lbgen.model.catalog import CHANNEL_WALLS, DEFAULT_VELOCITY_SET, set_entry
from lbgen.model.operators import OPERATOR_RECORDS
from lbgen.model.catalog import DEFAULT_SCHEME as DEFAULT_WALL_SCHEME
from lbgen.backends import RUNTIMES, runtime, spec_backend
from lbgen.backends import compile as compile_program
from lbgen.simulation.boundaries import face_bits
from lbgen.simulation.runner import Walls

#: every runtime ("cuda-shim" runs the CUDA source on the CPU with g++ and a host shim)
VERIFY_BACKENDS = tuple(RUNTIMES)
#: each operator at its record's default parameters
PARAMS = {name: op.defaults() for name, op in OPERATOR_RECORDS.items()}
#: the force, lattice units per dimension (2D: the kernels' units; 3D: the kernels take r times it)
FORCE = (1e-4, -2e-4)
FORCE3D = (1e-4, -2e-4, 3e-4)
#: 2D: the thermal channel walls (isothermal sets, D2Q9: walls take no temperature)
WALLS = dict(T_bottom=1.02, T_top=0.98, adiabatic=(False, True))
ISOTHERMAL_WALLS = dict(T_bottom=1.0, T_top=1.0, adiabatic=(False, False))
#: 3D: the wall axes, the moving face and its velocity (lattice units), the solid fraction of the mask
WALL_AXES3D = ("y", "z")
LID3D = {("z", "high"): (0.05, -0.02, 0.0)}
SOLID_FRACTION = 0.15
#: 3D thermal sets: the thermal walls across z (the 2D walls' temperatures and sides; tau_wall 1)
WALLS3D = WALLS


def available_backends(names: Sequence[str]) -> Tuple[List[str], Dict[str, str]]:
    ok, skipped = [], {}
    for name in names:
        if name not in VERIFY_BACKENDS:
            raise SpecError(f"unknown backend {name!r}; choose from {', '.join(VERIFY_BACKENDS)}")
        try:
            good, why = runtime(name).available()
        except Exception as e:  # noqa: BLE001 - any failure means: not available here
            good, why = False, f"{type(e).__name__}: {e}"
        (ok.append(name) if good else skipped.__setitem__(name, why))
    return ok, skipped


# --- 2D: lbgen.reference.bulk and walls ---------------------------------------------------------
def initial_state(lx: int, ly: int, seed: int = 0, vs=None) -> np.ndarray:
    rng = np.random.default_rng(seed)
    shape = (lx, ly)
    f = ref.equilibrium(1 + 0.05 * rng.standard_normal(shape), 0.05 * rng.standard_normal(shape),
                        0.05 * rng.standard_normal(shape), 1 + 0.05 * rng.standard_normal(shape), vs=vs)
    return f * (1 + 1e-3 * rng.standard_normal(f.shape))


def wall_settings(vs) -> dict:
    return ISOTHERMAL_WALLS if vs is not None and vs.isothermal else WALLS


def wall_amplification(g: np.ndarray, vs, axis: int = 1) -> Tuple[float, int, int]:
    """(w, x, y): the worst wall site of the state `g` just after the bc, w = max over the wall
    rows' sites of (sum_U |g_i|)^2 / (|sum_U g_i| max |g|), U the row's rebuilt populations
    (``judge``'s module doc); inf where they sum to exactly zero.  ``axis``: the walls' (1: y, 0: x)."""
    rows = g if axis == 1 else g.transpose(0, 2, 1)       # (Q, along the walls, across them)
    H, ly = vs.max_hop, rows.shape[2]
    scale = float(np.abs(g).max())
    worst = (0.0, 0, 0)
    for side in CHANNEL_WALLS:
        for j in range(H):
            y = j if side == "bottom" else ly - 1 - j
            unknown, _ = refw._wall_sets(vs, side, j, axis)
            if not unknown:
                continue
            rebuilt = rows[unknown, :, y]
            total = np.abs(rebuilt).sum(0)
            with np.errstate(divide="ignore", invalid="ignore"):
                w = np.where(total > 0, total * total / (np.abs(rebuilt.sum(0)) * scale), 0.0)
            x = int(np.argmax(w))
            if w[x] > worst[0] or np.isnan(w[x]):
                worst = (float(w[x]) if not np.isnan(w[x]) else float("inf"), *((x, y) if axis == 1 else (y, x)))
    return worst


def reference_trajectory(f0: np.ndarray, collision: str, steps: int, walls: bool,
                         wall_scheme: str = DEFAULT_WALL_SCHEME, vs=None, axis: int = 1) -> ReferenceRun:
    """The 2D reference run, and with walls (across ``axis``: 1, y; 0, x) its wall amplification W
    (the bc state of every step, from the oracle's own ``apply_walls``)."""
    f = f0.copy()
    settings = wall_settings(vs)
    total, worst = 0.0, None
    for step in range(steps):
        if walls:
            g = refw.apply_walls(ref.propagate(f, vs), f, settings["T_bottom"], settings["T_top"],
                                 settings["adiabatic"], FORCE, vs, wall_scheme, axis)
            w, x, y = wall_amplification(g, vs, axis)
            total += w
            if worst is None or w > worst[3]:
                worst = (step + 1, x, y, w)
            f = refw.step_walls(f, collision, scheme=wall_scheme, axis=axis, force=FORCE, vs=vs, **settings,
                                **PARAMS[collision])
        else:
            f = ref.step(f, collision, force=FORCE, vs=vs, **PARAMS[collision])
    return ReferenceRun(f, total, worst)


def run_program(prog, f0: np.ndarray, steps: int, path: str, collision: str, walls: bool) -> np.ndarray:
    from lbgen.model.velocity_set import velocity_set
    wall = wall_settings(velocity_set(prog.spec.velocity_set))
    params = dict(PARAMS[collision], ax=FORCE[0], ay=FORCE[1])
    wall_spec = Walls(wall["T_bottom"], wall["T_top"], *wall["adiabatic"]) if walls else None
    return stepped(prog, f0, steps, path, params, wall_spec)


def stepped(prog, f0: np.ndarray, steps: int, path: str, params: dict, walls=None) -> np.ndarray:
    """The populations (Q, *shape) after ``steps`` steps of a program from f0 (any D)."""
    a, b = prog.pack(f0), prog.allocate()
    for _ in range(steps):
        prog.step_halo(a)
        a, b = prog.step(a, b, params, walls, fused=path == "fused")
    prog.synchronize()
    return prog.unpack(a)


# --- 3D: lbgen.reference.bulk3d -----------------------------------------------------------------
def boundaries_description() -> str:
    lids = ", ".join(f"{a}-{s} moving at {','.join(f'{v:g}' for v in u)}" for (a, s), u in LID3D.items())
    return (f"walls on {' and '.join(WALL_AXES3D)}, lid {lids} (lattice units), "
            f"{SOLID_FRACTION:.0%} solid voxels")


def initial_state3d(shape, name: str, seed: int = 0, solid: Optional[np.ndarray] = None) -> np.ndarray:
    """Near-equilibrium (Q, LX, LY, LZ) populations with a random non-equilibrium part (0 in solid voxels)."""
    rng = np.random.default_rng(seed)
    lat = oracle3d.lattice(name)
    rho = 1.0 + 0.05 * rng.standard_normal(shape)
    u = 0.04 * rng.standard_normal((3,) + tuple(shape))
    T = 1.0 + 0.05 * rng.standard_normal(shape) if lat.thermal else 1.0
    f = oracle3d.equilibrium(rho, u, lat, T) * (1.0 + 1e-2 * rng.standard_normal((lat.Q,) + tuple(shape)))
    if solid is not None:
        f[:, solid] = 0.0
    return f


def solid_mask(shape, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed + 1).random(shape) < SOLID_FRACTION


def oracle_parameters3d(collision: str) -> dict:
    """The 3D oracle's operator parameters for the kernels' defaults (regularized: tau = 1/2 + C1/rho)."""
    p = PARAMS[collision]
    return {k: v for k, v in p.items() if k in ("tau", "magic", "C1", "smagorinsky")}


# --- what the dimension decides ------------------------------------------------------------------
@dataclass
class _Case:
    """The per-D part of a verify: the kernels' spec options, the size rule of a layout, the
    oracle's runs and how a compiled program is run."""
    spec_options: dict
    #: (spec) -> None when the kernels take the lattice, else the broken rule in words
    size_problem: Callable[[KernelSpec], Optional[str]]
    #: (collisions) -> {collision: ReferenceRun}
    references: Callable[[Sequence[str]], Dict[str, ReferenceRun]]
    #: (backend, spec, path) -> the populations after the steps, (Q, *shape) float64
    run: Callable[[str, KernelSpec, str], np.ndarray]
    boundaries: str = ""
    #: the start populations (Q, *shape): the deviation D of a shifted storage's bound
    start: Optional[np.ndarray] = None
    #: the step paths verified ("fused": fused, or with 2D walls fused_walls)
    paths: Tuple[str, ...] = ("unfused", "fused")


def _case2d(shape, vs, name, collisions, steps, walls, wall_scheme, seed, strict, wall_axis=None) -> _Case:
    """The 2D case: periodic, or with the thermal walls across y (or ``wall_axis`` 'x')."""
    lx, ly = shape
    axis = 0 if wall_axis == "x" else 1
    wall_scheme = DEFAULT_WALL_SCHEME if wall_scheme is None else wall_scheme

    def size_problem(spec):
        try:
            spec.validate(lx, ly)
        except SpecError as e:
            return str(e)
        return None
    f0 = initial_state(lx, ly, seed, vs)
    return _Case(
        spec_options=dict(walls=walls, wall_scheme=wall_scheme, wall_axis=wall_axis), size_problem=size_problem,
        references=lambda cols: {c: reference_trajectory(f0, c, steps, walls, wall_scheme, vs, axis) for c in cols},
        run=lambda b, s, p: run_program(runtime(b).compile(generate(s), lx, ly, strict=strict), f0, steps, p,
                                        s.collision, walls),
        boundaries=(f"walls ({wall_scheme} scheme{', across x' if axis == 0 else ''})" if walls else ""), start=f0)


def thermal_walls_reference3d(f0: np.ndarray, steps: int, name: str, axis: str = "z") -> np.ndarray:
    """The oracle's run between the 3D thermal walls across `axis` (``WALLS3D``, BGK)."""
    f = f0.copy()
    for _ in range(steps):
        f = refw3d.step_walls(f, PARAMS["bgk"]["tau"], "xyz".index(axis), WALLS3D["T_bottom"], WALLS3D["T_top"],
                              WALLS3D["adiabatic"], FORCE3D, name)
    return f


def _case3d_thermal_walls(shape, vs, name, collisions, steps, seed, strict, axis=None) -> _Case:
    """The 3D thermal walls across z, or `axis` (D3Q39, D3Q103): propagate, bc, collide and fused_walls against walls3d."""
    from lbgen.codegen.kernel_api import check_sizes3d
    if vs.isothermal or name not in oracle3d.LATTICES:
        raise SpecError(f"verify: --thermal-walls are the thermal walls of d3q39 and d3q103; {name} is isothermal "
                        f"(its walls: --walls, half-way bounce-back)")
    others = [c for c in collisions if c != "bgk"]
    if others:
        raise SpecError(f"verify: the 3D thermal walls' oracle (lbgen.reference.walls3d) relaxes with BGK; "
                        f"{others[0]} is not verified with them: --collision bgk")
    f0 = initial_state3d(shape, name, seed)
    walls = Walls(WALLS3D["T_bottom"], WALLS3D["T_top"], *WALLS3D["adiabatic"])
    params = dict(PARAMS["bgk"], **dict(zip(("ax", "ay", "az"), float(vs.r) * np.asarray(FORCE3D))))
    a = axis or "z"
    return _Case(
        spec_options=dict(walls=True, wall_axis=axis), size_problem=lambda spec: check_sizes3d(spec, vs, *shape),
        references=lambda cols: {c: ReferenceRun(thermal_walls_reference3d(f0, steps, name, a)) for c in cols},
        run=lambda b, s, p: stepped(compile_program(b, generate(s), shape, strict=strict), f0, steps, p, params, walls),
        boundaries=(f"thermal walls across {a}: T = {WALLS3D['T_bottom']:g} at {a}-low, "
                    f"{'adiabatic' if WALLS3D['adiabatic'][1] else WALLS3D['T_top']} at {a}-high"),
        paths=("unfused", "fused"), start=f0)


def _case3d(shape, vs, name, collisions, steps, walls, wall_scheme, seed, strict, thermal_walls=False,
            wall_axis=None) -> _Case:
    from lbgen.codegen.kernel_api import check_sizes3d
    if name not in oracle3d.LATTICES:
        raise SpecError(f"verify: {name} has no 3D oracle: lbgen.reference.bulk3d has {', '.join(oracle3d.LATTICES)}")
    if wall_scheme is not None:
        raise SpecError(f"verify: the wall scheme (--wall-scheme {wall_scheme}) chooses the bc of the 2D thermal "
                        f"walls; {name}'s walls are half-way bounce-back, which has no scheme to choose")
    if thermal_walls:
        if walls:
            raise SpecError("verify: --walls (bounce-back walls, a lid, solid voxels) and --thermal-walls together: "
                            "the thermal walls' kernels take no bounce-back beside them; choose one")
        return _case3d_thermal_walls(shape, vs, name, collisions, steps, seed, strict, wall_axis)
    lat = oracle3d.lattice(name)
    subgrid = [c for c in collisions if c.endswith("-les")]
    if lat.thermal and subgrid:
        raise SpecError(f"verify: the 3D oracle's subgrid operators are for the isothermal D3Q19 and D3Q27; "
                        f"{name} is verified with --collision bgk (its {subgrid[0]} kernels: the 2D thermal sets' "
                        f"oracle, lbgen.reference.bulk.subgrid_tau, checks the closed form with T)")
    if lat.thermal and "regularized" in collisions:
        raise SpecError(f"verify: the 3D oracle's regularized operator is second order; {name} (third order) is "
                        f"verified with --collision bgk (its regularized kernels: tests/model/test_physics3d.py)")
    solid = solid_mask(shape, seed) if walls else None
    f0 = initial_state3d(shape, name, seed, solid)
    where = oracle3d.Boundaries(shape, lat, walls=WALL_AXES3D, lids=LID3D, solid=solid) if walls else None
    r = float(vs.r)
    lids = {face: r * np.asarray(u) for face, u in LID3D.items()}

    def run(backend, spec, path):
        prog = compile_program(backend, generate(spec), shape, strict=strict)
        if walls:
            bits, lid_bits, lid = face_bits(WALL_AXES3D, lids, 3)
            prog.set_boundaries(bits, lid_bits, lid, solid)
        return stepped(prog, f0, steps, path, dict(PARAMS[spec.collision], **dict(zip(("ax", "ay", "az"),
                                                                                    r * np.asarray(FORCE3D)))))
    return _Case(
        spec_options={}, size_problem=lambda spec: check_sizes3d(spec, vs, *shape),
        references=lambda cols: {c: ReferenceRun(oracle3d.run(f0.copy(), steps, c, lat, where, force=FORCE3D,
                                                              **oracle_parameters3d(c))) for c in cols},
        run=run, boundaries=boundaries_description() if walls else "", start=f0)


def check_arguments(backends, layouts, collisions, precisions, steps, shape, seed, storages=(None,)) -> None:
    """Everything verify is given, refused naming the value before any work."""
    sizes = [(f"l{axis}", n) for axis, n in zip("xyz", shape)]
    for name, value, low in [("steps", steps, 1), *((n, v, 1) for n, v in sizes), ("seed", seed, 0)]:
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
            raise SpecError(f"verify: {name}={value!r} must be an integer >= {low}")
    for name, values, allowed in (("backends", backends, VERIFY_BACKENDS), ("collisions", collisions, OPERATOR_RECORDS),
                                  ("precisions", precisions, PRECISIONS)):
        if isinstance(values, str):
            raise SpecError(f"verify: {name}={values!r} must be a list of names (of {', '.join(allowed)})")
        if not list(values):
            raise NothingVerified(f"nothing was verified: no {name} given (choose from {', '.join(allowed)})")
        bad = [v for v in values if v not in allowed]
        if bad:
            raise SpecError(f"verify: unknown {name[:-1]} {bad[0]!r}; choose from {', '.join(allowed)}")
    if layouts is not None and isinstance(layouts, str):
        raise SpecError(f"verify: layouts={layouts!r} must be a list of (name, vl) pairs")
    if isinstance(storages, str) or not list(storages):
        raise SpecError(f"verify: storages={storages!r} must be a list of names (of {', '.join(STORAGES)}) or None")
    for storage, precision in itertools.product(storages, precisions):
        if storage is not None:
            try:
                check_storage(storage, precision)
            except ValueError as e:
                raise SpecError(f"verify: --storage {storage} with --precision {precision}: {e}") from None


def _check_bound(references: Dict[str, ReferenceRun], arithmetics: Sequence[Tuple[str, Optional[str]]], steps: int,
                 q: int) -> None:
    """NothingVerified where rounding alone may exceed ``max_tolerance`` (``judge``'s module doc)."""
    for (collision, r), (precision, storage) in itertools.product(references.items(), arithmetics):
        tol, most = r.tolerance(precision, steps, q, storage), max_tolerance(precision, storage)
        if not tol <= most:
            where = ""
            if r.worst is not None:
                step, x, y, w = r.worst
                where = (f"; the worst wall site is (x={x}, y={y}) at step {step}, whose rebuilt populations nearly "
                         f"cancel (amplification {w:.3g})")
            raise NothingVerified(
                f"nothing was verified: rounding alone may move {collision} in {precision} precision"
                f"{f' with {storage} storage' if storage else ''} by {tol:.2g} "
                f"relative after {steps} steps on this state, more than {most:g}, so a wrong "
                f"kernel could not be told from a right one{where}; try another --seed, fewer --steps or "
                f"double precision")


def verify(backends: Sequence[str] = VERIFY_BACKENDS, layouts: Sequence[Tuple[str, Optional[int]]] = (),
           collisions: Sequence[str] = ("bgk", "regularized"), precisions: Sequence[str] = ("double",),
           steps: int = 20, shape: Optional[Tuple[int, ...]] = None, strict: bool = False, walls: bool = False,
           seed: int = 0, progress: Optional[Callable[[Row], None]] = None, wall_scheme: Optional[str] = None,
           velocity_set: str = DEFAULT_VELOCITY_SET, on_plan: Optional[Callable[[int], None]] = None,
           storages: Sequence[Optional[str]] = (None,), thermal_walls: bool = False,
           wall_axis: Optional[str] = None) -> Report:
    """Run every planned configuration of a 2D or 3D set and compare it (module doc).
    ``shape``: the lattice, one size per axis of the set (default ``VERIFY_SHAPES``);
    ``wall_scheme`` (2D walls only; default lbgen's); ``thermal_walls``: 3D thermal sets, the thermal
    walls across z, or ``wall_axis`` ('x', 'y'; 2D: ``walls``).  Raises before any kernel is compiled for
    bad arguments (SpecError) and for a case that would verify nothing or that rounding alone
    could fail (NothingVerified).  ``on_plan(total)`` is called once with the number of runs
    planned, before the first; ``progress(row)`` after each run.  ``storages``: the populations'
    storages to check (None: the precision's own; names of lbgen.codegen.storage.STORAGES), each
    with every precision (a storage wider than the arithmetic is refused)."""
    from lbgen.model.velocity_set import velocity_set as get_velocity_set
    name = str(velocity_set).lower()
    D = set_entry(name).D
    if shape is not None and not isinstance(shape, (tuple, list)):
        raise SpecError(f"verify: shape={shape!r} must be a tuple of sizes ({' x '.join('l' + a for a in 'xyz'[:D])})")
    shape = tuple(VERIFY_SHAPES[D] if shape is None else shape)
    if len(shape) != D:
        raise SpecError(f"verify: shape={shape!r} has {len(shape)} sizes; {name} is a {D}D set, so it takes {D} "
                        f"({' x '.join('l' + a for a in 'xyz'[:D])})")
    storages = list(storages)
    check_arguments(backends, layouts, collisions, precisions, steps, shape, seed, storages)
    vs = get_velocity_set(name)
    for collision in collisions:            # an operator the set (or its walls) cannot take: refused in words
        try:
            OPERATOR_RECORDS[collision].check_set(set_entry(name).label, not vs.isothermal)
            OPERATOR_RECORDS[collision].check_walls(walls and D == 2)
        except ValueError as e:
            raise SpecError(f"verify: {e}") from None
    if thermal_walls and D == 2:
        raise SpecError(f"verify: --thermal-walls are the 3D thermal sets' walls across z; {name} is 2D: its thermal "
                        f"walls are --walls")
    if wall_axis is not None and not (thermal_walls and D == 3 and wall_axis in ("x", "y", "z")) and not (
            walls and D == 2 and wall_axis in ("x", "y")):
        raise SpecError(f"verify: wall_axis={wall_axis!r} (--wall-axis) places the thermal walls: x, y or z with "
                        f"--thermal-walls on a 3D thermal set, x or y with --walls on a 2D set")
    if wall_axis == "x" and D == 2 and (wall_scheme or DEFAULT_WALL_SCHEME) != DEFAULT_WALL_SCHEME:
        raise SpecError(f"verify: --wall-scheme {wall_scheme} is the production code's bc, on the walls across y "
                        f"only; the walls across x take lbgen's scheme")
    case = (_case3d(shape, vs, name, collisions, steps, walls, wall_scheme, seed, strict, thermal_walls,
                    None if wall_axis == "z" else wall_axis) if D == 3
            else _case2d(shape, vs, name, collisions, steps, walls, wall_scheme, seed, strict,
                         None if wall_axis == "y" else wall_axis))
    chosen = []
    for layout, vl in (list(layouts) or VERIFY_LAYOUTS):   # refuse bad combinations before compiling anything
        spec = KernelSpec(layout=layout, vl=vl, velocity_set=name, **case.spec_options).validate()
        problem = case.size_problem(spec)
        if problem and layouts:      # a layout asked for that this lattice cannot take: refused
            raise SpecError(f"verify: {layout}{'-vl' + str(vl) if vl else ''} on {' x '.join(map(str, shape))}: "
                            f"{problem}")
        if not problem:
            chosen.append((layout, vl))
    if not chosen:
        raise NothingVerified(f"nothing was verified: no default layout fits {' x '.join(map(str, shape))} "
                              f"({problem}); give --layouts or another lattice")
    names, skipped = available_backends(backends)
    if not names:
        why = "; ".join(f"{b}: {w}" for b, w in skipped.items())
        raise NothingVerified(f"nothing was verified: every backend asked for is unavailable here ({why})")
    order = sorted(names, key=lambda n: n != "c")     # C first: the others are compared with it
    plan = []
    for backend, (layout, vl), collision, precision, storage, path in itertools.product(
            order, chosen, collisions, precisions, storages, case.paths):   # 2D walls: "fused" is fused_walls
        spec = KernelSpec(backend=spec_backend(backend), layout=layout, vl=vl if layout in CLUSTERED else None,
                          precision=precision, collision=collision, velocity_set=name, storage=storage,
                          **case.spec_options)
        try:
            spec = spec.validate()      # the one spec of a storage choice (fp32 of double: 'mixed')
        except SpecError:
            continue     # a combination this backend does not offer (its spec's rules)
        plan.append((backend, layout, spec, path))
    if not plan:
        raise NothingVerified(f"nothing was verified: no backend here ({', '.join(names)}) offers "
                              f"precision {', '.join(precisions)} on {' x '.join(map(str, shape))} with layouts "
                              f"{', '.join(n if v is None else f'{n}-vl{v}' for n, v in (list(layouts) or chosen))}")
    planned = sorted({(s.precision, s.storage) for _, _, s, _ in plan}, key=str)
    # the bound without the wall term (and at the storage's full epsilon) first: a case it already
    # fails is refused before any oracle step
    _check_bound({c: ReferenceRun(None) for c in collisions}, [(p, s) for p, s in planned if s is None], steps, vs.Q)
    references = case.references(collisions)
    weights = np.asarray(vs.weights, dtype=np.float64).reshape((-1,) + (1,) * len(shape))
    for r in references.values():
        r.deviation = max(float(np.abs(f - weights).max() / np.abs(f).max()) for f in (case.start, r.f))
    _check_bound(references, planned, steps, vs.Q)
    report = Report(skipped=skipped, strict=strict, steps=steps, lattice=shape, walls=walls or thermal_walls,
                    wall_scheme=case.spec_options.get("wall_scheme"), velocity_set=name, boundaries=case.boundaries,
                    wall_amplification={c: r.wall_amplification for c, r in references.items()})
    report.planned = len(plan)
    if on_plan:
        on_plan(len(plan))
    runs = ((Row(backend, layout, spec.vl, spec.collision, spec.precision, path, storage=spec.storage,
                 tolerance=references[spec.collision].tolerance(spec.precision, steps, vs.Q, spec.storage)),
             (lambda b=backend, s=spec, p=path: case.run(b, s, p)), references[spec.collision].f)
            for backend, layout, spec, path in plan)
    return judge_runs(report, runs, strict, progress)
