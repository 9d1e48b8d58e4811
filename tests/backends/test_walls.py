"""Thermal no-slip walls (the bc kernel, lbgen.model.walls) on every backend, and their physics.

(1) halo -> propagate -> bc -> collide on C, OpenCL and the CUDA host shim, several layouts,
    both operators, with a force, fixed bottom / adiabatic top wall, matches
    ``reference.step_walls`` after 20 steps;
(2) total mass is conserved to round-off;
(3) steady conduction between a hot bottom and a cold top wall gives a linear profile;
(4) a shear flow parallel to the walls decays to rest at the viscous rate of a channel whose
    wall rows are at rest;
(5) a stable stratification stays at rest, the unstable one (Rayleigh-Taylor) mixes;
(6) the regularized operator relaxes with tau = 1 on the 3 rows next to each wall.

Velocities in (3)-(5): the runner's fields are those of the post-collision populations,
u = u_phys + a/2 with a the force per step, so the physical velocity is u - a/2.
"""
from __future__ import annotations

import numpy as np
import pytest

from helpers import config_id
from lbgen.reference import bulk as ref
from lbgen.reference import walls as refw
from lbgen.output import diagnostics
from lbgen.simulation.runner import Simulation, Walls
from lbgen.run.setups import rayleigh_taylor
from wall_support import (ADIABATIC, CASES, case_params, FORCE, LX, LY, OPERATORS, OPERATOR_PARAMS, R, SINGLE_CASES, STEPS, T_BOTTOM, T_TOP, TOLERANCE, _backend, case_id, rel_err, run_walls, runtime_of)  # noqa: F401
from programs import PROGRAMS


@pytest.mark.parametrize("operator", OPERATORS)
@pytest.mark.parametrize("case", case_params())
def test_bc_matches_reference_after_20_steps(case, operator, wall_program, wall_state, wall_reference):
    prog = wall_program(*case, collision=operator)
    want = wall_reference(operator)
    got = run_walls(prog, wall_state, STEPS, operator)
    err = rel_err(got, want)
    assert err <= TOLERANCE["double"], f"{case_id(case)} {operator}: relative error {err:.3g}"
    # the walls did something: the periodic run differs from the wall run near the walls
    periodic = wall_state.copy()
    for _ in range(STEPS):
        periodic = ref.step(periodic, operator, force=FORCE, **OPERATOR_PARAMS[operator])
    assert rel_err(got[:, :, :3], periodic[:, :, :3]) > 1e-4


@pytest.mark.parametrize("operator", OPERATORS)
@pytest.mark.parametrize("case", SINGLE_CASES, ids=case_id)
def test_bc_single_precision(case, operator, wall_program, wall_state, wall_reference):
    prog = wall_program(*case, collision=operator, precision="single")
    err = rel_err(run_walls(prog, wall_state, STEPS, operator), wall_reference(operator))
    assert err <= TOLERANCE["single"], f"{case_id(case)} {operator} single: relative error {err:.3g}"


@pytest.mark.parametrize("backend", ["c", "opencl", "cuda"])
def test_bc_needs_a_walls_spec(backend):
    prog = PROGRAMS.of(runtime_of(backend), (LX, LY), layout="soa", vl=None)
    with pytest.raises(ValueError, match="walls"):
        prog.bc(prog.allocate(), prog.allocate())


@pytest.mark.parametrize("tau", [0.55, 0.8])
def test_bgk_walls_stay_stable_down_to_small_tau(wall_program, wall_state, tau):
    """BGK relaxes the wall rows with tau = 1; without that, tau < ~0.8 diverged within 50 steps."""
    prog = wall_program("c", "caosoa", 8, collision="bgk")
    a = prog.pack(wall_state)
    b = prog.allocate()
    for _ in range(300):
        prog.halo(a)
        prog.propagate(a, b)
        prog.bc(a, b, T_BOTTOM, T_TOP, ADIABATIC, *FORCE)
        prog.collide(b, a, tau=tau, ax=FORCE[0], ay=FORCE[1])
    f = prog.unpack(a)
    assert np.isfinite(f).all() and np.abs(ref.fields(f)[1]).max() < 0.1


