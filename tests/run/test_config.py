"""The run description (lbgen.run.config) and the operator records: one schema for the CLI, TOML
files and Python, values converted or refused naming the key, resume exact."""
import json

import numpy as np
import pytest
from click.testing import CliRunner

from lbgen.cli.main import main
from lbgen.run.config import OPTIONS, ConfigError, RunConfig
from lbgen.run.driver import Run
from lbgen.model.operators import OPERATOR_RECORDS, ParameterError, operator
from lbgen.simulation.runner import Simulation, SimulationError
from lbgen.run.setups import RT_GRAVITY, SETUPS


def _build(**values):
    return RunConfig.build(None, ("t.toml", values))


@pytest.mark.parametrize("value, walls", [("no", False), ("false", False), (False, False), ("yes", True), (True, True)])
def test_toml_booleans_are_converted_not_truthy(value, walls):
    cfg = _build(walls=value)
    assert (cfg.walls is not None) == walls


@pytest.mark.parametrize("key, value, message", [
    ("lx", 32.7, "lx=32.7 must be an integer"),
    ("lx", True, "must be an integer, not a boolean"),
    ("lx", 0, "lx=0 must be >= 1"),
    ("steps", -2, "steps=-2 must be >= 0"),
    ("tau", "fast", "tau='fast' must be a number"),
    ("tau", 0.5, "tau=0.5 must be > 0.5"),
    ("walls", "maybe", "walls='maybe' must be true or false"),
    ("vl", 6, "power of two"),
    ("pictures", "T,heat", "unknown quantities ['heat']"),
    ("collision", "elbm", "unknown collision operator 'elbm'"),
    ("gravity", "1,2,3", "expected two numbers"),
])
def test_bad_values_are_refused_naming_the_source_and_key(key, value, message):
    with pytest.raises((ConfigError, ParameterError)) as e:
        _build(**{key: value})
    assert message in str(e.value)


def test_numbers_given_as_text_are_converted():
    cfg = _build(tau="0.9", lx="32", gravity=[0, "-1e-5"])
    assert cfg.tau == 0.9 and cfg.lx == 32 and cfg.gravity == (0.0, -1e-5)


def test_unknown_keys_are_refused_with_the_closest_valid_name():
    with pytest.raises(ConfigError, match=r"unknown key 'colision'.*did you mean 'collision'"):
        _build(colision="regularized")


def test_parameters_of_another_operator_are_refused_not_ignored():
    with pytest.raises(ConfigError, match="tau has no effect in this run: it is a parameter of bgk, trt, mrt, cumulant, central, kbc, bgk-les, trt-les, mrt-les, cumulant-les, "
                       "not of the regularized operator"):
        _build(collision="regularized", tau=0.9)


def test_setups_carry_their_own_defaults_and_user_values_win():
    rt = RunConfig.build("rayleigh-taylor")
    assert rt.collision == "regularized" and rt.gravity == RT_GRAVITY and rt.walls["T_bottom"] == 1.05
    assert set(rt.parameters) == set(operator("regularized").parameter_names)
    mine = RunConfig.build("rayleigh-taylor", ("toml", {"t_bottom": 1.1}), ("command line", {"t_bottom": 1.2}))
    assert mine.walls["T_bottom"] == 1.2
    assert RunConfig.build("shear-wave").walls is None
    assert set(SETUPS) == set(OPTIONS["setup"].choices)


def test_wall_options_without_walls_are_refused():
    with pytest.raises(ConfigError, match="--t-top has no effect in this run: it needs walls"):
        _build(t_top=0.9)


def test_operator_records_define_the_kernel_arguments_and_defaults():
    from lbgen.codegen.spec import OPERATOR_PARAMETERS
    from lbgen.model import collide
    for name, op in OPERATOR_RECORDS.items():
        assert OPERATOR_PARAMETERS[name] == op.kernel_arguments
        # the kernel arguments, then the wall-row switch and the wall rows' relaxation time
        where = ("d2q9",) if op.isothermal_only else ()          # trt: the isothermal sets only
        assert tuple(map(str, collide(name, *where).parameters)) == op.kernel_arguments + ("wall", "tau_wall")
        assert op.check({}) == op.defaults()
    with pytest.raises(ParameterError, match="C1=0.0 must be > 0"):
        operator("regularized").check({"C1": 0.0})


