"""`lbgen verify`: every available backend x layout x VL against the NumPy reference.

All runs start from the same random near-equilibrium state (seeded), take N steps with a
force (unfused: halo, propagate[, bc], collide; fused: halo, fused or fused_walls) and are compared with
``lbgen.reference.bulk`` (max |f - f_ref| / max |f_ref|) and with the C backend's result for
the same configuration.  Tolerances: 1e-12 (double) and 1e-5 (single) against the
reference; across backends the same, or exact equality in strict mode (no FMA
contraction anywhere), where C, OpenCL and the CUDA shim are bit-identical.
"""
from __future__ import annotations

import itertools
from dataclasses import asdict, dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from lbgen.reference import bulk as ref
from lbgen.reference import walls as refw
from lbgen.codegen.spec import KernelSpec, SpecError
from lbgen.codegen.render import generate
from lbgen.codegen.layouts import CLUSTERED
from lbgen.model.catalog import DEFAULT_VELOCITY_SET
from lbgen.model.operators import OPERATOR_RECORDS
from lbgen.model.catalog import DEFAULT_SCHEME as DEFAULT_WALL_SCHEME
from lbgen.backends import RUNTIMES, runtime, spec_backend
from lbgen.simulation.runner import Walls

#: mixed (float storage, double arithmetic, C only): one float rounding per step, ~6e-8 after 20
TOLERANCE = {"double": 1e-12, "single": 1e-5, "mixed": 1e-6}
#: every runtime ("cuda-shim" runs the CUDA source on the CPU with g++ and a host shim)
VERIFY_BACKENDS = tuple(RUNTIMES)
#: each operator at its record's default parameters
PARAMS = {name: op.defaults() for name, op in OPERATOR_RECORDS.items()}
FORCE = (1e-4, -2e-4)
WALLS = dict(T_bottom=1.02, T_top=0.98, adiabatic=(False, True))
#: isothermal sets (D2Q9): walls take no temperature
ISOTHERMAL_WALLS = dict(T_bottom=1.0, T_top=1.0, adiabatic=(False, False))


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


@dataclass
class Report:
    rows: List[Row] = field(default_factory=list)
    skipped: Dict[str, str] = field(default_factory=dict)
    strict: bool = False
    steps: int = 0
    lattice: Tuple[int, int] = (0, 0)
    walls: bool = False
    velocity_set: str = DEFAULT_VELOCITY_SET
    wall_scheme: str = DEFAULT_WALL_SCHEME

    @property
    def ok(self) -> bool:
        return bool(self.rows) and all(r.ok for r in self.rows)

    def to_json(self) -> dict:
        return {"ok": self.ok, "strict": self.strict, "steps": self.steps, "lattice": list(self.lattice),
                "walls": self.walls, "wall_scheme": self.wall_scheme, "velocity_set": self.velocity_set,
                "skipped": self.skipped, "rows": [asdict(r) for r in self.rows],
                "tolerance": TOLERANCE}

    def table(self) -> str:
        head = f"{'backend':<10}{'layout':<13}{'collision':<13}{'precision':<10}{'path':<9}{'vs reference':>14}{'vs c':>12}  status"
        lines = [head, "-" * len(head)]
        for r in self.rows:
            tag = f"{r.layout}-vl{r.vl}" if r.vl else r.layout
            err = "-" if r.error is None else f"{r.error:.2e}"
            vsc = "-" if r.vs_c is None else ("0 (bitwise)" if r.vs_c == 0 else f"{r.vs_c:.2e}")
            lines.append(f"{r.backend:<10}{tag:<13}{r.collision:<13}{r.precision:<10}{r.path:<9}{err:>14}{vsc:>12}  "
                         f"{'ok' if r.ok else 'MISMATCH'}{('  ' + r.note) if r.note else ''}")
        for b, why in self.skipped.items():
            lines.append(f"skipped {b}: {why}")
        lines.append(f"{'all kernels agree' if self.ok else 'MISMATCH: some kernels disagree'} "
                     f"({len(self.rows)} runs, {self.velocity_set}, {self.steps} steps on "
                     f"{self.lattice[0]} x {self.lattice[1]}"
                     f"{f', walls ({self.wall_scheme} scheme)' if self.walls else ''}{', strict' if self.strict else ''})")
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


