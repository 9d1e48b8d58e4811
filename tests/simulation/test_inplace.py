"""In-place streaming (``streaming='inplace'``: one population buffer, the AA pattern of Bailey,
Myre, Walsh, Lilja & Pasaoglu, ICPP 2009; docs/architecture.md, "In-place streaming"): the C kernels
give the pull kernels' state bit for bit in strict builds after even and odd step counts, 2D and 3D,
on every layout, in double and single, periodic and with bounce-back walls, a lid and a voxel mask,
with open faces (inlet, outlet, outflow, slip) and with bodies (half-way, Bouzidi: the force on each
body too, every step); one buffer is allocated; the NumPy oracle's AA pattern (lbgen.reference.aa,
typed from the paper) equals its pull stepper; a shear wave decays at the exact rate nu k^2; what
cannot run in place is refused in words before any work."""
from __future__ import annotations

import numpy as np
import pytest

import lbgen
from helpers import bounce_boundaries
from lbgen.codegen.spec import KernelSpec, SpecError
from lbgen.geometry import Bodies, Sphere
from lbgen.model.velocity_set import velocity_set
from lbgen.reference import aa, bulk, bulk3d
from lbgen.simulation.parameters import SimulationError

#: (velocity set, layout, VL, precision, shape, storage): every layout in each dimension, both
#: precisions, and FluidX3D's 16-bit storage (deviations f - w_p: the slots' weights are the same)
CASES = [("d2q9", "caosoa", 4, "double", (10, 16), None), ("d2q9", "soa", None, "single", (10, 16), None),
         ("d2q9", "aos", None, "double", (10, 16), None), ("d2q9", "csoa", 4, "single", (10, 16), None),
         ("d3q19", "caosoa", 4, "single", (6, 5, 16), None), ("d3q19", "soa", None, "double", (6, 5, 16), None),
         ("d3q19", "aos", None, "single", (6, 5, 16), None), ("d3q19", "csoa", 4, "double", (6, 5, 16), None),
         ("d3q19", "soa", None, "single", (6, 5, 16), "fp16s")]


def _program(programs, vs, layout, vl, precision, shape, storage=None):
    """One in-place program: its library holds the pull kernels (fused) too."""
    spec = KernelSpec(backend="c", layout=layout, vl=vl, velocity_set=vs, precision=precision, streaming="inplace",
                      storage=storage)
    return programs(spec, shape, strict=True, threads=2)


@pytest.mark.parametrize("vs, layout, vl, precision, shape, storage", CASES)
def test_inplace_kernels_give_the_pull_state_bit_for_bit(programs, vs, layout, vl, precision, shape, storage):
    prog = _program(programs, vs, layout, vl, precision, shape, storage)
    rng = np.random.default_rng(3)
    rho = 1 + 0.02 * rng.random(shape)
    u = [0.03 * rng.standard_normal(shape) for _ in shape]
    params = {n: 0.0 for n in prog.parameter_names} | {"tau": 0.7, "ax": 2e-5}
    for bounds in ({}, bounce_boundaries(shape)):
        prog.set_boundaries(**bounds)
        f, g, a = prog.allocate(), prog.allocate(), prog.allocate()
        prog.init_equilibrium(f, rho, *u, 1.0)
        prog.init_equilibrium(a, rho, *u, 1.0)
        for step in range(5):
            prog.halo(f)
            f, g = prog.step(f, g, params)
            if step % 2 == 0:
                prog.halo(a)
            prog.step_inplace(a, step % 2 == 1, params)
            seen = a.copy()
            if step % 2 == 0:
                prog.aa_normalise(seen)           # a copy: the run goes on from the odd-parity buffer
            pulled, inplace = prog.layout.unpack(f), prog.layout.unpack(seen)
            if "solid" in bounds and step % 2:      # natural after aa_odd: solid cells keep bounced values
                fluid = bounds["solid"] == 0
                assert np.array_equal(pulled[:, fluid], inplace[:, fluid]), (bool(bounds), step + 1)
            else:                                   # aa_normalise zeroes them, as the pull leaves them
                assert np.array_equal(pulled, inplace), (bool(bounds), step + 1)
            assert np.isfinite(pulled).all()
    assert prog.calls["aa_even"] == 6 and prog.calls["aa_odd"] == 4 and prog.calls["aa_fold"] == 6


