"""Movie frames (``frames/step-*.npz``): the drawn values of the picture quantities, quantized
to 16 bits over three times the colour range (a step of 1/20000 of the range, 85 times finer
than the colour map), so a run can record 100 frames for a movie at a few per cent of the
cost of its field files."""
from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Dict, Iterable, Mapping, NamedTuple, Optional, Sequence, Tuple, Union

import numpy as np

from lbgen.system.cache import atomic_write
from lbgen.output.fields import OutputFileError, stem
from lbgen.output.look import STYLE, check_quantity
from lbgen.output.windows import active_rows

PathLike = Union[str, os.PathLike]

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

