"""`lbgen model`: the host + device and the multi-rank performance models (registered on
the `lbgen` group in lbgen/cli.py)."""
from __future__ import annotations

import json

import click
import numpy as np

from lbgen.cli.common import FiniteFloatRange, UserError, friendly, vl_option
from lbgen.cli.model_gpu import GPU_BACKENDS, gpu_given, gpu_options, model_gpu
from lbgen.system.limits import MAX_MODEL_RANKS


# --- model -------------------------------------------------------------------------------
@click.command(short_help="Performance models: host + device split, or MPI ranks.")
@click.option("--lx", type=click.IntRange(min=1), default=256, show_default=True)
@click.option("--ly", type=click.IntRange(min=1), default=1024, show_default=True)
@click.option("--hetero", type=click.Choice(["opencl", "cuda"]), default="opencl", show_default=True,
              help="The device backend; the host backend is --backend.")
@click.option("--backend", default="c", show_default=True)
@click.option("--collision", default="bgk", show_default=True)
@click.option("--precision", default="double", show_default=True)
@click.option("--layout", default=None)
@click.option("--vl", default=None)
@click.option("--walls", is_flag=True, help="Model the walled step (propagate, bc, collide).")
@click.option("--device", default=None, help="OpenCL device ('P:D' or a name).")
@click.option("--steps", type=click.IntRange(min=1), default=5, show_default=True, help="Steps per micro-benchmark.")
@click.option("--measure", "measure_points", type=click.IntRange(min=0), default=0,
              help="Also run the full lattice at this many splits and show measured MLUPS beside the model.")
@click.option("--plot", type=click.Path(dir_okay=False), default=None, help="PNG of MLUPS against 2M/LX (paper Fig. 8).")
@click.option("--ranks", type=click.IntRange(min=1), default=None,
              help="Multi-rank model instead: predicted step time and MLUPS for N = 1..RANKS MPI ranks "
                   "(measured beside it when run under mpiexec).")
@click.option("--latency", type=FiniteFloatRange(min=0), default=None, help="With --ranks: message latency L [s] (default: "
              "measured by a ring shift under mpiexec, else 1e-6).")
@click.option("--bandwidth", type=FiniteFloatRange(min=0, min_open=True), default=None, help="With --ranks: bandwidth B [bytes/s] (default: "
              "measured under mpiexec, else 5e9).")
@click.option("--ranks-grid", default=None, help="The Cartesian step model (seed 002) for a PXxPY grid of ranks "
              "(auto under mpiexec: MPI_Dims_create): faces, messages and bytes per step, T_step = comm + "
              "3 Q 8 N / M, measured beside it under mpiexec -n PX*PY, and a weak/strong scaling table.")
@click.option("--time-block", "time_block", type=click.IntRange(min=1), default=1, show_default=True,
              help="With --ranks-grid: k H wide halos every k steps (multi-halo exchange, seed 004).")
@click.option("--memory-bandwidth", type=FiniteFloatRange(min=0, min_open=True), default=None,
              help="With --ranks-grid: M [bytes/s] of a node (default: measured, the kernels' Q + Q stream copy).")
@click.option("--ranks-per-node", type=click.IntRange(min=1), default=None,
              help="With --ranks-grid: p, ranks sharing a node's M (default: the ranks of this launch, or PX*PY).")
@click.option("--latency-inter", type=FiniteFloatRange(min=0), default=None,
              help="With --ranks-grid: L_e [s] between nodes (default: --latency).")
@click.option("--bandwidth-inter", type=FiniteFloatRange(min=0, min_open=True), default=None,
              help="With --ranks-grid: B_e [bytes/s] between nodes (default: --bandwidth).")
@click.option("--max-ranks", type=click.IntRange(min=1), default=4096, show_default=True,
              help=f"With --ranks-grid: the scaling table's largest rank count (at most {MAX_MODEL_RANKS}, "
                   f"lbgen.parallel.model.MAX_MODEL_RANKS; the table's cost grows with it).")
@click.option("--scaling-plot", type=click.Path(dir_okay=False), default=None,
              help="With --ranks-grid: PNG of the weak and strong scaling prediction.")
@click.option("--lz", type=click.IntRange(min=1), default=None,
              help="With --ranks-grid PXxPYxPZ: a 3D lattice (D3Q19).")
