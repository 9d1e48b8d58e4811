"""lbgen's Rayleigh-Taylor step against the D2Q37 production code, same machine, same run.

Not a test and not a CI dependency (issue 14, target 3: "RT step >= 12x the production
code").  The production code is the INFN Ferrara / Rome D2Q37 thermal LBM (Calore,
Gabbana, Schifano, Tripiccione et al.; the code behind the SPEChpc "LBM D2Q37" benchmark)
as published in RRZE-HPC/DisCostiC-Sim, folder ``staticanalysis/multifiles_LBM``
(lbm.c, main.c and eight headers).  This script

1. takes those sources (``--source``, else ``git archive`` from the local mirror
   /work/.mirror/RRZE-HPC+DisCostiC-Sim/repo), and builds them unmodified into a scratch
   folder as one OpenMP process: ``gcc -O3 -march=native -fopenmp -DSPEC_OPENMP
   -DCHECK_MASS`` (the flags lbgen's C backend uses, plus the code's own OpenMP switch;
   ``--prod-cflags`` replaces the first three), with two stub headers it needs and does not
   ship: ``mpi.h``, a single-rank MPI (one rank; the periodic left/right halo "messages" to
   itself are memcpy's, as an MPI library does for a self-message; collectives are copies)
   and ``likwid.h`` (the LIKWID_MARKER_* macros, empty).  ``--mpicc`` builds against a real
   MPI instead (still run as one rank, without mpirun).  <openacc.h> and lbm.cu are only
   included under SPEC_OPENACC / SPEC_CUDA, which are not defined.  The lattice size and
   the step count are not compile-time: the code reads GSIZEX, GSIZEY, NITER and SEED from
   a file ``control`` in its working folder, written here for every run;
2. runs, interleaved for ``--rounds`` rounds (the order rotates each round: with one lbgen
   variant, production first in odd rounds, lbgen first in even ones), the production binary
   for ``--steps`` steps with OMP_NUM_THREADS=``--threads``, and lbgen's Rayleigh-Taylor
   step for as many steps, on the same LX x LY lattice, double precision.  lbgen's side is,
   by default (``--lbgen-path cli``), the command users run, a new process every round::

       python -m lbgen run rayleigh-taylor --lx LX --ly LY --steps N --no-progress --threads T [ARGS]

   (C backend, regularized collision, RT gravity, thermal walls, fused steps, lbgen's default
   or tuned layout, and lbgen's default ``--time-block auto``: the depth ``lbgen tune`` stored
   for this machine, else 3); ARGS are ``--lbgen-args`` (one shell-quoted string, e.g.
   ``--lbgen-args "--time-block 1"``), plus what ``--lbgen-walls production``, ``--layout``,
   ``--vl`` and ``--time-block`` stand for.  ``--lbgen-args`` given several times times
   several lbgen variants in every round, each against the same round's production run
   (an interleaved A/B: ``--lbgen-args '' --lbgen-args '--time-block 1'``).  ``--lbgen-path
   api`` times ``lbgen.simulation.runner.Simulation.run`` in this process instead (fused_walls,
   one sweep per step unless ``--time-block``), as this script did before;
3. prints per round production MLUPS, lbgen MLUPS and their ratio (and, on the cli path, the
   whole lbgen command's wall clock per step), then per lbgen variant the median ratio with
   min-max (and the A/B ratio between variants), with the machine, the load average before
   and after, threads, lattice, both sides' compile flags and the exact lbgen commands.

Timing.  Production: its own timer, the ``ms/iter`` of its ``[GLOBAL-INFO]`` line (MLUPS =
GSIZEX*GSIZEY / (ms/iter); its printed ``MLUP/s`` is the same figure with 2 decimals, kept as
a cross-check), ms/iter = Wct / NITER, Wct = gettimeofday around its main loop (all NITER steps,
the first one included: it has no warm-up; its halo pack / self-exchange / unpack and one
barrier per step are inside, as lbgen's halo exchange is on its side; initialisation,
AoS->SoA copy and the mass check are outside); its whole process's wall clock is shown too.
lbgen, cli path: the MLUPS of the run's own last line, ``done: N steps in S s, X MLUPS; ...``,
i.e. perf_counter around its step loop (all N steps, the first one included, no warm-up step;
synchronised; set-up, kernel load and the final output are outside; with 20 steps and its
guard every 100 steps no guard runs inside, and without --out no series row), which is the
figure users see; beside it the whole command's wall clock (interpreter start-up, set-up,
kernel load, loop, end) per step, for transparency.  Before the rounds each lbgen command is
run once untimed, so that its kernels are in lbgen's on-disk cache (a first run compiles
them); the production binary is built before the rounds.  Both sides start afresh (new
process, new initial state) every round.  lbgen, api path: ``Simulation.run(steps)`` (its
RunStats: perf_counter around the step loop, synchronised), after one warm-up sweep at
set-up; the simulation is built (and compiled) once and carried on from round to round.
OpenMP: OMP_NUM_THREADS=--threads for the production binary; for lbgen ``--threads`` and
OMP_NUM_THREADS (cli) or Simulation(threads=) (api).  lbgen always waits passively (lbgen's
default; an active policy would keep its idle threads spinning on the cores while the
production binary runs): OMP_WAIT_POLICY=passive in this process and in its ``lbgen run``
processes; the production runs with --prod-wait-policy (passive by default).
Its ``Mass check`` (total mass before vs after, relative error < 1e-10, computed outside its
timer) is reported as a sanity check that it ran a sane simulation; ``lbgen run`` checks its
own state at the last step (a NaN or negative density / temperature fails the run) and its
final total mass is shown.

What the production code computes per step (read from its kernels), against lbgen's:
* layout: SoA, population-major, y (the walled direction) contiguous, halos of 3 columns in
  x and 16 rows in y; lbgen's (Q, LX, LY) with y innermost too, in its own layout (caosoa
  VL 8 by default on AVX-512);
* propagate + collide fused in one pull sweep (``c_kernel`` with the propagate offsets) over
  the bulk rows, run as bulk / left band / right band around the MPI halo exchange; the
  4 rows next to each wall (3 wall rows + the first bulk row) are instead propagated
  (``propagate``), completed by the bc (``bcBottom`` / ``bcTop``) and collided in place: 3
  sweeps there.  lbgen's ``fused_walls``: one sweep over every row, then per column the 4
  rows next to each wall are re-pulled into a local array, completed by the bc and the 3
  wall rows re-collided.  With a time block d > 1 (``lbgen run``'s default on the C
  backend: 3) lbgen runs ``fused_tb`` instead: d steps per sweep through cache, the lattice
  cut into bands, the bands holding the walls completing them with the same bc: the same
  arithmetic per step (bit-identical in strict builds), less memory traffic;
* collision: the same regularized operator.  Hermite projections of orders 2-4 relaxed with
  tau1 = 1/2 + 0.001/(rho T), tau2 = 1/2 + 0.001/(rho T), tau3 = 1/2 + 0.5 (lbgen's C1, C2,
  C3 defaults), all three = 1 on the 3 rows next to each wall; gravity
  g = -8.33e-5/32 by the shifted velocity u + tau1 a and T + tau1 (1 - tau1) |a|^2 / 2;
  f rebuilt from A0..A4.  It does so in two stages (relax f in place, then project onto
  Hermite order 4 and rebuild: 4 loops over the 37 populations with the Hermite tables read
  from a struct), lbgen in one reconstruction (equal by Hermite orthogonality, see
  lbgen.model.collision);
* walls: thermal no-slip walls at the bottom and top, periodic in x (with one rank the
  left/right halos come from its own opposite border).  Its bc is what lbgen calls the
  ``reference`` wall scheme (bare bracket, every row keeps its own mass, first-bulk-row
  temperature T + |a|^2/8), compiled with ADIABATIC (physvar.h), i.e. both walls
  adiabatic.  lbgen's RT step (``--lbgen-walls rt``, the default, as ``lbgen run
  rayleigh-taylor`` and benchmarks/perf_fused_walls.py run it) has fixed-temperature walls
  1.05 / 0.95 and lbgen's own scheme; ``--lbgen-walls production`` gives lbgen the
  production code's choice (reference scheme, both walls adiabatic).  Either way the bc is
  6 rows out of LY: the cost difference is in the noise;
* initial state: both a Rayleigh-Taylor interface at mid-height between T = 1.05 (bottom,
  light) and 0.95 (top, heavy) in hydrostatic balance, at rest; the production code
  perturbs it with LX/2 random Fourier modes, lbgen with 8.  Neither kernel branches on
  the state, so this does not change the cost.

Which production code.  This copy is the portable OpenMP / OpenACC version of the code
(the SPEChpc lineage: SPEC_OPENMP / SPEC_OPENACC switches), written for GPUs: with
``-DSPEC_OPENMP`` each kernel is ``#pragma omp parallel for collapse(2)`` over the sites,
the per-site loops over the 37 populations read the Hermite tables from memory, and gcc
vectorises none of the site loops (-fopt-info-vec: only the last 37-population loop of the
collision, across populations).  The authors' papers also describe hand-vectorised CPU
versions (AoSoA layouts, intrinsics) that are not in this repository; a ratio against this
build is a ratio against this code, not against those.

Run it on a quiet machine (it compares wall clock between two programs):

    .venv/bin/python benchmarks/production_compare.py                       # 1024 x 4096, 2 threads, lbgen run
    .venv/bin/python benchmarks/production_compare.py --lx 256 --ly 1024 --steps 20 --rounds 2   # smoke test
    .venv/bin/python benchmarks/production_compare.py --lbgen-args '' --lbgen-args '--time-block 1'  # A/B
    .venv/bin/python benchmarks/production_compare.py --lbgen-path api --time-block 3   # Simulation.run

Memory at 1024 x 4096: production about 3.8 GB (two SoA copies + one AoS copy), lbgen
about 2.5 GB; on the cli path one at a time, on the api path both alive at the same time.
"""
from __future__ import annotations

