"""The stability map of the collision operators (issue 37; a benchmark, not a test): the largest Reynolds number
at which a decaying flow stays stable on a fixed small lattice, per operator.

2D (``--dim 2``, the default): the doubly periodic thin shear layer (Minion & Brown, J. Comput. Phys. 138 (1997)
734) on D2Q9: u_x = U tanh(kappa (y - 1/4)) for y <= 1/2, U tanh(kappa (3/4 - y)) above, u_y = delta U
sin(2 pi (x + 1/4)) (x, y in units of L), kappa = 80, delta = 0.05, U = 0.1 (lattice units), nu = U L / Re, run
to 2 convective times L/U, energy sampled every tenth; the Reynolds numbers are a ladder of 10^(1/4) steps and an
operator's figure is the last rung before its first unstable one.

3D (``--dim 3``): the Taylor-Green vortex (Brachet et al., J. Fluid Mech. 130 (1983) 411; the set-up of
``lbgen run taylor-green``, lbgen.run.setups.taylor_green3d, with its pressure) on D3Q27 and D3Q19 at N^3 (16
by default), U = 0.1, Re = U (N / 2 pi) / nu, run to 20 convective times (N / 2 pi) / U, energy sampled every
convective time.  The TGV rather than a 3D shear layer: its start is one smooth Fourier mode, resolved on 16^3,
and it is the 3D benchmark the operators are already validated on (benchmarks/tgv_operators.py), so the map
measures what an under-resolved lattice does to each operator as the vortex breaks down into scales the lattice
cannot hold, not a start the lattice cannot represent (a kappa = 80 layer is thinner than a 16^3 cell).  The
search: a ladder of 10^(1/2) steps up to the first unstable rung, then bisection in log Re between it and the
last stable rung down to a ratio 10^(1/32) (7.5 %), assuming stability is monotone in Re in that bracket.

One criterion for both (``stable``): a run is stable when its kinetic energy stays finite and never rises above
the start's times GROWTH (= 1: the flows decay, energy gained is the instability's).  Tables go into
docs/validation3d.md between the markers below, with the date and machine; ``--figure`` draws the 3D map.

    python benchmarks/stability_map.py [--sizes 32] [--operators bgk,trt,mrt,central,cumulant,kbc,bgk-les]
    python benchmarks/stability_map.py --dim 3 [--sizes 16] [--sets d3q27,d3q19] [--operators all]
                                       [--figure docs/stability_map3d.png] [--docs docs/validation3d.md]

Both run one thread (C backend, ``LBGEN_OPT_LEVEL`` as set: the map is a verdict per run, not a timing).
``shear_layer_energies`` is also the home of the flow for tests/model/test_kbc_physics.py."""
from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import numpy as np

BEGIN, END = "<!-- stability_map: begin -->", "<!-- stability_map: end -->"
BEGIN3, END3 = "<!-- stability_map_3d: begin -->", "<!-- stability_map_3d: end -->"
GROWTH = 1.0                # a stable run's energy never exceeds the start's times this
U = 0.1                     # the flows' velocity scale (lattice units)
TGV_TIMES, TGV_SAMPLES = 20.0, 20                                # 3D: convective times, energy samples
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
        if not math.isfinite(out[-1]) or out[-1] > 1.0:        # exploded (tests read the explosion)
            break
    return out


def tgv_energies(collision, N, re, velocity_set="d3q27", **params):
    """The kinetic energy per site of the Taylor-Green vortex (the module doc) on N^3: the start's, then every
    convective time (N / 2 pi) / U to TGV_TIMES, stopping at the first unbounded value."""
    import lbgen
    from lbgen.model.physics import taylor_green_length, viscosity_parameters
    from lbgen.run.setups import taylor_green3d
    L = taylor_green_length(N)
    viscosity = viscosity_parameters(collision, U * L / re, r=R)      # tau, or the regularized operator's C1
    sim = lbgen.Simulation(N, N, N, velocity_set=velocity_set, collision=collision, check_every=0, threads=1,
                           **viscosity, **params)
    fields = taylor_green3d(N, N, N, amplitude=R * U, r=R)
    sim.set_fields(**fields)
    out = [float(np.mean(fields["ux"] ** 2 + fields["uy"] ** 2) / (2 * R * R))]
    done = 0
    for k in range(1, TGV_SAMPLES + 1):
        step = round(k * TGV_TIMES / TGV_SAMPLES * L / U)
        sim.run(step - done)
        done = step
        f = sim.fields()
        out.append(float(np.mean(f["ux"] ** 2 + f["uy"] ** 2 + f["uz"] ** 2) / (2 * R * R)))
        if not bounded(out):
            break
    return out


def tgv_excess(N: int, re: float) -> float:
    """tau - 1/2 (the regularized operator's C1) of the TGV at Re on N^3: nu = U (N / 2 pi) / Re = (tau - 1/2) / 3."""
    return 3 * U * N / (2 * math.pi) / re


