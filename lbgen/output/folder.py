"""A run folder's results read back (``RunResults``): its manifest, saved fields, colour
limits and series; movies and pictures of it, written only to paths checked before any
work, through a temporary file renamed on success (a failed encoder leaves nothing).

(``lbgen.run.folder.RunFolder`` is the other side: the lock and owner of a folder a run
writes into.)"""
from __future__ import annotations

import contextlib
import math
import os
import re
import subprocess
import tempfile
import warnings
from fractions import Fraction
from pathlib import Path
from typing import Dict, Iterator, Optional, Sequence, Tuple, Union

import numpy as np

from lbgen.output.fields import STEM_PATTERN, read_field_file, saved_steps
from lbgen.output.limits import model_limits
from lbgen.output.manifest import MANIFEST_NAME, read_manifest
from lbgen.output.pictures import (AUTO, FRAMES_DIR, PICTURE_QUANTITIES, FieldPicture, active_rows, auto_window,
                                   check_dpi, check_quantity, check_time_unit, check_window, colour_limits,
                                   dpi_range, drawn_data, field_figure, parse_window, read_frame_file, union_rows)
from lbgen.output.series import SERIES_CSV, read_series
from lbgen.system.paths import PathError, writable_file

PathLike = Union[str, os.PathLike]
PICTURE_NAMES = frozenset(PICTURE_QUANTITIES)
MOVIE_SUFFIXES = (".mp4", ".gif")
#: frames per second a movie may have: below, ffmpeg's mp4 muxer fails (and a frame would
#: stay on screen for minutes); above, GIF cannot time frames (its delays are 1/100 s)
MIN_FPS, MAX_FPS = 0.1, 100.0
#: H.264 constant rate factor of .mp4 movies (imageio's quality 8)
MP4_CRF = 10
#: frames per second of a movie by default: DEFAULT_FPS, fewer for a movie of under
#: DEFAULT_FPS x MIN_SECONDS frames so that it lasts MIN_SECONDS (at least MIN_DEFAULT_FPS)
DEFAULT_FPS, MIN_SECONDS, MIN_DEFAULT_FPS = 20.0, 5.0, 1.0
#: a movie of fewer frames than this is a slide show: lbgen movie warns
MIN_MOVIE_FRAMES = 20
#: the pieces of lbgen that draw a movie frame (tests replace them to see that nothing is drawn)
frame_picture = FieldPicture


class MovieWarning(UserWarning):
    """A movie that is written but will disappoint (a few frames only)."""


class RunResultsError(ValueError):
    """A run folder, step, option or output that cannot be used; the message says why and what is allowed."""


def _config(manifest: dict) -> dict:
    config = manifest.get("config")
    return config if isinstance(config, dict) else {}


