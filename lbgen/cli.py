"""The `lbgen` command line: info, emit, run."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import click
import numpy as np

from . import __version__
from .codegen import BACKENDS, PRECISIONS, KernelSpec, SpecError
from .layouts import LAYOUTS
from .model import OPERATORS
from .model.velocity_set import DEFAULT_VELOCITY_SET, VELOCITY_SETS

try:  # Python >= 3.11
    import tomllib
except ModuleNotFoundError:  # pragma: no cover
    import tomli as tomllib


class UserError(click.ClickException):
    """Shown as 'Error: ...' with exit status 2, without a traceback."""
    exit_code = 2


def _friendly(fn):
    """Turn the library's validation errors into clean CLI errors."""
    import functools

    from .backends.base import BackendUnavailable, CompileError
    from .runner import SimulationError

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except Exception as e:
            comm = _mpi_comm()
            if comm is not None:
                _mpi_failure(comm, e)
            if isinstance(e, (SpecError, SimulationError, BackendUnavailable, ValueError)):
                raise UserError(str(e)) from None
            if isinstance(e, CompileError):
                raise click.ClickException(str(e)) from None
            raise
    return wrapper


def _mpi_comm():
    """The communicator of an MPI launch (``mpiexec -n N lbgen ...``), else None; mpi4py is
    imported only when a launcher's environment variables are present."""
    from . import mpi
    return mpi.active()


def _mpi_failure(comm, e):
    """An error in an MPI run: one every rank raised together is printed once (rank 0) and
    every rank exits with status 2; an error of one rank is printed there and aborts all."""
    from . import mpi
    if mpi.is_collective(e):
        if comm.rank == 0:
            raise UserError(str(e)) from None
        sys.exit(2)
    mpi.abort(comm, e, code=2)


def velocity_set_option(fn):
    """--velocity-set, shared by info, emit, run, verify and bench."""
    return click.option("--velocity-set", default=DEFAULT_VELOCITY_SET, show_default=True,
                        type=click.Choice(list(VELOCITY_SETS), case_sensitive=False),
                        help="Lattice: d2q37 (thermal, Hermite order 4), d2q9 (isothermal, order 2), "
                             "d2v17 (thermal, order 3).")(fn)


def _vl_option(value, allow_auto=False):
    if value is None or value == "":
        return None
    if allow_auto and str(value) == "auto":
        return "auto"
    try:
        return int(value)
    except ValueError:
        raise click.BadParameter(f"VL={value!r} is not an integer; VL must be a power of two") from None


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="lbgen")
def main():
    """lbgen: JIT-generated D2Q37 lattice Boltzmann kernels for C/OpenMP, OpenCL and CUDA."""


# --- info --------------------------------------------------------------------------------
@main.command()
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")
@velocity_set_option
@_friendly
def info(as_json, velocity_set):
    """Model summary: Q, r, shell weights, op counts per operator, backends found."""
    from . import backends
    from .cache import cache_dir
    from .model import collide, velocity_set as get_vs
    vs_name = velocity_set.lower()
    vs = get_vs(vs_name)
    summary = vs.summary()
    operators = {}
    for op in OPERATORS:
        asg = collide(op, vs_name)
        operators[op] = {"op_count": asg.flops, "flops_per_site": asg.flops,
                         "assignments": len(asg.assignments), "parameters": [str(p) for p in asg.parameters],
                         "description": asg.description}
    found = {}
    for b in BACKENDS:
        ok, why = backends.available(b)
        found[b] = {"available": ok, "detail": why}
    data = {"lbgen": __version__, "velocity_set": summary, "operators": operators, "backends": found,
            "cache_dir": str(cache_dir())}
    if as_json:
        click.echo(json.dumps(data, indent=2))
        return
    click.echo(f"lbgen {__version__}: {vs.name}, Q = {vs.Q}, quadrature degree {vs.degree}, Hermite order "
               f"{vs.hermite_order} ({'isothermal: T = 1 throughout' if vs.isothermal else 'thermal'}), "
               f"halo and wall rows {vs.max_hop}")
    click.echo(f"  r = {summary['r_digits']}  (t = 1/r^2 is the root of {summary['minimal_polynomial_of_t']} = 0)")
    click.echo("  shell      count  weight")
    for s in summary["shells"]:
        click.echo(f"  ({s['shell'][0]},{s['shell'][1]})      {s['count']:>5}  {s['weight_digits']}")
    for op, d in operators.items():
        click.echo(f"  collide {op:<12} {d['op_count']:>5} flops/site  ({d['description']})")
    for b, d in found.items():
        click.echo(f"  backend {b:<7} {'yes' if d['available'] else 'no '}  {d['detail']}")
    click.echo(f"  cache   {data['cache_dir']}")


