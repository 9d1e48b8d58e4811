"""The Taylor-Green vortex at Re = 1600 per collision operator (issue 37; a benchmark, not a test):
each operator and lattice runs `lbgen run taylor-green --re RE --collision OP` to 20 convective
times and the table of its dissipation peak (time, value) against the 512^3 spectral DNS (HiOCFD
case C3.5, lbgen/output/tgv_re1600_spectral.csv), or where it diverged, goes into
docs/validation3d.md between the markers below, with the date and the machine of the sitting.

    python benchmarks/tgv_operators.py [--sizes 32,64] [--operators bgk,bgk-les,mrt,central,cumulant,kbc]
                                       [--re 1600] [--out runs/tgv] [--docs docs/validation3d.md]

Each run folder keeps its dissipation.csv / .png; ``tgv_operators.png`` in --out draws every
finished run's epsilon(t) beside the reference."""
from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

BEGIN, END = "<!-- tgv_operators: begin -->", "<!-- tgv_operators: end -->"


def run_one(op: str, n: int, re: float, out: Path) -> dict:
    from lbgen.run.config import RunConfig
    from lbgen.run.driver import Run
    from lbgen.simulation.runner import SimulationError
    folder = out / f"{op}-{n}"
    cfg = RunConfig.build("taylor-green", ("benchmark", {"re": re, "collision": op, "lx": n, "ly": n, "lz": n,
                                                         "pictures": "none", "out": str(folder)}))
    run = Run(cfg, echo=lambda m: None, overwrite=True)
    row = {"operator": op, "N": n, "set": cfg.velocity_set, "tau": cfg.parameters.get("tau"), "steps": cfg.steps}
    t0 = time.perf_counter()
    try:
        result = run.execute()
        row.update(status="finished", mlups=result["mlups"], record=run.dissipation)
    except SimulationError as e:
        row.update(status="diverged", step=run.sim.time_step, t=run.sim.time_step / run.physics["t_unit"],
                   error=str(e).split(".")[0])
    row["seconds"] = time.perf_counter() - t0
    return row


def table(rows: list, re: float, machine: str) -> str:
    lines = [f"Measured {time.strftime('%Y-%m-%d', time.gmtime())} on {machine} (`python benchmarks/tgv_operators.py`; "
             f"Re = {re:g}, Ma = 0.05, run to 20 t_c; reference peak 0.01286 at 8.97 t_c):", "",
             "| operator | lattice | τ | peak ε (U0³/L) | at t (t_c) | deviation ε | deviation t (t_c) | run |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        head = f"| {r['operator']} | {r['N']}³ {r['set'].upper()} | {r['tau']:.6f} |"
        if r["status"] == "diverged":
            lines.append(f"{head} — | — | — | — | diverged at step {r['step']} (t = {r['t']:.2f} t_c) |")
            continue
        rec = r["record"]
        dev = (f"{rec['deviation_epsilon']:+.1%} | {rec['deviation_time']:+.2f}" if rec.get("reference")
               and "deviation_time" in rec else "— | —")
        lines.append(f"{head} {rec['peak_epsilon']:.5f} | {rec['peak_time']:.2f} | {dev} | stable to "
                     f"{rec['t_end']:.1f} t_c, {r['seconds']:.0f} s ({r['mlups']:.1f} MLUPS) |")
    return "\n".join(lines)


def write_docs(path: Path, text: str) -> None:
    doc = path.read_text()
    if BEGIN in doc and END in doc:
        doc = doc[:doc.index(BEGIN) + len(BEGIN)] + "\n" + text + "\n" + doc[doc.index(END):]
    else:
        doc += f"\n{BEGIN}\n{text}\n{END}\n"
    path.write_text(doc)


def figure(rows: list, out: Path) -> None:
    from lbgen.output.dissipation import dissipation_series, figure as draw
    from lbgen.output.series import read_series
    done = [r for r in rows if r["status"] == "finished"]
    if not done:
        return
    series = []
    for r in done:
        folder = out / f"{r['operator']}-{r['N']}"
        physics = json.loads((folder / "manifest.json").read_text())["physics"]
        series.append((f"{r['operator']} {r['N']}³", dissipation_series(read_series(folder / "series.csv"), physics,
                                                                        r["N"] ** 3)))
    first = done[0]["record"]
    draw(series[0][1], {"Re": first["Re"]}, first, label=series[0][0], others=series[1:]).savefig(
        out / "tgv_operators.png", dpi=120)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="32")
    ap.add_argument("--operators", default="bgk,bgk-les,mrt,central,cumulant,kbc")
    ap.add_argument("--re", type=float, default=1600.0)
    ap.add_argument("--out", type=Path, default=Path("runs/tgv"))
    ap.add_argument("--docs", type=Path, default=Path(__file__).resolve().parent.parent / "docs" / "validation3d.md")
    a = ap.parse_args()
    import os
    from lbgen.perf.machine import cpu_model
    machine = f"{cpu_model()}, {os.cpu_count()} cores (C backend, OpenMP)"
    rows = []
    for n in (int(s) for s in a.sizes.split(",")):
        for op in a.operators.split(","):
            rows.append(run_one(op, n, a.re, a.out))
            print(json.dumps({k: v for k, v in rows[-1].items() if k != "record"} | {
                "peak": rows[-1].get("record") and (rows[-1]["record"]["peak_time"], rows[-1]["record"]["peak_epsilon"])}),
                flush=True)
    text = table(rows, a.re, machine)
    print(text)
    write_docs(a.docs, text)
    figure(rows, a.out)
    assert all(math.isfinite(r["seconds"]) for r in rows)


if __name__ == "__main__":
    main()
