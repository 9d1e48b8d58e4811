"""The four data layouts of the paper, each defined once by its strides, for any dimension.

Coordinates.  A lattice is a shape (LX, LY) or (LX, LY, LZ); a site is (x, y[, z]).  The
last axis is the fastest and the clustered one: clustered layouts cut every line along it
into VL partitions of NR = L/VL sites (L = LY in 2D, LZ in 3D); lane k of cluster row r is
the site r + k*NR (paper Fig. 5), so a hop along that axis moves a whole cluster (r -> r + d,
same lane).  AoS and SoA are the same picture with VL = 1 and NR = L.  Every layout carries a
halo of H = the velocity set's largest hop (``VelocitySet.max_hop``: 3 for D2Q37, 1 for D2Q9
and D3Q19) on every slower axis (x = -H..LX+H-1, ...) and of HY cluster rows on the
clustered one (r = -HY..NR+HY-1): HY = H unless a 2D spec asks for more (``KernelSpec.halo_y``,
`--halo-y`: padding, e.g. the production code's HY = 16 rows); the kernels read only the H
rows next to the interior.

Storage.  The element of population p at (x[, y], r, lane k) is at

    index = p*SP + (x + H)*SX [+ (y + H)*SY] + (r + HY)*SR + k*SK

with the strides of one rule per layout (``stride_formulas``): each stride is the next
faster one's times that axis's extent (NX = LX + 2H, NY = LY + 2H, NRP = NR + 2HY), the
storage order, fastest first, being

    AoS     site[x]..[y].p[i]         p, r, slower axes              (SK = 0)
    SoA     pop[i].s[x]..[y]          r, slower axes, p              (SK = 0)
    CSoA    pop[i].s[x]..[r].c[k]     k, r, slower axes, p
    CAoSoA  site[x]..[r].p[i].c[k]    k, p, r, slower axes

so in 2D SX = Q*NRP, NRP, NRP*VL, NRP*Q*VL and SP = 1, NX*NRP, NX*NRP*VL, VL.  The same
strides give the C index macro, the propagate offsets and the NumPy pack and unpack, so
the three cannot disagree.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import cached_property
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from lbgen.model.catalog import AXES

LAYOUTS = ("aos", "soa", "csoa", "caosoa")
CLUSTERED = ("csoa", "caosoa")
#: the layouts whose slowest index is the population (one array per population)
POPULATION_MAJOR = ("soa", "csoa")
#: the lattice dimensions a layout takes: one axis name each (``catalog.AXES``)
_DIMENSIONS = tuple(range(2, len(AXES) + 1))


class LayoutError(ValueError):
    """An invalid layout/VL/lattice combination (raised before any code is generated)."""


# --- the stride rule -------------------------------------------------------------------------

def _slow_axes(D: int) -> Tuple[str, ...]:
    """The upper-case names of the D - 1 whole (slower) axes, slowest first: ('X',), ('X', 'Y')."""
    return tuple(a.upper() for a in AXES[:D - 1])


#: the storage order of each layout, fastest first: "K" lanes, "P" populations, "R" cluster
#: rows, "slow" the whole axes from the fastest (Y in 3D) to the slowest (X)
_ORDER = {"aos": ("P", "R", "slow"), "soa": ("R", "slow", "P"),
          "csoa": ("K", "R", "slow", "P"), "caosoa": ("K", "P", "R", "slow")}
#: today's 2D spelling where the rule writes the same product in another order: kept so the
#: emitted 2D kernels stay byte-identical (the same factors, so the same value)
_SPELLING = {(2, "caosoa", "SX"): "NRP*Q*VL"}


def stride_formulas(name: str, D: int) -> Dict[str, str]:
    """The strides of layout ``name`` in D dimensions as C expressions of Q, VL, NRP and the
    whole axes' padded extents NX[, NY]: keys SP, SX[, SY], SR, SK.  One rule for every D:
    walking the storage order from the fastest index, a stride is the faster one's times its
    extent, the extent written in front for the population-major layouts (pop[i].s[x][y]: C
    array order) and when stepping over the populations (a CAoSoA cluster-site is Q*VL),
    behind otherwise."""
    if name not in _ORDER:
        raise LayoutError(f"unknown layout {name!r}; choose one of {', '.join(LAYOUTS)}")
    if D not in _DIMENSIONS:
        raise LayoutError(f"a {D}D lattice has no layout; lattices are {' or '.join(map(str, _DIMENSIONS))}D")
    order: List[str] = []
    for part in _ORDER[name]:
        order += [f"S{a}" for a in reversed(_slow_axes(D))] if part == "slow" else [f"S{part}"]
    extent = {"SK": "VL", "SP": "Q", "SR": "NRP", **{f"S{a}": f"N{a}" for a in _slow_axes(D)}}
    out = {} if name in CLUSTERED else {"SK": "0"}
    faster = None
    for key in order:
        if faster is None:
            text = "1"
        elif out[faster] == "1":
            text = extent[faster]
        elif name in POPULATION_MAJOR or faster == "SP":
            text = f"{extent[faster]}*{out[faster]}"
        else:
            text = f"{out[faster]}*{extent[faster]}"
        out[key] = _SPELLING.get((D, name, key), text)
        faster = key
    return {key: out[key] for key in ("SP", "SR", *(f"S{a}" for a in reversed(_slow_axes(D))), "SK")}


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def c_formula(formula: str, names: Mapping[str, object]) -> str:
    """A stride formula (``"NRP*Q*VL"``) as C text: every whole name of ``names`` replaced by
    its value (``{"NRP": "VL_NRP(LY)", "Q": 37, "VL": 8}`` gives ``VL_NRP(LY)*37*8``), the
    other names and numbers kept.  Names are matched as whole C identifiers, never as parts of
    one, so no value (a macro with any prefix) is rewritten by a later name.  The templates
    (filter ``c_formula``) and ``Layout.c_macros`` print strides through it."""
    return _NAME.sub(lambda m: str(names.get(m.group(0), m.group(0))), str(formula))


VL_RULE = "VL must be a power of two (1, 2, 4, 8, ...) dividing the clustered axis (LY in 2D, LZ in 3D)"


def check_vl(vl, allow_auto: bool = False):
    """The one rule of a cluster length: a power of two (an int, or 'auto' where allowed);
    anything else raises LayoutError naming the value and the rule."""
    if allow_auto and isinstance(vl, str) and vl.strip().lower() == "auto":
        return "auto"
    if isinstance(vl, str) and vl.strip().isdigit():
        vl = int(vl.strip())
    if isinstance(vl, bool) or not isinstance(vl, (int, np.integer)):
        raise LayoutError(f"VL={vl!r} is not an integer{' or auto' if allow_auto else ''}; {VL_RULE}")
    if vl < 1 or int(vl) & (int(vl) - 1):
        raise LayoutError(f"VL={vl!r} is not a power of two; {VL_RULE}")
    return int(vl)


_DESCRIPTION = {
    "aos": "site{sites}.p[i]: the {Q} populations of a site adjacent",
    "soa": "pop[i].s{sites}: one array per population",
    "csoa": "pop[i].s{rows}.c[k]: population arrays cut into clusters of VL {strided}",
    "caosoa": "site{rows}.p[i].c[k]: the {Q} clusters of one cluster-site adjacent",
}


def describe(name: str, Q: int, D: int) -> str:
    """One line on how layout ``name`` stores a D-dimensional lattice (the headers print it)."""
    axes = AXES[:D]
    return _DESCRIPTION[name].format(
        Q=Q, sites="".join(f"[{a}]" for a in axes), rows="".join(f"[{a}]" for a in axes[:-1]) + "[r]",
        strided="strided sites" if D == 2 else f"sites strided along {axes[-1].upper()}")


@dataclass(frozen=True)
class Layout:
    """A layout of a lattice of ``shape`` (LX, LY) or (LX, LY, LZ): the last axis clustered
    in VL lanes of NR = L/VL cluster rows with HY halo rows, every slower axis whole with H
    halo sites each side (H = ``halo``, the set's largest hop), periodic on every axis.
    ``make_layout`` builds a checked one."""

    name: str
    Q: int
    shape: Tuple[int, ...]
    VL: int
    halo: int      # halo width H on the slower axes (the velocity set's largest hop)
    halo_y: Optional[int] = None   # 2D: halo rows HY on the clustered axis; None: H

    def __post_init__(self):
        object.__setattr__(self, "shape", tuple(int(n) for n in self.shape))

    # --- sizes ----------------------------------------------------------------------------
    @property
    def D(self) -> int:
        return len(self.shape)

    @property
    def LX(self) -> int:
        return self.shape[0]

    @property
    def LY(self) -> int:
        return self.shape[1]

    @property
    def LZ(self) -> int:
        if self.D < 3:
            raise AttributeError(f"LZ: this layout is {self.D}D (shape {self.shape}); LZ exists in 3D")
        return self.shape[2]

    @property
    def HY(self) -> int:
        """Halo rows of the clustered axis (cluster rows): ``halo_y``, or H when not given."""
        return self.halo if self.halo_y is None else self.halo_y

    @property
    def clustered(self) -> bool:
        return self.name in CLUSTERED

    @property
    def NR(self) -> int:
        """Cluster rows per line of the clustered axis (sites per lane)."""
        return self.shape[-1] // self.VL

    @property
    def NX(self) -> int:
        return self.LX + 2 * self.halo

    @property
    def NY(self) -> int:
        """The padded extent of Y where it is a whole axis (3D); in 2D Y is clustered (NRP)."""
        if self.D < 3:
            raise AttributeError(f"NY: in a {self.D}D layout Y is the clustered axis; its padded extent is "
                                 f"NRP = {self.NRP} cluster rows of VL = {self.VL} lanes")
        return self.LY + 2 * self.halo

    @property
    def NRP(self) -> int:
        return self.NR + 2 * self.HY

    @property
    def padded(self) -> Dict[str, int]:
        """Each storage index's extent, by its stride's name: SX: NX, [SY: NY,] SR: NRP, SP: Q, SK: VL."""
        whole = {f"S{a}": n + 2 * self.halo for a, n in zip(_slow_axes(self.D), self.shape)}
        return {**whole, "SR": self.NRP, "SP": self.Q, "SK": self.VL}

    @property
    def size(self) -> int:
        """Number of elements of the flat buffer (halos included)."""
        return math.prod(self.padded.values())

    @property
    def description(self) -> str:
        return describe(self.name, self.Q, self.D)

    @property
    def tag(self) -> str:
        return tag(self.name, self.VL)

    @cached_property
    def strides(self) -> Dict[str, int]:
        env = {"Q": self.Q, "NRP": self.NRP, "VL": self.VL,
               **{f"N{a}": n + 2 * self.halo for a, n in zip(_slow_axes(self.D), self.shape)}}
        return {k: int(eval(v, {}, env)) for k, v in stride_formulas(self.name, self.D).items()}

    # --- indexing -----------------------------------------------------------------------
    def index(self, p, *coords, k=None):
        """Flat index of population p at (x[, y], cluster row r, lane k); numpy-broadcasting.
        ``coords`` are the D - 1 whole-axis coordinates and r, then k (or k=..., default 0)."""
        if k is None and len(coords) == self.D + 1:
            *coords, k = coords
        if len(coords) != self.D:
            raise TypeError(f"index of a {self.D}D layout takes p, {self.D - 1} whole-axis coordinate(s), r "
                            f"and k; got {len(coords)} coordinates after p")
        s, h = self.strides, self.halo
        *whole, r = coords
        idx = p * s["SP"]
        for a, c in zip(_slow_axes(self.D), whole):
            idx = idx + (np.asarray(c) + h) * s[f"S{a}"]
        return idx + (np.asarray(r) + self.HY) * s["SR"] + np.asarray(0 if k is None else k) * s["SK"]

    def site_index(self, p, *site):
        """Flat index of population p at site (x, y[, z]) of the interior."""
        if len(site) != self.D:
            raise TypeError(f"site_index of a {self.D}D layout takes p and {self.D} coordinates, got {len(site)}")
        *whole, c = site
        c = np.asarray(c)
        return self.index(p, *whole, c % self.NR, c // self.NR)

    def propagate_offsets(self, velocities) -> Tuple[int, ...]:
        """Pull scheme: nxt[i] at idx reads prv[i] at idx + offset_i (offset of site - e_i)."""
        s = self.strides
        keys = [f"S{a}" for a in _slow_axes(self.D)] + ["SR"]
        return tuple(-sum(int(e) * s[key] for e, key in zip(v, keys)) for v in velocities)

    def population_view(self, buf: np.ndarray):
        """(view, axis): the flat buffer as an nd-array with the populations along `axis`.

        The other axes enumerate every stored site (halo copies included), in storage
        order, so per-site sums over populations need no gather (cheap health checks).
        """
        s, dims = self.strides, self.padded
        order = sorted((k for k in dims if s[k] > 0), key=lambda k: -s[k])
        view = np.asarray(buf).reshape([dims[k] for k in order])
        return view, order.index("SP")

    def x_planes(self, buf: np.ndarray, x0: int, x1: int) -> np.ndarray:
        """The stored elements of the interior planes x0 <= x < x1 (every other index whole, halo
        copies included) as a view of the flat buffer, in storage order: two lattices of the same
        layout and the same other sizes hold a plane's elements alike (``population_view``'s axes)."""
        s, dims = self.strides, self.padded
        order = sorted((k for k in dims if s[k] > 0), key=lambda k: -s[k])
        index = [slice(None)] * len(order)
        index[order.index("SX")] = slice(x0 + self.halo, x1 + self.halo)
        return np.asarray(buf).reshape([dims[k] for k in order])[tuple(index)]

    def c_macros(self, prefix: str = "LBGEN") -> str:
        """The C size and index macros of this layout (sizes at run time), from the strides'
        formulas: <P>_IDX(p, x, [y,] r, k, LX, LY[, LZ]) and <P>_SITE(p, x, y[, z], LX, LY[, LZ])."""
        G, H, HY, VL, D = prefix.upper(), self.halo, self.HY, self.VL, self.D
        L = [f"L{a.upper()}" for a in AXES[:D]]          # the macros' size arguments
        whole, last = _slow_axes(D), L[-1]
        names = {**{f"N{a}": f"{G}_N{a}(L{a})" for a in whole}, "NRP": f"{G}_NRP({last})", "Q": self.Q, "VL": VL}
        f, args = stride_formulas(self.name, D), ", ".join(L)
        lines = [f"#define {G}_NR({last}) (({last}) / {VL})"]
        lines += [f"#define {G}_N{a}(L{a}) ((L{a}) + 2*{H})" for a in whole]
        lines += [f"#define {G}_NRP({last}) ({G}_NR({last}) + 2*{HY})",
                  f"#define {G}_BUFFER_SIZE({args}) ((size_t){self.Q}"
                  + "".join(f" * (size_t){G}_N{a}(L{a})" for a in whole) + f" * (size_t){G}_NRP({last}) * {VL})",
                  f"#define {G}_IDX(p, {', '.join(a.lower() for a in whole)}, r, k, {args}) ( \\",
                  f"    (ptrdiff_t)(p) * ({c_formula(f['SP'], names)}) \\"]
        lines += [f"  + ((ptrdiff_t)({a.lower()}) + {H}) * ({c_formula(f['S' + a], names)}) \\" for a in whole]
        c = AXES[D - 1]
        lines += [f"  + ((ptrdiff_t)(r) + {HY}) * ({c_formula(f['SR'], names)}) \\",
                  f"  + (ptrdiff_t)(k) * ({f['SK']}))",
                  f"#define {G}_SITE(p, {', '.join(AXES[:D])}, {args}) {G}_IDX(p, "
                  + "".join(f"{a.lower()}, " for a in whole)
                  + f"({c}) % {G}_NR({last}), ({c}) / {G}_NR({last}), {args})"]
        return "\n".join(lines) + "\n"

    # --- numpy pack / unpack ---------------------------------------------------------------
    def _grid(self, ranges: Sequence[np.ndarray]) -> List[np.ndarray]:
        """The ranges as broadcasting arrays, one axis each, after a leading population axis."""
        n = len(ranges) + 1
        out = [np.arange(self.Q).reshape((-1,) + (1,) * (n - 1))]
        return out + [np.asarray(a).reshape((1,) * (i + 1) + (-1,) + (1,) * (n - i - 2)) for i, a in enumerate(ranges)]

    def _interior_sites(self, x0: int = 0, x1: Optional[int] = None) -> np.ndarray:
        """The flat index of population 0 at every interior site of the slab x0 <= x < x1 (the
        whole lattice by default), (x1 - x0, LY[, LZ]); population p's is this plus p * SP.  Not
        cached: a lattice-sized index array kept for the object's life was 8 B a cell per
        population (152 B a cell for D3Q19, more than the populations of a 16-bit in-place run);
        built per call it is 8 B a cell of the slab for the call's length."""
        x1 = self.LX if x1 is None else x1
        zero = [0] * self.D
        origin = int(self.site_index(0, *zero))
        shape = (x1 - x0, *self.shape[1:])
        sites = np.full(shape, origin, dtype=np.int64)
        for a, n in enumerate(self.shape):          # the index is a sum of one term per axis
            coords = list(zero)
            coords[a] = np.arange(x0, x1) if a == 0 else np.arange(n)
            sites += (self.site_index(0, *coords) - origin).reshape([-1 if i == a else 1 for i in range(self.D)])
        return sites

    def _each_population(self):
        """(p, the flat indices of population p at every interior site), one at a time, in one
        reused index array."""
        base = self._interior_sites()
        index = np.empty_like(base)
        for p in range(self.Q):
            np.add(base, p * self.strides["SP"], out=index)
            yield p, index

    def unpack_slabs(self, buf: np.ndarray, cells: int = 1 << 20):
        """``unpack`` in pieces: (p, x0, x1, the (x1 - x0, LY[, LZ]) values of population p on the
        slab x0 <= x < x1), in the C order of unpack's (Q, LX, LY[, LZ]) array (p, then x), each
        slab of about ``cells`` sites (at least one x plane).  A checkpoint streams them to its file:
        no copy of the lattice's populations, no lattice-sized index (two slabs' worth of memory).
        Each array is a fresh one, the caller's."""
        buf = np.asarray(buf).reshape(-1)
        if buf.size != self.size:
            raise ValueError(f"unpack expects {self.size} elements for {self.tag} "
                             f"{'x'.join(map(str, self.shape))}, got {buf.size}")
        width = max(1, cells // max(math.prod(self.shape[1:]), 1))
        slabs = [(x0, min(x0 + width, self.LX)) for x0 in range(0, self.LX, width)]
        for p in range(self.Q):
            for x0, x1 in slabs:             # a slab's index is rebuilt per population: no lattice-sized one
                index = self._interior_sites(x0, x1)
                index += p * self.strides["SP"]
                values = np.take(buf, index, mode="clip")
                del index                    # not held beside the next slab's
                yield p, x0, x1, values

    def _halo_maps(self):
        """(destination, source) index arrays that refresh the halo periodically (built per call:
        pack is rare, and cached they were 16 B per halo element for the layout's life), one pass per
        axis: first the halo cluster rows of the interior lines (lane-shifted sites: for
        clustered layouts the rows r < 0 of lane k hold sites of lane k - 1), then each whole
        axis from the fastest to the slowest, its halo copying whole padded lines of the
        faster axes (edges and corners included) at interior coordinates of the slower ones."""
        H, HY, NR, D = self.halo, self.HY, self.NR, self.D
        whole = [np.arange(n) for n in self.shape[:-1]]
        lanes = np.arange(self.VL)
        maps = []
        rows = np.r_[-HY:0, NR:NR + HY]
        p, *w, r, k = self._grid([*whole, rows, lanes])
        maps.append((self.index(p, *w, r, k), self.site_index(p, *w, (r + k * NR) % self.shape[-1])))
        padded_rows = np.arange(-HY, NR + HY)
        for a in reversed(range(D - 1)):
            n = self.shape[a]
            ranges = [*whole[:a], np.r_[-H:0, n:n + H], *(np.arange(-H, m + H) for m in self.shape[a + 1:-1]),
                      padded_rows, lanes]
            p, *c, r, k = self._grid(ranges)
            src = list(c)
            src[a] = c[a] % n
            maps.append((self.index(p, *c, r, k), self.index(p, *src, r, k)))
        return [tuple(x.ravel() for x in np.broadcast_arrays(d, s)) for d, s in maps]

    def fill_halo(self, buf: np.ndarray) -> np.ndarray:
        """Refresh the halo of a flat buffer in place (periodic on every axis)."""
        for dst, src in self._halo_maps():
            buf[dst] = buf[src]
        return buf

    def pack(self, f: np.ndarray, dtype=None, out: Optional[np.ndarray] = None) -> np.ndarray:
        """(Q, LX, LY[, LZ]) array -> flat buffer of this layout, halos filled periodically; ``out``:
        a flat buffer of the layout's size to write (zeroed first: the same values as a new one)."""
        f = np.asarray(f)
        if f.shape != (self.Q, *self.shape):
            raise ValueError(f"pack expects shape {(self.Q, *self.shape)}, got {f.shape}")
        if out is not None and (out.ndim != 1 or out.size != self.size):
            raise ValueError(f"pack writes a flat buffer of {self.size} elements, got shape {out.shape}")
        buf = np.zeros(self.size, dtype=dtype or f.dtype) if out is None else out
        buf[...] = 0
        for p, index in self._each_population():
            buf[index] = f[p]
        return self.fill_halo(buf)

    def unpack(self, buf: np.ndarray) -> np.ndarray:
        """Flat buffer -> (Q, LX, LY[, LZ]) array of the interior."""
        buf = np.asarray(buf).reshape(-1)
        if buf.size != self.size:
            raise ValueError(f"unpack expects {self.size} elements for {self.tag} "
                             f"{'x'.join(map(str, self.shape))}, got {buf.size}")
        out = np.empty((self.Q, *self.shape), dtype=buf.dtype)
        for p, index in self._each_population():
            np.take(buf, index, out=out[p], mode="clip")     # ("raise" would buffer a copy)
        return out


def make_layout(name: str, Q: int, shape: Sequence[int], VL: Optional[int] = None, *, halo: int,
                halo_y: Optional[int] = None) -> Layout:
    """Validated layout of a lattice of ``shape`` (LX, LY) or (LX, LY, LZ) with a halo of width
    ``halo`` (and, in 2D, ``halo_y`` rows on Y when given: at least ``halo``).  Raises
    LayoutError naming the bad value and the rule."""
    key = str(name).lower()
    if key not in LAYOUTS:
        raise LayoutError(f"unknown layout {name!r}; choose one of {', '.join(LAYOUTS)}")
    if isinstance(shape, (str, bytes)) or not hasattr(shape, "__len__") or len(shape) not in _DIMENSIONS:
        raise LayoutError(f"shape={shape!r} is not a lattice shape; give (LX, LY) or (LX, LY, LZ)")
    D = len(shape)
    labels = [f"L{a.upper()}" for a in AXES[:D]]
    for label, v in zip(labels, shape):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise LayoutError(f"{label}={v!r} is not a valid lattice size; {label} must be an integer >= 1")
    if D == 2:
        halo_y = check_halo_y(halo_y, halo)
    elif halo_y not in (None, halo):
        raise LayoutError(f"halo_y={halo_y!r} is not allowed on a {D}D lattice: its clustered axis "
                          f"{labels[-1][1:]} keeps the {halo}-row halo of the set's largest hop; "
                          "halo_y (--halo-y) pads Y of 2D lattices only")
    else:
        halo_y = None
    shape = tuple(int(n) for n in shape)
    if key not in CLUSTERED:
        if VL not in (None, 1):
            raise LayoutError(f"layout {key} takes no VL (got VL={VL}); VL applies to csoa and caosoa")
        return Layout(key, Q, shape, 1, int(halo), halo_y)
    A, n = labels[-1], shape[-1]
    if VL is None:
        raise LayoutError(f"layout {key} needs a cluster length VL (a power of two dividing {A}={n})")
    VL = check_vl(VL)
    if n % VL:
        raise LayoutError(f"VL={VL} does not divide {A}={n}; VL must divide {A} (the clustered, fastest axis) "
                          f"and be a power of two")
    if n // VL < halo:
        raise LayoutError(f"{A}/VL = {n}/{VL} = {n // VL} cluster rows is too small for the {halo}-wide halo; "
                          f"need {A}/VL >= {halo}, i.e. a smaller VL or a larger {A}")
    return Layout(key, Q, shape, int(VL), int(halo), halo_y)


HALO_Y_RULE = "the Y halo holds at least the set's largest hop ({hop}) and at most {most} cluster rows"
#: the most Y halo rows a spec may ask for (padding beyond a few cache lines buys nothing)
MAX_HALO_Y = 1024


def check_halo_y(halo_y, hop: int) -> Optional[int]:
    """The one rule of a Y halo (``--halo-y``): None (the hop), or an integer hop..MAX_HALO_Y;
    anything else raises LayoutError naming the value and the rule."""
    if halo_y is None:
        return None
    if isinstance(halo_y, bool) or not isinstance(halo_y, (int, np.integer)) or not hop <= halo_y <= MAX_HALO_Y:
        raise LayoutError(f"halo_y={halo_y!r} is not allowed: " + HALO_Y_RULE.format(hop=hop, most=MAX_HALO_Y))
    return int(halo_y)


#: cluster lengths a clustered name without -vlN stands for in a list of layouts
VL_SWEEP = (4, 8, 16, 32)


@dataclass(frozen=True)
class LayoutChoice:
    """A layout name with its cluster length: the one value, parser and tag format.

    ``tag`` is 'aos', 'soa', 'csoa-vl8', 'caosoa-vl32'; ``parse`` reads the same text (and
    a comma list); the lattice-dependent rules are ``make_layout``'s."""

    name: str
    vl: Optional[int] = None

    @property
    def clustered(self) -> bool:
        return self.name in CLUSTERED

    @property
    def tag(self) -> str:
        return tag(self.name, self.vl)

    @classmethod
    def of(cls, name: Optional[str], vl: Optional[int] = None, need_vl: bool = True) -> "LayoutChoice":
        """Checked: a known name; VL a power of two for clustered layouts (needed unless
        ``need_vl`` is False), none for the others."""
        key = str(name).lower() if name is not None else None
        if key is not None and key not in LAYOUTS:
            raise LayoutError(f"unknown layout {name!r}; choose one of {', '.join(LAYOUTS)} "
                              "(clustered ones as csoa-vl8, caosoa-vl16, ...)")
        if vl is not None:
            vl = check_vl(vl)
            if key is not None and key not in CLUSTERED and vl != 1:
                raise LayoutError(f"layout {key} takes no VL (got VL={vl}); VL applies to {' and '.join(CLUSTERED)}")
        if key in CLUSTERED and vl is None and need_vl:
            raise LayoutError(f"layout {key} needs a VL (cluster length), e.g. {key}-vl8")
        return cls(key, vl if key in CLUSTERED or key is None else None)

    @classmethod
    def parse(cls, text: str, sweep: Optional[Tuple[int, ...]] = None) -> Tuple["LayoutChoice", ...]:
        """'aos,soa,csoa-vl8,caosoa-vl32' -> choices.  A clustered name without -vlN is
        refused, or stands for every VL of ``sweep`` when given; 'all' is every layout
        (with the sweep)."""
        out = []
        for item in [t.strip().lower() for t in str(text).split(",") if t.strip()]:
            if item == "all" and sweep:
                out += [cls(n) for n in LAYOUTS if n not in CLUSTERED]
                out += [cls(n, v) for n in CLUSTERED for v in sweep]
                continue
            name, sep, vl = item.partition("-vl")
            if sep and not vl.isdigit():
                raise LayoutError(f"layout {item!r}: VL {vl!r} is not an integer")
            if name in CLUSTERED and not sep and sweep:
                out += [cls(name, v) for v in sweep]
                continue
            out.append(cls.of(name, int(vl) if sep else None))
        return tuple(dict.fromkeys(out))


def tag(name: str, vl: Optional[int]) -> str:
    """The one tag format: 'soa', 'caosoa-vl8'."""
    return f"{name}-vl{vl}" if name in CLUSTERED else name
