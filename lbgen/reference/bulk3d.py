"""A deliberately plain NumPy oracle for 3D lattice Boltzmann: D3Q19, D3Q27, the thermal D3Q39 and D3Q103.

Independent of the model on purpose: it imports nothing of lbgen.  The lattices, their
weights, the equilibrium, the collision operators and the boundaries are typed here from
the textbook (e.g. Krueger et al., *The Lattice Boltzmann Method*, Springer 2017, ch. 3,
5, 6 and 7), in **lattice units**: hops c_i in {-1, 0, 1}^3, c_s^2 = 1/3, kinematic
viscosity nu = c_s^2 (tau - 1/2) = (tau - 1/2)/3.

D3Q39 (Shan, Yuan & Chen, J. Fluid Mech. 550 (2006) 413: shells (0,0,0), (1,0,0), (1,1,1),
(2,0,0), (2,2,0), (3,0,0) with weights 1/12, 1/12, 1/27, 2/135, 1/432, 1/1620, c_s^2 = 2/3)
is thermal: its equilibrium is their third-order Hermite expansion of the Maxwellian at
temperature theta (T = 1 is the lattice's reference, c_s^2 theta the lattice temperature),

    f_eq = w rho [1 + xi.v + ((xi.v)^2 - v^2 + (theta - 1)(xi^2 - D)) / 2
                  + xi.v ((xi.v)^2 - 3 v^2 + 3 (theta - 1)(xi^2 - D - 2)) / 6],

xi = c / c_s, v = u / c_s; its BGK takes the shifted equilibrium with u* = u + tau a and
theta* = theta + tau (1 - tau) |a|^2 / (D c_s^2) (the energy the force adds, kept), as the 2D
model does (docs/d2q37.md).  The regularized operator here is the second-order one of the
isothermal sets.

D3Q103 (Shan, Phys. Rev. E 81 (2010) 036702; degree 9 on hop-3 shells, c_s^2 that of D2Q37)
is of fourth order: its weights come from this module's own solve of the moment conditions
(``gauss_hermite_weights``), its BGK is D3Q39's, and its equilibrium adds the fourth-order terms

    + [(xi.v)^4 - 6 (xi.v)^2 v^2 + 3 v^4] / 24
    + (theta - 1) [(xi^2 - D - 2)((xi.v)^2 - v^2) - 2 (xi.v)^2] / 4
    + (theta - 1)^2 [xi^4 - 2 (D + 2) xi^2 + D (D + 2)] / 8

(with D = 2, the D2Q37 formula of docs/d2q37.md).

Relation to lbgen's model units (``lbgen.model``): the model's molecular velocities are
xi_i = r c_i with r = 1/c_s = sqrt(3), so its velocity and force per step are r times
the lattice ones (u_model = r u, a_model = r a); its Hermite expansion of order 2 at
theta = 1 is the polynomial below, term for term (xi.u = c.u / c_s^2, |u_model|^2 =
|u|^2 / c_s^2).

Populations are arrays ``f`` of shape (Q, LX, LY, LZ) (the local operators take any
trailing field shape); velocities are arrays of shape (3, ...).  The population order is
lbgen's: c_x descending, then c_y ascending, then c_z ascending (the opposite of p is
Q - 1 - p).  One step is ``collide(stream(f))`` on post-collision populations, as in
the 2D oracle.  Speed is not a goal: clarity is.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from functools import lru_cache
from itertools import permutations, product
from typing import Callable, Dict, Optional, Tuple

import numpy as np

__all__ = ["CS2", "Lattice", "LATTICES", "lattice", "equilibrium", "fields", "temperature", "collide_bgk",
           "collide_regularized", "collide", "stream", "Boundaries", "step", "run", "mass", "momentum",
           "physical_velocity", "physical_fields", "physical_equilibrium"]

#: the lattice speed of sound squared of D3Q19 and D3Q27 (D3Q39: ``Lattice.cs2``)
CS2 = 1.0 / 3.0
D = 3
#: the oracle's own names of axes and sides (it imports nothing from lbgen, on purpose; the same
#: names as ``lbgen.model.catalog.AXES`` / ``SIDES``)
AXES = {"x": 0, "y": 1, "z": 2}
SIDES = ("low", "high")


@dataclass(frozen=True)
class Lattice:
    """Hops c (Q, 3) and weights w (Q,) by |c|^2, in lbgen's population order."""

    name: str
    c: np.ndarray = field(repr=False)
    w: np.ndarray = field(repr=False)
    weights_by_norm: Dict[int, Fraction] = field(repr=False)
    #: the speed of sound squared (lattice units) and the Hermite order of the equilibrium
    cs2: float = CS2
    order: int = 2

    @property
    def Q(self) -> int:
        return len(self.w)

    @property
    def thermal(self) -> bool:
        return self.order >= 3

    @property
    def opposite(self) -> np.ndarray:
        index = {tuple(v): i for i, v in enumerate(self.c.tolist())}
        return np.array([index[tuple(-v for v in c)] for c in self.c.tolist()])


