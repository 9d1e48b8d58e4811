"""The effect audit in 3D (tests/run/test_effects.py is the 2D one and the 3D-only options'):
every option of the schema either changes what a user observes of a small 3D run, reaches
the 3D lattice (the kernel options, whose bits the 3D kernel tests observe), or is refused in
a 3D run before any work, in words naming why (``options.NOT_IN_3D`` and the rules).  A new
option without an entry here fails ``test_every_option_is_audited_in_3d``.

The runs share one kernel (D3Q19, BGK, the default layout, C): the audit adds no compiles."""
from __future__ import annotations

import numpy as np
import pytest
from test_effects import fingerprint, mesh_file

from lbgen.run.config import RunConfig
from lbgen.run.driver import Run
from lbgen.run.flows import FLOWS
from lbgen.run.options import NOT_IN_3D, SCHEMA, ConfigError

pytestmark = pytest.mark.slow

#: the small 3D run every entry starts from
D3 = {"setup": "taylor-green", "velocity_set": "d3q19", "lx": 8, "ly": 8, "lz": 8, "steps": 4, "time_block": 1}
OUT = {"out": True, "pictures": "none"}
#: a duct (walls on y and z) from the small 3D run: the open faces are audited in it
DUCT = {"wall_axes": "yz"}
#: a box mesh (trimesh) in the small 3D run, its faces off the half-way planes (Bouzidi's q != 1/2)
MESH = {"geometry": "MESH", "stl_scale": 2.0, "stl_offset": "4.3,4.2,4.1"}
#: the sphere in a stream (lbgen/run/flows.py) at the fewest sites per diameter it takes
SPHERE = {"setup": "sphere", "cells_per_diameter": 4}
#: a shallow 3D Rayleigh-Benard layer (D3Q39, walls across z): --ra, --pr, --aspect set its gravity,
#: diffusivities and periodic lengths (their numbers: tests/run/test_rayleigh_benard.py)
RB3D = {"setup": "rayleigh-benard", "velocity_set": "d3q39", "lz": 40, "ra": 3000.0}

#: option -> (context, value A, value B): two 3D runs that differ observably
EFFECTS3D = {
    "setup": ({}, {"setup": "taylor-green"}, {"setup": "shear-wave"}),
    "lx": ({}, 8, 16), "ly": ({}, 8, 16), "lz": ({}, 8, 16), "steps": ({}, 2, 4),
    "tau": ({}, 0.8, 0.9),
    "gravity": ({}, "0,0,0", "1e-4,0,0"),
    "amplitude": ({}, 0.05, 0.02),
    "re": ({}, 1600, 400),                 # the viscosity (tau) from Re = U L / nu, L = N / (2 pi)
    "time_block": ({}, 1, 2),
    "check_every": ({}, 0, 1),
    "init": ({}, None, "INIT3D"),
    "save": ({}, None, True),
    "out": ({}, None, True),
    "output_every": (OUT, 0, 2),
    "checkpoint_every": (OUT, 0, 2),
    "series_every": (OUT, 1, 2),
    "fields_format": (OUT, "h5", "npz"),
    "keep_checkpoints": ({**OUT, "checkpoint_every": 1}, 1, 3),
    "pictures": ({"out": True}, "none", "speed"),
    "dpi": ({"out": True, "pictures": "speed"}, 20, 40),
    "clim": ({"out": True, "pictures": "speed"}, None, "speed=0,0.1"),
    "wall_axes": ({}, None, "z"),
    "lid": ({"wall_axes": "z"}, None, "z-high=0.05,0,0"),
    "geometry": ({}, None, "GEOMETRY"),
    # open faces in a duct (walls on y and z)
    "inlet": (DUCT, {"outlet": "x-low;x-high"}, {"inlet": "x-low", "outlet": "x-high"}),
    "inlet_speed": ({**DUCT, "inlet": "x-low", "outlet": "x-high"}, 0.02, 0.05),
    "inlet_profile": ({**DUCT, "inlet": "x-low", "outlet": "x-high"}, "uniform", "parabolic"),
    "inlet_temperature": ({"velocity_set": "d3q39", "collision": "bgk", "lz": 12, "inlet": "x-low",
                           "outflow": "x-high"}, 1.0, 1.05),
    "outlet": ({**DUCT, "inlet": "x-low"}, "x-high", "x-high=1.01"),
    "outlet_density": ({**DUCT, "inlet": "x-low", "outlet": "x-high"}, 1.0, 1.02),
    "outflow": ({**DUCT, "inlet": "x-low"}, {"outlet": "x-high"}, {"outflow": "x-high"}),
    "slip": ({"wall_axes": "y", "inlet": "x-low", "outlet": "x-high"}, {"wall_axes": "yz"},
             {"wall_axes": "y", "slip": "z"}),
    # bodies: the bounce-back on a mesh, the mesh's placement, the flows around them
    "body_bc": (MESH, "halfway", "bouzidi"),
    "stl_scale": (MESH, 2.0, 3.0),
    "stl_rotate": (MESH, "0,0,0", "0,0,90"),
    "stl_offset": (MESH, "4.3,4.2,4.1", "3.3,4.2,4.1"),
    "cells_per_diameter": ({"setup": "sphere"}, 4, 5),
}

