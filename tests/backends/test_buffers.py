"""Host buffers are resident when allocated: a fresh lattice's page faults happen at set-up,
not inside the first sweeps that write it (which the run's loop timer would count)."""
import os

import numpy as np

from lbgen.backends.build import aligned_zeros


def _resident_bytes() -> int:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def test_aligned_zeros_is_resident_zeroed_and_aligned():
    n = 16 * 1024 * 1024  # 128 MiB of float64
    before = _resident_bytes()
    buf = aligned_zeros(n, np.float64)
    grown = _resident_bytes() - before
    assert grown >= 0.9 * n * 8, f"only {grown / 2**20:.0f} MiB of 128 MiB resident after allocation"
    assert buf.ctypes.data % 64 == 0
    assert buf.size == n and not buf.any()