def test_the_aa_oracle_equals_the_pull_oracle():
    """lbgen.reference.aa steps the pattern on one array; after even and odd counts its state is the
    pull stepper's, bit for bit (the same collision on the same values; only the slots differ)."""
    vs = velocity_set("d2q9")
    rng = np.random.default_rng(5)
    f = bulk.physical_equilibrium(1 + 0.02 * rng.random((8, 12)), 0.02 * rng.random((8, 12)),
                                  0.02 * rng.random((8, 12)), np.ones((8, 12)), vs=vs)
    hops = np.array(vs.e, dtype=int)
    collide = lambda fin: bulk.collide_bgk(fin, 0.7, (1e-5, 0.0), vs=vs)  # noqa: E731
    for steps in (1, 2, 3, 4):
        assert np.array_equal(aa.run(f, steps, hops, vs.opposite, collide), bulk.run(f, steps, tau=0.7,
                                                                                   force=(1e-5, 0.0), vs=vs))
    lat = bulk3d.lattice("d3q19")
    f3 = bulk3d.equilibrium(1 + 0.02 * rng.random((6, 5, 8)), [0.02 * rng.random((6, 5, 8)) for _ in range(3)], lat)
    collide3 = lambda fin: bulk3d.collide(fin, "bgk", tau=0.8, lat=lat)  # noqa: E731
    for steps in (1, 2, 3):
        assert np.array_equal(aa.run(f3, steps, lat.c, lat.opposite, collide3), bulk3d.run(f3, steps, tau=0.8, lat=lat))
    # the odd-parity array itself is not the state: the oracle's reading back is what makes it so
    A = f3.copy()
    aa.even_step(A, lat.c, lat.opposite, collide3)
    assert not np.array_equal(A, bulk3d.run(f3, 1, tau=0.8, lat=lat))


def test_one_buffer_and_the_pull_state_through_the_simulation():
    shape = (8, 6, 16)
    kw = dict(layout="caosoa", vl=4, strict=True, tau=0.7, walls="z", lid={"z-high": (0.03, 0.0, 0.0)},
              mask=np.pad(np.ones((2, 2, 2), bool), ((3, 3), (2, 2), (5, 9))))
    pull, inplace = (lbgen.Simulation(*shape, streaming=s, **kw) for s in ("pull", "inplace"))
    for sim in (pull, inplace):
        sim.set_fields(1.0, u=(0.01, 0.0, 0.0))
    buffers = [[b for r in sim.regions for b in (r.f, r.g) if b is not None] for sim in (pull, inplace)]
    assert [len(b) for b in buffers] == [2, 1]
    assert sum(b.nbytes for b in buffers[0]) == 2 * sum(b.nbytes for b in buffers[1]) == 2 * inplace.layout.size * 8
    for n in (3, 2, 1):        # odd, odd, even step counts: the parity read back at 3 and 5, natural at 6
        pull.step(n)
        inplace.step(n)
        assert np.array_equal(pull.state(), inplace.state())
    fp, fi = pull.fields(), inplace.fields()
    assert all(np.array_equal(fp[k], fi[k]) for k in fp)
    assert pull.diagnostics() == inplace.diagnostics()
    # a restore at an odd step continues bit for bit
    for sim in (pull, inplace):
        sim.step(1)
    saved, at = inplace.state(), inplace.time_step
    inplace.step(2)
    inplace.restore(saved, at)
    for sim in (pull, inplace):
        sim.step(3)
    assert np.array_equal(pull.state(), inplace.state()) and inplace.time_step == pull.time_step == 10


