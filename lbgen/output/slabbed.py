"""Fields made one slab of X planes at a time, never held whole (issue 38 item 4).

A 3D run's event held its five fields at once (20 B a cell in single beside an in-place 16-bit
run's 44 B of populations).  ``SlabbedFields`` is a fields mapping whose arrays are computed
from the populations when a writer reads them, one slab of X planes at a time (``compute(x0,
x1)``: every field of those planes, the bits of the whole lattice's fields kernel): the HDF5
and npz writers stream each field slab by slab, the .vti takes one field (or a third of the
velocity vector's planes) at a time, and ``fields[name]`` is one whole field.  The files, bit
for bit, are those of the fields held whole (tests/simulation/test_memory.py)."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Callable, Dict, Iterator, List, Sequence, Tuple

import numpy as np


class SlabbedFields(Mapping):
    """``names``: the fields (rho, ux, uy[, uz], T); ``shape``: the lattice's; ``bounds``: the
    slabs (x0, x1) covering 0..LX; ``compute(x0, x1)``: {name: array of shape (x1 - x0, ...)} of
    every name, in the arithmetic's dtype ``dtype``.  Nothing is cached: each read computes."""

    def __init__(self, names: Sequence[str], shape: Sequence[int], dtype, bounds: List[Tuple[int, int]],
                 compute: Callable[[int, int], Dict[str, np.ndarray]]):
        self.names, self.shape, self.dtype = tuple(names), tuple(int(n) for n in shape), np.dtype(dtype)
        self.ndim, self.bounds, self._compute = len(self.shape), list(bounds), compute

    def __getitem__(self, name: str) -> np.ndarray:
        if name not in self.names:
            raise KeyError(name)
        return self.part((name,))[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.names)

    def __len__(self) -> int:
        return len(self.names)

    def slabs(self, x0: int = 0, x1=None) -> Iterator[Tuple[int, int, Dict[str, np.ndarray]]]:
        """(b0, b1, every field of the planes b0 <= x < b1) of the slabs that meet [x0, x1)."""
        x1 = self.shape[0] if x1 is None else x1
        for b0, b1 in self.bounds:
            if b0 < x1 and b1 > x0:
                yield b0, b1, self._compute(b0, b1)

    def part(self, names: Sequence[str], index: tuple = ()) -> Dict[str, np.ndarray]:
        """{name: the field's values at ``index``} (one index per axis from the first, an int or a
        slice of step 1 each; the axes left out whole), made slab by slab: only that part is held."""
        index = tuple(index) + (slice(None),) * (self.ndim - len(index))
        first, rest = index[0], index[1:]
        if isinstance(first, (int, np.integer)):
            x0 = int(first) % self.shape[0]
            x1 = x0 + 1
        else:
            xs = range(self.shape[0])[first]
            if xs.step != 1:
                raise ValueError(f"part: index {first!r} along x must have step 1")
            x0, x1 = xs.start, xs.stop
        out: Dict[str, np.ndarray] = {}
        for b0, b1, values in self.slabs(x0, x1):
            lo, hi = max(b0, x0), min(b1, x1)
            for name in names:
                piece = values[name][lo - b0:hi - b0][(slice(None), *rest)]
                if name not in out:
                    out[name] = np.empty((x1 - x0, *piece.shape[1:]), dtype=piece.dtype)
                out[name][lo - x0:hi - x0] = piece
            del values
        if isinstance(first, (int, np.integer)):
            out = {name: a[0] for name, a in out.items()}
        return out


    def flat_reader(self, name: str) -> Callable[[int, int], np.ndarray]:
        """``read(lo, n)``: the values lo <= i < lo + n of field ``name`` flattened (C order) as
        float64, made by slabs and the last slab kept (sequential reads make each slab once)."""
        plane = int(np.prod(self.shape[1:]))
        kept: dict = {}

        def read(lo: int, n: int) -> np.ndarray:
            out = np.empty(n, dtype=np.float64)
            at = lo
            while at < lo + n:
                x = at // plane
                b0, b1 = next(b for b in self.bounds if b[0] <= x < b[1])
                if kept.get("bounds") != (b0, b1):
                    kept.clear()
                    kept["values"] = self._compute(b0, b1)[name].reshape(-1)
                    kept["bounds"] = (b0, b1)
                stop = min(lo + n, b1 * plane)
                out[at - lo:stop - lo] = kept["values"][at - b0 * plane:stop - b0 * plane]
                at = stop
            return out
        return read


def is_slabbed(fields) -> bool:
    """Whether ``fields`` is a ``SlabbedFields`` (or a widened view of one)."""
    return isinstance(getattr(fields, "fields", fields), SlabbedFields)


def write_npy_member(fh, source, name: str) -> None:
    """The .npy bytes ``np.save`` writes of ``np.asarray(source[name], np.float64)``, streamed
    slab by slab from a ``SlabbedFields`` (each slab widened to float64 as it is written)."""
    from numpy.lib import format as npy
    npy.write_array_header_1_0(fh, {"descr": npy.dtype_to_descr(np.dtype("<f8")), "fortran_order": False,
                                    "shape": source.shape})
    for b0, b1, values in source.slabs():
        fh.write(np.ascontiguousarray(values[name], dtype="<f8").tobytes())
        del values


def savez(fh, members: dict) -> None:
    """``np.savez(fh, **members)`` (stored, uncompressed; the same member bytes), where a member
    may be a ``(SlabbedFields, name)`` pair: its .npy is streamed slab by slab (float64)."""
    import zipfile

    from numpy.lib import format as npy
    with zipfile.ZipFile(fh, mode="w", compression=zipfile.ZIP_STORED, allowZip64=True) as zipf:
        for key, value in members.items():
            with zipf.open(key + ".npy", "w", force_zip64=True) as member:
                if isinstance(value, tuple):
                    write_npy_member(member, *value)
                else:
                    npy.write_array(member, np.asanyarray(value), allow_pickle=True)
