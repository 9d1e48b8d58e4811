"""The kinetic-energy dissipation rate of the 3D Taylor-Green vortex (docs/validation3d.md): the
series ``dissipation.csv`` (t in convective times t_c = L / U0, E = <u.u/2> / U0^2 averaged over
the box, epsilon = -dE/dt in U0^3 / L) and its picture ``dissipation.png`` with the reference
DNS drawn in, computed from series.csv's kinetic-energy column (the backends' diagnostics
reduction, one row every --series-every steps: no populations leave the device for it).

The reference (``tgv_re1600_spectral.csv``, its source in its header) is the 512^3 pseudo-spectral
DNS of the High-Order CFD Workshop's case C3.5 at Re = 1600: its dissipation peak is
epsilon = 0.01286 U0^3 / L at t = 8.97 t_c.  It is drawn and compared only for a run at that
Reynolds number."""
from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import Mapping, Optional, Sequence

import numpy as np

#: the reference series: t (t_c), E (U0^2), epsilon (U0^3 / L)
REFERENCE_CSV = Path(__file__).with_name("tgv_re1600_spectral.csv")
#: the Reynolds number of the reference, and how close a run's must be for the comparison
REFERENCE_RE, RE_TOLERANCE = 1600.0, 1e-3
DISSIPATION_CSV, DISSIPATION_PNG = "dissipation.csv", "dissipation.png"
DISSIPATION_FILES = (DISSIPATION_CSV, DISSIPATION_PNG)
#: the peak is searched from this time on (t_c): a lattice Boltzmann run starts from the
#: equilibrium of the vortex, and its first fraction of t_c (the non-equilibrium part building up,
#: sound waves of the start) dissipates more than the flow does then (0.3 t_c at 16^3)
PEAK_FROM = 1.0


def reference() -> dict:
    """The reference series as float64 arrays {t, E, epsilon}."""
    a = np.loadtxt(REFERENCE_CSV, delimiter=",", comments="#", skiprows=1 + _comment_lines())
    return {"t": a[:, 0], "E": a[:, 1], "epsilon": a[:, 2]}


def _comment_lines() -> int:
    with open(REFERENCE_CSV) as fh:
        return sum(1 for line in fh if line.startswith("#"))


def dissipation_series(series: Mapping[str, np.ndarray], physics: Mapping[str, float], sites: int) -> dict:
    """{t, E, epsilon} of a Taylor-Green run from its series.csv columns (``step``,
    ``kinetic_energy`` = sum of rho |u|^2 / 2 in model units) and its numbers (``U`` in sites/step,
    ``r``, ``t_unit`` = t_c in steps): E = kinetic_energy / (sites (U r)^2), epsilon = -dE/dt by
    second-order differences on the (possibly uneven) sample times."""
    step = np.asarray(series["step"], dtype=np.float64)
    ke = np.asarray(series["kinetic_energy"], dtype=np.float64)
    step, first = np.unique(step, return_index=True)       # a resumed run's rows are unique per step
    ke = ke[first]
    t = step / float(physics["t_unit"])
    E = ke / (sites * (float(physics["U"]) * float(physics["r"])) ** 2)
    eps = -np.gradient(E, t, edge_order=2) if len(t) >= 3 else np.full_like(t, math.nan)
    return {"t": t, "E": E, "epsilon": eps}


def peak(t: np.ndarray, eps: np.ndarray, after: float = 0.0) -> Optional[tuple]:
    """(time, value) of the largest finite epsilon at t >= after, refined by the parabola through it
    and its two neighbours (None without a finite value there)."""
    finite = np.isfinite(eps) & (t >= after)
    if not finite.any():
        return None
    i = int(np.argmax(np.where(finite, eps, -np.inf)))
    if 0 < i < len(t) - 1 and np.isfinite(eps[i - 1:i + 2]).all():
        c = np.polyfit(t[i - 1:i + 2] - t[i], eps[i - 1:i + 2], 2)
        if c[0] < 0:
            dt = -c[1] / (2 * c[0])
            if abs(dt) <= max(t[i + 1] - t[i], t[i] - t[i - 1]):
                return float(t[i] + dt), float(np.polyval(c, dt))
    return float(t[i]), float(eps[i])


def compares(physics: Mapping[str, float]) -> bool:
    """Whether a run's Reynolds number is the reference's (within RE_TOLERANCE)."""
    Re = physics.get("Re")
    return Re is not None and abs(Re / REFERENCE_RE - 1) <= RE_TOLERANCE


