"""The tests' one program cache (tests/programs.py): one program per key, handed out clean."""
from __future__ import annotations

from helpers import LX, LY


def test_one_program_per_key_handed_out_with_its_own_settings(programs):
    before = programs.compiles
    prog = programs.of("c", (LX, LY), layout="soa", vl=None)
    assert programs.of("c", (LX, LY), layout="soa", vl=None) is prog
    two = programs.of("c", (LX, LY), options={"threads": 2}, layout="soa", vl=None)
    assert two is not prog and programs.compiles - before <= 2          # at most the two keys built here
    # a test leaves the process-wide switches and the call log changed ...
    prog.halo(prog.allocate())
    assert prog.calls["halo"] == 1
    prog.lib.lbgen_set_streaming_stores(1 - prog.streaming_stores)
    assert two.lib.lbgen_set_threads(-1) == 2
    # ... the next hand-out is clean again
    again = programs.of("c", (LX, LY), layout="soa", vl=None)
    assert again is prog and not again.calls
    assert again.lib.lbgen_set_streaming_stores(-1) == again.streaming_stores
    assert again.lib.lbgen_set_threads(-1) == 1 == again.threads
