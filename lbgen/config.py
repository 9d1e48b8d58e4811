"""The run description: one typed, validated schema for the CLI, TOML files and Python.

Every option of a run is one ``Option`` here (key, kind, default, allowed values, help,
whether it may change on resume).  Everything else derives from this table: the
``lbgen run`` command-line options and their help, the TOML keys, the checks, the
manifest's ``config`` and the resume comparison.  The collision operators' parameters
come from their records (``lbgen.model.operators``) and the set-ups' defaults from
``lbgen.setups`` -- each default is written once.

Values are converted to the option's type or refused with a message that names the
source ('--config run.toml', 'command line', ...) and the key; unknown keys are refused
with the closest valid name.  Precedence: schema default < set-up default < TOML file <
command line (or Python keywords).
"""
from __future__ import annotations

import dataclasses
import difflib
import json
import math
from dataclasses import dataclass
from typing import Any, Dict, Iterable, Mapping, Optional, Sequence, Tuple

from .layouts import LAYOUTS, LayoutChoice
from .model.operators import DEFAULT_OPERATOR, OPERATORS, ParameterError, all_parameters, operator
from .model.velocity_set import DEFAULT_VELOCITY_SET, VELOCITY_SETS, velocity_set
from .setups import SETUPS

BACKEND_NAMES = ("c", "opencl", "cuda")
PRECISION_NAMES = ("double", "single", "mixed")
PICTURE_NAMES = ("T", "rho", "vorticity", "speed")
ADIABATIC = {"none": (False, False), "bottom": (True, False), "top": (False, True), "both": (True, True)}
_TRUE = {"true", "yes", "on", "1"}
_FALSE = {"false", "no", "off", "0"}


class ConfigError(ValueError):
    """A run description that cannot be run (the message names the key and the source)."""


@dataclass(frozen=True)
class Option:
    key: str
    kind: str                    # int, float, bool, choice, str, path, gravity, pictures, vl, split
    default: Any
    help: str
    choices: Tuple[str, ...] = ()
    minimum: Optional[float] = None
    resumable: bool = False      # may change on --resume (harmless: steps, cadences, pictures, threads)
    cli: bool = True             # an `lbgen run` option
    flag: Optional[str] = None   # click declaration when not --<key>
    optional: bool = False       # None allowed (means: derived / not given)


def _operator_options() -> Tuple[Option, ...]:
    return tuple(Option(p.name, "float", p.default, f"{p.meaning} ({p.allowed}; "
                        f"{'/'.join(n for n in OPERATORS if p.name in operator(n).parameter_names)} only).")
                 for p in all_parameters().values())


