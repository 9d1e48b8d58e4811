"""A run folder's results read back (``RunResults``): its manifest, saved fields, colour
limits and series; movies and pictures of it, written only to paths checked before any
work, through a temporary file renamed on success (a failed encoder leaves nothing).

(``lbgen.run.folder.RunFolder`` is the other side: the lock and owner of a folder a run
writes into.)"""
from __future__ import annotations

import contextlib
import math
import os
import subprocess
import tempfile
from fractions import Fraction
from pathlib import Path
from typing import Dict, Iterator, Optional, Sequence, Tuple, Union

from lbgen.output.fields import read_field_file, saved_steps
from lbgen.output.manifest import MANIFEST_NAME, read_manifest
from lbgen.output.pictures import check_dpi, check_quantity, dpi_range, colour_limits, field_figure, figure_rgb
from lbgen.output.series import SERIES_CSV, read_series
from lbgen.system.paths import PathError, writable_file

PathLike = Union[str, os.PathLike]
MOVIE_SUFFIXES = (".mp4", ".gif")
#: frames per second a movie may have: below, ffmpeg's mp4 muxer fails (and a frame would
#: stay on screen for minutes); above, GIF cannot time frames (its delays are 1/100 s)
MIN_FPS, MAX_FPS = 0.1, 100.0
#: H.264 constant rate factor of .mp4 movies (imageio's quality 8)
MP4_CRF = 10


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
        if not self.path.is_dir():
            raise RunResultsError(f"run folder {str(self.path)!r} does not exist (give the --out DIR of a run)")
        manifest = self.path / MANIFEST_NAME
        if not manifest.is_file():
            raise RunResultsError(f"{self.path} is not a run folder: it has no {MANIFEST_NAME}")
        try:
            self.manifest = read_manifest(self.path)
        except OSError as e:
            raise RunResultsError(f"{manifest}: cannot read it ({e.strerror or e})") from None
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
        """The run's colour limits of a quantity (manifest ``colour_limits``), or *override*.

        A folder written before colour limits were recorded gets them from its first saved step."""
        check_quantity(quantity)
        if override is not None:
            return [float(override[0]), float(override[1])]
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

    def figure(self, quantity: str = "T", step: Optional[int] = None, clim: Optional[Sequence[float]] = None,
               cmap: Optional[str] = None, dpi: Optional[float] = None):
        """A picture of a saved step with the run's colour limits (or *clim*) and its dpi (or *dpi*)."""
        dpi = self.recorded_dpi() if dpi is None else dpi
        limits = self.limits(quantity, clim)
        data = self.fields(step)
        return field_figure(quantity, data, limits=limits, step=data["step"], time=data["time"], cmap=cmap, dpi=dpi)


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
    if (path.exists() or path.is_symlink()) and not overwrite:
        raise RunResultsError(f"{what} {path}: exists; give --overwrite to replace it")
    try:
        writable_file(path, what)
    except PathError as e:
        raise RunResultsError(str(e)) from None
    return path


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


def write_movie(run: RunResults, quantity: str, path: PathLike, fps: float = 5.0,
                clim: Optional[Sequence[float]] = None, cmap: Optional[str] = None, dpi: Optional[float] = None,
                overwrite: bool = False, progress: Optional[bool] = None) -> Dict[str, object]:
    """One frame per saved step (the run's colour limits, the step and time in the title):
    ``.mp4`` through ffmpeg (imageio-ffmpeg's; H.264), ``.gif`` through Pillow.  Returns
    ``{"path", "frames", "size"}``.  *progress*: a tqdm bar (None: only on a terminal).

    Everything is checked before the first frame is drawn (field, fps, dpi, the output
    path); the movie is written to a temporary file in the target's folder and renamed on
    success, so an encoder failure is an error and leaves no file."""
    import numpy as np
    from tqdm import tqdm

    check_quantity(quantity)
    fps = check_fps(fps)
    dpi = run.check_dpi(dpi)
    path = check_output(path, MOVIE_SUFFIXES, overwrite)
    if not run.files:
        raise RunResultsError(f"{run.path} has no saved fields (fields/step-*.h5 or .npz) to make a movie of")
    gif = path.suffix.lower() == ".gif"
    exe = None if gif else ffmpeg_executable()
    limits = run.limits(quantity, clim)
    frames, encoder, first = [], None, None
    with output_file(path, overwrite) as tmp:
        try:
            for step in tqdm(run.steps, desc=f"movie {quantity}", unit="frame",
                             disable=None if progress is None else not progress):
                data = run.fields(step)
                rgb = figure_rgb(field_figure(quantity, data, limits=limits, step=step, time=data["time"],
                                              cmap=cmap, dpi=dpi))
                if first is None:
                    first = rgb.shape
                elif rgb.shape != first:
                    raise RunResultsError(f"frame of step {step} has size {rgb.shape[:2]}, not {first[:2]}")
                if gif:
                    frames.append(rgb)
                    continue
                h, w = rgb.shape[:2]
                rgb = np.pad(rgb, ((0, h % 2), (0, w % 2), (0, 0)), mode="edge")  # yuv420p needs even sizes
                if encoder is None:
                    encoder = _Mp4(exe, path, tmp, (rgb.shape[1], rgb.shape[0]), fps)
                encoder.append(np.ascontiguousarray(rgb))
            if gif:
                from PIL import Image
                images = [Image.fromarray(f) for f in frames]
                try:
                    images[0].save(tmp, format="GIF", save_all=True, append_images=images[1:],
                                   duration=int(round(1000 / fps)), loop=0)
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
    return {"path": path, "frames": len(run.steps), "size": (w, h) if gif else (w + w % 2, h + h % 2)}


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
