"""What reading a lattice back costs in memory (issue 38 item 4: no full-lattice copies a run
does not need).  Measured with tracemalloc (numpy reports its buffers to it): unpacking a
buffer holds the result and two index arrays of one population (8 B a cell each) while it runs
and keeps nothing after; ``fields()`` of a one-region lattice holds its D + 2 float64 arrays,
not a second copy.  Until issue 38's audit the layout cached an index of every population
(8 Q B a cell: 152 for D3Q19, kept for the run's life: more than a 16-bit in-place run's
populations) its halo refresh's index pairs (16 B a halo element, 15 B a cell at 128^3 D3Q19) after the first
``pack``, and ``fields()`` copied each region's arrays into a second set."""
import gc
import tracemalloc

import numpy as np

import lbgen
from lbgen.codegen.layouts import make_layout


def _traced(call):
    """(result, peak bytes during the call above the start, bytes kept after it beyond the result)."""
    gc.collect()
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        result = call()
        now, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return result, peak - start, now - start


def test_unpack_and_pack_hold_one_population_index_and_keep_none():
    shape = (16, 12, 32)
    cells = int(np.prod(shape))
    for name, vl in (("soa", None), ("caosoa", 8), ("aos", None)):
        f = np.random.default_rng(1).random((19, *shape)).astype(np.float32)
        buf = make_layout(name, 19, shape, vl, halo=1).pack(f)
        layout = make_layout(name, 19, shape, vl, halo=1)         # a fresh one: nothing cached yet
        for _ in range(2):          # a second call: nothing cached by the first one stays
            out, peak, kept = _traced(lambda: layout.unpack(buf))
            assert np.array_equal(out, f)
            assert peak - out.nbytes <= 20 * cells, (name, peak / cells)
            assert kept - out.nbytes <= 2 * cells, (name, kept / cells)
        again, peak, kept = _traced(lambda: layout.pack(f))
        halo = (again.size - f.size) * (16 + again.itemsize)   # the periodic halo refresh: its index pairs, copies
        assert np.array_equal(again, buf) and peak - again.nbytes <= 20 * cells + halo, (name, peak / cells)
        assert kept - again.nbytes <= 2 * cells


def test_fields_of_one_region_are_one_set_of_arrays():
    shape = (16, 12, 16)
    cells = int(np.prod(shape))
    sim = lbgen.Simulation(*shape, velocity_set="d3q19", tau=0.8)
    sim.set_fields(1.0, u=(0.01, 0.0, 0.0))
    sim.step(1)
    fields, peak, kept = _traced(sim.fields)
    size = sum(v.nbytes for v in fields.values())
    assert size == 5 * 8 * cells and set(fields) == {"rho", "ux", "uy", "uz", "T"}
    assert np.allclose(fields["ux"], 0.01) and np.allclose(fields["rho"], 1.0)
    assert peak - size <= 2 * cells and kept - size <= 2 * cells, (peak / cells, kept / cells)
