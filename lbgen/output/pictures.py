"""Pictures of fields: colour limits fixed per run from the physics, one look for every field.

Colour limits (``colour_limits``) are chosen once, at the start of a run, and recorded in
manifest.json under ``colour_limits`` as ``{field: [lo, hi]}``; every frame and movie of
the run uses them, so pictures of different steps compare.  Velocity-derived fields
(vorticity, speed, ux, uy) whose values are at round-off level relative to their colour
range are drawn as exactly zero, never as amplified noise.

Every picture of a quantity has the same geometry whatever the data: the image box, the
colour bar (its extension arrows are fixed per quantity, never chosen from the data), its
ticks and labels (mathtext, lattice units).  A *window* ``((x0, x1), (y0, y1))`` in sites
(half-open, as Python slices) crops the picture; ``'auto'`` crops y to the rows where any
recorded step differs visibly from the uniform layers at the walls (:func:`active_rows`,
:func:`auto_window`).  The title gives the step, the time t = step / r and, with a
*time_unit* ``(steps per unit, label)``, the time in the flow's own unit.

Movie frames (``frames/step-*.npz``, :func:`write_frame_file`) hold the drawn values of
the picture quantities, quantized to 16 bits over three times the colour range (a step
of 1/20000 of the range, 85 times finer than the colour map), so a run can record 100
frames for a movie at a few per cent of the cost of its field files.
"""
from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Dict, Iterable, Mapping, NamedTuple, Optional, Sequence, Tuple, Union

import numpy as np

from lbgen.system.cache import atomic_write
from lbgen.output.fields import OutputFileError, field_array, speed, stem, vorticity

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
#: |value| below ROUNDOFF x (colour range) is round-off: drawn as 0 (256 colours cannot show it
#: anyway); values beyond a colour limit by less than that are drawn at the limit
ROUNDOFF = 1e-9
#: a velocity scale for a set-up with no flow and no driving (nothing will move)
REST_VELOCITY = 1e-2
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
#: movie frames per run at the default ``--pictures-every`` (with the default 20 frames per
#: second of ``lbgen movie``: a movie of 5 s)
MOVIE_FRAMES = 100


def check_quantity(quantity: str) -> str:
    if quantity not in STYLE:
        raise ValueError(f"unknown picture quantity {quantity!r}; choose from {', '.join(PICTURE_QUANTITIES)}")
    return quantity


def picture_name(quantity: str, step: int) -> str:
    """``T-000001000.png``: the name of a picture of a step (the run's pictures/ and lbgen plot)."""
    return f"{check_quantity(quantity)}-{stem(step)}.png"


def default_pictures(velocity_set_name: str) -> Tuple[str, ...]:
    """The picture quantities of a run by default (``--pictures``): T for a thermal velocity
    set, vorticity for an isothermal one (whose T is the constant 1)."""
    from lbgen.model.catalog import set_entry
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


def picture_data(quantity: str, fields: dict) -> np.ndarray:
    """The (LX, LY) values of a quantity, from rho, ux, uy, T (a 3D slice, :func:`mid_planes`,
    brings its own speed and vorticity)."""
    check_quantity(quantity)
    if quantity in ("T", "rho", "ux", "uy") or quantity in fields:
        return field_array(fields, quantity)
    if quantity == "vorticity":
        return vorticity(field_array(fields, "ux"), field_array(fields, "uy"))
    return speed(field_array(fields, "ux"), field_array(fields, "uy"))


def drawn_data(quantity: str, fields: dict, limits: Sequence[float]) -> np.ndarray:
    """What a picture draws: the data, with round-off-level velocity values set to exactly 0
    and values beyond a colour limit by round-off only set to the limit."""
    return clean(quantity, picture_data(quantity, fields), limits)


def clean(quantity: str, data: np.ndarray, limits: Sequence[float]) -> np.ndarray:
    """*data* of *quantity* as drawn with *limits*: round-off-level velocity values are 0,
    values within round-off beyond a limit are the limit (see ``drawn_data``)."""
    lo, hi = (float(v) for v in limits)
    tol = ROUNDOFF * (hi - lo)
    data = np.asarray(data, dtype=np.float64)
    if quantity in VELOCITY_QUANTITIES:
        data = np.where(np.abs(data) <= tol, 0.0, data)
    data = np.where((data < lo) & (data >= lo - tol), lo, data)
    return np.where((data > hi) & (data <= hi + tol), hi, data)


