"""From a run description (2D or 3D) to the objects of a run: what construction decides
(``resolve``), the initial fields of its set-up, its lattice (serial, host + device, or one
MPI rank's part; a 3D run's rank grid), the host/device split of a ``--hetero`` run, and the
description of the kernels a manifest records."""
from __future__ import annotations

import math
from pathlib import Path
from typing import Callable, Optional, Sequence

from lbgen.codegen.layouts import CLUSTERED
from lbgen.codegen.spec import DEFAULT_VELOCITY_SET, choose_layout, time_block_walls_refusal
from lbgen.model.catalog import set_entry
from lbgen.run.boundary_options import open_arguments
from lbgen.run.config import RunConfig
from lbgen.run.fieldfile import load_fields
from lbgen.model.velocity_set import velocity_set as get_velocity_set
from lbgen.simulation.runner import Simulation, SimulationError, Walls
from lbgen.run.flows import FLOWS
from lbgen.run.setups import SETUPS
from lbgen.system.limits import resolve_threads


def init_digest(cfg: RunConfig) -> str:
    """The SHA-256 of the run's --init file (part of its identity, lbgen.run.identity); a run
    that started from other content is refused, naming the file."""
    from lbgen.system.cache import file_digest
    try:
        digest = file_digest(cfg.init)
    except OSError as e:
        raise SimulationError(f"--init {cfg.init}: cannot read it ({e.strerror or e})") from None
    if cfg.init_digest not in (None, digest):
        raise SimulationError(f"--init {cfg.init}: the file holds other fields than the ones this run started from "
                              f"(sha256 {cfg.init_digest[:12]}..., now {digest[:12]}...); restore it to continue "
                              f"the run")
    return digest


def resolve(cfg: RunConfig, shape=None, echo: Callable[[str], None] = print, distributed: bool = False,
            mask=None, block_depths: Sequence[int] = ()) -> RunConfig:
    """The run description (2D or 3D) with everything construction decides made explicit, so
    that the manifest records it and a resume rebuilds the same kernels: the lattice size of
    an --init file (``shape``), the set-up's amplitude, the thread count, the layout and VL
    (given, the choice ``lbgen tune`` stored for this machine, ``--vl auto`` timed now, or the
    backend's default; ``_tuned_layout``), the time block (given; for ``auto`` the depth
    ``lbgen tune`` stored, else its default; 1 where temporal blocking does not run:
    ``resolve_time_block``) and, with a run folder, the series and movie-frame cadences (a
    multiple of the time block).  ``mask`` (the --geometry voxel mask, whose digest is
    recorded: a resumed run whose file now holds another mask is refused) and, under MPI,
    ``block_depths`` (the Z extents of the ranks' blocks with their ghosts: the VL divides each)."""
    changes = {}
    if cfg.init:                            # absolute: a resume from another folder finds it
        changes["init"] = str(Path(cfg.init).resolve())
        changes["init_digest"] = init_digest(cfg)
    if shape is not None and tuple(cfg.shape) != tuple(shape):
        changes.update(zip(("lx", "ly", "lz"), (int(n) for n in shape)))
    cfg = cfg.replace(**changes)
    changes = {}
    if mask is not None:
        changes["geometry_digest"] = _geometry_digest(cfg, mask)
    if cfg.amplitude is None and not cfg.init:
        changes["amplitude"] = SETUPS[cfg.setup].default_amplitude(cfg.lx)
    changes["threads"] = resolve_threads(cfg.threads, echo)
    cfg = cfg.replace(**changes)
    layout, vl, auto_depth = _tuned_layout(cfg, distributed, block_depths)
    if layout is not None or vl is not None or not cfg.hetero:
        changes["layout"], changes["vl"] = layout, vl
    # host + device with layout and VL left out: each region takes its backend's default
    # (the manifest's regions record them)
    changes["time_block"] = depth = resolve_time_block(cfg, distributed, auto_depth)
    if cfg.out and not cfg.series_every and cfg.setup in FLOWS:     # the lift's period resolved (St, C_L max)
        from lbgen.model.physics import scale_factor
        from lbgen.run.flows import series_every
        changes["series_every"] = series_every(FLOWS[cfg.setup], cfg.cells_per_diameter,
                                               cfg.inlet_speed / scale_factor(cfg.velocity_set))
    elif cfg.out and not cfg.series_every:   # about 200 rows, a multiple of the time block
        from lbgen.output.series import default_series_every
        changes["series_every"] = default_series_every(cfg.steps, depth)
    if cfg.out and cfg.pictures and not cfg.pictures_every and cfg.dimension == 2:   # about 100 movie frames
        from lbgen.output.pictures import default_pictures_every
        changes["pictures_every"] = default_pictures_every(cfg.steps, depth)
    if cfg.geometry:
        changes["geometry"] = str(Path(cfg.geometry).resolve())
    return cfg.replace(**changes)


