"""Figures in one line, for notebooks: a field, a time series, a run folder.

>>> from lbgen import plot
>>> plot.field(sim, "vorticity")                 # a Simulation's current state
>>> plot.run("runs/rt", "T", step=4000)          # a saved step with the run's colour limits
>>> plot.series("runs/rt")                       # every series.csv quantity against time
>>> plot.movie("runs/rt", "T", "rt.mp4")         # the run's movie frames (or saved steps), .mp4 or .gif
>>> plot.field(sim, "T", window="auto", time_unit=(4254.0, r"$\tau$"))   # crop, time in the flow's unit

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
          dpi: Optional[float] = None, step: Optional[int] = None, time: Optional[float] = None, window=None,
          time_unit=None, r: Optional[float] = None, arrows: Optional[bool] = None):
    """A picture of one field of *source*: a ``Simulation`` (its current state, titled with its
    step and time), a dict of (LX, LY) arrays rho, ux, uy, T, or a saved field file (.h5/.npz).
    *clim* (lo, hi) fixes the colour range (default: the state's own range); *window*
    ``((x0, x1), (y0, y1))`` in sites, ``'x0:x1,y0:y1'`` or ``'auto'`` crops it; *time_unit*
    ``(steps per unit, label)`` adds the time in the flow's unit to the title; with the velocity
    set's *r* (a Simulation's own) velocities are drawn in sites per step; *arrows* (default:
    for the speed) draws the velocity's direction over the picture."""
    from lbgen.output.pictures import parse_window
    from lbgen.output.fields import read_field_file
    if hasattr(source, "fields") and callable(source.fields):          # a Simulation
        data = source.fields()
        step = source.time_step if step is None else step
        time = step / source.vs.r if time is None else time
        r = source.vs.r if r is None else r
    elif isinstance(source, (str, os.PathLike)):
        data = read_field_file(source)
        step = data["step"] if step is None else step
        time = data.get("time") if time is None else time
    else:
        data = source
    return field_figure(quantity, data, limits=clim, step=step, time=time, cmap=cmap, dpi=dpi,
                        window=parse_window(window), time_unit=time_unit, r=r, arrows=arrows)


def run(run_dir: PathLike, quantity: str = "T", step: Optional[int] = None, *, clim: Optional[Sequence[float]] = None,
        cmap: Optional[str] = None, dpi: Optional[float] = None, window=None):
    """A saved step of a run folder (default: the last) with the run's colour limits, window
    (or *window*: ``'auto'``, ``'full'``, ``'x0:x1,y0:y1'``) and time unit."""
    return RunResults(run_dir).figure(quantity, step, clim=clim, cmap=cmap, dpi=dpi, window=window)


def series(source: PathLike, T_walls: Optional[tuple] = None, time_unit=None):
    """series.png of a run folder (or of a series.csv, or of a dict of columns); *time_unit*
    ``(steps per unit, label)``: time in the flow's unit (a run folder's own by default)."""
    if isinstance(source, dict):
        return series_figure(source, T_walls=T_walls, time_unit=time_unit)
    path = Path(source)
    if path.is_dir():
        folder = RunResults(path)
        return series_figure(folder.series(), T_walls=T_walls or folder.wall_temperatures(),
                             r=folder.velocity_scale_factor(),
                             time_unit=time_unit or folder.time_unit())
    return series_figure(read_series(path), T_walls=T_walls, time_unit=time_unit)


def movie(run_dir: PathLike, quantity: str, path: PathLike, **options) -> dict:
    """Write a movie of a run folder (see ``lbgen.output.folder.write_movie``)."""
    return write_movie(RunResults(run_dir), quantity, path, **options)
