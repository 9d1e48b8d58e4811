"""The layouts' C side agrees with NumPy (lbgen.codegen.layouts.Layout): ``Layout.c_macros``
(the 3D headers' index macros) in 2D and 3D, the 2D headers' index macros and the C pack and
halo kernels; bad layout inputs are refused before anything is generated or compiled."""
from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest

from helpers import LAYOUT_CONFIGS, LX, LY, config_id
from lbgen.codegen.layouts import LayoutError, make_layout
from lbgen.codegen.render import generate
from lbgen.codegen.spec import KernelSpec, SpecError
from lbgen.model.velocity_set import d2q37

Q = d2q37().Q
HALO = d2q37().max_hop
CONFIG_IDS = [config_id(c) for c in LAYOUT_CONFIGS]


def _compile_and_run(tmp_path, program: str, args) -> np.ndarray:
    (tmp_path / "printer.c").write_text(program)
    exe = tmp_path / "printer"
    subprocess.run(["gcc", "-std=gnu11", "-O0", "-Wall", "-Werror", "-o", str(exe), "printer.c"], check=True,
                   capture_output=True, text=True, cwd=tmp_path)
    out = subprocess.run([str(exe), *map(str, args)], check=True, capture_output=True, text=True).stdout.split()
    return np.array(out, dtype=np.int64)


def _every_index(L):
    """The buffer size, every interior site's index (p, x, y[, z] order), every stored
    element's index (p, x[, y], r, k order): what the C printers print."""
    n = L.D + 1
    site = L.site_index(*(np.arange(m).reshape((1,) * i + (-1,) + (1,) * (n - i - 1))
                          for i, m in enumerate((L.Q, *L.shape))))
    ranges = [np.arange(L.Q), *(np.arange(-L.halo, m + L.halo) for m in L.shape[:-1]),
              np.arange(-L.HY, L.NR + L.HY), np.arange(L.VL)]
    m = len(ranges)
    full = L.index(*(a.reshape((1,) * i + (-1,) + (1,) * (m - i - 1)) for i, a in enumerate(ranges)))
    return np.concatenate([[L.size], site.ravel(), np.broadcast_to(full, [a.size for a in ranges]).ravel()])


def _c_loops(D: int, G: str, site_call: str, idx_call: str) -> str:
    """A C main printing what _every_index computes, through the macros <G>_BUFFER_SIZE,
    ``site_call`` and ``idx_call``."""
    sizes = ["LX", "LY", "LZ"][:D]
    coords, whole = ["x", "y", "z"][:D], ["x", "y"][:D - 1]
    lines = ["#include <stdio.h>", "#include <stdlib.h>", "#include <stddef.h>", '#include "macros.h"',
             "int main(int argc, char **argv)", "{",
             "    " + " ".join(f"const int {s} = atoi(argv[{i + 1}]);" for i, s in enumerate(sizes)),
             f"    const int H = atoi(argv[{D + 1}]), HY = atoi(argv[{D + 2}]), Q = atoi(argv[{D + 3}]);",
             f"    const int VL = atoi(argv[{D + 4}]), NR = {sizes[-1]} / VL;",
             f'    printf("%zu\\n", (size_t){G}_BUFFER_SIZE({", ".join(sizes)}));',
             "    for (int p = 0; p < Q; ++p)"]
    lines += [f"    for (int {c} = 0; {c} < {s}; ++{c})" for c, s in zip(coords, sizes)]
    lines += [f'        printf("%td\\n", (ptrdiff_t){site_call});', "    for (int p = 0; p < Q; ++p)"]
    lines += [f"    for (int {c} = -H; {c} < {s} + H; ++{c})" for c, s in zip(whole, sizes)]
    lines += ["    for (int r = -HY; r < NR + HY; ++r)", "    for (int k = 0; k < VL; ++k)",
              f'        printf("%td\\n", (ptrdiff_t){idx_call});', "    return 0;", "}"]
    return "\n".join(lines) + "\n"


# --- Layout.c_macros, any D ------------------------------------------------------------------