def _geometry_digest(cfg: RunConfig, mask) -> str:
    """The SHA-256 of a run's voxel mask (its identity); another mask than the recorded one is refused."""
    import hashlib

    import numpy as np
    digest = hashlib.sha256(np.ascontiguousarray(mask, dtype=np.uint8).tobytes()).hexdigest()
    if cfg.geometry_digest not in (None, digest):
        raise SimulationError(f"--geometry {cfg.geometry}: the file holds another voxel mask than the one this "
                              f"run started with (sha256 {cfg.geometry_digest[:12]}..., now {digest[:12]}...); "
                              f"restore it to continue the run")
    return digest


def _tuned_layout(cfg: RunConfig, distributed: bool, block_depths: Sequence[int]):
    """(layout, vl, the tuned time block or None) of a run: given, ``--vl auto`` (timed now),
    or, both left out, the choice ``lbgen tune`` stored for the case, else the backend's
    default for the fastest axis (``choose_layout``).  What ``lbgen tune`` measures differs by
    dimension: in 2D the default set's kernels (thermal walls or not), in 3D the periodic step
    of the whole lattice; a run with bounce-back walls or a geometry (and a 3D run under MPI)
    is not tuned."""
    from lbgen.perf import tune
    layout, vl = cfg.layout, cfg.vl
    halo = set_entry(cfg.velocity_set).max_hop
    if cfg.dimension == 3:
        case = _tune_case(cfg)
        tunable = _tunable(cfg, distributed)
        if vl == "auto":
            if not tunable:
                raise SimulationError("--vl auto times the periodic 3D step of the whole lattice (lbgen tune); a "
                                      "run with walls, a geometry or several MPI ranks takes its layout and VL "
                                      "given, or by default when both are left out")
            layout, vl = tune.auto_choice(cfg.backend, layout=layout, **case)
        elif layout is None and vl is None and tunable:
            layout, vl = tune.cached_choice(cfg.backend, **case) or (None, None)
        depth_z = math.gcd(*block_depths) if block_depths else cfg.lz   # a VL dividing it divides every block's
        from lbgen.backends import cpu_device
        cpu = layout is None and not cfg.hetero and cpu_device(cfg.backend, cfg.device)
        layout, vl = choose_layout(cfg.backend, depth_z, halo, layout, vl, dimension=3,
                                   walls_along_depth="z" in (cfg.wall_axes or ""), cpu_device=cpu,
                                   thermal_walls=bool(cfg.walls))
        return layout, vl, (lambda: tune.auto_time_block(cfg.backend, layout, vl, **case)) if tunable else None
    walls = cfg.walls is not None
    tuned = _tunable(cfg, distributed)
    if vl == "auto":
        if not tuned:
            raise SimulationError(f"--vl auto tunes the {DEFAULT_VELOCITY_SET} kernels; give the layout and VL of "
                                  f"{cfg.velocity_set} explicitly (or leave both out for the default)")
        layout, vl = tune.auto_choice(cfg.backend, layout=layout, **_tune_case(cfg))
    elif layout is None and vl is None and tuned and not cfg.hetero:
        layout, vl = tune.cached_choice(cfg.backend, **_tune_case(cfg)) or (None, None)
    if not (cfg.hetero and layout is None and vl is None):
        layout, vl = choose_layout(cfg.backend, cfg.ly, halo, layout, vl)
    return layout, vl, lambda: tune.auto_time_block(
        cfg.backend, layout, vl if layout in CLUSTERED else None, cfg.lx, cfg.ly, cfg.precision, cfg.collision,
        walls, cfg.threads)


