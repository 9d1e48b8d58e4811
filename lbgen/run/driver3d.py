"""A 3D run (a d3q* velocity set): ``Run3D`` drives a ``lbgen.Simulation3D`` through the same
loop, guards, outputs, checkpoints and resume as a 2D ``Run`` (lbgen.run.driver).

What is 3D here: the initial state (the set-ups' 3D states, ``lbgen.run.setups``), the
construction (``resolve3d``: the layout and VL ``Simulation3D`` would choose, recorded for a
resume; ``make_simulation3d``: walls, lids and the voxel mask in Simulation3D's own forms),
the guard and series sample (the 3D diagnostics kernel, ``lbgen.codegen.diagnostics.scalars3d``),
the outputs (``lbgen.output.RunOutput3D``) and the run's physical numbers (``physics3d``).
The voxel mask of ``--geometry`` is read and checked (dtype, shape) before any file is
written.  Under ``mpiexec -n P`` the run is a ``DistributedSimulation3D`` (``--ranks-grid
PXxPYxPZ`` or auto; ``set_launch_grid``, ``rank_grid``).
"""
from __future__ import annotations

from pathlib import Path
import math
import warnings
from typing import Callable, Optional, Sequence

import numpy as np

from lbgen.codegen.spec import choose_layout
from lbgen.perf import tune
from lbgen.model.catalog import set_entry
from lbgen.run.config import RunConfig
from lbgen.run.construct import resolve_time_block
from lbgen.run.driver import Run
from lbgen.run.setups import RT_T_COLD, RT_T_HOT, SETUPS
from lbgen.simulation.lattice3d import Simulation3D, voxel_mask
from lbgen.simulation.parameters import SimulationError
from lbgen.system.limits import resolve_threads


def _npy_header(path: Path):
    """(shape, dtype, bytes of data after the header) of a .npy file from its header alone, or
    SimulationError naming the file and the reason (a folder, empty, not a .npy file, pickled
    objects, a header numpy cannot read)."""
    where = f"--geometry {path}"
    if path.is_dir():
        raise SimulationError(f"{where}: is a folder, not a .npy voxel mask")
    try:
        size = path.stat().st_size
        with open(path, "rb") as fh:
            if size == 0:
                raise SimulationError(f"{where}: the file is empty (0 bytes), not a .npy voxel mask")
            try:
                version = np.lib.format.read_magic(fh)
            except ValueError:
                raise SimulationError(f"{where}: not a .npy file (it does not start with NumPy's magic string "
                                      f"\\x93NUMPY; a text file?); save the mask with numpy.save") from None
            read = {(1, 0): np.lib.format.read_array_header_1_0}.get(version, np.lib.format.read_array_header_2_0)
            try:
                shape, _fortran, dtype = read(fh)
            except ValueError as e:
                raise SimulationError(f"{where}: damaged .npy header ({e})") from None
            offset = fh.tell()
    except OSError as e:
        from lbgen.system.paths import describe_os_error
        raise SimulationError(f"{where}: cannot read it ({describe_os_error(e, 'the file')})") from None
    if dtype.hasobject:
        raise SimulationError(f"{where}: holds Python objects (a pickled {dtype} array), which lbgen never "
                              f"unpickles; the voxel mask must be a bool or uint8 array")
    return tuple(int(n) for n in shape), dtype, size - offset


