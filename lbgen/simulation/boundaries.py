"""The checks of the boundary arguments (``Simulation``, any D: the one home) -- wall
axes and faces, lids (faces, velocities, the Mach limit of ``lbgen.model.physics``), the voxel mask -- and
their kernel fields (``face_bits``), and of saved populations, for
every caller that takes the same forms (the run description: --wall-axes, --lid,
--geometry; ``restore`` in 2D and 3D): one home for the rules.  Each refusal is a
SimulationError naming the parameter, the value and what is allowed."""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Callable, Dict, Mapping, Optional, Tuple

import numpy as np

from lbgen.model.catalog import AXES, SIDES
from lbgen.simulation.open_faces import OpenFaces, open_faces
from lbgen.simulation.parameters import SimulationError


def _spell(D: int) -> str:
    """'x' or 'y' (2D); 'x', 'y' or 'z' (3D)."""
    names = [repr(a) for a in AXES[:D]]
    return ", ".join(names[:-1]) + " or " + names[-1]


def wall_axes(walls, D: int = 3) -> Tuple[str, ...]:
    """'xz', ('x', 'z') or None -> ('x', 'z') (axes of a D-dimensional lattice); anything else
    refused naming it."""
    if walls is None:
        return ()
    example = "walls='x' or walls=('x', 'y')" if D == 2 else "walls='z' or walls=('x', 'y')"
    if not isinstance(walls, (str, list, tuple, set, frozenset)):
        raise SimulationError(f"walls={walls!r}: a {D}D Simulation takes the wall axes as a string or a sequence of "
                              f"{', '.join(repr(a) for a in AXES[:D])} (e.g. {example}), or None for a periodic box"
                              + ("; lbgen.Walls are the thermal walls of the 2D lbgen.Simulation"
                                 if type(walls).__name__ == "Walls" else ""))
    items = list(walls) if not isinstance(walls, str) else list(walls.replace(",", "").replace(" ", ""))
    bad = [w for w in items if not isinstance(w, str) or w.lower() not in AXES[:D]]
    if bad:
        raise SimulationError(f"walls={walls!r}: each wall axis must be {_spell(D)} in {D}D (e.g. "
                              f"{example}); got {bad[0]!r}")
    items = [w.lower() for w in items]
    if len(set(items)) != len(items):
        raise SimulationError(f"walls={walls!r} names an axis twice")
    return tuple(a for a in AXES if a in items)


def wall_faces(walls, D: int = 3) -> Tuple[Tuple[str, str], ...]:
    """The no-slip wall faces (axis, side) in the kernels' bit order (2a + s) of ``walls``: axes
    (an axis walls both its faces: 'z', 'xz', ('x', 'z')) and faces ('z-low', ('z', 'high'),
    'x, z-low') mixed, or None (a periodic box); anything else, or a face given twice, refused
    naming it."""
    if walls is None:
        return ()
    if not isinstance(walls, (str, list, tuple, set, frozenset)):
        wall_axes(walls, D)                   # the refusal in words
    if isinstance(walls, tuple) and len(walls) == 2 and all(isinstance(w, str) for w in walls) \
            and walls[1].lower() in SIDES:
        walls = [walls]                       # one face as (axis, side)
    items = walls.replace(",", " ").split() if isinstance(walls, str) else list(walls)
    faces = []
    for item in items:
        if isinstance(item, str) and "-" not in item:
            faces += [(a, side) for a in wall_axes(item, D) for side in SIDES]
        else:
            faces.append(_face(item, D, "walls"))
    twice = sorted({f for f in faces if faces.count(f) > 1})
    if twice:
        raise SimulationError(f"walls={walls!r} names the {'-'.join(twice[0])} face twice")
    return tuple(sorted(faces, key=lambda f: (AXES.index(f[0]), SIDES.index(f[1]))))


def _face(face, D: int = 3, what: str = "lid face") -> Tuple[str, str]:
    text = "-".join(face) if isinstance(face, tuple) else str(face)
    axis, _, side = text.lower().partition("-")
    if axis not in AXES[:D] or side not in SIDES:
        raise SimulationError(f"{what} {face!r}: name a face as "
                              + ", ".join(f"'{a}-{s}'" for a in AXES[:D] for s in SIDES) + f" (a {D}D lattice)")
    return axis, side


