"""Figures in one line, for notebooks: a field, a time series, a run folder.

>>> from lbgen import plot
>>> plot.field(sim, "vorticity")                 # a Simulation's current state
>>> plot.run("runs/rt", "T", step=4000)          # a saved step with the run's colour limits
>>> plot.series("runs/rt")                       # every series.csv quantity against time
>>> plot.movie("runs/rt", "T", "rt.mp4")         # one frame per saved step (.mp4 or .gif)

Every function returns a ``matplotlib.figure.Figure`` (Jupyter shows it; ``fig.savefig``
writes it); nothing touches pyplot's global state.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Optional, Sequence, Union

from lbgen.output.folder import RunResults, write_movie
from lbgen.output.pictures import field_figure
from lbgen.output.series import read_series, series_figure

PathLike = Union[str, os.PathLike]


def field(source, quantity: str = "T", *, clim: Optional[Sequence[float]] = None, cmap: Optional[str] = None,
          dpi: Optional[float] = None, step: Optional[int] = None, time: Optional[float] = None):
    """A picture of one field of *source*: a ``Simulation`` (its current state, titled with its
    step and time), a dict of (LX, LY) arrays rho, ux, uy, T, or a saved field file (.h5/.npz).
    *clim* (lo, hi) fixes the colour range (default: the state's own range)."""
    from lbgen.output.fields import read_field_file
    if hasattr(source, "fields") and callable(source.fields):          # a Simulation
        data = source.fields()
        step = source.time_step if step is None else step
        time = step / source.vs.r if time is None else time
    elif isinstance(source, (str, os.PathLike)):
        data = read_field_file(source)
        step = data["step"] if step is None else step
        time = data.get("time") if time is None else time
    else:
        data = source
    return field_figure(quantity, data, limits=clim, step=step, time=time, cmap=cmap, dpi=dpi)


def run(run_dir: PathLike, quantity: str = "T", step: Optional[int] = None, *, clim: Optional[Sequence[float]] = None,
        cmap: Optional[str] = None, dpi: Optional[float] = None):
    """A saved step of a run folder (default: the last) with the run's colour limits."""
    return RunResults(run_dir).figure(quantity, step, clim=clim, cmap=cmap, dpi=dpi)


def series(source: PathLike, T_walls: Optional[tuple] = None):
    """series.png of a run folder (or of a series.csv, or of a dict of columns)."""
    if isinstance(source, dict):
        return series_figure(source, T_walls=T_walls)
    path = Path(source)
    if path.is_dir():
        folder = RunResults(path)
        return series_figure(folder.series(), T_walls=T_walls or folder.wall_temperatures())
    return series_figure(read_series(path), T_walls=T_walls)


def movie(run_dir: PathLike, quantity: str, path: PathLike, **options) -> dict:
    """Write a movie of a run folder (see ``lbgen.output.folder.write_movie``)."""
    return write_movie(RunResults(run_dir), quantity, path, **options)