SCHEMA: Tuple[Option, ...] = (
    Option("setup", "choice", "shear-wave", "Named set-up.", choices=tuple(SETUPS), cli=False),
    Option("lx", "int", 64, "Lattice width (periodic in X).", minimum=1),
    Option("ly", "int", 256, "Lattice height.", minimum=1),
    Option("steps", "int", 1000, "Total steps (also when resuming).", minimum=0, resumable=True),
    Option("collision", "choice", DEFAULT_OPERATOR, "Collision operator.", choices=OPERATORS),
    *_operator_options(),
    Option("gravity", "gravity", (0.0, 0.0), "GX,GY acceleration in model units (force per step g/r)."),
    Option("walls", "bool", False, "Thermal walls at bottom and top (else periodic in Y).",
           flag="--walls/--periodic"),
    Option("t_bottom", "float", 1.0, "Bottom wall temperature.", minimum=0.0),
    Option("t_top", "float", 1.0, "Top wall temperature.", minimum=0.0),
    Option("adiabatic", "choice", "none", "Which walls are adiabatic (copy the fourth row's temperature).",
           choices=tuple(ADIABATIC)),
    Option("velocity_set", "choice", DEFAULT_VELOCITY_SET, "Velocity set: d2q37 (thermal), d2q9 (isothermal, "
           "T = 1), d2v17 (thermal, third order).", choices=tuple(VELOCITY_SETS)),
    Option("backend", "choice", "c", "Backend.", choices=BACKEND_NAMES),
    Option("layout", "choice", None, "Data layout (default: the fastest valid for the backend, or the tuned one).",
           choices=tuple(LAYOUTS), optional=True),
    Option("vl", "vl", None, "Cluster length for csoa/caosoa (a power of two dividing LY), or 'auto' "
           "(time the candidates once and remember the best; see lbgen tune).", optional=True),
    Option("precision", "choice", "double", "Floating-point precision.", choices=PRECISION_NAMES),
    Option("fused", "bool", True, "Fused propagate+collide (periodic runs).", flag="--fused/--no-fused"),
    Option("strict", "bool", False, "No FMA contraction (bitwise-comparable builds).", flag="--strict/--no-strict"),
    Option("threads", "int", 0, "OpenMP threads (0: OMP_NUM_THREADS or all cores).", minimum=0, resumable=True),
    Option("seed", "int", 0, "Seed of random set-ups.", minimum=0),
    Option("amplitude", "float", None, "Amplitude of the set-up (wave, noise or interface).", optional=True),
    Option("init", "path", None, ".npz with rho, ux, uy, T of shape (LX, LY); sets the lattice size.", optional=True),
    Option("save", "path", None, "Write the final fields to this .npz.", optional=True, resumable=True),
    Option("out", "path", None, "Run folder: fields (h5 + vti), pictures, series, manifest.json, checkpoints.",
           optional=True),
    Option("output_every", "int", 0, "Outputs every K steps (0: start and end).", minimum=0, resumable=True),
    Option("checkpoint_every", "int", 0, "Checkpoint every K steps (needs --out).", minimum=0, resumable=True),
    Option("check_every", "int", 100, "NaN / negative rho or T guard every K steps.", minimum=0, resumable=True),
    Option("pictures", "pictures", ("T",), "Comma list of T, rho, vorticity, speed (or none).", resumable=True),
    Option("fields_format", "choice", "h5", "File format of the field outputs.", choices=("h5", "npz")),
    Option("keep_checkpoints", "int", 2, "Checkpoints kept in the run folder.", minimum=1, resumable=True),
    Option("hetero", "choice", None, "Host + device: the device backend runs the bulk, --backend (C) the 2M "
           "border columns.", choices=("opencl", "cuda"), optional=True),
    Option("split", "split", None, "With --hetero: 'auto' (performance model, default) or the host fraction 2M/LX.",
           optional=True),
    Option("device", "str", None, "OpenCL device for --hetero or --backend opencl ('P:D' or a name).", optional=True),
    Option("host_columns", "int", None, "M, resolved from split (recorded for resume).", minimum=0, optional=True,
           cli=False),
)
OPTIONS: Dict[str, Option] = {o.key: o for o in SCHEMA}
OPERATOR_KEYS = tuple(all_parameters())
#: keys that describe the walls (the RunConfig keeps them as one `walls` record)
WALL_KEYS = ("t_bottom", "t_top", "adiabatic")


def normalise_key(key: str) -> str:
    """TOML and Python spellings: 'C1', 'c1', 'output-every' -> the schema key."""
    k = str(key).replace("-", "_")
    for name in OPTIONS:
        if name.lower() == k.lower():
            return name
    return k


def _closest(key: str) -> str:
    close = difflib.get_close_matches(key.lower(), [k.lower() for k in OPTIONS], n=1, cutoff=0.6)
    return f" (did you mean {normalise_key(close[0])!r}?)" if close else ""


def convert(key: str, value: Any, where: str = "") -> Any:
    """``value`` as the type of option ``key``, or ConfigError naming both."""
    opt = OPTIONS[key]
    label = f"{where}: {key}" if where else key
    if value is None:
        if opt.optional:
            return None
        raise ConfigError(f"{label} must be given (it has no 'none' value)")
    kind = opt.kind
    try:
        if kind == "int":
            v = _as_int(value)
            if opt.minimum is not None and v < opt.minimum:
                raise ValueError(f"must be >= {int(opt.minimum)}")
            return v
        if kind == "float":
            v = _as_float(value)
            if opt.minimum is not None and not v > opt.minimum:
                raise ValueError(f"must be > {opt.minimum:g}")
            return v
        if kind == "bool":
            return _as_bool(value)
        if kind == "choice":
            v = str(value) if not isinstance(value, bool) else None
            if v not in opt.choices:
                noun = "collision operator" if key == "collision" else key.replace("_", " ")
                raise ConfigError(f"{where + ': ' if where else ''}unknown {noun} {value!r}; "
                                  f"choose one of {', '.join(opt.choices)}")
            return v
        if kind in ("str", "path"):
            if not isinstance(value, (str, bytes)) and not hasattr(value, "__fspath__"):
                raise ValueError("must be a string")
            return str(value)
        if kind == "gravity":
            return _as_gravity(value)
        if kind == "pictures":
            return _as_pictures(value)
        if kind == "vl":
            if isinstance(value, str) and value.strip().lower() == "auto":
                return "auto"
            v = _as_int(value)
            if v < 1 or v & (v - 1):
                raise ValueError("must be a power of two (1, 2, 4, 8, ...) or 'auto'")
            return v
        if kind == "split":
            if isinstance(value, str) and value.strip().lower() == "auto":
                return "auto"
            v = _as_float(value)
            if not 0 <= v <= 1:
                raise ValueError("must be 'auto' or a host fraction 2M/LX in [0, 1]")
            return str(v)
    except ValueError as e:
        raise ConfigError(f"{label}={value!r} {e}") from None
    raise AssertionError(kind)  # pragma: no cover


