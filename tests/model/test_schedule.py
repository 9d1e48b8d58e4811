"""The order of the model's assignment lists (lbgen.model.assignments.schedule): definition
before use, the same assignments as the unscheduled list, the same bits, fewer live values."""
import numpy as np
import pytest
import sympy as sp

from lbgen.model import collision as collision_module, derivation
from lbgen.model.assignments import peak_live, schedule
from lbgen.model.velocity_set import velocity_set

CASES = [("d2q37", "regularized"), ("d2q37", "bgk"), ("d3q19", "bgk"), ("d3q19", "regularized"), ("d2q9", "bgk"),
         ("d3q19", "trt-les")]


def _unscheduled(monkeypatch, vs_name, operator):
    """The collide list as the model built it before the scheduler: the CSE order, block-sorted."""
    with monkeypatch.context() as m:
        m.setattr(derivation, "schedule", lambda assignments, outputs: tuple(assignments))
        return collision_module.collision(velocity_set(vs_name), operator)


@pytest.mark.parametrize("vs_name, operator", CASES, ids=lambda x: x)
def test_scheduled_collide_defines_before_use_and_gives_the_same_bits(monkeypatch, vs_name, operator):
    vs = velocity_set(vs_name)
    scheduled = collision_module.collision(vs, operator)
    before = _unscheduled(monkeypatch, vs_name, operator)
    # definition before use: every operand is an input, a parameter or assigned earlier
    known = set(scheduled.inputs) | set(scheduled.parameters)
    for sym, expr in scheduled.assignments:
        assert expr.free_symbols <= known, f"{sym} uses {sorted(map(str, expr.free_symbols - known))} before they are assigned"
        known.add(sym)
    # only the order changed: the same (symbol, expression) pairs, a different order
    assert sorted(scheduled.assignments, key=str) == sorted(before.assignments, key=str)
    assert scheduled.assignments != before.assignments
    # block titles still open blocks in the list's order, at the same count
    assert [t for _, t in scheduled.blocks] == [t for _, t in before.blocks]
    # fewer values live at once (the scheduler's model of the generated code)
    assert peak_live(scheduled.assignments, scheduled.outputs, scheduled.inputs) \
        < peak_live(before.assignments, before.outputs, before.inputs)
    # bit-equal NumPy evaluation on random populations near equilibrium, walls and bulk rows
    rng = np.random.default_rng(7)
    f = np.array(vs.weights, dtype=float)[:, None] * (1 + 0.05 * rng.standard_normal((vs.Q, 64)))
    params = {str(p): 0.0 for p in scheduled.parameters}
    params.update({"tau": 0.8, "C1": 0.01, "C2": 0.02, "C3": 0.3, "ax": 1e-4, "ay": -2e-4, "az": 3e-5,
                   "wall": np.where(np.arange(64) % 5 == 0, 1.0, 0.0), "tau_wall": 0.9})
    params = {k: v for k, v in params.items() if k in {str(p) for p in scheduled.parameters}}
    assert np.array_equal(scheduled.evaluate(f, **params), before.evaluate(f, **params))


def test_schedule_frees_operands_before_defining_new_values():
    """A hand-made list whose given order keeps four chains live: the scheduler finishes each
    chain and folds it into the sum before it starts the next."""
    a, x1, y1, z1, w1, x2, y2, z2, w2, s1, s2, out = sp.symbols("a x1 y1 z1 w1 x2 y2 z2 w2 s1 s2 out", real=True)
    given = ((x1, a + 1), (y1, a + 2), (z1, a + 3), (w1, a + 4),
             (x2, x1 * x1), (y2, y1 * y1), (z2, z1 * z1), (w2, w1 * w1),
             (s1, x2 + y2), (s2, s1 + z2), (out, s2 + w2))
    scheduled = schedule(given, (out,))
    order = [str(s) for s, _ in scheduled]
    assert order.index("x2") < order.index("y1") and order.index("s1") < order.index("z1")
    assert sorted(scheduled, key=str) == sorted(given, key=str)
    assert peak_live(scheduled, (out,), (a,)) == 3 < peak_live(given, (out,), (a,)) == 4


def test_schedule_refuses_a_cycle_naming_it():
    a, b, c = sp.symbols("a b c", real=True)
    with pytest.raises(ValueError, match=r"\['a', 'b'\].*cycle"):
        schedule(((a, b + 1), (b, a + 1), (c, sp.Integer(2))), (c,))


def test_an_assignment_list_of_more_than_64_outputs_evaluates():
    """A set of Q > 64 populations (the degree-9 3D D3Q103 solves on hop-3 shells) has more
    outputs than numpy.broadcast takes at once (64): evaluate still gives every output, a
    constant one broadcast to the inputs' shape."""
    from lbgen.model.assignments import AssignmentList
    x, a = sp.Symbol("x"), sp.Symbol("a")
    outs = sp.symbols("o0:70")
    assignments = tuple((o, x * k + a if k else sp.Integer(2)) for k, o in enumerate(outs))
    lst = AssignmentList("many", (x,), (a,), assignments, outs)
    got = lst.evaluate([np.arange(3.0)], a=0.5)
    assert got.shape == (70, 3)
    assert np.array_equal(got[0], [2.0, 2.0, 2.0]) and np.array_equal(got[69], 69 * np.arange(3.0) + 0.5)
