"""The click options of `lbgen run`, one per option of the run description (lbgen.run.options):
names, help, choices and defaults all come from there, with each option's defaults per set-up
and velocity set written into its --help."""
from __future__ import annotations

from typing import Mapping

import click

from lbgen.model.catalog import VELOCITY_SETS
from lbgen.run.options import OPTIONS, cli_options
from lbgen.run.setups import SETUPS


def schema_options(fn):
    """The `lbgen run` options, one per option of the run description (lbgen.run.config):
    names, help, choices and defaults all come from there.  Every default is None here, so
    that what the user gave is known (TOML files and set-ups fill the rest)."""
    for opt in reversed(list(cli_options())):
        decl = opt.flag or opt.flag_name
        kind = {"int": int, "float": float}.get(opt.kind)
        if opt.kind == "bool" and "/" not in decl:
            decl = f"{decl}/--no-{decl[2:]}"
        default = describe_defaults(opt.key)
        help_text = opt.help + (f" [{default}]" if default else "")
        if opt.kind == "choice":
            help_text = f"{help_text} One of: {', '.join(opt.choices)}."
        attrs = dict(default=None, help=help_text)
        if opt.kind == "clim":
            attrs["multiple"] = True       # --clim T=0.95,1.05 --clim vorticity=-0.01,0.01
        if kind is not None:
            attrs["type"] = kind
        fn = click.option(decl, opt.key, **attrs)(fn)
    return fn


def describe_defaults(key: str) -> str:
    """The default of ``key`` and the set-ups that change it, for --help."""
    opt = OPTIONS[key]
    parts = [] if opt.default is None else [f"default {_show(opt.default)}"]
    for s in SETUPS.values():
        if key in s.run_defaults:
            parts.append(f"{s.name}: {_show(s.run_defaults[key])}")
        if key in (s.run_defaults3d or {}):
            parts.append(f"{s.name} in 3D: {_show(s.run_defaults3d[key])}")
        given = {vs_name: values[key] for vs_name, values in s.set_defaults.items() if key in values}
        if set(given) == set(VELOCITY_SETS) and len({_show(v) for v in given.values()}) == 1:
            given = {"in 2D": next(iter(given.values()))}       # one value for every 2D set
        parts += [f"{s.name} {n if n == 'in 2D' else 'with ' + n}: {_show(v)}" for n, v in given.items()]
    return "; ".join(parts)


def _show(v) -> str:
    if isinstance(v, Mapping):                # a lid: FACE=UX,UY,UZ; ...
        return "; ".join(f"{k}={_show(tuple(u))}" for k, u in v.items())
    if isinstance(v, tuple):
        return ",".join(f"{x:g}" if isinstance(x, float) else str(x) for x in v) or "none"
    if isinstance(v, bool):
        return "on" if v else "off"
    return str(v)
