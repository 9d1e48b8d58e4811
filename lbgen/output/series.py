"""The time series of a run: series.csv (one row every K steps) and series.png."""
from __future__ import annotations

import csv
import io
import math
import os
from pathlib import Path
from typing import Any, Optional, Union

import numpy as np

from lbgen.system.cache import atomic_write
from lbgen.codegen.diagnostics import SCALARS, SCALARS3D

PathLike = Union[str, os.PathLike]

#: columns of series.csv
SERIES_COLUMNS = ("step", "time") + SCALARS
#: the columns a run with a body adds (the force on it by momentum exchange, model units)
FORCE_COLUMNS = ("force_x", "force_y", "force_z")
#: and a flow around a body (lbgen.run.flows) its drag and lift coefficients 2 F / (rho U^2 A)
COEFFICIENT_COLUMNS = ("c_d", "c_l")
#: the columns a rayleigh-benard run adds: the Nusselt numbers (lbgen.model.convection.nusselt)
NUSSELT_COLUMNS = ("Nu_bottom", "Nu_top", "Nu_bulk")
#: columns of a 3D run's series.csv (lbgen.codegen.diagnostics.scalars3d)
SERIES_COLUMNS3D = ("step", "time") + SCALARS3D
SERIES_CSV, SERIES_PNG = "series.csv", "series.png"
#: the default series has about this many samples per run ...
SERIES_SAMPLES = 200
#: ... and at most one every this many steps: a row reads every population once (the
#: diagnostics kernel costs about 0.7 of a step), so a row every step would cost a short
#: run's loop 40% of its speed; with this floor the series costs at most about 7% of it
SERIES_MIN_EVERY = 10


