"""One checkpoint file (``.lbchk``): crash-safe, bit-identical, verified on read.
(Run folders, pieces of several ranks: lbgen.run.checkpoint.)

A checkpoint is an uncompressed ZIP archive, i.e. a plain ``.npz`` that
``np.load(path, allow_pickle=False)`` opens, with two members:

``header.json``
    UTF-8 JSON: ``{"format": "lbgen-checkpoint", "version": 1, "step": int,
    "dtype": "<f8", "shape": [...], "metadata": {...}, "sha256": "hex"}``.
``populations.npy``
    the population array in ``.npy`` format with its exact dtype (no pickle).

The SHA-256 checksum covers, in this order: the tag ``b"lbgen-checkpoint-v1\\n"``,
the canonical JSON (sorted keys, no spaces) of ``{"step", "dtype", "shape",
"metadata"}`` followed by ``b"\\n"``, then the raw C-order bytes of the array.
:func:`read_checkpoint` reads the array bytes straight from the archive (not through
the ZIP layer, whose CRC check would otherwise fire first) and compares checksums, so a
flipped bit anywhere in the data, step or metadata gives a ``checksum mismatch`` error
and a cut-off file gives ``truncated or not a checkpoint``.

Metadata must be JSON-able; it comes back as parsed JSON (tuples become lists).

Writes are atomic: the archive goes to a temporary file in the destination folder,
is flushed and fsync'ed, then ``os.replace``'d over the destination (and the folder
is fsync'ed), so a run killed mid-write leaves the previous checkpoint untouched.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import struct
import zipfile
from pathlib import Path
from typing import Any, BinaryIO, Callable, Iterable, Iterator, Optional, Union

import numpy as np

from lbgen.system.cache import atomic_write

FORMAT_NAME = "lbgen-checkpoint"
FORMAT_VERSION = 1
CHECKPOINT_SUFFIX = ".lbchk"
_HEADER_MEMBER = "header.json"
_DATA_MEMBER = "populations.npy"
_TAG = b"lbgen-checkpoint-v1\n"

PathLike = Union[str, os.PathLike]


class CheckpointError(RuntimeError):
    """A checkpoint file is missing, truncated, corrupt or not a checkpoint."""


# --------------------------------------------------------------------------- helpers
def canonical_json(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


class ChunkedArray:
    """An array a checkpoint writes without holding it: its ``shape``, ``dtype`` and ``chunks``, a
    callable that gives a fresh iterator of arrays whose values, one after the other, are the
    array's in C order (``Simulation.state_chunks``: one population's slab at a time).  It is
    read twice -- the checksum first (the header holds it), then the data -- and the file is
    the one the whole array would give, byte for byte."""

    def __init__(self, shape, dtype, chunks: Callable[[], Iterable[np.ndarray]]):
        self.shape, self.dtype, self.chunks = tuple(int(n) for n in shape), np.dtype(dtype), chunks

    def pieces(self) -> Iterator[np.ndarray]:
        """The chunks, each checked against the dtype and the size they add up to."""
        total = 0
        for a in self.chunks():
            a = np.ascontiguousarray(a)
            if a.dtype != self.dtype:
                raise TypeError(f"a chunk of dtype {a.dtype}; the array's is {self.dtype}")
            total += a.size
            yield a
        if total != math.prod(self.shape):
            raise ValueError(f"the chunks hold {total} values; the array's shape {self.shape} has "
                             f"{math.prod(self.shape)}")


def _pieces(array) -> Iterable[np.ndarray]:
    return array.pieces() if isinstance(array, ChunkedArray) else [np.ascontiguousarray(array)]


def _checksum(array, step: int, metadata: dict) -> str:
    """SHA-256 over tag + canonical JSON of (step, dtype, shape, metadata) + array bytes (an
    array or a ChunkedArray)."""
    described = {"step": int(step), "dtype": array.dtype.str, "shape": list(array.shape), "metadata": metadata}
    h = hashlib.sha256(_TAG)
    h.update(canonical_json(described).encode("utf-8") + b"\n")
    for a in _pieces(array):
        if a.size:
            h.update(memoryview(a.reshape(-1)).cast("B"))
    return h.hexdigest()


def _write_payload(fh: BinaryIO, array, header: bytes) -> None:
    """Write the ZIP archive (header member + .npy member) to an open binary file; a ChunkedArray
    is written chunk by chunk (the .npy header numpy's ``write_array`` gives, then the values)."""
    with zipfile.ZipFile(fh, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf:
        zf.writestr(_HEADER_MEMBER, header)
        with zf.open(_DATA_MEMBER, "w", force_zip64=True) as member:
            if not isinstance(array, ChunkedArray):
                np.lib.format.write_array(member, array, allow_pickle=False)
                return
            np.lib.format.write_array_header_1_0(member, {"descr": np.lib.format.dtype_to_descr(array.dtype),
                                                          "fortran_order": False, "shape": array.shape})
            for a in array.pieces():
                if a.size:
                    member.write(memoryview(a.reshape(-1)).cast("B"))


def checked_array(populations):
    if isinstance(populations, ChunkedArray):
        array = populations
        if array.dtype.hasobject or array.dtype.fields is not None:
            raise TypeError(f"checkpoint arrays must be plain numeric arrays, not dtype {array.dtype}")
        return array
    array = np.asarray(populations)
    if array.dtype.hasobject or array.dtype.fields is not None:
        raise TypeError(f"checkpoint arrays must be plain numeric arrays, not dtype {array.dtype}")
    return np.ascontiguousarray(array)


def checked_step_metadata(step, metadata) -> tuple:
    if isinstance(step, (bool, np.bool_)) or not isinstance(step, (int, np.integer)):
        raise TypeError(f"step must be an integer, not {type(step).__name__}")
    step = int(step)
    if step < 0:
        raise ValueError(f"step must be >= 0, got {step}")
    metadata = {} if metadata is None else metadata
    if not isinstance(metadata, dict):
        raise TypeError(f"metadata must be a dict, not {type(metadata).__name__}")
    try:
        # normalise through JSON so the checksum matches what read_checkpoint will see
        return step, json.loads(canonical_json(metadata))
    except (TypeError, ValueError) as exc:
        raise TypeError(f"checkpoint metadata must be JSON-serialisable: {exc}") from exc


# --------------------------------------------------------------------------- write / read
def write_checkpoint(path: PathLike, populations, step: int, metadata: Optional[dict] = None) -> Path:
    """Atomically write *populations* (exact dtype and shape; an array, or a :class:`ChunkedArray`
    written chunk by chunk), *step* and JSON-able *metadata* to *path*.

    Returns the path written. The previous file at *path*, if any, survives any failure.
    """
    return write_file(path, checked_array(populations), *checked_step_metadata(step, metadata))[0]


def write_file(path: PathLike, array: np.ndarray, step: int, metadata: dict) -> tuple:
    """write_checkpoint of checked arguments; returns ``(path, sha256)``."""
    digest = _checksum(array, step, metadata)
    header = {
        "format": FORMAT_NAME,
        "version": FORMAT_VERSION,
        "step": step,
        "dtype": array.dtype.str,
        "shape": list(array.shape),
        "metadata": metadata,
        "sha256": digest,
    }
    header_bytes = json.dumps(header, indent=1, sort_keys=True).encode("utf-8")
    return atomic_write(path, lambda fh: _write_payload(fh, array, header_bytes)), digest


def _member_data_offset(fh: BinaryIO, info: zipfile.ZipInfo) -> int:
    """Absolute file offset of a stored member's data (after its local file header)."""
    fh.seek(info.header_offset)
    local = fh.read(30)
    if len(local) != 30 or local[:4] != b"PK\x03\x04":
        raise ValueError("bad local file header")
    name_len, extra_len = struct.unpack("<HH", local[26:30])
    return info.header_offset + 30 + name_len + extra_len


def read_verified(path: PathLike):
    """``(populations, step, metadata, sha256)`` of a checkpoint file, verified."""
    path = Path(path)

    def fail(what: str, cause: Optional[BaseException] = None):
        raise CheckpointError(f"checkpoint {path}: {what}") from cause

    if not path.is_file():
        fail("does not exist")
    try:
        zf = zipfile.ZipFile(path, "r")
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
        fail(f"truncated or not a checkpoint ({exc})", exc)
    with zf:
        names = set(zf.namelist())
        if _HEADER_MEMBER not in names or _DATA_MEMBER not in names:
            fail(f"truncated or not a checkpoint (members {sorted(names)}, expected "
                 f"{_HEADER_MEMBER} and {_DATA_MEMBER})")
        try:
            header = json.loads(zf.read(_HEADER_MEMBER).decode("utf-8"))
        except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
            fail(f"corrupt header ({exc})", exc)
        if not isinstance(header, dict) or header.get("format") != FORMAT_NAME:
            fail("truncated or not a checkpoint (header is not an lbgen checkpoint header)")
        if header.get("version") != FORMAT_VERSION:
            fail(f"unsupported checkpoint version {header.get('version')!r} (this reader knows {FORMAT_VERSION})")
        try:
            step = int(header["step"])
            metadata = header["metadata"]
            expected = str(header["sha256"])
            dtype = np.dtype(header["dtype"])
            shape = tuple(int(n) for n in header["shape"])
        except (KeyError, TypeError, ValueError) as exc:
            fail(f"corrupt header ({exc!r})", exc)
        info = zf.getinfo(_DATA_MEMBER)
        if info.compress_type != zipfile.ZIP_STORED:
            fail("unsupported: population member is compressed")
        with open(path, "rb") as fh:
            try:
                start = _member_data_offset(fh, info)
                fh.seek(start)
                version = np.lib.format.read_magic(fh)
                if version == (1, 0):
                    arr_shape, fortran, arr_dtype = np.lib.format.read_array_header_1_0(fh)
                elif version == (2, 0):
                    arr_shape, fortran, arr_dtype = np.lib.format.read_array_header_2_0(fh)
                else:
                    raise ValueError(f"unsupported .npy version {version}")
            except Exception as exc:  # noqa: BLE001 - any parse failure means corruption
                fail(f"corrupt population array header ({exc})", exc)
            if fortran or arr_dtype.hasobject:
                fail("unsupported population array layout")
            if tuple(arr_shape) != shape or arr_dtype != dtype:
                fail(f"header says {dtype.str} {shape} but the array is {arr_dtype.str} {tuple(arr_shape)}")
            data_end = start + info.file_size
            array = np.empty(shape, dtype=dtype)
            nbytes = array.nbytes
            if fh.tell() + nbytes != data_end:
                fail("truncated or not a checkpoint (array size does not match the archive entry)")
            got_bytes = fh.readinto(memoryview(array.reshape(-1)).cast("B")) if nbytes else 0
            if got_bytes != nbytes:
                fail(f"truncated or not a checkpoint (read {got_bytes} of {nbytes} array bytes)")
    got = _checksum(array, step, metadata)
    if got != expected:
        fail(f"checksum mismatch: expected {expected} got {got}")
    return array, step, metadata, got


def is_checkpoint_file(path: PathLike) -> bool:
    """Whether the file *path* has an lbgen checkpoint header (the data is not verified)."""
    try:
        with zipfile.ZipFile(path, "r") as zf:
            header = json.loads(zf.read(_HEADER_MEMBER).decode("utf-8"))
        return isinstance(header, dict) and header.get("format") == FORMAT_NAME
    except (OSError, ValueError, KeyError, zipfile.BadZipFile, EOFError):
        return False
