"""Global diagnostics of a state from per-row sums: one definition for the kernels and the host.

The generated ``<prefix>_diagnostics`` kernel (templates/common.j2, ``diagnostics_row``)
writes, for every row y, the reductions over x named in :data:`ROW_QUANTITIES` (in this
order, ``out[y * ND + j]``).  :func:`rows_of_fields` computes the same rows on the host
from (LX, LY) fields, :func:`combine_rows` merges the rows of several column bands
(regions, MPI slabs) and :func:`scalars` turns rows into the global numbers of a time
series.  The fields are the physical (half-step) ones: rho, u = sum(xi f) / rho - a/2 and
T + |a|^2/8 of the stored moments (lbgen.model.collision.half_step_shift; the kernel takes the
force a); lengths in sites, velocities in model units (u/r sites per step).
"""
from __future__ import annotations

import math
from typing import Dict, Iterable, Optional

import numpy as np

#: (name, reduction over x) of every column the diagnostics kernel writes per row y
ROW_QUANTITIES = (
    ("mass", "sum"),              # sum rho
    ("momentum_x", "sum"),        # sum rho ux
    ("momentum_y", "sum"),        # sum rho uy
    ("energy", "sum"),            # sum rho (T + |u|^2 / 2)
    ("kinetic_energy", "sum"),    # sum rho |u|^2 / 2
    ("T_sum", "sum"),             # sum T (the horizontal mean profile <T>_x(y) = T_sum / LX)
    ("max_u2", "max"),            # max |u|^2
    ("min_rho", "min"),           # min rho
    ("min_T", "min"),             # min T
    ("max_T", "max"),             # max T
    ("nonfinite", "sum"),         # sites with a NaN or Inf in rho, ux, uy or T
)
ROW_INDEX = {name: j for j, (name, _) in enumerate(ROW_QUANTITIES)}
ND = len(ROW_QUANTITIES)

#: the scalars of :func:`scalars` (and of every row of series.csv after step and time)
SCALARS = ("mass", "momentum_x", "momentum_y", "energy", "kinetic_energy", "mixing_width", "max_speed",
           "min_rho", "min_T", "max_T", "nonfinite")


def rows_of_fields(fields: Dict[str, np.ndarray], solid: Optional[np.ndarray] = None) -> np.ndarray:
    """(LY, ND) rows of (LX, LY) fields ``rho``, ``ux``, ``uy``, ``T`` (the kernel's result on the
    host); cells where ``solid`` is nonzero are skipped (their fields must read 0: no mass)."""
    rho, ux, uy, T = (np.asarray(fields[n], dtype=np.float64) for n in ("rho", "ux", "uy", "T"))
    if rho.ndim != 2:
        raise ValueError(f"fields must be (LX, LY) arrays, got shape {rho.shape}")
    u2 = ux * ux + uy * uy
    kinetic = 0.5 * rho * u2
    fluid = np.ones(rho.shape, bool) if solid is None else np.asarray(solid) == 0
    bad = ~(np.isfinite(rho) & np.isfinite(ux) & np.isfinite(uy) & np.isfinite(T)) & fluid
    skip = bad | ~fluid
    with np.errstate(invalid="ignore"):
        def masked(a, fill):
            return np.where(skip, fill, a)
        columns = {
            "mass": rho.sum(0), "momentum_x": (rho * ux).sum(0), "momentum_y": (rho * uy).sum(0),
            "energy": (rho * T).sum(0) + kinetic.sum(0), "kinetic_energy": kinetic.sum(0), "T_sum": T.sum(0),
            "max_u2": masked(u2, 0.0).max(0), "min_rho": masked(rho, np.inf).min(0),
            "min_T": masked(T, np.inf).min(0), "max_T": masked(T, -np.inf).max(0), "nonfinite": bad.sum(0).astype(np.float64),
        }
    return np.stack([columns[name] for name, _ in ROW_QUANTITIES], axis=1)


