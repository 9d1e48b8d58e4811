"""The look shared by every picture and plot of a run: the quantities and their style, the
picture names and defaults, the size and dpi range, the flow's time unit and the titles that
use it, and figures without pyplot.  Of lbgen.output it imports only .fields (the other
picture modules import it)."""
from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Mapping, NamedTuple, Optional, Tuple, Union

import numpy as np

from lbgen.system.cache import atomic_write
from lbgen.output.fields import stem

PathLike = Union[str, os.PathLike]

#: quantities a picture can show: (name, mathtext symbol, mathtext definition for the colour
#: bar, colour map, diverging about 0)
STYLE = {
    "T": ("temperature", r"$T$", r"$T$", "inferno", False),
    "rho": ("density", r"$\rho$", r"$\rho$", "viridis", False),
    "vorticity": ("vorticity", r"$\omega$", r"$\omega = \partial_x u_y - \partial_y u_x$", "RdBu_r", True),
    "speed": ("speed", r"$|\mathbf{u}|$", r"$|\mathbf{u}|$", "magma", False),
    "ux": ("velocity", r"$u_x$", r"$u_x$", "RdBu_r", True),
    "uy": ("velocity", r"$u_y$", r"$u_y$", "RdBu_r", True),
}
PICTURE_QUANTITIES = tuple(STYLE)
#: velocity-derived quantities: at rest they are drawn as exactly zero
VELOCITY_QUANTITIES = ("vorticity", "speed", "ux", "uy")
#: the colour bar's extension arrows, fixed per quantity (never chosen from the data, so the
#: bar and its ticks are the same in every frame): values beyond a limit take the end colour
EXTEND = {"speed": "max"}            # speed >= 0 = its lower limit; every other quantity: "both"
#: default size: the long side of a picture in pixels (``dpi`` overrides it)
LONG_SIDE_PX = 1200
#: the dpi range of pictures: at least MIN_DPI (below about 4 dpi the labels' 10-11 pt text
#: has no pixel size and matplotlib fails; at 8 the smallest picture is ~80 px), and at most
#: what gives MAX_LONG_SIDE_PX on the long side (a picture of 16384 x 16384 px is 1 GiB of RGBA)
MIN_DPI, MAX_LONG_SIDE_PX = 8.0, 16384
PICTURES_DIR = "pictures"
#: inches around the image box: left (y label), right (colour bar), bottom (x label), top (two-line title)
MARGINS_IN = (0.85, 1.45, 0.6, 0.8)
#: a colour-bar axis shorter than this (inches) is labelled with the symbol only
SHORT_BAR_IN = 4.0
#: the picture and movie quantities of each kind of velocity set (``default_pictures``):
#: an isothermal set's T is the constant 1 -- a flat picture -- so it draws vorticity
THERMAL_PICTURES, ISOTHERMAL_PICTURES = ("T",), ("vorticity",)
#: the default pictures of the set-ups whose flow is driven along walls: the speed, with arrows
#: of the in-plane velocity (lbgen.output.pictures.ARROW_QUANTITIES)
FLOW_PICTURES = {"lid-driven-cavity": ("speed",), "channel": ("speed",), "cylinder": ("vorticity", "speed"),
                 "cylinder3d": ("speed", "vorticity"), "sphere": ("speed", "vorticity")}
#: movie frames per run at the default ``--pictures-every`` (with the default 20 frames per
#: second of ``lbgen movie``: a movie of 5 s)
MOVIE_FRAMES = 100


def drawn_scale(quantity: str, r: Optional[float] = None) -> float:
    """What a picture multiplies a quantity's (model) values by: 1/r for the velocity-derived
    quantities when the velocity set's *r* is known (sites per step; vorticity: per step), else 1.
    ``--clim`` is given in these drawn units (``lbgen.output.limits.model_limits``)."""
    return 1.0 / float(r) if r and quantity in VELOCITY_QUANTITIES else 1.0


def unit_text(quantity: str, r: Optional[float] = None) -> str:
    """The unit of a quantity's values in pictures: T and rho in units of the reference T = 1,
    rho = 1; velocities in sites per step (vorticity: per step) when the velocity set's *r* is
    known (pictures draw model values / r), else in model units (u/r sites per step)."""
    check_quantity(quantity)
    if quantity == "T":
        return "units of the reference $T = 1$"
    if quantity == "rho":
        return r"units of the reference $\rho = 1$"
    if r:
        return "per step" if quantity == "vorticity" else "sites per step"
    return r"model units: $\omega/r$ per step" if quantity == "vorticity" else "model units: $u/r$ sites per step"


