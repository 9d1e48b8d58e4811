"""The 3D flow validations of tests/simulation/test_flows3d.py at larger sizes, and the
lid-driven cavity reference that test compares with (docs/validation3d.md).

    python benchmarks/validate_flows3d.py cavity 48 [--write]    # Re = 100, U = 0.1; --write stores
                                                                 #   tests/simulation/data/cavity3d_re100_l48.json
    python benchmarks/validate_flows3d.py cavity 16 24 32 48     # centreline extrema, steps, seconds
    python benchmarks/validate_flows3d.py cavity1000 128 [OPERATOR] [--threads N] [--write]
                                                                 # Re = 1000 against Albensoeder & Kuhlmann
                                                                 #   (2005), Tables 5 and 6; OPERATOR: any of
                                                                 #   lbgen's (default bgk; the set follows it:
                                                                 #   cumulant on D3Q27); --write stores
                                                                 #   tests/simulation/data/cavity3d_re1000_l128.json
                                                                 #   (bgk), ..._l64_cumulant.json (cumulant, 64)
    python benchmarks/validate_flows3d.py poiseuille 8 16 32 64  # slab and duct errors, fitted order
    python benchmarks/validate_flows3d.py taylor-green 32 48     # early decay rate / 6 nu k^2

The functions are the test's own (loaded from the test file), so the reference is made by
exactly the set-up and stopping rule the test runs at 16^3 and 24^3 (48^3: 22000 steps,
about 8 minutes on 2 busy cores).  A validation script,
not a test.
"""
import importlib.util
import json
import sys
import time
from pathlib import Path
from typing import Optional

import numpy as np

from lbgen.model.operators import OPERATORS
from lbgen.simulation.parameters import SimulationError

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("flows3d", ROOT / "tests" / "simulation" / "test_flows3d.py")
flows = importlib.util.module_from_spec(spec)
spec.loader.exec_module(flows)


def re1000_file(L: int, collision: str) -> Path:
    """Where the Re = 1000 run of L^3 and an operator is stored: cavity3d_re1000_l{L}.json for
    BGK (the first one), cavity3d_re1000_l{L}_{operator}.json for the others."""
    suffix = "" if collision == "bgk" else f"_{collision}"
    return ROOT / "tests" / "simulation" / "data" / f"cavity3d_re1000_l{L}{suffix}.json"


