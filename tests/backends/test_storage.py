"""Storage apart from the arithmetic (lbgen.codegen.storage): populations stored as fp32 or as
FluidX3D's FP16S (IEEE half of (f - w_p) 2^15; Lehmann et al., "Accuracy and performance of the
lattice Boltzmann method with 64-bit, 32-bit, and customized 16-bit number formats", Phys. Rev. E
106, 015308 (2022)) with double or single arithmetic, on the C backend, 2D and 3D: the NumPy
codec's round trip, the kernels against the fp64 run of the same flow (a decaying shear wave,
whose exact solution u(t) = u0 exp(-nu k^2 t) sets the viscosity each storage must keep), the
bounce-back boundaries, the time block and checkpoints."""
from __future__ import annotations

import numpy as np
import pytest

from lbgen.codegen.spec import KernelSpec, SpecError
from lbgen.codegen.storage import Codec
from lbgen.model.velocity_set import velocity_set
from lbgen.simulation.runner import Simulation

TAU = 0.8
U0 = 0.05


def shear_wave(shape, vs, steps, **kw):
    """u_y = U0 sin(2 pi x / LX), rho = 1: the fields after ``steps`` and the simulation."""
    sim = Simulation(*shape, velocity_set=vs, layout=kw.pop("layout", "soa"), tau=TAU, threads=1, **kw)
    x = np.arange(shape[0]).reshape((-1,) + (1,) * (len(shape) - 1)) * np.ones(shape)
    uy = U0 * np.sin(2 * np.pi * x / shape[0])
    zero = np.zeros(shape)
    sim.set_fields(1.0 + zero, zero, uy, *([zero] if len(shape) == 3 else []), 1.0)
    sim.step(steps)
    return sim.fields(), sim


def amplitude(uy) -> float:
    """The sin(2 pi x / LX) mode of u_y."""
    LX = uy.shape[0]
    s = np.sin(2 * np.pi * np.arange(LX) / LX)
    return float(np.tensordot(s, uy.reshape(LX, -1).mean(axis=1), 1) * 2 / LX)


@pytest.mark.parametrize("name", ["d2q9", "d3q19", "d2q37"])
def test_codec_round_trip_rounds_the_deviation_only(name):
    """encode/decode of populations near the rest state: fp16s keeps |f - w| to half's 2^-11
    (a codec that stored f itself, or forgot the shift, would round |f| ~ w to 2^-11 w: 100x more),
    fp16c to 2^-12 (2^-26 absolute below 2^-14), fp32 storage of double arithmetic to 2^-24; the
    storage of the precision itself is exact."""
    vs = velocity_set(name)
    w = np.array([float(x) for x in vs.weights])
    rng = np.random.default_rng(1)
    f = w[:, None, None] * (1 + rng.uniform(-0.01, 0.01, (vs.Q, 6, 5)))
    dev = np.abs(f - w[:, None, None])
    for precision, storage, eps, dtype in (("double", "fp16s", 2.0 ** -11, "float16"),
                                           ("single", "fp16s", 2.0 ** -11, "float16"),
                                           ("double", "fp16c", 2.0 ** -12, "uint16"),     # one bit more
                                           ("mixed", None, 2.0 ** -24, "float32")):
        codec = Codec(precision, storage, vs.weights)
        s = codec.encode(f)
        assert s.dtype == np.dtype(dtype)
        err = np.abs(codec.decode(s) - f)
        floor = 2.0 ** -26 * (1 + 1e-3) if storage == "fp16c" else 0.0     # fp16c: steps below 2^-14, via float
        assert (err <= np.maximum(eps * dev * (1 + 2.0 ** -20), floor) + 1e-15).all(), (precision, storage)
        assert err.max() > 0
        np.testing.assert_array_equal(codec.encode(codec.decode(s)), s)     # stored values survive
    tiny = Codec("double", "fp16c", vs.weights)     # fp16c below 2^-14: steps of 2^-25
    d = np.geomspace(1e-9, 2.0 ** -14, 50)
    f_small = w[:, None] + d[None, :]
    assert np.abs(tiny.decode(tiny.encode(f_small)) - f_small).max() <= 2.0 ** -26 * (1 + 1e-6)
    assert np.isnan(tiny.decode(tiny.encode(w[:, None] + np.array([[2.5, -3.0, np.nan]])))).all()   # overflow: NaN
    exact = Codec("double", None, vs.weights)
    np.testing.assert_array_equal(exact.decode(exact.encode(f)), f)