def check_quantity(quantity: str) -> str:
    if quantity not in STYLE:
        raise ValueError(f"unknown picture quantity {quantity!r}; choose from {', '.join(PICTURE_QUANTITIES)}")
    return quantity


def picture_name(quantity: str, step: int) -> str:
    """``T-000001000.png``: the name of a picture of a step (the run's pictures/ and lbgen plot)."""
    return f"{check_quantity(quantity)}-{stem(step)}.png"


def default_pictures(velocity_set_name: str, setup: Optional[str] = None) -> Tuple[str, ...]:
    """The picture quantities of a run by default (``--pictures``): the speed with arrows of
    the velocity for the driven flows of FLOW_PICTURES (cavities, channels: the direction of the
    circulation shows); else T for a thermal velocity set, vorticity for an isothermal one
    (whose T is the constant 1)."""
    from lbgen.model.catalog import set_entry
    if setup in FLOW_PICTURES:
        return FLOW_PICTURES[setup]
    return ISOTHERMAL_PICTURES if set_entry(velocity_set_name).isothermal else THERMAL_PICTURES


def default_pictures_every(steps: int, time_block: int = 1) -> int:
    """K of ``--pictures-every`` when not given: about MOVIE_FRAMES movie frames per run (one
    every step at least), rounded up to a multiple of the time block (steps per sweep)."""
    k = max(1, -(-int(steps) // MOVIE_FRAMES))
    block = max(1, int(time_block))
    return -(-k // block) * block


# --------------------------------------------------------------------------- size
def figure_layout(shape: Tuple[int, int]) -> Tuple[float, float, float, float]:
    """(width, height, image width, image height) in inches of the picture of an (LX, LY)
    lattice: the image box has the lattice's aspect; fixed margins for labels and colour bar.
    Very tall lattices get an image box 1.2 in wide (room for the title) -- but never taller
    than MAX_LONG_SIDE_PX / MIN_DPI inches with the margins, so every lattice has a dpi range."""
    lx, ly = (int(n) for n in shape)
    left, right, bottom, top = MARGINS_IN
    if ly >= lx:
        img_h = 9.0
        img_w = img_h * lx / ly
        if img_w < 1.2:                    # very tall lattices: keep room for the title
            img_h = min(1.2 * ly / lx, MAX_LONG_SIDE_PX / MIN_DPI - bottom - top)
            img_w = img_h * lx / ly
    else:
        img_w = 10.0
        img_h = max(img_w * ly / lx, 0.6)
    return left + img_w + right, bottom + img_h + top, img_w, img_h


def long_side_in(shape: Tuple[int, int]) -> float:
    """The long side in inches of the picture of an (LX, LY) lattice."""
    return max(figure_layout(shape)[:2])


#: the longest side in inches of the pictures of lattices up to 7.5 times taller than wide
#: (and of every wider one): the range ``check_dpi`` uses when the lattice is not known
_NOMINAL_LONG_IN = long_side_in((2, 1))


def default_dpi(shape: Tuple[int, int], long_side_px: float = LONG_SIDE_PX) -> float:
    """The dpi of a picture *long_side_px* pixels on the long side (at least MIN_DPI)."""
    return max(long_side_px / long_side_in(shape), MIN_DPI)


def dpi_range(shape: Optional[Tuple[int, int]] = None) -> Tuple[float, float]:
    """(lowest, highest) dpi of a picture: MIN_DPI, and what gives MAX_LONG_SIDE_PX pixels on
    the long side of the picture of the lattice *shape* (LX, LY) -- without it, of every
    lattice up to 7.5 times taller than wide (8 to 1330)."""
    long = _NOMINAL_LONG_IN if shape is None else long_side_in(shape)
    return MIN_DPI, max(_floor3(MAX_LONG_SIDE_PX / long), MIN_DPI)


def _floor3(x: float) -> float:
    """*x* rounded down to 3 significant digits (the range stays inside the exact one)."""
    scale = 10.0 ** (math.floor(math.log10(x)) - 2)
    return float(f"{math.floor(x / scale + 1e-9) * scale:.3g}")


def check_dpi(dpi, shape: Optional[Tuple[int, int]] = None) -> Optional[float]:
    """``--dpi``: None (the default, 1200 px on the long side) or a number in :func:`dpi_range`
    (of the lattice *shape* when known); ValueError naming the value and the range otherwise."""
    if dpi is None:
        return None
    lo, hi = dpi_range(shape)
    where = (f"for a {int(shape[0])} x {int(shape[1])} lattice, " if shape is not None else "")
    allowed = (f"allowed {lo:g} to {hi:g} ({where}at least {MIN_DPI:g} dpi for the labels' text and at most "
               f"{MAX_LONG_SIDE_PX} px on a picture's long side; leave --dpi out for {LONG_SIDE_PX} px)")
    try:
        value = float(dpi)
    except (TypeError, ValueError):
        raise ValueError(f"--dpi {dpi!r}: not a number; {allowed}") from None
    if not (math.isfinite(value) and lo <= value <= hi):
        raise ValueError(f"--dpi {dpi:g}: {allowed}" if isinstance(dpi, (int, float)) else f"--dpi {dpi}: {allowed}")
    return value


# --------------------------------------------------------------------------- time
class TimeUnit(NamedTuple):
    """The flow's own unit of time: *steps* lattice steps make one unit, written *label*
    (e.g. ``TimeUnit(4254.0, r"$\\tau$")`` for a Rayleigh-Taylor time sqrt(L / (A g)))."""

    steps: float
    label: str


def check_time_unit(value) -> Optional[TimeUnit]:
    """*value* -- None, ``(steps per unit, label)``, ``{"steps": .., "label": ..}`` (manifest)
    or a TimeUnit -- as a TimeUnit (None stays None); ValueError naming what is wrong."""
    if value is None:
        return None
    try:
        steps, label = (value.get("steps"), value.get("label")) if isinstance(value, Mapping) else value
        steps = float(steps)
    except (TypeError, ValueError):
        raise ValueError(f"time unit {value!r}: expected (steps per unit, label), e.g. (4254.0, '$\\\\tau$')") from None
    if not (math.isfinite(steps) and steps > 0):
        raise ValueError(f"time unit {value!r}: the steps per unit must be a positive number")
    label = str(label).strip() if label is not None else ""
    if not label or label.count("$") % 2:
        raise ValueError(f"time unit {value!r}: the label must be non-empty text (mathtext between pairs of $)")
    return TimeUnit(steps, label)


def plain_label(label: str) -> str:
    """A time unit's mathtext label as plain text: ``$t_{RT}$`` -> ``t_RT``, ``$H^2/\\nu$`` -> ``H^2/nu``."""
    return str(label).replace("$", "").replace("{", "").replace("}", "").replace("\\", "")


def flow_time(step: int, time_unit: Optional[TimeUnit]) -> Optional[float]:
    """The time of *step* in the flow's unit (step / steps per unit), None without one."""
    time_unit = check_time_unit(time_unit)
    return None if time_unit is None else int(step) / time_unit.steps


def time_text(step: Optional[int], time_unit: Optional[TimeUnit] = None, time: Optional[float] = None) -> str:
    """The time of a picture: ``step 2000 = 0.66 $t_{RT}$`` (in steps and, with *time_unit*, in
    the flow's unit); ``step 2000`` without a unit; with no step, the model *time* named as
    such (``t = 1671 model time units (steps / r)``); '' when there is neither."""
    if step is not None:
        flow = flow_time(step, time_unit)
        return f"step {int(step)}" + (f" = {flow:.3g} {check_time_unit(time_unit).label}" if flow is not None else "")
    if time is not None:
        return f"$t$ = {float(time):.4g} model time units (steps / r)"
    return ""


def title_of(quantity: str, step: Optional[int], time: Optional[float] = None,
             time_unit: Optional[TimeUnit] = None) -> str:
    """Two lines: the quantity (name and symbol), then its time (:func:`time_text`):
    ``temperature T`` / ``step 4000 = 1.32 t_RT``."""
    name, symbol = STYLE[check_quantity(quantity)][:2]
    when = time_text(step, time_unit, time)
    return f"{name} {symbol}" + (f"\n{when}" if when else "")


# --------------------------------------------------------------------------- figures
def new_figure(size_in: Tuple[float, float], dpi: float):
    """A matplotlib Figure that needs no GUI (no pyplot state)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=size_in, dpi=dpi)
    FigureCanvasAgg(fig)
    return fig


def figure_rgb(fig) -> np.ndarray:
    """(H, W, 3) uint8 pixels of a figure."""
    fig.canvas.draw()
    return np.asarray(fig.canvas.buffer_rgba())[..., :3].copy()


def save_png(fig, path: PathLike, metadata: Optional[Mapping[str, str]] = None) -> Path:
    """*fig* as a PNG at *path* (atomic); *metadata*: PNG text entries."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    return atomic_write(path, lambda fh: fig.savefig(fh, format="png", metadata=dict(metadata or {})))