# --- (2) mass -----------------------------------------------------------------------------------

@pytest.mark.parametrize("operator", OPERATORS)
def test_walls_conserve_mass_over_1000_steps(operator):
    lx, ly = 8, 32
    sim = Simulation(lx, ly, collision=operator, walls=Walls(1.03, 0.97), check_every=0,
                     **OPERATOR_PARAMS[operator])
    rng = np.random.default_rng(5)
    sim.set_fields(1 + 0.05 * rng.uniform(-1, 1, (lx, ly)), 0.05 * rng.uniform(-1, 1, (lx, ly)),
                   0.05 * rng.uniform(-1, 1, (lx, ly)), 1 + 0.03 * rng.uniform(-1, 1, (lx, ly)))
    m0 = sim.populations().sum()
    sim.run(1000)
    f = sim.populations()
    assert abs(f.sum() - m0) / m0 <= 1e-12
    assert np.abs(sim.fields()["T"].mean(0)[2] - 1.03) < 1e-3     # the walls were really on


# --- (3) steady conduction ----------------------------------------------------------------------

def test_steady_conduction_profile_is_linear():
    """Hot bottom (1.05), cold top (0.95), no gravity, BGK tau = 1 (chi = 0.5/r^2 ~ 0.35).

    Slowest mode of the wall-to-wall problem: L^2 / (pi^2 chi) ~ 210 steps for L = LY - 5;
    1500 steps are ~7 of those.  The fixed walls impose T_w on the third row (y = 2, LY-3).
    """
    lx, ly, dT = 2, 32, 0.1
    sim = Simulation(lx, ly, collision="bgk", tau=1.0, walls=Walls(1.0 + dT / 2, 1.0 - dT / 2), check_every=0)
    sim.set_fields(1.0, 0.0, 0.0, 0.98)          # cold start: every mode of the profile is excited
    y = np.arange(ly)
    bulk = slice(4, ly - 4)
    line = (1.0 + dT / 2) - dT * (y - 2) / (ly - 5)

    def error():
        T = sim.fields()["T"].mean(0)
        return float(np.abs(T[bulk] - line[bulk]).max() / dT)

    assert error() > 0.3
    sim.run(1500)
    err = error()
    assert err <= 0.01, f"bulk profile deviates from the line by {err:.3g} of the temperature difference"
    T = sim.fields()["T"].mean(0)
    assert T[2] == pytest.approx(1.0 + dT / 2, abs=1e-12) and T[ly - 3] == pytest.approx(1.0 - dT / 2, abs=1e-12)


# --- (4) no-slip --------------------------------------------------------------------------------

def test_shear_flow_decays_at_the_no_slip_channel_rate():
    """u_x = U sin(pi (y + 1/2) / LY) between walls at rest, BGK tau = 0.8 (nu = 0.3 / r^2).

    The 3 rows next to each wall are rebuilt at rest every step (u = -a/2 = 0 here) and BGK
    keeps their momentum, so their velocity is zero to round-off; the flow decays like the
    fundamental mode of a channel of width L between LY - 6 and LY.
    """
    lx, ly, U, tau = 2, 32, 0.05, 0.8
    nu = (tau - 0.5) / R ** 2
    sim = Simulation(lx, ly, collision="bgk", tau=tau, walls=Walls(1.0, 1.0), check_every=0)
    y = np.arange(ly)
    sim.set_fields(1.0, np.broadcast_to(U * np.sin(np.pi * (y + 0.5) / ly), (lx, ly)), 0.0, 1.0)
    peaks, walls = [], []
    for _ in range(30):
        sim.run(100)
        ux = sim.fields()["ux"]
        peaks.append(np.abs(ux).max())
        walls.append(max(np.abs(ux[:, :3]).max(), np.abs(ux[:, -3:]).max()))
    assert max(walls) < 1e-14
    assert all(b < a for a, b in zip(peaks, peaks[1:])), "decay is not monotonic"
    assert peaks[-1] < 1e-3 * U
    rate = np.log(peaks[9] / peaks[-1]) / (100 * (len(peaks) - 10))
    assert nu * (np.pi / ly) ** 2 < rate < nu * (np.pi / (ly - 6)) ** 2


