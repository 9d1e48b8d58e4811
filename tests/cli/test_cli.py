"""The command line: info, emit, run (flags, TOML config, --init/--save, clear errors)."""
import json
import subprocess
import sys

import numpy as np
import pytest
from click.testing import CliRunner

from lbgen.reference import bulk as ref
from lbgen.cli.main import main


def invoke(*args, **kw):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False, **kw)


def test_info_json_has_velocities_weights_r_and_op_counts():
    result = invoke("info", "--json")
    assert result.exit_code == 0
    data = json.loads(result.output)
    vs = data["velocity_set"]
    assert len(vs["velocities"]) == 37 and vs["velocities"][0] == [3, -1] and vs["velocities"][18] == [0, 0]
    assert len(vs["weights"]) == 37 and abs(sum(vs["weights"]) - 1) < 1e-14
    assert abs(vs["r"] - 1.19697977039307435897239) < 1e-15
    for op in ("bgk", "regularized"):
        assert 0 < data["operators"][op]["op_count"] < 3000
    assert data["backends"]["c"]["available"] is True


def test_info_prints_model_summary():
    result = invoke("info")
    assert result.exit_code == 0
    assert "Q = 37" in result.output and "1.19697977039307435897" in result.output
    assert "0.23315066913235250228" in result.output and "collide regularized" in result.output


def test_python_dash_m_lbgen_works():
    out = subprocess.run([sys.executable, "-m", "lbgen", "--version"], capture_output=True, text=True, check=True)
    assert "lbgen" in out.stdout