def load_geometry(cfg: RunConfig) -> Optional[np.ndarray]:
    """The run's voxel mask (uint8, (LX, LY, LZ)), or None: read from ``--geometry FILE.npy``
    and checked by Simulation3D's rule (bool or uint8 0/1, the lattice's shape), naming the
    file, the shape expected and the one found.  The header is checked first (``_npy_header``:
    dtype, shape against the lattice, size against the memory available): nothing is read
    that the run could not use."""
    if not cfg.geometry:
        return None
    from lbgen.system.limits import available_memory
    path = Path(cfg.geometry)
    if not path.exists():
        raise SimulationError(f"--geometry {path}: no such file")
    shape, dtype, stored = _npy_header(path)
    expected = tuple(cfg.shape)
    if dtype != np.bool_ and dtype != np.uint8:
        raise SimulationError(f"--geometry {path}: a {dtype} array; the voxel mask must be a bool array (True: "
                              f"solid) or a uint8 array of 0 and 1, of shape (LX, LY, LZ) = {expected}")
    if shape != expected:
        raise SimulationError(f"--geometry {path}: shape {shape}; the voxel mask must have the lattice's shape "
                              f"(LX, LY, LZ) = {expected}")
    nbytes = math.prod(shape) * dtype.itemsize
    have = available_memory()
    if have is not None and nbytes > have:
        raise SimulationError(f"--geometry {path}: its {nbytes / 2**30:.3g} GiB do not fit in the "
                              f"{have / 2**30:.3g} GiB of memory available here")
    if stored < nbytes:
        raise SimulationError(f"--geometry {path}: truncated: its header promises {nbytes} bytes of data for shape "
                              f"{shape} {dtype}, the file holds {stored}")
    try:
        mask = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as e:
        raise SimulationError(f"--geometry {path}: cannot read a .npy voxel mask ({e})") from None
    try:
        return voxel_mask(mask, cfg.shape)
    except SimulationError as e:
        raise SimulationError(f"--geometry {path}: {e}") from None


def resolve3d(cfg: RunConfig, echo: Callable[[str], None] = print, mask: Optional[np.ndarray] = None,
              distributed: bool = False, block_depths: Sequence[int] = ()) -> RunConfig:
    """The 3D run description with what construction decides made explicit (recorded in the
    manifest, so a resume builds the same kernels): the set-up's amplitude, the thread count,
    the layout and VL (given; ``--vl auto`` or, left out, the choice ``lbgen tune`` stored for
    this periodic 3D case, for runs without walls, a geometry or MPI; else Simulation3D's default
    for the backend and LZ; under MPI for every Z extent in ``block_depths``, the ranks' blocks
    with their ghosts), the time block (``construct.resolve_time_block``: the depth stored with
    a tuned choice, else ``tune.default_time_block3d``; under MPI, ``distributed``, auto is 1),
    the series cadence (a multiple of the time block), the geometry file's absolute path and the
    digest of its ``mask`` (a resumed run whose file now holds another mask is refused)."""
    changes = {}
    if mask is not None:
        import hashlib
        digest = hashlib.sha256(np.ascontiguousarray(mask, dtype=np.uint8).tobytes()).hexdigest()
        if cfg.geometry_digest not in (None, digest):
            raise SimulationError(f"--geometry {cfg.geometry}: the file holds another voxel mask than the one this "
                                  f"run started with (sha256 {cfg.geometry_digest[:12]}..., now {digest[:12]}...); "
                                  f"restore it to continue the run")
        changes["geometry_digest"] = digest
    if cfg.amplitude is None and not cfg.init:
        changes["amplitude"] = SETUPS[cfg.setup].default_amplitude(cfg.lx)
    changes["threads"] = resolve_threads(cfg.threads, echo)
    layout, vl = cfg.layout, cfg.vl
    # lbgen tune's 3D choices were timed on a periodic box of the whole lattice
    case = dict(lx=cfg.lx, ly=cfg.ly, precision=cfg.precision, collision=cfg.collision, walls=False,
                threads=cfg.threads, lz=cfg.lz, velocity_set=cfg.velocity_set)
    tunable = not cfg.wall_axes and not cfg.geometry and not distributed
    if vl == "auto":
        if not tunable:
            raise SimulationError("--vl auto times the periodic 3D step of the whole lattice (lbgen tune); a run "
                                  "with walls, a geometry or several MPI ranks takes its layout and VL given, or "
                                  "by default when both are left out")
        layout, vl = tune.auto_choice(cfg.backend, layout=layout, **case)
    elif layout is None and vl is None and tunable:
        layout, vl = tune.cached_choice(cfg.backend, **case) or (None, None)
    halo = set_entry(cfg.velocity_set).max_hop
    depth_z = math.gcd(*block_depths) if block_depths else cfg.lz     # a VL dividing it divides every block's
    layout, vl = choose_layout(cfg.backend, depth_z, halo, layout, vl, dimension=3,
                               walls_along_depth="z" in (cfg.wall_axes or ""))
    changes["layout"], changes["vl"] = layout, vl
    changes["time_block"] = depth = resolve_time_block(
        cfg, distributed, (lambda: tune.auto_time_block(cfg.backend, layout, vl, **case)) if tunable else None)
    if cfg.out and not cfg.series_every:      # a multiple of the time block
        from lbgen.output.series import default_series_every
        changes["series_every"] = default_series_every(cfg.steps, depth)
    if cfg.geometry:
        changes["geometry"] = str(Path(cfg.geometry).resolve())
    if cfg.init:                              # absolute: a resume from another folder finds it
        from lbgen.run.construct import init_digest
        changes["init"] = str(Path(cfg.init).resolve())
        changes["init_digest"] = init_digest(cfg)
    return cfg.replace(**changes)