def _tunable(cfg: RunConfig, distributed: bool = False) -> bool:
    """Whether ``lbgen tune``'s choice applies to a run: in 3D it times the periodic step of the
    whole lattice (no walls, geometry or MPI ranks), in 2D the default set's kernels, periodic or
    with thermal walls (no bounce-back)."""
    if cfg.dimension == 3:
        return not cfg.wall_axes and not cfg.geometry and not distributed
    return cfg.velocity_set == DEFAULT_VELOCITY_SET and not (cfg.wall_axes or cfg.geometry)


def _tune_case(cfg: RunConfig) -> dict:
    """The case ``lbgen tune`` stores a run's choice under (``lbgen.perf.tune``'s key), with the
    OpenCL device of an OpenCL run."""
    case = dict(lx=cfg.lx, ly=cfg.ly, precision=cfg.precision, collision=cfg.collision,
                walls=cfg.dimension == 2 and cfg.walls is not None, threads=cfg.threads,
                device=cfg.device if cfg.backend == "opencl" else None)
    if cfg.dimension == 3:
        case.update(lz=cfg.lz, velocity_set=cfg.velocity_set)
    return case


def tuned_work_group(cfg: RunConfig, distributed: bool = False) -> Optional[int]:
    """The work-group size of a resolved OpenCL run (one device, no --hetero): the one ``lbgen
    tune`` stored for its device, case and layout, else None (the backend's default).  The
    manifest's kernel record names the size a run took."""
    if cfg.backend != "opencl" or cfg.hetero or not _tunable(cfg, distributed):
        return None
    from lbgen.perf import tune
    return tune.tuned_work_group(cfg.backend, cfg.layout, cfg.vl if cfg.layout in CLUSTERED else None,
                                 **_tune_case(cfg))


def resolve_time_block(cfg: RunConfig, distributed: bool = False, tuned: Optional[Callable[[], int]] = None) -> int:
    """The time block of a run (2D and 3D): the depth given; 1 where temporal blocking does not
    run (another backend, --hetero, --no-fused) and for ``auto`` under MPI (a depth is given
    there: k H wide halos every k steps, not tuned); for ``auto`` otherwise ``tuned()`` (the
    depth ``lbgen tune`` stored for the case, or its default) or, without ``tuned`` (3D runs
    with walls or a geometry), ``tune.default_time_block3d`` of the set's hop."""
    from lbgen.perf import tune
    depth = cfg.time_block
    if cfg.backend != "c" or cfg.hetero or not cfg.fused or cfg.streaming == "inplace" or (
            distributed and depth == "auto"):
        return 1
    if depth == "auto" and (cfg.wall_axes or cfg.geometry) and cfg.dimension == 2:
        return 1          # 2D bounce-back walls and masks are not time-blocked (fused_tb refuses them)
    if depth == "auto" and time_block_walls_refusal(cfg.dimension, cfg.wall_axis):
        return 1          # thermal walls across another axis than the last are not time-blocked (fused_tb refuses them)
    if depth == "auto" and (open_arguments(cfg) or (cfg.geometry and not distributed)):
        return 1          # open faces: blocked only when asked (3D, hops of 1; not timed); a body's link kernels run every step
    if depth == "auto":
        return tuned() if tuned is not None else tune.default_time_block3d(set_entry(cfg.velocity_set).max_hop)
    return depth


