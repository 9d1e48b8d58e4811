"""The four layouts in 3D (lbgen.codegen.layouts.Layout3D; clusters along Z): NumPy
pack/unpack round trips, the index is a bijection, the halo holds periodic images, the
propagate offsets stream exactly like np.roll (the 3D oracle), and the C index macro
printed from the same stride formulas agrees with NumPy."""
from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest

from lbgen.codegen.layouts import LAYOUTS, LayoutError, make_layout3d
from lbgen.model.velocity_set import velocity_set
from lbgen.reference import bulk3d as o

#: (layout, VL, LX, LY, LZ, halo): H = 1 (D3Q19/D3Q27) and H = 3 (D3Q39)
CONFIGS = [("aos", None, 3, 4, 5, 1), ("soa", None, 4, 3, 5, 1), ("csoa", 1, 3, 2, 5, 1), ("csoa", 4, 3, 4, 8, 1),
           ("caosoa", 2, 2, 3, 6, 1), ("caosoa", 8, 3, 2, 16, 1), ("aos", None, 4, 5, 4, 3),
           ("csoa", 2, 4, 4, 6, 3), ("caosoa", 4, 5, 4, 12, 3)]
IDS = [f"{n}-vl{v}-{x}x{y}x{z}-h{h}" for n, v, x, y, z, h in CONFIGS]


def _layout(name, vl, lx, ly, lz, h, Q=19):
    return make_layout3d(name, Q, lx, ly, lz, vl, halo=h)


