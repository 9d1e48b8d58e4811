"""`lbgen model --ranks-grid ... --backend opencl|cuda`: seed 003's halo paths predicted
(the printed numbers are the model's), bad link values refused before anything is written."""
import json
import re

import pytest
from click.testing import CliRunner

from lbgen.cli.main import main
from lbgen.parallel import model as mpi_model
from lbgen.parallel.gpu_model import DeviceLinks, predict_gpu_step

BASE = ["model", "--ranks-grid", "2x2", "--lx", "64", "--ly", "48", "--max-ranks", "8"]
GIVEN = ["--latency", "2e-6", "--bandwidth", "4e9", "--to-host-latency", "1.5e-5", "--to-host-bandwidth", "2e10",
         "--to-device-latency", "1e-5", "--to-device-bandwidth", "3e10", "--direct-latency", "4e-6",
         "--direct-bandwidth", "1e10", "--memory-bandwidth", "2e11"]


@pytest.fixture(autouse=True)
def nothing_measured(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("lbgen model measured something")
    monkeypatch.setattr(mpi_model, "ring_shift", refuse)
    monkeypatch.setattr("lbgen.perf.machine.measure_bandwidth", refuse)


def _expected(path, overlap=True, **kw):
    links = DeviceLinks(**{**dict(to_host_latency=1.5e-5, to_host_bandwidth=2e10, to_device_latency=1e-5,
                                  to_device_bandwidth=3e10, direct_latency=4e-6, direct_bandwidth=1e10,
                                  memory_bandwidth=2e11), **kw})
    machine = mpi_model.Machine(2e-6, 4e9, 2e11, 4)
    return predict_gpu_step((64, 48), (2, 2), machine, links, path, 1, 37, 8, 3, overlap=overlap)


@pytest.mark.parametrize("overlap", [True, False])
def test_the_printed_table_is_the_models_prediction_per_path(overlap):
    result = CliRunner().invoke(main, BASE + GIVEN + ["--backend", "opencl"] + ([] if overlap else ["--no-overlap"]))
    assert result.exit_code == 0, result.output
    assert ("the interior sweep overlaps" in result.output) == overlap
    rows = {}
    for line in result.output.splitlines():
        m = re.match(r"\s+(staged|device)\s+(.*)$", line)
        if m:
            rows[m.group(1)] = m.group(2).split()
    assert set(rows) == {"staged", "device"}
    for path, cells in rows.items():
        want = _expected(path, overlap)
        t_copy, t_mpi, t_calc, t_step, mlups, copied, sent = (float(c) for c in cells[:7])
        assert t_copy == pytest.approx(want["t_copy"] * 1e3, abs=1e-4)
        assert t_mpi == pytest.approx(want["t_mpi"] * 1e3, abs=1e-4)
        assert t_calc == pytest.approx(want["t_calc"] * 1e3, abs=1e-4)
        assert t_step == pytest.approx(want["t_step"] * 1e3, abs=1e-4)
        assert mlups == pytest.approx(want["mlups"], abs=0.01)
        assert copied == want["to_host_bytes_per_step"] + want["to_device_bytes_per_step"]
        assert sent == want["mpi_bytes_per_step"]
        assert cells[7:] == ["-", "-"]                            # nothing measured without mpiexec
    faster = min(rows, key=lambda p: float(rows[p][3]))
    assert f"chosen: {faster} (halo path {faster}" in result.output


def test_json_holds_the_prediction_and_cuda_needs_device_mpi_for_the_device_path():
    fast = ["--direct-latency", "1e-8", "--direct-bandwidth", "1e13"]      # the device path would win
    args = BASE + GIVEN[:12] + ["--memory-bandwidth", "2e11"] + fast + ["--json"]
    out = json.loads(CliRunner().invoke(main, args + ["--backend", "cuda"]).output)
    assert out["predicted"]["device"]["t_step"] < out["predicted"]["staged"]["t_step"]
    assert out["device_possible"] is False and out["chosen"] == "staged" and "--device-mpi" in out["why"]
    out = json.loads(CliRunner().invoke(main, args + ["--backend", "cuda", "--device-mpi"]).output)
    assert out["chosen"] == "device"
    for path in ("staged", "device"):
        want = _expected(path, direct_latency=1e-8, direct_bandwidth=1e13)
        assert out["predicted"][path]["t_step"] == pytest.approx(want["t_step"])


def test_bench_json_gives_the_copy_terms_and_the_device_bandwidth(tmp_path):
    report = {"limits": {"opencl": {"bandwidth": {"gbs": 123.0},
                                    "host_device": {"to_host": {"latency": 7e-6, "bandwidth": 8e9},
                                                    "to_device": {"latency": 9e-6, "bandwidth": 6e9}}}}}
    path = tmp_path / "bench.json"
    path.write_text(json.dumps(report))
    result = CliRunner().invoke(main, BASE + ["--latency", "2e-6", "--bandwidth", "4e9", "--backend", "opencl",
                                              "--bench-json", str(path), "--to-device-latency", "1e-5", "--json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert out["links"]["to_host_latency"] == 7e-6 and out["links"]["to_host_bandwidth"] == 8e9
    assert out["links"]["to_device_latency"] == 1e-5                   # given beats measured
    assert out["links"]["memory_bandwidth"] == 123e9
    assert out["link_sources"]["to_device_latency"] == "given" and "lbgen bench" in out["link_sources"]["to_host_latency"]
    # OpenCL on the CPU runtime: the device path's messages are host MPI messages (--latency, --bandwidth)
    assert out["links"]["direct_latency"] == out["links"]["direct_latency_inter"] == 2e-6
    assert out["links"]["direct_bandwidth"] == out["links"]["direct_bandwidth_inter"] == 4e9
    assert out["link_sources"]["direct_latency"].startswith("host MPI (given)")
    cuda = json.loads(CliRunner().invoke(main, BASE + ["--latency", "2e-6", "--bandwidth", "4e9", "--backend", "cuda",
                                                       "--json"]).output)
    assert cuda["links"]["direct_latency"] == DeviceLinks().direct_latency                 # GPU-direct: the default
    assert cuda["link_sources"]["direct_latency"] == "default"


@pytest.mark.parametrize("args, message", [
    (["--backend", "opencl", "--to-host-latency", "nan"], "Invalid value for '--to-host-latency': 'nan' is not a finite"),
    (["--backend", "opencl", "--to-device-latency", "-1"], "Invalid value for '--to-device-latency': -1.0 is not in"),
    (["--backend", "cuda", "--direct-bandwidth", "0"], "Invalid value for '--direct-bandwidth': 0.0 is not in the range x>0"),
    (["--backend", "cuda", "--direct-bandwidth-inter", "inf"], "'inf' is not a finite number"),
    (["--backend", "cuda", "--ranks-per-device", "0"], "Invalid value for '--ranks-per-device'"),
    (["--backend", "c", "--to-host-bandwidth", "1e9"], "--to-host-bandwidth: option(s) of the device ranks' model"),
    (["--backend", "opencl", "--bench-json", "BENCH"], "has no limits of the opencl backend"),
])
def test_bad_link_values_are_refused_naming_them_and_nothing_is_written(tmp_path, args, message):
    (tmp_path / "bench.json").write_text(json.dumps({"limits": {"c": {}}}))
    args = [str(tmp_path / "bench.json") if a == "BENCH" else a for a in args]
    png = tmp_path / "scaling.png"
    result = CliRunner().invoke(main, BASE + args + ["--scaling-plot", str(png)])
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bench.json"]


def test_link_options_without_the_grid_model_are_refused():
    result = CliRunner().invoke(main, ["model", "--to-host-latency", "1e-5"])
    assert result.exit_code == 2 and "--to-host-latency: option(s) of the Cartesian model" in result.output


def test_the_scaling_plot_is_written_for_both_paths(tmp_path):
    png = tmp_path / "paths.png"
    result = CliRunner().invoke(main, BASE + GIVEN + ["--backend", "cuda", "--scaling-plot", str(png)])
    assert result.exit_code == 0, result.output
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
