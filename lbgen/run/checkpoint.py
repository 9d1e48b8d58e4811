"""Checkpoints of a run: its folder of checkpoints, and pieces written by several ranks.
One checkpoint file's format: lbgen.run.checkpoint_file.

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
import tempfile
from pathlib import Path
from typing import Optional

import numpy as np

from lbgen.run.checkpoint_file import (CHECKPOINT_SUFFIX, FORMAT_VERSION, CheckpointError, ChunkedArray, PathLike, canonical_json,
                                       checked_array, checked_step_metadata, is_checkpoint_file, read_verified,
                                       write_checkpoint, write_file)
from lbgen.system.cache import atomic_write_bytes, fsync_dir

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

CHECKPOINT_DIRNAME = "checkpoints"
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


# --------------------------------------------------------------------------- read
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
    array, step, metadata, _ = read_verified(path)
    return array, step, metadata



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
        return is_checkpoint_file(path)
    except (OSError, ValueError):
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
    return hashlib.sha256(canonical_json(body).encode("utf-8")).hexdigest()


def _finite(array) -> bool:
    """Every value of an array or a ``ChunkedArray`` (its chunks one at a time) finite."""
    chunks = array.pieces() if isinstance(array, ChunkedArray) else [array]
    return all(np.isfinite(a).all() for a in chunks)


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
        step, metadata = checked_step_metadata(step, metadata)
        arrays = [(tuple(int(o) for o in offset), checked_array(a)) for offset, a in pieces]
    except (TypeError, ValueError) as exc:
        error = exc
    _agree(comm, error)
    sick = [r for r, ok in enumerate(_allgather(comm, all(_finite(a) for _, a in arrays))) if not ok]
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
                _, digest = write_file(tmp / name, a, step, own)
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
        a, step, meta, got = read_verified(self.path / name)
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
