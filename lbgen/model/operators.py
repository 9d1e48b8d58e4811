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

from lbgen.model.catalog import AXES, set_entry


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
    #: the operator this one adds the Smagorinsky subgrid model to (None: a base operator)
    base: Optional[str] = None
    #: why the operator refuses thermal sets (Hermite order >= 3), or None where it takes them
    isothermal_only: Optional[str] = None
    #: why the operator refuses the 2D thermal channel walls (the bc kernel), or None where it takes them
    no_thermal_walls: Optional[str] = None
    #: the velocity sets (lower-case names) the operator is defined on, None: every set it does not refuse
    #: otherwise; ``sets_reason`` says why
    sets: Optional[Tuple[str, ...]] = None
    sets_reason: str = ""
    #: whether a ``-les`` variant (the Smagorinsky subgrid model on top) exists
    subgrid: bool = True
    #: the parameters at whose defaults the C kernels carry a second site function, derived with those values
    #: fixed (the cumulant's omega3 = omega4 = 1: the cumulants of order >= 3 go to 0, so none is computed);
    #: ``fused`` and ``fused_tb`` take it when every one of them is at its default (a uniform branch once per
    #: call; lbgen.model.collision.collision's ``specialised``); (): none
    specialised: Tuple[str, ...] = ()

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

    def special_values(self) -> Dict[str, float]:
        """The values the specialised site function is derived at (``specialised``: their defaults)."""
        return {n: self.defaults()[n] for n in self.specialised}

    def check(self, values: Mapping[str, object], where: str = "") -> Dict[str, float]:
        """Checked values of every parameter (missing ones take their defaults)."""
        unknown = sorted(set(values) - set(self.parameter_names))
        if unknown:
            raise ParameterError(f"{where}operator {self.name!r} has no parameter(s) {unknown}; "
                                 f"its parameters are {', '.join(self.parameter_names)}")
        return {p.name: p.check(values.get(p.name, p.default), where) for p in self.parameters}

    def check_set(self, set_name: str, thermal: bool) -> None:
        """ParameterError, in words, where the operator is not defined on a (thermal) velocity set."""
        if thermal and self.isothermal_only:
            raise ParameterError(f"the {self.name} operator is defined on the isothermal sets "
                                 f"({', '.join(n.upper() for n in self.sets or ('d2q9', 'd3q19', 'd3q27'))}), "
                                 f"not on {set_name}: {self.isothermal_only}")
        self.check_set_name(set_name)

    def takes(self, set_name: str, thermal: bool) -> bool:
        """Whether the operator is defined on the (thermal) set: ``check_set`` passes."""
        try:
            self.check_set(set_name, thermal)
        except ParameterError:
            return False
        return True

    def check_set_name(self, set_name: str) -> None:
        """ParameterError, in words, where the operator is not defined on the set (``sets``)."""
        if self.sets is not None and set_name.lower() not in self.sets:
            raise ParameterError(f"the {self.name} operator is defined on {', '.join(n.upper() for n in self.sets)} "
                                 f"only, not on {set_name}: {self.sets_reason}")

    def check_walls(self, walls: bool) -> None:
        """ParameterError, in words, where the operator does not take the thermal channel walls."""
        if walls and self.no_thermal_walls:
            raise ParameterError(f"the {self.name} operator does not run with the thermal channel walls (--walls): "
                                 f"{self.no_thermal_walls}; use bounce-back walls (--wall-axes) or a periodic box")


TAU = Parameter("tau", 0.8, 0.5, "BGK relaxation time; kinematic viscosity (tau - 1/2) T / r^2 per step")
#: TRT's "magic" parameter (Ginzburg, Verhaeghe & d'Humieres, Commun. Comput. Phys. 3 (2008) 427):
#: 3/16 puts the bounce-back wall half-way between the nodes for Poiseuille flow
MAGIC = Parameter("magic", 3.0 / 16.0, 0.0,
                  "TRT magic parameter Lambda = (tau - 1/2)(tau_minus - 1/2): fixes the antisymmetric relaxation "
                  "time tau_minus")
#: the Smagorinsky constant of the subgrid model (Hou, Sterling, Chen & Doolen, Fields Inst. Commun.
#: 6 (1996) 151): nu_t = (C_s Delta)^2 |S|, Delta = one lattice spacing; 0 switches the model off
SMAGORINSKY = Parameter("smagorinsky", 0.1, 0.0,
                        "Smagorinsky constant C_s: eddy viscosity nu_t = (C_s Delta)^2 |S| from the local "
                        "non-equilibrium stress (0: off)", low_inclusive=True, high=1.0)
#: the cumulant operator's other rates (Geier, Schoenherr, Pasquali & Krafczyk, Comput. Math. Appl. 70 (2015)
#: 507): 1 relaxes to equilibrium in one step (their recommendation for the higher orders)
OMEGA_BULK = Parameter("omega_bulk", 1.0, 0.0, "relaxation rate of the trace of the second-order cumulants or "
                       "moments (bulk viscosity (2/D)(1/omega_bulk - 1/2)/3 in lattice units)", high=2.0)
