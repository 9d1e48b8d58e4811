"""The run description: one typed, validated schema for the CLI, TOML files and Python.

Every option of a run is one ``Option`` here (key, kind, default, allowed values, help,
whether it may change on resume).  Everything else derives from this table: the
``lbgen run`` command-line options and their help, the TOML keys, the checks, the
manifest's ``config`` and the resume comparison.  The collision operators' parameters
come from their records (``lbgen.model.operators``) and the set-ups' defaults from
``lbgen.run.setups`` -- each default is written once.

Values are converted to the option's type or refused with a message that names the
source ('--config run.toml', 'command line', ...) and the key; unknown keys are refused
with the closest valid name.  Precedence: schema default < set-up default < TOML file <
command line (or Python keywords).
"""
from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import InitVar, dataclass
from typing import Any, Dict, Mapping, Optional, Tuple

from lbgen.codegen.layouts import LayoutChoice
from lbgen.model.operators import DEFAULT_OPERATOR, ParameterError, all_parameters, operator, set_for_operator
from lbgen.model.catalog import SETS_3D, set_entry, set_names, wall_scheme_refusal
from lbgen.model.wall_frame import upright_shape
from lbgen.run.options import (ADIABATIC, DEFAULT_SIZE_3D, OPTIONS, SCHEMA, ConfigError, as_bool, as_float,
                               check_applicable, closest, convert, dimension, normalise_key)
from lbgen.run.flows import FLOWS
from lbgen.run.setups import RT_T_COLD, RT_T_HOT, SETUPS, rt_gravity_refusal
from lbgen.run.wall_axis import check_wall_axis, turned_defaults

__all__ = ["ConfigError", "OPTIONS", "RunConfig"]