def initial_fields(cfg: RunConfig) -> dict:
    """The fields a run starts from: the --init file's (checked: keys, shape, finite values,
    positive rho and T), else its set-up's (2D or 3D by the velocity set)."""
    if cfg.init:
        return load_fields(cfg.init, cfg.dimension)
    if cfg.setup in FLOWS:                   # a flow around a body: the inflow through the channel
        return FLOWS[cfg.setup].fields(cfg.cells_per_diameter, cfg.inlet_speed, cfg.re)
    three = {"lz": cfg.lz} if cfg.dimension == 3 else {}
    if cfg.setup == "rayleigh-benard" and cfg.walls:
        from lbgen.run.convection import run_planes
        three["planes"] = run_planes(cfg)
    three["wall_axis"] = cfg.wall_axis              # the thermal set-ups turn with the walls' axis
    return SETUPS[cfg.setup].fields(cfg.lx, cfg.ly, seed=cfg.seed, amplitude=cfg.amplitude, gravity=cfg.gravity,
                                    thermal=not set_entry(cfg.velocity_set).isothermal, walls=cfg.walls, **three)


def initial_slabs(cfg: RunConfig):
    """The set-up's initial fields one slab of X planes at a time, where its state is evaluated so
    (a 3D set-up ``by_slabs``; not an --init file, not a flow around a body): ``slab(x0, x1)`` ->
    the fields of the planes x0 <= x < x1, the values ``initial_fields`` holds there, bit for bit;
    else None.  A run then never holds the lattice's initial fields (40 B a cell in 3D)."""
    if cfg.init or cfg.setup in FLOWS or cfg.dimension != 3 or not SETUPS[cfg.setup].by_slabs:
        return None
    setup = SETUPS[cfg.setup]

    def slab(x0: int, x1: int) -> dict:
        return setup.fields(cfg.lx, cfg.ly, seed=cfg.seed, amplitude=cfg.amplitude, gravity=cfg.gravity,
                            thermal=not set_entry(cfg.velocity_set).isothermal, walls=cfg.walls, lz=cfg.lz,
                            wall_axis=cfg.wall_axis, x_range=(x0, x1))
    return slab


def make_simulation(cfg: RunConfig, host_columns: Optional[int] = None, lx: Optional[int] = None,
                    device: bool = True, comm=None, mask=None, grid=None):
    """The Simulation of a config; for host + device runs with `host_columns` M (or cfg's).

    With an MPI communicator `comm` of several ranks: this rank's part of a distributed
    lattice (collective): ``lbgen.parallel.simulation.DistributedSimulation`` (in 3D on the rank
    grid `grid`).
    Bounce-back walls, lids and the voxel `mask` (--geometry) in the lattice's own forms (2D and 3D)."""
    if cfg.dimension == 3:
        return _make_simulation3d(cfg, mask, comm, grid, host_columns, lx, device)
    cfg = resolve(cfg, echo=lambda m: None, distributed=comm is not None)   # a no-op once resolved
    walls = Walls(**cfg.walls, axis=cfg.wall_axis) if cfg.walls else cfg.wall_axes   # thermal walls, or bounce-back wall axes
    bounce = {k: v for k, v in (("lid", cfg.lid), *_body_args(cfg, mask, comm).items()) if v is not None}
    bounce.update(open_arguments(cfg))                                                 # inlets, outlets, ...
    common = dict(**bounce, layout=cfg.layout, vl=cfg.vl, precision=cfg.precision, storage=cfg.storage,
                  collision=cfg.collision, streaming=cfg.streaming,
                  gravity=cfg.gravity, fused=cfg.fused, threads=cfg.threads, strict=cfg.strict, check_every=0,
                  walls=walls, time_block=cfg.time_block, velocity_set=cfg.velocity_set, **cfg.parameters)
    if cfg.backend == "opencl":   # the OpenCL device of a plain OpenCL run, its tuned work-group size
        options = {"device": cfg.device, "block_size": tuned_work_group(cfg, comm is not None)}
        common["backend_options"] = {k: v for k, v in options.items() if v is not None}
    lx = cfg.lx if lx is None else lx
    if comm is not None:
        from lbgen.parallel.decomposition import launch_grid
        from lbgen.parallel.simulation import DistributedSimulation
        from lbgen.parallel.halo import launch_halo_path
        common.update(ranks_grid=launch_grid(), halo_path=launch_halo_path())
        M = cfg.host_columns if host_columns is None else host_columns
        if cfg.hetero:
            options = {"device": cfg.device} if cfg.device and cfg.hetero == "opencl" else {}
            return DistributedSimulation(comm, lx, cfg.ly, backend=cfg.backend, device_backend=cfg.hetero,
                                         host_columns=M or 0, device_options=options, **common)
        return DistributedSimulation(comm, lx, cfg.ly, backend=cfg.backend, **common)
    if not cfg.hetero:
        return Simulation(lx, cfg.ly, backend=cfg.backend, **common)
    if not device:
        return Simulation(lx, cfg.ly, backend=cfg.backend, **common)
    M = cfg.host_columns if host_columns is None else host_columns
    options = {"device": cfg.device} if cfg.device and cfg.hetero == "opencl" else {}
    return Simulation(lx, cfg.ly, backend=cfg.backend, device_backend=cfg.hetero, host_columns=M or 0,
                      device_options=options, **common)


