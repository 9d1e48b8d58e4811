"""Bytes per cell and MLUPS of each storage format and streaming pattern (docs/performance.md): `lbgen run taylor-green`
D3Q19 on the C backend, 2 threads, with a checkpoint and a field output at the end, run in a
child process whose peak resident memory is read back; bytes per cell = (peak at N^3 - peak at
16^3) / (N^3 - 16^3), so the interpreter, the libraries and the compiled kernels cancel.

    python benchmarks/storage_memory.py [N] [steps]
"""
from __future__ import annotations

import re
import subprocess
import sys
import tempfile

CHILD = """
import resource, sys
from lbgen.cli.main import main
try:
    main(sys.argv[1:], standalone_mode=False)
finally:
    print("maxrss_kib", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)
"""
#: (precision, storage, streaming): in place holds one population buffer instead of two
FORMATS = (("double", None, "pull"), ("single", None, "pull"), ("mixed", None, "pull"), ("double", "fp16s", "pull"),
           ("single", "fp16s", "pull"), ("double", None, "inplace"), ("single", "fp16s", "inplace"))


def run(n: int, steps: int, precision: str, storage, folder: str, streaming: str = "pull"):
    args = ["run", "taylor-green", "--velocity-set", "d3q19", "--lx", str(n), "--ly", str(n), "--lz", str(n),
            "--steps", str(steps), "--threads", "2", "--precision", precision, "--out", f"{folder}/r{n}",
            "--overwrite", "--checkpoint-every", str(steps), "--pictures", "none", "--time-block", "1",
            "--streaming", streaming]
    if storage:
        args += ["--storage", storage]
    p = subprocess.run([sys.executable, "-c", CHILD, *args], capture_output=True, text=True, check=True)
    rss = int(re.search(r"maxrss_kib (\d+)", p.stderr).group(1)) * 1024
    mlups = float(re.search(r"([\d.]+) MLUPS", p.stdout + p.stderr).group(1))
    return rss, mlups


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 128
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 40
    print(f"| D3Q19 {n}^3, C, 2 threads | bytes/cell of populations | bytes/cell of the process | MLUPS |")
    print("|---|---|---|---|")
    with tempfile.TemporaryDirectory() as folder:
        for precision, storage, streaming in FORMATS:
            small, _ = run(16, 2, precision, storage, folder, streaming)
            big, mlups = run(n, steps, precision, storage, folder, streaming)
            nbytes = {"double": 8, "single": 4, "mixed": 4}[precision] if storage is None else 2
            per_cell = (big - small) / (n ** 3 - 16 ** 3)
            label = precision + (f", {storage} storage" if storage else "") + (", in place" if streaming != "pull" else "")
            buffers = 1 if streaming == "inplace" else 2
            print(f"| {label} | {buffers * 19 * nbytes} | {per_cell:.0f} | {mlups:.1f} |", flush=True)


if __name__ == "__main__":
    main()
