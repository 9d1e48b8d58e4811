"""Bodies (lbgen.geometry, lbgen.simulation.bodies), 2D and 3D through the one Simulation: the
link kernels (half-way and Bouzidi-Firdaouss-Lallemand 2001 interpolated bounce-back, Ladd's
momentum exchange) against the NumPy oracle lbgen.reference.bodies (typed from the papers) on
every layout, bit for bit across the C, OpenCL and CUDA-shim backends, the momentum budget of
every step, and the refusals."""
from __future__ import annotations

import numpy as np
import pytest

import lbgen
from lbgen.geometry import Bodies, Cylinder, Sphere
from lbgen.reference import bounce, bulk, bulk3d
from lbgen.reference.bodies import body_boundary
from lbgen.simulation.parameters import SimulationError
from tests.helpers import FAST_LAYOUT_CONFIGS, config_id

SHAPE2 = (24, 32)
SHAPE3 = (12, 12, 16)
G2 = (1e-5, -2e-5)
G3 = (1e-5, -2e-5, 0.5e-5)


def _bodies(D):
    if D == 2:       # two bodies: the forces are per label
        return Bodies(SHAPE2, [Sphere((8.3, 15.6), 4.2), Sphere((17.0, 9.4), 2.7)], names=["big", "small"])
    return Bodies(SHAPE3, [Sphere((5.6, 6.2, 7.7), 2.6), Cylinder((2.7, 3.1), 1.3, axis="y")],
                  names=["ball", "rod"])


def _start(D, bodies, seed=1):
    shape = bodies.shape
    rng = np.random.default_rng(seed)
    rho = 1 + 0.01 * rng.random(shape)
    u = 0.01 * rng.random((D,) + shape)
    if D == 2:
        from lbgen.model.velocity_set import velocity_set
        f = bulk.physical_equilibrium(rho, u[0], u[1], np.ones(shape), vs=velocity_set("d2q9"))
    else:
        f = bulk3d.equilibrium(rho, u, bulk3d.lattice("d3q19"))
    return np.where(bodies.labels[None] > 0, 0.0, f)


def _oracle(D, bodies, f, scheme, steps):
    """The oracle's state and forces ({label: lattice units}) after ``steps`` steps."""
    solid, forces = bodies.labels > 0, {}
    if D == 2:
        from lbgen.model.velocity_set import velocity_set
        vs = velocity_set("d2q9")
        for _ in range(steps):
            st = bounce.bounce_propagate(f, ("y",), None, solid, vs)
            st, forces = body_boundary(f, st, solid, vs.e, vs.opposite, bodies.distance, scheme, "y", bodies.labels)
            with np.errstate(invalid="ignore", divide="ignore"):
                f = bulk.collide(st, "bgk", vs=vs, force=tuple(c / vs.r for c in G2), tau=0.8)
            f[:, solid] = 0.0
        return f, forces
    lat = bulk3d.lattice("d3q19")
    walls = bulk3d.Boundaries(bodies.shape, lat, walls=("z",), solid=solid)
    for _ in range(steps):
        st = walls.apply(bulk3d.stream(f, lat), f)
        st, forces = body_boundary(f, st, solid, lat.c, lat.opposite, bodies.distance, scheme, "z", bodies.labels)
        f = bulk3d.collide(st, "bgk", solid=solid, lat=lat, tau=0.8, force=tuple(c / 3.0 for c in G3))
    return f, forces


def _sim(D, bodies, scheme, backend="c", layout=None, vl=None, precision="double", walls=True):
    return lbgen.Simulation(*bodies.shape, velocity_set="d2q9" if D == 2 else "d3q19", bodies=bodies,
                            body_bc=scheme, gravity=G2 if D == 2 else G3, tau=0.8,
                            walls=("y" if D == 2 else "z") if walls else None, strict=True, backend=backend, layout=layout, vl=vl, precision=precision)


