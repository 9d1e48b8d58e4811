"""The checks of the boundary arguments (``Simulation3D`` today; the one home for any D) -- wall axes and faces, lids (faces, velocities,
the Mach limit of ``lbgen.model.physics``), the voxel mask -- and of saved populations, for
every caller that takes the same forms (the run description: --wall-axes, --lid,
--geometry; ``restore`` in 2D and 3D): one home for the rules.  Each refusal is a
SimulationError naming the parameter, the value and what is allowed."""
from __future__ import annotations

from typing import Callable, Dict, Mapping, Optional, Tuple

import numpy as np

from lbgen.model.catalog import AXES, SIDES
from lbgen.simulation.parameters import SimulationError


def wall_axes(walls) -> Tuple[str, ...]:
    """'xz', ('x', 'z') or None -> ('x', 'z'); anything else refused naming it."""
    if walls is None:
        return ()
    if not isinstance(walls, (str, list, tuple, set, frozenset)):
        raise SimulationError(f"walls={walls!r}: Simulation3D takes the wall axes as a string or a sequence of "
                              f"'x', 'y', 'z' (e.g. walls='z' or walls=('x', 'y')), or None for a periodic box"
                              + ("; lbgen.Walls are the thermal walls of the 2D lbgen.Simulation"
                                 if type(walls).__name__ == "Walls" else ""))
    items = list(walls) if not isinstance(walls, str) else list(walls.replace(",", "").replace(" ", ""))
    bad = [w for w in items if not isinstance(w, str) or w.lower() not in AXES]
    if bad:
        raise SimulationError(f"walls={walls!r}: each wall axis must be 'x', 'y' or 'z' (e.g. walls='z' or "
                              f"walls=('x', 'y')); got {bad[0]!r}")
    items = [w.lower() for w in items]
    if len(set(items)) != len(items):
        raise SimulationError(f"walls={walls!r} names an axis twice")
    return tuple(a for a in AXES if a in items)


def wall_faces(walls) -> Tuple[Tuple[str, str], ...]:
    """The no-slip wall faces (axis, side) in the boundaries record's bit order (2a + s) of
    ``walls``: axes (an axis walls both its faces: 'z', 'xz', ('x', 'z')) and faces ('z-low',
    ('z', 'high'), 'x, z-low') mixed, or None (a periodic box); anything else, or a face given
    twice, refused naming it."""
    if walls is None:
        return ()
    if not isinstance(walls, (str, list, tuple, set, frozenset)):
        wall_axes(walls)                      # the refusal in words
    if isinstance(walls, tuple) and len(walls) == 2 and all(isinstance(w, str) for w in walls) \
            and walls[1].lower() in SIDES:
        walls = [walls]                       # one face as (axis, side)
    items = walls.replace(",", " ").split() if isinstance(walls, str) else list(walls)
    faces = []
    for item in items:
        if isinstance(item, str) and "-" not in item:
            faces += [(a, side) for a in wall_axes(item) for side in SIDES]
        else:
            faces.append(_face(item, "walls"))
    twice = sorted({f for f in faces if faces.count(f) > 1})
    if twice:
        raise SimulationError(f"walls={walls!r} names the {'-'.join(twice[0])} face twice")
    return tuple(sorted(faces, key=lambda f: (AXES.index(f[0]), SIDES.index(f[1]))))


def _face(face, what: str = "lid face") -> Tuple[str, str]:
    text = "-".join(face) if isinstance(face, tuple) else str(face)
    axis, _, side = text.lower().partition("-")
    if axis not in AXES or side not in SIDES:
        raise SimulationError(f"{what} {face!r}: name a face as 'x-low', 'x-high', 'y-low', ..., 'z-high'")
    return axis, side


