"""The `lbgen` command line: info, emit, run."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from . import __version__
from .codegen import BACKENDS, PRECISIONS, KernelSpec, SpecError
from .layouts import LAYOUTS
from .model import OPERATORS

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
        except (SpecError, SimulationError, BackendUnavailable, ValueError) as e:
            raise UserError(str(e)) from None
        except CompileError as e:
            raise click.ClickException(str(e)) from None
    return wrapper


def _vl_option(value):
    if value is None or value == "":
        return None
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
@click.option("--velocity-set", default="d2q37", show_default=True, type=click.Choice(["d2q37", "d2q9"]))
@_friendly
def info(as_json, velocity_set):
    """Model summary: Q, r, shell weights, op counts per operator, backends found."""
    from . import backends
    from .cache import cache_dir
    from .model import collide, velocity_set as get_vs
    vs = get_vs(velocity_set)
    summary = vs.summary()
    operators = {}
    if velocity_set == "d2q37":
        for op in OPERATORS:
            asg = collide(op, velocity_set)
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
    click.echo(f"lbgen {__version__}: {vs.name}, Q = {vs.Q}, quadrature degree {vs.degree}")
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
@click.option("-o", "--output", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Output folder (default: generated/<backend>/<layout>[-vl<VL>][-<precision>][-<collision>]).")
@_friendly
def emit(backend, layout, vl, precision, collision, lx, ly, prefix, streaming_stores, output):
    """Write self-contained kernels (+ header, example driver, Makefile, README) to embed."""
    from .emit import emit as do_emit
    from .runner import PREFERRED_VL
    vl = _vl_option(vl)
    if vl is None and layout in ("csoa", "caosoa"):
        vl = PREFERRED_VL.get(backend, (8,))[0]
    spec = KernelSpec(backend=backend, layout=layout, vl=vl, precision=precision, collision=collision,
                      lx=lx, ly=ly, prefix=prefix, streaming_stores=streaming_stores)
    spec = spec.validate()
    written = do_emit(spec, output)
    folder = next(iter(written.values())).parent
    click.echo(f"wrote {len(written)} files to {folder}/: {', '.join(written)}")


# --- run ---------------------------------------------------------------------------------
_RUN_KEYS = ("lx", "ly", "steps", "tau", "collision", "c1", "c2", "c3", "gravity", "backend", "layout", "vl",
             "precision", "init", "save", "seed", "amplitude", "threads", "fused", "strict", "setup")


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


@main.command()
@click.argument("setup", required=False, default=None)
@click.option("--config", type=click.Path(exists=True, dir_okay=False), default=None,
              help="TOML file with any of these options (flags given on the command line win).")
@click.option("--lx", type=int, default=64, show_default=True)
@click.option("--ly", type=int, default=256, show_default=True)
@click.option("--steps", type=int, default=1000, show_default=True)
@click.option("--tau", type=float, default=0.8, show_default=True, help="BGK relaxation time (> 1/2).")
@click.option("--collision", default="bgk", show_default=True, help=f"One of {', '.join(OPERATORS)}.")
@click.option("--c1", type=float, default=1e-3, show_default=True, help="Regularized: tau1 = 1/2 + C1/(rho T).")
@click.option("--c2", type=float, default=1e-3, show_default=True, help="Regularized: tau2 = 1/2 + C2/(rho T).")
@click.option("--c3", type=float, default=0.5, show_default=True, help="Regularized: tau3 = 1/2 + C3.")
@click.option("--gravity", default="0,0", show_default=True, help="GX,GY: acceleration (force per step a = g/r).")
@click.option("--backend", default="c", show_default=True, help=f"One of {', '.join(BACKENDS)}.")
@click.option("--layout", default=None, help="Default: fastest valid for the backend (caosoa, VL 8 on C).")
@click.option("--vl", default=None, help="Cluster length for csoa/caosoa (power of two dividing LY).")
@click.option("--precision", default="double", show_default=True, help=f"One of {', '.join(PRECISIONS)}.")
@click.option("--init", type=click.Path(exists=True, dir_okay=False), default=None,
              help=".npz with rho, ux, uy, T of shape (LX, LY); sets the lattice size.")
@click.option("--save", type=click.Path(dir_okay=False), default=None, help="Write final fields to this .npz.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of random set-ups.")
@click.option("--amplitude", type=float, default=None, help="Amplitude of the set-up (wave or noise).")
@click.option("--threads", type=int, default=0, help="OpenMP threads (0: OMP_NUM_THREADS or all cores).")
@click.option("--fused/--no-fused", default=True, show_default=True, help="Fused propagate+collide kernel.")
@click.option("--strict", is_flag=True, default=False, help="No FMA contraction (bitwise-comparable builds).")
@click.option("--progress/--no-progress", default=True, show_default=True)
@click.pass_context
@_friendly
def run(ctx, setup, config, **opts):
    """Simulate a periodic box.  SETUP: shear-wave (default) or uniform-noise; or --init FILE.npz."""
    from .runner import SETUPS, Simulation, load_fields, save_fields
    opts["setup"] = setup
    opts = _apply_config(ctx, config, opts)
    gravity = _parse_gravity(opts["gravity"])
    vl = _vl_option(opts["vl"])
    if opts["init"]:
        if opts["setup"]:
            raise UserError("give either a SETUP name or --init FILE, not both")
        fields = load_fields(opts["init"])
        lx, ly = fields["rho"].shape
        what = f"fields from {opts['init']}"
    else:
        name = opts["setup"] or "shear-wave"
        if name not in SETUPS:
            raise UserError(f"unknown set-up {name!r}; choose one of {', '.join(SETUPS)} or give --init FILE.npz")
        lx, ly = int(opts["lx"]), int(opts["ly"])
        extra = {"seed": opts["seed"]}
        if opts["amplitude"] is not None:
            extra["amplitude"] = opts["amplitude"]
        fields = None
        what = name
    sim = Simulation(lx, ly, backend=opts["backend"], layout=opts["layout"], vl=vl, precision=opts["precision"],
                     collision=opts["collision"], tau=opts["tau"], C1=opts["c1"], C2=opts["c2"], C3=opts["c3"],
                     gravity=gravity, fused=opts["fused"], threads=opts["threads"], strict=opts["strict"])
    if fields is None:
        fields = SETUPS[what](lx, ly, **extra)
    sim.set_fields(**fields)
    spec = sim.spec
    click.echo(f"lbgen run: {what}, {lx} x {ly}, {opts['steps']} steps, {spec.collision}, "
               f"backend {spec.backend}, layout {spec.tag}, {spec.precision}", err=True)
    stats = sim.run(int(opts["steps"]), progress=opts["progress"] and sys.stderr.isatty())
    out = sim.fields()
    mass = float(out["rho"].sum())
    click.echo(f"done: {stats.steps} steps in {stats.seconds:.3f} s, {stats.mlups:.2f} MLUPS; "
               f"total mass {mass:.12g}")
    if opts["save"]:
        save_fields(opts["save"], out, steps=stats.steps, lx=lx, ly=ly, r=sim.vs.r,
                    spec=json.dumps(spec.__dict__))
        click.echo(f"saved rho, ux, uy, T ({lx} x {ly}) to {opts['save']}")


if __name__ == "__main__":  # pragma: no cover
    main()
