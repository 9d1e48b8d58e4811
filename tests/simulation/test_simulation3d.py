"""lbgen.Simulation3D: the 3D lattice on the C backend, against the oracle (walls, a lid, a
mask and gravity at once), its physical fields, conservation, a shear wave's viscosity, and
every bad input refused before any work, in words."""
from __future__ import annotations

import numpy as np
import pytest

import lbgen
from lbgen.codegen.spec import SpecError
from lbgen.reference import bulk3d as oracle
from lbgen.simulation.parameters import SimulationError

SHAPE = (6, 5, 16)
R = np.sqrt(3.0)


def _state(name="d3q19", seed=3):
    rng = np.random.default_rng(seed)
    lat = oracle.lattice(name)
    rho = 1.0 + 0.05 * rng.standard_normal(SHAPE)
    u = 0.03 * rng.standard_normal((3,) + SHAPE)
    return oracle.equilibrium(rho, u, lat) * (1 + 1e-2 * rng.standard_normal((lat.Q,) + SHAPE))


@pytest.mark.parametrize("name, collision, layout, vl", [("d3q19", "bgk", "caosoa", 8),
                                                         ("d3q27", "regularized", "soa", None)])
def test_walls_lid_mask_and_gravity_equal_the_oracle(name, collision, layout, vl):
    a = np.array([2e-5, -1e-5, 3e-5])                        # lattice units: gravity g = r^2 a
    lid = (0.04, 0.0, -0.02)                                 # lattice units on the y-high face
    solid = np.random.default_rng(8).random(SHAPE) < 0.1
    params = {"tau": 0.7} if collision == "bgk" else {"C1": 0.05}
    sim = lbgen.Simulation(*SHAPE, velocity_set=name, collision=collision, layout=layout, vl=vl,
                             gravity=tuple(R * R * a), walls="xy", lid={"y-high": tuple(R * np.array(lid))},
                             mask=solid, **params)
    f0 = _state(name)
    f0[:, solid] = 0.0
    sim.set_populations(f0)
    sim.run(5)
    b = oracle.Boundaries(SHAPE, oracle.lattice(name), walls=("x", "y"), lids={("y", "high"): lid}, solid=solid)
    want = oracle.run(f0, 5, collision, oracle.lattice(name), b, force=a, **params)
    assert np.max(np.abs(sim.populations() - want)) < 1e-12 * np.max(want)
    with np.errstate(invalid="ignore"):                      # solid voxels: 0 / 0
        rho, u = oracle.physical_fields(want, a, name)
    got = sim.fields()
    fluid = ~solid
    assert np.max(np.abs(got["rho"][fluid] - rho[fluid])) < 1e-13
    assert max(np.max(np.abs(got[c][fluid] - R * u[k][fluid])) for k, c in enumerate(("ux", "uy", "uz"))) < 1e-13
    assert all(np.all(got[c][solid] == 0.0) for c in got)     # solid voxels read 0
    assert sim.time_step == 5 and sim.diagnostics()["nonfinite"] == 0


def test_set_fields_and_fields_are_inverse_under_gravity():
    sim = lbgen.Simulation(*SHAPE, tau=0.8, gravity=(0.0, 1e-3, -2e-3), layout="csoa", vl=4)
    rng = np.random.default_rng(1)
    rho, u = 1 + 0.1 * rng.random(SHAPE), 0.05 * rng.standard_normal((3,) + SHAPE)
    sim.set_fields(rho, *u)
    got = sim.fields()
    assert np.max(np.abs(got["rho"] - rho)) < 1e-14
    assert max(np.max(np.abs(got[c] - u[k])) for k, c in enumerate(("ux", "uy", "uz"))) < 1e-15
    assert np.all(got["T"] == 1.0)