def reference_run(f0: np.ndarray, collision: str, steps: int, walls: bool,
                  wall_scheme: str = DEFAULT_WALL_SCHEME, vs=None) -> np.ndarray:
    f = f0.copy()
    for _ in range(steps):
        if walls:
            f = refw.step_walls(f, collision, scheme=wall_scheme, force=FORCE, vs=vs, **wall_settings(vs),
                               **PARAMS[collision])
        else:
            f = ref.step(f, collision, force=FORCE, vs=vs, **PARAMS[collision])
    return f


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


def verify(backends: Sequence[str] = VERIFY_BACKENDS, layouts: Sequence[Tuple[str, Optional[int]]] = (),
           collisions: Sequence[str] = ("bgk", "regularized"), precisions: Sequence[str] = ("double",),
           steps: int = 20, lx: int = 6, ly: int = 96, strict: bool = False, walls: bool = False,
           seed: int = 0, progress=None, wall_scheme: str = DEFAULT_WALL_SCHEME,
           velocity_set: str = DEFAULT_VELOCITY_SET) -> Report:
    from lbgen.model.velocity_set import velocity_set as get_velocity_set
    names, skipped = available_backends(backends)
    layouts = list(layouts) or [("aos", None), ("soa", None), ("csoa", 8), ("caosoa", 8), ("caosoa", 32)]
    for name, vl in layouts:   # refuse bad combinations before compiling anything
        KernelSpec(layout=name, vl=vl, walls=walls, wall_scheme=wall_scheme, velocity_set=velocity_set).validate(lx, ly)
    vs = get_velocity_set(velocity_set)
    report = Report(skipped=skipped, strict=strict, steps=steps, lattice=(lx, ly), walls=walls,
                    wall_scheme=wall_scheme, velocity_set=velocity_set)
    f0 = initial_state(lx, ly, seed, vs)
    references = {c: reference_run(f0, c, steps, walls, wall_scheme, vs) for c in collisions}
    paths = ("unfused", "fused")        # with walls "fused" is the fused_walls kernel
    results: Dict[tuple, np.ndarray] = {}
    order = sorted(names, key=lambda n: n != "c")     # C first: the others are compared with it
    combos = list(itertools.product(order, layouts, collisions, precisions, paths))
    for backend, (layout, vl), collision, precision, path in combos:
        row = Row(backend, layout, vl if layout in CLUSTERED else None, collision, precision, path)
        spec = KernelSpec(backend=spec_backend(backend), layout=layout, vl=row.vl, precision=precision,
                          collision=collision, walls=walls, wall_scheme=wall_scheme, velocity_set=velocity_set)
        try:
            spec.validate()
        except SpecError:
            continue     # a combination this backend does not offer (e.g. mixed precision off the C backend)
        try:
            source = generate(spec)
            prog = runtime(backend).compile(source, lx, ly, strict=strict)
            got = run_program(prog, f0, steps, path, collision, walls)
        except Exception as e:  # noqa: BLE001 - report, don't crash the whole table
            row.note = f"{type(e).__name__}: {str(e).splitlines()[0][:120]}"
            report.rows.append(row)
            continue
        expected = references[collision]
        scale = np.abs(expected).max()
        row.error = float(np.abs(got - expected).max() / scale) if np.isfinite(got).all() else float("inf")
        key = (layout, row.vl, collision, precision, path)
        results[(backend,) + key] = got
        tol = TOLERANCE[precision]
        row.ok = bool(row.error <= tol)
        if backend != "c" and ("c",) + key in results:
            diff = np.abs(got - results[("c",) + key]).max() / scale
            row.vs_c = float(diff)
            if strict:
                row.ok = bool(row.ok and diff == 0)
                if diff != 0:
                    row.note = "strict builds must be bit-identical to C"
            else:
                row.ok = bool(row.ok and diff <= tol)
        report.rows.append(row)
        if progress:
            progress(row)
    return report