OMEGA3 = Parameter("omega3", 1.0, 0.0, "relaxation rate of every third-order cumulant or orthogonal moment "
                   "(equilibrium 0)", high=2.0)
OMEGA4 = Parameter("omega4", 1.0, 0.0, "relaxation rate of every cumulant or orthogonal moment of order 4 and "
                   "higher (equilibrium 0)", high=2.0)
#: the cumulant limiter's lambda (Geier, Pasquali & Schoenherr, J. Comput. Phys. 348 (2017) 862, Eqs. 116-123):
#: each third-order cumulant combination x relaxes with omega3 + (1 - omega3) |x| / (rho lambda + |x|)
CUMULANT_LIMITER = Parameter("cumulant_limiter", 0.0, 0.0,
                             "limiter lambda of the third-order cumulants (Geier, Pasquali & Schoenherr 2017): "
                             "their rate omega3 + (1 - omega3) |C| / (rho lambda + |C|), towards 1 where |C| >> "
                             "rho lambda; 0: off (default); 0.01 is the value of the VirtualFluids cumulant kernels", low_inclusive=True)
#: the description of what the subgrid model adds (the closed form: lbgen.model.collision._smagorinsky)
LES_DESCRIPTION = ("; Smagorinsky subgrid model (Hou et al. 1996): the shear relaxation time becomes "
                   "tau_eff = (tau + sqrt(tau^2 + 18 sqrt(2) C_s^2 |Pi_neq| / rho)) / 2, |Pi_neq| the "
                   "Frobenius norm of the non-equilibrium second moment (lattice units) at the half-step velocity")