#: option -> (context, value A, value B): the 3D lattice is built with other arguments (the 3D
#: kernel tests observe what each does: tests/simulation/test_simulation3d.py, tests/backends)
KERNEL_OPTIONS3D = {
    "collision": ({}, "bgk", "regularized"),
    "C1": ({"collision": "regularized"}, 1e-3, 5e-3),
    "C2": ({"collision": "regularized", "velocity_set": "d3q39"}, 1e-3, 5e-3),
    "C3": ({"collision": "regularized", "velocity_set": "d3q103"}, 0.5, 0.9),
    "magic": ({"collision": "trt"}, 0.1875, 0.25),
    "smagorinsky": ({"collision": "bgk-les"}, 0.1, 0.2),
    "omega_bulk": ({"collision": "cumulant", "velocity_set": "d3q27"}, 1.0, 1.5),
    "omega3": ({"collision": "cumulant", "velocity_set": "d3q27"}, 1.0, 1.5),
    "omega4": ({"collision": "cumulant", "velocity_set": "d3q27"}, 1.0, 1.5),
    "cumulant_limiter": ({"collision": "cumulant", "velocity_set": "d3q27", "omega3": 1.5}, 0.0, 1e-2),
    "velocity_set": ({}, "d3q19", "d3q27"),
    "backend": ({}, "c", "opencl"),
    "layout": ({}, "soa", "aos"), "vl": ({"layout": "caosoa"}, 4, 8),
    "precision": ({}, "double", "single"),
    "fused": ({}, True, False),
    "strict": ({}, False, True),
    "threads": ({}, 1, 2),
    "device": ({"backend": "opencl"}, "0:0", "1:0"),
    # host + device: the lattice split in X between two backends (tests/simulation/test_hetero.py)
    "hetero": ({}, None, "opencl"),
    "split": ({"hetero": "opencl"}, "0.25", "0.5"),
    "host_columns": ({"hetero": "opencl"}, 1, 2),
    "ra": (RB3D, 3000.0, 4000.0), "pr": (RB3D, 0.71, 1.0), "aspect": (RB3D, 2.0, 3.0),
    # the thermal walls across x (Walls(axis='x')): their run, turned, in tests/run/test_wall_axis.py
    "wall_axis": (RB3D, None, "x"),
    # the populations' storage apart from the arithmetic (lbgen.codegen.storage)
    "storage": ({}, "fp64", "fp32"),
    # one population buffer instead of two (tests/simulation/test_inplace.py)
    "streaming": ({}, "pull", "inplace"),
}

#: option -> (context, value): refused in a 3D run (D3 and the context), naming the option
REFUSED3D = {
    **{k: ({}, v) for k, v in (("walls", True), ("t_bottom", 1.1), ("t_top", 0.9), ("adiabatic", "top"),
                               ("wall_scheme", "reference"), ("wall_axis", "x"))},
    "window": ({"out": True}, "0:4,0:4"),
    "pictures_every": ({"out": True}, 2),
    "seed": ({}, 3),                       # taylor-green is not random; the 3D Rayleigh-Taylor takes it below
    "steady": ({}, 0.01),                  # a flow around a body's (tests/run/test_flows.py: 3D-1Z to steady state)
}


