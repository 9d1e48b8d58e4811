"""A run folder belongs to one run.

`RunFolder.claim(path, resume=..., overwrite=...)`, before anything is compiled or
allocated:

* checks that the folder can be created and written (clear message, not a PermissionError);
* takes a lock (``.lbgen.lock``, an OS file lock: released by the kernel when the process
  dies) and records the owner (``.lbgen-owner.json``: pid, host, start time); a second run
  into the same folder is refused naming the owner.  An owner record whose lock is free
  was left by a process that died (kill -9): reported as a stale lock and taken over;
* refuses a new run into a folder that already holds one (a manifest or checkpoints)
  unless it resumes it or `overwrite` replaces it: lbgen's own files only -- the files
  the manifest lists as written by the run (``"files"``) whose content still has the
  SHA-256 it recorded (``"file_sha256"``) or that it was writing when it was killed
  (``"writing"``; for a manifest of an older lbgen without digests,
  the files it lists, or without the list the files bearing lbgen's output names), its
  checkpoints (files whose header is an lbgen checkpoint's) and manifest; folders only
  when that leaves them empty.  Anything else a user put there, or changed since lbgen
  wrote it, stays (the note names what was kept);
* refuses a new run (with or without `overwrite`, before anything is removed or written)
  into a folder in which a file lbgen did not write -- or changed since it wrote it -- bears
  a name the run writes (``manifest.json``, ``series.csv``, ``fields/step-*.h5``, ...,
  ``checkpoints/step-*``), naming the files: a run never appends to or replaces a file it
  did not create.  Other files (notes, scripts) are left alone.  A resume refuses, the same
  way, a file under such a name that the run's manifest does not list;
* reports a previous run whose manifest still says "running" (it was killed);
* removes orphan temporary files left by writes that were cut off.

A run that fails before writing anything (its kernels cannot be built, say) gives the folder
back with ``discard_if_unused``: the lock file goes if this claim made it, and a folder this
claim created goes when that leaves it empty, so bad input leaves no trace; a folder that
existed is kept as it was.
"""
from __future__ import annotations

import json
import os
import shlex
import socket
import time
from pathlib import Path
from typing import Callable, List, Optional

from filelock import FileLock, Timeout

from lbgen.run.checkpoint import (CHECKPOINT_DIRNAME, checkpoint_files, is_checkpoint, latest_checkpoint,
                                  list_checkpoints, remove_leftover_pieces)
from lbgen.system.paths import describe_os_error, is_disk_full, writable_folder

LOCK_NAME = ".lbgen.lock"
OWNER_NAME = ".lbgen-owner.json"
MANIFEST = "manifest.json"
#: the folders a run writes into (searched for orphan temporary files; removed by
#: --overwrite only when empty once the run's files are gone)
RUN_FOLDERS = (CHECKPOINT_DIRNAME, "fields", "vtk", "pictures", "frames")


class RunFolderError(ValueError):
    """A run folder that cannot be used by this run; the message says why and what to do."""


def resume_command(out, steps: int, save=None) -> str:
    """The exact command that continues the run folder `out` up to `steps` (and writes the
    --save file `save` at its end)."""
    again = f" --save {shlex.quote(str(save))}" if save else ""
    return f"lbgen run --resume {shlex.quote(str(out))} --steps {steps}{again}"


def write_failure(e: OSError, out, step: int, steps: int, save=None) -> str:
    """The message of a write into run folder `out` (or, with `save`, of the run's --save
    file) that failed at `step` (a full disk, a folder made read-only): what failed, the last
    good checkpoint (older ones are intact: every write is atomic) and the command that
    continues the run (and writes the --save file again)."""
    kept = latest_checkpoint(out, verify=True) if out else None
    reason = "the disk is full: " if is_disk_full(e) else ""
    what = f"the --save file {save}" if save else f"to the run folder {out}"
    if save and str(getattr(e, "filename", "")) == str(save):
        e = OSError(e.errno, e.strerror)         # named once
    return (f"{reason}{describe_os_error(e, what)} at step {step}. "
            + (f"The last good checkpoint is kept: {kept}; after freeing space continue with: "
               f"{resume_command(out, steps, save)}" if kept else "No checkpoint was kept."))


