"""Whole padded columns and rows of a 2D lattice buffer in a layout-independent form: the halo
exchange between the regions of a host + device run and between MPI ranks (``lbgen.simulation``,
``lbgen.parallel``).  A mixin of ``Program``: it uses the program's ``layout``, ``lx``, ``dtype``,
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

    # Whole padded rows in the same layout-independent form (the Y halo exchange between MPI
    # ranks split along Y): plain[p, x + H, j] for x = -H .. LX+H-1 (the X halo columns
    # included) and the rows y0 + j, j < n; y counts from -H to LY+H-1 as for columns.
    def _row_maps(self, y0: int, n: int):
        key = ("_row_maps", y0, n)
        cache = self.__dict__.setdefault("_maps", {})
        if key not in cache:
            L, s = self.layout, self.layout.strides
            H = L.halo
            if y0 < -H or n < 0 or y0 + n > L.LY + H:
                raise ValueError(f"rows {y0}..{y0 + n - 1} outside {-H}..{L.LY + H - 1}")
            p = np.arange(L.Q)[:, None, None, None]
            x = np.arange(L.LX + 2 * H)[None, :, None, None]             # x + H
            r = np.arange(-H, L.NR + H)[None, None, :, None]
            k = np.arange(L.VL)[None, None, None, :]
            pos = p * s["SP"] + x * s["SX"] + (r + H) * s["SR"] + k * s["SK"]
            y = r + k * L.NR + 0 * (p + x)
            pos, y = np.broadcast_arrays(pos, y)
            inside = (y >= y0) & (y < y0 + n)
            canonical = ((p * (L.LX + 2 * H) + x) * n + (y - y0)) + 0 * pos
            pos, src = pos[inside], canonical[inside]
            rep = np.empty(L.Q * (L.LX + 2 * H) * n, dtype=np.int64)
            rep[src] = pos                     # one storage cell per (p, x, y): any is exact
            cache[key] = (pos, src, rep)
        return cache[key]

    def read_rows_plain(self, f: Any, y0: int, n: int) -> np.ndarray:
        """Padded rows y0 .. y0+n-1 as plain[p, x + H, j] (every column, X halo included).
        Host buffers are indexed in place; a device buffer is downloaded whole."""
        _, _, rep = self._row_maps(y0, n)
        flat = f if isinstance(f, np.ndarray) else self.download(f)
        return flat[rep].reshape(self.layout.Q, self.layout.LX + 2 * self.layout.halo, n)

    def write_rows_plain(self, f: Any, y0: int, plain: np.ndarray) -> None:
        """Inverse of read_rows_plain (every storage cell of those rows, lane-shifted copies included)."""
        plain = np.asarray(plain, dtype=self.dtype)
        pos, src, _ = self._row_maps(y0, plain.shape[2])
        if isinstance(f, np.ndarray):
            f[pos] = plain.reshape(-1)[src]
            return
        flat = self.download(f)
        flat[pos] = plain.reshape(-1)[src]
        self.upload(flat, f)

    def _read_range(self, f: Any, offset: int, out: np.ndarray) -> None:
        raise NotImplementedError(f"the {self.spec.backend} backend cannot read columns")

    def _write_range(self, f: Any, offset: int, data: np.ndarray) -> None:
        raise NotImplementedError(f"the {self.spec.backend} backend cannot write columns")
