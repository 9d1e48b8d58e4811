"""`lbgen verify`: every available backend x layout x VL against the NumPy reference.

All runs start from the same random near-equilibrium state (seeded), take N steps with a
force (unfused: halo, propagate[, bc], collide; fused: halo, fused or fused_walls) and are compared with
``lbgen.reference.bulk`` (max |f - f_ref| / max |f_ref|) and with the C backend's result for
the same configuration; in strict mode (no FMA contraction anywhere) C, OpenCL and the CUDA
shim must also be bit-identical.

Tolerance: what rounding can do to *this* computation
--------------------------------------------------------
A kernel and the reference compute the same step in different orders, so they differ by
rounding; the tolerance is a bound on that difference for the case at hand, relative to
max |f_ref| (the magnitude of the populations), built from three sources (``rounding_bound``):

* storage: every step stores each population once in the kernel's precision, a relative
  rounding of at most eps_s (the storage type's machine epsilon) of |f| <= max |f|;
* arithmetic: each step sums Q terms per moment (density, momentum, energy, the Hermite
  projections of the regularized operator) and evaluates the equilibrium from them, an
  error of order Q eps_a max |f| per step (eps_a: the arithmetic type's epsilon);
* the walls: a wall row rebuilds its unknown populations U as N b_i / S, N = sum_U f_i,
  and hands masses between rows (L - N); where the rebuilt populations nearly cancel
  (|sum_U f_i| << sum_U |f_i|) the kernel's form loses the ratio in relative precision,
  an absolute error of eps_a (sum_U |f_i|)^2 / |sum_U f_i| per rebuilt population.
  ``wall_amplification`` measures it, relative to max |f|, at every wall site of the
  reference run after its bc; W is the sum over the steps of each step's worst site.

Errors already made are carried by the following steps, not amplified (a stable LB step
mixes populations with weights of order one), so the bounds add up over the N steps:

    tolerance = C (eps_s N + eps_a (N Q + W)),   C = 8.

C was calibrated: over d2q37, d2v17, d2q9 x periodic, lbgen and reference walls x bgk,
regularized x 4 x 24 and 6 x 96 lattices x 8 seeds x 1..40 steps, in double, single and
mixed precision on the C backend, the largest error seen was 2.8 (eps_s N + eps_a (N Q + W));
C = 8 keeps a margin of ~3 for other backends' summation orders.  (Without the wall term
reference-wall cases reached 1.3e-11 on 6 x 96 in double, and d2v17 1.9e-12 on 4 x 24: a
wall row whose rebuilt populations sum to almost nothing, not a wrong kernel.)  Periodic
double runs of 20 steps get about 1.3e-12 (d2q37), 6.3e-13 (d2v17), 3.5e-13 (d2q9).

A case whose bound exceeds ``MAX_TOLERANCE`` (the comparison could no longer tell a wrong
kernel from rounding, e.g. a wall row whose rebuilt populations sum to zero) is refused
before anything is compiled, naming the step and the site; so is a case with nothing to
run (every backend unavailable, no configuration a backend offers): "nothing was verified".
"""
from __future__ import annotations

import itertools
from dataclasses import asdict, dataclass, field
from typing import Callable, Dict, Iterable, List, Optional, Sequence, Tuple

import numpy as np

from lbgen.reference import VERIFY_LATTICE_2D, bulk as ref
from lbgen.reference import walls as refw
from lbgen.codegen.spec import PRECISIONS, KernelSpec, SpecError
from lbgen.codegen.render import generate
from lbgen.codegen.layouts import CLUSTERED
from lbgen.model.catalog import CHANNEL_WALLS
from lbgen.model.catalog import DEFAULT_VELOCITY_SET
from lbgen.model.operators import OPERATOR_RECORDS
from lbgen.model.catalog import DEFAULT_SCHEME as DEFAULT_WALL_SCHEME
from lbgen.backends import RUNTIMES, runtime, spec_backend
from lbgen.simulation.runner import Walls