OPEN_CASES = [
    ((14, 8), dict(velocity_set="d2q9", layout="soa", walls="y-low", slip="y-high",
                   inlet={"x-low": ("uniform", 0.04)}, outflow="x-high")),
    ((12, 8), dict(velocity_set="d2q9", layout="soa", walls="y", lid={"y-high": (0.03, 0.0)},
                   inlet={"x-low": ("parabolic", 0.04)}, outlet={"x-high": 0.99})),
    ((10, 6, 16), dict(layout="caosoa", vl=4, walls="yz", inlet={"x-low": ("parabolic", 0.05)},
                       outlet={"x-high": 0.99})),
    ((10, 6, 16), dict(layout="caosoa", vl=4, walls="z", slip="y", inlet={"x-low": ("uniform", 0.05)},
                       outflow="x-high")),
    # the thermal sets (hops of 3): the equilibrium inlet at T_in, the outflow and the slip walls read the
    # three planes nearest each face from the snapshot
    ((14, 8), dict(velocity_set="d2q37", collision="bgk", layout="soa", walls="y-low", slip="y-high",
                   inlet={"x-low": ("uniform", 0.05)}, outflow="x-high", inlet_temperature=1.02)),
    ((10, 6, 12), dict(velocity_set="d3q39", collision="bgk", layout="caosoa", vl=4, slip="yz",
                       inlet={"x-high": ("uniform", 0.04)}, outflow="x-low", inlet_temperature=0.98)),
]


def _open_runs(shape, kw, backend):
    """The strict C pull run and the in-place run on ``backend`` of one open-face case, stepped 1..5
    steps from the same random fields: the pair of states after each."""
    rng = np.random.default_rng(1)
    rho, u = 1 + 0.01 * rng.random(shape), [0.02 * rng.standard_normal(shape) for _ in shape]
    sims = [lbgen.Simulation(*shape, strict=True, tau=0.7, streaming="pull", **kw),
            lbgen.Simulation(*shape, strict=True, tau=0.7, streaming="inplace", backend=backend, **kw)]
    for t in range(1, 6):
        states = []
        for sim in sims:
            sim.set_fields(rho, *u)
            sim.step(t)
            states.append(sim.state())
        yield t, states


@pytest.mark.parametrize("shape, kw", OPEN_CASES)
def test_open_faces_in_place_give_the_pull_bits(shape, kw):
    """Velocity inlets, pressure outlets, outflows and free slip (lbgen.simulation.open_faces; validated
    in pull by tests/simulation/test_open_poiseuille.py, test_open_outflow.py) in place: the sweep reads the open faces' planes
    from a snapshot taken before it (its neighbours overwrite their slots meanwhile), so the state after
    1..5 steps is the pull state bit for bit, from random fields (every rule acts from step 1)."""
    for t, states in _open_runs(shape, kw, "c"):
        assert np.array_equal(*states), t
        assert np.isfinite(states[0]).all()


@pytest.mark.parametrize("shape, kw", [pytest.param(*c, marks=() if i in (0, 4) else (pytest.mark.slow,))
                                       for i, c in enumerate(OPEN_CASES)])
@pytest.mark.parametrize("backend", ["opencl", "cuda-shim"])
def test_open_faces_in_place_on_the_gpu_runtimes_give_the_c_pull_bits(backend, shape, kw):
    """The same on the GPU kernels (templates/gpu/inplace.j2: aa_lid_rho takes the snapshot behind
    the densities): a Simulation in place on OpenCL or the CUDA shim ends each count of steps with
    the strict C pull run's bits."""
    from lbgen.backends import available
    ok, why = available(backend)
    if not ok:
        pytest.skip(why)
    for t, states in _open_runs(shape, kw, backend):
        assert np.array_equal(*states), t


@pytest.mark.parametrize("shape, spheres, kw", [
    ((24, 16), [((7.6, 6.3), 3.4), ((15.2, 10.1), 1.6)], dict(velocity_set="d2q9", layout="soa", walls="y")),
    ((14, 10, 12), [((5.5, 4.6, 5.2), 2.6)], dict(velocity_set="d3q19", layout="caosoa", vl=2)),
])
@pytest.mark.parametrize("scheme, backend", [("halfway", "c"), ("bouzidi", "c"), ("quadratic", "c"),
                                             ("quadratic", "opencl"), ("bouzidi", "cuda-shim")])