@pytest.mark.parametrize("D", [2, 3])
@pytest.mark.parametrize("scheme", ["halfway", "bouzidi", "quadratic"])
@pytest.mark.parametrize("layout, vl", [pytest.param(*c, id=config_id(c)) for c in FAST_LAYOUT_CONFIGS])
def test_body_links_match_the_oracle_on_every_layout(D, scheme, layout, vl):
    """Two bodies next to a wall, 5 steps: populations to 1e-12 and each body's force (the
    momentum exchange of the last step, model units = r^2 x lattice units) to 1e-12."""
    if D == 3 and layout == "csoa":
        vl = 16                      # LZ = 16
    bodies = _bodies(D)
    f0 = _start(D, bodies)
    sim = _sim(D, bodies, scheme, layout=layout, vl=vl)
    sim.set_populations(f0)
    sim.step(5)
    ref, forces = _oracle(D, bodies, f0, scheme, 5)
    assert np.abs(sim.state() - ref).max() < 1e-12
    got = sim.forces()
    assert set(got) == set(bodies.names)
    for k, name in enumerate(bodies.names, start=1):
        assert np.abs(got[name] - 3.0 * forces[k]).max() < 1e-12 * max(1.0, np.abs(got[name]).max())
        assert np.abs(got[name]).max() > 1e-3           # a force to compare: the start is not at rest
    writes = sim.program.calls["body_put"]
    assert writes == (0 if scheme == "halfway" else 5) and sim.program.calls["body_links"] == 5


