"""The halo slabs of one rank of ``lbgen.parallel.simulation.DistributedSimulation``: where they
are read and written, and how they travel between the ranks (issue 40; seed 003's paths).

A slab (planes lo..hi-1 of one split axis, the other axes over their extended extent) is a
set of flat buffer indices per program of the rank (``parts``: a host + device rank has two).
Host programs (C: ``program.buffers_on_host``) read and write their slabs in place through
those indices.  Device programs (OpenCL, CUDA, the CUDA host shim that stands in for a GPU)
pack each slab on the device with a gather kernel into a contiguous device buffer and unpack
what arrives with a scatter kernel; no whole buffer moves while stepping.  The packed slabs
then travel by one of two paths (``PATHS``):

* ``staged``: each sent slab is copied device -> host (one copy, into a page-locked host
  buffer), sent from there, and each received slab copied host -> device (one copy);
* ``device``: the packed device buffers go to MPI as they are -- CuPy arrays or pycuda GPUArrays to a CUDA-aware
  MPI (``__cuda_array_interface__``), the shim's (host) arrays, an OpenCL buffer mapped into
  host memory on a device that shares it -- no copies at all.

``program.transfers`` counts every copy; ``lbgen.parallel.gpu_model.halo_traffic`` is the
count the model predicts for a path (a test holds the two equal).
"""
from __future__ import annotations

from typing import Callable, List, Optional, Tuple

import numpy as np

#: the halo paths a rank of device programs can take (``auto``: the model chooses)
PATHS = ("staged", "device")
HALO_PATH_CHOICES = ("auto",) + PATHS

_LAUNCH_PATH = "auto"      # ``lbgen run --halo-path`` (set_launch_halo_path)


def set_launch_halo_path(path: str, comm) -> None:
    """``--halo-path`` of ``lbgen run``, a property of the launch (a resume may take another):
    checked before any work; a path other than auto needs mpiexec."""
    global _LAUNCH_PATH
    from lbgen.simulation.parameters import SimulationError
    if path not in HALO_PATH_CHOICES:
        raise SimulationError(f"--halo-path {path!r}: one of {', '.join(HALO_PATH_CHOICES)}")
    if path != "auto" and (comm is None or comm.size == 1):
        raise SimulationError(f"--halo-path {path}: the halo paths are how the ranks of mpiexec -n P lbgen run ... "
                              f"trade their halos; this is a single process (leave it auto)")
    _LAUNCH_PATH = path


def launch_halo_path() -> str:
    """The halo path the CLI was given ('auto' unless --halo-path)."""
    return _LAUNCH_PATH


