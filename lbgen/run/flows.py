"""The flows around bodies of ``lbgen run`` (2D and 3D): ``cylinder`` (the DFG benchmark of Schaefer &
Turek 1996, cases 2D-1 at Re = 20 and 2D-2 at Re = 100), ``cylinder3d`` (their 3D-1Z, Re = 20) and
``sphere`` (a uniform stream past a sphere between free-slip walls).  One home for each flow's
lattice (from ``--cells-per-diameter``), its inflow speed and relaxation time (from ``--re``), its
bodies, initial state, reference length, area and speed, and the published values its summary
prints beside the run's (``summary``).

M. Schaefer, S. Turek: "Benchmark computations of laminar flow around a cylinder", in Flow
Simulation with High-Performance Computers II, Notes on Numerical Fluid Mechanics 52, 547-566
(Vieweg 1996): channel 2.2 x 0.41, cylinder D = 0.1 at (0.2, 0.2), nu = 1e-3, rho = 1, parabolic
inflow of U_max = 0.3 (2D-1) or 1.5 (2D-2), reference speed the mean inflow 2/3 U_max; 3D-1Z the
square duct 0.41 x 0.41, length 2.5, cylinder along z at (0.5, 0.2), inflow 16 U_max y z (H - y)
(H - z) / H^4 with U_max = 0.45, mean 4/9 U_max, reference area D H; C = 2 F / (rho U^2 A), St = D f
/ U, dp = p(front) - p(back) at the points (0.15, 0.2) and (0.25, 0.2) (3D-1Z: (0.45, 0.2, 0.205) and
(0.55, 0.2, 0.205)).  Their intervals (Tables 3, 4 and 5) are ``PUBLISHED``."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Dict, List, Mapping, Optional, Tuple

import numpy as np

from lbgen.geometry.bodies import DFG, Bodies, dfg_cylinder
from lbgen.geometry.coefficients import coefficients, dfg_mean_speed, strouhal
from lbgen.geometry.shapes import Sphere

#: the intervals of Schaefer & Turek (1996) for the lower and upper bounds of the benchmark's results
PUBLISHED: Dict[str, Dict[str, Tuple[float, float]]] = {
    "2D-1": {"C_D": (5.57, 5.59), "C_L": (0.0104, 0.0110), "dp": (0.1172, 0.1176)},
    "2D-2": {"C_D_max": (3.22, 3.24), "C_L_max": (0.99, 1.01), "St": (0.295, 0.305)},
    "3D-1Z": {"C_D": (6.05, 6.25), "C_L": (0.008, 0.010), "dp": (0.165, 0.175)},
}
#: the benchmark's kinematic viscosity and diameter (physical units): Re = U_mean D / nu
DFG_NU = 1e-3
#: when --inlet-speed is not given, the fastest inflow speed (lattice units) at every resolution (Mach
#: 0.1 sqrt(3) = 0.17; convective scaling: a run's steps grow as the cells per diameter, not their
#: square).  With rho = 1 and the mean inflow speed as reference the lattice's compressibility error
#: grows as Mach^2 (2D-1, TRT, 10 cells per diameter: C_D 3.6 % above its Mach -> 0 limit at 0.17);
#: the free stream at the body (``free_stream``) takes it out (C_D at Mach 0.17 and 0.087 within 0.13 %)
INFLOW_SPEED = 0.1
#: the smallest relaxation time a flow set-up starts with (BGK near 1/2 leaves the wake unstable)
TAU_MIN = 0.505
#: the sphere's box in diameters: length, width (y and z); centre 2.5 D from the inlet
SPHERE_BOX = (12.0, 5.0)
SPHERE_UPSTREAM = 2.5
#: series rows per convective time D / U (the lift's period is about 3.3 of them at St = 0.3)
SAMPLES_PER_CONVECTIVE_TIME = 20


_BUILT: Dict[Tuple[str, int], tuple] = {}


@dataclass(frozen=True)
class BodyFlow:
    """One flow around a body: its lattice, body and numbers from (Re, cells per diameter, speed)."""

    name: str
    dimension: int
    description: str
    re: float                   # the default Reynolds number
    cells: int                  # the default cells per diameter
    run_defaults: Mapping[str, object]
    #: (cells per diameter) -> (lattice shape, Bodies)
    geometry: Callable[[int], Tuple[Tuple[int, ...], Bodies]]
    #: the fastest inflow speed -> the reference speed (both lattice units)
    reference_speed: Callable[[float], float]
    #: the reference area in units of D^(D-1): 1 (2D), H / D (DFG 3D), pi / 4 (sphere)
    area_factor: Callable[[Tuple[int, ...], int], float]
    #: the published case of a Reynolds number (None: no benchmark)
    case: Callable[[float], Optional[str]]
    #: the drag coefficient the start's pressure expects at a Reynolds number (a guess: the start only)
    drag_guess: Callable[[float], float] = lambda re: 0.0
    #: the points of dp in physical units (DFG) or None
    probes: Optional[Tuple[Tuple[float, ...], Tuple[float, ...]]] = None

    # --- the run's numbers ------------------------------------------------------------------
    def built(self, cells: int) -> Tuple[Tuple[int, ...], Bodies]:
        """(lattice shape, Bodies) at ``cells`` per diameter, voxelized once per process."""
        key = (self.name, int(cells))
        if key not in _BUILT:
            _BUILT.clear()
            _BUILT[key] = self.geometry(int(cells))
        return _BUILT[key]

    def lattice_speed(self, inlet_speed: Optional[float], r: float, re: float, cells: int) -> float:
        """The fastest inflow speed in lattice units: --inlet-speed (model units), else INFLOW_SPEED."""
        return INFLOW_SPEED if inlet_speed is None else float(inlet_speed) / r

    def tau(self, re: float, cells: int, u_max: float) -> float:
        """BGK tau = 1/2 + 3 nu with nu = U_ref D / Re (lattice units)."""
        return 0.5 + 3.0 * self.reference_speed(u_max) * cells / re

    def derived(self, values: Mapping[str, object], given: Mapping[str, object], r: float) -> Dict[str, object]:
        """The run values a flow implies: lx, ly[, lz] from --cells-per-diameter, --inlet-speed (model
        units) and tau from --re.  Refused (ValueError naming the values and what is allowed): a
        lattice size or tau given beside them, a Reynolds number whose tau falls below TAU_MIN."""
        for key in ("lx", "ly", "lz", "tau"):
            if key in given:
                why = "--re sets tau (nu = U D / Re)" if key == "tau" else \
                    "--cells-per-diameter sets the lattice"
                raise ValueError(f"--{key} {given[key]}: the {self.name} set-up's {why}; leave --{key} out")
        re = float(values.get("re") or self.re)
        cells = int(values.get("cells_per_diameter") or self.cells)
        u_max = self.lattice_speed(given.get("inlet_speed"), r, re, cells)
        tau = self.tau(re, cells, u_max)
        if tau < TAU_MIN:
            most = (TAU_MIN - 0.5) / 3.0
            raise ValueError(f"--re {re:g} at --cells-per-diameter {cells} and inflow {u_max:g} (lattice units) "
                             f"needs tau = {tau:.4g}, below the stable {TAU_MIN:g}: allowed here Re <= "
                             f"{self.reference_speed(u_max) * cells / most:.4g}; give more --cells-per-diameter "
                             f"(at least {math.ceil(cells * most / (tau - 0.5) * 3.0)}) or a faster --inlet-speed")
        shape, _ = self.built(cells)
        out: Dict[str, object] = dict(zip(("lx", "ly", "lz"), shape))
        out.update(tau=tau, inlet_speed=u_max * r, re=re, cells_per_diameter=cells)
        return out

    def bodies(self, cells: int) -> Bodies:
        return self.built(cells)[1]

    def fields(self, cells: int, u_max_model: float, re: Optional[float] = None) -> Dict[str, np.ndarray]:
        """The start: the inflow's profile through the whole channel (0 inside the body), so that only
        the body's own disturbance has to develop, and the density of the expected steady pressure
        (``start_pressure``; rho = 1 + 3 p, c_s^2 = 1/3 in lattice units): a start at rho = 1 lacks the
        channel's pressure drop, and the sound wave that fills it rings between the velocity inlet and
        the pressure outlet for tens of thousands of steps (2D-1, TRT, 10 cells per diameter: C_D swings
        by +-0.5 % between steps 5000 and 8000 from rho = 1, by +-0.13 % from this start)."""
        from lbgen.model.physics import scale_factor
        from lbgen.simulation.open_faces import profile_across
        shape, bodies = self.built(cells)
        profile = self.run_defaults.get("inlet_profile")
        across = profile_across(profile, shape[1:]) if profile != "uniform" else np.ones(shape[1:])
        ux = np.broadcast_to(u_max_model * across, shape).copy()
        ux[bodies.labels > 0] = 0.0
        r = scale_factor(self.run_defaults["velocity_set"])
        p = self.start_pressure(cells, u_max_model / r, self.re if re is None else float(re))
        rho = np.broadcast_to((1.0 + 3.0 * p).reshape((-1,) + (1,) * (len(shape) - 1)), shape).copy()
        out = {"rho": rho, "ux": ux, "uy": np.zeros(shape), "T": np.ones(shape)}
        if len(shape) == 3:
            out["uz"] = np.zeros(shape)
        return out

    def start_pressure(self, cells: int, u_max: float, re: float) -> np.ndarray:
        """The expected steady pressure along x (lattice units, 0 at the outlet face x = LX - 1/2):
        the walled channel's Poiseuille drop G (LX - 1/2 - x) at the mean speed U (2D: G = 12 nu U /
        H^2; a duct: White's series, eq. 3-48) and the body's drag spread over a diameter about its
        centre, C_D U^2 A / (2 A_channel) (1 - tanh((x - x_c) / (D/2))) / 2, C_D the flow's guess."""
        from lbgen.simulation.open_faces import duct_centre_speed, duct_profile
        shape, bodies = self.built(cells)
        D, A, U = self.reference(cells, u_max)
        nu = (self.tau(re, cells, u_max) - 0.5) / 3.0
        x = np.arange(shape[0], dtype=np.float64)
        walls = self.run_defaults.get("wall_axes") or ""
        if walls == "y":
            gradient = 12.0 * nu * U / shape[1] ** 2
        elif walls == "yz":
            ny, nz = shape[1:]
            gradient = U / (duct_profile(ny, nz).mean() * duct_centre_speed(ny / 2, nz / 2, 1.0, nu))
        else:
            gradient = 0.0
        centre = float(bodies.shapes[0].centre[0])
        drop = self.drag_guess(re) * U * U * A / (2.0 * float(np.prod(shape[1:])))
        return gradient * (shape[0] - 0.5 - x) + drop * 0.5 * (1.0 - np.tanh((x - centre) / (D / 2)))

    def reference(self, cells: int, u_max: float) -> Tuple[float, float, float]:
        """(D, A, U) in lattice units: the diameter, the reference area, the reference speed."""
        shape, _ = self.built(cells)
        return float(cells), self.area_factor(shape, cells) * cells ** (self.dimension - 1), self.reference_speed(u_max)


