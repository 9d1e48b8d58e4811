"""`lbgen bench` reports: the paper's Table 2, text tables of kernels and limits, plots."""
from __future__ import annotations

import math
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from lbgen.perf.bench import COUNTING, KERNELS, LAYOUT_NAMES, PAPER_HASWELL, PAPER_LX, PAPER_LY, VLS, BenchConfig, run_bench

# --- the paper's Table 2 ----------------------------------------------------------------------------

def run_paper_table(backend: str = "c", lx: int = 1024, ly: int = 4096, vls: Sequence[int] = VLS,
                    precision: str = "double", collision: str = "bgk", threads: int = 0, repeat: int = 5,
                    warmup: int = 1, progress: bool = True) -> Dict:
    """Propagate and collide x AoS/SoA/CSoA/CAoSoA at each layout's best VL, next to the paper's Haswell."""
    layouts = [("aos", None), ("soa", None)] + [(n, v) for n in ("csoa", "caosoa") for v in vls]
    cfg = BenchConfig(backends=(backend,), layouts=layouts, kernels=("propagate", "collide"),
                      collisions=(collision,), precisions=(precision,), lx=lx, ly=ly, threads=threads,
                      repeat=repeat, warmup=warmup, limits=False, progress=progress)
    sweep = run_bench(cfg)
    report = paper_table(sweep["results"], lx, ly)
    report["sweep"] = sweep
    return report


def paper_table(results: List[Dict], lx: int, ly: int) -> Dict:
    by = {}
    for r in results:
        by.setdefault((r["layout"], r["vl"]), {})[r["kernel"]] = r["ms"]["median"]
    best: Dict[str, Tuple[Optional[int], Dict[str, float]]] = {}
    for (layout, vl), ms in by.items():
        if "propagate" not in ms or "collide" not in ms:
            continue
        total = ms["propagate"] + ms["collide"]
        if layout not in best or total < sum(best[layout][1].values()):
            best[layout] = (vl, ms)
    scale = PAPER_LX * PAPER_LY / (lx * ly)
    rows = []
    for kernel in ("propagate", "collide"):
        for layout in ("aos", "soa", "csoa", "caosoa"):
            if layout not in best:
                continue
            vl, ms = best[layout]
            rows.append({"kernel": kernel, "layout": layout, "name": LAYOUT_NAMES[layout], "vl": vl,
                         "ms": ms[kernel], "ms_at_paper_size": ms[kernel] * scale,
                         "mlups": lx * ly / (ms[kernel] / 1e3) / 1e6,
                         "paper_haswell_ms": PAPER_HASWELL[kernel][layout],
                         "speedup_vs_paper": PAPER_HASWELL[kernel][layout] / (ms[kernel] * scale)})
    combined = {layout: sum(ms.values()) for layout, (vl, ms) in best.items()}
    winner = min(combined, key=combined.get) if combined else None
    paper_combined = {l: PAPER_HASWELL["propagate"][l] + PAPER_HASWELL["collide"][l] for l in LAYOUT_NAMES}
    return {"lx": lx, "ly": ly, "paper_lx": PAPER_LX, "paper_ly": PAPER_LY, "scale": scale, "rows": rows,
            "best_vl": {l: best[l][0] for l in best},
            "combined_ms": combined, "combined_ms_at_paper_size": {l: v * scale for l, v in combined.items()},
            "winner": winner, "paper_combined_ms": paper_combined,
            "paper_winner": min(paper_combined, key=paper_combined.get)}


def format_paper_table(t: Dict) -> str:
    lines = [f"Paper Table 2 comparison: ms per iteration, double; here {t['lx']} x {t['ly']}, "
             f"scaled x{t['scale']:.3f} to the paper's {t['paper_lx']} x {t['paper_ly']} (per-site time)",
             f"{'kernel':<10} {'layout':<7} {'VL':>3} {'ms here':>10} {'ms @2160x8192':>14} {'MLUPS':>8} "
             f"{'Haswell':>8} {'Haswell/here':>12}"]
    for r in t["rows"]:
        lines.append(f"{r['kernel']:<10} {r['name']:<7} {r['vl'] or '-':>3} {r['ms']:>10.3f} "
                     f"{r['ms_at_paper_size']:>14.1f} {r['mlups']:>8.1f} {r['paper_haswell_ms']:>8d} "
                     f"{r['speedup_vs_paper']:>11.2f}x")
    lines.append("combined propagate + collide (ms @2160x8192): " + ", ".join(
        f"{LAYOUT_NAMES[l]} {v:.0f}" for l, v in sorted(t["combined_ms_at_paper_size"].items(), key=lambda kv: kv[1])))
    if t["winner"]:
        lines.append(f"winner here: {LAYOUT_NAMES[t['winner']]}"
                     + (f" (VL={t['best_vl'][t['winner']]})" if t["best_vl"].get(t["winner"]) else "")
                     + f"; paper's Haswell winner: {LAYOUT_NAMES[t['paper_winner']]} "
                     f"({t['paper_combined_ms'][t['paper_winner']]} ms)")
    return "\n".join(lines)