def combine_rows(parts: Iterable[np.ndarray], quantities=None) -> np.ndarray:
    """Rows of the whole lattice from the rows of column bands that together cover it (columns:
    ``quantities``, default ``ROW_QUANTITIES``; the 3D rows: ``ROW_QUANTITIES3D``)."""
    parts = [np.asarray(p, dtype=np.float64) for p in parts]
    if not parts:
        raise ValueError("combine_rows needs at least one band")
    out = parts[0].copy()
    for p in parts[1:]:
        for j, (_, how) in enumerate(quantities or ROW_QUANTITIES):
            out[:, j] = {"sum": np.add, "max": np.fmax, "min": np.fmin}[how](out[:, j], p[:, j])
    return out



def combine_blocks(parts, shape, quantities) -> np.ndarray:
    """Rows of the whole lattice (``shape``: its sizes across the lines, (LY,) or (LY, LZ)) from
    blocks of lines: ``parts`` are (origin (x, y[, z]), rows of the block's lines); the parts of
    a line are combined in order of X (sums, max, min), so a line held whole keeps its bits."""
    out = np.full(tuple(shape) + (len(quantities),), np.nan)
    seen = np.zeros(tuple(shape), bool)
    for origin, block in sorted(parts, key=lambda p: p[0][0]):
        where = tuple(slice(o, o + n) for o, n in zip(origin[1:], block.shape[:-1]))
        first, target = ~seen[where], out[where]
        for j, (_, how) in enumerate(quantities):
            combined = {"sum": np.add, "max": np.fmax, "min": np.fmin}[how](target[..., j], block[..., j])
            target[..., j] = np.where(first, block[..., j], combined)
        out[where] = target
        seen[where] = True
    return out.reshape(-1, len(quantities))

def healthy(d) -> bool:
    """The guard's rule on diagnostics (the scalars of :func:`scalars`, or (LY, ND) rows): no
    site with a NaN or Inf in any field, and rho > 0 and T > 0 everywhere (min rho and min T
    skip the non-finite sites, which are counted)."""
    if isinstance(d, np.ndarray):
        d = {name: d[:, ROW_INDEX[name]] for name in ("nonfinite", "min_rho", "min_T")}
    return bool(not np.any(d["nonfinite"]) and np.all(np.asarray(d["min_rho"]) > 0)
                and np.all(np.asarray(d["min_T"]) > 0))


def mixing_width(T_mean: np.ndarray, T_hot: float, T_cold: float) -> float:
    """W = sum_y 6 c (1 - c), c = (<T>_x - T_cold) / (T_hot - T_cold) clipped to [0, 1].

    The thickness (lattice units) of a linear ramp of c from 0 to 1, 0 for a sharp
    interface: for Rayleigh-Taylor, the width of the mixing layer.
    """
    if T_hot == T_cold:
        raise ValueError("T_hot and T_cold must differ to define the mixing width")
    c = np.clip((np.asarray(T_mean, dtype=np.float64) - T_cold) / (T_hot - T_cold), 0.0, 1.0)
    return float((6.0 * c * (1.0 - c)).sum())


def scalars(rows: np.ndarray, lx: int, T_hot: Optional[float] = None, T_cold: Optional[float] = None) -> dict:
    """Global diagnostics (Python floats) from the (LY, ND) rows of an LX-wide lattice.

    mass = sum rho; momentum_x/y = sum rho u; energy = sum rho (T + |u|^2/2) (D = 2: internal
    rho T plus kinetic); kinetic_energy = sum rho |u|^2 / 2; mixing_width (see
    :func:`mixing_width`; NaN without a temperature contrast T_hot != T_cold); max_speed =
    max |u|; min_rho, min_T, max_T; nonfinite = number of sites with NaN/Inf fields.
    """
    rows = np.asarray(rows, dtype=np.float64)
    col = {name: rows[:, j] for j, (name, _) in enumerate(ROW_QUANTITIES)}
    out = {name: float(col[name].sum()) for name in ("mass", "momentum_x", "momentum_y", "energy",
                                                      "kinetic_energy")}
    if T_hot is None or T_cold is None or T_hot == T_cold:
        out["mixing_width"] = math.nan
    else:
        out["mixing_width"] = mixing_width(col["T_sum"] / lx, T_hot, T_cold)
    out["max_speed"] = float(math.sqrt(max(float(np.max(col["max_u2"])), 0.0))) if rows.size else 0.0
    out["min_rho"] = float(np.min(col["min_rho"]))
    out["min_T"] = float(np.min(col["min_T"]))
    out["max_T"] = float(np.max(col["max_T"]))
    out["nonfinite"] = float(col["nonfinite"].sum())
    return out


