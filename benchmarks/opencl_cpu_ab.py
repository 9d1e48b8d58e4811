"""lbgen's OpenCL kernels on CPU OpenCL runtimes, interleaved A/B (docs/performance.md, "OpenCL on
CPU runtimes"): `lbgen bench --backends opencl` (D3Q19 BGK, single, fused, a periodic box) of two
lbgen installs (before, after) per device and layout, round after round, and optionally FluidX3D's
benchmark (its own make.sh build: D3Q19 SRT BENCHMARK, FP32, the cube edited in setup.cpp) on the
same runtime beside them.  Prints one line per measurement and the medians; nothing is judged.

    python benchmarks/opencl_cpu_ab.py --before /work/main/.venv/bin/lbgen --after .venv/bin/lbgen \\
        --devices 0,1 --layouts soa,caosoa-vl32 --rounds 3 \\
        --fluidx3d /path/FluidX3D/bin/FluidX3D --icd 0=/path/intel.icd-folder --icd 1=/path/pocl.icd-folder

``--layouts run`` times the command users run, ``lbgen run taylor-green`` (``--steps``).
``--icd D=FOLDER``: the OCL_ICD_VENDORS folder that shows FluidX3D device D's runtime alone
(FluidX3D then runs on its device 0); devices without one get no FluidX3D figure.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import time


def lbgen_bench(exe: str, device: str, layout: str, size: int, repeat: int) -> float:
    """MLUPS (median of `repeat` calls) of the fused kernel through the CLI users run."""
    cmd = [exe, "bench", "--backends", "opencl", "--velocity-set", "d3q19", "--lx", str(size), "--ly", str(size),
           "--lz", str(size), "--precision", "single", "--kernels", "fused", "--layouts", layout, "--no-limits",
           "--repeat", str(repeat), "--json", "--no-progress"]
    out = subprocess.run(cmd, env=dict(os.environ, PYOPENCL_CTX=device), capture_output=True, text=True, check=True)
    (row,) = json.loads(out.stdout)["results"]
    return float(row["mlups"])


def lbgen_run(exe: str, device: str, size: int, steps: int) -> float:
    """MLUPS of `lbgen run taylor-green` (its own layout choice: the default, or what lbgen tune
    stored; LBGEN_TUNED=off for the defaults) as its last line reports them."""
    cmd = [exe, "run", "taylor-green", "--velocity-set", "d3q19", "--lx", str(size), "--ly", str(size), "--lz",
           str(size), "--steps", str(steps), "--backend", "opencl", "--precision", "single", "--no-progress"]
    out = subprocess.run(cmd, env=dict(os.environ, PYOPENCL_CTX=device), capture_output=True, text=True, check=True)
    done = [line for line in out.stdout.splitlines() if line.startswith("done:")]
    return float(done[-1].split(" MLUPS")[0].rsplit(" ", 1)[1])


def fluidx3d(exe: str, icd_folder: str, timeout: float = 600) -> float:
    """The median of FluidX3D's per-report MLUPS (its first column) after the first three reports."""
    env = dict(os.environ, OCL_ICD_VENDORS=icd_folder)
    out = subprocess.run([exe, "0"], env=env, capture_output=True, text=True, timeout=timeout,
                         cwd=os.path.dirname(os.path.dirname(os.path.abspath(exe))))
    rows = []
    for line in out.stdout.replace("\r", "\n").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 4 and cells[0].isdigit() and cells[1].endswith("GB/s"):
            rows.append(int(cells[0]))
    if len(rows) < 5:
        raise RuntimeError(f"FluidX3D printed no benchmark rows:\n{out.stdout[-2000:]}\n{out.stderr[-2000:]}")
    return float(statistics.median(rows[3:]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", required=True)
    ap.add_argument("--after", required=True)
    ap.add_argument("--devices", default="0", help="comma list of PYOPENCL_CTX values ('P:D' or 'P')")
    ap.add_argument("--layouts", default="soa", help="comma list; 'run' times `lbgen run` (--steps) instead")
    ap.add_argument("--steps", default="40,200", help="steps of `lbgen run` for before,after")
    ap.add_argument("--size", type=int, default=128)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--fluidx3d", default=None)
    ap.add_argument("--icd", action="append", default=[], help="D=FOLDER: FluidX3D's OCL_ICD_VENDORS for device D")
    args = ap.parse_args()
    icd = dict(item.split("=", 1) for item in args.icd)
    figures: dict = {}
    for rnd in range(args.rounds):
        for device in args.devices.split(","):
            for layout in args.layouts.split(","):
                for name, steps in zip(("before", "after"), args.steps.split(",")):
                    mlups = (lbgen_run(getattr(args, name), device, args.size, int(steps)) if layout == "run" else
                             lbgen_bench(getattr(args, name), device, layout, args.size, args.repeat))
                    figures.setdefault((device, layout, name), []).append(mlups)
                    print(f"round {rnd} device {device} {layout:<12} {name:<8} {mlups:8.1f} MLUPS "
                          f"(load {os.getloadavg()[0]:.2f}, {time.strftime('%H:%M:%S')})", flush=True)
            if args.fluidx3d and device in icd:
                mlups = fluidx3d(args.fluidx3d, icd[device])
                figures.setdefault((device, "FluidX3D", "FP32"), []).append(mlups)
                print(f"round {rnd} device {device} FluidX3D     FP32     {mlups:8.1f} MLUPS "
                      f"(load {os.getloadavg()[0]:.2f}, {time.strftime('%H:%M:%S')})", flush=True)
    print("\nmedians (MLUPS) and per-round ratios, median [range]")
    for (device, layout, name), values in sorted(figures.items()):
        line = f"device {device} {layout:<12} {name:<8} {statistics.median(values):8.1f}  {values}"
        if name == "after":
            line += "  after/before " + _ratios(values, figures[(device, layout, "before")])
            fx = figures.get((device, "FluidX3D", "FP32"))
            if fx:
                line += "  after/FluidX3D " + _ratios(values, fx)
        print(line)


def _ratios(a, b) -> str:
    """a/b round by round (the figures of one round were taken next to each other)."""
    r = [x / y for x, y in zip(a, b)]
    return f"{statistics.median(r):.2f}x [{min(r):.2f}-{max(r):.2f}]"

if __name__ == "__main__":
    main()
