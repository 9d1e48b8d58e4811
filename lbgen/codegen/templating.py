"""What every renderer shares: the Jinja environment over the shipped templates, the model
a spec is printed from, and the `lbgen emit` command line that reproduces a spec.  (Used by
``render``, for any dimension; imports it not.)"""
from __future__ import annotations

from functools import lru_cache
from importlib import resources
from pathlib import Path

import jinja2

from lbgen.codegen.layouts import CLUSTERED, c_formula
from lbgen.codegen.spec import KernelSpec
from lbgen.model.catalog import DEFAULT_SCHEME, DEFAULT_VELOCITY_SET
from lbgen.model.derived import Model, build_model


def templates_dir() -> Path:
    return Path(str(resources.files("lbgen.templates")))


@lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    loader = jinja2.FunctionLoader(lambda name: (templates_dir() / name).read_text())
    env = jinja2.Environment(loader=loader, undefined=jinja2.StrictUndefined, trim_blocks=True,
                             lstrip_blocks=True, keep_trailing_newline=True)
    env.filters["c_formula"] = c_formula     # strides as C: whole names replaced, never parts of names
    return env


def emit_command(spec: KernelSpec) -> str:  # noqa: C901
    """The `lbgen emit` command line that reproduces a spec."""
    words = ["lbgen emit", f"--backend {spec.backend}", f"--layout {spec.layout}"]
    if spec.layout in CLUSTERED:
        words.append(f"--vl {spec.vl}")
    words += [f"--precision {spec.precision}", f"--collision {spec.collision}"]
    if spec.velocity_set != DEFAULT_VELOCITY_SET:
        words.append(f"--velocity-set {spec.velocity_set}")
    if spec.compile_time_sizes:
        words.append(f"--lx {spec.lx} --ly {spec.ly}")
    if spec.prefix != "lbgen":
        words.append(f"--prefix {spec.prefix}")
    if not spec.streaming_stores:
        words.append("--no-streaming-stores")
    if spec.block_size:
        words.append(f"--block-size {spec.block_size}")
    if spec.walls:
        words.append("--walls")
    if spec.wall_scheme != DEFAULT_SCHEME:
        words.append(f"--wall-scheme {spec.wall_scheme}")
    if spec.wall_axis is not None:
        words.append(f"--wall-axis {spec.wall_axis}")
    if spec.halo_y is not None:
        words.append(f"--halo-y {spec.halo_y}")
    if spec.storage is not None:
        words.append(f"--storage {spec.storage}")
    if spec.streaming != "pull":
        words.append(f"--streaming {spec.streaming}")
    if spec.open_faces:
        words.append("--open-faces")
    return " ".join(words)


def model_of(spec: KernelSpec) -> Model:
    """The one model value a spec's kernels are printed from (derived once, cached)."""
    return build_model(spec.velocity_set, spec.collision, spec.walls, spec.wall_scheme, spec.wall_axis)


def wall_tau_arguments(col) -> str:
    """The collide site function's arguments after ``wall_`` (the wall rows' relaxation time,
    lbgen.model.collision.WALL_TAU), as they follow it in a call: ", tau_wall_"."""
    names = [str(p) for p in col.parameters]
    return "".join(f", {n}_" for n in names[names.index("wall") + 1:]) if "wall" in names else ""
