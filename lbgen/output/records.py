"""What a run folder's manifest records of the files lbgen wrote there -- their list, their
digests, the ones being written -- and reading it back for ``lbgen run --overwrite``, which
removes only what lbgen wrote (lbgen.run.folder)."""
from __future__ import annotations

import os
import re
from pathlib import Path, PurePosixPath
from typing import Optional, Union

from lbgen.output import series as series_mod
from lbgen.output.fields import FIELD_FORMATS, FIELDS_DIR, PVD_NAME, STEM_PATTERN, VTK_DIR
from lbgen.output.manifest import MANIFEST_NAME, read_manifest
from lbgen.output.pictures import FRAMES_DIR, PICTURE_QUANTITIES, PICTURES_DIR

PathLike = Union[str, os.PathLike]
#: manifest.json key: the files (relative paths, '/'-separated) RunOutput wrote into the run
#: folder -- what ``lbgen run --overwrite`` may remove, and nothing else
FILES_KEY = "files"
#: manifest.json key: {relative path: SHA-256} of every file RunOutput wrote, taken right after
#: each write -- ``lbgen run --overwrite`` removes a recorded file only while its content still
#: has that digest (a file the user changed since is kept)
DIGESTS_KEY = "file_sha256"
#: manifest.json key: the files being written now (listed before each write, dropped once its
#: digest is taken): a file a killed run was writing is still its own for --overwrite
WRITING_KEY = "writing"
#: the names RunOutput gives its files (``fields/step-000001000.h5``, ...): for run folders
#: whose manifest has no file list (written by an older lbgen)
OUTPUT_NAME = re.compile("|".join([
    re.escape(MANIFEST_NAME), re.escape(series_mod.SERIES_CSV), re.escape(series_mod.SERIES_PNG),
    rf"{re.escape(FIELDS_DIR)}/step-{STEM_PATTERN}\.(?:{'|'.join(FIELD_FORMATS)})",
    rf"{re.escape(VTK_DIR)}/step-{STEM_PATTERN}\.vti", rf"{re.escape(VTK_DIR)}/{re.escape(PVD_NAME)}",
    rf"{re.escape(PICTURES_DIR)}/(?:{'|'.join(map(re.escape, PICTURE_QUANTITIES))})-{STEM_PATTERN}\.png",
    rf"{re.escape(FRAMES_DIR)}/step-{STEM_PATTERN}\.npz",
    rf"{re.escape(PICTURES_DIR)}/(?:{'|'.join(map(re.escape, PICTURE_QUANTITIES))})-[xyz]{{2}}-{STEM_PATTERN}\.png",
]))


def safe_relative(name) -> Optional[str]:
    """*name* as a '/'-separated path inside a run folder, or None when it could point
    outside it (absolute, '..', empty) or is not a string."""
    if not isinstance(name, str) or not name or "\\" in name or "\0" in name:
        return None
    path = PurePosixPath(name)
    if path.is_absolute() or any(part in ("..", ".", "") for part in name.split("/")):
        return None
    return path.as_posix()


def recorded_digests(run_dir: PathLike) -> Optional[dict]:
    """{relative path: SHA-256} the manifest of *run_dir* records for the files lbgen wrote
    (``DIGESTS_KEY``), or None when it records none (an older lbgen, no or a damaged manifest)."""
    try:
        digests = read_manifest(run_dir).get(DIGESTS_KEY)
    except (OSError, ValueError):
        return None
    if not isinstance(digests, dict):
        return None
    return {rel: d for rel, d in digests.items() if safe_relative(rel) is not None and isinstance(d, str)}


def recorded_writing(run_dir: PathLike) -> set:
    """The files the run in *run_dir* was writing when its manifest was last written (``WRITING_KEY``)."""
    try:
        listed = read_manifest(run_dir).get(WRITING_KEY)
    except (OSError, ValueError):
        return set()
    return {n for n in map(safe_relative, listed) if n is not None} if isinstance(listed, list) else set()


def recorded_files(run_dir: PathLike) -> list[str]:
    """The files of *run_dir* that lbgen wrote there (relative, '/'-separated), for
    ``--overwrite``: the manifest's file list (``"files"``), or -- when the manifest has none
    (an older lbgen), is damaged or missing -- the files present that carry RunOutput's own
    names (``OUTPUT_NAME``).  Paths are checked to stay inside the folder; the manifest
    itself is always included."""
    run_dir = Path(run_dir)
    try:
        listed = read_manifest(run_dir).get(FILES_KEY)
    except (OSError, ValueError):
        listed = None
    if isinstance(listed, list):
        names = [n for n in map(safe_relative, listed) if n is not None]
    else:
        names = []
        for folder in ("", FIELDS_DIR, VTK_DIR, PICTURES_DIR, FRAMES_DIR):
            where = run_dir / folder
            if not where.is_dir():
                continue
            for entry in sorted(where.iterdir()):
                rel = f"{folder}/{entry.name}" if folder else entry.name
                if OUTPUT_NAME.fullmatch(rel) and not entry.is_dir():
                    names.append(rel)
    return list(dict.fromkeys(names + [MANIFEST_NAME]))