def _options(context: dict, key: str, value, tmp_path) -> dict:
    opts = {**D3, **{k: mesh_file(tmp_path) if v == "MESH" else v for k, v in context.items()}}
    if opts["setup"] in (*FLOWS, "rayleigh-benard"):    # the set-up sizes the lattice (from D or Ra, --aspect)
        opts = {k: v for k, v in opts.items() if k not in ("lx", "ly", "lz") or k in context}
    if isinstance(value, dict):
        opts.update(value)
    elif value == "INIT3D":
        path = tmp_path / "init3d.npz"
        rng = np.random.default_rng(4)
        shape = (8, 8, 8)
        np.savez(path, rho=1 + 0.01 * rng.standard_normal(shape), ux=np.zeros(shape), uy=np.zeros(shape),
                 uz=np.zeros(shape), T=np.ones(shape))
        opts = {k: v for k, v in opts.items() if k not in ("lx", "ly", "lz", "setup")}
        opts[key] = str(path)
    elif value == "GEOMETRY":
        path = tmp_path / "body.npy"
        mask = np.zeros((8, 8, 8), dtype=bool)
        mask[3:5, 3:5, 3:5] = True
        np.save(path, mask)
        opts[key] = str(path)
    elif value is not None:
        opts[key] = value
    return opts


def test_every_option_is_audited_in_3d():
    keys = {o.key for o in SCHEMA}
    audited = set(EFFECTS3D) | set(KERNEL_OPTIONS3D) | set(REFUSED3D)
    assert audited == keys, f"options without a 3D entry: {sorted(keys - audited)}; stale: {sorted(audited - keys)}"
    assert set(NOT_IN_3D) <= set(REFUSED3D)


@pytest.mark.parametrize("key", sorted(EFFECTS3D))
def test_changing_an_option_changes_what_a_user_observes_in_3d(key, tmp_path):
    context, a, b = EFFECTS3D[key]
    first = fingerprint(tmp_path, "a", _options(context, key, a, tmp_path))
    second = fingerprint(tmp_path, "b", _options(context, key, b, tmp_path))
    assert first != second, f"--{key} {a!r} and {b!r} gave the same observable 3D run"


class _Built(Exception):
    """Raised by the recording lattice: the arguments are known, nothing is compiled."""


@pytest.mark.parametrize("key", sorted(KERNEL_OPTIONS3D))
def test_a_kernel_option_reaches_the_3d_lattice(key, tmp_path, monkeypatch):
    from lbgen.run import construct
    context, a, b = KERNEL_OPTIONS3D[key]

    def arguments(value):
        seen = {}

        def record(*shape, **kw):
            seen.update(kw, shape=shape)
            raise _Built

        monkeypatch.setattr(construct, "Simulation", record)
        opts = _options(context, key, value, tmp_path)
        cfg = RunConfig.build(opts.pop("setup"), ("test", opts))
        with pytest.raises(_Built):
            Run(cfg, echo=lambda m: None)
        return seen
    assert arguments(a) != arguments(b)


def test_the_seed_shapes_the_3d_rayleigh_taylor_interface():
    from lbgen.run.construct import initial_fields, resolve
    fields = []
    for seed in (1, 2):
        cfg = RunConfig.build("rayleigh-taylor", ("test", {"velocity_set": "d3q39", "lx": 8, "ly": 8, "lz": 16,
                                                           "seed": seed}))
        fields.append(initial_fields(resolve(cfg, echo=lambda m: None))["T"])
    assert cfg.dimension == 3 and not np.array_equal(*fields)


@pytest.mark.parametrize("key", sorted(REFUSED3D))
def test_an_option_of_2d_runs_is_refused_in_3d_naming_why(key):
    context, value = REFUSED3D[key]
    opts = {**D3, **context, key: value}
    if opts.get("out") is True:
        opts["out"] = "never-written"
    with pytest.raises(ConfigError) as e:
        RunConfig.build(opts.pop("setup"), ("command line", opts))
    message = str(e.value)
    assert "has no effect in this run" in message and (key.replace("_", "-") in message or key in message)
    if key in NOT_IN_3D:
        assert NOT_IN_3D[key] in message                    # the reason, in words