class RunResults:
    """``RunResults("runs/rt")``: the saved steps, fields and colour limits of a finished
    (or running) run's folder."""

    def __init__(self, run_dir: PathLike):
        self.path = Path(run_dir)
        if self.path.is_file():
            raise RunResultsError(f"{self.path} is a file, not a run folder (give the --out DIR of a run)")
        if not self.path.is_dir():
            raise RunResultsError(f"run folder {str(self.path)!r} does not exist (give the --out DIR of a run)")
        manifest = self.path / MANIFEST_NAME
        if not manifest.is_file():
            raise RunResultsError(f"{self.path} is not a run folder: it has no {MANIFEST_NAME}")
        try:
            self.manifest = read_manifest(self.path)
        except OSError as e:
            raise RunResultsError(f"{manifest}: cannot read it ({e.strerror or e})") from None
        if _config(self.manifest).get("lz") is not None:
            raise RunResultsError(f"{self.path} holds a 3D run: lbgen plot and lbgen movie draw 2D runs; its "
                                  f"mid-plane slice pictures are in pictures/, its fields in fields/ (h5) and vtk/ "
                                  f"(ParaView)")
        self.files = saved_steps(self.path)

    @property
    def manifest_path(self) -> Path:
        return self.path / MANIFEST_NAME

    @property
    def steps(self) -> list:
        """Steps with saved fields, in order."""
        return list(self.files)

    @property
    def lattice(self) -> Optional[Tuple[int, int]]:
        """(LX, LY) as the manifest records it, or None."""
        config = _config(self.manifest)
        lx, ly = config.get("lx"), config.get("ly")
        if isinstance(lx, int) and isinstance(ly, int) and lx > 0 and ly > 0:
            return lx, ly
        return None

    def check_dpi(self, dpi) -> Optional[float]:
        """``--dpi`` checked against this run's lattice (see lbgen.output.pictures.check_dpi)."""
        return check_dpi(dpi, self.lattice)

    def check_step(self, step: Optional[int]) -> int:
        """*step*, or the last saved one when None; RunResultsError for a step without fields."""
        if not self.files:
            raise RunResultsError(f"{self.path} has no saved fields (fields/step-*.h5 or .npz)")
        if step is None:
            return self.steps[-1]
        if int(step) not in self.files:
            raise RunResultsError(f"{self.path} has no fields of step {step}; saved steps: "
                                  f"{', '.join(map(str, self.steps))}")
        return int(step)

    def fields(self, step: Optional[int] = None) -> dict:
        """rho, ux, uy, T, step and time of a saved step (default: the last); a damaged or
        truncated file is an OutputFileError naming it."""
        data = read_field_file(self.files[self.check_step(step)])
        if data.get("time") is None:
            from lbgen.model.velocity_set import velocity_set
            data["time"] = data["step"] / velocity_set("d2q37").r
        return data

    def limits(self, quantity: str, override: Optional[Sequence[float]] = None) -> list:
        """The run's colour limits of a quantity (manifest ``colour_limits``, model values), or
        *override* (``--clim``, in the pictures' units: :func:`lbgen.output.limits.model_limits`).

        A folder written before colour limits were recorded gets them from its first saved step."""
        check_quantity(quantity)
        if override is not None:                 # given as drawn: velocities in sites per step
            return list(model_limits(quantity, override, self.velocity_scale_factor()))
        recorded = self.manifest.get("colour_limits") or {}
        if isinstance(recorded, dict) and quantity in recorded:
            try:
                lo, hi = (float(v) for v in recorded[quantity])
            except (TypeError, ValueError):
                lo = hi = math.nan
            if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
                raise RunResultsError(f"{self.manifest_path}: damaged colour_limits of {quantity} "
                                      f"({recorded[quantity]!r}); give --clim LO,HI")
            return [lo, hi]
        first = self.fields(self.steps[0]) if self.files else None
        if first is None:
            raise RunResultsError(f"{self.path} has no saved fields to take colour limits from")
        walls = self.wall_temperatures()
        gravity = _config(self.manifest).get("gravity") or (0.0, 0.0)
        return colour_limits([quantity], first, gravity=gravity, T_range=walls)[quantity]

    def series(self) -> dict:
        return read_series(self.path / SERIES_CSV)

    def wall_temperatures(self) -> Optional[tuple]:
        walls = _config(self.manifest).get("walls")
        try:
            return (float(walls["T_bottom"]), float(walls["T_top"])) if walls else None
        except (TypeError, KeyError, ValueError):
            raise RunResultsError(f"{self.manifest_path}: damaged config.walls ({walls!r})") from None

    def recorded_dpi(self) -> Optional[float]:
        """The run's ``--dpi`` (manifest config), None for the default size."""
        dpi = _config(self.manifest).get("dpi")
        try:
            return self.check_dpi(dpi)
        except ValueError:
            lo, hi = dpi_range(self.lattice)
            raise RunResultsError(f"{self.manifest_path}: the run's dpi {dpi!r} cannot be drawn; give --dpi "
                                  f"{lo:g} to {hi:g}") from None

    # ------------------------------------------------------------------ windows, time, frames
    @property
    def frame_files(self) -> Dict[int, Path]:
        """{step: movie frame} of ``frames/step-*.npz`` (written every ``--pictures-every`` steps
        and at every picture), in step order."""
        folder = self.path / FRAMES_DIR
        found = {}
        if folder.is_dir():
            for p in folder.glob("step-*.npz"):
                if re.fullmatch(rf"step-{STEM_PATTERN}\.npz", p.name):
                    found[int(p.stem.split("-")[-1])] = p
        return dict(sorted(found.items()))

    def frame(self, step: int, quantities: Optional[Sequence[str]] = None):
        """The movie frame of *step* (lbgen.output.pictures.Frame); a damaged one is an error naming it."""
        files = self.frame_files
        if int(step) not in files:
            raise RunResultsError(f"{self.path} has no movie frame of step {step}")
        try:
            return read_frame_file(files[int(step)], quantities)
        except ValueError as e:
            raise RunResultsError(str(e)) from None

    def time_unit(self):
        """The flow's time unit the run's titles use (manifest ``time_unit``), or None."""
        value = self.manifest.get("time_unit")
        try:
            return check_time_unit(value)
        except ValueError:
            raise RunResultsError(f"{self.manifest_path}: damaged time_unit ({value!r})") from None

    def shape(self) -> Tuple[int, int]:
        """(LX, LY): the manifest's, else the first saved field file's or frame's."""
        if self.lattice is not None:
            return self.lattice
        if self.files:
            return tuple(int(n) for n in self.fields(self.steps[0])["T"].shape)
        frames = self.frame_files
        if frames:
            return self.frame(next(iter(frames)), ()).shape
        raise RunResultsError(f"{self.path} has no saved fields or frames: its lattice is unknown")

    def flow_rows(self, quantities: Sequence[str] = ()) -> Optional[Tuple[int, int]]:
        """The rows where any movie frame (all its quantities) -- or, in a run without frames,
        any saved step of *quantities* and the run's picture quantities -- differs visibly
        from the wall layers (lbgen.output.pictures.active_rows)."""
        rows = None
        frames = self.frame_files
        if frames:
            for step in frames:
                try:
                    frame = read_frame_file(frames[step], data=False)
                except ValueError as e:
                    raise RunResultsError(str(e)) from None
                rows = union_rows(rows, *frame.rows.values())
            return rows
        pictures = _config(self.manifest).get("pictures") or ()
        wanted = list(dict.fromkeys([q for q in pictures if isinstance(q, str) and q in PICTURE_NAMES] +
                                    list(quantities)))
        limits = {q: self.limits(q) for q in wanted}
        for step in self.steps:
            data = self.fields(step)
            rows = union_rows(rows, *(active_rows(drawn_data(q, data, limits[q]), limits[q]) for q in wanted))
        return rows

    def window(self, override=None, quantities: Sequence[str] = ()):
        """The window ``((x0, x1), (y0, y1))`` pictures of the run are drawn in: *override*
        (``--window`` text or value: 'auto', 'full', 'x0:x1,y0:y1'), else the run's (manifest
        ``picture_window``, else its config's ``window``), else the lattice."""
        spec = override
        if spec is None:
            spec = self.manifest.get("picture_window") or _config(self.manifest).get("window")
        try:
            spec = parse_window(spec)
            shape = self.shape()
            if spec == AUTO:
                return auto_window(self.flow_rows(quantities), shape)
            return check_window(spec, shape)
        except ValueError as e:
            where = "" if override is not None else f"{self.manifest_path}: the run's window: "
            raise RunResultsError(f"{where}{e}") from None

    def figure(self, quantity: str = "T", step: Optional[int] = None, clim: Optional[Sequence[float]] = None,
               cmap: Optional[str] = None, dpi: Optional[float] = None, window=None):
        """A picture of a saved step with the run's colour limits (or *clim*), dpi (or *dpi*),
        window (or *window*) and time unit."""
        dpi = self.recorded_dpi() if dpi is None else dpi
        limits = self.limits(quantity, clim)
        area = self.window(window, (quantity,))
        data = self.fields(step)
        return field_figure(quantity, data, limits=limits, step=data["step"], time=data["time"], cmap=cmap, dpi=dpi,
                            window=area, time_unit=self.time_unit(), r=self.velocity_scale_factor())

    def velocity_scale_factor(self) -> Optional[float]:
        """r of the run's velocity set (manifest ``physics``): pictures draw velocities in sites
        per step; None for a run folder without it (model units, named so)."""
        r = (self.manifest.get("physics") or {}).get("r")
        return float(r) if isinstance(r, (int, float)) and r > 0 else None


