"""The 3D thermal walls across Z in the C kernels (issue 39): propagate, bc, collide of a
D3Q39 lattice between a hot and a cold plate equal the independent NumPy oracle
(``lbgen.reference.walls3d``, typed from the scheme's description) to 1e-12, per held side,
adiabatic or fixed; mass conserved to round-off; the refusals in words."""
import numpy as np
import pytest

from lbgen.codegen.spec import KernelSpec, SpecError
from lbgen.reference import bulk3d
from lbgen.simulation.parameters import Walls
from walls3d_support import FORCE, SHAPE, TAU, oracle as _oracle, run as _run, state as _state


def _program(layout="soa", vl=None, precision="double", name="d3q39"):
    from programs import PROGRAMS
    return PROGRAMS.of("c", SHAPE, True, layout=layout, vl=vl, velocity_set=name, precision=precision, walls=True)


@pytest.mark.parametrize("walls,sides", [(Walls(T_bottom=1.1, T_top=0.9), (True, True)),
                                         (Walls(T_bottom=1.05, adiabatic_top=True, tau_wall=0.9), (True, True)),
                                         (Walls(T_bottom=1.1, T_top=0.9), (True, False))])
def test_walls_equal_the_oracle(walls, sides):
    program = _program()
    f0 = _state()
    out = _run(program, f0, 3, walls, sides)
    ref = _oracle(f0, 3, walls, sides)
    assert np.abs(out - ref).max() < 1e-12
    if sides == (True, True):      # no mass crosses a wall
        assert abs(out.sum() - f0.sum()) < 1e-12 * f0.sum()
    # the walls did something: a periodic step differs by far more than round-off
    periodic = bulk3d.collide_bgk(bulk3d.stream(f0, "d3q39"), TAU, FORCE, "d3q39")
    assert np.abs(_oracle(f0, 1, walls, sides) - periodic).max() > 1e-4


@pytest.mark.slow
@pytest.mark.parametrize("layout,vl,precision", [("caosoa", 4, "double"), ("csoa", 4, "double"), ("aos", None, "double"),
                                                 ("soa", None, "single"), ("soa", None, "mixed")])
def test_walls_every_layout_and_precision(layout, vl, precision):
    walls = Walls(T_bottom=1.1, T_top=0.9)
    f0 = _state()
    out = _run(_program(layout, vl, precision), f0, 2, walls)
    ref = _oracle(f0, 2, walls)
    assert np.abs(out - ref).max() < (1e-12 if precision == "double" else 2e-6)
    assert np.array_equal(_run(_program(layout, vl, precision), f0, 2, walls, fused=True), out)   # fused_walls


def test_refusals_in_words():
    with pytest.raises(SpecError, match=r"d3q19 is an isothermal 3D set: walls=True"):
        KernelSpec(velocity_set="d3q19", walls=True).validate()
    with pytest.raises(SpecError, match=r"'reference' is the production code's 2D bc; the 3D thermal walls"):
        KernelSpec(velocity_set="d3q39", walls=True, wall_scheme="reference").validate()
    from lbgen.codegen.kernel_api import check_sizes3d
    from lbgen.model.velocity_set import velocity_set
    spec = KernelSpec(velocity_set="d3q39", layout="soa", walls=True).validate()
    assert "lz=6 is too small for walls: they need lz >= 8" == check_sizes3d(spec, velocity_set("d3q39"), 4, 4, 6)
    assert check_sizes3d(spec, velocity_set("d3q39"), 4, 4, 8) is None


def test_simulation_conduction_and_no_slip_planes():
    """Through lbgen.Simulation (C, the program above): steady conduction between plates at 1.01
    and 0.99 is linear over the central half (Fourier's law) and reaches the wall temperatures at
    the oracle's planes (tests/model/test_walls3d.py: 2.23 and 2.46 rows from the edge rows);
    a body-force channel flow (plane Poiseuille, the exact parabola) vanishes at mirror-image
    no-slip planes 1.54 rows from the edge rows (D3Q39, BGK tau = 0.8, LZ = 32)."""
    from lbgen.simulation.runner import Simulation
    n, z = 32, np.arange(32)
    central = slice(8, 24)
    sim = Simulation(1, 1, n, velocity_set="d3q39", walls=Walls(T_bottom=1.01, T_top=0.99), tau=TAU, layout="soa",
                     strict=True)
    sim.set_fields(1.0, 0.0, 0.0, 0.0, T=1.0)
    mass = sim.diagnostics()["mass"]
    sim.step(12000)
    T = sim.fields()["T"].reshape(-1)
    slope, intercept = np.polyfit(z[central], T[central], 1)
    assert np.abs(slope * z[central] + intercept - T[central]).max() < 0.005 * 0.02
    assert abs((1.01 - intercept) / slope - 2.2266) < 1e-3
    assert abs(n - 1 - (0.99 - intercept) / slope - 2.4585) < 1e-3
    assert abs(sim.diagnostics()["mass"] - mass) < 1e-11 * mass
    flow = Simulation(1, 1, n, velocity_set="d3q39", walls=Walls(), tau=TAU, layout="soa", strict=True,
                      gravity=(1e-6, 0.0, 0.0))
    flow.set_fields(1.0, 0.0, 0.0, 0.0, T=1.0)
    flow.step(12000)
    ux = flow.fields()["ux"].reshape(-1)
    low, high = np.sort(np.roots(np.polyfit(z[central], ux[central], 2)).real)
    assert abs(low - 1.5398) < 1e-3 and abs(n - 1 - high - low) < 1e-6
