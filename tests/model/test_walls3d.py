"""Thermal walls in 3D (issue 39): the sympy wall algebra of ``lbgen.model.walls`` for D3Q39
and D3Q103 across any axis against the independent NumPy oracle ``lbgen.reference.walls3d``,
what the walls impose, mass conservation, the rest state, the refusals, and conduction
between plates (Fourier's law: a linear steady profile between two isothermal plates)."""
import numpy as np
import pytest

from lbgen.model import walls as w
from lbgen.model.derived import macroscopic_assignments
from lbgen.model.velocity_set import velocity_set
from lbgen.reference import bulk3d, walls3d


def _state(name, shape, seed=1):
    """A perturbed near-equilibrium state (rho ~ 1, |u| ~ 0.02, T ~ 1) and its stream."""
    lat = bulk3d.lattice(name)
    rng = np.random.default_rng(seed)
    rho = 1 + 0.01 * rng.standard_normal(shape)
    u = 0.02 * rng.standard_normal((3,) + shape)
    T = 1 + 0.02 * rng.standard_normal(shape)
    f = bulk3d.equilibrium(rho, u, lat, T) * (1 + 1e-3 * rng.standard_normal((lat.Q,) + shape))
    return f, bulk3d.stream(f, lat)


def _plane(axis, j):
    index = [slice(None)] * 4
    index[1 + axis] = j
    return tuple(index)


def model_bc(name, g, f_before, axis, T_low, T_high, force_lattice):
    """The bc as the kernels run it, from the model's assignment lists (one per wall row):
    rows H-1 .. 0, N by the row's mass rule, row temperatures from the first bulk row."""
    vs = velocity_set(name)
    out = g.copy()
    H, n = vs.max_hop, g.shape[1 + axis]
    a = dict(zip(("ax", "ay", "az"), np.asarray(force_lattice) * vs.r))   # model units: xi = r c
    for side, T_wall in (("bottom", T_low), ("top", T_high)):
        at = (lambda j: j) if side == "bottom" else (lambda j: n - 1 - j)
        T_bulk = macroscopic_assignments(name).evaluate(g[_plane(axis, at(H))])[-1]
        temps = [T_wall + (H - 1 - j) * (T_wall - T_bulk) for j in range(H)]
        left = [f_before[_plane(axis, at(j))][[vs.opposite[i] for i in w.unknown_set(vs, side, j, axis)]].sum(0)
                for j in range(H)]
        entered = 0.0
        for j in range(H - 1, -1, -1):
            rows = w.wall_assignments(vs, side, j, axis=axis)
            rule = w.mass_rule(vs, side, j, axis=axis)
            params = dict(a, Tw=temps[j])
            if rule == "column":
                params["N"] = sum(left) - entered
            elif rule == "leaving":
                params["N"] = left[j]
            plane = out[_plane(axis, at(j))]
            new = rows.evaluate([plane[int(str(s)[1:])] for s in rows.inputs], **params)
            plane[list(w.unknown_set(vs, side, j, axis))] = new
            out[_plane(axis, at(j))] = plane
            entered = entered + new.sum(0)
    return out


@pytest.mark.parametrize("name,axis", [("d3q39", 2), ("d3q39", 0), ("d3q39", 1), ("d3q103", 2)])
def test_model_wall_rows_equal_the_oracle(name, axis):
    shape = [3, 4, 5]
    shape[axis] = 10
    f, g = _state(name, tuple(shape))
    force = (1e-4, -2e-4, -3e-4)
    oracle = walls3d.apply_walls(g.copy(), f, axis, 1.1, 0.9, (False, False), force, name)
    model = model_bc(name, g, f, axis, 1.1, 0.9, force)
    assert np.abs(model - oracle).max() < 1e-12
    assert np.abs(oracle - g).max() > 1e-4                       # the bc changed the wall rows
    # no mass crosses a wall: each column keeps the mass the stream left it (round-off)
    assert abs(oracle.sum() - f.sum()) < 1e-12 * f.sum()


def test_walls_impose_rest_and_temperature():
    """Rows 0 and 1 of D3Q39 carry u = -a/2 (at rest for the physical velocity) and the row
    temperature; row 2 (one unknown population, (0, 0, 3)) only the mass that left it."""
    name, axis = "d3q39", 2
    lat = bulk3d.lattice(name)
    f, g = _state(name, (3, 4, 10))
    force = np.array([1e-4, -2e-4, -3e-4])
    T_bulk = bulk3d.temperature(g[_plane(axis, 3)], lat)
    out = walls3d.apply_walls(g.copy(), f, axis, 1.1, 0.9, (False, False), force, name)
    for j in (0, 1):
        site = out[_plane(axis, j)]
        rho, u = bulk3d.fields(site, lat)
        assert np.abs(u + 0.5 * force[:, None, None]).max() < 1e-13
        T_row = 1.1 + (2 - j) * (1.1 - T_bulk)
        assert np.abs(bulk3d.temperature(site, lat) - T_row).max() < 1e-12
    assert w.mass_rule(velocity_set(name), "bottom", 2) == "leaving"
    assert len(w.unknown_set(velocity_set(name), "bottom", 2)) == 1