@pytest.mark.skipif(shutil.which("gcc") is None, reason="no gcc")
@pytest.mark.parametrize("name, vl, shape, h, hy", [
    ("aos", None, (3, 4, 5), 1, None), ("soa", None, (4, 3, 5), 1, None), ("csoa", 4, (3, 4, 8), 1, None),
    ("caosoa", 8, (3, 2, 16), 1, None), ("caosoa", 4, (5, 4, 12), 3, None),
    ("caosoa", 4, (5, 24), 3, None), ("soa", None, (4, 7), 3, 5)], ids=lambda v: str(v).replace(" ", ""))
def test_c_macros_agree_with_the_numpy_layout(name, vl, shape, h, hy, tmp_path):
    L = make_layout(name, 19, shape, vl, halo=h, halo_y=hy)
    D = L.D
    args = ", ".join(["LX", "LY", "LZ"][:D])
    (tmp_path / "macros.h").write_text(L.c_macros("lbgen"))
    whole = "x, y, " if D == 3 else "x, "
    program = _c_loops(D, "LBGEN", f"LBGEN_SITE(p, {'x, y, z' if D == 3 else 'x, y'}, {args})",
                       f"LBGEN_IDX(p, {whole}r, k, {args})")
    values = _compile_and_run(tmp_path, program, (*shape, h, L.HY, L.Q, L.VL))
    np.testing.assert_array_equal(values, _every_index(L))


# --- the 2D headers' index macros, pack and halo kernels --------------------------------------

@pytest.mark.parametrize("halo_y", [None, 16], ids=["halo-y-hop", "halo-y-16"])
@pytest.mark.parametrize("name, vl", LAYOUT_CONFIGS, ids=CONFIG_IDS)
def test_c_index_macros_agree_with_the_numpy_layout(name, vl, halo_y, tmp_path):
    src = generate(KernelSpec(backend="c", layout=name, vl=vl, halo_y=halo_y))
    for fname, text in src.files.items():
        (tmp_path / fname).write_text(text)
    assert "lbgen_kernels.h" in src.files
    (tmp_path / "macros.h").write_text('#include "lbgen_kernels.h"\n')
    program = _c_loops(2, "LBGEN", "LBGEN_SITE(p, x, y, LX, LY)", "LBGEN_IDX(p, x, r, k, LX, LY)")
    L = make_layout(name, Q, (LX, LY), vl, halo=HALO, halo_y=halo_y)
    values = _compile_and_run(tmp_path, program, (LX, LY, HALO, L.HY, Q, L.VL))
    np.testing.assert_array_equal(values, _every_index(L))


@pytest.mark.parametrize("name, vl", LAYOUT_CONFIGS, ids=CONFIG_IDS)
@pytest.mark.parametrize("precision", ["double", "single"])
def test_c_pack_and_unpack_agree_with_the_numpy_pack(name, vl, precision, program):
    prog = program(name, vl, precision)
    f = np.random.default_rng(3).standard_normal((Q, LX, LY))
    assert prog.lib.lbgen_buffer_size(LX, LY) == prog.layout.size
    from_numpy = prog.pack(f)                # numpy pack, halo filled
    from_c = prog.allocate()
    from_c[...] = -7.0                                # junk, to be overwritten everywhere
    plain = np.ascontiguousarray(f, dtype=np.float64)
    prog.lib.lbgen_pack(prog._ptr(from_c), prog.ffi.cast("double *", plain.ctypes.data), LX, LY)
    np.testing.assert_array_equal(from_c, from_numpy)  # interior and halo, bit for bit
    back = np.empty_like(plain)
    prog.lib.lbgen_unpack(prog._ptr(from_c), prog.ffi.cast("double *", back.ctypes.data), LX, LY)
    np.testing.assert_array_equal(back, f.astype(prog.dtype).astype(np.float64))


@pytest.mark.parametrize("name, vl", LAYOUT_CONFIGS, ids=CONFIG_IDS)
def test_c_halo_kernel_matches_numpy_fill_halo_exactly(name, vl, program):
    prog = program(name, vl)
    layout = prog.layout
    interior = layout.site_index(np.arange(Q)[:, None, None], np.arange(LX)[None, :, None], np.arange(LY)[None, None, :])
    buf = prog.allocate()
    buf[interior] = np.random.default_rng(4).standard_normal(interior.shape)
    expected = layout.fill_halo(buf.copy())
    assert not np.array_equal(expected, buf)          # the halo did need filling
    prog.halo(buf)
    np.testing.assert_array_equal(buf, expected)


