"""The run description's value converters (one home, used by ``lbgen.run.options`` and
``lbgen.run.boundary_options``): a value from the command line, a TOML file or Python to the
type its option holds, or ValueError saying what is allowed."""
from __future__ import annotations

import math
from typing import Tuple

from lbgen.output import PICTURE_QUANTITIES

_TRUE = {"true", "yes", "on", "1"}
_FALSE = {"false", "no", "off", "0"}


def as_float(value) -> float:
    if isinstance(value, bool):
        raise ValueError("must be a number, not a boolean")
    try:
        v = float(value.strip() if isinstance(value, str) else value)
    except (TypeError, ValueError):
        raise ValueError("must be a number") from None
    if not math.isfinite(v):
        raise ValueError("must be a finite number")
    return v


def as_int(value) -> int:
    if isinstance(value, bool):
        raise ValueError("must be an integer, not a boolean")
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        if value.is_integer():
            return int(value)
        raise ValueError("must be an integer")
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            raise ValueError("must be an integer") from None
    if hasattr(value, "__index__"):
        return int(value.__index__())
    raise ValueError("must be an integer")


def as_bool(value) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
        return value.strip().lower() in _TRUE
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    raise ValueError("must be true or false")


def as_gravity(value) -> Tuple[float, ...]:
    parts = list(value) if isinstance(value, (list, tuple)) else \
        [p for p in str(value).replace(" ", "").split(",") if p != ""]
    try:
        g = tuple(as_float(p) for p in parts)
    except ValueError:
        g = ()
    if len(g) not in (2, 3):
        raise ValueError("expected two numbers 'GX,GY' (e.g. 0,-2.6e-6), or three 'GX,GY,GZ' in 3D")
    return g


def as_pictures(value) -> Tuple[str, ...]:
    items = [str(v) for v in value] if isinstance(value, (list, tuple)) else \
        [v for v in str(value).replace(" ", "").split(",") if v]
    items = [v for v in items if v != "none"]
    bad = [v for v in items if v not in PICTURE_QUANTITIES]
    if bad:
        raise ValueError(f"has unknown quantities {bad}; choose from {', '.join(PICTURE_QUANTITIES)} or none")
    return tuple(dict.fromkeys(items))
