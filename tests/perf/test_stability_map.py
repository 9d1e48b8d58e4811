"""benchmarks/stability_map.py's rule and search (issue 37's stability map), on made-up energy series: nothing is
compiled.  The map's figures themselves are a benchmark's (docs/validation3d.md)."""
import math

from helpers import benchmark_module


def _stability_map():
    """benchmarks/stability_map.py, the home of the shear layer and the map's rule."""
    return benchmark_module("stability_map")


def test_a_run_is_stable_only_when_whole_finite_and_never_above_its_start():
    m = _stability_map()
    assert m.stable([1.0, 0.9, 0.5], samples=2)
    assert m.stable([1.0, 1.0, 0.5], samples=2)                    # equal to the start: bounded
    assert not m.stable([1.0, 0.9, 1.0 + 1e-9], samples=2)         # any gain over the start
    assert not m.stable([1.0, math.nan, 0.5], samples=2)
    assert not m.stable([1.0, math.inf], samples=2)
    assert not m.stable([1.0, 0.9], samples=2)                     # stopped early: not a whole run


def test_the_3d_search_brackets_the_threshold_to_its_ratio(monkeypatch):
    """A made-up operator stable below Re = 1234: the ladder (10^(1/2) from 100) stops at 3162, bisection narrows
    [1000, 3162] to a ratio <= 10^(1/32) around 1234; an operator stable everywhere takes the ladder's 11 runs
    and reports no unstable Re; one unstable at the first rung reports none stable."""
    m = _stability_map()
    seen = []

    def energies(threshold):
        def fake(op, N, re, velocity_set):
            seen.append(re)
            return [1.0] + [0.5] * m.TGV_SAMPLES if re < threshold else [1.0, 0.8, 3.0]
        return fake

    monkeypatch.setattr(m, "tgv_energies", energies(1234.0))
    best, bad, growth, runs = m.largest_stable_3d("bgk", 16, "d3q27")
    assert best < 1234.0 <= bad and bad / best <= 10 ** (1 / 32) * 1.0001 and growth == 3.0
    assert runs == len(seen) == 4 + 4           # 100, 316, 1000 stable, 3162 not: 4 rungs; 1/2 -> 1/32: 4 halvings
    seen.clear()
    monkeypatch.setattr(m, "tgv_energies", energies(math.inf))
    assert m.largest_stable_3d("bgk", 16, "d3q27") == (1e7, None, None, 11)
    monkeypatch.setattr(m, "tgv_energies", energies(50.0))
    assert m.largest_stable_3d("bgk", 16, "d3q27") == (None, 100.0, 3.0, 1)
