"""The 3D Rayleigh-Taylor set-up (D3Q39, the thermal 3D set): its initial state (the 2D
state's tanh profile and discrete hydrostatic balance along Z, the interface perturbed by
eight (mx, my) modes), that the fluid at rest stays quiet with a flat interface and that a
perturbed one grows (the instability: kinetic energy and the cold fluid sinking), a single
mode's linear growth rate against the Rayleigh equation for the run's own density profile,
mass kept to round-off between walls on z, and the run's physical numbers (Atwood, t_RT,
Re, Ma with gamma = 5/3) in its manifest."""
from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

import lbgen
from lbgen.cli.main import main
from lbgen.model import physics
from lbgen.run.setups import RT_T_COLD, RT_T_HOT, rayleigh_taylor3d, rayleigh_taylor_profile

SHAPE = (16, 16, 32)
G = (0.0, 0.0, -1e-3)


def test_the_state_is_the_2d_profile_along_z_in_discrete_hydrostatic_balance():
    f = rayleigh_taylor3d(*SHAPE, gravity=G, amplitude=2.0, seed=3)
    T, rho = f["T"], f["rho"]
    assert T.shape == rho.shape == SHAPE and all(np.all(f[k] == 0) for k in ("ux", "uy", "uz"))
    assert RT_T_COLD < T.min() < T.max() < RT_T_HOT and np.all(np.diff(T, axis=2) < 0)      # cold on top
    g = G[2]
    balance = rho[..., 1:] * (T[..., 1:] - g / 2) - rho[..., :-1] * (T[..., :-1] + g / 2)
    assert np.abs(balance).max() < 1e-15 and np.all(rho[..., 0] == 1)
    # the interface (T at its mean) moves with x and y by the perturbation, around mid-depth
    mean = 0.5 * (RT_T_HOT + RT_T_COLD)
    height = (T > mean).sum(axis=2)
    assert abs(height.mean() - SHAPE[2] / 2) < 1.0 and height.max() - height.min() >= 2
    again = rayleigh_taylor3d(*SHAPE, gravity=G, amplitude=2.0, seed=3)
    other = rayleigh_taylor3d(*SHAPE, gravity=G, amplitude=2.0, seed=4)
    assert np.array_equal(again["T"], T) and not np.array_equal(other["T"], T)
    flat = rayleigh_taylor3d(*SHAPE, gravity=G, amplitude=0.0)
    assert np.ptp(flat["T"][:, :, 10]) == 0


