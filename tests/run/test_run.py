"""Whole runs: Rayleigh-Taylor with outputs, checkpoints, bit-identical resume, guards."""
import json

import numpy as np
import pytest
from click.testing import CliRunner

from lbgen.run.checkpoint import checkpoint_path, read_checkpoint
from lbgen.cli.main import main
from lbgen.run.config import RunConfig
from lbgen.run.driver import Run
from lbgen.simulation.runner import SimulationError
from lbgen.run.setups import rayleigh_taylor

RT = dict(setup="rayleigh-taylor", lx=16, ly=64, collision="regularized", gravity=(0.0, -1e-4),
          walls={"T_bottom": 1.05, "T_top": 0.95, "adiabatic_bottom": False, "adiabatic_top": False})


def _cli(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def test_rayleigh_taylor_setup_is_in_hydrostatic_balance_with_cold_fluid_on_top():
    g = (0.0, -1e-4)
    f = rayleigh_taylor(32, 128, gravity=g, seed=3)
    T, rho = f["T"], f["rho"]
    assert T[:, 0].min() > 1.04 and T[:, -1].max() < 0.96          # hot bottom, cold top
    p = rho * T
    # the half-step forcing's balance: the force acts on the mean density of two rows
    assert np.allclose(p[:, 1:] - p[:, :-1], (rho[:, :-1] + rho[:, 1:]) / 2 * g[1], rtol=0, atol=1e-15)
    # the interface is perturbed (not flat) and the perturbation depends on the seed
    h = np.argmin(np.abs(T - 1.0), axis=1)
    assert h.max() > h.min()
    assert not np.array_equal(rayleigh_taylor(32, 128, seed=4)["T"], T)


def test_run_folder_has_fields_vtk_pictures_series_and_manifest(tmp_path):
    out = tmp_path / "rt"
    result = _cli("run", "rayleigh-taylor", "--lx", 16, "--ly", 64, "--steps", 40, "--gravity", "0,-1e-4",
                  "--out", out, "--output-every", 20, "--pictures", "T,rho,vorticity", "--no-progress")
    assert result.exit_code == 0, result.output
    for step in (0, 20, 40):
        assert (out / "fields" / f"step-{step:09d}.h5").exists()
        assert (out / "vtk" / f"step-{step:09d}.vti").exists()
        for q in ("T", "rho", "vorticity"):
            assert (out / "pictures" / f"{q}-{step:09d}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "step-000000040.vti" in (out / "vtk" / "fields.pvd").read_text()
    rows = (out / "series.csv").read_text().strip().splitlines()
    assert rows[0].startswith("step,time,mass,momentum_x,momentum_y,energy,kinetic_energy,mixing_width")
    assert [int(r.split(",")[0]) for r in rows[1:]] == [0, 12, 24, 36, 40]  # every 10 steps, rounded up to the time block (3)
    assert (out / "series.png").exists()
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "finished" and manifest["step"] == 40
    assert manifest["config"]["collision"] == "regularized" and manifest["config"]["walls"]["T_bottom"] == 1.05
    assert manifest["device"]["backend"] == "c" and manifest["mlups"] > 0
    assert manifest["versions"]["numpy"] and manifest["versions"]["lbgen"]


def test_resumed_run_is_bit_identical_to_an_uninterrupted_one(tmp_path):
    full = Run(RunConfig(**RT, steps=60, out=str(tmp_path / "full"), checkpoint_every=30), echo=lambda m: None)
    full.execute()
    part = Run(RunConfig(**RT, steps=30, out=str(tmp_path / "part"), checkpoint_every=30), echo=lambda m: None)
    part.execute()
    resumed = Run.resume(tmp_path / "part", steps=60, echo=lambda m: None)
    assert resumed.sim.time_step == 30
    resumed.execute()
    assert np.array_equal(resumed.sim.state(), full.sim.state())
    a, step_a, _ = read_checkpoint(checkpoint_path(tmp_path / "full", 60))
    b, step_b, _ = read_checkpoint(checkpoint_path(tmp_path / "part", 60))
    assert step_a == step_b == 60 and np.array_equal(a, b)
    steps = [int(r.split(",")[0]) for r in (tmp_path / "part" / "series.csv").read_text().splitlines()[1:]]
    assert steps == sorted(set(steps)), "a resumed run must not duplicate series rows"


def test_resume_via_cli_continues_to_the_requested_step(tmp_path):
    out = tmp_path / "run"
    assert _cli("run", "--lx", 8, "--ly", 32, "--steps", 20, "--out", out, "--checkpoint-every", 10,
                "--no-progress").exit_code == 0
    result = _cli("run", "--resume", out, "--steps", 40, "--no-progress")
    assert result.exit_code == 0, result.output
    assert "step 40" in result.output
    assert json.loads((out / "manifest.json").read_text())["resumed_from"] == 20


def test_truncated_checkpoint_is_detected_with_a_clear_error(tmp_path):
    out = tmp_path / "run"
    Run(RunConfig(lx=8, ly=32, steps=10, out=str(out), checkpoint_every=10), echo=lambda m: None).execute()
    path = checkpoint_path(out, 10)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    result = _cli("run", "--resume", out, "--no-progress")
    assert result.exit_code == 2
    assert "step-000000010" in result.output and ("truncated" in result.output or "checksum" in result.output)
    assert "Traceback" not in result.output


def test_injected_nan_stops_the_run_naming_step_and_site_and_keeps_the_checkpoint(tmp_path):
    out = tmp_path / "run"
    run = Run(RunConfig(**RT, steps=20, out=str(out), checkpoint_every=10, check_every=1), echo=lambda m: None)
    run.execute()
    run.cfg = run.cfg.replace(steps=40)
    state = run.sim.state()
    state[18, 3, 7] = np.nan       # the population at rest: after one step only site (3, 7) is bad
    for r in run.sim.regions:      # planted below the API: restore() refuses NaN populations (issue 35)
        block = np.ascontiguousarray(state[:, r.columns % run.sim.lx, :])
        r.f = r.program.upload(r.program.layout.pack(block), r.f)
    with pytest.raises(SimulationError) as err:
        run.execute()
    message = str(err.value)
    assert "diverged by step 21" in message and "(x=3, y=7)" in message and "Hint" in message
    assert "step-000000020" in message, "the message must point at the last good checkpoint"
    good, step, _ = read_checkpoint(checkpoint_path(out, 20))
    assert step == 20 and np.isfinite(good).all()
    assert not list((out / "checkpoints").glob("step-00000003*"))
    assert json.loads((out / "manifest.json").read_text())["status"] == "diverged"


def test_negative_temperature_is_caught_by_the_guard():
    run = Run(RunConfig(lx=8, ly=32, steps=10, check_every=5), echo=lambda m: None)
    state = run.sim.state()
    state[1, 2, 4] -= 0.3          # a fast population (e = (3, 0)) goes negative ...
    state[18, 2, 4] += 0.3         # ... the mass stays positive, the kinetic energy does not
    run.sim.restore(state, 0)
    with pytest.raises(SimulationError, match=r"negative temperature\): first bad site \(x=2, y=4\)"):
        run.sim.check_finite()


def test_negative_density_and_a_healthy_state_by_the_guard():
    run = Run(RunConfig(lx=8, ly=32, steps=10, check_every=5), echo=lambda m: None)
    assert run.sim.looks_healthy()
    state = run.sim.state()
    state[:, 3, 5] *= -1.0         # every population of one site negative: rho < 0 (T > 0)
    run.sim.restore(state, 0)
    assert not run.sim.looks_healthy()
    with pytest.raises(SimulationError, match=r"negative density\): first bad site \(x=3, y=5\)"):
        run.sim.check_finite()
