"""`lbgen model`: every numeric option finite and in its range, and no option of one model
silently ignored by the other; refused naming the option before anything is measured."""
import pytest
from click.testing import CliRunner

from lbgen.cli.main import main
from lbgen.parallel import model as mpi_model
from lbgen.perf import split as perfmodel


@pytest.fixture(autouse=True)
def nothing_measured(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("lbgen model measured before refusing its options")
    monkeypatch.setattr(perfmodel, "measure", refuse)
    monkeypatch.setattr(mpi_model, "measure_tau", refuse)


@pytest.mark.parametrize("args, message", [
    (["--ranks", "2", "--latency", "nan"], "Invalid value for '--latency': 'nan' is not a finite number"),
    (["--ranks", "2", "--latency", "inf"], "Invalid value for '--latency': 'inf' is not a finite number"),
    (["--ranks", "2", "--latency", "-1"], "Invalid value for '--latency': -1.0 is not in the range x>=0"),
    (["--ranks", "2", "--bandwidth", "nan"], "Invalid value for '--bandwidth': 'nan' is not a finite number"),
    (["--ranks", "2", "--bandwidth", "inf"], "Invalid value for '--bandwidth': 'inf' is not a finite number"),
    (["--ranks", "2", "--bandwidth", "0"], "Invalid value for '--bandwidth': 0.0 is not in the range x>0"),
    (["--ranks", "nan"], "Invalid value for '--ranks'"),
    (["--steps", "0"], "Invalid value for '--steps'"),
    (["--lx", "nan"], "Invalid value for '--lx'"),
    (["--measure", "-1"], "Invalid value for '--measure'"),
    (["--vl", "nan"], "VL='nan'"),
    (["--latency", "1e-6"], "--latency applies to the multi-rank model only: add --ranks N"),
    (["--bandwidth", "1e9", "--latency", "0"], "--latency and --bandwidth apply to the multi-rank model only"),
    (["--ranks", "2", "--measure", "3"], "--measure: the host + device model's option(s)"),
    (["--ranks", "2", "--hetero", "cuda"], "--hetero: the host + device model's option(s)"),
])
def test_model_refuses_bad_numbers_and_misplaced_options_naming_them(args, message):
    result = CliRunner().invoke(main, ["model", *args])
    assert result.exit_code == 2, result.output
    assert message in result.output


def test_every_set_is_offered_and_named_from_the_catalogue():
    """The sets a command offers and the 3D sets its refusals name come from the catalogue
    (one home): every command's --velocity-set help lists each set with its summary, and a
    2D set given --lz is refused naming exactly the catalogue's 3D sets."""
    import re

    from click.testing import CliRunner

    from lbgen.cli.main import main
    from lbgen.model.catalog import MODEL_SETS, SETS_3D, set_names, sets_help

    assert SETS_3D == tuple(k for k, e in MODEL_SETS.items() if e.D == 3) and len(SETS_3D) >= 2
    for k, e in MODEL_SETS.items():
        assert f"{k} ({e.summary})" in sets_help()
    flat = " ".join(sets_help().split())
    for command in ("run", "emit", "info", "verify", "bench"):
        out = CliRunner().invoke(main, [command, "--help"], terminal_width=200).output
        assert flat in " ".join(out.split()), command
    for args in (["run", "--lx", "8", "--ly", "8", "--lz", "8", "--velocity-set", "d2q9"],
                 ["bench", "--velocity-set", "d2q9", "--lz", "8"],
                 ["verify", "--velocity-set", "d2q9", "--lz", "8"]):
        res = CliRunner().invoke(main, args)
        assert res.exit_code == 2, (args, res.output)
        named = re.search(r"--velocity-set ([a-z0-9, ]+ or [a-z0-9]+)\)", res.output)
        assert named and named.group(1) == set_names(SETS_3D), (args, res.output)
