"""The four data layouts of any dimension (lbgen.codegen.layouts.Layout; NumPy only): pack
and unpack round trips, the index is a bijection, lane k of cluster row r is the site
r + k*NR, the strides follow the one rule in 2D and 3D, the halo holds periodic images, the
propagate offsets stream exactly like np.roll and the oracles, and bad inputs are refused
naming the value and the rule.  The C side is in test_layouts_c.py."""
from __future__ import annotations

import numpy as np
import pytest

from helpers import LAYOUT_CONFIGS, LX, LY, config_id
from lbgen.codegen.layouts import LAYOUTS, Layout, LayoutError, describe, make_layout, stride_formulas
from lbgen.codegen.spec import KernelSpec, SpecError
from lbgen.model.velocity_set import velocity_set
from lbgen.reference import bulk as ref
from lbgen.reference import bulk3d as o

#: (layout, VL, shape, halo): 2D the tests' lattice with D2Q37's halo 3 for every (layout, VL);
#: 3D H = 1 (D3Q19/D3Q27) and H = 3 (D3Q39) on small odd lattices
CASES = [(n, v, (LX, LY), 3) for n, v in LAYOUT_CONFIGS] + [
    ("aos", None, (3, 4, 5), 1), ("soa", None, (4, 3, 5), 1), ("csoa", 1, (3, 2, 5), 1), ("csoa", 4, (3, 4, 8), 1),
    ("caosoa", 2, (2, 3, 6), 1), ("caosoa", 8, (3, 2, 16), 1), ("aos", None, (4, 5, 4), 3),
    ("csoa", 2, (4, 4, 6), 3), ("caosoa", 4, (5, 4, 12), 3)]
#: pack/unpack round trips also at VL = 1 for the clustered layouts and on a lattice whose
#: last axis is not a multiple of anything in particular for aos/soa
ROUND_TRIP = CASES + [("aos", None, (5, 7), 3), ("soa", None, (5, 7), 3), ("csoa", 1, (4, 9), 3),
                      ("caosoa", 1, (4, 9), 3)]


def case_id(name, vl, shape, h):
    return f"{config_id((name, vl))}-{'x'.join(map(str, shape))}-h{h}"


def params(cases):
    return [pytest.param(*c, id=case_id(*c)) for c in cases]


def layout_of(name, vl, shape, h, **kw) -> Layout:
    """Q = 37 in 2D (D2Q37), 19 in 3D: any Q would do."""
    return make_layout(name, 37 if len(shape) == 2 else 19, shape, vl, halo=h, **kw)


def grid(*ranges):
    """Broadcasting arrays, one axis each."""
    n = len(ranges)
    return [np.asarray(a).reshape((1,) * i + (-1,) + (1,) * (n - i - 1)) for i, a in enumerate(ranges)]


def padded_cells(L: Layout):
    """(p, whole-axis coordinates..., r, k) over every stored element, halos included."""
    return grid(np.arange(L.Q), *(np.arange(-L.halo, n + L.halo) for n in L.shape[:-1]),
                np.arange(-L.HY, L.NR + L.HY), np.arange(L.VL))


def interior_index(L: Layout):
    return L.site_index(*grid(np.arange(L.Q), *(np.arange(n) for n in L.shape)))


def test_layout_names_are_the_four_of_the_paper():
    assert set(LAYOUTS) == {"aos", "soa", "csoa", "caosoa"}


# --- numpy pack / unpack / index -------------------------------------------------------------

