"""`lbgen movie` and `lbgen plot`: movies and pictures re-rendered from a run folder."""
from __future__ import annotations

from pathlib import Path

import click

from lbgen.cli.common import UserError, friendly, one_process_only
from lbgen.output.folder import (DEFAULT_FPS, MIN_SECONDS, MOVIE_SUFFIXES, MovieWarning, RunResults, check_fps,
                                 check_output, output_file, parse_steps, write_movie)
from lbgen.output.pictures import PICTURE_QUANTITIES, PICTURES_DIR, clim_of, parse_window, picture_name


def plot_name(quantity: str, step: int) -> str:
    """``plot-T-000004000.png``: a picture lbgen plot writes into a run's pictures/ (beside, never
    over, the run's own ``T-000004000.png``)."""
    return f"plot-{picture_name(quantity, step)}"


def _check_cmap(cmap):
    if cmap is None:
        return
    import matplotlib
    if cmap not in matplotlib.colormaps:
        raise UserError(f"--cmap {cmap!r} is not a matplotlib colour map (e.g. inferno, viridis, RdBu_r, cividis)")


_FIELD = click.option("--field", "quantity", default="T", show_default=True,
                      type=click.Choice(PICTURE_QUANTITIES), help="The quantity to draw.")
_CLIM = click.option("--clim", default=None, metavar="[FIELD=]LO,HI",
                     help="Colour limits of the field drawn, as for lbgen run (default: the run's, manifest.json).")
_CMAP = click.option("--cmap", default=None, help="A matplotlib colour map (default: inferno for T, viridis for rho, "
                     "RdBu_r for vorticity and velocities, magma for speed).")
_DPI = click.option("--dpi", type=float, default=None,
                    help="Resolution in dots per inch, within what gives a long side of 16 to 16384 px "
                         "(default: 1200 px on the long side for movies, the run's for plot).")
_OVERWRITE = click.option("--overwrite", is_flag=True, help="Replace an existing output file.")
_WINDOW = click.option("--window", default=None, metavar="x0:x1,y0:y1|auto|full",
                       help="The part of the lattice to draw, in sites (half-open; an end left out is the edge, "
                            "e.g. :,100:300); auto: the rows where the flow differs visibly from the wall layers in "
                            "any recorded step; full: the whole lattice (default: the run's --window).")


def _picture_options(fn):
    """The options movie and plot share: colour limits, colour map, resolution, window, overwrite."""
    for option in (_OVERWRITE, _WINDOW, _DPI, _CMAP, _CLIM):
        fn = option(fn)
    return fn


def _results(run_dir, command: str) -> RunResults:
    """The run folder a post-processing command reads: refused, before any work, when the
    command was started under mpiexec with several ranks (it would render once per rank), or
    by RunResults when it is a file or no run folder."""
    from lbgen.cli.common import mpi_launch_size
    size = mpi_launch_size()
    if size > 1:
        one_process_only(f"lbgen {command} renders on one process; run it without mpiexec (under mpiexec -n "
                         f"{size} each rank would render it)")
    return RunResults(run_dir)             # a file, a missing folder: refused there (one home)


def _window(text):
    try:
        return parse_window(text)
    except ValueError as e:
        raise UserError(str(e)) from None


@click.command(short_help="A movie of a run folder's frames or saved steps (mp4 or gif).")
@click.argument("run_dir", type=click.Path(path_type=Path))
@_FIELD
@click.option("-o", "--output", type=click.Path(path_type=Path), default=None,
              help="The movie file: .mp4 (H.264 via imageio-ffmpeg) or .gif (Pillow, one palette for all frames); "
                   "default RUN_DIR/<field>.mp4.")
@click.option("--fps", type=float, default=None,
              help=f"Frames per second, 0.1 to 100 (default {DEFAULT_FPS:g}, fewer for a movie of under "
                   f"{DEFAULT_FPS * MIN_SECONDS:g} frames so that it lasts {MIN_SECONDS:g} s).")
@click.option("--from", "source", type=click.Choice(["frames", "fields"]), default=None,
              help="frames: the run's movie frames (every --pictures-every steps); fields: one frame per saved "
                   "step (default: frames when the run has frames of the field).")
