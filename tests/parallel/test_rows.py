"""The layout-independent row form of the runtimes (``read_rows_plain`` / ``write_rows_plain``,
what ranks split along Y trade): the same values as the column form, in every layout, and
a write reaches every storage copy of a row (the lane-shifted halo copies of clustered layouts)."""
import numpy as np
import pytest

from lbgen.simulation.runner import Simulation

LX, LY, H = 10, 48, 3


@pytest.mark.parametrize("layout, vl", [("caosoa", 8), ("caosoa", 2), ("csoa", 4), ("soa", None), ("aos", None)])
def test_rows_are_the_columns_transposed_and_a_write_reaches_every_copy(layout, vl):
    sim = Simulation(LX, LY, layout=layout, vl=vl)
    r = sim.regions[0]
    prog, f = r.program, r.f
    f[:] = np.random.default_rng(0).random(f.size)
    prog.halo(f)                                         # every storage copy consistent
    columns = prog.read_columns_plain(f, -H, LX + 2 * H)  # [p, x + H, y + H]
    assert np.array_equal(prog.read_rows_plain(f, -H, LY + 2 * H), columns)
    assert np.array_equal(prog.read_rows_plain(f, 5, 4), columns[:, :, 5 + H:9 + H])
    new = np.random.default_rng(1).random((sim.vs.Q, LX + 2 * H, 5))
    prog.write_rows_plain(f, LY - 2, new)                # 2 interior rows and 3 halo rows
    after = prog.read_columns_plain(f, -H, LX + 2 * H)
    assert np.array_equal(after[:, :, LY - 2 + H:], new)
    assert np.array_equal(after[:, :, :LY - 2 + H], columns[:, :, :LY - 2 + H])   # nothing else moved
    again = f.copy()
    prog.write_columns_plain(again, -H, after)           # writes every copy from the plain form
    assert np.array_equal(again, f)                      # so the row write had written every copy too


def test_rows_outside_the_padded_lattice_are_refused():
    sim = Simulation(LX, LY)
    r = sim.regions[0]
    with pytest.raises(ValueError, match=r"rows 46\.\.51 outside -3\.\.50"):
        r.program.read_rows_plain(r.f, 46, 6)
