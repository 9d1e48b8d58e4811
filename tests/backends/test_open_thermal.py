"""Open faces on the thermal sets (hops of 2 and 3: lbgen.simulation.open_faces) in the C
kernels against the independent oracle (lbgen.reference.open): the equilibrium inlet at an
inflow temperature (Krueger et al., The Lattice Boltzmann Method, 2017, ch. 5, the equilibrium
scheme), the zero-gradient outflow (the face layer's populations) and the specular free slip
(the mirror image in the half-way face), beside walls and lids; D2Q37 and D3Q39, every layout
family, fused and propagate + collide, a few steps from a random near-equilibrium state, to
1e-12 (measured: 5e-16); single precision to its rounding (1e-7); OpenCL and the CUDA kernels
(through the host shim) alike; D2V17 and D3Q103 too (slow).  The oracle's equilibrium is lbgen.reference.bulk's / bulk3d's, typed from the papers;
the kernels' comes from the model's sympy derivation (open_faces.inlet_equilibrium)."""
from __future__ import annotations

import numpy as np
import pytest

from lbgen.model.velocity_set import velocity_set
from lbgen.reference import bulk, bulk3d
from lbgen.reference.open import OpenBoundaries, run_open
from lbgen.simulation.open_faces import inflow_equilibria
from programs import PROGRAMS
from test_open_faces import STEPS, TAU, face_inputs, kernel_run      # the hop-1 test's faces, steps, tau, stepping

T_IN = 1.03
#: the kinds of the faces of each case; ('lid', u) carries a value
CASES = {
    2: {"inlet-outflow": {"x-low": ("inlet", None), "x-high": ("outflow", None), "y-low": ("lid", (0.02, 0.0)),
                          "y-high": ("slip", None)},
        "inlet-periodic": {"x-low": ("outflow", None), "x-high": ("inlet", None)}},
    3: {"inlet-outflow": {"x-low": ("inlet", None), "x-high": ("outflow", None), "y-low": ("slip", None),
                          "y-high": ("slip", None), "z-low": ("wall", None), "z-high": ("outflow", None)},
        "mixed": {"x-low": ("outflow", None), "x-high": ("inlet", None), "z-low": ("lid", (0.01, 0.02, 0.0)),
                  "z-high": ("slip", None)}},
}
SHAPES = {2: (8, 12), 3: (7, 6, 12)}
LAYOUTS = [("aos", None), ("soa", None), ("csoa", 4), ("caosoa", 4)]
FAST = {(2, "soa"), (3, "caosoa")}
NAMES = {2: "d2q37", 3: "d3q39"}


def _params():
    for D in (2, 3):
        for layout, vl in LAYOUTS:
            marks = () if (D, layout) in FAST else (pytest.mark.slow,)
            yield pytest.param(D, layout, vl, marks=marks, id=f"{NAMES[D]}-{layout}{vl or ''}")


def _state(D, shape, rng, name=None):
    """A random near-equilibrium state (temperature too), the lattice, r (xi = r c), the oracle's
    collision and equilibrium (lattice units)."""
    name = name or NAMES[D]
    if D == 2:
        vs = velocity_set(name)
        r = float(vs.r)
        rho, u, T = 1 + 0.05 * rng.standard_normal(shape), 0.04 * r * rng.standard_normal((2,) + shape), \
            1 + 0.02 * rng.standard_normal(shape)
        f0 = bulk.equilibrium(rho, u[0], u[1], T, vs) * (1 + 1e-2 * rng.standard_normal((vs.Q,) + shape))
        lattice = (np.array(vs.velocities), np.array([float(w) for w in vs.weights]), 1 / r ** 2)
        eq = (lambda rh, ul, Tb: bulk.equilibrium(np.array(rh), np.array(r * ul[0]), np.array(r * ul[1]), Tb, vs))
        return f0, lattice, r, (lambda g: bulk.collide(g, "bgk", tau=TAU, vs=vs)), eq
    lat = bulk3d.lattice(name)
    r = 1 / np.sqrt(lat.cs2)
    rho, u, T = 1 + 0.05 * rng.standard_normal(shape), 0.04 * rng.standard_normal((3,) + shape), \
        1 + 0.02 * rng.standard_normal(shape)
    f0 = bulk3d.equilibrium(rho, u, lat, T) * (1 + 1e-2 * rng.standard_normal((lat.Q,) + shape))
    eq = (lambda rh, ul, Tb: bulk3d.equilibrium(np.array(rh), np.asarray(ul), lat, Tb))
    return f0, (lat.c, lat.w, lat.cs2), r, (lambda g: bulk3d.collide(g, "bgk", tau=TAU, lat=lat)), eq