def test_mass_is_conserved_with_resting_walls_and_a_mask():
    solid = np.zeros(SHAPE, bool)
    solid[2:4, 1:4, 5:11] = True                             # a block in the middle
    sim = lbgen.Simulation(*SHAPE, tau=0.6, walls=("x", "z"), mask=solid, gravity=(1e-4, 0.0, -1e-4))
    rng = np.random.default_rng(2)
    sim.set_fields(1 + 0.05 * rng.random(SHAPE), *(0.03 * rng.standard_normal((3,) + SHAPE)))
    m0 = sim.diagnostics()["mass"]
    assert np.all(sim.populations()[:, solid] == 0.0)
    sim.run(40)
    d = sim.diagnostics()
    assert abs(d["mass"] / m0 - 1) < 1e-13 and d["nonfinite"] == 0 and d["max_speed"] > 0
    assert np.all(sim.populations()[:, solid] == 0.0)


def test_walls_are_per_face_an_axis_both_faces():
    """walls='z' is the two z faces (bits 4 and 5 of the boundaries record): the same bits as
    naming both faces; one face walls that face only (the other is periodic)."""
    rng = np.random.default_rng(5)
    fields = (1 + 0.05 * rng.random(SHAPE), *(0.03 * rng.standard_normal((3,) + SHAPE)))
    lid = {"z-high": (0.05, 0.0, 0.0)}
    runs = {}
    for walls in ("z", ("z-low", ("z", "high")), "z-high", None):
        sim = lbgen.Simulation(*SHAPE, tau=0.7, walls=walls, lid=None if walls is None else lid, strict=True)
        sim.set_fields(*fields)
        sim.step(6)
        runs[str(walls)] = sim.state()
        if walls == "z-high":
            assert sim.program.bounds[0] == 1 << 5 and sim.walls is None
            assert sim.wall_faces == (("z", "high"),)
    assert np.array_equal(runs["z"], runs[str(("z-low", ("z", "high")))])
    assert not np.array_equal(runs["z"], runs["z-high"]) and not np.array_equal(runs["z-high"], runs["None"])


def test_a_lid_drives_the_fluid_along_it():
    sim = lbgen.Simulation(4, 4, 16, tau=0.8, walls="z", lid={"z-high": (0.05, 0.0, 0.0)})
    sim.set_fields(1.0, 0.0, 0.0, 0.0)
    sim.run(300)
    ux = sim.fields()["ux"][0, 0]
    assert np.all(np.diff(ux) > 0) and 0 < ux[-1] < 0.05 and ux[0] > 0   # Couette-like, rising to the lid
    assert sim.diagnostics()["momentum_x"] > 0


def _shear_wave_viscosity(axis, L, name, collision, layout, vl, params):
    """Decay of u_perp = U sin(k s) along `axis`: nu = ln(A1/A2) / (k^2 t), lattice units."""
    shape = [2, 2, 8]
    shape[axis] = L
    sim = lbgen.Simulation(*shape, velocity_set=name, collision=collision, layout=layout, vl=vl, **params)
    s = np.arange(L)
    k = 2 * np.pi / L
    prof = np.sin(k * s).reshape([L if i == axis else 1 for i in range(3)])
    comp = ("uy", "uz", "ux")[axis]                          # a velocity across the wave's axis
    fields = {"ux": 0.0, "uy": 0.0, "uz": 0.0}
    fields[comp] = np.broadcast_to(0.01 * R * prof, shape)
    sim.set_fields(1.0, fields["ux"], fields["uy"], fields["uz"])

    def amplitude():
        return 2 * np.mean(sim.fields()[comp] * np.broadcast_to(prof, shape))
    nu0 = (params.get("tau", 0.5 + params.get("C1", 0)) - 0.5) / 3
    sim.run(int(0.05 / (nu0 * k * k)))                       # past the start-up transient
    a1 = amplitude()
    n = int(0.5 / (nu0 * k * k))
    sim.run(n)
    return np.log(a1 / amplitude()) / (k * k * n) / nu0


