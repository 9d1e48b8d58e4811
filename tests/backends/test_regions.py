"""Region arguments of the C sweep kernels (`<prefix>_region`: interior x0..x1-1, y0..y1-1).

The production code's step, bulk first (while the halo exchange would be in flight), then the
border strips, gives the bits of one whole-lattice sweep: with fused_walls and with the three
sweeps propagate, bc, collide, on plain and clustered layouts (strips that cut cluster rows
into part lanes), strict builds.  A region writes its sites and no other.  A region outside
the lattice is refused by the runtime before any kernel runs.
"""
from __future__ import annotations

import numpy as np
import pytest

from wall_support import FORCE, T_BOTTOM, T_TOP, wall_state  # noqa: F401

LX, LY = 12, 24
PARAMS = dict(C1=0.2, C2=0.1, C3=0.5, ax=FORCE[0], ay=FORCE[1])
WALLS = dict(T_bottom=T_BOTTOM, T_top=T_TOP, adiabatic=(False, True))
CASES = [("aos", None), ("soa", None), ("caosoa", 2), ("csoa", 4)]
H = 3
#: bulk, then the four border strips (left, right, bottom, top) of the production code's step
PIECES = [(H, LX - H, H, LY - H), (0, H, 0, LY), (LX - H, LX, 0, LY), (H, LX - H, 0, H), (H, LX - H, LY - H, LY)]


@pytest.fixture(scope="module")
def programs():
    from lbgen.backends import c
    from lbgen.codegen.render import generate
    from lbgen.codegen.spec import KernelSpec
    memo = {}

    def get(layout, vl):
        if (layout, vl) not in memo:
            spec = KernelSpec(layout=layout, vl=vl, collision="regularized", walls=True)
            memo[layout, vl] = c.compile(generate(spec), LX, LY, strict=True, threads=2)
        return memo[layout, vl]

    return get


def _state(prog, wall_state):  # noqa: F811
    state = np.concatenate([wall_state] * (LX // wall_state.shape[1]), axis=1)   # wall_state is 4 columns wide
    f = prog.upload_fields(state)
    prog.halo(f)
    return f


def _sweep(prog, f, regions, fused):
    g = prog.allocate()
    g[:] = np.nan
    if fused:
        for reg in regions:
            prog.fused_walls(f, g, **WALLS, region=reg, **PARAMS)
        return g
    for reg in regions:
        prog.propagate(f, g, region=reg)
    for reg in regions:
        prog.bc(f, g, **WALLS, ax=PARAMS["ax"], ay=PARAMS["ay"], region=reg)
    for reg in regions:
        prog.collide(g, g, region=reg, **PARAMS)
    return g


@pytest.mark.parametrize("fused", [True, False], ids=["fused_walls", "three-sweeps"])
@pytest.mark.parametrize("layout,vl", CASES, ids=[f"{a}-vl{b}" for a, b in CASES])
def test_bulk_then_borders_gives_the_whole_sweep(programs, wall_state, layout, vl, fused):  # noqa: F811
    prog = programs(layout, vl)
    f = _state(prog, wall_state)
    want = prog.download_fields(_sweep(prog, f, [None], fused))
    got = prog.download_fields(_sweep(prog, f, PIECES, fused))
    assert np.all(np.isfinite(want))
    diff = np.argwhere(got != want)
    assert diff.size == 0, f"{layout}: {len(diff)} values differ, first (p, x, y) {diff[0]}"


@pytest.mark.parametrize("kernel", ["propagate", "fused", "fused_walls", "collide"])
@pytest.mark.parametrize("layout,vl", [("soa", None), ("caosoa", 2)], ids=["soa", "caosoa-vl2"])
def test_a_region_writes_its_sites_and_no_other(programs, wall_state, layout, vl, kernel):  # noqa: F811
    prog = programs(layout, vl)
    f = _state(prog, wall_state)
    region = (2, 7, 1, 14)          # cuts cluster rows of the clustered layout into part lanes
    g = prog.allocate()
    g[:] = np.nan
    if kernel == "propagate":
        prog.propagate(f, g, region=region)
    elif kernel == "fused_walls":
        prog.fused_walls(f, g, **WALLS, region=region, **PARAMS)
    elif kernel == "collide":
        prog.collide(f, g, region=region, **PARAMS)
    else:
        prog.fused(f, g, region=region, **PARAMS)
    out = prog.download_fields(g)
    inside = np.zeros((LX, LY), bool)
    inside[2:7, 1:14] = True
    assert np.all(np.isfinite(out[:, inside])) and np.all(np.isnan(out[:, ~inside]))


@pytest.mark.parametrize("bad", [(0, LX + 1, 0, LY), (3, 2, 0, LY), (0, LX, -1, LY), (0, LX, 0), (0.0, LX, 0, LY)])
def test_a_region_outside_the_lattice_is_refused_before_any_kernel_runs(programs, bad):
    prog = programs("soa", None)
    a, b = prog.allocate(), prog.allocate()
    before = dict(prog.calls)
    with pytest.raises(ValueError):
        prog.fused(a, b, region=bad, **PARAMS)
    assert dict(prog.calls) == before


def test_each_call_passes_its_own_parameter_values(programs, wall_state):  # noqa: F811
    """The runtime reuses the parameter record while the values stay the same: a changed value
    reaches the kernel, and going back gives the first result again."""
    prog = programs("soa", None)
    f = _state(prog, wall_state)
    out = []
    for c1 in (0.2, 0.3, 0.2):
        g = prog.allocate()
        prog.fused(f, g, **dict(PARAMS, C1=c1))
        out.append(prog.download(g))
    assert not np.array_equal(out[0], out[1]) and np.array_equal(out[0], out[2])
