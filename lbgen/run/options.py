"""The options of a run: one table (``SCHEMA``) of keys, kinds, defaults, allowed values,
help texts and resume rules, and ``convert``, which turns a value from the command line,
a TOML file or Python into the option's type or refuses it naming the source and the key.
``lbgen.run.config.RunConfig`` is built from these; the `lbgen run` options are generated
from them."""
from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterable, Mapping, Optional, Tuple

from lbgen.codegen.spec import BACKENDS, PRECISIONS, STREAMING, time_block_value
from lbgen.codegen.layouts import LAYOUTS, LayoutError, check_vl
from lbgen.codegen.storage import STORAGES
from lbgen.model.convection import CRITICAL_ASPECT, DEFAULT_PRANDTL
from lbgen.model.operators import DEFAULT_OPERATOR, OPERATORS, all_parameters, operator
from lbgen.model.catalog import (DEFAULT_VELOCITY_SET, MODEL_SETS, SETS_3D, VELOCITY_SETS, run_set, set_entry,
                                 set_names, sets_help)
from lbgen.model.catalog import DEFAULT_SCHEME as DEFAULT_WALL_SCHEME, SCHEMES as WALL_SCHEMES
from lbgen.output import PICTURE_QUANTITIES, parse_clim, window_option
from lbgen.run.flows import FLOWS
from lbgen.run.setups import SETUPS
from lbgen.simulation.open_faces import PROFILES
from lbgen.run.boundary_options import as_axes, as_face, as_faces, as_lid, as_outlets
from lbgen.run.values import as_bool, as_float, as_gravity, as_int, as_pictures  # noqa: F401 - the converters
from lbgen.simulation.bodies import SCHEMES as BODY_SCHEMES

#: the lattice of a 3D run when --lx/--ly/--lz are not given
DEFAULT_SIZE_3D = {"lx": 32, "ly": 32, "lz": 32}

ADIABATIC = {"none": (False, False), "bottom": (True, False), "top": (False, True), "both": (True, True)}


class ConfigError(ValueError):
    """A run description that cannot be run (the message names the key and the source)."""


@dataclass(frozen=True)
class Option:
    key: str
    kind: str                    # int, float, bool, choice, str, path, gravity, pictures, vl, split, time_block,
    #                              axes, lid (walls and lids: Simulation's forms)
    default: Any
    help: str
    choices: Tuple[str, ...] = ()
    minimum: Optional[float] = None
    resumable: bool = False      # may change on --resume (harmless: steps, cadences, pictures, threads)
    cli: bool = True             # an `lbgen run` option
    flag: Optional[str] = None   # click declaration when not --<key>
    optional: bool = False       # None allowed (means: derived / not given)
    identity: bool = False       # determines the trajectory: part of the run identity every checkpoint carries
    #                              (lbgen.run.identity); a resume refuses a checkpoint with another value

    @property
    def flag_name(self) -> str:
        """The command-line flag: --lx, --c1, --t-bottom (--walls for a --walls/--periodic pair)."""
        return (self.flag or "--" + self.key.lower().replace("_", "-")).split("/")[0]


def _operator_options() -> Tuple[Option, ...]:
    return tuple(Option(p.name, "float", p.default, f"{p.meaning} ({p.allowed}; "
                        f"{'/'.join(n for n in OPERATORS if p.name in operator(n).parameter_names)} only).", identity=True)
                 for p in all_parameters().values())