#: the suffix of the name of a base operator with the subgrid model
LES_SUFFIX = "-les"
_BASE_RECORDS: Dict[str, Operator] = {
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
    "trt": Operator(
        "trt",
        "TRT (Ginzburg & d'Humieres): the symmetric part (f_i + f_ibar)/2 of f - f_eq relaxed with tau, the "
        "antisymmetric part (f_i - f_ibar)/2 with tau_minus = 1/2 + Lambda/(tau - 1/2); Guo's forcing "
        "(Guo, Zheng & Shi, PRE 65 (2002) 046308) split the same way, (1 - 1/(2 tau)) on its symmetric and "
        "(1 - 1/(2 tau_minus)) on its antisymmetric part, equilibrium at the half-step velocity u + a/2",
        (TAU, MAGIC),
        wall_rows="BGK with tau = tau_minus = tau_wall (default 1)",
        no_thermal_walls="the wall planes of the bc kernel (lbgen.model.wall_planes) are measured for bgk and "
                         "regularized only, and the wall rows' Guo-forced relaxation is not verified",
        isothermal_only="its one antisymmetric rate would also fix the heat flux (odd third-order moments) "
                        "through Lambda, and its Guo source term has no energy part; use bgk or regularized there"),
    "mrt": Operator(
        "mrt",
        "MRT on the weighted-orthogonal Hermite basis (Coreixas, Chopard & Latt, PRE 100 (2019) 033305; "
        "d'Humieres et al. 2002's moment-space MRT): deviatoric second-order moments relaxed with 1/tau, their "
        "trace with omega_bulk, the degree-3 moments with omega3, the higher ones with omega4; Guo's forcing "
        "in moment space, (I - S/2) M F, equilibrium at the half-step velocity u + a/2",
        (TAU, OMEGA_BULK, OMEGA3, OMEGA4),
        wall_rows="the shear rate is 1/tau_wall (default 1)",
        no_thermal_walls="the wall planes of the bc kernel (lbgen.model.wall_planes) are measured for bgk and "
                         "regularized only",
        isothermal_only="its equilibrium and Guo source are second order (isothermal), and its basis is that of "
                        "the isothermal sets"),
    "cumulant": Operator(
        "cumulant",
        "cumulant (Geier, Schoenherr, Pasquali & Krafczyk, Comput. Math. Appl. 70 (2015) 507), well-conditioned "
        "(f - w, delta rho): chimera transforms to central moments, density-weighted cumulants; second order "
        "relaxed with 1/tau (trace: omega_bulk) with Geier's Galilean correction, third order with omega3, "
        "orders 4+ with omega4 (with cumulant_limiter > 0: Geier, Pasquali & Schoenherr 2017's limiter on the "
        "third order); forcing Geier's way (u with F/2, first central moments -F/2 -> +F/2)",
        (TAU, OMEGA_BULK, OMEGA3, OMEGA4, CUMULANT_LIMITER),
        wall_rows="the shear rate is 1/tau_wall (default 1)",
        no_thermal_walls="the wall planes of the bc kernel (lbgen.model.wall_planes) are measured for bgk and "
                         "regularized only",
        isothermal_only="its cumulants are those of the tensor-product sets D2Q9 and D3Q27 (three velocities "
                        "per axis), and its equilibrium is isothermal",
        sets=("d2q9", "d3q27"),
        sets_reason="the chimera transform needs every velocity of {-1, 0, 1}^D (D3Q19 lacks the 8 corners, "
                    "whose moments the cumulants of order 4 and up relax); use trt or bgk on D3Q19",
        specialised=(OMEGA3.name, OMEGA4.name)),
    "central": Operator(
        "central",
        "central-moment MRT (the cascaded central moments: Geier, Greiner & Korvink, PRE 73 (2006) 066705; "
        "De Rosis, PRE 95 (2017) 013310's raw central-moment basis, exponents <= 2), the Maxwellian's central "
        "moments as equilibrium, well-conditioned (f - w); deviatoric second order relaxed with 1/tau, the "
        "trace with omega_bulk, third order with omega3, orders 4+ with omega4; Guo's forcing in central "
        "moments (Fei & Luo, PRE 96 (2017) 053307: u with F/2, the continuous source's central moments "
        "times 1 - omega/2)",
        (TAU, OMEGA_BULK, OMEGA3, OMEGA4),
        wall_rows="the shear rate is 1/tau_wall (default 1)",
        no_thermal_walls="the wall planes of the bc kernel (lbgen.model.wall_planes) are measured for bgk and "
                         "regularized only",
        isothermal_only="its equilibrium is the Maxwellian's central moments at c_s^2 = 1/3 (isothermal), and "
                        "its basis has exponents <= 2 (three velocities per axis)",
        sets=("d2q9", "d3q27"),
        sets_reason="its basis is the central moments with exponents <= 2 per axis, complete on the sets with "
                    "every velocity of {-1, 0, 1}^D; on D3Q19 (no corner velocities) a decaying Taylor-Green "
                    "vortex gained energy (2.4x from step 300 to 1000 at 16^3, tau = 0.5001: docs/physics.md), so "
                    "it is refused there; use mrt on D3Q19",
        subgrid=False),
    "kbc": Operator(
        "kbc",
        "entropic KBC-N4 (Karlin, Boesch & Chikatamarla, PRE 90 (2014) 031302(R); Boesch, Chikatamarla & Karlin, "
        "PRE 92 (2015) 043309): f = k + s + h in the natural raw moments, s the deviatoric stress, its trace and "
        "the third-order moments, h the orders 4+; f' = f + S - beta (2 Delta_s + gamma Delta_h), beta = 1/(2 tau), "
        "the stabiliser gamma = 1/beta - (2 - 1/beta) <Delta_s|Delta_h>/<Delta_h|Delta_h> per site (entropic "
        "scalar product weighted by 1/f_eq), product-form equilibrium; Guo's forcing (S = F . d f_eq/du / rho, "
        "u with F/2, Delta = f + S/2 - f_eq)",
        (TAU,),
        wall_rows="the shear rate is 1/tau_wall (default 1)",
        no_thermal_walls="the wall planes of the bc kernel (lbgen.model.wall_planes) are measured for bgk and "
                         "regularized only",
        isothermal_only="its equilibrium is the product form at c_s^2 = 1/3 (isothermal), and its split into "
                        "shear and higher-order moments is that of the natural moments of {-1, 0, 1}^D",
        sets=("d2q9", "d3q27"),
        sets_reason="the N4 split of the papers is defined on the natural moments of D2Q9 and D3Q27 (every "
                    "velocity of {-1, 0, 1}^D); D3Q19 lacks the corner velocities, so x y z and most of the "
                    "higher-order moments h that gamma stabilises do not exist there (the split, and gamma's "
                    "balance of s and h, are not those of the papers); use mrt or trt on D3Q19",
        subgrid=False),
}


#: why the subgrid operators take no thermal walls
_LES_WALLS = "the wall planes of the bc kernel (lbgen.model.wall_planes) are measured without the subgrid model"


def _with_subgrid_model(base: Operator) -> Operator:
    """The base operator with the Smagorinsky subgrid model: its parameters, then C_s."""
    return Operator(base.name + LES_SUFFIX, base.description + LES_DESCRIPTION, base.parameters + (SMAGORINSKY,),
                    wall_rows=base.wall_rows + " (no subgrid model on wall rows)", base=base.name,
                    isothermal_only=base.isothermal_only, no_thermal_walls=base.no_thermal_walls or _LES_WALLS,
                    sets=base.sets, sets_reason=base.sets_reason, specialised=base.specialised)


OPERATOR_RECORDS: Dict[str, Operator] = {**_BASE_RECORDS,
                                         **{n + LES_SUFFIX: _with_subgrid_model(op) for n, op in _BASE_RECORDS.items()
                                            if op.subgrid}}
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


def set_for_operator(chosen: str, collision: Optional[str]) -> str:
    """The velocity set a run of ``collision`` takes where ``chosen`` is its default: ``chosen``,
    or, where the operator is not defined on it (the cumulant on D3Q19), the operator's first set
    of the same dimension (D3Q27).  The one rule of ``lbgen run`` and the validation scripts."""
    if collision is None:
        return chosen
    sets = operator(collision).sets
    if sets is None or chosen in sets:
        return chosen
    D = set_entry(chosen).D
    return next((name for name in sets if set_entry(name).D == D), chosen)
