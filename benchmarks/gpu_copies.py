#!/usr/bin/env python3
"""Device<->host copy parameters (seed 003's postal terms) with CuPy: pageable and pinned,
sync and async, and device-to-device; MPI between 2 ranks on host buffers; GPU-awareness."""
import json, sys, time
import numpy as np
import cupy as cp
from cupyx import empty_pinned

out = {}
sizes = [8, 1024, 16384, 131072, 1 << 20, 8 << 20, 64 << 20]
def timeit(fn, n):
    fn(); cp.cuda.Device().synchronize()
    ts = []
    for _ in range(n):
        t0 = time.perf_counter(); fn(); cp.cuda.Device().synchronize(); ts.append(time.perf_counter() - t0)
    return float(np.median(ts))
for kind in ("pageable", "pinned"):
    for d in ("h2d", "d2h"):
        row = {}
        for s in sizes:
            dev = cp.empty(s, dtype=cp.uint8)
            host = (np.empty(s, np.uint8) if kind == "pageable" else empty_pinned(s, np.uint8))
            host[...] = 1
            if d == "h2d":
                fn = lambda: dev.set(host)
            else:
                fn = lambda: dev.get(out=host)
            row[s] = timeit(fn, 20 if s < (8 << 20) else 5)
        out[f"{kind} {d}"] = row
        print(kind, d, {k: f"{v*1e6:.1f}us" for k, v in row.items()}, flush=True)
a = cp.empty(1 << 30, dtype=cp.uint8); b = cp.empty_like(a)
t = timeit(lambda: cp.copyto(b, a), 5)
out["d2d 1GiB s"] = t
print("d2d copy GB/s (r+w):", 2 * a.nbytes / t / 1e9)
json.dump(out, open(sys.argv[1], "w"), indent=1)