@dataclass(frozen=True)
class RunConfig:
    """Everything that defines a run; written whole to the manifest and every checkpoint.

    Frozen: a run never changes its description; what construction decides (layout, VL,
    time block, threads, the host/device split, an --init file's size) is recorded in a new
    one (``resolved``).  Build it with ``RunConfig.build(setup, layer, ...)`` (defaults of the
    schema and the set-up, then each layer of user values, each value converted once and
    every option given checked for an effect), or directly with keywords (a manifest, Python):
    every field is converted and checked on construction then."""

    setup: str = "shear-wave"
    lx: int = OPTIONS["lx"].default
    ly: int = OPTIONS["ly"].default
    lz: Optional[int] = None               # 3D runs: the depth (None: a 2D run)
    steps: int = OPTIONS["steps"].default
    collision: str = DEFAULT_OPERATOR
    parameters: Dict[str, float] = dataclasses.field(default_factory=dict)   # the operator's own parameters
    gravity: Tuple[float, float] = OPTIONS["gravity"].default
    backend: str = OPTIONS["backend"].default
    layout: Optional[str] = None
    vl: Optional[object] = None            # int, or "auto" (tuned)
    precision: str = OPTIONS["precision"].default
    storage: Optional[str] = None          # populations' storage (lbgen.codegen.storage); None: the precision's own
    streaming: str = "pull"                # lbgen.codegen.spec.STREAMING: two buffers, or one (in place)
    fused: bool = OPTIONS["fused"].default
    time_block: object = OPTIONS["time_block"].default    # int, or "auto" (tuned)
    strict: bool = OPTIONS["strict"].default
    threads: int = OPTIONS["threads"].default
    seed: int = OPTIONS["seed"].default
    amplitude: Optional[float] = None
    ra: float = OPTIONS["ra"].default          # the rayleigh-benard set-up's numbers (they set gravity, C2, LX)
    pr: float = OPTIONS["pr"].default
    aspect: float = OPTIONS["aspect"].default
    init: Optional[str] = None
    walls: Optional[Dict] = None           # {"T_bottom", "T_top", "adiabatic_bottom", "adiabatic_top", "scheme"}
    wall_axis: Optional[str] = None        # the axis the thermal walls stand across (None: the last, z in 3D)
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
    velocity_set: str = OPTIONS["velocity_set"].default
    series_every: int = OPTIONS["series_every"].default
    pictures_every: int = OPTIONS["pictures_every"].default
    window: Optional[str] = OPTIONS["window"].default
    dpi: Optional[float] = None
    clim: Optional[Dict[str, list]] = None     # {picture quantity: [lo, hi]} over the physical colour limits
    wall_axes: Optional[str] = None            # the no-slip wall axes ('y', 'yz', 'xyz'; 2D: 'x', 'y', 'xy')
    lid: Optional[Dict[str, tuple]] = None     # moving faces {'z-high': (ux, uy, uz)}, 2D {'y-high': (ux, uy)}
    inlet: Optional[str] = None                # open faces (lbgen.simulation.open_faces): a velocity inlet face,
    inlet_speed: float = OPTIONS["inlet_speed"].default          # its speed (model units)
    inlet_profile: str = OPTIONS["inlet_profile"].default        # and profile,
    inlet_temperature: Optional[float] = None  # and temperature (thermal sets; None: T0 = 1)
    outlet: Optional[Dict[str, Optional[float]]] = None          # pressure outlets {face: rho or None}
    outlet_density: float = OPTIONS["outlet_density"].default    # the density of those without one,
    outflow: Optional[str] = None              # a zero-gradient outflow face
    slip: Optional[str] = None                 # free-slip wall faces ('y-low y-high')
    geometry: Optional[str] = None             # voxel mask .npy (the lattice's mask=; 2D and 3D)
    geometry_digest: Optional[str] = None      # sha256 of the mask the run started with (resolved)
    body_bc: str = OPTIONS["body_bc"].default  # the bounce-back on the --geometry body (halfway, bouzidi, quadratic)
    stl_scale: float = OPTIONS["stl_scale"].default    # a --geometry mesh's placement: scale, rotation, offset
    stl_rotate: Optional[str] = None
    stl_offset: Optional[str] = None
    re: Optional[float] = None                 # flows around bodies (lbgen.run.flows), taylor-green: Reynolds number
    cells_per_diameter: Optional[int] = None
    steady: Optional[float] = None             # flows around bodies: stop when the drag's change falls below it
    init_digest: Optional[str] = None          # sha256 of the --init file the run started from (resolved)
    _converted: InitVar[bool] = False          # build(): every value is typed already

    def __post_init__(self, _converted: bool):
        def put(name, value):
            object.__setattr__(self, name, value)
        if not _converted:
            for f in dataclasses.fields(self):
                if f.name in OPTIONS and f.name != "walls":      # walls: the record, checked below
                    put(f.name, convert(f.name, getattr(self, f.name)) if f.name != "setup"
                        else self._check_setup(self.setup))
            try:
                put("parameters", operator(self.collision).check(dict(self.parameters or {})))
            except ParameterError as e:
                raise ConfigError(str(e)) from None
            put("gravity", tuple(self.gravity))
            put("pictures", tuple(self.pictures))
            if self.walls is not None:
                put("walls", _check_walls(self.walls))
            if self.velocity_set in OPTIONS["velocity_set"].choices and dimension(self.flat()) == 3:
                if self.gravity == (0.0, 0.0):
                    put("gravity", (0.0, 0.0, 0.0))      # the schema's default, in 3D
                if self.lz is None:
                    put("lz", DEFAULT_SIZE_3D["lz"])
            self._check_given()
        self._check()

    #: fields that construction fills in (``lbgen.run.construct.resolve``): a description read
    #: back from a manifest has them set without the user giving them
    RESOLVED = ("lx", "ly", "lz", "amplitude", "layout", "vl", "time_block", "threads", "host_columns", "series_every", "pictures_every")

    def _check_given(self) -> None:
        """Keyword construction: the options set to other than their default (the schema's or
        the set-up's) must have an effect, as in ``build``."""
        values = self.flat()
        defaults = {o.key: o.default for o in SCHEMA}
        defaults.update(SETUPS[self.setup].defaults_for(self.velocity_set) if self.setup in SETUPS else {})
        defaults.update({k: p.default for k, p in all_parameters().items()})
        from lbgen.output.pictures import default_pictures
        defaults["pictures"] = default_pictures(self.velocity_set, self.setup)
        if self.walls is None:               # no walls: their keys are not part of the run, not given
            defaults.update({k: values[k] for k in ("t_bottom", "t_top", "adiabatic", "wall_scheme")})
        given = {k: "RunConfig" for k, v in values.items()
                 if k not in self.RESOLVED and k in defaults and v != defaults[k]}
        check_applicable(values, given)

    @property
    def dimension(self) -> int:
        """2 or 3: the velocity set's dimension."""
        return set_entry(self.velocity_set).D

    @property
    def shape(self) -> Tuple[int, ...]:
        """(LX, LY) or, in 3D, (LX, LY, LZ)."""
        return (self.lx, self.ly) + ((self.lz,) if self.dimension == 3 else ())

    @property
    def thermal_axis(self) -> Optional[str]:
        """The axis the thermal walls stand across (the last, y in 2D and z in 3D, or --wall-axis), None without them."""
        return None if self.walls is None else self.wall_axis or "xyz"[self.dimension - 1]

    @property
    def vertical_axis(self) -> str:
        """The axis of a thermal set-up's height (its walls' axis; without thermal walls the last one)."""
        return self.thermal_axis or "xyz"[self.dimension - 1]

    def _check_3d(self) -> None:
        """The rules of a 3D run: a 3D set-up, three gravity components, lids on wall axes."""
        setup = SETUPS.get(self.setup)
        if setup is not None and 3 not in setup.dimensions:
            three = ", ".join(n for n, s in SETUPS.items() if 3 in s.dimensions)
            raise ConfigError(f"the {self.setup} set-up is a 2D flow ({setup.missing_why}); 3D set-ups "
                              f"({self.velocity_set}): {three}")
        if len(self.gravity) != 3:
            raise ConfigError(f"gravity {','.join(f'{g:g}' for g in self.gravity)}: expected three numbers "
                              f"'GX,GY,GZ' in a 3D run")
        axis = self.vertical_axis
        others = [w for w, given in ((f"--wall-axes {self.wall_axes}", (self.wall_axes or axis) != axis),
                                     ("--lid", self.lid), (f"--geometry {self.geometry}", self.geometry)) if given]
        if self.walls is not None and others:
            raise ConfigError(f"--walls (the 3D thermal walls, across {axis}) and {', '.join(others)} do not run "
                              f"together yet: the thermal walls' sweep takes the other axes periodic and no other "
                              f"boundary; choose one (--periodic drops the thermal walls)")
        self._check_lids(3)

    def _check_lids(self, D: int) -> None:
        """The lids on wall axes of a D-dimensional run (lbgen.simulation.boundaries: one home)."""
        from lbgen.simulation.boundaries import lid_faces, wall_axes
        from lbgen.simulation.parameters import SimulationError
        try:
            lid_faces(self.lid, wall_axes(self.wall_axes, D), self.velocity_set, D=D)
        except SimulationError as e:
            text = str(e).replace("walls=", "--wall-axes ")
            raise ConfigError(f"--{text}" if text.startswith("lid") else text) from None

    def _check_bounce(self) -> None:
        """Bounce-back walls, lids and masks run on one backend, and in 2D one step per sweep (the
        lattice's rule, ``lbgen.simulation.boundaries.BounceBack.check_runs``), refused here
        before any work in the words of the command line."""
        what = ", ".join(w for w, given in ((f"--wall-axes {self.wall_axes}", self.wall_axes),
                                            (f"--geometry {self.geometry}", self.geometry),
                                            (f"--inlet {self.inlet}", self.inlet), (f"--outlet {self.outlet}", self.outlet),
                                            (f"--outflow {self.outflow}", self.outflow),
                                            (f"--slip {self.slip}", self.slip)) if given)
        if not what:
            return
        if self.hetero:
            raise ConfigError(f"--hetero {self.hetero} splits the {self.dimension}D lattice in X between two "
                              f"backends; the bounce-back walls, lids and masks of this run ({what}) run on one "
                              f"backend: leave --hetero out")
        if self.time_block not in (1, "auto") and self.dimension == 2:
            raise ConfigError(f"--time-block {self.time_block}: the time-blocked 2D sweep does not take bounce-back "
                              f"walls, lids or masks ({what}); give --time-block 1 (or leave it out)")

    def _check(self) -> None:
        """The rules between options (each value is typed and in its range already)."""
        if self.dimension == 3:
            self._check_3d()
        else:
            if self.setup in SETUPS and 2 not in SETUPS[self.setup].dimensions:
                raise ConfigError(f"the {self.setup} set-up is a 3D flow ({SETUPS[self.setup].missing_why}): "
                                  f"choose a 3D velocity set (--velocity-set {set_names(SETS_3D)})")
            if len(self.gravity) != 2:
                raise ConfigError(f"gravity {','.join(f'{g:g}' for g in self.gravity)}: expected two numbers 'GX,GY' "
                                  f"in a 2D run (three, GX,GY,GZ, in 3D)")
            if self.walls is not None and (self.wall_axes or self.lid):
                raise ConfigError(f"--walls (the thermal walls on y) and the bounce-back walls --wall-axes "
                                  f"{self.wall_axes or '(none)'}{' and --lid' if self.lid else ''} do not run "
                                  f"together in 2D: choose one (--periodic drops the thermal walls)")
            self._check_lids(2)
        self._check_bounce()
        if self.vl == "auto" and (self.wall_axes or self.geometry):     # 2D and 3D: lbgen tune times no bounce-back
            raise ConfigError(f"--vl auto times the periodic step (lbgen tune --velocity-set {self.velocity_set}); a "
                              f"run with bounce-back walls or a geometry takes its layout and VL given explicitly, "
                              f"or by default when both are left out")
        if self.split is not None and not self.hetero:
            raise ConfigError("split needs hetero (--hetero opencl|cuda)")
        if self.layout is not None or self.vl not in (None, "auto"):
            LayoutChoice.of(self.layout, self.vl if self.vl != "auto" else None, need_vl=False)
        vs = set_entry(self.velocity_set)
        try:
            operator(self.collision).check_set(vs.label, vs.order >= 3)
            operator(self.collision).check_walls(self.dimension == 2 and self.walls is not None)
        except ParameterError as e:
            raise ConfigError(str(e)) from None
        if self.walls is not None:
            check_wall_axis(self)
        up = "xyz".index(self.vertical_axis)
        if self.setup == "rayleigh-taylor":
            axis = self.vertical_axis
            held = self.walls is not None or axis in (self.wall_axes or "")
            if not held and self.gravity[up] != 0:
                how = "--periodic removes them" if self.dimension == 2 else f"--wall-axes {self.wall_axes} leaves {axis} periodic"
                raise ConfigError(f"rayleigh-taylor: gravity along {axis} needs the walls that hold the fluid "
                                  f"({how}); keep them, or give a gravity with no {axis} component")
        if vs.isothermal and self.setup == "rayleigh-taylor":
            raise ConfigError(f"rayleigh-taylor is a thermal flow; {vs.label} is isothermal (T = 1): use d2q37 "
                              f"(or d2v17){', or d3q39 in 3D' if vs.D == 3 else ''}")
        if self.setup == "rayleigh-taylor":      # its hydrostatic start (lbgen.run.setups: one rule, 2D and 3D)
            hot_cold = (self.walls["T_bottom"], self.walls["T_top"]) if self.dimension == 2 and self.walls else \
                (RT_T_HOT, RT_T_COLD)
            upright = upright_shape(self.shape, self.wall_axis)      # the lattice of the z run it turns
            refusal = rt_gravity_refusal(float(self.gravity[up]), velocity_set=self.velocity_set,
                                         lx=upright[0], depth=upright[-1], T_hot=hot_cold[0], T_cold=hot_cold[1])
            if refusal:
                raise ConfigError(refusal)
        refusal = wall_scheme_refusal(vs, self.walls["scheme"]) if self.walls is not None else None
        if refusal:
            raise ConfigError(refusal)
        if vs.isothermal and self.walls is not None and self.walls != _check_walls({"scheme": self.walls["scheme"]}):
            raise ConfigError(f"{vs.label} is isothermal: its walls impose no temperature, so t_bottom, t_top "
                              f"(got {self.walls['T_bottom']}, {self.walls['T_top']}) must stay 1 and no wall can "
                              f"be adiabatic; use d2q37 for thermal walls")

    @staticmethod
    def _check_setup(name) -> str:
        if name == "init" or name in SETUPS:
            return name
        raise ConfigError(f"unknown set-up {name!r}; choose one of {', '.join(SETUPS)} or give --init FILE.npz")

    # --- the physics of the run, as the kernels need it ------------------------------------
    @property
    def wall_temperatures(self) -> Optional[Tuple[float, float]]:
        """(T_bottom, T_top) of a walled run (the hot and cold ends of its temperature scale), else None."""
        return (self.walls["T_bottom"], self.walls["T_top"]) if self.walls else None

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
                    raise ConfigError(f"{source}: unknown key {raw_key!r}{closest(str(raw_key))}; "
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
        from lbgen.output.pictures import default_pictures
        values["pictures"] = default_pictures(merged.get("velocity_set", values["velocity_set"]), name)
        if name in SETUPS:
            chosen = SETUPS[name].run_defaults.get("velocity_set", values["velocity_set"])   # the set-up's own set
            if "velocity_set" not in merged and "velocity_set" in SETUPS[name].run_defaults:
                # the set-up's set (D3Q19) where the operator is not defined on it: the operator's (D3Q27)
                chosen = set_for_operator(chosen, merged.get("collision"))
                if chosen != SETUPS[name].run_defaults.get("velocity_set", chosen):
                    merged["velocity_set"] = chosen
            values.update(SETUPS[name].defaults_for(merged.get("velocity_set", chosen)))
        values.update(merged)
        values["setup"] = name
        if dimension(values) == 3:               # 3D: the lattice, pictures and gravity of 3D runs
            for key, n in DEFAULT_SIZE_3D.items():
                if key not in merged:
                    values[key] = n
            if "pictures" not in merged:
                values["pictures"] = default_pictures(values["velocity_set"], name)
            if "gravity" not in merged and len(values["gravity"]) == 2:
                values["gravity"] = (0.0, 0.0, 0.0)
        if name in FLOWS and dimension(values) == FLOWS[name].dimension:     # lattice, inflow speed, tau from --re ...
            from lbgen.model.physics import scale_factor
            try:
                values.update(FLOWS[name].derived(values, merged, scale_factor(values["velocity_set"])))
            except ValueError as e:
                raise ConfigError(str(e)) from None
        check_applicable(values, given)          # an option given where it has no effect is refused
        if values.get("re") is not None and name == "taylor-green":     # the flows' --re is theirs (above)
            values.update(_reynolds_values(values, given))
        op = operator(values["collision"])
        try:
            parameters = op.check({k: values[k] for k in op.parameter_names})
        except ParameterError as e:
            raise ConfigError(str(e)) from None
        if values["walls"]:                      # the set-up's walls across the last axis turned to --wall-axis
            values.update(turned_defaults(values, merged, name))
        if name == "rayleigh-benard":            # gravity, the periodic lengths and C2 from Ra, Pr, the aspect
            from lbgen.run.convection import resolve
            values, parameters = resolve(values, parameters, given)
        walls = None
        if values["walls"]:
            ad = ADIABATIC[values["adiabatic"]]
            walls = _check_walls({"T_bottom": values["t_bottom"], "T_top": values["t_top"],
                                  "adiabatic_bottom": ad[0], "adiabatic_top": ad[1], "scheme": values["wall_scheme"]})
        fields = {f.name for f in dataclasses.fields(cls)}
        kwargs = {k: v for k, v in values.items() if k in fields and k not in ("walls", "setup")}
        kwargs["parameters"] = parameters
        kwargs["gravity"], kwargs["pictures"] = tuple(kwargs["gravity"]), tuple(kwargs["pictures"])
        kwargs["wall_axis"] = kwargs.get("wall_axis") if walls is not None else None
        return cls(setup=name, walls=walls, _converted=True, **kwargs)

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
                raise ConfigError(f"{source}: unknown key {raw_key!r}{closest(str(raw_key))}")
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
        check_applicable({**current, **applied}, {k: source for k in applied})
        return self.replace(**applied)

    def replace(self, **changes) -> "RunConfig":
        """A copy with ``changes`` (typed field values; checked again)."""
        return dataclasses.replace(self, **changes)

    def flat(self) -> Dict[str, Any]:
        """The schema's flat keys and values of this run (the inverse of ``build``)."""
        d = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name in OPTIONS and f.name != "walls"}
        d.update(self.parameters)
        w = self.walls
        d["walls"] = w is not None
        if w is not None:
            d["t_bottom"], d["t_top"] = w["T_bottom"], w["T_top"]
            d["adiabatic"] = next(k for k, v in ADIABATIC.items() if v == (w["adiabatic_bottom"], w["adiabatic_top"]))
            d["wall_scheme"] = w["scheme"]
        else:
            d["t_bottom"], d["t_top"], d["adiabatic"] = (OPTIONS["t_bottom"].default, OPTIONS["t_top"].default,
                                                         OPTIONS["adiabatic"].default)
            d["wall_scheme"] = OPTIONS["wall_scheme"].default
        return d

    def physics(self) -> Dict[str, Any]:
        """What a checkpoint must agree with to be resumed by this run: the lattice, the
        operator and its parameters, gravity, walls, the kernels' precision."""
        three = {"lz": self.lz, "wall_axes": self.wall_axes, "lid": self.lid, "geometry": self.geometry,
                 "geometry_digest": self.geometry_digest} if self.dimension == 3 else \
            {"wall_axes": self.wall_axes, "lid": self.lid} if self.wall_axes else {}   # 2D bounce-back walls
        opened = {k: getattr(self, k) for k in ("inlet", "inlet_speed", "inlet_profile", "outlet", "outlet_density",
                                                "outflow", "slip")} if (self.inlet or self.outlet or self.outflow
                                                                        or self.slip) else {}
        if self.inlet_temperature is not None:     # a run without one keeps the identity it had
            opened["inlet_temperature"] = self.inlet_temperature
        three.update(opened)       # open faces (a run without them keeps the identity it had)
        return {"lx": self.lx, "ly": self.ly, **three, "collision": self.collision, "parameters": dict(self.parameters),
                "gravity": list(self.gravity), "walls": self.walls, "precision": self.precision,
                **({"wall_axis": self.wall_axis} if self.wall_axis else {}),
                **({"storage": self.storage} if self.storage else {}), "velocity_set": self.velocity_set}