import argparse
import os
import platform
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MIRROR = Path("/work/.mirror/RRZE-HPC+DisCostiC-Sim/repo")
SUBDIR = "staticanalysis/multifiles_LBM"
UPSTREAM = "https://github.com/RRZE-HPC/DisCostiC-Sim"
SOURCES = ("lbm.c", "main.c", "common.h", "bc_kernel.h", "collide_kernel.h", "propagate_kernel.h",
           "init.h", "packunpack.h", "physvar.h", "utils.h")
DEFAULT_CFLAGS = "-O3 -march=native -fopenmp"
#: the production code's own switches: its OpenMP CPU code path, and its mass check (outside its timer)
PROD_DEFINES = ("-DSPEC_OPENMP", "-DCHECK_MASS")
RT_GRAVITY = (0.0, -8.33e-5 / 32)
RT_T_HOT, RT_T_COLD = 1.05, 0.95

LIKWID_STUB = r"""/* likwid.h stub (benchmarks/production_compare.py): no LIKWID markers. */
#ifndef PRODUCTION_COMPARE_LIKWID_STUB_H
#define PRODUCTION_COMPARE_LIKWID_STUB_H
#define LIKWID_MARKER_INIT
#define LIKWID_MARKER_THREADINIT
#define LIKWID_MARKER_REGISTER(tag)
#define LIKWID_MARKER_START(tag)
#define LIKWID_MARKER_STOP(tag)
#define LIKWID_MARKER_CLOSE
#endif
"""

