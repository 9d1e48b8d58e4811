"""Crash-safe, bit-identical checkpoints of the population array.

File format (``.lbchk``)
------------------------
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

Pieces (``.lbpieces`` folder, written by several MPI ranks)
------------------------------------------------------------
``step-000001000.lbpieces/`` holds one ``piece-<offset>.lbchk`` per block (the format
above: the block's (Q, wx, wy[, wz]) populations in the plain, layout-independent order,
its metadata ``{"offset": [...], "extent": [...]}`` and the run's ``identity_sha256``, see
lbgen.run.identity), each written by the rank that owns
the block, and ``manifest.json`` written by rank 0 last: ``{"format":
"lbgen-checkpoint-pieces", "version": 1, "step", "dtype", "shape": [Q, LX, LY(, LZ)],
"grid": [PX, PY(, PZ)], "velocity_set", "metadata", "pieces": [{"file", "offset",
"extent", "sha256"}], "sha256"}`` -- every piece's checksum (the one in its header), and
the SHA-256 of the manifest's canonical JSON without that last key.

:func:`write_pieces` (collective): every rank checks that its blocks are finite and no
rank writes unless all are; the pieces go to a temporary folder beside the destination,
the ranks agree that all pieces are written (a barrier), then rank 0 writes the manifest
and renames the folder into place.  :class:`CheckpointPieces` reads the manifest and
:meth:`CheckpointPieces.read` assembles any box from the pieces that overlap it only, each
verified against its own checksum and the manifest's; :func:`read_checkpoint` on a pieces
folder assembles the whole lattice (one process resuming a checkpoint of several).
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import struct
import tempfile
import zipfile
from pathlib import Path
from typing import Any, BinaryIO, Optional, Union

import numpy as np

from lbgen.system.cache import atomic_write, atomic_write_bytes, fsync_dir

__all__ = [
    "CheckpointError",
    "write_checkpoint",
    "read_checkpoint",
    "checkpoint_path",
    "list_checkpoints",
    "latest_checkpoint",
    "prune_checkpoints",
    "CHECKPOINT_SUFFIX",
    "PIECES_SUFFIX",
    "pieces_path",
    "write_pieces",
    "CheckpointPieces",
    "checkpoint_files",
    "is_checkpoint",
    "remove_leftover_pieces",
]

FORMAT_NAME = "lbgen-checkpoint"
FORMAT_VERSION = 1
CHECKPOINT_SUFFIX = ".lbchk"
CHECKPOINT_DIRNAME = "checkpoints"
_HEADER_MEMBER = "header.json"
_DATA_MEMBER = "populations.npy"
_TAG = b"lbgen-checkpoint-v1\n"
PIECES_FORMAT = "lbgen-checkpoint-pieces"
PIECES_SUFFIX = ".lbpieces"
PIECES_MANIFEST = "manifest.json"
#: the metadata key of a run's identity digest (lbgen.run.identity.IDENTITY_DIGEST_KEY): a pieces
#: checkpoint's manifest and every one of its pieces carry it
RUN_KEY = "identity_sha256"
_NAME_RE = re.compile(r"^step-(\d+)" + re.escape(CHECKPOINT_SUFFIX) + r"$")
_PIECES_RE = re.compile(r"^step-(\d+)" + re.escape(PIECES_SUFFIX) + r"$")
#: the temporary folders of write_pieces: being written (.tmp), or a replaced step's (.old)
_LEFTOVER_RE = re.compile(r"^\.step-\d+" + re.escape(PIECES_SUFFIX) + r"\..+\.(tmp|old)$")

PathLike = Union[str, os.PathLike]


class CheckpointError(RuntimeError):
    """A checkpoint file is missing, truncated, corrupt or not a checkpoint."""


# --------------------------------------------------------------------------- helpers
def _canonical_json(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def _checksum(array: np.ndarray, step: int, metadata: dict) -> str:
    """SHA-256 over tag + canonical JSON of (step, dtype, shape, metadata) + array bytes."""
    a = np.ascontiguousarray(array)
    described = {"step": int(step), "dtype": a.dtype.str, "shape": list(a.shape), "metadata": metadata}
    h = hashlib.sha256(_TAG)
    h.update(_canonical_json(described).encode("utf-8") + b"\n")
    if a.size:
        h.update(memoryview(a.reshape(-1)).cast("B"))
    return h.hexdigest()


def _write_payload(fh: BinaryIO, array: np.ndarray, header: bytes) -> None:
    """Write the ZIP archive (header member + .npy member) to an open binary file."""
    with zipfile.ZipFile(fh, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf:
        zf.writestr(_HEADER_MEMBER, header)
        with zf.open(_DATA_MEMBER, "w", force_zip64=True) as member:
            np.lib.format.write_array(member, array, allow_pickle=False)


def _checked_array(populations) -> np.ndarray:
    array = np.asarray(populations)
    if array.dtype.hasobject or array.dtype.fields is not None:
        raise TypeError(f"checkpoint arrays must be plain numeric arrays, not dtype {array.dtype}")
    return np.ascontiguousarray(array)


def _checked_step_metadata(step, metadata) -> tuple:
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
        return step, json.loads(_canonical_json(metadata))
    except (TypeError, ValueError) as exc:
        raise TypeError(f"checkpoint metadata must be JSON-serialisable: {exc}") from exc


# --------------------------------------------------------------------------- write / read
def write_checkpoint(path: PathLike, populations: np.ndarray, step: int, metadata: Optional[dict] = None) -> Path:
    """Atomically write *populations* (exact dtype and shape), *step* and JSON-able *metadata* to *path*.

    Returns the path written. The previous file at *path*, if any, survives any failure.
    """
    return _write(path, _checked_array(populations), *_checked_step_metadata(step, metadata))[0]


def _write(path: PathLike, array: np.ndarray, step: int, metadata: dict) -> tuple:
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


def read_checkpoint(path: PathLike):
    """Read and verify a checkpoint; returns ``(populations, step, metadata)``.

    Raises :class:`CheckpointError` naming the file when it is missing, truncated,
    not a checkpoint, of an unknown version, or fails its checksum.  A pieces folder
    (``.lbpieces``) gives the whole lattice assembled from every piece.
    """
    if Path(path).is_dir():
        saved = CheckpointPieces(path)
        whole = saved.read((0,) * len(saved.lattice), saved.lattice)
        return whole, saved.step, saved.metadata
    array, step, metadata, _ = _read_verified(path)
    return array, step, metadata


def _read_verified(path: PathLike):
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


# --------------------------------------------------------------------------- run directories
def checkpoint_path(run_dir: PathLike, step: int) -> Path:
    """``run_dir/checkpoints/step-000001000.lbchk``."""
    return Path(run_dir) / CHECKPOINT_DIRNAME / f"step-{int(step):09d}{CHECKPOINT_SUFFIX}"


def pieces_path(run_dir: PathLike, step: int) -> Path:
    """``run_dir/checkpoints/step-000001000.lbpieces`` (a folder of pieces, several ranks)."""
    return Path(run_dir) / CHECKPOINT_DIRNAME / f"step-{int(step):09d}{PIECES_SUFFIX}"


def list_checkpoints(run_dir: PathLike) -> list[tuple[int, Path]]:
    """``(step, path)`` of every checkpoint in ``run_dir/checkpoints`` (files and pieces
    folders), ascending by step."""
    folder = Path(run_dir) / CHECKPOINT_DIRNAME
    if not folder.is_dir():
        return []
    found = []
    for entry in folder.iterdir():
        m = _NAME_RE.match(entry.name)
        if m and entry.is_file():
            found.append((int(m.group(1)), entry))
        m = _PIECES_RE.match(entry.name)
        if m and entry.is_dir():
            found.append((int(m.group(1)), entry))
    found.sort(key=lambda item: item[0])
    return found


def latest_checkpoint(run_dir: PathLike, verify: bool = False) -> Optional[Path]:
    """The checkpoint with the highest step in *run_dir*, or None.

    With ``verify=True`` each candidate (highest first) is read and checked, and corrupt
    ones are skipped; by default the highest-numbered name is returned unchecked.
    """
    for _step, path in reversed(list_checkpoints(run_dir)):
        if not verify:
            return path
        try:
            if path.is_dir():
                CheckpointPieces(path).verify()       # one piece in memory at a time
            else:
                read_checkpoint(path)
        except CheckpointError:
            continue
        return path
    return None


def is_checkpoint(path: PathLike) -> bool:
    """Whether *path* is an lbgen checkpoint by its header (a file's ``header.json``, a pieces
    folder's manifest) -- what ``lbgen run --overwrite`` may remove; the data is not verified."""
    path = Path(path)
    try:
        if path.is_dir():
            m = json.loads((path / PIECES_MANIFEST).read_text(encoding="utf-8"))
            return isinstance(m, dict) and m.get("format") == PIECES_FORMAT
        with zipfile.ZipFile(path, "r") as zf:
            header = json.loads(zf.read(_HEADER_MEMBER).decode("utf-8"))
        return isinstance(header, dict) and header.get("format") == FORMAT_NAME
    except (OSError, ValueError, KeyError, zipfile.BadZipFile, EOFError):
        return False


def checkpoint_files(path: PathLike) -> list[Path]:
    """The files a checkpoint consists of: the file, or a pieces folder's manifest (first:
    without it the folder is no longer a checkpoint) and pieces -- its own names only."""
    path = Path(path)
    if not path.is_dir():
        return [path]
    pieces = sorted(p for p in path.iterdir() if p.name.startswith("piece-") and p.name.endswith(CHECKPOINT_SUFFIX))
    return [path / PIECES_MANIFEST] + pieces


def remove_leftover_pieces(folder: PathLike) -> list[Path]:
    """Delete the temporary folders of pieces writes that were cut off in *folder*
    (``.step-N.lbpieces.*.tmp``, ``.old``); returns them."""
    folder, removed = Path(folder), []
    if folder.is_dir():
        for entry in folder.iterdir():
            if _LEFTOVER_RE.match(entry.name) and entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry, ignore_errors=True)
                removed.append(entry)
    return removed