def initial_fields3d(cfg: RunConfig) -> dict:
    """The fields a 3D run starts from: the --init file's (checked: keys, shape, finite values,
    positive rho and T), else its set-up's."""
    if cfg.init:
        from lbgen.run.fieldfile import load_fields
        return load_fields(cfg.init, 3)
    return SETUPS[cfg.setup].fields(cfg.lx, cfg.ly, lz=cfg.lz, seed=cfg.seed, amplitude=cfg.amplitude,
                                    gravity=cfg.gravity, thermal=not set_entry(cfg.velocity_set).isothermal)


def make_simulation3d(cfg: RunConfig, mask: Optional[np.ndarray] = None, comm=None, grid=None):
    """The Simulation3D of a resolved 3D run description; with an MPI communicator `comm` of
    several ranks, this rank's block of a DistributedSimulation3D on `grid` (collective)."""
    common = dict(velocity_set=cfg.velocity_set, collision=cfg.collision, gravity=cfg.gravity, walls=cfg.wall_axes,
                  lid=cfg.lid, mask=mask, backend=cfg.backend, layout=cfg.layout, vl=cfg.vl,
                  precision=cfg.precision, fused=cfg.fused, threads=cfg.threads, strict=cfg.strict, check_every=0,
                  time_block=cfg.time_block, device=cfg.device if cfg.backend == "opencl" else None,
                  **cfg.parameters)
    from lbgen.model.physics import LidMachWarning
    with warnings.catch_warnings():        # a run says it once, on its start line (lbgen run), not per rank
        warnings.simplefilter("ignore", LidMachWarning)
        if comm is not None and comm.size > 1:
            from lbgen.parallel.lattice3d import DistributedSimulation3D
            common.pop("check_every")
            return DistributedSimulation3D(comm, cfg.lx, cfg.ly, cfg.lz, ranks_grid=grid, **common)
        return Simulation3D(cfg.lx, cfg.ly, cfg.lz, **common)


def lid_speeds(cfg: RunConfig) -> list:
    """The speeds of the run's moving walls (model units)."""
    return [float(np.linalg.norm(u)) for u in (cfg.lid or {}).values()]


def reference_speeds(physics: dict) -> list:
    """The flow's reference speed of a run's numbers (``U``: a lid's, a channel's Poiseuille
    centre speed, a wave's amplitude) in model units, for the colour range of its pictures."""
    return [physics["U"] * physics["r"]] if "U" in physics else []