#: the safety factor C of the rounding bound (see the module doc: 2.8 measured)
BOUND_FACTOR = 8.0
#: (eps of the stored populations, eps of the arithmetic) per kernel precision
EPSILON = {"double": (float(np.finfo(np.float64).eps),) * 2,
           "single": (float(np.finfo(np.float32).eps),) * 2,
           "mixed": (float(np.finfo(np.float32).eps), float(np.finfo(np.float64).eps))}
#: beyond these bounds a comparison cannot tell a wrong kernel from rounding: refused
MAX_TOLERANCE = {"double": 1e-8, "single": 1e-2, "mixed": 1e-2}
#: every runtime ("cuda-shim" runs the CUDA source on the CPU with g++ and a host shim)
VERIFY_BACKENDS = tuple(RUNTIMES)
#: each operator at its record's default parameters
PARAMS = {name: op.defaults() for name, op in OPERATOR_RECORDS.items()}
#: the layouts checked when none are given (2D and 3D)
DEFAULT_LAYOUTS = (("aos", None), ("soa", None), ("csoa", 8), ("caosoa", 8), ("caosoa", 32))
FORCE = (1e-4, -2e-4)
WALLS = dict(T_bottom=1.02, T_top=0.98, adiabatic=(False, True))
#: isothermal sets (D2Q9): walls take no temperature
ISOTHERMAL_WALLS = dict(T_bottom=1.0, T_top=1.0, adiabatic=(False, False))


class NothingVerified(ValueError):
    """verify was asked for a case that runs nothing, or one it cannot judge (an error, never OK
    nor MISMATCH); a ValueError, so the CLI reports it as a usage error (exit status 2)."""


@dataclass
class Row:
    backend: str
    layout: str
    vl: Optional[int]
    collision: str
    precision: str
    path: str
    error: Optional[float] = None        # vs reference
    vs_c: Optional[float] = None         # vs the C backend, same configuration
    ok: bool = False
    note: str = ""
    tolerance: Optional[float] = None    # the rounding bound of this run (module doc)


@dataclass
class Report:
    rows: List[Row] = field(default_factory=list)
    skipped: Dict[str, str] = field(default_factory=dict)
    strict: bool = False
    steps: int = 0
    lattice: Tuple[int, ...] = (0, 0)
    walls: bool = False
    #: 3D: the boundaries of the runs in words ("" for a periodic box or 2D)
    boundaries: str = ""
    velocity_set: str = DEFAULT_VELOCITY_SET
    wall_scheme: str = DEFAULT_WALL_SCHEME
    #: per collision: W, the reference run's summed wall amplification (module doc)
    wall_amplification: Dict[str, float] = field(default_factory=dict)
    #: runs planned (the progress total); rows holds those done
    planned: int = 0

    @property
    def ok(self) -> bool:
        return bool(self.rows) and all(r.ok for r in self.rows)

    def to_json(self) -> dict:
        return {"ok": self.ok, "strict": self.strict, "steps": self.steps, "lattice": list(self.lattice),
                "walls": self.walls, "wall_scheme": self.wall_scheme, "velocity_set": self.velocity_set,
                "boundaries": self.boundaries,
                "skipped": self.skipped, "runs": len(self.rows), "planned": self.planned,
                "rows": [asdict(r) for r in self.rows],
                "tolerance": {"bound": "C (eps_s N + eps_a (N Q + W)) relative to max |f_ref|",
                              "C": BOUND_FACTOR, "eps": {p: list(e) for p, e in EPSILON.items()},
                              "W": dict(self.wall_amplification), "max": dict(MAX_TOLERANCE)}}

    def table(self) -> str:
        head = (f"{'backend':<10}{'layout':<13}{'collision':<13}{'precision':<10}{'path':<9}{'vs reference':>14}"
                f"{'tolerance':>11}{'vs c':>12}  status")
        lines = [head, "-" * len(head)]
        for r in self.rows:
            tag = f"{r.layout}-vl{r.vl}" if r.vl else r.layout
            err = "-" if r.error is None else f"{r.error:.2e}"
            tol = "-" if r.tolerance is None else f"{r.tolerance:.1e}"
            vsc = "-" if r.vs_c is None else ("0 (bitwise)" if r.vs_c == 0 else f"{r.vs_c:.2e}")
            lines.append(f"{r.backend:<10}{tag:<13}{r.collision:<13}{r.precision:<10}{r.path:<9}{err:>14}{tol:>11}"
                         f"{vsc:>12}  {'ok' if r.ok else 'MISMATCH'}{('  ' + r.note) if r.note else ''}")
        for b, why in self.skipped.items():
            lines.append(f"skipped {b}: {why}")
        verdict = ("nothing was verified" if not self.rows else
                   "all kernels agree" if self.ok else "MISMATCH: some kernels disagree")
        walls = (f", {self.boundaries}" if self.boundaries else
                 f", walls ({self.wall_scheme} scheme)" if self.walls else "")
        lines.append(f"{verdict} ({len(self.rows)} of {self.planned or len(self.rows)} runs, {self.velocity_set}, "
                     f"{self.steps} steps on {' x '.join(map(str, self.lattice))}{walls}"
                     f"{', strict' if self.strict else ''})")
        return "\n".join(lines)


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


