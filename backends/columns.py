"""Whole padded columns of a 2D lattice buffer, raw or in a layout-independent form: the halo
exchange between the regions of a 2D host + device run (``lbgen.simulation.programs``; the
ranks of ``lbgen.parallel`` trade slabs through the layout's site indices for any D).  A mixin of ``Program``: it uses the program's ``layout``, ``lx``, ``dtype``,
``download``/``upload`` and the runtime's ``_read_range``/``_write_range``."""
from __future__ import annotations

from typing import Any

import numpy as np


class ColumnExchange:
    """Padded columns x0 .. x0+n-1 (x from -H) and rows of a lattice buffer (2D)."""

    def column_ranges(self, x0: int, n: int):
        """Contiguous (offset, length) element ranges holding padded columns x0 .. x0+n-1.

        x counts from -H (the left halo, H = layout.halo) to LX+H-1; a padded column includes
        its Y halo rows.
        Layouts whose X stride is the outermost one (AoS, CAoSoA) hold them in one range,
        the others (SoA, CSoA) in one range per population.
        """
        H = self.layout.halo
        if x0 < -H or n < 0 or x0 + n > self.lx + H:
            raise ValueError(f"columns {x0}..{x0 + n - 1} outside {-H}..{self.lx + H - 1}")
        s = self.layout.strides
        start = (x0 + H) * s["SX"]
        if s["SP"] > s["SX"]:
            return [(p * s["SP"] + start, n * s["SX"]) for p in range(self.layout.Q)]
        return [(start, n * s["SX"])]

    def read_columns(self, f: Any, x0: int, n: int) -> np.ndarray:
        """Flat copy of padded columns x0 .. x0+n-1 (all populations, Y halo rows included)."""
        ranges = self.column_ranges(x0, n)
        out = np.empty(sum(length for _, length in ranges), dtype=self.dtype)
        pos = 0
        for offset, length in ranges:
            self._read_range(f, offset, out[pos:pos + length])
            pos += length
        return out

    def write_columns(self, f: Any, x0: int, data: np.ndarray) -> None:
        """Inverse of read_columns: data from read_columns(..., n) of a program of the same layout."""
        data = np.ascontiguousarray(data, dtype=self.dtype)
        n = data.size // (self.layout.Q * self.layout.NRP * self.layout.VL)
        pos = 0
        for offset, length in self.column_ranges(x0, n):
            self._write_range(f, offset, data[pos:pos + length])
            pos += length
        if pos != data.size:
            raise ValueError(f"column data of {data.size} elements does not fit {n} columns of this layout")

    # Columns in a layout-independent form, so regions with different layouts or VLs can
    # trade halos: plain[p, i, y + H] for y = -H .. LY+H-1 (the Y halo rows included).
    def _block_maps(self, n: int):
        key = ("_block_maps", n)
        cache = self.__dict__.setdefault("_maps", {})
        if key not in cache:
            L, s = self.layout, self.layout.strides
            H = L.halo
            per_population = s["SP"] > s["SX"]
            p = np.arange(L.Q)[:, None, None, None]
            i = np.arange(n)[None, :, None, None]
            r = np.arange(-H, L.NR + H)[None, None, :, None]
            k = np.arange(L.VL)[None, None, None, :]
            within = i * s["SX"] + (r + H) * s["SR"] + k * s["SK"]
            pos = p * (n * s["SX"]) + within if per_population else p * s["SP"] + within
            y = r + k * L.NR                                     # the site each storage cell holds
            canonical = (p * n + i) * (L.LY + 2 * H) + (y + H)
            scatter_pos, scatter_src = np.broadcast_arrays(pos, canonical)
            # one representative storage cell per (p, i, y): the last writer wins, any is exact
            rep = np.empty(L.Q * n * (L.LY + 2 * H), dtype=np.int64)
            rep[scatter_src.ravel()] = scatter_pos.ravel()
            cache[key] = (scatter_pos.ravel(), scatter_src.ravel(), rep)
        return cache[key]

    def read_columns_plain(self, f: Any, x0: int, n: int) -> np.ndarray:
        """Padded columns x0 .. x0+n-1 as plain[p, i, y + H], y = -H .. LY+H-1."""
        raw = self.read_columns(f, x0, n)
        _, _, rep = self._block_maps(n)
        return raw[rep].reshape(self.layout.Q, n, self.layout.LY + 2 * self.layout.halo)

    def write_columns_plain(self, f: Any, x0: int, plain: np.ndarray) -> None:
        """Inverse of read_columns_plain (every storage cell, lane-shifted halo copies included)."""
        plain = np.asarray(plain)
        n = plain.shape[1]
        pos, src, _ = self._block_maps(n)
        raw = np.empty(pos.size, dtype=self.dtype)
        raw[pos] = plain.reshape(-1)[src]
        self.write_columns(f, x0, raw)

    def _read_range(self, f: Any, offset: int, out: np.ndarray) -> None:
        raise NotImplementedError(f"the {self.spec.backend} backend cannot read columns")

    def _write_range(self, f: Any, offset: int, data: np.ndarray) -> None:
        raise NotImplementedError(f"the {self.spec.backend} backend cannot write columns")
