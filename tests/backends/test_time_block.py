"""Temporal blocking (C backend ``fused_tb``): `depth` steps in one sweep equal `depth`
single steps bit for bit in strict mode -- every layout (streamed and plain final stores),
both operators, periodic and between thermal walls, depth 2 and 3, on 2 threads whose
overlapping column blocks wrap around the periodic X boundary (LX = 7: uneven blocks
narrower than the 3(depth-1) columns each side a block recomputes).
"""
from __future__ import annotations

import numpy as np
import pytest

from lbgen.reference import bulk as ref
from lbgen.backends import c as cbackend
from lbgen.codegen.spec import MAX_TIME_BLOCK, KernelSpec
from lbgen.simulation.runner import Simulation, SimulationError, Walls

LX, LY = 7, 24
STEPS = 6                                   # a multiple of both depths
PARAMS = {"bgk": dict(tau=0.8, ax=1e-4, ay=-2e-4), "regularized": dict(C1=0.2, C2=0.1, C3=0.5, ax=1e-4, ay=-2e-4)}
WALLS = Walls(T_bottom=1.05, T_top=0.95, adiabatic_top=True)
#: aos/soa, clustered with streamed final stores (VL x 8 bytes a multiple of 32) and without
LAYOUTS = [("aos", None), ("soa", None), ("csoa", 8), ("caosoa", 4), ("caosoa", 2)]


@pytest.fixture(scope="module")
def state():
    rng = np.random.default_rng(99)
    shape = (LX, LY)
    feq = ref.equilibrium(1 + 0.05 * rng.uniform(-1, 1, shape), 0.05 * rng.uniform(-1, 1, shape),
                          0.05 * rng.uniform(-1, 1, shape), 1 + 0.05 * rng.uniform(-1, 1, shape))
    return feq * (1.0 + 1e-3 * rng.standard_normal(feq.shape))


@pytest.fixture(scope="module")
def two_thread_program(programs):
    """two_thread_program(layout, vl, collision, walls): strict, 2 threads (the session's cache)."""
    handed = []

    def get(layout, vl, collision, walls):
        handed.append(programs.of("c", (LX, LY), True, {"threads": 2}, layout=layout, vl=vl, collision=collision,
                                  walls=walls))
        return handed[-1]

    yield get
    if handed:    # the OpenMP thread count is process-wide: back to the tests' one
        handed[0].lib.lbgen_set_threads(1)


def single_steps(prog, f0, steps, walls, params):
    a, b = prog.pack(f0), prog.allocate()
    for _ in range(steps):
        prog.halo(a)
        if walls:
            prog.propagate(a, b)
            prog.bc(a, b, WALLS.T_bottom, WALLS.T_top, (WALLS.adiabatic_bottom, WALLS.adiabatic_top),
                    params["ax"], params["ay"])
            prog.collide(b, a, **params)
        else:
            prog.fused(a, b, **params)
            a, b = b, a
    return prog.layout.unpack(prog.download(a))