def lid_faces(lid, walls, velocity_set: Optional[str] = None,
          warn: Optional[Callable[[str], None]] = None) -> Dict[Tuple[str, str], Tuple[float, float, float]]:
    """The moving walls {(axis, side): (ux, uy, uz)}, refused naming the face: a face without a
    wall (``walls``: axes or faces, as ``wall_faces`` takes them), a face named twice (in any spelling), components that are not three
    finite numbers, a component normal to the face, and (given the ``velocity_set``) a speed
    above ``lbgen.model.physics.LID_MACH_MAX`` (``warn`` gets the warning of the band below it)."""
    if lid is None:
        return {}
    if not isinstance(lid, Mapping):
        raise SimulationError(f"lid={lid!r} must map faces to velocities, e.g. lid={{'z-high': (0.05, 0, 0)}}")
    out, named = {}, {}
    faces = wall_faces(walls)
    for face, velocity in lid.items():
        axis, side = _face(face)
        if (axis, side) in out:
            raise SimulationError(f"lid: the {axis}-{side} face is given twice ({named[(axis, side)]!r} and "
                                  f"{face!r}); give each face once")
        named[(axis, side)] = face
        if not any(a == axis for a, _ in faces):
            axes = "".join(a for a in AXES if any(f[0] == a for f in faces))
            raise SimulationError(f"lid on the {axis}-{side} face: a lid is a moving wall, so the {axis} axis needs "
                                  f"walls (walls={axes + axis!r})")
        if (axis, side) not in faces:
            raise SimulationError(f"lid on the {axis}-{side} face: a lid is a moving wall, and the walls "
                                  f"{', '.join('-'.join(f) for f in faces)} leave that face without one")
        try:
            u = tuple(float(c) for c in velocity)
        except (TypeError, ValueError):
            u = ()
        if len(u) != 3:
            raise SimulationError(f"lid {axis}-{side}: velocity {velocity!r} must be three finite numbers (ux, uy, uz)")
        if not all(np.isfinite(u)):
            bad = next(f"u{a} = {c}" for a, c in zip(AXES, u) if not np.isfinite(c))
            raise SimulationError(f"lid {axis}-{side}: velocity component {bad} is not finite; a lid's velocity is "
                                  f"three finite numbers (ux, uy, uz)")
        if u[AXES.index(axis)] != 0.0:
            raise SimulationError(f"lid {axis}-{side}: velocity {velocity!r} has a component normal to the face "
                                  f"(u{axis} = {u[AXES.index(axis)]:g}); a lid moves in its plane: u{axis} must be 0")
        if velocity_set is not None:
            from lbgen.model.physics import lid_mach_check
            try:
                note = lid_mach_check(f"{axis}-{side}", u, velocity_set)
            except ValueError as e:
                raise SimulationError(str(e)) from None
            if note and warn is not None:
                warn(note)
        out[(axis, side)] = u
    return out


def voxel_mask(mask, shape) -> Optional[np.ndarray]:
    """The voxel mask as a uint8 (LX, LY, LZ) array of 0 and 1, or None; checked before any work."""
    if mask is None:
        return None
    m = np.asarray(mask)
    if m.dtype != np.bool_ and m.dtype != np.uint8:
        raise SimulationError(f"mask: a {m.dtype} array; the voxel mask must be a bool array (True: solid) or "
                              f"a uint8 array of 0 and 1, of shape (LX, LY, LZ) = {shape}")
    if m.shape != shape:
        raise SimulationError(f"mask: shape {m.shape}; the voxel mask must have the lattice's shape "
                              f"(LX, LY, LZ) = {shape}")
    if m.dtype == np.uint8 and m.max(initial=0) > 1:
        x, y, z = (int(i[0]) for i in np.nonzero(m > 1))
        raise SimulationError(f"mask: value {int(m[x, y, z])} at (x={x}, y={y}, z={z}); a uint8 voxel mask holds "
                              f"0 (fluid) and 1 (solid)")
    m = np.ascontiguousarray(m, dtype=np.uint8)
    if m.all():
        raise SimulationError("mask: every voxel is solid; the lattice needs at least one fluid site")
    return m


def check_finite_state(a: np.ndarray, what: str, mask: Optional[np.ndarray] = None) -> None:
    """SimulationError naming the first population that is NaN or Inf (``what``: the caller,
    e.g. 'restore'); solid voxels of ``mask`` (their populations are zeroed) are skipped.  2D
    and 3D states alike: (Q, LX, LY) or (Q, LX, LY, LZ)."""
    finite = np.isfinite(a)
    if mask is not None:
        finite |= (mask == 1)[None]
    if finite.all():
        return
    index = tuple(int(i[0]) for i in np.nonzero(~finite))
    site = ", ".join(f"{n}={i}" for n, i in zip("xyz", index[1:]))
    raise SimulationError(f"{what}: population {index[0]} at ({site}) is {a[index]}; saved populations must be "
                          f"finite (a state saved after the run diverged cannot be continued)")




def lid_face(face) -> str:
    """A face as the run description spells it ('Z-HIGH' -> 'z-high'), or SimulationError."""
    return "-".join(_face(face))
