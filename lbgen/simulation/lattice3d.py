"""A 3D lattice on the C backend (or OpenCL, the CUDA host shim, CuPy on a GPU): ``Simulation3D``.

Units as in 2D (lbgen.simulation.runner): lengths in sites, time in steps; velocities are
the model's, u = sum(xi_i f_i) / rho with xi_i = r c_i (r = sqrt(3) for D3Q19 and D3Q27:
one hop per step is a speed of r, and the lattice-unit velocity of the literature is u / r);
gravity g is an acceleration in those units per model time Delta t = 1/r, so the force per
unit mass per step is a = g / r.  The fields are the physical (half-step) ones:
u_H = u - a/2 of the stored post-collision populations (``lbgen.model.collision.half_step_shift``);
``set_fields`` takes them and ``fields`` returns them.

Boundaries: ``walls`` -- the half-way bounce-back no-slip walls: axes (both faces: 'z',
'xz') or single faces ('z-low'; a block of a distributed lattice holds the faces it touches),
the others periodic; ``lid`` -- moving wall faces, {'z-high': (ux, uy, uz)}
(velocity in the face's plane, model units; Ladd's momentum correction with the node's
density); ``mask`` -- a voxel mask (bool or uint8 array of shape (LX, LY, LZ), True/1 =
solid): links into solid voxels bounce back, solid voxels hold no populations (their fields
read 0).  Everything is checked before any kernel is built.
"""
from __future__ import annotations

import warnings
from numbers import Integral
from typing import Dict, Mapping, Optional, Sequence, Tuple

import numpy as np

from lbgen.backends import compile as compile_program
from lbgen.codegen.spec import KernelSpec, SpecError, choose_layout
from lbgen.model.catalog import field_names
from lbgen.model.operators import DEFAULT_OPERATOR, all_parameters
from lbgen.simulation.interface import Lattice, checked_populations, count, lattice_size, time_block_depth
from lbgen.simulation.parameters import Parameters, SimulationError
from lbgen.simulation.boundaries import (check_finite_state, checked_saved_state,  # noqa: F401
                                          face_bits, lid_face, lid_faces, voxel_mask, wall_axes, wall_faces)

__all__ = ["Simulation3D"]

FIELDS3D = field_names(3)
def _warn_lid(note: str) -> None:
    """A lid in the unstable Mach band (lbgen.model.physics.lid_mach_check): taken, with a
    LidMachWarning pointing at the caller's Simulation3D(...) line."""
    from lbgen.model.physics import LidMachWarning
    warnings.warn(LidMachWarning(note), stacklevel=4)


