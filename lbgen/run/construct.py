"""From a run description to the objects of a run: the initial fields of its set-up, its
``Simulation`` (serial, host + device, or one MPI rank's slab), the host/device split of a
``--hetero`` run, and the description of the kernels a manifest records."""
from __future__ import annotations

from pathlib import Path
from typing import Callable, Optional

from lbgen.codegen.layouts import CLUSTERED
from lbgen.codegen.spec import DEFAULT_VELOCITY_SET, choose_layout
from lbgen.model.catalog import set_entry
from lbgen.run.config import RunConfig
from lbgen.run.fieldfile import load_fields
from lbgen.model.velocity_set import velocity_set as get_velocity_set
from lbgen.simulation.runner import Simulation, SimulationError, Walls
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


def resolve(cfg: RunConfig, shape=None, echo: Callable[[str], None] = print, distributed: bool = False) -> RunConfig:
    """The run description with everything construction decides made explicit, so that the
    manifest records it and a resume rebuilds the same kernels: the lattice size of an
    --init file (``shape``), the set-up's amplitude, the thread count, the layout and VL
    (given, the choice ``lbgen tune`` stored for this machine, ``--vl auto`` timed now, or
    the backend's default), the time block (given; for ``auto`` the depth ``lbgen tune``
    stored, else ``tune.DEFAULT_TIME_BLOCK``; 1 where temporal blocking does not run) and,
    with a run folder, the series and movie-frame cadences."""
    from lbgen.perf import tune
    changes = {}
    if cfg.init:                            # absolute: a resume from another folder finds it
        changes["init"] = str(Path(cfg.init).resolve())
        changes["init_digest"] = init_digest(cfg)
    if shape is not None and (cfg.lx, cfg.ly) != tuple(shape):
        changes["lx"], changes["ly"] = (int(n) for n in shape)
    lx, ly = changes.get("lx", cfg.lx), changes.get("ly", cfg.ly)
    if cfg.amplitude is None and not cfg.init:
        changes["amplitude"] = SETUPS[cfg.setup].default_amplitude(lx)
    changes["threads"] = resolve_threads(cfg.threads, echo)
    layout, vl = cfg.layout, cfg.vl
    walls = cfg.walls is not None
    width = lx
    tuned = cfg.velocity_set == DEFAULT_VELOCITY_SET     # lbgen tune measures the default set's kernels
    if vl == "auto":
        if not tuned:
            raise SimulationError(f"--vl auto tunes the {DEFAULT_VELOCITY_SET} kernels; give the layout and VL of "
                                  f"{cfg.velocity_set} explicitly (or leave both out for the default)")
        layout, vl = tune.auto_choice(cfg.backend, width, ly, cfg.precision, cfg.collision, walls, cfg.threads,
                                      layout=layout)
    elif layout is None and vl is None and tuned and not cfg.hetero:
        layout, vl = tune.cached_choice(cfg.backend, width, ly, cfg.precision, cfg.collision, walls,
                                        cfg.threads) or (None, None)
    halo = set_entry(cfg.velocity_set).max_hop
    if cfg.hetero and layout is None and vl is None:
        pass        # host + device: each region takes its backend's default (the manifest's regions record them)
    else:
        layout, vl = choose_layout(cfg.backend, ly, halo, layout, vl)
        changes["layout"], changes["vl"] = layout, vl
    depth = resolve_time_block(cfg, distributed, lambda: tune.auto_time_block(
        cfg.backend, layout, vl if layout in CLUSTERED else None, lx, ly, cfg.precision, cfg.collision, walls,
        cfg.threads))
    changes["time_block"] = depth
    if cfg.out and not cfg.series_every:   # about 200 rows, a multiple of the time block
        from lbgen.output.series import default_series_every
        changes["series_every"] = default_series_every(cfg.steps, depth)
    if cfg.out and cfg.pictures and not cfg.pictures_every:   # about 100 movie frames
        from lbgen.output.pictures import default_pictures_every
        changes["pictures_every"] = default_pictures_every(cfg.steps, depth)
    return cfg.replace(**changes)


def resolve_time_block(cfg: RunConfig, distributed: bool = False, tuned: Optional[Callable[[], int]] = None) -> int:
    """The time block of a run (2D and 3D): the depth given; 1 where temporal blocking does not
    run (another backend, --hetero, --no-fused) and for ``auto`` under MPI (a depth is given
    there: k H wide halos every k steps, not tuned); for ``auto`` otherwise ``tuned()`` (the
    depth ``lbgen tune`` stored for the case, or its default) or, without ``tuned`` (3D runs
    with walls or a geometry), ``tune.default_time_block3d`` of the set's hop."""
    from lbgen.perf import tune
    depth = cfg.time_block
    if cfg.backend != "c" or cfg.hetero or not cfg.fused or (distributed and depth == "auto"):
        return 1
    if depth == "auto" and cfg.wall_axes and cfg.dimension == 2:
        return 1          # 2D bounce-back walls are not time-blocked (fused_tb refuses them)
    if depth == "auto":
        return tuned() if tuned is not None else tune.default_time_block3d(set_entry(cfg.velocity_set).max_hop)
    return depth