@click.option("--json", "as_json", is_flag=True)
@gpu_options
@friendly
def model(lx, ly, hetero, backend, collision, precision, layout, vl, walls, device, steps, measure_points, plot,
          ranks, latency, bandwidth, ranks_grid, time_block, memory_bandwidth, ranks_per_node,
          latency_inter, bandwidth_inter, max_ranks, scaling_plot, lz, as_json, **gpu):
    """The host + device performance model (paper Eq. 4-8): predicted MLUPS against the split.

    Measures tau_d (device), tau_h (host) and the halo swap with short runs, solves
    T_acc(M*) = T_host(M*) + T_mpi(M*), prints the curve and, with --measure K, K measured
    points beside it.

    With --ranks N: the multi-rank model (slabs along X, seeds 002/003): per-rank compute
    from tau of --backend measured on each slab width, plus 2 halo messages per step,
    T = L + bytes/B from a ring-shift fit (under mpiexec) or --latency/--bandwidth.

    With --ranks-grid and a device --backend (opencl, cuda): seed 003's
    data-movement model of device ranks, each halo path (staged through the host, or device
    buffers to MPI) predicted, the faster chosen, each measured beside it under mpiexec."""
    from lbgen.perf import split as perfmodel
    from lbgen.run.config import RunConfig
    from lbgen.run.construct import make_simulation
    grid_only = {"--time-block": _given("time_block"), "--memory-bandwidth": memory_bandwidth,
                 "--ranks-per-node": ranks_per_node, "--latency-inter": latency_inter,
                 "--bandwidth-inter": bandwidth_inter, "--max-ranks": _given("max_ranks"),
                 "--scaling-plot": scaling_plot, "--lz": lz}
    if ranks_grid is not None:
        given = [n for n, v in (("--ranks", ranks), ("--measure", measure_points), ("--plot", plot),
                                ("--hetero", _given("hetero"))) if v]
        if given:
            raise UserError(f"{', '.join(given)}: not options of the Cartesian model (--ranks-grid {ranks_grid}); "
                            f"it takes --time-block, --latency, --bandwidth, --memory-bandwidth, --ranks-per-node, "
                            f"--latency-inter, --bandwidth-inter, --max-ranks and --scaling-plot")
        stray = gpu_given(gpu) if backend not in GPU_BACKENDS else []
        if stray:
            raise UserError(f"{', '.join(stray)}: option(s) of the device ranks' model: add --backend "
                            f"{'|'.join(GPU_BACKENDS)} (--backend {backend} keeps its lattice on the host)")
        return _model_grid(lx, ly, backend, collision, precision, layout, vl, steps, ranks_grid, time_block,
                           latency, bandwidth, memory_bandwidth, ranks_per_node, latency_inter, bandwidth_inter,
                           max_ranks, scaling_plot, as_json, lz=lz, gpu=gpu)
    stray = [n for n, v in grid_only.items() if v] + gpu_given(gpu)
    if stray:
        raise UserError(f"{', '.join(stray)}: option(s) of the Cartesian model: add --ranks-grid PXxPY"
                        + (" and a device --backend" if gpu_given(gpu) else ""))
    _check_model_options(ranks, latency, bandwidth, measure_points, plot, hetero_given=_given("hetero"))
    if ranks is not None:
        return _model_ranks(lx, ly, backend, collision, precision, layout, vl, walls, steps, ranks, latency,
                            bandwidth, as_json)
    cfg = RunConfig(setup="uniform-noise", lx=lx, ly=ly, collision=collision, precision=precision, backend=backend,
                    layout=layout, vl=vl_option(vl), hetero=hetero, device=device,
                    walls={"T_bottom": 1.0, "T_top": 1.0, "adiabatic_bottom": False, "adiabatic_top": False}
                    if walls else None)

    def make(width, M, dev):
        sim = make_simulation(cfg, M, width, dev)
        from lbgen.run.setups import uniform_noise
        sim.set_fields(**uniform_noise(width, ly, amplitude=0.01))
        return sim

    params = perfmodel.measure(make, lx, ly, steps=steps)
    m_star = perfmodel.optimal_split(params, lx, ly)
    measured = None
    if measure_points:
        Ms = perfmodel.valid_splits(lx)
        pick = sorted({Ms[int(i)] for i in np.linspace(0, len(Ms) - 1, measure_points)} | {m_star})
        import sys

        from tqdm import tqdm
        with tqdm(total=len(pick), unit="split", desc="measure", disable=not sys.stderr.isatty(),
                  leave=False) as bar:
            measured = perfmodel.measure_curve(make, lx, ly, pick, steps=steps, progress=lambda M: bar.update(1))
    if plot:
        perfmodel.plot(params, lx, ly, plot, measured, title=f"{backend} host + {hetero} device, {lx} x {ly}")
    if as_json:
        click.echo(json.dumps({"parameters": params.to_json(), "M_best": m_star,
                               "M_balance": perfmodel.balance_split(params, lx, ly), "lx": lx, "ly": ly,
                               "predicted": {str(M): perfmodel.predicted_mlups(params, lx, ly, M)
                                             for M in perfmodel.valid_splits(lx)},
                               "measured": {str(k): v for k, v in (measured or {}).items()}}, indent=2))
    else:
        click.echo(perfmodel.table(params, lx, ly, measured))
        click.echo(f"balance point M* = {perfmodel.balance_split(params, lx, ly):.2f}; best valid split M = {m_star}: "
                   f"host fraction 2M/LX = {2 * m_star / lx:.3f} (what --split auto uses)")
        if plot:
            click.echo(f"plot written to {plot}")