def _as_int(value) -> int:
    if isinstance(value, bool):
        raise ValueError("must be an integer, not a boolean")
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        if value.is_integer():
            return int(value)
        raise ValueError("must be an integer")
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            raise ValueError("must be an integer") from None
    if hasattr(value, "__index__"):
        return int(value.__index__())
    raise ValueError("must be an integer")


def _as_float(value) -> float:
    if isinstance(value, bool):
        raise ValueError("must be a number, not a boolean")
    try:
        v = float(value.strip() if isinstance(value, str) else value)
    except (TypeError, ValueError):
        raise ValueError("must be a number") from None
    if not math.isfinite(v):
        raise ValueError("must be a finite number")
    return v


def _as_bool(value) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
        return value.strip().lower() in _TRUE
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    raise ValueError("must be true or false")


def _as_gravity(value) -> Tuple[float, float]:
    parts = list(value) if isinstance(value, (list, tuple)) else \
        [p for p in str(value).replace(" ", "").split(",") if p != ""]
    try:
        g = tuple(_as_float(p) for p in parts)
    except ValueError:
        g = ()
    if len(g) != 2:
        raise ValueError("expected two numbers 'GX,GY' (e.g. 0,-2.6e-6)")
    return g


def _as_pictures(value) -> Tuple[str, ...]:
    items = [str(v) for v in value] if isinstance(value, (list, tuple)) else \
        [v for v in str(value).replace(" ", "").split(",") if v]
    items = [v for v in items if v != "none"]
    bad = [v for v in items if v not in PICTURE_NAMES]
    if bad:
        raise ValueError(f"has unknown quantities {bad}; choose from {', '.join(PICTURE_NAMES)} or none")
    return tuple(dict.fromkeys(items))


