"""`lbgen tune --backend opencl`: the layout, VL and work-group size per OpenCL device, stored and
taken by the runs of that device (their manifest records them); the kernels' 32-bit index
arithmetic (-DLBGEN_INDEX32) gives the bits of the 64-bit one."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest
from click.testing import CliRunner

from lbgen.backends.build import BackendUnavailable
from lbgen.cli.main import main
from lbgen.perf import tune as T


def _opencl_devices():
    try:
        from lbgen.backends.opencl import platform
        return [f"{pi}:{di}" for pi, di, _, dev in platform.devices() if platform._probe(dev) is None]
    except (BackendUnavailable, ImportError) as e:
        if os.environ.get("CI") == "true":
            pytest.fail(f"OpenCL backend unavailable: {e} (CI=true: the OpenCL tests must run, not skip)",
                        pytrace=False)
        pytest.skip(f"OpenCL backend unavailable: {e}", allow_module_level=True)


DEVICES = _opencl_devices()


def _default_layout(device=None):
    """The untuned 3D layout of 4 x 4 x 16 on a device: SoA on a CPU device, else CAoSoA VL 16."""
    from lbgen.backends.opencl.platform import is_cpu_device
    return "soa" if is_cpu_device(device) else "caosoa-vl16"
SHAPE = ("--lx", "4", "--ly", "4", "--lz", "16")
CASE = dict(lx=4, ly=4, precision="single", collision="bgk", walls=False, threads=0, lz=16, velocity_set="d3q19")


def _tune(*args):
    r = CliRunner().invoke(main, ["tune", "--backend", "opencl", "--velocity-set", "d3q19", *SHAPE, "--precision",
                                  "single", "--samples", "1", "--no-progress", "--json", *args])
    assert r.exit_code == 0, r.output + repr(r.exception)
    return json.loads(r.stdout)


def _run_kernels(out, *args):
    r = CliRunner().invoke(main, ["run", "taylor-green", "--velocity-set", "d3q19", *SHAPE, "--precision", "single",
                                  "--backend", "opencl", "--steps", "2", "--out", str(out), "--pictures", "none",
                                  "--no-progress", *args])
    assert r.exit_code == 0, r.output + repr(r.exception)
    return json.loads((out / "manifest.json").read_text())["device"]


@pytest.fixture
def stored(tmp_path, monkeypatch):
    monkeypatch.setattr(T, "_path", lambda: tmp_path / "choices.json")
    monkeypatch.setenv("LBGEN_TUNED", "on")
    return tmp_path


def test_the_tuned_layout_and_work_group_reach_the_run(stored, monkeypatch):
    """Tuning restricted to AoS and a work-group of 32 (the defaults at 4 x 4 x 16: SoA on a CPU
    device, else CAoSoA VL 16; 64 work-items) stores them for the device; a run there takes both
    (its manifest says so); with the stored choices ignored the run takes the defaults."""
    entry = _tune("--layouts", "aos", "--work-groups", "32")
    assert (entry["layout"], entry["vl"], entry["work_group"]) == ("aos", None, 32)
    assert [r["work_group"] for r in entry["work_group_ranking"]] == [32]
    assert "(" in entry["key"]["device"]                       # the device's name with its platform
    assert T.tuned_work_group("opencl", "aos", None, **CASE) == 32
    assert T.tuned_work_group("opencl", "soa", None, **CASE) is None      # another layout: the default
    kernels = _run_kernels(stored / "tuned")
    assert (kernels["layout"], kernels["work_group"]) == ("aos", 32)
    assert "-DLBGEN_INDEX32" in kernels["build_options"].split()
    monkeypatch.setenv("LBGEN_TUNED", "off")
    kernels = _run_kernels(stored / "default")
    assert (kernels["layout"], kernels["work_group"]) == (_default_layout(), 64)


def test_work_group_sizes_the_device_refuses_are_ranked_last(stored):
    entry = _tune("--layouts", "soa", "--work-groups", "16,1024")
    ranking = {r["work_group"]: r for r in entry["work_group_ranking"]}
    assert set(ranking) == {16, 1024} and entry["work_group"] in {16, 1024}
    if "error" in ranking[1024]:                                # beyond this device's kernels' limit
        assert "exceeds the limit" in ranking[1024]["error"] and entry["work_group"] == 16


@pytest.mark.skipif(len(DEVICES) < 2, reason="one OpenCL device here: a choice per device needs two")
def test_each_device_keeps_its_own_choice(stored):
    first, second = DEVICES[:2]
    _tune("--device", second, "--layouts", "aos", "--work-groups", "16")
    assert T.cached_choice("opencl", **CASE, device=second) == ("aos", None)
    assert T.cached_choice("opencl", **CASE, device=first) is None
    assert _run_kernels(stored / "second", "--device", second)["work_group"] == 16
    kernels = _run_kernels(stored / "first", "--device", first)
    assert (kernels["layout"], kernels["work_group"]) == (_default_layout(first), 64)


@pytest.mark.parametrize("args, message", [
    (["--backend", "c", "--device", "0"], "--device: it chooses an OpenCL device's kernels"),
    (["--backend", "c", "--work-groups", "32"], "--work-groups: it chooses an OpenCL device's kernels"),
    (["--backend", "opencl", "--work-groups", "0,64"], "--work-groups '0,64': a comma list of work-group sizes"),
    (["--backend", "opencl", "--work-groups", "x"], "--work-groups 'x': a comma list"),
])
def test_tune_refuses_work_groups_and_devices_it_cannot_use(args, message, stored):
    r = CliRunner().invoke(main, ["tune", "--velocity-set", "d3q19", *SHAPE, "--samples", "1", "--no-progress", *args])
    assert r.exit_code == 2 and message in r.output and "Traceback" not in r.output
    assert not (stored / "choices.json").exists()


def test_index32_gives_the_bits_of_64_bit_indices(monkeypatch):
    """The same strict kernels built with and without -DLBGEN_INDEX32 (the limit lowered to 0):
    a few periodic steps of a noisy state, bit for bit."""
    from lbgen.backends import compile as compile_program
    from lbgen.backends.opencl import platform
    from lbgen.codegen.render import generate
    from lbgen.codegen.spec import KernelSpec
    source = generate(KernelSpec(backend="opencl", layout="caosoa", vl=4, precision="single", velocity_set="d3q19"))
    rng = np.random.default_rng(3)
    fields = [1 + 0.01 * rng.standard_normal((4, 5, 8))] + [0.02 * rng.standard_normal((4, 5, 8)) for _ in range(3)]

    def steps():
        prog = compile_program("opencl", source, (4, 5, 8), strict=True)
        f, g = prog.allocate(), prog.allocate()
        prog.init_equilibrium(f, *fields, np.ones((4, 5, 8)))
        for _ in range(3):
            prog.step_halo(f)
            f, g = prog.step(f, g, {"tau": 0.8, "ax": 1e-5, "ay": 0.0, "az": 0.0})
        return prog.options, prog.download(f)
    options32, bits32 = steps()
    monkeypatch.setattr(platform, "INDEX32_LIMIT", 0)
    options64, bits64 = steps()
    assert "-DLBGEN_INDEX32" in options32 and "-DLBGEN_INDEX32" not in options64
    assert bits32.tobytes() == bits64.tobytes() and np.isfinite(bits32).all()


def test_a_cpu_device_defaults_to_soa_in_3d():
    """The layout rule's CPU-device branch (SOA_ON_CPU_DEVICES_3D): OpenCL 3D on a CPU device
    takes SoA where a GPU takes CAoSoA with its preferred VL; 2D and C keep their rules."""
    from lbgen.codegen.spec import choose_layout
    assert choose_layout("opencl", 128, 1, dimension=3, cpu_device=True) == ("soa", None)
    assert choose_layout("opencl", 128, 1, dimension=3) == ("caosoa", 32)
    assert choose_layout("opencl", 128, 1, dimension=2, cpu_device=True) == ("caosoa", 32)
    assert choose_layout("opencl", 128, 1, layout="caosoa", dimension=3, cpu_device=True) == ("caosoa", 32)
    assert choose_layout("c", 128, 1, dimension=3, cpu_device=True) == ("caosoa", 8)
