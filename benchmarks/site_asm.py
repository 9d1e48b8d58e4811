"""Deterministic code-quality figures of the generated kernels: instructions, stack spills and
reloads and floating-point instructions per hot function of `gcc -S` (the runtime's flags).

    python benchmarks/site_asm.py                 # D2Q37 regularized + walls, D3Q19 BGK
    python benchmarks/site_asm.py --keep /tmp/asm  # keep the emitted sources and assembly

Each kernel is emitted with `lbgen emit` (the C backend, its default layout, CAoSoA VL 8, or
`--layout`), compiled with `gcc -O3 -march=native -fopenmp -std=gnu11 -fPIC -S`, and the
assembly of every function whose name holds one of `--functions` (OpenMP bodies are
`<name>._omp_fn.<n>`) is counted:

* insns: instruction lines;
* spills / reloads: vector moves (`vmov*`) to / from a stack slot (`(%rsp)` or `(%rbp)`);
* stack ops: other vector instructions with a stack operand (folded reloads);
* flops: vector floating-point arithmetic (add, sub, mul, div, fma, min, max, sqrt);

and, per kernel set, the collide list's most values live at once in the scheduler's model
(`lbgen.model.assignments.peak_live`) -- and, for an operator with an off switch (the cumulant's
limiter), that of the list the C `fused` and `fused_tb` take when it is 0 (their `*_off_` functions).

Nothing is timed: the figures depend only on the generated source and the compiler.
"""
from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from pathlib import Path

FLAGS = ("-O3", "-march=native", "-fopenmp", "-std=gnu11", "-fPIC", "-S")
KERNELS = {
    "d2q37-regularized-walls": ["--velocity-set", "d2q37", "--collision", "regularized", "--walls"],
    "d3q19-bgk": ["--velocity-set", "d3q19", "--collision", "bgk"],
    "d3q19-trt": ["--velocity-set", "d3q19", "--collision", "trt"],
    "d3q19-bgk-les": ["--velocity-set", "d3q19", "--collision", "bgk-les"],
    "d3q19-trt-les": ["--velocity-set", "d3q19", "--collision", "trt-les"],
    "d3q27-bgk": ["--velocity-set", "d3q27", "--collision", "bgk"],
    "d3q27-cumulant": ["--velocity-set", "d3q27", "--collision", "cumulant"],
    "d3q19-mrt": ["--velocity-set", "d3q19", "--collision", "mrt"],
    "d3q27-mrt": ["--velocity-set", "d3q27", "--collision", "mrt"],
    "d3q27-central": ["--velocity-set", "d3q27", "--collision", "central"],
    "d2q9-kbc": ["--velocity-set", "d2q9", "--collision", "kbc"],
    "d2q9-bgk": ["--velocity-set", "d2q9", "--collision", "bgk"],
    "d3q27-kbc": ["--velocity-set", "d3q27", "--collision", "kbc"],
    "d3q39-bgk-walls": ["--velocity-set", "d3q39", "--collision", "bgk", "--walls"],
    "d3q39-regularized-walls": ["--velocity-set", "d3q39", "--collision", "regularized", "--walls"],
}
#: (velocity set, operator) of each kernel set's collide list
COLLIDE = {"d2q37-regularized-walls": ("d2q37", "regularized"), "d3q19-bgk": ("d3q19", "bgk"),
           "d3q19-trt": ("d3q19", "trt"), "d3q19-bgk-les": ("d3q19", "bgk-les"),
           "d3q19-trt-les": ("d3q19", "trt-les"), "d3q27-bgk": ("d3q27", "bgk"),
           "d3q27-cumulant": ("d3q27", "cumulant"), "d3q19-mrt": ("d3q19", "mrt"),
           "d3q27-mrt": ("d3q27", "mrt"),
           "d3q27-central": ("d3q27", "central"), "d2q9-kbc": ("d2q9", "kbc"), "d2q9-bgk": ("d2q9", "bgk"),
           "d3q27-kbc": ("d3q27", "kbc"), "d3q39-bgk-walls": ("d3q39", "bgk"),
           "d3q39-regularized-walls": ("d3q39", "regularized")}