def bounded(energies) -> bool:
    """The stability criterion (one home): every energy finite and at most the start's times GROWTH."""
    return all(math.isfinite(e) for e in energies) and max(energies[1:], default=0.0) <= GROWTH * energies[0]


def stable(energies, samples: int = 10) -> bool:
    """A whole run (``samples`` energies after the start) within the criterion."""
    return len(energies) == samples + 1 and bounded(energies)


def largest_stable(op: str, L: int):
    """2D: (largest stable Re on the ladder or None, first unstable Re or None)."""
    last = None
    for re in LADDER:
        if not stable(shear_layer_energies(op, L, re)):
            return last, re
        last = re
    return last, None


def largest_stable_3d(op: str, N: int, velocity_set: str, lo: float = 1e2, hi: float = 1e7, ratio=10 ** (1 / 32)):
    """3D: (largest stable Re found or None, smallest unstable Re found or None, max E/E0 of that unstable run,
    runs): a 10^(1/2) ladder from lo to the first unstable rung, then bisection in log Re down to ``ratio``."""
    runs = 0

    def verdict(re):
        nonlocal runs
        runs += 1
        e = tgv_energies(op, N, re, velocity_set)
        return stable(e, TGV_SAMPLES), (max(e[1:]) / e[0] if all(map(math.isfinite, e)) else math.inf)

    last, bad, growth = None, None, None
    for k in range(int(round(2 * math.log10(hi / lo))) + 1):
        re = lo * 10 ** (k / 2)
        ok, g = verdict(re)
        if not ok:
            bad, growth = re, g
            break
        last = re
    if bad is None or last is None:
        return last, bad, growth, runs
    while bad / last > ratio * 1.0001:
        mid = math.sqrt(last * bad)
        ok, g = verdict(mid)
        if ok:
            last = mid
        else:
            bad, growth = mid, g
    return last, bad, growth, runs


def table(rows, machine: str) -> str:
    lines = [f"Measured {time.strftime('%Y-%m-%d', time.gmtime())} on {machine} (`python benchmarks/stability_map.py`; "
             "the thin shear layer, kappa = 80, delta = 0.05, U = 0.1, 2 L/U; Re ladder 10^(1/4)):", "",
             "| operator | lattice | largest stable Re | first unstable Re | τ at the largest |", "|---|---|---|---|---|"]
    for r in rows:
        best = f"{r['stable']:.3g}" if r["stable"] else "below 100"
        bad = f"{r['unstable']:.3g}" if r["unstable"] else "none up to 1e7"
        tau = f"{0.5 + 3 * U * r['L'] / r['stable']:.6f}" if r["stable"] else "—"
        lines.append(f"| {r['operator']} | {r['L']}² D2Q9 | {best} | {bad} | {tau} |")
    return "\n".join(lines)


def table3d(rows, machine: str, command: str) -> str:
    lines = [f"Measured {time.strftime('%Y-%m-%d', time.gmtime())} on {machine} (`{command}`; the Taylor–Green "
             f"vortex, U = {U}, {TGV_TIMES:g} t_c, energy every t_c, stable: finite and E ≤ {GROWTH:g} E₀; Re ladder "
             "10^(1/2) from 100, then bisection to 10^(1/32)):", "",
             "| operator | lattice | largest stable Re | smallest unstable Re (max E/E₀ there) | τ − ½ (C1) at the largest "
             "| runs |", "|---|---|---|---|---|---|"]
    for r in rows:
        best = f"{r['stable']:.3g}" if r["stable"] else "below 100"
        if r["unstable"]:
            g = "∞/NaN" if not math.isfinite(r["growth"]) else f"{r['growth']:.3g}"
            bad = f"{r['unstable']:.3g} ({g})"
        else:
            bad = "none up to 1e7"
        tau = f"{tgv_excess(r['N'], r['stable']):.2e}" if r["stable"] else "—"
        lines.append(f"| {r['operator']} | {r['N']}³ {r['set'].upper()} | {best} | {bad} | {tau} | {r['runs']} |")
    return "\n".join(lines)


