"""`lbgen verify` in 3D (lbgen.reference.verify3d): every backend x 3D layout x operator
against the NumPy 3D oracle, with walls, a lid and a voxel mask; it fails (exit status 1) on
a broken kernel, strict builds are bit-identical across backends in single precision with a
moving lid too (the push term, once computed differently on OpenCL), and bad input is
refused before any work."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

import lbgen.codegen.render as render
import lbgen.reference.verify3d as verify3d
from lbgen.backends import available
from lbgen.cli.main import main
from helpers import require


def _verify(*args):
    return CliRunner().invoke(main, ["verify", "--json", "--velocity-set", "d3q19", *args])


def test_3d_verify_runs_every_layout_against_the_oracle():
    r = _verify("--backends", "c", "--steps", "5")
    assert r.exit_code == 0, r.output
    data = json.loads(r.output)
    assert data["ok"] and data["lattice"] == [6, 5, 32] and data["velocity_set"] == "d3q19"
    tags = {(row["layout"], row["vl"]) for row in data["rows"]}
    assert tags == {("aos", None), ("soa", None), ("csoa", 8), ("caosoa", 8), ("caosoa", 32)}
    assert {row["path"] for row in data["rows"]} == {"unfused", "fused"}
    assert {row["collision"] for row in data["rows"]} == {"bgk", "regularized"}
    assert all(0 < row["error"] <= 1e-13 for row in data["rows"])


def test_3d_verify_with_boundaries_on_d3q27_and_a_smaller_lattice():
    r = CliRunner().invoke(main, ["verify", "--json", "--velocity-set", "d3q27", "--backends", "c", "--walls",
                                  "--lz", "8", "--steps", "4"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.output)
    assert data["ok"] and data["lattice"] == [6, 5, 8] and "solid voxels" in data["boundaries"]
    assert {row["vl"] for row in data["rows"]} == {None, 8}            # VL 32 does not fit LZ = 8: left out


def test_3d_verify_of_the_thermal_d3q39_with_boundaries():
    """D3Q39 (halo 3, a random temperature field) against the oracle's third-order BGK."""
    r = CliRunner().invoke(main, ["verify", "--json", "--velocity-set", "d3q39", "--collision", "bgk", "--backends",
                                  "c", "--walls", "--lz", "24", "--steps", "6"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.output)
    assert data["ok"] and {row["vl"] for row in data["rows"]} == {None, 8}       # VL 32 does not fit LZ = 24
    assert all(0 < row["error"] <= 1e-13 for row in data["rows"])


@pytest.mark.slow
def test_3d_verify_of_the_fourth_order_d3q103_with_boundaries():
    """D3Q103 (halo 3, 103 populations; one C build, SoA, ~100 s of gcc, and the OpenCL
    kernels of the same text, ~12 s) against the oracle's fourth-order BGK, with walls, a lid
    and solid voxels."""
    require(*available("opencl"), "OpenCL")
    r = CliRunner().invoke(main, ["verify", "--json", "--velocity-set", "d3q103", "--collision", "bgk", "--backends",
                                  "c,opencl", "--layouts", "soa", "--walls", "--lz", "12", "--steps", "6"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.output)
    assert data["ok"] and sorted(row["backend"] for row in data["rows"]) == ["c", "c", "opencl", "opencl"]
    assert all(0 < row["error"] <= 1e-13 for row in data["rows"])


def test_3d_verify_fails_when_a_kernel_pulls_from_the_wrong_site(monkeypatch):
    real = render._pull_terms

    def broken(*args):
        terms = real(*args)
        terms["pull"] = list(terms["pull"])
        terms["pull"][5] = terms["pull"][5] + " + SX"      # population 5 pulled from the wrong X column
        return terms

    monkeypatch.setattr(render, "_pull_terms", broken)
    monkeypatch.setattr(render, "cached_pickle", lambda kind, key, build: build())
    r = CliRunner().invoke(main, ["verify", "--velocity-set", "d3q19", "--backends", "c", "--layouts", "soa",
                                  "--collision", "bgk", "--steps", "3"])
    assert r.exit_code == 1, r.output
    assert "MISMATCH" in r.output


def test_a_wrong_oracle_parameter_is_a_mismatch(monkeypatch):
    """The comparison can fail: the oracle at another tau than the kernels'."""
    monkeypatch.setattr(verify3d, "_oracle_parameters", lambda c: {"tau": 0.81})
    report = verify3d.verify3d(backends=["c"], layouts=[("soa", None)], collisions=["bgk"], steps=3)
    assert not report.ok and all(row.error > 1e-6 for row in report.rows)


def test_strict_single_precision_with_a_lid_is_bit_identical_across_backends():
    ok, why = available("opencl")
    require(ok, why, "OpenCL")
    shim, why = available("cuda-shim")
    require(shim, why, "the CUDA shim")
    report = verify3d.verify3d(backends=["c", "opencl", "cuda-shim"], layouts=[("soa", None)], collisions=["bgk"],
                               precisions=["single"], steps=2, boundaries=True, strict=True)
    others = [row for row in report.rows if row.backend != "c"]
    assert report.ok and len(others) == 4 and all(row.vs_c == 0 for row in others)


@pytest.mark.parametrize("args, message", [
    (["--velocity-set", "d3q39"], "regularized operator is second order"),
    (["--velocity-set", "d3q19", "--lz", "12", "--layouts", "caosoa-vl8"], "not a multiple of VL=8"),
    (["--lz", "8"], "--lz 8: d2q37 is a 2D set"),
    (["--velocity-set", "d3q19", "--wall-scheme", "reference"], "--wall-scheme"),
    (["--velocity-set", "d3q19", "--lz", "0"], "--lz"),
    (["--velocity-set", "d3q19", "--precision", "single", "--steps", "1000"], "rounding alone"),
])
def test_bad_3d_verify_input_is_refused_before_any_work(args, message):
    r = CliRunner().invoke(main, ["verify", *args])
    assert r.exit_code == 2 and message in r.output and "Traceback" not in r.output