# --- (5) stratification --------------------------------------------------------------------------

G = 2e-3                 # strong gravity: Rayleigh-Taylor grows within a few thousand steps on 32 x 128
RT_LX, RT_LY = 32, 128


def _stratified(T_bottom, T_top, amplitude=None):
    sim = Simulation(RT_LX, RT_LY, collision="regularized", C1=1e-3, C2=1e-3, gravity=(0.0, -G),
                     walls=Walls(T_bottom, T_top), check_every=1000)
    sim.set_fields(**rayleigh_taylor(RT_LX, RT_LY, gravity=(0.0, -G), T_hot=T_bottom, T_cold=T_top,
                                     width=4.0, amplitude=amplitude))
    return sim


def _physical_speed(sim):
    F = sim.fields()                 # physical (half-step) fields: u - a/2 of the stored moments
    return float(np.sqrt(F["ux"] ** 2 + F["uy"] ** 2).max())


def test_stable_stratification_stays_at_rest():
    """Cold, heavy fluid below hot, light fluid (walls 0.95 / 1.05), hydrostatic density, the
    interface perturbed as in rayleigh_taylor: only decaying gravity/acoustic waves."""
    sim = _stratified(0.95, 1.05)
    speeds = []
    for _ in range(8):
        sim.run(500)
        speeds.append(_physical_speed(sim))
    assert max(speeds) < 1e-3
    assert speeds[-1] < 1e-4, f"max |u| = {speeds[-1]:.3g} after {sim.time_step} steps"
    d = diagnostics(sim.fields(), 0.95, 1.05)
    assert d["mixing_width"] < 20


def test_rayleigh_taylor_mixing_layer_grows():
    """Hot bottom, cold top: the perturbed interface (amplitude 2 sites) rolls up and mixes."""
    sim = _stratified(1.05, 0.95, amplitude=2.0)
    widths = [diagnostics(sim.fields(), 1.05, 0.95)["mixing_width"]]
    for _ in range(4):
        sim.run(1000)
        widths.append(diagnostics(sim.fields(), 1.05, 0.95)["mixing_width"])
    assert all(b > a for a, b in zip(widths, widths[1:])), widths
    assert widths[-1] > 3 * widths[0], widths
    assert _physical_speed(sim) > 1e-2


# --- (6) tau = 1 on the wall rows -----------------------------------------------------------------

@pytest.mark.parametrize("cfg", [("aos", None), ("caosoa", 8)], ids=config_id)
def test_regularized_collide_uses_unit_tau_on_wall_rows(cfg, wall_program, wall_state):
    params = dict(C1=0.05, C2=0.02, C3=0.5)
    prog = wall_program("c", *cfg, collision="regularized")
    a = prog.pack(wall_state)
    b = prog.allocate()
    prog.collide(a, b, ax=FORCE[0], ay=FORCE[1], **params)
    got = prog.unpack(b)
    want = ref.collide_regularized(wall_state, force=FORCE, wall=refw.wall_mask(LX, LY), **params)
    assert rel_err(got, want) <= 1e-13
    periodic = ref.collide_regularized(wall_state, force=FORCE, **params)
    assert rel_err(got[:, :, :3], periodic[:, :, :3]) > 1e-6        # the wall rows really differ
    np.testing.assert_allclose(got[:, :, 3:LY - 3], periodic[:, :, 3:LY - 3], rtol=0, atol=1e-13)