@pytest.mark.parametrize("name, vl, lx, ly, lz, h", CONFIGS, ids=IDS)
def test_pack_then_unpack_returns_the_fields_exactly(name, vl, lx, ly, lz, h):
    layout = _layout(name, vl, lx, ly, lz, h)
    f = np.random.default_rng(0).standard_normal((19, lx, ly, lz))
    buf = layout.pack(f)
    assert buf.shape == (layout.size,) == (19 * (lx + 2 * h) * (ly + 2 * h) * (lz // layout.VL + 2 * h) * layout.VL,)
    np.testing.assert_array_equal(layout.unpack(buf), f)
    np.testing.assert_array_equal(layout.unpack(layout.pack(f, dtype=np.float32)), f.astype(np.float32))


@pytest.mark.parametrize("name, vl, lx, ly, lz, h", CONFIGS, ids=IDS)
def test_index_is_a_bijection_of_the_padded_lattice_onto_the_buffer(name, vl, lx, ly, lz, h):
    L = _layout(name, vl, lx, ly, lz, h)
    p = np.arange(L.Q)[:, None, None, None, None]
    x = np.arange(-h, lx + h)[None, :, None, None, None]
    y = np.arange(-h, ly + h)[None, None, :, None, None]
    r = np.arange(-h, L.NR + h)[None, None, None, :, None]
    k = np.arange(L.VL)[None, None, None, None, :]
    idx = np.broadcast_to(L.index(p, x, y, r, k), (L.Q, L.NX, L.NY, L.NRP, L.VL)).ravel()
    assert np.array_equal(np.sort(idx), np.arange(L.size))


@pytest.mark.parametrize("name, vl", [("csoa", 4), ("caosoa", 8)])
def test_lane_k_of_cluster_row_r_is_z_equal_r_plus_k_times_NR(name, vl):
    L = _layout(name, vl, 2, 2, 16, 1)
    for z in range(16):
        assert L.site_index(3, 1, 0, z) == L.index(3, 1, 0, z % L.NR, z // L.NR)
    assert L.strides["SK"] == 1 and L.strides["SR"] == (vl if name == "csoa" else 19 * vl)


@pytest.mark.parametrize("name, vl, lx, ly, lz, h", CONFIGS, ids=IDS)
def test_every_halo_element_after_pack_holds_its_periodic_image(name, vl, lx, ly, lz, h):
    L = _layout(name, vl, lx, ly, lz, h)
    f = np.arange(19 * lx * ly * lz, dtype=float).reshape(19, lx, ly, lz) + 1
    buf = L.pack(f)
    p = np.arange(19)[:, None, None, None, None]
    x = np.arange(-h, lx + h)[None, :, None, None, None]
    y = np.arange(-h, ly + h)[None, None, :, None, None]
    r = np.arange(-h, L.NR + h)[None, None, None, :, None]
    k = np.arange(L.VL)[None, None, None, None, :]
    z = r + k * L.NR                       # the site a padded cluster row stands for
    got = buf[L.index(p, x, y, r, k)]
    want = f[p, x % lx, y % ly, z % lz]
    np.testing.assert_array_equal(got, want)
    view, axis = L.population_view(buf)
    assert view.shape[axis] == 19 and np.sum(view) == np.sum(buf)


def _stream_on_buffer(L, offsets, buf):
    p = np.arange(L.Q)[:, None, None, None]
    x = np.arange(L.LX)[None, :, None, None]
    y = np.arange(L.LY)[None, None, :, None]
    z = np.arange(L.LZ)[None, None, None, :]
    interior = L.site_index(p, x, y, z)
    return buf[interior + np.asarray(offsets)[:, None, None, None]]


@pytest.mark.parametrize("name, vl, lx, ly, lz, h", CONFIGS, ids=IDS)
def test_propagate_offsets_stream_exactly_like_np_roll(name, vl, lx, ly, lz, h):
    sets = ["d3q19", "d3q27"] if h == 1 else ["d3q39"]
    for vs_name in sets:
        vs = velocity_set(vs_name)
        L = make_layout3d(name, vs.Q, lx, ly, lz, vl, halo=h)
        f = np.random.default_rng(1).standard_normal((vs.Q, lx, ly, lz))
        got = _stream_on_buffer(L, L.propagate_offsets(vs.velocities), L.pack(f))
        rolled = np.array([np.roll(f[p], tuple(int(c) for c in vs.e[p]), axis=(0, 1, 2)) for p in range(vs.Q)])
        np.testing.assert_array_equal(got, rolled)
        if vs_name in o.LATTICES:
            np.testing.assert_array_equal(got, o.stream(f, vs_name))


def test_make_layout3d_refuses_bad_input_naming_value_and_rule():
    for args, words in [(("aos", 19, 4, 4, 4, 2), "takes no VL"), (("caosoa", 19, 4, 4, 12, 8), "does not divide LZ"),
                        (("csoa", 39, 4, 4, 16, 8), "too small for the 3-wide halo"),
                        (("caosoa", 19, 4, 4, 8, 3), "not a power of two"), (("soa", 19, 4, 0, 4), "LY=0"),
                        (("hex", 19, 4, 4, 4), "unknown layout"), (("csoa", 19, 4, 4, 8), "needs a cluster length")]:
        with pytest.raises(LayoutError, match=words):
            make_layout3d(*args, halo=3 if args[1] == 39 else 1)
    assert {make_layout3d(n, 19, 2, 2, 4, 2 if n in ("csoa", "caosoa") else None, halo=1).name
            for n in LAYOUTS} == set(LAYOUTS)


C_PRINTER = r"""
#include <stdio.h>
#include <stdlib.h>
#include <stddef.h>
#include "macros.h"
int main(int argc, char **argv)
{
    const int LX = atoi(argv[1]), LY = atoi(argv[2]), LZ = atoi(argv[3]), H = atoi(argv[4]), Q = atoi(argv[5]);
    const int VL = atoi(argv[6]), NR = LZ / VL;
    printf("%zu\n", LBGEN_BUFFER_SIZE(LX, LY, LZ));
    for (int p = 0; p < Q; ++p)
        for (int x = 0; x < LX; ++x)
            for (int y = 0; y < LY; ++y)
                for (int z = 0; z < LZ; ++z)
                    printf("%td\n", (ptrdiff_t)LBGEN_SITE(p, x, y, z, LX, LY, LZ));
    for (int p = 0; p < Q; ++p)
        for (int x = -H; x < LX + H; ++x)
            for (int y = -H; y < LY + H; ++y)
                for (int r = -H; r < NR + H; ++r)
                    for (int k = 0; k < VL; ++k)
                        printf("%td\n", (ptrdiff_t)LBGEN_IDX(p, x, y, r, k, LX, LY, LZ));
    return 0;
}
"""


@pytest.mark.skipif(shutil.which("gcc") is None, reason="no gcc")
@pytest.mark.parametrize("name, vl, lx, ly, lz, h", [CONFIGS[i] for i in (0, 1, 3, 5, 8)],
                         ids=[IDS[i] for i in (0, 1, 3, 5, 8)])
def test_c_index_macro_agrees_with_the_numpy_layout(name, vl, lx, ly, lz, h, tmp_path):
    L = _layout(name, vl, lx, ly, lz, h)
    (tmp_path / "macros.h").write_text(L.c_macros("lbgen"))
    (tmp_path / "printer.c").write_text(C_PRINTER)
    exe = tmp_path / "printer"
    subprocess.run(["gcc", "-std=gnu11", "-O0", "-Wall", "-Werror", "-o", str(exe), "printer.c"], check=True,
                   capture_output=True, text=True, cwd=tmp_path)
    out = subprocess.run([str(exe), *map(str, (lx, ly, lz, h, L.Q, L.VL))], check=True, capture_output=True,
                         text=True).stdout.split()
    values = np.array(out, dtype=np.int64)
    assert values[0] == L.size
    n = L.Q * lx * ly * lz
    np.testing.assert_array_equal(values[1:1 + n], L._interior_index.ravel())
    p = np.arange(L.Q)[:, None, None, None, None]
    x = np.arange(-h, lx + h)[None, :, None, None, None]
    y = np.arange(-h, ly + h)[None, None, :, None, None]
    r = np.arange(-h, L.NR + h)[None, None, None, :, None]
    k = np.arange(L.VL)[None, None, None, None, :]
    full = np.broadcast_to(L.index(p, x, y, r, k), (L.Q, L.NX, L.NY, L.NRP, L.VL)).ravel()
    np.testing.assert_array_equal(values[1 + n:], full)