# --- output -----------------------------------------------------------------------------------------

def _pct(x: Optional[float]) -> str:
    return f"{100 * x:5.1f}%" if x is not None and math.isfinite(x) else "    -"


def format_limits(report: Dict) -> str:
    m = report.get("machine") or {}
    lines = [f"machine: {m.get('hostname', '?')}, {m.get('cpu', '?')}, {m.get('threads', '?')} threads, "
             f"{m.get('vector_bits', '?')}-bit vectors"]
    bw = m.get("bandwidth")
    if bw:
        lines.append(f"copy bandwidth ({bw['streams']}+{bw['streams']} streams, {bw['bytes_per_buffer'] / 2**20:.0f} MiB per buffer, "
                     f"read+write bytes; best [median, min]): normal stores {bw['normal']['gbs']:.1f} GB/s "
                     f"[{bw['normal']['median']:.1f}, {bw['normal']['min']:.1f}], streaming stores "
                     f"{bw['streaming']['gbs']:.1f} GB/s [{bw['streaming']['median']:.1f}, {bw['streaming']['min']:.1f}]")
        if bw.get("contiguous_streaming"):
            lines.append(f"  (for comparison, 1+1 contiguous streams with streaming stores: "
                         f"{bw['contiguous_streaming']['gbs']:.1f} GB/s -- AoS and CAoSoA walk memory like that "
                         f"in collide, so they can pass 100% of the {bw['streams']}+{bw['streams']}-stream copy)")
    for p, pk in (m.get("peak") or {}).items():
        lines.append(f"peak {p} (FMA chains, FMA = 2 flops; best [median, min]): {pk['gflops']:.1f} GFLOP/s "
                     f"[{pk['median']:.1f}, {pk['min']:.1f}]")
    lines.append("%BW: kernel GB/s / best streaming-store copy; %peak: kernel GFLOP/s / best FMA peak")
    for b, lim in (report.get("limits") or {}).items():
        if b != "c" and lim.get("bandwidth", {}).get("device_copy"):
            dc = lim["bandwidth"]["device_copy"]
            lines.append(f"{b} device copy bandwidth ({dc['device']}): {dc['gbs']:.1f} GB/s")
        if lim.get("error"):
            lines.append(f"{b}: limits not measured: {lim['error']}")
    return "\n".join(lines)


def format_table(report: Dict) -> str:
    lines = [format_limits(report), ""]
    head = (f"{'backend':<7} {'prec':<6} {'coll':<11} {'layout':<12} {'kernel':<9} {'ms (median)':>11} "
            f"{'[min-max]':>19} {'MLUPS':>8} {'GB/s':>7} {'%BW':>6} {'GFLOP/s':>8} {'%peak':>6}")
    lines.append(head)
    lines.append("-" * len(head))
    for r in report["results"]:
        ms = r["ms"]
        lines.append(f"{r['backend']:<7} {r['precision']:<6} {r['collision']:<11} {r['tag']:<12} {r['kernel']:<9} "
                     f"{ms['median']:>11.3f} {'[' + format(ms['min'], '.3f') + '-' + format(ms['max'], '.3f') + ']':>19} "
                     f"{r['mlups']:>8.1f} {r['gbs']:>7.1f} {_pct(r.get('frac_bw')):>6} {r['gflops']:>8.1f} "
                     f"{_pct(r.get('frac_peak')):>6}")
    for s in report.get("skipped", []):
        what = " ".join(str(s[k]) for k in ("backend", "layout", "precision", "collision") if k in s)
        lines.append(f"skipped {what}: {s['reason']}")
    lines += ["", "counting:"] + [f"  {k}: {v}" for k, v in COUNTING.items()]
    return "\n".join(lines)