def _body_args(cfg: RunConfig, mask, comm) -> dict:
    """The lattice's body arguments of a --geometry run: ``bodies`` (a mesh with its wall distances,
    or the mask's labels) and ``body_bc`` (one process or several MPI ranks alike)."""
    if mask is None:
        return {"mask": None}
    if cfg.time_block not in (1, "auto"):
        raise SimulationError(f"--time-block {cfg.time_block}: the link kernels of the --geometry body (its force, "
                              f"--body-bc) run before every step; give --time-block 1 (or leave it out)")
    from lbgen.run.geometry import run_bodies
    return {"bodies": run_bodies(cfg, mask), "body_bc": cfg.body_bc}


def _make_simulation3d(cfg: RunConfig, mask=None, comm=None, grid=None, host_columns=None, lx=None, device=True):
    """The 3D lattice of a resolved 3D run description (make_simulation)."""
    import warnings

    from lbgen.model.physics import LidMachWarning
    # thermal walls across z (or --wall-axis), or bounce-back axes
    walls = Walls(**cfg.walls, axis=cfg.wall_axis) if cfg.walls else cfg.wall_axes
    common = dict(velocity_set=cfg.velocity_set, collision=cfg.collision, gravity=cfg.gravity, walls=walls,
                  lid=cfg.lid, **_body_args(cfg, mask, comm), backend=cfg.backend, layout=cfg.layout, vl=cfg.vl,
                  precision=cfg.precision, storage=cfg.storage, fused=cfg.fused, threads=cfg.threads,
                  strict=cfg.strict, check_every=0, time_block=cfg.time_block, streaming=cfg.streaming,
                  device=cfg.device if cfg.backend == "opencl" else None, **open_arguments(cfg), **cfg.parameters)
    with warnings.catch_warnings():        # a run says it once, on its start line (lbgen run), not per rank
        warnings.simplefilter("ignore", LidMachWarning)
        if comm is not None and comm.size > 1:
            from lbgen.parallel.simulation import DistributedSimulation
            if cfg.hetero:
                raise SimulationError(f"--hetero {cfg.hetero}: a 3D host + device run splits one process's lattice; "
                                      f"under mpiexec ({comm.size} ranks) a 3D run takes one backend per rank")
            from lbgen.parallel.halo import launch_halo_path
            return DistributedSimulation(comm, cfg.lx, cfg.ly, cfg.lz, ranks_grid=grid, halo_path=launch_halo_path(),
                                         **common)
        if cfg.hetero and device:
            options = {"device": cfg.device} if cfg.device and cfg.hetero == "opencl" else {}
            M = cfg.host_columns if host_columns is None else host_columns
            common.update(device_backend=cfg.hetero, host_columns=M or 0, device_options=options, device=None)
        elif tuned_work_group(cfg):
            common["backend_options"] = {"block_size": tuned_work_group(cfg)}
        return Simulation(cfg.lx if lx is None else lx, cfg.ly, cfg.lz, **common)