# --------------------------------------------------------------------------- colour limits
def velocity_scale(fields: dict, gravity: Sequence[float] = (0.0, 0.0), T_range: Optional[Tuple[float, float]] = None,
                   height: Optional[float] = None, speeds: Sequence[float] = ()) -> float:
    """A velocity scale of a set-up: the larger of the initial max |u| (3D fields: with uz),
    the free-fall speed sqrt(A |g| H) of a thermal contrast (Atwood number A = (T_hot −
    T_cold)/(T_hot + T_cold), densities ∝ 1/T at equal pressure; H the height, LY) and the
    ``speeds`` that drive the flow (moving walls).  REST_VELOCITY when all are 0."""
    ux, uy = field_array(fields, "ux"), field_array(fields, "uy")
    u = speed(ux, uy) if "uz" not in fields else np.sqrt(ux * ux + uy * uy + field_array(fields, "uz") ** 2)
    u0 = float(np.nanmax(u)) if ux.size else 0.0
    T = field_array(fields, "T")
    lo, hi = float(np.nanmin(T)), float(np.nanmax(T))
    if T_range is not None:
        lo, hi = min(lo, *T_range), max(hi, *T_range)
    atwood = (hi - lo) / (hi + lo) if hi + lo > 0 else 0.0
    g = math.hypot(*gravity)
    u_ff = math.sqrt(atwood * g * (T.shape[1] if height is None else height))
    return max(u0, u_ff, *(abs(float(v)) for v in speeds)) or REST_VELOCITY


def _span(lo: float, hi: float) -> Tuple[float, float]:
    """A range of at least 1% of its magnitude (a uniform field still gets a colour bar)."""
    if hi - lo <= 1e-6 * max(abs(lo), abs(hi), 1e-300):
        mid = 0.5 * (lo + hi)
        pad = 0.01 * abs(mid) or 0.01
        return mid - pad, mid + pad
    return lo, hi


def colour_limits(quantities: Sequence[str], fields: dict, *, gravity: Sequence[float] = (0.0, 0.0),
                  T_range: Optional[Tuple[float, float]] = None,
                  overrides: Optional[Mapping[str, Sequence[float]]] = None,
                  speeds: Sequence[float] = ()) -> Dict[str, list]:
    """{quantity: [lo, hi]} for a whole run, from its initial fields and set-up.

    T: the initial range and the wall temperatures (T_range); rho: the initial range;
    speed [0, U], ux and uy [−U, U], vorticity [−U/ℓ, U/ℓ] with U = :func:`velocity_scale`
    and ℓ = LX/16 (the half-width of the shortest of the 8 modes that perturb a
    Rayleigh–Taylor interface).  *overrides* ``{quantity: (lo, hi)}`` win.
    """
    overrides = dict(overrides or {})
    for q in overrides:
        check_quantity(q)
    out = {}
    T = field_array(fields, "T")
    U = velocity_scale(fields, gravity, T_range, speeds=speeds)
    ell = max(T.shape[0] / 16.0, 1.0)
    for q in dict.fromkeys(list(quantities) + list(overrides)):
        check_quantity(q)
        if q == "T":
            lo, hi = float(np.nanmin(T)), float(np.nanmax(T))
            if T_range is not None:
                lo, hi = min(lo, *T_range), max(hi, *T_range)
            lim = _span(lo, hi)
        elif q == "rho":
            rho = field_array(fields, "rho")
            lim = _span(float(np.nanmin(rho)), float(np.nanmax(rho)))
        elif q == "speed":
            lim = (0.0, U)
        elif q == "vorticity":
            lim = (-U / ell, U / ell)
        else:
            lim = (-U, U)
        if q in overrides:
            lim = tuple(float(v) for v in overrides[q])
        out[q] = [float(lim[0]), float(lim[1])]
    return out


