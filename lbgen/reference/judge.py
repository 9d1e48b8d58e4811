"""How `lbgen verify` judges a kernel's run: the rounding bound, the rows, the report.

Tolerance: what rounding can do to *this* computation
--------------------------------------------------------
A kernel and the reference compute the same step in different orders, so they differ by
rounding; the tolerance is a bound on that difference for the case at hand, relative to
max |f_ref| (the magnitude of the populations), built from three sources (``rounding_bound``):

* storage: every step stores each population once in the kernel's precision, a relative
  rounding of at most eps_s (the storage type's machine epsilon) of |f| <= max |f|; a storage
  apart from the arithmetic (``--storage``, lbgen.codegen.storage) that keeps f - w_p rounds
  relative to |f - w_p|, so eps_s is its format's epsilon times the reference run's deviation
  D = max |f - w_p| / max |f| (the larger of the start and the end);
* arithmetic: each step sums Q terms per moment (density, momentum, energy, the Hermite
  projections of the regularized operator) and evaluates the equilibrium from them, an
  error of order Q eps_a max |f| per step (eps_a: the arithmetic type's epsilon);
* the 2D thermal walls: a wall row rebuilds its unknown populations U as N b_i / S, N = sum_U f_i,
  and hands masses between rows (L - N); where the rebuilt populations nearly cancel
  (|sum_U f_i| << sum_U |f_i|) the kernel's form loses the ratio in relative precision,
  an absolute error of eps_a (sum_U |f_i|)^2 / |sum_U f_i| per rebuilt population.
  ``verify.wall_amplification`` measures it, relative to max |f|, at every wall site of the
  reference run after its bc; W is the sum over the steps of each step's worst site.  The 3D
  boundaries (half-way bounce-back, lids, voxel masks) rebuild nothing: W = 0.

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

from dataclasses import asdict, dataclass, field
from typing import Callable, Dict, Iterable, List, Optional, Tuple

import numpy as np

from lbgen.codegen.storage import STORAGES, is_shifted
from lbgen.model.catalog import DEFAULT_SCHEME as DEFAULT_WALL_SCHEME
from lbgen.model.catalog import DEFAULT_VELOCITY_SET

#: the safety factor C of the rounding bound (see the module doc: 2.8 measured)
BOUND_FACTOR = 8.0
#: (eps of the stored populations, eps of the arithmetic) per kernel precision
EPSILON = {"double": (float(np.finfo(np.float64).eps),) * 2,
           "single": (float(np.finfo(np.float32).eps),) * 2,
           "mixed": (float(np.finfo(np.float32).eps), float(np.finfo(np.float64).eps))}
#: beyond these bounds a comparison cannot tell a wrong kernel from rounding: refused
MAX_TOLERANCE = {"double": 1e-8, "single": 1e-2, "mixed": 1e-2}
#: the same for the 16-bit storages (a wrong conversion -- a lost shift or scale -- errs by O(1))
MAX_TOLERANCE_STORAGE = {"fp16s": 5e-2, "fp16c": 5e-2}


def max_tolerance(precision: str, storage: Optional[str] = None) -> float:
    return MAX_TOLERANCE_STORAGE.get(storage or "", MAX_TOLERANCE[precision])


def storage_epsilon(precision: str, storage: Optional[str] = None, deviation: float = 1.0) -> float:
    """eps_s of the module doc: the precision's own storage, or a storage apart from it."""
    if storage is None:
        return EPSILON[precision][0]
    return STORAGES[storage].eps * (deviation if is_shifted(precision, storage) else 1.0)


class NothingVerified(ValueError):
    """verify was asked for a case that runs nothing, or one it cannot judge (an error, never OK
    nor MISMATCH); a ValueError, so the CLI reports it as a usage error (exit status 2)."""


def rounding_bound(precision: str, steps: int, q: int, wall_amplification: float = 0.0,
                   storage: Optional[str] = None, deviation: float = 1.0) -> float:
    """C (eps_s N + eps_a (N Q + W)): the largest relative difference rounding can make between
    a kernel and the reference after N steps (module doc)."""
    eps_a = EPSILON[precision][1]
    eps_s = storage_epsilon(precision, storage, deviation)
    return BOUND_FACTOR * (eps_s * steps + eps_a * (steps * q + wall_amplification))


