"""`lbgen model`: the host + device and the multi-rank performance models (registered on
the `lbgen` group in lbgen/cli.py)."""
from __future__ import annotations

import json
import math

import click
import numpy as np

from lbgen.cli.common import UserError, friendly, vl_option


class FiniteFloatRange(click.FloatRange):
    """click.FloatRange that also refuses NaN and +-Inf (a NaN compares false with every bound,
    so FloatRange alone lets ``--latency nan`` through)."""

    def convert(self, value, param, ctx):
        rv = super().convert(value, param, ctx)
        if not math.isfinite(rv):
            where = "" if self.min is None and self.max is None else f" in the range {self._describe_range()}"
            self.fail(f"{value!r} is not a finite number; give a finite number{where}", param, ctx)
        return rv


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
@click.option("--no-overlap", is_flag=True, help="With --ranks: model communication not hidden behind the bulk.")
@click.option("--json", "as_json", is_flag=True)
@friendly
def model(lx, ly, hetero, backend, collision, precision, layout, vl, walls, device, steps, measure_points, plot,
          ranks, latency, bandwidth, no_overlap, as_json):
    """The host + device performance model (paper Eq. 4-8): predicted MLUPS against the split.

    Measures tau_d (device), tau_h (host) and the halo swap with short runs, solves
    T_acc(M*) = T_host(M*) + T_mpi(M*), prints the curve and, with --measure K, K measured
    points beside it.

    With --ranks N: the multi-rank model (slabs along X, seeds 002/003): per-rank compute
    from tau of --backend measured on each slab width, plus 2 halo messages per step,
    T = L + bytes/B from a ring-shift fit (under mpiexec) or --latency/--bandwidth."""
    from lbgen.perf import split as perfmodel
    from lbgen.run.config import RunConfig
    from lbgen.run.construct import make_simulation
    _check_model_options(ranks, latency, bandwidth, measure_points, plot, hetero_given=_given("hetero"))
    if ranks is not None:
        return _model_ranks(lx, ly, backend, collision, precision, layout, vl, walls, steps, ranks, latency,
                            bandwidth, not no_overlap, as_json)
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
                            f"(--ranks {ranks}) takes --latency, --bandwidth and --no-overlap instead")


def _model_ranks(lx, ly, backend, collision, precision, layout, vl, walls, steps, ranks, latency, bandwidth,
                 overlap, as_json):
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
    source = "assumed"
    if comm is not None and latency is None and bandwidth is None:
        times = mpi_model.ring_shift(comm)
        fit = mpi_model.fit_latency_bandwidth(list(times), list(times.values()))
        source = f"ring shift over {comm.size} ranks"
    else:
        fit = mpi_model.DEFAULT_COMM
        if latency is not None or bandwidth is not None:
            source = "given"
    cm = mpi_model.CommModel(latency if latency is not None else fit.latency,
                       bandwidth if bandwidth is not None else fit.bandwidth)
    rows = []
    for n in range(1, ranks + 1):
        row = mpi_model.predict(taus[-(-lx // n)], lx, ly, n, cm, overlap=overlap, itemsize=itemsize)
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
                               "halo_bytes": mpi_model.halo_bytes(ly, itemsize=itemsize), "overlap": overlap,
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