def parse_clim(items, default_field: Optional[str] = None) -> Dict[str, list]:
    """``FIELD=LO,HI`` strings (command line), or a TOML table ``{FIELD = [LO, HI]}``, to
    ``{field: [lo, hi]}``; ValueError naming the bad item and what is allowed.  With
    *default_field* (lbgen movie / plot, which draw one field) a bare ``LO,HI`` is that
    field's."""
    if items is None:
        return {}
    syntax = "FIELD=LO,HI" + (" or LO,HI" if default_field else "")
    pairs = []
    if isinstance(items, Mapping):
        pairs = list(items.items())
    else:
        for item in ([items] if isinstance(items, str) else items):
            name, sep, rest = str(item).partition("=")
            if not sep:
                if default_field is None:
                    raise ValueError(f"--clim {item!r}: expected FIELD=LO,HI (e.g. T=0.95,1.05)")
                name, rest = default_field, str(item)
            pairs.append((name.strip(), [v for v in rest.split(",")]))
    out = {}
    for name, values in pairs:
        if name not in STYLE:
            raise ValueError(f"--clim {name!r}: unknown field; choose from {', '.join(PICTURE_QUANTITIES)} "
                             f"(syntax {syntax})")
        try:
            lo, hi = (float(v) for v in values)
        except (TypeError, ValueError):
            raise ValueError(f"--clim {name}={values!r}: expected two numbers LO,HI (e.g. {name}=0.95,1.05)") from None
        if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
            raise ValueError(f"--clim {name}={lo},{hi}: LO and HI must be finite with LO < HI")
        out[name] = [lo, hi]
    return out


def clim_of(quantity: str, text: Optional[str]) -> Optional[list]:
    """The colour limits of ``--clim`` for a command that draws *quantity* (movie, plot):
    ``LO,HI`` or ``FIELD=LO,HI`` as for ``lbgen run``, FIELD being *quantity*; None when not given."""
    if text is None:
        return None
    limits = parse_clim([text], default_field=quantity)
    if quantity not in limits:
        other = next(iter(limits))
        raise ValueError(f"--clim {text}: this picture draws {quantity} (--field), not {other}; give "
                         f"{quantity}=LO,HI or LO,HI")
    return limits[quantity]


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


def _number(t: float) -> str:
    """A time for a title: whole numbers from 1000 on, else 4 significant digits."""
    if t == 0:
        return "0"
    return f"{t:.0f}" if abs(t) >= 1000 else f"{t:.4g}"


def title_of(quantity: str, step: Optional[int], time: Optional[float],
             time_unit: Optional[TimeUnit] = None) -> str:
    """Two lines: the quantity (name and symbol), then the step, the time t = step / r and --
    with *time_unit* -- the time in the flow's unit: ``step 4000,  t = 3342 = 1.32 τ``."""
    name, symbol = STYLE[check_quantity(quantity)][:2]
    time_unit = check_time_unit(time_unit)
    parts = []
    if step is not None:
        parts.append(f"step {int(step)}")
    flow = (f"{int(step) / time_unit.steps:.3g} {time_unit.label}" if time_unit is not None and step
            else None)                                           # step 0: t = 0 in every unit
    if time is not None:
        parts.append(f"$t$ = {_number(float(time))}" + (f" = {flow}" if flow else ""))
    elif flow:
        parts.append(f"$t$ = {flow}")
    return f"{name} {symbol}" + ("\n" + ",  ".join(parts) if parts else "")


# --------------------------------------------------------------------------- windows
#: a window: ((x0, x1), (y0, y1)) in sites, half-open like Python slices
Window = Tuple[Tuple[int, int], Tuple[int, int]]
AUTO = "auto"
#: the whole lattice (``--window full``)
FULL = ((None, None), (None, None))
#: 'auto': a row is part of the flow when it differs from the uniform layer at a wall by more
#: than this fraction of the colour range (half a percent: about one of the colour map's 256
#: levels; a round-off threshold would keep the whole height, which acoustic waves and the
#: hydrostatic adjustment stir at the 1e-4 level) ...
AUTO_TOLERANCE = 5e-3
#: ... the window adds this fraction of the flow's height above and below it (at least
#: AUTO_MIN_MARGIN sites) ...
AUTO_MARGIN, AUTO_MIN_MARGIN = 0.25, 4
#: ... and a window taller than this fraction of the lattice is the whole height
AUTO_KEEP = 0.85
_WINDOW_SYNTAX = "x0:x1,y0:y1 in sites (an end left out is the lattice's edge, e.g. :,100:300), auto or full"


