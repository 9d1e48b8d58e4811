"""A run folder read back: its manifest, saved fields, colour limits and series; movies of it."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Dict, Mapping, Optional, Sequence, Union

from lbgen.output.fields import read_field_file, saved_steps
from lbgen.output.manifest import MANIFEST_NAME, read_manifest
from lbgen.output.pictures import check_quantity, colour_limits, field_figure, figure_rgb
from lbgen.output.series import SERIES_CSV, read_series

PathLike = Union[str, os.PathLike]
MOVIE_SUFFIXES = (".mp4", ".gif")


class RunFolderError(ValueError):
    """A run folder, step or option that cannot be used; the message says why and what is allowed."""


class RunFolder:
    """``RunFolder("runs/rt")``: the saved steps, fields and colour limits of a run folder."""

    def __init__(self, run_dir: PathLike):
        self.path = Path(run_dir)
        if not self.path.is_dir():
            raise RunFolderError(f"run folder {str(self.path)!r} does not exist (give the --out DIR of a run)")
        if not (self.path / MANIFEST_NAME).is_file():
            raise RunFolderError(f"{self.path} is not a run folder: it has no {MANIFEST_NAME}")
        self.manifest = read_manifest(self.path)
        self.files = saved_steps(self.path)

    @property
    def steps(self) -> list:
        """Steps with saved fields, in order."""
        return list(self.files)

    def check_step(self, step: Optional[int]) -> int:
        """*step*, or the last saved one when None; RunFolderError for a step without fields."""
        if not self.files:
            raise RunFolderError(f"{self.path} has no saved fields (fields/step-*.h5 or .npz)")
        if step is None:
            return self.steps[-1]
        if int(step) not in self.files:
            raise RunFolderError(f"{self.path} has no fields of step {step}; saved steps: "
                                 f"{', '.join(map(str, self.steps))}")
        return int(step)

    def fields(self, step: Optional[int] = None) -> dict:
        """rho, ux, uy, T, step and time of a saved step (default: the last)."""
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
        if quantity in recorded:
            return [float(v) for v in recorded[quantity]]
        cfg = self.manifest.get("config", {})
        walls = cfg.get("walls")
        first = self.fields(self.steps[0]) if self.files else None
        if first is None:
            raise RunFolderError(f"{self.path} has no saved fields to take colour limits from")
        return colour_limits([quantity], first, gravity=cfg.get("gravity") or (0.0, 0.0),
                             T_range=(walls["T_bottom"], walls["T_top"]) if walls else None)[quantity]

    def series(self) -> dict:
        return read_series(self.path / SERIES_CSV)

    def wall_temperatures(self) -> Optional[tuple]:
        walls = self.manifest.get("config", {}).get("walls")
        return (walls["T_bottom"], walls["T_top"]) if walls else None

    def figure(self, quantity: str = "T", step: Optional[int] = None, clim: Optional[Sequence[float]] = None,
               cmap: Optional[str] = None, dpi: Optional[float] = None):
        """A picture of a saved step with the run's colour limits (or *clim*) and its dpi (or *dpi*)."""
        data = self.fields(step)
        dpi = self.manifest.get("config", {}).get("dpi") if dpi is None else dpi
        return field_figure(quantity, data, limits=self.limits(quantity, clim), step=data["step"],
                            time=data["time"], cmap=cmap, dpi=dpi)


def check_output(path: PathLike, suffixes: Sequence[str], overwrite: bool) -> Path:
    """An output path with an allowed suffix that is not there yet (or *overwrite*)."""
    path = Path(path)
    if path.suffix.lower() not in suffixes:
        raise RunFolderError(f"{path}: unknown file type {path.suffix or '(none)'!r}; use {' or '.join(suffixes)}")
    if path.exists() and not overwrite:
        raise RunFolderError(f"{path} exists; give --overwrite to replace it")
    if path.is_dir():
        raise RunFolderError(f"{path} is a folder, not a file")
    return path


def write_movie(run: RunFolder, quantity: str, path: PathLike, fps: float = 5.0,
                clim: Optional[Sequence[float]] = None, cmap: Optional[str] = None, dpi: Optional[float] = None,
                overwrite: bool = False, progress: Optional[bool] = None) -> Dict[str, object]:
    """One frame per saved step (the run's colour limits, the step and time in the title):
    ``.mp4`` through imageio's ffmpeg (H.264), ``.gif`` through Pillow.  Returns
    ``{"path", "frames", "size"}``.  *progress*: a tqdm bar (None: only on a terminal)."""
    import numpy as np
    from tqdm import tqdm

    check_quantity(quantity)
    path = check_output(path, MOVIE_SUFFIXES, overwrite)
    if not run.files:
        raise RunFolderError(f"{run.path} has no saved fields (fields/step-*.h5 or .npz) to make a movie of")
    if not fps > 0:
        raise RunFolderError(f"--fps {fps} must be > 0")
    limits = run.limits(quantity, clim)
    frames = []
    for step in tqdm(run.steps, desc=f"movie {quantity}", unit="frame", disable=None if progress is None
                     else not progress):
        data = run.fields(step)
        fig = field_figure(quantity, data, limits=limits, step=step, time=data["time"], cmap=cmap, dpi=dpi)
        rgb = figure_rgb(fig)
        if frames and rgb.shape != frames[0].shape:
            raise RunFolderError(f"frame of step {step} has size {rgb.shape[:2]}, not {frames[0].shape[:2]}")
        frames.append(rgb)
    h, w = frames[0].shape[:2]
    pad = ((0, h % 2), (0, w % 2), (0, 0))          # H.264 (yuv420p) needs even sizes
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.stem}.{os.getpid()}.tmp{path.suffix}")
    try:
        if path.suffix.lower() == ".gif":
            from PIL import Image
            images = [Image.fromarray(f) for f in frames]
            images[0].save(tmp, format="GIF", save_all=True, append_images=images[1:],
                           duration=int(round(1000 / fps)), loop=0)
        else:
            import imageio.v2 as imageio
            with imageio.get_writer(tmp, format="FFMPEG", fps=fps, codec="libx264", macro_block_size=1,
                                    pixelformat="yuv420p", quality=8) as writer:
                for f in frames:
                    writer.append_data(np.pad(f, pad, mode="edge"))
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return {"path": path, "frames": len(frames), "size": (w + w % 2, h + h % 2)}


def parse_steps(text: Optional[str], run: RunFolder) -> list:
    """``--step``: None (the last), N, N,M,... or 'all'."""
    if text is None:
        return [run.check_step(None)]
    if str(text).strip() == "all":
        run.check_step(None)
        return run.steps
    try:
        steps = [int(v) for v in str(text).split(",") if v.strip()]
    except ValueError:
        raise RunFolderError(f"--step {text!r}: expected a step number, a comma list of them, or 'all'") from None
    return [run.check_step(s) for s in steps]
