"""The thermal walls' axis of a run (``--wall-axis``, issue 39): its rules and what turns with it.

A run's thermal walls stand across y in 2D and across z in 3D, or across ``--wall-axis`` x (2D;
3D: x or y).  The set-ups written for walls across the last axis (their gravity, the 3D
rayleigh-taylor's bounce-back walls) turn with it (``lbgen.model.wall_frame``: that axis and the
last swapped); refused in words before any work: z in 2D, an axis shorter than the planes the
walls need, x beside --hetero (its regions split X), and a time block on C across an axis other
than the last (``fused_tb`` blocks Y columns, Z lines: ``lbgen.codegen.spec.time_block_walls_refusal``)."""
from __future__ import annotations

from typing import Any, Dict, Mapping

from lbgen.model.catalog import set_entry
from lbgen.model.wall_frame import upright_vector
from lbgen.run.options import ConfigError, dimension


def check_wall_axis(cfg) -> None:
    """The thermal walls' axis of a RunConfig with walls: any axis of the lattice, with the planes its
    walls need along it and, across another than the last, no time block on C, refused in words."""
    from lbgen.codegen.spec import time_block_walls_refusal
    axis = cfg.thermal_axis
    index = "xyz".index(axis)
    check_wall_length(cfg.velocity_set, axis, cfg.shape[index] if index < cfg.dimension else 0)
    if axis == "x" and cfg.hetero:
        raise ConfigError(f"--hetero {cfg.hetero} splits the lattice in X between two backends; the thermal walls "
                          f"across x need X whole on one: put them across y or z (--wall-axis), or leave --hetero out")
    blocked = cfg.time_block not in (1, "auto") and cfg.backend == "c" and cfg.fused and not cfg.hetero
    refusal = time_block_walls_refusal(cfg.dimension, axis) if blocked else None
    if refusal:
        raise ConfigError(f"--time-block {cfg.time_block}: {refusal}")


def check_wall_length(vs_name: str, axis: str, length: int) -> None:
    """The thermal walls' axis (one of the lattice's) and the planes its walls need along it, refused in words."""
    from lbgen.model.velocity_set import velocity_set
    from lbgen.model.walls import min_ly_walls
    vs = velocity_set(vs_name)
    if "xyz".index(axis) >= vs.D:
        raise ConfigError(f"--wall-axis {axis}: a 2D lattice has no {axis} axis; its thermal walls stand across x "
                          f"or y (walls across z: a 3D thermal set, --velocity-set d3q39 or d3q103)")
    need = min_ly_walls(vs)
    if length < need:
        raise ConfigError(f"--l{axis} {length}: the thermal walls across {axis} need L{axis.upper()} >= {need} on "
                          f"{set_entry(vs_name).label} (its {need // 2 - 1} wall planes at each side and the bulk "
                          f"plane next to them); give --l{axis} {need} or more")


def turned_defaults(values: Mapping[str, Any], given: Mapping[str, Any], setup: str) -> Dict[str, Any]:
    """The set-up's defaults written for walls across the last axis (gravity along it, the bounce-back
    walls of rayleigh-taylor in 3D) turned to the thermal walls' --wall-axis (``lbgen.model.wall_frame``:
    that axis and the last swapped); the run's --wall-axis itself None where it is the last axis (one
    spelling of the default).  What the user gave stays as given.  A rayleigh-benard layer's depth
    is checked here, before its planes are looked up (``check_wall_length``)."""
    D, axis = dimension(values), values.get("wall_axis") or "xyz"[dimension(values) - 1]
    if setup == "rayleigh-benard" or "xyz".index(axis) >= D:
        check_wall_length(values["velocity_set"], axis, values.get(f"l{axis}", 0))
    if axis == "xyz"[D - 1]:
        return {"wall_axis": None}
    out: Dict[str, Any] = {}
    if "gravity" not in given and len(values["gravity"]) == D:
        out["gravity"] = upright_vector(values["gravity"], axis)
    if "wall_axes" not in given and values.get("wall_axes"):
        swap = {"xyz"[D - 1]: axis, axis: "xyz"[D - 1]}
        out["wall_axes"] = "".join(sorted(swap.get(a, a) for a in values["wall_axes"]))
    return out
