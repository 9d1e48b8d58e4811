"""3D kernel specs and their rendering (lbgen.codegen.render): the dimension comes from the
velocity set, every backend takes it (OpenCL and CUDA: tests/backends/test_gpu3d.py); the rendered 3D C is
valid C (gcc -fsyntax-only -Wall -Wextra -Werror, unused parameters aside) for every layout; the size rules of the
emitted check name the bad value."""
from __future__ import annotations

import shutil
import subprocess

import pytest

from lbgen.codegen.render import generate, render_key
from lbgen.codegen.kernel_api import ENTRY_POINTS_3D, check_sizes3d
from lbgen.codegen.spec import KernelSpec, SpecError
from lbgen.codegen.templating import templates_dir
from lbgen.model.velocity_set import velocity_set


def test_the_dimension_comes_from_the_velocity_set():
    assert KernelSpec(velocity_set="d3q19").dimension == 3
    assert KernelSpec(velocity_set="D3Q27").dimension == 3
    assert KernelSpec(velocity_set="d2q9").dimension == 2 and KernelSpec().dimension == 2
    spec = KernelSpec(velocity_set="D3Q19", layout="caosoa").validate()
    assert (spec.velocity_set, spec.vl) == ("d3q19", 8)       # the backend's default VL
    assert KernelSpec(velocity_set="d3q19", layout="soa", vl=1).validate().vl is None


@pytest.mark.parametrize("kw, message", [
    (dict(walls=True), "walls=True .* adds the thermal walls' bc kernel"),
    (dict(lx=8, ly=8), "compile-time sizes .* are 2D only"),
    (dict(layout="soa", vl=8), "layout soa takes no VL"),
    (dict(layout="caosoa", vl=6), "VL=6 is not a power of two"),
])
def test_3d_specs_refuse_what_they_cannot_do_in_words(kw, message):
    with pytest.raises(SpecError, match=message):
        KernelSpec(velocity_set="d3q19", **kw).validate()


def test_the_gpu_kernels_are_one_template_for_both_dialects_and_any_dimension():
    """OpenCL and CUDA, 2D and 3D: one kernel text, templates/gpu/kernels.j2 (the dialect and D
    branch inside); no per-dialect or per-dimension kernel template is shipped."""
    from lbgen.codegen.render import _MAIN_TEMPLATES
    shipped = {p.relative_to(templates_dir()).as_posix() for p in templates_dir().rglob("*.j2")}
    assert "gpu/kernels.j2" in shipped
    assert not {"gpu/kernels3d.j2", "opencl/kernels.cl.j2", "opencl/kernels3d.cl.j2", "cuda/kernels.cu.j2",
                "cuda/kernels3d.cu.j2"} & shipped
    assert {_MAIN_TEMPLATES[b][0][1] for b in ("opencl", "cuda")} == {"gpu/kernels.j2"}
    texts = {(d, b): generate(KernelSpec(backend=b, velocity_set=vs, layout="soa").validate()).text
             for d, vs in ((2, "d2q9"), (3, "d3q19")) for b in ("opencl", "cuda")}
    assert all("__kernel void lbgen_fused(" in texts[d, "opencl"] for d in (2, 3))
    assert all("__global__ void __launch_bounds__(BLOCK) lbgen_fused(" in texts[d, "cuda"] for d in (2, 3))
    assert "lbgen_halo_planes(" in texts[3, "opencl"] and "lbgen_halo_planes(" not in texts[2, "opencl"]


def test_the_headers_are_one_template_for_any_dimension():
    """The C API header, the C kernels and the CUDA host header: one shipped template each (the
    text branches on D inside), none for 3D alone."""
    shipped = {p.relative_to(templates_dir()).as_posix() for p in templates_dir().rglob("*.j2")}
    assert {"c/kernels.h.j2", "cuda/kernels.cuh.j2"} <= shipped
    assert not {"c/kernels3d.h.j2", "cuda/kernels3d.cuh.j2"} & shipped
    # the C kernels too: one kernel text, one time block, no C template for 3D alone
    assert {"c/kernels.c.j2", "c/time_block.c.j2"} <= shipped
    assert not [name for name in shipped if name.startswith("c/") and "3d" in name]
    headers = {d: generate(KernelSpec(velocity_set=vs, layout="soa").validate()).files["lbgen_kernels.h"]
               for d, vs in ((2, "d2q9"), (3, "d3q19"))}
    assert "int lbgen_check(int lx, int ly, char *message" in headers[2]
    assert "int lbgen_check(int lx, int ly, int lz, char *message" in headers[3]


