"""`lbgen emit`: self-contained sources, the C example built with plain gcc, generated/."""
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from lbgen.codegen.spec import KernelSpec
from lbgen.codegen.render import emit_files
from lbgen.codegen.emit import default_output_dir, emit

from helpers import example_reference

REPO = Path(__file__).resolve().parents[2]

#: the canonical emitted sources checked into generated/ (regenerated and compared below)
CANONICAL = [
    KernelSpec(backend="c", layout="caosoa", vl=8),
    KernelSpec(backend="opencl", layout="caosoa", vl=32),
    KernelSpec(backend="cuda", layout="caosoa", vl=32),
]


@pytest.mark.parametrize("spec, size", [
    (KernelSpec(layout="caosoa", vl=32), (16, 96)),
    (KernelSpec(layout="csoa", vl=8, collision="regularized"), (12, 64)),
    (KernelSpec(layout="aos", vl=None, lx=10, ly=40), (10, 40)),
    (KernelSpec(layout="soa", vl=None, precision="single", collision="regularized"), (8, 48)),
], ids=["caosoa-vl32-bgk", "csoa-vl8-regularized", "aos-compile-time-sizes", "soa-single-regularized"])
def test_emitted_example_builds_with_plain_gcc_and_reproduces_the_reference(tmp_path, spec, size):
    if shutil.which("make") is None or shutil.which("gcc") is None:
        pytest.skip("make and gcc are needed to build the emitted example")
    emit(spec, tmp_path)
    subprocess.run(["make", "-s"], cwd=tmp_path, check=True, capture_output=True)
    lx, ly = size
    steps = 20
    args = ["./example", str(steps)] + ([] if spec.compile_time_sizes else [str(lx), str(ly)])
    out = subprocess.run(args, cwd=tmp_path, check=True, capture_output=True, text=True).stdout
    assert f"{steps} steps on {lx} x {ly}" in out
    data = np.loadtxt(tmp_path / "example_fields.txt")
    assert data.shape == (lx * ly, 6)
    expected = example_reference(lx, ly, steps, spec.collision)
    tol = 1e-12 if spec.precision == "double" else 1e-5
    for column, field in zip(range(2, 6), expected):
        got = data[:, column].reshape(lx, ly)
        assert np.abs(got - field).max() <= tol * max(1.0, np.abs(field).max())


def test_emit_writes_documented_files_with_parameters_in_headers(tmp_path):
    spec = KernelSpec(layout="caosoa", vl=16, collision="regularized", precision="single")
    written = emit(spec, tmp_path)
    assert set(written) == {"lbgen_kernels.c", "lbgen_kernels.h", "example.c", "Makefile", "README.md"}
    header = (tmp_path / "lbgen_kernels.h").read_text()
    for needle in ("layout      caosoa", "VL          16", "precision   single", "collision   regularized",
                   "lbgen emit --backend c --layout caosoa --vl 16 --precision single --collision regularized",
                   "lbgen_collide(", "lbgen_fused(", "lbgen_pack(", "lbgen_unpack(", "LBGEN_IDX(p, x, r, k, LX, LY)"):
        assert needle in header, needle
    assert "typedef float lbgen_real;" in header


def test_prefix_renames_every_symbol_and_file(tmp_path):
    written = emit(KernelSpec(layout="soa", vl=None, prefix="d2q37"), tmp_path)
    assert "d2q37_kernels.c" in written and "d2q37_kernels.h" in written
    text = (tmp_path / "d2q37_kernels.c").read_text()
    assert "lbgen_" not in text.replace("lbgen emit", "")
    subprocess.run(["make", "-s"], cwd=tmp_path, check=True, capture_output=True)


def test_default_output_folder_names_the_configuration():
    assert default_output_dir(KernelSpec(layout="caosoa", vl=8)) == Path("generated/c/caosoa-vl8")
    assert default_output_dir(KernelSpec(layout="soa", vl=None, precision="single", collision="regularized")) \
        == Path("generated/c/soa-single-regularized")


@pytest.mark.parametrize("spec", CANONICAL, ids=lambda s: f"{s.backend}-{s.tag}")
def test_generated_folder_matches_a_fresh_emit(spec):
    folder = REPO / default_output_dir(spec)
    assert folder.is_dir(), f"{folder} is missing: run `lbgen emit` for it from the repository root"
    fresh = emit_files(spec)
    build_outputs = {"example", "example_fields.txt"}  # what `make && ./example` leaves there
    on_disk = {p.name: p.read_text() for p in folder.iterdir() if p.is_file() and p.name not in build_outputs}
    assert sorted(on_disk) == sorted(fresh), "generated/ has different files than `lbgen emit` writes"
    for name, text in fresh.items():
        assert on_disk[name] == text, f"{folder / name} differs from a fresh emit: regenerate generated/"


def test_rendered_sources_are_cached_and_keyed_by_the_code(tmp_path, monkeypatch):
    """A second generate() of a spec reads the render cache and gives the same files; the key
    follows the template code, so an edited template is rendered afresh."""
    import lbgen.system.cache as cache
    import lbgen.codegen.render as codegen

    monkeypatch.setenv("LBGEN_CACHE_DIR", str(tmp_path / "cache"))
    spec = KernelSpec(backend="c", layout="soa", collision="bgk")
    first = codegen.generate(spec)
    entries = list((tmp_path / "cache" / "render").glob("*.pickle"))
    assert len(entries) == 1

    def no_render(*args, **kwargs):
        pytest.fail("rendered again although the cache holds this spec")

    with monkeypatch.context() as m:
        m.setattr(codegen, "_render", no_render)
        again = codegen.generate(spec)
    assert again.files == first.files and again.flops == first.flops

    templates = tmp_path / "templates"
    shutil.copytree(codegen._templates_dir(), templates)
    (templates / "c" / "kernels.c.j2").write_text((templates / "c" / "kernels.c.j2").read_text() + "\n/* edited */\n")
    monkeypatch.setattr(codegen, "_templates_dir", lambda: templates)
    cache.source_digest.cache_clear()
    rendered = []
    real = codegen._render
    monkeypatch.setattr(codegen, "_render", lambda s: rendered.append(s) or real(s))
    codegen.generate(spec)
    assert rendered, "an edited template must change the cache key"
    assert len(list((tmp_path / "cache" / "render").glob("*.pickle"))) == 2