def resolve_split(cfg: RunConfig, echo: Callable[[str], None] = print, lx: Optional[int] = None) -> int:
    """M for a host + device run: from --split F (2M/LX = F) or the performance model (auto).

    `lx`: the width to split (an MPI rank's slab; default the lattice).  With several ranks
    every side of a slab's device bulk is its own host region, so M is 0 or >= H (the halo
    width) there."""
    from lbgen.perf import split as perfmodel
    width, plane = cfg.lx if lx is None else lx, math.prod(cfg.shape[1:])     # the sites of one plane of X
    H = get_velocity_set(cfg.velocity_set).max_hop
    valid = perfmodel.valid_splits(width, H)
    if lx is not None:
        valid = [M for M in valid if M == 0 or 2 * M == width or (M >= H and width - 2 * M >= H)]
    if cfg.split in (None, "auto"):
        params = perfmodel.measure(lambda w, M, dev: make_simulation(cfg, M, w, dev), width, plane)
        M = min(valid, key=lambda m: (round(perfmodel.step_time(params, width, plane, m), 15),
                                      abs(m - perfmodel.balance_split(params, width, plane))))
        echo(f"performance model: tau_d = {params.tau_d:.3e} s, tau_h = {params.tau_h:.3e} s per site, "
             f"swap {params.t_swap * 1e3:.3f} ms -> M = {M} (balance point M* = "
             f"{perfmodel.balance_split(params, width, plane):.1f}; 2M/LX = {2 * M / width:.3f}, "
             f"predicted {perfmodel.predicted_mlups(params, width, plane, M):.1f} MLUPS)")
        return M
    try:
        fraction = float(cfg.split)
    except ValueError:
        raise SimulationError(f"--split {cfg.split!r}: expected 'auto' or a host fraction 2M/LX in [0, 1]") from None
    if not 0 <= fraction <= 1:
        raise SimulationError(f"--split {fraction}: the host fraction 2M/LX must lie in [0, 1]")
    want = fraction * width / 2
    return min(valid, key=lambda M: (abs(M - want), M))


def device_description(sim, grid=None) -> dict:
    """The kernels of a run for its manifest: backend, layout, precision, kernel digest and, in
    2D, the regions (host + device) of every rank; in 3D (one program per rank) the runtime,
    the device and, under MPI, the rank grid."""
    if sim.spec.dimension == 3:
        info = {"backend": sim.spec.backend, "layout": sim.program.layout.tag, "precision": sim.spec.precision,
                "storage": sim.program.codec.format.name, "streaming": sim.streaming, "kernel_digest": sim.source.digest, "runtime": sim.runtime, "device": sim.program.describe()}
        provenance = sim.program.provenance()     # CUDA's runtime, OpenCL's work-group and build options
        info.update({k: provenance[k] for k in ("cuda_runtime", "work_group", "build_options") if provenance.get(k)})
        if sim.nranks > 1:
            info.update(ranks=sim.nranks, ranks_grid="x".join(map(str, grid)), halo_path=sim.halo_path,
                        halo_path_reason=sim.halo_path_reason)
        elif len(sim.regions) > 1:          # host + device
            info["regions"] = sim.region_table()
        return info
    info = {"backend": sim.spec.backend, "layout": sim.spec.tag, "precision": sim.spec.precision,
            "storage": sim.program.codec.format.name, "streaming": sim.streaming, "kernel_digest": sim.source.digest, "regions": []}
    if sim.nranks > 1:                      # MPI: every rank's regions (global columns)
        info.update(ranks=sim.nranks, rank_regions=sim.region_table(), halo_path=sim.halo_path,
                    halo_path_reason=sim.halo_path_reason)
    for region in sim.regions:
        prog = region.program
        entry = {"backend": prog.spec.backend, "layout": prog.layout.tag, "columns": [region.x_start, region.width]}
        entry.update(prog.provenance())
        info["regions"].append(entry)
    return info


