"""A whole run, 2D or 3D: set-up, stepping with guards, outputs every K steps, checkpoints, resume.

Everything that defines a run is a ``RunConfig``; it is written to the run folder's
manifest.json, so ``resume(run_dir)`` needs nothing else.  A resumed run continues from
the newest checkpoint that verifies and is bit-identical to an uninterrupted one: the
populations are saved exactly, in the working precision, and nothing random happens
after the set-up.  The dimension is the velocity set's (``cfg.dimension``); what it changes
is decided where the objects are made (``lbgen.run.construct``: the layout, the lattice and
its rank grid; ``lbgen.run.numbers``: the physical numbers; ``lbgen.output.RunOutput``: the
pictures and series columns) and in the diagnostics sample (``lbgen.run.events``).
"""
from __future__ import annotations

import math
import shlex
import sys
import time
from pathlib import Path
from typing import Any, Callable, Mapping, Optional


from lbgen.run.checkpoint import CheckpointError, CheckpointPieces, latest_checkpoint, read_checkpoint
from lbgen.run.config import RunConfig
from lbgen.run.events import RunEvents
from lbgen.run.fieldfile import check_save_path, inspect_fields, saved_record
from lbgen.run.construct import (block_depths, initial_fields, initial_slabs, make_simulation, rank_grid, resolve,
                                 resolve_split)
from lbgen.run.geometry import load_geometry
from lbgen.model.velocity_set import velocity_set as get_velocity_set
from lbgen.system.limits import check_memory, check_threads
from lbgen.run.folder import RunFolder
from lbgen.simulation.runner import SimulationError
from lbgen.run.stopping import StopSignals


def run_shape(cfg: RunConfig, resume: bool = False):
    """The lattice of a run: an --init file's size read from its headers, unless the run is
    resumed (its manifest holds the size; the file may be gone); else the config's."""
    return inspect_fields(cfg.init, cfg.dimension) if cfg.init and not resume else cfg.shape


def check_run_memory(cfg: RunConfig, resume: bool = False) -> int:
    """check_memory for the run's lattice (``run_shape``; 3D: LX x LY x LZ) and its velocity
    set's Q, in its precision."""
    from lbgen.codegen.spec import arithmetic_bytes, population_buffers, storage_bytes
    from lbgen.codegen.storage import describe
    from lbgen.model.catalog import set_entry
    shape = run_shape(cfg, resume)
    entry = set_entry(cfg.velocity_set)
    return check_memory(shape, entry.Q, storage_bytes(cfg.precision, cfg.storage), describe(cfg.precision, cfg.storage),
                        halo=entry.max_hop, buffers=population_buffers(cfg.streaming),
                        real=arithmetic_bytes(cfg.precision),
                        # the fields made by slabs: one C region, not beside thermal walls across x
                        slabs=cfg.backend == "c" and not cfg.hetero and cfg.thermal_axis != "x")