def test_program_pack_unpack_goes_through_the_storage(programs):
    """A C program of fp16s storage holds float16 deviations; pack then unpack is the codec's round trip."""
    prog = programs.of("c", (8, 16), layout="caosoa", vl=8, velocity_set="d2q9", storage="fp16s")
    assert prog.dtype == np.float16 and prog.allocate().dtype == np.float16
    vs = velocity_set("d2q9")
    w = np.array([float(x) for x in vs.weights])[:, None, None]
    f = w * (1 + 0.01 * np.random.default_rng(2).standard_normal((9, 8, 16)))
    buf = prog.pack(f)
    np.testing.assert_allclose(prog.unpack(buf), prog.codec.decode(prog.codec.encode(f)), rtol=0, atol=0)
    raw = prog.layout.unpack(prog.download(buf)).astype(np.float64)
    np.testing.assert_allclose(raw, (f - w) * 2.0 ** 15, rtol=2.0 ** -11)


@pytest.mark.parametrize("shape, vs", [((32, 16), "d2q9"), ((16, 8, 8), "d3q19")])
def test_narrow_storage_follows_the_fp64_run(shape, vs):
    """The shear wave after 60 steps: fp32 storage of double arithmetic equals the fp64 run to
    ~1e-9 (measured 1.2e-9 in rho, 4.4e-9 in u_y of 0.04); fp16s within 1e-4 in u_y (measured
    3.4e-5 2D, 1.7e-5 3D) and its viscosity (the mode's decay) within 0.5 % of fp64's (measured
    ~0.05 %); an unshifted half would err by ~1e-3 in rho (2^-11 of w)."""
    steps = 60
    ref, _ = shear_wave(shape, vs, steps)
    a0 = U0
    nu_ref = -np.log(amplitude(ref["uy"]) / a0) / steps
    for precision, storage, tol_rho, tol_u in (("double", "fp32", 1e-8, 2e-8), ("double", "fp16s", 1e-4, 1e-4),
                                              ("single", "fp16s", 1e-4, 1e-4), ("double", "fp16c", 1e-4, 1e-4)):
        got, sim = shear_wave(shape, vs, steps, precision=precision, storage=storage)
        assert sim.dtype == {"fp32": np.float32, "fp16s": np.float16, "fp16c": np.uint16}[storage]
        d_rho = float(np.abs(got["rho"] - ref["rho"]).max())
        d_u = float(np.abs(got["uy"] - ref["uy"]).max())
        assert d_rho < tol_rho and d_u < tol_u, (precision, storage, d_rho, d_u)
        nu = -np.log(amplitude(got["uy"]) / a0) / steps
        assert abs(nu / nu_ref - 1) < 5e-3, (precision, storage, nu, nu_ref)


def test_fp16s_walls_lid_and_mask_3d():
    """A lid-driven box with a solid block in fp16s storage against fp64: the solid cells read 0,
    the velocity follows fp64's within 2e-4 (of a lid at 0.05) after 80 steps."""
    L = 12
    mask = np.zeros((L, L, L), bool)
    mask[4:7, 4:7, 2:5] = True

    def run(**kw):
        sim = Simulation(L, L, L, velocity_set="d3q19", walls="xyz", lid={"z-high": (0.05, 0.0, 0.0)}, mask=mask,
                         layout="caosoa", vl=4, tau=0.8, threads=1, **kw)
        sim.set_fields(1.0, 0.0, 0.0, 0.0)
        sim.step(80)
        return sim.fields()

    ref, got = run(), run(storage="fp16s")
    assert (got["rho"][mask] == 0).all() and (got["ux"][mask] == 0).all()
    assert np.abs(ref["ux"]).max() > 0.01
    assert float(np.abs(got["ux"] - ref["ux"]).max()) < 2e-4
    assert float(np.abs(got["rho"] - ref["rho"]).max()) < 1e-4


@pytest.mark.parametrize("shape, vs, storage", [((16, 16), "d2q9", "fp16s"), ((12, 8, 8), "d3q19", "fp16s"),
                                                ((12, 8, 8), "d3q19", "fp16c")])
def test_16bit_time_block_and_checkpoint_are_bit_identical(shape, vs, storage):
    """Strict builds: fused_tb (time block 2; 3D with walls) gives fp16s's bits of single steps, and a run
    restored from state() (float16 deviations) at an odd step continues bit for bit."""
    def make(tb):
        sim = Simulation(*shape, velocity_set=vs, layout="soa", tau=0.7, threads=1, strict=True, storage=storage,
                         time_block=tb, walls="y" if len(shape) == 3 else None)   # 2D fused_tb: periodic only
        x = np.arange(shape[0]).reshape((-1,) + (1,) * (len(shape) - 1)) * np.ones(shape)
        zero = np.zeros(shape)
        sim.set_fields(1.0 + 0.01 * np.cos(2 * np.pi * x / shape[0]), 0.03 + zero, zero,
                       *([zero] if len(shape) == 3 else []), 1.0)
        return sim

    a, b = make(1), make(2)
    a.step(7)
    b.step(7)
    assert b.sweeps["blocked"] == 3 and a.sweeps["blocked"] == 0
    np.testing.assert_array_equal(a.state(), b.state())
    saved = a.state()
    assert saved.dtype == {"fp16s": np.float16, "fp16c": np.uint16}[storage]
    a.step(5)
    c = make(1)
    c.restore(saved, 7)
    c.step(5)
    np.testing.assert_array_equal(a.state(), c.state())


