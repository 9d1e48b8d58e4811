"""A whole run: set-up, stepping with guards, outputs every K steps, checkpoints, resume.

Everything that defines a run is a ``RunConfig``; it is written to the run folder's
manifest.json, so ``resume(run_dir)`` needs nothing else.  A resumed run continues from
the newest checkpoint that verifies and is bit-identical to an uninterrupted one: the
populations are saved exactly, in the working precision, and nothing random happens
after the set-up.
"""
from __future__ import annotations

import dataclasses
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, Optional, Tuple


from . import __version__
from .checkpoint import CheckpointError, checkpoint_path, latest_checkpoint, prune_checkpoints, read_checkpoint, write_checkpoint
from .model.velocity_set import DEFAULT_VELOCITY_SET, velocity_set as get_velocity_set
from .runner import SETUPS, Parameters, Simulation, SimulationError, Walls, load_fields

RT_GRAVITY = (0.0, -8.33e-5 / 32)


@dataclass
class RunConfig:
    setup: str = "shear-wave"
    lx: int = 64
    ly: int = 256
    steps: int = 1000
    collision: str = Parameters.collision      # physical defaults: one place, runner.Parameters
    tau: float = Parameters.tau
    C1: float = Parameters.C1
    C2: float = Parameters.C2
    C3: float = Parameters.C3
    gravity: Tuple[float, float] = Parameters.gravity
    backend: str = "c"
    layout: Optional[str] = None
    vl: Optional[object] = None           # int, or "auto" (tuned)
    precision: str = "double"
    fused: bool = True
    strict: bool = False
    threads: int = 0
    seed: int = 0
    amplitude: Optional[float] = None
    init: Optional[str] = None
    walls: Optional[Dict] = None          # {"T_bottom", "T_top", "adiabatic_bottom", "adiabatic_top"}
    out: Optional[str] = None             # run folder (outputs, checkpoints, manifest)
    output_every: int = 0                 # 0: only at the start and the end
    checkpoint_every: int = 0             # 0: none
    check_every: int = 100                # NaN / negative density or temperature guard
    pictures: Tuple[str, ...] = ("T",)
    fields_format: str = "h5"
    keep_checkpoints: int = 2
    hetero: Optional[str] = None          # device backend of a host + device run ("opencl", "cuda")
    split: Optional[str] = None           # "auto" (performance model) or the host fraction 2M/LX
    host_columns: Optional[int] = None    # M, resolved from split (kept for resume)
    device: Optional[str] = None          # device selection for the device backend
    velocity_set: str = DEFAULT_VELOCITY_SET

    def to_json(self) -> dict:
        return json.loads(json.dumps(dataclasses.asdict(self)))

    @classmethod
    def from_json(cls, data: dict) -> "RunConfig":
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise SimulationError(f"manifest has unknown run parameters {unknown}")
        data = dict(data)
        for key in ("gravity", "pictures"):
            if key in data and data[key] is not None:
                data[key] = tuple(data[key])
        return cls(**data)


def _initial_fields(cfg: RunConfig):
    if cfg.init:
        return load_fields(cfg.init)
    if cfg.setup not in SETUPS:
        raise SimulationError(f"unknown set-up {cfg.setup!r}; choose one of {', '.join(SETUPS)} or give --init FILE.npz")
    vs = get_velocity_set(cfg.velocity_set)
    if vs.isothermal and cfg.setup == "rayleigh-taylor":
        raise SimulationError(f"rayleigh-taylor is a thermal flow; {vs.name} is isothermal (T = 1): use d2q37 "
                              f"(or d2v17)")
    extra = {"seed": cfg.seed, "gravity": cfg.gravity, "thermal": not vs.isothermal}
    if cfg.amplitude is not None:
        extra["amplitude"] = cfg.amplitude
    if cfg.setup == "rayleigh-taylor" and cfg.walls:
        extra["T_hot"], extra["T_cold"] = cfg.walls["T_bottom"], cfg.walls["T_top"]
    return SETUPS[cfg.setup](cfg.lx, cfg.ly, **extra)


