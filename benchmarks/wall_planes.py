"""Measure where the walls effectively are: the table of lbgen.model.wall_planes.

For each velocity set with walls, wall scheme and operator point (BGK tau; regularized
C = C1 = C2 with C3 = 0.5), two steady states on a 1 x LY lattice (C backend; 3D sets: 1 x 1 x LZ,
walls across z, the lbgen scheme only):

* a Poiseuille flow along x driven by a body force: the roots of the parabola fitted to the
  physical velocity over the central half of the layer are the no-slip planes;
* conduction between walls at 1 +- d/2 (d = 0.02 and 0.1; no gravity): where the line
  fitted over the central half reaches each wall's temperature are the isothermal planes;

(``lbgen.simulation.wall_measure``), first at LY = 64, then at LY = 128 started from the
64 result; the table takes LY = 128 and prints the change from 64 as the resolution check
(an entry measured only at a smaller LY -- D3Q39 regularized, ``--ly 64``: LY = 128 would take
hours of one core -- enters at that LY, listed in ``MEASURED_AT``).
Offsets are in rows from the wall's edge row (bottom: row 0; top: row LY - 1); the
effective depth of the layer is LY - (1 + 2 offset).

    python benchmarks/wall_planes.py --print-only           # the table from benchmarks/wall_planes.jsonl
    python benchmarks/wall_planes.py --jobs 2 --results /tmp/planes.jsonl    # measure it all: ~4 h of one core
    python benchmarks/wall_planes.py --sets d2q37 --collisions bgk --results /tmp/planes.jsonl   # a minute
    python benchmarks/wall_planes.py --sets d3q39 --schemes lbgen --collisions regularized --values 0.01,0.03

Results are appended to ``--results`` (JSON lines) as they come, and points already there
are not measured again, so an interrupted run resumes.  At the end the table is printed as
the docs show it and as the Python literal of ``lbgen.model.wall_planes.TABLE``.  Not a
test (tests/model/test_wall_planes.py re-measures one point of the table).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from multiprocessing import Pool
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

TAUS = (0.55, 0.6, 0.7, 0.8, 1.0, 1.2)
CS = (1e-3, 3e-3, 1e-2, 3e-2, 0.1)
SETS = ("d2q37", "d2v17", "d2q9", "d3q39")
SCHEMES = ("lbgen", "reference")
LYS = (64, 128)


def operator_points(collisions, values=None):
    """(collision, x, parameters) of each point: x = tau (bgk, TAUS) or C = C1 = C2 (regularized,
    CS); ``values``: only these x (of either list)."""
    keep = (lambda x: True) if values is None else (lambda x: any(abs(x - v) <= 1e-12 * v for v in values))
    for c in collisions:
        if c == "bgk":
            yield from (("bgk", tau, {"tau": tau}) for tau in TAUS if keep(tau))
        else:
            yield from (("regularized", C, {"C1": C, "C2": C, "C3": 0.5}) for C in CS if keep(C))


def key(velocity_set, scheme, collision, x, ly):
    return f"{velocity_set}/{scheme}/{collision}/{x:g}/{ly}"


def cost(task) -> float:
    """Relative cost (steps ~ LY^2 / diffusivity): the slowest first, for load balance."""
    collision, x = task[2], task[3]
    return 1.0 / ((x - 0.5) if collision == "bgk" else x)


def missing_parts(record) -> tuple:
    """The parts of ``PARTS`` a stored record lacks (a record from an older run may lack some)."""
    from lbgen.simulation.wall_measure import PARTS
    if record is None:
        return PARTS
    if "error" in record:
        return ()
    return tuple(p for p in PARTS if p not in record)


def run_task(task):
    """Measure what the stored records of one operator point lack, smallest LY first."""
    from lbgen.simulation.wall_measure import measure
    velocity_set, scheme, collision, x, params, lys, stored = task
    results, guess = [], None
    for ly in lys:
        record = stored.get(ly)
        parts = missing_parts(record)
        if record is not None and "no_slip" in record:        # its own LY's planes: the best start
            guess = (record["no_slip"], record.get("isothermal"))
        if parts:
            t = time.perf_counter()
            try:
                m = measure(velocity_set, scheme, collision, params, ly, guess=guess, parts=parts)
            except Exception as e:          # diverged or no steady state: recorded, left out of the table
                m = {"velocity_set": velocity_set, "scheme": scheme, "collision": collision, "params": dict(params),
                     "ly": ly, "error": f"{type(e).__name__}: {e}"}
            m.update(x=x, seconds=time.perf_counter() - t, key=key(velocity_set, scheme, collision, x, ly))
            if record is not None and "error" not in m:         # merge with the stored parts
                merged = dict(record)
                for k in ("steps", "residual", "change"):
                    old = record.get(k)
                    merged[k] = {**(old if isinstance(old, dict) else {}), **m.pop(k)}
                merged.update(m)
                m = merged
            record = m
            results.append(m)
        if "error" in record:
            break
        guess = (record["no_slip"], record["isothermal"])
    return results


def load(path: Path) -> dict:
    out = {}
    if path.exists():
        for line in path.read_text().splitlines():
            if line.strip():
                m = json.loads(line)
                out[m["key"]] = m
    return out


def table_rows(results: dict, lys):
    """(set, scheme, collision) -> (LY, [(x, record at LY, record at the next smaller LY or None)] sorted
    by x): each entry at the largest LY any of its points was measured at (LY = 128 everywhere but
    where only LY = 64 was affordable: D3Q39 regularized), its points measured there."""
    by_entry = {}
    for m in results.values():
        if m["ly"] in lys and "error" not in m:
            by_entry.setdefault((m["velocity_set"], m["scheme"], m["collision"]), []).append(m)
    rows = {}
    for k, records in by_entry.items():
        big = max(m["ly"] for m in records)
        smaller = [ly for ly in lys if ly < big]
        small = smaller[-1] if smaller else None
        points = sorted(((m["x"], m, results.get(key(*k, m["x"], small)) if small else None)
                         for m in records if m["ly"] == big), key=lambda r: r[0])
        rows[k] = (big, points)
    return dict(sorted(rows.items(), key=lambda kv: (SETS.index(kv[0][0]), kv[0][1], kv[0][2])))


def fmt_change(a, b):
    return "" if a is None or b is None else f"{a - b:+.3f}"


def print_table(results: dict, lys, out=sys.stdout):
    for (vs, scheme, collision), (big, rows) in table_rows(results, lys).items():
        smaller = [ly for ly in lys if ly < big]
        small = smaller[-1] if smaller else None
        name = "tau" if collision == "bgk" else "C1 = C2"
        change = f"the change from LY = {small}" if small else "no smaller LY measured"
        print(f"\n{vs}, {scheme} walls, {collision}: offsets in rows from the edge row at LY = {big} (in brackets: "
              f"{change}); delta: the depth is LY - delta; shift: rows per unit T", file=out)
        if rows[0][1].get("isothermal") is None:
            print(f"| {name} | no-slip offset | delta |", file=out)
            print("|---|---|---|", file=out)
        else:
            print(f"| {name} | no-slip offset | delta | isothermal offset, dT = 0.02 | delta | shift | "
                  f"isothermal offset, dT = 0.1 | delta | shift |", file=out)
            print("|---|---|---|---|---|---|---|---|---|", file=out)
        for x, m, o in rows:
            cells = [f"{x:g}"]
            for part, shift in (("no_slip", None), ("isothermal", "shift"), ("isothermal_large", "shift_large")):
                v = m.get(part)
                if v is None:
                    continue
                cells += [f"{v:.3f} ({fmt_change(v, o and o.get(part))})", f"{1 + 2 * v:.2f}"]
                if shift:
                    cells.append(f"{m[shift]:+.2f}")
            print("| " + " | ".join(cells) + " |", file=out)


def print_failures(results: dict, out=sys.stdout):
    failed = sorted(m["key"] + ": " + m["error"] for m in results.values() if "error" in m)
    if failed:
        print("\nnot measured (left out of the table):", file=out)
        for line in failed:
            print("  " + line, file=out)


def print_literal(results: dict, lys, out=sys.stdout):
    def num(v):
        return "None" if v is None else f"{v:.3f}"
    entries = table_rows(results, lys)
    print("\nTABLE = {", file=out)
    for (vs, scheme, collision), (_, rows) in entries.items():
        print(f"    ({vs!r}, {scheme!r}, {collision!r}): (", file=out)
        for x, m, _ in rows:
            values = [m.get(k) for k in ("no_slip", "isothermal", "shift", "isothermal_large", "shift_large")]
            print(f"        ({x:g}, " + ", ".join(num(v) for v in values) + "),", file=out)
        print("    ),", file=out)
    print("}", file=out)
    print("\nMEASURED_AT = {", file=out)
    for k, (big, _) in entries.items():
        if big != lys[-1]:
            print(f"    {k!r}: {big},", file=out)
    print("}", file=out)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sets", default=",".join(SETS))
    ap.add_argument("--schemes", default=",".join(SCHEMES))
    ap.add_argument("--collisions", default="bgk,regularized")
    ap.add_argument("--values", default=None,
                    help="only these operator points (tau or C, comma-separated; default: all of TAUS and CS)")
    ap.add_argument("--ly", default=",".join(map(str, LYS)), help="lattice heights, smallest first (default 64,128)")
    ap.add_argument("--jobs", type=int, default=1, help="processes (one core each)")
    ap.add_argument("--results", default=str(Path(__file__).with_suffix(".jsonl")),
                    help="JSON lines: appended, and read to resume (default: the measurements behind the table, "
                         "benchmarks/wall_planes.jsonl)")
    ap.add_argument("--print-only", action="store_true", help="print the table of --results, measure nothing")
    args = ap.parse_args(argv)
    lys = tuple(int(v) for v in args.ly.split(","))
    values = None if args.values is None else tuple(float(v) for v in args.values.split(","))
    path = Path(args.results)
    results = load(path)
    if not args.print_only:
        def stored(vs, scheme, c, x):
            return {ly: results[key(vs, scheme, c, x, ly)] for ly in lys if key(vs, scheme, c, x, ly) in results}

        def done(records):
            return any("error" in r for r in records.values()) or (
                len(records) == len(lys) and not any(missing_parts(r) for r in records.values()))
        tasks = [(vs, scheme, c, x, params, lys, stored(vs, scheme, c, x))
                 for vs in args.sets.split(",") for scheme in args.schemes.split(",")
                 for c, x, params in operator_points(args.collisions.split(","), values)
                 if not done(stored(vs, scheme, c, x)) and (scheme == "lbgen" or not vs.startswith("d3"))]
        tasks.sort(key=cost, reverse=True)
        print(f"{len(tasks)} operator points to measure ({len(results)} results already in {path})", flush=True)
        with Pool(max(1, args.jobs)) as pool, path.open("a") as f:
            for done in pool.imap_unordered(run_task, tasks):
                for m in done:
                    results[m["key"]] = m
                    f.write(json.dumps(m) + "\n")
                    f.flush()
                    if "error" in m:
                        print(f"{m['key']}: {m['error']} ({m['seconds']:.0f} s)", flush=True)
                        continue
                    iso = "" if m["isothermal"] is None else f", isothermal {m['isothermal']:.4f}"
                    steps = m["steps"].values() if isinstance(m["steps"], dict) else m["steps"]
                    print(f"{m['key']}: no-slip {m['no_slip']:.4f}{iso} ({m['seconds']:.0f} s, "
                          f"{sum(steps)} steps)", flush=True)
    print_table(results, lys)
    print_failures(results)
    print_literal(results, lys)


if __name__ == "__main__":
    main()