def initial_state(lx: int, ly: int, seed: int = 0, vs=None) -> np.ndarray:
    rng = np.random.default_rng(seed)
    shape = (lx, ly)
    f = ref.equilibrium(1 + 0.05 * rng.standard_normal(shape), 0.05 * rng.standard_normal(shape),
                        0.05 * rng.standard_normal(shape), 1 + 0.05 * rng.standard_normal(shape), vs=vs)
    return f * (1 + 1e-3 * rng.standard_normal(f.shape))


def wall_settings(vs) -> dict:
    return ISOTHERMAL_WALLS if vs is not None and vs.isothermal else WALLS


def wall_amplification(g: np.ndarray, vs) -> Tuple[float, int, int]:
    """(w, x, y): the worst wall site of the state `g` just after the bc, w = max over the wall
    rows' sites of (sum_U |g_i|)^2 / (|sum_U g_i| max |g|), U the row's rebuilt populations
    (module doc); inf where they sum to exactly zero."""
    H, ly = vs.max_hop, g.shape[2]
    scale = float(np.abs(g).max())
    worst = (0.0, 0, 0)
    for side in CHANNEL_WALLS:
        for j in range(H):
            y = j if side == "bottom" else ly - 1 - j
            unknown, _ = refw._wall_sets(vs, side, j)
            if not unknown:
                continue
            rebuilt = g[unknown, :, y]
            total = np.abs(rebuilt).sum(0)
            with np.errstate(divide="ignore", invalid="ignore"):
                w = np.where(total > 0, total * total / (np.abs(rebuilt.sum(0)) * scale), 0.0)
            x = int(np.argmax(w))
            if w[x] > worst[0] or np.isnan(w[x]):
                worst = (float(w[x]) if not np.isnan(w[x]) else float("inf"), x, y)
    return worst


@dataclass
class ReferenceRun:
    """The reference result and what rounding can do to a kernel computing it."""
    f: np.ndarray
    #: W: the sum over the steps of each step's worst wall amplification (0 without walls)
    wall_amplification: float = 0.0
    #: (step, x, y, w) of the worst wall site of the run, or None
    worst: Optional[Tuple[int, int, int, float]] = None

    def tolerance(self, precision: str, steps: int, q: int) -> float:
        return rounding_bound(precision, steps, q, self.wall_amplification)


def rounding_bound(precision: str, steps: int, q: int, wall_amplification: float = 0.0) -> float:
    """C (eps_s N + eps_a (N Q + W)): the largest relative difference rounding can make between
    a kernel and the reference after N steps (module doc)."""
    eps_s, eps_a = EPSILON[precision]
    return BOUND_FACTOR * (eps_s * steps + eps_a * (steps * q + wall_amplification))


def reference_run(f0: np.ndarray, collision: str, steps: int, walls: bool,
                  wall_scheme: str = DEFAULT_WALL_SCHEME, vs=None) -> np.ndarray:
    return reference_trajectory(f0, collision, steps, walls, wall_scheme, vs).f