def parse_window(text) -> Union[None, str, tuple]:
    """``--window``: ``'x0:x1,y0:y1'`` (sites, half-open as Python slices; an end left out is
    the lattice's edge: ``':,100:300'``), ``'auto'`` or ``'full'`` (the whole lattice); also a
    TOML / JSON ``[[x0, x1], [y0, y1]]`` (null ends allowed).  Returns None (not given),
    ``'auto'`` or ``((x0, x1), (y0, y1))`` with None for an edge; ValueError naming the value."""
    if text is None:
        return None
    if isinstance(text, str):
        value = text.strip().lower()
        if value == AUTO:
            return AUTO
        if value in ("full", "none", "all"):
            return FULL
        parts = value.split(",")
        if len(parts) != 2 or any(p.count(":") != 1 for p in parts):
            raise ValueError(f"--window {text!r}: expected {_WINDOW_SYNTAX}")
        pairs = [p.split(":") for p in parts]
    else:
        try:
            pairs = [list(p) for p in text]
        except TypeError:
            pairs = []
        if len(pairs) != 2 or any(len(p) != 2 for p in pairs):
            raise ValueError(f"--window {text!r}: expected {_WINDOW_SYNTAX}")
    out = []
    for axis, (a, b) in zip("xy", pairs):
        ends = []
        for v in (a, b):
            if v is None or (isinstance(v, str) and not v.strip()):
                ends.append(None)
                continue
            try:
                if isinstance(v, bool):
                    raise ValueError
                n = int(v) if isinstance(v, (int, np.integer)) else int(str(v).strip())
            except ValueError:
                raise ValueError(f"--window {text!r}: {v!r} is not a whole number of sites; expected "
                                 f"{_WINDOW_SYNTAX}") from None
            if n < 0:
                raise ValueError(f"--window {text!r}: {axis} ends must be sites >= 0")
            ends.append(n)
        if None not in ends and ends[1] - ends[0] < 2:
            raise ValueError(f"--window {text!r}: {axis} {ends[0]}:{ends[1]} must span at least 2 sites "
                             f"(x0 < x1, half-open)")
        out.append(tuple(ends))
    return tuple(out)


def window_option(value) -> Optional[str]:
    """``--window`` as a run description keeps it (manifest config, TOML): None (not given),
    ``'auto'``, ``'full'`` or ``'x0:x1,y0:y1'`` (an end left out stays empty); any spelling
    :func:`parse_window` takes, ValueError naming a bad one."""
    window = parse_window(value)
    if window is None or window == AUTO:
        return window
    if window == FULL:
        return "full"
    (x0, x1), (y0, y1) = ("" if v is None else str(v) for v in window[0]), \
        ("" if v is None else str(v) for v in window[1])
    return f"{x0}:{x1},{y0}:{y1}"


def check_window(window, shape: Tuple[int, int]) -> Window:
    """A window (None or ``FULL``: the whole lattice; ``((x0, x1), (y0, y1))``, None ends at the
    edges) checked against the lattice *shape* (LX, LY): concrete ends; ValueError when it
    reaches beyond the lattice or spans under 2 sites.  ``'auto'`` must be resolved first."""
    lx, ly = (int(n) for n in shape)
    if window is None:
        return (0, lx), (0, ly)
    if isinstance(window, str):
        if window.strip().lower() == AUTO:
            raise ValueError("window 'auto' must be resolved from the data first (auto_window)")
        window = parse_window(window)
    window = parse_window(window) if not all(isinstance(p, tuple) for p in window) else window
    out = []
    for axis, (a, b), n in zip("xy", window, (lx, ly)):
        a = 0 if a is None else int(a)
        b = n if b is None else int(b)
        if not (0 <= a and b <= n and b - a >= 2):
            raise ValueError(f"--window {axis} {a}:{b}: outside the lattice's {axis} range 0:{n} or under 2 sites")
        out.append((a, b))
    return tuple(out)


def window_text(window: Window) -> str:
    """``'0:128,168:351'``: a concrete window as ``--window`` writes it."""
    (x0, x1), (y0, y1) = window
    return f"{x0}:{x1},{y0}:{y1}"


def active_rows(data: np.ndarray, limits: Sequence[float]) -> Optional[Tuple[int, int]]:
    """[y0, y1): the rows of *data* (LX, LY) between the uniform layers at the bottom and the
    top -- a row belongs to a layer while it differs from that wall row's median by at most
    AUTO_TOLERANCE of the colour range *limits*; None when the whole field is one layer.
    Rows with NaN or inf count as flow."""
    a = np.asarray(data, dtype=np.float64)
    tol = AUTO_TOLERANCE * (float(limits[1]) - float(limits[0]))
    with np.errstate(invalid="ignore"):
        off = []
        for row in (a[:, 0], a[:, -1]):
            finite = row[np.isfinite(row)]
            ref = float(np.median(finite)) if finite.size else math.nan
            off.append(~np.all(np.abs(a - ref) <= tol, axis=0))
    below, above = (np.flatnonzero(o) for o in off)
    if not below.size or not above.size:
        return None
    y0, y1 = int(below[0]), int(above[-1]) + 1
    if y1 <= y0:                       # a step between two rows: both rows are the flow
        y0, y1 = max(0, y1 - 1), min(a.shape[1], y0 + 1)
    return y0, y1


