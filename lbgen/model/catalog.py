"""What the model offers, by name, without deriving anything (no sympy).

The velocity sets as their integer shells and quadrature degree, the wall schemes and
sides.  Everything a command line, a run description or a memory estimate needs to know
of a set before any physics is derived -- its name, Q, dimension and largest hop -- follows
from its shells here; ``lbgen.model.velocity_set`` solves the weights from the same entries.

The dimension D is the length of a shell: the one place it is set.  ``MODEL_SETS`` holds
every set the model derives (D = 2 or 3); ``VELOCITY_SETS`` the 2D ones that
``lbgen.Simulation``, the 2D kernels and `lbgen bench` take (``RUN_DIMENSIONS``), and
``run_set`` refuses the others in words, naming where the 3D sets go.
"""
from __future__ import annotations

from dataclasses import dataclass
from itertools import permutations, product
from typing import Dict, Tuple


def hermite_order(degree: int) -> int:
    """Order N of the equilibrium and of the regularized projection.

    A quadrature of this degree integrates polynomials up to degree - 1 exactly; the
    moments of an order-N expansion against H_0..H_N need degree 2N: N = (degree - 1) // 2
    (D2Q37: 4, D2V17: 3, D2Q9: 2).
    """
    return (degree - 1) // 2


def is_isothermal(order: int) -> bool:
    """Below order 3 the heat flux is not recovered: the temperature is fixed at 1."""
    return order < 3


def shell_members(shell: Tuple[int, ...]) -> set:
    """The velocities of one integer shell (a, b) or (a, b, c): all its signed permutations."""
    return {tuple(s * c for s, c in zip(signs, perm))
            for perm in set(permutations(shell)) for signs in product((1, -1), repeat=len(shell))}


@dataclass(frozen=True)
class SetEntry:
    """A velocity set as its integer shells (a >= b [>= c] >= 0; members: all signed
    permutations; the shell length is the dimension D) and the degree of the Gauss-Hermite
    quadrature it must integrate exactly."""

    label: str
    shells: Tuple[Tuple[int, ...], ...]
    degree: int
    summary: str

    def __post_init__(self):
        if len({len(s) for s in self.shells}) != 1 or len(self.shells[0]) not in (2, 3):
            raise ValueError(f"{self.label}: shells must all have 2 or 3 components, got {self.shells}")
        for s in self.shells:
            if list(s) != sorted(s, reverse=True) or min(s) < 0:
                raise ValueError(f"{self.label}: shell {s} must be written a >= b [>= c] >= 0")

    @property
    def D(self) -> int:
        """The dimension: the length of a shell."""
        return len(self.shells[0])

    @property
    def members(self) -> Tuple[Tuple[int, ...], ...]:
        return tuple(sorted(set().union(*(shell_members(s) for s in self.shells))))

    @property
    def Q(self) -> int:
        return len(self.members)

    @property
    def order(self) -> int:
        return hermite_order(self.degree)

    @property
    def isothermal(self) -> bool:
        return is_isothermal(self.order)

    @property
    def max_hop(self) -> int:
        """The largest hop along an axis: the halo width and the number of wall rows."""
        return max(max(s) for s in self.shells)


#: every velocity set the model derives, by its option name
MODEL_SETS: Dict[str, SetEntry] = {
    "d2q37": SetEntry("D2Q37", ((0, 0), (1, 0), (1, 1), (2, 0), (2, 1), (2, 2), (3, 0), (3, 1)), 9,
                      "thermal, fourth order: the paper's model"),
    "d2q9": SetEntry("D2Q9", ((0, 0), (1, 0), (1, 1)), 5, "isothermal, T = 1"),
    # Shan, Yuan & Chen (J. Fluid Mech. 550, 2006): 17 velocities, degree 7 (third order, thermal)
    "d2v17": SetEntry("D2V17", ((0, 0), (1, 0), (1, 1), (2, 2), (3, 0)), 7, "thermal, third order"),
    "d3q19": SetEntry("D3Q19", ((0, 0, 0), (1, 0, 0), (1, 1, 0)), 5, "isothermal, T = 1"),
    # degree 5 leaves one free weight on these 4 shells; the solve adds x^2 y^2 z^2 (the
    # most mixed moment of order 6): the tensor product of D1Q3 (lbgen.model.velocity_set)
    "d3q27": SetEntry("D3Q27", ((0, 0, 0), (1, 0, 0), (1, 1, 0), (1, 1, 1)), 5, "isothermal, T = 1"),
    # Shan, Yuan & Chen (J. Fluid Mech. 550, 2006), D3Q39: degree 7 (third order, thermal)
    "d3q39": SetEntry("D3Q39", ((0, 0, 0), (1, 0, 0), (1, 1, 1), (2, 0, 0), (2, 2, 0), (3, 0, 0)), 7,
                      "thermal, third order"),
    # degree 9 on hop-3 shells: the Q, hop and r of Shan's D3Q103 (Phys. Rev. E 81, 036702, 2010);
    # the only 10-shell set with hops up to 3, Q <= 103 and positive weights (docs/validation3d.md)
    "d3q103": SetEntry("D3Q103", ((0, 0, 0), (1, 0, 0), (1, 1, 1), (2, 0, 0), (2, 1, 0), (2, 2, 0), (2, 2, 2),
                                  (3, 0, 0), (3, 1, 1), (3, 3, 3)), 9,
                       "thermal, fourth order: D2Q37's order in 3D"),
}
#: the dimensions of `lbgen bench` and `tune` (3D sets: ``lbgen.Simulation(lx, ly, lz)``,
#: `lbgen run --lz`, the kernels of ``codegen.spec.KERNEL_DIMENSIONS``, `emit`, `verify` and `info`)
RUN_DIMENSIONS = (2,)
#: the 2D velocity sets, by their option name (``--velocity-set``)
VELOCITY_SETS: Dict[str, SetEntry] = {k: e for k, e in MODEL_SETS.items() if e.D in RUN_DIMENSIONS}
DEFAULT_VELOCITY_SET = "d2q37"
#: the set a lattice of D sizes takes by default (``lbgen.Simulation``)
DEFAULT_SETS = {2: DEFAULT_VELOCITY_SET, 3: "d3q19"}
#: the 3D velocity sets, by their option name (``lbgen.Simulation(lx, ly, lz)``, `lbgen run --lz`)
SETS_3D: Tuple[str, ...] = tuple(k for k, e in MODEL_SETS.items() if e.D == 3)


