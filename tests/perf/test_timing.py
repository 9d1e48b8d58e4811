"""lbgen.system.timing.interleaved_rates: the calls are timed in turn within every round, after
the round's hook, each sample at least min_seconds long; rates are work per second."""
from __future__ import annotations

import time

from lbgen.system.timing import interleaved_rates


def _recording(log, name, seconds):
    def run():
        log.append(name)
        time.sleep(seconds)
    return run


def test_interleaved_rates_times_the_calls_in_turn_after_each_rounds_hook():
    log = []
    calls = [_recording(log, "a", 0.002), _recording(log, "b", 0.004)]
    samples = interleaved_rates(calls, [10.0, 20.0], repeat=3, min_seconds=0.01, between=lambda: log.append("|"))
    assert [len(s) for s in samples] == [3, 3]
    setup, *rounds = "".join(log).split("|")
    assert setup == "aabbab"                                  # two warm-ups each, then one pre-timing each
    assert len(rounds) == 3
    for r in rounds:                                           # all of a's calls, then all of b's
        assert r.count("a") >= 1 and r.count("b") >= 1 and r == "a" * r.count("a") + "b" * r.count("b")   # (a loaded machine may stretch a sleep past min_seconds)


def test_interleaved_rates_are_work_per_second():
    samples = interleaved_rates([lambda: time.sleep(0.005)], [50.0], repeat=2, min_seconds=0.02)
    assert all(0 < v <= 50.0 / 0.005 for v in samples[0])     # sleep lasts at least its time