def figure(rows, path: Path) -> None:
    """The 3D map: one horizontal bar per operator and set, its largest stable Re (log axis); an arrow where no
    unstable Re was found up to the search's top."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 0.32 * len(rows) + 1.2))
    colours = {"d3q27": "tab:blue", "d3q19": "tab:orange"}
    labels = []
    for i, r in enumerate(rows):
        best = r["stable"] or 1e2
        ax.barh(i, best, left=0, color=colours.get(r["set"], "grey"))
        if not r["unstable"]:
            ax.annotate("", xy=(best * 2.5, i), xytext=(best, i), arrowprops={"arrowstyle": "->"})
        labels.append(f"{r['operator']} {r['set'].upper()} {r['N']}³")
    ax.set_xscale("log")
    ax.set_xlim(1e2, 3e7)
    ax.set_yticks(range(len(rows)), labels)
    ax.invert_yaxis()
    ax.set_xlabel("largest stable Re (Taylor–Green vortex, 20 t_c)")
    ax.set_title(f"3D stability map: Taylor–Green vortex, U = {U}, {TGV_TIMES:g} t_c")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_between(path: Path, begin: str, end: str, text: str) -> None:
    """Replace the text between the markers in path (nothing where the file or its markers are missing)."""
    if path.exists():
        doc = path.read_text()
        if begin in doc and end in doc:
            head, rest = doc.split(begin, 1)
            path.write_text(head + begin + "\n" + text + "\n" + end + rest.split(end, 1)[1])


def main(argv=None):
    import os
    import sys
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dim", type=int, choices=(2, 3), default=2)
    ap.add_argument("--sizes", default=None, help="lattice sizes (default 32 in 2D, 16 in 3D)")
    ap.add_argument("--operators", default=None,
                    help="comma-separated (2D default: bgk,trt,mrt,central,cumulant,kbc,bgk-les; 3D default: every "
                         "operator the set takes)")
    ap.add_argument("--sets", default="d3q27,d3q19", help="3D velocity sets")
    ap.add_argument("--figure", type=Path, default=None, help="3D: the map as a PNG")
    ap.add_argument("--docs", type=Path, default=Path(__file__).resolve().parent.parent / "docs" / "validation3d.md")
    ap.add_argument("--json", type=Path, default=None, help="3D: the rows as JSON")
    a = ap.parse_args(argv)
    from lbgen.model.operators import OPERATORS, ParameterError, operator
    from lbgen.perf.machine import cpu_model
    level = os.environ.get("LBGEN_OPT_LEVEL", "").strip()
    machine = f"{cpu_model()}, {os.cpu_count()} cores (C backend, one thread{', ' + level if level else ''})"
    rows = []
    try:
        sizes = [int(n) for n in (a.sizes or ("32" if a.dim == 2 else "16")).split(",")]
    except ValueError:
        ap.error(f"--sizes {a.sizes!r}: need comma-separated whole numbers (e.g. 16,24)")
    if min(sizes) < 8:
        ap.error(f"--sizes {a.sizes}: each lattice needs at least 8 sites per axis")
    if a.dim == 2:
        for L in sizes:
            for op in (a.operators or "bgk,trt,mrt,central,cumulant,kbc,bgk-les").split(","):
                t0 = time.perf_counter()
                best, bad = largest_stable(op, L)
                rows.append({"operator": op, "L": L, "stable": best, "unstable": bad})
                print(f"{op:10s} L={L}: largest stable Re {best}, first unstable {bad} "
                      f"({time.perf_counter() - t0:.1f} s)", flush=True)
        text = table(rows, machine)
        print(text)
        write_between(a.docs, BEGIN, END, text)
        return
    sets = [s.strip().lower() for s in a.sets.split(",") if s.strip()]
    wanted = None if a.operators in (None, "all") else [o.strip() for o in a.operators.split(",") if o.strip()]
    from lbgen.model.physics import is_thermal
    from lbgen.model.velocity_set import velocity_set as vset
    try:
        for o in wanted or ():
            operator(o)
        for vs in sets:
            if vset(vs).D != 3:
                raise ValueError(f"--sets {vs}: a 3D velocity set is mapped with --dim 3 (2D: --dim 2, D2Q9)")
    except (ParameterError, KeyError, ValueError) as e:
        ap.error(str(e).strip("'\""))
    for N in sizes:
        for vs in sets:
            for op in wanted or OPERATORS:
                if not operator(op).takes(vs, is_thermal(vs)):
                    if wanted:
                        print(f"{op}: not defined on {vs.upper()}, skipped", flush=True)
                    continue
                t0 = time.perf_counter()
                best, bad, growth, runs = largest_stable_3d(op, N, vs)
                rows.append({"operator": op, "N": N, "set": vs, "stable": best, "unstable": bad, "growth": growth,
                             "runs": runs, "seconds": time.perf_counter() - t0})
                print(f"{op:16s} {vs} N={N}: largest stable Re {best}, smallest unstable {bad} (max E/E0 {growth}), "
                      f"{runs} runs, {rows[-1]['seconds']:.1f} s", flush=True)
    command = "python benchmarks/stability_map.py " + " ".join(sys.argv[1:] if argv is None else argv)
    text = table3d(rows, machine, command.strip())
    print(text)
    if a.json:
        import json
        a.json.write_text(json.dumps(rows, indent=1, default=str))
    if a.figure:
        figure(rows, a.figure)
    write_between(a.docs, BEGIN3, END3, text)


if __name__ == "__main__":
    main()
