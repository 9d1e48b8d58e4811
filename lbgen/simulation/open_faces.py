"""Open faces of a lattice of any D (the one home of their rules): velocity inlets, pressure
outlets, outflows and free-slip walls, beside the no-slip walls and lids of
``lbgen.simulation.boundaries``.  Each face has one kind; what a link across it gets (the
kernels' rule, ``templates/common.j2``'s ``pull_bounced``; the oracle ``lbgen.reference.open``):

* **velocity inlet** -- velocity bounce-back (Ladd 1994; lbmpy's ``UBB``): the population that
  left the site towards the face comes back with the moving-wall correction of the face site's
  velocity u_in, f_p = f*_opp(p) + 2 w_p rho (xi_p . u_in) / c_s^2 (rho the site's density).  It
  is the lids' rule with a velocity per face site (normal components allowed); chosen because
  it is local to a site, exact for a linear velocity at the half-way face, mass-conserving to
  the imposed flux and stable for every operator lbgen has, where the non-equilibrium
  bounce-back (Zou-He) needs the face's corners treated by hand in 3D.  Profiles: uniform,
  ``parabolic`` (the plane channel's parabola across the walled tangential axis, the rectangular
  duct's series (White, Viscous Fluid Flow, 3rd ed., eq. 3-48) across two), ``biparabolic`` (the
  product of the two axes' parabolas, 16 U y z (H - y)(W - z) / (H W)^2: the inflow of the DFG
  3D benchmarks, Schaefer & Turek 1996; across one walled axis the parabola), or a per-site array.
* **pressure outlet** -- anti-bounce-back at a density rho_out (Krueger et al., The Lattice
  Boltzmann Method, 2017, eq. 5.53): f_p = -f*_opp(p) + 2 w_p rho_out [1 + (xi_p . u)^2 /
  (2 c_s^4) - u^2 / (2 c_s^2)], u the boundary site's velocity: it fixes the density (pressure
  p = c_s^2 rho) at the half-way face to second order without touching the tangential flow.
* **outflow** -- zero gradient (first-order extrapolation): the population the neighbour one
  site inward pulls; no value is imposed, so vortices leave with little reflection.
* **free slip** -- specular reflection at the half-way face: the mirrored population of the
  neighbour along the face; the normal velocity vanishes there and the shear stress is zero.

**Sets whose hops are longer than 1** (the thermal D2Q37, D2V17, D3Q39, D3Q103: hops of 2 and 3
sites cross an open face from up to 3 layers deep).  The same per-link rule, stated for the
virtual sites beyond the face that such a link comes from:

* **thermal velocity inlet** -- an equilibrium boundary (Krueger et al. 2017, ch. 5, the
  "equilibrium scheme"; Mohamad, Lattice Boltzmann Method, Springer 2011; FluidX3D's
  equilibrium boundary cells): every link that arrives across an inlet face, at any depth,
  gets the set's own equilibrium f_p^eq(rho, u_in, T_in), rho the arriving site's density (as
  the hop-1 inlet takes it), u_in the face site's velocity and T_in the inlet's temperature
  (``inlet_temperature``; default 1, the lattice's reference T0).  The equilibrium is the
  model's sympy-derived one (``lbgen.model.collision.equilibrium``, no force shift): it is
  linear in rho, so the kernels get its values at rho = 1 per face site and multiply by the
  site's density.  Velocity bounce-back is not derived for links that start several layers
  inside the face, and it imposes no temperature; the equilibrium imposes u_in and T_in at once.
* **outflow** -- zero gradient: the virtual sites beyond the face hold the face layer's
  post-collision populations (the source site's coordinate along the face's axis clamped into
  the lattice); for hops of 1 it is the rule above.
* **free slip** -- the virtual sites are the mirror image of the lattice in the half-way face
  (source coordinate s -> -1 - s at a low face, 2 L - 1 - s at a high one) with the population's
  normal component reversed; for hops of 1 it is the rule above.
* **pressure outlet** -- not on these sets (refused in words): anti-bounce-back's even part is
  the second-order equilibrium, not the thermal sets' third- or fourth-order one; use an outflow.

An inlet temperature needs a thermal set (the hop-1 sets are isothermal).
Inlet speeds follow the lids' Mach rule (``lbgen.model.physics.lid_mach_check``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Dict, Mapping, Optional, Tuple

import numpy as np

from lbgen.model.catalog import AXES, SIDES
from lbgen.simulation.parameters import SimulationError

#: the kinds of a face besides periodic, as the kernels name their bits
KINDS = ("walls", "inlets", "outlets", "outflows", "slips")
#: the inlet profiles by name (a number, a velocity vector or an array are the other forms)
PROFILES = ("uniform", "parabolic", "biparabolic")
#: terms of the rectangular duct's series (White eq. 3-48): converged to < 1e-12 at the centre
DUCT_TERMS = 200

Face = Tuple[str, str]


def _face(face, D: int, what: str) -> Face:
    text = "-".join(face) if isinstance(face, tuple) else str(face)
    axis, _, side = text.lower().partition("-")
    if axis not in AXES[:D] or side not in SIDES:
        raise SimulationError(f"{what} face {face!r}: name a face as "
                              + ", ".join(f"'{a}-{s}'" for a in AXES[:D] for s in SIDES) + f" (a {D}D lattice)")
    return axis, side


def face_index(face: Face) -> int:
    """The kernels' face number 2a + s."""
    return 2 * AXES.index(face[0]) + SIDES.index(face[1])