def _members(shell) -> set:
    """The hops of one shell: every signed permutation of it."""
    return {tuple(s * x for s, x in zip(signs, perm)) for perm in set(permutations(shell))
            for signs in product((1, -1), repeat=3)}


def _shell_lattice(name: str, shells: Dict[Tuple[int, int, int], Fraction], cs2: Fraction = Fraction(1, 3),
                   order: int = 2) -> Lattice:
    """A lattice from its shells: every signed permutation of each, weighted by its shell
    (Fractions, or floats where the weights are irrational)."""
    weight = {v: w for shell, w in shells.items() for v in _members(shell)}
    hops = sorted(weight, key=lambda v: (-v[0], v[1], v[2]))
    c = np.array(hops, dtype=np.int64)
    w = np.array([float(weight[v]) for v in hops])
    by_norm = {sum(x * x for x in s): wt for s, wt in shells.items()}
    return Lattice(name, c, w, by_norm, float(cs2), order)


def _double_factorial(n: int) -> int:
    return 1 if n <= 0 else n * _double_factorial(n - 2)


def gauss_hermite_weights(shells, cs2_poly, degree: int) -> Tuple[float, Dict[Tuple[int, int, int], float]]:
    """(cs^2, weights by shell) of a 3D quadrature of ``degree`` whose cs^2 is the root in
    (0, 1) of the polynomial ``cs2_poly`` (coefficients, highest first) that admits one:
    sum_i w_i xi_i^(a, b, c) equals the standard normal's moment (a-1)!! (b-1)!! (c-1)!! for
    every even monomial of degree below ``degree`` (the odd ones vanish by symmetry),
    xi = c / sqrt(cs^2).  Solved in 40 digits (mpmath: least squares on the conditions), checked
    to 1e-30, rounded to double; ValueError where no root gives one.  The oracle's own solve,
    written from the definition (``lbgen.model.velocity_set`` solves in sympy)."""
    import mpmath
    with mpmath.workdps(40):
        monomials = [(a, b, c) for a in range(0, degree, 2) for b in range(0, a + 1, 2) for c in range(0, b + 1, 2)
                     if a + b + c < degree]
        want = mpmath.matrix([_double_factorial(a - 1) * _double_factorial(b - 1) * _double_factorial(c - 1)
                              for a, b, c in monomials])
        for root in mpmath.polyroots([mpmath.mpf(k) for k in cs2_poly], maxsteps=200, extraprec=100):
            if abs(mpmath.im(root)) > 1e-30 or not 0 < mpmath.re(root) < 1:
                continue
            cs2 = mpmath.re(root)
            A = mpmath.matrix([[sum(mpmath.mpf(x ** a * y ** b * z ** c) for x, y, z in _members(shell))
                                / cs2 ** mpmath.mpf((a + b + c) / 2) for shell in shells] for a, b, c in monomials])
            w, residual = mpmath.qr_solve(A, want)
            if residual < 1e-30 and all(v > 0 for v in w):
                return float(cs2), {shell: float(v) for shell, v in zip(shells, w)}
    raise ValueError(f"no quadrature of degree {degree} on these shells with cs^2 a root of {cs2_poly}")


