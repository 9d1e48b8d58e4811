"""The 3D flow validations of tests/simulation/test_flows3d.py at larger sizes, and the
lid-driven cavity reference that test compares with (docs/validation3d.md).

    python benchmarks/validate_flows3d.py cavity 48 [--write]    # Re = 100, U = 0.1; --write stores
                                                                 #   tests/simulation/data/cavity3d_re100_l48.json
    python benchmarks/validate_flows3d.py cavity 16 24 32 48     # centreline extrema, steps, seconds
    python benchmarks/validate_flows3d.py cavity1000 128 [regularized] [--write]   # Re = 1000 against
                                                                 #   Albensoeder & Kuhlmann (2005), Tables 5 and 6;
                                                                 #   --write stores tests/simulation/data/cavity3d_re1000_l128.json
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

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("flows3d", ROOT / "tests" / "simulation" / "test_flows3d.py")
flows = importlib.util.module_from_spec(spec)
spec.loader.exec_module(flows)


RE1000 = ROOT / "tests" / "simulation" / "data" / "cavity3d_re1000_l128.json"


def cavity1000(L: int, collision: str = "bgk", U: float = 0.1, tol: float = 1e-5) -> dict:
    """The test's cavity_profiles at Re = 1000, stepped with time block 3 (CAoSoA VL 8, the
    default layout with walls on z) and checked every 1002 steps until the largest change of
    u/U is < tol; a progress line per check (steps, MLUPS, change, deviation from both tables).
    A diverging run stops with Simulation's own error (its finite-state check)."""
    t0, last, history = time.time(), {}, []

    def progress(steps, s, ux_z, uz_x, change):
        d5, d6 = flows.albensoeder_kuhlmann_deviation(s, ux_z, uz_x)
        seconds = time.time() - t0
        last.update(steps=steps, seconds=seconds, change=change, dev_table5=d5, dev_table6=d6,
                    s=s.tolist(), ux_z=ux_z.tolist(), uz_x=uz_x.tolist())
        if (steps // 1002) % 5 == 0 or change < tol:           # every 5010 steps, and the last
            history.append([steps, float(f"{change:.3g}"), round(d5, 4), round(d6, 4)])
        print(f"  step {steps}: {steps * L ** 3 / seconds / 1e6:.1f} MLUPS, change {change:.2e}, "
              f"deviation Table 5 {d5:.4f}, Table 6 {d6:.4f}", flush=True)

    flows.cavity_profiles(L, U=U, Re=1000, tol=tol, collision=collision, check=1002, progress=progress,
                          time_block=3, layout="caosoa", vl=8)
    return {"what": f"lid-driven cubic cavity, Re = U L / nu = 1000, U = {U} (lattice units), D3Q19 {collision}, "
                    f"half-way bounce-back walls, lid z-high moving +x, {L}^3, time block 3, stopped when max "
                    f"|change of u/U| over 1002 steps < {tol:g}; centrelines: mean of the 4 nearest lines",
            "made_by": f"python benchmarks/validate_flows3d.py cavity1000 {L} --write", **last,
            "history": history,
            "history_columns": ["step", "largest change of u/U over 1002 steps", "max deviation Table 5",
                                "max deviation Table 6"]}


def main(argv):
    what, sizes = argv[0], [int(a) for a in argv[1:] if a.isdigit()]
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
        collision = "regularized" if "regularized" in argv else "bgk"
        for L in sizes:
            out = cavity1000(L, collision)
            print(f"L={L} {collision}: {out['steps']} steps, {out['seconds']:.0f} s; max deviation from Albensoeder "
                  f"& Kuhlmann (2005): Table 5 {out['dev_table5']:.4f}, Table 6 {out['dev_table6']:.4f}", flush=True)
            if "--write" in argv and L == 128 and collision == "bgk":
                RE1000.write_text(json.dumps(out, indent=1) + "\n")
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
