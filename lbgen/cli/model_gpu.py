"""`lbgen model --ranks-grid ... --backend opencl|cuda`: seed 003's data-movement
model of device ranks (``lbgen.parallel.gpu_model``): each halo path's predicted step time,
MLUPS and bytes copied and sent per step, the path the model picks, and under mpiexec each
path's measured step time beside it (``DistributedSimulation(halo_path=...)``)."""
from __future__ import annotations

import json
from dataclasses import fields

import click
import numpy as np

from lbgen.cli.common import FiniteFloatRange, UserError

#: the backends whose ranks keep their lattice on a device
GPU_BACKENDS = ("opencl", "cuda")
#: where the device path is assumed possible without a GPU-aware MPI library: the device
#: memory is host memory (OpenCL on the CPU runtime, by mapping)
HOST_MEMORY_DEVICES = ("opencl",)


def _link_options():
    """{option name: DeviceLinks field} of the link options (memory_bandwidth is --memory-bandwidth)."""
    from lbgen.parallel.gpu_model import DeviceLinks
    return {f"--{f.name.replace('_', '-')}": f.name for f in fields(DeviceLinks) if f.name != "memory_bandwidth"}


def gpu_options(fn):
    """The GPU model's options of `lbgen model` (each refused outside it)."""
    from lbgen.parallel.gpu_model import DeviceLinks
    default = DeviceLinks()
    for name, field in reversed(list(_link_options().items())):
        latency = field.endswith("latency")
        unit = "[s]" if latency else "[bytes/s]"
        fn = click.option(name, field, type=FiniteFloatRange(min=0, min_open=not latency), default=None,
                          help=f"With --ranks-grid and a device --backend: {field.replace('_', ' ')} {unit} of "
                               f"seed 003's links (default: --bench-json, else {getattr(default, field):.4g}: "
                               f"lbgen.parallel.gpu_model.DeviceLinks).")(fn)
    fn = click.option("--bench-json", type=click.Path(exists=True, dir_okay=False), default=None,
                      help="With --ranks-grid and a device --backend: the device <-> host copy terms and the device "
                           "memory bandwidth measured by 'lbgen bench --backends BACKEND -o FILE'.")(fn)
    fn = click.option("--device-mpi/--no-device-mpi", "device_mpi", default=None,
                      help="With a device --backend: whether the halo path 'device' is possible (device buffers "
                           "to MPI). Default: yes for opencl (the CPU runtime: device memory is host memory), "
                           "no for cuda (say --device-mpi where MPI is GPU-aware).")(fn)
    fn = click.option("--overlap/--no-overlap", "overlap", default=None,
                      help="With a device --backend: the staged path sweeps the interior while its slabs travel "
                           "(DistributedSimulation's default; single steps, X/Y split); --no-overlap: exchange, "
                           "then step (modelled and measured).")(fn)
    fn = click.option("--ranks-per-device", type=click.IntRange(min=1), default=None,
                      help="With a device --backend: ranks sharing one device (its memory bandwidth and copies); "
                           "default 1.")(fn)
    return fn


def gpu_given(gpu: dict) -> list:
    """The GPU model's options given (names), to refuse them outside it."""
    names = {v: k for k, v in _link_options().items()}
    names.update(bench_json="--bench-json", device_mpi="--device-mpi", ranks_per_device="--ranks-per-device",
                 overlap="--overlap")
    return [names[k] for k, v in gpu.items() if v is not None]


def device_links(backend: str, gpu: dict, memory_bandwidth):
    """(DeviceLinks, source per term): given > --bench-json > the defaults."""
    from lbgen.parallel.gpu_model import DeviceLinks
    from lbgen.perf.links import links_from_bench
    values, sources = {}, {}
    if gpu.get("bench_json"):
        try:
            with open(gpu["bench_json"]) as fh:
                report = json.load(fh)
            measured = links_from_bench(report, backend)
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise UserError(f"--bench-json {gpu['bench_json']}: {e}") from None
        values.update(measured)
        sources.update({k: f"lbgen bench ({gpu['bench_json']})" for k in measured})
    given = {field: gpu.get(field) for field in _link_options().values()}
    given["memory_bandwidth"] = memory_bandwidth
    for k, v in given.items():
        if v is not None:
            values[k], sources[k] = v, "given"
    for f in fields(DeviceLinks):
        sources.setdefault(f.name, "default")
    return DeviceLinks(**values), sources


