"""The host-side runner: a periodic-box ``Simulation`` on any backend, layout and VL.

Units: lattice sites and time steps.  Velocities are those of the model,
u = sum(xi_i f_i) / rho with xi_i = r e_i (so one lattice hop per step is a speed of r);
gravity g is an acceleration in the same units per unit of the model time Delta t = 1/r,
so the force per unit mass per step is a = g / r (d2q37.md: F = rho g Delta t).

Fields in and out are physical (half-step): ``set_fields`` takes and ``fields`` /
``diagnostics`` report rho, u - a/2 and T + |a|^2/8 of the stored (post-collision)
moments (``lbgen.model.collision.half_step_shift``, docs/physics.md), with a the force of
the current parameters; ``populations``/``state`` stay the stored populations.
"""
from __future__ import annotations

from abc import ABCMeta
from dataclasses import dataclass
from typing import Dict, Mapping, Optional, Tuple

import numpy as np

from lbgen.codegen.spec import BACKENDS, KernelSpec, SpecError, choose_layout
from lbgen.codegen.render import generate
from lbgen.model.velocity_set import velocity_set as get_velocity_set
from lbgen.model.catalog import DEFAULT_VELOCITY_SET, run_set, set_entry, wall_scheme_refusal
from lbgen.model.operators import DEFAULT_OPERATOR, all_parameters
from lbgen.simulation.boundaries import BounceBack
from lbgen.simulation.health import HealthChecks
from lbgen.simulation.interface import Lattice, checked_populations, count, lattice_size, time_block_depth
from lbgen.simulation.parameters import Parameters, RunStats, SimulationError, Walls

__all__ = ["Parameters", "Region", "RunStats", "Simulation", "SimulationError", "Walls", "split_columns"]

@dataclass
class Region:
    """A band of whole columns [x_start, x_start + width) (mod LX) run by one program."""

    program: object
    x_start: int
    width: int
    f: object = None
    g: object = None

    @property
    def columns(self) -> np.ndarray:
        return np.arange(self.x_start, self.x_start + self.width)


def split_columns(lx: int, host_columns: int, halo: int) -> Tuple[int, int]:
    """Validate a host/accelerator split: M host columns at each side of the device bulk."""
    M = int(host_columns)
    if M < 0 or 2 * M > lx:
        raise SimulationError(f"host columns M={M} must satisfy 0 <= 2M <= LX={lx}")
    if M and 2 * M < halo:
        raise SimulationError(f"host columns M={M}: the host region (2M = {2 * M} columns) must be at least "
                              f"{halo} columns wide (the halo width), so M >= {(halo + 1) // 2} or M = 0")
    if lx - 2 * M and lx - 2 * M < halo:
        raise SimulationError(f"host columns M={M} leave the device {lx - 2 * M} columns; it needs at least "
                              f"{halo} (or none: M = LX/2)")
    return M, lx - 2 * M


