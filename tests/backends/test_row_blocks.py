"""The 2D C sweeps share out (column, block of rows) pairs: a region narrower than the thread
count (the 3-column border strip of an overlapped MPI code) still keeps every thread busy,
with the bits of one thread.

Observed in a test build (-DLBGEN_THREAD_TRACE): each (column, row block) item sets the bit
of the thread that ran it; lbgen_thread_trace(reset) returns the mask.
"""
from __future__ import annotations

import numpy as np
import pytest
from cffi import FFI

from wall_support import FORCE, T_BOTTOM, T_TOP
from lbgen.backends import c
from lbgen.backends.c import default_flags
from lbgen.codegen.render import generate
from lbgen.codegen.spec import KernelSpec
from lbgen.reference import bulk as ref

LX, LY = 12, 48
THREADS = 4
STRIP = (0, 3, 0, LY)          # a border strip: 3 columns
PARAMS = dict(C1=0.2, C2=0.1, C3=0.5, ax=FORCE[0], ay=FORCE[1])
LAYOUTS = [("aos", None), ("soa", None), ("caosoa", 8), ("csoa", 4)]


class _Walls:
    T_bottom, T_top, adiabatic_bottom, adiabatic_top, tau_wall = T_BOTTOM, T_TOP, False, True, 0.8


def _state():
    rng = np.random.default_rng(7)
    shape = (LX, LY)
    f = ref.equilibrium(1 + 0.05 * rng.uniform(-1, 1, shape), 0.05 * rng.uniform(-1, 1, shape),
                        0.05 * rng.uniform(-1, 1, shape), 1 + 0.05 * rng.uniform(-1, 1, shape))
    return f * (1.0 + 1e-3 * rng.standard_normal(f.shape))


def _traced(layout, vl):
    spec = KernelSpec(layout=layout, vl=vl, collision="regularized", walls=True)
    prog = c.compile(generate(spec), LX, LY, flags=default_flags() + ("-DLBGEN_THREAD_TRACE",), threads=THREADS)
    ffi = FFI()
    ffi.cdef("unsigned long long lbgen_thread_trace(int reset);")
    return prog, ffi.dlopen(str(prog.library_path))


def _sweeps(prog, f0, region):
    """The region's results of propagate, collide, fused and fused_walls (whole buffers)."""
    out = []
    for name in ("propagate", "collide", "fused", "fused_walls"):
        a, b = prog.pack(f0), prog.pack(f0)
        prog.halo(a)
        if name == "propagate":
            prog.propagate(a, b, region=region)
        elif name == "collide":
            prog.collide(a, b, region=region, tau_wall=0.8, **PARAMS)
        elif name == "fused":
            prog.fused(a, b, region=region, tau_wall=0.8, **PARAMS)
        else:
            prog.fused_walls(a, b, T_BOTTOM, T_TOP, (False, True), region=region, tau_wall=0.8, **PARAMS)
        out.append(prog.download(b))
    return out


@pytest.mark.parametrize("layout,vl", LAYOUTS, ids=[f"{a}-vl{v}" for a, v in LAYOUTS])
def test_a_three_column_strip_uses_more_than_three_threads_with_the_bits_of_one(layout, vl):
    prog, trace = _traced(layout, vl)
    f0 = _state()
    set_threads = prog._fn("set_threads")
    assert set_threads(1) == 1
    want = _sweeps(prog, f0, STRIP)
    assert set_threads(THREADS) == THREADS
    trace.lbgen_thread_trace(1)
    got = _sweeps(prog, f0, STRIP)
    mask = trace.lbgen_thread_trace(1)
    for name, w, g in zip(("propagate", "collide", "fused", "fused_walls"), want, got):
        assert np.array_equal(w, g), f"{layout}: {name} differs between 1 and {THREADS} threads"
    assert bin(mask).count("1") > 3, f"{layout}: threads {bin(mask)} did the strip's work"
    # each sweep alone spreads the strip over every thread
    a, b = prog.pack(f0), prog.allocate()
    prog.halo(a)
    trace.lbgen_thread_trace(1)
    prog.fused(a, b, region=STRIP, **PARAMS)
    assert bin(trace.lbgen_thread_trace(1)).count("1") == THREADS


@pytest.mark.parametrize("layout,vl", [("caosoa", 8), ("soa", None)], ids=["caosoa-vl8", "soa"])
def test_whole_lattice_steps_have_the_bits_of_one_thread(layout, vl):
    """A wide region (the whole lattice: columns alone feed the threads) and a run of walled
    steps: the same bits at 1 and 4 threads."""
    prog, trace = _traced(layout, vl)
    f0 = _state()
    out = []
    for n in (1, THREADS):
        prog._fn("set_threads")(n)
        f, g = prog.pack(f0), prog.allocate()
        for _ in range(3):
            prog.halo(f)
            f, g = prog.step(f, g, PARAMS, _Walls)
        out.append(prog.download(f))
        out.extend(_sweeps(prog, f0, None))
    half = len(out) // 2
    for w, g in zip(out[:half], out[half:]):
        assert np.array_equal(w, g)