def face_shape(face: Face, shape) -> Tuple[int, ...]:
    """The extents of the sites of a face (the lattice's shape without the face's axis)."""
    a = AXES.index(face[0])
    return tuple(n for b, n in enumerate(shape) if b != a)


def inward(face: Face) -> int:
    """+1 where the lattice lies towards higher coordinates from the face (a low face), else -1."""
    return 1 if face[1] == "low" else -1


def faces_of(value, D: int, what: str, axes_allowed: bool) -> Tuple[Face, ...]:
    """Faces given as 'x-high', 'x-high y-low', a sequence of them, or (axes_allowed) axes."""
    if value is None:
        return ()
    if isinstance(value, tuple) and len(value) == 2 and all(isinstance(v, str) for v in value) \
            and value[1].lower() in SIDES:
        value = [value]
    if isinstance(value, str):
        items = value.replace(",", " ").split()
    elif isinstance(value, (list, tuple, set, frozenset)):
        items = list(value)
    else:
        raise SimulationError(f"{what}={value!r}: give faces as 'x-high' or a sequence of them"
                              + (" (or axes: 'y' is both its faces)" if axes_allowed else ""))
    faces = []
    for item in items:
        if axes_allowed and isinstance(item, str) and "-" not in item:
            for a in item.lower():
                if a not in AXES[:D]:
                    raise SimulationError(f"{what}={value!r}: axis {a!r}; a {D}D lattice has axes "
                                          + ", ".join(AXES[:D]))
                faces += [(a, s) for s in SIDES]
        else:
            faces.append(_face(item, D, what))
    twice = sorted({f for f in faces if faces.count(f) > 1})
    if twice:
        raise SimulationError(f"{what}={value!r} names the {'-'.join(twice[0])} face twice")
    return tuple(faces)


def _mapping(value, D: int, what: str, default) -> Dict[Face, object]:
    """{face: value} from a mapping, or faces (each taking ``default``)."""
    if value is None:
        return {}
    if isinstance(value, Mapping):
        out = {}
        for face, v in value.items():
            f = _face(face, D, what)
            if f in out:
                raise SimulationError(f"{what}: the {'-'.join(f)} face is given twice; give each face once")
            out[f] = v
        return out
    return {f: default for f in faces_of(value, D, what, axes_allowed=False)}