def _given(name: str) -> bool:
    """Whether option `name` of the running command came from the command line (not its default)."""
    ctx = click.get_current_context(silent=True)
    if ctx is None:
        return False
    source = ctx.get_parameter_source(name)
    return source is not None and source.name not in ("DEFAULT", "DEFAULT_MAP")


def _check_model_options(ranks, latency, bandwidth, measure_points, plot, hetero_given=False) -> None:
    """Options of one model given to the other are refused, not ignored (before any measurement)."""
    if ranks is None:
        given = [n for n, v in (("--latency", latency), ("--bandwidth", bandwidth)) if v is not None]
        if given:
            raise UserError(f"{' and '.join(given)} {'apply' if len(given) > 1 else 'applies'} to the multi-rank "
                            f"model only: add --ranks N (or leave {' and '.join(given)} out)")
    else:
        given = [n for n, v in (("--measure", measure_points), ("--plot", plot), ("--hetero", hetero_given)) if v]
        if given:
            raise UserError(f"{', '.join(given)}: the host + device model's option(s); the multi-rank model "
                            f"(--ranks {ranks}) takes --latency and --bandwidth instead")


def _model_ranks(lx, ly, backend, collision, precision, layout, vl, walls, steps, ranks, latency, bandwidth,
                 as_json):
    from lbgen.parallel import mpi
    from lbgen.parallel import model as mpi_model
    from lbgen.run.config import RunConfig
    from lbgen.run.construct import make_simulation
    from lbgen.run.setups import uniform_noise
    if ranks < 1:
        raise UserError(f"--ranks {ranks} must be >= 1")
    comm = mpi.world()
    if comm is not None:
        mpi.install_excepthook(comm)
    root = comm is None or comm.rank == 0
    cfg = RunConfig(setup="uniform-noise", lx=lx, ly=ly, collision=collision, precision=precision, backend=backend,
                    layout=layout, vl=vl_option(vl),
                    walls={"T_bottom": 1.0, "T_top": 1.0, "adiabatic_bottom": False, "adiabatic_top": False}
                    if walls else None)
    if min(ranks, lx // 3) < ranks:
        raise UserError(f"--ranks {ranks}: LX={lx} allows at most {lx // 3} ranks (every slab needs >= 3 columns)")

    def make(width):
        sim = make_simulation(cfg, lx=width)
        sim.set_fields(**uniform_noise(width, ly, amplitude=0.01))
        return sim
    # tau per slab width: measured by rank 0 alone (the others wait), then shared
    widths = sorted({-(-lx // n) for n in range(1, ranks + 1)})
    taus = mpi.root_call(comm, lambda: {w: mpi_model.measure_tau(make, w, ly, steps) for w in widths}, share=True)
    itemsize = 8 if precision == "double" else 4
    cm, source = mpi_model.comm_parameters(comm, 1 if comm is None else comm.size, latency, bandwidth)
    rows = []
    for n in range(1, ranks + 1):
        row = mpi_model.predict(taus[-(-lx // n)], lx, ly, n, cm, itemsize=itemsize)
        row["tau"] = taus[-(-lx // n)]
        row["measured_mlups"] = None
        if comm is not None and n <= comm.size:
            t = mpi_model.measure_ranks(comm, lambda sub: _distributed(cfg, sub), n, steps=steps)
            row["measured_mlups"] = lx * ly / t / 1e6
            row["measured_t_step"] = t
        rows.append(row)
    if not root:
        return
    if as_json:
        click.echo(json.dumps({"lx": lx, "ly": ly, "communication": cm.to_json(), "communication_source": source,
                               "halo_bytes": mpi_model.halo_bytes(ly, itemsize=itemsize),
                               "ranks": rows}, indent=2))
        return
    note = (f"communication parameters: {source}" + ("" if comm is not None else
            "; run under 'mpiexec -n N lbgen model --ranks N' to measure them and the real step time"))
    click.echo(mpi_model.rank_table(rows, cm, lx, ly, note))


def _distributed(cfg, comm):
    from lbgen.run.construct import make_simulation
    from lbgen.run.setups import uniform_noise
    sim = make_simulation(cfg, comm=comm)
    sim.set_fields(**(uniform_noise(cfg.lx, cfg.ly, amplitude=0.01) if comm.rank == 0 else {}))
    return sim


def _model_grid(lx, ly, backend, collision, precision, layout, vl, steps, ranks_grid, depth, latency, bandwidth,
                memory_bandwidth, ranks_per_node, latency_inter, bandwidth_inter, max_ranks, scaling_plot, as_json,
                lz=None, gpu=None):
    """`lbgen model --ranks-grid`: seed 002's step model for a Cartesian grid (2D, or 3D with
    --lz: D3Q19 through ``DistributedSimulation``), measured beside it under mpiexec (step
    time, and the messages and bytes every rank sent, counted by the exchange)."""
    from lbgen.model.velocity_set import velocity_set
    from lbgen.parallel import decomposition, mpi
    from lbgen.parallel import model as mpi_model
    from lbgen.run.config import RunConfig
    comm = mpi.world()
    if comm is not None:
        mpi.install_excepthook(comm)
    size = 1 if comm is None else comm.size
    shape = (lx, ly) if lz is None else (lx, ly, lz)
    grid = decomposition.parse_ranks_grid(ranks_grid, len(shape))
    if grid is None:
        if comm is None:
            raise UserError("--ranks-grid auto needs mpiexec -n P (it is MPI_Dims_create of P); give the grid")
        grid = mpi_model.dims_create(size, len(shape))
    P = int(np.prod(grid))
    name = "x".join(map(str, grid))
    try:                                  # bounded work: before anything is measured or built
        mpi_model.check_model_ranks(max_ranks, "--max-ranks")
        mpi_model.check_model_ranks(P, f"--ranks-grid {name}")
    except ValueError as e:
        raise UserError(str(e)) from None
    if comm is not None and P != size:
        raise UserError(f"--ranks-grid {name} has {P} ranks but mpiexec started {size}")
    cfg = RunConfig(setup="uniform-noise", lx=lx, ly=ly, collision=collision, precision=precision, backend=backend,
                    layout=layout, vl=vl_option(vl), time_block=depth)
    vs = velocity_set(cfg.velocity_set if lz is None else "d3q19")
    H, Q, itemsize = vs.max_hop, vs.Q, 8 if precision == "double" else 4
    decomposition.rank_grid(P, shape, H, grid, depth)          # too thin: refused before any measurement
    if backend in GPU_BACKENDS:                   # device ranks: seed 003's halo paths
        return model_gpu(comm, cfg, shape, grid, depth, steps, (latency, bandwidth, ranks_per_node, latency_inter,
                                                                bandwidth_inter), gpu or {}, memory_bandwidth,
                         max_ranks, scaling_plot, as_json, vs)
    sweep = backend == "c" and depth > 1          # the C backend's fused_tb: k steps per sweep through cache

    def plan(c, sizes=shape, g=grid):
        return mpi_model.rank_exchange(sizes, g, c, depth, Q, H, itemsize)
    root = comm is None or comm.rank == 0
    cm, source = mpi_model.comm_parameters(comm, P, latency, bandwidth)
    sources = {"communication": source}
    L, B = cm.latency, cm.bandwidth
    p = ranks_per_node or (size if comm is not None else P)
    if memory_bandwidth is None:
        from lbgen.perf.machine import measure_bandwidth
        M = mpi.root_call(comm, lambda: measure_bandwidth(64 << 20, threads=min(p, P), repeat=3,
                                                          streams=Q)["streaming"]["gbs"] * 1e9, share=True)
        sources["memory"] = f"copy with {Q} + {Q} streams, {min(p, P)} threads"
    else:
        M = memory_bandwidth
        sources["memory"] = "given"
    machine = mpi_model.Machine(L, B, M, p, latency_inter, bandwidth_inter)
    predicted = mpi_model.predict_blocks(shape, grid, machine, depth, plan, Q, itemsize, sweep=sweep)
    measured = None
    if comm is not None:
        measured = _measure_grid(comm, cfg, shape, grid, depth, steps, plan)
    elif P == 1:                 # one rank: the plain simulation's step time (no messages)
        from lbgen.perf.timing import time_steps
        sim = _single(cfg, shape)
        if len(shape) == 2:
            t = time_steps(sim, steps)
        else:                                # Simulation: its kernels return when done (C runtime)
            import time
            sim.step(1)                      # warm-up
            samples = []
            for _ in range(3):
                t0 = time.perf_counter()
                sim.step(steps)
                samples.append((time.perf_counter() - t0) / steps)
            t = float(np.median(samples))
        measured = {"t_step": t, "mlups": int(np.prod(shape)) / t / 1e6, "steps": steps, "exchanges": 0,
                    "ranks": [], "counts_agree": True}
    block = tuple(n // g for n, g in zip(shape, grid))
    extra = {"sweep": sweep} if lz is None else {"lz": block[2], "halo": H, "sweep": sweep}
    table = mpi_model.scaling_table(machine, block[0], block[1], depth, max_ranks, Q, itemsize, **extra)
    extra = {"sweep": sweep} if lz is None else {"lz": lz, "halo": H, "sweep": sweep}
    strong = mpi_model.scaling_table(machine, lx, ly, depth, max_ranks, Q, itemsize, **extra)["strong"]
    table = {"weak": table["weak"], "strong": strong}
    if not root:
        return
    if scaling_plot:
        mpi_model.plot_scaling(table, scaling_plot, title=f"model: weak {' x '.join(map(str, block))} per rank, "
                               f"strong {' x '.join(map(str, shape))}, k = {depth}")
    ex = plan((0,) * len(grid))
    if as_json:
        click.echo(json.dumps({"lx": lx, "ly": ly, "lz": lz, "grid": list(grid), "time_block": depth,
                               "velocity_set": vs.name, "machine": machine.to_json(), "sources": sources,
                               "predicted": predicted, "exchange": ex, "measured": measured, "scaling": table},
                              indent=2))
        return
    click.echo(_grid_report(shape, grid, depth, machine, sources, predicted, measured, table, ex, vs.name))
    if scaling_plot:
        click.echo(f"plot written to {scaling_plot}")


def _single(cfg, shape):
    """One process's simulation of the model's case (uniform noise; 3D: D3Q19 at rest + noise)."""
    from lbgen.run.setups import uniform_noise
    if len(shape) == 2:
        from lbgen.run.construct import make_simulation
        sim = make_simulation(cfg.replace(time_block=1))
        sim.set_fields(**uniform_noise(*shape, amplitude=0.01))
        return sim
    from lbgen.simulation.runner import Simulation
    sim = Simulation(*shape, velocity_set="d3q19", collision=cfg.collision, precision=cfg.precision,
                       backend=cfg.backend)
    sim.set_fields(*_fields3d(shape))
    return sim


def _fields3d(shape):
    rng = np.random.default_rng(0)
    return (1.0 + 0.01 * rng.standard_normal(shape), 0.01 * rng.standard_normal(shape), 0.0, 0.0)


def _measure_grid(comm, cfg, shape, grid, depth, steps, plan):
    """Seconds per step of the distributed run (slowest rank) and, per rank, the messages and bytes
    its exchange counted against the model's `plan` (collective; the result on every rank)."""
    from mpi4py import MPI

    from lbgen.parallel import decomposition
    if len(shape) == 2:
        decomposition.set_launch_grid("x".join(map(str, grid)), comm)
        sim = _distributed(cfg, comm)
    else:
        from lbgen.parallel.simulation import DistributedSimulation
        sim = DistributedSimulation(comm, *shape, ranks_grid=grid, time_block=depth, velocity_set="d3q19",
                                    collision=cfg.collision, precision=cfg.precision, backend=cfg.backend)
        if comm.rank == 0:
            sim.set_fields(*_fields3d(shape))
        else:
            sim.set_fields()
    sim.step(depth)                         # warm-up: one exchange
    sim.messages.clear()
    n = steps * depth
    comm.Barrier()
    t0 = MPI.Wtime()
    sim.step(n)
    t = comm.allreduce((MPI.Wtime() - t0) / n, op=MPI.MAX)
    one = plan(tuple(sim.coords))
    exchanges = -(-n // depth)
    mine = {"rank": comm.rank, "coords": list(sim.coords), "counted": dict(sim.messages),
            "predicted": {k: v * exchanges for k, v in one.items() if k.endswith(("messages", "bytes")) and v}}
    ranks = comm.allgather(mine)
    return {"t_step": t, "mlups": int(np.prod(shape)) / t / 1e6, "steps": n, "exchanges": exchanges,
            "ranks": ranks, "counts_agree": all(r["counted"] == r["predicted"] for r in ranks)}


def _grid_report(shape, grid, depth, machine, sources, predicted, measured, table, ex, set_name) -> str:
    axes = "xyz"[:len(grid)]
    sent = " and ".join(f"{ex[f'{a} messages']} {a.upper()} message(s) ({ex[f'{a} bytes']} bytes)" for a in axes)
    lines = [f"machine: L_a = {machine.latency * 1e6:.2f} us, B_a = {machine.bandwidth / 1e9:.3f} GB/s "
             f"({sources['communication']}); M = {machine.memory_bandwidth / 1e9:.2f} GB/s ({sources['memory']}); "
             f"p = {machine.ranks_per_node} ranks per node"
             + ("" if machine.latency_inter is None and machine.bandwidth_inter is None else
                f"; L_e = {(machine.latency_inter or machine.latency) * 1e6:.2f} us, "
                f"B_e = {(machine.bandwidth_inter or machine.bandwidth) / 1e9:.3f} GB/s"),
             f"{set_name}, grid {'x'.join(map(str, grid))} on {' x '.join(map(str, shape))}, time block {depth}: "
             f"rank 0 computes {ex['computed']} sites for {ex['owned']} owned (extra halo work "
             f"{100 * predicted['extra_work']:.1f}%); every {depth} step(s) it sends {sent}: "
             f"{predicted['messages_per_step']:.3g} messages, {predicted['bytes_per_step']:.0f} bytes per step",
             f"{'':>10} {'T_comm [ms]':>12} {'T_calc [ms]':>12} {'T_step [ms]':>12} {'MLUPS':>10}",
             f"{'model':>10} {predicted['t_comm'] * 1e3:12.4f} {predicted['t_calc'] * 1e3:12.4f} "
             f"{predicted['t_step'] * 1e3:12.4f} {predicted['mlups']:10.2f}"]
    if measured is not None:
        err = (predicted["t_step"] - measured["t_step"]) / measured["t_step"]
        lines.append(f"{'measured':>10} {'':>12} {'':>12} {measured['t_step'] * 1e3:12.4f} {measured['mlups']:10.2f}"
                     f"   (model error {100 * err:+.1f}% in T_step over {measured['steps']} steps)")
        if measured["ranks"]:
            lines.append(f"messages counted by the exchange on every rank "
                         f"{'equal' if measured['counts_agree'] else 'DIFFER FROM'} the model's "
                         f"({measured['exchanges']} exchanges)")
    else:
        lines.append("(run under 'mpiexec -n PX*PY lbgen model --ranks-grid ...' to measure beside it)")
    lines.append(f"scaling (grids of MPI_Dims_create; weak: {' x '.join(str(n // g) for n, g in zip(shape, grid))} "
                 f"per rank, strong: {' x '.join(map(str, shape))}):")
    # efficiency per node against one full node (p ranks): the node's memory bandwidth is the unit
    p = machine.ranks_per_node
    lines.append(f"{'ranks':>6} {'grid':>7} {'weak MLUPS':>11} {'weak eff':>9} {'strong MLUPS':>13} {'strong eff':>11}"
                 f"   (eff: MLUPS / (nodes x MLUPS of one node of {p} ranks))")
    strong = {r["ranks"]: r for r in table["strong"]}
    w1 = next((r["mlups"] for r in table["weak"] if r["ranks"] >= p), None)
    s1 = next((r["mlups"] for r in table["strong"] if r["ranks"] >= p), None)

    def eff(mlups, base, ranks):
        return f"{mlups / (base * ranks / p):.2f}" if base and ranks >= p else "-"
    for r in table["weak"]:
        s = strong.get(r["ranks"])
        lines.append(f"{r['ranks']:>6} {r['grid']:>7} {r['mlups']:11.1f} {eff(r['mlups'], w1, r['ranks']):>9} "
                     + (f"{s['mlups']:13.1f} {eff(s['mlups'], s1, r['ranks']):>11}" if s else f"{'-':>13} {'-':>11}"))
    return "\n".join(lines)
