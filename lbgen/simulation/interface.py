"""The public interface every lattice shares, in any dimension: ``Lattice``, the base of
``lbgen.Simulation`` (runner.py) and the distributed lattices (lbgen.parallel).

What is written once here: the arguments of ``set_fields`` (``field_arguments``: rho, the D
velocity components -- positional, as ``ux=, uy=[, uz=]`` or as one sequence ``u=`` -- and
an optional T), the checks of given fields (``checked_fields``) and populations (``checked_populations``: shape, real values
within the working precision's range, a positive density at every fluid site), the state
guards of ``step``/``run`` and ``run`` itself (``run(steps, progress=False, callback=None)``).
A class built on it (``Simulation``, the distributed lattices) keeps its stepping and ``_set_fields(rho, *u, T)``.
"""
from __future__ import annotations

import math
import time
from numbers import Integral
from typing import Callable, Optional, Sequence, Tuple

import numpy as np

from lbgen.model.catalog import AXES, DEFAULT_SETS, SETS_3D, field_names, set_entry, set_names
from lbgen.simulation.parameters import RunStats, SimulationError

#: the velocity components of a D-dimensional lattice, in order
VELOCITY_NAMES = field_names(3)[1:-1]
__all__ = ["Lattice", "checked_fields", "checked_populations", "field_arguments", "field_names", "no_state"]


def no_state(dimension: int) -> str:
    """The refusal of a read or a step before any state was set."""
    u = ", ".join(VELOCITY_NAMES[:dimension])
    return (f"the simulation has no state yet: call set_fields(rho, {u}[, T]), set_populations(f) or "
            f"restore(populations, time_step) before step() or run()")


def field_arguments(dimension: int, rho, velocity: Sequence, u=None, T=None, components=None) -> tuple:
    """(rho, (ux, uy[, uz]), T) of a ``set_fields`` call on a D-dimensional lattice, or
    SimulationError naming what was given and the forms allowed.  ``velocity``: the positional
    values after rho (D components, then optionally T: the 2D call ``set_fields(rho, ux, uy, T)``
    reads as before); ``u``: the components as one sequence; ``components``: {'ux': .., ...}
    given by keyword.  T left out: 1."""
    names = VELOCITY_NAMES[:dimension]
    form = (f"set_fields(rho, {', '.join(names)}[, T]), set_fields(rho, u=({', '.join(names)}), T=...) or "
            f"keywords {', '.join(n + '=' for n in names)}")
    components = {k: v for k, v in (components or {}).items() if v is not None}
    extra = sorted(set(components) - set(names))
    if extra:
        raise SimulationError(f"set_fields: {', '.join(extra)} given to a {dimension}D lattice, whose velocity "
                              f"components are {', '.join(names)}; call {form}")
    velocity = list(velocity)
    if len(velocity) == dimension + 1:
        if T is not None:
            raise SimulationError(f"set_fields: T given twice (the last of {len(velocity)} positional values after "
                                  f"rho, and T=); call {form}")
        T = velocity.pop()
    given = [bool(velocity), u is not None, bool(components)]
    if sum(given) > 1:
        raise SimulationError(f"set_fields: the velocity given in more than one form (positional, u=, keywords); "
                              f"call {form}")
    if u is not None:
        if isinstance(u, np.ndarray) and u.ndim >= 1 and u.shape[0] == dimension:
            velocity = list(u)
        elif isinstance(u, (list, tuple)):
            velocity = list(u)
        else:
            raise SimulationError(f"set_fields: u must be a sequence of the {dimension} components "
                                  f"({', '.join(names)}), got {type(u).__name__}; call {form}")
        if len(velocity) != dimension:
            raise SimulationError(f"set_fields: u has {len(velocity)} components; a {dimension}D lattice takes "
                                  f"{dimension} ({', '.join(names)})")
    elif components:
        missing = [n for n in names if n not in components]
        if missing:
            raise SimulationError(f"set_fields: {', '.join(missing)} missing; call {form}")
        velocity = [components[n] for n in names]
    elif len(velocity) != dimension:
        raise SimulationError(f"set_fields: {len(velocity)} value(s) after rho; a {dimension}D lattice takes its "
                              f"{dimension} velocity components, then optionally T: call {form}")
    return rho, tuple(velocity), 1.0 if T is None else T


