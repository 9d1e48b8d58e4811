"""Open faces (lbgen.simulation.open_faces) in the C kernels against the independent oracle
(lbgen.reference.open: Ladd's velocity bounce-back, Krueger et al. 2017 eq. 5.53's
anti-bounce-back, zero-gradient outflow, specular free slip), 2D and 3D, every layout, fused
and propagate + collide, after a few steps from a random near-equilibrium state, to 1e-12;
single precision to its rounding; the faces' kinds mixed on one lattice (edges and corners
where kinds meet included); OpenCL and the CUDA kernels (through the host shim) alike;
3D time blocks (fused_tb) take them on the sets whose hops are 1; the thermal sets' refuse in words."""
from __future__ import annotations

import numpy as np
import pytest

from lbgen.model.velocity_set import velocity_set
from lbgen.reference import bulk, bulk3d
from lbgen.reference.open import OpenBoundaries, run_open
from lbgen.simulation.open_faces import face_index, inflow_array
from programs import PROGRAMS

STEPS = 3
TAU = 0.8
#: the kinds of the six (four) faces of each case; ('lid', u) and ('outlet', rho) carry a value
CASES = {
    2: {"inlet-outlet": {"x-low": ("inlet", None), "x-high": ("outlet", 1.02), "y-low": ("slip", None),
                         "y-high": ("lid", (0.02, 0.0))},
        "inlet-outflow": {"x-low": ("inlet", None), "x-high": ("outflow", None), "y-low": ("wall", None),
                          "y-high": ("slip", None)}},
    3: {"inlet-outlet": {"x-low": ("inlet", None), "x-high": ("outlet", 0.98), "y-low": ("slip", None),
                         "y-high": ("slip", None), "z-low": ("wall", None), "z-high": ("outflow", None)},
        "mixed": {"x-low": ("inlet", None), "x-high": ("outflow", None), "y-low": ("outlet", 1.01),
                  "y-high": ("slip", None), "z-low": ("lid", (0.01, 0.02, 0.0)), "z-high": ("slip", None)}},
}
SHAPES = {2: (6, 8), 3: (5, 4, 16)}
LAYOUTS = [("aos", None), ("soa", None), ("csoa", 4), ("caosoa", 4), ("caosoa", 8)]
FAST = {(2, "d2q9", "soa"), (2, "d2q9", "caosoa"), (3, "d3q19", "soa"), (3, "d3q27", "csoa")}


def _params():
    for D, name in ((2, "d2q9"), (3, "d3q19"), (3, "d3q27")):
        for layout, vl in LAYOUTS:
            if D == 2 and vl == 8:
                continue
            marks = () if (D, name, layout) in FAST else (pytest.mark.slow,)
            yield pytest.param(D, name, layout, vl, marks=marks, id=f"{name}-{layout}{vl or ''}")


def _state(D, name, shape, rng):
    """A random near-equilibrium state and the oracle's collision (lattice units)."""
    if D == 2:
        vs = velocity_set(name)
        r = float(vs.r)
        rho, u = 1 + 0.05 * rng.standard_normal(shape), 0.04 * r * rng.standard_normal((2,) + shape)
        f0 = bulk.equilibrium(rho, u[0], u[1], 1.0, vs) * (1 + 1e-2 * rng.standard_normal((vs.Q,) + shape))
        lattice = (np.array(vs.velocities), np.array([float(w) for w in vs.weights]), 1 / r ** 2)
        return f0, lattice, r, (lambda g: bulk.collide(g, "bgk", tau=TAU, vs=vs))
    lat = bulk3d.lattice(name)
    rho, u = 1 + 0.05 * rng.standard_normal(shape), 0.04 * rng.standard_normal((3,) + shape)
    f0 = bulk3d.equilibrium(rho, u, lat) * (1 + 1e-2 * rng.standard_normal((lat.Q,) + shape))
    return f0, (lat.c, lat.w, lat.cs2), np.sqrt(3.0), (lambda g: bulk3d.collide(g, "bgk", tau=TAU, lat=lat))


