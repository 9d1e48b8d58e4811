"""Bodies in a lattice of any D: their links, the bounce-back on them and the force on each.

A body is a labelled set of solid sites (``labels``: 0 fluid, k > 0 the k-th body) with the wall
distance q of every cut link (``distance(sites, directions)``: the fraction 0 < q <= 1 of the
link x -> x + c_i at which it meets the body's surface; a voxel mask without a shape has q = 1/2
everywhere).  The kernels' pull already bounces every link that ends in a solid site back
half-way (``BounceBack``'s mask); this module lists those links once, with the flat buffer
indices of their populations in the program's layout, and the link kernels
(``<prefix>_body_links`` / ``_body_put``, every backend) run before each step on the
post-collision state f*:

* the population the bounce-back will hand back, f~ = w1 f*_i(x) + w2 f*_j(y), replaces f*_i(x)
  (a population only that bounce reads: its neighbour x + c_i is solid).  ``halfway``: w = (1, 0),
  f~ = f*_i(x) (nothing is written).  ``bouzidi``: the linear interpolated bounce-back of Bouzidi,
  Firdaouss & Lallemand, Phys. Fluids 13, 3452 (2001):
  q < 1/2: f~ = 2q f*_i(x) + (1 - 2q) f*_i(x - c_i);  q >= 1/2: f~ = f*_i(x)/(2q) + (2q - 1)/(2q) f*_ibar(x)
  (where x - c_i is solid or beyond a wall the first falls back to half-way).  ``quadratic``: their
  quadratic interpolation (the same paper; Krueger et al., The Lattice Boltzmann Method, 2017, 11.3),
  three terms:
  q < 1/2:  f~ = q(1 + 2q) f*_i(x) + (1 - 4q^2) f*_i(x - c_i) - q(1 - 2q) f*_i(x - 2c_i)
  q >= 1/2: f~ = f*_i(x)/(q(2q + 1)) + (2q - 1)/q f*_ibar(x) - (2q - 1)/(2q + 1) f*_ibar(x - c_i)
  (where a site it reads upstream is solid or beyond a wall, the linear scheme's value; the kernels
  always take three terms, the third weight 0 for the others);
* the momentum the links hand to the body, Ladd's momentum exchange (J. Fluid Mech. 271, 285,
  1994), for interpolated walls as Mei, Yu, Shyy & Luo, Phys. Rev. E 65, 041203 (2002) take it:
  F = sum over the body's links of c_i (f*_i(x) + f~), in lattice units per step; ``forces``
  reports r^2 times it (model units: the momentum per model time, as gravity; docs/physics.md).

The sums run per chunk, the links of one fluid site to one body (one work-item each, in order),
and the chunks' partial sums are added per body here in the order of their sites: the same bits
on every backend, and (the chunks of each block's own sites, gathered) under MPI.
"""
from __future__ import annotations

from typing import Dict, Optional, Sequence, Tuple

import numpy as np

from lbgen.model.catalog import AXES
from lbgen.simulation.parameters import SimulationError

#: the bounce-back schemes a body takes (``body_bc``); the first is the default
SCHEMES = ("halfway", "bouzidi", "quadratic")


def body_scheme(name) -> str:
    """``name`` as one of SCHEMES, else SimulationError naming it."""
    if not isinstance(name, str) or name.lower() not in SCHEMES:
        raise SimulationError(f"body_bc={name!r}: the bounce-back on bodies is one of {', '.join(SCHEMES)} "
                              f"(halfway: plain half-way bounce-back; bouzidi: linear interpolated, quadratic: quadratic "
                              f"interpolated bounce-back, Bouzidi et al. 2001)")
    return name.lower()


class BlockBodies:
    """The bodies of one block of a distributed lattice (lbgen.parallel): its cut ``labels``, the
    lattice's ``names`` and the wall ``distance`` in the block's coordinates; a block may hold none."""

    block = True

    def __init__(self, labels, names, distance):
        self.labels, self.names, self.distance = labels, tuple(names), distance