MPI_STUB = r"""/* Single-rank mpi.h stub (benchmarks/production_compare.py) for the D2Q37 production code.
   One process, MPI_COMM_WORLD of size 1.  Collectives are copies (or nothing); a non-blocking
   send is matched with the receive of the same tag posted before it (the code always posts
   MPI_Irecv first) and copied at once, as an MPI library does for a message to itself. */
#ifndef PRODUCTION_COMPARE_MPI_STUB_H
#define PRODUCTION_COMPARE_MPI_STUB_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef int MPI_Comm;
typedef int MPI_Datatype;     /* the stub's datatype is the size of one element in bytes */
typedef int MPI_Op;
typedef int MPI_Info;
typedef int MPI_Request;
typedef struct { int MPI_SOURCE, MPI_TAG, MPI_ERROR; } MPI_Status;

#define MPI_SUCCESS 0
#define MPI_COMM_WORLD 0
#define MPI_COMM_TYPE_SHARED 0
#define MPI_INFO_NULL 0
#define MPI_MAX_PROCESSOR_NAME 256
#define MPI_THREAD_SINGLE 0
#define MPI_THREAD_FUNNELED 1
#define MPI_THREAD_SERIALIZED 2
#define MPI_THREAD_MULTIPLE 3
#define MPI_STATUS_IGNORE ((MPI_Status *) 0)
#define MPI_REQUEST_NULL (-1)
#define MPI_INT ((MPI_Datatype) sizeof(int))
#define MPI_LONG ((MPI_Datatype) sizeof(long))
#define MPI_LONG_LONG ((MPI_Datatype) sizeof(long long))
#define MPI_DOUBLE ((MPI_Datatype) sizeof(double))
#define MPI_SUM 1
#define MPI_MIN 2
#define MPI_MAX 3

#define MPI_STUB_SLOTS 16
static struct { void *buf; size_t bytes; int tag, posted, matched; } mpi_stub_recv[MPI_STUB_SLOTS];

static inline void mpi_stub_fail(const char *what) {
  fprintf(stderr, "single-rank MPI stub: %s\n", what);
  exit(2);
}
static inline int MPI_Init(int *argc, char ***argv) { (void) argc; (void) argv; return 0; }
static inline int MPI_Init_thread(int *argc, char ***argv, int required, int *provided) {
  (void) argc; (void) argv; *provided = required; return 0;
}
static inline int MPI_Finalize(void) { return 0; }
static inline int MPI_Comm_size(MPI_Comm c, int *size) { (void) c; *size = 1; return 0; }
static inline int MPI_Comm_rank(MPI_Comm c, int *rank) { (void) c; *rank = 0; return 0; }
static inline int MPI_Get_processor_name(char *name, int *len) {
  if (gethostname(name, MPI_MAX_PROCESSOR_NAME) != 0) strcpy(name, "localhost");
  name[MPI_MAX_PROCESSOR_NAME - 1] = 0; *len = (int) strlen(name); return 0;
}
static inline int MPI_Abort(MPI_Comm c, int code) {
  (void) c; fprintf(stderr, "MPI_Abort(%d)\n", code); exit(code ? code : 1);
}
static inline int MPI_Barrier(MPI_Comm c) { (void) c; return 0; }
static inline int MPI_Bcast(void *buf, int count, MPI_Datatype t, int root, MPI_Comm c) {
  (void) buf; (void) count; (void) t; (void) root; (void) c; return 0;    /* the root is the only rank */
}
static inline int MPI_Reduce(const void *s, void *r, int count, MPI_Datatype t, MPI_Op op, int root, MPI_Comm c) {
  (void) op; (void) root; (void) c;
  if (s != r) memcpy(r, s, (size_t) count * (size_t) t);
  return 0;
}
static inline int MPI_Dims_create(int n, int ndims, int *dims) {
  if (n != 1) mpi_stub_fail("MPI_Dims_create for more than one rank");
  for (int i = 0; i < ndims; i++) if (dims[i] == 0) dims[i] = 1;
  return 0;
}
static inline int MPI_Comm_split_type(MPI_Comm c, int type, int key, MPI_Info info, MPI_Comm *out) {
  (void) type; (void) key; (void) info; *out = c; return 0;
}
static inline int MPI_Irecv(void *buf, int count, MPI_Datatype t, int src, int tag, MPI_Comm c, MPI_Request *req) {
  (void) src; (void) c;
  for (int i = 0; i < MPI_STUB_SLOTS; i++)
    if (!mpi_stub_recv[i].posted) {
      mpi_stub_recv[i].buf = buf; mpi_stub_recv[i].bytes = (size_t) count * (size_t) t;
      mpi_stub_recv[i].tag = tag; mpi_stub_recv[i].posted = 1; mpi_stub_recv[i].matched = 0;
      *req = i; return 0;
    }
  mpi_stub_fail("too many receives posted");
  return 1;
}
static inline int MPI_Isend(const void *buf, int count, MPI_Datatype t, int dest, int tag, MPI_Comm c, MPI_Request *req) {
  size_t bytes = (size_t) count * (size_t) t;
  (void) dest; (void) c;
  for (int i = 0; i < MPI_STUB_SLOTS; i++)
    if (mpi_stub_recv[i].posted && !mpi_stub_recv[i].matched && mpi_stub_recv[i].tag == tag) {
      if (bytes > mpi_stub_recv[i].bytes) mpi_stub_fail("message longer than the receive buffer");
      memcpy(mpi_stub_recv[i].buf, buf, bytes);
      mpi_stub_recv[i].matched = 1; *req = MPI_REQUEST_NULL; return 0;
    }
  mpi_stub_fail("MPI_Isend with no matching MPI_Irecv posted before it");
  return 1;
}
static inline int MPI_Wait(MPI_Request *req, MPI_Status *status) {
  (void) status;
  if (*req >= 0) {
    if (!mpi_stub_recv[*req].matched) mpi_stub_fail("MPI_Wait on a receive no send matched");
    mpi_stub_recv[*req].posted = 0; mpi_stub_recv[*req].matched = 0;
  }
  *req = MPI_REQUEST_NULL; return 0;
}
#endif
"""