def prune_checkpoints(run_dir: PathLike, keep: int = 2) -> list[Path]:
    """Delete all but the *keep* highest-step checkpoints; returns the removed paths."""
    if keep < 0:
        raise ValueError(f"keep must be >= 0, got {keep}")
    found = list_checkpoints(run_dir)
    doomed = found[: max(len(found) - keep, 0)]
    removed = []
    for _step, path in doomed:
        try:
            if path.is_dir():
                shutil.rmtree(path)
            else:
                path.unlink()
            removed.append(path)
        except FileNotFoundError:
            pass
    return removed


# --------------------------------------------------------------------------- pieces (several ranks)
def _allgather(comm, value) -> list:
    return [value] if comm is None else comm.allgather(value)


def _agree(comm, error: Optional[BaseException]) -> None:
    if comm is None:
        if error is not None:
            raise error
        return
    from lbgen.parallel.mpi import agree
    agree(comm, error)


def _piece_name(offset) -> str:
    return "piece-" + "-".join(f"{int(o):06d}" for o in offset) + CHECKPOINT_SUFFIX


def _grid_blocks(lattice, grid) -> set:
    """The (offset, extent) of every block of the lattice over the grid (lbgen.parallel.mpi's split)."""
    import itertools
    from lbgen.parallel.decomposition import slab_starts, slab_widths
    axes = [list(zip(slab_starts(n, p), slab_widths(n, p))) for n, p in zip(lattice, grid)]
    return {(tuple(o for o, _ in box), tuple(w for _, w in box)) for box in itertools.product(*axes)}


