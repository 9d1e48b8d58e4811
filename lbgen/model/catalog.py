"""What the model offers, by name, without deriving anything (no sympy).

The velocity sets as their integer shells and quadrature degree, the wall schemes and
sides.  Everything a command line, a run description or a memory estimate needs to know
of a set before any physics is derived -- its name, Q and largest hop -- follows from its
shells here; ``lbgen.model.velocity_set`` solves the weights from the same entries.
"""
from __future__ import annotations

from dataclasses import dataclass
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
    """The velocities of one integer shell (a, b): all its signed permutations."""
    a, b = shell
    return {(sx * p, sy * q) for (p, q) in ((a, b), (b, a)) for sx in (1, -1) for sy in (1, -1)}


@dataclass(frozen=True)
class SetEntry:
    """A velocity set as its integer shells (a >= b >= 0; members: all signed permutations)
    and the degree of the Gauss-Hermite quadrature it must integrate exactly."""

    label: str
    shells: Tuple[Tuple[int, ...], ...]
    degree: int
    summary: str

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


#: the velocity sets by their option name (``--velocity-set``)
VELOCITY_SETS: Dict[str, SetEntry] = {
    "d2q37": SetEntry("D2Q37", ((0, 0), (1, 0), (1, 1), (2, 0), (2, 1), (2, 2), (3, 0), (3, 1)), 9,
                      "thermal (the paper's model)"),
    "d2q9": SetEntry("D2Q9", ((0, 0), (1, 0), (1, 1)), 5, "isothermal, T = 1"),
    # Shan, Yuan & Chen (J. Fluid Mech. 550, 2006): 17 velocities, degree 7 (third order, thermal)
    "d2v17": SetEntry("D2V17", ((0, 0), (1, 0), (1, 1), (2, 2), (3, 0)), 7, "thermal, third order"),
}
DEFAULT_VELOCITY_SET = "d2q37"

#: wall sides, and the wall schemes: lbgen's own (the default) and the production code's
SIDES = ("bottom", "top")
SCHEMES = ("lbgen", "reference")
DEFAULT_SCHEME = "lbgen"


def set_entry(name: str) -> SetEntry:
    """The catalogue entry of a set name (any case), or ValueError naming the choices."""
    try:
        return VELOCITY_SETS[str(name).lower()]
    except KeyError:
        raise ValueError(f"unknown velocity set {name!r}; choose one of {', '.join(VELOCITY_SETS)}") from None