def union_rows(*rows: Optional[Tuple[int, int]]) -> Optional[Tuple[int, int]]:
    """The smallest row range holding every one of *rows* (None: no rows)."""
    given = [r for r in rows if r is not None]
    if not given:
        return None
    return min(r[0] for r in given), max(r[1] for r in given)


def auto_window(rows: Optional[Tuple[int, int]], shape: Tuple[int, int]) -> Window:
    """The 'auto' window of a lattice *shape* (LX, LY) whose flow is in *rows* (the union of
    :func:`active_rows` of every recorded step and quantity): every column, the rows with a
    margin of AUTO_MARGIN of their height above and below (at least AUTO_MIN_MARGIN sites);
    the whole lattice when nothing varies or the window would keep more than AUTO_KEEP of it."""
    lx, ly = (int(n) for n in shape)
    if rows is None:
        return (0, lx), (0, ly)
    y0, y1 = rows
    margin = max(AUTO_MIN_MARGIN, math.ceil(AUTO_MARGIN * (y1 - y0)))
    y0, y1 = max(0, y0 - margin), min(ly, y1 + margin)
    if y1 - y0 > AUTO_KEEP * ly or y1 - y0 < 2:
        return (0, lx), (0, ly)
    return (0, lx), (y0, y1)


# --------------------------------------------------------------------------- movie frames
FRAMES_DIR = "frames"
#: frames keep every site up to this many along an axis, every k-th beyond (k = L // 2048)
FRAME_MAX_SIDE = 2048
#: quantization of a frame: codes 0..LEVELS over [lo − span, hi + span]; NAN_CODE is NaN
_LEVELS, _NAN_CODE = 65534, 65535


def frame_name(step: int) -> str:
    """``step-000001000.npz``: the name of a movie frame in ``frames/``."""
    return f"step-{stem(step)}.npz"