#: D3Q103 (Shan, Phys. Rev. E 81, 036702, 2010): its c_s^2 = 1/r^2 is that of D2Q37, the root
#: of 35 t^3 - 70 t^2 + 49 t - 12 (Philippi et al., Phys. Rev. E 73, 056702, 2006; r = 1.19697977...)
D3Q103_SHELLS = ((0, 0, 0), (1, 0, 0), (1, 1, 1), (2, 0, 0), (2, 1, 0), (2, 2, 0), (2, 2, 2), (3, 0, 0), (3, 1, 1),
                 (3, 3, 3))


def _d3q103() -> Lattice:
    cs2, weights = gauss_hermite_weights(D3Q103_SHELLS, (35, -70, 49, -12), 9)
    return _shell_lattice("D3Q103", weights, cs2, order=4)


#: name -> how the lattice is built: the textbook weights by shell (D3Q39: Shan, Yuan & Chen
#: 2006, Table 1); D3Q103 (Shan, Phys. Rev. E 81, 036702, 2010; degree 9, fourth order) from
#: the oracle's own solve of its moments.  Each is built once, on first use (``lattice``): the
#: D3Q103 solve takes ~0.2 s, which importing this module need not pay.
_BUILDERS: Dict[str, Callable[[], Lattice]] = {
    "d3q19": lambda: _shell_lattice("D3Q19", {(0, 0, 0): Fraction(1, 3), (1, 0, 0): Fraction(1, 18),
                                              (1, 1, 0): Fraction(1, 36)}),
    "d3q27": lambda: _shell_lattice("D3Q27", {(0, 0, 0): Fraction(8, 27), (1, 0, 0): Fraction(2, 27),
                                              (1, 1, 0): Fraction(1, 54), (1, 1, 1): Fraction(1, 216)}),
    "d3q39": lambda: _shell_lattice("D3Q39", {(0, 0, 0): Fraction(1, 12), (1, 0, 0): Fraction(1, 12),
                                              (1, 1, 1): Fraction(1, 27), (2, 0, 0): Fraction(2, 135),
                                              (2, 2, 0): Fraction(1, 432), (3, 0, 0): Fraction(1, 1620)},
                                    Fraction(2, 3), order=3),
    "d3q103": _d3q103,
}
#: the oracle's lattice names
LATTICES: Tuple[str, ...] = tuple(_BUILDERS)


@lru_cache(maxsize=None)
def _built(name: str) -> Lattice:
    return _BUILDERS[name]()


def lattice(name) -> Lattice:
    if isinstance(name, Lattice):
        return name
    key = str(name).lower()
    if key not in _BUILDERS:
        raise ValueError(f"the 3D oracle has no lattice {name!r}; it has {', '.join(LATTICES)}")
    return _built(key)


def _col(v, ndim):
    """A per-population vector (Q,) shaped to broadcast against fields of ndim dims."""
    return np.asarray(v, dtype=float).reshape((-1,) + (1,) * ndim)


def _cdot(lat: Lattice, u):
    """c_i . u for every population, shape (Q, *field)."""
    u = np.asarray(u, dtype=float)
    return np.einsum("ia,a...->i...", lat.c.astype(float), u)


# --- equilibrium and fields -------------------------------------------------------------

