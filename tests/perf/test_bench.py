"""`lbgen bench` / `lbgen tune` on tiny lattices: they run, and report well-formed numbers.

Benchmarks are not tests: nothing here checks a timing against a threshold, only that the
figures exist, are positive and finite, and that the outputs (JSON, table, PNG) are valid.
"""
from __future__ import annotations

import json
import math

import numpy as np

import pytest

from lbgen.system import cache
from click.testing import CliRunner

from lbgen.perf import bench as B
from lbgen.perf import machine as M
from lbgen.perf import tune as T
from lbgen.cli.main import main

TINY = ["--lx", "8", "--ly", "64", "--repeat", "1", "--no-progress"]
PNG = b"\x89PNG\r\n\x1a\n"


def _positive(x) -> bool:
    return isinstance(x, (int, float)) and math.isfinite(x) and x > 0


@pytest.fixture(scope="module")
def bench_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench")
    result = CliRunner().invoke(main, ["bench", *TINY, "--layouts", "soa,caosoa-vl8", "--limit-mb", "16",
                                       "--json", "-o", str(out / "report.json"), "--plots", str(out / "plots")])
    return result, out


def test_bench_json(bench_run):
    result, out = bench_run
    assert result.exit_code == 0, result.output + repr(result.exception)
    report = json.loads(result.stdout)
    assert json.loads((out / "report.json").read_text()) == report
    for key in ("machine", "limits", "results", "counting", "config"):
        assert key in report
    m = report["machine"]
    assert _positive(m["bandwidth"]["normal"]["gbs"]) and _positive(m["bandwidth"]["streaming"]["gbs"])
    assert _positive(m["peak"]["double"]["gflops"])
    rs = report["results"]
    assert {(r["tag"], r["kernel"]) for r in rs} == {(t, k) for t in ("soa", "caosoa-vl8") for k in B.DEFAULT_KERNELS}
    for r in rs:
        for key in ("mlups", "gbs", "bytes_per_site", "frac_bw", "frac_bw_normal"):
            assert _positive(r[key]), (key, r)
        for key in ("median", "min", "max", "q1", "q3"):
            assert _positive(r["ms"][key])
        assert r["ms"]["min"] <= r["ms"]["median"] <= r["ms"]["max"]
        if r["kernel"] == "propagate":
            assert r["flops_per_site"] == 0 and r["bytes_per_site"] == 2 * 37 * 8
        else:
            assert _positive(r["flops_per_site"]) and _positive(r["gflops"]) and _positive(r["frac_peak"])
        if r["kernel"] == "bc":
            assert r["sites"] == 6 * 8 and r["walls_program"]


def test_bench_plots_are_png(bench_run):
    result, out = bench_run
    pngs = sorted((out / "plots").glob("*.png"))
    assert {p.name for p in pngs} == {"mlups_vs_vl_c_double_bgk.png", "roofline_c_double.png"}
    for p in pngs:
        assert p.read_bytes()[:8] == PNG and p.stat().st_size > 1000


def test_bench_table_and_single_precision():
    result = CliRunner().invoke(main, ["bench", *TINY, "--layouts", "caosoa-vl8", "--kernels", "propagate",
                                       "--precision", "single", "--no-limits"])
    assert result.exit_code == 0, result.output + repr(result.exception)
    assert "caosoa-vl8" in result.stdout and "single" in result.stdout and "propagate" in result.stdout


def test_bench_skips_invalid_vl():
    # VL = 32 needs LY/VL >= 3: skipped with a reason in the report; with every case skipped
    # nothing was timed, so the command fails (issue 35) after writing the report
    result = CliRunner().invoke(main, ["bench", *TINY, "--layouts", "caosoa-vl32", "--kernels", "propagate",
                                       "--no-limits", "--json"])
    assert result.exit_code == 2, result.output
    report = json.loads(result.stdout)
    assert report["results"] == [] and report["skipped"]
    assert result.stderr.count("Error:") == 1 and "every case was skipped" in result.stderr


