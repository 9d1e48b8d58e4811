"""Per-side wall switches of the kernels (C: `<prefix>_params.wall_bottom / .wall_top`; OpenCL and
CUDA: the int arguments wall_bottom, wall_top of collide, fused, bc, fused_walls): a lattice split in Y
holds the bottom wall only on its lowest part and the top wall only on its highest.

Two halves of a walled lattice, the lower with sides (True, False), the upper with
(False, True), whose Y halo rows are filled from the other half each step (as ranks trade
them), give the bits of the whole lattice with both walls: with fused_walls and with the
three sweeps propagate, bc, collide, on plain and clustered layouts, in strict builds, on C,
OpenCL and the CUDA host shim.
fused_tb with a side switched off equals single periodic steps on that side.
"""
from __future__ import annotations

import numpy as np
import pytest

from wall_support import FORCE, T_BOTTOM, T_TOP, strict_walled_programs, wall_state  # noqa: F401

LX, LY = 4, 24
HALF = LY // 2
STEPS = 5
PARAMS = dict(C1=0.2, C2=0.1, C3=0.5, ax=FORCE[0], ay=FORCE[1])
ADIABATIC = (False, True)
CASES = [("c", "aos", 1), ("c", "soa", 1), ("c", "caosoa", 2), ("c", "csoa", 4),
         ("opencl", "aos", 1), ("opencl", "caosoa", 2), ("cuda", "soa", 1), ("cuda", "csoa", 4)]


class _Walls:
    T_bottom, T_top, adiabatic_bottom, adiabatic_top = T_BOTTOM, T_TOP, *ADIABATIC


@pytest.fixture(scope="module")
def programs():
    """programs(layout, vl, backend='c'): the strict walled programs of LX x LY and LX x HALF
    (the session's cache)."""
    return lambda layout, vl, backend="c": strict_walled_programs(backend, layout, vl, LX, LY, HALF)


def fill_y_halo_from(prog, buf, other):
    """Y halo elements of buf whose row y = r + k*NR lies outside 0..LY-1 (the halo rows of the
    lowest and highest lane) from `other`'s rows (the periodic neighbour part, same height),
    in every padded column; the rest of the halo periodically from buf itself."""
    lay = prog.layout
    prog.halo(buf)
    host, other = prog.download(buf), prog.download(other)
    H, NR = lay.halo, lay.NR
    p = np.arange(lay.Q)[:, None, None]
    x = np.arange(-H, LX + H)[None, :, None]
    for r, k in [(r, 0) for r in range(-H, 0)] + [(r, lay.VL - 1) for r in range(NR, NR + H)]:
        y = r + k * NR                                  # -H..-1 or LY..LY+H-1 of this part
        host[lay.index(p, x, r, k)] = other[lay.site_index(p, x % LX, np.full_like(x, y % lay.LY))]
    prog.upload(host, buf)


@pytest.mark.parametrize("fused", [True, False], ids=["fused_walls", "three-sweeps"])
@pytest.mark.parametrize("backend,layout,vl", CASES, ids=[f"{b}-{a}-vl{v}" for b, a, v in CASES])
def test_two_halves_with_one_wall_each_give_the_whole_lattice(programs, wall_state, backend, layout, vl, fused):  # noqa: F811
    whole, half = programs(layout, vl, backend)
    f, g = whole.pack(wall_state), whole.allocate()
    lo, lo2 = half.pack(wall_state[:, :, :HALF]), half.allocate()
    hi, hi2 = half.pack(wall_state[:, :, HALF:]), half.allocate()
    for _ in range(STEPS):
        whole.halo(f)
        f, g = whole.step(f, g, PARAMS, _Walls, fused=fused)
        fill_y_halo_from(half, lo, hi)
        fill_y_halo_from(half, hi, lo)
        lo, lo2 = half.step(lo, lo2, PARAMS, _Walls, fused=fused, sides=(True, False))
        hi, hi2 = half.step(hi, hi2, PARAMS, _Walls, fused=fused, sides=(False, True))
    want = whole.unpack(f)
    got = np.concatenate([half.unpack(lo), half.unpack(hi)], axis=2)
    assert np.all(np.isfinite(want))
    diff = np.argwhere(got != want)
    assert diff.size == 0, f"{backend}-{layout}-vl{vl}: {len(diff)} values differ, first (p, x, y) {diff[0]}"
    # and the switch matters: the lower half stepped with both walls differs at its top rows
    out = []
    for sides in ((True, True), (True, False)):
        s0 = half.pack(wall_state[:, :, :HALF])
        half.halo(s0)
        out.append(half.unpack(half.step(s0, half.allocate(), PARAMS, _Walls, fused=fused, sides=sides)[0]))
    a, b = out
    rows = np.unique(np.argwhere(a != b)[:, 2])
    assert rows.size and rows.min() >= HALF - 3, f"sides=(True, False) changed rows {rows}, not only the top wall's"


