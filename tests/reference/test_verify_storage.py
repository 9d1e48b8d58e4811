"""`lbgen verify --storage`: the populations' storage apart from the arithmetic (issue 38,
lbgen.codegen.storage) is checked against the NumPy oracle like every kernel, within a bound
that follows the storage (lbgen.reference.judge: eps of the format times the run's deviation
max |f - w| / max |f|), in 2D and 3D; a wrong conversion fails; a storage wider than the
arithmetic, or an unknown one, is refused before any work."""
import json

import pytest
from click.testing import CliRunner

from lbgen.cli.main import main
from lbgen.codegen import storage as storage_module


def _verify(*args):
    return CliRunner().invoke(main, ["verify", "--json", "--backends", "c", "--layouts", "soa", "--collision", "bgk",
                                     *args])


@pytest.mark.parametrize("velocity_set", ["d2q9", "d3q19"])
def test_16_bit_storages_agree_with_the_oracle_within_their_bound(velocity_set):
    r = _verify("--velocity-set", velocity_set, "--storage", "fp16s,fp16c", "--precision", "single", "--steps", "6")
    assert r.exit_code == 0, r.output
    rows = json.loads(r.output)["rows"]
    assert {(row["storage"], row["path"]) for row in rows} == {(s, p) for s in ("fp16s", "fp16c")
                                                                for p in ("unfused", "fused")}
    for row in rows:
        # the storage ran: a 16-bit store differs from the float64 oracle far beyond single rounding
        # (a single-precision run: ~1e-7), within a bound still far below a wrong conversion's O(1e-1)
        assert 1e-6 < row["error"] <= row["tolerance"] < 5e-2, row
    fp16c = max(row["error"] for row in rows if row["storage"] == "fp16c")
    fp16s = max(row["error"] for row in rows if row["storage"] == "fp16s")
    assert fp16c < fp16s            # one mantissa bit more (lbgen.codegen.storage)


def test_a_wrong_conversion_is_a_mismatch(monkeypatch):
    real = storage_module.Codec.decode

    def doubled(self, s):           # a decode (or a kernel's load) off by a factor 2
        return 2.0 * real(self, s)

    monkeypatch.setattr(storage_module.Codec, "decode", doubled)
    r = CliRunner().invoke(main, ["verify", "--velocity-set", "d2q9", "--backends", "c", "--layouts", "soa",
                                  "--collision", "bgk", "--storage", "fp16s", "--precision", "single", "--steps", "3"])
    assert r.exit_code == 1, r.output
    assert "MISMATCH" in r.output


@pytest.mark.parametrize("args, words", [
    (("--storage", "fp64", "--precision", "single"), "--storage fp64 with --precision single"),
    (("--storage", "fp8"), "unknown storage 'fp8'; choose one of fp64, fp32, fp16s, fp16c"),
])
def test_bad_storages_are_refused_before_any_work(monkeypatch, args, words):
    import lbgen.reference.verify as verify_module
    monkeypatch.setattr(verify_module, "compile_program", lambda *a, **k: pytest.fail("compiled"))
    r = CliRunner().invoke(main, ["verify", "--velocity-set", "d2q9", *args])
    assert r.exit_code == 2 and words in r.output, r.output