def case_inputs(D, case, seed=5, name=None, steps=STEPS):
    """(initial state, the kernels' set_boundaries keywords, the oracle's state after ``steps``)."""
    shape = SHAPES[D]
    name = name or NAMES[D]
    rng = np.random.default_rng(seed)
    f0, (c, w, cs2), r, collide, eq = _state(D, shape, rng, name)
    bits, lid, _, inlets, velocity, _ = face_inputs(CASES[D][case], shape, rng, r)
    temps = {face: T_IN for face, (kind, _) in CASES[D][case].items() if kind == "inlet"}
    temps.update({tuple(face.split("-")): T_IN for face in list(temps)})
    kinds = {f: "wall" if k == "lid" else k for f, (k, _) in CASES[D][case].items()}
    oracle = OpenBoundaries(shape, c, w, cs2, kinds, velocity, solid=None,
                            temperature={f: t for f, t in temps.items() if isinstance(f, str)}, equilibrium=eq)
    want = run_open(f0, steps, oracle, collide)
    periodic = run_open(f0, steps, OpenBoundaries(shape, c, w, cs2), collide)
    assert np.abs(want - periodic).max() > 1e-3          # the faces did something
    inflow = inflow_equilibria(inlets, {f: t for f, t in temps.items() if isinstance(f, tuple)}, shape, name)
    return f0, dict(bits, lid=lid, inflow=inflow), want


@pytest.mark.parametrize("D,layout,vl", list(_params()))
def test_thermal_open_faces_match_the_oracle(D, layout, vl):
    prog = PROGRAMS.of("c", SHAPES[D], layout=layout, vl=vl, velocity_set=NAMES[D], collision="bgk", open_faces=True)
    for case in CASES[D]:
        f0, bc, want = case_inputs(D, case)
        for fused in (True, False):
            got = kernel_run(prog, f0, bc, fused)
            err = np.abs(got - want).max()
            assert err < 1e-12, f"{NAMES[D]} {layout}{vl or ''} {case} fused={fused}: max error {err:.3g}"


@pytest.mark.slow
@pytest.mark.parametrize("D,name", [(2, "d2v17"), (3, "d3q103")])
def test_the_other_thermal_sets_match_the_oracle(D, name):
    """D2V17 (third order) and D3Q103 (fourth order): the same rules from their own equilibria."""
    prog = PROGRAMS.of("c", SHAPES[D], layout="soa", vl=None, velocity_set=name, collision="bgk", open_faces=True)
    for case in CASES[D]:
        f0, bc, want = case_inputs(D, case, name=name)
        err = np.abs(kernel_run(prog, f0, bc, True) - want).max()
        assert err < 1e-12, f"{name} {case}: max error {err:.3g}"


def test_thermal_inlet_temperature_reaches_the_kernels():
    """The inlet's temperature changes what the kernels give (a broken T_in would not)."""
    D = 2
    prog = PROGRAMS.of("c", SHAPES[D], layout="soa", vl=None, velocity_set=NAMES[D], collision="bgk", open_faces=True)
    f0, bc, _ = case_inputs(D, "inlet-periodic")
    hot = kernel_run(prog, f0, bc, True)
    inlets = {("x", "high"): np.zeros((SHAPES[2][1], 2))}
    cold = dict(bc, inflow=inflow_equilibria(inlets, {}, SHAPES[2], NAMES[2]))
    warm = dict(bc, inflow=inflow_equilibria(inlets, {("x", "high"): T_IN}, SHAPES[2], NAMES[2]))
    assert not np.array_equal(kernel_run(prog, f0, cold, True), kernel_run(prog, f0, warm, True))
    assert np.isfinite(hot).all()


