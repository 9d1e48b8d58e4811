"""Boundaries of the 3D C kernels against the oracle (lbgen.reference.bulk3d.Boundaries):
half-way bounce-back walls on each pair of faces, moving lids (Ladd's correction with the
node's density; a lid wins on the edges it shares with a resting wall), a random voxel mask
(links into solid voxels bounce back, solid voxels hold 0); mass conserved to round-off with
resting walls and a mask; strict builds bit-identical across layouts and fused = propagate +
collide with every boundary at once; bad boundary inputs refused."""
from __future__ import annotations

import numpy as np
import pytest

from lbgen.reference import bulk3d as oracle
from support3d import bounds, LAYOUTS3D, R, SHAPE, kernel_run, oracle_run, program3d, random_state

STEPS = 4
#: lid velocities of the cases, lattice units (tangential to their face)
LID_Z = (0.05, -0.02, 0.0)
LID_X = (0.0, 0.03, 0.02)


def mask(seed=1, fraction=0.15, shape=SHAPE) -> np.ndarray:
    return np.random.default_rng(seed).random(shape) < fraction


#: name -> (walls, lids {(axis, side): lattice velocity}, solid)
CASES = {
    "walls-x": (("x",), {}, None),
    "walls-y": (("y",), {}, None),
    "walls-z": (("z",), {}, None),
    "walls-xyz": (("x", "y", "z"), {}, None),
    "lid-z-high": (("z",), {("z", "high"): LID_Z}, None),
    "lids-edges": (("x", "y"), {("x", "low"): LID_X, ("y", "high"): (0.01, 0.0, -0.03)}, None),
    "mask": ((), {}, "mask"),
    "mask-walls-z-lid": (("z",), {("z", "low"): LID_Z}, "mask"),
}
FAST = {("caosoa", 8, "d3q19", "bgk"), ("soa", None, "d3q27", "regularized")}


def case_inputs(case, prog, name, collision):
    """The initial state, the kernels' boundaries, the oracle's result after STEPS and the
    solid mask (or None) of a case."""
    walls, lids, solid = CASES[case]
    solid = mask() if solid else None
    f0 = random_state(name, seed=21)
    if solid is not None:
        f0[:, solid] = 0.0
    bc = bounds(walls, {face: R * np.asarray(u) for face, u in lids.items()},
                         None if solid is None else solid.astype(np.uint8))
    b = oracle.Boundaries(SHAPE, oracle.lattice(name), walls=walls, lids=lids, solid=solid)
    return f0, bc, oracle_run(f0, STEPS, name, collision, b), solid


def run_case(case, layout, vl, name, collision, strict=False, fused=True):
    prog = program3d(layout, vl, name, collision, strict=strict)
    f0, bc, want, solid = case_inputs(case, prog, name, collision)
    return prog.unpack(kernel_run(prog, f0, STEPS, collision, bc, fused=fused)), want, solid


def _sweep():
    for layout, vl in LAYOUTS3D:
        for name in ("d3q19", "d3q27"):
            for collision in ("bgk", "regularized"):
                fast = (layout, vl, name, collision) in FAST
                yield pytest.param(layout, vl, name, collision, marks=() if fast else (pytest.mark.slow,),
                                   id=f"{layout}{'-vl' + str(vl) if vl else ''}-{name}-{collision}")


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("layout, vl, name, collision", list(_sweep()))
def test_boundaries_equal_the_oracle(case, layout, vl, name, collision):
    got, want, solid = run_case(case, layout, vl, name, collision)
    assert np.max(np.abs(got - want)) < 1e-12 * np.max(np.abs(want))
    if solid is not None:
        assert np.all(got[:, solid] == 0.0)                 # solid voxels hold 0


@pytest.mark.parametrize("case", ["walls-xyz", "mask-walls-z-lid"])
def test_separate_kernels_equal_the_oracle_with_boundaries(case):
    got, want, _ = run_case(case, "csoa", 4, "d3q19", "bgk", fused=False)
    assert np.max(np.abs(got - want)) < 1e-12 * np.max(np.abs(want))


@pytest.mark.parametrize("walls, solid", [(("x", "y", "z"), None), ((), "mask"), (("y",), "mask")])
def test_mass_is_conserved_to_round_off_with_resting_walls_and_a_mask(walls, solid):
    prog = program3d("caosoa", 8)
    solid = mask(seed=5, fraction=0.25) if solid else None
    f0 = random_state("d3q19", seed=2)
    if solid is not None:
        f0[:, solid] = 0.0
    prog.set_boundaries(**bounds(walls, None, None if solid is None else solid.astype(np.uint8)))
    m0 = f0.sum()
    f, g = prog.pack(f0), prog.allocate()
    params = {"tau": 0.6, "ax": 1e-4, "ay": -2e-4, "az": 1e-4}
    for _ in range(30):
        prog.step_halo(f)
        f, g = prog.step(f, g, params)
    assert abs(prog.unpack(f).sum() / m0 - 1) < 1e-13