def reference_trajectory(f0: np.ndarray, collision: str, steps: int, walls: bool,
                         wall_scheme: str = DEFAULT_WALL_SCHEME, vs=None) -> ReferenceRun:
    """The reference run, and with walls its wall amplification W (the bc state of every step,
    from the oracle's own ``apply_walls``)."""
    f = f0.copy()
    settings = wall_settings(vs)
    total, worst = 0.0, None
    for step in range(steps):
        if walls:
            g = refw.apply_walls(ref.propagate(f, vs), f, settings["T_bottom"], settings["T_top"],
                                 settings["adiabatic"], FORCE, vs, wall_scheme)
            w, x, y = wall_amplification(g, vs)
            total += w
            if worst is None or w > worst[3]:
                worst = (step + 1, x, y, w)
            f = refw.step_walls(f, collision, scheme=wall_scheme, force=FORCE, vs=vs, **settings,
                                **PARAMS[collision])
        else:
            f = ref.step(f, collision, force=FORCE, vs=vs, **PARAMS[collision])
    return ReferenceRun(f, total, worst)


def run_program(prog, f0: np.ndarray, steps: int, path: str, collision: str, walls: bool) -> np.ndarray:
    from lbgen.model.velocity_set import velocity_set
    wall = wall_settings(velocity_set(prog.spec.velocity_set))
    params = dict(PARAMS[collision], ax=FORCE[0], ay=FORCE[1])
    wall_spec = Walls(wall["T_bottom"], wall["T_top"], *wall["adiabatic"]) if walls else None
    a = prog.upload_fields(f0)
    b = prog.allocate()
    for _ in range(steps):
        prog.halo(a)
        a, b = prog.step(a, b, params, wall_spec, fused=path == "fused")
    prog.synchronize()
    return prog.download_fields(a)


def check_arguments(backends, layouts, collisions, precisions, steps, lx, ly, seed) -> None:
    """Everything verify is given, refused naming the value before any work."""
    for name, value, low in (("steps", steps, 1), ("lx", lx, 1), ("ly", ly, 1), ("seed", seed, 0)):
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