@dataclass
class RunConfig:
    """Everything that defines a run; written whole to the manifest and every checkpoint.

    Build it with ``RunConfig.build(setup, layer, ...)`` (defaults of the schema and the
    set-up, then each layer of user values), or directly with keywords: every field is
    converted and checked on construction either way."""

    setup: str = "shear-wave"
    lx: int = OPTIONS["lx"].default
    ly: int = OPTIONS["ly"].default
    steps: int = OPTIONS["steps"].default
    collision: str = DEFAULT_OPERATOR
    parameters: Dict[str, float] = dataclasses.field(default_factory=dict)   # the operator's own parameters
    gravity: Tuple[float, float] = OPTIONS["gravity"].default
    backend: str = OPTIONS["backend"].default
    layout: Optional[str] = None
    vl: Optional[object] = None            # int, or "auto" (tuned)
    precision: str = OPTIONS["precision"].default
    fused: bool = OPTIONS["fused"].default
    strict: bool = OPTIONS["strict"].default
    threads: int = OPTIONS["threads"].default
    seed: int = OPTIONS["seed"].default
    amplitude: Optional[float] = None
    init: Optional[str] = None
    walls: Optional[Dict] = None           # {"T_bottom", "T_top", "adiabatic_bottom", "adiabatic_top"}
    save: Optional[str] = None
    out: Optional[str] = None              # run folder (outputs, checkpoints, manifest)
    output_every: int = OPTIONS["output_every"].default
    checkpoint_every: int = OPTIONS["checkpoint_every"].default
    check_every: int = OPTIONS["check_every"].default
    pictures: Tuple[str, ...] = OPTIONS["pictures"].default
    fields_format: str = OPTIONS["fields_format"].default
    keep_checkpoints: int = OPTIONS["keep_checkpoints"].default
    hetero: Optional[str] = None
    split: Optional[str] = None
    host_columns: Optional[int] = None
    device: Optional[str] = None
    velocity_set: str = DEFAULT_VELOCITY_SET

    def __post_init__(self):
        for f in dataclasses.fields(self):
            if f.name in OPTIONS and f.name != "walls":      # walls: the record, checked below
                setattr(self, f.name, convert(f.name, getattr(self, f.name)) if f.name != "setup"
                        else self._check_setup(self.setup))
        try:
            self.parameters = operator(self.collision).check(dict(self.parameters or {}))
        except ParameterError as e:
            raise ConfigError(str(e)) from None
        self.gravity = tuple(self.gravity)
        self.pictures = tuple(self.pictures)
        if self.walls is not None:
            self.walls = _check_walls(self.walls)
        if self.split is not None and not self.hetero:
            raise ConfigError("split needs hetero (--hetero opencl|cuda)")
        if self.checkpoint_every and not self.out:
            raise ConfigError("checkpoint_every needs a run folder (--out DIR)")
        if self.layout is not None or self.vl not in (None, "auto"):
            LayoutChoice.of(self.layout, self.vl if self.vl != "auto" else None, need_vl=False)
        vs = velocity_set(self.velocity_set)
        if vs.isothermal and self.setup == "rayleigh-taylor":
            raise ConfigError(f"rayleigh-taylor is a thermal flow; {vs.name} is isothermal (T = 1): use d2q37 "
                              f"(or d2v17)")
        if vs.isothermal and self.walls is not None and self.walls != _check_walls({}):
            raise ConfigError(f"{vs.name} is isothermal: its walls impose no temperature, so t_bottom, t_top "
                              f"(got {self.walls['T_bottom']}, {self.walls['T_top']}) must stay 1 and no wall can "
                              f"be adiabatic; use d2q37 for thermal walls")

    @staticmethod
    def _check_setup(name) -> str:
        if name == "init" or name in SETUPS:
            return name
        raise ConfigError(f"unknown set-up {name!r}; choose one of {', '.join(SETUPS)} or give --init FILE.npz")

    # --- the physics of the run, as the kernels need it ------------------------------------
    @property
    def operator_parameters(self) -> Dict[str, float]:
        return dict(self.parameters)

    def __getattr__(self, name):            # cfg.tau, cfg.C1, ... of the run's operator
        params = self.__dict__.get("parameters")
        if params is not None and name in params:
            return params[name]
        raise AttributeError(name)

    # --- building -------------------------------------------------------------------------
    @classmethod
    def build(cls, setup: Optional[str] = None, *layers: Tuple[str, Mapping[str, Any]]) -> "RunConfig":
        """Schema defaults, then the set-up's defaults, then each (source, values) layer.

        ``values`` use the flat keys of the schema (TOML and CLI spelling: 'tau', 'c1',
        't_bottom', 'adiabatic', ...); a value None means 'not given'."""
        merged: Dict[str, Any] = {}
        given: Dict[str, str] = {}
        for source, values in layers:
            for raw_key, value in values.items():
                key = normalise_key(raw_key)
                if key not in OPTIONS:
                    raise ConfigError(f"{source}: unknown key {raw_key!r}{_closest(str(raw_key))}; "
                                      f"valid keys: {', '.join(k for k in OPTIONS if OPTIONS[k].cli or k == 'setup')}")
                if value is None:
                    continue
                merged[key] = convert(key, value, source)
                given[key] = source
        name = merged.pop("setup", None) if setup is None else setup
        if merged.get("init") and name not in (None, "init"):
            raise ConfigError("give either a SETUP name or --init FILE, not both")
        name = "init" if merged.get("init") else (name or OPTIONS["setup"].default)
        cls._check_setup(name)
        values = {o.key: o.default for o in SCHEMA if o.key != "setup"}
        if name in SETUPS:
            values.update(SETUPS[name].run_defaults)
        values.update(merged)
        op = operator(values["collision"])
        for key in OPERATOR_KEYS:               # a parameter of another operator is never silently ignored
            if key in given and key not in op.parameter_names:
                raise ConfigError(f"{given[key]}: {key} is a parameter of "
                                  f"{', '.join(n for n in OPERATORS if key in operator(n).parameter_names)}, "
                                  f"not of the {op.name} operator (its parameters: {', '.join(op.parameter_names)})")
        walls = None
        if values["walls"]:
            ad = ADIABATIC[values["adiabatic"]]
            walls = {"T_bottom": values["t_bottom"], "T_top": values["t_top"],
                     "adiabatic_bottom": ad[0], "adiabatic_top": ad[1]}
        else:
            wall_keys = [k for k in WALL_KEYS if k in given]
            if wall_keys:
                raise ConfigError(f"{given[wall_keys[0]]}: {', '.join(wall_keys)} need walls "
                                  f"(--walls, or the rayleigh-taylor set-up)")
        fields = {f.name for f in dataclasses.fields(cls)}
        kwargs = {k: v for k, v in values.items() if k in fields and k != "walls"}
        kwargs["parameters"] = {k: values[k] for k in op.parameter_names}
        return cls(setup=name, walls=walls, **kwargs)

    # --- manifest / resume ------------------------------------------------------------------
    def to_json(self) -> dict:
        return json.loads(json.dumps(dataclasses.asdict(self)))

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "RunConfig":
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ConfigError(f"the manifest has unknown run parameters {unknown}: it was written by another "
                              f"version of lbgen")
        return cls(**dict(data))

    def changes(self, overrides: Mapping[str, Any], source: str = "command line") -> "RunConfig":
        """This run description with ``overrides`` (flat keys) applied for a resume.

        Options that change the physics, the lattice or the kernels are refused, naming
        each; the harmless ones (steps, cadences, pictures, threads, ...) are applied."""
        current = self.flat()
        refused, applied = [], {}
        for raw_key, value in overrides.items():
            key = normalise_key(raw_key)
            if key not in OPTIONS:
                raise ConfigError(f"{source}: unknown key {raw_key!r}{_closest(str(raw_key))}")
            if value is None:
                continue
            v = convert(key, value, source)
            if OPTIONS[key].resumable:
                applied[key] = v
            elif current.get(key) != v:
                refused.append(f"{key} ({current.get(key)!r} in the run, {v!r} given)")
        if refused:
            raise ConfigError("a resumed run continues exactly the run in its folder; these options would change "
                              f"it and are refused: {'; '.join(refused)}. Start a new run (another --out) instead.")
        return dataclasses.replace(self, **applied)

    def flat(self) -> Dict[str, Any]:
        """The schema's flat keys and values of this run (the inverse of ``build``)."""
        d = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name in OPTIONS and f.name != "walls"}
        d.update(self.parameters)
        w = self.walls
        d["walls"] = w is not None
        if w is not None:
            d["t_bottom"], d["t_top"] = w["T_bottom"], w["T_top"]
            d["adiabatic"] = next(k for k, v in ADIABATIC.items() if v == (w["adiabatic_bottom"], w["adiabatic_top"]))
        else:
            d["t_bottom"], d["t_top"], d["adiabatic"] = (OPTIONS["t_bottom"].default, OPTIONS["t_top"].default,
                                                         OPTIONS["adiabatic"].default)
        return d

    def physics(self) -> Dict[str, Any]:
        """What a checkpoint must agree with to be resumed by this run: the lattice, the
        operator and its parameters, gravity, walls, the kernels' precision."""
        return {"lx": self.lx, "ly": self.ly, "collision": self.collision, "parameters": dict(self.parameters),
                "gravity": list(self.gravity), "walls": self.walls, "precision": self.precision,
                "velocity_set": self.velocity_set}