def _dfg_case(re: float, dimension: int) -> Optional[str]:
    if dimension == 3:
        return "3D-1Z" if abs(re - 20) < 1e-9 else None
    return {20.0: "2D-1", 100.0: "2D-2"}.get(round(float(re), 9))


def _dfg_drag_guess(re: float, dimension: int) -> float:
    """The start's guess of the DFG cylinder's drag: the published 2D-1 (3D-1Z) value at Re = 20,
    falling as Re^-0.34 (the 2D-1 to 2D-2 ratio, 5.58 to 3.23, over Re 20 to 100)."""
    at20 = float(np.mean(PUBLISHED["2D-1" if dimension == 2 else "3D-1Z"]["C_D"]))
    return at20 * (float(re) / 20.0) ** -0.34


def sphere_geometry(cells: int) -> Tuple[Tuple[int, ...], Bodies]:
    """A sphere of ``cells`` sites across, 2.5 D behind the inlet, centred in a box 12 D x 5 D x 5 D."""
    length, width = (int(round(n * cells)) for n in SPHERE_BOX)
    shape = (length, width, width)
    c = (SPHERE_UPSTREAM * cells - 0.5, (width - 1) / 2, (width - 1) / 2)
    return shape, Bodies(shape, [Sphere(c, cells / 2)], names=["sphere"])