def kernel_calls(sim) -> dict:
    """The manifest's kernel calls of this rank so far: {entry point: calls}, summed over its
    programs' logs (``Program.calls``; a step with thermal walls is one fused_walls, or one
    fused_tb a time block)."""
    local = getattr(sim, "sim", sim)                 # an MPI rank's own Simulation
    total: dict = {}
    for program in [r.program for r in getattr(local, "regions", ())] or [local.program]:
        for name, n in program.calls.items():
            total[name] = total.get(name, 0) + int(n)
    return dict(sorted(total.items()))


def gpu_runtime_note(sim) -> str:
    """The run's start line's note of the Python GPU runtime of its CUDA programs on this rank
    (' through pycuda 2026.1'; '' for none), from their provenance (the manifest's ``cuda_runtime``)."""
    local = getattr(sim, "sim", sim)                 # an MPI rank's own Simulation
    programs = [r.program for r in getattr(local, "regions", ())] or [local.program]
    labels = sorted({p.provenance().get("cuda_runtime") for p in programs} - {None})
    return f" through {', '.join(labels)}" if labels else ""


#: ``--ranks-grid`` of a 3D launch (``set_launch_grid3d``): None for auto, else (PX, PY, PZ)
_GRID3D = None


def set_launch_grid3d(text, comm) -> None:
    """``--ranks-grid`` of a 3D run: 'auto' or 'PXxPYxPZ' (checked here); a grid other than
    auto (or 1x1x1) needs mpiexec.  (2D runs: ``lbgen.parallel.decomposition.set_launch_grid``.)"""
    global _GRID3D
    from lbgen.parallel.decomposition import parse_ranks_grid
    grid = parse_ranks_grid(text, 3)
    if (comm is None or comm.size == 1) and grid not in (None, (1, 1, 1)):
        n = math.prod(grid)
        raise SimulationError(f"--ranks-grid {text}: a grid of {n} ranks needs mpiexec -n {n} lbgen ...; this is "
                              f"a single process")
    _GRID3D = grid


def rank_grid(cfg: RunConfig, size: int) -> tuple:
    """(PX, PY, PZ) of a 3D run on `size` ranks (the launch's --ranks-grid, else auto), checked
    before any work: sub-domains at least time block x largest hop thick (walled axes may be
    split; lbgen.parallel.decomposition.rank_grid names the values)."""
    from lbgen.parallel.decomposition import rank_grid as grid_of
    from lbgen.simulation.boundaries import wall_axes
    depth = resolve_time_block(cfg, distributed=True)
    return grid_of(size, cfg.shape, set_entry(cfg.velocity_set).max_hop, _GRID3D, depth, held=wall_axes(cfg.wall_axes))


def block_depths(cfg: RunConfig, grid) -> list:
    """The Z extents of the ranks' blocks of a 3D run on `grid` (owned planes and, where Z is
    split, the ghost planes of DistributedSimulation: time block x largest hop on each side but
    a wall's)."""
    from lbgen.parallel.decomposition import block_extents
    from lbgen.simulation.boundaries import wall_faces
    if grid is None:
        return []
    return block_extents(cfg.shape, grid, resolve_time_block(cfg, distributed=True),
                         set_entry(cfg.velocity_set).max_hop, wall_faces(cfg.wall_axes))[2]
