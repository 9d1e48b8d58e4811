"""The host-side runner: ``Simulation(*shape, ...)``, a lattice of any dimension (the shape's
length: (LX, LY) or (LX, LY, LZ)) on any backend, layout and VL.

Units: lattice sites and time steps.  Velocities are those of the model,
u = sum(xi_i f_i) / rho with xi_i = r e_i (so one lattice hop per step is a speed of r; r =
sqrt(3) for D3Q19 and D3Q27, whose lattice-unit velocity of the literature is u / r); gravity g
is an acceleration in the same units per unit of the model time Delta t = 1/r, so the force
per unit mass per step is a = g / r (d2q37.md: F = rho g Delta t).

Fields in and out are physical (half-step): ``set_fields`` takes and ``fields`` /
``diagnostics`` report rho, u - a/2 and T + |a|^2/8 of the stored (post-collision)
moments (``lbgen.model.collision.half_step_shift``, docs/physics.md), with a the force of
the current parameters; ``populations``/``state`` stay the stored populations.

Boundaries, any D (``boundaries.BounceBack``, the one description): ``walls`` -- half-way
bounce-back no-slip walls on axes (both faces: 'y', 'xz') or single faces ('z-low'), the others
periodic; ``lid`` -- moving wall faces, {'z-high': (ux, uy, uz)} (velocity in the face's plane,
model units; Ladd's momentum correction); ``mask`` -- a voxel mask of the lattice's shape (bool
or 0/1 uint8, 1 = solid: links into it bounce back, it holds no populations, its fields read 0).
``walls=Walls(...)`` are the thermal walls instead: across y in 2D (or x), across z in 3D (D3Q39, D3Q103;
bottom = z-low, top = z-high; or across x, y), one fused_walls sweep a step (across the last axis:
fused_tb too).
"""
from __future__ import annotations

from abc import ABCMeta
from typing import Dict, Mapping, Optional, Tuple

import numpy as np

from lbgen.codegen.spec import KernelSpec, SpecError, choose_layout
from lbgen.model.catalog import AXES, set_entry, wall_scheme_refusal
from lbgen.model.operators import DEFAULT_OPERATOR, all_parameters, force_arguments
from lbgen.simulation import programs
from lbgen.simulation.programs import Region, split_columns
from lbgen.simulation.bodies import BodyLinks, body_input
from lbgen.simulation.boundaries import BounceBack, checked_saved_state
from lbgen.simulation.state import state as state_of, state_chunks, whole_region
from lbgen.simulation.health import HealthChecks
from lbgen.simulation.inplace import InPlaceParity, check_streaming
from lbgen.simulation.interface import (Lattice, checked_fields, checked_populations, count, field_names,
                                        lattice_shape, time_block_depth)
from lbgen.simulation.parameters import Parameters, RunStats, SimulationError, Walls, check_thermal_walls

__all__ = ["Parameters", "RunStats", "Simulation", "Simulation3D", "SimulationError", "Walls"]


