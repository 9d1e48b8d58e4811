"""What every `lbgen` command shares: the error type, turning library errors into clean
messages, MPI-aware failure handling and small option parsers."""
from __future__ import annotations

import math
import sys

import click


class UserError(click.ClickException):
    """Shown as 'Error: ...' with exit status 2, without a traceback."""
    exit_code = 2


def friendly(fn):
    """Turn the library's validation errors into clean CLI errors."""
    import functools

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except Exception as e:
            from lbgen.backends.build import BackendUnavailable, CompileError
            from lbgen.codegen.spec import SpecError
            from lbgen.run.stopping import RunInterrupted
            from lbgen.simulation.parameters import SimulationError
            from lbgen.system.paths import describe_os_error
            if isinstance(e, BrokenPipeError):    # `lbgen info | head`: the reader left; nothing to say
                stdout_gone()
            comm = mpi_comm()
            if isinstance(e, RunInterrupted):     # Ctrl-C / SIGTERM (MPI: every rank together): what was kept
                if comm is None or comm.rank == 0:
                    click.echo(str(e), err=True)
                sys.exit(e.exit_code)
            if comm is not None:
                mpi_failure(comm, e)
            if isinstance(e, (SpecError, SimulationError, BackendUnavailable, ValueError)):
                raise UserError(str(e)) from None
            if isinstance(e, CompileError):
                raise click.ClickException(str(e)) from None
            if isinstance(e, OSError):            # read-only folders, HOME=/, a full disk: no traceback
                raise UserError(describe_os_error(e, "a file")) from None
            raise
    return wrapper


def stdout_gone():
    """The reader of stdout went away (a pipe into head): point stdout at /dev/null so that
    nothing more fails at exit, and end with status 1, quietly (as click does)."""
    import os
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    sys.exit(1)


def any_set_option(fn):
    """--velocity-set for info, emit, verify and bench: every set of the catalogue, 2D and 3D (a
    combination a command cannot take is refused by it in words)."""
    from lbgen.model.catalog import DEFAULT_VELOCITY_SET, MODEL_SETS, sets_help
    return click.option("--velocity-set", default=DEFAULT_VELOCITY_SET, show_default=True,
                        type=click.Choice(list(MODEL_SETS), case_sensitive=False),
                        help=f"Lattice: {sets_help()}.")(fn)


def mpi_comm():
    """The communicator of an MPI launch (``mpiexec -n N lbgen ...``), else None; mpi4py is
    imported only when a launcher's environment variables are present."""
    from lbgen.parallel import mpi
    return mpi.active()


def _launch_env(names, default: int) -> int:
    import os
    for k in names:
        v = os.environ.get(k, "")
        if v.isdigit():
            return int(v)
    return default


def mpi_launch_size() -> int:
    """How many ranks an MPI launcher started (its environment; 1 outside mpiexec); MPI itself
    is not started."""
    from lbgen.parallel.mpi import SIZE_ENV
    return _launch_env(SIZE_ENV, 1)


def mpi_launch_rank() -> int:
    """This process's rank from the launcher's environment (0 outside mpiexec)."""
    return _launch_env(("PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK"), 0)


def one_process_only(message: str):
    """Refuse a command that runs on one process when an MPI launcher started several: the
    message once, from rank 0; every rank exits with status 2 (no MPI is started, nothing waits)."""
    if mpi_launch_rank() == 0:
        raise UserError(message)
    sys.exit(UserError.exit_code)


def mpi_failure(comm, e):
    """An error in an MPI run: one every rank raised together is printed once (rank 0) and
    every rank exits with status 2; an error of one rank is printed there and aborts all."""
    from lbgen.parallel import mpi
    if mpi.is_collective(e):
        if comm.rank == 0:
            raise UserError(str(e)) from None
        sys.exit(2)
    mpi.abort(comm, e, code=2)


def vl_option(value, allow_auto=False):
    if value is None or value == "":
        return None
    from lbgen.codegen.layouts import LayoutError, check_vl
    try:
        return check_vl(value, allow_auto=allow_auto)
    except LayoutError as e:
        raise click.BadParameter(str(e)) from None


class FiniteFloatRange(click.FloatRange):
    """click.FloatRange that also refuses NaN and +-Inf (a NaN compares false with every bound,
    so FloatRange alone lets ``--latency nan`` through)."""

    def convert(self, value, param, ctx):
        rv = super().convert(value, param, ctx)
        if not math.isfinite(rv):
            where = "" if self.min is None and self.max is None else f" in the range {self._describe_range()}"
            self.fail(f"{value!r} is not a finite number; give a finite number{where}", param, ctx)
        return rv