def equilibrium(rho, u, lat="d3q19", T=1.0):
    """f_eq,i = w_i rho [1 + c.u/cs^2 + (c.u)^2/(2 cs^4) - |u|^2/(2 cs^2)]; u shape (3, *field).
    A thermal lattice: the third-order expansion at temperature T of the module doc (D3Q39),
    and on a fourth-order one (D3Q103) its fourth-order terms too."""
    lat = lattice(lat)
    rho = np.asarray(rho, dtype=float)
    u = np.asarray(u, dtype=float)
    cs2 = lat.cs2
    cu = _cdot(lat, u)
    u2 = (u * u).sum(axis=0)
    if not lat.thermal:
        return _col(lat.w, rho.ndim) * rho * (1.0 + cu / cs2 + cu * cu / (2.0 * cs2 * cs2) - u2 / (2.0 * cs2))
    xv, v2 = cu / cs2, u2 / cs2                        # xi.v and v^2 with xi = c/c_s, v = u/c_s
    xi2 = _col((lat.c ** 2).sum(axis=1) / cs2, rho.ndim)
    dT = np.asarray(T, dtype=float) - 1.0
    bracket = (1.0 + xv + 0.5 * (xv * xv - v2 + dT * (xi2 - D))
               + xv * (xv * xv - 3.0 * v2 + 3.0 * dT * (xi2 - D - 2.0)) / 6.0)
    if lat.order >= 4:
        bracket = bracket + ((xv ** 4 - 6.0 * xv * xv * v2 + 3.0 * v2 * v2) / 24.0
                             + dT / 4.0 * ((xi2 - D - 2.0) * (xv * xv - v2) - 2.0 * xv * xv)
                             + dT * dT / 8.0 * (xi2 * xi2 - 2.0 * (D + 2) * xi2 + D * (D + 2)))
    return _col(lat.w, rho.ndim) * rho * bracket


def fields(f, lat="d3q19"):
    """(rho, u): rho = sum f, rho u = sum c f (the moments of the populations as they are)."""
    lat = lattice(lat)
    f = np.asarray(f, dtype=float)
    rho = f.sum(axis=0)
    u = np.einsum("ia,i...->a...", lat.c.astype(float), f) / rho
    return rho, u


def temperature(f, lat="d3q39"):
    """theta = sum |c - u|^2 f / (D rho cs^2): the model temperature (1 on isothermal lattices)."""
    lat = lattice(lat)
    rho, u = fields(f, lat)
    if not lat.thermal:
        return np.ones_like(rho)
    c = lat.c.astype(float)
    peculiar = ((c.reshape(c.shape + (1,) * rho.ndim) - u[None]) ** 2).sum(axis=1)
    return (peculiar * np.asarray(f, dtype=float)).sum(axis=0) / (D * rho * lat.cs2)


def physical_velocity(f, force=(0.0, 0.0, 0.0), lat="d3q19"):
    """The half-step-corrected velocity u + a/2 of populations under acceleration a."""
    rho, u = fields(f, lat)
    return u + 0.5 * _vector(force, u.ndim - 1)


def physical_fields(f, force=(0.0, 0.0, 0.0), lat="d3q19"):
    """(rho, u_H) of **post-collision** populations f (what ``step`` returns): both operators
    add the force a to the velocity (u_post = u_pre + a), and the physical (half-step)
    velocity is the mean of the two, u_H = u_post - a/2.  (``physical_velocity`` adds a/2:
    it is the half step seen from the pre-collision, streamed populations.)"""
    rho, u = fields(f, lat)
    return rho, u - 0.5 * _vector(force, rho.ndim)


def physical_equilibrium(rho, u, force=(0.0, 0.0, 0.0), lat="d3q19"):
    """Post-collision populations at equilibrium whose physical fields (``physical_fields``)
    are (rho, u): the equilibrium at the stored velocity u + a/2."""
    rho = np.asarray(rho, dtype=float)
    return equilibrium(rho, np.asarray(u, dtype=float) + 0.5 * _vector(force, rho.ndim), lat)


def _vector(a, ndim):
    a = np.asarray(a, dtype=float)
    return a.reshape((3,) + (1,) * ndim) if a.ndim == 1 else a


# --- collision ---------------------------------------------------------------------------