@pytest.mark.parametrize("axis, name, collision, layout, vl, params", [
    (2, "d3q19", "bgk", "caosoa", 8, {"tau": 0.8}),
    (0, "d3q27", "bgk", "soa", None, {"tau": 0.65}),
    (1, "d3q19", "regularized", "aos", None, {"C1": 0.1}),
])
def test_shear_wave_viscosity_is_tau_minus_half_over_three(axis, name, collision, layout, vl, params):
    """nu = (tau - 1/2)/3 in lattice units (Krueger et al. 2017, ch. 3; u_model = r u does not
    change a decay rate): within 0.5 % at L = 32 and 64, the error falling at second order."""
    errors = [_shear_wave_viscosity(axis, L, name, collision, layout, vl, params) - 1 for L in (32, 64)]
    assert all(abs(e) < 0.005 for e in errors), errors
    assert 3.0 < errors[0] / errors[1] < 5.0, errors


def test_repr_and_parameters():
    sim = lbgen.Simulation(4, 4, 16, tau=0.8, gravity=(0, 0, -1e-5), walls="z", lid={"z-high": (0.05, 0, 0)})
    text = repr(sim)
    assert text.startswith("Simulation(4x4x16 D3Q19 bgk tau=0.8 g=(0, 0, -1e-05), c caosoa-vl8, walls z, "
                           "lid z-high (0.05, 0, 0), step 0, no state yet")
    sim.set_parameters(tau=0.9, gravity=(0, 0, 0))
    assert sim.params.tau == 0.9 and sim.force == (0.0, 0.0, 0.0)
    assert "periodic" in repr(lbgen.Simulation(2, 2, 8, layout="soa"))
    with pytest.raises(SimulationError, match="tau=0.4 must be > 0.5"):
        sim.set_parameters(tau=0.4)


@pytest.mark.parametrize("kw, error, message", [
    (dict(mask=np.zeros((6, 5, 15), bool)), SimulationError, "mask: shape \\(6, 5, 15\\); .* \\(6, 5, 16\\)"),
    (dict(mask=np.zeros(SHAPE)), SimulationError, "mask: a float64 array; the voxel mask must be a bool array"),
    (dict(mask=np.full(SHAPE, 2, np.uint8)), SimulationError, "mask: value 2 at \\(x=0, y=0, z=0\\)"),
    (dict(mask=np.ones(SHAPE, bool)), SimulationError, "every voxel is solid"),
    (dict(layout="caosoa", vl=32), SimulationError, "lz=16 is not a multiple of VL=32"),
    (dict(backend="metal"), SpecError, "unknown backend 'metal'; choose one of c, opencl, cuda, cuda-shim"),
    (dict(velocity_set="d2q9"), SimulationError, "d2q9 is a 2D set; a lattice of 3 sizes"),
    (dict(gravity=(0, -1e-5)), SimulationError, "gravity=\\(0, -1e-05\\) must be three finite numbers \\(gx, gy, gz\\)"),
    (dict(walls="xw"), SimulationError, "each wall axis must be 'x', 'y' or 'z'"),
    (dict(walls="z", lid={"x-low": (0, 0, 0.1)}), SimulationError, "the x axis needs walls"),
    (dict(walls="z-low", lid={"z-high": (0.1, 0, 0)}), SimulationError, "the walls z-low leave that face without one"),
    (dict(walls="z, z-low"), SimulationError, "names the z-low face twice"),
    (dict(walls=("z", "top")), SimulationError, "walls='top': each wall axis must be 'x', 'y' or 'z'"),
    (dict(walls="z", lid={"z-top": (0.1, 0, 0)}), SimulationError, "name a face as 'x-low'"),
    (dict(walls="z", lid={"z-high": (0.1, 0, 0.01)}), SimulationError, "a lid moves in its plane: uz must be 0"),
    (dict(tua=0.8), SimulationError, "unknown keyword\\(s\\) tua"),
    (dict(tau=0.5), SimulationError, "tau=0.5 must be > 0.5"),
])
def test_bad_inputs_are_refused_before_any_work(kw, error, message, monkeypatch):
    import lbgen.backends.c as cbackend
    monkeypatch.setattr(cbackend, "compile", lambda *a, **k: pytest.fail("compiled before refusing"))
    with pytest.raises(error, match=message):
        lbgen.Simulation(*SHAPE, **kw)