def verify(backends: Sequence[str] = VERIFY_BACKENDS, layouts: Sequence[Tuple[str, Optional[int]]] = (),
           collisions: Sequence[str] = ("bgk", "regularized"), precisions: Sequence[str] = ("double",),
           steps: int = 20, lx: int = VERIFY_LATTICE_2D[0], ly: int = VERIFY_LATTICE_2D[1], strict: bool = False,
           walls: bool = False,
           seed: int = 0, progress: Optional[Callable[[Row], None]] = None, wall_scheme: str = DEFAULT_WALL_SCHEME,
           velocity_set: str = DEFAULT_VELOCITY_SET, on_plan: Optional[Callable[[int], None]] = None) -> Report:
    """Run every planned configuration and compare it (module doc).  Raises before any kernel
    is compiled for bad arguments (SpecError) and for a case that would verify nothing or
    that rounding alone could fail (NothingVerified).  ``on_plan(total)`` is called once with
    the number of runs planned, before the first; ``progress(row)`` after each run."""
    from lbgen.model.velocity_set import velocity_set as get_velocity_set
    check_arguments(backends, layouts, collisions, precisions, steps, lx, ly, seed)
    names, skipped = available_backends(backends)
    layouts = list(layouts) or list(DEFAULT_LAYOUTS)
    for name, vl in layouts:   # refuse bad combinations before compiling anything
        KernelSpec(layout=name, vl=vl, walls=walls, wall_scheme=wall_scheme, velocity_set=velocity_set).validate(lx, ly)
    if not names:
        why = "; ".join(f"{b}: {w}" for b, w in skipped.items())
        raise NothingVerified(f"nothing was verified: every backend asked for is unavailable here ({why})")
    vs = get_velocity_set(velocity_set)
    report = Report(skipped=skipped, strict=strict, steps=steps, lattice=(lx, ly), walls=walls,
                    wall_scheme=wall_scheme, velocity_set=velocity_set)
    paths = ("unfused", "fused")        # with walls "fused" is the fused_walls kernel
    order = sorted(names, key=lambda n: n != "c")     # C first: the others are compared with it
    plan = []
    for backend, (layout, vl), collision, precision, path in itertools.product(
            order, layouts, collisions, precisions, paths):
        spec = KernelSpec(backend=spec_backend(backend), layout=layout, vl=vl if layout in CLUSTERED else None,
                          precision=precision, collision=collision, walls=walls, wall_scheme=wall_scheme,
                          velocity_set=velocity_set)
        try:
            spec.validate()
        except SpecError:
            continue     # a combination this backend does not offer (e.g. mixed precision off the C backend)
        plan.append((backend, layout, spec, path))
    if not plan:
        raise NothingVerified(f"nothing was verified: no backend here ({', '.join(names)}) offers "
                              f"precision {', '.join(precisions)} with layouts "
                              f"{', '.join(n if v is None else f'{n}-vl{v}' for n, v in layouts)}")
    f0 = initial_state(lx, ly, seed, vs)
    references = {c: reference_trajectory(f0, c, steps, walls, wall_scheme, vs) for c in collisions}
    report.wall_amplification = {c: r.wall_amplification for c, r in references.items()}
    for collision, precision in itertools.product(collisions, sorted({s.precision for _, _, s, _ in plan})):
        r = references[collision]
        tol = r.tolerance(precision, steps, vs.Q)
        if not tol <= MAX_TOLERANCE[precision]:
            where = ""
            if r.worst is not None:
                step, x, y, w = r.worst
                where = (f"; the worst wall site is (x={x}, y={y}) at step {step}, whose rebuilt populations nearly "
                         f"cancel (amplification {w:.3g})")
            raise NothingVerified(
                f"nothing was verified: rounding alone may move {collision} in {precision} precision by {tol:.2g} "
                f"relative after {steps} steps on this state, more than {MAX_TOLERANCE[precision]:g}, so a wrong "
                f"kernel could not be told from a right one{where}; try another --seed, fewer --steps or "
                f"double precision")
    report.planned = len(plan)
    if on_plan:
        on_plan(len(plan))

    def runs():
        for backend, layout, spec, path in plan:
            reference = references[spec.collision]
            row = Row(backend, layout, spec.vl, spec.collision, spec.precision, path,
                      tolerance=reference.tolerance(spec.precision, steps, vs.Q))
            yield row, (lambda b=backend, s=spec, p=path: run_program(
                runtime(b).compile(generate(s), lx, ly, strict=strict), f0, steps, p, s.collision, walls)), reference.f
    return judge_runs(report, runs(), strict, progress)


def judge_runs(report: Report, runs: Iterable[Tuple[Row, Callable[[], np.ndarray], np.ndarray]], strict: bool,
               progress: Optional[Callable[[Row], None]] = None) -> Report:
    """Each (row, run, expected) of ``runs`` in turn: ``run()`` gives the kernel's populations
    (an exception becomes the row's note, never a crash of the whole table), judged against
    ``expected`` within ``row.tolerance`` (relative to max |expected|) and against the C
    backend's result of the same configuration (bit for bit when ``strict``); the rows are
    appended to the report, ``progress(row)`` after each."""
    results: Dict[tuple, np.ndarray] = {}
    for row, run, expected in runs:
        try:
            got = run()
        except Exception as e:  # noqa: BLE001 - report, don't crash the whole table
            row.note = f"{type(e).__name__}: {str(e).splitlines()[0][:120]}"
        else:
            scale = np.abs(expected).max()
            row.error = float(np.abs(got - expected).max() / scale) if np.isfinite(got).all() else float("inf")
            key = (row.layout, row.vl, row.collision, row.precision, row.path)
            results[(row.backend,) + key] = got
            row.ok = bool(row.error <= row.tolerance)
            if row.backend != "c" and ("c",) + key in results:
                diff = np.abs(got - results[("c",) + key]).max() / scale
                row.vs_c = float(diff)
                if strict:
                    row.ok = bool(row.ok and diff == 0)
                    if diff != 0:
                        row.note = "strict builds must be bit-identical to C"
                else:
                    row.ok = bool(row.ok and diff <= row.tolerance)
        report.rows.append(row)
        if progress:
            progress(row)
    return report