SCHEMA: Tuple[Option, ...] = (
    Option("setup", "choice", "shear-wave", "Named set-up.", choices=tuple(SETUPS), cli=False, identity=True),
    Option("lx", "int", 64, "Lattice width (periodic in X).", minimum=1, identity=True),
    Option("ly", "int", 256, "Lattice height.", minimum=1, identity=True),
    Option("lz", "int", None, "Lattice depth: a 3D run (a d3q* velocity set; default 32, and 32 x 32 for --lx, "
           "--ly).", minimum=1, optional=True, identity=True),
    Option("steps", "int", 1000, "Total steps (also when resuming).", minimum=0, resumable=True),
    Option("collision", "choice", DEFAULT_OPERATOR, "Collision operator.", choices=OPERATORS, identity=True),
    *_operator_options(),
    Option("gravity", "gravity", (0.0, 0.0), "GX,GY (3D: GX,GY,GZ) acceleration in model units (force per step "
           "g/r).", identity=True),
    Option("walls", "bool", False, "Thermal walls at bottom and top (else periodic in Y).",
           flag="--walls/--periodic", identity=True),
    Option("wall_axis", "choice", None, "Axis of the thermal walls: x, y or z in 3D (default z), x or y in 2D (default "
           "y); gravity, the depth, Nu and the profiles follow it.", choices=("x", "y", "z"), optional=True, identity=True),
    Option("t_bottom", "float", 1.0, "Bottom wall temperature.", minimum=0.0, identity=True),
    Option("t_top", "float", 1.0, "Top wall temperature.", minimum=0.0, identity=True),
    Option("ra", "float", 1e4, "Rayleigh number of the rayleigh-benard set-up, with the effective depth (between "
           "the measured isothermal planes): sets gravity.", minimum=0.0, identity=True),
    Option("pr", "float", DEFAULT_PRANDTL, "Prandtl number nu/kappa of the rayleigh-benard set-up: sets C2 = C1/Pr "
           "(regularized; single-relaxation operators have Pr = 1).", minimum=1e-6, identity=True),
    Option("aspect", "float", CRITICAL_ASPECT, "Periodic length over the effective depth of the rayleigh-benard set-up "
           "(default one critical wavelength 2 pi/3.117): sets LX (3D: LX and LY).", minimum=1e-6, identity=True),
    Option("adiabatic", "choice", "none", "Which walls are adiabatic (copy the fourth row's temperature).",
           choices=tuple(ADIABATIC), identity=True),
    Option("wall_scheme", "choice", DEFAULT_WALL_SCHEME, "Wall scheme: lbgen, or reference (the production code's "
           "bc: every row keeps its mass, bare bracket, fourth-row T + |a|^2/8; docs/physics.md, Walls).", choices=WALL_SCHEMES,
           identity=True),
    Option("velocity_set", "choice", DEFAULT_VELOCITY_SET, f"Velocity set: {sets_help()}.  The third-order "
           "sets conduct heat as kappa/T^2: use d2q37 for large temperature contrasts (docs/physics.md).",
           choices=tuple(VELOCITY_SETS) + SETS_3D, identity=True),
    Option("wall_axes", "axes", None, "The axes whose two faces are half-way bounce-back no-slip walls, e.g. y "
           "(channel between walls), yz (duct) or xy (2D cavity); the others are periodic.", optional=True,
           identity=True),
    Option("lid", "lid", None, "Moving walls FACE=UX,UY[,UZ] (model units, in the face's plane; FACE x-low ... "
           "z-high of a wall axis; two components in 2D, three in 3D), several separated by ';'.", optional=True,
           identity=True),
    Option("inlet", "face", None, "Velocity inlet face (x-low ... z-high): velocity bounce-back (Ladd) at "
           "--inlet-speed with --inlet-profile; the opposite face needs a kind too.", optional=True, identity=True),
    Option("inlet_speed", "float", 0.05, "Inlet speed into the lattice, model units (a parabolic profile's centre "
           "speed); at most Mach 0.5, as lids.", identity=True),
    Option("inlet_profile", "choice", "uniform", "Inlet profile: uniform, parabolic (the channel's parabola "
           "across a walled tangential axis, the rectangular duct's series across two) or biparabolic (the "
           "product of the two parabolas: the DFG 3D inflow).", choices=PROFILES, identity=True),
    Option("inlet_temperature", "float", None, "Inlet temperature T_in (units of the reference T0 = 1, > 0) of a "
           "thermal set (d2q37, d2v17, d3q39, d3q103), whose inlets are the set's equilibrium at the inlet's "
           "velocity and T_in; default 1.", optional=True, minimum=0.0, identity=True),
    Option("outlet", "outlets", None, "Pressure outlets FACE or FACE=RHO (anti-bounce-back at that density, "
           "else --outlet-density), several separated by ';': x-low=1.01;x-high=0.99 drives by a pressure "
           "difference.", optional=True, identity=True),
    Option("outlet_density", "float", 1.0, "Density of the outlets given without one, model units (pressure "
           "c_s^2 rho).", minimum=1e-6, identity=True),
    Option("outflow", "face", None, "Outflow face: zero gradient, nothing imposed (vortices leave).", optional=True,
           identity=True),
    Option("slip", "faces", None, "Free-slip (specular) walls: axes (both faces, e.g. y) or faces (z-high).",
           optional=True, identity=True),
    Option("geometry", "path", None, "Voxel mask .npy of the lattice's shape, (LX, LY) in 2D or (LX, LY, LZ) in "
           "3D, bool or uint8 0/1 (1: solid), or a closed mesh .stl/.obj/.ply (3D); links into solid voxels bounce "
           "back; the force on the body is reported.", optional=True),
    Option("body_bc", "choice", BODY_SCHEMES[0], "Bounce-back on the --geometry body: halfway, bouzidi "
           "(linear interpolated: Bouzidi et al. 2001, each link's wall distance from the mesh) or quadratic "
           "(their quadratic interpolation).", choices=BODY_SCHEMES,
           identity=True),
    Option("stl_scale", "float", 1.0, "Lattice sites per unit of a --geometry mesh.", minimum=0.0, identity=True),
    Option("stl_rotate", "str", None, "Turn a --geometry mesh: AX,AY,AZ degrees about x, y, z.", optional=True,
           identity=True),
    Option("stl_offset", "str", None, "Move a --geometry mesh's origin to X,Y,Z (sites).", optional=True,
           identity=True),
    Option("re", "float", None, "Reynolds number: U D / nu of a flow around a body (cylinder: 20 for the DFG case "
           "2D-1, 100 for 2D-2; cylinder3d, sphere; default 20), or U L / nu of the taylor-green vortex (L = N / "
           "(2 pi); without --steps it runs to t = 20 L / U): sets the viscosity (--tau; regularized --c1).",
           minimum=1e-6, optional=True, identity=True),
    Option("cells_per_diameter", "int", None, "Lattice sites across the body of a flow around it (cylinder default "
           "20, cylinder3d and sphere 10): sets the lattice.", minimum=4, optional=True, identity=True),
    Option("steady", "float", None, "Stop a flow around a body at steady state: when its drag's means over the last "
           "periods of the channel's sound (4 LX / c_s steps) agree to this fraction (e.g. 2e-4); --steps caps it.",
           minimum=0.0, optional=True, resumable=True),
    Option("backend", "choice", "c", "Backend.", choices=BACKENDS),
    Option("layout", "choice", None, "Data layout (default: the fastest valid for the backend, or the tuned one).",
           choices=tuple(LAYOUTS), optional=True),
    Option("vl", "vl", None, "Cluster length for csoa/caosoa (a power of two dividing LY), or 'auto' "
           "(time the candidates once and remember the best; see lbgen tune).", optional=True),
    Option("precision", "choice", "double", "Floating-point precision.", choices=PRECISIONS, identity=True),
    Option("storage", "choice", None, "Populations' storage apart from --precision's arithmetic (every backend): fp64, fp32, "
           "fp16s (half of (f - w) 2^15) or fp16c (1-4-11 of f - w); default the precision's own (docs/physics.md).",
           choices=tuple(STORAGES), optional=True, identity=True),
    Option("streaming", "choice", "pull", "Streaming: pull (two population buffers) or inplace (one buffer, the AA "
           "pattern: half the populations' memory; the fused kernels of c, opencl or cuda, one step per sweep, not "
           "with the thermal walls; open faces, bodies and mpiexec ranks on c; bit-identical to pull in strict "
           "builds; docs/architecture.md).", choices=STREAMING, resumable=True),
    Option("fused", "bool", True, "One sweep per step: propagate+collide (periodic) or propagate+bc+collide (walls); --no-fused: "
           "separate sweeps.", flag="--fused/--no-fused"),
    Option("time_block", "time_block", "auto", "Steps per sweep through cache (temporal blocking, C backend on one "
           "device, periodic or walls; bit-identical in strict builds), or 'auto': the depth lbgen tune stored for "
           "this machine, else 3 (1 where blocking does not run: other backends, --hetero, --no-fused; under MPI "
           "auto is 1 and N exchanges N x H wide halos every N steps, H = 3 in 2D, 1 in 3D). "
           "Outputs, checkpoints and guards see the state between sweeps: cadences that are multiples of it keep "
           "every sweep blocked, the other steps run singly.", resumable=True),
    Option("strict", "bool", False, "No FMA contraction (bitwise-comparable builds).", flag="--strict/--no-strict"),
    Option("threads", "int", 0, "OpenMP threads (0: OMP_NUM_THREADS or all cores).", minimum=0, resumable=True),
    Option("seed", "int", 0, "Seed of random set-ups.", minimum=0, identity=True),
    Option("amplitude", "float", None, "Amplitude of the set-up (wave, noise or interface; taylor-green: U in model "
           "units, its Mach number on D3Q19/D3Q27).", optional=True, identity=True),
    Option("init", "path", None, ".npz with rho, ux, uy, T of shape (LX, LY) (3D: rho, ux, uy, uz, T of shape (LX, LY, LZ); physical fields, as --save writes them); sets the lattice size.", optional=True),
    Option("save", "path", None, "Write the final (physical, half-step) fields to this .npz.", optional=True, resumable=True),
    Option("out", "path", None, "Run folder: fields (h5 + vti), pictures, series, manifest.json, checkpoints.",
           optional=True),
    Option("output_every", "int", 0, "Outputs every K steps (0: start and end).", minimum=0, resumable=True),
    Option("checkpoint_every", "int", 0, "Checkpoint every K steps (needs --out).", minimum=0, resumable=True),
    Option("check_every", "int", 100, "NaN / negative rho or T guard every K steps.", minimum=0, resumable=True),
    Option("pictures", "pictures", ("T",), f"Comma list of {', '.join(PICTURE_QUANTITIES)} (or none); default T, vorticity for isothermal sets.",
           resumable=True),
    Option("series_every", "int", 0, "series.csv row every K steps (0: about 200 rows, at most one every 10 steps: a row costs about a step).",
           minimum=0, resumable=True),
    Option("pictures_every", "int", 0, "A movie frame (frames/step-*.npz, what lbgen movie draws) every K steps "
           "(0: about 100 per run, a multiple of the time block).", minimum=0, resumable=True),
    Option("window", "window", "auto", "Part of the lattice pictures and movies show, in sites: x0:x1,y0:y1 "
           "(half-open; an end left out is the edge), auto (the rows where the flow differs visibly from the "
           "wall layers in any recorded step, with a margin) or full.", resumable=True),
    Option("dpi", "float", None, "Picture resolution in dots per inch (default: 1200 px on the long side).",
           minimum=0.0, optional=True, resumable=True),
    Option("clim", "clim", None, "FIELD=LO,HI colour limits of a picture field, repeatable (TOML: a list of "
           "such strings); default: from the set-up's physics, recorded in manifest.json.", optional=True),
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


# --- when an option has an effect -----------------------------------------------------------
def _needs_out(v) -> Optional[str]:
    return None if v["out"] else "it only affects what a run folder gets: give --out DIR"


def _from_init(v) -> Optional[str]:
    return f"the initial state and the lattice size come from the --init file {v['init']}" if v["init"] else None


def _needs_walls(v) -> Optional[str]:
    return None if v["walls"] else "it needs walls (--walls, or the rayleigh-taylor set-up)"


def _wall_temperature(side: str) -> Callable[[Mapping[str, Any]], Optional[str]]:
    def rule(v) -> Optional[str]:
        if not v["walls"]:
            return _needs_walls(v)
        if ADIABATIC[v["adiabatic"]][0 if side == "bottom" else 1]:
            return (f"the {side} wall is adiabatic (--adiabatic {v['adiabatic']}): it takes the fluid's "
                    f"temperature, none is imposed")
        return None
    return rule


def _seed(v) -> Optional[str]:
    if v["init"]:
        return _from_init(v)
    if not SETUPS[v["setup"]].random:
        return (f"the {v['setup']} set-up is not random (seeded set-ups: "
                f"{', '.join(n for n, s in SETUPS.items() if s.random)})")
    return None


def _amplitude(v) -> Optional[str]:
    if v["init"]:
        return _from_init(v)
    setup = SETUPS.get(v["setup"])
    if setup is not None and not setup.uses_amplitude:
        return f"the {v['setup']} set-up starts at rest: it has no amplitude"
    return None


def _convection(v) -> Optional[str]:
    return None if v["setup"] == "rayleigh-benard" else (
        f"it shapes the rayleigh-benard set-up (this run's set-up is {v['setup']})")


def _reynolds(v) -> Optional[str]:
    if v["setup"] in FLOWS:
        return None
    if v["init"]:
        return _from_init(v)
    return None if v["setup"] == "taylor-green" else (
        f"it sets the viscosity of the taylor-green vortex (Re = U L / nu) and of the flows around bodies "
        f"({', '.join(FLOWS)}); the {v['setup']} set-up has none (give --tau)")


def _dpi(v) -> Optional[str]:
    return _needs_out(v) or (None if v["pictures"] else "no pictures are drawn (--pictures none)")


def _keep_checkpoints(v) -> Optional[str]:
    return _needs_out(v) or (None if v["checkpoint_every"] else "no checkpoints are written: give --checkpoint-every K")


def _operator_parameter(key: str) -> Callable[[Mapping[str, Any]], Optional[str]]:
    def rule(v) -> Optional[str]:
        op = operator(v["collision"])
        if key not in op.parameter_names:
            owners = ", ".join(n for n in OPERATORS if key in operator(n).parameter_names)
            return (f"it is a parameter of {owners}, not of the {op.name} operator (its parameters: "
                    f"{', '.join(op.parameter_names)})")
        order, entry = all_parameters()[key].order, set_entry(v["velocity_set"])
        if order > entry.order:
            return (f"{entry.label} is a Hermite order-{entry.order} set: its {op.name} kernel has no order-{order} "
                    f"moments to relax, so {key} is never read")
        return None
    return rule


def _cumulant_limiter(v) -> Optional[str]:
    """The operator's rule, then: the limiter moves the third-order rate omega3 towards 1, so at omega3 = 1
    (the cumulants to equilibrium in one step) it changes nothing."""
    reason = _operator_parameter("cumulant_limiter")(v)
    if reason is None and v.get("omega3", 1.0) == 1.0:
        return ("the limiter moves the third-order rate omega3 towards 1, and --omega3 is 1 (the default): give "
                "--omega3 in (0, 2) other than 1")
    return reason


def _threads(v) -> Optional[str]:
    return None if v["backend"] == "c" else f"OpenMP threads apply to the C backend, not --backend {v['backend']}"


def _time_block(v) -> Optional[str]:
    if v["time_block"] in (1, "auto"):
        return None
    if v.get("streaming") == "inplace":
        return "temporal blocking (fused_tb) is a pull sweep; --streaming inplace steps once per sweep"
    if v["backend"] != "c" or v["hetero"] or not v["fused"]:
        what = (f"--backend {v['backend']}" if v["backend"] != "c" else
                f"--hetero {v['hetero']}" if v["hetero"] else "--no-fused")
        return f"temporal blocking runs the fused kernels of the C backend on one device, not with {what}"
    return None


def _streaming(v) -> Optional[str]:
    """--streaming inplace: the fused kernels of one backend (c, opencl, cuda), one step per sweep, no
    thermal walls; open faces and bodies on every backend (mpiexec ranks: the C backend's)."""
    if v["streaming"] != "inplace":
        return None
    what = (f"--hetero {v['hetero']}" if v["hetero"] else
            "--no-fused" if not v["fused"] else "the thermal --walls" if v.get("walls") else None)
    return f"in-place streaming runs the fused kernels of one backend, one step per sweep, not with {what}" if what else None


def _inlet_temperature(v) -> Optional[str]:
    """--inlet-temperature: the temperature of a velocity inlet on a thermal set."""
    if not v.get("inlet"):
        return "it is the temperature of the velocity inlet: it needs --inlet"
    if set_entry(v["velocity_set"]).isothermal:
        return (f"{v['velocity_set']} is isothermal (T = 1): an inlet temperature needs a thermal set "
                f"(d2q37, d2v17, d3q39, d3q103)")
    return None


def _device(v) -> Optional[str]:
    return None if "opencl" in (v["backend"], v["hetero"]) else (
        "it selects an OpenCL device: it needs --backend opencl or --hetero opencl")


def dimension(v) -> int:
    """2 or 3: the dimension of the run ``v`` describes (its velocity set's)."""
    return set_entry(v["velocity_set"]).D


def _only_3d(what: str) -> Callable[[Mapping[str, Any]], Optional[str]]:
    def rule(v) -> Optional[str]:
        return None if dimension(v) == 3 else (f"{what} of a 3D run: choose a 3D velocity set "
                                               f"(--velocity-set {set_names(SETS_3D)})")
    return rule


_NO_WALL_TEMPERATURE = ("the 3D thermal walls (across z, or --wall-axis) need a thermal 3D set (--velocity-set d3q39 or d3q103); an "
                        "isothermal 3D run's walls (half-way bounce-back, --wall-axes) impose no temperature and "
                        "conduct no heat")
#: why an option of 2D runs has no effect in a 3D run (``_in_2d``)
NOT_IN_3D = {
    "walls": "--walls/--periodic are the thermal walls (2D: across y or --wall-axis x; 3D: across z or --wall-axis, on the thermal sets "
             "d3q39 and d3q103); an isothermal 3D run has no-slip walls on the axes --wall-axes names (e.g. --wall-axes y)",
    "t_bottom": _NO_WALL_TEMPERATURE, "wall_axis": _NO_WALL_TEMPERATURE,
    "t_top": _NO_WALL_TEMPERATURE,
    "adiabatic": _NO_WALL_TEMPERATURE,
    "wall_scheme": "the wall schemes are those of the thermal walls (2D, and 3D on d3q39 and d3q103); an isothermal "
                   "3D run's walls are half-way bounce-back (--wall-axes)",
    "window": "3D pictures show the whole mid-plane slices (a window is a range of rows of a 2D picture)",
    "pictures_every": "movie frames are drawn from 2D fields (a 3D run keeps none); a 3D run draws its pictures "
                      "at --output-every",
}


def _depth(v) -> Optional[str]:
    """--lz: the depth of a 3D run, unless an --init file gives the lattice."""
    return _only_3d("it is the depth")(v) or _from_init(v)


def _mesh_option(v) -> Optional[str]:
    from lbgen.geometry.mesh import is_mesh
    return None if is_mesh(v.get("geometry") or "") else "it places a --geometry mesh (.stl): give --geometry MESH"


def _bounce(what: str) -> Callable[[Mapping[str, Any]], Optional[str]]:
    """Bounce-back walls, lids and voxel masks: any D, but not beside the thermal walls of a 2D run."""
    def rule(v) -> Optional[str]:
        return (f"{what} (bounce-back); this 2D run has the thermal walls on y (--walls): bounce-back walls, "
                f"lids and masks run without them (--periodic)" if dimension(v) == 2 and v.get("walls") else None)
    return rule


#: the thermal walls' options that a 3D run of a thermal set takes (its walls across z, or --wall-axis)
THERMAL_WALLS_3D = ("walls", "wall_axis", "t_bottom", "t_top", "adiabatic", "wall_scheme")


def _in_2d(key: str, rule: Optional[Callable[[Mapping[str, Any]], Optional[str]]]):
    def checked(v) -> Optional[str]:
        if dimension(v) == 3 and key in THERMAL_WALLS_3D and not set_entry(v["velocity_set"]).isothermal:
            return rule(v) if rule is not None else None
        if dimension(v) == 3 and key in NOT_IN_3D:
            return NOT_IN_3D[key]
        return rule(v) if rule is not None else None
    return checked


#: When each option has an effect: key -> rule(values) giving the reason it has none in the
#: run described by ``values`` (every flat key, defaults filled in), or None where it has one.
#: An option given explicitly (command line, TOML, Python) where its rule gives a reason is
#: refused before any work (``check_applicable``).  Options without a rule always apply;
#: tests/run/test_effects.py checks that each of those changes something observable.
APPLIES: Dict[str, Callable[[Mapping[str, Any]], Optional[str]]] = {
    "lx": _from_init, "ly": _from_init, "amplitude": _amplitude, "seed": _seed, "re": _reynolds,
    **{k: _operator_parameter(k) for k in all_parameters()}, "cumulant_limiter": _cumulant_limiter,
    "t_bottom": _wall_temperature("bottom"), "t_top": _wall_temperature("top"),
    "adiabatic": _needs_walls, "wall_scheme": _needs_walls, "wall_axis": _needs_walls,
    **{k: _convection for k in ("ra", "pr", "aspect")},
    "threads": _threads, "time_block": _time_block, "device": _device, "streaming": _streaming,
    "split": lambda v: None if v["hetero"] else "it sets the host share of a host + device run: it needs --hetero",
    "host_columns": lambda v: None if v["hetero"] else ("it is the host columns M of a host + device run (resolved "
                                                        "from --split): it needs --hetero"),
    "output_every": _needs_out, "checkpoint_every": _needs_out, "series_every": _needs_out,
    "pictures": _needs_out, "fields_format": _needs_out, "clim": _needs_out, "dpi": _dpi,
    "pictures_every": _dpi, "window": _dpi,
    "keep_checkpoints": _keep_checkpoints,
    "lz": _depth, "wall_axes": _bounce("they are the no-slip walls"),
    "lid": _bounce("it is a moving wall"), "geometry": _bounce("it is the voxel mask"),
    "inlet": _bounce("it is an open face"), "outlet": _bounce("it is an open face"),
    "outflow": _bounce("it is an open face"), "slip": _bounce("they are free-slip walls"),
    "inlet_speed": lambda v: None if v.get("inlet") else "it is the speed of the velocity inlet: it needs --inlet",
    "inlet_profile": lambda v: None if v.get("inlet") else "it is the profile of the velocity inlet: it needs --inlet",
    "inlet_temperature": _inlet_temperature,
    "outlet_density": lambda v: None if v.get("outlet") and None in as_outlets(v["outlet"]).values() else (
        "it is the density of the pressure outlets given without one: it needs --outlet FACE (not FACE=RHO)"),
    "body_bc": lambda v: None if v.get("geometry") or v.get("setup") in FLOWS else (
        "it is the bounce-back on a body: give --geometry FILE"),
    **{k: (lambda v: None if v.get("setup") in FLOWS else f"it belongs to the flows around bodies "
           f"({', '.join(FLOWS)})") for k in ("cells_per_diameter", "steady")},
    **{k: _mesh_option for k in ("stl_scale", "stl_rotate", "stl_offset")},
}
APPLIES.update({k: _in_2d(k, APPLIES.get(k)) for k in NOT_IN_3D})


def check_applicable(values: Mapping[str, Any], given: Mapping[str, str]) -> None:
    """Refuse (ConfigError naming the source, the option and the reason) every option in
    ``given`` (key -> where it was given) that has no effect in the run ``values`` (an empty
    value -- none, no pictures -- asks for nothing and passes)."""
    for key, source in given.items():
        if values.get(key) in (None, ()):     # asking for nothing (--pictures none) holds trivially
            continue
        rule = APPLIES.get(key)
        reason = rule(values) if rule is not None else None
        if reason:
            flag = OPTIONS[key].flag_name if OPTIONS[key].cli else key
            raise ConfigError(f"{source}: {flag} has no effect in this run: {reason}. Leave it out.")


def normalise_key(key: str) -> str:
    """TOML and Python spellings: 'C1', 'c1', 'output-every' -> the schema key."""
    k = str(key).replace("-", "_")
    for name in OPTIONS:
        if name.lower() == k.lower():
            return name
    return k


def closest(key: str) -> str:
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
            v = as_int(value)
            if opt.minimum is not None and v < opt.minimum:
                raise ValueError(f"must be >= {int(opt.minimum)}")
            return v
        if kind == "float":
            v = as_float(value)
            if opt.minimum is not None and not v > opt.minimum:
                raise ValueError(f"must be > {opt.minimum:g}")
            return v
        if kind == "bool":
            return as_bool(value)
        if kind == "choice":
            v = str(value) if not isinstance(value, bool) else None
            if v not in opt.choices:
                if key == "velocity_set" and v is not None and v.lower() in MODEL_SETS:
                    try:
                        run_set(v)              # a set of another dimension: refused in words
                    except ValueError as e:
                        raise ConfigError(f"{where + ': ' if where else ''}{e}") from None
                noun = "collision operator" if key == "collision" else key.replace("_", " ")
                raise ConfigError(f"{where + ': ' if where else ''}unknown {noun} {value!r}; "
                                  f"choose one of {', '.join(opt.choices)}")
            return v
        if kind in ("str", "path"):
            if not isinstance(value, (str, bytes)) and not hasattr(value, "__fspath__"):
                raise ValueError("must be a string")
            return str(value)
        if kind == "gravity":
            return as_gravity(value)
        if kind == "axes":
            return as_axes(value)
        if kind == "lid":
            return as_lid(value)
        if kind == "face":
            return as_face(value)
        if kind == "faces":
            return as_faces(value)
        if kind == "outlets":
            return as_outlets(value)
        if kind == "pictures":
            return as_pictures(value)
        if kind == "clim":
            return parse_clim(value) or None
        if kind == "vl":
            try:
                return check_vl(value, allow_auto=True)
            except LayoutError as e:
                raise ConfigError(f"{where + ': ' if where else ''}{e}") from None
        if kind == "window":
            return window_option(value)
        if kind == "time_block":
            try:
                return time_block_value(value)
            except ValueError as e:
                raise ConfigError(f"{where + ': ' if where else ''}{e}") from None
        if kind == "split":
            if isinstance(value, str) and value.strip().lower() == "auto":
                return "auto"
            v = as_float(value)
            if not 0 <= v <= 1:
                raise ValueError("must be 'auto' or a host fraction 2M/LX in [0, 1]")
            return str(v)
    except ConfigError:
        raise
    except ValueError as e:
        raise ConfigError(f"{label}={value!r} {e}") from None
    raise AssertionError(kind)  # pragma: no cover


def cli_options() -> Iterable[Option]:
    return (o for o in SCHEMA if o.cli)