def _manifest_digest(manifest: dict) -> str:
    body = {k: v for k, v in manifest.items() if k != "sha256"}
    return hashlib.sha256(_canonical_json(body).encode("utf-8")).hexdigest()


def write_pieces(path: PathLike, pieces, step: int, *, grid, lattice, velocity_set: str,
                 metadata: Optional[dict] = None, comm=None) -> Path:
    """Write a pieces checkpoint folder at *path* (collective over *comm*; None: one process).

    *pieces*: this rank's ``[(offset, populations)]`` (``state_pieces()`` of a distributed
    simulation: the global offset of a block and its (Q, wx, wy[, wz]) populations);
    *grid*: the ranks grid, *lattice*: the global sizes.  No rank writes anything unless the
    populations of every rank are finite; the folder appears (atomically renamed) only
    after every rank has written its pieces and rank 0 the manifest.  Returns the path.
    """
    path = Path(path)
    rank = 0 if comm is None else comm.rank
    error, arrays = None, []
    try:
        step, metadata = _checked_step_metadata(step, metadata)
        arrays = [(tuple(int(o) for o in offset), _checked_array(a)) for offset, a in pieces]
    except (TypeError, ValueError) as exc:
        error = exc
    _agree(comm, error)
    sick = [r for r, ok in enumerate(_allgather(comm, all(np.isfinite(a).all() for _, a in arrays))) if not ok]
    if sick:
        from lbgen.parallel.mpi import collective
        raise collective(CheckpointError(
            f"checkpoint {path}: not written: the populations of rank{'s' if len(sick) > 1 else ''} "
            f"{', '.join(map(str, sick))} are not finite (NaN/Inf); no rank wrote a piece"))

    def make_folder():
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.exists() and not (path.is_dir() and (path / PIECES_MANIFEST).is_file()):
            raise CheckpointError(f"checkpoint {path}: exists and is not a pieces checkpoint; not replaced")
        return tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    from lbgen.parallel.mpi import root_call
    tmp = Path(root_call(comm, make_folder, share=True))
    try:
        error, mine = None, []
        try:
            for offset, a in arrays:
                extent, name = list(a.shape[1:]), _piece_name(offset)
                own = {"offset": list(offset), "extent": extent}
                if RUN_KEY in metadata:            # every piece names its run (lbgen.run.identity)
                    own[RUN_KEY] = metadata[RUN_KEY]
                _, digest = _write(tmp / name, a, step, own)
                mine.append({"file": name, "offset": list(offset), "extent": extent, "dtype": a.dtype.str,
                             "channels": a.shape[0], "sha256": digest})
        except Exception as exc:  # noqa: BLE001 - made collective
            error = exc
        _agree(comm, error)                        # the barrier: every piece is on disk
        described = [d for part in _allgather(comm, mine) for d in part]

        def finish():
            kinds = {(d.pop("dtype"), d.pop("channels")) for d in described}
            if len(kinds) != 1:
                raise CheckpointError(f"checkpoint {path}: the ranks' populations differ in dtype or Q "
                                      f"({sorted(kinds)})")
            dtype, q = kinds.pop()
            shape = [q] + [int(n) for n in lattice]
            boxes = {(tuple(d["offset"]), tuple(d["extent"])) for d in described}
            if boxes != _grid_blocks(lattice, grid) or len(described) != len(boxes):
                raise CheckpointError(f"checkpoint {path}: the pieces do not tile the {'x'.join(map(str, lattice))} "
                                      f"lattice as the grid {'x'.join(map(str, grid))} does")
            manifest = {"format": PIECES_FORMAT, "version": FORMAT_VERSION, "step": step, "dtype": dtype,
                        "shape": shape, "grid": [int(p) for p in grid], "velocity_set": str(velocity_set),
                        "metadata": metadata, "pieces": sorted(described, key=lambda d: d["file"])}
            manifest["sha256"] = _manifest_digest(manifest)
            atomic_write_bytes(tmp / PIECES_MANIFEST, json.dumps(manifest, indent=1, sort_keys=True).encode("utf-8"))
            fsync_dir(tmp)
            old = None
            if path.exists():      # the same step written again: swap, then remove the old folder
                old = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".old", dir=path.parent))
                os.replace(path, old / path.name)
            os.replace(tmp, path)
            fsync_dir(path.parent)
            if old is not None:
                shutil.rmtree(old)
        root_call(comm, finish)
    except BaseException:
        if rank == 0:
            shutil.rmtree(tmp, ignore_errors=True)
        raise
    return path