def _did_you_mean(name: str) -> str:
    import difflib
    import inspect
    names = [p for p in inspect.signature(Simulation.__init__).parameters if p not in ("self", "shape",
                                                                                       "operator_parameters")]
    close = difflib.get_close_matches(name, names + list(all_parameters()), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


class Simulation(Lattice, HealthChecks, metaclass=ABCMeta):
    """A box of LX x LY (x LZ) sites on one or more backends; its dimension D is the shape's length.

    >>> sim = Simulation(64, 256, collision="bgk", tau=0.8)         # 2D, default set d2q37
    >>> sim.set_fields(rho, ux, uy, T)      # populations at equilibrium (physical fields); or u=(ux, uy)
    >>> sim.run(1000)
    >>> fields = sim.fields()               # dict of (LX, LY) arrays: rho, ux, uy, T (physical)
    >>> Simulation(16, 16, 32, tau=0.8, walls="z", lid={"z-high": (0.05, 0, 0)})   # 3D, default d3q19

    ``collision`` and its parameters (tau for bgk; C1, C2, C3 for regularized) are checked
    against the operator records, ``gravity`` has D components; ``walls``, ``lid`` and ``mask``
    as in the module's docstring.  ``layout``/``vl``: the data layout (default
    ``lbgen.codegen.spec.default_layout``); ``threads``: OpenMP threads (0: all allowed);
    ``device`` (OpenCL): 'P:D' or part of a device name; ``strict``: no FMA contraction
    (layouts, backends and fused/unfused agree bit for bit).

    Heterogeneous runs (paper, "host + accelerator"), any D: with ``device_backend`` the
    lattice is split along X, the slowest axis; the device owns the bulk LX - 2M planes, the
    host backend (``backend``) the M planes at each side -- one region of 2M planes, since the
    two sides are neighbours through the periodic boundary.  Every step the regions trade
    their H-wide halo planes (H: the largest hop of the velocity set), the device works
    asynchronously while the host computes, and the result equals a single-backend run
    (bit-identical in strict mode).

    ``bodies`` (``lbgen.geometry.Bodies``, or an integer label array: 0 fluid, k body k) are solid
    sites whose links bounce back half-way or, ``body_bc='bouzidi'`` (linear) / ``'quadratic'``,
    interpolated with each link's wall distance; ``forces()`` gives the force on each by momentum exchange
    (``lbgen.simulation.bodies``; ``body_closed``: the axes a distributed block's links do not wrap).
    The kernels carry the open faces' rules when the lattice has open faces (``KernelSpec.open_faces``
    on the thermal sets), or with ``open_rules=True`` (a distributed block, whose faces come later).

    ``time_block=N`` (C backend, one region) advances N steps per sweep through cache
    (temporal blocking, ``fused_tb``), bit-identical to single steps in strict mode;
    ``step(n)`` does n // N such sweeps, then n % N single steps (``sweeps`` counts both).
    Choices made by timing (``'auto'``) belong above the simulation: ``lbgen.perf.tune``.
    """

    def __init__(self, *shape, velocity_set: Optional[str] = None, collision: str = DEFAULT_OPERATOR,
                 gravity=None, walls=None, lid: Optional[Mapping] = None, mask=None, backend: str = "c",
                 layout: Optional[str] = None, vl: Optional[int] = None, precision: str = "double",
                 fused: bool = True, threads: int = 0, strict: bool = False, check_every: int = 100,
                 device_backend: Optional[str] = None, host_columns: int = 0, device: Optional[str] = None,
                 backend_options: Optional[dict] = None, device_options: Optional[dict] = None,
                 time_block: int = 1, storage: Optional[str] = None, inlet: Optional[Mapping] = None, outlet=None,
                 outflow=None, slip=None, inlet_temperature=None, bodies=None, body_bc: Optional[str] = None, body_closed=(),
                 streaming: str = "pull", open_rules: bool = False, **operator_parameters):
        """``operator_parameters``: the collision operator's own (tau for bgk; C1, C2, C3 for
        regularized; see ``lbgen.model.operators``), defaults from its record.  ``storage``: how
        the populations are stored (``lbgen.codegen.storage``: fp64, fp32, fp16s; None: the
        precision's own), apart from the arithmetic of ``precision``.  ``streaming``: 'pull' (two
        population buffers) or 'inplace' (one, ``lbgen.simulation.inplace``).  Any other keyword is
        refused, naming it."""
        unknown = sorted(set(operator_parameters) - set(all_parameters()))
        if unknown:
            raise SimulationError(f"Simulation() got unknown keyword(s) {', '.join(unknown)}{_did_you_mean(unknown[0])}")
        shape, vs_name = lattice_shape(shape, velocity_set)
        self.shape = shape
        D = self.dimension = len(shape)
        threads, check_every = count("threads", threads), count("check_every", check_every)
        bounce = None
        if walls is not None and not isinstance(walls, Walls):
            bounce, walls = walls, None        # bounce-back wall faces; Walls: the thermal walls
        wall_axis = check_thermal_walls(walls, vs_name, D, time_block) if walls is not None else None
        if wall_axis == "x" and device_backend is not None:
            raise SimulationError(f"walls=Walls(axis='x') and device_backend={device_backend!r}: the host and device "
                                  f"regions split X, and each would hold both walls; put the walls across "
                                  f"{' or '.join(AXES[1:D])}, or run one backend")
        for b in (backend, device_backend):
            if b is not None and b not in programs.runtimes(D):
                raise SpecError(f"unknown backend {b!r}; choose one of {', '.join(programs.runtimes(D))}")
        if vl == "auto":
            raise SimulationError("vl='auto' is decided by timing kernels, above the simulation: take "
                                  "lbgen.perf.tune.auto_choice, or run through lbgen.run (--vl auto), which records "
                                  "the choice")
        backend_options = dict(backend_options or {})
        if device is not None:
            if backend != "opencl":
                raise SimulationError(f"device={device!r} selects an OpenCL device: it needs backend='opencl' "
                                      f"(not {backend!r})")
            backend_options["device"] = device
        self.time_block = time_block_depth(time_block, backend, fused, device_backend)
        self._params = Parameters(collision, operator_parameters, gravity, dimension=D)
        refusal = wall_scheme_refusal(set_entry(vs_name), walls.scheme) if walls is not None else None
        if refusal:
            raise SimulationError(refusal)
        from lbgen.model.velocity_set import velocity_set as get_velocity_set
        self.vs = vs = get_velocity_set(vs_name)
        body = body_input(bodies, mask, shape, body_bc)
        if body is not None:
            mask = body[0]
            if self.time_block != 1 or device_backend is not None:
                raise SimulationError(f"bodies run on one backend, one step per sweep: time_block={self.time_block}, "
                                      f"device_backend={device_backend!r} (use time_block=1 and one backend)")
        #: the bounce-back boundaries (walls, lid, mask; None: none), refused where they cannot run
        self.bounds = BounceBack.of(bounce, lid, mask, shape, vs_name, inlet, outlet, outflow, slip,
                                    inlet_temperature)
        if self.bounds is not None:
            self.bounds.check_runs(device_backend, self.time_block, backend)
            if walls is not None and self.bounds.open:     # the thermal walls' kernels take no open faces
                raise SimulationError(f"the open faces ({self.bounds.open.describe()}) do not run beside the thermal "
                                      f"walls (walls=Walls(...)): their kernels take none; give no-slip walls "
                                      f"(walls='{wall_axis}') or leave the open faces out")
        self.streaming = check_streaming(streaming, device_backend=device_backend, time_block=self.time_block,
                                         fused=fused, bodies=body, bounds=self.bounds, backend=backend)
        self._parity = InPlaceParity() if self.streaming == "inplace" else None
        if walls is not None:
            walls.check(vs)
        self.walls = walls
        #: (bottom, top): the thermal walls this lattice holds; a part of a lattice split in Y (an
        #: MPI rank, lbgen.parallel) holds only the sides at the global edges (C kernels)
        self.wall_sides = (True, True)
        self.fused = bool(fused)
        self.check_every = check_every
        self.time_step = 0
        self._fields_set = False
        from lbgen.backends import spec_backend
        depth_walls = AXES[D - 1] in {a for a, _ in self.wall_faces}

        def spec_for(b, width, options):
            from lbgen.backends import cpu_device
            # one OpenCL program on a CPU device: SoA (host + device regions keep each backend's default)
            cpu = layout is None and D == 3 and device_backend is None and cpu_device(b, options.get("device"))
            lay, v = choose_layout(spec_backend(b), shape[-1], vs.max_hop, None if layout is None else
                                   str(layout).lower(), vl, dimension=D, walls_along_depth=depth_walls,
                                   cpu_device=cpu, thermal_walls=walls is not None)
            spec = KernelSpec(backend=spec_backend(b), layout=lay, vl=v, precision=precision, collision=collision,
                              walls=walls is not None, velocity_set=vs_name, storage=storage, streaming=streaming,
                              wall_scheme=walls.scheme if walls is not None else KernelSpec.wall_scheme,
                              wall_axis=wall_axis if walls is not None else None,
                              open_faces=bool(open_rules) or (self.bounds is not None and bool(self.bounds.open)))
            return programs.checked_spec(spec, (width, *shape[1:]))

        plan = self._region_plan(shape[0], backend, device_backend, host_columns, backend_options, device_options)
        specs = [spec_for(b, width, options) for b, _, width, options in plan]        # all rules before compiling
        from lbgen.codegen.render import generate
        self.regions: list = []
        sources = {}
        for (b, x_start, width, options), spec in zip(plan, specs):
            if spec not in sources:       # regions with the same spec share one rendering
                sources[spec] = generate(spec)
            program = programs.compile_program(b, sources[spec], (width, *shape[1:]), threads, strict, options)
            programs.boundaries(program, self.bounds)
            self.regions.append(Region(program, x_start, width, program.allocate(),
                                       None if self._parity else program.allocate()))    # in place: one buffer
        self.spec = self.program.spec
        self.source = self.program.source
        self.runtime = str(backend)
        self.kernel_parameters = self._params.kernel_parameters(vs.r)
        self.dtype = self.program.dtype
        if any(r.program.dtype != self.dtype for r in self.regions):
            raise SimulationError("all regions must compute in the same precision")
        # regions with the same layout trade raw planes; otherwise layout-independent ones
        self._plain_exchange = len({r.program.layout.tag for r in self.regions}) > 1
        #: the links of the bodies and the force on each (lbgen.simulation.bodies; None: no bodies)
        self.bodies = None if body is None else BodyLinks(self.program, body[1], body[2], self.bounds.walls, body[3],
                                                          body[4], vs.r, closed=body_closed)
        #: sweeps run so far: "blocked" (time_block steps each, fused_tb) and "single" (one step)
        self.sweeps = {"blocked": 0, "single": 0}

    def _region_plan(self, lx, backend, device_backend, host_columns, backend_options, device_options) -> list:
        """The regions to build, as (backend, x_start, width, options); a hook for subclasses
        (lbgen.parallel.simulation.DistributedSimulation builds one rank's slab from it)."""
        if device_backend is None:
            if host_columns:
                raise SimulationError("host columns need a device backend (device_backend='opencl' or 'cuda')")
            return [(backend, 0, lx, backend_options)]
        M, bulk = split_columns(lx, host_columns, self.vs.max_hop)
        plan = [(device_backend, M, bulk, dict(device_options or {}))] if bulk else []
        return plan + ([(backend, lx - M, 2 * M, backend_options)] if M else [])

    lx = property(lambda self: self.shape[0], doc="LX, the slowest axis' extent.")
    ly = property(lambda self: self.shape[1], doc="LY.")

    @property
    def lz(self) -> int:
        """LZ (3D)."""
        if self.dimension < 3:
            raise AttributeError(f"lz: a 2D lattice has no Z axis (shape {self.shape})")
        return self.shape[2]

    #: processes that share this lattice (lbgen.parallel's distributed lattices: the ranks)
    nranks = 1

    @property
    def mask(self) -> Optional[np.ndarray]:
        """The voxel mask (uint8, 1: solid) or None."""
        return None if getattr(self, "bounds", None) is None else self.bounds.mask

    @property
    def wall_faces(self) -> tuple:
        """The bounce-back wall faces (axis, side)."""
        return () if getattr(self, "bounds", None) is None else self.bounds.walls

    @property
    def lid(self) -> dict:
        """The moving walls {(axis, side): velocity}."""
        return {} if getattr(self, "bounds", None) is None else self.bounds.lid

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

    def set_parameters(self, **changes) -> None:
        """Change the operator's parameters (tau, C1, ...) or gravity for the following steps."""
        params = self._params.replace(**changes)          # checked before anything changes
        self._params, self.kernel_parameters = params, params.kernel_parameters(self.vs.r)

    @property
    def force(self) -> Tuple[float, ...]:
        """(ax, ay[, az]): the force per unit mass per step of the current parameters (gravity / r),
        what the kernels take and what the physical fields are corrected by."""
        return tuple(self.kernel_parameters[k] for k in force_arguments(self.dimension))

    def __repr__(self) -> str:
        """``Simulation(64x256 D2Q37 bgk tau=0.8, c caosoa-vl8, periodic, step 0)``: lattice, velocity
        set, operator and parameters (gravity when nonzero), backend(s) with layout tag, precision
        (when not double), time block (when > 1), boundaries, time step (and 'no state' before one)."""
        try:
            p = self._params
            physics = " ".join(["x".join(map(str, self.shape)), self.vs.name, p.collision]
                               + [f"{k}={v:g}" for k, v in p.values.items()])
            if any(p.gravity):
                physics += " g=(" + ", ".join(f"{g:g}" for g in p.gravity) + ")"
            where = " + ".join(f"{d['backend']} {d['layout']}" + (f" x[{d['columns'][0]}:{sum(d['columns'])})"
                                                                   if len(self.regions) > 1 else "")
                               for d in self.region_table())
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

    def region_table(self) -> list:
        """Every region of the lattice (all ranks): backend, layout tag, [x_start, width]."""
        return [{"backend": r.program.spec.backend, "layout": r.program.layout.tag, "columns": [r.x_start, r.width]}
                for r in self.regions]

    @property
    def program(self):
        """The program of the first region (the only one in a single-backend run)."""
        return self.regions[0].program

    @property
    def f(self):
        """The state buffer of the first region (the only one in a single-backend run)."""
        return self.regions[0].f

    @property
    def layout(self):
        return self.regions[0].program.layout

    def synchronize(self) -> None:
        for r in self.regions:
            r.program.synchronize()

    # --- state -------------------------------------------------------------------------
    def _set_fields(self, rho, *rest) -> None:
        """``set_fields`` (lbgen.simulation.interface): from the given physical fields (numbers or
        arrays of the lattice's shape): the populations at the equilibrium whose physical
        (half-step) fields under this run's force are these -- u + a/2, T - |a|^2/8 stored -- so
        ``fields()`` gives them back to round-off and a fluid given at rest starts at rest.
        Computed by each region's init_equilibrium kernel on its backend; solid cells get none."""
        arrays = self._checked_fields(rho, *rest)
        if self.mask is not None:          # any positive state in solid cells: they are zeroed below
            first, last = 0, len(arrays) - 1
            arrays = [np.where(self.mask == 1, 1.0 if k in (first, last) else 0.0, a) for k, a in enumerate(arrays)]
        whole = whole_region(self) is not None          # one region holds the lattice: no copy of its fields
        for r in self.regions:
            r.program.init_equilibrium(r.f, *(a if whole else np.ascontiguousarray(a[r.columns % self.lx])
                                              for a in arrays), force=self.force)
        self._fields_set = True
        self._natural(reset=True)
        if self.mask is not None:      # solid cells hold no populations (their stored zeros)
            state = self.state()           # zeroed in place: one copy of the lattice's populations, not two
            state[:, self.mask == 1] = self.program.codec.encode(np.zeros((self.vs.Q, 1)))
            self._upload(state, stored=True)

    def set_fields_by_slabs(self, slab, cells: Optional[int] = None) -> None:
        """``set_fields`` of fields given one slab of X planes at a time: ``slab(x0, x1)`` -> {rho,
        ux, uy[, uz], T} of the planes x0 <= x < x1 (``lbgen.simulation.slabs``: the same populations,
        bit for bit, without the lattice's fields held whole)."""
        from lbgen.simulation.slabs import SLAB_CELLS, set_fields_by_slabs
        set_fields_by_slabs(self, slab, SLAB_CELLS if cells is None else cells)

    def _checked_fields(self, rho, *rest) -> list:
        """The physical fields as (shape) float64 arrays (``interface.checked_fields``)."""
        fluid = None if self.mask is None else self.mask == 0
        return checked_fields((rho, *rest), self.shape, self.vs, self.force, fluid)

    def _equilibrium(self, rho, *rest) -> np.ndarray:
        """Checked physical fields -> (Q, *shape) populations on the host, as ``set_fields`` (the
        model's assignments through NumPy: in double, the bits of a strict build of the init kernel)."""
        from lbgen.model import equilibrium_assignments
        return equilibrium_assignments(self.spec.velocity_set).evaluate(
            self._checked_fields(rho, *rest), **dict(zip(force_arguments(self.dimension), self.force)))

    def _upload(self, populations: np.ndarray, stored: bool = False) -> None:
        """(Q, *shape) populations into every region's state buffer (solid cells zeroed); stored:
        the values are the storage's already (``state()``'s: a checkpoint), uploaded as they are."""
        if not stored:
            if self.mask is not None:
                populations = np.where(self.mask[None] == 1, populations.dtype.type(0), populations)
            populations = self.program.codec.encode(populations)
        populations = np.asarray(populations, dtype=self.dtype)
        self._natural(reset=True)
        whole = whole_region(self) is not None          # one region holds the lattice: no copy of its part
        for r in self.regions:
            block = populations if whole else np.ascontiguousarray(populations[:, r.columns % self.lx])
            if isinstance(r.f, np.ndarray) and r.f.dtype == block.dtype and not np.may_share_memory(block, r.f):
                r.program.layout.pack(block, out=r.f.reshape(-1))       # a host buffer: packed in place
            else:
                r.f = r.program.upload(r.program.layout.pack(block), r.f)

    def set_populations(self, f: np.ndarray) -> None:
        """Start from the given (Q, *shape) populations, checked first (``_checked_populations``);
        those of solid cells are set to 0."""
        self._upload(self._checked_populations(f))
        self._fields_set = True

    def _checked_populations(self, f) -> np.ndarray:
        """(Q, *shape) real populations as float64, checked (``interface.checked_populations``:
        shape, finite and within this run's precision, positive density at the fluid sites)."""
        fluid = None if self.mask is None else self.mask == 0
        return checked_populations(f, (self.vs.Q, *self.shape), self.program.codec.range_dtype, fluid)

    def populations(self) -> np.ndarray:
        """(Q, *shape) float64 copy of the current populations."""
        self._require_state("populations()")
        return self.program.codec.decode(self.state())

    def fields(self, native: bool = False) -> Dict[str, np.ndarray]:
        """The physical (half-step) fields rho, ux, uy[, uz], T as float64 arrays of the lattice's
        shape: rho, u - a/2 and T + |a|^2/8 of the stored moments (u = sum xi f / rho, T = sum
        |xi-u|^2 f / (2 rho)), a = ``force``; by each region's fields kernel; solid cells read 0.
        ``native``: the kernels' values in the arithmetic precision (float32 in single: half the bytes)."""
        self._require_state("fields()")
        self.synchronize()
        self._natural()
        whole = len(self.regions) == 1 and self.regions[0].x_start == 0 and self.regions[0].width == self.lx
        if whole:            # one region holds the lattice: its fresh arrays, not a second copy
            r = self.regions[0]
            out = r.program.fields(r.f, force=self.force, native=native)
        else:
            out = {}
            for r in self.regions:
                for k, v in r.program.fields(r.f, force=self.force, native=native).items():
                    out.setdefault(k, np.empty(self.shape, dtype=v.dtype))[r.columns % self.lx] = v
        if self.mask is not None:
            for v in out.values():
                v[self.mask == 1] = 0.0
        return out

    def fields_by_slabs(self, native: bool = False):
        """``fields(native)``' arrays made one slab of X planes at a time, when asked: (dtype, bounds,
        compute(x0, x1)) (``lbgen.simulation.slabs.field_slabs``; None for a lattice of several
        regions or on a device).  A run's outputs read them so (``lbgen.output.slabbed``)."""
        from lbgen.simulation.slabs import field_slabs
        self._require_state("fields()")
        return field_slabs(self, native)

    def _fields_of(self, f: np.ndarray) -> Dict[str, np.ndarray]:
        """Physical fields of (Q, *shape) populations on the host, as ``fields``: the model's
        assignments through NumPy, in double the bits of a strict build of the fields kernel."""
        from lbgen.model.derived import macroscopic_assignments, physical_assignments
        moments = macroscopic_assignments(self.spec.velocity_set).evaluate(np.asarray(f, dtype=np.float64))
        values = physical_assignments(self.spec.velocity_set).evaluate(
            moments, **dict(zip(force_arguments(self.dimension), self.force)))
        return dict(zip(field_names(self.dimension), values))

    def diagnostic_rows(self, skip: Optional[np.ndarray] = None) -> np.ndarray:
        """Per-line reductions over x of the physical fields over this process's sites: (LY, ND)
        in 2D, (LY*LZ, ND3) in 3D (the backends' generated diagnostics kernels; columns
        ``lbgen.codegen.diagnostics.ROW_QUANTITIES`` / ``ROW_QUANTITIES3D``; solid cells skipped,
        or the sites of ``skip``, a uint8 mask of the lattice's shape).  Only those numbers leave
        the device, never the lattice."""
        from lbgen.codegen.diagnostics import ROW_QUANTITIES, ROW_QUANTITIES3D, combine_rows
        self._require_state("diagnostics()")
        self.synchronize()
        self._natural()
        skip = self.mask if skip is None else skip
        parts = [r.program.diagnostics(r.f, force=self.force, skip=None if skip is None else
                                       np.ascontiguousarray(skip[r.columns % self.lx])) for r in self.regions]
        return combine_rows(parts, ROW_QUANTITIES if self.dimension == 2 else ROW_QUANTITIES3D)

    def diagnostics(self, T_hot: Optional[float] = None, T_cold: Optional[float] = None) -> Dict[str, float]:
        """Global diagnostics of the current state as Python floats (``lbgen.codegen.diagnostics``'s
        ``scalars`` in 2D: mass, momentum_x, momentum_y, energy, kinetic_energy, mixing_width,
        max_speed, min_rho, min_T, nonfinite; ``scalars3d`` in 3D: mass, momentum_x/y/z,
        kinetic_energy, max_speed, min_rho, min_T, nonfinite), over the fluid sites.  The 2D mixing
        width needs a temperature contrast: T_hot and T_cold (default: the wall temperatures)."""
        from lbgen.codegen.diagnostics import scalars, scalars3d
        self._require_state("diagnostics()")
        if self.dimension == 3:
            if T_hot is not None or T_cold is not None:
                raise SimulationError("diagnostics(T_hot, T_cold): the mixing width is a 2D diagnostic; a 3D "
                                      "lattice reports none")
            return scalars3d(self.diagnostic_rows())
        if T_hot is None and T_cold is None and self.walls is not None:
            T_hot, T_cold = self.walls.T_bottom, self.walls.T_top
        return scalars(self.diagnostic_rows(), self.lx, T_hot, T_cold)

    # --- stepping ----------------------------------------------------------------------
    def exchange_halos(self) -> None:
        """Fill every region's halo: the other axes by its own halo kernel, X planes from its
        neighbours (one region: its halo kernel wraps X periodically)."""
        for r in self.regions:
            r.program.step_halo(r.f)
        k = len(self.regions)
        if k == 1:
            return
        H, plain = self.vs.max_hop, self._plain_exchange
        edges = [(programs.read_planes(r.program, r.f, 0, H, plain),
                  programs.read_planes(r.program, r.f, r.width - H, H, plain)) for r in self.regions]
        for i, r in enumerate(self.regions):
            programs.write_planes(r.program, r.f, -H, edges[i - 1][1], plain)          # <- left neighbour's edge
            programs.write_planes(r.program, r.f, r.width, edges[(i + 1) % k][0], plain)  # <- right neighbour's

    def advance(self, region: Region) -> None:
        """One step of one region whose halos are fresh (asynchronous on devices)."""
        region.f, region.g = region.program.step(region.f, region.g, self.kernel_parameters, self.walls, self.fused,
                                                 sides=self.wall_sides)

    def step(self, n: int = 1) -> None:
        """n steps: with a time block N, n // N sweeps of N steps, then n % N single steps."""
        self._check_can_step(n)
        if self._parity is not None:
            return self._parity.step(self, n)
        depth = self.time_block
        if depth > 1:
            r = self.regions[0]
            for _ in range(n // depth):
                self.exchange_halos()
                r.program.fused_tb(r.f, r.g, depth, walls=self.walls, sides=self.wall_sides, **self.kernel_parameters)
                r.f, r.g = r.g, r.f
                self.time_step += depth
                self.sweeps["blocked"] += 1
            n %= depth
        for _ in range(n):
            if self.bodies is not None:
                self.bodies.before_step(self.regions[0].f)
            self.exchange_halos()
            for r in self.regions:      # the device bulk first: it runs while the host computes
                self.advance(r)
            if len(self.regions) > 1:
                self.synchronize()
            self.time_step += 1
            self.sweeps["single"] += 1

    def forces(self) -> Dict[str, np.ndarray]:
        """{body name: the force on it} (D components, model units: docs/physics.md) by momentum exchange
        during the last step's streaming (``lbgen.simulation.bodies``); {} without bodies."""
        return {} if self.bodies is None else self.bodies.forces()

    def state(self) -> np.ndarray:
        """The populations as (Q, *shape) stored values (the storage's dtype; deviations f - w_p where
        the storage is narrower than the arithmetic, lbgen.codegen.storage): exact, for checkpoints."""
        self._require_state("state()")
        self.synchronize()
        self._natural()
        return state_of(self)

    def state_chunks(self, cells: int = 1 << 18):
        """``state()``'s values in pieces, in the C order of its (Q, *shape) array: one population's
        slab of about ``cells`` sites at a time (lbgen.simulation.state; checkpoints stream them)."""
        self._require_state("state()")
        self.synchronize()
        self._natural()
        return state_chunks(self, cells)

    def restore(self, populations: np.ndarray, time_step: int) -> None:
        """Continue from a saved state (bit-identical to never having stopped)."""
        self._check_time_step(time_step)
        self._upload(checked_saved_state(populations, (self.vs.Q, *self.shape), self.dtype, self.mask), stored=True)
        self.time_step = int(time_step)
        self._fields_set = True

    @staticmethod
    def _check_time_step(time_step) -> None:
        """The step a saved state is restored at: an integer >= 0 (distributed lattices too)."""
        if isinstance(time_step, bool) or not isinstance(time_step, (int, np.integer)) or time_step < 0:
            raise SimulationError(f"restore: time_step={time_step!r} must be an integer >= 0 (the step the "
                                  f"state was saved at)")

    def _natural(self, reset: bool = False) -> None:
        """In place: the buffers natural before they are read (``reset``: they were just written so)."""
        if getattr(self, "_parity", None) is not None:
            self._parity.natural(self, reset)

    @property
    def has_state(self) -> bool:
        """Whether the populations were set (set_fields, set_populations or restore)."""
        return bool(getattr(self, "_fields_set", False))


#: the 3D lattice's name before one Simulation took any D: ``Simulation3D(lx, ly, lz, ...)`` is
#: ``Simulation(lx, ly, lz, ...)``; kept for one release.
Simulation3D = Simulation