#: what a plain run shows (the operator comparison: --kernels with the d3q19-trt* sets)
DEFAULT_KERNELS = ("d2q37-regularized-walls", "d3q19-bgk")
FUNCTIONS = ("fused",)
_STACK = re.compile(r"\((%rsp|%rbp)\)")
_FLOP = re.compile(r"^v(add|sub|mul|div|fn?m(add|sub)\d+|min|max|sqrt)[sp][sd]\b")


def functions(asm: str):
    """(name, instruction lines) of each function in gcc's assembly."""
    name, body = None, []
    for line in asm.splitlines():
        m = re.match(r"^([A-Za-z_.][\w.$]*):", line)
        if m and not m.group(1).startswith(".L"):
            if name:
                yield name, body
            name, body = m.group(1), []
            continue
        s = line.strip()
        if name and s and not s.startswith(".") and not s.endswith(":"):
            body.append(s)
    if name:
        yield name, body


def count(body):
    spills = reloads = stack = flops = 0
    for ins in body:
        op, _, args = ins.replace("\t", " ").partition(" ")
        if _FLOP.match(op):
            flops += 1
        if op.startswith("v") and _STACK.search(args):
            if op.startswith("vmov"):
                # AT&T: source first, destination last
                if _STACK.search(args.split(",")[-1]):
                    spills += 1
                else:
                    reloads += 1
            else:
                stack += 1
    return {"insns": len(body), "spills": spills, "reloads": reloads, "stack_ops": stack, "flops": flops}


def measure(emit_args, workdir: Path, layout: str | None, extra_flags=()):
    out = workdir / "src"
    cmd = [sys.executable, "-m", "lbgen", "emit", *emit_args, "--output", str(out)]
    if layout:
        cmd += ["--layout", layout]
    subprocess.run(cmd, check=True, capture_output=True)
    asm = workdir / "kernels.s"
    subprocess.run(["gcc", *FLAGS, *extra_flags, "-o", str(asm), str(out / "lbgen_kernels.c")], check=True)
    return {name: count(body) for name, body in functions(asm.read_text())}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernels", default=",".join(DEFAULT_KERNELS), help="comma-separated: " + ", ".join(KERNELS))
    ap.add_argument("--functions", default=",".join(FUNCTIONS), help="substrings of the function names shown")
    ap.add_argument("--layout", default=None, help="emit layout (default: emit's)")
    ap.add_argument("--flags", default="", help="extra gcc flags (space-separated)")
    ap.add_argument("--keep", default=None, help="folder to keep sources and assembly in")
    args = ap.parse_args(argv)
    wanted = [k for k in args.kernels.split(",") if k]
    unknown = [k for k in wanted if k not in KERNELS]
    if unknown:
        ap.error(f"unknown kernels {unknown}; allowed: {sorted(KERNELS)}")
    subs = [s for s in args.functions.split(",") if s]
    print(f"{'kernel':28} {'function':34} {'insns':>6} {'spills':>6} {'reloads':>7} {'stack_ops':>9} {'flops':>6}")
    from lbgen.model.assignments import peak_live
    from lbgen.model.derived import collide
    from lbgen.model.operators import operator
    for kernel in wanted:
        col = collide(COLLIDE[kernel][1], COLLIDE[kernel][0])
        print(f"{kernel:28} collide list: {len(col.assignments)} assignments, {col.flops} operations per site, at most "
              f"{peak_live(col.assignments, col.outputs, col.inputs)} values live")
        special = operator(COLLIDE[kernel][1]).special_values()
        if special:     # the list the C fused and fused_tb sweeps take (the *_special_ functions) at those values
            sp = collide(COLLIDE[kernel][1], COLLIDE[kernel][0], specialised=True)
            at = ", ".join(f"{n} = {v}" for n, v in special.items())
            print(f"{kernel:28} collide list at {at} (*_special_): {len(sp.assignments)} assignments, "
                  f"{sp.flops} operations per site, at most {peak_live(sp.assignments, sp.outputs, sp.inputs)} "
                  "values live")
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(args.keep) / kernel if args.keep else Path(tmp)
            work.mkdir(parents=True, exist_ok=True)
            figures = measure(KERNELS[kernel], work, args.layout, args.flags.split())
        for name, c in figures.items():
            if any(s in name for s in subs):
                print(f"{kernel:28} {name:34} {c['insns']:6d} {c['spills']:6d} {c['reloads']:7d} "
                      f"{c['stack_ops']:9d} {c['flops']:6d}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