def physics3d(cfg: RunConfig) -> dict:
    """The physical numbers of a 3D run in lattice units (as ``lbgen.model.physics.run_numbers``
    for 2D): r, the reference state (rho = T = 1), nu, kappa and Pr (thermal sets), c_s
    (gamma = 5/3 on thermal sets), g (with gravity); Rayleigh-Taylor: the Atwood number of its
    1.05 / 0.95 contrast and, with gravity along z, t_unit, U_ff, Re, Ma; with a lid: its speed U
    (lattice units), the cavity size L (the lid's axis), Re = U L / nu, Ma = U / c_s and the
    lid transit L / U; a channel: its Poiseuille centre speed, Re, Ma and viscous time; a
    shear wave or Taylor-Green vortex: its amplitude, Re, Ma and decay time
    (``lbgen.model.physics.lid_numbers``, ``channel_numbers``, ``wave_numbers``)."""
    from lbgen.model.physics import (UNITS, channel_numbers, gravity_to_lattice, hermite_order, is_thermal,
                                     kinematic_viscosity, lid_numbers, prandtl, rayleigh_taylor_numbers,
                                     scale_factor, sound_speed, thermal_diffusivity, velocity_to_lattice,
                                     wave_numbers)
    r = scale_factor(cfg.velocity_set)
    params = dict(cfg.parameters)
    thermal = is_thermal(cfg.velocity_set)
    nu = kinematic_viscosity(cfg.collision, params, r=r, T=1.0, rho=1.0)
    out = {"units": UNITS, "r": r, "rho_ref": 1.0, "T_ref": 1.0, "nu": nu}
    if thermal:
        out["kappa"] = thermal_diffusivity(cfg.collision, params, r=r, order=hermite_order(cfg.velocity_set))
        out["Pr"] = prandtl(nu, out["kappa"])
    out["c_s"] = c_s = sound_speed(1.0, r=r, thermal=thermal, dimension=3)
    g = float(np.linalg.norm(cfg.gravity))
    if g:
        out["g"] = gravity_to_lattice(g, r)
    if thermal and cfg.setup == "rayleigh-taylor":      # Z up: gravity across the interface is -g_z
        out.update(rayleigh_taylor_numbers(RT_T_HOT, RT_T_COLD, gravity_to_lattice(-cfg.gravity[2], r), cfg.lx,
                                           nu, c_s))
    speeds = lid_speeds(cfg)
    if speeds and max(speeds) > 0:
        face = max(cfg.lid, key=lambda f: np.linalg.norm(cfg.lid[f]))
        U = velocity_to_lattice(max(speeds), r)
        L = cfg.shape["xyz".index(face[0])]
        out.update(lid_numbers(U, L, nu, c_s))
    elif cfg.setup == "channel" and g and cfg.wall_axes and not cfg.init:
        H = min(cfg.shape["xyz".index(a)] for a in cfg.wall_axes)   # half-way walls: the lattice's width
        out.update(channel_numbers(gravity_to_lattice(g, r), H, nu, c_s))
    elif cfg.setup in ("shear-wave", "taylor-green") and cfg.amplitude and not cfg.init:
        out.update(wave_numbers(velocity_to_lattice(abs(cfg.amplitude), r), cfg.lx, nu, c_s))
    return out


#: ``--ranks-grid`` of a 3D launch (``set_launch_grid``): None for auto, else (PX, PY, PZ)
_GRID3D = None


def set_launch_grid(text, comm) -> None:
    """``--ranks-grid`` of a 3D run: 'auto' or 'PXxPYxPZ' (checked here); a grid other than
    auto (or 1x1x1) needs mpiexec."""
    global _GRID3D
    from lbgen.parallel.decomposition import parse_ranks_grid
    grid = parse_ranks_grid(text, 3)
    if (comm is None or comm.size == 1) and grid not in (None, (1, 1, 1)):
        n = int(np.prod(grid))
        raise SimulationError(f"--ranks-grid {text}: a grid of {n} ranks needs mpiexec -n {n} lbgen ...; this is "
                              f"a single process")
    _GRID3D = grid


def rank_grid(cfg: RunConfig, size: int) -> tuple:
    """(PX, PY, PZ) of a 3D run on `size` ranks (the launch's --ranks-grid, else auto), checked
    before any work: sub-domains at least time block x largest hop thick (walled axes may be
    split; lbgen.parallel.decomposition.rank_grid names the values)."""
    from lbgen.parallel.decomposition import rank_grid as grid_of
    from lbgen.simulation.lattice3d import wall_axes
    depth = resolve_time_block(cfg, distributed=True)
    return grid_of(size, cfg.shape, set_entry(cfg.velocity_set).max_hop, _GRID3D, depth, held=wall_axes(cfg.wall_axes))


def block_depths(cfg: RunConfig, grid) -> list:
    """The Z extents of the ranks' blocks on `grid` (owned planes and, where Z is split, the
    ghost planes of DistributedSimulation3D: time block x largest hop on each side but a wall's)."""
    from lbgen.parallel.decomposition import block_extents
    from lbgen.simulation.lattice3d import wall_faces
    return block_extents(cfg.shape, grid, resolve_time_block(cfg, distributed=True),
                         set_entry(cfg.velocity_set).max_hop, wall_faces(cfg.wall_axes))[2]