def lattice_size(name: str, value) -> int:
    """A lattice extent (lx, ly, lz): a positive integer, else SimulationError naming it."""
    if isinstance(value, bool) or not isinstance(value, (Integral, np.integer)) or value < 1:
        raise SimulationError(f"{name}={value!r} must be a positive integer (lattice sites)")
    return int(value)


def lattice_shape(sizes, velocity_set) -> Tuple[Tuple[int, ...], str]:
    """(shape, set name) of ``Simulation(*sizes, velocity_set=...)``: two or three sizes (or one
    shape tuple) and a set of that dimension (None: ``catalog.DEFAULT_SETS``), refused in words."""
    if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)):
        sizes = tuple(sizes[0])
    if len(sizes) not in (2, 3):
        raise SimulationError(f"Simulation() takes the lattice as (lx, ly[, lz]) or one shape tuple; got {sizes!r}")
    D = len(sizes)
    shape = tuple(lattice_size(f"l{a}", n) for a, n in zip(AXES, sizes))
    name = DEFAULT_SETS[D] if velocity_set is None else str(velocity_set).lower()
    try:
        entry = set_entry(name)
    except ValueError as e:
        from lbgen.codegen.spec import SpecError
        raise SpecError(str(e)) from None
    if entry.D == 3 and D == 2:
        raise SimulationError(f"{name} is a 3D set: give the depth, Simulation(lx, ly, lz, velocity_set={name!r}) "
                              f"or a shape (lx, ly, lz)")
    if entry.D != D:
        raise SimulationError(f"{name} is a {entry.D}D set; a lattice of {D} sizes {shape} takes a {D}D set "
                              f"({set_names(SETS_3D)}), or give {entry.D} sizes")
    return shape, name


def count(name: str, value) -> int:
    """A count that may be 0 (threads: all allowed; check_every: never): an integer >= 0."""
    if isinstance(value, bool) or not isinstance(value, (Integral, np.integer)) or value < 0:
        raise SimulationError(f"{name}={value!r} must be an integer >= 0")
    return int(value)


def time_block_depth(value, backend: str, fused: bool, device_backend: Optional[str] = None) -> int:
    """The temporal-blocking depth of a lattice (1..MAX_TIME_BLOCK), refused where it cannot run:
    'auto' (decided by timing, above the simulation), with fused=False, on another backend
    than C or with a device backend (host + device)."""
    from lbgen.codegen.spec import time_block_value
    if value == "auto":
        raise SimulationError("time_block='auto' is decided by timing kernels, above the simulation: take "
                              "lbgen.perf.tune.auto_time_block, or run through lbgen.run (--time-block auto), which "
                              "records the choice")
    try:
        depth = time_block_value(value, allow_auto=False)
    except ValueError as e:
        raise SimulationError(str(e)) from None
    if depth != 1 and not fused:
        raise SimulationError(f"time_block={depth} blocks the fused step; it cannot run with fused=False")
    if depth != 1 and (str(backend).lower() != "c" or device_backend is not None):
        raise SimulationError(f"time_block={depth} (temporal blocking) runs on the C backend alone, "
                              f"not backend={backend!r}" + (f" with device_backend={device_backend!r}"
                                                             if device_backend else ""))
    return depth


