"""The collision operators as records: the one home of their names, parameters and rules.

Each ``Operator`` declares its physical parameters (name, default, allowed range, meaning),
how it treats the rows next to a thermal wall, and a description.  Everything else is
derived from here: the kernel API (``kernel_arguments``: the operator's parameters, then
the force per unit mass per step ax, ay), the symbols of ``collision.collision``, the
``Simulation`` keywords and their checks, the run description (CLI options, TOML keys,
manifest and checkpoint contents), bench and tune.  Adding a parameter or an operator
touches this file and ``collision.py`` (and a template, if the kernel needs new code).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Dict, Mapping, Optional, Tuple

from lbgen.model.catalog import AXES


def force_arguments(D: int = 2) -> Tuple[str, ...]:
    """The force arguments of a D-dimensional set's collide kernels: ax, ay[, az]."""
    return tuple(f"a{axis}" for axis in AXES[:D])


#: the force arguments every (2D) collide/fused kernel takes after the operator's parameters:
#: acceleration per step a = g / r (gravity g in model units, d2q37.md: F = rho g dt)
FORCE_ARGUMENTS = force_arguments(2)


class ParameterError(ValueError):
    """A model parameter outside its allowed range (the message names it and the range)."""


@dataclass(frozen=True)
class Parameter:
    """One real parameter of an operator: value must lie in (low, high) (or [low, ...] when
    ``low_inclusive``); ``high`` None means unbounded."""

    name: str
    default: float
    low: float
    meaning: str
    low_inclusive: bool = False
    high: Optional[float] = None
    #: the Hermite order of the moments it relaxes (0: all of them); a velocity set whose
    #: order is lower has no such moments, and its kernels never read the parameter
    order: int = 0

    @property
    def allowed(self) -> str:
        lo = f"{'>=' if self.low_inclusive else '>'} {self.low:g}"
        return lo if self.high is None else f"{lo} and < {self.high:g}"

    def check(self, value, where: str = "") -> float:
        """``value`` as a float, or ParameterError naming the parameter and its range."""
        label = f"{where}{self.name}"
        if isinstance(value, bool) or not isinstance(value, (int, float)) and not _is_number_like(value):
            raise ParameterError(f"{label}={value!r} is not a number; it must be a real number {self.allowed} "
                                 f"({self.meaning})")
        v = float(value)
        ok = math.isfinite(v) and (v >= self.low if self.low_inclusive else v > self.low)
        ok = ok and (self.high is None or v < self.high)
        if not ok:
            raise ParameterError(f"{label}={v!r} must be {self.allowed} ({self.meaning})")
        return v


def _is_number_like(value) -> bool:
    try:                                    # numpy scalars
        import numpy as np
        return isinstance(value, (np.integer, np.floating))
    except ImportError:  # pragma: no cover
        return False


@dataclass(frozen=True)
class Operator:
    name: str
    description: str
    parameters: Tuple[Parameter, ...]
    wall_rows: str                      # what the operator does on the rows next to a thermal wall

    @property
    def parameter_names(self) -> Tuple[str, ...]:
        return tuple(p.name for p in self.parameters)

    @property
    def kernel_arguments(self) -> Tuple[str, ...]:
        """The arguments of the (2D) collide/fused kernels after the buffers (and sizes), in order."""
        return self.kernel_arguments_of(2)

    def kernel_arguments_of(self, D: int) -> Tuple[str, ...]:
        """The arguments of a D-dimensional set's collide assignments: parameters, then the force."""
        return self.parameter_names + force_arguments(D)

    def defaults(self) -> Dict[str, float]:
        return {p.name: p.default for p in self.parameters}

    def check(self, values: Mapping[str, object], where: str = "") -> Dict[str, float]:
        """Checked values of every parameter (missing ones take their defaults)."""
        unknown = sorted(set(values) - set(self.parameter_names))
        if unknown:
            raise ParameterError(f"{where}operator {self.name!r} has no parameter(s) {unknown}; "
                                 f"its parameters are {', '.join(self.parameter_names)}")
        return {p.name: p.check(values.get(p.name, p.default), where) for p in self.parameters}


TAU = Parameter("tau", 0.8, 0.5, "BGK relaxation time; kinematic viscosity (tau - 1/2) T / r^2 per step")
OPERATOR_RECORDS: Dict[str, Operator] = {
    "bgk": Operator(
        "bgk", "BGK with shifted-equilibrium forcing (Hermite order 4)", (TAU,),
        wall_rows="relaxed with tau = tau_wall (default 1: to the equilibrium of the moments the bc imposed)"),
    "regularized": Operator(
        "regularized",
        "regularized: A2, A3, A4 relaxed with tau1 = 1/2 + C1/(rho T), tau2 = 1/2 + C2/(rho T), "
        "tau3 = 1/2 + C3, force on A1, f rebuilt from A0..A4 (the production operator)",
        (Parameter("C1", 1e-3, 0.0, "tau1 = 1/2 + C1/(rho T): relaxation of the second-order moments (viscosity)",
                   order=2),
         Parameter("C2", 1e-3, 0.0, "tau2 = 1/2 + C2/(rho T): relaxation of the third-order moments (conductivity)",
                   order=3),
         Parameter("C3", 0.5, 0.0, "tau3 = 1/2 + C3: relaxation of the fourth-order moments", order=4)),
        wall_rows="all three relaxation times are tau_wall (default 1)"),
}
#: operator names, in the order the CLI offers them
OPERATORS: Tuple[str, ...] = tuple(OPERATOR_RECORDS)
DEFAULT_OPERATOR = "bgk"


def operator(name: str) -> Operator:
    try:
        return OPERATOR_RECORDS[name]
    except (KeyError, TypeError):
        raise ParameterError(f"unknown collision operator {name!r}; choose one of {', '.join(OPERATORS)}") from None


def all_parameters() -> Dict[str, Parameter]:
    """Every operator parameter by name (a name shared by two operators means the same thing)."""
    out: Dict[str, Parameter] = {}
    for op in OPERATOR_RECORDS.values():
        for p in op.parameters:
            out.setdefault(p.name, p)
    return out