def summary(d: Mapping[str, np.ndarray], physics: Mapping[str, float]) -> dict:
    """The manifest's record: the run's dissipation peak and, at Re = 1600, the reference's with the
    deviations (time in t_c, value relative)."""
    out = {"units": "t in t_c = L/U0, epsilon in U0^3/L", "Re": physics.get("Re"), "peak_time": None,
           "peak_epsilon": None, "reference": None, "t_end": float(d["t"][-1]) if len(d["t"]) else 0.0}
    p = peak(d["t"], d["epsilon"], after=PEAK_FROM)
    if p is not None:
        out["peak_time"], out["peak_epsilon"] = p
    if compares(physics):
        ref = reference()
        rt, re_ = peak(ref["t"], ref["epsilon"])
        out["reference"] = {"source": "512^3 pseudo-spectral DNS, HiOCFD case C3.5 (van Rees et al. 2011)",
                            "peak_time": rt, "peak_epsilon": re_}
        if p is not None:
            out["deviation_time"] = p[0] - rt
            out["deviation_epsilon"] = p[1] / re_ - 1
    return out


def summary_line(s: Mapping[str, object]) -> str:
    """The run summary's line: the peak and, at Re = 1600, the reference's and the deviation."""
    ref = s.get("reference")
    if s.get("peak_time") is None:
        line = f"dissipation rate: no peak after t = {PEAK_FROM:g} t_c (run to {s['t_end']:.2f} t_c)"
    else:
        line = (f"dissipation rate peak epsilon = {s['peak_epsilon']:.5g} U0^3/L at t = {s['peak_time']:.3f} t_c "
                f"(run to {s['t_end']:.2f} t_c)")
    if ref:
        line += f"; reference (512^3 spectral DNS, Re = 1600) {ref['peak_epsilon']:.5g} at {ref['peak_time']:.3f} t_c"
        if "deviation_time" in s:
            line += (f": deviation {s['deviation_epsilon']:+.1%} in value, {s['deviation_time']:+.3f} t_c in "
                     "time")
    else:
        line += f"; no reference drawn at Re = {s['Re']:.6g} (the reference data are at Re = {REFERENCE_RE:g})"
    return line


def write_dissipation(run_dir, series: Mapping[str, np.ndarray], physics: Mapping[str, float], sites: int,
                      label: str = "lbgen", dpi: Optional[float] = None) -> dict:
    """dissipation.csv and dissipation.png in ``run_dir``; returns :func:`summary`."""
    run_dir = Path(run_dir)
    d = dissipation_series(series, physics, sites)
    with open(run_dir / DISSIPATION_CSV, "w", newline="") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(("t", "E", "epsilon"))
        for row in zip(d["t"], d["E"], d["epsilon"]):
            w.writerow([repr(float(v)) for v in row])
    s = summary(d, physics)
    figure(d, physics, s, label=label).savefig(run_dir / DISSIPATION_PNG, dpi=dpi or 120)
    return s


def figure(d: Mapping[str, np.ndarray], physics: Mapping[str, float], s: Mapping[str, object],
           label: str = "lbgen", others: Sequence[tuple] = ()):
    """The picture: epsilon(t) and E(t), the reference drawn in at Re = 1600; ``others``: more
    (label, series) pairs drawn beside (benchmarks)."""
    from matplotlib.figure import Figure
    fig = Figure(figsize=(10, 4.2))
    ax_eps, ax_E = fig.subplots(1, 2)
    if s.get("reference"):
        ref = reference()
        ax_eps.plot(ref["t"], ref["epsilon"], "k-", lw=2.2, alpha=0.45, label="spectral DNS 512$^3$ (Re = 1600)")
        ax_E.plot(ref["t"], ref["E"], "k-", lw=2.2, alpha=0.45, label="spectral DNS 512$^3$")
    for name, series in ((label, d), *others):
        ax_eps.plot(series["t"], series["epsilon"], lw=1.2, label=name)
        ax_E.plot(series["t"], series["E"], lw=1.2, label=name)
    if s.get("peak_time") is not None:
        ax_eps.plot([s["peak_time"]], [s["peak_epsilon"]], "o", ms=4, color="C0")
    Re = physics.get("Re")
    ax_eps.set(xlabel=r"$t / t_c$", ylabel=r"$\varepsilon = -dE/dt$  ($U_0^3/L$)",
               title=f"dissipation rate, Re = {Re:.6g}" if Re else "dissipation rate")
    ax_E.set(xlabel=r"$t / t_c$", ylabel=r"$E = \langle u^2/2 \rangle / U_0^2$", title="kinetic energy")
    for ax in (ax_eps, ax_E):
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    return fig
