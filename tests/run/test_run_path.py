"""One way through a run, observed in the kernel-call log: one diagnostics sample per event
shared by the guard and the series, fields computed once per event, blocked sweeps between
events, and the simulation's own choices made above it."""
from __future__ import annotations

from lbgen.run.config import RunConfig
from lbgen.run.driver import Run


def _run(tmp_path, **options):
    cfg = RunConfig.build("rayleigh-taylor", ("test", {"lx": 16, "ly": 32, "steps": 12, "out": str(tmp_path / "r"),
                                                       "pictures": "T", **options}))
    run = Run(cfg, echo=lambda m: None)
    run.execute()
    return run, run.sim.program.calls


def test_guard_and_series_share_one_diagnostics_sample_per_event(tmp_path):
    # guard every 3 steps, series every 3 steps: 4 events + the start = 5 samples, 5 kernel calls
    run, calls = _run(tmp_path, check_every=3, series_every=3)
    assert run.samples == 5
    assert calls["diagnostics"] == 5, "the guard and the series each ran the diagnostics kernel"
    rows = (tmp_path / "r" / "series.csv").read_text().splitlines()[1:]
    assert [int(r.split(",")[0]) for r in rows] == [0, 3, 6, 9, 12]


def test_fields_are_computed_once_per_output_event(tmp_path):
    # outputs at 0, 6 and the end (12): three fields evaluations, even with pictures, the
    # series plot and --save at the end
    run, calls = _run(tmp_path, output_every=6, pictures_every=6, save=str(tmp_path / "f.npz"), time_block=3)
    assert run.field_evaluations == 3
    assert calls["fields"] + calls["fields_real"] == 3       # fields_real: a single-precision run's float32 fields
    run.final_fields()                                   # what the CLI's report and --save use
    assert calls["fields"] + calls["fields_real"] == 3
    assert run.sim.sweeps == {"blocked": 4, "single": 0}