def test_storage_choices_are_refused_in_words():
    with pytest.raises(SpecError, match="unknown storage 'fp8'.*fp64, fp32, fp16s, fp16c"):
        KernelSpec(storage="fp8").validate()
    with pytest.raises(SpecError, match="storage 'fp64' is wider than the single arithmetic"):
        KernelSpec(precision="single", storage="fp64").validate()
    # one spec per meaning: the precision's own storage is None; double + fp32 is 'mixed'
    assert KernelSpec(storage="fp64").validate().storage is None
    assert KernelSpec(storage="fp32").validate().precision == "mixed"


def test_the_memory_estimate_follows_the_storage():
    """`lbgen run`'s estimate before any work: two buffers of the storage (2 bytes a population in
    fp16s, 8 in double; halos of 1 cell, the last axis's as clusters of 8 cells) plus, in 3D, an
    eighth of the float64 fields (made by slabs as they are written, the .vti's by eighths of the Z
    planes) and a sixteenth of one buffer (a slab's staging lattice; lbgen.system.limits.run_memory_estimate);
    no gathered states: checkpoints and masks stream their slabs."""
    from lbgen.run.config import RunConfig
    from lbgen.run.driver import check_run_memory
    est = {s: check_run_memory(RunConfig.build("shear-wave", ("test", dict(lx=40, ly=40, lz=40, velocity_set="d3q19",
                                                                           storage=s))))
           for s in ("fp64", "fp16s")}
    sites, padded = 40 ** 3, 42 * 42 * (40 + 2 * 8)
    assert est["fp64"] - est["fp16s"] == 19 * 2 * padded * (8 - 2) + 19 * padded * (8 - 2) // 16
    assert est["fp16s"] == 19 * 2 * padded * 2 + 5 * 8 * sites // 8 + 19 * padded * 2 // 16


@pytest.mark.slow
def test_16bit_storage_keeps_the_thermal_moments():
    """The thermal sets' energy moments survive 16-bit storage: D2Q37 between the thermal walls
    (the bc and fused_walls kernels convert too; T_bottom 1.05, T_top 0.95, 200 steps) stays
    within 5e-4 of the wall difference of the fp64 run (measured 1.5e-4 fp16s, 7.7e-5 fp16c);
    a temperature wave T = 1 + 0.02 sin(2 pi x / 64) at uniform pressure decays with fp64's
    diffusivity within 1 % (measured after 400 steps: fp16s 0.37 %, fp16c 0.02 %)."""
    from lbgen.simulation.parameters import Walls

    def walls(**kw):
        sim = Simulation(16, 32, velocity_set="d2q37", collision="regularized", walls=Walls(1.05, 0.95),
                         layout="soa", threads=1, **kw)
        sim.set_fields(1.0, 0.0, 0.0, 1.0)
        sim.step(200)
        return sim.fields()["T"]

    def wave(**kw):
        sim = Simulation(64, 8, velocity_set="d2q37", layout="soa", tau=0.8, threads=1, **kw)
        T = 1 + 0.02 * np.sin(2 * np.pi * np.arange(64)[:, None] / 64) * np.ones((64, 8))
        sim.set_fields(1 / T, 0.0, 0.0, T)
        sim.step(400)
        return np.log(amplitude(sim.fields()["T"] - 1) / 0.02)

    T_ref, k_ref = walls(), wave()
    assert np.abs(T_ref - 1).max() > 0.05
    for storage in ("fp16s", "fp16c"):
        assert np.abs(walls(storage=storage) - T_ref).max() < 5e-4 * 0.1, storage
        assert abs(wave(storage=storage) / k_ref - 1) < 0.01, storage