def collide_bgk(f, tau, force=(0.0, 0.0, 0.0), lat="d3q19"):
    """BGK with the shifted-equilibrium force (as lbgen's model): u* = u + tau a,
    f <- f - (f - f_eq(rho, u*)) / tau; a: the velocity gain per step (lattice units).
    Thermal lattices also shift theta* = theta + tau (1 - tau) |a|^2 / (D cs^2)."""
    lat = lattice(lat)
    rho, u = fields(f, lat)
    a = _vector(force, rho.ndim)
    us = u + tau * a
    if not lat.thermal:
        return f - (f - equilibrium(rho, us, lat)) / tau
    Ts = temperature(f, lat) + tau * (1.0 - tau) * (a * a).sum(axis=0) / (D * lat.cs2)
    return f - (f - equilibrium(rho, us, lat, Ts)) / tau


def collide_regularized(f, C1=1e-3, force=(0.0, 0.0, 0.0), lat="d3q19"):
    """The regularized operator (Latt & Chopard, Math. Comput. Simul. 72 (2006) 165), with
    lbgen's forcing, written on the stress tensor:

        f_i <- w_i [rho + c_i.j'/cs^2 + Q_i : S / (2 cs^4)],   Q_i = c_i c_i - cs^2 I,
        j' = rho (u + a),   S = rho u* u* + (1 - 1/tau) (Pi - rho cs^2 I - rho u* u*),

    Pi = sum c c f, u* = u + tau a, tau = 1/2 + C1/rho (the model's tau1 at T = 1): the
    non-equilibrium stress about the shifted equilibrium is relaxed with tau, the momentum
    gains rho a, and the populations are rebuilt on the second-order Hermite basis.
    """
    lat = lattice(lat)
    if lat.thermal:
        raise ValueError(f"the oracle's regularized operator is second order (D3Q19, D3Q27), not {lat.name}'s")
    f = np.asarray(f, dtype=float)
    nd = f.ndim - 1
    rho, u = fields(f, lat)
    a = _vector(force, nd)
    tau = 0.5 + C1 / rho
    us = u + tau * a
    c = lat.c.astype(float)
    Pi = np.einsum("ia,ib,i...->ab...", c, c, f)
    eye = np.eye(3).reshape((3, 3) + (1,) * nd)
    usus = np.einsum("a...,b...->ab...", us, us)
    S = rho * usus + (1.0 - 1.0 / tau) * (Pi - rho * CS2 * eye - rho * usus)
    Qi = np.einsum("ia,ib->iab", c, c) - CS2 * np.eye(3)[None]
    j = rho * (u + a)
    out = rho + _cdot(lat, j) / CS2 + np.einsum("iab,ab...->i...", Qi, S) / (2.0 * CS2 * CS2)
    return _col(lat.w, nd) * out


def _isothermal_operator(name: str):
    """TRT and the Smagorinsky operators of ``lbgen.reference.trt_les`` (written from their papers) on
    an isothermal lattice; tau, magic, C1 and smagorinsky as keywords."""
    def collide_op(f, force=(0.0, 0.0, 0.0), lat="d3q19", **params):
        from lbgen.reference import trt_les
        lat = lattice(lat)
        if lat.thermal:
            raise ValueError(f"the oracle's {name} operator is for the isothermal lattices (D3Q19, D3Q27), "
                             f"not {lat.name}")
        return trt_les.collide(f, name, force=np.asarray(force, dtype=float), c=lat.c, w=lat.w, **params)
    collide_op.__name__ = f"collide_{name.replace('-', '_')}"
    return collide_op


def collide_cumulant(f, force=(0.0, 0.0, 0.0), lat="d3q27", **params):
    """The cumulant operator of ``lbgen.reference.cumulant`` (Geier et al. 2015; cumulant-les: with smagorinsky)
    on D3Q27."""
    from lbgen.reference import cumulant
    lat = lattice(lat)
    if lat.name.lower() != "d3q27":
        raise ValueError(f"the oracle's cumulant operator is for D3Q27, not {lat.name}")
    keep = {k: v for k, v in params.items() if k in ("tau", "omega_bulk", "omega3", "omega4", "cumulant_limiter",
                                                         "smagorinsky")}
    return cumulant.collide(f, force=np.asarray(force, dtype=float), c=lat.c, w=lat.w, **keep)


