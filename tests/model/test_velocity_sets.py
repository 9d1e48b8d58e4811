"""The velocity set as a parameter: D2Q9 (isothermal, Hermite order 2, halo 1) and D2V17
(thermal, order 3) through the model, the NumPy reference, every backend and layout, the
runner and the command line."""
from __future__ import annotations

import json

import numpy as np
import pytest
import sympy as sp
from click.testing import CliRunner

from lbgen.reference import bulk as ref
from lbgen.cli.main import main
from lbgen.codegen.spec import KernelSpec, SpecError
from lbgen.codegen.render import emit_files, generate
from lbgen.model.velocity_set import velocity_set
from lbgen.model.walls import unknown_set, wall_assignments, wall_row_count
from lbgen.simulation.runner import Simulation, SimulationError, Walls
from lbgen.run.setups import shear_wave
from lbgen.reference.verify import verify

#: every layout; VL 8 keeps LY/VL = 2 >= the 1-wide halo of D2Q9 on a 16-row lattice
D2Q9_LAYOUTS = [("aos", None), ("soa", None), ("csoa", 4), ("caosoa", 8)]
BACKENDS = ["c", "opencl", "cuda-shim"]


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


# --- the model ------------------------------------------------------------------------------

def test_order_halo_and_wall_rows_follow_from_the_quadrature():
    q9, q37, v17 = velocity_set("d2q9"), velocity_set("d2q37"), velocity_set("d2v17")
    assert (q9.hermite_order, q9.isothermal, q9.max_hop, q9.Q) == (2, True, 1, 9)
    assert (q37.hermite_order, q37.isothermal, q37.max_hop, q37.Q) == (4, False, 3, 37)
    assert (v17.hermite_order, v17.isothermal, v17.max_hop, v17.Q) == (3, False, 3, 17)
    assert q9.r == pytest.approx(np.sqrt(3), rel=1e-15)
    assert wall_row_count(q9) == 1 and [len(unknown_set(q9, "bottom", 0))] == [3]


def test_d2v17_is_the_shan_yuan_chen_lattice():
    """r^2 = (125 + 5 sqrt(193)) / 72 and the closed-form weights of Shan et al. (2006)."""
    vs = velocity_set("d2v17")
    s = sp.sqrt(193)
    assert vs.r ** 2 == pytest.approx(float((125 + 5 * s) / 72), rel=1e-14)
    want = {(0, 0): (575 + 193 * s) / 8100, (1, 0): (3355 - 91 * s) / 18000, (1, 1): (655 + 17 * s) / 27000,
            (2, 2): (685 - 49 * s) / 54000, (3, 0): (1445 - 101 * s) / 162000}
    for shell, w in zip(vs.shells, vs.shell_weights_exact):
        assert float(w) == pytest.approx(float(want[shell]), rel=1e-13)


def test_d2q9_wall_row_imposes_zero_mass_flux_and_no_slip():
    """Its three unknowns share e_y: the y-momentum follows from the mass, so only u_x is imposed."""
    asg = wall_assignments(velocity_set("d2q9"), "bottom", 0)
    assert [str(p) for p in asg.parameters] == ["N", "ax", "ay"]
    assert "u_x = -a_x/2" in asg.description and "u_y" not in asg.description


# --- the NumPy reference --------------------------------------------------------------------

def test_d2q9_reference_equilibrium_has_the_isothermal_moments():
    vs = velocity_set("d2q9")
    rho, ux, uy = np.array([1.1]), np.array([0.03]), np.array([-0.02])
    f = ref.equilibrium(rho, ux, uy, np.array([1.3]), vs=vs)      # T is ignored: theta = 1
    assert f.sum(0) == pytest.approx(rho, rel=1e-15)
    assert (vs.xi[:, 0] @ f) == pytest.approx(rho * ux, rel=1e-14)
    Pxy = np.einsum("i,i,i...->...", vs.xi[:, 0], vs.xi[:, 1], f)
    Pxx = np.einsum("i,i,i...->...", vs.xi[:, 0], vs.xi[:, 0], f)
    assert Pxy == pytest.approx(rho * ux * uy, rel=1e-13)
    assert Pxx == pytest.approx(rho * (ux * ux + 1.0), rel=1e-14)
    assert np.all(ref.fields(f, vs=vs)[3] == 1.0)


@pytest.mark.parametrize("name, r2", [("d2q9", 3.0), ("d2v17", (125 + 5 * np.sqrt(193)) / 72)])
def test_shear_wave_decays_at_the_lattice_viscosity(name, r2):
    """u_y = A sin(k x) decays as exp(-nu k^2 t) with nu = (tau - 1/2) T / r^2, within 1%
    (D2Q9: nu = (tau - 1/2)/3, c_s^2 = 1/3)."""
    lx, ly, tau = 32, 4, 0.8
    sim = Simulation(lx, ly, velocity_set=name, tau=tau, layout="soa", check_every=0)
    sim.set_fields(**shear_wave(lx, ly, amplitude=1e-3))
    k = 2 * np.pi / lx
    mode = np.sin(k * np.arange(lx))

    def amplitude():
        return float((sim.fields()["uy"].mean(axis=1) * mode).sum() * 2 / lx)

    sim.run(50)
    a0 = amplitude()
    sim.run(400)
    nu = -np.log(amplitude() / a0) / (k * k * 400)
    assert nu == pytest.approx((tau - 0.5) / r2, rel=0.01)


# --- kernels against the reference ----------------------------------------------------------

@pytest.mark.parametrize("walls, collision", [(False, "bgk"), (True, "regularized")],
                         ids=["periodic-bgk", "walls-regularized"])