def face_inputs(faces, shape, rng, r):
    """The kernels' face bits, lid velocities (lattice units), inlets {face: velocities} (lattice
    units), the oracle's velocities {face: model units}, rho_out and the oracle's outlet densities
    of the faces {'x-low': (kind, value)}; the inlets' velocities drawn from ``rng``."""
    D = len(shape)
    bits = dict(walls=0, lids=0, inlets=0, outlets=0, outflows=0, slips=0)
    lid, rho_out, inlets, velocity, rhos = np.zeros((2 * D, D)), np.ones(2 * D), {}, {}, {}
    for face, (kind, value) in faces.items():
        index = face_index(tuple(face.split("-")))
        bits[{"lid": "walls", "wall": "walls"}.get(kind, kind + "s")] |= 1 << index
        if kind == "lid":
            bits["lids"] |= 1 << index
            lid[index], velocity[face] = r * np.asarray(value), np.asarray(value)
        elif kind == "inlet":
            a = "xyz".index(face[0])
            u = 0.03 * rng.standard_normal(tuple(n for b, n in enumerate(shape) if b != a) + (D,))
            inlets[tuple(face.split("-"))], velocity[face] = r * u, u      # model units: xi = r c
        elif kind == "outlet":
            rho_out[index] = rhos[face] = value
    return bits, lid, rho_out, inlets, velocity, rhos


def case_inputs(D, name, case, seed=3, steps=STEPS):
    """(initial state, the kernels' set_boundaries keywords, the oracle's state after ``steps``)."""
    shape = SHAPES[D]
    rng = np.random.default_rng(seed)
    f0, (c, w, cs2), r, collide = _state(D, name, shape, rng)
    bits, lid, rho_out, inlets, velocity, rhos = face_inputs(CASES[D][case], shape, rng, r)
    kinds = {f: "wall" if k == "lid" else k for f, (k, _) in CASES[D][case].items()}
    want = run_open(f0, steps, OpenBoundaries(shape, c, w, cs2, kinds, velocity, rhos), collide)
    periodic = run_open(f0, steps, OpenBoundaries(shape, c, w, cs2), collide)
    assert np.abs(want - periodic).max() > 1e-3          # the faces did something
    bc = dict(bits, lid=lid, rho_out=rho_out, inflow=inflow_array(inlets, shape))
    return f0, bc, want


def kernel_run(prog, f0, bc, fused):
    prog.set_boundaries(**bc)
    f, g = prog.pack(f0), prog.allocate()
    params = {"tau": TAU, **{k: 0.0 for k in ("ax", "ay", "az")[:prog.D]}}
    for _ in range(STEPS):
        prog.step_halo(f)
        f, g = prog.step(f, g, params, fused=fused)
    return prog.unpack(f)


@pytest.mark.parametrize("D,name,layout,vl", list(_params()))
def test_open_faces_match_the_oracle(D, name, layout, vl):
    prog = PROGRAMS.of("c", SHAPES[D], layout=layout, vl=vl, velocity_set=name, collision="bgk")
    for case in CASES[D]:
        f0, bc, want = case_inputs(D, name, case)
        for fused in (True, False):
            got = kernel_run(prog, f0, bc, fused)
            err = np.abs(got - want).max()
            assert err < 1e-12, f"{name} {layout}{vl or ''} {case} fused={fused}: max error {err:.3g}"


GPU = [pytest.param("opencl", 2, "d2q9", "soa", None), pytest.param("opencl", 3, "d3q19", "caosoa", 4),
       pytest.param("cuda-shim", 2, "d2q9", "caosoa", 4), pytest.param("cuda-shim", 3, "d3q27", "soa", None),
       pytest.param("opencl", 3, "d3q27", "aos", None, marks=pytest.mark.slow),
       pytest.param("cuda-shim", 3, "d3q19", "csoa", 8, marks=pytest.mark.slow)]


@pytest.mark.parametrize("runtime,D,name,layout,vl", GPU)
def test_open_faces_on_the_gpu_runtimes_match_the_oracle(runtime, D, name, layout, vl):
    from lbgen.backends import available
    ok, why = available(runtime)
    if not ok:
        pytest.skip(why)
    prog = PROGRAMS.of(runtime, SHAPES[D], layout=layout, vl=vl, velocity_set=name, collision="bgk")
    for case in CASES[D]:
        f0, bc, want = case_inputs(D, name, case)
        for fused in (True, False):
            err = np.abs(kernel_run(prog, f0, bc, fused) - want).max()
            assert err < 1e-12, f"{runtime} {name} {layout}{vl or ''} {case} fused={fused}: max error {err:.3g}"


