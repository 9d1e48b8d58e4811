"""The error of each storage format against fp64 storage (docs/physics.md, "Storage precision"):
the shear-wave viscosity (2D D2Q9, 3D D3Q19), the Taylor-Green decay (3D D3Q19), the 3D
lid-driven cavity's centrelines and the 2D Rayleigh-Taylor production case (D2Q37), each run
through `lbgen run` with --storage and compared with the same run in double.

    python benchmarks/storage_accuracy.py [--quick] [--only fp16c]   (--only: the formats of one storage)
"""
from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

#: (label, precision, storage): the formats compared with double/fp64
FORMATS = (("single (fp32, fp32)", "single", None), ("double, fp32 storage", "mixed", None),
           ("double, fp16s storage", "double", "fp16s"), ("single, fp16s storage", "single", "fp16s"),
           ("double, fp16c storage", "double", "fp16c"), ("single, fp16c storage", "single", "fp16c"))


def run(args, precision, storage, folder) -> dict:
    out = Path(folder) / f"{precision}-{storage}"
    cmd = [sys.executable, "-m", "lbgen.cli.main", "run", *args, "--precision", precision, "--out", str(out),
           "--save", str(out) + ".npz", "--threads", "2", "--overwrite"]
    if storage:
        cmd += ["--storage", storage]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    with np.load(str(out) + ".npz") as z:
        return {k: z[k] for k in z.files}


def amplitude(uy) -> float:
    LX = uy.shape[0]
    s = np.sin(2 * np.pi * np.arange(LX) / LX)
    return float(np.tensordot(s, uy.reshape(LX, -1).mean(axis=1), 1) * 2 / LX)


def cases(quick: bool):
    n = 1 if quick else 2
    yield ("shear wave 2D D2Q9: viscosity (rel.)",
           ["shear-wave", "--velocity-set", "d2q9", "--lx", str(64 * n), "--ly", "16", "--steps", str(400 * n * n)],
           lambda f, r: abs(np.log(amplitude(f["uy"]) / 0.05) / np.log(amplitude(r["uy"]) / 0.05) - 1))
    yield ("shear wave 3D D3Q19: viscosity (rel.)",
           ["shear-wave", "--velocity-set", "d3q19", "--lx", str(32 * n), "--ly", "8", "--lz", "8",
            "--steps", str(100 * n * n)],
           lambda f, r: abs(np.log(amplitude(f["uy"]) / 0.05) / np.log(amplitude(r["uy"]) / 0.05) - 1))
    L = 32 * n
    yield (f"Taylor-Green 3D D3Q19 {L}^3: kinetic energy (rel.)",
           ["taylor-green", "--velocity-set", "d3q19", "--lx", str(L), "--ly", str(L), "--lz", str(L),
            "--steps", str(200 * n)],
           lambda f, r: abs(sum((f[k] ** 2).sum() for k in ("ux", "uy", "uz")) /
                            sum((r[k] ** 2).sum() for k in ("ux", "uy", "uz")) - 1))
    C = 24 * n
    yield (f"cavity 3D D3Q19 {C}^3: centrelines max |du| / U",
           ["lid-driven-cavity", "--velocity-set", "d3q19", "--lx", str(C), "--ly", str(C), "--lz", str(C),
            "--steps", str(1500 * n)],
           lambda f, r: max(np.abs(f["ux"][C // 2, C // 2, :] - r["ux"][C // 2, C // 2, :]).max(),
                            np.abs(f["uz"][:, C // 2, C // 2] - r["uz"][:, C // 2, C // 2]).max())
           / np.abs(r["ux"]).max())
    yield ("Rayleigh-Taylor 2D D2Q37 64x256: max |dT| / (T_hot - T_cold)",
           ["rayleigh-taylor", "--lx", "64", "--ly", "256", "--gravity", "0,-4e-4", "--steps", str(1500 * n)],
           lambda f, r: np.abs(f["T"] - r["T"]).max() / (r["T"].max() - r["T"].min()))


def main() -> None:
    quick = "--quick" in sys.argv
    formats = FORMATS
    if "--only" in sys.argv:
        formats = [f for f in FORMATS if f[2] == sys.argv[sys.argv.index("--only") + 1]]
    with tempfile.TemporaryDirectory() as folder:
        print("| case | " + " | ".join(label for label, _, _ in formats) + " |")
        print("|---" * (len(formats) + 1) + "|")
        for name, args, error in cases(quick):
            ref = run(args, "double", None, folder)
            cells = []
            for _, precision, storage in formats:
                got = run(args, precision, storage, folder)
                e = error(got, ref)
                cells.append(f"{e:.2g}" if np.isfinite(e) else "diverged")
            print(f"| {name} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