def blocked_steps(prog, f0, steps, depth, walls, params):
    a, b = prog.pack(f0), prog.allocate()
    for _ in range(steps // depth):
        prog.halo(a)
        prog.fused_tb(a, b, depth, walls=WALLS if walls else None, **params)
        a, b = b, a
    return prog.layout.unpack(prog.download(a))


#: periodic: every layout with both operators; walls: every layout, the operators alternating
#: (the fast subset: the walled cases and the periodic ones with the other operator, so each
#: layout meets both operators; the rest is slow)
CASES = ([(layout, vl, collision, False) for layout, vl in LAYOUTS for collision in ("bgk", "regularized")]
         + [(layout, vl, ("bgk", "regularized")[i % 2], True) for i, (layout, vl) in enumerate(LAYOUTS)])


def _fast(case) -> bool:
    layout, vl, collision, walls = case
    i = LAYOUTS.index((layout, vl))
    return walls or collision != ("bgk", "regularized")[i % 2]


@pytest.mark.parametrize("layout, vl, collision, walls", [
    pytest.param(*case, id=f"{case[0]}{'-vl' + str(case[1]) if case[1] else ''}-{case[2]}-{'walls' if case[3] else 'periodic'}",
                 marks=() if _fast(case) else (pytest.mark.slow,)) for case in CASES])
def test_time_blocks_equal_single_steps_bit_for_bit(layout, vl, collision, walls, state, two_thread_program):
    prog = two_thread_program(layout, vl, collision, walls)
    params = PARAMS[collision]
    want = single_steps(prog, state, STEPS, walls, params)
    assert not np.array_equal(want, state)
    for depth in (2, 3):
        got = blocked_steps(prog, state, STEPS, depth, walls, params)
        assert np.array_equal(got, want), f"depth {depth}: max |diff| {np.abs(got - want).max():.3g}"


#: (layout, vl, collision, walls, LY); LY = 181 leaves a last band of 1 row at depth 2 unless
#: the walls' rule (every band >= 3 depth rows) widens the bands
BANDED = [("aos", None, "bgk", False, 192), ("soa", None, "regularized", False, 192),
          ("csoa", 8, "regularized", False, 192), ("caosoa", 4, "bgk", False, 192),
          ("aos", None, "regularized", True, 181), ("soa", None, "bgk", True, 192), ("csoa", 8, "bgk", True, 192),
          ("caosoa", 4, "regularized", True, 192), ("caosoa", 2, "bgk", True, 192)]


#: the fast subset's banded cases (the odd last band with walls, a clustered periodic one)
BANDED_FAST = [("aos", None, "regularized", True, 181), ("caosoa", 4, "bgk", False, 192)]


@pytest.mark.parametrize("layout, vl, collision, walls, ly", [
    pytest.param(*case, id=f"{case[0]}{'-vl' + str(case[1]) if case[1] else ''}-{case[2]}-"
                           f"{'walls' if case[3] else 'periodic'}-ly{case[4]}",
                 marks=() if case in BANDED_FAST else (pytest.mark.slow,)) for case in BANDED])
def test_banded_time_blocks_equal_single_steps_bit_for_bit(layout, vl, collision, walls, ly, programs):
    """Tall columns are cut into bands of rows (a 1 KiB cache budget forces the smallest
    bands): end bands read lane-shifted copies of prv, inner bands prv itself; with walls
    the end bands also complete their wall's sites with the bc."""
    lx = 7
    spec = KernelSpec(backend="c", layout=layout, vl=vl, collision=collision, walls=walls)
    flags = cbackend.default_flags() + ("-DLBGEN_TB_KB=1",)       # the suite's level (LBGEN_OPT_LEVEL)
    prog = programs(spec, (lx, ly), strict=True, threads=2, flags=flags)
    try:
        rng = np.random.default_rng(5)
        shape = (lx, ly)
        f0 = ref.equilibrium(1 + 0.05 * rng.uniform(-1, 1, shape), 0.05 * rng.uniform(-1, 1, shape),
                             0.05 * rng.uniform(-1, 1, shape), 1 + 0.05 * rng.uniform(-1, 1, shape))
        want = single_steps(prog, f0, STEPS, walls, PARAMS[collision])
        for depth in (2, 3):
            got = blocked_steps(prog, f0, STEPS, depth, walls, PARAMS[collision])
            assert np.array_equal(got, want), f"depth {depth}: max |diff| {np.abs(got - want).max():.3g}"
    finally:
        prog.lib.lbgen_set_threads(1)


def test_time_block_beyond_the_walls_changes_the_result(state, two_thread_program):
    """The walled sweep really applies the bc: without walls the same kernels differ."""
    params = PARAMS["regularized"]
    walled = blocked_steps(two_thread_program("caosoa", 4, "regularized", True), state, STEPS, 2, True, params)
    periodic = blocked_steps(two_thread_program("caosoa", 4, "regularized", False), state, STEPS, 2, False, params)
    assert not np.array_equal(walled, periodic)


@pytest.mark.parametrize("depth", [0, -1, MAX_TIME_BLOCK + 1, 2.5, True, "2"])
def test_bad_depth_is_refused_by_name(depth, two_thread_program):
    prog = two_thread_program("caosoa", 4, "bgk", False)
    a, b = prog.allocate(), prog.allocate()
    with pytest.raises(ValueError, match=f"time block {depth!r} is not an integer"):
        prog.fused_tb(a, b, depth, **PARAMS["bgk"])


def test_walls_program_needs_the_walls(two_thread_program):
    prog = two_thread_program("caosoa", 4, "bgk", True)
    a, b = prog.allocate(), prog.allocate()
    with pytest.raises(ValueError, match="walls=Walls"):
        prog.fused_tb(a, b, 2, **PARAMS["bgk"])


@pytest.mark.parametrize("walls", [None, WALLS], ids=["periodic", "walls"])
def test_simulation_time_block_equals_single_steps_with_a_remainder(walls):
    """10 steps with time_block=3: three sweeps and one single step, bit-identical (strict)."""
    from lbgen.run.setups import rayleigh_taylor
    fields = rayleigh_taylor(8, 32, amplitude=0.02)
    out = []
    for depth in (1, 3):
        sim = Simulation(8, 32, strict=True, time_block=depth, walls=walls, collision="regularized",
                         gravity=(0.0, -1e-4), check_every=4)
        sim.set_fields(**fields)
        sim.run(10)
        assert sim.time_step == 10 and sim.time_block == depth
        out.append(sim.populations())
    assert np.array_equal(out[0], out[1])


@pytest.mark.parametrize("kw, message", [
    (dict(time_block=0), "time block 0 is not an integer from 1 to"),
    (dict(time_block=MAX_TIME_BLOCK + 1), f"time block {MAX_TIME_BLOCK + 1} is not an integer"),
    (dict(time_block="deep"), "time block 'deep' is not an integer"),
    (dict(time_block="auto"), "time_block='auto' is decided by timing kernels"),
    (dict(time_block=2, fused=False), "cannot run with fused=False"),
    (dict(time_block=2, backend="opencl"), "runs on the C backend alone, not backend='opencl'"),
])
def test_simulation_refuses_bad_time_blocks_before_compiling(kw, message):
    with pytest.raises(SimulationError, match=message):
        Simulation(8, 32, **kw)


def test_time_block_auto_takes_the_tuned_depth_off_the_c_backend_as_one():
    from lbgen.perf.tune import auto_time_block
    assert auto_time_block("opencl", "caosoa", 32, 8, 96) == 1


def _sweeps(run_dir):
    import json
    return json.loads((run_dir / "manifest.json").read_text())["sweeps"]


def test_cli_run_with_a_time_block_runs_blocked_sweeps(tmp_path):
    """The command users run: `--time-block N` makes blocked sweeps between events (the
    manifest's sweep counter), events at non-multiples run the remainder singly, the
    default (auto) blocks too, and the result equals single steps in strict builds."""
    from click.testing import CliRunner

    from lbgen.cli.main import main

    def run(name, *extra):
        result = CliRunner().invoke(main, ["run", "rayleigh-taylor", "--lx", "8", "--ly", "32", "--steps", "24",
                                           "--strict", "--out", str(tmp_path / name), "--pictures", "none",
                                           "--save", str(tmp_path / f"{name}.npz"), "--no-progress", *extra],
                                    catch_exceptions=False)
        assert result.exit_code == 0, result.output
        return np.load(tmp_path / f"{name}.npz")
    one = run("one", "--time-block", "1", "--check-every", "6")
    assert _sweeps(tmp_path / "one") == {"blocked": 0, "single": 24}
    three = run("three", "--time-block", "3", "--check-every", "6")
    assert _sweeps(tmp_path / "three") == {"blocked": 8, "single": 0}
    # the default series cadence follows the block: rows at 0, 12, 24 (10 rounded up to 12)
    assert [int(r.split(",")[0]) for r in (tmp_path / "three" / "series.csv").read_text().splitlines()[1:]] == \
        [0, 12, 24]
    # --check-every 5: blocks up to each event, the steps that do not fill a block run singly
    odd = run("odd", "--time-block", "3", "--check-every", "5")
    # events at 5, 10, 15, 20 (guard) and 12, 24 (series): 3+2, 3+2, 2, 3, 3+2, 3+1
    assert _sweeps(tmp_path / "odd") == {"blocked": 5, "single": 9}
    auto = run("auto", "--check-every", "6")                            # the default: auto, 3 without a tuned depth
    assert _sweeps(tmp_path / "auto")["blocked"] == 8
    for other in (three, odd, auto):
        for k in ("rho", "ux", "uy", "T"):
            assert np.array_equal(other[k], one[k]), k
    bad = CliRunner().invoke(main, ["run", "--time-block", "deep"])
    assert bad.exit_code == 2 and "time block 'deep' is not auto or an integer from 1 to" in bad.output


def test_tune_chooses_and_stores_the_time_block(tmp_path, monkeypatch):
    from lbgen.perf import tune as T
    monkeypatch.setattr(T, "_path", lambda: tmp_path / "choices.json")
    monkeypatch.setenv("LBGEN_TUNED", "on")
    entry = T.tune("c", 8, 64, layouts=["caosoa"], vls=(8,), samples=1, time_blocks=(1, 2))
    ranking = entry["time_block_ranking"]
    assert sorted(r["time_block"] for r in ranking) == [1, 2]
    assert entry["time_block"] == ranking[0]["time_block"]
    assert ranking[0]["ms_per_step"] <= ranking[1]["ms_per_step"]
    assert T.auto_time_block("c", "caosoa", 8, 8, 64) == entry["time_block"]
    from lbgen.run.config import RunConfig
    from lbgen.run.construct import resolve
    cfg = resolve(RunConfig(lx=8, ly=64), echo=lambda m: None)        # a run's default: time block auto
    assert (cfg.layout, cfg.vl, cfg.time_block) == ("caosoa", 8, entry["time_block"])
    with pytest.raises(SimulationError, match="time_block='auto' is decided by timing kernels"):
        Simulation(8, 64, time_block="auto")
    assert "time block" in T.format_ranking(entry)


def test_d2q9_time_blocks_equal_single_steps_bit_for_bit(programs):
    """The blocked sweep is velocity-set generic: D2Q9 (reach 1 inside the 3-wide halo)."""
    lx, ly = 9, 48
    spec = KernelSpec(backend="c", layout="caosoa", vl=4, velocity_set="d2q9")
    prog = programs(spec, (lx, ly), strict=True, threads=2)
    try:
        rng = np.random.default_rng(3)
        fields = [1 + 0.05 * rng.uniform(-1, 1, (lx, ly)), 0.05 * rng.uniform(-1, 1, (lx, ly)),
                  0.05 * rng.uniform(-1, 1, (lx, ly)), np.ones((lx, ly))]
        out = []
        for depth in (1, 2, 3):
            a, b = prog.allocate(), prog.allocate()
            prog.init_equilibrium(a, *fields)
            start = prog.layout.unpack(prog.download(a))
            for _ in range(STEPS // depth):
                prog.halo(a)
                if depth == 1:
                    prog.fused(a, b, tau=0.8, ax=1e-4, ay=-2e-4)
                else:
                    prog.fused_tb(a, b, depth, tau=0.8, ax=1e-4, ay=-2e-4)
                a, b = b, a
            out.append(prog.layout.unpack(prog.download(a)))
        single = out[0]
        assert not np.array_equal(single, start)
        assert np.array_equal(out[1], single) and np.array_equal(out[2], single)
    finally:
        prog.lib.lbgen_set_threads(1)
