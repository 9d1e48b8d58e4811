"""The effect audit: every option of the run description either has an observable effect or
is refused where it has none (issue "Trust, round three").

Generated from the schema: ``EFFECTS`` must name every option of ``lbgen.run.options.SCHEMA``
with a context and two values whose runs differ in something a user can observe (the final
populations, the files of the run folder, the manifest, the kernel-call log); ``REFUSED``
must name every option that has an applicability rule (``options.APPLIES``) with a context
where the rule refuses it, before any work.  A new option without either fails here.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from lbgen.run.config import RunConfig
from lbgen.run.driver import Run
from lbgen.run.flows import FLOWS
from lbgen.run.options import APPLIES, SCHEMA, ConfigError

pytestmark = pytest.mark.slow

BASE = {"lx": 8, "ly": 32, "steps": 4}
RT = {"setup": "rayleigh-taylor", "gravity": "0,-1e-4"}
#: a small Rayleigh-Benard layer (Ra = 1000: its gravity from --ra)
RB = {"setup": "rayleigh-benard", "ly": 24}
HETERO = {"hetero": "opencl", "lx": 16}
#: a shallow 3D Rayleigh-Benard layer (D3Q39; tests/run/test_wall_axis.py's): --wall-axis is audited in it
WALL_AXIS = {"setup": "rayleigh-benard", "velocity_set": "d3q39", "collision": "bgk", "tau": 0.55, "ra": 10.0,
             "ly": 4, "layout": "soa", "time_block": 1}
#: a small 3D run: the options of 3D runs are audited in it
D3 = {"setup": "taylor-green", "velocity_set": "d3q19", "lx": 8, "ly": 8, "lz": 8, "time_block": 1}
#: a 2D isothermal run: bounce-back walls, lids and masks are audited in it
D2Q9 = {"velocity_set": "d2q9"}
#: a 2D channel between walls on y: the open faces are audited in it
OPEN = {**D2Q9, "wall_axes": "y"}
#: the DFG cylinder (lbgen/run/flows.py) at the fewest sites per diameter it takes: an analytic body,
#: whose links' wall distances are not all 1/2 (on a voxel mask halfway and bouzidi are the same)
CYLINDER = {"setup": "cylinder", "cells_per_diameter": 4}
#: a small 3D run with a triangle mesh body (a box written by trimesh): the --stl-* options are audited in it
MESH = {**D3, "geometry": "MESH", "stl_scale": 2.0, "stl_offset": "4.3,4.2,4.1"}


def _opencl():
    from lbgen.backends import available
    ok, why = available("opencl")
    if not ok:
        pytest.skip(f"OpenCL: {why}")


def fingerprint(tmp_path: Path, name: str, options: dict) -> dict:
    """Run a tiny case and collect everything observable of it."""
    options = dict(options)
    base = _base(options)
    setup = options.pop("setup", None)
    for key in ("out", "save"):
        if options.get(key) is True:
            options[key] = str(tmp_path / f"{name}-{key}" / ("f.npz" if key == "save" else ""))
    cfg = RunConfig.build(setup, ("test", {**base, **options}))
    run = Run(cfg, echo=lambda m: None)
    run.execute()
    state = run.sim.state()
    out = {"state": hashlib.sha256(state.tobytes()).hexdigest() + str(state.shape) + str(state.dtype),
           "step": run.sim.time_step, "sweeps": dict(run.sim.sweeps), "samples": run.samples,
           # the population buffers the run allocated (host arrays: their bytes; device buffers: their count)
           "buffers": [getattr(b, "nbytes", 1) for r in run.sim.regions for b in (r.f, r.g) if b is not None]}
    if cfg.dimension == 2:
        out.update({"calls": sorted((k, v) for r in run.sim.regions for k, v in r.program.calls.items()),
                    "regions": run.sim.region_table(),
                    "provenance": [r.program.provenance() for r in run.sim.regions]})
    if cfg.out:
        root = Path(cfg.out)
        files = sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())
        out["files"] = files
        out["bytes"] = {f: hashlib.sha256((root / f).read_bytes()).hexdigest() for f in files
                        if not f.endswith(("manifest.json", ".owner", ".lock"))}
        manifest = json.loads((root / "manifest.json").read_text())
        out["colour_limits"] = manifest.get("colour_limits")
    if cfg.save:
        with np.load(cfg.save) as saved:
            out["saved"] = hashlib.sha256(saved["rho"].tobytes()).hexdigest()
    return out


def _base(options: dict) -> dict:
    """The tiny lattice, unless an --init file or a flow around a body (its --cells-per-diameter) sets the size."""
    sized = options.get("init") or options.get("setup") in FLOWS
    return {k: v for k, v in BASE.items() if not (sized and k in ("lx", "ly"))}


def _init_file(tmp_path):
    path = tmp_path / "init.npz"
    rng = np.random.default_rng(1)
    np.savez(path, rho=1 + 0.01 * rng.standard_normal((8, 32)), ux=np.zeros((8, 32)), uy=np.zeros((8, 32)),
             T=np.ones((8, 32)))
    return str(path)


#: option -> (context, value A, value B): the runs of A and B must differ observably
EFFECTS = {
    "setup": ({}, {"setup": "shear-wave"}, {"setup": "uniform-noise"}),
    "lx": ({}, 8, 16), "ly": ({}, 32, 64), "steps": ({}, 2, 4),
    "collision": ({}, "bgk", "regularized"),
    "tau": ({}, 0.8, 0.9),
    "C1": ({"collision": "regularized"}, 1e-3, 5e-3),
    "C2": ({"collision": "regularized", "setup": "uniform-noise"}, 1e-3, 5e-3),
    "C3": ({"collision": "regularized", "setup": "uniform-noise"}, 0.5, 0.9),
    "magic": ({**D2Q9, "collision": "trt", "setup": "uniform-noise"}, 0.1875, 0.25),
    "smagorinsky": ({**D2Q9, "collision": "bgk-les", "setup": "uniform-noise"}, 0.1, 0.2),
    "omega_bulk": ({**D2Q9, "collision": "cumulant", "setup": "uniform-noise"}, 1.0, 1.5),
    "omega3": ({**D2Q9, "collision": "cumulant", "setup": "uniform-noise"}, 1.0, 1.5),
    "omega4": ({**D2Q9, "collision": "cumulant", "setup": "uniform-noise"}, 1.0, 1.5),
    "cumulant_limiter": ({**D2Q9, "collision": "cumulant", "setup": "uniform-noise", "omega3": 1.5}, 0.0, 1e-2),
    "gravity": ({}, "0,0", "0,-1e-4"),
    "walls": ({}, False, True),
    "t_bottom": (RT, 1.05, 1.1), "t_top": (RT, 0.95, 0.9),
    "adiabatic": (RT, "none", "top"),
    "ra": (RB, 1000, 1500), "pr": (RB, 0.71, 1.0), "aspect": ({**RB, "lx": None}, 2.0, 3.0),
    "wall_scheme": (RT, "lbgen", "reference"),
    # the 3D thermal walls across x: the z layer turned (its state transposed; tests/run/test_wall_axis.py checks
    # it is exactly that), on the lattices and programs of that test (no compile of its own)
    "wall_axis": (WALL_AXIS, {"lx": 16, "lz": 12}, {"lx": 12, "lz": 16, "wall_axis": "x"}),
    "velocity_set": ({}, "d2q37", "d2q9"),
    "backend": ({}, "c", "opencl"),
    "layout": ({}, "soa", "aos"), "vl": ({"layout": "caosoa"}, 4, 8),
    "precision": ({}, "double", "single"),
    "fused": ({"time_block": 1}, True, False),
    "time_block": ({}, 1, 2),
    "strict": ({**D2Q9, "setup": "uniform-noise", "collision": "regularized"}, False, True),
    "threads": ({}, 1, 2),
    "seed": ({"setup": "uniform-noise"}, 1, 2),
    "amplitude": ({}, 0.05, 0.02),
    "init": ({}, None, "INIT"),
    "save": ({}, None, True),
    "out": ({}, None, True),
    "output_every": ({"out": True, "pictures": "none"}, 0, 2),
    "checkpoint_every": ({"out": True, "pictures": "none"}, 0, 2),
    "check_every": ({"time_block": 1}, 0, 1),
    "pictures": ({"out": True}, "none", "T"),
    "series_every": ({"out": True, "pictures": "none"}, 1, 2),
    "dpi": ({"out": True}, 20, 40),
    "pictures_every": ({"out": True}, 1, 2),
    "window": ({"out": True, **RT}, "full", "0:8,8:24"),
    "clim": ({"out": True}, None, "T=0.9,1.1"),
    "fields_format": ({"out": True, "pictures": "none"}, "h5", "npz"),
    "keep_checkpoints": ({"out": True, "pictures": "none", "checkpoint_every": 1}, 1, 3),
    "hetero": ({"lx": 16}, None, "opencl"),
    "split": (HETERO, "0.5", "1.0"),
    "device": ({"backend": "opencl"}, "0:0", "1:0"),
    "host_columns": (HETERO, None, None),     # internal (cli=False): resolved from split, see below
    "lz": (D3, 8, 16),
    # bounce-back walls, lids and masks in 2D (test_effects3d.py audits them in 3D)
    "wall_axes": (D2Q9, None, "y"),
    "lid": ({**D2Q9, "wall_axes": "y"}, None, "y-high=0.05,0"),
    "geometry": (D2Q9, None, "GEOMETRY"),
    # open faces (lbgen.simulation.open_faces) in 2D: a channel between walls on y
    "inlet": (OPEN, {"outlet": "x-low;x-high"}, {"inlet": "x-low", "outlet": "x-high"}),
    "inlet_speed": ({**OPEN, "inlet": "x-low", "outlet": "x-high"}, 0.02, 0.05),
    "inlet_profile": ({**OPEN, "inlet": "x-low", "outlet": "x-high"}, "uniform", "parabolic"),
    "inlet_temperature": ({"inlet": "x-low", "outflow": "x-high"}, 1.0, 1.05),      # d2q37: the equilibrium inlet
    "outlet": ({**OPEN, "inlet": "x-low"}, "x-high", "x-high=1.01"),
    "outlet_density": ({**OPEN, "inlet": "x-low", "outlet": "x-high"}, 1.0, 1.02),
    "outflow": ({**OPEN, "inlet": "x-low"}, {"outlet": "x-high"}, {"outflow": "x-high"}),
    "slip": ({**D2Q9, "inlet": "x-low", "outlet": "x-high"}, {"wall_axes": "y"}, {"slip": "y"}),
    # bodies: the bounce-back on them, a mesh's placement, the flows around them
    "body_bc": (CYLINDER, "halfway", "bouzidi"),
    "stl_scale": (MESH, 2.0, 3.0),
    "stl_rotate": (MESH, "0,0,0", "0,0,90"),
    "stl_offset": (MESH, "4.3,4.2,4.1", "3.3,4.2,4.1"),
    "re": (CYLINDER, 10.0, 20.0),
    "cells_per_diameter": ({"setup": "cylinder"}, 4, 5),
    # stopping at steady state: the first check (every 100 steps from 100) spanning three periods of the
    # channel's sound (1829 steps)
    "steady": ({**CYLINDER, "steps": 2200}, None, 0.5),
    # the populations' storage apart from the arithmetic (lbgen.codegen.storage)
    "storage": ({**D2Q9, "setup": "uniform-noise"}, "fp64", "fp32"),
    # one population buffer instead of two (the same state: bit-identical in strict builds)
    "streaming": ({}, "pull", "inplace"),
}

#: option -> (context, value) where the option has no effect: refused naming it
REFUSED = {
    "lx": ({"init": "INIT"}, 16), "ly": ({"init": "INIT"}, 64), "amplitude": ({"init": "INIT"}, 0.1),
    "seed": ({}, 3),
    "tau": ({"collision": "regularized"}, 0.9),
    "C1": ({}, 2e-3),
    "C2": ({"collision": "regularized", "velocity_set": "d2q9"}, 2e-3),
    "C3": ({"collision": "regularized", "velocity_set": "d2v17"}, 0.7),
    "magic": ({}, 0.25),
    "smagorinsky": ({"collision": "trt", **D2Q9}, 0.2),
    "omega_bulk": ({**D2Q9}, 1.5), "omega3": ({"collision": "trt", **D2Q9}, 1.5), "omega4": ({}, 1.5),
    "cumulant_limiter": ({"collision": "cumulant", **D2Q9}, 1e-2),      # omega3 = 1: the limiter's rate is 1
    "t_bottom": ({"walls": True, "adiabatic": "bottom"}, 1.2),
    "t_top": ({}, 0.9),
    "adiabatic": ({}, "top"), "wall_scheme": ({}, "reference"), "wall_axis": ({}, "y"),
    "ra": ({}, 2000.0), "pr": ({}, 1.0), "aspect": ({}, 3.0),
    "threads": ({"backend": "opencl"}, 2),
    "time_block": ({"backend": "opencl"}, 2),
    "device": ({}, "0:0"),
    "split": ({}, "0.5"),
    "output_every": ({}, 2), "checkpoint_every": ({}, 2), "series_every": ({}, 2), "pictures": ({}, "T"),
    "fields_format": ({}, "npz"), "clim": ({}, "T=0.9,1.1"),
    "dpi": ({"out": "OUT", "pictures": "none"}, 50),
    "pictures_every": ({"out": "OUT", "pictures": "none"}, 2), "window": ({"out": "OUT", "pictures": "none"}, "0:8,0:16"),
    "keep_checkpoints": ({"out": "OUT"}, 3),
    "lz": ({}, 16),
    # bounce-back walls, lids and masks do not run beside the thermal walls of a 2D run
    "wall_axes": ({"walls": True}, "y"), "lid": ({"walls": True}, "y-high=0.05,0"),
    "geometry": ({"walls": True}, "GEOMETRY"),
    "inlet": ({"walls": True}, "x-low"), "outlet": ({"walls": True}, "x-high"),
    "outflow": ({"walls": True}, "x-high"), "slip": ({"walls": True}, "x"),
    # the inlet's speed and profile without an inlet; the outlets' density where each has its own
    "inlet_speed": (D2Q9, 0.02), "inlet_profile": (D2Q9, "parabolic"),
    # an inlet temperature without an inlet (on an isothermal set: tests/run/test_open_thermal_run.py)
    "inlet_temperature": ({}, 1.05),
    "outlet_density": ({**OPEN, "inlet": "x-low", "outlet": "x-high=1.01"}, 1.02),
    # options of 2D runs only, given to a 3D run
    "walls": (D3, True),
    "host_columns": ({}, 4),
    # bodies: the bounce-back on one without a body; a mesh's placement without a mesh; a flow's numbers elsewhere
    "body_bc": ({}, "bouzidi"),
    "stl_scale": ({"geometry": "GEOMETRY"}, 2.0), "stl_rotate": ({}, "0,0,30"), "stl_offset": ({}, "1,2,3"),
    "re": ({}, 20.0), "cells_per_diameter": ({"setup": "uniform-noise"}, 8), "steady": ({}, 0.01),
    "streaming": ({"fused": False}, "inplace"),
}


def _geometry_file(tmp_path):
    """A voxel mask of the 2D lattice (BASE: 8 x 32) with a 2 x 2 solid block in the middle."""
    path = tmp_path / "body.npy"
    mask = np.zeros((BASE["lx"], BASE["ly"]), dtype=bool)
    mask[3:5, 15:17] = True
    np.save(path, mask)
    return str(path)


def mesh_file(tmp_path) -> str:
    """A closed triangle mesh: a 2 x 1 x 1 box about the origin (turned, it lies otherwise in the lattice)."""
    trimesh = pytest.importorskip("trimesh")
    path = tmp_path / "box.stl"
    trimesh.creation.box(extents=(2.0, 1.0, 1.0)).export(path)
    return str(path)


def _resolve(value, tmp_path):
    if value == "MESH":
        return mesh_file(tmp_path)
    if value == "INIT":
        return _init_file(tmp_path)
    if value == "GEOMETRY":
        return _geometry_file(tmp_path)
    if value == "OUT":
        return str(tmp_path / "refused-out")
    return value


def test_every_option_has_an_effect_or_a_rule():
    keys = {o.key for o in SCHEMA}
    assert set(EFFECTS) == keys, f"options without an effect test: {sorted(keys - set(EFFECTS))}"
    assert set(REFUSED) == set(APPLIES), f"rules without a refusal test: {sorted(set(APPLIES) ^ set(REFUSED))}"


@pytest.mark.parametrize("key", sorted(EFFECTS))
def test_changing_an_option_changes_what_a_user_observes(key, tmp_path, monkeypatch):
    context, a, b = EFFECTS[key]
    if key == "strict":             # the suite's -O1 builds are strict already: --strict shows at the -O3 runs use
        monkeypatch.setenv("LBGEN_OPT_LEVEL", "-O3")
    if "opencl" in (context.get("hetero"), context.get("backend"), a, b):
        _opencl()
    if key == "host_columns":       # internal: the split resolved to M, recorded for resume
        cfg = RunConfig.build(None, ("test", {**BASE, **HETERO, "split": "0.5"}))
        run = Run(cfg, echo=lambda m: None)
        assert run.cfg.host_columns == 4 and run.sim.region_table()[1]["columns"][1] == 8
        return

    def options(value):
        opts = {k: _resolve(v, tmp_path) for k, v in context.items()}
        if isinstance(value, dict):
            opts.update(value)
        elif value is not None:
            opts[key] = _resolve(value, tmp_path)
        return opts
    first = fingerprint(tmp_path, "a", options(a))
    try:
        second = fingerprint(tmp_path, "b", options(b))
    except Exception as e:          # a second OpenCL device that cannot run here: the option is read
        if key != "device":
            raise
        assert "1:0" in str(e) or "device" in str(e).lower()
        return
    assert first != second, f"--{key} {a!r} and {b!r} gave the same observable run"


@pytest.mark.parametrize("key", sorted(REFUSED))
def test_an_option_without_effect_is_refused_before_any_work(key, tmp_path):
    context, value = REFUSED[key]
    opts = {k: _resolve(v, tmp_path) for k, v in context.items()}
    opts[key] = _resolve(value, tmp_path)
    with pytest.raises(ConfigError) as e:
        RunConfig.build(opts.pop("setup", None), ("command line", {**_base({"init": context.get("init")}), **opts}))
    assert "has no effect in this run" in str(e.value) and (key.lower().replace("_", "-") in str(e.value) or key in str(e.value))
    assert not (tmp_path / "refused-out").exists()