def checked_labels(labels, shape, block: bool = False) -> np.ndarray:
    """The body labels as an int32 array of ``shape`` (0 fluid, k > 0 body k), refused before any
    work: another shape, negative labels, no solid site (but in a ``block``), no fluid site."""
    a = np.asarray(labels)
    if a.shape != tuple(shape):
        raise SimulationError(f"bodies: labels of shape {a.shape}; they must have the lattice's shape {tuple(shape)}")
    if a.dtype == np.bool_:
        a = a.astype(np.int32)
    if not np.issubdtype(a.dtype, np.integer):
        raise SimulationError(f"bodies: labels of dtype {a.dtype}; give integers (0 fluid, 1, 2, ... the bodies)")
    if a.size and a.min() < 0:
        raise SimulationError(f"bodies: label {int(a.min())}; labels are 0 (fluid) or a body's number 1, 2, ...")
    solid = a > 0
    if not solid.any() and not block:
        raise SimulationError("bodies: the geometry holds no solid site (an empty body: is it smaller than a "
                              "lattice spacing, or outside the box?)")
    if solid.all():
        raise SimulationError("bodies: every site is solid; the lattice needs at least one fluid site")
    return np.ascontiguousarray(a, dtype=np.int32)


def find_links(labels: np.ndarray, e: np.ndarray, opposite: Sequence[int], walls, distance, scheme: str,
               closed: Sequence[str] = ()) -> dict:
    """The links x -> x + e_i of every fluid site x to a solid site inside the box, sorted by body
    then site then direction: site (n, D), p (n,) the direction i, label (n,), q (n,), and the
    kernels' weights and source sites (``w`` (n, 3); ``src`` (n, 2, D) and ``src_p`` (n, 2): the
    second and third populations read, f*_src_p[:, k](src[:, k])).  Links leave the box through the faces of wall axes and of
    the ``closed`` axes (a distributed block's split axes), and wrap through the others."""
    shape = labels.shape
    D = len(shape)
    solid = labels > 0
    wall_axes = {a for a, _ in walls} | set(closed)
    idx = np.indices(shape).reshape(D, -1).T
    sites, dirs = [], []
    for p, c in enumerate(np.asarray(e, dtype=np.int64)):
        if not c.any():
            continue
        nb = idx + c
        inside = np.ones(len(idx), bool)
        for k in range(D):
            if AXES[k] in wall_axes:
                inside &= (nb[:, k] >= 0) & (nb[:, k] < shape[k])
            else:
                nb[:, k] %= shape[k]
        hit = np.zeros(len(idx), bool)
        hit[inside] = solid[tuple(nb[inside].T)]
        hit &= ~solid[tuple(idx.T)]
        sites.append(idx[hit])
        dirs.append(np.full(int(hit.sum()), p))
    site = np.concatenate(sites) if sites else np.zeros((0, D), np.int64)
    p = np.concatenate(dirs) if dirs else np.zeros(0, np.int64)
    c = np.asarray(e, dtype=np.int64)[p]
    end = site + c
    for k in range(D):
        if AXES[k] not in wall_axes:
            end[:, k] %= shape[k]
    label = labels[tuple(end.T)].astype(np.int64)
    flat = np.ravel_multi_index(tuple(site.T), shape) if len(site) else np.zeros(0, np.int64)
    order = np.lexsort((p, flat, label))
    site, p, c, label, flat = site[order], p[order], c[order], label[order], flat[order]
    q = np.full(len(p), 0.5) if distance is None else np.asarray(distance(site, c), dtype=np.float64)
    good = (q > 0) & (q <= 1) if q.shape == (len(p),) else np.zeros(len(p), bool)
    if not good.all():
        n = int(np.argmin(good))
        at = ", ".join(f"{a}={int(v)}" for a, v in zip(AXES, site[n]))
        seam = [AXES[k] for k in range(D) if not 0 <= site[n][k] + c[n][k] < shape[k]]
        if seam:
            raise SimulationError(f"bodies: body {int(label[n])} touches the periodic seam of {seam[0]}: the link from "
                                  f"({at}) across the {seam[0]} faces ends in it, but its surface lies on the other "
                                  f"side; move the body inward (or make {seam[0]} a wall axis)")
        raise SimulationError(f"bodies: the link from ({at}) along {tuple(int(v) for v in c[n])} ends in body "
                              f"{int(label[n])} but meets its surface at q = {q.ravel()[n] if q.size > n else q!r}; "
                              f"the surface must cut every link from a fluid to a solid site, 0 < q <= 1")
    # the second and third populations of each link and the weights
    def upstream(at):
        """(the sites at - c, whether each is a fluid site inside the box)"""
        up = at - c
        ok = np.ones(len(p), bool)
        for k in range(D):
            if AXES[k] in wall_axes:
                ok &= (up[:, k] >= 0) & (up[:, k] < shape[k])
            else:
                up[:, k] %= shape[k]
        ok[ok] = ~solid[tuple(up[ok].T)]
        return up, ok
    up, up_ok = upstream(site)
    up2, up2_ok = upstream(up)
    up2_ok &= up_ok
    w = np.zeros((len(p), 3))
    src, src_p = np.stack([site, site], axis=1), np.stack([p, p], axis=1)
    opp = np.asarray(opposite)[p]
    if scheme == "halfway":
        w[:, 0] = 1.0
    else:
        near = q < 0.5
        far = ~near
        lin = near & up_ok
        w[lin, 0], w[lin, 1] = 2 * q[lin], 1 - 2 * q[lin]
        src[lin, 0] = up[lin]
        w[near & ~up_ok, 0] = 1.0                         # no upstream fluid site: half-way
        w[far, 0], w[far, 1] = 1 / (2 * q[far]), (2 * q[far] - 1) / (2 * q[far])
        src_p[far, 0] = opp[far]
        if scheme == "quadratic":                         # else (a site upstream solid / outside): linear
            quad = near & up2_ok
            qq = q[quad]
            w[quad] = np.stack([qq * (1 + 2 * qq), 1 - 4 * qq ** 2, -qq * (1 - 2 * qq)], axis=1)
            src[quad, 1] = up2[quad]
            quad = far & up_ok
            qq = q[quad]
            w[quad] = np.stack([1 / (qq * (2 * qq + 1)), (2 * qq - 1) / qq, -(2 * qq - 1) / (2 * qq + 1)], axis=1)
            src[quad, 1], src_p[quad, 1] = up[quad], opp[quad]
    return {"site": site, "p": p, "c": c, "label": label, "q": q, "w": w, "src": src, "src_p": src_p, "flat": flat}