def test_thermal_open_faces_refused_where_they_cannot_run():
    prog = PROGRAMS.of("c", SHAPES[2], layout="soa", vl=None, velocity_set="d2q37", collision="bgk", open_faces=True)
    with pytest.raises(ValueError, match="pressure outlet needs a velocity set whose hops are 1"):
        prog.set_boundaries(outlets=2, inlets=1, inflow=np.zeros(1))
    with pytest.raises(ValueError, match="equilibria at unit density, 1480 values"):
        prog.set_boundaries(inlets=1, outflows=2, inflow=np.zeros(2 * (2 * 8 + 2 * 12)))
    assert prog.bounds is None and prog.open_bounds is None


GPU = [pytest.param("opencl", 2, "soa", None), pytest.param("opencl", 3, "caosoa", 4),
       pytest.param("cuda-shim", 2, "caosoa", 4), pytest.param("cuda-shim", 3, "soa", None),
       pytest.param("opencl", 2, "caosoa", 4, marks=pytest.mark.slow),
       pytest.param("cuda-shim", 3, "csoa", 4, marks=pytest.mark.slow)]


@pytest.mark.parametrize("runtime,D,layout,vl", GPU)
def test_thermal_open_faces_on_the_gpu_runtimes_match_the_oracle(runtime, D, layout, vl):
    from lbgen.backends import available
    ok, why = available(runtime)
    if not ok:
        pytest.skip(why)
    prog = PROGRAMS.of(runtime, SHAPES[D], layout=layout, vl=vl, velocity_set=NAMES[D], collision="bgk", open_faces=True)
    for case in CASES[D]:
        f0, bc, want = case_inputs(D, case)
        for fused in (True, False):
            err = np.abs(kernel_run(prog, f0, bc, fused) - want).max()
            assert err < 1e-12, f"{runtime} {NAMES[D]} {layout}{vl or ''} {case} fused={fused}: max error {err:.3g}"


@pytest.mark.parametrize("D", [2, 3])
def test_thermal_open_faces_single_precision(D):
    prog = PROGRAMS.of("c", SHAPES[D], layout="soa", vl=None, velocity_set=NAMES[D], collision="bgk", open_faces=True,
                       precision="single")
    f0, bc, want = case_inputs(D, "inlet-outflow")
    err = np.abs(kernel_run(prog, f0, bc, True) - want).max()
    assert err < 2e-6, f"{NAMES[D]} single: max error {err:.3g}"


def test_the_thermal_kernels_carry_the_open_faces_only_on_request(tmp_path):
    """KernelSpec.open_faces (`lbgen emit --open-faces`, set by Simulation for a lattice with open
    faces): without it a thermal set's kernels carry no long-hop open-face rules (a third smaller,
    faster to compile) and a program of them refuses open faces before any sweep; the sets whose
    hops are 1 carry theirs either way (one spec, one cache entry)."""
    from click.testing import CliRunner

    from lbgen.cli.main import main
    from lbgen.codegen.render import generate
    from lbgen.codegen.spec import KernelSpec
    plain = generate(KernelSpec(velocity_set="d3q39").validate()).text
    opened = generate(KernelSpec(velocity_set="d3q39", open_faces=True).validate()).text
    assert "in_link" not in plain and "in_link" in opened          # the inlet's equilibrium link
    assert len(plain) < 0.8 * len(opened)
    assert KernelSpec(velocity_set="d2q9", open_faces=True).validate() == KernelSpec(velocity_set="d2q9").validate()
    prog = PROGRAMS.of("c", SHAPES[2], layout="soa", vl=None, velocity_set="d2q37", collision="bgk")
    with pytest.raises(ValueError, match="open_faces=True"):
        prog.set_boundaries(outflows=2)
    assert prog.bounds is None and prog.open_bounds is None
    for flags, has in (([], False), (["--open-faces"], True)):
        out = CliRunner().invoke(main, ["emit", "--velocity-set", "d2q37", "--layout", "soa", *flags,
                                        "-o", str(tmp_path / str(has))])
        assert out.exit_code == 0, out.output
        kernels = (tmp_path / str(has) / "lbgen_kernels.c").read_text()
        assert ("in_link" in kernels) is has
        command = next(line for line in (tmp_path / str(has) / "lbgen_kernels.h").read_text().splitlines()
                       if "lbgen emit --backend" in line)        # the command that regenerates them
        assert ("--open-faces" in command) is has
    refused = CliRunner().invoke(main, ["emit", "--open-faces", "--walls", "-o", str(tmp_path / "w")])
    assert refused.exit_code != 0 and not (tmp_path / "w").exists()
