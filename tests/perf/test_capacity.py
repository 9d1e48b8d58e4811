"""The largest lattice that fits (issue 38, `lbgen info`): the N it prints is the one `lbgen run`'s
own memory check takes, and N + 1 the first it refuses before any work; per storage and
streaming pattern; on a GPU the device's buffers and field arrays."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from lbgen.cli.main import main
from lbgen.run.config import RunConfig
from lbgen.run.driver import check_run_memory
from lbgen.system import limits
from lbgen.system.limits import LimitError, largest_lattice, population_bytes

GIB = 2 ** 30


def _info(monkeypatch, memory, velocity_set):
    monkeypatch.setattr(limits, "available_memory", lambda: memory)
    res = CliRunner().invoke(main, ["info", "--json", "--velocity-set", velocity_set])
    assert res.exit_code == 0, res.output
    return json.loads(res.output)["largest_lattice"]


@pytest.mark.parametrize("choice, kw", [("double/pull", {}), ("single/fp16s/inplace",
                                                            dict(precision="single", storage="fp16s",
                                                                 streaming="inplace"))])
def test_the_largest_cube_is_the_one_a_run_takes_and_one_more_is_refused(monkeypatch, choice, kw):
    memory = 3 * GIB
    n = _info(monkeypatch, memory, "d3q19")["host"]["lattices"][choice]["run"]
    assert n > 50

    def run_of(m):
        return RunConfig.build("shear-wave", ("test", dict(lx=m, ly=m, lz=m, velocity_set="d3q19", **kw)))
    check_run_memory(run_of(n))                         # fits: no refusal
    with pytest.raises(LimitError, match=rf"the lattice {n + 1} x {n + 1} x {n + 1}"):
        check_run_memory(run_of(n + 1))


def test_the_choices_follow_the_bytes_and_the_set(monkeypatch):
    host = _info(monkeypatch, 8 * GIB, "d3q19")["host"]["lattices"]
    n = {k: v["run"] for k, v in host.items()}
    assert n["double/pull"] < n["double/inplace"] < n["single/fp16s/inplace"]
    # 4 B x 1 buffer = 2 B x 2 buffers; a slab's staging lattice (one buffer of its planes) is twice fp16s's
    assert n["single/inplace"] <= n["single/fp16s/pull"] <= 1.02 * n["single/inplace"]
    two = _info(monkeypatch, 8 * GIB, "d2q9")["host"]["lattices"]
    assert two["double/pull"]["run"] > 10 * n["double/pull"]     # squares: N^2


def test_on_a_device_the_buffers_and_float64_fields_bound_it():
    """A GPU holds the population buffers and, at a field event, D + 2 float64 arrays; alone the
    buffers take more (what a Simulation stepped without events holds)."""
    memory = 80 * GIB
    kw = dict(dimension=3, Q=19, itemsize=2, halo=1, buffers=1, lanes=32)
    run = largest_lattice(memory, real=8, device=True, **kw)
    alone = largest_lattice(memory, device=True, fields=False, **kw)

    def need(n, fields):
        return population_bytes((n, n, n), 19, 2, 1, 1, 32) + fields * n ** 3
    assert need(run, 40) <= memory < need(run + 1, 40)
    assert need(alone, 0) <= memory < need(alone + 1, 0)
    assert 1000 < run < alone                           # 38 + 40 B a cell; 38 alone