GLOBAL_INFO = re.compile(r"\[GLOBAL-INFO\] \[(\d+)x(\d+)\] NITER: (\d+) NMPI: (\d+).*?Wct: ([0-9.]+) s "
                         r"\(([0-9.]+) ms/iter\).*?MLUP/s: ([0-9.]+)")
MASS = re.compile(r"Mass check: (PASSED|FAILED)[^\n]*")


def fail(message: str) -> None:
    sys.exit(f"production_compare: {message}")


# ----------------------------------------------------------------------------- sources and build

def production_sources(source: str | None, scratch: Path) -> tuple[Path, str]:
    """The folder holding the production sources, and where they came from."""
    if source:
        root = Path(source).expanduser().resolve()
        if not root.exists():
            fail(f"--source {root} does not exist")
        folder = root / SUBDIR if (root / SUBDIR).is_dir() else root
        origin = str(folder)
    elif MIRROR.is_dir():
        dest = scratch / "upstream"
        dest.mkdir(parents=True, exist_ok=True)
        git = ["git", "--git-dir", str(MIRROR)]
        try:
            commit = subprocess.run(git + ["rev-parse", "HEAD"], check=True, capture_output=True,
                                    text=True).stdout.strip()
            archive = subprocess.run(git + ["archive", "HEAD", SUBDIR], check=True, capture_output=True).stdout
            subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True, capture_output=True)
        except (OSError, subprocess.CalledProcessError) as e:
            err = getattr(e, "stderr", b"") or b""
            fail(f"could not extract {SUBDIR} from the mirror {MIRROR}: {e} {err.decode(errors='replace')}")
        folder = dest / SUBDIR
        origin = f"{MIRROR} at {commit[:12]} ({SUBDIR})"
    else:
        fail(f"no production sources: give --source DIR, a checkout of DisCostiC-Sim "
             f"(git clone {UPSTREAM}) or its {SUBDIR} folder")
    missing = [name for name in SOURCES if not (folder / name).is_file()]
    if missing:
        fail(f"{folder} lacks {', '.join(missing)}: --source wants a DisCostiC-Sim checkout or its "
             f"{SUBDIR} folder ({', '.join(SOURCES)})")
    return folder, origin


def build_production(src: Path, scratch: Path, cc: str, cflags: list, mpicc: str | None) -> tuple[Path, list]:
    """Compile main.c + lbm.c (unmodified) with the stubs; returns the binary and the command line."""
    build = scratch / "build"
    stubs = build / "stubs"
    stubs.mkdir(parents=True, exist_ok=True)
    code = build / "src"
    if code.exists():
        shutil.rmtree(code)
    shutil.copytree(src, code)
    (stubs / "likwid.h").write_text(LIKWID_STUB)
    if mpicc is None:
        (stubs / "mpi.h").write_text(MPI_STUB)
        compiler = [cc]
    else:
        compiler = shlex.split(mpicc)
    if shutil.which(compiler[0]) is None:
        fail(f"compiler {compiler[0]!r} not found (set --cc, or CC, or --mpicc)")
    binary = build / "lbm_production"
    cmd = [*compiler, *cflags, *PROD_DEFINES, f"-I{stubs}", f"-I{code}", str(code / "main.c"), str(code / "lbm.c"),
           "-o", str(binary), "-lm"]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0 or not binary.exists():
        fail("the production code did not build:\n  " + " ".join(cmd) + "\n" + done.stderr[-4000:])
    return binary, cmd