class Simulation3D(Lattice):
    """A box of LX x LY x LZ sites on 3D kernels (backend "c", "opencl", "cuda-shim" or "cuda").
    ``isinstance(sim, lbgen.Simulation)`` holds: the public interface is the 2D lattice's
    (``lbgen.simulation.interface.Lattice``); ``lbgen.Simulation(lx, ly, lz)`` builds one.

    >>> sim = Simulation3D(16, 16, 32, velocity_set="d3q19", tau=0.8, walls="z", lid={"z-high": (0.05, 0, 0)})
    >>> sim.set_fields(1.0, 0.0, 0.0, 0.0)       # a fluid at rest, at equilibrium (or u=(0, 0, 0), T=1)
    >>> sim.run(1000)
    >>> sim.fields()["ux"]                          # (LX, LY, LZ) arrays: rho, ux, uy, uz, T

    ``collision`` and its parameters (tau for bgk; C1, C2, C3 for regularized) are checked
    against the operator records, ``gravity`` is (gx, gy, gz); ``walls``, ``lid`` and ``mask``
    as in the module's docstring.  ``layout``/``vl``: the data layout (default:
    ``lbgen.codegen.spec.default_layout`` for a 3D lattice: on the C backend caosoa VL 8 from 6
    clusters of Z on (or with walls on z), soa below; elsewhere caosoa with the preferred VL that
    divides LZ, else soa); ``threads``: OpenMP threads (0: all allowed); ``device`` (OpenCL):
    'P:D' or part of a device name (default: the first device that builds kernels);
    ``strict``: no FMA contraction (layouts and fused/unfused agree bit for bit);
    ``time_block=N`` (C backend, fused): N steps per sweep through cache (temporal blocking
    along X, ``fused_tb``), the bits of N single steps in strict builds.
    """

    def __init__(self, lx: int, ly: int, lz: int, *, velocity_set: str = "d3q19", collision: str = DEFAULT_OPERATOR,
                 gravity: Sequence[float] = (0.0, 0.0, 0.0), walls=None, lid: Optional[Mapping] = None, mask=None,
                 backend: str = "c", layout: Optional[str] = None, vl: Optional[int] = None,
                 precision: str = "double", fused: bool = True, threads: int = 0, strict: bool = False,
                 check_every: int = 100, time_block: int = 1, device: Optional[str] = None,
                 **operator_parameters):
        unknown = sorted(set(operator_parameters) - set(all_parameters()))
        if unknown:
            raise SimulationError(f"Simulation3D() got unknown keyword(s) {', '.join(unknown)}")
        self.lx, self.ly, self.lz = (lattice_size(n, v) for n, v in (("lx", lx), ("ly", ly), ("lz", lz)))
        self.threads = count("threads", threads)
        self.check_every = count("check_every", check_every)
        self.time_block = time_block_depth(time_block, backend, fused)
        #: sweeps run so far: "blocked" (time_block steps each, fused_tb) and "single" (one step)
        self.sweeps = {"blocked": 0, "single": 0}
        from lbgen.model.catalog import SETS_3D, set_entry, set_names
        try:
            entry = set_entry(velocity_set)
        except ValueError as e:
            raise SpecError(str(e)) from None
        if entry.D != 3:
            raise SpecError(f"{str(velocity_set).lower()} is a {entry.D}D set; Simulation3D runs 3D sets "
                            f"({set_names(SETS_3D)}): use lbgen.Simulation for 2D")
        self._params = Parameters(collision, operator_parameters, gravity, dimension=3)
        #: the wall faces (axis, side); ``walls``: the axes with at least one
        self.wall_faces = wall_faces(walls)
        self.walls = tuple(dict.fromkeys(a for a, _ in self.wall_faces))
        self.lid = lid_faces(lid, self.wall_faces, str(velocity_set).lower(), warn=_warn_lid)
        shape = (self.lx, self.ly, self.lz)
        self.mask = voxel_mask(mask, shape)
        from lbgen.backends import RUNTIMES, spec_backend
        self.runtime = str(backend).lower()
        if self.runtime not in RUNTIMES:
            raise SpecError(f"unknown backend {backend!r}; choose from {', '.join(RUNTIMES)}")
        if device is not None and self.runtime != "opencl":
            raise SimulationError(f"device={device!r} selects an OpenCL device: it needs backend='opencl' "
                                  f"(not {self.runtime!r})")
        backend = spec_backend(self.runtime)             # 'cuda' for 'cuda-shim'
        layout, vl = choose_layout(backend, self.lz, entry.max_hop, None if layout is None else str(layout).lower(),
                                   vl, dimension=3, walls_along_depth="z" in self.walls)
        spec = KernelSpec(backend=backend, layout=layout, vl=vl, precision=precision, collision=collision,
                          velocity_set=velocity_set).validate()
        from lbgen.codegen.kernel_api import check_sizes3d
        from lbgen.model.velocity_set import velocity_set as get_velocity_set
        self.vs = get_velocity_set(spec.velocity_set)
        problem = check_sizes3d(spec, self.vs, *shape)
        if problem:                                      # before compiling anything
            raise SimulationError(f"{problem} ({spec.layout}{'-vl' + str(spec.vl) if spec.vl else ''}; "
                                  f"choose another vl or layout, or another LZ)")
        from lbgen.codegen.render import generate
        self.fused = bool(fused)
        self.source = generate(spec)
        self.spec = self.source.spec
        self.program = compile_program(self.runtime, self.source, shape, strict, self.threads, device=device)
        self.dtype = self.program.dtype
        self.program.set_boundaries(*face_bits(self.wall_faces, self.lid, 3), solid=self.mask)
        self.f, self.g = self.program.allocate(), self.program.allocate()
        self.kernel_parameters = self._params.kernel_parameters(self.vs.r)
        self.time_step = 0
        self._has_state = False
        self._solid_index = None
        if self.mask is not None:
            solid = np.nonzero(self.mask)
            p = np.arange(self.vs.Q)[:, None]
            self._solid_index = self.program.layout.site_index(p, *(s[None, :] for s in solid)).ravel()

    #: the lattice's dimension
    dimension = 3

    @property
    def shape(self) -> Tuple[int, int, int]:
        """(LX, LY, LZ)."""
        return (self.lx, self.ly, self.lz)

    # --- physics -----------------------------------------------------------------------
    @property
    def params(self) -> Parameters:
        """The operator, its parameters and gravity (read-only: ``set_parameters``)."""
        return self._params

    def set_parameters(self, **changes) -> None:
        """Change the operator's parameters (tau, C1, ...) or gravity for the following steps."""
        params = self._params.replace(**changes)
        self._params, self.kernel_parameters = params, params.kernel_parameters(self.vs.r)

    @property
    def force(self) -> Tuple[float, float, float]:
        """The force per unit mass per step, a = g / r (the kernels' ax, ay, az)."""
        return tuple(self.kernel_parameters[k] for k in ("ax", "ay", "az"))

    @property
    def layout(self):
        return self.program.layout

    @property
    def has_state(self) -> bool:
        return self._has_state

    def __repr__(self) -> str:
        try:
            p = self._params
            physics = " ".join([f"{self.lx}x{self.ly}x{self.lz}", self.vs.name, p.collision]
                               + [f"{k}={v:g}" for k, v in p.values.items()])
            if any(p.gravity):
                physics += " g=(" + ", ".join(f"{g:g}" for g in p.gravity) + ")"
            where = f"{self.spec.backend} {self.program.layout.tag}" + (
                f" {self.spec.precision}" if self.spec.precision != "double" else "")
            box = []
            if self.walls:
                both = [a for a in self.walls if sum(f[0] == a for f in self.wall_faces) == 2]
                box.append("walls " + " ".join([''.join(both)] * bool(both) + ["-".join(f) for f in self.wall_faces
                                                                               if f[0] not in both]))
            for (axis, side), u in self.lid.items():
                box.append(f"lid {axis}-{side} (" + ", ".join(f"{c:g}" for c in u) + ")")
            if self.mask is not None:
                box.append(f"mask {100.0 * self.mask.mean():.3g}% solid")
            state = f"step {self.time_step}" + ("" if self._has_state else ", no state yet")
            return f"Simulation3D({physics}, {where}, {', '.join(box) or 'periodic'}, {state})"
        except Exception:  # noqa: BLE001 - a half-built simulation still prints
            return "<Simulation3D (not fully built)>"

    # --- state -------------------------------------------------------------------------
    def _checked_fields(self, values) -> list:
        shape = (self.lx, self.ly, self.lz)
        fluid = None if self.mask is None else self.mask == 0
        arrays = []
        for name, a in zip(FIELDS3D, values):
            if isinstance(a, bool):
                a = None
            v = np.asarray(a) if a is not None else np.asarray(None)
            if v.dtype.kind not in "iuf" or (v.ndim and v.shape != shape):
                got = f"an array of shape {v.shape}" if v.ndim and v.dtype.kind in "iuf" else repr(a)
                raise SimulationError(f"set_fields: {name} must be a real number or an array of shape (LX, LY, LZ) = "
                                      f"{shape}; got {got}")
            v = np.broadcast_to(v.astype(np.float64), shape)
            if not np.all(np.isfinite(v)):
                x, y, z = (int(i[0]) for i in np.nonzero(~np.isfinite(v)))
                raise SimulationError(f"set_fields: {name} is {v[x, y, z]} at (x={x}, y={y}, z={z}); every initial "
                                      f"field must be finite")
            arrays.append(v)
        for name, a, what in (("rho", arrays[0], "density"), ("T", arrays[4], "temperature")):
            bad = ~(a > 0) if fluid is None else ~(a > 0) & fluid
            if bad.any():
                x, y, z = (int(i[0]) for i in np.nonzero(bad))
                raise SimulationError(f"set_fields: {name} is {a[x, y, z]:.6g} at (x={x}, y={y}, z={z}); the initial "
                                      f"{what} must be positive at every fluid site")
        if self.vs.isothermal and not np.allclose(arrays[4], 1.0, rtol=0, atol=1e-12):
            raise SimulationError(f"{self.vs.name} is isothermal (T = 1): the initial temperature must be 1 "
                                  f"everywhere, got {arrays[4].min():.6g} .. {arrays[4].max():.6g}")
        return arrays

    def _set_fields(self, rho, ux, uy, uz, T) -> None:
        """``set_fields`` (lbgen.simulation.interface): populations at the equilibrium whose
        physical (half-step) fields these are (numbers or (LX, LY, LZ) arrays; velocities in
        model units); solid voxels get 0."""
        arrays = self._checked_fields((rho, ux, uy, uz, T))
        if self.mask is not None:          # any positive state in solid voxels: they are zeroed below
            arrays = [np.where(self.mask == 1, 1.0 if k in (0, 4) else 0.0, a) for k, a in enumerate(arrays)]
        self.program.init_equilibrium(self.f, *arrays, force=self.force)
        self._zero_solid(self.f)
        self._has_state = True

    def set_populations(self, f: np.ndarray) -> None:
        """Start from (Q, LX, LY, LZ) populations, checked first (``interface.checked_populations``:
        finite and within this run's precision, positive density at every fluid site); those of
        solid voxels are set to 0."""
        a = np.array(f, dtype=np.float64) if np.asarray(f).dtype.kind in "iuf" else f
        if self.mask is not None and np.shape(a) == (self.vs.Q, self.lx, self.ly, self.lz):
            a[:, self.mask == 1] = 0.0
        fluid = None if self.mask is None else self.mask == 0
        a = checked_populations(a, (self.vs.Q, self.lx, self.ly, self.lz), self.dtype, fluid)
        self.program.pack(a, self.f)
        self._has_state = True

    def _zero_solid(self, buf) -> None:
        if self._solid_index is not None:
            host = self.program.download(buf)
            host[self._solid_index] = 0.0
            self.program.upload(host, buf)
            self.program.halo(buf)

    def populations(self) -> np.ndarray:
        """(Q, LX, LY, LZ) float64 copy of the populations."""
        self._require_state("populations()")
        return self.program.unpack(self.f)

    def fields(self) -> Dict[str, np.ndarray]:
        """The physical (half-step) fields rho, ux, uy, uz, T as (LX, LY, LZ) arrays (the fields
        kernel); solid voxels read 0."""
        self._require_state("fields()")
        out = self.program.fields(self.f, force=self.force)
        if self.mask is not None:
            solid = self.mask == 1
            for v in out.values():
                v[solid] = 0.0
        return out

    def diagnostic_rows(self) -> np.ndarray:
        """(LY*LZ, ND3) per-line reductions over x of the physical fields, from the backend's
        diagnostics kernel (columns: ``lbgen.codegen.diagnostics.ROW_QUANTITIES3D``; solid
        voxels skipped): one small read, no populations pulled."""
        self._require_state("diagnostics()")
        return self.program.diagnostics(self.f, force=self.force)

    def diagnostics(self) -> Dict[str, float]:
        """mass (sum rho), momentum_x/y/z (sum rho u_H), kinetic_energy (sum rho |u_H|^2 / 2),
        max_speed (max |u_H|), min_rho, min_T (fluid sites) and nonfinite (sites with a NaN or
        Inf field), over the fluid sites, as Python floats (lattice sites; velocities in model
        units): ``lbgen.codegen.diagnostics.scalars3d`` of the diagnostics kernel's rows."""
        from lbgen.codegen.diagnostics import scalars3d
        return scalars3d(self.diagnostic_rows())

    # --- runs: checkpoints and the run driver's interface ------------------------------------
    #: processes (the run driver's interface; DistributedSimulation3D has several)
    nranks = 1

    def synchronize(self) -> None:
        """Wait for the kernels launched so far (a GPU runtime returns before they finish)."""
        self.program.synchronize()

    def state(self) -> np.ndarray:
        """The populations as (Q, LX, LY, LZ) in the working precision (exact, for checkpoints)."""
        self._require_state("state()")
        return self.program.layout.unpack(self.program.download(self.f))

    def restore(self, populations: np.ndarray, time_step: int) -> None:
        """Continue from a saved state (``state``): bit-identical to never having stopped."""
        if isinstance(time_step, bool) or not isinstance(time_step, (Integral, np.integer)) or time_step < 0:
            raise SimulationError(f"restore: time_step={time_step!r} must be an integer >= 0 (the step the state "
                                  f"was saved at)")
        a = checked_saved_state(populations, (self.vs.Q, self.lx, self.ly, self.lz), self.dtype, self.mask)
        self.program.upload(self.program.layout.pack(a), self.f)
        self.program.halo(self.f)
        self.time_step = int(time_step)
        self._has_state = True

    # --- stepping ----------------------------------------------------------------------
    def step(self, n: int = 1) -> None:
        """n time steps: halo, then fused (or propagate and collide), with the boundaries; with
        a time block N, n // N sweeps of N steps (halo, fused_tb), then n % N single steps."""
        self._check_can_step(n)
        prog, params, depth = self.program, self.kernel_parameters, self.time_block
        if depth > 1:
            for _ in range(n // depth):
                prog.halo(self.f)
                prog.fused_tb(self.f, self.g, depth, **params)
                self.f, self.g = self.g, self.f
                self.time_step += depth
                self.sweeps["blocked"] += 1
            n %= depth
        for _ in range(n):
            prog.step_halo(self.f)
            self.f, self.g = prog.step(self.f, self.g, params, fused=self.fused)
            self.time_step += 1
            self.sweeps["single"] += 1

    def check_finite(self) -> None:
        """SimulationError naming the step and the first bad site when a population is NaN/Inf
        or a fluid site's density is not positive.  The diagnostics kernel answers; only a
        failed check pulls the populations (to name the site)."""
        from lbgen.codegen.diagnostics import healthy
        if healthy(self.diagnostics()):
            return
        site = self.first_bad_site()
        if site is not None:
            raise self.divergence(*site)

    def first_bad_site(self, skip: Optional[np.ndarray] = None):
        """(x, y, z, rho) of the first fluid site (not solid, not 1 in ``skip``) with a NaN/Inf
        population or a density that is not positive, or None (pulls the populations)."""
        f = self.populations()
        rho = f.sum(axis=0)
        bad = ~np.isfinite(f).all(axis=0) | ~(rho > 0)
        if self.mask is not None:
            bad &= self.mask == 0
        if skip is not None:
            bad &= skip == 0
        if not bad.any():
            return None
        x, y, z = (int(i[0]) for i in np.nonzero(bad))
        return x, y, z, float(rho[x, y, z])

    def divergence(self, x: int, y: int, z: int, rho: float, where: str = "") -> SimulationError:
        """The divergence report of a bad site (x, y, z: the coordinates the caller names, a
        distributed run's global ones), with a hint naming the lids and their Mach numbers."""
        from lbgen.model.physics import LID_MACH_MAX, LID_MACH_WARN, lid_mach
        params = ", ".join(f"{k} = {v:g}" for k, v in self._params.values.items())
        lids = [f"{a}-{s} at Mach {lid_mach(u, self.vs.name):.3g}" for (a, s), u in self.lid.items() if any(u)]
        lid_hint = (f"the lid{'s' if len(lids) > 1 else ''} ({', '.join(lids)}; allowed up to Mach "
                    f"{LID_MACH_MAX:g}, unstable near tau = 1/2 above {LID_MACH_WARN:g}) may move too fast, or "
                    if lids else "")
        return SimulationError(f"the run diverged by step {self.time_step}: first bad site (x={x}, y={y}, z={z}"
                               f"{', ' + where if where else ''}) has rho={rho:.6g}. Hint: {lid_hint}the "
                               f"{self._params.collision} parameters ({params}) may put a relaxation time too close "
                               f"to 1/2, or velocities are too large for the lattice (|u| should stay well below "
                               f"r = {self.vs.r:.3f})")
