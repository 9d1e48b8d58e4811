"""The four data layouts of the paper, each defined once by its strides.

Coordinates.  A site is (x, y), 0 <= x < LX, 0 <= y < LY.  Clustered layouts cut every
column into VL partitions of NR = LY/VL sites; lane k of cluster row r is site
y = r + k*NR (paper Fig. 5), so a hop along Y moves a whole cluster (r -> r + dy, same
lane).  AoS and SoA are the same picture with VL = 1 and NR = LY.  Every layout carries
a halo of H = the velocity set's largest hop (``VelocitySet.max_hop``: 3 for D2Q37, 1 for
D2Q9) in X (x = -H..LX+H-1) and of HY cluster rows in Y (r = -HY..NR+HY-1): HY = H unless
the spec asks for more (``KernelSpec.halo_y``, `--halo-y`: padding, e.g. the production
code's HY = 16 rows); the kernels read only the H rows next to the interior.

Storage.  The element of population p at (x, r, lane k) is at

    index = p*SP + (x + H)*SX + (r + HY)*SR + k*SK

with strides per layout (NX = LX + 2H, NRP = NR + 2HY):

    AoS     site[x][y].p[i]         SP = 1,           SR = Q,        SX = Q*NRP,     SK = 0
    SoA     pop[i].s[x][y]          SP = NX*NRP,      SR = 1,        SX = NRP,       SK = 0
    CSoA    pop[i].s[x][r].c[k]     SP = NX*NRP*VL,   SR = VL,       SX = NRP*VL,    SK = 1
    CAoSoA  site[x][r].p[i].c[k]    SP = VL,          SR = Q*VL,     SX = NRP*Q*VL,  SK = 1

The same strides give the C index macro, the propagate offsets and the numpy pack and
unpack, so the three cannot disagree.  ``Layout3D`` is the same in three dimensions, with
the clusters along the fastest axis Z (not yet used by templates or backends).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property
from typing import Dict, Mapping, Optional, Tuple

import numpy as np

LAYOUTS = ("aos", "soa", "csoa", "caosoa")
CLUSTERED = ("csoa", "caosoa")


class LayoutError(ValueError):
    """An invalid layout/VL/lattice combination (raised before any code is generated)."""


# stride formulas in terms of (Q, NX, NRP, VL); written once, used for C text and numpy
_STRIDES: Dict[str, Dict[str, str]] = {
    "aos": {"SP": "1", "SR": "Q", "SX": "Q*NRP", "SK": "0"},
    "soa": {"SP": "NX*NRP", "SR": "1", "SX": "NRP", "SK": "0"},
    "csoa": {"SP": "NX*NRP*VL", "SR": "VL", "SX": "NRP*VL", "SK": "1"},
    "caosoa": {"SP": "VL", "SR": "Q*VL", "SX": "NRP*Q*VL", "SK": "1"},
}

_DESCRIPTION = {
    "aos": "site[x][y].p[i]: the {Q} populations of a site adjacent",
    "soa": "pop[i].s[x][y]: one array per population",
    "csoa": "pop[i].s[x][r].c[k]: population arrays cut into clusters of VL strided sites",
    "caosoa": "site[x][r].p[i].c[k]: the {Q} clusters of one cluster-site adjacent",
}


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def c_formula(formula: str, names: Mapping[str, object]) -> str:
    """A stride formula (``"NRP*Q*VL"``) as C text: every whole name of ``names`` replaced by
    its value (``{"NRP": "VL_NRP(LY)", "Q": 37, "VL": 8}`` gives ``VL_NRP(LY)*37*8``), the
    other names and numbers kept.  Names are matched as whole C identifiers, never as parts of
    one, so no value (a macro with any prefix) is rewritten by a later name.  The templates
    (filter ``c_formula``) and ``Layout3D.c_macros`` print strides through it."""
    return _NAME.sub(lambda m: str(names.get(m.group(0), m.group(0))), str(formula))


VL_RULE = "VL must be a power of two (1, 2, 4, 8, ...) dividing LY"


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


@dataclass(frozen=True)
class Layout:
    name: str
    Q: int
    LX: int
    LY: int
    VL: int
    halo: int      # halo width H in columns (the velocity set's largest hop)
    halo_y: Optional[int] = None   # halo rows HY in Y (cluster rows); None: H

    @property
    def HY(self) -> int:
        """Halo rows in Y (cluster rows): ``halo_y``, or the halo width H when not given."""
        return self.halo if self.halo_y is None else self.halo_y

    # --- derived sizes ------------------------------------------------------------------
    @property
    def clustered(self) -> bool:
        return self.name in CLUSTERED

    @property
    def NR(self) -> int:
        """Cluster rows per column (sites per lane)."""
        return self.LY // self.VL

    @property
    def NX(self) -> int:
        return self.LX + 2 * self.halo

    @property
    def NRP(self) -> int:
        return self.NR + 2 * self.HY

    @property
    def size(self) -> int:
        """Number of elements of the flat buffer (halos included)."""
        return self.Q * self.NX * self.NRP * self.VL

    @property
    def description(self) -> str:
        return _DESCRIPTION[self.name].format(Q=self.Q)

    @property
    def tag(self) -> str:
        return tag(self.name, self.VL)

    @cached_property
    def strides(self) -> Dict[str, int]:
        env = {"Q": self.Q, "NX": self.NX, "NRP": self.NRP, "VL": self.VL}
        return {k: int(eval(v, {}, env)) for k, v in _STRIDES[self.name].items()}

    @staticmethod
    def stride_formulas(name: str) -> Dict[str, str]:
        """Strides as C expressions of Q, NX, NRP, VL (for the templates)."""
        return dict(_STRIDES[name])

    # --- indexing -----------------------------------------------------------------------
    def index(self, p, x, r, k=0):
        """Flat index of population p at (x, cluster row r, lane k); numpy-broadcasting."""
        s, h = self.strides, self.halo
        return p * s["SP"] + (np.asarray(x) + h) * s["SX"] + (np.asarray(r) + self.HY) * s["SR"] + np.asarray(k) * s["SK"]

    def site_index(self, p, x, y):
        """Flat index of population p at site (x, y) of the interior."""
        y = np.asarray(y)
        return self.index(p, x, y % self.NR, y // self.NR)

    def propagate_offsets(self, velocities) -> Tuple[int, ...]:
        """Pull scheme: nxt[i] at idx reads prv[i] at idx + offset_i (offset of site - e_i)."""
        s = self.strides
        return tuple(-(ex * s["SX"] + ey * s["SR"]) for ex, ey in velocities)

    def population_view(self, buf: np.ndarray):
        """(view, axis): the flat buffer as an nd-array with the populations along `axis`.

        The other axes enumerate every stored site (halo copies included), in storage
        order, so per-site sums over populations need no gather (cheap health checks).
        """
        s = self.strides
        dims = {"SX": self.NX, "SR": self.NRP, "SP": self.Q, "SK": self.VL}
        order = sorted((k for k in dims if s[k] > 0 or k == "SK"), key=lambda k: -s[k] if s[k] else 0)
        if s["SK"] == 0:
            order = [k for k in order if k != "SK"]
        view = np.asarray(buf).reshape([dims[k] for k in order])
        return view, order.index("SP")

    # --- numpy pack / unpack ---------------------------------------------------------------
    @cached_property
    def _interior_index(self) -> np.ndarray:
        p = np.arange(self.Q)[:, None, None]
        x = np.arange(self.LX)[None, :, None]
        y = np.arange(self.LY)[None, None, :]
        return self.site_index(p, x, y)

    @cached_property
    def _halo_maps(self):
        """(destination, source) index arrays that refresh the halo periodically.

        Halo cluster rows take the lane-shifted neighbour sites (for clustered layouts the
        rows r < 0 of lane k hold sites of lane k - 1), then halo columns copy whole
        padded columns, corners included.
        """
        dst, src = [], []
        H, HY = self.halo, self.HY
        p = np.arange(self.Q)[:, None, None]
        rows = np.r_[-HY:0, self.NR:self.NR + HY]
        x = np.arange(self.LX)[None, :, None]
        for k in range(self.VL):
            y = (rows + k * self.NR) % self.LY
            dst.append(np.broadcast_to(self.index(p, x, rows[None, None, :], k), (self.Q, self.LX, rows.size)).ravel())
            src.append(np.broadcast_to(self.site_index(p, x, y[None, None, :]), (self.Q, self.LX, rows.size)).ravel())
        xs = np.r_[-H:0, self.LX:self.LX + H]
        r = np.arange(-HY, self.NR + HY)[None, None, :, None]
        kk = np.arange(self.VL)[None, None, None, :]
        pp = p[..., None]
        d2 = self.index(pp, xs[None, :, None, None], r, kk)
        s2 = self.index(pp, (xs % self.LX)[None, :, None, None], r, kk)
        return (np.concatenate(dst), np.concatenate(src)), (d2.ravel(), s2.ravel())

    def fill_halo(self, buf: np.ndarray) -> np.ndarray:
        """Refresh the halo of a flat buffer in place (periodic in X and Y)."""
        (d1, s1), (d2, s2) = self._halo_maps
        buf[d1] = buf[s1]
        buf[d2] = buf[s2]
        return buf

    def pack(self, f: np.ndarray, dtype=None) -> np.ndarray:
        """(Q, LX, LY) array -> flat buffer of this layout, halos filled periodically."""
        f = np.asarray(f)
        if f.shape != (self.Q, self.LX, self.LY):
            raise ValueError(f"pack expects shape {(self.Q, self.LX, self.LY)}, got {f.shape}")
        buf = np.zeros(self.size, dtype=dtype or f.dtype)
        buf[self._interior_index] = f
        return self.fill_halo(buf)

    def unpack(self, buf: np.ndarray) -> np.ndarray:
        """Flat buffer -> (Q, LX, LY) array of the interior."""
        buf = np.asarray(buf).reshape(-1)
        if buf.size != self.size:
            raise ValueError(f"unpack expects {self.size} elements for {self.tag} {self.LX}x{self.LY}, got {buf.size}")
        return buf[self._interior_index]


def make_layout(name: str, Q: int, LX: int, LY: int, VL: Optional[int] = None, *, halo: int,
                halo_y: Optional[int] = None) -> Layout:
    """Validated layout with a halo of width ``halo`` (and ``halo_y`` rows in Y when given: at
    least ``halo``).  Raises LayoutError naming the bad value and the rule."""
    key = str(name).lower()
    if key not in LAYOUTS:
        raise LayoutError(f"unknown layout {name!r}; choose one of {', '.join(LAYOUTS)}")
    for label, v in (("LX", LX), ("LY", LY)):
        if not isinstance(v, (int, np.integer)) or v < 1:
            raise LayoutError(f"{label}={v!r} is not a valid lattice size; {label} must be an integer >= 1")
    if key not in CLUSTERED:
        if VL not in (None, 1):
            raise LayoutError(f"layout {key} takes no VL (got VL={VL}); VL applies to csoa and caosoa")
        return Layout(key, Q, int(LX), int(LY), 1, int(halo), check_halo_y(halo_y, halo))
    if VL is None:
        raise LayoutError(f"layout {key} needs a cluster length VL (a power of two dividing LY={LY})")
    VL = check_vl(VL)
    if LY % VL:
        raise LayoutError(f"VL={VL} does not divide LY={LY}; VL must divide LY and be a power of two")
    if LY // VL < halo:
        raise LayoutError(
            f"LY/VL = {LY}/{VL} = {LY // VL} cluster rows is too small for the {halo}-wide halo; "
            f"need LY/VL >= {halo}, i.e. a smaller VL or a larger LY")
    return Layout(key, Q, int(LX), int(LY), int(VL), int(halo), check_halo_y(halo_y, halo))


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


# --- three dimensions ----------------------------------------------------------------------

#: 3D strides in terms of (Q, NX, NY, NRP, VL): the clusters cut the fastest axis Z as they
#: cut Y in 2D (lane k of cluster row r is z = r + k*NR, NR = LZ/VL); X and Y are whole,
#: X the slowest.  The same formulas give the C index macro (``Layout3D.c_macros``), the
#: propagate offsets and NumPy pack/unpack.
_STRIDES_3D: Dict[str, Dict[str, str]] = {
    "aos": {"SP": "1", "SR": "Q", "SY": "Q*NRP", "SX": "Q*NRP*NY", "SK": "0"},
    "soa": {"SP": "NX*NY*NRP", "SR": "1", "SY": "NRP", "SX": "NY*NRP", "SK": "0"},
    "csoa": {"SP": "NX*NY*NRP*VL", "SR": "VL", "SY": "NRP*VL", "SX": "NY*NRP*VL", "SK": "1"},
    "caosoa": {"SP": "VL", "SR": "Q*VL", "SY": "Q*VL*NRP", "SX": "Q*VL*NRP*NY", "SK": "1"},
}

_DESCRIPTION_3D = {
    "aos": "site[x][y][z].p[i]: the {Q} populations of a site adjacent",
    "soa": "pop[i].s[x][y][z]: one array per population",
    "csoa": "pop[i].s[x][y][r].c[k]: population arrays cut into clusters of VL sites strided along Z",
    "caosoa": "site[x][y][r].p[i].c[k]: the {Q} clusters of one cluster-site adjacent",
}


@dataclass(frozen=True)
class Layout3D:
    """A layout of an LX x LY x LZ lattice with a halo of H sites in X and Y and H cluster
    rows in Z (H: the velocity set's largest hop), periodic in all three.  The element of
    population p at (x, y, cluster row r, lane k) is at

        index = p*SP + (x + H)*SX + (y + H)*SY + (r + H)*SR + k*SK

    with NX = LX + 2H, NY = LY + 2H, NRP = LZ/VL + 2H and the strides of ``_STRIDES_3D``.
    """

    name: str
    Q: int
    LX: int
    LY: int
    LZ: int
    VL: int
    halo: int

    @property
    def clustered(self) -> bool:
        return self.name in CLUSTERED

    @property
    def NR(self) -> int:
        """Cluster rows per Z line (sites per lane)."""
        return self.LZ // self.VL

    @property
    def NX(self) -> int:
        return self.LX + 2 * self.halo

    @property
    def NY(self) -> int:
        return self.LY + 2 * self.halo

    @property
    def NRP(self) -> int:
        return self.NR + 2 * self.halo

    @property
    def size(self) -> int:
        return self.Q * self.NX * self.NY * self.NRP * self.VL

    @property
    def description(self) -> str:
        return _DESCRIPTION_3D[self.name].format(Q=self.Q)

    @property
    def tag(self) -> str:
        return tag(self.name, self.VL)

    @cached_property
    def strides(self) -> Dict[str, int]:
        env = {"Q": self.Q, "NX": self.NX, "NY": self.NY, "NRP": self.NRP, "VL": self.VL}
        return {k: int(eval(v, {}, env)) for k, v in _STRIDES_3D[self.name].items()}

    @staticmethod
    def stride_formulas(name: str) -> Dict[str, str]:
        """Strides as C expressions of Q, NX, NY, NRP, VL."""
        return dict(_STRIDES_3D[name])

    def index(self, p, x, y, r, k=0):
        """Flat index of population p at (x, y, cluster row r, lane k); numpy-broadcasting."""
        s, h = self.strides, self.halo
        return (p * s["SP"] + (np.asarray(x) + h) * s["SX"] + (np.asarray(y) + h) * s["SY"]
                + (np.asarray(r) + h) * s["SR"] + np.asarray(k) * s["SK"])

    def site_index(self, p, x, y, z):
        """Flat index of population p at site (x, y, z) of the interior."""
        z = np.asarray(z)
        return self.index(p, x, y, z % self.NR, z // self.NR)

    def propagate_offsets(self, velocities) -> Tuple[int, ...]:
        """Pull scheme: nxt[i] at idx reads prv[i] at idx + offset_i (offset of site - e_i)."""
        s = self.strides
        return tuple(-(ex * s["SX"] + ey * s["SY"] + ez * s["SR"]) for ex, ey, ez in velocities)

    def c_macros(self, prefix: str = "LBGEN") -> str:
        """The C size and index macros of this layout (sizes at run time), from the strides'
        formulas: <P>_IDX(p, x, y, r, k, LX, LY, LZ) and <P>_SITE(p, x, y, z, LX, LY, LZ)."""
        G, H, VL = prefix.upper(), self.halo, self.VL
        names = {"NX": f"{G}_NX(LX)", "NY": f"{G}_NY(LY)", "NRP": f"{G}_NRP(LZ)", "Q": self.Q, "VL": VL}

        def c(formula: str) -> str:
            return c_formula(formula, names)

        f = self.stride_formulas(self.name)
        args = "LX, LY, LZ"
        return "\n".join([
            f"#define {G}_NR(LZ) ((LZ) / {VL})",
            f"#define {G}_NX(LX) ((LX) + 2*{H})",
            f"#define {G}_NY(LY) ((LY) + 2*{H})",
            f"#define {G}_NRP(LZ) ({G}_NR(LZ) + 2*{H})",
            f"#define {G}_BUFFER_SIZE({args}) ((size_t){self.Q} * (size_t){G}_NX(LX) * (size_t){G}_NY(LY)"
            f" * (size_t){G}_NRP(LZ) * {VL})",
            f"#define {G}_IDX(p, x, y, r, k, {args}) ( \\",
            f"    (ptrdiff_t)(p) * ({c(f['SP'])}) \\",
            f"  + ((ptrdiff_t)(x) + {H}) * ({c(f['SX'])}) \\",
            f"  + ((ptrdiff_t)(y) + {H}) * ({c(f['SY'])}) \\",
            f"  + ((ptrdiff_t)(r) + {H}) * ({c(f['SR'])}) \\",
            f"  + (ptrdiff_t)(k) * ({f['SK']}))",
            f"#define {G}_SITE(p, x, y, z, {args}) {G}_IDX(p, x, y, (z) % {G}_NR(LZ), (z) / {G}_NR(LZ), {args})",
        ]) + "\n"

    def population_view(self, buf: np.ndarray):
        """(view, axis): the flat buffer as an nd-array with the populations along `axis`."""
        s = self.strides
        dims = {"SX": self.NX, "SY": self.NY, "SR": self.NRP, "SP": self.Q, "SK": self.VL}
        order = sorted((k for k in dims if s[k] > 0), key=lambda k: -s[k])
        view = np.asarray(buf).reshape([dims[k] for k in order])
        return view, order.index("SP")

    @cached_property
    def _interior_index(self) -> np.ndarray:
        p = np.arange(self.Q)[:, None, None, None]
        x = np.arange(self.LX)[None, :, None, None]
        y = np.arange(self.LY)[None, None, :, None]
        z = np.arange(self.LZ)[None, None, None, :]
        return self.site_index(p, x, y, z)

    @cached_property
    def _halo_maps(self):
        """(destination, source) index arrays refreshing the halo periodically, in three
        passes: halo cluster rows (lane-shifted sites) of the interior X-Y sites, then halo
        Y lines of the interior X planes, then halo X planes whole (edges and corners)."""
        H, NR, VL = self.halo, self.NR, self.VL
        p = np.arange(self.Q)[:, None, None, None, None]
        maps = []
        # 1. cluster rows r < 0 and r >= NR of interior (x, y): lane k holds z = r + k NR (mod LZ)
        rows = np.r_[-H:0, NR:NR + H][None, None, None, :, None]
        k = np.arange(VL)[None, None, None, None, :]
        x = np.arange(self.LX)[None, :, None, None, None]
        y = np.arange(self.LY)[None, None, :, None, None]
        maps.append((self.index(p, x, y, rows, k), self.site_index(p, x, y, (rows + k * NR) % self.LZ)))
        # 2. halo y of interior x: whole padded cluster lines
        ys = np.r_[-H:0, self.LY:self.LY + H][None, None, :, None, None]
        r = np.arange(-H, NR + H)[None, None, None, :, None]
        maps.append((self.index(p, x, ys, r, k), self.index(p, x, ys % self.LY, r, k)))
        # 3. halo x: whole padded planes
        xs = np.r_[-H:0, self.LX:self.LX + H][None, :, None, None, None]
        ya = np.arange(-H, self.LY + H)[None, None, :, None, None]
        maps.append((self.index(p, xs, ya, r, k), self.index(p, xs % self.LX, ya, r, k)))
        return [tuple(np.broadcast_arrays(d, s_)[i].ravel() for i in (0, 1)) for d, s_ in maps]

    def fill_halo(self, buf: np.ndarray) -> np.ndarray:
        """Refresh the halo of a flat buffer in place (periodic in X, Y and Z)."""
        for dst, src in self._halo_maps:
            buf[dst] = buf[src]
        return buf

    def pack(self, f: np.ndarray, dtype=None) -> np.ndarray:
        """(Q, LX, LY, LZ) array -> flat buffer of this layout, halos filled periodically."""
        f = np.asarray(f)
        if f.shape != (self.Q, self.LX, self.LY, self.LZ):
            raise ValueError(f"pack expects shape {(self.Q, self.LX, self.LY, self.LZ)}, got {f.shape}")
        buf = np.zeros(self.size, dtype=dtype or f.dtype)
        buf[self._interior_index] = f
        return self.fill_halo(buf)

    def unpack(self, buf: np.ndarray) -> np.ndarray:
        """Flat buffer -> (Q, LX, LY, LZ) array of the interior."""
        buf = np.asarray(buf).reshape(-1)
        if buf.size != self.size:
            raise ValueError(f"unpack expects {self.size} elements for {self.tag} "
                             f"{self.LX}x{self.LY}x{self.LZ}, got {buf.size}")
        return buf[self._interior_index]


def make_layout3d(name: str, Q: int, LX: int, LY: int, LZ: int, VL: Optional[int] = None, *,
                  halo: int) -> Layout3D:
    """Validated 3D layout (clusters along Z); LayoutError naming the bad value and the rule."""
    key = str(name).lower()
    if key not in LAYOUTS:
        raise LayoutError(f"unknown layout {name!r}; choose one of {', '.join(LAYOUTS)}")
    for label, v in (("LX", LX), ("LY", LY), ("LZ", LZ)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise LayoutError(f"{label}={v!r} is not a valid lattice size; {label} must be an integer >= 1")
    if key not in CLUSTERED:
        if VL not in (None, 1):
            raise LayoutError(f"layout {key} takes no VL (got VL={VL}); VL applies to csoa and caosoa")
        return Layout3D(key, Q, int(LX), int(LY), int(LZ), 1, int(halo))
    if VL is None:
        raise LayoutError(f"layout {key} needs a cluster length VL (a power of two dividing LZ={LZ})")
    VL = check_vl(VL)
    if LZ % VL:
        raise LayoutError(f"VL={VL} does not divide LZ={LZ}; VL must divide LZ (the clustered, fastest axis) "
                          f"and be a power of two")
    if LZ // VL < halo:
        raise LayoutError(f"LZ/VL = {LZ}/{VL} = {LZ // VL} cluster rows is too small for the {halo}-wide halo; "
                          f"need LZ/VL >= {halo}, i.e. a smaller VL or a larger LZ")
    return Layout3D(key, Q, int(LX), int(LY), int(LZ), int(VL), int(halo))


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
