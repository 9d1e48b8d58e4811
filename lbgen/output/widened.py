"""Fields held in the arithmetic precision, read as float64 one array at a time (issue 38
item 4).  A single-precision run's fields kernel computes in float, so its float32 arrays hold
the values the float64 API widens, bit for bit: ``lbgen run`` keeps those (20 B a cell in 3D,
not 40) and every output reads them through these, so each file, picture and number is the
one float64 fields give, while at most one field's float64 copy exists at a time."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Dict, Iterator

import numpy as np


class Widened:
    """An array that NumPy reads as float64 (``np.asarray`` / ``np.savez`` call ``__array__``):
    the copy is made when a writer reads it, and dropped after."""

    def __init__(self, array: np.ndarray):
        self.array = array
        self.shape, self.ndim = array.shape, array.ndim

    def __array__(self, dtype=None, copy=None):
        return np.asarray(self.array, dtype=np.float64 if dtype is None else dtype)


def float64_members(arrays: Dict[str, np.ndarray]) -> Dict[str, object]:
    """{name: the array, or a ``Widened`` one where it is not float64}: what ``np.savez`` writes
    as the float64 arrays, one member's copy at a time."""
    return {k: v if np.asarray(v).dtype == np.float64 else Widened(np.asarray(v)) for k, v in arrays.items()}


class WidenedFields(Mapping):
    """A fields dict whose arrays read as float64: ``fields[name]`` is a fresh float64 array of
    the stored one (the same object when it is float64 already)."""

    def __init__(self, fields: Dict[str, np.ndarray]):
        self.fields = fields

    def __getitem__(self, name: str) -> np.ndarray:
        return np.asarray(self.fields[name], dtype=np.float64)

    def __iter__(self) -> Iterator[str]:
        return iter(self.fields)

    def __len__(self) -> int:
        return len(self.fields)


def widened(fields):
    """``fields`` (a dict of arrays, or None) read as float64 (``WidenedFields``)."""
    return None if fields is None else WidenedFields(fields)


#: the most values widened at once by ``widened_sum`` (256 KiB of float64)
SUM_PIECE = 1 << 15


def widened_sum(array) -> float:
    """``float(np.asarray(array, np.float64).sum())``, bit for bit, widening at most SUM_PIECE
    values at a time: NumPy sums a contiguous float64 array pairwise (halves cut at multiples of
    8 down to blocks of 128), so summing the pieces of that same tree gives its sum (the report's
    total mass of a single-precision run: no float64 copy of rho, 8 B a cell; checked against
    NumPy's own in tests/simulation/test_memory.py)."""
    flat = np.ascontiguousarray(array).reshape(-1)
    if flat.dtype == np.float64:
        return float(flat.sum())
    return pairwise_sum(lambda lo, n: flat[lo:lo + n].astype(np.float64), flat.size)


def pairwise_sum(read, size: int) -> float:
    """NumPy's pairwise sum of ``size`` float64 values read ``read(lo, n)`` at most SUM_PIECE at a
    time (``widened_sum``'s tree)."""
    def pairwise(lo: int, n: int):
        if n <= SUM_PIECE:
            return np.add.reduce(read(lo, n))
        half = n // 2 - (n // 2) % 8
        return pairwise(lo, half) + pairwise(lo + half, n - half)
    return float(np.float64(0.0) + pairwise(0, size))


def field_total(fields, name: str) -> float:
    """The float64 sum of field ``name`` of a fields dict or ``WidenedFields`` (``widened_sum``); of
    fields made by slabs (``lbgen.output.slabbed``), read slab by slab: no whole field held."""
    source = fields.fields if isinstance(fields, WidenedFields) else fields
    from lbgen.output.slabbed import is_slabbed
    if is_slabbed(source):
        return pairwise_sum(source.flat_reader(name), int(np.prod(source.shape)))
    return widened_sum(source[name])