def test_simulation_refuses_unknown_keywords_naming_them():
    with pytest.raises(SimulationError, match=r"unknown keyword\(s\) colision.*did you mean 'collision'"):
        Simulation(16, 64, colision="regularized")
    with pytest.raises(SimulationError, match="has no parameter"):
        Simulation(16, 64, collision="regularized", tau=0.9)
    with pytest.raises(SimulationError, match="lx=16.5 must be a positive integer"):
        Simulation(16.5, 64)


def test_parameters_are_fixed_or_changed_with_effect():
    sim = Simulation(8, 32, layout="soa", tau=0.8, check_every=0)
    with pytest.raises(SimulationError, match="no state yet"):
        sim.run(1)
    with pytest.raises(AttributeError, match="set_parameters"):
        sim.params.tau = 0.55
    rng = np.random.default_rng(1)
    fields = {"rho": 1 + 0.01 * rng.standard_normal((8, 32)), "ux": np.zeros((8, 32)),
              "uy": np.zeros((8, 32)), "T": np.ones((8, 32))}
    sim.set_fields(**fields)
    sim.run(5)
    a = sim.populations()
    other = Simulation(8, 32, layout="soa", tau=0.8, check_every=0)
    other.set_fields(**fields)
    other.set_parameters(tau=0.55)
    assert other.params.tau == 0.55
    other.run(5)
    assert not np.array_equal(a, other.populations())


def test_resume_refuses_physics_changes_and_applies_harmless_ones(tmp_path):
    out = tmp_path / "run"
    cfg = RunConfig.build("shear-wave", ("python", dict(lx=8, ly=32, steps=10, out=str(out), checkpoint_every=5,
                                                        pictures="none")))
    Run(cfg, echo=lambda m: None).execute()
    with pytest.raises(ConfigError) as e:
        Run.resume(out, overrides={"tau": 0.95, "lx": 16}, echo=lambda m: None)
    assert "tau (0.8 in the run, 0.95 given)" in str(e.value) and "lx (8 in the run, 16 given)" in str(e.value)
    run = Run.resume(out, overrides={"steps": 20, "check_every": 5, "tau": 0.8}, echo=lambda m: None)
    assert run.cfg.steps == 20 and run.cfg.check_every == 5
    run.execute()
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["config"]["steps"] == 20 and manifest["config"]["parameters"] == {"tau": 0.8}


def test_resume_refuses_a_checkpoint_of_another_run(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    for folder, extra in ((a, {}), (b, {"collision": "regularized"})):
        Run(RunConfig.build("shear-wave", ("python", dict(lx=8, ly=32, steps=5, out=str(folder), checkpoint_every=5,
                                                          pictures="none", **extra))),
            echo=lambda m: None).execute()
    checkpoint = next((b / "checkpoints").glob("*.lbchk"))
    for old in (a / "checkpoints").glob("*.lbchk"):
        old.unlink()
    checkpoint.rename(a / "checkpoints" / checkpoint.name)
    with pytest.raises(SimulationError, match="written by another run.*collision"):
        Run.resume(a, overrides={"steps": 10}, echo=lambda m: None)


def test_cli_config_values_are_checked_and_resume_options_compared(tmp_path):
    toml = tmp_path / "run.toml"
    toml.write_text('lx = 8\nly = 32\nsteps = 4\nwalls = "no"\ntau = "0.9"\npictures = "none"\n')
    out = tmp_path / "o"
    result = CliRunner().invoke(main, ["run", "--config", str(toml), "--out", str(out), "--checkpoint-every", "2",
                                       "--no-progress"])
    assert result.exit_code == 0, result.output
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["config"]["walls"] is None and manifest["config"]["parameters"] == {"tau": 0.9}
    toml.write_text("lx = 8.5\n")
    result = CliRunner().invoke(main, ["run", "--config", str(toml)])
    assert result.exit_code == 2 and f"--config {toml}: lx=8.5 must be an integer" in result.output
    result = CliRunner().invoke(main, ["run", "--resume", str(out), "--tau", "0.95", "--no-progress"])
    assert result.exit_code == 2 and "tau (0.9 in the run, 0.95 given)" in result.output
    result = CliRunner().invoke(main, ["run", "--resume", str(out), "--steps", "6", "--no-progress"])
    assert result.exit_code == 0, result.output


def test_set_fields_names_a_field_of_the_wrong_shape():
    sim = Simulation(8, 32, layout="soa", check_every=0)
    with pytest.raises(SimulationError, match=r"set_fields: ux must be .* shape \(LX, LY\) = \(8, 32\); got an array of shape \(4, 4\)"):
        sim.set_fields(1.0, np.zeros((4, 4)), 0.0, 1.0)