def test_a_resting_box_keeps_a_fluid_at_rest():
    """Walls on every face, no force: a uniform fluid at rest stays exactly so."""
    prog = program3d("soa", None)
    prog.set_boundaries(**bounds(("x", "y", "z")))
    f, g = prog.allocate(), prog.allocate()
    prog.init_equilibrium(f, 1.0, 0.0, 0.0, 0.0, 1.0)
    f0 = prog.unpack(f)
    for _ in range(5):
        prog.step_halo(f)
        f, g = prog.step(f, g, {"tau": 0.7, "ax": 0.0, "ay": 0.0, "az": 0.0})
    assert np.max(np.abs(prog.unpack(f) - f0)) < 1e-15


@pytest.fixture(scope="module", params=[1, 40], ids=["chunks-of-1-row", "chunks-of-3-rows"])
def chunked_soa(request):
    """SoA kernels whose fused sweeps chunks of at least CHUNK_SITES sites: 1 (one row each)
    or 40 (3 rows of SHAPE's 18-site Z lines: chunks of 3 and 2 rows), on 2 threads."""
    from lbgen.backends.c import default_flags
    from lbgen.codegen.spec import KernelSpec
    from programs import PROGRAMS
    spec = KernelSpec(backend="c", layout="soa", velocity_set="d3q19")
    flags = default_flags() + (f"-D{spec.prefix.upper()}_CHUNK_SITES={request.param}",)
    return PROGRAMS(spec, SHAPE, flags=flags, threads=2)


@pytest.mark.parametrize("case", list(CASES))
def test_soa_fused_in_runs_of_rows_equals_the_oracle(chunked_soa, case):
    """SoA's fused sweeps each chunk's consecutive rows that no boundary reaches as one run of
    sites (Z halo sites between the lines included), the others row by row: with runs cut by
    chunk ends and by wall rows, streamed (whole lines non-temporal) or plainly, it equals the
    oracle, and the two give the same bits."""
    prog = chunked_soa
    f0, bc, want, _ = case_inputs(case, prog, "d3q19", "bgk")
    got = {}
    for on in (1, 0):
        assert prog.lib.lbgen_set_streaming_stores(on) == on
        got[on] = prog.unpack(kernel_run(prog, f0, STEPS, "bgk", bc))
        assert np.max(np.abs(got[on] - want)) < 1e-12 * np.max(np.abs(want))
    assert np.array_equal(got[1], got[0])


def _strict(layout, vl, fused=True):
    return run_case("mask-walls-z-lid", layout, vl, "d3q19", "regularized", strict=True, fused=fused)[0]


@pytest.mark.parametrize("layout, vl", [pytest.param(lay, v, marks=() if (lay, v) in (("aos", None), ("caosoa", 4))
                                                     else (pytest.mark.slow,)) for lay, v in LAYOUTS3D])
def test_strict_builds_with_boundaries_are_bit_identical(layout, vl):
    reference = _strict("soa", None)
    assert np.array_equal(_strict(layout, vl), reference)
    assert np.array_equal(_strict(layout, vl, fused=False), reference)


@pytest.mark.parametrize("kw, message", [
    (dict(walls=64), "walls=64: face bits of a 3D lattice, an integer 0 .. 63"),
    (dict(walls=True), "walls=True: face bits"),
    (dict(walls=1, lids=2), "lids=2 names a face without a wall"),
    (dict(walls=32, lids=32, lid=np.zeros((6, 2))), "lid: 12 values; a 3D lattice takes 6 faces x 3"),
    (dict(solid=np.zeros((6, 5, 15), np.uint8)), "solid: a uint8 array of shape \\(6, 5, 15\\)"),
    (dict(solid=np.zeros(SHAPE)), "solid: a float64 array"),
])
def test_bad_boundaries_are_refused(kw, message):
    """The program's one boundary description (face bits, lid velocities, a mask) is checked
    before any sweep; the face names are parsed above it (lbgen.simulation.boundaries)."""
    prog = program3d("caosoa", 8)
    with pytest.raises(ValueError, match=message):
        prog.set_boundaries(**kw)
    assert prog.bounds is None


def test_a_lid_face_may_be_named_as_simulation3d_names_it():
    """'z-high' (Simulation3D's spelling) and ('z', 'high') build the same boundaries: same bits."""
    prog = program3d("caosoa", 8)
    f0 = random_state("d3q19", seed=5)
    runs = [prog.unpack(kernel_run(prog, f0, 2, "bgk", bc=bounds(walls=("z",), lids={face: (0.05, 0.0, 0.0)})))
            for face in ("z-high", ("z", "high"))]
    assert np.array_equal(*runs)
    assert not np.array_equal(runs[0], prog.unpack(kernel_run(prog, f0, 2, "bgk", bc=bounds(walls=("z",)))))
