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