FLOWS: Dict[str, BodyFlow] = {f.name: f for f in (
    BodyFlow("cylinder", 2, "the DFG benchmark (Schaefer & Turek 1996): channel 2.2 x 0.41, cylinder D = 0.1 at "
             "(0.2, 0.2), parabolic inflow at x-low, pressure outlet at x-high, no-slip walls on y; --re 20 (2D-1, "
             "steady) or 100 (2D-2, vortex street), --cells-per-diameter; C_D, C_L, St and dp beside the published "
             "intervals (2D, d2q9)", 20.0, 20,
             {"velocity_set": "d2q9", "collision": "trt", "wall_axes": "y", "inlet": "x-low", "inlet_profile": "parabolic",
              "outlet": "x-high", "body_bc": "bouzidi"},
             lambda n: dfg_cylinder(n, 2), lambda u: dfg_mean_speed(u, 2), lambda shape, n: 1.0,
             lambda re: _dfg_case(re, 2), lambda re: _dfg_drag_guess(re, 2), probes=((0.15, 0.2), (0.25, 0.2))),
    BodyFlow("cylinder3d", 3, "the DFG 3D-1Z benchmark (Schaefer & Turek 1996): duct 2.5 x 0.41 x 0.41, cylinder "
             "D = 0.1 along z at (0.5, 0.2), parabolic inflow, Re 20 (3D, d3q19)", 20.0, 10,
             {"velocity_set": "d3q19", "collision": "trt", "wall_axes": "yz", "inlet": "x-low", "inlet_profile": "biparabolic",
              "outlet": "x-high", "body_bc": "bouzidi"},
             lambda n: _dfg3d(n), lambda u: dfg_mean_speed(u, 3), lambda shape, n: shape[2] / n,
             lambda re: _dfg_case(re, 3), lambda re: _dfg_drag_guess(re, 3),
             probes=((0.45, 0.2, 0.205), (0.55, 0.2, 0.205))),
    BodyFlow("sphere", 3, "a uniform stream past a sphere 2.5 D behind the inlet in a box 12 D x 5 D x 5 D, "
             "free-slip walls on y and z, pressure outlet at x-high; --re (default 20), --cells-per-diameter "
             "(3D, d3q19)", 20.0, 10,
             {"velocity_set": "d3q19", "slip": "y-low y-high z-low z-high", "inlet": "x-low",
              "inlet_profile": "uniform", "outlet": "x-high", "body_bc": "bouzidi"},
             sphere_geometry, lambda u: u, lambda shape, n: math.pi / 4, lambda re: None,
             lambda re: schiller_naumann(re)),
)}