# --- 3D: per-line reductions over x, one line per (y, z) ------------------------------------
#: (name, reduction over x) of every column the 3D diagnostics kernel writes per line (y, z):
#: out[(y*LZ + z)*ND3 + j] (templates/c/lattice.j2, ``diagnostics_site3d``); solid voxels of a
#: mask are skipped (they hold no populations)
ROW_QUANTITIES3D = (
    ("mass", "sum"),              # sum rho
    ("momentum_x", "sum"),        # sum rho ux
    ("momentum_y", "sum"),        # sum rho uy
    ("momentum_z", "sum"),        # sum rho uz
    ("kinetic_energy", "sum"),    # sum rho |u|^2 / 2
    ("max_u2", "max"),            # max |u|^2
    ("min_rho", "min"),           # min rho
    ("min_T", "min"),             # min T
    ("nonfinite", "sum"),         # sites with a NaN or Inf in rho, ux, uy, uz or T
)
ROW_INDEX3D = {name: j for j, (name, _) in enumerate(ROW_QUANTITIES3D)}
ND3 = len(ROW_QUANTITIES3D)
#: the scalars of :func:`scalars3d` (the 3D series columns after step and time)
SCALARS3D = ("mass", "momentum_x", "momentum_y", "momentum_z", "kinetic_energy", "max_speed", "min_rho", "min_T",
             "nonfinite")


def rows_of_fields3d(fields: Dict[str, np.ndarray], solid: Optional[np.ndarray] = None) -> np.ndarray:
    """(LY*LZ, ND3) lines of (LX, LY, LZ) fields rho, ux, uy, uz, T (the 3D kernel's result on
    the host; line y*LZ + z); voxels where ``solid`` is nonzero are skipped."""
    rho, ux, uy, uz, T = (np.asarray(fields[n], dtype=np.float64) for n in ("rho", "ux", "uy", "uz", "T"))
    if rho.ndim != 3:
        raise ValueError(f"fields must be (LX, LY, LZ) arrays, got shape {rho.shape}")
    fluid = np.ones(rho.shape, bool) if solid is None else np.asarray(solid) == 0
    u2 = ux * ux + uy * uy + uz * uz
    bad = ~(np.isfinite(rho) & np.isfinite(ux) & np.isfinite(uy) & np.isfinite(uz) & np.isfinite(T)) & fluid
    ok = fluid & ~bad
    with np.errstate(invalid="ignore"):
        def total(a):
            return np.where(fluid, a, 0.0).sum(0)

        def masked(a, fill):
            return np.where(ok, a, fill)
        columns = {
            "mass": total(rho), "momentum_x": total(rho * ux), "momentum_y": total(rho * uy),
            "momentum_z": total(rho * uz), "kinetic_energy": total(0.5 * rho * u2),
            "max_u2": masked(u2, 0.0).max(0), "min_rho": masked(rho, np.inf).min(0),
            "min_T": masked(T, np.inf).min(0), "nonfinite": bad.sum(0).astype(np.float64),
        }
    return np.stack([columns[name].ravel() for name, _ in ROW_QUANTITIES3D], axis=1)


def scalars3d(rows: np.ndarray) -> dict:
    """Global 3D diagnostics (Python floats) from the (lines, ND3) rows of the 3D kernel:
    mass, momentum_x/y/z, kinetic_energy (sums), max_speed = max |u|, min_rho, min_T, nonfinite."""
    rows = np.asarray(rows, dtype=np.float64)
    col = {name: rows[:, j] for j, (name, _) in enumerate(ROW_QUANTITIES3D)}
    out = {name: float(col[name].sum()) for name in ("mass", "momentum_x", "momentum_y", "momentum_z",
                                                      "kinetic_energy")}
    out["max_speed"] = float(math.sqrt(max(float(np.max(col["max_u2"])), 0.0))) if rows.size else 0.0
    out["min_rho"] = float(np.min(col["min_rho"]))
    out["min_T"] = float(np.min(col["min_T"]))
    out["nonfinite"] = float(col["nonfinite"].sum())
    return out