@pytest.mark.parametrize("D,name", [(2, "d2q9"), (3, "d3q19")])
def test_open_faces_single_precision(D, name):
    prog = PROGRAMS.of("c", SHAPES[D], layout="soa", vl=None, velocity_set=name, collision="bgk",
                       precision="single")
    f0, bc, want = case_inputs(D, name, "inlet-outlet")
    err = np.abs(kernel_run(prog, f0, bc, True) - want).max()
    assert err < 2e-6, f"{name} single: max error {err:.3g}"


@pytest.mark.parametrize("name, layout, vl", [("d3q19", "soa", None), ("d3q19", "caosoa", 4),
                                               pytest.param("d3q27", "caosoa", 8, marks=pytest.mark.slow)])
def test_open_faces_in_time_blocks_give_the_single_steps_bits(programs, name, layout, vl):
    """3D, hops of 1: fused_tb (depth 2 and 3) takes the open faces as fused does -- an outflow's or slip's
    source, a neighbour along the face, through the row pointers of the step before -- so 6 steps in
    blocks are 6 single steps bit for bit (strict builds), for both cases' faces (inlet, outlet, outflow, slip,
    wall, lid on one lattice), and equal the oracle (lbgen.reference.open) after 3."""
    from helpers import time_blocks_and_single_steps
    prog = programs.of("c", SHAPES[3], True, layout=layout, vl=vl, velocity_set=name, collision="bgk")
    params = {"tau": TAU, "ax": 0.0, "ay": 0.0, "az": 0.0}
    for case in CASES[3]:
        f0, bc, want = case_inputs(3, name, case)
        prog.set_boundaries(**bc)
        for depth in (2, 3):
            blocked, single = time_blocks_and_single_steps(prog, f0, params, steps=6, depth=depth)
            assert np.array_equal(blocked, single), (case, depth)
        blocked, _ = time_blocks_and_single_steps(prog, f0, params, steps=3, depth=3)
        assert np.abs(blocked - want).max() < 1e-12, case
    prog.set_boundaries()


def test_a_duct_simulation_in_time_blocks_gives_the_single_steps_bits():
    """Simulation(time_block=3) with a parabolic inlet, a pressure outlet and walls (3D, D3Q19): two
    blocked sweeps (the sweep counter) end with the bits of six single steps."""
    from lbgen.simulation.runner import Simulation
    kw = dict(velocity_set="d3q19", layout="caosoa", vl=4, strict=True, tau=0.7, walls="yz",
              inlet={"x-low": ("parabolic", 0.05)}, outlet={"x-high": 0.99})
    sims = [Simulation(10, 6, 8, time_block=k, **kw) for k in (1, 3)]
    for sim in sims:
        sim.set_fields(1.0, u=(0.02, 0.0, 0.0))
        sim.step(6)
    assert sims[1].sweeps == {"blocked": 2, "single": 0} and sims[0].sweeps["blocked"] == 0
    assert np.array_equal(sims[0].state(), sims[1].state())


def test_open_faces_refused_where_they_cannot_run():
    from lbgen.simulation.parameters import SimulationError
    from lbgen.simulation.runner import Simulation
    kw = dict(velocity_set="d3q39", collision="bgk", slip="yz", inlet={"x-low": 0.05}, outflow="x-high")
    with pytest.raises(SimulationError, match="time_block=2.*fused_tb.*3 planes deep"):
        Simulation(8, 4, 8, time_block=2, **kw)      # the thermal sets' sources lie 3 planes deep
    kw = dict(velocity_set="d3q19", walls="yz", inlet={"x-low": 0.05}, outlet="x-high")
    prog = PROGRAMS.of("c", SHAPES[3], layout="soa", vl=None, velocity_set="d3q19", collision="bgk")
    with pytest.raises(ValueError, match="share face bit"):
        prog.set_boundaries(walls=1, inlets=1, inflow=np.zeros(inflow_array({}, SHAPES[3]).size))
    assert prog.bounds is None and prog.open_bounds is None