def test_emit_headline_command_works_as_typed(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = invoke("emit", "--layout", "caosoa", "--vl", "32")
    assert result.exit_code == 0, result.output
    folder = tmp_path / "generated" / "c" / "caosoa-vl32"
    assert (folder / "lbgen_kernels.c").exists() and (folder / "Makefile").exists()
    assert "VL          32" in (folder / "lbgen_kernels.c").read_text()


@pytest.mark.parametrize("args, message", [
    (["--layout", "caosoa", "--vl", "6"], "VL=6 is not a power of two"),
    (["--layout", "caosoa", "--vl", "8", "--lx", "16", "--ly", "100"], "VL=8 does not divide LY=100"),
    (["--layout", "caosoa", "--vl", "32", "--lx", "16", "--ly", "64"], "too small for the 3-wide halo"),
    (["--layout", "aos", "--lx", "0", "--ly", "64"], "LX=0"),
    (["--layout", "hilbert"], "unknown layout 'hilbert'"),
    (["--backend", "fortran"], "unknown backend 'fortran'"),
    (["--precision", "half"], "unknown precision 'half'"),
    (["--collision", "elbm"], "unknown collision operator 'elbm'"),
    (["--layout", "soa", "--vl", "8"], "takes no VL"),
    (["--layout", "caosoa", "--vl", "eight"], "not an integer"),
])
def test_emit_rejects_bad_input_with_a_clear_message(tmp_path, args, message):
    result = CliRunner().invoke(main, ["emit", *args, "-o", str(tmp_path / "out")])
    assert result.exit_code == 2
    assert message in result.output
    assert "Traceback" not in result.output
    assert not (tmp_path / "out").exists(), "nothing may be written for bad input"


def test_run_saves_fields_and_reports_mlups(tmp_path):
    out = tmp_path / "out.npz"
    result = invoke("run", "--lx", 16, "--ly", 64, "--steps", 20, "--save", out, "--no-progress")
    assert result.exit_code == 0, result.output
    assert "MLUPS" in result.output
    with np.load(out) as data:
        assert data["rho"].shape == (16, 64)
        assert abs(data["rho"].sum() - 16 * 64) < 1e-9


def test_run_from_init_file_matches_reference_and_takes_size_from_file(tmp_path):
    rng = np.random.default_rng(5)
    lx, ly = 6, 48
    fields = {"rho": 1 + 0.02 * rng.standard_normal((lx, ly)), "ux": 0.02 * rng.standard_normal((lx, ly)),
              "uy": 0.02 * rng.standard_normal((lx, ly)), "T": 1 + 0.02 * rng.standard_normal((lx, ly))}
    init = tmp_path / "init.npz"
    np.savez(init, **fields)
    out = tmp_path / "out.npz"
    sized = invoke("run", "--init", init, "--steps", 20, "--save", out, "--no-progress", "--lx", 999)
    assert sized.exit_code == 2 and "--lx has no effect in this run" in sized.output and not out.exists()
    result = invoke("run", "--init", init, "--steps", 20, "--tau", 0.7, "--gravity", "0,-1e-4",
                    "--layout", "csoa", "--vl", 4, "--save", out, "--no-progress")
    assert result.exit_code == 0, result.output
    # --init and --save hold physical (half-step) fields
    a = ref.force_from_gravity((0.0, -1e-4))
    f = ref.physical_equilibrium(fields["rho"], fields["ux"], fields["uy"], fields["T"], a)
    for _ in range(20):
        f = ref.collide(ref.propagate(f), "bgk", tau=0.7, force=a)
    expected = ref.physical_fields(f, a)
    with np.load(out) as data:
        for name, e in zip(("rho", "ux", "uy", "T"), expected):
            assert np.abs(data[name] - e).max() < 1e-12, name


def test_run_reads_toml_config_and_flags_win(tmp_path):
    cfg = tmp_path / "run.toml"
    cfg.write_text('[run]\nlx = 8\nly = 48\nsteps = 5\ncollision = "regularized"\nc1 = 0.01\nlayout = "aos"\n')
    out = tmp_path / "o.npz"
    result = invoke("run", "--config", cfg, "--ly", 32, "--save", out, "--no-progress")
    assert result.exit_code == 0, result.output
    assert "8 x 32" in result.output and "regularized" in result.output and "c aos" in result.output
    with np.load(out) as data:
        assert data["rho"].shape == (8, 32)


def test_run_config_with_unknown_key_is_refused(tmp_path):
    cfg = tmp_path / "run.toml"
    cfg.write_text("lx = 8\nviscosity = 0.1\n")
    result = CliRunner().invoke(main, ["run", "--config", str(cfg)])
    assert result.exit_code == 2 and "viscosity" in result.output


@pytest.mark.parametrize("args, message", [
    (["--tau", "0.45"], "tau=0.45 must be > 0.5"),
    (["--gravity", "1,2,3"], "expected two numbers"),
    (["--collision", "regularized", "--c1", "-1"], "C1=-1.0 must be > 0"),
    (["--layout", "caosoa", "--vl", "16", "--ly", "32"], "too small for the 3-wide halo"),
    (["not-a-setup"], "unknown set-up 'not-a-setup'"),
    (["--backend", "metal"], "unknown backend 'metal'"),
])
def test_run_rejects_bad_parameters_with_a_clear_message(args, message):
    result = CliRunner().invoke(main, ["run", "--steps", "1", "--no-progress", *args])
    assert result.exit_code == 2, result.output
    assert message in result.output


def test_run_that_goes_nan_stops_and_names_step_and_site(tmp_path):
    lx, ly = 6, 24
    fields = {"rho": np.ones((lx, ly)), "ux": np.zeros((lx, ly)), "uy": np.zeros((lx, ly)), "T": np.ones((lx, ly))}
    fields["ux"][2, 5] = 3.0   # far beyond what the lattice can carry: blows up
    init = tmp_path / "bad.npz"
    np.savez(init, **fields)
    result = CliRunner().invoke(main, ["run", "--init", str(init), "--steps", "2000", "--tau", "0.5001",
                                       "--layout", "soa", "--no-progress"])
    assert result.exit_code == 2, result.output
    assert "diverged by step" in result.output and "first bad site" in result.output


def test_emit_report_shows_ptxas_registers_and_spills_for_cuda(tmp_path):
    from helpers import require
    from lbgen.backends.cuda.nvcc import available
    require(*available(), "nvcc")
    result = invoke("emit", "--backend", "cuda", "--layout", "caosoa", "--vl", 32, "--report", "-o", tmp_path)
    assert result.exit_code == 0, result.output
    lines = [l.split() for l in result.output.splitlines() if l.startswith("sm_90") and "collide" in l]
    assert lines, result.output
    regs, spill_stores = int(lines[0][2]), int(lines[0][4])
    assert 0 < regs <= 255 and spill_stores == 0
    assert "sm_80" in result.output


def test_emit_report_needs_the_cuda_backend(tmp_path):
    result = CliRunner().invoke(main, ["emit", "--report", "-o", str(tmp_path)])
    assert result.exit_code == 2 and "--backend cuda" in result.output


def test_notes_name_only_options_the_user_gave(tmp_path):
    """lbgen's own cadences (the default --check-every, the auto time block) never appear in a
    note; a user who chose both a time block and a cadence that does not fit it is told, naming
    just those."""
    base = ["run", "rayleigh-taylor", "--lx", 16, "--ly", 64, "--steps", 12, "--gravity", "0,-4e-4",
            "--no-progress", "--pictures", "none"]
    quiet = invoke(*base, "--out", tmp_path / "a", "--output-every", 10)          # the README's kind of run
    assert quiet.exit_code == 0, quiet.output
    assert "not a multiple" not in quiet.output and "--check-every" not in quiet.output
    told = invoke(*base, "--out", tmp_path / "b", "--output-every", 10, "--time-block", 3)
    assert told.exit_code == 0, told.output
    note = [line for line in told.output.splitlines() if "not a multiple" in line]
    assert len(note) == 1 and "--output-every 10" in note[0], told.output
    assert "--check-every" not in note[0] and "--series-every" not in note[0], note


def test_help_lists_every_velocity_set_and_info_says_what_cuda_does_without_a_gpu():
    from lbgen.model.catalog import MODEL_SETS
    text = invoke("--help").output
    assert all(name in text for name in MODEL_SETS), text
    data = json.loads(invoke("info", "--json").output)
    assert data["backends"]["cuda-shim"]["available"]          # g++ runs the .cu kernels here
    assert "cuda-shim" in data["backends"]["cuda-shim"]["detail"]