def read_status(path) -> Optional[dict]:
    """The manifest's status, step and start of the run in `path`, or None without one."""
    try:
        data = json.loads((Path(path) / MANIFEST).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    return {"status": data.get("status"), "step": data.get("step"), "written": data.get("written")}


class RunFolder:
    def __init__(self, path):
        self.path = Path(path)
        self._lock = FileLock(str(self.path / LOCK_NAME), timeout=0)
        self.held = False
        #: the folders ``claim`` created (the run folder and its missing parents, deepest
        #: first) and whether ``acquire`` made the lock file: what ``discard_if_unused`` may remove
        self.created: List[Path] = []
        self.lock_created = False

    # --- the lock ----------------------------------------------------------------------
    @property
    def owner_path(self) -> Path:
        return self.path / OWNER_NAME

    def _owner(self) -> Optional[dict]:
        try:
            return json.loads(self.owner_path.read_text())
        except (OSError, ValueError):
            return None

    def acquire(self, echo: Callable[[str], None] = print) -> None:
        if self.held:
            return
        self.lock_created = not (self.path / LOCK_NAME).exists()
        try:
            self._lock.acquire()
        except Timeout:
            owner = self._owner() or {}
            who = (f" (pid {owner.get('pid')} on {owner.get('host')}, started {owner.get('started')})"
                   if owner else "")
            raise RunFolderError(f"run folder {self.path} is in use by another run{who}; wait for it to "
                                 f"finish or choose another --out") from None
        stale = self._owner()
        if stale:
            echo(f"note: {self.path} was left locked by pid {stale.get('pid')} on {stale.get('host')} "
                 f"(started {stale.get('started')}), which ended without releasing it (killed?): a stale "
                 f"lock, taken over")
        self.held = True
        self.owner_path.write_text(json.dumps({"pid": os.getpid(), "host": socket.gethostname(),
                                               "started": time.strftime("%Y-%m-%dT%H:%M:%S%z")}))

    def release(self) -> None:
        if not self.held:
            return
        try:
            self.owner_path.unlink()
        except OSError:
            pass
        self._lock.release(force=True)
        self.held = False

    def discard_if_unused(self) -> bool:
        """After ``release`` of a run that failed before writing: remove the lock file when
        ``acquire`` made it, then the folder when ``claim`` created it and it is empty; True
        when the folder was removed."""
        if self.held:
            return False
        try:
            if self.lock_created:
                (self.path / LOCK_NAME).unlink(missing_ok=True)
            for folder in self.created:
                folder.rmdir()                      # only an empty one; the first that is not stops
        except OSError:
            return False
        return bool(self.created)

    # --- contents ----------------------------------------------------------------------
    def holds_run(self) -> bool:
        return (self.path / MANIFEST).exists() or bool(list_checkpoints(self.path))

    def holds_lbgen_manifest(self) -> bool:
        """Whether the folder's manifest.json is a run's (a JSON object with lbgen's keys)."""
        try:
            data = json.loads((self.path / MANIFEST).read_text())
        except (OSError, ValueError):
            return False
        return isinstance(data, dict) and any(key in data for key in ("config", "status", "files"))

    def run_files(self) -> List[Path]:
        """The files of the previous run that --overwrite removes: what its manifest lists as
        written by it whose content still has the digest the manifest recorded
        (lbgen.output.records.recorded_digests; for an older manifest without digests, what it
        lists, or without the list the files with lbgen's output names), its checkpoints and
        its manifest."""
        return self.ownership()[0]

    def ownership(self):
        """``(owned, changed)``: the previous run's files (``run_files``), and the files its
        manifest lists whose content is no longer what lbgen wrote (relative paths) -- those
        are the user's now and are kept."""
        from lbgen.output.records import recorded_digests, recorded_files, recorded_writing
        from lbgen.system.cache import file_digest
        ours = self.holds_lbgen_manifest()
        digests = recorded_digests(self.path) if ours else None
        writing = recorded_writing(self.path) if ours else set()
        names, changed = [], []
        for rel in recorded_files(self.path) if ours else []:
            path = self.path / rel
            if rel == MANIFEST or digests is None:
                names.append(path)
            elif not path.is_file() or path.is_symlink():
                continue
            elif rel in writing or (rel in digests and file_digest(path) == digests[rel]):
                names.append(path)                  # unchanged, or being written when the run was killed
            else:
                changed.append(rel)
        names += [f for _step, path in list_checkpoints(self.path) if is_checkpoint(path)
                  for f in checkpoint_files(path)]
        if ours:
            names.append(self.path / MANIFEST)
        return list(dict.fromkeys(names)), changed

    def foreign_files(self, owned) -> List[str]:
        """The files in the folder (relative, sorted) that are not in *owned* and not lbgen's
        bookkeeping (the lock, the owner record, temporary files of cut-off writes)."""
        owned = set(owned)
        found = []
        for path in sorted(self.path.rglob("*")):
            rel = path.relative_to(self.path).as_posix()
            if path.is_dir() and not path.is_symlink():
                continue
            if rel in (LOCK_NAME, OWNER_NAME) or (path.name.startswith(".") and path.name.endswith(".tmp")):
                continue
            if path not in owned:
                found.append(rel)
        return found

    def recorded(self) -> List[Path]:
        """Every file the run in the folder may have written: what its manifest lists (listed
        before it is written, so a killed run leaves none unlisted), its checkpoints, its manifest."""
        from lbgen.output.records import recorded_files
        names = [self.path / rel for rel in recorded_files(self.path)]
        names += [f for _step, path in list_checkpoints(self.path) if is_checkpoint(path)
                  for f in checkpoint_files(path)]
        return list(dict.fromkeys(names))

    def check_ownership(self, overwrite: bool, resume: bool = False) -> tuple:
        """Before a run writes anything: ``(owned, kept)``, the previous run's files that
        --overwrite removes and the others, which stay.  RunFolderError, naming them, when a
        file lbgen did not write -- for a new run also one that changed since lbgen wrote it;
        for a resume one its manifest does not list -- bears a name the run writes
        (manifest.json, series.csv, fields/step-*.h5, ...): a run never appends to or replaces
        a file it did not create."""
        from lbgen.output.records import OUTPUT_NAME
        owned, changed = (self.recorded(), []) if resume else self.ownership() if overwrite else ([], [])
        kept = self.foreign_files(owned)
        clash = [rel for rel in kept if OUTPUT_NAME.fullmatch(rel) or rel.startswith(CHECKPOINT_DIRNAME + "/step-")]
        if clash:
            shown = [f"{rel} (changed since lbgen wrote it)" if rel in changed else rel for rel in clash[:5]]
            more = f" and {len(clash) - 5} more" if len(clash) > 5 else ""
            what = f"move them out of {self.path} to continue the run" if resume else \
                f"choose another --out, or move them out of {self.path}"
            raise RunFolderError(f"run folder {self.path} holds files lbgen did not write under the names a run "
                                 f"writes: {', '.join(shown)}{more}; a run never appends to or replaces a file it "
                                 f"did not write: {what}")
        return owned, kept

    def clear(self, files: Optional[List[Path]] = None) -> List[Path]:
        """Remove the previous run's files (*files*, by default ``run_files``) and nothing else:
        a folder goes only when that leaves it empty.  Returns the files removed; the manifest
        goes last, so a clear cut off half-way can be done again."""
        removed = []
        files = self.run_files() if files is None else files
        manifest = self.path / MANIFEST
        for path in [p for p in files if p != manifest] + [manifest] * (manifest in files):
            if path.is_dir() and not path.is_symlink():
                continue                                   # never a folder's contents
            try:
                path.unlink()
                removed.append(path)
            except FileNotFoundError:
                continue
        folders = {p.parent for p in files} | {self.path / name for name in RUN_FOLDERS}
        root = self.path.resolve()
        for folder in sorted(folders, key=lambda p: len(p.parts), reverse=True):
            while folder.resolve() != root and root in folder.resolve().parents:
                try:
                    folder.rmdir()                         # only when empty
                except OSError:
                    break
                folder = folder.parent
        return removed

    def remove_orphans(self) -> List[Path]:
        """Delete the temporary files of writes that were cut off (``.<name>.*.tmp``), and the
        temporary folders of checkpoint pieces (``.step-N.lbpieces.*.tmp``)."""
        removed = []
        for folder in (self.path, *(self.path / name for name in RUN_FOLDERS)):
            if not folder.is_dir():
                continue
            for entry in folder.iterdir():
                if entry.name.startswith(".") and entry.name.endswith(".tmp") and entry.is_file():
                    try:
                        entry.unlink()
                        removed.append(entry)
                    except OSError:
                        pass
        return removed + remove_leftover_pieces(self.path / CHECKPOINT_DIRNAME)

    # --- the whole check ---------------------------------------------------------------
    @classmethod
    def claim(cls, path, resume: bool = False, overwrite: bool = False,
              echo: Callable[[str], None] = print) -> "RunFolder":
        """Check, lock and prepare `path` for a new run (or the resumed one); see the module."""
        target = Path(path).absolute()
        missing = [p for p in (target, *target.parents) if not p.exists()]
        writable_folder(path, "run folder" if resume else "--out")
        folder = cls(path)
        folder.created = missing
        folder.acquire(echo)
        try:
            status = read_status(folder.path)
            died = status is not None and status["status"] == "running"
            if not resume and folder.holds_run() and not overwrite:
                if (folder.path / MANIFEST).exists() and not folder.holds_lbgen_manifest():
                    raise RunFolderError(f"run folder {folder.path} holds a {MANIFEST} that lbgen did not write; a "
                                         f"run never replaces a file it did not write: choose another --out, or "
                                         f"move it out of {folder.path}")
                what = (f"a run (status {status['status']!r} at step {status['step']}"
                        f"{', its process is gone' if died else ''})" if status else "checkpoints of a run")
                raise RunFolderError(f"run folder {folder.path} already holds {what}; continue it with "
                                     f"--resume {folder.path}, choose another --out, or give --overwrite "
                                     f"to replace it")
            owned, kept = folder.check_ownership(overwrite, resume)     # before anything is removed or written
            if not resume:
                if overwrite and folder.holds_run():
                    removed = folder.clear(owned)
                    shown = ", ".join(kept[:5]) + (f" and {len(kept) - 5} more" if len(kept) > 5 else "")
                    echo(f"note: --overwrite: removed the previous run's {len(removed)} file(s) from {folder.path}"
                         + (f"; kept {len(kept)} file(s) lbgen did not write or that changed since: {shown}"
                            if kept else ""))
            elif resume and died:
                echo(f"note: the previous run in {folder.path} did not end cleanly (its manifest still says "
                     f"'running' at step {status['step']}: killed?); resuming from its newest good checkpoint")
            orphans = folder.remove_orphans()
            if orphans:
                echo(f"note: removed {len(orphans)} temporary file(s) left by interrupted writes in {folder.path}")
        except BaseException:
            folder.release()
            folder.discard_if_unused()
            raise
        return folder