@_picture_options
@friendly
def movie(run_dir, quantity, output, fps, source, clim, cmap, dpi, window, overwrite):
    """A movie of a run folder, with the run's colour limits and window: one frame per movie
    frame the run recorded (every --pictures-every steps), or per saved step without them.

    \b
    lbgen movie runs/rt --field T -o rt-T.mp4
    lbgen movie runs/rt --field vorticity -o rt-vorticity.gif --window auto
    """
    import warnings

    if fps is not None:
        fps = check_fps(fps)
    limits = clim_of(quantity, clim)
    _check_cmap(cmap)
    area = _window(window)
    run = _results(run_dir, "movie")
    dpi = run.check_dpi(dpi)
    output = output or run.path / f"{quantity}.mp4"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", MovieWarning)
        result = write_movie(run, quantity, output, fps=fps, clim=limits, cmap=cmap, dpi=dpi, overwrite=overwrite,
                             window=area, source=source)
    w, h = result["size"]
    steps = result["steps"]
    click.echo(f"wrote {result['path']}: {result['frames']} frames of {w} x {h} px ({quantity}, steps "
               f"{steps[0]}..{steps[-1]} from the run's {result['source']}, {result['fps']:g} fps, "
               f"{result['frames'] / result['fps']:.3g} s)")
    for warning in caught:
        if issubclass(warning.category, MovieWarning):
            click.echo(f"warning: {warning.message}", err=True)
        else:
            warnings.showwarning(warning.message, warning.category, warning.filename, warning.lineno)


@click.command(short_help="Re-render saved steps with other limits, colours or size.")
@click.argument("run_dir", type=click.Path(path_type=Path))
@_FIELD
@click.option("--step", default=None, help="A saved step, a comma list of them, or 'all' (default: the last).")
@click.option("-o", "--output", type=click.Path(path_type=Path), default=None,
              help="PNG file (one step) or folder (several); default: the run's pictures/ folder, as "
                   "plot-<field>-<step>.png (plot-T-000004000.png; the run's own pictures keep their names).")
@_picture_options
@friendly
def plot(run_dir, quantity, step, output, clim, cmap, dpi, window, overwrite):
    """Re-render pictures of saved steps with other colour limits, colour map or size.

    \b
    lbgen plot runs/rt --field vorticity --step 4000 --clim -0.01,0.01 --cmap PuOr -o w.png
    lbgen plot runs/rt --field T --clim T=0.93,1.06          # runs/rt/pictures/plot-T-<last step>.png
    lbgen plot runs/rt --field T --step all -o pictures-hd --dpi 300
    lbgen plot runs/rt --field T --window full -o whole.png
    """
    from tqdm import tqdm
    limits = clim_of(quantity, clim)
    _check_cmap(cmap)
    area = _window(window)
    run = _results(run_dir, "plot")
    area = run.window(area, (quantity,))    # once; a window outside the lattice: refused before any work
    dpi = run.check_dpi(dpi)
    if dpi is None:
        run.recorded_dpi()                  # the run's own --dpi must be drawable too
    steps = parse_steps(step, run)
    if output is None:
        targets = [run.path / PICTURES_DIR / plot_name(quantity, s) for s in steps]
    elif len(steps) == 1 and output.suffix:
        targets = [output]
    else:
        if output.suffix:
            raise UserError(f"-o {output}: several steps need a folder, not a file name")
        targets = [output / picture_name(quantity, s) for s in steps]
    targets = [check_output(t, (".png",), overwrite) for t in targets]      # every one before any work
    written = []
    for s, target in tqdm(list(zip(steps, targets)), desc=f"plot {quantity}", unit="picture", disable=None):
        fig = run.figure(quantity, s, clim=limits, cmap=cmap, dpi=dpi, window=area)
        with output_file(target, overwrite) as tmp:
            fig.savefig(tmp, format="png")
        written.append(target)
    click.echo(f"wrote {len(written)} picture{'s' if len(written) != 1 else ''}: "
               f"{', '.join(str(p) for p in written[:4])}{' ...' if len(written) > 4 else ''}"
               + (f" (all in {written[0].parent})" if len(written) > 4 else ""))


__all__ = ["movie", "plot", "MOVIE_SUFFIXES"]
