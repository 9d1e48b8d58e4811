"""Named set-ups: initial fields, and the run parameters each set-up implies.

A ``Setup`` carries its own defaults (written once, here): the Rayleigh-Taylor set-up
implies the regularized operator, gravity and thermal walls at 1.05 / 0.95; the others are
periodic BGK.  The run description (``lbgen.run.config``) takes a set-up's defaults before
the user's TOML file and command line.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Dict, Mapping, Optional, Tuple

import numpy as np

from lbgen.model.catalog import VELOCITY_SETS
from lbgen.run.flows import FLOWS

#: gravity of the reference Rayleigh-Taylor runs (d2q37.md), in model units
RT_GRAVITY = (0.0, -8.33e-5 / 32)
#: gravity of the 3D Rayleigh-Taylor set-up (Z up; model units): the 2D runs' g would take
#: t_RT = 19 000 steps at the default 32^3, where heat conduction across the interface drives
#: flows of the free-fall speed; 1e-3 gives t_RT = 980 steps at LX = 32 (Ma = 0.03)
RT_GRAVITY_3D = (0.0, 0.0, -1e-3)
RT_T_HOT, RT_T_COLD = 1.05, 0.95
#: the width of the Rayleigh-Taylor interface (sites; in 3D at most this)
RT_WIDTH = 10.0
#: the set-ups' amplitudes when none is given (one home: the functions' defaults and the
#: recorded run description)
SHEAR_AMPLITUDE, NOISE_AMPLITUDE = 0.05, 0.01


#: the pressure outlets of the duct-pressure set-up (model density; a drop of 1 %)
DUCT_PRESSURE = "x-low=1.005; x-high=0.995"

def rt_amplitude(lx: int) -> float:
    """The Rayleigh-Taylor interface perturbation when none is given: LX/100."""
    return lx / 100.0


def shear_wave(lx: int, ly: int, amplitude: float = SHEAR_AMPLITUDE, **_) -> Dict[str, np.ndarray]:
    """Transverse wave u_y = A sin(2 pi x / LX) at rho = T = 1."""
    x = np.arange(lx)[:, None] * np.ones((1, ly))
    return {"rho": np.ones((lx, ly)), "ux": np.zeros((lx, ly)),
            "uy": amplitude * np.sin(2 * np.pi * x / lx), "T": np.ones((lx, ly))}


def uniform_noise(lx: int, ly: int, amplitude: float = NOISE_AMPLITUDE, seed: int = 0, thermal: bool = True,
                  **_) -> Dict[str, np.ndarray]:
    """Uniform state rho = T = 1, u = 0, with random noise of the given amplitude on every field
    (T stays 1 for isothermal velocity sets: ``thermal=False``)."""
    rng = np.random.default_rng(seed)
    noise = lambda: amplitude * rng.standard_normal((lx, ly))  # noqa: E731
    fields = {"rho": 1 + noise(), "ux": noise(), "uy": noise(), "T": 1 + noise()}
    if not thermal:
        fields["T"] = np.ones((lx, ly))
    return fields


def rayleigh_taylor(lx: int, ly: int, gravity: Tuple[float, float] = RT_GRAVITY,
                    T_hot: float = RT_T_HOT, T_cold: float = RT_T_COLD, width: float = RT_WIDTH, amplitude: float = None,
                    seed: int = 0, **_) -> Dict[str, np.ndarray]:
    """Thermal Rayleigh-Taylor (d2q37.md): cold, heavy fluid on top of hot, light fluid.

    T = (T_hot + T_cold)/2 - (T_hot - T_cold)/2 tanh((y - h(x)) / width) around an interface
    h(x) at mid-height perturbed by a random superposition of the first 8 Fourier modes
    (amplitude: a fraction of LX, default LX/100 split over the modes, phases from `seed`);
    fluid at rest, density in discrete hydrostatic balance with rho = 1 at y = 0:
    p_y - p_{y-1} = g_y (rho_y + rho_{y-1}) / 2 with p = rho T, i.e.
    rho_y = rho_{y-1} (T_{y-1} + g_y/2) / (T_y - g_y/2) -- the balance of the half-step
    forcing (the force acts on the mean density of the two rows; the production code's
    rho_y = rho_{y-1} (T_{y-1} + g_y) / T_y leaves a residual flow ~2000 times larger in a
    fluid at rest: docs/physics.md).  g is the gravity of the run (same units as
    --gravity).  These are physical fields: a run stores the populations whose half-step
    velocity is 0, so the fluid starts at rest.
    """
    rng = np.random.default_rng(seed)
    x = np.arange(lx)
    amp = rt_amplitude(lx) if amplitude is None else amplitude
    modes = np.arange(1, 9)
    a = rng.standard_normal(modes.size) * amp / np.sqrt(modes.size)
    phase = rng.uniform(0, 2 * np.pi, modes.size)
    h = ly / 2 + (a[:, None] * np.cos(2 * np.pi * modes[:, None] * x[None, :] / lx + phase[:, None])).sum(0)
    rho, T = rayleigh_taylor_profile(h, ly, T_hot, T_cold, width, float(gravity[1]))
    return {"rho": rho, "ux": np.zeros((lx, ly)), "uy": np.zeros((lx, ly)), "T": T}


def rayleigh_taylor_profile(h: np.ndarray, depth: int, T_hot: float, T_cold: float, width: float, g: float):
    """(rho, T) of the Rayleigh-Taylor state along a last axis of `depth` sites, the interface at
    height h (an array over the other axes): the tanh profile and the discrete hydrostatic
    balance of :func:`rayleigh_taylor`, g the gravity component along that axis."""
    s = np.arange(depth)
    T = 0.5 * (T_hot + T_cold) - 0.5 * (T_hot - T_cold) * np.tanh((s - h[..., None]) / width)
    rho = np.ones(T.shape)
    for j in range(1, depth):
        rho[..., j] = rho[..., j - 1] * (T[..., j - 1] + g / 2) / (T[..., j] - g / 2)
    return rho, T


# --- 3D set-ups (fields of shape (LX, LY, LZ): rho, ux, uy, uz, T; velocities in model units) -------
#: the lid speed of the cavity and the body force of the channel when none is given (model
#: units: u_lattice = u / r, force per unit mass per step g / r; r = sqrt(3) for D3Q19/D3Q27)
CAVITY_LID = {"z-high": (0.1, 0.0, 0.0)}
#: the 2D cavity's (D2Q9, r = sqrt(3): Mach 0.1; lbgen.model.physics.LID_MACH_MAX applies)
CAVITY_LID_2D = {"y-high": (0.1, 0.0)}
CHANNEL_GRAVITY = (2.5e-5, 0.0, 0.0)
#: the 2D channel's (--velocity-set d2q9 ...): the same force along x
CHANNEL_GRAVITY_2D = CHANNEL_GRAVITY[:2]
TAYLOR_GREEN_AMPLITUDE = 0.05
#: the end of a taylor-green run given by --re without --steps, in convective times L / U (the
#: reference data run to t = 20 t_c: lbgen/output/tgv_re1600_spectral.csv)
TAYLOR_GREEN_END = 20.0


def _planes(lx: int, x_range) -> Tuple[int, int]:
    """The planes of X (x0, x1) a 3D set-up evaluates: ``x_range``, or all of them.  A set-up
    evaluated on a slab gives the whole state's values there, bit for bit (its operations are
    per site), so a run starts slab by slab (``Simulation.set_fields_by_slabs``)."""
    return (0, lx) if x_range is None else (int(x_range[0]), int(x_range[1]))


def _at_rest3d(lx: int, ly: int, lz: int, x_range=None) -> Dict[str, np.ndarray]:
    x0, x1 = _planes(lx, x_range)
    shape = (x1 - x0, ly, lz)
    return {"rho": np.ones(shape), "ux": np.zeros(shape), "uy": np.zeros(shape), "uz": np.zeros(shape),
            "T": np.ones(shape)}


def shear_wave3d(lx: int, ly: int, lz: int, amplitude: float = SHEAR_AMPLITUDE, x_range=None,
                 **_) -> Dict[str, np.ndarray]:
    """Transverse wave u_y = A sin(2 pi x / LX), uniform in y and z, at rho = 1 (``x_range``: the
    planes x0 <= x < x1 only)."""
    x0, x1 = _planes(lx, x_range)
    out = _at_rest3d(lx, ly, lz, x_range)
    out["uy"] = amplitude * np.sin(2 * np.pi * np.arange(lx)[x0:x1] / lx)[:, None, None] * np.ones((1, ly, lz))
    return out


def taylor_green3d(lx: int, ly: int, lz: int, amplitude: float = TAYLOR_GREEN_AMPLITUDE, r: float = 3 ** 0.5,
                   x_range=None, **_) -> Dict[str, np.ndarray]:
    """3D Taylor-Green vortex (docs/validation3d.md): u = U (sin x cos y cos z, -cos x sin y cos z, 0)
    with x = 2 pi s / L per axis, and its pressure p = U_l^2/16 (cos 2x + cos 2y)(cos 2z + 2) in the
    density rho = 1 + 3 p (U_l = U / r, lattice units).  ``x_range``: the planes x0 <= x < x1 only."""
    x0, x1 = _planes(lx, x_range)
    # open grids: the products broadcast to the lattice (the same operations per site, the same bits),
    # and rho is made in p's array: five arrays of the lattice in the end, few more on the way
    x, y, z = np.meshgrid(*(2 * np.pi * (np.arange(n) + 0.5) / n for n in (lx, ly, lz)), indexing="ij", sparse=True)
    x = x[x0:x1]
    out = _at_rest3d(lx, ly, lz, x_range)
    out["ux"] = amplitude * np.sin(x) * np.cos(y) * np.cos(z)
    out["uy"] = -amplitude * np.cos(x) * np.sin(y) * np.cos(z)
    p = (amplitude / r) ** 2 / 16 * (np.cos(2 * x) + np.cos(2 * y)) * (np.cos(2 * z) + 2)
    p *= 3
    p += 1               # rho = 1 + 3 p
    out["rho"] = p
    return out


#: the width of the 3D Rayleigh-Taylor interface: LZ / RT_WIDTH_3D sites, at most RT_WIDTH
RT_WIDTH_3D = 16


def rt_width(dimension: int, depth: int) -> float:
    """The Rayleigh-Taylor interface width (sites): RT_WIDTH in 2D, min(RT_WIDTH, LZ / RT_WIDTH_3D) in 3D."""
    return RT_WIDTH if dimension == 2 else min(RT_WIDTH, depth / RT_WIDTH_3D)


def rt_gravity_refusal(g: float, *, velocity_set: str, lx: int, depth: int, T_hot: float = RT_T_HOT,
                       T_cold: float = RT_T_COLD) -> Optional[str]:
    """The one rule of Rayleigh-Taylor gravity (2D and 3D): why gravity component g (model
    units, along the interface's normal: g_y in 2D, g_z in 3D) gives no valid start, or None.

    Refused: a hydrostatic start (:func:`rayleigh_taylor_profile`, flat interface) with a
    density that is not finite and positive (every row's factor (T_{j-1} + g/2) / (T_j - g/2)
    must be positive: |g| < 2 min(T_hot, T_cold)), and a free fall U_ff = sqrt(A g LX) (the flow's speed
    scale, whose Mach number the run's header prints: ``rayleigh_taylor_numbers``) above the
    Mach limit a lid has (``lbgen.model.physics.LID_MACH_MAX``, c_s at T = 1): beyond it the
    weakly compressible equations do not hold.  The text names the value and the allowed range."""
    from lbgen.model.catalog import set_entry
    from lbgen.model.physics import (LID_MACH_MAX, atwood, free_fall_speed, gravity_to_lattice, gravity_to_model,
                                     scale_factor, sound_speed)
    dimension = set_entry(velocity_set).D
    axis = "yz"[dimension - 2]
    with np.errstate(all="ignore"):
        rho, _ = rayleigh_taylor_profile(np.array([depth / 2.0]), depth, T_hot, T_cold, rt_width(dimension, depth),
                                         float(g))
    g_rho = 2.0 * min(T_hot, T_cold)            # |g| below it: every row's factor is positive, any interface
    r = scale_factor(velocity_set)
    c_s = sound_speed(1.0, r=r, dimension=dimension)
    A = atwood(max(T_hot, T_cold), min(T_hot, T_cold))
    g_mach = gravity_to_model((LID_MACH_MAX * c_s) ** 2 / (A * lx), r) if A > 0 else math.inf
    if not math.isfinite(g):
        why = "it is not a finite number"
    elif not (np.all(np.isfinite(rho)) and rho.min() > 0 and abs(g) < g_rho):
        why = "its hydrostatic start has densities that are not finite and positive"
    elif abs(g) > g_mach:
        ma = free_fall_speed(A, gravity_to_lattice(abs(g), r), lx) / c_s
        why = f"its free fall sqrt(A g LX) reaches Mach {ma:.3g}, above the limit {LID_MACH_MAX:g}"
    else:
        return None
    size = f"LX = {lx}, L{axis.upper()} = {depth}"
    bound = f"<= {g_mach:.4g}" if g_mach < g_rho else f"< {g_rho:.4g}"
    default = RT_GRAVITY_3D[2] if dimension == 3 else RT_GRAVITY[1]
    return (f"rayleigh-taylor: gravity g_{axis} = {g:g} on {velocity_set} ({size}): {why}; allowed here: "
            f"|g_{axis}| {bound} (model units; the set-up's default is {default:g})")


def rayleigh_taylor3d(lx: int, ly: int, lz: int, gravity: Tuple[float, float, float] = RT_GRAVITY_3D,
                      T_hot: float = RT_T_HOT, T_cold: float = RT_T_COLD, width: Optional[float] = None,
                      amplitude: float = None, seed: int = 0, **_) -> Dict[str, np.ndarray]:
    """Thermal Rayleigh-Taylor in 3D: the 2D state (:func:`rayleigh_taylor`) with Z up.

    The interface h(x, y) at mid-depth is perturbed by the 8 Fourier modes (mx, my) with
    0 <= mx, my <= 2, not both 0 (random amplitudes of a total LX/100 by default and random
    phases from `seed`); T the tanh profile of width min(10, LZ/16) sites across it (cold on
    top), rho in the discrete hydrostatic balance of the half-step forcing along z
    (rho = 1 at z = 0), the fluid at rest.  The run's no-slip walls on z (half-way bounce-back)
    conduct no heat."""
    rng = np.random.default_rng(seed)
    amp = rt_amplitude(lx) if amplitude is None else amplitude
    modes = [(mx, my) for mx in range(3) for my in range(3) if mx or my]
    a = rng.standard_normal(len(modes)) * amp / np.sqrt(len(modes))
    phase = rng.uniform(0, 2 * np.pi, len(modes))
    x, y = np.meshgrid(np.arange(lx) / lx, np.arange(ly) / ly, indexing="ij")
    h = lz / 2 + sum(ai * np.cos(2 * np.pi * (mx * x + my * y) + p) for ai, (mx, my), p in zip(a, modes, phase))
    width = rt_width(3, lz) if width is None else width
    rho, T = rayleigh_taylor_profile(h, lz, T_hot, T_cold, width, float(gravity[2]))
    zero = np.zeros((lx, ly, lz))
    return {"rho": rho, "ux": zero, "uy": zero.copy(), "uz": zero.copy(), "T": T}


#: the rayleigh-benard walls when none are given (Delta T = 0.1, 2D and 3D; a smaller contrast needs a
#: deeper layer for the same Ra: the adiabatic ratio goes as 1 / (Delta T H)^2).  D3Q39 conducts as
#: kappa / T^2 (+-10 % across this layer), which the Nusselt number takes into account
#: (lbgen.model.convection); measured at Ra = 1e4, LZ = 40: Nu 1.2 % above Clever & Busse, where
#: Delta T = 0.05 (the 3D default until the D3Q39 planes were measured) has four times the
#: adiabatic ratio, 0.14 (docs/physics.md, "Rayleigh-Benard in 3D")
RB_T_2D = RB_T_3D = (1.05, 0.95)
#: the seed's amplitude when none is given: a fraction of Delta T
RB_AMPLITUDE = 0.01


def hydrostatic_density(T: np.ndarray, g: float) -> np.ndarray:
    """rho along the last axis in the discrete hydrostatic balance of the half-step forcing
    (rho = 1 in the first plane): rho_j = rho_{j-1} (T_{j-1} + g/2) / (T_j - g/2), g the gravity
    component along that axis (model units; :func:`rayleigh_taylor`)."""
    rho = np.ones(T.shape)
    for j in range(1, T.shape[-1]):
        rho[..., j] = rho[..., j - 1] * (T[..., j - 1] + g / 2) / (T[..., j] - g / 2)
    return rho


def rayleigh_benard_state(shape: Tuple[int, ...], gravity, T_hot: float, T_cold: float, amplitude: float,
                          planes: Tuple[float, float]) -> Dict[str, np.ndarray]:
    """Conduction between the plates plus a seed (2D (LX, LY) or 3D (LX, LY, LZ), the last axis
    vertical): T linear from T_hot at the bottom isothermal plane to T_cold at the top one
    (``planes``, rows), plus amplitude (T_hot - T_cold) cos(2 pi x / LX) sin(pi s) between them
    (s the height from 0 to 1; in 3D plus a tenth of it along y, which breaks the rolls'
    symmetry); rho in the discrete hydrostatic balance (:func:`hydrostatic_density`) scaled to a
    mean of 1 across the mid-plane between ``planes``, the fluid at rest.  The run's numbers take
    nu, kappa and Ra at density 1 (``lbgen.model.physics.run_numbers``' rho_ref; regularized
    nu = C1 / (rho r^2), kappa = C2 / (rho r^2)): the scaling makes them the mid-layer values
    (with rho = 1 at the hot wall they were 5 % above them at Delta T = 0.1, and Ra 11 % below
    the layer's)."""
    n = shape[-1]
    z = np.arange(n, dtype=np.float64)
    s = (z - planes[0]) / (planes[1] - planes[0])
    T = np.broadcast_to(T_hot + (T_cold - T_hot) * s, shape).copy()
    s = np.clip(s, 0.0, 1.0)
    axes = np.meshgrid(*(np.arange(m) / m for m in shape[:-1]), indexing="ij")
    mode = np.cos(2 * np.pi * axes[0])
    if len(shape) == 3:
        mode = mode + 0.1 * np.cos(2 * np.pi * axes[1])
    T += amplitude * (T_hot - T_cold) * mode[..., None] * np.sin(np.pi * s)
    rho = hydrostatic_density(T, float(gravity[-1]))
    rho /= np.interp(0.5 * (planes[0] + planes[1]), z, rho.mean(axis=tuple(range(len(shape) - 1))))
    out = {"rho": rho, "T": T}
    for name in ("ux", "uy", "uz")[:len(shape)]:
        out[name] = np.zeros(shape)
    return out


def rayleigh_benard(lx: int, ly: int, gravity=(0.0, 0.0), T_hot: float = RB_T_2D[0], T_cold: float = RB_T_2D[1],
                    amplitude: Optional[float] = None, planes: Optional[Tuple[float, float]] = None,
                    **_) -> Dict[str, np.ndarray]:
    """Rayleigh-Benard in 2D (y up): :func:`rayleigh_benard_state` of (LX, LY); ``planes``: the
    isothermal planes (default: D2Q37's imposing rows 2 and LY - 3)."""
    amp = RB_AMPLITUDE if amplitude is None else amplitude
    return rayleigh_benard_state((lx, ly), gravity, T_hot, T_cold, amp, planes or (2.0, ly - 3.0))


def rayleigh_benard3d(lx: int, ly: int, lz: int, gravity=(0.0, 0.0, 0.0), T_hot: float = RB_T_3D[0],
                      T_cold: float = RB_T_3D[1], amplitude: Optional[float] = None,
                      planes: Optional[Tuple[float, float]] = None, **_) -> Dict[str, np.ndarray]:
    """Rayleigh-Benard in 3D (z up): :func:`rayleigh_benard_state` of (LX, LY, LZ); ``planes``: the
    isothermal planes (default: D3Q39's imposing planes 2 and LZ - 3)."""
    amp = RB_AMPLITUDE if amplitude is None else amplitude
    return rayleigh_benard_state((lx, ly, lz), gravity, T_hot, T_cold, amp, planes or (2.0, lz - 3.0))


def at_rest(lx: int, ly: int, **_) -> Dict[str, np.ndarray]:
    """A 2D fluid at rest, rho = T = 1 (the walls or a lid set it moving)."""
    shape = (lx, ly)
    return {"rho": np.ones(shape), "ux": np.zeros(shape), "uy": np.zeros(shape), "T": np.ones(shape)}


def at_rest3d(lx: int, ly: int, lz: int, x_range=None, **_) -> Dict[str, np.ndarray]:
    """A fluid at rest, rho = 1 (the walls, a lid or the body force set it moving)."""
    return _at_rest3d(lx, ly, lz, x_range)


@dataclass(frozen=True)
class Setup:
    """A named initial state: ``make(lx, ly, **options)`` gives rho, ux, uy, T of shape
    (LX, LY); ``run_defaults`` are the run-description values it implies (keys of
    ``lbgen.run.config``); ``options`` the keywords of ``make`` that a run passes on."""

    name: str
    make: Optional[Callable[..., Dict[str, np.ndarray]]]
    description: str
    run_defaults: Mapping[str, object] = field(default_factory=dict)
    #: the amplitude when none is given, from the lattice width (recorded in the run description)
    default_amplitude: Callable[[int], float] = lambda lx: 0.0
    #: whether the state depends on --seed
    random: bool = False
    #: run defaults of one velocity set on top of ``run_defaults`` (what keeps that set stable)
    set_defaults: Mapping[str, Mapping[str, object]] = field(default_factory=dict)
    #: the 3D state ``make3d(lx, ly, lz, **options)`` (rho, ux, uy, uz, T), None for a 2D-only set-up
    make3d: Optional[Callable[..., Dict[str, np.ndarray]]] = None
    #: whether --amplitude shapes its state (the fluids at rest have none)
    uses_amplitude: bool = True
    #: the run defaults of its 3D runs instead of ``run_defaults`` (a set-up of both dimensions)
    run_defaults3d: Optional[Mapping[str, object]] = None
    #: why it has no state in the other dimension (the refusal says it)
    missing_why: str = ""

    @property
    def by_slabs(self) -> bool:
        """Whether its 3D state is evaluated on a slab of X planes (``make3d``'s ``x_range``)."""
        return self.make3d in SLAB_SETUPS

    @property
    def dimensions(self) -> Tuple[int, ...]:
        """The dimensions this set-up has a state for."""
        return tuple(d for d, make in ((2, self.make), (3, self.make3d)) if make is not None)

    def defaults_for(self, velocity_set: str) -> Dict[str, object]:
        """The run defaults this set-up implies for a velocity set (its 3D ones for a 3D set)."""
        from lbgen.model.catalog import set_entry
        base = self.run_defaults
        if self.run_defaults3d is not None and set_entry(velocity_set).D == 3:
            base = self.run_defaults3d
        return {**base, **self.set_defaults.get(velocity_set, {})}

    def fields(self, lx: int, ly: int, *, seed: int = 0, amplitude: Optional[float] = None,
               gravity=(0.0, 0.0), walls: Optional[Mapping] = None, thermal: bool = True,
               lz: Optional[int] = None, planes: Optional[Tuple[float, float]] = None,
               wall_axis: Optional[str] = None, x_range=None) -> Dict[str, np.ndarray]:
        """``thermal=False`` (isothermal velocity sets): the set-up keeps T = 1; ``lz``: the 3D state;
        ``walls``: the thermal walls (their temperatures shape the thermal set-ups' states);
        ``planes``: the isothermal planes of a rayleigh-benard run; ``wall_axis``: the thermal
        walls' axis, x (2D, 3D) or y (3D) (None: the last): the thermal set-ups (UPRIGHT) are the
        state of the lattice with that axis and the last swapped, turned back
        (``lbgen.model.wall_frame``); ``x_range`` (x0, x1): the 3D state's planes x0 <= x < x1 only
        (a set-up ``by_slabs``)."""
        if x_range is not None and not (lz is not None and self.by_slabs):
            raise ValueError(f"the {self.name} set-up is not evaluated by slabs of X")
        if wall_axis is not None and self.name in UPRIGHT:
            from lbgen.model.wall_frame import upright, upright_shape, upright_vector
            turned = upright_shape((lx, ly) if lz is None else (lx, ly, lz), wall_axis)
            state = self.fields(turned[0], turned[1], seed=seed, amplitude=amplitude,
                                gravity=upright_vector(gravity, wall_axis), walls=walls, thermal=thermal,
                                lz=None if lz is None else turned[2], planes=planes)
            return {k: np.ascontiguousarray(v) for k, v in upright(state, wall_axis).items()}
        extra = {"seed": seed, "gravity": gravity, "thermal": thermal,
                 "amplitude": self.default_amplitude(lx) if amplitude is None else amplitude}
        if walls and self.name in ("rayleigh-taylor", "rayleigh-benard"):
            extra["T_hot"], extra["T_cold"] = walls["T_bottom"], walls["T_top"]
        if planes is not None:
            extra["planes"] = planes
        if lz is not None:
            return self.make3d(lx, ly, lz, **extra, **({} if x_range is None else {"x_range": x_range}))
        return self.make(lx, ly, **extra)


#: the 3D states that take an ``x_range`` (a slab of X planes: the same values as the whole state's there)
SLAB_SETUPS = (shear_wave3d, taylor_green3d, at_rest3d)

#: the set-ups written with the vertical axis last, whose 3D state turns with the thermal walls' --wall-axis
UPRIGHT = ("rayleigh-taylor", "rayleigh-benard")

SETUPS: Dict[str, Setup] = {s.name: s for s in (
    Setup("shear-wave", shear_wave, "transverse wave u_y = A sin(2 pi x / LX), A = 0.05, rho = T = 1 (periodic)",
          default_amplitude=lambda lx: SHEAR_AMPLITUDE, make3d=shear_wave3d),
    Setup("uniform-noise", uniform_noise, "rho = T = 1, u = 0 with Gaussian noise of amplitude 0.01 (periodic)",
          default_amplitude=lambda lx: NOISE_AMPLITUDE, random=True,
          missing_why="its noisy state is written for (LX, LY) fields only; a 3D flow to start from: "
                      "taylor-green or shear-wave"),
    Setup("rayleigh-taylor", rayleigh_taylor,
          "cold heavy fluid over hot light fluid, interface at mid-height perturbed by 8 random modes "
          "(amplitude LX/100); 3D (d3q39): Z up, no-slip walls on z that conduct no heat (--walls: isothermal "
          "walls across z at 1.05 / 0.95)",
          run_defaults={"collision": "regularized", "gravity": RT_GRAVITY, "walls": True,
                        "t_bottom": RT_T_HOT, "t_top": RT_T_COLD},
          default_amplitude=rt_amplitude, random=True, make3d=rayleigh_taylor3d,
          # 3D: bounce-back walls on z that conduct no heat; --walls: thermal walls across z at the
          # 2D set-up's temperatures (hot bottom, cold top: the start's own)
          run_defaults3d={"collision": "regularized", "gravity": RT_GRAVITY_3D, "wall_axes": "z",
                          "t_bottom": RT_T_HOT, "t_top": RT_T_COLD},
          # D2V17 (third order) diverged by step 6400 of the README's main job (128 x 512, g = 4e-4)
          # with C1 = C2 = 1e-3; with 3e-3 it runs the 8000 steps (tests/run/test_setups.py)
          set_defaults={"d2v17": {"C1": 3e-3, "C2": 3e-3}}),
    Setup("rayleigh-benard", rayleigh_benard,
          "conduction between a hot bottom and a cold top wall (2D d2q37 y walls 1.05 / 0.95; 3D d3q39 z walls "
          "1.05 / 0.95), periodic sides, seeded by a roll of amplitude 0.01 Delta T; gravity from --ra, the "
          "diffusivity from --pr, the periodic lengths from --aspect (default one critical wavelength)",
          run_defaults={"collision": "regularized", "C1": 0.01, "walls": True, "t_bottom": RB_T_2D[0],
                        "t_top": RB_T_2D[1], "ly": 40},
          default_amplitude=lambda lx: RB_AMPLITUDE, make3d=rayleigh_benard3d,
          run_defaults3d={"velocity_set": "d3q39", "collision": "regularized", "C1": 0.01, "walls": True,
                          "t_bottom": RB_T_3D[0], "t_top": RB_T_3D[1]}),
    Setup("taylor-green", None, "3D Taylor-Green vortex u = U (sin x cos y cos z, -cos x sin y cos z, 0), U = 0.05, "
          "with its pressure in the density (periodic)", default_amplitude=lambda lx: TAYLOR_GREEN_AMPLITUDE,
          make3d=taylor_green3d, run_defaults={"velocity_set": "d3q19"},
          missing_why="its vortex is written in three dimensions only; a periodic 2D flow: shear-wave"),
    Setup("lid-driven-cavity", at_rest, "cavity at rest, no-slip walls on every face, the top face moving: 3D "
          "(default d3q19) z-high with (0.1, 0, 0), 2D (--velocity-set d2q9) y-high with (0.1, 0) (--lid)",
          make3d=at_rest3d, uses_amplitude=False,
          run_defaults={"velocity_set": "d3q19", "wall_axes": "xyz", "lid": CAVITY_LID},
          set_defaults={name: {"wall_axes": "xy", "lid": CAVITY_LID_2D} for name in VELOCITY_SETS}),
    Setup("channel", at_rest, "flow at rest driven by a body force along x (--gravity, default 2.5e-5,0,0; 2D: "
          "2.5e-5,0) between no-slip walls on y (--wall-axes y): plane Poiseuille flow; 3D (default d3q19) also "
          "through a duct (--wall-axes yz), 2D with --velocity-set d2q9", make3d=at_rest3d,
          uses_amplitude=False,
          run_defaults={"velocity_set": "d3q19", "wall_axes": "y", "gravity": CHANNEL_GRAVITY},
          set_defaults={name: {"gravity": CHANNEL_GRAVITY_2D} for name in VELOCITY_SETS}),
    Setup("duct", at_rest, "flow at rest entering through a velocity inlet at x-low (--inlet-profile parabolic, "
          "--inlet-speed) and leaving through a pressure outlet at x-high (rho 1): Poiseuille flow through a "
          "square duct (3D, default d3q19, walls on yz; White's series) or a plane channel (2D, --velocity-set "
          "d2q9, walls on y)", make3d=at_rest3d, uses_amplitude=False,
          run_defaults={"velocity_set": "d3q19", "wall_axes": "yz", "inlet": "x-low", "inlet_profile": "parabolic",
                        "outlet": "x-high"},
          set_defaults={name: {"wall_axes": "y"} for name in VELOCITY_SETS}),
    Setup("duct-pressure", at_rest, "flow at rest driven by a pressure difference: pressure outlets at x-low "
          "(rho 1.005) and x-high (rho 0.995), walls as duct (3D yz, 2D y)", make3d=at_rest3d,
          uses_amplitude=False,
          run_defaults={"velocity_set": "d3q19", "wall_axes": "yz", "outlet": DUCT_PRESSURE},
          set_defaults={name: {"wall_axes": "y"} for name in VELOCITY_SETS}),
)}

#: the flows around bodies (lbgen.run.flows): their state and lattice follow from --re and
#: --cells-per-diameter (lbgen.run.construct.initial_fields, RunConfig.build)
SETUPS.update({f.name: Setup(f.name, at_rest if f.dimension == 2 else None, f.description,
                             make3d=at_rest3d if f.dimension == 3 else None, uses_amplitude=False,
                             run_defaults=dict(f.run_defaults),
                             missing_why=f"the {f.name} set-up is the {f.dimension}D flow; "
                                         f"{'cylinder3d or sphere' if f.dimension == 2 else 'cylinder'} is the "
                                         f"{5 - f.dimension}D one")
               for f in FLOWS.values()})