def default_series_every(steps: int, time_block: int = 1) -> int:
    """K of ``--series-every`` when not given: about SERIES_SAMPLES samples, at most one
    every SERIES_MIN_EVERY steps (the last step always has a row), rounded up to a multiple
    of the time block (steps per sweep)."""
    k = max(SERIES_MIN_EVERY, int(steps) // SERIES_SAMPLES)
    block = max(1, int(time_block))
    return -(-k // block) * block


def series_steps(steps: int, every: int, start: int = 0) -> list:
    """The steps a run from *start* to *steps* samples: multiples of *every*, and the last step."""
    out = [s for s in range(start, steps + 1) if s % every == 0]
    if not out or out[-1] != steps:
        out.append(steps)
    return out


def read_series(path: PathLike) -> dict:
    """Columns of a series.csv as float64 arrays (empty arrays when there are no rows)."""
    path = Path(path)
    cols: dict[str, list] = {n: [] for n in SERIES_COLUMNS}
    if path.is_file():
        with open(path, newline="") as fh:
            reader = csv.DictReader(fh)
            names = reader.fieldnames or list(SERIES_COLUMNS)
            cols = {n: [] for n in names}
            for row in reader:
                for n in names:
                    v = row.get(n)
                    cols[n].append(float(v) if v not in (None, "") else math.nan)
    return {n: np.asarray(v, dtype=np.float64) for n, v in cols.items()}


def fmt(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)):
        return str(int(v))
    return repr(float(v))


def append_row(path: Path, step: int, time: Optional[float], diag: dict, columns=SERIES_COLUMNS) -> None:
    """Append one row of ``columns`` (SERIES_COLUMNS; 3D: SERIES_COLUMNS3D); the header is
    written when the file is new or empty."""
    new = not path.is_file() or path.stat().st_size == 0
    row = [fmt(step), fmt(time)] + [fmt(diag.get(c)) for c in columns[2:]]
    with open(path, "a", newline="") as fh:
        w = csv.writer(fh, lineterminator="\n")
        if new:
            w.writerow(columns)
        w.writerow(row)


def truncate(path: Path, after_step: int) -> int:
    """Drop rows with step > *after_step* (resuming from a checkpoint); returns rows dropped."""
    if not path.is_file():
        return 0
    with open(path, newline="") as fh:
        rows = list(csv.reader(fh))
    if not rows:
        return 0
    header, body = rows[0], rows[1:]
    keep = [r for r in body if r and float(r[0]) <= after_step]
    dropped = sum(1 for r in body if r) - len(keep)
    if dropped:
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(header)
        w.writerows(keep)
        atomic_write(path, lambda fh: fh.write(buf.getvalue().encode("utf-8")))
    return dropped


#: each panel of series.png: (title, [(column, legend label)], y label, y scale); one quantity
#: per panel where the scales differ.  "drift:" = |X − X₀| / |X₀|, "rel:" = (X − X₀) / X₀.
#: Velocities are the fields' model values (u/r sites per step: docs/physics.md)
PANELS = (
    ("mass drift", [("drift:mass", r"$|M - M_0| / M_0$,  $M = \sum\rho$")], r"$|\Delta M| / M_0$", "log"),
    ("total energy", [("rel:energy", r"$E = \sum\rho\,(T + |\mathbf{u}|^2/2)$")], r"$(E - E_0) / E_0$",
     "linear"),
    ("momentum", [("momentum_x", r"$\sum\rho u_x$"), ("momentum_y", r"$\sum\rho u_y$"),
                  ("momentum_z", r"$\sum\rho u_z$")],
     "momentum (model units)", "linear"),
    ("kinetic energy", [("kinetic_energy", r"$\sum\frac{1}{2}\rho|\mathbf{u}|^2$")],
     "kinetic energy (model units)", "log"),
    ("force on the body", [("force_x", r"$F_x$"), ("force_y", r"$F_y$"), ("force_z", r"$F_z$")],
     "force (model units, momentum exchange)", "linear"),
    ("force coefficients", [("c_d", r"$C_D$"), ("c_l", r"$C_L$")], r"$C = 2F/(\rho U^2 A)$", "linear"),
    ("Nusselt number", [("Nu_bottom", r"$Nu$ at the hot wall"), ("Nu_top", r"$Nu$ at the cold wall"),
                        ("Nu_bulk", r"$Nu$ in the bulk: $\langle u_z T\rangle - \kappa\,\partial_z\langle T\rangle$")],
     r"$Nu$ (heat flux / $\kappa\,\Delta T / H$)", "linear"),
    ("max |u|", [("max_speed", r"$\max\,|\mathbf{u}|$")], "speed (model units: $u/r$ sites per step)", "linear"),
    ("mixing width", [("mixing_width", r"$W = \sum_y 6c(1-c)$")], r"$W$ (sites)", "linear"),
    ("temperature range", [("min_T", r"$\min T$"), ("max_T", r"$\max T$")], r"$T$ (units of the reference $T = 1$)",
     "linear"),
    ("minimum density", [("min_rho", r"$\min\rho$")], r"$\rho$ (units of the reference $\rho = 1$)", "linear"),
)


def series_panels(series: dict) -> list:
    """The panels of PANELS that *series* (columns of a series.csv) has something to show: a
    panel whose columns are missing or never finite (a 3D run's energy, a mixing width without
    a temperature contrast) is left out, and so is the temperature range when T is one
    constant (an isothermal set: T = 1 throughout)."""
    out = []
    for panel in PANELS:
        title, curves = panel[0], panel[1]
        values = [np.asarray(series[c.split(":")[-1]], dtype=np.float64) for c, _ in curves
                  if c.split(":")[-1] in series]
        finite = [v[np.isfinite(v)] for v in values]
        if not any(f.size for f in finite):
            continue
        if title == "temperature range":
            every = np.concatenate(finite)
            if float(every.max() - every.min()) <= 1e-12 * max(abs(float(every.max())), 1.0):
                continue
        out.append(panel)
    return out


#: a log panel shows at most this many decades below its largest value (the round-off of a
#: state at rest would otherwise squash the growth into the top of the panel)
LOG_DECADES = 6


def _curve(series: dict, column: str, like: np.ndarray) -> np.ndarray:
    name = column.split(":")[-1]
    v = np.asarray(series.get(name, np.full_like(like, np.nan)), dtype=np.float64)
    if ":" not in column:
        return v
    ok = v.size and np.isfinite(v[0]) and v[0] != 0
    if not ok:
        return v * np.nan
    return np.abs(v - v[0]) / abs(v[0]) if column.startswith("drift:") else (v - v[0]) / v[0]


def series_figure(series: dict, T_walls: Optional[tuple] = None, dpi: float = 100.0, time_unit=None,
                  r: Optional[float] = None):
    """series.png: the quantities the run has (:func:`series_panels`) against the step and --
    with *time_unit* ``(steps per unit, label)`` -- the time in the flow's unit on the top
    axis of each panel, one quantity per panel where the scales differ: the mass drift
    |ΔM| / M₀ and the kinetic energy on log axes (round-off and exponential growth show),
    *T_walls* drawn on the temperature panel; with the velocity set's *r*, max |u| in sites per
    step (the run header's unit; series.csv keeps model values).  Without a step column (a
    series of an older lbgen), against its model time."""
    from lbgen.output.look import check_time_unit, new_figure

    time_unit = check_time_unit(time_unit)
    panels = series_panels(series) if any(np.size(v) for v in series.values()) else list(PANELS)
    n = max(len(panels), 1)
    cols = 4 if n > 6 else 3 if n in (3, 5, 6) else 2 if n == 4 else n
    rows = -(-len(panels) // cols)
    fig = new_figure((4.0 * cols, 4.0 * rows), dpi)
    axes = fig.subplots(rows, cols, squeeze=False).ravel()
    top = 1.0 - (0.37 if time_unit is None else 0.85) / (4.0 * rows)       # inches above the top row
    fig.subplots_adjust(left=0.055 * 4 / cols, right=0.99, bottom=0.075 * 2 / rows, top=top, wspace=0.34,
                        hspace=0.32 if time_unit is None else 0.6)   # fixed: cheap
    for ax in axes[len(panels):]:
        fig.delaxes(ax)
    if "step" in series:
        t = np.asarray(series["step"], dtype=np.float64)
        xlabel = "step"
    else:
        t = np.asarray(series.get("time", np.empty(0)), dtype=np.float64)
        xlabel = "model time $t$ = step / r"
    for ax, (title, curves, ylabel, scale) in zip(axes, panels):
        ax.set_title(title)                  # above the top axis of the flow time, when there is one
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.set_yscale(scale)
        ax.grid(True, alpha=0.3, which="major")
        if time_unit is not None and xlabel == "step":
            flow = ax.secondary_xaxis("top", functions=(lambda s, n=time_unit.steps: s / n,
                                                        lambda u, n=time_unit.steps: u * n))
            flow.set_xlabel(f"time / {time_unit.label}")
        if not t.size:
            ax.text(0.5, 0.5, "no data yet", ha="center", va="center", transform=ax.transAxes)
            continue
        top = 0.0
        for column, label in curves:
            if column.split(":")[-1] not in series:
                continue                                     # a column this run has not (3D: no energy, T)
            v = _curve(series, column, t)
            if column == "max_speed" and r:
                v = v / float(r)
                ax.set_ylabel("speed (sites per step)")
            if title == "total energy" and np.isfinite(v).any() and np.nanmax(np.abs(v)) > 0:
                power = int(math.floor(math.log10(float(np.nanmax(np.abs(v))))))
                if abs(power) > 2:          # the power in the label, not above the axis (the flow's time is there)
                    v = v / 10.0 ** power
                    ax.set_ylabel(f"{ylabel} / $10^{{{power}}}$")
            if scale == "log":
                v = np.where(v > 0, v, np.nan)               # a log axis cannot show 0: a gap
                if np.isfinite(v).any():
                    top = max(top, float(np.nanmax(v)))
            ax.plot(t, v, label=label, marker="." if t.size < 30 else None)
        if scale == "log":
            if top > 0:
                ax.set_ylim(bottom=max(ax.get_ylim()[0], top * 10.0 ** -LOG_DECADES))
            else:
                what = "the mass is exactly conserved: ΔM = 0" if title == "mass drift" else "all zero"
                ax.text(0.5, 0.5, what, ha="center", va="center", transform=ax.transAxes)
        elif title == "total energy":
            ax.ticklabel_format(axis="y", useOffset=False)
        if title == "temperature range" and T_walls:
            for Tw in T_walls:
                ax.axhline(Tw, color="0.5", lw=0.8, ls="--")
            ax.plot([], [], color="0.5", lw=0.8, ls="--", label="wall temperatures")
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=8)
    return fig