def test_bad_states_are_refused():
    sim = lbgen.Simulation(*SHAPE, layout="soa", mask=np.eye(6, 5, dtype=bool)[:, :, None].repeat(16, 2))
    with pytest.raises(SimulationError, match="no state yet"):
        sim.step()
    with pytest.raises(SimulationError, match="uz must be a real number or an array of shape \\(LX, LY, LZ\\)"):
        sim.set_fields(1.0, 0.0, 0.0, np.zeros((6, 5)))
    with pytest.raises(SimulationError, match="isothermal"):
        sim.set_fields(1.0, 0.0, 0.0, 0.0, 1.1)
    rho = np.ones(SHAPE)
    rho[0, 0, 3] = 0.0                                       # a solid voxel: its density does not matter
    sim.set_fields(rho, 0.0, 0.0, 0.0)
    rho[1, 0, 3] = -1.0
    with pytest.raises(SimulationError, match="rho is -1 at site \\(x=1, y=0, z=3\\)"):
        sim.set_fields(rho, 0.0, 0.0, 0.0)
    with pytest.raises(SimulationError, match="populations must have shape \\(Q, LX, LY, LZ\\) = \\(19, 6, 5, 16\\)"):
        sim.set_populations(np.ones((19, 6, 5, 8)))
    with pytest.raises(SimulationError, match="steps=-1 must be an integer >= 0"):
        sim.run(-1)


def test_default_layout_in_3d_on_the_cpu_is_clustered_from_6_cluster_rows():
    """The one rule (lbgen.codegen.spec.default_layout, dimension 3): on the C backend CAoSoA
    VL 8 when Z holds 6 or more whole clusters of 8 (measured faster from 48^3 on), SoA for
    shorter or indivisible Z lines (faster at 32^3; docs/performance-history.md); an explicit clustered
    layout still gets the preferred VL; GPUs keep CAoSoA with a warp-wide cluster."""
    from lbgen.codegen.spec import default_layout
    assert lbgen.Simulation(4, 4, 16).program.layout.tag == "soa"
    assert lbgen.Simulation(4, 4, 48).program.layout.tag == "caosoa-vl8"
    assert lbgen.Simulation(4, 4, 16, layout="caosoa").program.layout.tag == "caosoa-vl8"
    assert default_layout("c", 16, 1, dimension=3) == ("soa", None)
    assert default_layout("c", 40, 1, dimension=3) == ("soa", None)       # 5 cluster rows
    assert default_layout("c", 52, 1, dimension=3) == ("soa", None)       # 52 is no multiple of 8
    assert default_layout("c", 48, 3, dimension=3) == ("caosoa", 8)
    assert default_layout("c", 128, 1, dimension=3) == ("caosoa", 8)
    assert default_layout("c", 16, 1) == ("caosoa", 8)
    assert default_layout("opencl", 64, 1, dimension=3) == ("caosoa", 32)
    with pytest.raises(ValueError, match="dimension 4; allowed: 2 or 3"):
        default_layout("c", 16, 1, dimension=4)


def test_walls_across_z_take_the_clustered_default_on_the_cpu():
    """Walls on Z send every SoA Z line down the boundary path, so the one rule gives such a
    lattice CAoSoA (walls on x or y keep SoA); a run of the lid-driven cavity (walls on x, y
    and z) records the layout it got in its description."""
    from lbgen.codegen.spec import default_layout
    from lbgen.run.config import RunConfig
    from lbgen.run.construct import resolve
    assert default_layout("c", 16, 1, dimension=3, walls_along_depth=True) == ("caosoa", 8)
    assert lbgen.Simulation(4, 4, 16, walls="z").program.layout.tag == "caosoa-vl8"
    assert lbgen.Simulation(4, 4, 16, walls="xy").program.layout.tag == "soa"
    cfg = RunConfig.build("lid-driven-cavity", ("test", {"lx": 8, "ly": 8, "lz": 16, "steps": 1}))
    assert "z" in cfg.wall_axes
    assert (resolve(cfg, echo=lambda m: None).layout, resolve(cfg, echo=lambda m: None).vl) == ("caosoa", 8)