@pytest.mark.parametrize("storage", ["fp16s", "fp16c"])
def test_16bit_kernels_follow_the_quantised_oracle_3d(programs, storage):
    """The NumPy oracle (lbgen.reference.bulk3d, Ladd's bounce-back on y and z walls, a lid and solid
    voxels, a body force) stepped with the codec's rounding after every step, against the C kernels
    with 16-bit storage: within 4 ulps of the format (only roundings that the two orders of
    arithmetic put on different sides of a tie differ); the unrounded oracle is 10x and more
    farther (a kernel that skipped a conversion, or converted twice, would land there or beyond)."""
    import lbgen.reference.bulk3d as oracle3d
    from lbgen.reference.verify import (FORCE3D, LID3D, PARAMS, WALL_AXES3D, initial_state3d,
                                        oracle_parameters3d, solid_mask)
    from lbgen.simulation.boundaries import face_bits
    shape, steps = (8, 10, 12), 5
    vs = velocity_set("d3q19")
    r = float(vs.r)
    solid = solid_mask(shape, 1)
    prog = programs.of("c", shape, layout="soa", velocity_set="d3q19", storage=storage)
    prog.set_boundaries(*face_bits(WALL_AXES3D, {f: r * np.asarray(u) for f, u in LID3D.items()}, 3), solid)
    where = oracle3d.Boundaries(shape, oracle3d.lattice("d3q19"), walls=WALL_AXES3D, lids=LID3D, solid=solid)
    f = prog.codec.decode(prog.codec.encode(initial_state3d(shape, "d3q19", 1, solid)))
    rounded, exact = f.copy(), f.copy()
    a, b = prog.pack(f), prog.allocate()
    params = dict(PARAMS["bgk"], **dict(zip(("ax", "ay", "az"), r * np.asarray(FORCE3D))))
    for _ in range(steps):
        prog.step_halo(a)
        a, b = prog.step(a, b, params, None, fused=True)
        exact = oracle3d.step(exact, "bgk", "d3q19", where, force=FORCE3D, **oracle_parameters3d("bgk"))
        rounded = prog.codec.decode(prog.codec.encode(
            oracle3d.step(rounded, "bgk", "d3q19", where, force=FORCE3D, **oracle_parameters3d("bgk"))))
    got = prog.unpack(a)
    fluid = ~solid[None].repeat(19, 0)
    w = np.array([float(x) for x in vs.weights]).reshape(-1, 1, 1, 1) * np.ones_like(got)
    ulp = {"fp16s": 2.0 ** -11, "fp16c": 2.0 ** -12}[storage] * np.maximum(np.abs(rounded - w), 2.0 ** -14)
    near = np.abs(got - rounded)[fluid] / ulp[fluid]
    far = np.abs(got - exact)[fluid].max()
    assert near.max() <= 4, near.max()
    assert far > 10 * np.abs(got - rounded)[fluid].max() or np.abs(got - rounded)[fluid].max() == 0


@pytest.mark.slow
def test_lbgen_run_resumes_a_16bit_run_bit_identically_and_refuses_another_storage(tmp_path):
    """`lbgen run --storage fp16c` (3D): the checkpoint holds the uint16 codes, a resume from step 4 ends
    with the bits of the uninterrupted run, and a checkpoint of an fp16s run is refused, naming --storage."""
    import shutil

    from click.testing import CliRunner

    from lbgen.cli.main import main
    from lbgen.run.checkpoint import checkpoint_path, read_checkpoint

    def cli(*args):
        return CliRunner().invoke(main, [str(a) for a in args])
    run = ("run", "taylor-green", "--velocity-set", "d3q19", "--lx", 8, "--ly", 8, "--lz", 8, "--pictures", "none",
           "--no-progress", "--time-block", 1, "--checkpoint-every", 4, "--keep-checkpoints", 5)
    whole, part, other = tmp_path / "whole", tmp_path / "part", tmp_path / "other"
    assert cli(*run, "--steps", 8, "--storage", "fp16c", "--out", whole).exit_code == 0
    assert cli(*run, "--steps", 4, "--storage", "fp16c", "--out", part).exit_code == 0
    populations, step, _ = read_checkpoint(checkpoint_path(part, 4))
    assert populations.dtype == np.uint16 and step == 4
    result = cli("run", "--resume", part, "--steps", 8, "--no-progress")
    assert result.exit_code == 0, result.output
    np.testing.assert_array_equal(read_checkpoint(checkpoint_path(part, 8))[0],
                                  read_checkpoint(checkpoint_path(whole, 8))[0])
    assert cli(*run, "--steps", 4, "--storage", "fp16s", "--out", other).exit_code == 0
    shutil.copyfile(checkpoint_path(other, 4), checkpoint_path(part, 4))
    checkpoint_path(part, 8).unlink()
    result = cli("run", "--resume", part, "--steps", 8, "--no-progress")
    assert result.exit_code == 2 and "--storage fp16s in the checkpoint, fp16c in this run" in result.output, result.output