#: what step() and run() say when no state was given
def _did_you_mean(name: str) -> str:
    import difflib
    import inspect
    names = [p for p in inspect.signature(Simulation.__init__).parameters if p not in ("self", "operator_parameters")]
    close = difflib.get_close_matches(name, names + list(all_parameters()), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


class Simulation(Lattice, HealthChecks, metaclass=ABCMeta):
    """A box of LX x LY sites (periodic in X; periodic or walled in Y) on one or more backends.

    >>> sim = Simulation(64, 256, collision="bgk", tau=0.8)
    >>> sim.set_fields(rho, ux, uy, T)      # populations at equilibrium (physical fields); or u=(ux, uy)
    >>> sim.run(1000)
    >>> fields = sim.fields()               # dict of (LX, LY) arrays: rho, ux, uy, T (physical)

    ``Simulation`` is the type of every lattice: ``Simulation(lx, ly, lz)`` builds a
    ``lbgen.Simulation3D``, and ``isinstance(sim, Simulation)`` holds for it (both are built on
    ``lbgen.simulation.interface.Lattice``: one ``set_fields``, ``run``, ``fields`` dict and
    population check).

    Heterogeneous runs (paper, "host + accelerator"): with ``device_backend`` the lattice
    is split along X; the device owns the bulk LX - 2M columns, the host backend
    (``backend``) the M columns at each side -- one region of 2M columns, since the two
    sides are neighbours through the periodic boundary.  Every step the regions trade
    their H-wide halo columns (H: the largest hop of the velocity set), the device works
    asynchronously while the host computes, and the result equals a single-backend run
    (bit-identical in strict mode).

    Boundaries as in 3D: ``walls='x'`` (or 'y', 'xy': half-way bounce-back no-slip walls on
    both faces of those axes), ``lid={'y-high': (ux, 0)}`` (moving walls), ``mask`` (an (LX, LY)
    bool or 0/1 array: solid cells); ``walls=Walls(...)`` are the thermal walls on y instead.

    ``time_block=N`` (C backend, one region) advances N steps per sweep through cache
    (temporal blocking, ``fused_tb``), bit-identical to single steps in strict mode;
    ``step(n)`` does n // N such sweeps, then n % N single steps (``sweeps`` counts both).
    Choices made by timing (``'auto'``) belong above the simulation: ``lbgen.perf.tune``.
    """

    #: the lattice's dimension (Simulation3D: 3)
    dimension = 2

    @classmethod
    def __subclasshook__(cls, other):
        """Every lattice (a ``Lattice``: Simulation3D too) is a Simulation."""
        if cls is Simulation:
            return True if issubclass(other, Lattice) else NotImplemented
        return NotImplemented

    @property
    def shape(self) -> Tuple[int, int]:
        """(LX, LY)."""
        return (self.lx, self.ly)

    def __new__(cls, *args, **kwargs):
        """``Simulation(lx, ly, lz=...)``, ``Simulation((lx, ly, lz), ...)`` or ``Simulation(lx,
        ly, lz)``: a ``lbgen.Simulation3D`` (the same interface in three dimensions, default set
        d3q19); ``Simulation((lx, ly), ...)`` or ``Simulation(lx, ly, ...)``: this 2D one."""
        if cls is not Simulation:
            return super().__new__(cls)
        shape = tuple(args[0]) if args and isinstance(args[0], (tuple, list)) else tuple(args[:3])
        rest = args[1:] if args and isinstance(args[0], (tuple, list)) else args[3:]
        if "lz" in kwargs:
            shape = shape + (kwargs.pop("lz"),)
        from lbgen.model.catalog import SETS_3D, set_entry, set_names
        name = kwargs.get("velocity_set")
        try:
            three_set = name is not None and set_entry(name).D == 3
        except ValueError:
            three_set = False                  # an unknown name: refused by __init__, naming the choices
        if len(shape) != 3:
            if three_set:
                raise SimulationError(f"{str(name).lower()} is a 3D set: give the depth, Simulation(lx, ly, lz=..., "
                                      f"velocity_set={str(name).lower()!r}) or a shape (lx, ly, lz)")
            return super().__new__(cls)
        if rest:
            raise SimulationError(f"Simulation() takes the lattice as (lx, ly[, lz]) or one shape tuple; got the extra "
                                  f"positional arguments {rest!r}")
        if name is not None and not three_set:
            raise SimulationError(f"lz={shape[2]!r} makes a 3D lattice; {str(name).lower()} is a 2D set: choose a "
                                  f"3D one ({set_names(SETS_3D)}) or leave lz out")
        from lbgen.simulation.lattice3d import Simulation3D
        return Simulation3D(*shape, **kwargs)

    def __init__(self, lx: int, ly: Optional[int] = None, *, collision: str = DEFAULT_OPERATOR,
                 gravity: Tuple[float, float] = (0.0, 0.0), walls=None, lid: Optional[Mapping] = None, mask=None,
                 backend: str = "c",
                 layout: Optional[str] = None, vl: Optional[int] = None, precision: str = "double",
                 fused: bool = True, threads: int = 0, strict: bool = False, check_every: int = 100,
                 device_backend: Optional[str] = None, host_columns: int = 0,
                 backend_options: Optional[dict] = None, device_options: Optional[dict] = None,
                 time_block: int = 1, velocity_set: str = DEFAULT_VELOCITY_SET,
                 **operator_parameters):
        """``operator_parameters``: the collision operator's own (tau for bgk; C1, C2, C3 for
        regularized; see ``lbgen.model.operators``), defaults from its record.  Any other
        keyword is refused, naming it."""
        known = set(all_parameters())
        unknown = sorted(set(operator_parameters) - known)
        if unknown:
            raise SimulationError(f"Simulation() got unknown keyword(s) {', '.join(unknown)}{_did_you_mean(unknown[0])}")
        if isinstance(lx, (tuple, list)) and ly is None:
            if len(lx) != 2:
                raise SimulationError(f"shape {tuple(lx)!r}: give (lx, ly) or (lx, ly, lz)")
            lx, ly = lx
        lx, ly = lattice_size("lx", lx), lattice_size("ly", ly)
        threads, check_every = count("threads", threads), count("check_every", check_every)
        bounce = None
        if walls is not None and not isinstance(walls, Walls):
            bounce, walls = walls, None        # bounce-back wall axes (the 3D spelling); Walls: the thermal walls
        for b in (backend, device_backend):
            if b is not None and b not in BACKENDS:
                raise SpecError(f"unknown backend {b!r}; choose one of {', '.join(BACKENDS)}")
        if vl == "auto":
            raise SimulationError("vl='auto' is decided by timing kernels, above the simulation: take "
                                  "lbgen.perf.tune.auto_choice, or run through lbgen.run (--vl auto), which records "
                                  "the choice")
        time_block = time_block_depth(time_block, backend, fused, device_backend)
        backend_options = dict(backend_options or {})
        self._params = Parameters(collision, operator_parameters, gravity)
        try:
            run_set(velocity_set)       # 2D: a 3D set is refused in words (3D runs: lbgen.Simulation3D)
        except ValueError as e:
            raise SpecError(str(e)) from None
        vs_name = KernelSpec(velocity_set=velocity_set).validate().velocity_set
        refusal = wall_scheme_refusal(set_entry(vs_name), walls.scheme) if walls is not None else None
        if refusal:
            raise SimulationError(refusal)
        self.vs = vs = get_velocity_set(vs_name)
        #: the bounce-back boundaries (walls, lid, mask; None: none), refused where they cannot run
        self.bounds = BounceBack.of(bounce, lid, mask, (lx, ly), vs_name)
        if self.bounds is not None:
            self.bounds.check_runs(device_backend, time_block)
        if walls is not None:
            walls.check(vs)
        self.walls = walls
        #: (bottom, top): the walls this lattice holds; a part of a lattice split in Y (an MPI
        #: rank, lbgen.parallel) holds only the sides at the global edges (C kernels)
        self.wall_sides = (True, True)
        self.lx, self.ly = lx, ly
        # one sweep per step: fused (periodic) or fused_walls (propagate + bc + collide);
        # fused=False gives the separate kernels (the same bits in strict mode)
        self.fused = fused
        self.check_every = check_every
        self.time_step = 0

        def spec_for(b, width):
            lay, v = choose_layout(b, ly, vs.max_hop, layout, vl)
            return KernelSpec(backend=b, layout=lay, vl=v, precision=precision, collision=collision,
                              walls=walls is not None, velocity_set=vs_name,
                              wall_scheme=walls.scheme if walls is not None else KernelSpec.wall_scheme)

        plan = self._region_plan(lx, backend, device_backend, host_columns, backend_options, device_options)
        specs = [spec_for(b, width).validate(width, ly) for b, _, width, _ in plan]   # all rules before compiling
        from lbgen import backends
        self.regions: list = []
        sources = {}
        for (b, x_start, width, options), spec in zip(plan, specs):
            if spec not in sources:       # regions with the same spec share one rendering
                sources[spec] = generate(spec)
            source = sources[spec]
            program = backends.load(b).compile(source, width, ly, threads=threads, strict=strict, **options)
            if self.bounds is not None:
                program.set_boundaries(**self.bounds.kernel_fields())
            self.regions.append(Region(program, x_start, width, program.allocate(), program.allocate()))
        self.spec = self.regions[0].program.spec
        self.source = self.regions[0].program.source
        self.kernel_parameters = self.params.kernel_parameters(self.vs.r)
        self._fields_set = False
        self.dtype = self.regions[0].program.dtype
        if any(r.program.dtype != self.dtype for r in self.regions):
            raise SimulationError("all regions must compute in the same precision")
        # regions with the same layout trade raw columns; otherwise layout-independent ones
        tags = {r.program.layout.tag for r in self.regions}
        self._plain_exchange = len(tags) > 1
        self.time_block = int(time_block)
        #: sweeps run so far: "blocked" (time_block steps each, fused_tb) and "single" (one step)
        self.sweeps = {"blocked": 0, "single": 0}

    def _region_plan(self, lx, backend, device_backend, host_columns, backend_options, device_options) -> list:
        """The regions to build, as (backend, x_start, width, options); a hook for subclasses
        (lbgen.parallel.simulation.DistributedSimulation builds one rank's slab from it)."""
        plan = []
        if device_backend is None:
            if host_columns:
                raise SimulationError("host columns need a device backend (device_backend='opencl' or 'cuda')")
            plan.append((backend, 0, lx, backend_options))
        else:
            M, bulk = split_columns(lx, host_columns, self.vs.max_hop)
            if bulk:
                plan.append((device_backend, M, bulk, dict(device_options or {})))
            if M:
                plan.append((backend, lx - M, 2 * M, backend_options))
        return plan

    @property
    def params(self) -> Parameters:
        """The physics of the run (operator, its parameters, gravity); read-only: change it with
        ``set_parameters(tau=..., gravity=...)``, which also passes it to the kernels."""
        return self._params

    @params.setter
    def params(self, value) -> None:
        raise AttributeError(f"sim.params is read-only (got an assignment of {value!r}): use "
                             f"sim.set_parameters(name=value, ...) -- e.g. set_parameters(tau=0.7) or "
                             f"set_parameters(gravity=(0, -1e-5)) -- which also updates the kernels' "
                             f"parameters for the following steps")

    def __repr__(self) -> str:
        """``Simulation(64x256 D2Q37 bgk tau=0.8, c caosoa-vl8, periodic, step 0)``: lattice, velocity
        set, operator and parameters (gravity when nonzero), backend(s) with layout tag, precision
        (when not double), time block (when > 1), walls, time step (and 'no state' before one)."""
        try:
            p = self._params
            physics = " ".join([f"{self.lx}x{self.ly}", self.vs.name, p.collision]
                               + [f"{k}={v:g}" for k, v in p.values.items()])
            if any(p.gravity):
                physics += f" g=({p.gravity[0]:g}, {p.gravity[1]:g})"
            regions = self.region_table()
            if len(regions) == 1:
                where = f"{regions[0]['backend']} {regions[0]['layout']}"
            else:
                where = " + ".join(f"{d['backend']} {d['layout']} x[{d['columns'][0]}:"
                                   f"{d['columns'][0] + d['columns'][1]})" for d in regions)
            if np.dtype(self.dtype) != np.float64 or self.spec.precision != "double":
                where += f" {self.spec.precision}"
            if self.time_block > 1:
                where += f" time-block {self.time_block}"
            w = self.walls
            if self.bounds is not None:
                box = self.bounds.describe()
            elif w is None:
                box = "periodic"
            else:
                adiabatic = [side for side, a in (("bottom", w.adiabatic_bottom), ("top", w.adiabatic_top)) if a]
                notes = ([f"adiabatic {' and '.join(adiabatic)}"] if adiabatic else []) + (
                    [f"{w.scheme} scheme"] if w.scheme != Walls.scheme else []) + (
                    [f"tau_wall {w.tau_wall:g}"] if w.tau_wall != Walls.tau_wall else [])
                box = f"walls T={w.T_bottom:g}/{w.T_top:g}" + (f" ({', '.join(notes)})" if notes else "")
            state = f"step {self.time_step}" + ("" if self._fields_set else ", no state yet")
            return f"{type(self).__name__}({physics}, {where}, {box}, {state})"
        except Exception:  # noqa: BLE001 - a half-built simulation (its __init__ raised) still prints
            return f"<{type(self).__name__} (not fully built)>"

    #: processes that share this lattice (lbgen.parallel.simulation.DistributedSimulation: the ranks)
    nranks = 1

    def region_table(self) -> list:
        """Every region of the lattice (all ranks): backend, layout tag, [x_start, width]."""
        return [{"backend": r.program.spec.backend, "layout": r.program.layout.tag, "columns": [r.x_start, r.width]}
                for r in self.regions]

    @property
    def program(self):
        """The program of the first region (the only one in a single-backend run)."""
        return self.regions[0].program

    @property
    def layout(self):
        return self.regions[0].program.layout

    def synchronize(self) -> None:
        for r in self.regions:
            r.program.synchronize()

    # --- state -------------------------------------------------------------------------
    def _set_fields(self, rho, ux, uy, T) -> None:
        """``set_fields`` (lbgen.simulation.interface): from the given physical fields (numbers or
        arrays of shape (LX, LY)): the populations at the equilibrium whose physical (half-step) fields under this run's
        force are these -- u + a/2, T - |a|^2/8 stored -- so ``fields()`` gives them back to
        round-off and a fluid given at rest starts at rest.  Computed by each region's
        init_equilibrium kernel on its backend."""
        arrays = self._checked_fields(rho, ux, uy, T)
        ax, ay = self.force
        for r in self.regions:
            cols = r.columns % self.lx
            r.program.init_equilibrium(r.f, *(np.ascontiguousarray(a[cols]) for a in arrays), force=(ax, ay))
        self._fields_set = True
        if self._mask is not None:      # solid cells hold no populations
            self.restore(self.state(), self.time_step)

    @property
    def force(self) -> Tuple[float, float]:
        """(ax, ay): the force per unit mass per step of the current parameters (gravity / r),
        what the kernels take and what the physical fields are corrected by."""
        return self._params.force(self.vs.r)

    def _equilibrium(self, rho, ux, uy, T) -> np.ndarray:
        """Checked physical fields -> (Q, LX, LY) populations on the host, as ``set_fields`` (the
        model's assignments through NumPy: in double, the bits of a strict build of the init kernel)."""
        from lbgen.model import equilibrium_assignments
        ax, ay = self.force
        return equilibrium_assignments(self.spec.velocity_set).evaluate(self._checked_fields(rho, ux, uy, T),
                                                                        ax=ax, ay=ay)

    def _checked_fields(self, rho, ux, uy, T):
        """Each field a real number (the same at every site) or an array of exactly (LX, LY):
        no broadcasting of a row or a column, which would silently mean some other layout."""
        arrays = []
        for name, a in zip(("rho", "ux", "uy", "T"), (rho, ux, uy, T)):
            try:
                v = np.asarray(a)
            except Exception:  # noqa: BLE001 - a ragged list or an odd object: refused below
                v = np.asarray(None)
            if v.dtype.kind not in "iuf" or (v.ndim and v.shape != (self.lx, self.ly)):
                got = (f"an array of shape {v.shape}" if v.ndim and v.dtype.kind in "iuf" else
                       f"an array of {v.dtype} values" if v.ndim else repr(a))
                raise SimulationError(f"set_fields: {name} must be a real number or an array of shape (LX, LY) = "
                                      f"({self.lx}, {self.ly}); got {got}")
            arrays.append(np.broadcast_to(v.astype(np.float64), (self.lx, self.ly)))
        for name, a in zip(("rho", "ux", "uy", "T"), arrays):
            if not np.all(np.isfinite(a)):
                x, y = (int(i[0]) for i in np.nonzero(~np.isfinite(a)))
                raise SimulationError(f"set_fields: {name} is {a[x, y]} at site (x={x}, y={y}); every initial "
                                      f"field must be finite (no NaN or Inf)")
        for name, a, what in (("rho", arrays[0], "density"), ("T", arrays[3], "temperature")):
            if np.any(a <= 0):
                x, y = (int(i[0]) for i in np.nonzero(a <= 0))
                raise SimulationError(f"set_fields: {name} is {a[x, y]:.6g} at site (x={x}, y={y}); the initial "
                                      f"{what} must be positive everywhere")
        if self.vs.isothermal and not np.allclose(arrays[3], 1.0, rtol=0, atol=1e-12):
            raise SimulationError(f"{self.vs.name} is isothermal (T = 1): the initial temperature must be 1 "
                                  f"everywhere, got {arrays[3].min():.6g} .. {arrays[3].max():.6g}; use d2q37 "
                                  f"for thermal flows")
        if not self.vs.isothermal:
            from lbgen.model.collision import half_step_shift    # the stored T is T - dT: positive too
            dT = float(half_step_shift(self.vs, self.force)[1])
            if dT and np.any(arrays[3] <= dT):
                x, y = (int(i[0]) for i in np.nonzero(arrays[3] <= dT))
                raise SimulationError(f"set_fields: T is {arrays[3][x, y]:.6g} at site (x={x}, y={y}); under this "
                                      f"run's force the physical temperature must exceed |a|^2/8 = {dT:.6g} (the "
                                      f"stored temperature T - |a|^2/8 must be positive)")
        return arrays

    def set_populations(self, f: np.ndarray) -> None:
        """Start from the given (Q, LX, LY) populations, checked first (``_checked_populations``)."""
        f = self._checked_populations(f)
        if self._mask is not None:
            f = np.where(self._mask[None] == 1, 0.0, f)
        for r in self.regions:
            r.f = r.program.pack(f[:, r.columns % self.lx, :], r.f)
        self._fields_set = True

    def _checked_populations(self, f) -> np.ndarray:
        """(Q, LX, LY) real populations as float64, checked (``interface.checked_populations``:
        shape, finite and within this run's precision, positive density at the fluid sites)."""
        fluid = None if self._mask is None else self._mask == 0
        return checked_populations(f, (self.vs.Q, self.lx, self.ly), self.dtype, fluid)

    def set_parameters(self, **changes) -> None:
        """Change the operator's parameters (tau, C1, ...) or gravity for the following steps."""
        params = self._params.replace(**changes)          # checked before anything changes
        kernel_parameters = params.kernel_parameters(self.vs.r)
        self._params, self.kernel_parameters = params, kernel_parameters

    def populations(self) -> np.ndarray:
        """(Q, LX, LY) float64 copy of the current populations."""
        self._require_state("populations()")
        return self.state().astype(np.float64)

    def fields(self) -> Dict[str, np.ndarray]:
        """The physical (half-step) fields rho, ux, uy, T as (LX, LY) arrays: rho, u - a/2 and
        T + |a|^2/8 of the stored moments (u = sum xi f / rho, T = sum |xi-u|^2 f / (2 rho)),
        a = ``force``; computed by each region's fields kernel on its backend."""
        self._require_state("fields()")
        self.synchronize()
        out = {k: np.empty((self.lx, self.ly)) for k in ("rho", "ux", "uy", "T")}
        ax, ay = self.force
        for r in self.regions:
            for k, v in r.program.fields(r.f, force=(ax, ay)).items():
                out[k][r.columns % self.lx] = v
        if self._mask is not None:          # solid cells hold no populations: their fields read 0
            for v in out.values():
                v[self._mask == 1] = 0.0
        return out

    @property
    def _mask(self) -> Optional[np.ndarray]:
        return None if getattr(self, "bounds", None) is None else self.bounds.mask

    def _fields_of(self, f: np.ndarray) -> Dict[str, np.ndarray]:
        """Physical fields of (Q, LX, LY) populations on the host, as ``fields``: the model's
        assignments through NumPy, in double the bits of a strict build of the fields kernel."""
        from lbgen.model import physical_fields
        values = physical_fields(self.spec.velocity_set, np.asarray(f, dtype=np.float64), *self.force)
        return dict(zip(("rho", "ux", "uy", "T"), values))

    def diagnostic_rows(self) -> np.ndarray:
        """(LY, ND) per-row reductions of the physical fields over this process's columns (the
        backends' generated diagnostics kernels; columns: ``lbgen.codegen.diagnostics.ROW_QUANTITIES``).
        Only LY x ND numbers per region leave the device, never the lattice."""
        from lbgen.codegen.diagnostics import combine_rows
        self.synchronize()                  # solid cells (mask) skipped by the program's diagnostics
        ax, ay = self.force
        return combine_rows([r.program.diagnostics(r.f, force=(ax, ay)) for r in self.regions])

    def diagnostics(self, T_hot: Optional[float] = None, T_cold: Optional[float] = None) -> Dict[str, float]:
        """Global diagnostics of the current state as Python floats (``lbgen.codegen.diagnostics.scalars``):
        mass, momentum_x, momentum_y, energy, kinetic_energy, mixing_width, max_speed, min_rho,
        min_T, nonfinite.  The mixing width needs a temperature contrast: T_hot and T_cold
        (default: the wall temperatures; NaN without one)."""
        from lbgen.codegen.diagnostics import scalars
        self._require_state("diagnostics()")
        if T_hot is None and T_cold is None and self.walls is not None:
            T_hot, T_cold = self.walls.T_bottom, self.walls.T_top
        return scalars(self.diagnostic_rows(), self.lx, T_hot, T_cold)

    # --- stepping ----------------------------------------------------------------------
    def exchange_halos(self) -> None:
        """Fill every region's halo: Y rows by its own halo kernel, X columns from its neighbours."""
        for r in self.regions:
            r.program.halo(r.f)
        k = len(self.regions)
        if k == 1:
            return   # the halo kernel already wrapped X periodically
        read = "read_columns_plain" if self._plain_exchange else "read_columns"
        write = "write_columns_plain" if self._plain_exchange else "write_columns"
        H = self.vs.max_hop
        edges = [(getattr(r.program, read)(r.f, 0, H), getattr(r.program, read)(r.f, r.width - H, H))
                 for r in self.regions]
        for i, r in enumerate(self.regions):
            getattr(r.program, write)(r.f, -H, edges[i - 1][1])          # left halo <- left neighbour's right edge
            getattr(r.program, write)(r.f, r.width, edges[(i + 1) % k][0])  # right halo <- right neighbour's left edge

    def advance(self, region: Region) -> None:
        """One step of one region whose halos are fresh (asynchronous on devices)."""
        region.f, region.g = region.program.step(region.f, region.g, self.kernel_parameters, self.walls,
                                                 self.fused, sides=self.wall_sides)

    def step(self, n: int = 1) -> None:
        """n steps: with a time block N, n // N sweeps of N steps, then n % N single steps."""
        self._check_can_step(n)
        depth = self.time_block
        if depth > 1:
            r, kp = self.regions[0], self.kernel_parameters
            for _ in range(n // depth):
                self.exchange_halos()
                r.program.fused_tb(r.f, r.g, depth, walls=self.walls, sides=self.wall_sides, **kp)
                r.f, r.g = r.g, r.f
                self.time_step += depth
                self.sweeps["blocked"] += 1
            n %= depth
        for _ in range(n):
            self.exchange_halos()
            for r in self.regions:      # the device bulk first: it runs while the host computes
                self.advance(r)
            if len(self.regions) > 1:
                self.synchronize()
            self.time_step += 1
            self.sweeps["single"] += 1

    def state(self) -> np.ndarray:
        """The populations as (Q, LX, LY) in the working precision (exact, for checkpoints)."""
        self._require_state("state()")
        self.synchronize()
        out = np.empty((self.vs.Q, self.lx, self.ly), dtype=self.dtype)
        for r in self.regions:
            out[:, r.columns % self.lx, :] = r.program.layout.unpack(r.program.download(r.f))
        return out

    def restore(self, populations: np.ndarray, time_step: int) -> None:
        """Continue from a saved state (bit-identical to never having stopped)."""
        self._check_time_step(time_step)
        from lbgen.simulation.boundaries import checked_saved_state
        populations = checked_saved_state(populations, (self.vs.Q, self.lx, self.ly), self.dtype, self._mask)
        if self._mask is not None:
            populations = np.where(self._mask[None] == 1, populations.dtype.type(0), populations)
        for r in self.regions:
            block = np.ascontiguousarray(populations[:, r.columns % self.lx, :])
            r.f = r.program.upload(r.program.layout.pack(block), r.f)
        self.time_step = int(time_step)
        self._fields_set = True

    @staticmethod
    def _check_time_step(time_step) -> None:
        if isinstance(time_step, bool) or not isinstance(time_step, (int, np.integer)) or time_step < 0:
            raise SimulationError(f"restore: time_step={time_step!r} must be an integer >= 0 (the step the "
                                  f"state was saved at)")

    @property
    def has_state(self) -> bool:
        """Whether the populations were set (set_fields, set_populations or restore)."""
        return bool(getattr(self, "_fields_set", False))