@pytest.mark.parametrize("backend,layout,vl", CASES, ids=[f"{b}-{a}-vl{v}" for b, a, v in CASES])
def test_fused_without_bc_honours_the_sides_too(programs, wall_state, backend, layout, vl):  # noqa: F811
    """fused (propagate + collide, no bc) relaxes only the rows next to the walls held: two halves
    stepped with it, each holding one wall, give the bits of the whole lattice holding both."""
    whole, half = programs(layout, vl, backend)
    f, g = whole.pack(wall_state), whole.allocate()
    lo, lo2 = half.pack(wall_state[:, :, :HALF]), half.allocate()
    hi, hi2 = half.pack(wall_state[:, :, HALF:]), half.allocate()
    for _ in range(STEPS):
        whole.halo(f)
        whole.fused(f, g, **PARAMS)
        f, g = g, f
        fill_y_halo_from(half, lo, hi)
        fill_y_halo_from(half, hi, lo)
        half.fused(lo, lo2, sides=(True, False), **PARAMS)
        half.fused(hi, hi2, sides=(False, True), **PARAMS)
        lo, lo2, hi, hi2 = lo2, lo, hi2, hi
    want = whole.unpack(f)
    got = np.concatenate([half.unpack(lo), half.unpack(hi)], axis=2)
    assert np.all(np.isfinite(want))
    diff = np.argwhere(got != want)
    assert diff.size == 0, f"{backend}-{layout}-vl{vl}: {len(diff)} values differ, first (p, x, y) {diff[0]}"


@pytest.mark.parametrize("sides", [(False, False), (True, False), (False, True)])
def test_fused_tb_with_a_side_off_is_periodic_there(programs, wall_state, sides):  # noqa: F811
    prog, _ = programs("caosoa", 2)
    f, g = prog.pack(wall_state), prog.allocate()
    for _ in range(3):
        prog.halo(f)
        f, g = prog.step(f, g, PARAMS, _Walls, sides=sides)
    a, b = prog.pack(wall_state), prog.allocate()
    prog.halo(a)
    prog.fused_tb(a, b, 3, walls=_Walls, sides=sides, **PARAMS)
    assert np.array_equal(prog.unpack(b), prog.unpack(f))


@pytest.mark.parametrize("backend", ["c", "opencl", "cuda"])
def test_sides_must_be_two_booleans(programs, backend):
    prog, _ = programs("aos", 1, backend)
    a, b = prog.allocate(), prog.allocate()
    for bad in ((1, 0), (True,), "both", None):
        with pytest.raises(ValueError, match="sides"):
            prog.bc(a, b, sides=bad)


def test_simulation_wall_sides_reach_the_kernels(programs, wall_state):  # noqa: F811
    """Simulation.wall_sides (the hook a Y-split runner sets per rank) is what its steps pass."""
    from lbgen.simulation.runner import Simulation, Walls
    prog, _ = programs("caosoa", 2)
    walls = Walls(T_bottom=T_BOTTOM, T_top=T_TOP, adiabatic_top=True)
    sim = Simulation(LX, LY, collision="regularized", C1=0.2, C2=0.1, C3=0.5, walls=walls, layout="caosoa", vl=2,
                     strict=True, threads=2, check_every=0)
    sim.wall_sides = (True, False)
    sim.restore(wall_state, 0)
    sim.step(2)
    f, g = prog.pack(wall_state), prog.allocate()
    params = dict(C1=0.2, C2=0.1, C3=0.5, ax=0.0, ay=0.0)
    for _ in range(2):
        prog.halo(f)
        f, g = prog.step(f, g, params, walls, sides=(True, False))
    assert np.array_equal(sim.populations(), prog.unpack(f))