# --------------------------------------------------------------------------- output files
def check_output(path: PathLike, suffixes: Sequence[str], overwrite: bool, what: str = "-o") -> Path:
    """An output path checked before any work: an allowed suffix, not a folder, not there
    yet (or *overwrite*), its folder writable (created when missing)."""
    path = Path(path)
    if path.suffix.lower() not in suffixes:
        raise RunResultsError(f"{what} {path}: unknown file type {path.suffix or '(none)'!r}; use "
                              f"{' or '.join(suffixes)}")
    if path.is_dir():
        raise RunResultsError(f"{what} {path}: is a folder, not a file")
    check_replaceable(path, overwrite, what)
    try:
        writable_file(path, what)
    except PathError as e:
        raise RunResultsError(str(e)) from None
    return path


def check_replaceable(path: PathLike, overwrite: bool, what: str = "-o") -> None:
    """The one rule of every output file a command is given (``-o`` of plot and movie, ``--save``
    of run): an existing file (or link) is replaced only with *overwrite*; RunResultsError
    naming it otherwise."""
    path = Path(path)
    if (path.exists() or path.is_symlink()) and not overwrite:
        raise RunResultsError(f"{what} {path}: exists; give --overwrite to replace it")


def check_fps(fps) -> float:
    """``--fps``: a number from MIN_FPS to MAX_FPS; RunResultsError naming the value otherwise."""
    try:
        value = float(fps)
    except (TypeError, ValueError):
        value = math.nan
    if not (math.isfinite(value) and MIN_FPS <= value <= MAX_FPS):
        raise RunResultsError(f"--fps {fps:g}: allowed {MIN_FPS:g} to {MAX_FPS:g} frames per second"
                              if isinstance(fps, (int, float)) else
                              f"--fps {fps!r}: allowed {MIN_FPS:g} to {MAX_FPS:g} frames per second")
    return value


