"""Pictures of fields: colour limits fixed per run from the physics, one look for every field.

Colour limits (``colour_limits``) are chosen once, at the start of a run, and recorded in
manifest.json under ``colour_limits`` as ``{field: [lo, hi]}``; every frame and movie of
the run uses them, so pictures of different steps compare.  Velocity-derived fields
(vorticity, speed, ux, uy) whose values are at round-off level relative to their colour
range are drawn as exactly zero, never as amplified noise.
"""
from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Dict, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from lbgen.system.cache import atomic_write
from lbgen.output.fields import field_array, speed, stem, vorticity

PathLike = Union[str, os.PathLike]

#: quantities a picture can show: (colour-bar label, colour map, diverging about 0)
STYLE = {
    "T": ("temperature T", "inferno", False),
    "rho": ("density ρ", "viridis", False),
    "vorticity": ("vorticity ω = ∂x u_y − ∂y u_x", "RdBu_r", True),
    "speed": ("speed |u|", "magma", False),
    "ux": ("velocity u_x", "RdBu_r", True),
    "uy": ("velocity u_y", "RdBu_r", True),
}
PICTURE_QUANTITIES = tuple(STYLE)
#: velocity-derived quantities: at rest they are drawn as exactly zero
VELOCITY_QUANTITIES = ("vorticity", "speed", "ux", "uy")
#: |value| below ROUNDOFF x (colour range) is round-off: drawn as 0 (256 colours cannot show it anyway)
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
#: inches around the image box: left (y label), right (colour bar), bottom (x label), top (title)
MARGINS_IN = (0.85, 1.45, 0.6, 0.55)


def check_quantity(quantity: str) -> str:
    if quantity not in STYLE:
        raise ValueError(f"unknown picture quantity {quantity!r}; choose from {', '.join(PICTURE_QUANTITIES)}")
    return quantity


def picture_name(quantity: str, step: int) -> str:
    """``T-000001000.png``: the name of a picture of a step (the run's pictures/ and lbgen plot)."""
    return f"{check_quantity(quantity)}-{stem(step)}.png"


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
    """The (LX, LY) values of a quantity, from rho, ux, uy, T."""
    check_quantity(quantity)
    if quantity in ("T", "rho", "ux", "uy"):
        return field_array(fields, quantity)
    if quantity == "vorticity":
        return vorticity(field_array(fields, "ux"), field_array(fields, "uy"))
    return speed(field_array(fields, "ux"), field_array(fields, "uy"))


def drawn_data(quantity: str, fields: dict, limits: Sequence[float]) -> np.ndarray:
    """What a picture draws: the data, with round-off-level velocity values set to exactly 0."""
    data = picture_data(quantity, fields)
    if quantity in VELOCITY_QUANTITIES:
        lo, hi = limits
        data = np.where(np.abs(data) <= ROUNDOFF * (hi - lo), 0.0, data)
    return data


# --------------------------------------------------------------------------- colour limits
def velocity_scale(fields: dict, gravity: Sequence[float] = (0.0, 0.0), T_range: Optional[Tuple[float, float]] = None,
                   height: Optional[float] = None) -> float:
    """A velocity scale of a set-up: the larger of the initial max |u| and the free-fall speed
    sqrt(A |g| H) of a thermal contrast (Atwood number A = (T_hot − T_cold)/(T_hot + T_cold),
    densities ∝ 1/T at equal pressure; H the height, LY).  REST_VELOCITY when both are 0."""
    ux, uy = field_array(fields, "ux"), field_array(fields, "uy")
    u0 = float(np.nanmax(speed(ux, uy))) if ux.size else 0.0
    T = field_array(fields, "T")
    lo, hi = float(np.nanmin(T)), float(np.nanmax(T))
    if T_range is not None:
        lo, hi = min(lo, *T_range), max(hi, *T_range)
    atwood = (hi - lo) / (hi + lo) if hi + lo > 0 else 0.0
    g = math.hypot(*gravity)
    u_ff = math.sqrt(atwood * g * (T.shape[1] if height is None else height))
    return max(u0, u_ff) or REST_VELOCITY


def _span(lo: float, hi: float) -> Tuple[float, float]:
    """A range of at least 1% of its magnitude (a uniform field still gets a colour bar)."""
    if hi - lo <= 1e-6 * max(abs(lo), abs(hi), 1e-300):
        mid = 0.5 * (lo + hi)
        pad = 0.01 * abs(mid) or 0.01
        return mid - pad, mid + pad
    return lo, hi