class HaloSlabs:
    """The slabs of one rank: ``read(d, lo, hi)`` gives the message to send, ``receive(d, lo, hi)``
    the buffer MPI fills, ``write(d, lo, hi, data)`` puts it into the ghost planes.  Messages
    are (Q, *slab shape) in (p, x, y[, z]) order; ``parts(d, lo, hi)`` gives per program of the
    rank (index into ``regions``) its flat indices and the slab's X columns it holds."""

    def __init__(self, regions: list, path: str, Q: int, dtype, parts: Callable, shape: Callable):
        self.regions, self.path, self.Q, self.dtype = regions, path, Q, np.dtype(dtype)
        self.parts, self.shape = parts, shape
        #: copies on the runtimes' copy queues while a sweep runs (the staged path's overlap)
        self.aside = False
        self._device = {}          # (d, lo, hi, part) -> (index on the device, packed slab)
        self._host = {}            # (d, lo, hi, part) -> a page-locked host array of the part
        self._views = []           # (program, slab) handed to MPI (device path), released after the trade

    def _program(self, i: int):
        return self.regions[i][0]

    def _slab(self, key, i, index):
        """(device index, packed device slab) of a part, made once."""
        if key not in self._device:
            prog = self._program(i)
            self._device[key] = (prog.slab_index(index), prog.slab_buffer(index.size))
        return self._device[key]

    def _pinned(self, key, i, n):
        if key not in self._host:
            self._host[key] = self._program(i).slab_host(n)
        return self._host[key]

    def _single(self, d, lo, hi) -> Optional[Tuple[int, np.ndarray]]:
        """(program index, indices) when one device program holds the whole slab, else None."""
        parts = self.parts(d, lo, hi)
        if len(parts) == 1 and not self._program(parts[0][0]).buffers_on_host:
            return parts[0][0], parts[0][1]
        return None

    # --- sending ----------------------------------------------------------------------------
    def read(self, d: int, lo: int, hi: int):
        """The message of a slab: packed on the device and copied to the host (``staged``) or the
        packed device slab itself (``device``); host programs' parts read in place."""
        shape = self.shape(d, lo, hi)
        one = self._single(d, lo, hi)
        if one is not None:
            i, index = one
            prog = self._program(i)
            dev_index, slab = self._slab((d, lo, hi, 0), i, index)
            prog.gather(self.regions[i][1].f, dev_index, slab)
            if self.path == "device":
                view = prog.mpi_view(slab)
                self._views.append((prog, view))
                return view
            host = self._pinned((d, lo, hi, 0), i, index.size)
            prog.slab_to_host(slab, host, aside=self.aside)
            return host.reshape(shape)
        out = np.empty(shape, dtype=self.dtype)
        for k, (i, index, cols) in enumerate(self.parts(d, lo, hi)):
            prog, f = self._program(i), self.regions[i][1].f
            width = (self.Q, cols.stop - cols.start) + shape[2:]
            if prog.buffers_on_host:
                out[:, cols] = f[index].reshape(width)
                continue
            dev_index, slab = self._slab((d, lo, hi, k), i, index)
            prog.gather(f, dev_index, slab)
            host = self._pinned((d, lo, hi, k), i, index.size)
            prog.slab_to_host(slab, host)
            prog.synchronize()
            out[:, cols] = host.reshape(width)
        return out

    def ready(self) -> None:
        """Wait for the queued packs and copies before MPI reads their buffers (``aside``: for the
        copies only, the sweep queued after them runs on)."""
        for prog in {id(p): p for p, *_ in self.regions}.values():
            prog.wait_aside() if self.aside else prog.synchronize()

    # --- receiving ----------------------------------------------------------------------------
    def receive(self, d: int, lo: int, hi: int):
        """Where MPI writes the slab arriving for ghost planes lo..hi-1."""
        shape = self.shape(d, lo, hi)
        one = self._single(d, lo, hi)
        if one is None:
            return np.empty(shape, dtype=self.dtype)
        i, index = one
        if self.path == "device":
            prog = self._program(i)
            view = prog.mpi_view(self._slab((d, lo, hi, 0), i, index)[1])
            self._views.append((prog, view))
            return view
        return self._pinned((d, lo, hi, 0), i, index.size).reshape(shape)

    def release(self) -> None:
        """MPI is done with the device slabs it was handed (device path)."""
        for prog, view in self._views:
            prog.mpi_release(view)
        self._views = []

    def write(self, d: int, lo: int, hi: int, data) -> None:
        """Put an arrived slab into the ghost planes lo..hi-1."""
        one = self._single(d, lo, hi)
        if one is not None:
            i, index = one
            prog = self._program(i)
            dev_index, slab = self._slab((d, lo, hi, 0), i, index)
            if self.path == "staged":
                prog.slab_to_device(self._pinned((d, lo, hi, 0), i, index.size), slab, aside=self.aside)
            prog.scatter(self.regions[i][1].f, dev_index, slab)
            return
        for k, (i, index, cols) in enumerate(self.parts(d, lo, hi)):
            prog, f = self._program(i), self.regions[i][1].f
            values = np.ascontiguousarray(data[:, cols]).ravel()
            if prog.buffers_on_host:
                f[index] = values
                continue
            dev_index, slab = self._slab((d, lo, hi, k), i, index)
            host = self._pinned((d, lo, hi, k), i, index.size)
            host[...] = values
            prog.slab_to_device(host, slab)
            prog.scatter(f, dev_index, slab)


def device_path_problem(programs: List, comm) -> Optional[str]:
    """Why the rank's programs cannot hand their slabs to MPI as they are (None: they can)."""
    if len(programs) > 1:
        return "a host + device rank assembles its messages from two programs on the host"
    for prog in programs:
        if prog.buffers_on_host:
            return f"the {prog.spec.backend} runtime's buffers are host memory, read and written in place"
        why = prog.direct_mpi(comm)
        if why:
            return why
    return None
