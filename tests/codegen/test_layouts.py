"""The four data layouts: numpy pack/unpack, halo, propagate offsets, the C index macros
and C pack/halo kernels agree; bad layout inputs are refused before anything is generated
or compiled, with a message naming the value and the rule."""
from __future__ import annotations

import subprocess

import numpy as np
import pytest

from helpers import LAYOUT_CONFIGS, LX, LY, config_id
from lbgen.reference import bulk as ref
from lbgen.codegen.spec import KernelSpec, SpecError
from lbgen.codegen.render import generate
from lbgen.codegen.layouts import LAYOUTS, LayoutError, make_layout
from lbgen.model.velocity_set import d2q37

Q = d2q37().Q
HALO = d2q37().max_hop
CONFIG_IDS = [config_id(c) for c in LAYOUT_CONFIGS]
#: pack/unpack round trips also at VL = 1 for the clustered layouts and on a lattice
#: whose LY is not a multiple of anything in particular for aos/soa
ROUND_TRIP = [("aos", None, 5, 7), ("soa", None, 5, 7), ("csoa", 1, 4, 9), ("caosoa", 1, 4, 9)] + [
    (name, vl, LX, LY) for name in ("csoa", "caosoa") for vl in (4, 8, 16, 32)]


def coded_fields(lx=LX, ly=LY):
    """f[p, x, y] = a distinct integer code for every (p, x, y)."""
    return np.arange(Q * lx * ly, dtype=np.float64).reshape(Q, lx, ly)


def code(p, x, y, lx=LX, ly=LY):
    return (np.asarray(p) * lx + x) * ly + y


# --- numpy pack / unpack / index -------------------------------------------------------------

def test_layout_names_are_the_four_of_the_paper():
    assert set(LAYOUTS) == {"aos", "soa", "csoa", "caosoa"}