@pytest.mark.parametrize("name", ["d3q39", "d3q103"])
def test_rest_between_walls_at_the_gas_temperature_stays_at_rest(name):
    lat = bulk3d.lattice(name)
    shape = (2, 2, 9)
    f0 = bulk3d.equilibrium(np.ones(shape), np.zeros((3,) + shape), lat, np.ones(shape))
    f = f0
    for _ in range(3):
        f = walls3d.step_walls(f, 0.8, lat=name)
    assert np.abs(f - f0).max() < 1e-14


def test_refusals_name_the_bad_value():
    q39, q37 = velocity_set("d3q39"), velocity_set("d2q37")
    with pytest.raises(ValueError, match=r"wall axis 'w' .* choose one of x, y, z"):
        w.unknown_set(q39, "bottom", 0, "w")
    with pytest.raises(ValueError, match=r"wall axis 2 does not exist in 2D; choose one of x, y"):
        w.unknown_set(q37, "bottom", 0, 2)
    with pytest.raises(ValueError, match=r"unknown wall side 'left'"):
        w.unknown_set(q39, "left", 0)
    with pytest.raises(ValueError, match=r"'reference' is the production code's 2D bc .* D3Q39 .* across z"):
        w.wall_assignments(q39, "bottom", 0, "reference")
    # the 2D channel keeps its names; another axis is named by axis and side
    assert w.wall_assignments(q37, "bottom", 0).name == "wall_bottom_0"
    assert w.wall_assignments(q37, "top", 1, axis="x").name == "wall_x_high_1"
    assert w.unknown_set(q37, "bottom", 2, "x") == tuple(i for i, v in enumerate(q37.velocities) if v[0] >= 3)


@pytest.mark.slow
@pytest.mark.parametrize("axis", [2, 0])
def test_conduction_between_plates_is_linear(axis):
    """Steady conduction between plates at 1.01 and 0.99 (D3Q39, BGK tau = 0.8, LZ = 32):
    Fourier's law with a constant conductivity gives a linear profile; fitted over the central
    half it is linear to 0.5 % of the wall difference (the kinetic layers next to the walls are
    ~4 rows wide), and it reaches the wall temperatures at the effective isothermal planes,
    2.34 rows from the edge rows on average (the hot wall's 0.23 rows nearer than the cold
    one's at this difference), mass kept to round-off.  The start is the line through the wall
    temperatures at the edge rows (at rest, the pressure uniform): the walls must move it 2.34 rows
    inwards; from there the slowest mode (n^2 / (pi^2 kappa), ~350 steps) decays 6 times over
    (from T = 1 the same planes take 12 000 steps; they agree to 1e-5 rows)."""
    name, n, tau, T_low, T_high = "d3q39", 32, 0.8, 1.01, 0.99
    lat = bulk3d.lattice(name)
    shape = [1, 1, 1]
    shape[axis] = n
    shape = tuple(shape)
    T0 = (T_low + (T_high - T_low) * np.arange(n) / (n - 1)).reshape(shape)
    f = bulk3d.equilibrium(np.mean(T0) / T0, np.zeros((3,) + shape), lat, T0)
    mass = f.sum()
    for _ in range(CONDUCTION_STEPS):
        f = walls3d.step_walls(f, tau, axis, T_low, T_high, lat=name)
    T = bulk3d.temperature(f, lat).reshape(-1)
    z = np.arange(n)
    central = slice(n // 4, 3 * n // 4)
    slope, intercept = np.polyfit(z[central], T[central], 1)
    assert np.abs(slope * z[central] + intercept - T[central]).max() < 0.005 * (T_low - T_high)
    low = (T_low - intercept) / slope
    high = n - 1 - (T_high - intercept) / slope
    assert abs(0.5 * (low + high) - CONDUCTION_OFFSET) < 0.02
    assert 0.1 < high - low < 0.35
    assert abs(f.sum() - mass) < 1e-11 * mass


#: steps to the steady state of the conduction test (LZ = 32, tau = 0.8), and the isothermal
#: plane it measures (rows from the edge row, D3Q39 BGK tau = 0.8, T = 1.01 / 0.99)
CONDUCTION_STEPS = 2000
CONDUCTION_OFFSET = 2.34