def test_one_simulation_class_for_any_dimension():
    """`lbgen.Simulation` takes three sizes (or a shape tuple) for a 3D lattice (default set
    d3q19), with the same bits either way; ``Simulation3D`` is the same class (its former name);
    a 2D shape tuple stays 2D; a 3D set without a depth and a depth with a 2D set are refused."""
    assert lbgen.Simulation3D is lbgen.Simulation
    f = np.random.default_rng(4).standard_normal((3, 6, 5, 8)) * 0.02
    runs = []
    for sim in (lbgen.Simulation((6, 5, 8), tau=0.7), lbgen.Simulation(6, 5, 8, tau=0.7)):
        assert sim.dimension == 3 and sim.vs.name == "D3Q19" and (sim.lx, sim.ly, sim.lz) == (6, 5, 8)
        sim.set_fields(1.0 + f[0], f[1], f[2], 0.0)
        sim.run(5)
        runs.append(sim.fields()["ux"])
    assert all(np.array_equal(r, runs[-1]) for r in runs) and np.abs(runs[-1]).max() > 0
    assert lbgen.Simulation((6, 5, 16), velocity_set="d3q39").vs.name == "D3Q39"
    flat = lbgen.Simulation((8, 16), tau=0.8)
    assert flat.dimension == 2 and flat.shape == (8, 16)
    for args, kw, message in [((8, 8), {"velocity_set": "d3q27"}, "d3q27 is a 3D set: give the depth"),
                              ((8, 8, 8), {"velocity_set": "d2q9"}, "d2q9 is a 2D set"),
                              (((8, 8, 8, 8),), {}, r"takes the lattice as \(lx, ly\[, lz\]\)"),
                              ((8, 8, 8, 8), {}, r"takes the lattice as \(lx, ly\[, lz\]\)")]:
        with pytest.raises(SimulationError, match=message):
            lbgen.Simulation(*args, **kw)


def test_a_device_needs_the_opencl_backend():
    """device= selects an OpenCL device; with another backend it is refused before any build."""
    with pytest.raises(SimulationError, match="device='0:0' selects an OpenCL device: it needs backend='opencl'"):
        lbgen.Simulation(4, 4, 16, device="0:0")


def test_thermal_walls_in_3d_take_soa_on_the_cpu():
    """Between thermal walls (the thermal sets' fused_walls) SoA ran 1.78x CAoSoA VL 8's rate
    (D3Q39 96^3 between walls across z, docs/performance.md), so the one rule gives such a lattice
    SoA on the C backend whatever its depth; bounce-back walls across z keep CAoSoA; GPUs keep the
    warp-wide cluster; a `lbgen run rayleigh-benard` resolves to it."""
    from lbgen.codegen.spec import default_layout
    from lbgen.run.config import RunConfig
    from lbgen.run.construct import resolve
    assert default_layout("c", 128, 3, dimension=3, walls_along_depth=True, thermal_walls=True) == ("soa", None)
    assert default_layout("c", 128, 3, dimension=3, walls_along_depth=True) == ("caosoa", 8)
    assert default_layout("cuda", 128, 3, dimension=3, thermal_walls=True) == ("caosoa", 32)
    walled = lbgen.Simulation(8, 8, 64, velocity_set="d3q39", walls=lbgen.Walls(axis="z"), collision="bgk")
    assert walled.program.layout.tag == "soa"
    cfg = RunConfig.build("rayleigh-benard", ("test", {"velocity_set": "d3q39", "lx": 8, "ly": 8, "lz": 64,
                                                       "steps": 1}))
    assert resolve(cfg, echo=lambda m: None).layout == "soa"