def lid_faces(lid, walls, velocity_set: Optional[str] = None,
              warn: Optional[Callable[[str], None]] = None, D: int = 3) -> Dict[Tuple[str, str], Tuple[float, ...]]:
    """The moving walls {(axis, side): (ux, uy[, uz])} of a D-dimensional lattice, refused
    naming the face: a face without a wall (``walls``: axes or faces, as ``wall_faces`` takes
    them), a face named twice (in any spelling),
    components that are not D finite numbers, a component normal to the face, and (given the
    ``velocity_set``) a speed above ``lbgen.model.physics.LID_MACH_MAX`` (``warn`` gets the
    warning of the band below it)."""
    if lid is None:
        return {}
    comps = ", ".join(f"u{a}" for a in AXES[:D])
    if not isinstance(lid, Mapping):
        example = "{'y-high': (0.05, 0)}" if D == 2 else "{'z-high': (0.05, 0, 0)}"
        raise SimulationError(f"lid={lid!r} must map faces to velocities, e.g. lid={example}")
    out, named = {}, {}
    faces = wall_faces(walls, D)
    for face, velocity in lid.items():
        axis, side = _face(face, D)
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
        if len(u) != D:
            raise SimulationError(f"lid {axis}-{side}: velocity {velocity!r}: expected {('two', 'three')[D - 2]} velocity "
                                  f"components ({comps}) of finite numbers in {D}D, got {len(u) or 'none'}")
        if not all(np.isfinite(u)):
            bad = next(f"u{a} = {c}" for a, c in zip(AXES, u) if not np.isfinite(c))
            raise SimulationError(f"lid {axis}-{side}: velocity component {bad} is not finite; a lid's velocity is "
                                  f"{D} finite numbers ({comps})")
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


def face_bits(walls, lids, D: int):
    """The kernels' fields of checked boundaries: (walls, lids, lid), face f = 2a + s (side s of
    axis a) as bit f of ``walls`` (wall axes: both faces of each, or faces, as ``wall_faces``
    takes them) and ``lids``, lid[f] its velocity (a (2D, D) array)."""
    wall_bits = sum(1 << 2 * AXES.index(a) + SIDES.index(s) for a, s in wall_faces(walls, D))
    lid = np.zeros((2 * D, D))
    lid_bits = 0
    for (axis, side), u in lids.items():
        face = 2 * AXES.index(axis) + SIDES.index(side)
        lid_bits |= 1 << face
        lid[face] = u
    return wall_bits, lid_bits, lid


@dataclass(frozen=True)
class BounceBack:
    """The one boundary description of a lattice of any D (``Simulation``), checked: ``walls`` the
    no-slip wall faces (axis, side), ``lid`` the moving ones {(axis, side): (ux, uy[, uz])},
    ``mask`` a uint8 array of the lattice's shape (1: solid) or None; ``D`` the dimension;
    ``open`` the inlets, outlets, outflows and slip walls (``lbgen.simulation.open_faces``) and
    ``shape`` the lattice's (the inlets' face arrays follow it)."""

    walls: Tuple[Tuple[str, str], ...]
    lid: Dict[Tuple[str, str], Tuple[float, ...]]
    mask: Optional[np.ndarray]
    D: int
    open: OpenFaces = field(default_factory=OpenFaces)
    shape: Tuple[int, ...] = ()

    @classmethod
    def of(cls, walls, lid, mask, shape, velocity_set: str, inlet=None, outlet=None, outflow=None,
           slip=None, inlet_temperature=None) -> Optional["BounceBack"]:
        """The checked boundaries, or None for a periodic box (each argument refused in words)."""
        def warn(note: str) -> None:       # a lid or an inlet in the unstable Mach band: taken, with a warning
            from lbgen.model.physics import LidMachWarning
            warnings.warn(LidMachWarning(note), stacklevel=5)
        D = len(shape)
        faces = wall_faces(walls, D)
        lids = lid_faces(lid, faces, velocity_set, warn=warn, D=D)
        m = voxel_mask(mask, tuple(shape))
        from lbgen.model.catalog import set_entry
        hop = set_entry(velocity_set).max_hop if velocity_set is not None else 1
        opened = open_faces(inlet, outlet, outflow, slip, walls=faces, shape=tuple(shape),
                            velocity_set=velocity_set, max_hop=hop, mask=m, warn=warn,
                            inlet_temperature=inlet_temperature)
        return cls(faces, lids, m, D, opened, tuple(shape)) if faces or m is not None or opened else None

    def check_runs(self, device_backend, time_block, backend: str = "c") -> None:
        """SimulationError where they cannot run: a host + device split; a 2D time block; the
        open faces of a set whose hops are longer than 1 in a time block."""
        if device_backend is not None:
            raise SimulationError(f"bounce-back walls, lids and masks ({self.describe()}) run on one backend: "
                                  f"a host + device run (device_backend={device_backend!r}) splits the lattice in X")
        if time_block != 1 and self.D == 2:
            raise SimulationError(f"time_block={time_block}: the time-blocked sweep (fused_tb) does not take "
                                  f"bounce-back walls, lids or masks in 2D ({self.describe()}); use time_block=1")
        if self.open and time_block != 1 and self.open.max_hop != 1:
            raise SimulationError(f"time_block={time_block}: the time-blocked sweep (fused_tb) reads the open faces' "
                                  f"sources through the row pointers of a hop, and this set's open faces "
                                  f"({self.open.describe()}) read up to {self.open.max_hop} planes deep; use time_block=1")

    def kernel_fields(self, faces=None, solid=None) -> dict:
        """The keyword arguments of ``Program.set_boundaries``: the whole lattice's, or
        (``faces`` given) those of a block of a distributed lattice (``lbgen.parallel``) that holds
        these wall faces (and their lids) and the mask's cut ``solid``."""
        if faces is None:
            faces, solid = self.walls, self.mask
            opened = self.open.kernel_fields(self.shape) if self.open else {}
        elif self.open:
            raise SimulationError(f"the open faces ({self.open.describe()}) do not run on a distributed lattice "
                                  f"yet: run them in one process")
        else:
            opened = {}
        walls, lids, lid = face_bits(faces, {f: u for f, u in self.lid.items() if f in faces}, self.D)
        return {"walls": walls, "lids": lids, "lid": lid, "solid": solid, **opened}

    def describe(self) -> str:
        """'walls xz y-high, lid y-high (0.05, 0), mask 3% solid'."""
        both = [a for a in AXES if sum(f[0] == a for f in self.walls) == 2]
        parts = ["walls " + " ".join([''.join(both)] * bool(both) + ["-".join(f) for f in self.walls
                                                                    if f[0] not in both])] if self.walls else []
        parts += [f"lid {a}-{s} (" + ", ".join(f"{c:g}" for c in u) + ")" for (a, s), u in self.lid.items()]
        if self.open:
            parts.append(self.open.describe())
        if self.mask is not None:
            parts.append(f"mask {100.0 * self.mask.mean():.3g}% solid")
        return ", ".join(parts)


