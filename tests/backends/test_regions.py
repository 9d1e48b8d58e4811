"""Region arguments of the sweep kernels (C: `<prefix>_region`; OpenCL and CUDA: the int
arguments x0, x1, y0, y1 after the sizes; interior x0..x1-1, y0..y1-1).

The production code's step, bulk first (while the halo exchange would be in flight), then the
border strips, gives the bits of one whole-lattice sweep: with fused_walls and with the three
sweeps propagate, bc, collide, on plain and clustered layouts (strips that cut cluster rows
into part lanes), strict builds, on C, OpenCL and the CUDA host shim.  A region writes its sites and no other.  A region outside
the lattice is refused by the runtime before any kernel runs.
"""
from __future__ import annotations

import numpy as np
import pytest

from wall_support import FORCE, T_BOTTOM, T_TOP, strict_walled_programs, wall_state  # noqa: F401

LX, LY = 12, 24
PARAMS = dict(C1=0.2, C2=0.1, C3=0.5, ax=FORCE[0], ay=FORCE[1])
WALLS = dict(T_bottom=T_BOTTOM, T_top=T_TOP, adiabatic=(False, True))
CASES = [("c", "aos", None), ("c", "soa", None), ("c", "caosoa", 2), ("c", "csoa", 4),
         ("opencl", "aos", None), ("opencl", "caosoa", 2), ("opencl", "csoa", 4),
         ("cuda", "soa", None), ("cuda", "caosoa", 2)]
H = 3
#: bulk, then the four border strips (left, right, bottom, top) of the production code's step
PIECES = [(H, LX - H, H, LY - H), (0, H, 0, LY), (LX - H, LX, 0, LY), (H, LX - H, 0, H), (H, LX - H, LY - H, LY)]


@pytest.fixture(scope="module")
def programs():
    """programs(layout, vl, backend='c'): the strict walled program (the session's cache)."""
    return lambda layout, vl, backend="c": strict_walled_programs(backend, layout, vl, LX, LY)[0]


def _state(prog, wall_state):  # noqa: F811
    state = np.concatenate([wall_state] * (LX // wall_state.shape[1]), axis=1)   # wall_state is 4 columns wide
    f = prog.pack(state)
    prog.halo(f)
    return f


def _nan_buffer(prog):
    return prog.upload(np.full(prog.layout.size, np.nan))


def _sweep(prog, f, regions, fused):
    g = _nan_buffer(prog)
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
@pytest.mark.parametrize("backend,layout,vl", CASES, ids=[f"{b}-{a}-vl{v}" for b, a, v in CASES])
def test_bulk_then_borders_gives_the_whole_sweep(programs, wall_state, backend, layout, vl, fused):  # noqa: F811
    prog = programs(layout, vl, backend)
    f = _state(prog, wall_state)
    want = prog.unpack(_sweep(prog, f, [None], fused))
    got = prog.unpack(_sweep(prog, f, PIECES, fused))
    assert np.all(np.isfinite(want))
    diff = np.argwhere(got != want)
    assert diff.size == 0, f"{backend}-{layout}: {len(diff)} values differ, first (p, x, y) {diff[0]}"


@pytest.mark.parametrize("kernel", ["propagate", "fused", "fused_walls", "collide"])
@pytest.mark.parametrize("backend,layout,vl", [("c", "soa", None), ("c", "caosoa", 2), ("opencl", "caosoa", 2),
                                              ("opencl", "csoa", 4), ("cuda", "caosoa", 2)],
                         ids=["c-soa", "c-caosoa-vl2", "opencl-caosoa-vl2", "opencl-csoa-vl4", "cuda-caosoa-vl2"])
def test_a_region_writes_its_sites_and_no_other(programs, wall_state, backend, layout, vl, kernel):  # noqa: F811
    prog = programs(layout, vl, backend)
    f = _state(prog, wall_state)
    region = (2, 7, 1, 14)          # cuts cluster rows of the clustered layout into part lanes
    g = _nan_buffer(prog)
    if kernel == "propagate":
        prog.propagate(f, g, region=region)
    elif kernel == "fused_walls":
        prog.fused_walls(f, g, **WALLS, region=region, **PARAMS)
    elif kernel == "collide":
        prog.collide(f, g, region=region, **PARAMS)
    else:
        prog.fused(f, g, region=region, **PARAMS)
    out = prog.unpack(g)
    inside = np.zeros((LX, LY), bool)
    inside[2:7, 1:14] = True
    assert np.all(np.isfinite(out[:, inside])) and np.all(np.isnan(out[:, ~inside]))


@pytest.mark.parametrize("bad", [(0, LX + 1, 0, LY), (3, 2, 0, LY), (0, LX, -1, LY), (0, LX, 0), (0.0, LX, 0, LY)])
@pytest.mark.parametrize("backend", ["c", "opencl", "cuda"])
def test_a_region_outside_the_lattice_is_refused_before_any_kernel_runs(programs, bad, backend):
    prog = programs("soa", None, backend)
    a, b = prog.allocate(), _nan_buffer(prog)
    before = dict(prog.calls)
    with pytest.raises(ValueError, match="region"):
        prog.fused(a, b, region=bad, **PARAMS)
    assert dict(prog.calls) == before
    assert np.all(np.isnan(prog.download(b)))             # no kernel wrote the output


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


@pytest.mark.parametrize("backend,layout,vl", [("opencl", "soa", None), ("opencl", "caosoa", 2),
                                              ("cuda", "csoa", 4)], ids=["opencl-soa", "opencl-caosoa-vl2", "cuda-csoa-vl4"])
def test_a_gpu_sweep_launches_the_region_slots_only(programs, backend, layout, vl):
    """The work-items of a GPU sweep: its columns times the storage slots s = r*VL + k from the
    lowest to the highest of its rows, for every row range (counted from the layout here), and
    what the runtime launches for a border strip."""
    prog = programs(layout, vl, backend)
    NR, VL = prog.layout.NR, prog.layout.VL
    for y0 in range(LY):
        for y1 in range(y0 + 1, LY + 1):
            slots = [(y % NR) * VL + y // NR for y in range(y0, y1)]
            assert prog._region_items((2, 5, y0, y1)) == 3 * (max(slots) - min(slots) + 1), (y0, y1)
    assert prog._region_items((0, LX, 0, LY)) == LX * LY and prog._region_items((0, LX, 4, 4)) == 0
    launched = []
    real_launch = prog._launch
    prog._launch = lambda name, *args: launched.append((name, args[0] if backend == "opencl" else args[:2]))
    try:
        f, g = prog.allocate(), prog.allocate()
        prog.propagate(f, g, region=(H, LX - H, 0, H))
        prog.propagate(f, g, region=(0, LX, 5, 5))                      # empty: nothing launched
    finally:
        prog._launch = real_launch
    n = prog._region_items((H, LX - H, 0, H))
    assert n < LX * LY // 2
    if backend == "opencl":
        assert launched == [("propagate", prog._ranges(n))]
    else:
        assert launched == [("propagate", ((n + prog.block - 1) // prog.block, prog.block))]
