"""`lbgen emit`: write self-contained kernel sources for embedding in other codes."""
from __future__ import annotations

from pathlib import Path
from typing import Dict, Optional

from .codegen import KernelSpec, emit_files
from .model.walls import DEFAULT_SCHEME


def default_output_dir(spec: KernelSpec) -> Path:
    """generated/<backend>/<layout tag>[-<precision>][-<collision>][-wall-<scheme>] under the current directory.

    The defaults (double precision, BGK) add no suffix, so the canonical folders checked
    into the repository (generated/c/caosoa-vl8, ...) are exactly what this writes.
    """
    spec = spec.validate()
    name = spec.tag
    if spec.precision != "double":
        name += f"-{spec.precision}"
    if spec.collision != "bgk":
        name += f"-{spec.collision}"
    if spec.wall_scheme != DEFAULT_SCHEME:
        name += f"-wall-{spec.wall_scheme}"
    if spec.compile_time_sizes:
        name += f"-{spec.lx}x{spec.ly}"
    return Path("generated") / spec.backend / name


def emit(spec: KernelSpec, output: Optional[Path] = None) -> Dict[str, Path]:
    """Render and write every file of a spec; returns {file name: path written}."""
    files = emit_files(spec)
    out = Path(output) if output is not None else default_output_dir(spec)
    out.mkdir(parents=True, exist_ok=True)
    written = {}
    for name, text in files.items():
        path = out / name
        path.write_text(text)
        written[name] = path
    return written