def test_paper_table():
    result = CliRunner().invoke(main, ["bench", "--paper-table", *TINY, "--vls", "8"])
    assert result.exit_code == 0, result.output + repr(result.exception)
    rows = [line for line in result.stdout.splitlines() if line.startswith(("propagate ", "collide "))]
    assert len(rows) == 8
    for kernel, paper in B.PAPER_HASWELL.items():
        for layout, ms in paper.items():
            assert any(r.split()[0] == kernel and r.split()[1] == B.LAYOUT_NAMES[layout] and str(ms) in r.split()
                       for r in rows), (kernel, layout)
    assert "winner here:" in result.stdout


def test_parse_layouts():
    assert B.parse_layouts("aos,csoa-vl8") == [("aos", None), ("csoa", 8)]
    assert len(B.parse_layouts("all")) == 10
    assert B.parse_layouts("caosoa") == [("caosoa", v) for v in B.VLS]
    with pytest.raises(ValueError):
        B.parse_layouts("foo")


def test_machine_limits_are_positive():
    bw = M.measure_bandwidth(nbytes=8 << 20, repeat=1)
    assert _positive(bw["normal"]["gbs"]) and _positive(bw["streaming"]["gbs"])
    for p in ("double", "single"):
        pk = M.measure_peak(p, repeat=1, seconds=0.01)
        assert _positive(pk["gflops"]) and pk["finite_result"]


def test_peak_chains_stay_in_vector_registers(tmp_path):
    """The FMA peak's chains live in registers: no FMA of bench_peak_* has a stack operand and
    none of its whole-vector moves goes to or from the stack.  An array of chains behind a "memory"
    clobber went through the stack (a store and a reload per FMA) and measured store
    forwarding: 4.7 GFLOP/s on one AVX-512 core that gave 10-13 with the chains in registers
    (2026-11-27, loaded), so every "fraction of the peak" was inflated."""
    import re
    import subprocess
    from importlib import resources

    from lbgen.backends.c import compiler
    src = tmp_path / "machine.c"
    src.write_text(resources.files("lbgen.backends.c").joinpath("machine.c").read_text())
    asm = tmp_path / "machine.s"
    subprocess.run([compiler(), "-O3", "-march=native", "-fopenmp", "-std=gnu11", "-fPIC", "-S", "-o", str(asm),
                    str(src)], check=True)
    body, name = {}, None
    for line in asm.read_text().splitlines():
        label = re.match(r"^([A-Za-z_.][\w.$]*):", line)
        if label and not label.group(1).startswith(".L"):
            name = label.group(1)
        elif name and "bench_peak" in name:
            body.setdefault(name, []).append(line.strip())
    fmas = [ins for lines in body.values() for ins in lines if re.match(r"vfn?madd", ins)]
    stack = [ins for lines in body.values() for ins in lines
             if re.match(r"v(fn?madd|mov)", ins) and re.search(r"%[yz]mm", ins)
             and re.search(r"\((%rsp|%rbp)\)", ins)]      # whole vectors (the scalar results pass the stack)
    assert len(fmas) >= 2 * 12, body.keys()          # both precisions' chains, unrolled
    assert stack == [], stack[:5]


def test_copy_streams_are_not_a_power_of_two_apart():
    """The copy benchmark's streams start a whole number of pages plus one line apart, so a
    power-of-two lattice's streams do not share cache sets (5.3 against 32 GB/s on Zen 3);
    the copy moves exactly n doubles of each stream and leaves the gaps alone."""
    for n in (8, 512, 128 ** 3, 96 ** 3, 1000 * 8):
        stride = M.stream_stride(n)
        assert stride >= n and (8 * stride) % 4096 == 64
    ffi, lib = M._machine_lib()
    from lbgen.backends.build import aligned_zeros
    n, streams = 4096, 5
    stride = M.stream_stride(n)
    src, dst = aligned_zeros(stride * streams, np.float64), aligned_zeros(stride * streams, np.float64)
    src[:] = np.arange(src.size)
    for streaming in (0, 1):
        dst[:] = -1.0
        lib.bench_copy(ffi.cast("double *", src.ctypes.data), ffi.cast("double *", dst.ctypes.data),
                       n, stride, streams, streaming, 4)
        d, s_ = dst.reshape(streams, stride), src.reshape(streams, stride)
        assert np.array_equal(d[:, :n], s_[:, :n]) and np.all(d[:, n:] == -1.0)
    assert M.measure_bandwidth(nbytes=1 << 20, repeat=1, streams=19)["stream_stride_bytes"] % 4096 == 64