@pytest.mark.parametrize("D", [2, 3])
@pytest.mark.parametrize("precision", ["double", "single"])
@pytest.mark.parametrize("scheme", ["bouzidi", "quadratic"])
def test_backends_agree_bit_for_bit(D, precision, scheme):
    """Strict builds: the C, OpenCL and CUDA-shim states equal bit for bit, Bouzidi links included;
    the forces too (double; single-precision OpenCL sums them in float: to 1e-6)."""
    from lbgen.backends import available
    bodies = _bodies(D)
    out = {}
    for backend in ("c", "opencl", "cuda-shim"):
        if not available(backend)[0]:
            continue
        sim = _sim(D, bodies, scheme, backend=backend, precision=precision)
        sim.set_populations(_start(D, bodies))
        sim.step(4)
        out[backend] = sim.state(), sim.forces()
    assert len(out) >= 2
    for backend, (state, forces) in out.items():
        assert np.array_equal(state, out["c"][0]), backend
        for name in bodies.names:
            if precision == "double" or backend != "opencl":
                assert np.array_equal(forces[name], out["c"][1][name]), (backend, name)
            else:
                assert np.allclose(forces[name], out["c"][1][name], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("D", [2, 3])
@pytest.mark.parametrize("scheme", ["halfway", "bouzidi", "quadratic"])
def test_momentum_budget_of_every_step(D, scheme):
    """Momentum conservation, exact for the scheme (Ladd 1994; Mei et al. 2002): over one step the
    fluid's momentum changes by what the body force adds minus what the bodies take,
    P(t+1) - P(t) = a sum(rho) - F / r  (model units, a = g / r; F: sim.forces(), r^2 x lattice),
    in a periodic box (no wall takes momentum)."""
    bodies = _bodies(D)
    sim = _sim(D, bodies, scheme, walls=False)
    sim.set_populations(_start(D, bodies))
    vs, g = sim.vs, np.array(G2 if D == 2 else G3)
    e = vs.e.astype(float)

    def momentum(s):
        return vs.r * e.T @ s.reshape(len(s), -1).sum(axis=1)
    for _ in range(3):
        before = sim.state()
        sim.step(1)
        after = sim.state()
        taken = sum(sim.forces().values())
        budget = g / vs.r * after.sum() - taken / vs.r
        assert np.abs(momentum(after) - momentum(before) - budget).max() < 1e-12 * np.abs(taken).max()


def test_steady_force_balances_the_body_force():
    """A body in a periodic box driven by a uniform body force g: at steady state the force on the
    body equals the total force on the fluid, g sum(rho) (model units; Ladd 1994)."""
    bodies = Bodies((16, 16), [Sphere((7.5, 7.5), 3.3)])
    g = 1e-5
    for scheme in ("halfway", "bouzidi"):
        sim = lbgen.Simulation(16, 16, velocity_set="d2q9", bodies=bodies, body_bc=scheme, gravity=(g, 0.0), tau=1.0)
        sim.set_fields(1.0, 0.0, 0.0)
        sim.step(2500)
        F = sim.forces()["body1"]
        total = g * sim.state().sum()
        assert abs(F[0] - total) < 1e-6 * total and abs(F[1]) < 1e-9 * total


def test_a_mask_as_bodies_gives_forces_and_the_halfway_state_is_unchanged():
    """bodies=<int labels> (q = 1/2): the state equals the plain mask's bit for bit (the link
    kernels write nothing half-way); the forces come with it."""
    labels = (_bodies(2).labels > 0).astype(np.int32)
    a = lbgen.Simulation(*SHAPE2, velocity_set="d2q9", mask=labels > 0, tau=0.8, gravity=G2, walls="y")
    b = lbgen.Simulation(*SHAPE2, velocity_set="d2q9", bodies=labels, tau=0.8, gravity=G2, walls="y")
    for s in (a, b):
        s.set_fields(1.0, 0.01, 0.0)
        s.step(6)
    assert np.array_equal(a.state(), b.state())
    assert a.forces() == {} and np.abs(b.forces()["body1"]).max() > 0
    assert a.program.calls["body_links"] == 0 and b.program.calls["body_links"] == 6   # none without bodies
    assert b.program.calls["body_put"] == 0                                          # half-way writes nothing


@pytest.mark.parametrize("make, words", [
    (lambda: Bodies(SHAPE2, [Sphere((0.5, 15.0), 3.0)]), None),            # built; refused by the Simulation
    (lambda: Bodies(SHAPE2, [Sphere((80.0, 15.0), 3.0)]), ["body1 lies outside the box", "x 77..83"]),
    (lambda: Bodies(SHAPE2, [Sphere((8.5, 15.5), 0.3)]), ["covers no lattice site"]),
    (lambda: Bodies(SHAPE2, [Sphere((8, 15), 3), Sphere((11, 15), 3)]), ["body2 and body1 share the site (8, 15)", "must not overlap"]),
    (lambda: Bodies(SHAPE2, [Sphere((8, 15, 3), 3)]), ["a 3D shape", "this lattice is 2D"]),
    (lambda: Bodies(SHAPE2, [Sphere((8, 15), -1)]), ["radius=-1", "> 0"]),
])
def test_bad_bodies_are_refused_in_words(make, words):
    if words is None:
        with pytest.raises(SimulationError) as e:
            lbgen.Simulation(*SHAPE2, velocity_set="d2q9", bodies=make(), tau=0.8)
        assert "touches the periodic seam of x" in str(e.value) and "move the body inward" in str(e.value)
        return
    with pytest.raises(SimulationError) as e:
        make()
    for w in words:
        assert w in str(e.value), (w, str(e.value))


@pytest.mark.parametrize("kwargs, words", [
    (dict(bodies=np.zeros(SHAPE2, int)), ["holds no solid site"]),
    (dict(bodies=np.ones(SHAPE2, int)), ["every site is solid"]),
    (dict(bodies=np.zeros((3, 3), int)), ["labels of shape (3, 3)", "(24, 32)"]),
    (dict(bodies="x"), ["labels of shape ()"]),
    (dict(body_bc="bouzidi"), ["body_bc='bouzidi' applies to bodies"]),
    (dict(bodies=(_bodies(2).labels > 0).astype(int), body_bc="cubic"), ["body_bc='cubic'", "halfway, bouzidi, quadratic"]),
    (dict(bodies=(_bodies(2).labels > 0).astype(int), mask=_bodies(2).labels > 0), ["mask and bodies both given"]),
    (dict(bodies=(_bodies(2).labels > 0).astype(int), time_block=2), ["time_block=2"]),
])
def test_bad_body_arguments_are_refused_in_words(kwargs, words):
    with pytest.raises(SimulationError) as e:
        lbgen.Simulation(*SHAPE2, velocity_set="d2q9", tau=0.8, walls="y", **kwargs)
    for w in words:
        assert w in str(e.value), (w, str(e.value))


def test_a_restored_state_continues_bit_for_bit():
    """The link kernels leave the stored state a plain post-collision one (Bouzidi writes only the
    spare buffer's bounced populations): 10 steps equal 6 steps, restore into a new lattice, 4 steps."""
    bodies = _bodies(2)
    a, b, c = (_sim(2, bodies, "bouzidi") for _ in range(3))
    for s in (a, b):
        s.set_populations(_start(2, bodies))
    a.step(10)
    b.step(6)
    c.restore(b.state(), 6)
    c.step(4)
    assert np.array_equal(a.state(), c.state())
    assert all(np.array_equal(a.forces()[n], c.forces()[n]) for n in bodies.names)