def chunks(label: np.ndarray, flat: np.ndarray) -> np.ndarray:
    """The first link of each chunk, and n: a chunk is the links of one fluid site to one body (links
    sorted by body, then site), so that the chunks' sums do not depend on how a lattice is cut
    into blocks (lbgen.parallel: the same bits as one process)."""
    n = len(label)
    if not n:
        return np.zeros(1, dtype=np.int64)
    new = np.ones(n, bool)
    new[1:] = (label[1:] != label[:-1]) | (flat[1:] != flat[:-1])
    return np.append(np.nonzero(new)[0], n).astype(np.int64)


class BodyLinks:
    """The links of a lattice's bodies on one program (its layout), their arrays where its buffers
    live, and the force on each body of the last step."""

    def __init__(self, program, labels: np.ndarray, names: Sequence[str], walls, distance, scheme: str,
                 r: float, x_start: int = 0, closed: Sequence[str] = ()):
        vs = program.vs
        self.scheme = scheme
        self.names = tuple(names)
        self.r = float(r)
        self.D = program.D
        links = self.links = find_links(labels, vs.e, vs.opposite, walls, distance, scheme, closed)
        self.n = len(links["p"])
        lay = program.layout
        slot = np.empty((self.n, 3), dtype=np.int64)
        shift = np.zeros(self.D, np.int64)
        shift[0] = x_start
        slot[:, 0] = lay.site_index(links["p"], *(links["site"] - shift).T)
        for k in (1, 2):
            slot[:, k] = lay.site_index(links["src_p"][:, k - 1], *(links["src"][:, k - 1] - shift).T)
        starts = chunks(links["label"], links["flat"])
        #: per chunk: its body and its fluid site (lattice coordinates)
        self.chunk_body, self.chunk_site = links["label"][starts[:-1]], links["site"][starts[:-1]]
        self.program = program
        self.arrays = program.body_upload(slot.ravel(), links["w"].ravel(), links["c"].ravel(), starts)
        #: in place (lbgen.simulation.inplace), the links of an odd step: f*_p(x) lies in slot opp(p)
        #: of x + c_p, as the buffer's addresses go (a halo site, a clustered lane's halo row: where
        #: the even step stored it and the odd step reads it)
        self.arrays_odd = None
        if program.spec.streaming == "inplace":
            odd = np.empty_like(slot)
            for k, (p, at) in enumerate(((links["p"], links["site"]), (links["src_p"][:, 0], links["src"][:, 0]),
                                         (links["src_p"][:, 1], links["src"][:, 1]))):
                odd[:, k] = program.inplace_odd_slots(p, (at - shift) % labels.shape)
            self.arrays_odd = program.body_upload(odd.ravel(), links["w"].ravel(), links["c"].ravel(), starts)
        self._last = self.arrays
        #: only interpolated links write populations
        self.writes = bool(np.any(links["w"][:, 1:] != 0))
        self.stepped = False

    def before_step(self, f, odd: bool = False) -> None:
        """The link kernels on the post-collision state ``f`` before the step streams it (``odd``: an
        in-place buffer before the AA pattern's odd step)."""
        self._last = self.arrays_odd if odd else self.arrays
        if self.n:
            self.program.body_links(f, self._last, put=self.writes)
        self.stepped = True

    def forces(self) -> Dict[str, np.ndarray]:
        """{body name: the force on it (D components, model units)} of the last step (zeros before the first)."""
        out = {name: np.zeros(self.D) for name in self.names}
        if not self.stepped or not self.n:
            return out
        return self.totals(self.chunk_body, self.partial())

    def partial(self) -> np.ndarray:
        """The chunks' momentum sums of the last step ((chunks, D), lattice units)."""
        return self.program.body_partial(self._last)[:len(self.chunk_body)]

    def totals(self, body: np.ndarray, partial: np.ndarray) -> Dict[str, np.ndarray]:
        """{name: r^2 x the sum of the rows of ``partial`` of its body, in their order} (model units)."""
        out = {}
        for k, name in enumerate(self.names, start=1):
            rows = np.asarray(partial[body == k], dtype=np.float64)
            # a running sum in order (accumulate adds row by row): the same bits on every backend
            # and rank count; a loop over the rows took 2 ms a sample for 5000 chunks (3D-1Z, 20 cells/D)
            total = np.add.accumulate(rows, axis=0)[-1] if len(rows) else np.zeros(self.D)
            out[name] = total * self.r ** 2
        return out

    def count(self) -> Dict[str, int]:
        """{body name: its links}."""
        return {name: int(np.sum(self.links["label"] == k)) for k, name in enumerate(self.names, start=1)}