def checked_populations(f, expected: tuple, dtype, fluid: Optional[np.ndarray] = None) -> np.ndarray:
    """(Q, *shape) real populations as float64, refused before any upload when: the shape
    differs from ``expected``; a value is NaN or Inf or beyond the range of the working
    precision ``dtype``; or the density of a fluid site (the sum of its populations; every
    site without a ``fluid`` mask) is not positive.  A single population may be negative: a
    state out of equilibrium can have some, its density cannot."""
    axes = "(Q, " + ", ".join(f"L{a.upper()}" for a in AXES[:len(expected) - 1]) + ")"
    a = np.asarray(f)
    if a.shape != tuple(expected):
        raise SimulationError(f"set_populations: populations must have shape {axes} = {tuple(expected)}, "
                              f"got {a.shape}")
    if a.dtype.kind not in "iuf":
        raise SimulationError(f"set_populations: populations must be real numbers, got {a.dtype} values")
    a = a.astype(np.float64, copy=False)
    limit = float(np.finfo(dtype).max)
    with np.errstate(invalid="ignore"):
        bad = ~(np.abs(a) <= limit)
    if fluid is not None:
        bad &= fluid[None]
    if bad.any():
        q, *site = (int(i[0]) for i in np.nonzero(bad))
        value = a[(q, *site)]
        what = (f"beyond the range of this run's {np.dtype(dtype)} (|f| <= {limit:.3g})"
                if np.isfinite(value) else "not finite")
        raise SimulationError(f"set_populations: population {q} at site ({_site(site)}) is {value}, {what}; "
                              f"populations must be finite numbers")
    rho = a.sum(axis=0)
    bad = ~(rho > 0) if fluid is None else ~(rho > 0) & fluid
    if bad.any():
        site = [int(i[0]) for i in np.nonzero(bad)]
        raise SimulationError(f"set_populations: the density at site ({_site(site)}) (the sum of its "
                              f"populations) is {rho[tuple(site)]:.6g}; it must be positive at every "
                              f"{'fluid ' if fluid is not None else ''}site (single populations may be negative, "
                              f"the density may not)")
    return a


def checked_fields(values: Sequence, shape: tuple, vs, force: Sequence[float], fluid=None, x0: int = 0) -> list:
    """The physical fields (rho, u..., T) of ``set_fields`` as float64 arrays of ``shape``, refused
    before any work when one is not a real number or an array of exactly that shape (no
    broadcasting of a row, which would silently mean some other layout), not finite, or (at
    the ``fluid`` sites; all without a mask) rho or T not positive; T must be 1 on isothermal
    sets, and above the half-step shift |a|^2/8 of ``force`` on thermal ones.  ``x0``: the arrays
    are the planes from x0 of a lattice (a slab: ``lbgen.simulation.slabs``), which the sites named
    count from."""
    names = field_names(len(shape))
    axes = "(" + ", ".join(f"L{a.upper()}" for a in AXES[:len(shape)]) + ")"
    arrays = []
    for name, a in zip(names, values):
        try:
            v = np.asarray(None if isinstance(a, bool) else a)
        except Exception:  # noqa: BLE001 - a ragged list or an odd object: refused below
            v = np.asarray(None)
        if v.dtype.kind not in "iuf" or (v.ndim and v.shape != shape):
            got = (f"an array of shape {v.shape}" if v.ndim and v.dtype.kind in "iuf" else
                   f"an array of {v.dtype} values" if v.ndim else repr(a))
            raise SimulationError(f"set_fields: {name} must be a real number or an array of shape {axes} = "
                                  f"{shape}; got {got}")
        v = np.broadcast_to(v.astype(np.float64, copy=False), shape)     # read only: the caller's array, no copy
        if not np.all(np.isfinite(v)):
            site = [int(i[0]) for i in np.nonzero(~np.isfinite(v))]
            raise SimulationError(f"set_fields: {name} is {v[tuple(site)]} at site ({_site(site, x0)}); every initial "
                                  f"field must be finite (no NaN or Inf)")
        arrays.append(v)
    from lbgen.model.collision import half_step_shift    # the stored T is T - dT: positive too
    dT = 0.0 if vs.isothermal else float(half_step_shift(vs, tuple(force))[1])
    for name, a, what, least in (("rho", arrays[0], "density", 0.0), ("T", arrays[-1], "temperature", dT)):
        bad = ~(a > least) if fluid is None else ~(a > least) & fluid
        if bad.any():
            site = [int(i[0]) for i in np.nonzero(bad)]
            rule = (f"the initial {what} must be positive at every {'fluid ' if fluid is not None else ''}site"
                    if not least else f"under this run's force the physical temperature must exceed |a|^2/8 = "
                                      f"{dT:.6g} (the stored temperature T - |a|^2/8 must be positive)")
            raise SimulationError(f"set_fields: {name} is {a[tuple(site)]:.6g} at site ({_site(site, x0)}); {rule}")
    # |T - 1| <= 1e-12 from the extremes (no lattice-sized temporaries; T - 1 is exact near 1)
    if vs.isothermal and not max(float(arrays[-1].max()) - 1.0, 1.0 - float(arrays[-1].min())) <= 1e-12:
        raise SimulationError(f"{vs.name} is isothermal (T = 1): the initial temperature must be 1 everywhere, got "
                              f"{arrays[-1].min():.6g} .. {arrays[-1].max():.6g}; use a thermal set (d2q37) for "
                              f"thermal flows")
    return arrays