def test_the_render_key_holds_the_dimension():
    two = KernelSpec(velocity_set="d2q9", layout="soa").validate()
    three = KernelSpec(velocity_set="d3q19", layout="soa").validate()
    assert render_key(two) != render_key(three)


def test_3d_source_files_entry_points_and_shared_site_function():
    src = generate(KernelSpec(velocity_set="d3q19", layout="caosoa", vl=4, prefix="lb3"))
    assert set(src.files) == {"lb3_kernels.c", "lb3_kernels.h"} and src.main_file == "lb3_kernels.c"
    assert src.entry_points == tuple(f"lb3_{n}" for n in ENTRY_POINTS_3D)
    text, header = src.files["lb3_kernels.c"], src.files["lb3_kernels.h"]
    # the collision body is common.j2's site function, printed from the model's assignment list
    assert "LB3_SITE_LINKAGE void lb3_collide_site(" in text and "#define LB3_SITE_LINKAGE static inline" in text
    assert "The collision of one site, written once" in text
    assert "/* BEGIN API" in header and "} lb3_params;" in header and "#define LB3_IDX(p, x, y, r, k" in header
    assert "int lb3_check(int lx, int ly, int lz, char *message, size_t size);" in header
    assert "cz[19]" in header and "#define LB3_D    3" in header


def _syntax_check(tmp_path, src):
    gcc = shutil.which("gcc")
    if gcc is None:
        pytest.skip("gcc not found")
    for name, text in src.files.items():
        (tmp_path / name).write_text(text)
    proc = subprocess.run([gcc, "-fsyntax-only", "-std=gnu11", "-fopenmp", "-Wall", "-Wextra", "-Werror",
                           "-Wno-unused-parameter",   # the isothermal sets never read C2, C3 (as in 2D)
                           src.main_file], cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]


@pytest.mark.parametrize("layout, vl, vs, precision, collision", [
    ("aos", None, "d3q19", "double", "bgk"),
    ("soa", None, "d3q27", "single", "regularized"),
    ("csoa", 4, "d3q19", "mixed", "regularized"),
    ("caosoa", 8, "d3q27", "double", "bgk"),
    ("caosoa", 4, "d3q39", "double", "regularized"),     # thermal, halo 3
])
def test_3d_kernels_are_valid_c_without_warnings(tmp_path, layout, vl, vs, precision, collision):
    _syntax_check(tmp_path, generate(KernelSpec(velocity_set=vs, layout=layout, vl=vl, precision=precision,
                                                collision=collision)))


@pytest.mark.parametrize("sizes, message", [
    ((8, 8, 12), "lz=12 is not a multiple of VL=8"),
    ((8, 8, 0), "lattice 8 x 8 x 0: lx, ly and lz must be >= 1"),
    ((0, 8, 8), "lattice 0 x 8 x 8"),
    ((2 ** 30, 2 ** 30, 2 ** 30), "is too large: one lattice buffer"),
])
def test_size_rules_name_the_bad_value(sizes, message):
    spec = KernelSpec(velocity_set="d3q19", layout="caosoa", vl=8).validate()
    assert message in check_sizes3d(spec, velocity_set("d3q19"), *sizes)
    assert check_sizes3d(spec, velocity_set("d3q19"), 8, 8, 16) is None


def test_size_rules_halo_of_a_wide_set():
    spec = KernelSpec(velocity_set="d3q39", layout="caosoa", vl=4).validate()
    assert "lz=8 gives LZ/VL = 2 cluster rows; the 3-row halo needs LZ/VL >= 3 (lz >= 12)" == \
        check_sizes3d(spec, velocity_set("d3q39"), 8, 8, 8)
    assert check_sizes3d(spec, velocity_set("d3q39"), 8, 8, 12) is None