# --- emit --------------------------------------------------------------------------------
@main.command()
@click.option("--backend", default="c", show_default=True, help=f"One of {', '.join(BACKENDS)}.")
@click.option("--layout", default="caosoa", show_default=True, help=f"One of {', '.join(LAYOUTS)}.")
@click.option("--vl", default=None, help="Cluster length (csoa/caosoa): a power of two; default 8 (c) or 32 (GPU).")
@click.option("--precision", default="double", show_default=True, help=f"One of {', '.join(PRECISIONS)}.")
@click.option("--collision", default="bgk", show_default=True, help=f"One of {', '.join(OPERATORS)}.")
@click.option("--lx", type=int, default=None, help="Compile-time LX (with --ly); run-time sizes by default.")
@click.option("--ly", type=int, default=None, help="Compile-time LY (with --lx).")
@click.option("--prefix", default="lbgen", show_default=True, help="Prefix of the C symbols and file names.")
@click.option("--streaming-stores/--no-streaming-stores", default=True, show_default=True,
              help="Non-temporal stores for whole clusters (C, clustered layouts).")
@click.option("--walls", is_flag=True, help="Thermal walls: add the bc kernel (tau = 1 wall rows for regularized).")
@click.option("--block-size", type=int, default=0, help="GPU work-group / block size (0: backend default).")
@click.option("--report", is_flag=True, help="CUDA: compile with nvcc for sm_80 and sm_90 and show registers/spills.")
@velocity_set_option
@click.option("-o", "--output", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Output folder (default: generated/<backend>/<layout>[-vl<VL>][-<precision>][-<collision>]).")
@_friendly
def emit(backend, layout, vl, precision, collision, lx, ly, prefix, streaming_stores, walls, block_size, report,
         velocity_set, output):
    """Write self-contained kernels (+ header, example driver, Makefile, README) to embed."""
    from .emit import emit as do_emit
    from .runner import PREFERRED_VL
    vl = _vl_option(vl)
    if vl is None and layout in ("csoa", "caosoa"):
        vl = PREFERRED_VL.get(backend, (8,))[0]
    spec = KernelSpec(backend=backend, layout=layout, vl=vl, precision=precision, collision=collision,
                      lx=lx, ly=ly, prefix=prefix, streaming_stores=streaming_stores, walls=walls,
                      block_size=block_size, velocity_set=velocity_set.lower())
    spec = spec.validate()
    if report and spec.backend != "cuda":
        raise UserError("--report shows nvcc's register and spill figures: it needs --backend cuda")
    written = do_emit(spec, output)
    folder = next(iter(written.values())).parent
    click.echo(f"wrote {len(written)} files to {folder}/: {', '.join(written)}")
    if report:
        from .backends.cuda.nvcc import format_report, ptxas_report
        from .codegen import generate
        click.echo(format_report(ptxas_report(generate(spec))))


# --- run ---------------------------------------------------------------------------------
_RUN_KEYS = ("lx", "ly", "steps", "tau", "collision", "c1", "c2", "c3", "gravity", "backend", "layout", "vl",
             "precision", "init", "save", "seed", "amplitude", "threads", "fused", "strict", "setup", "out",
             "output_every", "checkpoint_every", "check_every", "pictures", "fields_format", "walls", "t_bottom",
             "t_top", "adiabatic", "hetero", "split", "device", "velocity_set")


def _apply_config(ctx, config_path, values):
    """Values from a TOML file fill every option not given on the command line."""
    if not config_path:
        return values
    try:
        data = tomllib.loads(Path(config_path).read_text())
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise UserError(f"cannot read config {config_path}: {e}")
    data = data.get("run", data)
    unknown = sorted(set(k.lower().replace("-", "_") for k in data) - set(_RUN_KEYS))
    if unknown:
        raise UserError(f"{config_path}: unknown keys {unknown}; allowed: {', '.join(_RUN_KEYS)}")
    for key, value in data.items():
        key = key.lower().replace("-", "_")
        source = ctx.get_parameter_source(key) if key != "setup" else None
        if key == "setup":
            if values["setup"] is None:
                values["setup"] = value
        elif source is None or source.name == "DEFAULT":
            values[key] = value
    return values


def _parse_gravity(value):
    if isinstance(value, (list, tuple)):
        parts = list(value)
    else:
        parts = [p for p in str(value).replace(" ", "").split(",") if p != ""]
    try:
        g = tuple(float(p) for p in parts)
    except ValueError:
        raise UserError(f"--gravity {value!r}: expected two numbers 'GX,GY' (e.g. 0,-2.6e-6)") from None
    if len(g) != 2:
        raise UserError(f"--gravity {value!r}: expected two numbers 'GX,GY' (e.g. 0,-2.6e-6)")
    return g


def _parse_pictures(value):
    from .output import PICTURE_QUANTITIES
    if isinstance(value, (list, tuple)):
        items = [str(v) for v in value]
    else:
        items = [v for v in str(value).replace(" ", "").split(",") if v and v != "none"]
    bad = [v for v in items if v not in PICTURE_QUANTITIES]
    if bad:
        raise UserError(f"--pictures: unknown quantities {bad}; choose from {', '.join(PICTURE_QUANTITIES)} or none")
    return tuple(items)


_ADIABATIC = {"none": (False, False), "bottom": (True, False), "top": (False, True), "both": (True, True)}


@main.command()
@click.argument("setup", required=False, default=None)
@click.option("--config", type=click.Path(exists=True, dir_okay=False), default=None,
              help="TOML file with any of these options (flags given on the command line win).")
@click.option("--lx", type=int, default=64, show_default=True)
@click.option("--ly", type=int, default=256, show_default=True)
@click.option("--steps", type=int, default=1000, show_default=True, help="Total steps (also when resuming).")
@click.option("--tau", type=float, default=0.8, show_default=True, help="BGK relaxation time (> 1/2).")
@click.option("--collision", default=None, help=f"One of {', '.join(OPERATORS)} (default: bgk; regularized for rayleigh-taylor).")
@click.option("--c1", type=float, default=1e-3, show_default=True, help="Regularized: tau1 = 1/2 + C1/(rho T).")
@click.option("--c2", type=float, default=1e-3, show_default=True, help="Regularized: tau2 = 1/2 + C2/(rho T).")
@click.option("--c3", type=float, default=0.5, show_default=True, help="Regularized: tau3 = 1/2 + C3.")
@click.option("--gravity", default=None, help="GX,GY acceleration, force per step g/r (default 0,0; RT: 0,-8.33e-5/32).")
@click.option("--walls/--periodic", default=None, help="Thermal walls at bottom and top (default: periodic; RT: walls).")
@click.option("--t-bottom", type=float, default=None, help="Bottom wall temperature (default 1; RT: 1.05).")
@click.option("--t-top", type=float, default=None, help="Top wall temperature (default 1; RT: 0.95).")
@click.option("--adiabatic", type=click.Choice(list(_ADIABATIC)), default="none", show_default=True,
              help="Which walls are adiabatic (copy the fourth row's temperature).")
@click.option("--backend", default="c", show_default=True, help=f"One of {', '.join(BACKENDS)}.")
@click.option("--layout", default=None, help="Default: fastest valid for the backend (caosoa, VL 8 on C).")
@click.option("--vl", default=None, help="Cluster length for csoa/caosoa (power of two dividing LY), or 'auto' "
              "(time the candidates once and remember the best for this machine and lattice; see lbgen tune).")
@click.option("--precision", default="double", show_default=True, help=f"One of {', '.join(PRECISIONS)}.")
@click.option("--init", type=click.Path(exists=True, dir_okay=False), default=None,
              help=".npz with rho, ux, uy, T of shape (LX, LY); sets the lattice size.")
@click.option("--save", type=click.Path(dir_okay=False), default=None, help="Write final fields to this .npz.")
@click.option("--out", type=click.Path(file_okay=False), default=None,
              help="Run folder: fields (h5 + vti), pictures, series.csv/png, manifest.json, checkpoints.")
@click.option("--output-every", type=int, default=0, show_default=True, help="Outputs every K steps (0: start and end).")
@click.option("--checkpoint-every", type=int, default=0, show_default=True, help="Checkpoint every K steps (needs --out).")
@click.option("--check-every", type=int, default=100, show_default=True, help="NaN / negative rho or T guard every K steps.")
@click.option("--pictures", default="T", show_default=True, help="Comma list of T, rho, vorticity, speed (or none).")
@click.option("--fields-format", type=click.Choice(["h5", "npz"]), default="h5", show_default=True)
@click.option("--resume", type=click.Path(exists=True, file_okay=False), default=None,
              help="Continue the run in this folder from its newest checkpoint (up to --steps if given).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of random set-ups.")
@click.option("--amplitude", type=float, default=None, help="Amplitude of the set-up (wave, noise or interface).")
@click.option("--threads", type=int, default=0, help="OpenMP threads (0: OMP_NUM_THREADS or all cores).")
@click.option("--fused/--no-fused", default=True, show_default=True, help="Fused propagate+collide (periodic runs).")
@click.option("--strict", is_flag=True, default=False, help="No FMA contraction (bitwise-comparable builds).")
@click.option("--hetero", type=click.Choice(["opencl", "cuda"]), default=None,
              help="Host + device: the device backend runs the bulk, --backend (C) the 2M border columns.")
@click.option("--split", default=None, help="With --hetero: 'auto' (performance model, default) or the host fraction 2M/LX.")
@click.option("--device", default=None, help="OpenCL device for --hetero or --backend opencl ('P:D' or a name).")
@click.option("--progress/--no-progress", default=True, show_default=True)
@velocity_set_option
@click.pass_context
@_friendly
def run(ctx, setup, config, **opts):
    """Simulate.  SETUP: shear-wave (default), uniform-noise or rayleigh-taylor; or --init FILE.npz.

    \b
    lbgen run --lx 256 --ly 1024 --steps 2000 --save out.npz
    lbgen run rayleigh-taylor --lx 256 --ly 1024 --steps 20000 --out runs/rt --output-every 1000 --checkpoint-every 5000
    lbgen run --resume runs/rt --steps 40000
    """
    from . import mpi
    from .driver import RT_GRAVITY, Run, RunConfig
    from .runner import SETUPS
    comm = mpi.world()                     # several ranks under mpiexec: a distributed run
    if comm is not None:
        mpi.install_excepthook(comm)
    root = comm is None or comm.rank == 0
    show_progress = opts.pop("progress") and sys.stderr.isatty() and root
    resume = opts.pop("resume")
    echo = (lambda m: click.echo(m, err=True)) if root else (lambda m: None)  # noqa: E731
    if resume:
        given = ctx.get_parameter_source("steps").name != "DEFAULT"
        runner = Run.resume(resume, steps=opts["steps"] if given else None, echo=echo, comm=comm)
        result = runner.execute(progress=show_progress)
        _report(runner, result, opts.get("save"))
        return
    opts["setup"] = setup
    opts = _apply_config(ctx, config, opts)
    name = opts["setup"]
    if opts["init"] and name:
        raise UserError("give either a SETUP name or --init FILE, not both")
    if not opts["init"]:
        name = name or "shear-wave"
        if name not in SETUPS:
            raise UserError(f"unknown set-up {name!r}; choose one of {', '.join(SETUPS)} or give --init FILE.npz")
    rt = name == "rayleigh-taylor"
    gravity = _parse_gravity(opts["gravity"]) if opts["gravity"] is not None else (RT_GRAVITY if rt else (0.0, 0.0))
    walls_on = opts["walls"] if opts["walls"] is not None else rt
    walls = None
    if walls_on:
        ad = _ADIABATIC[opts["adiabatic"]]
        walls = {"T_bottom": opts["t_bottom"] if opts["t_bottom"] is not None else (1.05 if rt else 1.0),
                 "T_top": opts["t_top"] if opts["t_top"] is not None else (0.95 if rt else 1.0),
                 "adiabatic_bottom": ad[0], "adiabatic_top": ad[1]}
    elif opts["t_bottom"] is not None or opts["t_top"] is not None or opts["adiabatic"] != "none":
        raise UserError("wall temperatures and --adiabatic need walls (--walls, or the rayleigh-taylor set-up)")
    cfg = RunConfig(
        setup=name or "init", lx=int(opts["lx"]), ly=int(opts["ly"]), steps=int(opts["steps"]),
        collision=opts["collision"] or ("regularized" if rt else "bgk"), tau=opts["tau"], C1=opts["c1"],
        C2=opts["c2"], C3=opts["c3"], gravity=gravity, backend=opts["backend"], layout=opts["layout"],
        vl=_vl_option(opts["vl"], allow_auto=True), precision=opts["precision"], fused=opts["fused"],
        strict=opts["strict"],
        threads=opts["threads"], seed=opts["seed"], amplitude=opts["amplitude"],
        init=str(opts["init"]) if opts["init"] else None, walls=walls,
        out=str(opts["out"]) if opts["out"] else None, output_every=opts["output_every"],
        checkpoint_every=opts["checkpoint_every"], check_every=opts["check_every"],
        pictures=_parse_pictures(opts["pictures"]), fields_format=opts["fields_format"],
        hetero=opts["hetero"], split=opts["split"], device=opts["device"],
        velocity_set=str(opts["velocity_set"]).lower())
    if opts["split"] is not None and not opts["hetero"]:
        raise UserError("--split needs --hetero opencl|cuda")
    runner = Run(cfg, echo=echo, comm=comm)
    spec = runner.sim.spec
    regions = getattr(runner.sim, "rank_regions", None) or [
        {"backend": r.program.spec.backend, "layout": r.program.layout.tag, "columns": [r.x_start, r.width]}
        for r in runner.sim.regions]
    where = ", ".join((f"rank {d['rank']} " if "rank" in d else "") + f"{d['backend']} {d['layout']} "
                      f"x={d['columns'][0] % cfg.lx}..+{d['columns'][1]}" for d in regions)
    if comm is not None:
        where = f"{comm.size} MPI ranks: {where}"
    echo(f"lbgen run: {cfg.setup if not cfg.init else 'fields from ' + cfg.init}, {cfg.lx} x {cfg.ly}, "
         f"{cfg.steps} steps, {spec.collision}, {'walls' if walls else 'periodic'}, {spec.precision}; {where}")
    result = runner.execute(progress=show_progress)
    _report(runner, result, opts["save"])


def _report(runner, result, save):
    from .runner import save_fields
    sim = runner.sim
    out = sim.fields()                     # collective with MPI: rank 0 gets the fields
    if not runner.root:
        return
    click.echo(f"done: {result['steps_run']} steps in {result['seconds']:.3f} s, {result['mlups']:.2f} MLUPS; "
               f"step {result['steps']}, total mass {float(out['rho'].sum()):.12g}")
    if runner.cfg.out:
        click.echo(f"outputs in {runner.cfg.out}/ (manifest.json, series.csv, fields/, vtk/, pictures/)")
    if save:
        save_fields(save, out, steps=result["steps"], lx=sim.lx, ly=sim.ly, r=sim.vs.r,
                    spec=json.dumps(sim.spec.__dict__))
        click.echo(f"saved rho, ux, uy, T ({sim.lx} x {sim.ly}) to {save}")


# --- model -------------------------------------------------------------------------------
@main.command()
@click.option("--lx", type=int, default=256, show_default=True)
@click.option("--ly", type=int, default=1024, show_default=True)
@click.option("--hetero", type=click.Choice(["opencl", "cuda"]), default="opencl", show_default=True,
              help="The device backend; the host backend is --backend.")
@click.option("--backend", default="c", show_default=True)
@click.option("--collision", default="bgk", show_default=True)
@click.option("--precision", default="double", show_default=True)
@click.option("--layout", default=None)
@click.option("--vl", default=None)
@click.option("--walls", is_flag=True, help="Model the walled step (propagate, bc, collide).")
@click.option("--device", default=None, help="OpenCL device ('P:D' or a name).")
@click.option("--steps", type=int, default=5, show_default=True, help="Steps per micro-benchmark.")
@click.option("--measure", "measure_points", type=int, default=0,
              help="Also run the full lattice at this many splits and show measured MLUPS beside the model.")
@click.option("--plot", type=click.Path(dir_okay=False), default=None, help="PNG of MLUPS against 2M/LX (paper Fig. 8).")
@click.option("--ranks", type=int, default=0,
              help="Multi-rank model instead: predicted step time and MLUPS for N = 1..RANKS MPI ranks "
                   "(measured beside it when run under mpiexec).")
@click.option("--latency", type=float, default=None, help="With --ranks: message latency L [s] (default: "
              "measured by a ring shift under mpiexec, else 1e-6).")
@click.option("--bandwidth", type=float, default=None, help="With --ranks: bandwidth B [bytes/s] (default: "
              "measured under mpiexec, else 5e9).")
@click.option("--no-overlap", is_flag=True, help="With --ranks: model communication not hidden behind the bulk.")
@click.option("--json", "as_json", is_flag=True)
@_friendly
def model(lx, ly, hetero, backend, collision, precision, layout, vl, walls, device, steps, measure_points, plot,
          ranks, latency, bandwidth, no_overlap, as_json):
    """The host + device performance model (paper Eq. 4-8): predicted MLUPS against the split.

    Measures tau_d (device), tau_h (host) and the halo swap with short runs, solves
    T_acc(M*) = T_host(M*) + T_mpi(M*), prints the curve and, with --measure K, K measured
    points beside it.

    With --ranks N: the multi-rank model (slabs along X, seeds 002/003): per-rank compute
    from tau of --backend measured on each slab width, plus 2 halo messages per step,
    T = L + bytes/B from a ring-shift fit (under mpiexec) or --latency/--bandwidth."""
    from . import perfmodel
    from .driver import RunConfig, make_simulation
    if ranks:
        return _model_ranks(lx, ly, backend, collision, precision, layout, vl, walls, steps, ranks, latency,
                            bandwidth, not no_overlap, as_json)
    cfg = RunConfig(setup="uniform-noise", lx=lx, ly=ly, collision=collision, precision=precision, backend=backend,
                    layout=layout, vl=_vl_option(vl), hetero=hetero, device=device,
                    walls={"T_bottom": 1.0, "T_top": 1.0, "adiabatic_bottom": False, "adiabatic_top": False}
                    if walls else None)

    def make(width, M, dev):
        sim = make_simulation(cfg, M, width, dev)
        from .runner import uniform_noise
        sim.set_fields(**uniform_noise(width, ly, amplitude=0.01))
        return sim

    params = perfmodel.measure(make, lx, ly, steps=steps)
    m_star = perfmodel.optimal_split(params, lx, ly)
    measured = None
    if measure_points:
        Ms = perfmodel.valid_splits(lx)
        pick = sorted({Ms[int(i)] for i in np.linspace(0, len(Ms) - 1, measure_points)} | {m_star})
        measured = perfmodel.measure_curve(make, lx, ly, pick, steps=steps)
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


def _model_ranks(lx, ly, backend, collision, precision, layout, vl, walls, steps, ranks, latency, bandwidth,
                 overlap, as_json):
    from . import mpi
    from .driver import RunConfig, make_simulation
    from .runner import uniform_noise
    if ranks < 1:
        raise UserError(f"--ranks {ranks} must be >= 1")
    comm = mpi.world()
    if comm is not None:
        mpi.install_excepthook(comm)
    root = comm is None or comm.rank == 0
    cfg = RunConfig(setup="uniform-noise", lx=lx, ly=ly, collision=collision, precision=precision, backend=backend,
                    layout=layout, vl=_vl_option(vl),
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
    taus = mpi.root_call(comm, lambda: {w: mpi.measure_tau(make, w, ly, steps) for w in widths}, share=True)
    itemsize = 8 if precision == "double" else 4
    source = "assumed"
    if comm is not None and latency is None and bandwidth is None:
        times = mpi.ring_shift(comm)
        fit = mpi.fit_latency_bandwidth(list(times), list(times.values()))
        source = f"ring shift over {comm.size} ranks"
    else:
        fit = mpi.DEFAULT_COMM
        if latency is not None or bandwidth is not None:
            source = "given"
    cm = mpi.CommModel(latency if latency is not None else fit.latency,
                       bandwidth if bandwidth is not None else fit.bandwidth)
    rows = []
    for n in range(1, ranks + 1):
        row = mpi.predict(taus[-(-lx // n)], lx, ly, n, cm, overlap=overlap, itemsize=itemsize)
        row["tau"] = taus[-(-lx // n)]
        row["measured_mlups"] = None
        if comm is not None and n <= comm.size:
            t = mpi.measure_ranks(comm, lambda sub: _distributed(cfg, sub), n, steps=steps)
            row["measured_mlups"] = lx * ly / t / 1e6
            row["measured_t_step"] = t
        rows.append(row)
    if not root:
        return
    if as_json:
        click.echo(json.dumps({"lx": lx, "ly": ly, "communication": cm.to_json(), "communication_source": source,
                               "halo_bytes": mpi.halo_bytes(ly, itemsize=itemsize), "overlap": overlap,
                               "ranks": rows}, indent=2))
        return
    note = (f"communication parameters: {source}" + ("" if comm is not None else
            "; run under 'mpiexec -n N lbgen model --ranks N' to measure them and the real step time"))
    click.echo(mpi.rank_table(rows, cm, lx, ly, note))


def _distributed(cfg, comm):
    from .driver import make_simulation
    from .runner import uniform_noise
    sim = make_simulation(cfg, comm=comm)
    sim.set_fields(**(uniform_noise(cfg.lx, cfg.ly, amplitude=0.01) if comm.rank == 0 else {}))
    return sim


# --- verify ------------------------------------------------------------------------------
def _parse_layouts(text):
    out = []
    for item in [t for t in text.replace(" ", "").split(",") if t]:
        name, _, vl = item.partition("-vl")
        if name in ("csoa", "caosoa") and not vl:
            raise UserError(f"layout {item!r} needs a VL, e.g. {name}-vl8")
        try:
            out.append((name, int(vl) if vl else None))
        except ValueError:
            raise UserError(f"layout {item!r}: VL {vl!r} is not an integer") from None
    return out


@main.command()
@click.option("--backends", default="c,opencl,cuda,cuda-shim", show_default=True,
              help="Comma list of c, opencl, cuda (pycuda, needs a GPU), cuda-shim (the .cu text on the CPU).")
@click.option("--layouts", default="aos,soa,csoa-vl8,caosoa-vl8,caosoa-vl32", show_default=True,
              help="Comma list of aos, soa, csoa-vlN, caosoa-vlN.")
@click.option("--collision", "collisions", default="bgk,regularized", show_default=True)
@click.option("--precision", "precisions", default="double", show_default=True, help="double, single or both: double,single")
@click.option("--steps", type=int, default=20, show_default=True)
@click.option("--lx", type=int, default=6, show_default=True)
@click.option("--ly", type=int, default=96, show_default=True)
@click.option("--walls", is_flag=True, help="Check the bc kernel too (thermal walls, unfused steps).")
@click.option("--strict", is_flag=True, help="No FMA contraction: backends must agree bit for bit.")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@velocity_set_option
@_friendly
def verify(backends, layouts, collisions, precisions, steps, lx, ly, walls, strict, seed, as_json, velocity_set):
    """Kernel equivalence: every available backend x layout against the NumPy reference.

    Exit status 1 when any kernel differs beyond tolerance (1e-12 double, 1e-5 single;
    bit-identical across backends with --strict)."""
    from .verify import verify as run_verify
    from .model import OPERATORS as ops
    cols = [c for c in collisions.split(",") if c]
    bad = [c for c in cols if c not in ops]
    if bad:
        raise UserError(f"unknown collision operator {bad[0]!r}; choose one of {', '.join(ops)}")
    precs = [p for p in precisions.split(",") if p]
    bad = [p for p in precs if p not in PRECISIONS]
    if bad:
        raise UserError(f"unknown precision {bad[0]!r}; choose one of {', '.join(PRECISIONS)}")
    report = run_verify(backends=[b for b in backends.split(",") if b], layouts=_parse_layouts(layouts),
                        collisions=cols, precisions=precs, steps=steps, lx=lx, ly=ly, strict=strict,
                        walls=walls, seed=seed, velocity_set=velocity_set.lower())
    click.echo(json.dumps(report.to_json(), indent=2) if as_json else report.table())
    if not report.ok:
        sys.exit(1)


from .cli_bench import bench, tune  # noqa: E402
main.add_command(bench); main.add_command(tune)


if __name__ == "__main__":  # pragma: no cover
    main()