@contextlib.contextmanager
def output_file(path: PathLike, overwrite: bool = False) -> Iterator[Path]:
    """A temporary file in *path*'s folder (``.<name>.XXXX.tmp``) to write; when the block
    ends without an error and the file is not empty it becomes *path* -- replacing an
    existing one only with *overwrite* (a file that appeared meanwhile is kept, and that is
    an error) -- and on any error it is removed: no partial output, ever."""
    path = Path(path)
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        if tmp.stat().st_size == 0:
            raise RunResultsError(f"{path}: nothing was written (the writer produced an empty file); no file made")
        os.chmod(tmp, 0o644)
        if overwrite:
            os.replace(tmp, path)
        else:
            try:
                os.link(tmp, path)                  # never replaces: fails when path exists
            except FileExistsError:
                raise RunResultsError(f"{path}: a file of that name appeared while this one was being written; "
                                      f"it was kept and nothing was written (give --overwrite to replace it)"
                                      ) from None
            except OSError:                         # a file system without hard links
                if path.exists():
                    raise RunResultsError(f"{path}: a file of that name appeared while this one was being "
                                          f"written; it was kept and nothing was written") from None
                os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def ffmpeg_executable() -> str:
    """imageio-ffmpeg's ffmpeg (bundled binary or the one it finds); RunResultsError without one."""
    try:
        import imageio_ffmpeg
        return imageio_ffmpeg.get_ffmpeg_exe()
    except Exception as e:  # noqa: BLE001 - not installed, no binary for this platform
        raise RunResultsError(f"no ffmpeg to write .mp4 movies ({type(e).__name__}: {e}); install imageio-ffmpeg "
                              f"or write a .gif") from None


