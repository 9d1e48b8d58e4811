"""What a run does at its events, between the blocked sweeps of ``lbgen.run.driver.Run``'s loop:
the diagnostics sample (shared by the guard and the series), the fields (computed once per
event), the outputs, movie frames, checkpoints (one file, or per-rank pieces under MPI), the
--save file, the manifest, and the writes' failure and signal handling.  Any dimension: the
one branch on D is the sample (the 3D diagnostics kernel's per-line rows)."""
from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Any, Callable, Optional

from lbgen import __version__
from lbgen.run.checkpoint import checkpoint_path, pieces_path, prune_checkpoints, write_checkpoint, write_pieces
from lbgen.run.checkpoint_file import ChunkedArray
from lbgen.run.construct import device_description, kernel_calls
from lbgen.run.folder import RunFolderError, resume_command, write_failure
from lbgen.run.stopping import RunInterrupted, StopSignals


class RunEvents:
    """The event half of a ``Run`` (a mixin): needs ``cfg``, ``sim``, ``comm``, ``root``,
    ``output``, ``physics``, ``grid``, ``T_hot``/``T_cold`` and the counters of ``Run``."""

    def _sample(self):
        """One diagnostics sample of the current state, shared by the guard and the series: the
        backends' per-row kernels (per row (2D) or line (3D) over x, combined on rank 0 by the
        distributed lattice with MPI).  A bad sample (NaN/Inf, rho or T <=
        0) runs the full check, which names the first bad site.  Returns the global scalars on
        rank 0 (None elsewhere)."""
        from lbgen.codegen.diagnostics import scalars, scalars3d
        #: the force on each body at this sample (collective with MPI: rank 0's; None without bodies)
        self._forces = self.sim.forces() if getattr(self.sim, "bodies", None) is not None else None
        if self._forces:                     # the force signal of the run's summary (C_D, C_L max, St)
            self.force_history = getattr(self, "force_history", [])
            self.force_history.append((self.sim.time_step, sum(self._forces.values())))
        rows = self.sim.diagnostic_rows()
        self.samples += 1
        across_x = self.cfg.dimension == 2 and self.cfg.thermal_axis == "x"
        fields = self._fields() if across_x else None        # collective with MPI: on every rank
        if rows is None:
            return self._guarded(None)
        if self.cfg.dimension == 3:
            return self._guarded(scalars3d(rows))
        d = scalars(rows, self.cfg.lx, self.T_hot, self.T_cold)
        if across_x and not math.isnan(d["mixing_width"]) and fields is not None:
            # the rows run along the walls here: the mixing width of the profile across them (<T> over y)
            from lbgen.codegen.diagnostics import mixing_width
            d["mixing_width"] = mixing_width(fields["T"].astype(float).mean(axis=1), self.T_hot, self.T_cold)
        return self._guarded(d)

    def _guarded(self, d):
        """The sample d (rank 0's scalars, None elsewhere), after the guard: where rank 0 finds it
        unhealthy every rank runs the full check, which raises naming the first bad site."""
        from lbgen.codegen.diagnostics import healthy
        bad = d is not None and not healthy(d)
        if self.comm is not None:
            bad = self.comm.bcast(bad, root=0)
        if bad:
            self.sim.check_finite()
        return d

    def _series(self, d) -> None:
        nu = self._nusselt()                  # collective with MPI (the fields, gathered to rank 0)
        if self.output is not None and d is not None:
            step = self.sim.time_step
            force = self._body_force()
            from lbgen.run.flows import FLOWS, force_coefficients
            flow = FLOWS.get(self.cfg.setup)
            coefficients = None if flow is None or force is None else \
                [float(c) for c in force_coefficients(flow, self.cfg, force)[:2]]
            self.output.append_series(step, step / self.sim.vs.r, d, force=force, coefficients=coefficients,
                                      nusselt=nu)

    def _nusselt(self) -> Optional[dict]:
        """A rayleigh-benard run's Nusselt numbers of the current state
        (``lbgen.model.convection.nusselt`` of the fields, computed once per event and shared
        with the outputs at that step), on rank 0; None elsewhere and for other set-ups."""
        from lbgen.run.convection import layer
        where = layer(self.cfg, self.physics) if self.cfg.setup == "rayleigh-benard" else None
        if where is None:
            return None
        fields = self._fields()
        if fields is None or not self.root:
            return None
        from lbgen.model.convection import nusselt
        from lbgen.output.widened import widened
        self.last_nusselt = nusselt(widened(fields), where)
        return self.last_nusselt

    def body_forces(self) -> dict:
        """{body name: the force on it (D components, model units)} of the last step sampled (the run's
        last step at its end; rank 0's under MPI); {} without bodies."""
        return getattr(self, "_forces", None) or {}

    def _body_force(self):
        """The force on the run's body (all bodies: D components, model units) of the last step, or None."""
        forces = self.body_forces()
        return sum(forces.values()) if forces else None

    def _fields(self):
        """The fields of the current state, made once per event (gathered to rank 0 with MPI), in
        the arithmetic precision (float32 in single); the outputs read them as float64
        (``lbgen.output.widened``), the bits of ``Simulation.fields()``.  A one-process 3D lattice's
        are made by slabs as each writer reads them (``_made_fields``), never the five whole arrays."""
        if self._fields_at != self.sim.time_step:
            self._forget_fields()            # the stale set goes before the new one is made: one set at a time
            self._fields_cache = self._made_fields()
            self._fields_at = self.sim.time_step
            self.field_evaluations += 1
        return self._fields_cache

    def _made_fields(self):
        """A 3D lattice's fields made by slabs of X planes when a writer reads them (``SlabbedFields``:
        never the five whole arrays beside the populations), else ``Simulation.fields(native=True)``."""
        by_slabs = getattr(self.sim, "fields_by_slabs", None)
        made = by_slabs(native=True) if by_slabs is not None and self.cfg.dimension == 3 else None
        if made is None:
            return self.sim.fields(native=True)
        from lbgen.model.catalog import field_names
        from lbgen.output.slabbed import SlabbedFields
        dtype, bounds, compute = made
        return SlabbedFields(field_names(3), self.sim.shape, dtype, bounds, compute)

    def _forget_fields(self) -> None:
        """Release the last event's fields (D + 2 arrays of the lattice, 40 B a cell in 3D): a run's
        sweeps and its checkpoints do not hold them (``_fields`` makes them again at the next event)."""
        self._fields_at, self._fields_cache = None, None

    def _outputs(self, final: bool = False) -> None:
        if not self.cfg.out:
            return
        step = self.sim.time_step
        fields = self._fields()              # collective with MPI: gathered to rank 0
        if self.output is None:
            return
        time = step / self.sim.vs.r
        self.output.write_fields(step, fields, time=time)
        if self.cfg.pictures:
            from lbgen.output.widened import widened
            self.output.write_pictures(step, widened(fields), time=time)
        if final:
            self.output.finish()             # an 'auto' window: every picture redrawn in the final one
            self.output.plot_series(T_walls=self.cfg.wall_temperatures)
            if self.physics.get("t_unit_name") == "t_c":      # the Taylor-Green vortex
                self._dissipation()

    def _dissipation(self) -> None:
        """dissipation.csv / .png of the Taylor-Green vortex from series.csv (``lbgen.output.dissipation``):
        its peak against the reference DNS goes to the manifest and the run summary."""
        from lbgen.output.dissipation import DISSIPATION_FILES, write_dissipation
        paths = [self.output.run_dir / name for name in DISSIPATION_FILES]
        self.output.record(paths)
        self.dissipation = write_dissipation(self.output.run_dir, self.output.read_series(), self.physics,
                                             math.prod(self.cfg.shape), label=self.cfg.collision, dpi=self.cfg.dpi)
        self.output.seal(paths)

    def _save(self) -> None:
        """--save: the final fields (the final outputs' own), written by rank 0."""
        from lbgen.run.fieldfile import save_fields
        fields = self._fields()              # collective with MPI
        if self.root:
            sim = self.sim
            shape = dict(zip(("lx", "ly", "lz"), self.cfg.shape))
            path = save_fields(self.cfg.save, fields, steps=sim.time_step, r=sim.vs.r,
                               spec=json.dumps(sim.spec.__dict__), **shape)
            from lbgen.system.cache import file_digest
            self.saved = {"path": str(Path(path).resolve()), "sha256": file_digest(path)}

    def time_unit(self):
        """The flow's own time unit for pictures, series and VTK files, (steps, label):
        ``lbgen.model.physics.time_unit`` of the run's numbers (t_RT, a lid transit, ...), or None."""
        from lbgen.model.physics import time_unit
        return time_unit(self.physics)

    def _frame(self) -> None:
        """A movie frame of the current state (between field outputs)."""
        step = self.sim.time_step
        fields = self._fields()              # collective with MPI
        if self.output is not None:
            from lbgen.output.widened import widened
            self.output.write_frame(step, widened(fields), time=step / self.sim.vs.r)

    def final_fields(self):
        """The fields after the last step (the ones the final outputs were written from), read as
        float64 one array at a time (``lbgen.output.widened``: a mapping, None off rank 0)."""
        from lbgen.output.widened import widened
        return widened(self._fields())

    def _checkpoint(self) -> Path:
        """Write a checkpoint of the current state -- the caller has checked its health, so
        every checkpoint is a healthy one and pruning (the newest kept) keeps the newest
        healthy one."""
        step = self.sim.time_step
        from lbgen.run.identity import identity_metadata
        meta = {"kernel_digest": self.sim.source.digest, "lbgen": __version__, "healthy": True,
                "physics": self.cfg.physics(), "config": self.cfg.to_json(), **identity_metadata(self.cfg)}
        if self.comm is not None:            # several ranks: each writes its piece, rank 0 the manifest
            path = write_pieces(pieces_path(self.cfg.out, step), self.sim.state_pieces(), step, grid=self.sim.dims,
                                lattice=self.sim.lattice, velocity_set=self.cfg.velocity_set, metadata=meta,
                                comm=self.comm)
        else:
            sim = self.sim                   # streamed one population's slab at a time: no copy of the lattice
            state = ChunkedArray((sim.vs.Q, *sim.shape), sim.dtype, sim.state_chunks)
            path = write_checkpoint(checkpoint_path(self.cfg.out, step), state, step, meta)
        if self.root:
            prune_checkpoints(self.cfg.out, keep=max(1, self.cfg.keep_checkpoints))
        return path

    def _manifest(self, status: str, error: Optional[str] = None) -> None:
        if self.output is None:
            return
        from lbgen.output import environment_versions
        if self._versions is None:       # once per run: gcc --version and git are processes
            self._versions = environment_versions()
        self.output.write_manifest({
            "lbgen": __version__,
            "status": status,
            "error": error,
            "config": self.cfg.to_json(),
            "colour_limits": self.colour_limits,
            "physics": self.physics,
            "series_every": self.series_every,
            "step": self.sim.time_step,
            "resumed_from": self.resumed_from,
            "saved": self.saved,
            "device": self._device(),
            "mlups": self.mlups(),
            "seconds": self.seconds,
            "sweeps": dict(self.sim.sweeps),
            "kernel_calls": kernel_calls(self.sim),
            "samples": self.samples,
            "bodies": self._bodies_record(),
            "dissipation": self.dissipation,
            "versions": self._versions,
            "command": self.command,
            "started": self.started_at,
            "written": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        })

    def _bodies_record(self) -> Optional[dict]:
        """The manifest's bodies: the bounce-back on them, their links and the force on each (last step)."""
        links = getattr(self.sim, "bodies", None)
        if links is None:
            return None
        counts = links.count()
        return {"body_bc": links.scheme, "units": "model units (momentum per model time; docs/physics.md)",
                "forces": {n: [float(c) for c in f] for n, f in self.body_forces().items()},
                "links": counts}

    def _device(self) -> dict:
        """The kernels (and, in 2D, the regions) of the run, for the manifest."""
        return device_description(self.sim, self.grid)

    def mlups(self) -> Optional[float]:
        """Million lattice updates per second of the steps run (None when none were timed)."""
        if self.steps_run <= 0 or self.seconds <= 0:
            return None
        return self.steps_run * math.prod(self.cfg.shape) / self.seconds / 1e6

    def _agreed(self, what: Callable[[], Any]) -> Any:
        """what() (a write); with MPI the ranks agree on its outcome first (rank 0 writes most
        files alone): an OSError on any rank is the same OSError on every rank."""
        failed, result = None, None
        try:
            result = what()
        except OSError as e:
            if self.comm is None:
                raise
            failed = e
        if self.comm is not None:
            from lbgen.parallel.mpi import agree
            agree(self.comm, failed)
        return result

    def _persist(self, what: Callable[[], Any], step: int, save=None, manifest: bool = True) -> Any:
        """Write outputs, a checkpoint or (``save``: its path) the --save file; a full disk or an
        unwritable folder ends the run with a message naming the last good checkpoint (older
        ones are intact: writes are atomic) and the command that continues it.  With MPI a
        write that failed on any rank fails on every rank alike (``_agreed``): one message,
        status "failed" (``manifest=False``: the manifest is left as it is)."""
        try:
            return self._agreed(what)
        except OSError as e:
            message = write_failure(e, self.cfg.out, step, self.cfg.steps, save=save)
            try:
                if manifest:
                    self._manifest("failed", message)
            except OSError:
                pass
            error = RunFolderError(message)
            if getattr(e, "collective", False):      # MPI: every rank failed this write together
                error.collective = True
            raise error from None

    def _stop_requested(self, stop: StopSignals) -> bool:
        """Whether a signal asks the run to end after the current sweep.  With MPI a collective
        (called once per sweep on every rank): the ranks agree, so all stop after the same step."""
        return stop.requested()

    def _abandon(self, signum: int) -> None:
        """A second signal under MPI (every rank is about to be aborted): the manifest says so."""
        import signal
        if self.output is not None:
            name = signal.Signals(signum).name
            self._manifest("interrupted", f"interrupted by a second {name} at step {self.sim.time_step} of "
                                          f"{self.cfg.steps}: every rank stopped at once; continue from the newest "
                                          f"checkpoint with: {self._resume_command()}")

    def _resume_command(self) -> str:
        command = resume_command(self.cfg.out, self.cfg.steps)
        return f"mpiexec -n {self.comm.size} {command}" if self.comm is not None else command

    def _interrupted(self, message: str, signum: int) -> RunInterrupted:
        """RunInterrupted; with MPI every rank raises it together (collective: printed once)."""
        error = RunInterrupted(message, signum)
        if self.comm is not None:
            error.collective = True
        return error

    def _stop(self, stop: StopSignals) -> None:
        """End the run on SIGINT/SIGTERM after a whole step: checkpoint (with a run folder),
        manifest 'interrupted', and the command that resumes it."""
        step = self.sim.time_step
        where = f"{stop.name} at step {step} of {self.cfg.steps}"
        if not self.cfg.out:
            raise self._interrupted(f"interrupted by {where}; nothing was saved (no run folder: give --out DIR "
                                    f"to keep checkpoints)", stop.signal)
        self.sim.check_finite()              # a diverged state is reported, never checkpointed
        kept = self._persist(self._checkpoint, step)   # with MPI: every rank writes its piece
        self._manifest("interrupted", f"interrupted by {where}")
        raise self._interrupted(f"interrupted by {where}; checkpoint written: {kept}. Continue with:\n"
                                f"  {self._resume_command()}", stop.signal)

    #: a resumed run already at its --steps (Run.resume): execute writes nothing
    nothing_to_run = False
