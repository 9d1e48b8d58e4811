"""A run's identity: every input that determines its trajectory, carried by every checkpoint.

The identity is the run options marked ``identity`` in the one table of run options
(``lbgen.run.options.SCHEMA``: the set-up and its amplitude and seed, the lattice, the
velocity set, the operator and its parameters, gravity, the walls and lids, the precision)
with their values, in the table's order, followed by the digests of the files whose
*content* starts the run (``CONTENT``: the ``--init`` fields, the ``--geometry`` mask).
How a run is computed (backend, layout, threads, time block) and what it writes (cadences,
pictures) are not part of it.

Every checkpoint (one file, and the manifest and every piece of a pieces folder) stores the
identity itself (``"identity"``: so that a refusal can name the option) and its SHA-256
(``"identity_sha256"``).  ``check_checkpoint`` refuses to resume a checkpoint of another run,
naming the first option that differs and both values.

A checkpoint written before identities were recorded carries its run's whole configuration
(``"config"``): its identity is derived from that, and compared the same way, except for the
``--init`` file's content, which it did not record (a note says so).  A checkpoint with
neither is refused: nothing says which run it belongs to.
"""
from __future__ import annotations

import hashlib
import json
from typing import Any, Callable, Dict, Optional

from lbgen.run.checkpoint import RUN_KEY as IDENTITY_DIGEST_KEY
from lbgen.simulation.parameters import SimulationError

#: the identity's content digests: RunConfig field -> what it is the digest of
CONTENT = {"init_digest": "the --init file's content", "geometry_digest": "the --geometry file's content"}
IDENTITY_KEY = "identity"


class CheckpointIdentityError(SimulationError):
    """A checkpoint that belongs to another run (or says nothing about its run)."""


def _canonical(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def run_identity(cfg) -> Dict[str, Any]:
    """The identity of the run ``cfg`` (a RunConfig) as JSON values, in the options' order."""
    from lbgen.run.options import OPTIONS
    flat = cfg.flat()
    identity = {key: flat[key] for key, option in OPTIONS.items() if option.identity and key in flat}
    identity.update({field: getattr(cfg, field) for field in CONTENT})
    return json.loads(json.dumps(identity))


def identity_digest(identity: Dict[str, Any]) -> str:
    """SHA-256 of the identity's canonical JSON."""
    return hashlib.sha256(_canonical(identity).encode("utf-8")).hexdigest()


def identity_metadata(cfg) -> Dict[str, Any]:
    """The checkpoint metadata that carries the run's identity."""
    identity = run_identity(cfg)
    return {IDENTITY_KEY: identity, IDENTITY_DIGEST_KEY: identity_digest(identity)}


def _show(value) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, float):
        return f"{value:g}" if abs(value) >= 1e-4 or value == 0 else repr(value)
    if isinstance(value, list):
        return ",".join(_show(v) for v in value)
    if isinstance(value, dict):
        return "; ".join(f"{k}={_show(v)}" for k, v in value.items())
    return str(value)


def describe(key: str, there, here) -> str:
    """'--amplitude 0.1 in the checkpoint, 0.2 in this run'."""
    from lbgen.run.options import OPTIONS
    if key in CONTENT:
        short = [v[:12] + "..." if isinstance(v, str) else _show(v) for v in (there, here)]
        return f"{CONTENT[key]} (sha256 {short[0]} in the checkpoint, {short[1]} in this run)"
    option = OPTIONS.get(key)
    name = "the set-up" if key == "setup" else option.flag_name if option is not None and option.cli else key
    return f"{name} {_show(there)} in the checkpoint, {_show(here)} in this run"


def first_difference(saved: Dict[str, Any], now: Dict[str, Any], skip=()) -> Optional[str]:
    """The first key (the options' order) whose value differs, or None."""
    for key in list(now) + [k for k in saved if k not in now]:
        if key not in skip and saved.get(key) != now.get(key):
            return key
    return None


def check_checkpoint(meta: Dict[str, Any], cfg, name: str, run_dir, echo: Callable[[str], None] = print) -> None:
    """Refuse (CheckpointIdentityError) to continue the run ``cfg`` from the checkpoint
    ``name`` of ``run_dir`` whose metadata ``meta`` records another run: the message names the
    first option that differs and both values.  An older checkpoint is checked through its
    recorded configuration (see the module)."""
    now = run_identity(cfg)
    saved = meta.get(IDENTITY_KEY)
    skip: tuple = ()
    if not isinstance(saved, dict):
        config = meta.get("config")
        if not isinstance(config, dict):
            raise CheckpointIdentityError(
                f"cannot resume {run_dir}: its checkpoint {name} records neither the run's identity nor its options, "
                f"so nothing says that it belongs to this run; start a new run (another --out)")
        from lbgen.run.config import RunConfig
        try:
            saved = run_identity(RunConfig.from_json(config))
        except (ValueError, TypeError) as e:
            raise CheckpointIdentityError(
                f"cannot resume {run_dir}: its checkpoint {name} was written by an lbgen that recorded no run "
                f"identity, and its recorded options cannot be read ({e}); start a new run (another --out)") from None
        skip = tuple(k for k in CONTENT if saved.get(k) is None)
        echo(f"note: checkpoint {name} was written by an older lbgen without a run identity: checked against the "
             f"options it recorded" + (" (the --init file's content was not recorded: not checked)"
                                       if "init_digest" in skip and cfg.init else ""))
    elif meta.get(IDENTITY_DIGEST_KEY) not in (None, identity_digest(saved)):
        raise CheckpointIdentityError(f"cannot resume {run_dir}: its checkpoint {name} has a damaged run identity "
                                      f"(its digest does not match); start a new run (another --out)")
    key = first_difference(saved, now, skip)
    if key is not None:
        raise CheckpointIdentityError(
            f"cannot resume {run_dir}: its checkpoint {name} was written by another run: "
            f"{describe(key, saved.get(key), now.get(key))} (manifest.json). A checkpoint continues only the run "
            f"that wrote it: put back the run's own checkpoints, or start a new run (another --out)")


def check_manifest(meta: Dict[str, Any], cfg, name: str, run_dir) -> None:
    """Refuse (SimulationError naming each option and both values) a resume whose manifest.json
    no longer describes the run that wrote the checkpoint ``name`` (its recorded ``config``):
    an option that may not change on resume, other than those construction resolves, edited by
    hand (``strict``, ``backend``, ...; the identity is checked by ``check_checkpoint``)."""
    written = meta.get("config")
    if not isinstance(written, dict):
        return
    from lbgen.run.config import RunConfig
    from lbgen.run.options import OPTIONS
    try:
        flat_then = RunConfig.from_json(written).flat()
    except ValueError:        # written by another lbgen version: its identity is checked by check_checkpoint
        return
    flat_now = cfg.flat()
    edited = [k for k in flat_now if k in OPTIONS and not OPTIONS[k].resumable
              and k not in RunConfig.RESOLVED + ("out",) and flat_now[k] != flat_then.get(k)]
    if edited:
        raise SimulationError(
            f"cannot resume {run_dir}: its manifest.json differs from the run that wrote the checkpoint {name} in "
            + ", ".join(f"{k} ({flat_then.get(k)!r} there, {flat_now[k]!r} in the manifest)" for k in edited)
            + "; was the manifest edited? Restore it, or start a new run")