class Run(RunEvents):
    """Drives one run folder, 2D or 3D.  ``Run(cfg).execute()`` or ``Run.resume(dir).execute()``.

    With an MPI communicator ``comm`` of several ranks (``mpiexec -n N lbgen run``) every
    rank builds its block of a distributed lattice
    (``lbgen.parallel.simulation.DistributedSimulation``, any D, on the grid ``--ranks-grid``,
    checked before any work); the ranks check that they share one RunConfig (hash), rank 0
    alone sets up the fields, writes the outputs and manifest from fields gathered to it and
    shows the progress bar; checkpoints are written in pieces (each rank its block, rank 0 the
    manifest) and a resume has each rank read the pieces over its block (a one-file
    checkpoint: read by rank 0 and scattered).  Everything else is the same.
    """

    def __init__(self, cfg: RunConfig, echo: Callable[[str], None] = print, comm=None, resume: bool = False,
                 overwrite: bool = False):
        """`resume`: the run folder holds this run (Run.resume); `overwrite`: a run already in
        cfg.out may be replaced (otherwise a new run into it is refused before any work)."""
        from lbgen.parallel.mpi import root_call
        if comm is not None and comm.size == 1 and cfg.dimension == 3:
            comm = None                          # one rank: the plain 3D lattice
        if cfg.init and not resume:             # the lattice is the --init file's (its headers only)
            shape = root_call(comm, lambda: inspect_fields(cfg.init, cfg.dimension), share=True)  # MPI: one refusal
            cfg = cfg.replace(**dict(zip(("lx", "ly", "lz"), shape)))
        self.cfg = cfg
        self.comm = comm
        self.root = comm is None or comm.rank == 0
        self.echo = echo if self.root else (lambda message: None)
        self.folder: Optional[RunFolder] = None
        #: the rank grid of a 3D run (PX, PY, PZ); 2D runs: the distributed lattice's ``dims``
        self.grid = (1, 1, 1) if cfg.dimension == 3 else None
        if comm is not None:
            from lbgen.parallel.mpi import check_same_config, collective
            check_same_config(comm, cfg.to_json())
            try:
                self._validate(cfg)
            except SimulationError as e:       # same config on every rank: every rank raises it
                raise collective(e)
            if cfg.dimension == 3:
                self.grid = rank_grid(cfg, comm.size)      # before the run folder is claimed
        else:
            self._validate(cfg)

        #: the --save file this run wrote ({"path", "sha256"}; a resumed run's from its manifest)
        self.saved = saved_record(cfg.out) if resume and cfg.out else None

        def claim():          # before anything is allocated or compiled
            check_run_memory(cfg, resume)
            if cfg.save:                             # an .npz, its folder writable, not another file: before the run
                mine = self.saved if self.saved and self.saved.get("path") == str(Path(cfg.save).resolve()) else {}
                check_save_path(cfg.save, overwrite, mine.get("sha256"), resume=resume)
            shape = run_shape(cfg, resume)[:2]
            if cfg.dpi is not None and cfg.out:
                from lbgen.output.pictures import check_dpi
                check_dpi(cfg.dpi, shape)
            if cfg.out and cfg.pictures and cfg.window not in (None, "auto"):
                from lbgen.output.pictures import check_window, parse_window
                check_window(parse_window(cfg.window), shape)
            if cfg.out:
                self.folder = RunFolder.claim(cfg.out, resume=resume, overwrite=overwrite, echo=self.echo)
        root_call(comm, claim)
        try:
            self._build(cfg, comm)
        except BaseException:
            self.close()
            if self.folder is not None:
                self.folder.discard_if_unused()      # a folder this run created and left empty
            raise

    def close(self) -> None:
        """Release the run folder (execute() does at its end; a later execute() takes it again)."""
        if self.folder is not None:
            self.folder.release()

    def _build(self, cfg: RunConfig, comm) -> None:
        from lbgen.parallel.mpi import root_call
        mask = load_geometry(cfg)            # --geometry: checked again, read on every rank
        cfg = root_call(comm, lambda: resolve(cfg, echo=self.echo, distributed=comm is not None, mask=mask,
                                              block_depths=block_depths(cfg, self.grid)), share=True)
        if cfg.hetero and cfg.host_columns is None:
            if comm is None:
                cfg = cfg.replace(host_columns=resolve_split(cfg, self.echo))
            else:   # rank 0 models its slab (the widest one); every rank uses its M
                from lbgen.parallel.decomposition import check_decomposition, slab_widths
                check_decomposition(cfg.lx, comm.size, get_velocity_set(cfg.velocity_set).max_hop)
                cfg = cfg.replace(host_columns=root_call(comm, lambda: resolve_split(cfg, self.echo, slab_widths(
                    cfg.lx, comm.size)[0]), share=True))
        self.cfg = cfg
        # one process, a set-up evaluated by slabs of X planes: its fields are never held whole
        slab = initial_slabs(cfg) if comm is None else None
        fields = root_call(comm, lambda: initial_fields(cfg)) if slab is None else None
        from lbgen.run.numbers import lid_speeds, reference_speeds, run_physics
        #: the run's physical numbers (lattice sites and steps): header, manifest, h5 attributes
        self.physics = run_physics(cfg, fields)
        self.sim = make_simulation(cfg, comm=comm, mask=mask, grid=self.grid)
        if slab is not None:
            self.sim.set_fields_by_slabs(slab)
        elif fields is not None:
            self.sim.set_fields(**fields)
        else:
            self.sim.set_fields()          # MPI ranks > 0: rank 0's fields are scattered
        self.T_hot = self.T_cold = None      # the mixing width's temperature contrast (2D series)
        if fields is not None and cfg.dimension == 2:
            T0 = fields["T"]
            if cfg.walls:
                self.T_hot, self.T_cold = cfg.wall_temperatures
            else:
                self.T_hot, self.T_cold = float(T0.max()), float(T0.min())
            if self.T_hot == self.T_cold:       # no temperature contrast: no mixing width (NaN), as in the API
                self.T_hot = self.T_cold = None
        self.colour_limits = None
        if (fields is not None or slab is not None) and cfg.out:
            from lbgen.output import PICTURE_QUANTITIES, colour_limits
            from lbgen.output.limits import Extremes
            # 3D: the lids' and the flow's reference speeds set the velocity range (2D: the fields')
            speeds = lid_speeds(cfg) + reference_speeds(self.physics) if cfg.dimension == 3 else ()
            if slab is not None:             # the initial fields' extremes, slab by slab
                from lbgen.simulation.slabs import slab_bounds
                fields = Extremes.of_slabs((slab(*b) for b in slab_bounds(cfg.lx, cfg.ly * cfg.lz, 1)), cfg.lx)
            self.colour_limits = colour_limits(PICTURE_QUANTITIES, fields, gravity=cfg.gravity,
                                               T_range=cfg.wall_temperatures, overrides=cfg.clim,
                                               r=self.physics["r"], speeds=speeds)
        self.output = None
        if cfg.out and self.root:

            def open_output():
                from lbgen.output import RunOutput
                walls = (cfg.wall_axes or "") + (cfg.thermal_axis or "")     # one-sided differences across them
                window = cfg.window if cfg.dimension == 2 else None     # 3D: the whole slices (--window refused)
                return RunOutput(cfg.out, pictures=cfg.pictures, fields_format=cfg.fields_format,
                                 colour_limits=self.colour_limits, dpi=cfg.dpi, window=window,
                                 time_unit=self.time_unit(), physics=self.physics, dimension=cfg.dimension,
                                 periodic=tuple(a not in walls for a in "xyz"[:cfg.dimension]))
            self.output = root_call(comm, open_output)
            if self.output is not None and mask is not None:      # the bodies drawn, and in the .vti
                self.output.solid = mask != 0
        elif cfg.out:
            root_call(comm, lambda: None)
        self._reset_counters()

    def _reset_counters(self) -> None:
        """The run's bookkeeping at its start: timing, samples, provenance, the fields cache."""
        self.resumed_from: Optional[int] = None
        self.seconds = 0.0
        self.steps_run = 0
        self.samples = 0                     # diagnostics samples taken (guard and series share one)
        self.dissipation = None              # the Taylor-Green dissipation record (RunEvents._dissipation)
        self.started_at = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        self.command = " ".join(shlex.quote(a) for a in [Path(sys.argv[0]).name, *sys.argv[1:]])
        self._versions = None
        self.field_evaluations = 0           # fields computed (once per event that needs them)
        self._fields_at, self._fields_cache = None, None
        self.started = False                 # the start's outputs are written once

    @staticmethod
    def _validate(cfg: RunConfig) -> None:
        check_threads(cfg.threads)           # the cap depends on this machine
        load_geometry(cfg)                   # --geometry: dtype and shape, before any file is written

    @property
    def series_every(self) -> int:
        """Steps between two rows of series.csv (``--series-every``, else resolved at the start:
        about 200 per run, a multiple of the time block so that the rows do not break the
        blocked sweeps)."""
        return self.cfg.series_every

    # --- resume ----------------------------------------------------------------------------
    @classmethod
    def resume(cls, run_dir, steps: Optional[int] = None, echo: Callable[[str], None] = print,
               comm=None, overrides: Optional[Mapping[str, Any]] = None) -> "Run":
        """Continue a run folder; with MPI, rank 0 reads the manifest and the checkpoint's
        manifest, and every rank the checkpoint pieces over its block (a one-file checkpoint:
        read by rank 0 and scattered).

        ``overrides``: options given again (flat keys of lbgen.run.config); harmless ones (steps,
        cadences, pictures, threads) are applied and recorded, any that would change the
        physics, lattice or kernels is refused, naming each."""
        from lbgen.parallel.mpi import root_call
        from lbgen.output import read_manifest
        run_dir = Path(run_dir)
        if comm is not None and comm.rank != 0:
            echo = lambda message: None  # noqa: E731

        def load_manifest():
            if run_dir.is_file():
                raise SimulationError(f"cannot resume {run_dir}: it is a file, not a run folder (give the --out DIR "
                                      f"of a run)")
            if not run_dir.is_dir():
                raise SimulationError(f"cannot resume {run_dir}: no such run folder (give the --out DIR of a run)")
            try:
                manifest = read_manifest(run_dir)
            except (OSError, ValueError) as e:
                reason = e.strerror if isinstance(e, OSError) and e.strerror else e
                raise SimulationError(f"cannot resume {run_dir}: no readable manifest.json ({reason})") from None
            config = manifest.get("config")
            if not isinstance(config, dict) or not config:
                raise SimulationError(f"cannot resume {run_dir}: its manifest.json holds no run description (no "
                                      f"'config' object; keys: {', '.join(sorted(manifest)) or 'none'}); it is not a "
                                      f"manifest lbgen run wrote, or it was emptied")
            return config
        from lbgen.parallel.mpi import same_on_every_rank
        config = root_call(comm, load_manifest, share=True)
        with same_on_every_rank(comm):       # the same manifest and options on every rank: one refusal
            cfg = RunConfig.from_json(config)
            cfg = cls._resumed_config(cfg, run_dir, steps, overrides)
        run = cls(cfg, echo=echo, comm=comm, resume=True)
        return cls._restore(run, cfg, run_dir, comm, echo)

    @staticmethod
    def _resumed_config(cfg: RunConfig, run_dir: Path, steps: Optional[int], overrides) -> RunConfig:
        """The manifest's run description with the options given again (harmless ones only)."""
        overrides = dict(overrides or {})
        out = overrides.pop("out", None)
        if out is not None and Path(out).resolve() != run_dir.resolve():
            raise SimulationError(f"--resume {run_dir} continues the run in that folder; --out {out} names another "
                                  f"folder. Leave --out out (the outputs go on in {run_dir}), or copy the folder "
                                  f"first and resume the copy")
        if steps is not None:
            overrides["steps"] = steps
        cfg = cfg.changes(overrides).replace(out=str(run_dir))
        if cfg.init and not Path(cfg.init).is_file():
            raise SimulationError(f"cannot resume {run_dir}: it started from --init {cfg.init}, whose fields set its "
                                  f"colour limits and reference numbers, and that file is no longer there; put it "
                                  f"back to resume")
        return cfg

    @staticmethod
    def _restore(run: "Run", cfg: RunConfig, run_dir: Path, comm, echo) -> "Run":
        """Load the newest good checkpoint of ``run_dir`` into ``run`` (checked against the
        manifest), or mark a run already at its --steps as having nothing to run."""
        from lbgen.parallel.mpi import root_call, same_on_every_rank

        def load_checkpoint():
            path = latest_checkpoint(run_dir, verify=False)
            if path is None:
                raise SimulationError(f"cannot resume {run_dir}: it has no checkpoint (run with --checkpoint-every K)")
            def open_checkpoint(found):
                """(populations, step, metadata, pieces folder): pieces on several ranks are read by
                every rank (restore_pieces), so rank 0 reads their manifest only."""
                if comm is not None and comm.size > 1 and found.is_dir():
                    saved = CheckpointPieces(found)
                    return None, saved.step, saved.metadata, str(found)
                return (*read_checkpoint(found), None)
            try:
                populations, step, meta, pieces = open_checkpoint(path)
            except CheckpointError as e:
                good = latest_checkpoint(run_dir, verify=True)
                if good is None:
                    raise SimulationError(f"cannot resume {run_dir}: {e}; no other checkpoint verifies") from None
                echo(f"warning: {e}; resuming from the previous good checkpoint {good.name}")
                populations, step, meta, pieces = open_checkpoint(good)
                path = good
            from lbgen.run.identity import check_checkpoint, check_manifest
            check_checkpoint(meta, run.cfg, path.name, run_dir, echo)    # a checkpoint of another run: refused
            check_manifest(meta, cfg, path.name, run_dir)     # the manifest describes the run that wrote it
            if meta.get("kernel_digest") not in (None, run.sim.source.digest):
                echo("note: the kernels differ from the ones that wrote the checkpoint (lbgen or compiler changed)")
            return populations, step, pieces
        try:
            loaded = root_call(comm, load_checkpoint)
            populations, step, pieces = loaded if loaded is not None else (None, None, None)
            if comm is not None:
                pieces = comm.bcast(pieces, root=0)
            if pieces is not None:
                run.sim.restore_pieces(CheckpointPieces(pieces))
            else:
                run.sim.restore(populations, step)
        except BaseException:
            run.close()                      # the folder is free again for a corrected command
            raise
        step = run.sim.time_step
        if cfg.steps < step:
            run.close()
            with same_on_every_rank(comm):
                raise SimulationError(f"--steps {cfg.steps} is below the step of the newest good checkpoint "
                                      f"of {run_dir} ({step}): a run cannot go back; give --steps above {step} to "
                                      f"continue it")
        if cfg.steps == step:
            echo(f"{run_dir} is already at step {step}: nothing to run (give --steps above {step} to continue); "
                 f"its outputs are left as they are")
            run.nothing_to_run = True
            run.resumed_from = step
            return run
        if run.output is not None:
            run.output.truncate(step)
        run.resumed_from = step
        echo(f"resuming {run_dir} at step {step} of {cfg.steps}")
        return run


    def _steady_now(self) -> bool:
        """--steady (flows around bodies): the drag's change between its means over the last two
        windows (lbgen.run.flows.drag_change) below the tolerance, judged on rank 0 and told to every
        rank (MPI), said once."""
        from lbgen.run.flows import FLOWS, drag_change, steady_window
        flow = FLOWS[self.cfg.setup]
        change = drag_change(flow, self.cfg, getattr(self, "force_history", [])) if self.root else None
        done = change is not None and change < self.cfg.steady
        if self.comm is not None:
            done = self.comm.bcast(done, root=0)
        if done and self.root:
            self.echo(f"steady at step {self.sim.time_step}: the drag's mean over the last {steady_window(flow, self.cfg):.0f} "
                      f"steps changed by {change:.3g} of it (--steady {self.cfg.steady:g})")
        return done

    def execute(self, progress: bool = False) -> dict:
        cfg, sim = self.cfg, self.sim
        if self.nothing_to_run:             # the folder's outputs and manifest stay as they are
            self.close()
            if cfg.save:
                self._persist(self._save, sim.time_step, save=cfg.save, manifest=False)
            return {"steps": sim.time_step, "steps_run": 0, "seconds": 0.0, "mlups": None}
        if self.folder is not None:
            self.folder.acquire(self.echo)
        try:
            with StopSignals(comm=self.comm, on_abort=self._abandon) as stop:   # MPI: the ranks agree
                return self._loop(cfg, sim, progress, stop)
        finally:
            self.close()

    def _loop(self, cfg: RunConfig, sim, progress: bool, stop: StopSignals) -> dict:
        first, self.started = not self.started, True
        series_every = self.series_every if cfg.out else 0
        pictures_every = cfg.pictures_every if cfg.out and cfg.pictures else 0
        events = [k for k in (cfg.output_every, cfg.checkpoint_every, cfg.check_every, series_every,
                              pictures_every) if k]
        if self.cfg.out and self.resumed_from is None and first:
            d = self._sample()
            self._persist(lambda: self._manifest("running"), sim.time_step)
            self._persist(lambda: self._series(d), sim.time_step)
            self._persist(self._outputs, sim.time_step)
        elif self.cfg.out:
            self._persist(lambda: self._manifest("running"), sim.time_step)
        bar = None
        depth = sim.time_block
        try:
            if progress and self.root:
                from tqdm import tqdm
                bar = tqdm(total=cfg.steps, initial=sim.time_step, unit="step", dynamic_ncols=True,
                           desc=cfg.setup if not cfg.init else "run")
            while sim.time_step < cfg.steps:
                # advance to the next multiple of any event period (or the end): whole blocked
                # sweeps while they fit, then single steps; a signal ends the current sweep
                nxt = min([cfg.steps] + [(sim.time_step // k + 1) * k for k in events])
                n = nxt - sim.time_step
                self._forget_fields()        # stale once the state moves on: not held through the sweeps
                t0 = time.perf_counter()
                done = 0
                while done < n and not self._stop_requested(stop):
                    k = depth if n - done >= depth else 1
                    sim.step(k)
                    done += k
                sim.synchronize()
                self.seconds += time.perf_counter() - t0
                self.steps_run += done
                if bar is not None:
                    bar.update(done)
                    bar.set_postfix(MLUPS=f"{self.steps_run * math.prod(cfg.shape) / max(self.seconds, 1e-12) / 1e6:.1f}")
                if stop.signal:
                    if bar is not None:
                        bar.close()
                        bar = None
                    self._stop(stop)
                step = sim.time_step
                last = step == cfg.steps
                output_due = bool(cfg.output_every and step % cfg.output_every == 0 and not last)
                checkpoint_due = bool(cfg.checkpoint_every and step % cfg.checkpoint_every == 0)
                frame_due = bool(pictures_every) and step % pictures_every == 0 and not output_due and not last
                guard_due = bool(cfg.check_every and step % cfg.check_every == 0) or last or output_due \
                    or checkpoint_due or frame_due   # health before persistence: a bad state is never written
                series_due = bool(series_every) and (step % series_every == 0 or last)
                if guard_due or series_due:
                    d = self._sample()       # one sample: the guard's and the series row's
                    if series_due:
                        self._persist(lambda: self._series(d), step)
                    if cfg.steady and not last and self._steady_now():
                        break
                if frame_due:
                    self._persist(self._frame, step)
                if output_due:
                    self._persist(self._outputs, step)
                if checkpoint_due:
                    self._persist(self._checkpoint, step)
                    self._persist(lambda: self._manifest("running"), step)
        except SimulationError as e:
            if bar is not None:
                bar.close()
            kept = latest_checkpoint(cfg.out, verify=True) if cfg.out and self.root else None
            message = str(e) + (f" The last healthy checkpoint is kept: {kept}." if kept else "")
            self._manifest("diverged", message)
            error = SimulationError(message)
            if getattr(e, "collective", False):
                error.collective = True
            raise error from None
        except KeyboardInterrupt:
            self._manifest("interrupted", f"interrupted at step {sim.time_step} (second signal: no checkpoint)")
            raise
        if bar is not None:
            bar.close()
        self._persist(lambda: self._outputs(final=True), sim.time_step)
        if cfg.save:                          # rank 0 writes it: a failure is every rank's (status failed)
            self._persist(self._save, sim.time_step, save=cfg.save)
        self._persist(lambda: self._manifest("finished"), sim.time_step)
        return {"steps": sim.time_step, "steps_run": self.steps_run, "seconds": self.seconds, "mlups": self.mlups()}