@dataclass
class ReferenceRun:
    """The reference result and what rounding can do to a kernel computing it."""
    f: np.ndarray
    #: W: the sum over the steps of each step's worst wall amplification (0 without 2D walls)
    wall_amplification: float = 0.0
    #: (step, x, y, w) of the worst wall site of the run, or None
    worst: Optional[Tuple[int, int, int, float]] = None
    #: D: max |f - w_p| / max |f| of the run (start and end), for shifted storages (module doc)
    deviation: float = 1.0

    def tolerance(self, precision: str, steps: int, q: int, storage: Optional[str] = None) -> float:
        return rounding_bound(precision, steps, q, self.wall_amplification, storage, self.deviation)


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
    storage: Optional[str] = None        # a storage apart from the precision's own (--storage), or None

    @property
    def arithmetic(self) -> str:
        """The precision column: 'double', or 'double/fp16s' with a storage apart from it."""
        return self.precision if self.storage is None else f"{self.precision}/{self.storage}"


@dataclass
class Report:
    rows: List[Row] = field(default_factory=list)
    skipped: Dict[str, str] = field(default_factory=dict)
    strict: bool = False
    steps: int = 0
    lattice: Tuple[int, ...] = (0, 0)
    walls: bool = False
    #: the boundaries of the runs in words ("" for a periodic lattice)
    boundaries: str = ""
    velocity_set: str = DEFAULT_VELOCITY_SET
    #: the 2D thermal walls' scheme (None in 3D, whose walls are bounce-back)
    wall_scheme: Optional[str] = DEFAULT_WALL_SCHEME
    #: per collision: W, the reference run's summed wall amplification (module doc)
    wall_amplification: Dict[str, float] = field(default_factory=dict)
    #: runs planned (the progress total); rows holds those done
    planned: int = 0

    @property
    def ok(self) -> bool:
        return bool(self.rows) and all(r.ok for r in self.rows)

    def to_json(self) -> dict:
        return {"ok": self.ok, "strict": self.strict, "steps": self.steps, "lattice": list(self.lattice),
                "dimension": len(self.lattice),
                "walls": self.walls, "wall_scheme": self.wall_scheme, "velocity_set": self.velocity_set,
                "boundaries": self.boundaries,
                "skipped": self.skipped, "runs": len(self.rows), "planned": self.planned,
                "rows": [asdict(r) for r in self.rows],
                "tolerance": {"bound": "C (eps_s N + eps_a (N Q + W)) relative to max |f_ref|",
                              "C": BOUND_FACTOR, "eps": {p: list(e) for p, e in EPSILON.items()},
                              "eps_storage": {n: f.eps for n, f in STORAGES.items()},
                              "W": dict(self.wall_amplification),
                              "max": dict(MAX_TOLERANCE, **MAX_TOLERANCE_STORAGE)}}

    def table(self) -> str:
        wc = max([13] + [len(r.collision) + 2 for r in self.rows])     # regularized-les is 15 characters
        wp = max([11] + [len(r.arithmetic) + 2 for r in self.rows])     # double/fp16s is 12 characters
        head = (f"{'backend':<10}{'layout':<13}{'collision':<{wc}}{'precision':<{wp}}{'path':<9}{'vs reference':>14}"
                f"{'tolerance':>11}{'vs c':>12}  status")
        lines = [head, "-" * len(head)]
        for r in self.rows:
            tag = f"{r.layout}-vl{r.vl}" if r.vl else r.layout
            err = "-" if r.error is None else f"{r.error:.2e}"
            tol = "-" if r.tolerance is None else f"{r.tolerance:.1e}"
            vsc = "-" if r.vs_c is None else ("0 (bitwise)" if r.vs_c == 0 else f"{r.vs_c:.2e}")
            lines.append(f"{r.backend:<10}{tag:<13}{r.collision:<{wc}}{r.arithmetic:<{wp}}{r.path:<9}{err:>14}{tol:>11}"
                         f"{vsc:>12}  {'ok' if r.ok else 'MISMATCH'}{('  ' + r.note) if r.note else ''}")
        for b, why in self.skipped.items():
            lines.append(f"skipped {b}: {why}")
        verdict = ("nothing was verified" if not self.rows else
                   "all kernels agree" if self.ok else "MISMATCH: some kernels disagree")
        walls = f", {self.boundaries}" if self.boundaries else ""
        lines.append(f"{verdict} ({len(self.rows)} of {self.planned or len(self.rows)} runs, {self.velocity_set}, "
                     f"{self.steps} steps on {' x '.join(map(str, self.lattice))}{walls}"
                     f"{', strict' if self.strict else ''})")
        return "\n".join(lines)


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
            key = (row.layout, row.vl, row.collision, row.precision, row.storage, row.path)
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