def device_possible(backend: str, device_mpi) -> tuple:
    """(possible, why not) for the device path."""
    if device_mpi is not None:
        return bool(device_mpi), "" if device_mpi else "--no-device-mpi"
    if backend in HOST_MEMORY_DEVICES:
        return True, ""
    return False, "the MPI library is not known to be GPU-aware (give --device-mpi where it is)"


def model_gpu(comm, cfg, shape, grid, depth, steps, machine_args, gpu, memory_bandwidth, max_ranks, scaling_plot,
              as_json, vs):
    """Predict (and under mpiexec measure) each halo path of device ranks on `grid`."""
    from lbgen.parallel import gpu_model
    from lbgen.parallel import model as mpi_model
    P = int(np.prod(grid))
    size = 1 if comm is None else comm.size
    latency, bandwidth, ranks_per_node, latency_inter, bandwidth_inter = machine_args
    links, link_sources = device_links(cfg.backend, gpu, memory_bandwidth)
    possible, why_not = device_possible(cfg.backend, gpu.get("device_mpi"))
    r = gpu.get("ranks_per_device") or 1
    H, Q, itemsize = vs.max_hop, vs.Q, 8 if cfg.precision == "double" else 4
    cm, comm_source = mpi_model.comm_parameters(comm, P, latency, bandwidth)
    direct = [k for k in _link_options().values() if k.startswith("direct")]
    if cfg.backend in HOST_MEMORY_DEVICES and all(link_sources[k] == "default" for k in direct):
        links = gpu_model.host_memory_links(links, cm)        # device memory is host memory: host MPI messages
        link_sources.update({k: f"host MPI ({comm_source}): device memory is host memory" for k in direct})
    p = ranks_per_node or (size if comm is not None else P)
    machine = mpi_model.Machine(cm.latency, cm.bandwidth, links.memory_bandwidth, p, latency_inter, bandwidth_inter)
    overlap = gpu.get("overlap") is not False
    chosen, why, predicted = gpu_model.choose_path(shape, grid, machine, links, depth, Q, itemsize, H,
                                                   ranks_per_device=r, device_possible=possible,
                                                   device_why_not=why_not, overlap=overlap)
    measured = None
    if comm is not None:
        measured = measure_paths(comm, cfg, shape, grid, depth, steps, vs,
                                 [q for q in gpu_model.PATHS if q != "device" or possible], overlap)
    weak = weak_scaling(machine, links, tuple(n // g for n, g in zip(shape, grid)), depth, max_ranks, Q, itemsize, H,
                        r, overlap)
    if comm is not None and comm.rank != 0:
        return
    if scaling_plot:
        mpi_model.plot_scaling(weak, scaling_plot, title=f"model: device ranks, {cfg.backend}, weak "
                               f"{' x '.join(str(n // g) for n, g in zip(shape, grid))} per rank, k = {depth}")
    if as_json:
        click.echo(json.dumps({"shape": list(shape), "grid": list(grid), "time_block": depth, "backend": cfg.backend,
                               "velocity_set": vs.name, "links": links.to_json(), "link_sources": link_sources,
                               "machine": machine.to_json(), "communication_source": comm_source,
                               "ranks_per_device": r, "device_possible": possible, "overlap": overlap, "chosen": chosen, "why": why,
                               "predicted": predicted, "measured": measured, "scaling": weak}, indent=2))
        return
    click.echo(gpu_report(shape, grid, depth, cfg.backend, vs.name, links, link_sources, machine, comm_source, r,
                          predicted, chosen, why, measured, weak))
    if scaling_plot:
        click.echo(f"plot written to {scaling_plot}")


def weak_scaling(machine, links, block, depth, max_ranks, Q, itemsize, halo, ranks_per_device, overlap) -> dict:
    """{path: rows}: `block` per rank on the grids of MPI_Dims_create, P = 1, 2, 4, ... max_ranks."""
    from lbgen.parallel import gpu_model
    from lbgen.parallel import model as mpi_model
    mpi_model.check_model_ranks(max_ranks, "--max-ranks")
    out = {q: [] for q in gpu_model.PATHS}
    P = 1
    while P <= max_ranks:
        g = mpi_model.dims_create(P, len(block))
        for q in gpu_model.PATHS:
            out[q].append(gpu_model.predict_gpu_step(tuple(n * d for n, d in zip(block, g)), g, machine, links, q,
                                                     depth, Q, itemsize, halo, (), ranks_per_device, overlap))
        P *= 2
    return out


def gpu_report(shape, grid, depth, backend, set_name, links, link_sources, machine, comm_source, r, predicted, chosen,
               why, measured, weak) -> str:
    def src(*names):
        kinds = sorted({link_sources[n] for n in names})
        return "/".join(kinds)
    lines = [f"device links (seed 003, T = alpha + bytes / B): device -> host {links.to_host_latency * 1e6:.2f} us, "
             f"{links.to_host_bandwidth / 1e9:.3f} GB/s; host -> device {links.to_device_latency * 1e6:.2f} us, "
             f"{links.to_device_bandwidth / 1e9:.3f} GB/s "
             f"({src('to_host_latency', 'to_host_bandwidth', 'to_device_latency', 'to_device_bandwidth')}); "
             f"GPU-direct {links.direct_latency * 1e6:.2f} us, {links.direct_bandwidth / 1e9:.3f} GB/s on node, "
             f"{links.direct_latency_inter * 1e6:.2f} us, {links.direct_bandwidth_inter / 1e9:.3f} GB/s off node "
             f"({src('direct_latency', 'direct_bandwidth', 'direct_latency_inter', 'direct_bandwidth_inter')}); "
             f"device memory M = {links.memory_bandwidth / 1e9:.2f} GB/s ({src('memory_bandwidth')})",
             f"host MPI: L_a = {machine.latency * 1e6:.2f} us, B_a = {machine.bandwidth / 1e9:.3f} GB/s "
             f"({comm_source}); p = {machine.ranks_per_node} ranks per node, {r} per device",
             f"{backend} ranks, {set_name}, grid {'x'.join(map(str, grid))} on {' x '.join(map(str, shape))}, "
             f"time block {depth}",
             f"{'path':>8} {'T_copy [ms]':>12} {'T_mpi [ms]':>11} {'T_calc [ms]':>12} {'T_step [ms]':>12} "
             f"{'MLUPS':>10} {'copied B/step':>14} {'sent B/step':>12} {'measured [ms]':>14} {'meas. MLUPS':>12}"]
    for q, row in predicted.items():
        m = (measured or {}).get(q)
        meas = f"{m['t_step'] * 1e3:14.4f} {m['mlups']:12.2f}" if m else f"{'-':>14} {'-':>12}"
        copied = row["to_host_bytes_per_step"] + row["to_device_bytes_per_step"]
        lines.append(f"{q:>8} {row['t_copy'] * 1e3:12.4f} {row['t_mpi'] * 1e3:11.4f} {row['t_calc'] * 1e3:12.4f} "
                     f"{row['t_step'] * 1e3:12.4f} {row['mlups']:10.2f} {copied:14.0f} {row['mpi_bytes_per_step']:12.0f} "
                     f"{meas}")
    if any(row["overlap"] for row in predicted.values()):
        lines.append("(staged: the interior sweep overlaps the copies and messages: T_step = max(T_copy + T_mpi, "
                     "T_interior) + T_edges, owned sites only)")
    lines.append(f"chosen: {chosen} ({why})")
    if measured:
        for q, m in measured.items():
            lines.append(f"measured {q}: {m['steps']} steps, halo path {m['halo_path']}; bytes and copies counted on "
                         f"every rank {'equal' if m['counts_agree'] else 'DIFFER FROM'} the model's")
    elif measured is None:
        lines.append("(run under 'mpiexec -n PX*PY lbgen model --ranks-grid ... --backend ...' to measure each path)")
    lines.append(f"weak scaling ({' x '.join(str(n // g) for n, g in zip(shape, grid))} per rank; MLUPS): "
                 + "; ".join(f"{a['ranks']} ranks: staged {a['mlups']:.1f}, device {b['mlups']:.1f}"
                             for a, b in zip(weak["staged"], weak["device"]) if a["ranks"] in (1, 2, 8, 64, 512, 4096)))
    return "\n".join(lines)


def _fields(shape, vs):
    """The model's case: uniform noise (2D, the run's setup) or D3Q19 at rest plus noise (3D)."""
    if len(shape) == 2:
        from lbgen.run.setups import uniform_noise
        return (), uniform_noise(*shape, amplitude=0.01, thermal=not vs.isothermal)
    rng = np.random.default_rng(0)
    return (1.0 + 0.01 * rng.standard_normal(shape), 0.01 * rng.standard_normal(shape), 0.0, 0.0), {}


def measure_paths(comm, cfg, shape, grid, depth, steps, vs, paths, overlap: bool = True) -> dict:
    """{path: seconds per step (slowest rank), MLUPS, and per rank what it sent and copied
    against ``halo_traffic``} of ``DistributedSimulation(halo_path=path)`` (collective)."""
    from mpi4py import MPI

    from lbgen.parallel.gpu_model import halo_traffic
    from lbgen.parallel.simulation import DistributedSimulation
    counted_keys = ("to host copies", "to host bytes", "to device copies", "to device bytes")
    out = {}
    for path in paths:
        sim = DistributedSimulation(comm, *shape, ranks_grid=grid, time_block=depth, velocity_set=vs.name,
                                    collision=cfg.collision, precision=cfg.precision, backend=cfg.backend,
                                    layout=cfg.layout, halo_path=path, overlap=overlap)
        args, kw = _fields(shape, vs) if comm.rank == 0 else ((), {})
        sim.set_fields(*args, **kw)
        sim.step(depth)                         # warm-up: one exchange
        programs = {id(r.program): r.program for r in sim.sim.regions}.values()
        sim.messages.clear()
        for prog in programs:
            prog.transfers.clear()
        n = steps * depth
        comm.Barrier()
        t0 = MPI.Wtime()
        sim.step(n)
        sim.synchronize()
        t = comm.allreduce((MPI.Wtime() - t0) / n, op=MPI.MAX)
        exchanges = -(-n // depth)
        one = halo_traffic(shape, grid, tuple(sim.coords), depth, vs.Q, vs.max_hop, np.dtype(sim.sim.dtype).itemsize,
                           sim.halo_path, sim.closed_faces)
        counted = dict(sim.messages) | {k: sim.transfers[k] for k in counted_keys}
        keys = [k for k in one if k.endswith(("messages", "bytes", "copies")) and not k.startswith("mpi")]
        predicted = {k: one[k] * exchanges for k in keys}
        counted = {k: counted.get(k, 0) for k in keys}
        ranks = comm.allgather({"rank": comm.rank, "coords": list(sim.coords), "counted": counted,
                                "predicted": predicted})
        out[path] = {"t_step": t, "mlups": int(np.prod(shape)) / t / 1e6, "steps": n, "exchanges": exchanges,
                     "halo_path": sim.halo_path, "ranks": ranks,
                     "counts_agree": all(r["counted"] == r["predicted"] for r in ranks)}
    return out