def initial_fields(cfg: RunConfig):
    if cfg.init:
        return load_fields(cfg.init)
    return SETUPS[cfg.setup].fields(cfg.lx, cfg.ly, seed=cfg.seed, amplitude=cfg.amplitude, gravity=cfg.gravity,
                                    walls=cfg.walls, thermal=not get_velocity_set(cfg.velocity_set).isothermal)


def make_simulation(cfg: RunConfig, host_columns: Optional[int] = None, lx: Optional[int] = None,
                    device: bool = True, comm=None) -> Simulation:
    """The Simulation of a config; for host + device runs with `host_columns` M (or cfg's).

    With an MPI communicator `comm` of several ranks: this rank's part of a
    ``lbgen.parallel.simulation.DistributedSimulation`` (collective)."""
    cfg = resolve(cfg, echo=lambda m: None, distributed=comm is not None)   # a no-op once resolved
    walls = Walls(**cfg.walls) if cfg.walls else cfg.wall_axes     # thermal walls, or bounce-back wall axes
    bounce = {"lid": cfg.lid} if cfg.lid else {}
    common = dict(**bounce, layout=cfg.layout, vl=cfg.vl, precision=cfg.precision, collision=cfg.collision,
                  gravity=cfg.gravity, fused=cfg.fused, threads=cfg.threads, strict=cfg.strict, check_every=0,
                  walls=walls, time_block=cfg.time_block, velocity_set=cfg.velocity_set, **cfg.parameters)
    if cfg.device and cfg.backend == "opencl":
        common["backend_options"] = {"device": cfg.device}   # the OpenCL device of a plain OpenCL run
    lx = cfg.lx if lx is None else lx
    if comm is not None:
        from lbgen.parallel.mpi import launch_grid
        from lbgen.parallel.simulation import DistributedSimulation
        common["ranks_grid"] = launch_grid()
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


def resolve_split(cfg: RunConfig, echo: Callable[[str], None] = print, lx: Optional[int] = None) -> int:
    """M for a host + device run: from --split F (2M/LX = F) or the performance model (auto).

    `lx`: the width to split (an MPI rank's slab; default the lattice).  With several ranks
    every side of a slab's device bulk is its own host region, so M is 0 or >= H (the halo
    width) there."""
    from lbgen.perf import split as perfmodel
    width = cfg.lx if lx is None else lx
    H = get_velocity_set(cfg.velocity_set).max_hop
    valid = perfmodel.valid_splits(width, H)
    if lx is not None:
        valid = [M for M in valid if M == 0 or 2 * M == width or (M >= H and width - 2 * M >= H)]
    if cfg.split in (None, "auto"):
        params = perfmodel.measure(lambda w, M, dev: make_simulation(cfg, M, w, dev), width, cfg.ly)
        M = min(valid, key=lambda m: (round(perfmodel.step_time(params, width, cfg.ly, m), 15),
                                      abs(m - perfmodel.balance_split(params, width, cfg.ly))))
        echo(f"performance model: tau_d = {params.tau_d:.3e} s, tau_h = {params.tau_h:.3e} s per site, "
             f"swap {params.t_swap * 1e3:.3f} ms -> M = {M} (balance point M* = "
             f"{perfmodel.balance_split(params, width, cfg.ly):.1f}; 2M/LX = {2 * M / width:.3f}, "
             f"predicted {perfmodel.predicted_mlups(params, width, cfg.ly, M):.1f} MLUPS)")
        return M
    try:
        fraction = float(cfg.split)
    except ValueError:
        raise SimulationError(f"--split {cfg.split!r}: expected 'auto' or a host fraction 2M/LX in [0, 1]") from None
    if not 0 <= fraction <= 1:
        raise SimulationError(f"--split {fraction}: the host fraction 2M/LX must lie in [0, 1]")
    want = fraction * width / 2
    return min(valid, key=lambda M: (abs(M - want), M))


def device_description(sim: Simulation) -> dict:
    info = {"backend": sim.spec.backend, "layout": sim.spec.tag, "precision": sim.spec.precision,
            "kernel_digest": sim.source.digest, "regions": []}
    if sim.nranks > 1:                      # MPI: every rank's regions (global columns)
        info["ranks"] = sim.nranks
        info["rank_regions"] = sim.region_table()
    for region in sim.regions:
        prog = region.program
        entry = {"backend": prog.spec.backend, "layout": prog.layout.tag, "columns": [region.x_start, region.width]}
        entry.update(prog.provenance())
        info["regions"].append(entry)
    return info