@dataclass(frozen=True)
class OpenFaces:
    """The checked open faces of a lattice: ``inlets`` {face: (face sites..., D) velocities},
    ``outlets`` {face: rho_out}, ``outflows`` and ``slips`` (faces); ``profiles`` {face: how the
    inlet's velocity was given} for the description; ``temperatures`` {inlet face: T_in} and the
    ``velocity_set`` with its ``max_hop`` (hops longer than 1: the inlets are equilibria)."""

    inlets: Dict[Face, np.ndarray] = field(default_factory=dict)
    outlets: Dict[Face, float] = field(default_factory=dict)
    outflows: Tuple[Face, ...] = ()
    slips: Tuple[Face, ...] = ()
    profiles: Dict[Face, str] = field(default_factory=dict)
    temperatures: Dict[Face, float] = field(default_factory=dict)
    velocity_set: Optional[str] = None
    max_hop: int = 1

    def __bool__(self) -> bool:
        return bool(self.inlets or self.outlets or self.outflows or self.slips)

    def kinds(self) -> Dict[Face, str]:
        """{face: 'inlet' | 'outlet' | 'outflow' | 'slip'}."""
        out = {f: "inlet" for f in self.inlets}
        out.update({f: "outlet" for f in self.outlets})
        out.update({f: "outflow" for f in self.outflows})
        out.update({f: "slip" for f in self.slips})
        return out

    def kernel_fields(self, shape, faces=None) -> dict:
        """The ``Program.set_boundaries`` keywords of the open faces (``faces``: only these)."""
        D = len(shape)
        keep = (lambda f: True) if faces is None else (lambda f: f in faces)
        bits = {k: sum(1 << face_index(f) for f in fs if keep(f))
                for k, fs in (("inlets", self.inlets), ("outlets", self.outlets), ("outflows", self.outflows),
                              ("slips", self.slips))}
        rho_out = np.ones(2 * D)
        for f, rho in self.outlets.items():
            rho_out[face_index(f)] = rho
        inlets = {f: u for f, u in self.inlets.items() if keep(f)}
        if not inlets:
            inflow = None
        elif self.max_hop == 1:
            inflow = inflow_array(inlets, shape)
        else:
            inflow = inflow_equilibria(inlets, self.temperatures, shape, self.velocity_set)
        return {**bits, "rho_out": rho_out, "inflow": inflow}

    def describe(self) -> str:
        """'inlet x-low (parabolic U = 0.05), outlet x-high (rho 1), slip y-low'."""
        parts = [f"inlet {'-'.join(f)} ({self.profiles.get(f, 'profile')}"
                 + (f", T_in {self.temperatures[f]:g}" if f in self.temperatures else "") + ")" for f in self.inlets]
        parts += [f"outlet {'-'.join(f)} (rho {rho:g})" for f, rho in self.outlets.items()]
        parts += [f"outflow {'-'.join(f)}" for f in self.outflows]
        parts += [f"slip {'-'.join(f)}" for f in self.slips]
        return ", ".join(parts)