def _reynolds_values(values: Mapping[str, Any], given: Mapping[str, str]) -> Dict[str, Any]:
    """--re of the taylor-green vortex: the operator's viscosity parameter from Re = U L / nu
    (``lbgen.model.physics.taylor_green_numbers``: L = N / (2 pi), U = amplitude / r) and, without
    --steps, the steps to t = TAYLOR_GREEN_END t_c.  Refused: a cube it is not, or the viscosity
    parameter given beside it."""
    from lbgen.model.physics import scale_factor, taylor_green_length, velocity_to_lattice, viscosity_parameters
    from lbgen.run.setups import TAYLOR_GREEN_AMPLITUDE, TAYLOR_GREEN_END
    shape = (values["lx"], values["ly"], values["lz"])
    if len(set(shape)) != 1:
        raise ConfigError(f"--re {values['re']:g}: the Taylor-Green vortex of Re = U L / nu, L = N / (2 pi), lives on "
                          f"a cube; this lattice is {' x '.join(map(str, shape))}: give --lx, --ly and --lz equal")
    r = scale_factor(values["velocity_set"])
    amplitude = values.get("amplitude")
    U = velocity_to_lattice(abs(TAYLOR_GREEN_AMPLITUDE if amplitude is None else amplitude), r)
    if U == 0:
        raise ConfigError(f"--re {values['re']:g}: the vortex has no speed (--amplitude 0); give --amplitude > 0")
    L = taylor_green_length(shape[0])
    out: Dict[str, Any] = viscosity_parameters(values["collision"], U * L / values["re"], r=r)
    for key in out:
        if key in given:
            raise ConfigError(f"{given[key]}: --{key.lower()} and --re {values['re']:g} both set the viscosity; "
                              f"give one of them")
    if "steps" not in given:
        out["steps"] = math.ceil(TAYLOR_GREEN_END * L / U)
    return out


def _check_walls(walls: Mapping) -> Dict:
    keys = ("T_bottom", "T_top", "adiabatic_bottom", "adiabatic_top", "scheme")
    extra = sorted(set(walls) - set(keys))
    if extra:
        raise ConfigError(f"walls: unknown keys {extra}; allowed: {', '.join(keys)}")
    out = {"scheme": convert("wall_scheme", walls.get("scheme", OPTIONS["wall_scheme"].default), "walls")}
    for k in keys[:4]:
        v = walls.get(k, 1.0 if k.startswith("T") else False)
        try:
            out[k] = as_bool(v) if k.startswith("adiabatic") else as_float(v)
        except ValueError as e:
            raise ConfigError(f"walls: {k}={v!r} {e}") from None
        if k.startswith("T") and not out[k] > 0:
            raise ConfigError(f"walls: {k}={v!r} must be a positive temperature")
    return out
