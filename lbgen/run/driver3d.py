"""A 3D run (a d3q* velocity set): ``Run3D`` drives a ``lbgen.Simulation3D`` through the same
loop, guards, outputs, checkpoints and resume as a 2D ``Run`` (lbgen.run.driver).

What is 3D here: the initial state (the set-ups' 3D states, ``lbgen.run.setups``), the
construction (``resolve3d``: the layout and VL ``Simulation3D`` would choose, recorded for a
resume; ``make_simulation3d``: walls, lids and the voxel mask in Simulation3D's own forms),
the guard and series sample (the 3D diagnostics kernel, ``lbgen.codegen.diagnostics.scalars3d``),
the outputs (``lbgen.output.RunOutput3D``) and the run's physical numbers (``physics3d``).
The voxel mask of ``--geometry`` is read and checked (dtype, shape) before any file is
written.  One process: MPI is refused.
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable, Optional

import numpy as np

from lbgen.codegen.layouts import CLUSTERED
from lbgen.codegen.spec import default_layout
from lbgen.model.catalog import set_entry
from lbgen.run.config import RunConfig
from lbgen.run.construct import resolve_time_block
from lbgen.run.driver import Run
from lbgen.run.setups import SETUPS
from lbgen.simulation.lattice3d import Simulation3D, voxel_mask
from lbgen.simulation.parameters import SimulationError
from lbgen.system.limits import resolve_threads


def load_geometry(cfg: RunConfig) -> Optional[np.ndarray]:
    """The run's voxel mask (uint8, (LX, LY, LZ)), or None: read from ``--geometry FILE.npy``
    and checked by Simulation3D's rule (bool or uint8 0/1, the lattice's shape), naming the
    file, the shape expected and the one found."""
    if not cfg.geometry:
        return None
    path = Path(cfg.geometry)
    try:
        mask = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as e:
        raise SimulationError(f"--geometry {path}: cannot read a .npy voxel mask ({e})") from None
    if not isinstance(mask, np.ndarray):
        raise SimulationError(f"--geometry {path}: not a .npy array")
    try:
        return voxel_mask(mask, cfg.shape)
    except SimulationError as e:
        raise SimulationError(f"--geometry {path}: {e}") from None


def resolve3d(cfg: RunConfig, echo: Callable[[str], None] = print, mask: Optional[np.ndarray] = None,
              distributed: bool = False) -> RunConfig:
    """The 3D run description with what construction decides made explicit (recorded in the
    manifest, so a resume builds the same kernels): the set-up's amplitude, the thread count,
    the layout and VL (given, else Simulation3D's default for the backend and LZ), the time
    block (``construct.resolve_time_block``: the 2D rule; under MPI, ``distributed``, auto is
    1), the series cadence (a multiple of the time block), the geometry file's absolute path and the digest of its
    ``mask`` (a resumed run whose file now holds another mask is refused)."""
    changes = {}
    if mask is not None:
        import hashlib
        digest = hashlib.sha256(np.ascontiguousarray(mask, dtype=np.uint8).tobytes()).hexdigest()
        if cfg.geometry_digest not in (None, digest):
            raise SimulationError(f"--geometry {cfg.geometry}: the file holds another voxel mask than the one this "
                                  f"run started with (sha256 {cfg.geometry_digest[:12]}..., now {digest[:12]}...); "
                                  f"restore it to continue the run")
        changes["geometry_digest"] = digest
    if cfg.amplitude is None:
        changes["amplitude"] = SETUPS[cfg.setup].default_amplitude(cfg.lx)
    changes["threads"] = resolve_threads(cfg.threads, echo)
    layout, vl = cfg.layout, cfg.vl
    halo = set_entry(cfg.velocity_set).max_hop
    if layout is None:
        layout, default_vl = default_layout(cfg.backend, cfg.lz, halo)
        vl = vl if vl is not None else default_vl
    if layout in CLUSTERED and vl is None:
        vl = default_layout(cfg.backend, cfg.lz, halo)[1] or 1
    changes["layout"], changes["vl"] = layout, (vl if layout in CLUSTERED else None)
    changes["time_block"] = depth = resolve_time_block(cfg, distributed)
    if cfg.out and not cfg.series_every:      # a multiple of the time block
        from lbgen.output.series import default_series_every
        changes["series_every"] = default_series_every(cfg.steps, depth)
    if cfg.geometry:
        changes["geometry"] = str(Path(cfg.geometry).resolve())
    return cfg.replace(**changes)


def make_simulation3d(cfg: RunConfig, mask: Optional[np.ndarray] = None) -> Simulation3D:
    """The Simulation3D of a resolved 3D run description."""
    return Simulation3D(cfg.lx, cfg.ly, cfg.lz, velocity_set=cfg.velocity_set, collision=cfg.collision,
                        gravity=cfg.gravity, walls=cfg.wall_axes, lid=cfg.lid, mask=mask, backend=cfg.backend,
                        layout=cfg.layout, vl=cfg.vl, precision=cfg.precision, fused=cfg.fused, threads=cfg.threads,
                        strict=cfg.strict, check_every=0, time_block=cfg.time_block,
                        **cfg.parameters)


def lid_speeds(cfg: RunConfig) -> list:
    """The speeds of the run's moving walls (model units)."""
    return [float(np.linalg.norm(u)) for u in (cfg.lid or {}).values()]


def physics3d(cfg: RunConfig) -> dict:
    """The physical numbers of a 3D run in lattice units (as ``lbgen.model.physics.run_numbers``
    for 2D): r, the reference state, nu, c_s, g (with gravity); with a lid: its speed U
    (lattice units), the cavity size L (the lid's axis), Re = U L / nu and Ma = U / c_s."""
    from lbgen.model.physics import (UNITS, gravity_to_lattice, is_thermal, kinematic_viscosity, reynolds,
                                     scale_factor, sound_speed, velocity_to_lattice)
    r = scale_factor(cfg.velocity_set)
    nu = kinematic_viscosity(cfg.collision, dict(cfg.parameters), r=r, T=1.0, rho=1.0)
    c_s = sound_speed(1.0, r=r, thermal=is_thermal(cfg.velocity_set))
    out = {"units": UNITS, "r": r, "rho_ref": 1.0, "T_ref": 1.0, "nu": nu, "c_s": c_s}
    g = float(np.linalg.norm(cfg.gravity))
    if g:
        out["g"] = gravity_to_lattice(g, r)
    speeds = lid_speeds(cfg)
    if speeds and max(speeds) > 0:
        face = max(cfg.lid, key=lambda f: np.linalg.norm(cfg.lid[f]))
        U = velocity_to_lattice(max(speeds), r)
        L = cfg.shape["xyz".index(face[0])]
        out.update({"U": U, "L": L, "Re": reynolds(U, L, nu), "Ma": U / c_s})
    return out


class Run3D(Run):
    """A 3D run folder (``Run3D(cfg).execute()`` or ``Run.resume(dir)``, which picks this class
    for a 3D manifest): the 2D driver's loop with a Simulation3D."""

    def __init__(self, cfg: RunConfig, echo: Callable[[str], None] = print, comm=None, resume: bool = False,
                 overwrite: bool = False):
        if comm is not None and getattr(comm, "size", 1) > 1:
            raise SimulationError(f"a 3D run runs on one process; MPI runs ({comm.size} ranks) are 2D only for now: "
                                  f"run it without mpiexec")
        if cfg.dimension != 3:
            raise SimulationError(f"Run3D runs 3D velocity sets, not {cfg.velocity_set}: use Run")
        super().__init__(cfg, echo=echo, comm=None, resume=resume, overwrite=overwrite)

    @staticmethod
    def _validate(cfg: RunConfig) -> None:
        Run._validate(cfg)
        load_geometry(cfg)                   # dtype and shape: before any file is written

    def _build(self, cfg: RunConfig, comm) -> None:
        mask = load_geometry(cfg)
        cfg = resolve3d(cfg, self.echo, mask)
        fields = SETUPS[cfg.setup].fields(cfg.lx, cfg.ly, lz=cfg.lz, seed=cfg.seed, amplitude=cfg.amplitude,
                                          gravity=cfg.gravity, thermal=False)
        self.cfg = cfg
        self.physics = physics3d(cfg)
        self.sim = make_simulation3d(cfg, mask)
        self.sim.set_fields(**fields)
        self.T_hot = self.T_cold = None
        self.colour_limits = None
        self.output = None
        if cfg.out:
            from lbgen.output import PICTURE_QUANTITIES, RunOutput3D, colour_limits
            self.colour_limits = colour_limits(PICTURE_QUANTITIES, fields, gravity=cfg.gravity, overrides=cfg.clim,
                                               speeds=lid_speeds(cfg))
            walls = cfg.wall_axes or ""
            self.output = RunOutput3D(cfg.out, pictures=cfg.pictures, fields_format=cfg.fields_format,
                                      colour_limits=self.colour_limits, dpi=cfg.dpi, physics=self.physics,
                                      periodic=tuple(a not in walls for a in "xyz"))
        self._reset_counters()

    def _sample(self):
        """One diagnostics sample (the 3D kernel's per-line rows): the guard's and the series
        row's; a bad one runs the full check, which names the first bad site."""
        from lbgen.codegen.diagnostics import healthy, scalars3d
        d = scalars3d(self.sim.diagnostic_rows())
        self.samples += 1
        if not healthy(d):
            self.sim.check_finite()
        return d

    def _device(self) -> dict:
        sim = self.sim
        return {"backend": sim.spec.backend, "layout": sim.program.layout.tag, "precision": sim.spec.precision,
                "kernel_digest": sim.source.digest, "runtime": sim.runtime}