def _run(amplitude, steps=1800):
    sim = lbgen.Simulation(*SHAPE, velocity_set="d3q39", collision="regularized", gravity=G, walls="z",
                             check_every=0, time_block=3)
    sim.set_fields(**rayleigh_taylor3d(*SHAPE, gravity=G, amplitude=amplitude))
    mass0 = sim.diagnostics()["mass"]
    sim.run(steps)
    f = sim.fields()
    speed = np.sqrt(f["ux"] ** 2 + f["uy"] ** 2 + f["uz"] ** 2)
    return {"ke": 0.5 * float((f["rho"] * speed ** 2).sum()), "max_speed": float(speed.max()),
            "T_low": float(f["T"][:, :, :SHAPE[2] // 2].mean()), "mass": (mass0, sim.diagnostics()["mass"])}


def test_a_perturbed_interface_grows_and_a_flat_one_stays_at_rest():
    """1800 steps = 2.6 t_RT at LX = 16, g = 1e-3 (model units), regularized C1 = C2 = 1e-3."""
    r = physics.scale_factor("d3q39")
    A = physics.atwood(RT_T_HOT, RT_T_COLD)
    U_ff = physics.free_fall_speed(A, physics.gravity_to_lattice(-G[2], r), SHAPE[0])   # sites/step
    T_low0 = float(rayleigh_taylor3d(*SHAPE, gravity=G, amplitude=0.0)["T"][:, :, :SHAPE[2] // 2].mean())
    flat, grown = _run(0.0), _run(1.0)
    assert physics.velocity_to_lattice(flat["max_speed"], r) < 0.01 * U_ff      # the balance holds
    assert grown["ke"] > 1e4 * flat["ke"]
    assert physics.velocity_to_lattice(grown["max_speed"], r) > 0.5 * U_ff
    assert T_low0 - grown["T_low"] > 4 * (T_low0 - flat["T_low"]) > 0           # cold fluid sinks
    for m0, m1 in (flat["mass"], grown["mass"]):
        assert m1 == pytest.approx(m0, rel=1e-12)


def test_the_cli_run_records_its_rayleigh_taylor_numbers(tmp_path):
    out = tmp_path / "rt3"
    r = CliRunner().invoke(main, ["run", "rayleigh-taylor", "--velocity-set", "d3q39", "--lx", "8", "--ly", "8",
                                  "--lz", "16", "--steps", "6", "--gravity", "0,0,-1e-3", "--out", str(out),
                                  "--pictures", "none", "--no-progress"])
    assert r.exit_code == 0, r.output
    manifest = json.loads((out / "manifest.json").read_text())
    cfg, numbers = manifest["config"], manifest["physics"]
    assert cfg["wall_axes"] == "z" and cfg["collision"] == "regularized" and cfg["velocity_set"] == "d3q39"
    rl = physics.scale_factor("d3q39")
    g = 1e-3 / rl ** 2
    A = 0.1 / 2.0
    assert numbers["Atwood"] == pytest.approx(A, rel=1e-12)
    assert numbers["t_unit"] == pytest.approx(np.sqrt(8 / (A * g)), rel=1e-12)
    assert numbers["c_s"] == pytest.approx(np.sqrt(5 / 3) / rl, rel=1e-12)
    assert numbers["kappa"] == pytest.approx(1e-3 / rl ** 2, rel=1e-12)
    assert numbers["Ma"] == pytest.approx(np.sqrt(A * g * 8) / numbers["c_s"], rel=1e-12)
    # the one t_RT: the titles' and .vti's time unit is the header's
    assert manifest["time_unit"] == {"steps": numbers["t_unit"], "label": "$t_{RT}$"}
    from lbgen.output import read_vti
    vti = read_vti(out / "vtk" / "step-000000006.vti")
    assert vti["step"].tolist() == [6] and vti["time/t_RT"][0] == pytest.approx(6 / numbers["t_unit"])


@pytest.mark.parametrize("args, axis", [
    (["--periodic", "--lx", "16", "--ly", "64"], "y"),                                    # 2D: no walls
    (["--velocity-set", "d3q39", "--wall-axes", "x", "--lx", "8", "--ly", "8", "--lz", "16"], "z"),
])
def test_gravity_without_the_walls_that_hold_the_fluid_is_refused_before_any_work(args, axis, tmp_path):
    """Once refused with a confusing '--t-bottom has no effect' (the set-up's wall defaults
    taken for given options); a run without gravity across that axis is a periodic box and runs."""
    out = tmp_path / "rt"
    r = CliRunner().invoke(main, ["run", "rayleigh-taylor", *args, "--steps", "3", "--out", str(out),
                                  "--no-progress"])
    assert r.exit_code == 2 and f"gravity along {axis} needs the walls" in r.output and not out.exists()
    assert "t-bottom" not in r.output and "Traceback" not in r.output
    zero = "0,0" if axis == "y" else "0,0,0"
    r = CliRunner().invoke(main, ["run", "rayleigh-taylor", *args, "--steps", "3", "--gravity", zero,
                                  "--no-progress"])
    assert r.exit_code == 0, r.output


def rayleigh_equation_growth_rate(rho0: np.ndarray, k: float, g: float) -> float:
    """The inviscid, incompressible linear growth rate of a mode exp(ikx + sigma t) on the
    density profile rho0(z) (nodes z = 0 .. n-1, w = 0 on walls half a node outside), from
    the Rayleigh equation (Chandrasekhar, Hydrodynamic and Hydromagnetic Stability, ch. X):
    (rho0 w')' - k^2 rho0 w = -(g k^2 / sigma^2) rho0' w, i.e. rho0' w = mu L w with L the
    positive operator -(rho0 w')' + k^2 rho0 w and sigma^2 = g k^2 mu, mu the largest
    eigenvalue (finite differences; numpy's Cholesky, no scipy)."""
    half = 0.5 * (rho0[1:] + rho0[:-1])
    up = np.append(half, rho0[-1])            # rho at j + 1/2 (the wall's own value at the top)
    down = np.insert(half, 0, rho0[0])
    L = np.diag(up + down + k * k * rho0) - np.diag(half, 1) - np.diag(half, -1)
    L[0, 0] += rho0[0]                         # w(-1/2) = 0: the ghost node is -w_0
    L[-1, -1] += rho0[-1]
    Ci = np.linalg.inv(np.linalg.cholesky(L))
    mu = np.linalg.eigvalsh(Ci @ np.diag(np.gradient(rho0)) @ Ci.T).max()
    return float(np.sqrt(g * k * k * mu))


def test_the_rayleigh_equation_solver_gives_the_sharp_interface_rate_for_long_waves():
    """Two layers (densities 1 and 1.1, a one-node step) in a tall box: the solver's rate
    tends to sqrt(A g k tanh(k H)) as k shrinks against the step's width (within 1.5 % at
    k = 2 pi / 128, 3 % at 2 pi / 64)."""
    rho = np.where(np.arange(400) >= 200, 1.1, 1.0)
    for wavelength, tol in ((64, 0.03), (128, 0.015)):
        k = 2 * np.pi / wavelength
        sharp = np.sqrt(0.1 / 2.1 * 1e-3 * k * np.tanh(k * 200))
        assert rayleigh_equation_growth_rate(rho, k, 1e-3) == pytest.approx(sharp, rel=tol)


def test_a_single_mode_grows_at_the_rate_of_the_rayleigh_equation():
    """One mode cos(2 pi x / 32) of amplitude 0.05 sites on a tanh interface 4 sites wide,
    32 x 4 x 64, g = 1e-3 (model units), regularized C1 = C2 = 1e-3: between steps 1400 and
    2000 (after the start-up transient, while the second harmonic stays below 3 % of the
    mode) the amplitude of its u_z grows at 1.767e-3 per step, 2.9 % above the Rayleigh
    equation's rate for the run's mean density profile at step 1700 (1.718e-3; viscosity,
    conduction and compressibility are not in it; 2.9-3.2 % over the windows from step 1200
    to 2200), and 30 % below the sharp interface's sqrt(A g k)."""
    LX, LY, LZ, gm = 32, 4, 64, 1e-3
    r = physics.scale_factor("d3q39")
    g, k = physics.gravity_to_lattice(gm, r), 2 * np.pi / LX
    h = LZ / 2 + 0.05 * np.cos(k * np.arange(LX))
    rho, T = (np.repeat(a, LY, axis=1) for a in rayleigh_taylor_profile(h[:, None], LZ, RT_T_HOT, RT_T_COLD, 4.0, -gm))
    zero = np.zeros((LX, LY, LZ))
    sim = lbgen.Simulation(LX, LY, LZ, velocity_set="d3q39", collision="regularized", gravity=(0, 0, -gm),
                             walls="z", check_every=0)
    sim.set_fields(rho, zero, zero, zero, T)
    sim.run(1400)
    steps, amplitude, profile = [], [], None
    for step in range(1400, 2001, 50):
        if step > 1400:
            sim.run(50)
        f = sim.fields()
        mode = np.abs(np.fft.rfft(f["uz"].mean(axis=1), axis=0)[1])
        steps.append(step)
        amplitude.append(np.sqrt((mode ** 2).sum()))
        if step == 1700:
            profile = f["rho"].mean(axis=(0, 1))
    measured = np.polyfit(steps, np.log(amplitude), 1)[0]
    theory = rayleigh_equation_growth_rate(profile, k, g)
    assert measured == pytest.approx(theory, rel=0.05)
    sharp = np.sqrt(physics.atwood(RT_T_HOT, RT_T_COLD) * g * k)
    assert measured < 0.8 * sharp


def test_rayleigh_taylor_between_isothermal_walls_across_z(tmp_path):
    """Issue 39: the 3D rayleigh-taylor between thermal walls (--walls, across z, the 2D set-up's
    1.05 / 0.95 unless --t-bottom/--t-top say otherwise): the run line names them, the walls
    hold their temperature in their rows, mass is kept to round-off, and the run differs from
    the default's bounce-back walls (which conduct no heat)."""
    def run(name, *extra):
        out = tmp_path / name
        r = CliRunner().invoke(main, ["run", "rayleigh-taylor", "--velocity-set", "d3q39", "--lx", "8", "--ly", "8",
                                      "--lz", "32", "--steps", "40", "--out", str(out), "--pictures", "none",
                                      "--series-every", "10", "--no-progress", *extra])
        assert r.exit_code == 0, r.output
        from lbgen.output import read_vti
        calls = json.loads((out / "manifest.json").read_text())["kernel_calls"]
        return r.output, read_vti(out / "vtk" / "step-000000040.vti"), (out / "series.csv").read_text(), calls
    text, walled, series, calls = run("walls", "--walls", "--t-bottom", "1.08")
    assert "thermal walls across z (lbgen scheme; bottom T = 1.08, top T = 0.95)" in text and "periodic" not in text
    assert calls["fused_walls"] == 40 and "bc" not in calls      # one sweep a step: propagate, bc, collide fused
    T = np.asarray(walled["T"])
    assert np.abs(T[:, :, 0] - 1.08).max() < 2e-3 and np.abs(T[:, :, -1] - 0.95).max() < 2e-3
    import csv
    import io
    rows = list(csv.DictReader(io.StringIO(series)))
    mass = [float(r["mass"]) for r in rows]
    assert len(mass) >= 4 and max(mass) - min(mass) <= 1e-11 * mass[0]
    _, bounced, _, _ = run("bounce")
    assert not np.array_equal(np.asarray(bounced["uz"]), np.asarray(walled["uz"]))


@pytest.mark.parametrize("args, words", [
    (["--velocity-set", "d3q39", "--walls", "--wall-axes", "x"], "--walls (the 3D thermal walls, across z) and "
                                                                  "--wall-axes x do not run together"),
    (["--velocity-set", "d3q19", "--walls"], "3D: across z or --wall-axis, on the thermal sets d3q39 and d3q103"),
])
def test_3d_thermal_walls_with_what_they_cannot_take_are_refused(args, words, tmp_path):
    out = tmp_path / "rt"
    r = CliRunner().invoke(main, ["run", "rayleigh-taylor" if "d3q39" in args else "taylor-green", *args, "--lx", "8",
                                  "--ly", "8", "--lz", "16", "--steps", "3", "--out", str(out), "--no-progress"])
    assert r.exit_code == 2 and words in r.output and not out.exists(), r.output