@pytest.mark.parametrize("name, vl, shape, h", params(ROUND_TRIP))
def test_pack_then_unpack_returns_the_fields_exactly(name, vl, shape, h):
    L = layout_of(name, vl, shape, h)
    f = np.random.default_rng(0).standard_normal((L.Q, *shape))
    buf = L.pack(f)
    padded = [n + 2 * h for n in shape[:-1]] + [shape[-1] // L.VL + 2 * h]
    assert buf.shape == (L.size,) == (L.Q * int(np.prod(padded)) * L.VL,)
    np.testing.assert_array_equal(L.unpack(buf), f)
    buf32 = L.pack(f, dtype=np.float32)              # the dtype argument converts (single precision)
    assert buf32.dtype == np.float32
    np.testing.assert_array_equal(L.unpack(buf32), f.astype(np.float32))
    with pytest.raises(ValueError, match="pack expects shape"):
        L.pack(f[:, :-1])
    with pytest.raises(ValueError, match=f"unpack expects {L.size} elements"):
        L.unpack(buf[:-1])


@pytest.mark.parametrize("name, vl, shape, h", params(CASES))
def test_index_is_a_bijection_of_the_padded_lattice_onto_the_buffer(name, vl, shape, h):
    L = layout_of(name, vl, shape, h)
    idx = L.index(*padded_cells(L))
    assert idx.shape == (L.Q, *(n + 2 * h for n in shape[:-1]), L.NRP, L.VL)
    np.testing.assert_array_equal(np.sort(idx.ravel()), np.arange(L.size))
    # k defaults to 0 and may be given by name
    p, *c, r, k = padded_cells(L)
    np.testing.assert_array_equal(L.index(p, *c, r), L.index(p, *c, r, 0))
    np.testing.assert_array_equal(L.index(p, *c, r, k=k), L.index(p, *c, r, k))


@pytest.mark.parametrize("name, vl, shape, h", params(CASES))
def test_site_index_puts_lane_k_of_cluster_row_r_at_r_plus_k_times_NR(name, vl, shape, h):
    L = layout_of(name, vl, shape, h)
    n = shape[-1]
    assert L.NR == n // (vl or 1) and L.D == len(shape) and L.shape == shape
    whole = tuple(m - 1 for m in shape[:-1])
    for p in (0, L.Q - 1):
        for c in range(n):
            assert L.site_index(p, *whole, c) == L.index(p, *whole, c % L.NR, c // L.NR)


#: the stride formulas the kernels print (templates: strides.SP, ...), as they were written
#: by hand before one rule derived them: the rule must give exactly these texts
STRIDE_TEXT = {
    2: {"aos": {"SP": "1", "SR": "Q", "SX": "Q*NRP", "SK": "0"},
        "soa": {"SP": "NX*NRP", "SR": "1", "SX": "NRP", "SK": "0"},
        "csoa": {"SP": "NX*NRP*VL", "SR": "VL", "SX": "NRP*VL", "SK": "1"},
        "caosoa": {"SP": "VL", "SR": "Q*VL", "SX": "NRP*Q*VL", "SK": "1"}},
    3: {"aos": {"SP": "1", "SR": "Q", "SY": "Q*NRP", "SX": "Q*NRP*NY", "SK": "0"},
        "soa": {"SP": "NX*NY*NRP", "SR": "1", "SY": "NRP", "SX": "NY*NRP", "SK": "0"},
        "csoa": {"SP": "NX*NY*NRP*VL", "SR": "VL", "SY": "NRP*VL", "SX": "NY*NRP*VL", "SK": "1"},
        "caosoa": {"SP": "VL", "SR": "Q*VL", "SY": "Q*VL*NRP", "SX": "Q*VL*NRP*NY", "SK": "1"}},
}


@pytest.mark.parametrize("D", [2, 3])
@pytest.mark.parametrize("name", LAYOUTS)
def test_the_stride_rule_gives_the_texts_the_kernels_print(name, D):
    assert stride_formulas(name, D) == STRIDE_TEXT[D][name]


@pytest.mark.parametrize("name, vl, shape, h", params(CASES))
def test_strides_are_the_storage_order_of_each_layout(name, vl, shape, h):
    L = layout_of(name, vl, shape, h)
    Q, V, NRP = L.Q, L.VL, L.NRP
    whole = [n + 2 * h for n in shape[:-1]]          # NX[, NY]
    inner = int(np.prod(whole[1:]))                  # the whole axes faster than X
    expected = {"aos": dict(SP=1, SR=Q, SX=Q * NRP * inner, SK=0),
                "soa": dict(SP=int(np.prod(whole)) * NRP, SR=1, SX=NRP * inner, SK=0),
                "csoa": dict(SP=int(np.prod(whole)) * NRP * V, SR=V, SX=NRP * V * inner, SK=1),
                "caosoa": dict(SP=V, SR=Q * V, SX=NRP * Q * V * inner, SK=1)}[name]
    if L.D == 3:
        expected["SY"] = expected["SX"] // whole[1]
    assert L.strides == expected


@pytest.mark.parametrize("D", [2, 3])
def test_sizes_and_descriptions_by_dimension(D):
    shape = (4, 5, 8)[:D - 1] + (8,)
    L = make_layout("csoa", 19, shape, 4, halo=1)
    assert (L.LX, L.LY, L.NX, L.NR, L.NRP, L.HY, L.clustered, L.tag) == (4, shape[1], 6, 2, 4, 1, True, "csoa-vl4")
    if D == 3:
        assert (L.LZ, L.NY) == (8, 7)
        assert L.description == "pop[i].s[x][y][r].c[k]: population arrays cut into clusters of VL sites strided along Z"
    else:
        for attr in ("LZ", "NY"):                    # a clear error, not a silent other axis
            with pytest.raises(AttributeError, match=attr):
                getattr(L, attr)
        assert L.description == "pop[i].s[x][r].c[k]: population arrays cut into clusters of VL strided sites"
    assert describe("aos", 37, D) == f"site[x][y]{'[z]' * (D - 2)}.p[i]: the 37 populations of a site adjacent"


# --- halo ----------------------------------------------------------------------------------

@pytest.mark.parametrize("name, vl, shape, h", params(CASES))
def test_every_halo_element_after_pack_holds_its_periodic_image(name, vl, shape, h):
    L = layout_of(name, vl, shape, h)
    f = np.arange(L.Q * int(np.prod(shape)), dtype=float).reshape(L.Q, *shape) + 1
    buf = L.pack(f)
    p, *c, r, k = padded_cells(L)
    site = [x % n for x, n in zip(c, shape)] + [(r + k * L.NR) % shape[-1]]   # the site a stored cell stands for
    got = buf[L.index(p, *c, r, k)]
    np.testing.assert_array_equal(got, np.broadcast_to(f[(p, *site)], got.shape))


@pytest.mark.parametrize("name, vl, shape, h", params(CASES))
def test_fill_halo_rewrites_only_the_halo(name, vl, shape, h):
    L = layout_of(name, vl, shape, h)
    buf = np.zeros(L.size)
    interior = interior_index(L)
    buf[interior] = np.random.default_rng(1).standard_normal(interior.shape)
    before = buf.copy()
    L.fill_halo(buf)
    np.testing.assert_array_equal(buf[interior], before[interior])
    halo = np.ones(L.size, bool)
    halo[interior.ravel()] = False
    assert np.all(buf[halo] != 0.0), "some halo element was not filled"


@pytest.mark.parametrize("name, vl, shape, h", params(CASES))
def test_population_view_puts_the_populations_of_every_stored_site_on_one_axis(name, vl, shape, h):
    L = layout_of(name, vl, shape, h)
    f = np.random.default_rng(7).random((L.Q, *shape))
    view, axis = L.population_view(L.pack(f))
    per_site = np.moveaxis(view, axis, -1).reshape(-1, L.Q)
    assert per_site.shape[0] * L.Q == L.size
    interior = {tuple(np.round(v, 12)) for v in np.moveaxis(f, 0, -1).reshape(-1, L.Q)}
    stored = {tuple(np.round(row, 12)) for row in per_site if row.any()}
    assert stored == interior       # every stored site (halos are periodic copies) is an interior site


# --- propagate offsets -------------------------------------------------------------------------

def _pull(L, offsets, buf):
    interior = interior_index(L)
    return buf[interior + np.asarray(offsets).reshape((-1,) + (1,) * L.D)]


def _sets(D, h):
    return {(2, 3): ["d2q37"], (2, 1): ["d2q9"], (3, 1): ["d3q19", "d3q27"], (3, 3): ["d3q39"]}[(D, h)]


@pytest.mark.parametrize("name, vl, shape, h", params(CASES + [("caosoa", 4, (5, 12), 1)]))
def test_propagate_offsets_stream_exactly_like_np_roll_and_the_oracles(name, vl, shape, h):
    D = len(shape)
    for vs_name in _sets(D, h):
        vs = velocity_set(vs_name)
        L = make_layout(name, vs.Q, shape, vl, halo=h)
        f = np.random.default_rng(2).standard_normal((vs.Q, *shape))
        got = _pull(L, L.propagate_offsets(vs.velocities), L.pack(f))
        rolled = np.array([np.roll(f[p], tuple(int(c) for c in vs.e[p]), axis=tuple(range(D))) for p in range(vs.Q)])
        np.testing.assert_array_equal(got, rolled)
        if vs_name == "d2q37":
            np.testing.assert_array_equal(got, ref.propagate(f))
        if vs_name in o.LATTICES:
            np.testing.assert_array_equal(got, o.stream(f, vs_name))


@pytest.mark.parametrize("name, vl", [("aos", None), ("csoa", 8), ("caosoa", 32)], ids=["aos", "csoa-vl8", "caosoa-vl32"])
@pytest.mark.parametrize("site", [(0, 0), (LX - 1, LY - 1), (2, 11), (1, LY // 2), (0, 0, 0), (2, 3, 31), (1, 0, 63)])
def test_a_single_population_moves_by_its_own_hop_across_lane_and_line_boundaries(name, vl, site):
    D = len(site)
    vs = velocity_set("d2q37" if D == 2 else "d3q27")
    shape = (LX, LY) if D == 2 else (3, 4, 64 if vl != 32 else 96)
    L = make_layout(name, vs.Q, shape, vl, halo=vs.max_hop)
    offsets = L.propagate_offsets(vs.velocities)
    for p, e in enumerate(vs.velocities):
        f = np.zeros((vs.Q, *shape))
        f[(p, *site)] = 1.0
        nz = np.argwhere(_pull(L, offsets, L.pack(f)))
        assert nz.tolist() == [[p, *((s + d) % n for s, d, n in zip(site, e, shape))]], f"population {p} hop {e}"


# --- bad inputs: clear messages naming the value and the rule --------------------------------

BAD_LAYOUTS = [
    # (layout, shape, VL, halo, words the message must contain)
    ("caosoa", (LX, 96), 6, 3, ["VL=6", "power of two"]),
    ("csoa", (LX, 100), 8, 3, ["VL=8", "LY=100", "divide"]),
    ("caosoa", (LX, 64), 32, 3, ["64/32", "2", "LY/VL >= 3"]),
    ("csoa", (0, 64), 8, 3, ["LX=0", "LX must be an integer >= 1"]),
    ("aos", (-2, 64), None, 3, ["LX=-2", ">= 1"]),
    ("aosoa", (LX, 64), 8, 3, ["'aosoa'", "unknown layout", "caosoa"]),
    ("aos", (LX, 64), 4, 3, ["aos", "VL=4", "takes no VL"]),
    ("soa", (LX, 64), 8, 3, ["soa", "VL=8", "takes no VL"]),
    ("csoa", (LX, 64), 0, 3, ["VL=0", "power of two"]),
    ("aos", (4, 4, 4), 2, 1, ["VL=2", "takes no VL"]),
    ("caosoa", (4, 4, 12), 8, 1, ["VL=8", "does not divide LZ=12"]),
    ("csoa", (4, 4, 16), 8, 3, ["LZ/VL = 16/8 = 2", "too small for the 3-wide halo"]),
    ("caosoa", (4, 4, 8), 3, 1, ["VL=3", "not a power of two"]),
    ("soa", (4, 0, 4), None, 1, ["LY=0", "LY must be an integer >= 1"]),
    ("soa", (4, 4, True), None, 1, ["LZ=True"]),
    ("hex", (4, 4, 4), None, 1, ["'hex'", "unknown layout"]),
    ("csoa", (4, 4, 8), None, 1, ["needs a cluster length", "LZ=8"]),
    ("soa", (4,), None, 1, ["shape=(4,)", "(LX, LY) or (LX, LY, LZ)"]),
    ("soa", (4, 4, 4, 4), None, 1, ["shape=(4, 4, 4, 4)", "(LX, LY) or (LX, LY, LZ)"]),
    ("soa", 64, None, 1, ["shape=64", "(LX, LY)"]),
]


@pytest.mark.parametrize("name, shape, vl, h, words", BAD_LAYOUTS,
                         ids=[f"{b[0]}-{b[1]}-vl{b[2]}" for b in BAD_LAYOUTS])
def test_make_layout_rejects_bad_input_naming_value_and_rule(name, shape, vl, h, words):
    with pytest.raises(LayoutError) as info:
        make_layout(name, 19, shape, vl, halo=h)
    for w in words:
        assert w in str(info.value), f"{w!r} not in {info.value}"


def test_every_layout_is_made_in_both_dimensions():
    for shape in [(2, 4), (2, 2, 4)]:
        made = {make_layout(n, 19, shape, 2 if n in ("csoa", "caosoa") else None, halo=1) for n in LAYOUTS}
        assert {L.name for L in made} == set(LAYOUTS) and {L.D for L in made} == {len(shape)}


def test_halo_y_16_soa_is_the_production_codes_layout():
    """--halo-y 16 with SoA: element (p, x, y) at p*NX*NY + (x + 3)*NY + y + 16, NX = LX + 6,
    NY = LY + 32 (the production D2Q37 code's HX = 3, HY = 16 indexing)."""
    L = make_layout("soa", 37, (LX, LY), None, halo=3, halo_y=16)
    NX, NY = LX + 6, LY + 32
    p, x, y = np.meshgrid(np.arange(37), np.arange(LX), np.arange(LY), indexing="ij")
    np.testing.assert_array_equal(L.site_index(p, x, y), p * NX * NY + (x + 3) * NY + y + 16)
    assert L.size == 37 * NX * NY and L.HY == 16


@pytest.mark.parametrize("bad", [2, 0, -16, 1025, 2.5, True, "16"])
def test_halo_y_outside_the_rule_is_refused_before_any_code(bad):
    with pytest.raises(SpecError):
        KernelSpec(layout="soa", halo_y=bad).validate()
    with pytest.raises(LayoutError):
        make_layout("soa", 37, (LX, LY), None, halo=3, halo_y=bad)


def test_halo_y_in_3d_is_refused_unless_it_is_the_halo():
    with pytest.raises(LayoutError, match=r"halo_y=16 is not allowed on a 3D lattice.*Z keeps the 1-row halo"):
        make_layout("soa", 19, (4, 4, 4), None, halo=1, halo_y=16)
    assert make_layout("soa", 19, (4, 4, 4), None, halo=1, halo_y=1) == make_layout("soa", 19, (4, 4, 4), halo=1)


@pytest.mark.parametrize("backend", ["opencl", "cuda"])
def test_halo_y_is_refused_on_the_gpu_backends(backend):
    with pytest.raises(SpecError):
        KernelSpec(backend=backend, layout="soa", halo_y=16).validate()
    assert KernelSpec(backend="c", layout="soa", halo_y=3).validate().halo_y is None   # the default, spelled out