def test_bc_counts_are_honest():
    c = B.bc_counts("caosoa", 8, "double")
    # both walls: the 4th row is read whole; fewer than all 37 populations are written per wall row
    assert c["sites_per_column"] == 6 and c["reads"] >= 2 * 37 and 0 < c["writes"] < 6 * 37
    assert c["bytes_per_site"] < 2 * 37 * 8 * 4


def test_tune_stores_and_returns_choice(tmp_path, monkeypatch):
    monkeypatch.setattr(T, "_path", lambda: tmp_path / "choices.json")
    monkeypatch.setenv("LBGEN_TUNED", "on")
    assert T.cached_choice("c", 8, 64, "double", "bgk") is None
    choice = T.best_choice("c", 8, 64, "double", "bgk", layouts=["caosoa", "soa"], vls=(8,), samples=1)
    assert choice in {("caosoa", 8), ("soa", None)}
    assert T.cached_choice("c", 8, 64, "double", "bgk") == choice
    assert T.auto_choice("c", 8, 64, "double", "bgk") == choice
    assert T.cached_choice("c", 8, 128, "double", "bgk") is None       # another lattice shape
    stored = json.loads(cache.read_checked(tmp_path / "choices.json"))
    (entry,) = stored.values()
    assert entry["key"]["lx"] == 8 and entry["key"]["cpu"] and entry["ranking"]


def test_tune_cli(tmp_path, monkeypatch):
    monkeypatch.setattr(T, "_path", lambda: tmp_path / "choices.json")
    monkeypatch.setenv("LBGEN_TUNED", "on")
    result = CliRunner().invoke(main, ["tune", "--lx", "8", "--ly", "64", "--layouts", "caosoa", "--vls", "8",
                                       "--samples", "1", "--no-progress"])
    assert result.exit_code == 0, result.output + repr(result.exception)
    assert "best: caosoa-vl8" in result.stdout
    assert T.cached_choice("c", 8, 64) == ("caosoa", 8)


def test_bench_times_3d_kernels_on_a_3d_lattice(monkeypatch):
    """`lbgen bench --velocity-set d3q19`: the 3D programs' fused, fused_tb and propagate on
    LX*LY*LZ sites (a depth-2 sweep counts twice), the copy limit measured with Q = 19
    streams; bits and timings are not judged, the counts are."""
    streams = []
    real = M.measure_bandwidth

    def counted(*args, **kw):
        streams.append(kw.get("streams"))
        return real(*args, **kw)
    monkeypatch.setattr(M, "measure_bandwidth", counted)
    r = CliRunner().invoke(main, ["bench", "--velocity-set", "d3q19", "--lx", "8", "--ly", "6", "--lz", "16",
                                  "--layouts", "soa,caosoa-vl8", "--kernels", "fused,fused-tb2,propagate",
                                  "--repeat", "1", "--limit-mb", "16", "--json", "--no-progress"])
    assert r.exit_code == 0, r.output
    report = json.loads(r.stdout)
    assert report["config"]["lz"] == 16 and set(streams) == {19}
    rows = {(x["tag"], x["kernel"]): x for x in report["results"]}
    assert set(rows) == {(t, k) for t in ("soa", "caosoa-vl8") for k in ("fused", "fused-tb2", "propagate")}
    for (tag, kernel), x in rows.items():
        assert x["sites"] == 8 * 6 * 16 * (2 if kernel == "fused-tb2" else 1) and x["lz"] == 16
        assert x["bytes_per_site"] == 2 * 19 * 8 and _positive(x["mlups"]) and _positive(x["frac_bw"])
    assert rows[("soa", "fused")]["flops_per_site"] > 0 == rows[("soa", "propagate")]["flops_per_site"]