def _site(site, x0: int = 0) -> str:
    return ", ".join(f"{a}={i + (x0 if a == AXES[0] else 0)}" for a, i in zip(AXES, site))


class Lattice:
    """The public interface of a lattice of any dimension (see the module).  A class built on
    it provides ``dimension``, ``shape``, ``has_state``, ``check_every``, ``time_block``,
    ``step``, ``synchronize``, ``check_finite`` and ``_set_fields(rho, *u, T)``."""

    #: the streaming pattern ('pull': two population buffers; a lattice that streams in place,
    #: ``lbgen.simulation.inplace``, sets 'inplace'); a run's manifest records it
    streaming: str = "pull"

    @property
    def sites(self) -> int:
        """The number of lattice sites."""
        return math.prod(self.shape)

    def set_fields(self, rho, *velocity, u=None, T=None, ux=None, uy=None, uz=None) -> None:
        """Start from the given physical (half-step) fields: numbers or arrays of the lattice's
        shape.  ``set_fields(rho, ux, uy[, uz][, T])``, ``set_fields(rho, u=(ux, uy[, uz]),
        T=...)`` or by keyword (``ux=, uy=[, uz=]``); T left out: 1.  The populations start at
        the equilibrium whose physical fields these are (so ``fields()`` gives them back to
        round-off and a fluid given at rest starts at rest)."""
        rho, u, T = field_arguments(self.dimension, rho, velocity, u, T, {"ux": ux, "uy": uy, "uz": uz})
        self._set_fields(rho, *u, T)

    def _require_state(self, what: str) -> None:
        """SimulationError (as ``run()`` raises) when asked for ``what`` before any state (unset
        buffers would read as NaN and 1e300 sentinels)."""
        if not self.has_state:
            raise SimulationError(f"{what}: {no_state(self.dimension)}")

    def _check_can_step(self, steps) -> None:
        """The one guard of ``step`` and ``run``, before anything runs: a step count that is an
        integer >= 0, and a state to advance (stepping unset buffers gives NaN, silently)."""
        if isinstance(steps, bool) or not isinstance(steps, (Integral, np.integer)) or steps < 0:
            raise SimulationError(f"steps={steps!r} must be an integer >= 0")
        if not self.has_state:
            raise SimulationError(no_state(self.dimension))

    def run(self, steps: int, progress: bool = False, callback: Optional[Callable[[int], None]] = None) -> RunStats:
        """Advance ``steps`` steps, checking the state (``check_finite``) every ``check_every``
        steps and at the end; ``progress``: a progress bar; ``callback(time_step)`` after every
        chunk (at most 50 steps; whole time-block sweeps).  Returns RunStats (steps, seconds,
        sites, mlups)."""
        self._check_can_step(steps)
        bar = None
        if progress:
            from tqdm import tqdm
            bar = tqdm(total=steps, unit="step", dynamic_ncols=True, leave=False)
        elapsed, done = 0.0, 0
        chunk = max(1, min(self.check_every or steps or 1, 50))
        if self.time_block > 1:       # whole sweeps per chunk where the guard's cadence allows
            chunk = max(chunk // self.time_block, 1) * self.time_block
        try:
            while done < steps:
                n = min(chunk, steps - done)
                t0 = time.perf_counter()
                self.step(n)
                self.synchronize()
                elapsed += time.perf_counter() - t0
                done += n
                if bar is not None:
                    bar.update(n)
                    bar.set_postfix(MLUPS=f"{done * self.sites / max(elapsed, 1e-12) / 1e6:.1f}")
                if self.check_every and (done % self.check_every < n or done == steps):
                    self.check_finite()
                if callback:
                    callback(self.time_step)
        finally:
            if bar is not None:
                bar.close()
        return RunStats(steps=steps, seconds=elapsed, sites=self.sites)
