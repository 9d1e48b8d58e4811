"""`lbgen verify` passes on correct kernels and fails (non-zero) on a broken one."""
import json

import pytest
from click.testing import CliRunner

import lbgen.codegen.render as codegen
from lbgen.cli.main import main


def _verify(*args):
    return CliRunner().invoke(main, ["verify", "--json", *args])


def test_verify_reports_every_backend_agreeing_with_the_reference():
    result = _verify("--layouts", "soa,caosoa-vl8", "--steps", "10")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["ok"] is True
    backends = {r["backend"] for r in data["rows"]}
    assert "c" in backends
    assert all(r["error"] <= 1e-12 for r in data["rows"])
    assert all(r["vs_c"] is not None for r in data["rows"] if r["backend"] != "c")


def test_verify_strict_requires_bit_identical_backends():
    result = _verify("--layouts", "caosoa-vl8", "--steps", "5", "--strict", "--collision", "regularized")
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)["rows"]
    others = [r for r in rows if r["backend"] != "c"]
    assert all(r["vs_c"] == 0 for r in others)


def test_verify_fails_when_a_kernel_has_a_wrong_offset(monkeypatch):
    real = codegen._index_terms

    def broken(*args):
        terms = real(*args)
        terms["pull"] = list(terms["pull"])
        terms["pull"][5] = terms["pull"][5] + " + SX"      # population 5 pulled from the wrong column
        return terms

    monkeypatch.setattr(codegen, "_index_terms", broken)
    # render afresh: the on-disk cache of rendered sources is keyed by the code on disk
    monkeypatch.setattr(codegen, "cached_pickle", lambda kind, key, build: build())
    result = CliRunner().invoke(main, ["verify", "--backends", "c", "--layouts", "soa", "--steps", "5",
                                       "--collision", "bgk"])
    assert result.exit_code == 1, result.output
    assert "MISMATCH" in result.output


def test_verify_with_walls_checks_the_bc_kernel():
    result = _verify("--backends", "c,cuda-shim", "--layouts", "caosoa-vl8", "--steps", "10", "--walls")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["walls"] is True and data["ok"] is True


@pytest.mark.parametrize("args, message", [
    (["--layouts", "caosoa"], "needs a VL"),
    (["--layouts", "caosoa-vl6"], "VL=6 is not a power of two"),
    (["--backends", "metal"], "unknown backend 'metal'"),
    (["--collision", "mrt"], "unknown collision operator 'mrt'"),
])
def test_verify_rejects_bad_input(args, message):
    result = CliRunner().invoke(main, ["verify", *args])
    assert result.exit_code == 2 and message in result.output