def _mrt(name: str, oracle: str = "mrt"):
    """The MRT operator of ``lbgen.reference.mrt`` (moment space, Guo forcing; ``oracle``: or the central-moment
    MRT of ``lbgen.reference.central``, or the KBC operator of ``lbgen.reference.kbc``) on D3Q19 and D3Q27; ``-les``:
    with the Smagorinsky relaxation time."""
    def collide_op(f, force=(0.0, 0.0, 0.0), lat="d3q19", **params):
        from importlib import import_module
        mrt = import_module(f"lbgen.reference.{oracle}")
        lat = lattice(lat)
        if lat.thermal:
            raise ValueError(f"the oracle's {name} operator is for the isothermal lattices (D3Q19, D3Q27), "
                             f"not {lat.name}")
        keep = {k: v for k, v in params.items() if k in ("tau", "omega_bulk", "omega3", "omega4", "smagorinsky")}
        return mrt.collide(f, force=np.asarray(force, dtype=float), c=lat.c, w=lat.w, **keep)
    collide_op.__name__ = f"collide_{name.replace('-', '_')}"
    return collide_op


_COLLIDE = {"bgk": collide_bgk, "regularized": collide_regularized, "cumulant": collide_cumulant,
            "cumulant-les": collide_cumulant,
            "mrt": _mrt("mrt"), "mrt-les": _mrt("mrt-les"), "central": _mrt("central", "central"), "kbc": _mrt("kbc", "kbc"),
            **{n: _isothermal_operator(n) for n in ("trt", "bgk-les", "regularized-les", "trt-les")}}


def collide(f, operator="bgk", solid=None, **params):
    """Dispatch by name; cells of the boolean ``solid`` mask are not collided (they hold 0)."""
    try:
        op = _COLLIDE[operator]
    except KeyError:
        raise ValueError(f"unknown operator {operator!r}; choose one of {sorted(_COLLIDE)}") from None
    if solid is None or not np.any(solid):
        return op(f, **params)
    g = np.where(solid, 1.0, f)               # any finite state: its result is discarded
    return np.where(solid, 0.0, op(g, **params))


# --- streaming and boundaries ------------------------------------------------------------

def stream(f, lat="d3q19"):
    """Pull, periodic: f'_p(x) = f_p(x - c_p) (np.roll by +c_p)."""
    lat = lattice(lat)
    out = np.empty_like(f)
    for p, cp in enumerate(lat.c):
        out[p] = np.roll(f[p], shift=tuple(int(k) for k in cp), axis=(0, 1, 2))
    return out