def body_names(names: Optional[Sequence[str]], labels: np.ndarray) -> Tuple[str, ...]:
    """The bodies' names: ``names`` (one per label 1..max), else 'body1', 'body2', ..."""
    top = int(labels.max())
    if names is None:
        return tuple(f"body{k}" for k in range(1, top + 1))
    names = tuple(str(n) for n in names)
    if len(names) != top or len(set(names)) != len(names):
        raise SimulationError(f"bodies: names {names!r}: give {top} distinct names, one per label 1..{top}")
    return names


def body_input(bodies, mask, shape, scheme) -> Optional[tuple]:
    """(mask, labels, names, distance, scheme) of ``Simulation``'s ``bodies``: an integer label
    array of the lattice's shape (q = 1/2 on every link), or an object with ``labels``, ``names``
    and ``distance(sites, directions)`` (``lbgen.geometry.Bodies``); None without bodies.  A
    ``mask`` beside them is refused (the bodies are the mask)."""
    if bodies is None:
        if scheme not in (None, "halfway"):
            raise SimulationError(f"body_bc={scheme!r} applies to bodies: give bodies=... (lbgen.geometry)")
        return None
    scheme = body_scheme("halfway" if scheme is None else scheme)
    if mask is not None:
        raise SimulationError("mask and bodies both given: the bodies are the solid sites; give one of them "
                              "(a voxel mask as bodies=mask gives its forces too)")
    if hasattr(bodies, "labels"):
        labels, names, distance = bodies.labels, getattr(bodies, "names", None), getattr(bodies, "distance", None)
    else:
        labels, names, distance = bodies, None, None
    block = getattr(bodies, "block", False)
    labels = checked_labels(labels, shape, block)
    return labels > 0, labels, tuple(names) if block else body_names(names, labels), distance, scheme