def frame_stride(shape: Tuple[int, int]) -> Tuple[int, int]:
    """(fx, fy): a frame keeps sites fx i + fx // 2, fy j + fy // 2."""
    return tuple(max(1, int(n) // FRAME_MAX_SIDE) for n in shape)


class Frame(NamedTuple):
    """A movie frame read back: the drawn values of its quantities at the sites
    (stride * i + stride // 2) of the lattice *shape*, and each quantity's flow rows."""

    step: int
    time: Optional[float]
    shape: Tuple[int, int]
    stride: Tuple[int, int]
    data: Dict[str, np.ndarray]
    rows: Dict[str, Optional[Tuple[int, int]]]


def write_frame_file(path: PathLike, step: int, time: Optional[float], drawn: Mapping[str, np.ndarray],
                     limits: Mapping[str, Sequence[float]]) -> Path:
    """A movie frame (npz, compressed, atomic): for each quantity *q* of *drawn* ({q: drawn
    values (LX, LY)}) its 16-bit codes ``q``, the range they span ``q__range`` and its flow
    rows ``q__rows`` (:func:`active_rows` against ``limits[q]``; -1, -1 for none); and
    ``step``, ``time`` (NaN when None), ``shape``, ``stride``."""
    shapes = {np.shape(v) for v in drawn.values()}
    if len(shapes) != 1 or len(next(iter(shapes))) != 2:
        raise ValueError(f"frame quantities must be 2-D arrays of one shape, got {shapes}")
    shape = next(iter(shapes))
    fx, fy = frame_stride(shape)
    payload = {"step": np.int64(step), "time": np.float64(math.nan if time is None else time),
               "shape": np.asarray(shape, dtype=np.int64), "stride": np.asarray((fx, fy), dtype=np.int64)}
    for q, data in drawn.items():
        check_quantity(q)
        lo, hi = (float(v) for v in limits[q])
        a, b = lo - (hi - lo), hi + (hi - lo)
        values = np.asarray(data, dtype=np.float64)
        sampled = values[fx // 2::fx, fy // 2::fy]
        code = np.full(sampled.shape, _NAN_CODE, dtype=np.uint16)
        known = ~np.isnan(sampled)
        code[known] = np.rint((np.clip(sampled[known], a, b) - a) / (b - a) * _LEVELS).astype(np.uint16)
        payload[q] = code
        payload[f"{q}__range"] = np.asarray((a, b), dtype=np.float64)
        payload[f"{q}__rows"] = np.asarray(active_rows(values, (lo, hi)) or (-1, -1), dtype=np.int64)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    return atomic_write(path, lambda fh: np.savez_compressed(fh, **payload))


def read_frame_file(path: PathLike, quantities: Optional[Iterable[str]] = None, data: bool = True) -> Frame:
    """A movie frame (see :func:`write_frame_file`): the values of *quantities* (default: all
    it holds; with ``data=False`` none, only the flow rows).  OutputFileError naming the file
    when it is damaged or lacks a quantity asked for."""
    path = Path(path)
    try:
        with np.load(path, allow_pickle=False) as z:
            held = [n for n in z.files if n in STYLE]
            wanted = held if quantities is None else list(quantities)
            missing = [q for q in wanted if q not in held]
            if missing:
                raise OutputFileError(f"{path}: this frame has no {', '.join(missing)} (it has "
                                      f"{', '.join(held) or 'nothing'})")
            step, time = int(z["step"]), float(z["time"])
            shape = tuple(int(n) for n in z["shape"])
            stride = tuple(int(n) for n in z["stride"])
            rows = {}
            for q in held:
                r0, r1 = (int(v) for v in z[f"{q}__rows"])
                rows[q] = None if r0 < 0 else (r0, r1)
            values = {}
            for q in (wanted if data else ()):
                code = np.asarray(z[q])
                a, b = (float(v) for v in z[f"{q}__range"])
                quantum = (b - a) / _LEVELS
                v = a + code.astype(np.float64) * quantum
                if a < 0 < b:
                    v[np.abs(v) < 0.5 * quantum] = 0.0       # the code of 0 is 0, not a round-off
                v[code == _NAN_CODE] = math.nan
                values[q] = v
    except OutputFileError:
        raise
    except Exception as e:  # noqa: BLE001 - truncated or damaged, whatever numpy / zipfile says
        reason = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise OutputFileError(f"{path}: cannot read the movie frame, it is truncated or damaged "
                              f"({type(e).__name__}: {reason})") from None
    return Frame(step, None if math.isnan(time) else time, shape, stride, values, rows)


# --------------------------------------------------------------------------- figures
def new_figure(size_in: Tuple[float, float], dpi: float):
    """A matplotlib Figure that needs no GUI (no pyplot state)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=size_in, dpi=dpi)
    FigureCanvasAgg(fig)
    return fig


def _samples(lo: int, hi: int, stride: int, count: int) -> Tuple[int, int]:
    """[i0, i1): the samples i (at site stride i + stride // 2) inside sites [lo, hi)."""
    off = stride // 2
    i0 = min(max(0, -((off - lo) // stride)), max(count - 1, 0))
    i1 = min(max(i0 + 1, -((off - hi) // stride)), count)
    return i0, i1


def default_limits(quantity: str, data: np.ndarray) -> Tuple[float, float]:
    """This state's own colour range (symmetric for diverging quantities): pictures without
    run limits (notebooks)."""
    diverging = STYLE[check_quantity(quantity)][4]
    finite = np.asarray(data)[np.isfinite(data)]
    if not finite.size:
        return 0.0, 1.0
    m = float(np.abs(finite).max())
    lo, hi = (-m, m) if diverging else _span(float(finite.min()), float(finite.max()))
    return (lo, hi) if hi > lo else (-1.0, 1.0)


class FieldPicture:
    """One figure of one quantity, drawn again for every frame: the image box, the colour bar,
    its extension arrows, ticks and label are fixed when it is made -- only the image and the
    title change (:meth:`draw`) -- so every frame of a movie has the same geometry.

    *shape*: the lattice (LX, LY); the data given to :meth:`draw` are values at the sites
    (stride * i + stride // 2) (a movie frame's; (1, 1): every site).  *window*: None (the
    lattice) or ``((x0, x1), (y0, y1))`` in sites.  Size: *long_side_px* pixels on the long
    side, or *dpi* (checked against :func:`dpi_range` of the window before anything is drawn).
    """

    def __init__(self, quantity: str, shape: Tuple[int, int], *, limits: Sequence[float], window=None,
                 cmap: Optional[str] = None, dpi: Optional[float] = None, long_side_px: int = LONG_SIDE_PX,
                 time_unit=None, stride: Tuple[int, int] = (1, 1), axes: Tuple[str, str] = ("x", "y")):
        import matplotlib

        name, _symbol, definition, default_cmap, _diverging = STYLE[check_quantity(quantity)]
        self.quantity = quantity
        self.shape = tuple(int(n) for n in shape)
        self.window = check_window(window, self.shape)
        self.time_unit = check_time_unit(time_unit)
        self.limits = (float(limits[0]), float(limits[1]))
        (x0, x1), (y0, y1) = self.window
        wx, wy = x1 - x0, y1 - y0
        left, _right, bottom, _top = MARGINS_IN
        width, height, img_w, img_h = figure_layout((wx, wy))
        dpi = default_dpi((wx, wy), long_side_px) if dpi is None else check_dpi(dpi, (wx, wy))
        fx, fy = (int(s) for s in stride)
        nx, ny = -(-self.shape[0] // fx), -(-self.shape[1] // fy)
        ix, iy = _samples(x0, x1, fx, nx), _samples(y0, y1, fy, ny)
        # nearest-neighbour sampling at the picture's resolution: keep every k-th sample (k =
        # samples per pixel, rounded down) before matplotlib colour-maps the array, which it
        # otherwise does for every site (0.7 s a picture at 1024 x 4096, 0.1 s this way)
        kx, ky = max(1, int(wx // (img_w * dpi)) // fx), max(1, int(wy // (img_h * dpi)) // fy)
        self._take = (slice(ix[0] + kx // 2, ix[1], kx), slice(iy[0] + ky // 2, iy[1], ky))
        self._samples = (nx, ny)
        fig = self.figure = new_figure((width, height), float(dpi))
        ax = fig.add_axes((left / width, bottom / height, img_w / width, img_h / height))
        cax = fig.add_axes(((left + img_w + 0.15) / width, bottom / height, 0.2 / width, img_h / height))
        colours = matplotlib.colormaps[cmap or default_cmap].with_extremes(bad="0.6")   # NaN: grey
        blank = np.zeros((len(range(*self._take[1].indices(ny))), len(range(*self._take[0].indices(nx)))))
        self.image = ax.imshow(blank, origin="lower", aspect="auto", cmap=colours, vmin=self.limits[0],
                               vmax=self.limits[1], extent=(x0 - 0.5, x1 - 0.5, y0 - 0.5, y1 - 0.5),
                               interpolation="nearest")
        ax.set_xlabel(rf"${axes[0]}$ (sites)")
        ax.set_ylabel(rf"${axes[1]}$ (sites)")
        self.title = ax.set_title("", fontsize=11)
        self.colorbar = fig.colorbar(self.image, cax=cax, extend=EXTEND.get(quantity, "both"))
        label = f"{name} {definition}" if img_h >= SHORT_BAR_IN else definition
        self.colorbar.set_label(f"{label} (lattice units)")

    def draw(self, data: np.ndarray, step: Optional[int] = None, time: Optional[float] = None):
        """The figure showing *data* (drawn values at the picture's stride, the whole lattice)."""
        data = np.asarray(data)
        if data.shape != self._samples:
            raise ValueError(f"{self.quantity}: data of shape {data.shape}, the picture samples {self._samples}")
        self.image.set_data(data[self._take].T)
        self.title.set_text(title_of(self.quantity, step, time, self.time_unit))
        return self.figure

    def rgb(self, data: np.ndarray, step: Optional[int] = None, time: Optional[float] = None) -> np.ndarray:
        """(H, W, 3) pixels of the picture of *data*."""
        return figure_rgb(self.draw(data, step, time))


def field_figure(quantity: str, fields: dict, *, limits: Optional[Sequence[float]] = None, step: Optional[int] = None,
                 time: Optional[float] = None, cmap: Optional[str] = None, dpi: Optional[float] = None,
                 long_side_px: int = LONG_SIDE_PX, window=None, time_unit=None):
    """One field as a picture for slides: the lattice's (or the window's) aspect exactly, y up,
    axes in sites, a colour bar with the fixed *limits* (default: this state's range,
    symmetric for diverging fields) and fixed extension arrows, a title with the step, the
    time in model units (t = step / r) and, with *time_unit* ``(steps per unit, label)``,
    in the flow's unit.

    *window*: None (the lattice), ``((x0, x1), (y0, y1))`` in sites, or ``'auto'`` (the rows
    where this field differs visibly from its wall layers, with a margin: :func:`auto_window`).
    Size: the long side is *long_side_px* pixels (more for lattices so tall that this would
    be under MIN_DPI), or the figure is drawn at *dpi* (within :func:`dpi_range` of the
    window, else ValueError before anything is drawn).
    """
    check_quantity(quantity)
    if limits is None:
        limits = default_limits(quantity, picture_data(quantity, fields))
    lo, hi = float(limits[0]), float(limits[1])
    data = drawn_data(quantity, fields, (lo, hi))
    if isinstance(window, str) and window.strip().lower() == AUTO:
        window = auto_window(active_rows(data, (lo, hi)), data.shape)
    picture = FieldPicture(quantity, data.shape, limits=(lo, hi), window=window, cmap=cmap, dpi=dpi,
                           long_side_px=long_side_px, time_unit=time_unit)
    return picture.draw(data, step, time)


def figure_rgb(fig) -> np.ndarray:
    """(H, W, 3) uint8 pixels of a figure."""
    fig.canvas.draw()
    return np.asarray(fig.canvas.buffer_rgba())[..., :3].copy()


def save_png(fig, path: PathLike, metadata: Optional[Mapping[str, str]] = None) -> Path:
    """*fig* as a PNG at *path* (atomic); *metadata*: PNG text entries."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    return atomic_write(path, lambda fh: fig.savefig(fh, format="png", metadata=dict(metadata or {})))


# --------------------------------------------------------------------------- 3D: mid-plane slices
#: the mid-plane slices of a 3D state: (name, normal axis, in-plane axes)
MID_PLANES = (("xy", 2, (0, 1)), ("xz", 1, (0, 2)), ("yz", 0, (1, 2)))
_AXIS = "xyz"


def mid_planes(fields: dict, periodic: Sequence[bool] = (True, True, True)) -> Dict[str, tuple]:
    """{plane: (axes, index, slice fields)} of a 3D state (rho, ux, uy, uz, T of shape (LX, LY,
    LZ)) at the middle of each axis (index L // 2 along the normal): the slice fields are
    2D arrays over the plane's two axes (a, b): rho, T, ux, uy (the velocity's own x and y
    components), speed = |u| (all three) and vorticity = the component normal to the plane,
    omega_n = d_p u_q - d_q u_p with (n, p, q) a cyclic order of (x, y, z) (central
    differences; one-sided across walls: ``periodic`` per axis).
    A picture of a slice is drawn by :class:`FieldPicture` like a 2D state's."""
    u = [field_array(fields, c) for c in ("ux", "uy", "uz")]
    out = {}
    for name, normal, (a, b) in MID_PLANES:
        index = u[0].shape[normal] // 2

        def cut(v, normal=normal, index=index):
            return np.take(np.asarray(v, dtype=np.float64), index, axis=normal)
        sl = {k: cut(field_array(fields, k)) for k in ("rho", "T", "ux", "uy")}
        sl["speed"] = np.sqrt(sum(cut(c) ** 2 for c in u))
        p, q = (normal + 1) % 3, (normal + 2) % 3           # right-handed: omega_n = d_p u_q - d_q u_p
        side = {a: 0, b: 1}
        w = _derivative(cut(u[q]), side[p], periodic[p]) - _derivative(cut(u[p]), side[q], periodic[q])
        sl["vorticity"] = w
        out[name] = ((_AXIS[a], _AXIS[b]), index, sl)
    return out


def _derivative(v: np.ndarray, axis: int, periodic: bool) -> np.ndarray:
    """Central difference along ``axis`` (periodic, or one-sided at the ends: np.gradient)."""
    if periodic:
        return 0.5 * (np.roll(v, -1, axis) - np.roll(v, 1, axis))
    return np.gradient(v, axis=axis, edge_order=1) if v.shape[axis] >= 2 else np.zeros_like(v)


def slice_picture_name(quantity: str, plane: str, step: int) -> str:
    """``speed-xy-000001000.png``: a picture of the mid-plane slice of a 3D run."""
    return f"{check_quantity(quantity)}-{plane}-{stem(step)}.png"