def _dfg3d(cells: int):
    """3D-1Z: the duct 2.5 x 0.41 x 0.41 with the cylinder along z at (0.5, 0.2)."""
    from lbgen.geometry.shapes import Cylinder
    shape, _ = dfg_cylinder(cells, 3)
    h = DFG["diameter"] / cells
    body = Cylinder((0.5 / h - 0.5, DFG["centre"][1] / h - 0.5), cells / 2, axis="z")
    return shape, Bodies(shape, [body], names=["cylinder"])


def schiller_naumann(re: float) -> float:
    """The sphere's drag correlation C_D = 24/Re (1 + 0.15 Re^0.687) (Schiller & Naumann 1933; within
    about 5 % of measurements for Re < 800, Clift, Grace & Weber 1978)."""
    return 24.0 / re * (1.0 + 0.15 * re ** 0.687)


def series_every(flow: BodyFlow, cells: int, u_max: float) -> int:
    """The sampling of a flow's force series: SAMPLES_PER_CONVECTIVE_TIME rows per D / U."""
    return max(1, int(cells / flow.reference_speed(u_max) / SAMPLES_PER_CONVECTIVE_TIME))


def _line(rho: np.ndarray, solid: np.ndarray, point: Tuple[float, ...], h: float):
    """rho along the x line through a physical point (DFG units, the walls at -1/2 site): the
    (bi)linear interpolation across, and whether each x site's stencil is fluid; and the point's x
    in sites."""
    x = np.array(point) / h - 0.5
    j = np.floor(x[1:]).astype(int)
    a = x[1:] - j
    line, fluid = np.zeros(rho.shape[0]), np.ones(rho.shape[0], bool)
    for corner in np.ndindex(*(2,) * len(j)):
        w = np.prod([a[k] if c else 1 - a[k] for k, c in enumerate(corner)])
        at = (slice(None),) + tuple(j + np.array(corner))
        line += w * rho[at]
        fluid &= ~solid[at]
    return line, fluid, float(x[0])


def _probe(rho: np.ndarray, solid: np.ndarray, point: Tuple[float, ...], side: int, h: float) -> float:
    """rho at a probe on the body's surface (``side`` -1: in front, +1: behind): linear in x between the
    sites about the point where both are fluid, else extrapolated linearly from the two fluid
    sites next to it on that side (the surface lies between sites)."""
    line, fluid, x = _line(rho, solid, point, h)
    i = int(np.floor(x))
    if fluid[i] and fluid[i + 1]:
        return float(line[i] + (x - i) * (line[i + 1] - line[i]))
    k = i if side < 0 else i + 1
    while not fluid[k]:
        k += side
    a, b = k, k + side
    return float(line[a] + (x - a) * (line[b] - line[a]) / (b - a))