def test_bodies_in_place_give_the_pull_bits_and_forces_every_step(shape, spheres, kw, scheme, backend):
    """Bodies (lbgen.simulation.bodies: half-way and Bouzidi et al. 2001 bounce-back, Ladd's momentum
    exchange; validated in pull by tests/simulation/test_bodies.py and test_body_drag.py) in place: before an odd step the
    link kernels read and write f*_p(x) in slot opp(p) of x + c_p as the buffer's addresses go (a
    clustered lane's halo row included; on the GPU kernels in 3D the next lane's row:
    ``inplace_odd_slots``), so each step's force on each body and the state are the C pull run's bits,
    on C, OpenCL and the CUDA kernels (host shim)."""
    from lbgen.backends import available
    ok, why = available(backend)
    if not ok:
        pytest.skip(why)
    bodies = Bodies(shape, [Sphere(c, r) for c, r in spheres], names=[f"b{i}" for i in range(len(spheres))])
    rng = np.random.default_rng(2)
    rho, u = 1 + 0.01 * rng.random(shape), [0.02 * rng.standard_normal(shape) for _ in shape]
    sims = [lbgen.Simulation(*shape, strict=True, tau=0.7, streaming=s, bodies=bodies, body_bc=scheme, backend=b, **kw)
            for s, b in (("pull", "c"), ("inplace", backend))]
    for sim in sims:
        sim.set_fields(rho, *u)
    for step in range(1, 7):          # single steps: the in-place parity runs on (no read-back between)
        for sim in sims:
            sim.step(1)
        pulled, inplace = (sim.forces() for sim in sims)
        assert all(np.array_equal(pulled[k], inplace[k]) for k in pulled), step
        assert all(np.abs(v).max() > 0 for v in pulled.values())
    assert np.array_equal(sims[0].state(), sims[1].state())


@pytest.mark.slow
@pytest.mark.parametrize("extra", [dict(precision="single"), dict(storage="fp16s")])
def test_open_faces_and_a_body_in_place_in_single_and_16_bit_storage(extra):
    """A channel (inlet, outflow, wall, slip) around a Bouzidi cylinder in single precision and in
    FluidX3D's 16-bit storage (deviations f - w_p): the snapshot and the link values convert as
    every kernel does, so the force each step and the state are pull's bits."""
    shape = (14, 8)
    kw = dict(velocity_set="d2q9", layout="soa", walls="y-low", slip="y-high", inlet={"x-low": ("uniform", 0.04)},
              outflow="x-high", bodies=Bodies(shape, [Sphere((7.3, 4.2), 2.1)], names=["c"]), body_bc="bouzidi")
    rng = np.random.default_rng(1)
    rho, u = 1 + 0.01 * rng.random(shape), [0.02 * rng.standard_normal(shape) for _ in shape]
    sims = [lbgen.Simulation(*shape, strict=True, streaming=s, **kw, **extra) for s in ("pull", "inplace")]
    for sim in sims:
        sim.set_fields(rho, *u)
    for step in range(5):
        for sim in sims:
            sim.step(1)
        assert np.array_equal(*(sim.forces()["c"] for sim in sims)), step
    assert np.array_equal(sims[0].state(), sims[1].state())


def test_a_shear_wave_decays_at_nu_k2_in_place():
    """The exact solution of a shear wave u_x = U sin(k y) of the Navier-Stokes equations decays as
    exp(-nu k^2 t), nu = c_s^2 (tau - 1/2) (lattice units; e.g. Krueger et al., The Lattice Boltzmann
    Method, 2017, section 4.5)."""
    lx, ly, tau, steps = 4, 32, 0.8, 301
    sim = lbgen.Simulation(lx, ly, velocity_set="d2q9", layout="soa", streaming="inplace", tau=tau)
    k = 2 * np.pi / ly
    y = np.arange(ly)[None, :] * np.ones((lx, 1))
    sim.set_fields(1.0, u=(1e-3 * np.sin(k * y), 0.0 * y))
    sim.step(steps)                         # odd: read back from the odd parity
    ux = sim.fields()["ux"]
    amplitude = 2 * np.mean(ux * np.sin(k * y))
    nu = (tau - 0.5) / 3                   # c_s^2 = 1/3 in lattice units (hops per step)
    expected = 1e-3 * np.exp(-nu * k ** 2 * steps)
    # 0.44 % off at k = 2 pi / 32 (the lattice's O(k^2) dispersion); a viscosity off by 1 % is 1.2 % off
    assert abs(amplitude / expected - 1) < 8e-3