# --- bad inputs: nothing generated or compiled -----------------------------------------------

BAD_SPECS = [
    # (layout, LX, LY, VL, words the message must contain)
    ("caosoa", LX, 96, 6, ["VL=6", "power of two"]),
    ("csoa", LX, 100, 8, ["VL=8", "LY=100", "divide"]),
    ("caosoa", LX, 64, 32, ["64/32", "2", "LY/VL >= 3"]),
    ("csoa", 0, 64, 8, ["LX=0", "LX must be an integer >= 1"]),
    ("aos", -2, 64, None, ["LX=-2", ">= 1"]),
    ("aosoa", LX, 64, 8, ["'aosoa'", "unknown layout", "caosoa"]),
    ("aos", LX, 64, 4, ["aos", "VL=4", "takes no VL"]),
    ("soa", LX, 64, 8, ["soa", "VL=8", "takes no VL"]),
    ("csoa", LX, 64, 0, ["VL=0", "power of two"]),
]
BAD_IDS = ["vl-not-power-of-two", "vl-not-dividing-ly", "ly-over-vl-below-3", "lx-zero", "lx-negative",
           "unknown-layout", "vl-for-aos", "vl-for-soa", "vl-zero-for-csoa"]


@pytest.fixture
def forbid_generation_and_compilation(monkeypatch):
    """Make any template rendering, library build or subprocess fail the test."""
    import lbgen.backends.c as cbackend
    import lbgen.codegen.render as codegen

    def forbidden(*args, **kwargs):
        pytest.fail("code was generated or compiled for an invalid input")

    monkeypatch.setattr(codegen, "template_context", forbidden)
    monkeypatch.setattr(cbackend, "build", forbidden)
    monkeypatch.setattr(subprocess, "run", forbidden)
    monkeypatch.setattr(subprocess, "Popen", forbidden)


@pytest.mark.parametrize("name, lx, ly, vl, words", BAD_SPECS, ids=BAD_IDS)
def test_bad_spec_raises_spec_error_before_anything_is_generated_or_compiled(
        name, lx, ly, vl, words, forbid_generation_and_compilation):
    spec = KernelSpec(backend="c", layout=name, vl=vl)
    with pytest.raises(SpecError) as info:
        spec.validate(lx, ly)
    for w in words:
        assert w in str(info.value), f"{w!r} not in {info.value}"
    # compile-time sizes: generate itself refuses, before rendering any template
    with pytest.raises(SpecError) as info:
        generate(KernelSpec(backend="c", layout=name, vl=vl, lx=lx, ly=ly))
    for w in words:
        assert w in str(info.value), f"{w!r} not in {info.value}"


def test_unknown_backend_is_refused_by_name(forbid_generation_and_compilation):
    with pytest.raises(SpecError, match=r"unknown backend 'fortran'.*c, opencl, cuda"):
        KernelSpec(backend="fortran").validate()
    with pytest.raises(SpecError, match="unknown backend 'fortran'"):
        generate(KernelSpec(backend="fortran"))


def test_valid_source_on_a_bad_lattice_fails_before_gcc_runs(monkeypatch):
    from lbgen.backends import c as cbackend
    src = generate(KernelSpec(backend="c", layout="caosoa", vl=32))

    def forbidden(*args, **kwargs):
        pytest.fail("the C backend compiled for an invalid lattice")

    monkeypatch.setattr(cbackend, "build", forbidden)
    monkeypatch.setattr(subprocess, "run", forbidden)
    with pytest.raises(LayoutError, match=r"LY/VL = 64/32 = 2"):
        cbackend.compile(src, LX, 64)
    with pytest.raises(LayoutError, match=r"VL=32 does not divide LY=80"):
        cbackend.compile(src, LX, 80)


@pytest.mark.parametrize("vl", [32, 64])
def test_large_vl_generates_with_run_time_sizes(vl):
    """Generation must not validate against a fixed lattice (64 x 64 refused VL = 32)."""
    src = generate(KernelSpec(backend="c", layout="caosoa", vl=vl))
    assert f"#define LBGEN_VL   {vl}" in src.files["lbgen_kernels.h"]