class Run3D(Run):
    """A 3D run folder (``Run3D(cfg).execute()`` or ``Run3D.resume(dir)``; `lbgen run --resume` picks this class
    for a 3D manifest): the 2D driver's loop with a Simulation3D; with an MPI communicator of
    several ranks (``mpiexec -n P lbgen run``), each rank's block of a
    ``lbgen.parallel.lattice3d.DistributedSimulation3D`` on the grid ``--ranks-grid`` (checked
    before any work); rank 0 sets up the fields, writes every file from the fields (not the
    populations) and diagnostics rows the ranks send it."""

    DIMENSION = 3

    def __init__(self, cfg: RunConfig, echo: Callable[[str], None] = print, comm=None, resume: bool = False,
                 overwrite: bool = False):
        if cfg.dimension != 3:
            raise SimulationError(f"Run3D runs 3D velocity sets, not {cfg.velocity_set}: use Run")
        if comm is not None and comm.size == 1:
            comm = None
        if cfg.init and not resume:             # the lattice is the --init file's (its headers only)
            from lbgen.parallel.mpi import root_call
            from lbgen.run.fieldfile import inspect_fields
            lx, ly, lz = root_call(comm, lambda: inspect_fields(cfg.init, 3), share=True)   # MPI: one refusal
            cfg = cfg.replace(lx=lx, ly=ly, lz=lz)
        self.grid = (1, 1, 1)
        if comm is not None:
            from lbgen.parallel.mpi import check_same_config
            check_same_config(comm, cfg.to_json())
            self.grid = rank_grid(cfg, comm.size)      # before the run folder is claimed
        super().__init__(cfg, echo=echo, comm=comm, resume=resume, overwrite=overwrite)

    @staticmethod
    def _validate(cfg: RunConfig) -> None:
        Run._validate(cfg)
        load_geometry(cfg)                   # dtype and shape: before any file is written

    def _build(self, cfg: RunConfig, comm) -> None:
        from lbgen.parallel.mpi import root_call
        mask = load_geometry(cfg)
        cfg = root_call(comm, lambda: resolve3d(cfg, self.echo, mask, distributed=comm is not None,
                                                block_depths=block_depths(cfg, self.grid)), share=True)
        fields = root_call(comm, lambda: initial_fields3d(cfg))
        self.cfg = cfg
        self.physics = physics3d(cfg)
        self.sim = make_simulation3d(cfg, mask, comm, self.grid)
        if fields is not None:
            self.sim.set_fields(**fields)
        else:
            self.sim.set_fields()            # MPI ranks > 0: rank 0's fields are scattered
        self.T_hot = self.T_cold = None
        self.colour_limits = None
        self.output = None
        if cfg.out:
            from lbgen.output import PICTURE_QUANTITIES, RunOutput3D, colour_limits

            def open_output():
                self.colour_limits = colour_limits(PICTURE_QUANTITIES, fields, gravity=cfg.gravity,
                                                   overrides=cfg.clim, r=self.physics["r"],
                                                   speeds=lid_speeds(cfg) + reference_speeds(self.physics))
                walls = cfg.wall_axes or ""
                return RunOutput3D(cfg.out, pictures=cfg.pictures, fields_format=cfg.fields_format,
                                   colour_limits=self.colour_limits, dpi=cfg.dpi, physics=self.physics,
                                   time_unit=self.time_unit(),
                                   periodic=tuple(a not in walls for a in "xyz"))
            self.output = root_call(comm, open_output)
        self._reset_counters()

    def _sample(self):
        """One diagnostics sample (the 3D kernel's per-line rows; with MPI the ranks' rows
        combined on rank 0): the guard's and the series row's; a bad one runs the full check,
        which names the first bad site.  The scalars on rank 0, None elsewhere."""
        from lbgen.codegen.diagnostics import scalars3d
        rows = self.sim.diagnostic_rows()
        self.samples += 1
        return self._guarded(scalars3d(rows) if rows is not None else None)

    def _device(self) -> dict:
        sim = self.sim
        info = {"backend": sim.spec.backend, "layout": sim.program.layout.tag, "precision": sim.spec.precision,
                "kernel_digest": sim.source.digest, "runtime": sim.runtime, "device": sim.program.describe()}
        if self.comm is not None:
            info.update(ranks=self.comm.size, ranks_grid="x".join(map(str, self.grid)))
        return info
