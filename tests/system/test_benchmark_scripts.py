"""The kernel A/B script of docs/performance-history.md runs against the kernels of this version:
site_asm.py emits and disassembles them, kernel_ab.py builds two copies and calls their hot
entry points through the C convention of the headers (a stale argument list crashed it)."""
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_kernel_ab_times_every_kernel_of_two_emitted_copies(tmp_path):
    a = tmp_path / "a"
    subprocess.run([sys.executable, str(ROOT / "benchmarks" / "site_asm.py"), "--keep", str(a), "--flags=-O1"],
                   check=True, capture_output=True, text=True, cwd=ROOT)
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "kernel_ab.py"), str(a), str(a), "--rounds", "1",
                          "--seconds", "0.02", "--size2d", "16x64", "--size3d", "8", "--flags=-O1"],
                         capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-2000:]
    rates = {m.group(1): (float(m.group(2)), float(m.group(3)))
             for m in re.finditer(r"(\S+ \S+): A/B CPU time .*? ns/site A ([\d.]+), B ([\d.]+)", out.stdout)}
    assert set(rates) == {"d2q37-regularized-walls fused_walls", "d2q37-regularized-walls fused_tb3",
                          "d3q19-bgk fused"}, out.stdout
    assert all(0 < ta < 1e6 and 0 < tb < 1e6 for ta, tb in rates.values())