def colour_limits(quantities: Sequence[str], fields: dict, *, gravity: Sequence[float] = (0.0, 0.0),
                  T_range: Optional[Tuple[float, float]] = None,
                  overrides: Optional[Mapping[str, Sequence[float]]] = None) -> Dict[str, list]:
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
    U = velocity_scale(fields, gravity, T_range)
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


# --------------------------------------------------------------------------- figures
def new_figure(size_in: Tuple[float, float], dpi: float):
    """A matplotlib Figure that needs no GUI (no pyplot state)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=size_in, dpi=dpi)
    FigureCanvasAgg(fig)
    return fig


def title_of(quantity: str, step: Optional[int], time: Optional[float]) -> str:
    words = [quantity]
    if step is not None:
        words.append(f"step {int(step)}")
    if time is not None:
        words.append(f"t = {time:.6g}")
    return ", ".join(words)


def field_figure(quantity: str, fields: dict, *, limits: Optional[Sequence[float]] = None, step: Optional[int] = None,
                 time: Optional[float] = None, cmap: Optional[str] = None, dpi: Optional[float] = None,
                 long_side_px: int = LONG_SIDE_PX):
    """One field as a picture for slides: the lattice's aspect exactly (no empty margins),
    y up, a colour bar with the fixed *limits* (default: this state's range, symmetric for
    diverging fields), a title with the step and the time in model units (t = step / r).

    Size: the long side is *long_side_px* pixels (more for lattices so tall that this would
    be under MIN_DPI), or the figure is drawn at *dpi* (within :func:`dpi_range` of the
    lattice, else ValueError before anything is drawn).
    """
    label, default_cmap, diverging = STYLE[check_quantity(quantity)]
    if limits is None:
        raw = picture_data(quantity, fields)
        finite = raw[np.isfinite(raw)]
        m = float(np.abs(finite).max()) if finite.size else 1.0
        limits = (-m, m) if diverging else _span(float(finite.min()), float(finite.max())) if finite.size else (0, 1)
        limits = limits if limits[1] > limits[0] else (-1.0, 1.0)
    lo, hi = float(limits[0]), float(limits[1])
    data = drawn_data(quantity, fields, (lo, hi))
    lx, ly = data.shape
    left, _right, bottom, _top = MARGINS_IN
    width, height, img_w, img_h = figure_layout((lx, ly))
    if dpi is None:
        dpi = default_dpi((lx, ly), long_side_px)
    else:
        dpi = check_dpi(dpi, (lx, ly))     # before drawing: no MemoryError, no empty image
    fig = new_figure((width, height), float(dpi))
    ax = fig.add_axes((left / width, bottom / height, img_w / width, img_h / height))
    cax = fig.add_axes(((left + img_w + 0.15) / width, bottom / height, 0.2 / width, img_h / height))
    # nearest-neighbour sampling at the picture's resolution: keep every s-th site (s =
    # sites per pixel, rounded down) before matplotlib colour-maps the array, which it
    # otherwise does for every site (0.7 s a picture at 1024 x 4096, 0.1 s this way)
    sx, sy = max(1, int(lx // (img_w * dpi))), max(1, int(ly // (img_h * dpi)))
    im = ax.imshow(data[sx // 2::sx, sy // 2::sy].T, origin="lower", aspect="auto", cmap=cmap or default_cmap,
                   vmin=lo, vmax=hi, extent=(-0.5, lx - 0.5, -0.5, ly - 0.5), interpolation="nearest")
    ax.set_xlabel("x")
    ax.set_ylabel("y")
    ax.set_title(title_of(quantity, step, time), fontsize=11)
    finite = data[np.isfinite(data)]
    extend = ("neither" if not finite.size else
              {(False, False): "neither", (True, False): "min", (False, True): "max", (True, True): "both"}[
                  (bool(finite.min() < lo), bool(finite.max() > hi))])
    cb = fig.colorbar(im, cax=cax, extend=extend)
    cb.set_label(label)
    return fig


def figure_rgb(fig) -> np.ndarray:
    """(H, W, 3) uint8 pixels of a figure."""
    fig.canvas.draw()
    return np.asarray(fig.canvas.buffer_rgba())[..., :3].copy()


def save_png(fig, path: PathLike) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    return atomic_write(path, lambda fh: fig.savefig(fh, format="png"))