def set_names(names, last: str = "or") -> str:
    """A list of set names for a message: 'd3q19, d3q27 or d3q39'."""
    names = list(names)
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} {last} {names[-1]}"


def sets_help() -> str:
    """--velocity-set's help: every set of the catalogue with its summary, 2D first, then 3D."""
    parts = []
    for D in sorted({e.D for e in MODEL_SETS.values()}):
        listed = ", ".join(f"{k} ({e.summary})" for k, e in MODEL_SETS.items() if e.D == D)
        parts.append(listed if D == 2 else f"{D}D: {listed}")
    return "; ".join(parts)

#: the axes' names, in order: the components of a D-dimensional set's vectors (force, velocity,
#: fields: ax, ux, ...) and the axes of walls and faces
AXES = ("x", "y", "z")


def field_names(dimension: int) -> tuple:
    """The physical fields of a D-dimensional lattice, in order: rho, ux, uy[, uz], T (the keys
    of every ``fields()``, the arrays of field files)."""
    return ("rho",) + tuple(f"u{a}" for a in AXES[:dimension]) + ("T",)


#: the two faces normal to an axis: low (the side of coordinate 0) and high; face "z-high" is
#: (axis, side) = ("z", "high")
SIDES = ("low", "high")
#: the walls of the 2D thermal channel (--walls): bottom is the face y-low, top the face y-high.
#: Their own names (the sides of one channel, not the faces of any axis), as the bc kernels,
#: wall rows and run descriptions call them
CHANNEL_WALLS = ("bottom", "top")
#: the wall schemes: lbgen's own (the default) and the production code's
SCHEMES = ("lbgen", "reference")
DEFAULT_SCHEME = "lbgen"


def wall_scheme_refusal(entry: SetEntry, scheme: str):
    """Why a run with walls of ``scheme`` cannot use this set, or None.

    The ``reference`` scheme (the production code's D2Q37 bc) fills the farthest wall row's
    unknown populations, which all share one e_y = H, from the x-momentum and energy
    conditions (x-momentum alone for an isothermal set).  Where that row has fewer unknown
    populations than conditions (D2V17: only (0, 3)) the conditions cannot be imposed and
    the scheme does not keep a gas at rest: round-off grows to |u_y| ~ 0.4 within 16 000
    steps at tau = 0.8 and at tau = 1 (docs/physics.md).  Its kernels still exist (emit,
    verify); runs are refused."""
    if scheme != "reference":
        return None
    far = [m for m in entry.members if m[1] == entry.max_hop]
    conditions = ("x-momentum",) if entry.isothermal else ("x-momentum", "energy")
    if len(far) >= len(conditions):
        return None
    return (f"wall scheme 'reference' (the production code's D2Q37 bc) does not hold on {entry.label}: its farthest "
            f"wall row has {len(far)} unknown population{'s' if len(far) != 1 else ''} "
            f"({', '.join(map(str, far))}) for {len(conditions)} conditions ({' and '.join(conditions)}), and a gas "
            f"at rest between such walls does not stay at rest; use the lbgen wall scheme")


def set_entry(name: str) -> SetEntry:
    """The catalogue entry of a set name (any case, 2D or 3D), or ValueError naming the choices."""
    try:
        return MODEL_SETS[str(name).lower()]
    except KeyError:
        raise ValueError(f"unknown velocity set {name!r}; choose one of {', '.join(MODEL_SETS)}") from None


def run_set(name) -> str:
    """The lower-case name of a set that runs and kernels take (``VELOCITY_SETS``), or
    ValueError saying why not: a set of another dimension, or an unknown name."""
    key = str(name).lower()
    if key in VELOCITY_SETS:
        return key
    entry = MODEL_SETS.get(key)
    if entry is not None:
        raise ValueError(f"{key} is a {entry.D}D set; this takes the {'/'.join(map(str, RUN_DIMENSIONS))}D sets "
                         f"{', '.join(VELOCITY_SETS)}; in {entry.D}D: `lbgen run --velocity-set {key} --lz N`, "
                         f"lbgen.Simulation(lx, ly, lz), `lbgen emit`, `lbgen verify` and `lbgen info --velocity-set {key}`, "
                         f"benchmarks/bench3d.py")
    raise ValueError(f"unknown velocity set {name!r}; choose one of {', '.join(VELOCITY_SETS)}")
