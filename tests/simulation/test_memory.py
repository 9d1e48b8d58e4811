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
import pytest

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


def _d3q19(shape, **kw):
    """A D3Q19 lattice at rest plus a small random flow (the test's default program: C, double, pull)."""
    rng = np.random.default_rng(4)
    sim = lbgen.Simulation(*shape, velocity_set="d3q19", tau=0.8, **kw)
    sim.set_fields(1 + 0.01 * rng.random(shape), *(0.02 * rng.standard_normal(shape) for _ in shape))
    return sim


def test_set_fields_reads_the_given_arrays_without_copies():
    """set_fields of float64 arrays of one region: the checks and the init kernel read the caller's
    arrays (before: a float64 copy for the checks, one per region, one more for the kernel: 24 B a
    cell per field, 120 B a cell of D3Q19's five)."""
    shape = (32, 24, 32)
    sim = _d3q19(shape)
    fields = [np.full(shape, 1.0), *(np.full(shape, 0.01) for _ in range(3)), np.ones(shape)]
    _, peak, kept = _traced(lambda: sim.set_fields(*fields))
    assert peak <= 4 * np.prod(shape) and kept <= np.prod(shape), peak / np.prod(shape)
    assert np.allclose(sim.fields()["ux"], 0.01)


def test_a_checkpoint_streams_the_state_one_slab_at_a_time(tmp_path):
    """A checkpoint of the state in pieces (Simulation.state_chunks -> ChunkedArray) holds one
    population's slab, not the lattice's populations (152 B a cell in double, before: the state,
    and numpy's 16 MiB write buffer beside it); the file is the whole array's, byte for byte."""
    import zipfile

    from lbgen.run.checkpoint_file import ChunkedArray, read_verified, write_checkpoint
    shape = (32, 24, 32)
    sim = _d3q19(shape)
    sim.step(2)
    whole = sim.state()
    cells = int(np.prod(shape))
    state = ChunkedArray(whole.shape, sim.dtype, lambda: sim.state_chunks(cells // 8))  # 128^3's slabs (1 << 18)
    _, peak, _ = _traced(lambda: write_checkpoint(tmp_path / "b.lbchk", state, 2, {"n": 1}))
    assert peak <= 8 * cells, peak / cells      # a slab's index and values: 16 B a cell of an eighth
    write_checkpoint(tmp_path / "a.lbchk", whole, 2, {"n": 1})
    a, b = (zipfile.ZipFile(tmp_path / n) for n in ("a.lbchk", "b.lbchk"))
    assert all(a.read(m) == b.read(m) for m in ("header.json", "populations.npy"))
    assert np.array_equal(read_verified(tmp_path / "b.lbchk")[0], whole)


def test_restore_packs_into_the_buffer_without_copies():
    """restore (a resumed run) of one region: the saved array is checked one population at a time and
    packed straight into the state buffer (before: a copy of the array, a new packed buffer and Q
    bytes of flags a cell: 350 B a cell in double D3Q19); the state is the saved one, bit for bit."""
    shape = (32, 24, 32)
    sim = _d3q19(shape)
    sim.step(3)
    saved = sim.state()
    other = _d3q19(shape)
    _, peak, kept = _traced(lambda: other.restore(saved, 3))
    cells = int(np.prod(shape))
    halo = (other.f.size - saved.size) * (16 + 8)     # the periodic halo refresh: its index pairs, copies
    assert peak <= 20 * cells + halo and kept <= cells, (peak - halo) / cells    # pack's index: 16 B a cell
    assert np.array_equal(other.state(), saved)
    other.step(2)
    sim.step(2)
    assert np.array_equal(other.state(), sim.state())


def test_in_place_16_bit_state_chunks_are_the_state_at_either_parity():
    """In place (one buffer, the AA pattern) with 16-bit storage and solid cells: the chunks of any
    slab width are state()'s bits after an odd and an even step (natural first, solids 0)."""
    shape = (6, 5, 16)
    mask = np.zeros(shape, dtype=np.uint8)
    mask[2:4, 1:3, 5:9] = 1
    sim = lbgen.Simulation(*shape, velocity_set="d3q19", layout="soa", precision="single", storage="fp16s",
                           streaming="inplace", strict=True, tau=0.7, mask=mask)
    rng = np.random.default_rng(5)
    sim.set_fields(1 + 0.01 * rng.random(shape), *(0.02 * rng.standard_normal(shape) for _ in shape))
    for steps in (3, 1):
        sim.step(steps)
        whole = sim.state()
        zero = sim.program.codec.encode(np.zeros((sim.vs.Q, 1)))       # the stored 0 of each population
        assert whole.dtype == np.float16 and np.array_equal(whole[:, mask == 1], np.broadcast_to(zero, (19, 16)))
        for cells in (1, 37, 1 << 18):
            flat = np.concatenate([c.reshape(-1) for c in sim.state_chunks(cells)])
            assert np.array_equal(flat.view(np.uint16), whole.reshape(-1).view(np.uint16)), (steps, cells)


@pytest.mark.parametrize("kind, bound, sizes", [("pull-double", 56, (24, 40)), ("inplace-fp16s-single", 10, (64, 96))])
def test_a_run_holds_the_populations_and_one_set_of_fields(tmp_path, kind, bound, sizes):
    """The whole `lbgen run` (Taylor-Green, D3Q19, C, double, pull; a field output and a checkpoint at
    the end): tracemalloc's peak per cell above the population buffers, as the slope between two
    lattices (the interpreter, libraries and kernels cancel), is little more than one field: the run's
    fields are made by slabs of X planes as the writers read them (lbgen.output.slabbed).  Single in
    place + fp16s at 64^3 / 96^3 (lattices whose fields outweigh the writers' fixed 1 MiB chunks):
    5.0 B a cell; 19.8 with the five float32 fields held (the commit before, 2026-11-28).  Before
    issue 38's cuts it was 250 (the checkpoint's copy of the state 152, the .vti writer's copies 64,
    set_fields' copies of the initial fields 120 at the start ...)."""
    extra_options = {} if kind == "pull-double" else dict(streaming="inplace", storage="fp16s", precision="single")
    from lbgen.run.config import RunConfig
    from lbgen.run.driver import Run

    def run(n, traced=True):
        cfg = RunConfig.build("taylor-green", ("test", dict(lx=n, ly=n, lz=n, velocity_set="d3q19", steps=4,
                                                            out=str(tmp_path / f"r{n}"), checkpoint_every=4,
                                                            pictures="none", time_block=1, threads=2,
                                                            **extra_options)))
        if not traced:
            Run(cfg, echo=lambda m: None).execute()
            return 0.0
        runner = {}

        def execute():
            runner["run"] = Run(cfg, echo=lambda m: None)
            runner["run"].execute()
        _, peak, _ = _traced(execute)
        buffers = sum(b.nbytes for r in runner["run"].sim.regions for b in (r.f, r.g) if b is not None)
        return peak - buffers
    run(16, traced=False)                  # imports, the compiled kernels
    small, big = sizes
    extra = (run(big) - run(small)) / (big ** 3 - small ** 3)
    assert extra <= bound, extra


def _single_fields(shape=(12, 10, 16)):
    """A single-precision D3Q19 lattice's fields: the native (float32) set and the float64 API's."""
    rng = np.random.default_rng(8)
    sim = lbgen.Simulation(*shape, velocity_set="d3q19", precision="single", storage="fp16s", streaming="inplace",
                           layout="soa", tau=0.8)
    sim.set_fields(1 + 0.01 * rng.random(shape), *(0.02 * rng.standard_normal(shape) for _ in shape))
    sim.step(3)
    return sim.fields(native=True), sim.fields()


def test_native_fields_are_the_float64_fields_at_half_the_bytes():
    """fields(native=True) of a single-precision run (C's <prefix>_fields_real): float32 arrays whose
    values, widened, are fields()' bits -- a run holds 20 B a cell of fields in 3D, not 40."""
    native, wide = _single_fields()
    assert {v.dtype for v in native.values()} == {np.dtype(np.float32)}
    for k in wide:
        assert wide[k].dtype == np.float64 and np.array_equal(native[k].astype(np.float64), wide[k]), k
        assert native[k].nbytes * 2 == wide[k].nbytes
    assert not np.array_equal(wide["ux"], wide["ux"].astype(np.float32).astype(np.float64) + 1e-12)  # can fail


def test_outputs_of_native_fields_are_the_float64_outputs_byte_for_byte(tmp_path):
    """The run's writers given the float32 fields write the files float64 fields give (npz members,
    the .vti, --save's file, HDF5 datasets), each widening one field at a time."""
    import zipfile

    from lbgen.output.fields import write_npz, write_vti
    from lbgen.output.widened import widened
    from lbgen.run.fieldfile import save_fields
    big = {k: np.random.default_rng(2).random((64, 64, 32)).astype(np.float32) for k in ("rho", "ux", "uy", "uz", "T")}
    cells = big["rho"].size
    _, peak, _ = _traced(lambda: write_npz(tmp_path / "big.npz", 7, big, 0.5))
    assert peak <= 17 * cells, peak / cells   # one field widened and numpy's write buffer of it (all five: 40+)
    native, wide = _single_fields()
    for name, fields in (("a", wide), ("b", native)):
        write_npz(tmp_path / f"{name}.npz", 7, fields, 0.5)
        write_vti(tmp_path / f"{name}.vti", fields, field_data={"step": 7})
        save_fields(tmp_path / f"{name}-save.npz", fields, steps=7, lx=12, ly=10, lz=16)
    for stem in ("", "-save"):
        a, b = (zipfile.ZipFile(tmp_path / f"{n}{stem}.npz") for n in "ab")
        assert sorted(a.namelist()) == sorted(b.namelist())
        assert all(a.read(m) == b.read(m) for m in a.namelist()), stem
    assert (tmp_path / "a.vti").read_bytes() == (tmp_path / "b.vti").read_bytes()
    view = widened(native)
    assert sorted(view) == sorted(wide) and all(np.array_equal(view[k], wide[k]) and view[k].dtype == np.float64
                                                 for k in wide)


def test_the_memory_estimate_follows_what_a_run_holds():
    """run_memory_estimate (checked before any work): the buffers with their halos (the clustered
    last axis padded by a cluster row a side) and, in 3D, an eighth of the fields in the arithmetic
    precision (made by slabs as the writers read them, the .vti's by eighths of the Z planes) and a
    slab's staging lattice -- no gathered states since the checkpoints and the set-up stream their
    slabs.  benchmarks/storage_memory.py at 128^3 D3Q19 (whole process, docs/performance-history.md,
    2026-11-28 ~11:45): in place + fp16s, single 46.5 B a cell, pull double 363.0; the estimate is above
    each and within 15 % of it (the five fields held: 63.7 and 392.6; before: 94 and 403 with float64
    fields counted, 212 and 571 with two gathered states and a dozen float64 fields)."""
    from lbgen.system.limits import field_bytes, run_memory_estimate
    cells = 128 ** 3
    for measured, itemsize, buffers, real in ((46.5, 2, 1, 4), (363.0, 8, 2, 8)):
        estimate = run_memory_estimate((128,) * 3, 19, itemsize, halo=1, buffers=buffers, real=real) / cells
        assert measured <= estimate <= 1.15 * measured, (measured, estimate)
    assert field_bytes(3) == 40 and field_bytes(2) == 32 and field_bytes(3, 4) == 20
    from lbgen.run.config import RunConfig
    from lbgen.run.driver import check_run_memory        # the run's own: its precision's fields
    est = {p: check_run_memory(RunConfig.build("shear-wave", ("test", dict(lx=40, ly=40, lz=40, velocity_set="d3q19",
                                                                           precision=p, storage="fp16s"))))
           for p in ("single", "double")}
    assert est["double"] - est["single"] == (40 - 20) * 40 ** 3 // 8
    # a run whose fields are held whole (here the thermal walls across x: no staging lattice of a few X
    # planes takes them, lbgen.simulation.slabs) counts them whole, as in 2D
    walls = {a: check_run_memory(RunConfig.build("rayleigh-benard", ("test", dict(
        lx=40, ly=16, lz=40, velocity_set="d3q39", walls=True, **({"wall_axis": a} if a else {})))))
        for a in (None, "x")}
    from lbgen.system.limits import population_bytes
    shape, fields = (40, 16, 40), field_bytes(3) * 40 * 16 * 40
    buffers = population_bytes(shape, 39, 8, halo=3, buffers=2)
    assert walls["x"] == buffers + fields + fields // 4          # the five fields whole, and the writers' quarter
    assert walls[None] == run_memory_estimate(shape, 39, 8, halo=3, buffers=2) != walls["x"]
    plain = run_memory_estimate((100, 60), 9, 8, halo=1, buffers=2, lanes=1)
    assert plain == 9 * 102 * 62 * 2 * 8 + 32 * 6000 + 8 * 6000


def _setup_extra(tmp_path, n, **options):
    """tracemalloc's peak of a run's set-up (``Run(cfg)``: the initial fields, the populations set
    from them, the colour limits) above its population buffers, for an n^3 Taylor-Green D3Q19 run."""
    from lbgen.run.config import RunConfig
    from lbgen.run.driver import Run
    cfg = RunConfig.build("taylor-green", ("test", dict(lx=n, ly=n, lz=n, velocity_set="d3q19", steps=2,
                                                        out=str(tmp_path / f"s{n}"), pictures="none", threads=2,
                                                        **options)))
    held = {}
    _, peak, _ = _traced(lambda: held.setdefault("run", Run(cfg, echo=lambda m: None, overwrite=True)))
    run = held["run"]
    run.close()
    return peak - sum(b.nbytes for r in run.sim.regions for b in (r.f, r.g) if b is not None)


def test_a_run_sets_up_by_slabs_without_the_lattice_fields(tmp_path):
    """The set-up of a Taylor-Green run (in place + fp16s, single): its fields are evaluated, checked
    and set one slab of X planes at a time (``Simulation.set_fields_by_slabs``, a staging lattice of the
    slab), and the colour limits read the slabs' extremes: the peak above the buffer, as the slope between
    32^3 and 48^3, is a slab's share (a sixteenth of the lattice: its staging buffer with two halo planes,
    its fields and the set-up's temporaries): 14.0 B a cell.  The commit before: 56.8 (the five float64
    initial fields, 40, and the colour limits' speed temporaries), 2026-11-28."""
    options = dict(streaming="inplace", storage="fp16s", precision="single")
    _setup_extra(tmp_path, 16, **options)              # imports, the compiled kernels
    small, big = _setup_extra(tmp_path, 32, **options), _setup_extra(tmp_path, 48, **options)
    extra = (big - small) / (48 ** 3 - 32 ** 3)
    assert extra <= 24, extra


@pytest.mark.parametrize("layout, vl, options", [
    ("caosoa", 8, dict(precision="single", storage="fp16s", streaming="inplace")),
    ("soa", None, {}), ("aos", None, dict(precision="single")), ("csoa", 4, {})])
def test_set_fields_by_slabs_is_set_fields_bit_for_bit(layout, vl, options):
    """set_fields_by_slabs (slabs of 1 to 5 planes, a short last one joined to the one before) gives
    the buffer set_fields of the whole arrays gives: every element, halos included, and so every step after."""
    from lbgen.run.setups import SETUPS
    shape = (13, 6, 16)

    def slab(x0, x1):
        return SETUPS["taylor-green"].fields(13, 6, lz=16, x_range=(x0, x1))
    whole = SETUPS["taylor-green"].fields(13, 6, lz=16)
    assert all(np.array_equal(np.concatenate([slab(0, 5)[k], slab(5, 13)[k]]), whole[k]) for k in whole)
    a, b = (lbgen.Simulation(*shape, velocity_set="d3q19", layout=layout, vl=vl, tau=0.8, **options) for _ in "ab")
    a.set_fields(**whole)
    for cells in (6 * 16 * 5, 6 * 16):
        b.set_fields_by_slabs(slab, cells=cells)
        assert np.array_equal(a.f.view(np.uint8), b.f.view(np.uint8)), cells
    a.step(3)
    b.step(3)
    assert np.array_equal(a.f.view(np.uint8), b.f.view(np.uint8))


def test_set_fields_by_slabs_refuses_bad_fields_before_any_work():
    """A slab's bad value is refused before the buffer changes, naming the lattice's site."""
    sim = _d3q19((8, 4, 8))
    before = sim.f.copy()

    def slab(x0, x1):
        rho = np.ones((x1 - x0, 4, 8))
        if x0 <= 6 < x1:
            rho[6 - x0, 1, 2] = -1.0
        return {"rho": rho, "ux": np.zeros_like(rho), "uy": np.zeros_like(rho), "uz": np.zeros_like(rho),
                "T": np.ones_like(rho)}
    from lbgen.simulation.parameters import SimulationError
    with pytest.raises(SimulationError, match=r"site \(x=6, y=1, z=2\)"):
        sim.set_fields_by_slabs(slab, cells=4 * 8 * 3)
    assert np.array_equal(sim.f, before)


def test_slab_extremes_and_the_widened_sum_are_the_whole_arrays():
    """The colour limits' extremes of slabs are the whole fields' (exact reductions), and
    widened_sum (the report's total mass) is NumPy's sum of the float64 copy, bit for bit."""
    from lbgen.output.limits import Extremes, colour_limits
    from lbgen.output.widened import widened_sum
    from lbgen.run.setups import SETUPS
    whole = SETUPS["taylor-green"].fields(20, 12, lz=8)
    slabs = (SETUPS["taylor-green"].fields(20, 12, lz=8, x_range=(x0, min(x0 + 3, 20))) for x0 in range(0, 20, 3))
    e = Extremes.of_slabs(slabs, 20)
    assert e == Extremes.of(whole)
    assert colour_limits(["T", "rho", "speed", "ux", "vorticity"], e) == \
        colour_limits(["T", "rho", "speed", "ux", "vorticity"], whole)
    rng = np.random.default_rng(3)
    for shape in ((128, 64, 32), (100, 37, 41), (7,), ((1 << 15) + 3,), (33333, 7)):
        a = (1 + 0.01 * rng.standard_normal(shape)).astype(np.float32)
        assert widened_sum(a) == float(a.astype(np.float64).sum()), shape


def test_an_h5_file_of_float32_fields_widens_a_slab_at_a_time(tmp_path):
    """write_h5 of float32 fields (a single-precision run's) writes each float64 dataset a slab of X
    planes at a time (H5_SLAB values): the file is the one the float64 fields give, byte for byte, and
    the write holds a slab, not a field's float64 copy (8 B a cell before, 2026-11-28)."""
    from lbgen.output.fields import H5_SLAB, write_h5
    rng = np.random.default_rng(6)
    shape = (192, 64, 40)                                 # 2560 sites a plane: slabs of 51 planes
    narrow = {k: rng.random(shape).astype(np.float32) for k in ("rho", "ux", "uy", "uz", "T")}
    wide = {k: v.astype(np.float64) for k, v in narrow.items()}
    write_h5(tmp_path / "c.h5", 3, {k: v[:2] for k, v in narrow.items()}, 1.5)      # h5py's imports
    _, peak, _ = _traced(lambda: write_h5(tmp_path / "b.h5", 3, narrow, 1.5, attrs={"nu": 0.1}))
    write_h5(tmp_path / "a.h5", 3, wide, 1.5, attrs={"nu": 0.1})
    assert (tmp_path / "a.h5").read_bytes() == (tmp_path / "b.h5").read_bytes()
    assert peak <= 8 * H5_SLAB + (1 << 18) < 4 * narrow["rho"].size, peak     # measured 2.2 B a cell; before 8.0


def _slabbed(sim, cells, native=True):
    """The lattice's fields made by slabs of ``cells`` sites (a run's outputs read them so)."""
    from lbgen.output.slabbed import SlabbedFields
    from lbgen.simulation.slabs import field_slabs
    dtype, bounds, compute = field_slabs(sim, native, cells)
    return SlabbedFields(("rho", "ux", "uy", "uz", "T"), sim.shape, dtype, bounds, compute)


@pytest.mark.parametrize("layout, vl, options, steps", [
    ("caosoa", 8, dict(precision="single", storage="fp16s", streaming="inplace"), 3),
    ("caosoa", 8, dict(precision="single", storage="fp16s", streaming="inplace"), 4),
    ("soa", None, {}, 3), ("aos", None, dict(precision="single"), 2), ("csoa", 4, dict(streaming="inplace"), 1)])
def test_fields_by_slabs_are_the_fields_bit_for_bit(layout, vl, options, steps):
    """The fields made by slabs of X planes (each slab's populations copied into a staging lattice,
    its fields kernel run there) are fields(native=True)'s bits, whole or by any part, solid cells
    0, at either in-place parity; read at a later step they are refused, not stale."""
    from lbgen.output.widened import field_total, widened
    from lbgen.simulation.open_faces import face_fluxes
    from lbgen.simulation.parameters import SimulationError
    shape = (35, 6, 16)
    rng = np.random.default_rng(5)
    mask = np.zeros(shape, dtype=np.uint8)
    mask[4:7, 2:4, 5:9] = 1
    sim = lbgen.Simulation(*shape, velocity_set="d3q19", layout=layout, vl=vl, tau=0.8, mask=mask, **options)
    sim.set_fields(1 + 0.01 * rng.random(shape), *(0.02 * rng.standard_normal(shape) for _ in shape))
    sim.step(steps)
    whole = sim.fields(native=True)
    for cells in (6 * 16, 6 * 16 * 5):          # slabs of 1 plane; of 2 (LX // 16), the last of 1
        by_slabs = _slabbed(sim, cells)
        assert len(by_slabs.bounds) == (35 if cells == 96 else 18)
        for k, v in whole.items():
            assert by_slabs[k].dtype == v.dtype and np.array_equal(by_slabs[k].view(np.uint8), v.view(np.uint8)), k
        for index in ((6,), (slice(None), 3), (slice(3, 34), slice(None), slice(4, 9)), (slice(None),) * 2 + (15,)):
            part = by_slabs.part(("ux", "T"), index)
            assert all(np.array_equal(part[k], whole[k][index]) for k in ("ux", "T")), index
        assert field_total(by_slabs, "rho") == field_total(whole, "rho") == float(whole["rho"].astype(float).sum())
        faces = [(c, side) for c in "xyz" for side in ("low", "high")]
        assert face_fluxes(widened(by_slabs), faces, 1.7) == face_fluxes(widened(whole), faces, 1.7)
    assert np.all(by_slabs["rho"][mask == 1] == 0) and np.all(whole["rho"][mask == 0] > 0)
    sim.step(1)
    with pytest.raises(SimulationError):
        by_slabs["rho"]


@pytest.mark.parametrize("fmt", ["h5", "npz"])
def test_an_output_of_fields_by_slabs_holds_no_whole_field(tmp_path, fmt):
    """RunOutput.write_fields (field file and .vti) of the fields made by slabs: tracemalloc's peak per
    cell, as the slope between two lattices (the writers' fixed chunks cancel), is a slab's and an eighth
    of the Z planes' fields (the .vti's parts): measured 0.8 B a cell (one float32 field and a third of
    the velocity at a time: 8.7; the five fields held whole: 20 and more)."""
    from lbgen.output.run import RunOutput
    from lbgen.output.widened import field_total

    def peak(lx):
        shape = (lx, 32, 64)
        sim = lbgen.Simulation(*shape, velocity_set="d3q19", tau=0.8, precision="single", storage="fp16s",
                               streaming="inplace")
        sim.set_fields(1.0, 0.01, 0.0, 0.0)
        sim.step(1)
        out = RunOutput(tmp_path / f"r{lx}", pictures=(), fields_format=fmt, dimension=3)
        out.write_fields(0, _slabbed(sim, 32 * 64 * 2))         # h5py's and pyevtk's imports
        if fmt == "h5":                  # the report's total mass read by slabs: NumPy's sum of the whole, bit for bit
            sim.set_fields(1 + 0.01 * np.random.default_rng(lx).random(shape), 0.01, 0.0, 0.0)
            assert field_total(_slabbed(sim, 32 * 64 * 2), "rho") == float(sim.fields()["rho"].sum())
        return _traced(lambda: out.write_fields(1, _slabbed(sim, 32 * 64 * 2)))[1]
    extra = (peak(192) - peak(96)) / (96 * 32 * 64)
    assert extra <= 3, extra


def test_files_of_fields_by_slabs_are_the_whole_fields_files(tmp_path):
    """Every writer given the fields made by slabs writes the bytes it writes of the whole arrays
    (HDF5, npz members, the .vti with a solid array, --save's file, the mid-plane slices)."""
    import zipfile

    from lbgen.output.fields import write_h5, write_npz, write_vti
    from lbgen.output.pictures import mid_planes
    from lbgen.output.widened import widened
    from lbgen.run.fieldfile import save_fields
    shape = (24, 20, 32)
    rng = np.random.default_rng(7)
    sim = lbgen.Simulation(*shape, velocity_set="d3q19", tau=0.8, precision="single", storage="fp16s",
                           streaming="inplace")
    sim.set_fields(1 + 0.01 * rng.random(shape), *(0.02 * rng.standard_normal(shape) for _ in shape))
    sim.step(3)
    whole, by_slabs = sim.fields(native=True), _slabbed(sim, 20 * 32 * 2)
    solid = {"solid": (rng.random(shape) < 0.1).astype(np.uint8)}
    for name, fields in (("a", whole), ("b", by_slabs)):
        write_h5(tmp_path / f"{name}.h5", 7, fields, 0.5, attrs={"nu": 0.1})
        write_npz(tmp_path / f"{name}.npz", 7, fields, 0.5)
        save_fields(tmp_path / f"{name}-save.npz", fields, steps=7, lx=24, ly=20, lz=32)
    write_vti(tmp_path / "b.vti", by_slabs, field_data={"step": 7}, point_data=solid)
    write_vti(tmp_path / "a.vti", whole, field_data={"step": 7}, point_data=solid)
    for stem in ("", "-save"):
        a, b = (zipfile.ZipFile(tmp_path / f"{n}{stem}.npz") for n in "ab")
        assert a.namelist() == b.namelist() and all(a.read(m) == b.read(m) for m in a.namelist()), stem
    for suffix in (".h5", ".vti"):
        assert (tmp_path / f"a{suffix}").read_bytes() == (tmp_path / f"b{suffix}").read_bytes(), suffix
    for periodic in ((True,) * 3, (True, False, False)):
        a, b = mid_planes(widened(whole), periodic), mid_planes(widened(by_slabs), periodic)
        assert a.keys() == b.keys()
        for plane in a:
            assert a[plane][:2] == b[plane][:2] and a[plane][2].keys() == b[plane][2].keys()
            assert all(np.array_equal(a[plane][2][k], b[plane][2][k]) for k in a[plane][2]), plane