#: the lift's peak-to-peak amplitude (C_L units) above which the run reports a Strouhal number
#: (below it the lift carries only the start's decaying sound waves)
LIFT_OSCILLATION = 0.05


def force_coefficients(flow: BodyFlow, cfg, force) -> np.ndarray:
    """(C_D, C_L[, C_z]) of a force on the body (model units: r^2 x lattice units) at rho = 1."""
    from lbgen.model.physics import scale_factor
    r = scale_factor(cfg.velocity_set)
    _, A, U = flow.reference(int(cfg.cells_per_diameter), float(cfg.inlet_speed) / r)
    return coefficients(np.asarray(force, dtype=np.float64) / r ** 2, 1.0, U, A)


def free_stream(flow: BodyFlow, cells: int, rho: np.ndarray, ux: np.ndarray, r: float) -> Tuple[float, float]:
    """(rho_inf, U_inf) in lattice units: the free stream the body meets on the weakly compressible
    lattice.  The benchmark's fluid is incompressible (rho = 1, mean speed U everywhere); the
    lattice's is denser upstream by O(Ma^2) (2D-1 at Mach 0.17: 1.4 % at the body, 2.4 % at the
    inlet) and, at the mass flux the inlet imposes, slower there.  rho_inf: the mean density of the
    fluid sites of the cross-sections within one diameter of the body's centre; U_inf: their mean
    mass flux (sum of rho u_x over a cross-section, ``ux`` in model units) over rho_inf and the
    channel's cross-section."""
    shape, bodies = flow.built(cells)
    solid = bodies.labels > 0
    near = np.abs(np.arange(shape[0]) - float(bodies.shapes[0].centre[0])) <= cells
    rho_inf = float(rho[near][~solid[near]].mean())
    flux = np.where(solid, 0.0, rho * ux)[near].reshape(int(near.sum()), -1).sum(axis=1).mean() / r
    return rho_inf, float(flux / (rho_inf * np.prod(shape[1:])))