def voxel_mask(mask, shape) -> Optional[np.ndarray]:
    """The voxel mask as a uint8 array of the lattice's shape ((LX, LY) or (LX, LY, LZ)) of 0
    and 1, or None; checked before any work."""
    if mask is None:
        return None
    names = "(" + ", ".join(f"L{a.upper()}" for a in AXES[:len(shape)]) + ")"
    m = np.asarray(mask)
    if m.dtype != np.bool_ and m.dtype != np.uint8:
        raise SimulationError(f"mask: a {m.dtype} array; the voxel mask must be a bool array (True: solid) or "
                              f"a uint8 array of 0 and 1, of shape {names} = {shape}")
    if m.shape != shape:
        raise SimulationError(f"mask: shape {m.shape}; the voxel mask must have the lattice's shape "
                              f"{names} = {shape}")
    if m.dtype == np.uint8 and m.max(initial=0) > 1:
        at = tuple(int(i[0]) for i in np.nonzero(m > 1))
        where = ", ".join(f"{a}={i}" for a, i in zip(AXES, at))
        raise SimulationError(f"mask: value {int(m[at])} at ({where}); a uint8 voxel mask holds "
                              f"0 (fluid) and 1 (solid)")
    m = np.ascontiguousarray(m, dtype=np.uint8)
    if m.all():
        raise SimulationError("mask: every voxel is solid; the lattice needs at least one fluid site")
    return m


def check_finite_state(a: np.ndarray, what: str, mask: Optional[np.ndarray] = None) -> None:
    """SimulationError naming the first population that is NaN or Inf (``what``: the caller,
    e.g. 'restore'); solid voxels of ``mask`` (their populations are zeroed) are skipped.  2D
    and 3D states alike: (Q, LX, LY) or (Q, LX, LY, LZ)."""
    solid = None if mask is None else mask == 1
    for p in range(a.shape[0]):            # one population's flags at a time: 1 B a cell, not Q
        finite = np.isfinite(a[p])
        if solid is not None:
            finite |= solid
        if not finite.all():
            break
    else:
        return
    index = (p, *(int(i[0]) for i in np.nonzero(~finite)))
    site = ", ".join(f"{n}={i}" for n, i in zip("xyz", index[1:]))
    raise SimulationError(f"{what}: population {index[0]} at ({site}) is {a[index]}; saved populations must be "
                          f"finite (a state saved after the run diverged cannot be continued)")




def lid_face(face) -> str:
    """A face as the run description spells it ('Z-HIGH' -> 'z-high'), or SimulationError."""
    return "-".join(_face(face))


def checked_saved_state(populations, expected: tuple, dtype, mask: Optional[np.ndarray] = None) -> np.ndarray:
    """Saved populations (a checkpoint's) that this run can restore: the shape ``expected``, the
    run's precision ``dtype``, finite (``check_finite_state``, solid cells of ``mask`` skipped);
    else SimulationError naming the value.  One rule for 2D, 3D and a distributed lattice."""
    p = np.asarray(populations)
    if p.shape != tuple(expected):
        raise SimulationError(f"saved populations have shape {p.shape}; this run needs {tuple(expected)}")
    if p.dtype != dtype:
        raise SimulationError(f"saved populations are {p.dtype}; this run computes in {np.dtype(dtype)} "
                              f"(precision mismatch)")
    check_finite_state(p, "restore", mask)
    return p