def _check_walls(walls: Mapping) -> Dict:
    keys = ("T_bottom", "T_top", "adiabatic_bottom", "adiabatic_top")
    extra = sorted(set(walls) - set(keys))
    if extra:
        raise ConfigError(f"walls: unknown keys {extra}; allowed: {', '.join(keys)}")
    out = {}
    for k in keys:
        v = walls.get(k, 1.0 if k.startswith("T") else False)
        try:
            out[k] = _as_bool(v) if k.startswith("adiabatic") else _as_float(v)
        except ValueError as e:
            raise ConfigError(f"walls: {k}={v!r} {e}") from None
        if k.startswith("T") and not out[k] > 0:
            raise ConfigError(f"walls: {k}={v!r} must be a positive temperature")
    return out


def cli_options() -> Iterable[Option]:
    return (o for o in SCHEMA if o.cli)


def describe_defaults(key: str) -> str:
    """The default of ``key`` and the set-ups that change it, for --help."""
    opt = OPTIONS[key]
    parts = [] if opt.default is None else [f"default {_show(opt.default)}"]
    for s in SETUPS.values():
        if key in s.run_defaults:
            parts.append(f"{s.name}: {_show(s.run_defaults[key])}")
    return "; ".join(parts)


def _show(v) -> str:
    if isinstance(v, tuple):
        return ",".join(f"{x:g}" if isinstance(x, float) else str(x) for x in v) or "none"
    if isinstance(v, bool):
        return "on" if v else "off"
    return str(v)


def sequence_of(values: Optional[Sequence]) -> Tuple:
    return tuple(values or ())
