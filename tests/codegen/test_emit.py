"""`lbgen emit`: self-contained sources, the C example built with plain gcc, generated/."""
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from lbgen.codegen.spec import KernelSpec
from lbgen.codegen.render import emit_files
from lbgen.codegen.emit import default_output_dir, emit

from helpers import example_make_args, example_reference, make_example

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
@pytest.mark.slow
def test_emitted_example_builds_with_plain_gcc_and_reproduces_the_reference(tmp_path, spec, size):
    if shutil.which("make") is None or shutil.which("gcc") is None:
        pytest.skip("make and gcc are needed to build the emitted example")
    emit(spec, tmp_path)
    # the first case builds with the Makefile's own flags (-O3), the others at the suite's level
    own = spec.layout == "caosoa" and spec.vl == 32
    subprocess.run(["make", "-s"] if own else example_make_args(spec), cwd=tmp_path, check=True,
                   capture_output=True)
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


@pytest.mark.slow
def test_prefix_renames_every_symbol_and_file(tmp_path):
    spec = KernelSpec(layout="soa", vl=None, prefix="d2q37")
    written = emit(spec, tmp_path)
    assert "d2q37_kernels.c" in written and "d2q37_kernels.h" in written
    text = (tmp_path / "d2q37_kernels.c").read_text()
    assert "lbgen_" not in text.replace("lbgen emit", "")
    make_example(tmp_path, spec)


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


# --- emit replaces only files that start with its own header -----------------------------

def _cli(*args):
    from click.testing import CliRunner
    from lbgen.cli.main import main
    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.mark.parametrize("spec", CANONICAL + [
    KernelSpec(backend="c", layout="aos", lx=10, ly=40, prefix="r", walls=True, collision="regularized"),
    KernelSpec(backend="cuda", layout="soa", precision="single", prefix="my_lb", velocity_set="d2q9"),
], ids=lambda s: f"{s.backend}-{s.tag}-{s.prefix}")
def test_every_emitted_file_starts_with_the_header_emit_recognises(spec):
    """HEADERS and the templates agree: each file emit writes starts with the header of its kind,
    and nothing but the top of a file counts."""
    from lbgen.codegen.emit import header_pattern
    for name, text in emit_files(spec).items():
        assert header_pattern(name).match(text), name
        assert not header_pattern(name).match("\n" + text), name


def test_a_user_readme_that_mentions_generated_by_lbgen_is_kept_and_emit_refuses(tmp_path):
    proj = tmp_path / "proj"
    proj.mkdir()
    readme = ("# My solver\n\nThe kernels in this folder were Generated by lbgen 0.1.0 and then\n"
              "tuned by hand.  Generated by lbgen -- do not edit; regenerate instead:\n").encode()
    (proj / "README.md").write_bytes(readme)
    result = _cli("emit", "-o", proj)
    assert result.exit_code == 2
    assert "holds README.md, not written by lbgen" in result.output
    assert (proj / "README.md").read_bytes() == readme
    assert sorted(p.name for p in proj.iterdir()) == ["README.md"], "nothing may be written"


def test_lbgen_header_lines_below_the_top_of_a_file_do_not_make_it_lbgens(tmp_path):
    """A user's file that quotes lbgen's exact header, but not as its first lines, is refused."""
    from lbgen.codegen.emit import EmitError
    spec = KernelSpec(backend="c", layout="caosoa", vl=8)
    quoted = "/* my kernels, derived from: */\n" + emit_files(spec)["lbgen_kernels.c"][:400]
    (tmp_path / "lbgen_kernels.c").write_text(quoted)
    with pytest.raises(EmitError, match=r"holds lbgen_kernels.c, not written by lbgen"):
        emit(spec, tmp_path)
    assert (tmp_path / "lbgen_kernels.c").read_text() == quoted
    assert [p.name for p in tmp_path.iterdir()] == ["lbgen_kernels.c"]


def test_emit_replaces_its_own_files_from_another_version_and_other_options(tmp_path):
    """Re-emitting into a folder lbgen wrote (another lbgen version, other options) replaces them."""
    old = KernelSpec(backend="c", layout="soa", precision="single")
    for name, path in emit(old, tmp_path).items():
        path.write_text(re.sub(r"Generated by lbgen [^\s:.]+(\.[0-9]+)*", "Generated by lbgen 0.0.9.dev1",
                               path.read_text(), count=1))
    assert "Generated by lbgen 0.0.9.dev1" in (tmp_path / "README.md").read_text()
    new = KernelSpec(backend="c", layout="caosoa", vl=8)
    emit(new, tmp_path)
    fresh = emit_files(new)
    for name, text in fresh.items():
        assert (tmp_path / name).read_text() == text, name


def test_emit_renders_through_the_cached_generate(tmp_path, monkeypatch):
    """emit's kernels come from render.generate's cache: with a warm cache nothing is rendered again."""
    import lbgen.codegen.render as render

    monkeypatch.setenv("LBGEN_CACHE_DIR", str(tmp_path / "cache"))
    spec = KernelSpec(backend="c", layout="soa", velocity_set="d2q9")
    source = render.generate(spec)
    monkeypatch.setattr(render, "_render", lambda s: pytest.fail("emit rendered the kernels again"))
    written = emit(spec, tmp_path / "out")
    assert written["lbgen_kernels.c"].read_text() == source.files["lbgen_kernels.c"]


@pytest.mark.parametrize("walls", [False, True], ids=["periodic", "walls"])
def test_the_cuda_readmes_time_step_compiles_as_written(tmp_path, walls):
    """The emitted 2D CUDA README's "One time step" lines and its one-sweep line, copied into a
    function, compile with nvcc against the emitted header: the launch wrappers' arguments as the
    README writes them (they once lacked the boundaries a wrapper takes)."""
    from lbgen.backends.cuda import nvcc
    from helpers import require
    require(*nvcc.available(), "nvcc")
    emit(KernelSpec(backend="cuda", layout="caosoa", vl=32, walls=walls), tmp_path)
    readme = (tmp_path / "README.md").read_text()
    step = readme.split("## One time step\n", 1)[1].split("\n\n", 1)[0]
    lines = [line.strip() for line in step.splitlines() if line.startswith("    ")]
    one_sweep = re.search(r"or, in one sweep, `([^`]*)`", step).group(1)
    assert len(lines) == 3 and "launch_fused" in one_sweep
    body = "\n    ".join(lines + [one_sweep])
    (tmp_path / "step.cu").write_text(
        '#include "lbgen_kernels.cuh"\n'
        "void step(lbgen_real *f, lbgen_real *g, int lx, int ly, double tau, double ax, double ay, double tau_wall,\n"
        "          int wall_bottom, int wall_top, cudaStream_t s)\n"
        "{\n    const int LX = lx, LY = ly;\n    " + body + "\n"
        "    (void)tau_wall; (void)wall_bottom; (void)wall_top;\n}\n")
    proc = subprocess.run([nvcc.find_nvcc(), "-c", "-arch=sm_90", "-o", "step.o", "step.cu"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, body + "\n" + proc.stdout + proc.stderr