class CheckpointPieces:
    """A pieces checkpoint folder, its manifest read and verified (the pieces are read by
    :meth:`read`).  ``step``, ``metadata``, ``dtype``, ``shape`` (Q, LX, LY[, LZ]),
    ``lattice`` (LX, LY[, LZ]), ``grid``, ``velocity_set``; ``files_read``: the pieces read
    so far (names), in order."""

    def __init__(self, path: PathLike):
        self.path = Path(path)
        where = self.path / PIECES_MANIFEST

        def fail(what: str, cause: Optional[BaseException] = None):
            raise CheckpointError(f"checkpoint {where}: {what}") from cause
        if not where.is_file():
            fail("does not exist")
        try:
            m = json.loads(where.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            fail(f"truncated or not a pieces manifest ({exc})", exc)
        if not isinstance(m, dict) or m.get("format") != PIECES_FORMAT:
            fail("not a pieces manifest")
        if m.get("version") != FORMAT_VERSION:
            fail(f"unsupported checkpoint version {m.get('version')!r} (this reader knows {FORMAT_VERSION})")
        if m.get("sha256") != _manifest_digest(m):
            fail(f"checksum mismatch: expected {m.get('sha256')} got {_manifest_digest(m)}")
        try:
            self.step, self.metadata = int(m["step"]), m["metadata"]
            self.dtype = np.dtype(m["dtype"])
            self.shape = tuple(int(n) for n in m["shape"])
            self.lattice, self.grid = self.shape[1:], tuple(int(p) for p in m["grid"])
            self.velocity_set = m["velocity_set"]
            self.pieces = [(str(d["file"]), tuple(d["offset"]), tuple(d["extent"]), str(d["sha256"]))
                           for d in m["pieces"]]
        except (KeyError, TypeError, ValueError) as exc:
            fail(f"corrupt manifest ({exc!r})", exc)
        if {(o, e) for _, o, e, _ in self.pieces} != _grid_blocks(self.lattice, self.grid):
            fail(f"its pieces do not tile the {'x'.join(map(str, self.lattice))} lattice over the grid "
                 f"{'x'.join(map(str, self.grid))}")
        self.files_read: list = []

    def read(self, offset, extent) -> np.ndarray:
        """The (Q, *extent) populations of the box at *offset*, from the pieces that overlap
        it only; each piece is verified (its checksum, the manifest's) before it is used."""
        offset, extent = tuple(int(o) for o in offset), tuple(int(e) for e in extent)
        if len(offset) != len(self.lattice) or len(extent) != len(self.lattice) or any(
                o < 0 or e < 1 or o + e > n for o, e, n in zip(offset, extent, self.lattice)):
            raise CheckpointError(f"checkpoint {self.path}: the box at {offset} of {extent} sites lies outside "
                                  f"its {'x'.join(map(str, self.lattice))} lattice")
        out = np.empty((self.shape[0],) + extent, dtype=self.dtype)
        for name, o, e, digest in self.pieces:
            lo = [max(a, b) for a, b in zip(o, offset)]
            hi = [min(a + n, b + m) for a, n, b, m in zip(o, e, offset, extent)]
            if any(h <= l for l, h in zip(lo, hi)):
                continue
            a = self._piece(name, e, digest)
            src = (slice(None),) + tuple(slice(l - p, h - p) for l, h, p in zip(lo, hi, o))
            dst = (slice(None),) + tuple(slice(l - p, h - p) for l, h, p in zip(lo, hi, offset))
            out[dst] = a[src]
        return out

    def _piece(self, name: str, extent: tuple, digest: str) -> np.ndarray:
        """A piece's populations, verified: its own checksum, then the manifest's digest."""
        a, step, meta, got = _read_verified(self.path / name)
        self.files_read.append(name)
        run = self.metadata.get(RUN_KEY) if isinstance(self.metadata, dict) else None
        if isinstance(meta, dict) and meta.get(RUN_KEY, run) != run:
            raise CheckpointError(f"checkpoint {self.path / name}: a piece of another run (run identity "
                                  f"{str(meta.get(RUN_KEY))[:12]}..., the manifest's {str(run)[:12]}...)")
        if got != digest or a.shape != (self.shape[0],) + extent or a.dtype != self.dtype or step != self.step:
            raise CheckpointError(f"checkpoint {self.path / name}: does not belong to this checkpoint (digest "
                                  f"{got}, shape {a.shape}, step {step}; the manifest says {digest}, "
                                  f"{(self.shape[0],) + extent}, {self.step})")
        return a

    def verify(self) -> None:
        """Verify every piece, one at a time in memory (CheckpointError naming the first bad one)."""
        for name, _o, e, digest in self.pieces:
            self._piece(name, e, digest)
