"""The run description's converters of boundary options (one home, imported by
``lbgen.run.options``): wall axes, lids, faces and the open faces' Simulation arguments."""
from __future__ import annotations

from typing import Any, Dict, Mapping, Tuple

from lbgen.run.values import as_float


def as_axes(value) -> str:
    """Wall axes as Simulation takes them ('yz', ('y', 'z')) -> 'yz' (x, y, z order)."""
    from lbgen.simulation.boundaries import wall_axes
    from lbgen.simulation.parameters import SimulationError
    try:
        return "".join(wall_axes(value))
    except SimulationError as e:
        raise ValueError(f"is not a set of wall axes: {e}") from None


def as_lid(value) -> Dict[str, Tuple[float, ...]]:
    """'z-high=0.1,0,0; x-low=0,0.05,0' (or a mapping; two components in 2D) -> {'z-high': (0.1,
    0.0, 0.0), ...}: the faces and velocities of Simulation's ``lid`` (checked against the wall
    axes and the dimension there)."""
    if isinstance(value, Mapping):
        items = list(value.items())
    else:
        items = []
        for part in (p.strip() for p in str(value).split(";")):
            if not part:
                continue
            face, eq, velocity = part.partition("=")
            if not eq:
                raise ValueError("expected FACE=UX,UY,UZ (e.g. z-high=0.1,0,0), several separated by ';'")
            items.append((face.strip(), velocity.split(",")))
    from lbgen.simulation.boundaries import lid_face
    out = {}
    for face, velocity in items:
        try:
            key = lid_face(str(face).strip())
        except (ValueError, RuntimeError) as e:      # SimulationError: the face's rule
            raise ValueError(f"has an unknown face: {e}") from None
        if key in out:
            raise ValueError(f"gives the {key} face twice; give each face once")
        parts = (velocity.split(",") if isinstance(velocity, str) else
                 list(velocity) if isinstance(velocity, (list, tuple)) else [velocity])
        if len(parts) not in (2, 3):
            raise ValueError(f"face {face!r}: expected the velocity components UX,UY (2D) or UX,UY,UZ (3D), got "
                             f"{len(parts)}")
        u = []
        for name, c in zip(("UX", "UY", "UZ"), parts):
            try:
                u.append(as_float(c))
            except ValueError as e:
                what = "is not finite" if "finite" in str(e) else "is not a number"
                raise ValueError(f"face {face!r}: {name}={str(c).strip()} {what}; a lid's velocity is finite "
                                 f"numbers UX,UY[,UZ]") from None
        out[key] = tuple(u)
    if not out:
        raise ValueError("names no face: expected FACE=UX,UY,UZ (e.g. z-high=0.1,0,0)")
    return out


def as_face(value) -> str:
    """'X-LOW' -> 'x-low': one face (inlet, outlet, outflow)."""
    from lbgen.simulation.boundaries import lid_face
    try:
        return lid_face(str(value).strip())
    except (ValueError, RuntimeError) as e:      # SimulationError: the face's rule
        raise ValueError(f"is not a face: {e}") from None


def as_outlets(value) -> Dict[str, Any]:
    """'x-high' or 'x-low=1.01; x-high=0.99' (or a mapping) -> {'x-low': 1.01, 'x-high': 0.99}: the
    pressure outlets and their densities (None: --outlet-density)."""
    if isinstance(value, Mapping):
        items = [(f, v) for f, v in value.items()]
    else:
        items = []
        for part in (p.strip() for p in str(value).replace(";", " ").split()):
            face, eq, rho = part.partition("=")
            items.append((face, rho if eq else None))
    out: Dict[str, Any] = {}
    for face, rho in items:
        key = as_face(face)
        if key in out:
            raise ValueError(f"gives the {key} face twice; give each face once")
        if rho is not None:
            try:
                rho = as_float(rho)
            except ValueError:
                raise ValueError(f"face {key}: density {str(rho).strip()!r} is not a finite number") from None
            if rho <= 0:
                raise ValueError(f"face {key}: density {rho:g}; an outlet's density must be > 0")
        out[key] = rho
    if not out:
        raise ValueError("names no face: expected FACE or FACE=RHO (e.g. x-high, or x-low=1.01;x-high=0.99)")
    return out


def as_faces(value) -> str:
    """'y' or 'z-high, x' -> 'y-low y-high' / 'z-high x-low x-high': faces or axes (both faces)."""
    from lbgen.simulation.open_faces import faces_of
    try:
        return " ".join("-".join(f) for f in faces_of(value, 3, "slip", axes_allowed=True))
    except (ValueError, RuntimeError) as e:
        raise ValueError(f"is not a set of faces: {e}") from None


def open_arguments(cfg: Any) -> Dict[str, Any]:
    """The Simulation keywords of a run description's open faces (inlet, outlet, outflow, slip)."""
    out: Dict[str, Any] = {}
    if getattr(cfg, "inlet", None):
        out["inlet"] = {cfg.inlet: (cfg.inlet_profile, cfg.inlet_speed)}
        if getattr(cfg, "inlet_temperature", None) is not None:
            out["inlet_temperature"] = cfg.inlet_temperature
    if getattr(cfg, "outlet", None):
        out["outlet"] = {f: cfg.outlet_density if rho is None else rho for f, rho in cfg.outlet.items()}
    if getattr(cfg, "outflow", None):
        out["outflow"] = cfg.outflow
    if getattr(cfg, "slip", None):
        out["slip"] = cfg.slip
    return out