def make_simulation(cfg: RunConfig, host_columns: Optional[int] = None, lx: Optional[int] = None,
                    device: bool = True, comm=None) -> Simulation:
    """The Simulation of a config; for host + device runs with `host_columns` M (or cfg's).

    With an MPI communicator `comm` of several ranks: this rank's part of a
    ``lbgen.mpi.DistributedSimulation`` (collective)."""
    walls = Walls(**cfg.walls) if cfg.walls else None
    common = dict(layout=cfg.layout, vl=cfg.vl, precision=cfg.precision, collision=cfg.collision, tau=cfg.tau,
                  C1=cfg.C1, C2=cfg.C2, C3=cfg.C3, gravity=cfg.gravity, fused=cfg.fused, threads=cfg.threads,
                  strict=cfg.strict, check_every=0, walls=walls, velocity_set=cfg.velocity_set)
    if cfg.device and cfg.backend == "opencl":
        common["device"] = cfg.device          # the OpenCL device of a plain OpenCL run
    lx = cfg.lx if lx is None else lx
    if comm is not None:
        from .mpi import DistributedSimulation
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
    every side of a slab's device bulk is its own host region, so M is 0 or >= 3 there."""
    from . import perfmodel
    width = cfg.lx if lx is None else lx
    valid = perfmodel.valid_splits(width, get_velocity_set(cfg.velocity_set).max_hop)
    if lx is not None:
        valid = [M for M in valid if M == 0 or 2 * M == width or (M >= 3 and width - 2 * M >= 3)]
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


def _device_description(sim: Simulation) -> dict:
    info = {"backend": sim.spec.backend, "layout": sim.spec.tag, "precision": sim.spec.precision,
            "kernel_digest": sim.source.digest, "regions": []}
    if hasattr(sim, "rank_regions"):        # MPI: every rank's regions (global columns)
        info["ranks"] = sim.nranks
        info["rank_regions"] = sim.rank_regions
    for region in sim.regions:
        prog = region.program
        entry = {"backend": prog.spec.backend, "layout": prog.layout.tag, "columns": [region.x_start, region.width]}
        for attr in ("device_name", "library_path", "threads", "flags"):
            if hasattr(prog, attr):
                entry[attr] = str(getattr(prog, attr))
        info["regions"].append(entry)
    return info