@pytest.mark.parametrize("name, vl, lx, ly", ROUND_TRIP, ids=[f"{n}-vl{v}-{x}x{y}" for n, v, x, y in ROUND_TRIP])
def test_pack_then_unpack_returns_the_fields_exactly(name, vl, lx, ly):
    layout = make_layout(name, Q, lx, ly, vl, halo=HALO)
    f = np.random.default_rng(0).standard_normal((Q, lx, ly))
    buf = layout.pack(f)
    assert buf.shape == (layout.size,)
    assert layout.size == Q * (lx + 2 * HALO) * (ly // layout.VL + 2 * HALO) * layout.VL
    np.testing.assert_array_equal(layout.unpack(buf), f)
    # the dtype argument converts (single precision buffers)
    buf32 = layout.pack(f, dtype=np.float32)
    assert buf32.dtype == np.float32
    np.testing.assert_array_equal(layout.unpack(buf32), f.astype(np.float32))


@pytest.mark.parametrize("name, vl", LAYOUT_CONFIGS, ids=CONFIG_IDS)
def test_index_is_a_bijection_of_the_padded_lattice_onto_the_buffer(name, vl):
    layout = make_layout(name, Q, LX, LY, vl, halo=HALO)
    p = np.arange(Q)[:, None, None, None]
    x = np.arange(-HALO, LX + HALO)[None, :, None, None]
    r = np.arange(-HALO, layout.NR + HALO)[None, None, :, None]
    k = np.arange(layout.VL)[None, None, None, :]
    idx = np.broadcast_to(layout.index(p, x, r, k), (Q, layout.NX, layout.NRP, layout.VL)).ravel()
    np.testing.assert_array_equal(np.sort(idx), np.arange(layout.size))


@pytest.mark.parametrize("name, vl", LAYOUT_CONFIGS, ids=CONFIG_IDS)
def test_site_index_puts_lane_k_of_cluster_row_r_at_y_equal_r_plus_k_times_NR(name, vl):
    layout = make_layout(name, Q, LX, LY, vl, halo=HALO)
    nr = LY // (vl or 1)
    assert layout.NR == nr
    for p, x, y in [(0, 0, 0), (5, 2, nr - 1), (36, LX - 1, nr), (17, 3, LY - 1)]:
        assert layout.site_index(p, x, y) == layout.index(p, x, y % nr, y // nr)
    s = layout.strides
    # the documented stride formulas (layouts.py docstring / paper)
    NX, NRP, V = LX + 2 * HALO, nr + 2 * HALO, layout.VL
    expected = {"aos": dict(SP=1, SR=Q, SX=Q * NRP, SK=0),
                "soa": dict(SP=NX * NRP, SR=1, SX=NRP, SK=0),
                "csoa": dict(SP=NX * NRP * V, SR=V, SX=NRP * V, SK=1),
                "caosoa": dict(SP=V, SR=Q * V, SX=NRP * Q * V, SK=1)}[name]
    assert s == expected


# --- halo ----------------------------------------------------------------------------------

@pytest.mark.parametrize("name, vl", LAYOUT_CONFIGS, ids=CONFIG_IDS)
def test_every_halo_element_after_pack_holds_its_periodic_image(name, vl):
    layout = make_layout(name, Q, LX, LY, vl, halo=HALO)
    buf = layout.pack(coded_fields())
    nr, V = layout.NR, layout.VL
    p = np.arange(Q)[:, None, None, None]
    x = np.arange(-HALO, LX + HALO)[None, :, None, None]
    r = np.arange(-HALO, nr + HALO)[None, None, :, None]
    k = np.arange(V)[None, None, None, :]
    # (x, r, k) is the periodic image of site (x mod LX, (r + k NR) mod LY)
    want = code(p, x % LX, (r + k * nr) % LY)
    got = buf[layout.index(p, x, r, k)]
    np.testing.assert_array_equal(got, np.broadcast_to(want, got.shape))


@pytest.mark.parametrize("name, vl", LAYOUT_CONFIGS, ids=CONFIG_IDS)
def test_fill_halo_rewrites_only_the_halo(name, vl):
    layout = make_layout(name, Q, LX, LY, vl, halo=HALO)
    rng = np.random.default_rng(1)
    buf = np.zeros(layout.size)
    interior = layout.site_index(np.arange(Q)[:, None, None], np.arange(LX)[None, :, None], np.arange(LY)[None, None, :])
    buf[interior] = rng.standard_normal(interior.shape)
    before = buf.copy()
    layout.fill_halo(buf)
    np.testing.assert_array_equal(buf[interior], before[interior])
    halo = np.ones(layout.size, bool)
    halo[interior.ravel()] = False
    assert np.all(buf[halo] != 0.0), "some halo element was not filled"


# --- propagate offsets -------------------------------------------------------------------------

def _numpy_propagate(layout, offsets, buf):
    interior = layout.site_index(np.arange(Q)[:, None, None], np.arange(LX)[None, :, None], np.arange(LY)[None, None, :])
    off = np.asarray(offsets)[:, None, None]
    return buf[interior + off]


@pytest.mark.parametrize("name, vl", LAYOUT_CONFIGS, ids=CONFIG_IDS)
def test_propagate_offsets_pull_exactly_like_the_reference_propagate(name, vl, vs):
    layout = make_layout(name, Q, LX, LY, vl, halo=HALO)
    offsets = layout.propagate_offsets(vs.velocities)
    f = np.random.default_rng(2).standard_normal((Q, LX, LY))
    np.testing.assert_array_equal(_numpy_propagate(layout, offsets, layout.pack(f)), ref.propagate(f))


@pytest.mark.parametrize("name, vl", [("aos", None), ("csoa", 8), ("caosoa", 32)], ids=["aos", "csoa-vl8", "caosoa-vl32"])
@pytest.mark.parametrize("x0, y0", [(0, 0), (LX - 1, LY - 1), (2, 11), (1, LY // 2)])
def test_a_single_population_moves_by_its_own_hop_across_lane_and_column_boundaries(name, vl, x0, y0, vs):
    layout = make_layout(name, Q, LX, LY, vl, halo=HALO)
    offsets = layout.propagate_offsets(vs.velocities)
    for p, (ex, ey) in enumerate(vs.velocities):
        f = np.zeros((Q, LX, LY))
        f[p, x0, y0] = 1.0
        out = _numpy_propagate(layout, offsets, layout.pack(f))
        nz = np.argwhere(out)
        assert nz.tolist() == [[p, (x0 + ex) % LX, (y0 + ey) % LY]], f"population {p} hop {(ex, ey)}"
        np.testing.assert_array_equal(out, ref.propagate(f))


# --- the C index macros and C pack/halo agree with numpy ------------------------------------

C_PRINTER = r"""
#include <stdio.h>
#include <stdlib.h>
#include "lbgen_kernels.h"
int main(int argc, char **argv)
{
    const int LX = atoi(argv[1]), LY = atoi(argv[2]);
    const int NR = LY / LBGEN_VL;
    printf("%zu\n", (size_t)LBGEN_BUFFER_SIZE(LX, LY));
    for (int p = 0; p < LBGEN_Q; ++p)
        for (int x = 0; x < LX; ++x)
            for (int y = 0; y < LY; ++y)
                printf("%td\n", (ptrdiff_t)LBGEN_SITE(p, x, y, LX, LY));
    for (int p = 0; p < LBGEN_Q; ++p)
        for (int x = -LBGEN_HALO; x < LX + LBGEN_HALO; ++x)
            for (int r = -LBGEN_HALO_Y; r < NR + LBGEN_HALO_Y; ++r)
                for (int k = 0; k < LBGEN_VL; ++k)
                    printf("%td\n", (ptrdiff_t)LBGEN_IDX(p, x, r, k, LX, LY));
    return 0;
}
"""


@pytest.mark.parametrize("halo_y", [None, 16], ids=["halo-y-hop", "halo-y-16"])
@pytest.mark.parametrize("name, vl", LAYOUT_CONFIGS, ids=CONFIG_IDS)
def test_c_index_macros_agree_with_the_numpy_layout(name, vl, halo_y, tmp_path):
    src = generate(KernelSpec(backend="c", layout=name, vl=vl, halo_y=halo_y))
    for fname, text in src.files.items():
        (tmp_path / fname).write_text(text)
    assert "lbgen_kernels.h" in src.files
    (tmp_path / "printer.c").write_text(C_PRINTER)
    exe = tmp_path / "printer"
    subprocess.run(["gcc", "-std=gnu11", "-O0", "-o", str(exe), str(tmp_path / "printer.c")],
                   check=True, capture_output=True, text=True, cwd=tmp_path)
    out = subprocess.run([str(exe), str(LX), str(LY)], check=True, capture_output=True, text=True).stdout.split()
    values = np.array(out, dtype=np.int64)

    layout = make_layout(name, Q, LX, LY, vl, halo=HALO, halo_y=halo_y)
    assert values[0] == layout.size
    n_site = Q * LX * LY
    site = layout.site_index(np.arange(Q)[:, None, None], np.arange(LX)[None, :, None], np.arange(LY)[None, None, :])
    np.testing.assert_array_equal(values[1:1 + n_site], site.ravel())
    p = np.arange(Q)[:, None, None, None]
    x = np.arange(-HALO, LX + HALO)[None, :, None, None]
    r = np.arange(-layout.HY, layout.NR + layout.HY)[None, None, :, None]
    k = np.arange(layout.VL)[None, None, None, :]
    full = np.broadcast_to(layout.index(p, x, r, k), (Q, layout.NX, layout.NRP, layout.VL)).ravel()
    np.testing.assert_array_equal(values[1 + n_site:], full)


@pytest.mark.parametrize("name, vl", LAYOUT_CONFIGS, ids=CONFIG_IDS)
@pytest.mark.parametrize("precision", ["double", "single"])
def test_c_pack_and_unpack_agree_with_the_numpy_pack(name, vl, precision, program):
    prog = program(name, vl, precision)
    f = np.random.default_rng(3).standard_normal((Q, LX, LY))
    assert prog.lib.lbgen_buffer_size(LX, LY) == prog.layout.size
    from_numpy = prog.upload_fields(f)                # numpy pack, halo filled
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


# --- bad inputs: clear messages, nothing generated or compiled -------------------------------

BAD_LAYOUTS = [
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


@pytest.mark.parametrize("name, lx, ly, vl, words", BAD_LAYOUTS, ids=BAD_IDS)
def test_make_layout_rejects_bad_input_naming_value_and_rule(name, lx, ly, vl, words):
    with pytest.raises(LayoutError) as info:
        make_layout(name, Q, lx, ly, vl, halo=HALO)
    for w in words:
        assert w in str(info.value), f"{w!r} not in {info.value}"


@pytest.mark.parametrize("name, lx, ly, vl, words", BAD_LAYOUTS, ids=BAD_IDS)
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


@pytest.mark.parametrize("cfg", LAYOUT_CONFIGS, ids=config_id)
def test_population_view_puts_the_37_populations_of_every_stored_site_on_one_axis(cfg, vs):
    name, vl = cfg
    layout = make_layout(name, vs.Q, LX, LY, vl, halo=HALO)
    f = np.random.default_rng(7).random((vs.Q, LX, LY))
    view, axis = layout.population_view(layout.pack(f))
    per_site = np.moveaxis(view, axis, -1).reshape(-1, vs.Q)
    assert per_site.shape[0] * vs.Q == layout.size
    interior = {tuple(np.round(f[:, x, y], 12)) for x in range(LX) for y in range(LY)}
    stored = {tuple(np.round(row, 12)) for row in per_site if row.any()}
    assert stored == interior       # every stored site (halos are periodic copies) is an interior site


def test_halo_y_16_soa_is_the_production_codes_layout():
    """--halo-y 16 with SoA: element (p, x, y) at p*NX*NY + (x + 3)*NY + y + 16, NX = LX + 6,
    NY = LY + 32 (the production D2Q37 code's HX = 3, HY = 16 indexing)."""
    layout = make_layout("soa", Q, LX, LY, None, halo=HALO, halo_y=16)
    NX, NY = LX + 2 * HALO, LY + 32
    p, x, y = np.meshgrid(np.arange(Q), np.arange(LX), np.arange(LY), indexing="ij")
    np.testing.assert_array_equal(layout.site_index(p, x, y), p * NX * NY + (x + HALO) * NY + y + 16)
    assert layout.size == Q * NX * NY


@pytest.mark.parametrize("bad", [HALO - 1, 0, -16, 1025, 2.5, True, "16"])
def test_halo_y_outside_the_rule_is_refused_before_any_code(bad):
    with pytest.raises(SpecError):
        KernelSpec(layout="soa", halo_y=bad).validate()
    with pytest.raises(LayoutError):
        make_layout("soa", Q, LX, LY, None, halo=HALO, halo_y=bad)


@pytest.mark.parametrize("backend", ["opencl", "cuda"])
def test_halo_y_is_refused_on_the_gpu_backends(backend):
    with pytest.raises(SpecError):
        KernelSpec(backend=backend, layout="soa", halo_y=16).validate()
    assert KernelSpec(backend="c", layout="soa", halo_y=HALO).validate().halo_y is None   # the default, spelled out
