"""The interface every backend implements: ``Program``, the compiled kernels of one spec for one
lattice of any dimension (shape (lx, ly) or (lx, ly, lz)), and what the runtimes share."""
from __future__ import annotations

import abc
import collections
from typing import Any, Optional

import numpy as np

from lbgen.backends.build import aligned_zeros, cpu_model
from lbgen.backends.columns import ColumnExchange
from lbgen.codegen.storage import Codec


class Program(ColumnExchange, abc.ABC):
    """Compiled kernels of one spec for one lattice ``shape`` ((lx, ly) or (lx, ly, lz)): the
    size checks before any work, the layout, buffers, the boundaries (``set_boundaries``), the
    step sequence written once, a kernel-call log ``calls`` and provenance.  A runtime defines
    the buffers' home and the kernels; it branches on ``D`` only where its kernels differ."""

    #: OpenMP threads of a host program (None where the device decides)
    threads: Optional[int] = None
    #: the shared library a host program loaded (None for device programs)
    library_path: Any = None

    def __init__(self, source, shape):
        from lbgen.codegen.kernel_api import check_sizes3d
        from lbgen.codegen.layouts import make_layout
        from lbgen.model.velocity_set import velocity_set
        self.source = source
        self.spec = spec = source.spec
        shape = tuple(shape)
        if len(shape) not in (2, 3) or any(isinstance(n, bool) or not isinstance(n, (int, np.integer)) for n in shape):
            raise ValueError(f"lattice shape {shape!r}: give (lx, ly) or (lx, ly, lz) integers")
        if spec.dimension != len(shape):
            raise ValueError(f"{type(self).__name__}: these {spec.dimension}D {spec.velocity_set} kernels take a "
                             f"lattice of {spec.dimension} sizes, not {shape}")
        self.shape = tuple(int(n) for n in shape)
        self.D = len(shape)
        self.lx, self.ly = self.shape[:2]
        if self.D == 3:
            self.lz = self.shape[2]
        #: calls of each kernel entry point so far (the host runtimes count them; a log for tests
        #: and benchmarks that must observe which kernels ran)
        self.calls = collections.Counter()
        self.vs = vs = velocity_set(spec.velocity_set)
        if self.D == 3:
            problem = check_sizes3d(spec, vs, *self.shape)        # the emitted check's rules, before any work
            if problem:
                raise ValueError(problem)
        elif spec.compile_time_sizes and self.shape != (spec.lx, spec.ly):
            raise ValueError(f"these kernels were generated for the lattice lx={spec.lx}, ly={spec.ly} "
                             f"(compile-time sizes); they cannot run on {self.lx} x {self.ly}")
        self.layout = make_layout(spec.layout, vs.Q, self.shape, spec.vl, halo=vs.max_hop,
                                  halo_y=spec.halo_y if self.D == 2 else None)
        #: stored populations <-> arithmetic values (lbgen.codegen.storage); dtype: the storage's
        self.codec = Codec(spec.precision, spec.storage, vs.weights)
        self.dtype = self.codec.dtype.type
        #: the arithmetic's scalar type (the kernels' ``real``: parameters, GPU fields)
        self.real = self.codec.arith_dtype.type
        self.prefix = spec.prefix
        #: the bounce-back boundaries every sweep honours (set_boundaries; None: periodic)
        self.bounds = None
        self.open_bounds = None
        #: what moved between host and device memory so far ("to host bytes", "to host copies",
        #: "to device bytes", "to device copies"): whole buffers, column ranges and halo slabs
        self.transfers = collections.Counter()

    # --- the boundaries: one description for any D ------------------------------------------
    def set_boundaries(self, walls: int = 0, lids: int = 0, lid=None, solid=None, *, inlets: int = 0,
                       outlets: int = 0, outflows: int = 0, slips: int = 0, rho_out=None, inflow=None) -> None:
        """The boundaries of every following sweep (the ``<prefix>_params`` fields;
        ``lbgen.simulation.boundaries`` parses and checks a simulation's walls, lids, open faces and
        mask and gives these with ``face_bits`` / ``BounceBack.kernel_fields``): ``walls`` and ``lids`` face bits (bit 2a + s: side s,
        low high, of axis a, x y z), ``lid`` the (2D, D) face velocities (model units), ``solid``
        a bool or uint8 array of the lattice's shape (nonzero: solid) or None; the open faces
        (``lbgen.simulation.open_faces``): ``inlets``, ``outlets``, ``outflows``, ``slips`` face bits,
        ``rho_out`` the (2D,) outlet densities, ``inflow`` the inlets' face-site velocities, or on
        a set whose hops are longer than 1 their equilibria at unit density (the kernels' flat
        layout, ``open_faces.inflow_size``).  All 0 and None: periodic."""
        D, faces = self.D, 2 * self.D
        opened = inlets or outlets or outflows or slips
        if self.spec.walls and (walls or lids or solid is not None or opened):
            raise ValueError("bounce-back walls, lids, open faces and solid cells are not available in kernels "
                             "generated with the thermal walls (KernelSpec(walls=True))")
        kinds = (("walls", walls), ("lids", lids), ("inlets", inlets), ("outlets", outlets),
                 ("outflows", outflows), ("slips", slips))
        for name, bits in kinds:
            if isinstance(bits, bool) or not isinstance(bits, (int, np.integer)) or not 0 <= bits < 1 << faces:
                raise ValueError(f"{name}={bits!r}: face bits of a {D}D lattice, an integer 0 .. {(1 << faces) - 1} "
                                 f"(bit 2a + s: side s of axis a)")
        if lids & ~walls:
            raise ValueError(f"lids={lids} names a face without a wall (walls={walls}): a lid is a moving wall")
        for i, (n1, b1) in enumerate(kinds):
            for n2, b2 in kinds[i + 1:]:
                if n1 != "walls" or n2 != "lids":
                    if b1 & b2:
                        raise ValueError(f"{n1}={b1} and {n2}={b2} share face bit(s) {b1 & b2}: a face has one kind")
        if opened and not self.spec.open_face_rules:
            raise ValueError(f"open faces (inlets, outlets, outflows, slips): these {self.spec.velocity_set} kernels carry "
                             f"no open faces' rules (its hops are longer than 1: they are emitted on request); build "
                             f"them with KernelSpec(open_faces=True) (lbgen emit --open-faces)")
        if opened and self.vs.max_hop != 1:
            if outlets:
                raise ValueError(f"outlets={outlets}: a pressure outlet needs a velocity set whose hops are 1; "
                                 f"{self.spec.velocity_set} hops {self.vs.max_hop} (use an outflow)")
        lid = np.zeros((faces, D)) if lid is None else np.asarray(lid, dtype=np.float64)
        if lid.size != faces * D:
            raise ValueError(f"lid: {lid.size} values; a {D}D lattice takes {faces} faces x {D} velocity components")
        lid = lid.reshape(faces, D)
        if solid is not None:
            solid = np.asarray(solid)
            if solid.dtype not in (np.bool_, np.uint8) or solid.shape != self.shape:
                raise ValueError(f"solid: a {solid.dtype} array of shape {solid.shape}; the mask is a bool or uint8 "
                                 f"array of this program's lattice shape {self.shape}")
            solid = np.ascontiguousarray(solid, dtype=np.uint8)
        rho_out = np.ones(faces) if rho_out is None else np.asarray(rho_out, dtype=np.float64).reshape(-1)
        if rho_out.size != faces:
            raise ValueError(f"rho_out: {rho_out.size} values; a {D}D lattice takes one density per face ({faces})")
        V = D if self.vs.max_hop == 1 else self.vs.Q     # values per face site (open_faces.inflow_size)
        size = sum(V * int(np.prod(self.shape)) // self.shape[f // 2] for f in range(faces))
        if inlets:
            if inflow is None or np.asarray(inflow).size != size:
                what = "velocities" if self.vs.max_hop == 1 else "equilibria at unit density"
                raise ValueError(f"inflow: the inlets' face-site {what}, {size} values on this lattice "
                                 f"(open_faces.inflow_size); got {None if inflow is None else np.asarray(inflow).size}")
            inflow = np.ascontiguousarray(inflow, dtype=np.float64).reshape(-1)
        else:
            inflow = None
        self.bounds = (int(walls), int(lids), lid, solid) if (walls or solid is not None or opened) else None
        #: the open faces of ``bounds`` (inlets, outlets, outflows, slips, rho_out, inflow), or None
        self.open_bounds = (int(inlets), int(outlets), int(outflows), int(slips), rho_out, inflow) if opened else None
        self._bounds_changed()

    def _bounds_changed(self) -> None:
        """A hook: the runtime refreshes what it derived from ``bounds``."""

    def _skip_mask(self, skip=None) -> Optional[np.ndarray]:
        """The sites the diagnostics skip: ``skip`` (a mask of the lattice's shape) or else the
        boundaries' solid cells; None: none."""
        if skip is None:
            return None if self.bounds is None else self.bounds[3]
        skip = np.asarray(skip)
        if skip.dtype not in (np.bool_, np.uint8) or skip.shape != self.shape:
            raise ValueError(f"skip: a {skip.dtype} array of shape {skip.shape}; the diagnostics take a bool or "
                             f"uint8 mask of this program's lattice shape {self.shape}")
        return np.ascontiguousarray(skip, dtype=np.uint8)

    def _force(self, force) -> tuple:
        """The force per unit mass per step as D floats (None: no force)."""
        if force is None:
            return (0.0,) * self.D
        force = tuple(float(a) for a in force)
        if len(force) != self.D:
            raise ValueError(f"force={force!r}: a {self.D}D lattice takes {self.D} components")
        return force

    # --- buffers ------------------------------------------------------------------------------
    @abc.abstractmethod
    def allocate(self) -> Any: ...

    @abc.abstractmethod
    def upload(self, host: np.ndarray, buffer: Any = None) -> Any:
        """Copy a flat host array (layout order) into a (new or given) buffer."""

    @abc.abstractmethod
    def download(self, buffer: Any) -> np.ndarray:
        """Flat host copy (layout order) of a buffer."""

    def pack(self, plain: np.ndarray, buffer: Any = None) -> Any:
        """(Q, *shape) populations -> a (new or given) buffer in this layout (halo filled)."""
        return self.upload(self.layout.pack(self.codec.encode(plain)), buffer)

    def unpack(self, buffer: Any) -> np.ndarray:
        """A buffer -> (Q, *shape) float64 populations."""
        return self.codec.decode(self.layout.unpack(self.download(buffer)))

    def _check_size(self, host: np.ndarray) -> np.ndarray:
        host = np.ascontiguousarray(np.asarray(host, dtype=self.dtype).reshape(-1))
        if host.size != self.layout.size:
            raise ValueError(f"upload expects {self.layout.size} elements, got {host.size}")
        return host

    # --- halo slabs: packed where the buffers live, moved whole (lbgen.parallel.halo) ----------
    #: the lattice buffers are host memory, read and written in place (C); False: a device's
    #: (or the CUDA host shim's, which stands in for one)
    buffers_on_host = True
    #: the device's memory is host memory (the CUDA host shim; OpenCL on a CPU device): the data-
    #: movement model takes the device path's messages for host MPI messages
    shares_host_memory = True

    def slab_index(self, index: np.ndarray) -> Any:
        """Flat buffer indices of a slab's values (int64), held where the buffers live (once a slab)."""
        return np.ascontiguousarray(index, dtype=np.int64)

    def slab_buffer(self, n: int) -> Any:
        """A packed slab of n values where the buffers live."""
        return np.empty(n, dtype=self.dtype)

    def slab_host(self, n: int) -> np.ndarray:
        """A host array of n values for a slab's copies (page-locked where the runtime has such)."""
        return np.empty(n, dtype=self.dtype)

    def gather(self, f: Any, index: Any, out: Any) -> Any:
        """out[i] = f[index[i]] where the buffers live (the pack kernel of a halo slab)."""
        np.take(f, index, out=out)
        return out

    def scatter(self, f: Any, index: Any, values: Any) -> None:
        """f[index[i]] = values[i] where the buffers live (the unpack kernel of a halo slab)."""
        f[index] = values

    def slab_to_host(self, slab: Any, host: np.ndarray, aside: bool = False) -> None:
        """Copy a packed slab into a host array (one counted copy; queued: ``synchronize``).
        ``aside``: on the runtime's copy queue, after the work queued so far, so that the
        kernels queued next run meanwhile (``wait_aside``)."""
        self._count("to host", host.nbytes)
        host[...] = slab

    def slab_to_device(self, host: np.ndarray, slab: Any, aside: bool = False) -> None:
        """Copy a host array into a packed slab (one counted copy; queued; ``aside``: on the copy
        queue, finished on return, while the kernels queued before run on)."""
        self._count("to device", host.nbytes)
        slab[...] = host

    def wait_aside(self) -> None:
        """Wait for the copies queued ``aside`` (not for the kernels)."""

    def mpi_view(self, slab: Any) -> Any:
        """What MPI reads and writes for a packed slab on the device path (a host program's own array)."""
        return slab

    def mpi_release(self, slab: Any) -> None:
        """MPI is done with ``mpi_view(slab)``: the kernels may use the slab again."""

    def direct_mpi(self, comm) -> Optional[str]:
        """Why MPI cannot take this program's packed slabs as they are (None: it can)."""
        return None

    def _count(self, direction: str, nbytes: int) -> None:
        self.transfers[f"{direction} bytes"] += int(nbytes)
        self.transfers[f"{direction} copies"] += 1

    # --- kernels ------------------------------------------------------------------------------
    @abc.abstractmethod
    def halo(self, f: Any) -> None: ...

    def step_halo(self, f: Any) -> None:
        """The halo refresh a step needs (a runtime may refresh only what its kernels read)."""
        self.halo(f)

    @abc.abstractmethod
    def propagate(self, prv: Any, nxt: Any, region=None) -> None:
        """Pull streaming prv -> nxt, the bounce-back boundaries (``set_boundaries``) included."""

    @abc.abstractmethod
    def collide(self, src: Any, dst: Any, **params) -> None: ...

    @abc.abstractmethod
    def fused(self, prv: Any, nxt: Any, **params) -> None: ...

    @abc.abstractmethod
    def init_equilibrium(self, f: Any, rho, *velocity_and_T, force=None) -> None:
        """f (in place) = the populations whose physical (half-step) fields are rho, u (D
        components) and T (arrays of the lattice's shape, or numbers) under ``force`` (D
        components per unit mass per step): the exact inverse of ``fields``; halo filled."""

    @abc.abstractmethod
    def fields(self, f: Any, force=None, native: bool = False) -> dict:
        """{rho, ux, uy[, uz], T}, float64 arrays of the lattice's shape: the physical (half-step)
        fields of the populations in f under ``force`` (lbgen.model.collision.half_step_shift).
        ``native``: the same values in the arithmetic precision (``codec.arith_dtype``: float32
        arrays in single, half the bytes; widened, the float64 ones bit for bit)."""

    def diagnostics(self, f: Any, force=None, skip=None) -> np.ndarray:
        """Per-line reductions over x of the physical fields of f (force per unit mass per step,
        as ``fields``): an (LY[*LZ], ND) float64 array whose columns are
        ``lbgen.codegen.diagnostics.ROW_QUANTITIES[3D]``; the sites of ``skip`` (default: the
        boundaries' solid cells) left out."""
        raise NotImplementedError(f"the {self.spec.backend} backend has no diagnostics kernel")

    def fused_tb(self, prv: Any, nxt: Any, depth: int, walls=None, **params) -> None:
        """`depth` time steps in one sweep through cache (temporal blocking; C backend)."""
        raise NotImplementedError(f"temporal blocking (time_block > 1) runs on the C backend only, "
                                  f"not on {self.spec.backend!r}")

    @staticmethod
    def _check_time_block(depth) -> int:
        from lbgen.codegen.spec import time_block_value
        if isinstance(depth, str):
            raise ValueError(f"time block {depth!r} is not an integer (time steps per sweep)")
        return time_block_value(depth, allow_auto=False)

    def bc(self, prv: Any, nxt: Any, T_bottom: float = 1.0, T_top: float = 1.0,
           adiabatic=(False, False), ax: float = 0.0, ay: float = 0.0, sides=(True, True)) -> None:
        """Thermal walls after propagate(prv -> nxt), on the sides (bottom, top) this lattice
        holds (``sides``); only for 2D specs generated with walls."""
        raise NotImplementedError(f"the {self.spec.backend} backend has no bc kernel yet")

    def fused_walls(self, prv: Any, nxt: Any, T_bottom: float = 1.0, T_top: float = 1.0,
                    adiabatic=(False, False), sides=(True, True), **params) -> None:
        """propagate + bc + collide in one sweep (prv -> nxt); only for specs generated with walls."""
        raise NotImplementedError(f"the {self.spec.backend} backend has no fused walls kernel yet")

    def describe(self) -> str:
        """What the kernels run on (a CPU model, a device name)."""
        return cpu_model()

    def provenance(self) -> dict:
        """What a run records about these kernels (manifest.json)."""
        out = {"device": self.describe()}
        if self.threads is not None:
            out["threads"] = str(self.threads)
        if self.library_path is not None:
            out["library_path"] = str(self.library_path)
        return out

    def copy_bandwidth(self, repeat: int = 5) -> Optional[dict]:
        """The device's own copy bandwidth (GB/s, read + write) for accelerator backends;
        None where the kernels run on the host (its limits are measured by lbgen.perf.machine)."""
        return None

    def _tau_wall(self, tau_wall, convert=float) -> list:
        """The GPU kernels' `real tau_wall` argument (walls only; without walls only the default)."""
        tau_wall = check_tau_wall(tau_wall)
        if not self.spec.walls:
            if tau_wall != 1.0:
                self._require_walls()
            return []
        return [convert(tau_wall)]

    @staticmethod
    def _check_sides(sides) -> tuple:
        """(bottom, top): which walls a lattice holds, as two real booleans; a lattice split in Y
        holds the bottom wall only on its lowest part and the top wall only on its highest."""
        try:
            bottom, top = sides
        except (TypeError, ValueError):
            raise ValueError(f"sides={sides!r} must be a pair (bottom, top) of booleans: the walls this "
                             f"lattice holds") from None
        for name, v in (("bottom", bottom), ("top", top)):
            if not isinstance(v, (bool, np.bool_)):
                raise ValueError(f"sides: {name}={v!r} is not a boolean (True: this lattice holds the {name} wall)")
        return bool(bottom), bool(top)

    def _check_region(self, region) -> tuple:
        """(x0, x1, y0, y1) of a sweep's region (``checked_region``; 3D: whole Z lines)."""
        return checked_region(region, self.lx, self.ly, ", whole Z lines" if self.D == 3 else "")

    def _require_walls(self) -> None:
        if not self.spec.walls:
            raise ValueError("these kernels were generated without walls (KernelSpec(walls=True) adds the bc kernel)")

    def synchronize(self) -> None:
        """Wait for the kernels launched so far (the host runtimes return with their work done)."""

    # --- the step sequence: written once, for the simulations, tune, verify and bench --------
    def step(self, f: Any, g: Any, params: dict, walls=None, fused: bool = True, sides=(True, True)):
        """One time step of a lattice whose halos are fresh (``step_halo``): ``f`` holds the
        state, ``g`` is spare.  Returns (state, spare) after the step (asynchronous on devices).

        Without thermal walls: the fused kernel (or propagate then collide), the bounce-back
        boundaries (``set_boundaries``) included.  With ``walls`` (the thermal walls of any D: anything
        with T_bottom, T_top, adiabatic_bottom, adiabatic_top): the fused_walls kernel (or
        propagate, bc, collide: the same bits in strict builds), on the walls of ``sides``
        (bottom, top) only: a lattice split in Y holds each wall on one part; the wall rows
        relax with ``walls.tau_wall`` (1 where walls has none)."""
        if walls is None and fused:
            self.fused(f, g, **params)
            return g, f
        if fused:                       # thermal walls, any D: propagate + bc + collide in one sweep
            self.fused_walls(f, g, walls.T_bottom, walls.T_top, (walls.adiabatic_bottom, walls.adiabatic_top),
                             sides=sides, tau_wall=wall_tau(walls), **params)
            return g, f
        self.propagate(f, g)
        if walls is not None:
            self.bc(f, g, walls.T_bottom, walls.T_top, (walls.adiabatic_bottom, walls.adiabatic_top),
                    params["ax"], params["ay"], sides=sides, **({"az": params["az"]} if self.D == 3 else {}))
            self.collide(g, f, sides=sides, tau_wall=wall_tau(walls), **params)
        else:
            self.collide(g, f, **params)
        return f, g

    def inplace_odd_slots(self, p, sites) -> np.ndarray:
        """In place (the AA pattern), the flat indices where the even step stores the post-collision
        population p of the lattice sites ``sites`` ((n, D), inside the lattice) and the odd step reads
        it: slot opp(p) of site + c_p as the buffer's addresses go (a halo site, a clustered lane's
        halo row beyond a Z face or a lane's end: the C kernels' pull_swap offsets)."""
        lay, vs = self.layout, self.vs
        p = np.asarray(p)
        hop = np.asarray(lay.propagate_offsets(vs.e), dtype=np.int64)   # the address of x - c_p, less x's
        return lay.site_index(np.asarray(vs.opposite)[p], *np.asarray(sites).T) - hop[p]

    def step_inplace(self, f: Any, odd: bool, params: dict) -> None:
        """One in-place step of the one buffer ``f`` (spec streaming 'inplace', the AA pattern; the
        parity contract of ``<prefix>_aa_even``): ``odd`` False, f natural with a fresh halo
        (``step_halo``): aa_even then aa_fold, after which f holds the other parity's slots; ``odd``
        True: aa_odd, after which f is natural again (``aa_normalise`` makes it so without a step)."""
        if odd:
            self.aa_odd(f, **params)
        else:
            self.aa_even(f, **params)
            self.aa_fold(f)

    def aa_even(self, f: Any, **params) -> None:
        raise NotImplementedError(f"in-place streaming runs on the C backend only, not on {self.spec.backend!r}")

    aa_odd = aa_even

    def aa_fold(self, f: Any) -> None:
        raise NotImplementedError(f"in-place streaming runs on the C backend only, not on {self.spec.backend!r}")

    aa_normalise = aa_fold

    def _param_values(self, params: dict, convert=float):
        """The kernel arguments in order (``ordered_parameters``)."""
        return ordered_parameters(self, self.parameter_names, params, convert)

    @property
    def parameter_names(self) -> tuple:
        """The collide kernels' parameter names in order: the operator's, then the force."""
        from lbgen.model.operators import operator
        return tuple(operator(self.spec.collision).kernel_arguments_of(self.D))


def body_arrays(program, slot, weight, dirs, chunk) -> dict:
    """The host arrays of a body's links for ``program``'s link kernels (lbgen.simulation.bodies):
    slot (3n int64 flat buffer indices), weight (3n, the program's arithmetic dtype), dir (D n int32), chunk
    (the chunks' first links and n, int64), and the value (n) and partial (chunks x D float64)
    arrays the kernels write; checked here (the kernels trust them)."""
    slot = np.ascontiguousarray(slot, dtype=np.int64)
    n = slot.size // 3
    weight = np.ascontiguousarray(weight, dtype=program.codec.arith_dtype)
    dirs = np.ascontiguousarray(dirs, dtype=np.int32)
    chunk = np.ascontiguousarray(chunk, dtype=np.int64)
    if slot.size != 3 * n or weight.size != 3 * n or dirs.size != program.D * n or chunk.size < 1 \
            or chunk[0] != 0 or chunk[-1] != n or np.any(np.diff(chunk) < 0):
        raise ValueError(f"body links: slot {slot.size}, weight {weight.size}, dir {dirs.size} and chunk {chunk.size} "
                         f"values do not describe n links (3n, 3n, {program.D}n, chunks from 0 to n)")
    if n and (slot.min() < 0 or slot.max() >= program.layout.size):
        raise ValueError(f"body links: a slot outside the lattice buffer (0 .. {program.layout.size - 1})")
    return {"slot": slot, "weight": weight, "dir": dirs, "chunk": chunk, "n": np.int32(n),
            "nchunk": np.int32(chunk.size - 1), "value": np.zeros(max(n, 1), dtype=program.dtype),
            "partial": np.zeros((max(chunk.size - 1, 1), program.D), dtype=np.float64)}


def checked_region(region, lx: int, ly: int, note: str = "") -> tuple:
    """(x0, x1, y0, y1) of a sweep's region, for any D: None is the whole lattice, else interior
    sites x0 <= x < x1, y0 <= y < y1 (3D: whole Z lines, ``note``), checked here (the kernels
    trust it)."""
    if region is None:
        return 0, lx, 0, ly
    try:
        x0, x1, y0, y1 = region
    except (TypeError, ValueError):
        raise ValueError(f"region={region!r} must be (x0, x1, y0, y1): interior sites x0 <= x < x1, "
                         f"y0 <= y < y1{note}") from None
    for name, v in zip(("x0", "x1", "y0", "y1"), (x0, x1, y0, y1)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise ValueError(f"region: {name}={v!r} is not an integer")
    if not (0 <= x0 <= x1 <= lx and 0 <= y0 <= y1 <= ly):
        raise ValueError(f"region (x0, x1, y0, y1) = {(x0, x1, y0, y1)} outside the lattice: allowed "
                         f"0 <= x0 <= x1 <= {lx}, 0 <= y0 <= y1 <= {ly}")
    return int(x0), int(x1), int(y0), int(y1)


def fields_dict(arrays, D: int = 2, native: bool = False) -> dict:
    """The fields kernel's arrays as the dict every program's ``fields`` returns (float64; with
    ``native``, as the kernel wrote them: the arithmetic precision's)."""
    from lbgen.model.catalog import field_names
    return {n: np.asarray(a) if native else np.asarray(a, dtype=np.float64) for n, a in zip(field_names(D), arrays)}


def wall_tau(walls) -> float:
    """The wall rows' relaxation time of a walls description (``Walls.tau_wall``; anything
    without one: 1, the default)."""
    return getattr(walls, "tau_wall", 1.0)


def check_tau_wall(tau_wall) -> float:
    """tau_wall as a float, refused unless a finite real number > 1/2 (the relaxation time
    of the rows next to a thermal wall)."""
    import math
    if isinstance(tau_wall, (bool, np.bool_)) or not isinstance(tau_wall, (int, float, np.integer, np.floating)):
        raise ValueError(f"tau_wall={tau_wall!r} is not a number: the relaxation time of the rows next to "
                         f"a thermal wall, a finite value > 1/2 (1: the default)")
    value = float(tau_wall)
    if not (math.isfinite(value) and value > 0.5):
        raise ValueError(f"tau_wall={value!r} outside its range: the relaxation time of the rows next to a "
                         f"thermal wall must be finite and > 1/2 (1: the default)")
    return value


def ordered_parameters(program, names, params: dict, convert=float) -> list:
    """A collide kernel's parameter values in the order ``names``, for every runtime and D.
    The names are checked once per set of keys and remembered on ``program`` (a run passes the
    same dict every step: no re-validation on the hot path)."""
    if params.keys() != getattr(program, "_checked_keys", None):
        missing = [n for n in names if n not in params]
        extra = [n for n in params if n not in names]
        if missing or extra:
            raise TypeError(f"{program.spec.collision} collide takes parameters {', '.join(names)}; "
                            f"missing {missing}, unexpected {extra}")
        program._checked_keys = set(params)
    return [convert(params[n]) for n in names]


class HostBuffers:
    """Buffers in host memory (numpy, 64-byte aligned): for the backends that run on the CPU."""

    def allocate(self) -> np.ndarray:
        return aligned_zeros(self.layout.size, self.dtype)

    def upload(self, host, buffer=None):
        host = self._check_size(host)
        buf = self.allocate() if buffer is None else buffer
        buf[...] = host
        return buf

    def download(self, buffer):
        return np.array(buffer, dtype=self.dtype, copy=True)

    def _read_range(self, f, offset, out):
        out[...] = f[offset:offset + out.size]

    def _write_range(self, f, offset, data):
        f[offset:offset + data.size] = data
