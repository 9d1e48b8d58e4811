"""What a picture draws and its colour limits: the values of a quantity (round-off drawn as 0),
the run's fixed colour limits from the physics (``colour_limits``, recorded in manifest.json)
and ``--clim``."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Dict, Mapping, Optional, Sequence, Tuple

import numpy as np

from lbgen.output.fields import field_array, speed, vorticity
from lbgen.output.look import PICTURE_QUANTITIES, STYLE, VELOCITY_QUANTITIES, check_quantity, drawn_scale


def model_limits(quantity: str, limits: Sequence[float], r: Optional[float] = None) -> Tuple[float, float]:
    """Colour limits given in a picture's units (``--clim``: velocities in sites per step when the
    velocity set's *r* is known) as the fields' model values, which pictures and frames keep."""
    scale = drawn_scale(quantity, r)
    return float(limits[0]) / scale, float(limits[1]) / scale

#: |value| below ROUNDOFF x (colour range) is round-off: drawn as 0 (256 colours cannot show it
#: anyway); values beyond a colour limit by less than that are drawn at the limit
ROUNDOFF = 1e-9
#: the velocity colours of a Rayleigh-Taylor run span this many free-fall speeds U_ff (the
#: README's main job reaches max |u| = 0.73 U_ff at 2.6 t_RT)
FREE_FALL_COLOURS = 2.0
#: a velocity scale for a set-up with no flow and no driving (nothing will move)
REST_VELOCITY = 1e-2

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
@dataclass(frozen=True)
class Extremes:
    """What the colour limits read of a set-up's initial fields: T's and rho's (min, max) (NaN
    left out), the largest speed |u| and LX.  Exact reductions, so the extremes of slabs of X
    planes (``of_slabs``) are the whole fields' (a run that starts by slabs never holds them)."""

    T: Tuple[float, float]
    rho: Tuple[float, float]
    speed: float
    lx: int

    @classmethod
    def of(cls, fields: dict) -> "Extremes":
        ux, uy = field_array(fields, "ux"), field_array(fields, "uy")
        u = speed(ux, uy) if "uz" not in fields else np.sqrt(ux * ux + uy * uy + field_array(fields, "uz") ** 2)
        T, rho = field_array(fields, "T"), field_array(fields, "rho")
        return cls((float(np.nanmin(T)), float(np.nanmax(T))), (float(np.nanmin(rho)), float(np.nanmax(rho))),
                   float(np.nanmax(u)) if ux.size else 0.0, T.shape[0])

    @classmethod
    def of_slabs(cls, slabs, lx: int) -> "Extremes":
        """The extremes of fields given as slabs of X planes (an iterable of fields dicts)."""
        parts = [cls.of(fields) for fields in slabs]

        def pair(name):
            return (float(np.nanmin([getattr(p, name)[0] for p in parts])),
                    float(np.nanmax([getattr(p, name)[1] for p in parts])))
        return cls(pair("T"), pair("rho"), float(np.nanmax([p.speed for p in parts])), int(lx))


def extremes(fields) -> Extremes:
    """``fields`` (a dict of arrays, or their ``Extremes``) as Extremes."""
    return fields if isinstance(fields, Extremes) else Extremes.of(fields)


def velocity_scale(fields, gravity: Sequence[float] = (0.0, 0.0), T_range: Optional[Tuple[float, float]] = None,
                   speeds: Sequence[float] = ()) -> float:
    """A velocity scale of a set-up (model units): the larger of the initial max |u| (3D fields:
    with uz), FREE_FALL_COLOURS times the free-fall speed of a thermal contrast
    (``lbgen.model.physics.free_fall_speed``: sqrt(A |g| L), the run header's U_ff, here in
    model units; Atwood number A = (T_hot − T_cold)/(T_hot + T_cold), densities ∝ 1/T at equal
    pressure; L = LX, the box width) and the ``speeds`` that drive the flow (moving walls).
    REST_VELOCITY when all are 0.  ``fields``: the initial fields or their ``Extremes``."""
    from lbgen.model.physics import atwood, free_fall_speed
    e = extremes(fields)
    lo, hi = e.T
    if T_range is not None:
        lo, hi = min(lo, *T_range), max(hi, *T_range)
    A = atwood(hi, lo) if hi + lo > 0 else 0.0
    u_ff = FREE_FALL_COLOURS * free_fall_speed(A, math.hypot(*gravity), e.lx)
    return max(e.speed, u_ff, *(abs(float(v)) for v in speeds)) or REST_VELOCITY


def _span(lo: float, hi: float) -> Tuple[float, float]:
    """A range of at least 1% of its magnitude (a uniform field still gets a colour bar)."""
    if hi - lo <= 1e-6 * max(abs(lo), abs(hi), 1e-300):
        mid = 0.5 * (lo + hi)
        pad = 0.01 * abs(mid) or 0.01
        return mid - pad, mid + pad
    return lo, hi


def colour_limits(quantities: Sequence[str], fields, *, gravity: Sequence[float] = (0.0, 0.0),
                  T_range: Optional[Tuple[float, float]] = None,
                  overrides: Optional[Mapping[str, Sequence[float]]] = None,
                  speeds: Sequence[float] = (), r: Optional[float] = None) -> Dict[str, list]:
    """{quantity: [lo, hi]} for a whole run, from its initial fields and set-up.

    T: the initial range and the wall temperatures (T_range); rho: the initial range;
    speed [0, U], ux and uy [−U, U], vorticity [−U/ℓ, U/ℓ] with U = :func:`velocity_scale`
    and ℓ = LX/16 (the half-width of the shortest of the 8 modes that perturb a
    Rayleigh–Taylor interface).  *overrides* ``{quantity: (lo, hi)}`` win; they are in the
    pictures' units (velocities in sites per step with the velocity set's *r*:
    :func:`model_limits`), the limits returned in the fields' model units.  ``fields``: the
    initial fields or their ``Extremes``.
    """
    overrides = dict(overrides or {})
    for q in overrides:
        check_quantity(q)
    out = {}
    e = extremes(fields)
    U = velocity_scale(e, gravity, T_range, speeds=speeds)
    ell = max(e.lx / 16.0, 1.0)
    for q in dict.fromkeys(list(quantities) + list(overrides)):
        check_quantity(q)
        if q == "T":
            lo, hi = e.T
            if T_range is not None:
                lo, hi = min(lo, *T_range), max(hi, *T_range)
            lim = _span(lo, hi)
        elif q == "rho":
            lim = _span(*e.rho)
        elif q == "speed":
            lim = (0.0, U)
        elif q == "vorticity":
            lim = (-U / ell, U / ell)
        else:
            lim = (-U, U)
        if q in overrides:
            lim = model_limits(q, overrides[q], r)
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