def cavity1000(L: int, collision: str = "bgk", U: float = 0.1, tol: float = 1e-5, threads: int = 2,
               write: Optional[Path] = None) -> dict:
    """The test's cavity_profiles at Re = 1000, stepped with time block 3 (CAoSoA VL 8, the
    default layout with walls on z) and checked every 1002 steps until the largest change of
    u/U is < tol; a progress line per check (steps, MLUPS, change, deviation from both tables).
    ``write``: the record is (re)written there after every check (``converged`` false until the
    rule stops the run), so a run stopped by hand leaves its last state.  A diverging run stops
    with Simulation's own error (its finite-state check): the record says so (``diverged``: the
    error; the last finite check kept)."""
    t0, last, history = time.time(), {}, []
    velocity_set = flows.cavity_set(collision)
    parameters = flows.viscosity_parameters(collision, U * L / 1000, r=flows.scale_factor(velocity_set))
    command = f"python benchmarks/validate_flows3d.py cavity1000 {L}" + ("" if collision == "bgk" else f" {collision}") \
        + ("" if threads == 2 else f" --threads {threads}")

    def record(diverged=None):
        return {"what": f"lid-driven cubic cavity, Re = U L / nu = 1000, U = {U} (lattice units), "
                        f"{velocity_set.upper()} {collision} ("
                        f"{', '.join(f'{k} = {v:.6g}' for k, v in parameters.items())}, the rest its defaults), "
                        f"half-way bounce-back walls, lid z-high moving +x, {L}^3, time block 3, stopped when max "
                        f"|change of u/U| over 1002 steps < {tol:g}; centrelines: mean of the 4 nearest lines",
                "made_by": f"{command} --write", "velocity_set": velocity_set, "collision": collision,
                "parameters": parameters, "threads": threads, "tolerance": tol,
                "converged": bool(last) and last["change"] < tol and diverged is None, **last, "history": history,
                "history_columns": ["step", "largest change of u/U over 1002 steps", "max deviation Table 5",
                                    "max deviation Table 6"],
                **({"diverged": diverged} if diverged else {})}

    def store(out):
        if write is not None:
            part = write.with_suffix(".part")
            part.write_text(json.dumps(out, indent=1) + "\n")
            part.replace(write)

    def progress(steps, s, ux_z, uz_x, change):
        d5, d6 = flows.albensoeder_kuhlmann_deviation(s, ux_z, uz_x)
        seconds = time.time() - t0
        last.update(steps=steps, seconds=seconds, change=change, dev_table5=d5, dev_table6=d6,
                    s=s.tolist(), ux_z=ux_z.tolist(), uz_x=uz_x.tolist())
        if (steps // 1002) % 5 == 0 or change < tol:           # every 5010 steps, and the last
            history.append([steps, float(f"{change:.3g}"), round(d5, 4), round(d6, 4)])
        print(f"  step {steps}: {steps * L ** 3 / seconds / 1e6:.2f} MLUPS, change {change:.2e}, "
              f"deviation Table 5 {d5:.4f}, Table 6 {d6:.4f}", flush=True)
        store(record())

    diverged = None
    try:
        flows.cavity_profiles(L, U=U, Re=1000, tol=tol, collision=collision, check=1002, progress=progress,
                              threads=threads, time_block=3, layout="caosoa", vl=8)
    except SimulationError as e:
        diverged = str(e)
        print(f"  diverged: {e}", flush=True)
    out = record(diverged)
    store(out)
    return out


def main(argv):
    what = argv[0]
    sizes = [int(a) for i, a in enumerate(argv[1:], 1) if a.isdigit() and argv[i - 1] != "--threads"]
    if what == "cavity":
        for L in sizes:
            t = time.time()
            s, ux, uz, steps = flows.cavity_profiles(L)
            print(f"L={L}: {steps} steps, {time.time() - t:.0f} s; min ux(z) = {ux.min():.5f}, "
                  f"max uz(x) = {uz.max():.5f}, min uz(x) = {uz.min():.5f}", flush=True)
            np.savez(f"cavity3d_re100_l{L}.npz", s=s, ux_z=ux, uz_x=uz)
            if "--write" in argv and L == 48:
                flows.DATA.write_text(json.dumps({
                    "what": "lid-driven cubic cavity, Re = U L / nu = 100, U = 0.1 (lattice units), D3Q19 BGK, "
                            "half-way bounce-back walls, lid z-high moving +x (Ladd), 48^3, stopped when max "
                            "|change of u/U| over 1000 steps < 1e-6; centrelines: mean of the 4 nearest lines",
                    "made_by": "python benchmarks/validate_flows3d.py cavity 48 --write",
                    "steps": steps, "s": s.tolist(), "ux_z": ux.tolist(), "uz_x": uz.tolist()}, indent=1) + "\n")
    elif what == "cavity1000":
        words = [a for a in argv[1:] if not a.isdigit() and not a.startswith("--")]
        collision = words[0] if words else "bgk"
        if len(words) > 1 or collision not in OPERATORS:
            sys.exit(f"cavity1000: one operator, one of {', '.join(OPERATORS)}; got {' '.join(words)}")
        threads = 2
        if "--threads" in argv:
            threads = int(argv[argv.index("--threads") + 1])
        for L in sizes:
            out = cavity1000(L, collision, threads=threads,
                             write=re1000_file(L, collision) if "--write" in argv else None)
            print(f"L={L} {collision}: {out.get('steps')} steps, {out.get('seconds', 0):.0f} s; max deviation from "
                  f"Albensoeder & Kuhlmann (2005): Table 5 {out.get('dev_table5', float('nan')):.4f}, "
                  f"Table 6 {out.get('dev_table6', float('nan')):.4f}" + (" (diverged)" if "diverged" in out else ""),
                  flush=True)
    elif what == "poiseuille":
        for duct in (False, True):
            errors = [flows.poiseuille_error(H, duct) for H in sizes]
            order = -np.polyfit(np.log(sizes), np.log(errors), 1)[0]
            print(("duct" if duct else "slab"), dict(zip(sizes, (f"{e:.3e}" for e in errors))), f"order {order:.3f}")
    elif what == "taylor-green":
        for L in sizes:
            for name, coll in (("d3q19", "bgk"), ("d3q19", "regularized"), ("d3q27", "bgk")):
                t = time.time()
                print(L, name, coll, f"{flows.taylor_green_rate(L, name, coll):.5f}", f"{time.time() - t:.1f} s")
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