def run_production(binary: Path, scratch: Path, lx: int, ly: int, steps: int, env: dict, seed: int) -> dict:
    """One run of the production binary; its own MLUP/s and step time from its [GLOBAL-INFO] line."""
    run_dir = scratch / "run"
    run_dir.mkdir(exist_ok=True)
    (run_dir / "control").write_text(f"{lx}\n{ly}\n{steps}\n{seed}\n")
    t0 = time.perf_counter()
    done = subprocess.run([str(binary)], cwd=run_dir, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    out = done.stdout + done.stderr
    m = GLOBAL_INFO.search(out)
    if done.returncode != 0 or not m:
        fail(f"the production run failed (exit {done.returncode}):\n{out[-4000:]}")
    gx, gy, niter, nmpi = (int(v) for v in m.group(1, 2, 3, 4))
    if (gx, gy, niter, nmpi) != (lx, ly, steps, 1):
        fail(f"the production run reports {gx} x {gy}, {niter} steps, {nmpi} ranks; asked {lx} x {ly}, {steps}, 1")
    mass = MASS.search(out)
    ms = float(m.group(6))
    if ms <= 0:
        fail(f"the production run reports {ms} ms/iter: too few steps or too small a lattice to time")
    return {"mlups": lx * ly / (ms * 1e3), "printed_mlups": float(m.group(7)), "ms_per_step": ms,
            "loop_s": float(m.group(5)),
            "process_s": wall, "mass": mass.group(0) if mass else "no mass check printed"}


# ----------------------------------------------------------------------------- lbgen side

def lbgen_simulation(args):
    """lbgen's Rayleigh-Taylor step, set up and warmed by one step."""
    from lbgen.simulation.runner import Simulation, Walls
    from lbgen.run.setups import rayleigh_taylor
    if args.lbgen_walls == "production":
        walls = Walls(RT_T_HOT, RT_T_COLD, adiabatic_bottom=True, adiabatic_top=True, scheme="reference")
    else:
        walls = Walls(RT_T_HOT, RT_T_COLD)
    kw = dict(backend="c", collision="regularized", gravity=RT_GRAVITY, walls=walls, threads=args.threads,
              precision="double", fused=True, check_every=0, time_block=args.time_block)
    if args.layout:
        kw["layout"] = args.layout
    if args.vl:
        kw["vl"] = args.vl
    sim = Simulation(args.lx, args.ly, **kw)
    sim.set_fields(**rayleigh_taylor(args.lx, args.ly, gravity=RT_GRAVITY, T_hot=RT_T_HOT, T_cold=RT_T_COLD))
    sim.step(args.time_block)         # warm-up (one sweep)
    sim.synchronize()
    return sim, walls


def lbgen_flags() -> str:
    from lbgen.backends import c as cbackend
    return f"{cbackend.describe()}: {' '.join(cbackend.flags_for(None, strict=False))}"


DONE = re.compile(r"^done: (\d+) steps in ([0-9.]+) s, ([0-9.]+) MLUPS; step (\d+), total mass (\S+)", re.M)
RUN_HEADER = re.compile(r"^lbgen run: .*?; (\S+) (\S+) x=", re.M)
TIME_BLOCK_LINE = re.compile(r"^time block (\d+):", re.M)


def lbgen_common_args(args) -> list:
    """The lbgen run options this script's own flags stand for (before each variant's --lbgen-args)."""
    extra = []
    if args.lbgen_walls == "production":
        extra += ["--adiabatic", "both", "--wall-scheme", "reference"]
    if args.layout:
        extra += ["--layout", args.layout]
    if args.vl:
        extra += ["--vl", str(args.vl)]
    if args.time_block is not None:
        extra += ["--time-block", str(args.time_block)]
    return extra


def lbgen_command(args, variant: list) -> list:
    """The command users run: lbgen run rayleigh-taylor, this lattice, steps and threads, plus a variant's options.
    Options given twice: the last wins (click), so a variant's --lbgen-args override the script's own flags."""
    return [sys.executable, "-m", "lbgen", "run", "rayleigh-taylor", "--lx", str(args.lx), "--ly", str(args.ly),
            "--steps", str(args.steps), "--no-progress", "--threads", str(args.threads),
            *lbgen_common_args(args), *variant]


def run_lbgen_cli(cmd: list, cwd: Path, env: dict, lx: int, ly: int, steps: int) -> dict:
    """One `lbgen run` process: the MLUPS of its own `done:` line (its step loop) and the whole command's wall."""
    t0 = time.perf_counter()
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    m = DONE.search(done.stdout)
    if done.returncode != 0 or not m:
        fail(f"lbgen run failed (exit {done.returncode}):\n  {shlex.join(cmd)}\n{(done.stdout + done.stderr)[-4000:]}")
    n, seconds, mlups = int(m.group(1)), float(m.group(2)), float(m.group(3))
    if n != steps or int(m.group(4)) != steps:
        fail(f"lbgen run reports {n} steps (step {m.group(4)}); asked {steps}:\n  {shlex.join(cmd)}")
    if mlups <= 0 or seconds <= 0:
        fail(f"lbgen run reports {seconds} s, {mlups} MLUPS: too few steps or too small a lattice to time")
    header = RUN_HEADER.search(done.stderr)
    depth = TIME_BLOCK_LINE.search(done.stderr)
    return {"mlups": mlups, "loop_s": seconds, "ms_per_step": 1e3 * seconds / n,
            "process_s": wall, "process_ms_per_step": 1e3 * wall / n,
            "process_mlups": lx * ly * n / wall / 1e6, "mass": m.group(5),
            "where": f"{header.group(1)} {header.group(2)}" if header else "?",
            "time_block": int(depth.group(1)) if depth else 1}


# ----------------------------------------------------------------------------- report

def machine() -> str:
    model = None
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        m = re.search(r"^Model name:\s*(.+)$", out, re.M)
        model = m.group(1).strip() if m else None
    except OSError:
        pass
    if not model:
        try:
            for line in Path("/proc/cpuinfo").read_text().splitlines():
                if line.lower().startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
        except OSError:
            pass
    return f"{model or platform.processor() or platform.machine()}, {os.cpu_count()} logical CPUs, " \
           f"{platform.node()}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        description="Time lbgen's Rayleigh-Taylor step (regularized + walls) against the D2Q37 production code "
                    "(RRZE-HPC/DisCostiC-Sim staticanalysis/multifiles_LBM), built here, interleaved rounds on one "
                    "machine.  lbgen's side is by default the command users run, `lbgen run rayleigh-taylor` (its "
                    "step-loop MLUPS; the whole command's wall is shown too).  Prints MLUPS of each and the ratio "
                    "lbgen/production.",
        epilog="Run on a quiet machine; the default size takes about 4 GB (production) and 2.5 GB (lbgen) of memory.  "
               "See the module docstring for what each side computes and how each is timed.  A/B of lbgen options "
               "in one sitting: --lbgen-args '' --lbgen-args '--time-block 1' (each variant timed every round).")
    ap.add_argument("--source", metavar="DIR",
                    help=f"a DisCostiC-Sim checkout or its {SUBDIR} folder (default: git archive from {MIRROR}; "
                         f"else: git clone {UPSTREAM})")
    ap.add_argument("--lx", type=int, default=1024, help="lattice width, periodic (default 1024)")
    ap.add_argument("--ly", type=int, default=4096, help="lattice height, walls at bottom and top (default 4096)")
    ap.add_argument("--steps", type=int, default=20, help="timed steps per round on each side (default 20)")
    ap.add_argument("--rounds", type=int, default=5, help="interleaved rounds (default 5)")
    ap.add_argument("--threads", type=int, default=2, help="OpenMP threads on both sides (default 2)")
    ap.add_argument("--cc", default=os.environ.get("CC", "gcc"), help="C compiler for the production code "
                    "(default $CC or gcc; lbgen's C backend picks its own the same way)")
    ap.add_argument("--prod-cflags", default=DEFAULT_CFLAGS,
                    help=f"optimisation flags for the production code (default {DEFAULT_CFLAGS!r}, lbgen's C "
                         f"backend's); {' '.join(PROD_DEFINES)} are always added")
    ap.add_argument("--mpicc", metavar="CMD", help="build against a real MPI with this compiler wrapper (run as "
                    "one rank, no mpirun) instead of the single-rank mpi.h stub")
    ap.add_argument("--lbgen-path", choices=("cli", "api"), default="cli",
                    help="cli (default): time `python -m lbgen run rayleigh-taylor --lx LX --ly LY --steps N "
                         "--no-progress --threads T [--lbgen-args]`, a new process every round, MLUPS from its "
                         "`done:` line; api: lbgen.simulation.runner.Simulation.run in this process (built once, "
                         "one warm-up sweep)")
    ap.add_argument("--lbgen-args", metavar="ARGS", action="append",
                    help="extra `lbgen run` options (cli path), one shell-quoted string, e.g. --lbgen-args "
                         "'--time-block 1' (write --lbgen-args='--x' for a single option without a value).  Give "
                         "it several times to time several lbgen variants in every round ('' = the plain "
                         "command); the variants' order rotates with production's from round to round")
    ap.add_argument("--lbgen-walls", choices=("rt", "production"), default="rt",
                    help="rt (default): lbgen's RT walls, fixed T 1.05 / 0.95, lbgen's wall scheme; production: "
                         "the production code's, both walls adiabatic, scheme='reference' (cli: --adiabatic both "
                         "--wall-scheme reference)")
    ap.add_argument("--layout", help="lbgen layout (default: lbgen's tuned or default choice)")
    ap.add_argument("--time-block", type=int, default=None,
                    help="lbgen steps per sweep through cache (temporal blocking, fused_tb).  cli: passed as "
                         "--time-block N to every variant (default: not given, i.e. lbgen's own default, "
                         "--time-block auto); api: Simulation(time_block=N) (default 1: one fused_walls sweep "
                         "per step)")
    ap.add_argument("--vl", type=int, help="lbgen vector length (with --layout)")
    ap.add_argument("--prod-wait-policy", choices=("passive", "active"), default="passive",
                    help="OMP_WAIT_POLICY of the production runs (default passive, lbgen's default).  lbgen "
                         "always runs passive (this process and its `lbgen run` processes): its idle OpenMP "
                         "threads must sleep, not spin, while the production binary runs")
    ap.add_argument("--seed", type=int, default=1, help="the production code's SEED (initial perturbation)")
    ap.add_argument("--keep", metavar="DIR", help="build and run the production code in DIR and keep it "
                    "(default: a temporary folder, removed at the end)")
    args = ap.parse_args(argv)
    for name in ("lx", "ly", "steps", "rounds", "threads"):
        if getattr(args, name) < 1:
            ap.error(f"--{name} must be >= 1")
    if args.ly < 16 or args.lx < 8:
        ap.error("the production code needs LX >= 8 and LY >= 16 (3-row wall bands, 3-column halos)")
    if args.time_block is not None and args.time_block < 1:
        ap.error("--time-block must be >= 1")
    cli = args.lbgen_path == "cli"
    if not cli:
        if args.lbgen_args:
            ap.error("--lbgen-args are `lbgen run` options: they need --lbgen-path cli (the api path takes "
                     "--time-block, --layout, --vl, --lbgen-walls)")
        if args.time_block is None:
            args.time_block = 1
    variants = [shlex.split(a) for a in (args.lbgen_args or [""])]
    names = [shlex.join(v) or "(plain)" for v in variants]

    # lbgen waits passively, fixed before lbgen (and libgomp) load: with an active policy its
    # idle OpenMP threads would spin on the cores the production binary runs on
    os.environ["OMP_WAIT_POLICY"] = "passive"
    os.environ.pop("GOMP_SPINCOUNT", None)
    policy = args.prod_wait_policy
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads), OMP_WAIT_POLICY=policy)
    lbgen_env = dict(os.environ, OMP_NUM_THREADS=str(args.threads), OMP_WAIT_POLICY="passive")

    scratch_ctx = None
    if args.keep:
        scratch = Path(args.keep).resolve()
        scratch.mkdir(parents=True, exist_ok=True)
    else:
        scratch_ctx = tempfile.TemporaryDirectory(prefix="production_compare_")
        scratch = Path(scratch_ctx.name)
    load_before = os.getloadavg()
    started = time.strftime("%Y-%m-%d %H:%M:%S %Z")
    healthy, sim, walls, layout = None, None, None, None
    try:
        src, origin = production_sources(args.source, scratch)
        print(f"production sources: {origin}", flush=True)
        binary, build_cmd = build_production(src, scratch, args.cc, shlex.split(args.prod_cflags), args.mpicc)
        cc_version = subprocess.run([shlex.split(args.mpicc)[0] if args.mpicc else args.cc, "--version"],
                                    capture_output=True, text=True).stdout.splitlines()[:1]
        print(f"production build: {' '.join(build_cmd)}", flush=True)

        if cli:
            lbgen_dir = scratch / "lbgen"           # the runs' working folder (they write nothing without --out)
            lbgen_dir.mkdir(exist_ok=True)
            commands = [lbgen_command(args, v) for v in variants]
            for name, cmd in zip(names, commands):
                # untimed: fills lbgen's kernel cache (a first run compiles), checks the command works
                print(f"lbgen {name}: warm-up run (untimed): {shlex.join(cmd)}", flush=True)
                run_lbgen_cli(cmd, lbgen_dir, lbgen_env, args.lx, args.ly, args.steps)
        else:
            print("lbgen: building the Rayleigh-Taylor simulation ...", flush=True)
            sim, walls = lbgen_simulation(args)
            spec = sim.spec
            layout = f"{spec.layout}" + (f" VL {spec.vl}" if getattr(spec, "vl", None) else "")

        sides = ["production"] + list(range(len(variants)))
        rows = []
        for r in range(1, args.rounds + 1):
            k = (r - 1) % len(sides)
            order = sides[k:] + sides[:k]           # two sides: production first in odd rounds, as before
            res = {}
            for side in order:
                if side == "production":
                    res[side] = run_production(binary, scratch, args.lx, args.ly, args.steps, env, args.seed)
                elif cli:
                    res[side] = run_lbgen_cli(commands[side], lbgen_dir, lbgen_env, args.lx, args.ly, args.steps)
                else:
                    st = sim.run(args.steps)
                    res[side] = {"mlups": st.mlups, "ms_per_step": 1e3 * st.seconds / st.steps}
            p = res["production"]
            first = "production" if order[0] == "production" else f"lbgen {names[order[0]]}"
            rows.append((r, first, p, [res[i] for i in range(len(variants))]))
            said = ", ".join(f"lbgen {names[i]} {res[i]['mlups']:.2f} MLUPS" for i in range(len(variants)))
            print(f"  round {r} ({first} first): production {p['mlups']:.3f} MLUPS (it printed "
                  f"{p['printed_mlups']:.2f}), {said}; production {p['mass']}", flush=True)
        if sim is not None and hasattr(sim, "looks_healthy"):
            healthy = sim.looks_healthy()
    finally:
        if scratch_ctx is not None:
            scratch_ctx.cleanup()
    load_after = os.getloadavg()

    print()
    print(f"machine:   {machine()}")
    print(f"sitting:   started {started}; load average before {load_before[0]:.2f} {load_before[1]:.2f} "
          f"{load_before[2]:.2f}, after {load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f}")
    print(f"threads:   {args.threads} (production: OMP_NUM_THREADS, lbgen: "
          f"{'--threads and OMP_NUM_THREADS' if cli else 'Simulation(threads=)'}); "
          f"OMP_WAIT_POLICY production {policy}, lbgen passive; "
          f"OMP_PROC_BIND={os.environ.get('OMP_PROC_BIND', 'unset')}")
    print(f"lattice:   {args.lx} x {args.ly} (x periodic, walls at y = 0 and LY-1), D2Q37, double, "
          f"{args.steps} steps per round, {args.rounds} rounds")
    print(f"production: {origin}")
    print(f"  build:   {' '.join(build_cmd)}")
    print(f"  with:    {cc_version[0] if cc_version else args.cc}; "
          f"{'real MPI via ' + args.mpicc if args.mpicc else 'single-rank mpi.h stub'}, empty likwid.h")
    print("  timing:  its own timer: LX*LY / (ms/iter of its [GLOBAL-INFO] line; gettimeofday around its "
          "main loop, all steps, no warm-up); 'process s': its whole process (init, AoS->SoA, mass check)")
    if cli:
        for i, cmd in enumerate(commands):
            last = rows[-1][3][i]
            print(f"lbgen [{i}]: {shlex.join(cmd)}")
            print(f"           ({last['where']}, time block {last['time_block']}; final total mass {last['mass']})")
        print("  timing:  MLUPS of its `done:` line: perf_counter around its step loop (every step, the first "
              "one included, no warm-up step; synchronised); a new process every round, after one untimed "
              "warm-up run of each command (kernel cache filled).  'whole': the whole command's wall clock "
              "(start-up, set-up, loop, end), shown per step")
    else:
        print(f"lbgen:     Simulation(backend='c', collision='regularized', walls={walls}, fused=True), "
              f"layout {layout}, time_block {getattr(sim, 'time_block', 1)}")
        print("  timing:  Simulation.run(steps) after one warm-up step (perf_counter around the step loop)")
        if healthy is not None:
            print(f"  state after the rounds: {'healthy (finite, rho > 0, T > 0)' if healthy else 'NOT HEALTHY'}")
    print(f"  build:   {lbgen_flags()}")
    print()
    head = f"{'round':>5}  {'production MLUPS':>16}  {'ms/step':>8}  {'process s':>9}  {'lbgen':>5}  " \
           f"{'lbgen MLUPS':>11}  {'ms/step':>8}"
    if cli:
        head += f"  {'whole s':>8}  {'whole ms/step':>13}"
    print(head + f"  {'lbgen/production':>16}")
    for r, first, p, qs in rows:
        for i, q in enumerate(qs):
            line = (f"{r:>5}  {p['mlups']:>16.3f}  {p['ms_per_step']:>8.2f}  {p['process_s']:>9.2f}  " if i == 0
                    else f"{'':>5}  {'':>16}  {'':>8}  {'':>9}  ")
            line += f"{'[' + str(i) + ']':>5}  {q['mlups']:>11.2f}  {q['ms_per_step']:>8.2f}"
            if cli:
                line += f"  {q['process_s']:>8.2f}  {q['process_ms_per_step']:>13.2f}"
            print(line + f"  {q['mlups'] / p['mlups']:>16.2f}")
    print()
    prod = [p["mlups"] for _, _, p, _ in rows]
    print(f"production MLUPS: median {statistics.median(prod):.3f} (min {min(prod):.3f}, max {max(prod):.3f})")
    for i, name in enumerate(names):
        ratios = [qs[i]["mlups"] / p["mlups"] for _, _, p, qs in rows]
        mlups = [qs[i]["mlups"] for _, _, _, qs in rows]
        label = f"lbgen [{i}] {name}" if cli else "lbgen (api)"
        print(f"{label}: MLUPS median {statistics.median(mlups):.2f} (min {min(mlups):.2f}, max {max(mlups):.2f})")
        print(f"  ratio lbgen/production: median {statistics.median(ratios):.2f}x "
              f"(min {min(ratios):.2f}, max {max(ratios):.2f}, {len(ratios)} rounds); issue 14 target 3 asks >= 12x")
        if cli:
            whole = [qs[i]["process_s"] / p["process_s"] for _, _, p, qs in rows]
            print(f"  whole processes, production s / lbgen s: median "
                  f"{statistics.median([1 / w for w in whole]):.2f}x (production's includes its set-up and mass "
                  f"check, lbgen's its start-up, set-up and kernel load; not the target's figure)")
        if i > 0:
            ab = [qs[i]["mlups"] / qs[0]["mlups"] for _, _, _, qs in rows]
            print(f"  A/B against [0] (same rounds): median {statistics.median(ab):.3f}x "
                  f"(min {min(ab):.3f}, max {max(ab):.3f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