@pytest.mark.parametrize("args, message", [
    (["--velocity-set", "d3q19", "--kernels", "bc"], "the bc kernel is 2D"),
    (["--velocity-set", "d3q19", "--paper-table"], "--paper-table is 2D"),
    (["--lz", "8"], "--lz 8: d2q37 is a 2D set"),
    (["--velocity-set", "d3q19", "--lz", "7", "--layouts", "caosoa-vl8", "--kernels", "fused", "--no-limits",
      "--json"], "not a multiple of VL=8"),
])
def test_bench_refuses_what_3d_lattices_cannot_time(args, message):
    r = CliRunner().invoke(main, ["bench", "--repeat", "1", "--no-progress", *args])
    if "--json" in args:                 # a layout the lattice cannot take: skipped with the reason
        assert r.exit_code == 2 and message in json.loads(r.stdout)["skipped"][0]["reason"]    # nothing timed
    else:
        assert r.exit_code == 2 and message in r.output and "Traceback" not in r.output


def test_tune_in_3d_stores_a_choice_that_periodic_3d_runs_take(tmp_path, monkeypatch):
    """`lbgen tune --velocity-set d3q19 --lz N` times the 3D candidates LZ admits (here LZ = 16:
    VL 8 and 16 clustered, SoA, AoS) and the time blocks of the winner, and stores them under a
    key with LZ and the set; a periodic 3D run then takes that layout, VL and depth (here forced
    by restricting the candidates to SoA and the depths to 2), `--vl auto` too; a run with walls
    keeps the default rule; another set or depth finds nothing."""
    from lbgen.run.config import RunConfig
    from lbgen.run.construct import resolve
    monkeypatch.setattr(T, "_path", lambda: tmp_path / "choices.json")
    monkeypatch.setenv("LBGEN_TUNED", "on")
    base = ["tune", "--velocity-set", "d3q19", "--lx", "6", "--ly", "5", "--lz", "16", "--samples", "1",
            "--no-progress"]
    r = CliRunner().invoke(main, base + ["--layouts", "soa,caosoa", "--vls", "8,16", "--time-blocks", "1,2",
                                         "--json"])
    assert r.exit_code == 0, r.output
    entry = json.loads(r.stdout)
    assert entry["key"]["lz"] == 16 and entry["key"]["velocity_set"] == "d3q19"
    tags = {(x["layout"], x["vl"]) for x in entry["ranking"] if "error" not in x}
    assert tags == {("soa", None), ("caosoa", 8), ("caosoa", 16)}
    assert sorted(x["time_block"] for x in entry["time_block_ranking"]) == [1, 2]
    r = CliRunner().invoke(main, base + ["--layouts", "soa", "--time-blocks", "2"])
    assert r.exit_code == 0 and "best: soa, time block 2" in r.output, r.output

    def run(setup="taylor-green", **kw):
        cfg = RunConfig.build(setup, ("test", {"lx": 6, "ly": 5, "lz": 16, "velocity_set": "d3q19", **kw}))
        got = resolve(cfg, echo=lambda m: None)
        return got.layout, got.vl, got.time_block
    assert run() == ("soa", None, 2)                                   # the stored choice and depth
    assert run(vl="auto") == ("soa", None, 2)
    assert run(layout="caosoa") == ("caosoa", 8, 3)                   # given: the stored depth is another layout's
    assert run("lid-driven-cavity") == ("caosoa", 8, 3)               # walls on z: the default rule
    assert run(velocity_set="d3q27")[:2] == ("soa", None) and T.cached_choice(
        "c", 6, 5, lz=16, velocity_set="d3q27") is None                # nothing stored for d3q27 (default: SoA)
    assert T.cached_choice("c", 6, 5, lz=24, velocity_set="d3q19") is None


@pytest.mark.parametrize("args, message", [
    (["--velocity-set", "d2q9"], "2D tuning times the d2q37 step"),
    (["--velocity-set", "d3q19", "--walls"], "--walls: 3D tuning (d3q19) times the periodic step"),
    (["--lz", "16"], "--lz 16: d2q37 is a 2D set"),
])
def test_tune_refuses_what_it_cannot_time(args, message):
    r = CliRunner().invoke(main, ["tune", "--samples", "1", "--no-progress", *args])
    assert r.exit_code == 2 and message in r.output and "Traceback" not in r.output
