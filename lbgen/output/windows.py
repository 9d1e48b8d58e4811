"""Picture windows: the part of the lattice a picture shows (``--window``), and the 'auto'
window of the rows where the flow differs visibly from the uniform layers at the walls."""
from __future__ import annotations

import math
from typing import Optional, Sequence, Tuple, Union

import numpy as np

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

