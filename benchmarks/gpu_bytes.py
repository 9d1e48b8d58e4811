"""Issue 38 on a GPU (a benchmark, not a test): D3Q19 BGK, a periodic N^3 cube on CUDA (CuPy), each
(precision, storage, streaming, layout) of the list timed in turn within every sample
(``lbgen.system.timing.interleaved_rates``: two steps a call, so an in-place lattice does one even and
one odd step; the device synchronised), beside the device's own copy bandwidth measured in the same
rounds (``backends.cuda.copy_bandwidth``: cudaMemcpy of one large buffer, read + write bytes).

Bytes a step moves per site: each population read once and written once, 2 Q s (s: the stored bytes
of one population); the fraction of the copy is MLUPS x 2 Q s / copy bandwidth.  Bytes per cell of
memory: the buffers the Simulation holds (halos included) over the sites.  FluidX3D's published
D3Q19 SRT figures for the same GPU (its README, FP32/FP32, FP32/FP16S, FP32/FP16C) are printed beside.

    python benchmarks/gpu_bytes.py [--size 256] [--repeat 3] [--configs single/fp32/pull/soa,...] [--json F]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics

os.environ.pop("LBGEN_OPT_LEVEL", None)       # the builds runs use

import lbgen  # noqa: E402
from lbgen.codegen.spec import storage_bytes  # noqa: E402
from lbgen.system.timing import interleaved_rates  # noqa: E402

#: FluidX3D README, D3Q19 SRT MLUPS: FP32/FP32, FP32/FP16S, FP32/FP16C (the "benchmarks" table)
FLUIDX3D = {"H100 SXM5 80GB HBM3": {"fp32": 17602, "fp16s": 29561, "fp16c": 20227},
            "H100 PCIe 80GB HBM2e": {"fp32": 11128, "fp16s": 20624, "fp16c": 13862},
            "H100 NVL": {"fp32": 20303, "fp16s": 32922, "fp16c": 18424},
            "H200 SXM5 141GB": {"fp32": 23056, "fp16s": 36610, "fp16c": 20291},
            "H200 NVL": {"fp32": 21703, "fp16s": 34387, "fp16c": 18221}}
DEFAULT = ("double/fp64/pull/soa,single/fp32/pull/soa,single/fp32/pull/caosoa-vl32,single/fp32/inplace/soa,"
           "single/fp16s/pull/soa,single/fp16s/inplace/soa,single/fp16c/pull/soa")
Q = 19


def lattice(n: int, precision: str, storage: str, streaming: str, layout: str, backend: str = "cuda"):
    name, _, vl = layout.partition("-vl")
    sim = lbgen.Simulation(n, n, n, layout=name, vl=int(vl) if vl else None, streaming=streaming, backend=backend,
                           precision=precision, storage=storage, tau=0.8)
    sim.set_fields(1.0, u=(0.01, 0.0, 0.0))
    return sim


def fluidx3d_row(device: str) -> dict:
    """FluidX3D's figures for the GPU named like ``device`` (NVIDIA's name: 'NVIDIA H100 80GB HBM3')."""
    d = device.upper()
    if "H200" in d:
        return FLUIDX3D["H200 NVL" if "NVL" in d else "H200 SXM5 141GB"]
    if "H100" in d:
        return FLUIDX3D["H100 NVL" if "NVL" in d else ("H100 PCIe 80GB HBM2e" if "PCIE" in d else "H100 SXM5 80GB HBM3")]
    return {}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=256)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--min-seconds", type=float, default=0.3)
    ap.add_argument("--configs", default=DEFAULT, help="precision/storage/streaming/layout, comma separated")
    ap.add_argument("--json", default=None)
    ap.add_argument("--backend", default="cuda", help="cuda (a GPU), or cuda-shim to try the script on a CPU (no copy bandwidth)")
    args = ap.parse_args(argv)
    from lbgen.backends.cuda import copy_bandwidth
    n = args.size
    configs = [tuple(c.split("/")) for c in args.configs.split(",")]
    sims, rows = [], []
    for precision, storage, streaming, layout in configs:
        sim = lattice(n, precision, storage, streaming, layout, args.backend)
        held = sum(getattr(b, "nbytes", 0) for r in sim.regions for b in (r.f, r.g) if b is not None)
        sims.append(sim)
        rows.append({"precision": precision, "storage": storage, "streaming": streaming, "layout": layout,
                     "bytes_per_cell_memory": held / n ** 3, "bytes_per_site_moved": 2 * Q * storage_bytes(precision, storage)})
    copies = []
    rates = interleaved_rates([lambda s=s: (s.step(2), s.program.synchronize()) for s in sims],
                              [2 * n ** 3 / 1e6] * len(sims), args.repeat, args.min_seconds,
                              between=lambda: copies.append(copy_bandwidth(repeat=3)["gbs"] if args.backend == "cuda" else 1.0))
    device = sims[0].program.describe()
    fx = fluidx3d_row(device)
    bw = statistics.median(copies)
    print(f"D3Q19 BGK {n}^3 periodic, CUDA on {device}; device copy {bw:.0f} GB/s (median of {len(copies)} rounds)")
    print("| precision / storage | streaming | layout | B/cell memory | B/site moved | MLUPS (median, range) | "
          "of the copy | FluidX3D's published MLUPS | ratio |")
    print("|---|---|---|---|---|---|---|---|---|")
    for row, r in zip(rows, rates):
        m = statistics.median(r)
        frac = m * 1e6 * row["bytes_per_site_moved"] / (bw * 1e9)
        ref = fx.get(row["storage"]) if row["precision"] == "single" else None
        row.update(mlups=r, mlups_median=m, copy_fraction=frac, fluidx3d=ref)
        print(f"| {row['precision']} / {row['storage']} | {row['streaming']} | {row['layout']} | "
              f"{row['bytes_per_cell_memory']:.1f} | {row['bytes_per_site_moved']} | {m:.0f} ({min(r):.0f}-{max(r):.0f}) | "
              f"{frac:.3f} | {ref or '-'} | {f'{m / ref:.2f}' if ref else '-'} |", flush=True)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"device": device, "size": n, "copy_gbs": copies, "rows": rows}, fh, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
