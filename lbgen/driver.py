"""A whole run: set-up, stepping with guards, outputs every K steps, checkpoints, resume.

Everything that defines a run is a ``RunConfig``; it is written to the run folder's
manifest.json, so ``resume(run_dir)`` needs nothing else.  A resumed run continues from
the newest checkpoint that verifies and is bit-identical to an uninterrupted one: the
populations are saved exactly, in the working precision, and nothing random happens
after the set-up.
"""
from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Callable, Mapping, Optional


from . import __version__
from .checkpoint import CheckpointError, checkpoint_path, latest_checkpoint, prune_checkpoints, read_checkpoint, write_checkpoint
from .config import RunConfig
from .model.velocity_set import velocity_set as get_velocity_set
from .runner import Simulation, SimulationError, Walls, load_fields
from .setups import SETUPS

def _initial_fields(cfg: RunConfig):
    if cfg.init:
        return load_fields(cfg.init)
    return SETUPS[cfg.setup].fields(cfg.lx, cfg.ly, seed=cfg.seed, amplitude=cfg.amplitude, gravity=cfg.gravity,
                                    walls=cfg.walls, thermal=not get_velocity_set(cfg.velocity_set).isothermal)


def make_simulation(cfg: RunConfig, host_columns: Optional[int] = None, lx: Optional[int] = None,
                    device: bool = True, comm=None) -> Simulation:
    """The Simulation of a config; for host + device runs with `host_columns` M (or cfg's).

    With an MPI communicator `comm` of several ranks: this rank's part of a
    ``lbgen.mpi_simulation.DistributedSimulation`` (collective)."""
    walls = Walls(**cfg.walls) if cfg.walls else None
    common = dict(layout=cfg.layout, vl=cfg.vl, precision=cfg.precision, collision=cfg.collision,
                  gravity=cfg.gravity, fused=cfg.fused, threads=cfg.threads, strict=cfg.strict, check_every=0,
                  walls=walls, velocity_set=cfg.velocity_set, **cfg.parameters)
    if cfg.device and cfg.backend == "opencl":
        common["backend_options"] = {"device": cfg.device}   # the OpenCL device of a plain OpenCL run
    lx = cfg.lx if lx is None else lx
    if comm is not None:
        from .mpi_simulation import DistributedSimulation
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
    from . import perfmodel
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


def _device_description(sim: Simulation) -> dict:
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


class Run:
    """Drives one run folder.  ``Run(cfg).execute()`` or ``Run.resume(dir).execute()``.

    With an MPI communicator ``comm`` of several ranks (``mpiexec -n N lbgen run``) every
    rank builds its slab of a ``lbgen.mpi_simulation.DistributedSimulation``; the ranks check that
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
               comm=None, overrides: Optional[Mapping[str, Any]] = None) -> "Run":
        """Continue a run folder; with MPI, rank 0 reads the manifest and checkpoint, the
        state is scattered to every rank.

        ``overrides``: options given again (flat keys of lbgen.config); harmless ones (steps,
        cadences, pictures, threads) are applied and recorded, any that would change the
        physics, lattice or kernels is refused, naming each."""
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
        overrides = dict(overrides or {})
        overrides.pop("out", None)
        if steps is not None:
            overrides["steps"] = steps
        cfg = cfg.changes(overrides)
        cfg.out = str(run_dir)
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
            saved = meta.get("physics")
            if saved is not None and saved != json.loads(json.dumps(cfg.physics())):
                diff = [k for k in saved if saved.get(k) != json.loads(json.dumps(cfg.physics())).get(k)]
                raise SimulationError(f"cannot resume {run_dir}: its checkpoint {path.name} was written by another run "
                                      f"(it differs in {', '.join(diff)}: {', '.join(f'{k}={saved.get(k)!r}' for k in diff)})")
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
                         {"kernel_digest": self.sim.source.digest, "lbgen": __version__,
                          "physics": self.cfg.physics(), "config": self.cfg.to_json()})
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
