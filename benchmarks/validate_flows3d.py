"""The 3D flow validations of tests/simulation/test_flows3d.py at larger sizes, and the
lid-driven cavity reference that test compares with (docs/validation3d.md).

    python benchmarks/validate_flows3d.py cavity 48 [--write]    # Re = 100, U = 0.1; --write stores
                                                                 #   tests/simulation/data/cavity3d_re100_l48.json
    python benchmarks/validate_flows3d.py cavity 16 24 32 48     # centreline extrema, steps, seconds
    python benchmarks/validate_flows3d.py cavity1000 128 [regularized]   # Re = 1000 against Albensoeder &
                                                                 #   Kuhlmann (2005), Tables 5 and 6
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
            t = time.time()
            s, ux, uz, steps = flows.cavity_profiles(L, Re=1000, tol=1e-5, collision=collision)
            dev5, dev6 = flows.albensoeder_kuhlmann_deviation(s, ux, uz)
            print(f"L={L} {collision}: {steps} steps, {time.time() - t:.0f} s; max deviation from Albensoeder & "
                  f"Kuhlmann (2005): Table 5 {dev5:.4f}, Table 6 {dev6:.4f}", flush=True)
            np.savez(f"cavity3d_re1000_l{L}_{collision}.npz", s=s, ux_z=ux, uz_x=uz)
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