def make_plots(report: Dict, directory) -> List[Path]:
    """MLUPS vs VL per layout (like the paper's Fig. 9/10) and a roofline; returns the PNG paths."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    results = report.get("results", [])
    combos = sorted({(r["backend"], r["precision"], r["collision"]) for r in results})
    for backend, precision, collision in combos:
        rs = [r for r in results if (r["backend"], r["precision"], r["collision"]) == (backend, precision, collision)]
        kernels = [k for k in KERNELS if k != "bc" and any(r["kernel"] == k for r in rs)] or \
                  sorted({r["kernel"] for r in rs})
        fig, axes = plt.subplots(1, len(kernels), figsize=(4.5 * len(kernels), 4), squeeze=False)
        for ax, kernel in zip(axes[0], kernels):
            kr = [r for r in rs if r["kernel"] == kernel]
            vls = sorted({r["vl"] for r in kr if r["vl"]}) or list(VLS)
            for layout in ("aos", "soa", "csoa", "caosoa"):
                pts = sorted((r["vl"], r["mlups"], r["mlups_min"], r["mlups_max"]) for r in kr if r["layout"] == layout
                             and r["vl"])
                flat = [r for r in kr if r["layout"] == layout and not r["vl"]]
                if pts:
                    x = [p[0] for p in pts]
                    y = np.array([p[1] for p in pts])
                    err = np.array([[p[1] - p[2] for p in pts], [p[3] - p[1] for p in pts]])
                    ax.errorbar(x, y, yerr=np.clip(err, 0, None), marker="o", capsize=3, label=LAYOUT_NAMES[layout])
                elif flat:
                    ax.axhline(flat[0]["mlups"], ls="--", lw=1, label=f"{LAYOUT_NAMES[layout]} (no VL)",
                               color={"aos": "grey", "soa": "black"}[layout])
            ax.set_xscale("log", base=2)
            ax.set_xticks(vls)
            ax.set_xticklabels([str(v) for v in vls])
            ax.set_xlabel("VL")
            ax.set_ylabel("MLUPS")
            ax.set_title(kernel)
            ax.grid(alpha=0.3)
            ax.legend(fontsize=8)
        fig.suptitle(f"{backend} {precision} {collision}: {rs[0]['lx']} x {rs[0]['ly']}")
        fig.tight_layout()
        p = directory / f"mlups_vs_vl_{backend}_{precision}_{collision}.png"
        fig.savefig(p, dpi=100)
        plt.close(fig)
        paths.append(p)
    limits = report.get("limits") or {}
    for backend, precision in sorted({(c[0], c[1]) for c in combos}):
        rs = [r for r in results if r["backend"] == backend and r["precision"] == precision]
        lim = limits.get(backend) or {}
        fig, ax = plt.subplots(figsize=(7, 5))
        ai_pts = [max(r["arithmetic_intensity"], 1e-3) for r in rs]
        lo, hi = min(ai_pts + [1e-2]) / 2, max(ai_pts + [100]) * 2
        ai = np.logspace(np.log10(lo), np.log10(hi), 200)
        peak = ((lim.get("peak") or {}).get(precision) or {}).get("gflops")
        bw = lim.get("bandwidth") or {}
        lines = [("streaming-store copy", (bw.get("streaming") or {}).get("gbs"), "-"),
                 ("normal-store copy", (bw.get("normal") or {}).get("gbs"), "--"),
                 ("device copy", bw.get("gbs") if "device_copy" in bw else None, "-")]
        for label, b, ls in lines:
            if b:
                y = ai * b if peak is None else np.minimum(ai * b, peak)
                ax.plot(ai, y, ls, color="k", lw=1.2, label=f"{label} {b:.1f} GB/s")
        if peak:
            ax.axhline(peak, color="tab:red", lw=1, label=f"FMA peak {peak:.0f} GFLOP/s")
        markers = {"propagate": "v", "bc": "s", "collide": "o", "fused": "D"}
        for r, x in zip(rs, ai_pts):
            y = max(r["gflops"], 1e-3)
            ax.plot(x, y, markers.get(r["kernel"], "o"), ms=6, alpha=0.8)
            ax.annotate(f"{r['kernel']} {r['tag']}", (x, y), fontsize=6, xytext=(3, 3), textcoords="offset points")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("arithmetic intensity (flops / byte; propagate plotted at 1e-3)")
        ax.set_ylabel("GFLOP/s")
        ax.set_title(f"roofline: {backend} {precision}")
        ax.grid(alpha=0.3, which="both")
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=8, loc="lower right")
        fig.tight_layout()
        p = directory / f"roofline_{backend}_{precision}.png"
        fig.savefig(p, dpi=100)
        plt.close(fig)
        paths.append(p)
    return paths