class Run:
    """Drives one run folder.  ``Run(cfg).execute()`` or ``Run.resume(dir).execute()``.

    With an MPI communicator ``comm`` of several ranks (``mpiexec -n N lbgen run``) every
    rank builds its slab of a ``lbgen.mpi.DistributedSimulation``; the ranks check that
    they share one RunConfig (hash), rank 0 alone sets up the fields, writes every file
    (outputs, checkpoints, manifest) from states gathered to it, reads the checkpoint of a
    resume and scatters it, and shows the progress bar.  Everything else is the same.
    """

    def __init__(self, cfg: RunConfig, echo: Callable[[str], None] = print, comm=None):
        self.cfg = cfg
        self.comm = comm
        self.root = comm is None or comm.rank == 0
        self.echo = echo if self.root else (lambda message: None)
        if comm is not None:
            from .mpi import check_same_config, collective
            check_same_config(comm, cfg.to_json())
            try:
                self._validate(cfg)
            except SimulationError as e:       # same config on every rank: every rank raises it
                raise collective(e)
        else:
            self._validate(cfg)
        from .mpi import root_call

        def setup():
            fields = _initial_fields(cfg)
            return fields, tuple(int(n) for n in fields["rho"].shape)
        fields = root_call(comm, setup)
        shape = root_call(comm, lambda: fields[1], share=True) if comm is not None else fields[1]
        fields = fields[0] if fields is not None else None
        if cfg.init:
            cfg.lx, cfg.ly = shape
        if cfg.hetero and cfg.host_columns is None:
            if comm is None:
                cfg.host_columns = resolve_split(cfg, echo)
            else:   # rank 0 models its slab (the widest one); every rank uses its M
                from .mpi import check_decomposition, slab_widths
                check_decomposition(cfg.lx, comm.size, get_velocity_set(cfg.velocity_set).max_hop)
                cfg.host_columns = root_call(comm, lambda: resolve_split(cfg, self.echo, slab_widths(
                    cfg.lx, comm.size)[0]), share=True)
        self.sim = make_simulation(cfg, comm=comm)
        if fields is not None:
            self.sim.set_fields(**fields)
        else:
            self.sim.set_fields()          # MPI ranks > 0: rank 0's fields are scattered
        self.T_hot = self.T_cold = None
        if fields is not None:
            T0 = fields["T"]
            if cfg.walls:
                self.T_hot, self.T_cold = cfg.walls["T_bottom"], cfg.walls["T_top"]
            else:
                self.T_hot, self.T_cold = float(T0.max()), float(T0.min())
            if self.T_hot == self.T_cold:
                self.T_hot = self.T_cold + 1.0   # no temperature contrast: the mixing width is 0
        self.output = None
        if cfg.out and self.root:

            def open_output():
                from .output import RunOutput
                return RunOutput(cfg.out, pictures=cfg.pictures, fields_format=cfg.fields_format)
            self.output = root_call(comm, open_output)
        elif cfg.out:
            root_call(comm, lambda: None)
        self.resumed_from: Optional[int] = None
        self.seconds = 0.0
        self.steps_run = 0

    @staticmethod
    def _validate(cfg: RunConfig) -> None:
        if cfg.steps < 0:
            raise SimulationError(f"steps={cfg.steps} must be >= 0")
        for name in ("output_every", "checkpoint_every", "check_every"):
            if getattr(cfg, name) < 0:
                raise SimulationError(f"{name}={getattr(cfg, name)} must be >= 0")
        if cfg.checkpoint_every and not cfg.out:
            raise SimulationError("--checkpoint-every needs a run folder (--out DIR)")

    # --- resume ----------------------------------------------------------------------------
    @classmethod
    def resume(cls, run_dir, steps: Optional[int] = None, echo: Callable[[str], None] = print,
               comm=None) -> "Run":
        """Continue a run folder; with MPI, rank 0 reads the manifest and checkpoint, the
        state is scattered to every rank."""
        from .mpi import root_call
        from .output import read_manifest
        run_dir = Path(run_dir)
        if comm is not None and comm.rank != 0:
            echo = lambda message: None  # noqa: E731

        def load_manifest():
            try:
                return read_manifest(run_dir)["config"]
            except (OSError, ValueError, KeyError) as e:
                raise SimulationError(f"cannot resume {run_dir}: no readable manifest.json ({e})") from None
        cfg = RunConfig.from_json(root_call(comm, load_manifest, share=True))
        cfg.out = str(run_dir)
        if steps is not None:
            cfg.steps = steps
        run = cls(cfg, echo=echo, comm=comm)

        def load_checkpoint():
            path = latest_checkpoint(run_dir, verify=False)
            if path is None:
                raise SimulationError(f"cannot resume {run_dir}: it has no checkpoint (run with --checkpoint-every K)")
            try:
                populations, step, meta = read_checkpoint(path)
            except CheckpointError as e:
                good = latest_checkpoint(run_dir, verify=True)
                if good is None:
                    raise SimulationError(f"cannot resume {run_dir}: {e}; no other checkpoint verifies") from None
                echo(f"warning: {e}; resuming from the previous good checkpoint {good.name}")
                populations, step, meta = read_checkpoint(good)
            if meta.get("kernel_digest") not in (None, run.sim.source.digest):
                echo("note: the kernels differ from the ones that wrote the checkpoint (lbgen or compiler changed)")
            return populations, step
        loaded = root_call(comm, load_checkpoint)
        populations, step = loaded if loaded is not None else (None, None)
        run.sim.restore(populations, step)
        step = run.sim.time_step
        if run.output is not None:
            run.output.truncate(step)
        run.resumed_from = step
        echo(f"resuming {run_dir} at step {step} of {cfg.steps}")
        return run

    # --- the loop --------------------------------------------------------------------------
    def _outputs(self, final: bool = False) -> None:
        if not self.cfg.out:
            return
        from .output import diagnostics
        step = self.sim.time_step
        fields = self.sim.fields()           # collective with MPI: gathered to rank 0
        if self.output is None:
            return
        self.output.append_series(step, step / self.sim.vs.r, diagnostics(fields, self.T_hot, self.T_cold))
        self.output.write_fields(step, fields, time=step / self.sim.vs.r)
        if self.cfg.pictures:
            self.output.write_pictures(step, fields)
        if final:
            self.output.plot_series()

    def _checkpoint(self) -> None:
        step = self.sim.time_step
        state = self.sim.state()             # collective with MPI: gathered to rank 0
        if not self.root:
            return
        write_checkpoint(checkpoint_path(self.cfg.out, step), state, step,
                         {"kernel_digest": self.sim.source.digest, "lbgen": __version__})
        prune_checkpoints(self.cfg.out, keep=max(1, self.cfg.keep_checkpoints))

    def _manifest(self, status: str, error: Optional[str] = None) -> None:
        if self.output is None:
            return
        from .output import environment_versions
        mlups = self.steps_run * self.cfg.lx * self.cfg.ly / self.seconds / 1e6 if self.seconds > 0 else None
        self.output.write_manifest({
            "lbgen": __version__,
            "status": status,
            "error": error,
            "config": self.cfg.to_json(),
            "step": self.sim.time_step,
            "resumed_from": self.resumed_from,
            "device": _device_description(self.sim),
            "mlups": mlups,
            "seconds": self.seconds,
            "versions": environment_versions(),
            "written": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        })

    def execute(self, progress: bool = False) -> dict:
        cfg, sim = self.cfg, self.sim
        events = [k for k in (cfg.output_every, cfg.checkpoint_every, cfg.check_every) if k]
        if self.cfg.out and self.resumed_from is None:
            self._manifest("running")
            self._outputs()
        bar = None
        if progress and self.root:
            from tqdm import tqdm
            bar = tqdm(total=cfg.steps, initial=sim.time_step, unit="step", dynamic_ncols=True,
                       desc=cfg.setup if not cfg.init else "run")
        try:
            while sim.time_step < cfg.steps:
                # advance to the next multiple of any event period (or the end)
                nxt = min([cfg.steps] + [(sim.time_step // k + 1) * k for k in events])
                n = nxt - sim.time_step
                t0 = time.perf_counter()
                sim.step(n)
                sim.synchronize()
                self.seconds += time.perf_counter() - t0
                self.steps_run += n
                if bar is not None:
                    bar.update(n)
                    bar.set_postfix(MLUPS=f"{self.steps_run * cfg.lx * cfg.ly / max(self.seconds, 1e-12) / 1e6:.1f}")
                step = sim.time_step
                last = step == cfg.steps
                if (cfg.check_every and step % cfg.check_every == 0) or last:
                    sim.check_finite()       # before any output: a bad state never overwrites a good checkpoint
                if cfg.output_every and step % cfg.output_every == 0 and not last:
                    self._outputs()
                if cfg.checkpoint_every and step % cfg.checkpoint_every == 0:
                    self._checkpoint()
                    self._manifest("running")
        except SimulationError as e:
            if bar is not None:
                bar.close()
            kept = latest_checkpoint(cfg.out) if cfg.out and self.root else None
            message = str(e) + (f" The last good checkpoint is kept: {kept}." if kept else "")
            self._manifest("diverged", message)
            error = SimulationError(message)
            if getattr(e, "collective", False):
                error.collective = True
            raise error from None
        except KeyboardInterrupt:
            self._manifest("interrupted")
            raise
        if bar is not None:
            bar.close()
        self._outputs(final=True)
        self._manifest("finished")
        mlups = self.steps_run * cfg.lx * cfg.ly / self.seconds / 1e6 if self.seconds > 0 else float("nan")
        return {"steps": sim.time_step, "steps_run": self.steps_run, "seconds": self.seconds, "mlups": mlups}