def test_d2q9_kernels_match_the_reference_on_every_layout_and_backend(walls, collision):
    """Fused and unfused periodic steps (BGK), and propagate + bc + collide with walls (regularized;
    its bulk rows are the periodic regularized collide): one compile per backend x layout each."""
    report = verify(backends=BACKENDS, layouts=D2Q9_LAYOUTS, collisions=(collision,), steps=4,
                    shape=(5, 16), walls=walls, velocity_set="d2q9")
    assert not report.skipped, report.skipped
    assert len(report.rows) == len(BACKENDS) * len(D2Q9_LAYOUTS) * 2     # unfused and fused (walls: fused_walls)
    assert report.ok, report.table()
    assert max(r.error for r in report.rows) < 1e-12


def test_d2v17_kernels_match_the_reference():
    report = verify(backends=["c"], layouts=[("caosoa", 8)], collisions=("bgk", "regularized"), steps=4,
                    shape=(5, 24), walls=True, velocity_set="d2v17")
    assert report.ok and len(report.rows) == 4, report.table()     # 2 operators x unfused, fused_walls


def test_d2q9_emitted_code_has_the_halo_of_its_largest_hop():
    spec = KernelSpec(layout="caosoa", vl=8, velocity_set="d2q9", walls=True)
    text = generate(spec).text
    assert "Q = 9, HALO = 1," in text and "isothermal" in text
    assert "--velocity-set d2q9" in text
    readme = emit_files(spec)["README.md"]
    assert "−1 ≤ x < LX+1" in readme


# --- walls conserve mass --------------------------------------------------------------------

@pytest.mark.parametrize("collision, scheme", [("bgk", "lbgen"), ("regularized", "lbgen"),
                                               ("regularized", "reference")])
def test_d2q9_walls_conserve_mass(collision, scheme):
    lx, ly = 8, 16
    sim = Simulation(lx, ly, velocity_set="d2q9", collision=collision, layout="soa", walls=Walls(scheme=scheme),
                     gravity=(1e-4, -3e-4), check_every=0)
    rng = np.random.default_rng(3)
    sim.set_fields(1 + 0.02 * rng.standard_normal((lx, ly)), 0.02 * rng.standard_normal((lx, ly)),
                   0.02 * rng.standard_normal((lx, ly)), 1.0)
    m0 = sim.populations().sum()
    sim.run(60)
    assert abs(sim.populations().sum() - m0) / m0 < 1e-13
    f = sim.fields()
    assert np.all(f["T"] == 1.0)


# --- refusals -------------------------------------------------------------------------------

def test_isothermal_sets_refuse_temperatures_clearly():
    with pytest.raises(SimulationError, match="D2Q9 is isothermal.*T_bottom"):
        Simulation(8, 16, velocity_set="d2q9", layout="soa", walls=Walls(T_bottom=1.05))
    with pytest.raises(SimulationError, match="D2Q9 is isothermal.*adiabatic"):
        Simulation(8, 16, velocity_set="d2q9", layout="soa", walls=Walls(adiabatic_top=True))
    sim = Simulation(8, 16, velocity_set="d2q9", layout="soa")
    with pytest.raises(SimulationError, match="isothermal.*temperature must be 1"):
        sim.set_fields(1.0, 0.0, 0.0, 1.1)


def test_unknown_velocity_set_is_refused_naming_the_choices():
    with pytest.raises(SpecError, match="unknown velocity set 'd4q1'.*d2q37, d2q9, d2v17"):
        KernelSpec(velocity_set="d4q1").validate()


@pytest.mark.parametrize("args, message", [
    (["run", "rayleigh-taylor", "--velocity-set", "d2q9"], "rayleigh-taylor is a thermal flow"),
    (["run", "--velocity-set", "d2q9", "--walls", "--t-bottom", "1.1"], "D2Q9 is isothermal"),
    (["run", "rayleigh-taylor", "--velocity-set", "d3q19"], "rayleigh-taylor is a thermal flow"),   # 3D too
    (["emit", "--velocity-set", "d2q9", "--walls", "--lx", "8", "--ly", "3", "--layout", "soa"], "LY >= 4"),
])
def test_cli_refuses_thermal_set_ups_for_d2q9(args, message, tmp_path):
    result = invoke(*args, "--lx", 8, "--ly", 16) if args[0] == "run" else invoke(*args, "-o", tmp_path / "o")
    assert result.exit_code == 2, result.output
    assert message in result.output and "Traceback" not in result.output


def test_cli_info_run_emit_with_d2q9(tmp_path):
    data = json.loads(invoke("info", "--json", "--velocity-set", "d2q9").output)
    assert data["velocity_set"]["Q"] == 9 and data["velocity_set"]["hermite_order"] == 2
    assert data["velocity_set"]["isothermal"] is True and data["operators"]["bgk"]["op_count"] > 0
    assert "isothermal" in invoke("info", "--velocity-set", "d2q9").output
    out = tmp_path / "f.npz"
    result = invoke("run", "--velocity-set", "d2q9", "--lx", 16, "--ly", 16, "--steps", 10, "--walls",
                    "--save", out, "--no-progress")
    assert result.exit_code == 0, result.output
    with np.load(out) as f:
        assert f["rho"].shape == (16, 16) and np.all(f["T"] == 1.0)
    result = invoke("emit", "--velocity-set", "d2q9", "--layout", "soa", "-o", tmp_path / "e")
    assert result.exit_code == 0, result.output
    assert "Q = 9" in (tmp_path / "e" / "lbgen_kernels.c").read_text()
