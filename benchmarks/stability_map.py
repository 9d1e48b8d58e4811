"""The stability map of the collision operators (issue 37; a benchmark, not a test): the largest Reynolds number
at which the doubly periodic thin shear layer stays stable on a fixed D2Q9 lattice, per operator.

The flow (Minion & Brown, J. Comput. Phys. 138 (1997) 734): u_x = U tanh(kappa (y - 1/4)) for y <= 1/2,
U tanh(kappa (3/4 - y)) above, u_y = delta U sin(2 pi (x + 1/4)) (x, y in units of L), kappa = 80, delta = 0.05,
U = 0.1 (lattice units), nu = U L / Re, run to 2 convective times L/U.  A run is stable when its kinetic energy
stays finite and never rises above the start's (a decaying flow: energy gained is the instability's).  The
Reynolds numbers are a ladder of 10^(1/4) steps; an operator's figure is the last rung before its first
unstable one.  The table goes into docs/validation3d.md between the markers below, with the date and machine.

    python benchmarks/stability_map.py [--sizes 32,64] [--operators bgk,trt,mrt,central,cumulant,kbc,bgk-les]
                                       [--docs docs/validation3d.md]

``shear_layer_energies`` is also the home of the flow for tests/model/test_kbc_physics.py."""
from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import numpy as np

BEGIN, END = "<!-- stability_map: begin -->", "<!-- stability_map: end -->"
R = math.sqrt(3.0)          # D2Q9: the fields are in model units (r u)
LADDER = tuple(10 ** (2 + k / 4) for k in range(0, 21))          # 1e2 .. 1e7


def shear_layer_energies(collision, L, re, U=0.1, convective_times=2.0, kappa=80.0, delta=0.05, **params):
    """The kinetic energy per site of the shear layer (the module doc) on D2Q9 L^2: the start's, then every tenth of
    the run, stopping at the first non-finite or exploding value; ``params``: the operator's other parameters."""
    import lbgen
    tau = 0.5 + 3 * U * L / re
    sim = lbgen.Simulation(L, L, velocity_set="d2q9", collision=collision, tau=tau, check_every=0, threads=1,
                           **params)
    x = (np.arange(L) + 0.5) / L
    X, Y = np.meshgrid(x, x, indexing="ij")
    ux = np.where(Y <= 0.5, U * np.tanh(kappa * (Y - 0.25)), U * np.tanh(kappa * (0.75 - Y)))
    uy = delta * U * np.sin(2 * np.pi * (X + 0.25))
    sim.set_fields(np.ones((L, L)), R * ux, R * uy, T=1.0)
    every = int(convective_times * L / U) // 10
    out = [float(np.mean(ux ** 2 + uy ** 2) / 2)]
    for _ in range(10):
        sim.run(every)
        f = sim.fields()
        out.append(float(np.mean(f["ux"] ** 2 + f["uy"] ** 2) / (2 * R * R)))
        if not math.isfinite(out[-1]) or out[-1] > 1.0:
            break
    return out


def stable(energies) -> bool:
    return len(energies) == 11 and all(math.isfinite(e) for e in energies) and max(energies[1:]) <= energies[0]


def largest_stable(op: str, L: int):
    """(largest stable Re on the ladder or None, first unstable Re or None)."""
    last = None
    for re in LADDER:
        if not stable(shear_layer_energies(op, L, re)):
            return last, re
        last = re
    return last, None


def table(rows, machine: str) -> str:
    lines = [f"Measured {time.strftime('%Y-%m-%d', time.gmtime())} on {machine} (`python benchmarks/stability_map.py`; "
             "the thin shear layer, kappa = 80, delta = 0.05, U = 0.1, 2 L/U; Re ladder 10^(1/4)):", "",
             "| operator | lattice | largest stable Re | first unstable Re | τ at the largest |", "|---|---|---|---|---|"]
    for r in rows:
        best = f"{r['stable']:.3g}" if r["stable"] else "below 100"
        bad = f"{r['unstable']:.3g}" if r["unstable"] else "none up to 1e7"
        tau = f"{0.5 + 3 * 0.1 * r['L'] / r['stable']:.6f}" if r["stable"] else "—"
        lines.append(f"| {r['operator']} | {r['L']}² D2Q9 | {best} | {bad} | {tau} |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="32")
    ap.add_argument("--operators", default="bgk,trt,mrt,central,cumulant,kbc,bgk-les")
    ap.add_argument("--docs", type=Path, default=Path(__file__).resolve().parent.parent / "docs" / "validation3d.md")
    a = ap.parse_args()
    import os
    from lbgen.perf.machine import cpu_model
    rows = []
    for L in (int(s) for s in a.sizes.split(",")):
        for op in a.operators.split(","):
            t0 = time.perf_counter()
            best, bad = largest_stable(op, L)
            rows.append({"operator": op, "L": L, "stable": best, "unstable": bad})
            print(f"{op:10s} L={L}: largest stable Re {best}, first unstable {bad} ({time.perf_counter() - t0:.1f} s)",
                  flush=True)
    text = table(rows, f"{cpu_model()}, {os.cpu_count()} cores (C backend, one thread)")
    print(text)
    if a.docs.exists():
        doc = a.docs.read_text()
        if BEGIN in doc and END in doc:
            head, rest = doc.split(BEGIN, 1)
            a.docs.write_text(head + BEGIN + "\n" + text + "\n" + END + rest.split(END, 1)[1])


if __name__ == "__main__":
    main()