@pytest.mark.parametrize("kw, words", [
    (dict(time_block=2), "time_block=2"),
    (dict(fused=False), "fused=False"),
    (dict(device_backend="cuda-shim", host_columns=2), "device_backend='cuda-shim'"),
    (dict(streaming="aa"), "streaming='aa'"),
])
def test_what_cannot_run_in_place_is_refused_before_any_work(kw, words, monkeypatch):
    from lbgen.codegen import render
    monkeypatch.setattr(render, "generate", lambda spec: pytest.fail("rendered before the refusal"))
    kw = {"streaming": "inplace"} | kw
    with pytest.raises((SimulationError, SpecError, ValueError)) as e:
        lbgen.Simulation(8, 6, 8, **kw)
    assert words in str(e.value) and ("inplace" in str(e.value) or "aa" in str(e.value))


def test_thermal_walls_are_refused_by_the_spec_on_every_backend():
    for backend in ("c", "opencl", "cuda"):
        with pytest.raises(SpecError, match="thermal walls"):
            KernelSpec(backend=backend, velocity_set="d2q37", walls=True, streaming="inplace").validate()
        assert KernelSpec(backend=backend, streaming="inplace").validate().streaming == "inplace"
    with pytest.raises(SpecError, match="unknown streaming 'push'"):
        KernelSpec(streaming="push").validate()


def test_ranks_refuse_in_place_what_one_process_refuses():
    """Under MPI (tests/parallel/test_inplace_mpi.py runs it) the same words, before any work."""
    MPI = pytest.importorskip("mpi4py.MPI")
    from lbgen.parallel.simulation import DistributedSimulation
    with pytest.raises(SimulationError, match="streaming='inplace' does not run with time_block=2"):
        DistributedSimulation(MPI.COMM_SELF, 8, 6, 8, streaming="inplace", time_block=2)
    with pytest.raises(SimulationError, match="streaming='inplace' does not run with fused=False"):
        DistributedSimulation(MPI.COMM_SELF, 8, 6, streaming="inplace", velocity_set="d2q9", fused=False)


@pytest.mark.slow
@pytest.mark.parametrize("vs, args", [("d2q9", ("5",)), ("d3q19", ("5", "8", "8", "8", "lid"))])
def test_the_emitted_in_place_example_ends_with_the_pull_example_fields(tmp_path, vs, args):
    """`lbgen emit --streaming inplace`: the header states the step-parity contract, the example steps
    one buffer (an odd count, read back through aa_normalise) and writes the pull example's fields."""
    import shutil
    import subprocess
    from helpers import make_example
    from lbgen.codegen.emit import emit
    if shutil.which("make") is None or shutil.which("gcc") is None:
        pytest.skip("make and gcc are needed to build the emitted example")
    fields = {}
    for streaming in ("pull", "inplace"):
        folder = tmp_path / streaming
        spec = KernelSpec(layout="soa", velocity_set=vs, streaming=streaming)
        emit(spec, folder)
        header = (folder / "lbgen_kernels.h").read_text()
        assert ("step-parity contract" in header) == (streaming == "inplace")
        assert ("lbgen_alloc(lx, ly" in (folder / "example.c").read_text().split("*g = ")[1][:40]) == (
            streaming == "pull")                          # in place: g is NULL, one buffer
        make_example(folder, spec)
        subprocess.run(["./example", *args], cwd=folder, check=True, capture_output=True)
        fields[streaming] = (folder / "example_fields.txt").read_text()
    assert fields["pull"] == fields["inplace"] and len(fields["pull"].splitlines()) > 100