@dataclass
class Boundaries:
    """Half-way bounce-back on a box of shape (LX, LY, LZ).

    ``walls``: the axes ('x', 'y', 'z') whose two faces are no-slip walls half a cell
    outside the first and last nodes (the other axes stay periodic).  ``lids``: moving
    faces, {(axis, 'low' | 'high'): (ux, uy, uz)} (lattice units; the axis must be in
    ``walls``).  ``solid``: a boolean voxel mask of the box; links into solid cells bounce
    back, and solid cells hold no populations (0).

    A population p that would arrive at fluid node x from outside (x - c_p across a wall or
    in a solid cell) is the one that left x towards it, reflected (Ladd 1994):

        f_p(x, t+1) = f*_pbar(x, t) + 2 w_p rho_w (c_p . u_w) / cs^2,   pbar = opposite(p),

    i.e. f_ibar = f*_i - 2 w_i rho_w (c_i . u_w)/cs^2 with i = pbar leaving toward the wall;
    rho_w is the density of node x.  A link that crosses a moving face takes that face's
    velocity (the first such axis x, y, z); other links bounce back at rest.
    """

    shape: Tuple[int, int, int]
    lat: Lattice
    walls: Tuple[str, ...] = ()
    lids: Dict[Tuple[str, str], Tuple[float, float, float]] = field(default_factory=dict)
    solid: Optional[np.ndarray] = None

    def __post_init__(self):
        self.lat = lattice(self.lat)
        self.shape = tuple(int(n) for n in self.shape)
        if len(self.shape) != 3:
            raise ValueError(f"shape {self.shape} must be (LX, LY, LZ)")
        for axis in self.walls:
            if axis not in AXES:
                raise ValueError(f"wall axis {axis!r}: choose among x, y, z")
        for (axis, side), vel in self.lids.items():
            if axis not in self.walls or side not in SIDES or len(vel) != 3:
                raise ValueError(f"lid {(axis, side)}: {vel} must be on a wall axis ({self.walls}), side low or high, "
                                 f"with 3 velocity components")
        if self.solid is not None:
            solid = np.asarray(self.solid)
            if solid.shape != self.shape or solid.dtype != bool:
                raise ValueError(f"solid mask: shape {solid.shape} dtype {solid.dtype}; a bool array of shape "
                                 f"{self.shape} is needed")
        self._links()

    def _links(self):
        """bounce[p]: fluid nodes whose population p arrives over a wall or from a solid cell;
        push[p]: per node, 2 w_p (c_p . u_w) / cs^2 of the moving face its link crosses."""
        Q = self.lat.Q
        idx = np.indices(self.shape)                       # (3, LX, LY, LZ)
        fluid = np.ones(self.shape, bool) if self.solid is None else ~np.asarray(self.solid)
        self.fluid = fluid
        self.bounce = np.zeros((Q,) + self.shape, bool)
        self.push = np.zeros((Q,) + self.shape)
        for p, cp in enumerate(self.lat.c):
            src = [idx[k] - int(cp[k]) for k in range(3)]
            outside = np.zeros(self.shape, bool)
            crossing = []                                  # (face, where the link crosses it)
            for name in sorted(self.walls, key=AXES.get):
                k = AXES[name]
                low, high = src[k] < 0, src[k] >= self.shape[k]
                outside |= low | high
                crossing += [((name, "low"), low), ((name, "high"), high)]
            inside = tuple(np.mod(s, n) for s, n in zip(src, self.shape))
            self.bounce[p] = fluid & (outside | ~fluid[inside])
            moved = ~fluid                                 # links already given a face velocity
            for face, where in crossing:
                if face in self.lids:
                    sel = where & ~moved
                    self.push[p][sel] = 2.0 * self.lat.w[p] * float(np.dot(cp, self.lids[face])) / self.lat.cs2
                    moved |= where
        self.opp = self.lat.opposite

    def apply(self, streamed, post):
        """The streamed populations with every bounced link replaced (``post``: before streaming)."""
        out = streamed.copy()
        rho = post.sum(axis=0)
        for p in range(self.lat.Q):
            b = self.bounce[p]
            out[p][b] = post[self.opp[p]][b] + self.push[p][b] * rho[b]
        if self.solid is not None:
            out[:, ~self.fluid] = 0.0
        return out


def step(f, operator="bgk", lat="d3q19", boundaries: Optional[Boundaries] = None, **params):
    """One step on post-collision populations: stream (with the boundaries), then collide."""
    lat = lattice(lat)
    g = stream(f, lat)
    solid = None
    if boundaries is not None:
        g = boundaries.apply(g, f)
        solid = None if boundaries.solid is None else ~boundaries.fluid
    return collide(g, operator, solid=solid, lat=lat, **params)


def run(f, steps, operator="bgk", lat="d3q19", boundaries=None, **params):
    for _ in range(steps):
        f = step(f, operator, lat, boundaries, **params)
    return f


def mass(f) -> float:
    return float(np.sum(f))


def momentum(f, lat="d3q19") -> np.ndarray:
    lat = lattice(lat)
    return np.einsum("ia,i...->a", lat.c.astype(float), f)