def measure(flow: BodyFlow, cfg, history: List[Tuple[int, np.ndarray]], rho: Optional[np.ndarray],
            ux: Optional[np.ndarray] = None) -> Dict[str, float]:
    """The flow's numbers: C_D, C_L averaged over the last quarter of the samples (the start's sound
    waves ring between inlet and outlet for thousands of steps; the mean over several of their
    periods removes them), their maxima over the second half of the samples, St from the lift
    (when it oscillates by more than LIFT_OSCILLATION), dp between the probes (DFG; physical
    units).  With the final ``rho`` and ``ux`` (model units) the dynamic pressure is the free
    stream's at the body, rho_inf U_inf^2 (``free_stream``; also reported, as ``rho_inf`` and
    ``U_inf`` / U), and St takes U_inf: the weakly compressible lattice's O(Ma^2) departure from
    the benchmark's rho = 1, U that it leaves out (2D-1, TRT, 10 cells per diameter: C_D 5.875 at
    Mach 0.17, 5.720 at 0.087 with rho = 1, U; 5.663 and 5.664 with the free stream).  Without
    them: the nominal rho = 1 and mean inflow speed U."""
    from lbgen.model.physics import scale_factor
    r = scale_factor(cfg.velocity_set)
    cells, u_max = int(cfg.cells_per_diameter), float(cfg.inlet_speed) / r
    D, A, U = flow.reference(cells, u_max)
    out: Dict[str, float] = {}
    pressure, speed = 1.0, 1.0                     # the dynamic pressure's and the speed's factors
    if rho is not None and ux is not None:
        rho_inf, u_inf = free_stream(flow, cells, rho, ux, r)
        pressure, speed = U * U / (rho_inf * u_inf * u_inf), U / u_inf
        out.update(rho_inf=rho_inf, U_inf=u_inf / U)
    if history:
        steps = np.array([s for s, _ in history])
        C = np.array([force_coefficients(flow, cfg, f) for _, f in history]) * pressure
        late, last = C[len(C) // 2:], C[len(C) * 3 // 4:]
        out.update(C_D=float(last[:, 0].mean()), C_L=float(last[:, 1].mean()), C_D_max=float(late[:, 0].max()),
                   C_L_max=float(late[:, 1].max()))
        if len(steps) > 8 and np.ptp(late[:, 1]) > LIFT_OSCILLATION:
            # the lift on a uniform grid of the series' spacing (the guard's samples fall between)
            steps, keep = np.unique(steps, return_index=True)
            dt = float(np.median(np.diff(steps)))
            grid = np.arange(steps[0], steps[-1] + dt / 2, dt)
            st = strouhal(np.interp(grid, steps, C[keep, 1]), dt, D, U)
            if st is not None:
                out["St"] = st * speed
    if rho is not None and flow.probes is not None:
        h, solid = DFG["diameter"] / cells, flow.bodies(cells).labels > 0
        drho = _probe(rho, solid, flow.probes[0], -1, h) - _probe(rho, solid, flow.probes[1], +1, h)
        phys_u = cfg.re * DFG_NU / DFG["diameter"]                  # the benchmark's mean speed
        out["dp"] = drho / 3.0 / U ** 2 * phys_u ** 2 * pressure      # p = c_s^2 rho, c_s^2 = 1/3 (lattice)
    return out


#: the ends of --steady's pairs of windows within the last window (``drag_change``)
STEADY_ENDS = 9


def steady_window(flow: BodyFlow, cfg) -> float:
    """The window of --steady (steps): the period of the channel's quarter-wave sound, 4 LX / c_s
    (c_s = 1/sqrt(3) sites/step), that the start leaves ringing between the velocity inlet and the
    pressure outlet (``fields``; 7.7 convective times D / U in 3D-1Z, 10 in 2D-1 at Mach 0.17): the
    mean over one period holds the drag without its fundamental."""
    return 4.0 * float(cfg.lx) * math.sqrt(3.0)


def drag_change(flow: BodyFlow, cfg, history: List[Tuple[int, np.ndarray]]) -> Optional[float]:
    """--steady's measure: the largest relative change of the drag (the force along x) between its
    means over two consecutive ``steady_window``s ending anywhere in the last window (linear between
    the samples; STEADY_ENDS ends), or None while the history spans less than three windows.  One
    pair of windows alone can agree by chance while the start's faster sound (across the channel,
    and aliased by the samples) still swings the drag by per cent (3D-1Z at 4 cells, steps 1000 to
    1500: C_D +-2.4 %; two windows' means agreed to 9e-5 at step 1525, 0.6 % from the steady value)."""
    if len(history) < 3:
        return None
    steps, keep = np.unique(np.array([s for s, _ in history], dtype=np.float64), return_index=True)
    drag = np.array([float(np.asarray(f)[0]) for _, f in history])[keep]
    window = steady_window(flow, cfg)
    if steps[-1] - steps[0] < 3.0 * window:
        return None
    changes = []
    for end in np.linspace(steps[-1] - window, steps[-1], STEADY_ENDS):
        values = np.interp(np.linspace(end - 2.0 * window, end, 401), steps, drag)
        before, last = values[:201].mean(), values[200:].mean()
        changes.append(abs(last - before) / max(abs(last), 1e-300))
    return float(max(changes))


def summary(flow: BodyFlow, cfg, numbers: Mapping[str, float]) -> List[str]:
    """Lines of the run's summary: each number beside its published interval (or correlation)."""
    case = flow.case(cfg.re)
    published = PUBLISHED.get(case, {})
    head = f"{flow.name} at Re = {cfg.re:g}, {cfg.cells_per_diameter} cells per diameter"
    lines = [head + (f" (Schaefer & Turek 1996, case {case}):" if case else ":")]
    keys = ["C_D", "C_L", "dp"] if case in (None, "2D-1", "3D-1Z") else ["C_D_max", "C_L_max", "St"]
    if case is None:
        keys = ["C_D", "C_L", "C_D_max", "C_L_max", "St"]
    for key in keys:
        if key not in numbers:
            continue
        value = numbers[key]
        line = f"  {key:8s}{value: .5g}"
        if key in published:
            lo, hi = published[key]
            inside = "inside" if lo <= value <= hi else "outside"
            line += f"   published [{lo:g}, {hi:g}]: {inside}"
        elif key == "C_D" and flow.name == "sphere":
            line += f"   Schiller & Naumann correlation {schiller_naumann(cfg.re):.4g} (+-5 %)"
        lines.append(line)
    if "rho_inf" in numbers:
        lines.append(f"  (reference: the free stream at the body, rho {numbers['rho_inf']:.5g} and speed "
                     f"{numbers['U_inf']:.5g} x the inflow's mean, of the weakly compressible lattice)")
    if case == "2D-2" and "St" not in numbers:
        lines.append("  St       (the lift does not oscillate yet: run longer, e.g. --steps for 20 periods)")
    return lines