def inflow_size(shape, values=None) -> int:
    """Values of the kernels' inflow array: ``values`` per site of every face (2D faces): the D
    velocity components (the default; hops of 1), or the Q populations of the inlet's
    equilibrium at unit density (sets whose hops are longer)."""
    D = len(shape)
    V = D if values is None else int(values)
    return sum(V * int(np.prod(shape)) // shape[f // 2] for f in range(2 * D))


def inflow_array(inlets: Mapping[Face, np.ndarray], shape) -> np.ndarray:
    """The kernels' flat inflow array: face f's block (V values per face site, row-major over
    the other axes) after the blocks of faces 0 .. f-1; faces without an inlet hold 0.
    ``inlets`` {face: (face sites..., V)}: the velocities (V = D), or the equilibria (V = Q)."""
    D = len(shape)
    V = next(iter(inlets.values())).shape[-1] if inlets else D
    blocks = []
    for f in range(2 * D):
        face = (AXES[f // 2], SIDES[f % 2])
        block = np.zeros(face_shape(face, shape) + (V,))
        if face in inlets:
            block[...] = inlets[face]
        blocks.append(block.reshape(-1))
    return np.concatenate(blocks)


def inlet_equilibrium(u: np.ndarray, T_in: float, velocity_set: str) -> np.ndarray:
    """The set's equilibrium at unit density, velocity u (..., D) and temperature T_in, no force
    (model units; ``lbgen.model.collision.equilibrium``, the sympy-derived one the kernels
    collide with): an array (..., Q).  rho f^eq(1, u, T) = f^eq(rho, u, T): the kernels multiply
    by the arriving site's density."""
    from lbgen.model.derived import equilibrium_assignments
    eq = equilibrium_assignments(velocity_set)
    u = np.asarray(u, dtype=float)
    D = u.shape[-1]
    ones = np.ones(u.shape[:-1])
    out = eq.evaluate([ones, *(u[..., k] for k in range(D)), T_in * ones],
                      **{str(p): 0.0 for p in eq.parameters})
    return np.moveaxis(out, 0, -1)


def inflow_equilibria(inlets: Mapping[Face, np.ndarray], temperatures: Mapping[Face, float], shape,
                      velocity_set: str) -> np.ndarray:
    """The kernels' flat inflow array of a set whose hops are longer than 1: per face site the
    Q populations of ``inlet_equilibrium`` (T_in from ``temperatures``, default 1)."""
    return inflow_array({f: inlet_equilibrium(u, temperatures.get(f, 1.0), velocity_set)
                         for f, u in inlets.items()}, shape)


def channel_profile(n: int) -> np.ndarray:
    """The plane Poiseuille parabola across n sites between half-way walls (at -1/2 and
    n - 1/2), 1 at the centre: 4 s (n - s) / n^2, s = i + 1/2."""
    s = np.arange(n) + 0.5
    return 4.0 * s * (n - s) / n ** 2


def profile_across(kind: str, sizes) -> np.ndarray:
    """The shape (1 at the centre) of a ``parabolic`` or ``biparabolic`` inlet across the walled
    tangential axes of ``sizes`` sites (one or two): the channel's parabola across one axis; across
    two the duct's Poiseuille series (parabolic) or the product of the parabolas (biparabolic)."""
    n = [int(v) for v in sizes]
    if len(n) == 1:
        return channel_profile(n[0])
    if kind == "biparabolic":
        return channel_profile(n[0])[:, None] * channel_profile(n[1])[None, :]
    return duct_profile(*n)


def duct_profile(ny: int, nz: int, terms: int = DUCT_TERMS) -> np.ndarray:
    """The rectangular duct's Poiseuille profile across ny x nz sites between half-way walls, 1
    at the centre (White, Viscous Fluid Flow, 3rd ed., eq. 3-48): with half-widths a = ny/2,
    b = nz/2 and coordinates y, z from the centre,
    u ~ sum_{i odd} (-1)^((i-1)/2) [1 - cosh(i pi z / 2a) / cosh(i pi b / 2a)] cos(i pi y / 2a) / i^3."""
    return duct_series(np.arange(ny) + 0.5 - ny / 2, np.arange(nz) + 0.5 - nz / 2, ny / 2, nz / 2, terms) \
        / duct_series(np.zeros(1), np.zeros(1), ny / 2, nz / 2, terms)[0, 0]


def duct_series(y, z, a: float, b: float, terms: int = DUCT_TERMS) -> np.ndarray:
    """White's series (eq. 3-48) without its prefactor 16 a^2 (-dp/dx) / (mu pi^3), on the grid
    y x z (-a <= y <= a, -b <= z <= b)."""
    y, z = np.asarray(y, float)[:, None], np.asarray(z, float)[None, :]
    out = np.zeros((y.size, z.size))
    for i in range(1, 2 * terms, 2):
        k = i * math.pi / (2 * a)
        # 1 - cosh(k z) / cosh(k b), written with exponentials that do not overflow
        ratio = np.exp(k * (np.abs(z) - b)) * (1 + np.exp(-2 * k * np.abs(z))) / (1 + math.exp(-2 * k * b))
        out += (-1) ** ((i - 1) // 2) * (1 - ratio) * np.cos(k * y) / i ** 3
    return out


def duct_centre_speed(a: float, b: float, gradient: float, mu: float, terms: int = DUCT_TERMS) -> float:
    """The centre speed of the duct of half-widths a, b under the pressure gradient -dp/dx =
    ``gradient`` at dynamic viscosity mu (White eq. 3-48)."""
    return 16 * a * a * gradient / (mu * math.pi ** 3) * float(duct_series([0.0], [0.0], a, b, terms)[0, 0])


def _bounded(face: Face, walls, D: int):
    """The tangential axes of a face whose two faces are no-slip walls."""
    return [b for b in AXES[:D] if b != face[0] and (b, "low") in walls and (b, "high") in walls]


def _inlet_velocity(face: Face, value, shape, walls, velocity_set, warn) -> Tuple[np.ndarray, str]:
    """(the face sites' velocities (face shape + (D,)), how it was given)."""
    D = len(shape)
    fshape = face_shape(face, shape)
    a = AXES.index(face[0])
    name = "-".join(face)
    normal = np.zeros(D)
    normal[a] = inward(face)
    if isinstance(value, (tuple, list)) and len(value) == 2 and isinstance(value[0], str):
        kind, speed = value[0].lower(), value[1]
    elif isinstance(value, str):
        kind, speed = value.lower(), None
    else:
        kind, speed = None, None
    if kind is not None:
        if kind not in PROFILES:
            raise SimulationError(f"inlet {name}: profile {kind!r}; choose one of {', '.join(PROFILES)} "
                                  f"(e.g. ('parabolic', 0.05): centre speed 0.05), a speed, a velocity or an array")
        speed = _finite(speed, f"inlet {name}: speed")
        if kind == "uniform":
            u, how = np.broadcast_to(speed * normal, fshape + (D,)).copy(), f"uniform U = {speed:g}"
        else:
            bounded = _bounded(face, walls, D)
            if not bounded:
                raise SimulationError(f"inlet {name}: a {kind} profile needs no-slip walls on both faces of a "
                                      f"tangential axis ({', '.join(b for b in AXES[:D] if b != face[0])}); "
                                      f"give walls there or a uniform inlet")
            others = [b for b in AXES[:D] if b != face[0]]
            n = [shape[AXES.index(b)] for b in bounded]
            shaped = profile_across(kind, n)
            sel = tuple(slice(None) if b in bounded else None for b in others)
            prof = np.broadcast_to(shaped[sel], fshape)
            u = prof[..., None] * (speed * normal)
            how = f"{kind} U = {speed:g} ({'channel' if len(n) == 1 else 'duct'} across {''.join(bounded)})"
    elif np.ndim(value) == 0:
        speed = _finite(value, f"inlet {name}: speed")
        u, how = np.broadcast_to(speed * normal, fshape + (D,)).copy(), f"uniform U = {speed:g}"
    else:
        arr = np.asarray(value, dtype=float) if _numeric(value) else None
        if arr is None:
            raise SimulationError(f"inlet {name}: {value!r}; give a speed, ('parabolic', U), ('uniform', U), "
                                  f"a velocity of {D} components or an array of the face's sites {fshape}")
        if arr.shape == (D,):
            u, how = np.broadcast_to(arr, fshape + (D,)).copy(), "uniform velocity (" + ", ".join(
                f"{c:g}" for c in arr) + ")"
        elif arr.shape == fshape:
            u, how = arr[..., None] * normal, "profile array (normal speed)"
        elif arr.shape == fshape + (D,):
            u, how = arr.copy(), "profile array"
        else:
            raise SimulationError(f"inlet {name}: an array of shape {arr.shape}; the face's sites are {fshape}: "
                                  f"give {fshape} (normal speeds), {fshape + (D,)} (velocities) or ({D},)")
        if not np.isfinite(arr).all():
            raise SimulationError(f"inlet {name}: the profile holds a value that is not finite; give finite "
                                  f"velocities (model units)")
    if velocity_set is not None:
        from lbgen.model.physics import lid_mach_check
        peak = np.unravel_index(int(np.argmax((u ** 2).sum(-1))), fshape) if u.size else ()
        try:
            note = lid_mach_check(name, tuple(u[peak]), velocity_set, what="inlet")
        except ValueError as e:
            raise SimulationError(str(e)) from None
        if note and warn is not None:
            warn(note)
    return np.ascontiguousarray(u, dtype=np.float64), how


def _numeric(value) -> bool:
    try:
        np.asarray(value, dtype=float)
        return True
    except (TypeError, ValueError):
        return False


def _finite(v, what: str) -> float:
    try:
        x = float(v)
    except (TypeError, ValueError):
        x = float("nan")
    if not math.isfinite(x):
        raise SimulationError(f"{what} {v!r}: need a finite number (model units)")
    return x


def open_faces(inlet=None, outlet=None, outflow=None, slip=None, *, walls=(), shape, velocity_set=None,
               max_hop: int = 1, mask=None, warn=None, inlet_temperature=None) -> OpenFaces:
    """The checked open faces of a lattice of ``shape`` with the no-slip wall faces ``walls``:
    ``inlet`` {face: speed | ('parabolic'|'uniform', U) | velocity | array}, ``outlet`` faces
    (rho_out 1) or {face: rho_out}, ``outflow`` faces, ``slip`` faces or axes,
    ``inlet_temperature`` T_in of every inlet or {inlet face: T_in} (thermal sets; default 1).
    Refused in words: a face of two kinds, an open face whose opposite face is periodic, a
    pressure outlet on a set whose hops are longer than 1, an inlet temperature on an isothermal
    set, on a face that is no inlet, not finite or <= 0, a non-positive outlet density, an inlet
    above the Mach limit, a solid voxel on an open face."""
    D = len(shape)
    inlets_in = _mapping(inlet, D, "inlet", None)
    temperatures = _temperatures(inlet_temperature, inlets_in, D, velocity_set, max_hop)
    outlets_in = _mapping(outlet, D, "outlet", 1.0)
    outflows = faces_of(outflow, D, "outflow", axes_allowed=False)
    slips = faces_of(slip, D, "slip", axes_allowed=True)
    given = [("wall", f) for f in walls] + [("inlet", f) for f in inlets_in] + [("outlet", f) for f in outlets_in] \
        + [("outflow", f) for f in outflows] + [("slip", f) for f in slips]
    if len(given) == len(walls):
        if temperatures:
            raise SimulationError(f"inlet_temperature={inlet_temperature!r}: an inlet temperature needs a velocity "
                                  f"inlet (inlet=...)")
        return OpenFaces()
    seen: Dict[Face, str] = {}
    for kind, f in given:
        if f in seen:
            raise SimulationError(f"the {'-'.join(f)} face is given as {seen[f]} and as {kind}: a face has one "
                                  f"kind (wall, lid, inlet, outlet, outflow, slip or periodic)")
        seen[f] = kind
    if max_hop != 1 and outlets_in:
        raise SimulationError(f"a pressure outlet ({', '.join('-'.join(f) for f in outlets_in)}) needs a velocity set "
                              f"whose hops are 1 (d2q9, d3q15, d3q19, d3q27): its anti-bounce-back's even part is the "
                              f"second-order equilibrium, not {velocity_set}'s, whose hops of {max_hop} sites cross "
                              f"several layers of the face; on {velocity_set} use an outflow (zero gradient), "
                              f"beside velocity inlets (with a temperature) and slip walls")
    for kind, f in given:
        other = (f[0], "high" if f[1] == "low" else "low")
        if kind != "wall" and other not in seen:
            raise SimulationError(f"{kind} on the {'-'.join(f)} face: the opposite {'-'.join(other)} face is "
                                  f"periodic; an axis with an open face needs a kind on both faces (a wall, an "
                                  f"inlet, an outlet, an outflow or a slip wall)")
    outlets = {}
    for f, rho in outlets_in.items():
        rho = _finite(rho, f"outlet {'-'.join(f)}: density")
        if rho <= 0:
            raise SimulationError(f"outlet {'-'.join(f)}: density {rho:g}; an outlet's density must be > 0 "
                                  f"(model units, 1 the reference)")
        outlets[f] = rho
    inlets, profiles = {}, {}
    for f, value in inlets_in.items():
        inlets[f], profiles[f] = _inlet_velocity(f, value, shape, walls, velocity_set, warn)
    if mask is not None:
        for f in [f for k, f in given if k != "wall"]:
            a = AXES.index(f[0])
            layer = np.take(np.asarray(mask), 0 if f[1] == "low" else shape[a] - 1, axis=a)
            if np.any(layer):
                at = tuple(int(i[0]) for i in np.nonzero(layer))
                raise SimulationError(f"mask: a solid voxel on the {seen[f]} face {'-'.join(f)} (at "
                                      + ", ".join(f"{b}={i}" for b, i in zip([b for b in AXES[:D] if b != f[0]], at))
                                      + "); keep bodies one site away from open faces")
    exits = [f for k, f in given if k in ("outlet", "outflow")]
    if mask is not None and np.any(mask) and (inlets or len(exits) > 1) and exits:
        periodic = [a for a in AXES[:D] if not any(f[0] == a for f in seen)]
        sources = list(inlets) or exits[:1]
        for target in [f for f in exits if f not in sources]:
            _check_path(np.asarray(mask) != 0, sources, target, periodic, seen)
    return OpenFaces(inlets, outlets, outflows, slips, profiles, temperatures, velocity_set, max_hop)


def _temperatures(value, inlets: Mapping[Face, object], D: int, velocity_set, max_hop: int) -> Dict[Face, float]:
    """{inlet face: T_in} of ``inlet_temperature`` (a number: every inlet; a mapping: per face),
    checked: finite and > 0, on inlet faces, on a thermal set."""
    if value is None:
        return {}
    if isinstance(value, Mapping):
        given = _mapping(value, D, "inlet_temperature", None)
    else:
        if not inlets:
            raise SimulationError(f"inlet_temperature={value!r}: an inlet temperature needs a velocity inlet "
                                  f"(inlet=...)")
        given = {f: value for f in inlets}
    if max_hop == 1:
        raise SimulationError(f"inlet_temperature={value!r}: {velocity_set or 'this set'} is isothermal (T = 1); an "
                              f"inlet temperature needs a thermal set (d2q37, d2v17, d3q39, d3q103)")
    out = {}
    for f, T in given.items():
        if f not in inlets:
            raise SimulationError(f"inlet_temperature: the {'-'.join(f)} face is not a velocity inlet; give "
                                  f"temperatures of the inlet faces ({', '.join('-'.join(g) for g in inlets) or 'none'})")
        T = _finite(T, f"inlet {'-'.join(f)}: temperature")
        if T <= 0:
            raise SimulationError(f"inlet {'-'.join(f)}: temperature {T:g}; an inlet temperature must be > 0 "
                                  f"(units of the reference temperature T0 = 1)")
        out[f] = T
    return out


def _layer(a: int, side: str, shape) -> tuple:
    return tuple(slice(None) if k != a else (0 if side == "low" else shape[a] - 1) for k in range(len(shape)))


def _check_path(solid: np.ndarray, sources, target: Face, periodic, kinds) -> None:
    """SimulationError when no fluid path joins the ``sources`` faces to ``target``: a flood fill of
    the fluid sites from the sources' layers (each step to the 3^D neighbours, across the periodic
    axes) reaching no site of the target's layer."""
    fluid, shape = ~solid, solid.shape
    reached = np.zeros(shape, bool)
    for f in sources:
        index = _layer(AXES.index(f[0]), f[1], shape)
        reached[index] = fluid[index]
    end = _layer(AXES.index(target[0]), target[1], shape)
    while not reached[end].any():
        grown = reached.copy()
        for k in range(len(shape)):              # one hop along each axis in turn: the 3^D neighbourhood
            step = grown.copy()
            if AXES[k] in periodic:
                step |= np.roll(grown, 1, axis=k) | np.roll(grown, -1, axis=k)
            else:
                lo, hi = [slice(None)] * len(shape), [slice(None)] * len(shape)
                lo[k], hi[k] = slice(1, None), slice(None, -1)
                step[tuple(lo)] |= grown[tuple(hi)]
                step[tuple(hi)] |= grown[tuple(lo)]
            grown = step & fluid
        if np.array_equal(grown, reached):
            names = " and ".join(f"the {kinds[f]} {'-'.join(f)}" for f in sources)
            raise SimulationError(f"mask: the bodies block {names} from the {kinds[target]} {'-'.join(target)}: "
                                  f"no fluid path joins them (a flood fill of the fluid from {names} reaches "
                                  f"{int(grown.sum())} of the {int(fluid.sum())} fluid sites, none on "
                                  f"{'-'.join(target)}); leave a gap in the bodies from face to face")
        reached = grown


def face_fluxes(fields: Mapping[str, np.ndarray], faces, r: float) -> Dict[str, float]:
    """The mass flux out of the lattice through each open face of ``faces`` ({face: kind}),
    sites per step (lattice units: the model velocity over ``r``): the sum of rho u_n over the
    face's layer of sites, u_n the physical velocity along the outward normal (negative: in).
    Fields made by slabs (a mapping with ``part``, or a float64 view of one: lbgen.output.slabbed)
    give the layer alone, read as float64: the same sums, no whole field."""
    out = {}
    source = getattr(fields, "fields", fields)
    for face in faces:
        a = AXES.index(face[0])
        if hasattr(source, "part"):
            layer = 0 if face[1] == "low" else source.shape[a] - 1
            plane = source.part(("rho", "u" + face[0]), tuple(layer if k == a else slice(None) for k in range(a + 1)))
            flux = (np.asarray(plane["rho"], dtype=np.float64) *
                    np.asarray(plane["u" + face[0]], dtype=np.float64)).sum() / r
            out["-".join(face)] = float(-flux if face[1] == "low" else flux)
            continue
        u = np.asarray(fields["u" + face[0]])
        layer = 0 if face[1] == "low" else u.shape[a] - 1
        flux = np.take(np.asarray(fields["rho"]) * u, layer, axis=a).sum() / r
        out["-".join(face)] = float(-flux if face[1] == "low" else flux)
    return out