class _Mp4:
    """H.264 in an .mp4 through ffmpeg, frames streamed to it; its exit status is checked."""

    def __init__(self, exe: str, target: Path, tmp: Path, size: Tuple[int, int], fps: float):
        self.target = target
        w, h = size
        rate = Fraction(fps).limit_denominator(1000)
        self.log = tempfile.TemporaryFile()
        cmd = [exe, "-y", "-nostdin", "-v", "error", "-f", "rawvideo", "-vcodec", "rawvideo", "-s", f"{w}x{h}",
               "-pix_fmt", "rgb24", "-r", str(rate), "-i", "-", "-an", "-vcodec", "libx264", "-pix_fmt", "yuv420p",
               "-crf", str(MP4_CRF), "-f", "mp4", str(tmp)]
        try:
            self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=self.log)
        except OSError as e:
            self.log.close()
            raise RunResultsError(f"{target}: cannot start ffmpeg {exe} ({e.strerror or e}); no file made") from None

    def _failure(self, what: str) -> RunResultsError:
        self.log.seek(0)
        lines = [ln.strip() for ln in self.log.read().decode("utf-8", "replace").splitlines() if ln.strip()]
        said = "; ".join(lines[-3:]) or "no message"
        return RunResultsError(f"{self.target}: the encoder (ffmpeg) {what}: {said}; no file made")

    def append(self, frame) -> None:
        try:
            self.proc.stdin.write(frame.tobytes())
        except (BrokenPipeError, OSError):
            rc = self.proc.wait()
            raise self._failure(f"stopped with exit status {rc}") from None

    def close(self) -> None:
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        rc = self.proc.wait()
        try:
            if rc != 0:
                raise self._failure(f"failed with exit status {rc}")
        finally:
            self.log.close()

    def abort(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.log.close()


def movie_fps(frames: int) -> float:
    """The default frames per second of a movie of *frames* frames: DEFAULT_FPS, fewer for
    short movies so that they last MIN_SECONDS (at least MIN_DEFAULT_FPS)."""
    return min(DEFAULT_FPS, max(MIN_DEFAULT_FPS, frames / MIN_SECONDS))


def movie_source(run: RunResults, quantity: str, source: Optional[str] = None) -> str:
    """Where a movie's frames come from: ``'frames'`` (the run's movie frames, every
    ``--pictures-every`` steps) when they hold *quantity*, else ``'fields'`` (one frame per saved
    step); *source* forces one (RunResultsError when that is not possible)."""
    if source not in (None, "frames", "fields"):
        raise RunResultsError(f"--from {source!r}: choose frames or fields")
    frames = run.frame_files
    holds = False
    if frames and source != "fields":
        first = next(iter(frames.values()))
        try:
            with np.load(first, allow_pickle=False) as z:
                holds = quantity in z.files
        except Exception:  # noqa: BLE001 - a damaged frame: reading it says so
            holds = True
    if source == "frames" and not holds:
        raise RunResultsError(f"{run.path} has no movie frames of {quantity} ("
                              + ("its frames hold the run's --pictures only" if frames else
                                 "run with --pictures including it and --pictures-every K") + "); use --from fields")
    if source is None:
        source = "frames" if holds else "fields"
    if source == "fields" and not run.files:
        raise RunResultsError(f"{run.path} has no saved fields (fields/step-*.h5 or .npz)"
                              + (f" and no movie frames of {quantity}" if frames else "") + " to make a movie of")
    return source


def gif_palette(rgb):
    """The one palette of every frame of a GIF: 256 colours of the first frame (whose colour
    bar holds the whole colour map, and whose text and frame the others share)."""
    from PIL import Image
    return Image.fromarray(rgb).quantize(colors=256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)


def write_movie(run: RunResults, quantity: str, path: PathLike, fps: Optional[float] = None,
                clim: Optional[Sequence[float]] = None, cmap: Optional[str] = None, dpi: Optional[float] = None,
                overwrite: bool = False, progress: Optional[bool] = None, window=None,
                source: Optional[str] = None) -> Dict[str, object]:
    """A movie of *quantity*: one frame per movie frame of the run (``frames/``, every
    ``--pictures-every`` steps) or, without them, per saved step (*source* forces
    ``'frames'`` or ``'fields'``), with the run's colour limits, window and time unit (or
    *clim*, *window*) and the step and time in the title; every frame has the same geometry.
    ``.mp4`` through ffmpeg (imageio-ffmpeg's; H.264), ``.gif`` through Pillow with one
    palette for all frames.  *fps*: default :func:`movie_fps`.  Returns ``{"path", "frames",
    "size", "fps", "source", "steps"}``; a movie of under MIN_MOVIE_FRAMES frames is written
    with a MovieWarning.  *progress*: a tqdm bar (None: only on a terminal).

    Everything is checked before the first frame is drawn (field, fps, dpi, window, the
    output path); the movie is written to a temporary file in the target's folder and
    renamed on success, so an encoder failure is an error and leaves no file."""
    from tqdm import tqdm

    check_quantity(quantity)
    if fps is not None:
        fps = check_fps(fps)
    dpi = run.check_dpi(dpi)
    path = check_output(path, MOVIE_SUFFIXES, overwrite)
    source = movie_source(run, quantity, source)
    steps = list(run.frame_files) if source == "frames" else run.steps
    fps = movie_fps(len(steps)) if fps is None else fps
    area = run.window(window, (quantity,))
    gif = path.suffix.lower() == ".gif"
    exe = None if gif else ffmpeg_executable()
    limits = run.limits(quantity, clim)
    time_unit = run.time_unit()
    picture, frames, encoder, first, palette = None, [], None, None, None
    with output_file(path, overwrite) as tmp:
        try:
            for step in tqdm(steps, desc=f"movie {quantity}", unit="frame",
                             disable=None if progress is None else not progress):
                if source == "frames":
                    frame = run.frame(step, (quantity,))
                    data, time, shape, stride = frame.data[quantity], frame.time, frame.shape, frame.stride
                else:
                    fields = run.fields(step)
                    data, time = drawn_data(quantity, fields, limits), fields["time"]
                    shape, stride = data.shape, (1, 1)
                if picture is None:
                    picture = frame_picture(quantity, shape, limits=limits, window=area, cmap=cmap, dpi=dpi,
                                            time_unit=time_unit, stride=stride, r=run.velocity_scale_factor())
                    layout = (shape, stride)
                elif (shape, stride) != layout:
                    raise RunResultsError(f"the frame of step {step} is of a {shape[0]} x {shape[1]} lattice "
                                          f"sampled every {stride}, the first of {layout[0]} every {layout[1]}")
                rgb = picture.rgb(data, step, time)
                if first is None:
                    first = rgb.shape
                if gif:
                    from PIL import Image
                    if palette is None:
                        palette = gif_palette(rgb)
                    frames.append(Image.fromarray(rgb).quantize(palette=palette, dither=Image.Dither.NONE))
                    continue
                h, w = rgb.shape[:2]
                rgb = np.pad(rgb, ((0, h % 2), (0, w % 2), (0, 0)), mode="edge")  # yuv420p needs even sizes
                if encoder is None:
                    encoder = _Mp4(exe, path, tmp, (rgb.shape[1], rgb.shape[0]), fps)
                encoder.append(np.ascontiguousarray(rgb))
            if gif:
                try:
                    frames[0].save(tmp, format="GIF", save_all=True, append_images=frames[1:],
                                   duration=int(round(1000 / fps)), loop=0, optimize=False,
                                   palette=bytes(palette.getpalette()))        # the global table only
                except Exception as e:  # noqa: BLE001 - whatever Pillow says: an error, no file
                    raise RunResultsError(f"{path}: the GIF encoder (Pillow) failed ({type(e).__name__}: {e}); "
                                          f"no file made") from None
            else:
                enc, encoder = encoder, None
                enc.close()
        except BaseException:
            if encoder is not None:
                encoder.abort()
            raise
    h, w = first[:2]
    if len(steps) < MIN_MOVIE_FRAMES:
        hint = ("the run recorded few frames: run with a smaller --pictures-every" if source == "frames" else
                "it has a frame per saved step only: run with --pictures-every K (movie frames independent of "
                "--output-every)")
        warnings.warn(MovieWarning(f"{path}: a movie of only {len(steps)} frame{'s' if len(steps) != 1 else ''} "
                                   f"({len(steps) / fps:.3g} s at {fps:g} fps); {hint}"), stacklevel=2)
    return {"path": path, "frames": len(steps), "size": (w, h) if gif else (w + w % 2, h + h % 2), "fps": fps,
            "source": source, "steps": steps}


def parse_steps(text: Optional[str], run: RunResults) -> list:
    """``--step``: None (the last), N, N,M,... or 'all'; each step once, in the order given."""
    if text is None:
        return [run.check_step(None)]
    if str(text).strip() == "all":
        run.check_step(None)
        return run.steps
    try:
        steps = [int(v) for v in str(text).split(",") if v.strip()]
    except ValueError:
        raise RunResultsError(f"--step {text!r}: expected a step number, a comma list of them, or 'all'") from None
    if not steps:
        raise RunResultsError(f"--step {text!r}: expected a step number, a comma list of them, or 'all'")
    return list(dict.fromkeys(run.check_step(s) for s in steps))
