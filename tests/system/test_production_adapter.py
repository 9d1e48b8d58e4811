"""examples/production/lbgen_adapter.h: the production D2Q37 code's own call sites on lbgen's
emitted kernels (docs/embedding.md, "Replacing a real code's kernels").

The harness below is the production code's step as its lbm.c writes it (one rank: its
PROPAGATECOLLIDE on the bulk and the left and right borders, then propagate, bcBottom /
bcTop and an in-place COLLIDE on the rows next to the walls), with its own constants
(physvar.h, common.h: UNIT, GRAVITY, CONST1..3, TEMPWALLDOWN / TEMPWALLUP, ADIABATIC, HX, HY,
hx, hy) and no line changed; only its kernel headers are replaced by the adapter.  The
adapter's lines are counted (ADAPTER_LINES, the figure docs/embedding.md gives), and the
step on them agrees with lbgen's own runner on the production code's physics (reference
wall scheme, both walls adiabatic, a = GRAVITY / UNIT) to 1e-12."""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]
ADAPTER = REPO / "examples" / "production" / "lbgen_adapter.h"
DOCS = REPO / "docs" / "embedding.md"
GLX, GLY, STEPS = 16, 40, 10

#: the lines of lbgen_adapter.h a code owner writes (not comments, not the include guard),
#: plus the two the production code's lbm.c changes: its kernel includes replaced by the
#: adapter's, and one call of lb_setup() after its MPI decomposition
ADAPTER_FILE_LINES = 17
HOST_LINES = 2
ADAPTER_LINES = ADAPTER_FILE_LINES + HOST_LINES

#: the production code's constants (physvar.h, common.h), verbatim
PRODUCTION_DEFINES = """
#define ADIABATIC
#define T0           1.0
#define DT           0.05
#define GRAVITY      ((-8.33e-5)/32.)
#define CONST1       (0.001)
#define CONST2       (0.001)
#define CONST3       (0.5)
#define TEMPWALLUP   (T0-DT)
#define TEMPWALLDOWN (T0+DT)
#define UNIT 1.19697977039307435897239  //1.0
#define DELTAT 1./(UNIT)
#define FORCEY -1.0*GRAVITY
#define HX  3
#define HY  16
#define hx  3
#define hy  3
#define Q1 (1)
#define Q2 (2)
#define Q3 (3)
#define Q4 (4)
#define Q5 (5)
"""

HARNESS = PRODUCTION_DEFINES + r"""
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
int LSIZEX, LSIZEY, mpi_rank_y = 0, n_mpi_y = 1;
typedef double data_t;
#include "lbgen_adapter.h"

int main(int argc, char **argv)
{
    LSIZEX = atoi(argv[1]); LSIZEY = atoi(argv[2]);
    const int niter = atoi(argv[3]);
    if (fabs(LBGEN_R - UNIT) > 1e-15) { fprintf(stderr, "LBGEN_R %.17g is not UNIT\n", LBGEN_R); return 3; }
    lb_setup();
    const size_t n = (size_t)LSIZEX * LSIZEY;
    double *fields = malloc(4 * n * sizeof *fields);
    FILE *in = fopen(argv[4], "rb");
    if (!fields || !in || fread(fields, sizeof *fields, 4 * n, in) != 4 * n) return 4;
    fclose(in);
    data_t *f1_soa_h = lbgen_alloc(LSIZEX, LSIZEY), *f2_soa_h = lbgen_alloc(LSIZEX, LSIZEY), *f_tmp_h;
    if (!f1_soa_h || !f2_soa_h) return 5;
    lbgen_init_equilibrium(f2_soa_h, LSIZEX, LSIZEY, fields, fields + n, fields + 2 * n, fields + 3 * n, lb_par.ax,
                           lb_par.ay);
    const int yoff = 0; (void)yoff;       /* its global row offset: lbgen takes the wall switches instead */
    for (int ii = 1; ii <= niter; ii++) {
        lbgen_halo(f2_soa_h, LSIZEX, LSIZEY);   /* one rank: its periodic X exchange with itself */
        /* from here on lbm.c's step, verbatim */
        PROPAGATECOLLIDE(f1_soa_h, f2_soa_h, (HX+hx), (HX+LSIZEX-hx), (HY+hy+1), (HY+LSIZEY-hy-1), yoff, Q3);
        PROPAGATECOLLIDE(f1_soa_h, f2_soa_h, (HX), (HX+hx), (HY+hy+1), (HY+LSIZEY-hy-1), yoff, Q1);
        PROPAGATECOLLIDE(f1_soa_h, f2_soa_h, (HX+LSIZEX-hx), (HX+LSIZEX), (HY+hy+1), (HY+LSIZEY-hy-1), yoff, Q2);
        if ( mpi_rank_y == 0 ){
          propagate (f1_soa_h, f2_soa_h,        (HX), (HX+LSIZEX), (HY), (HY+hy+1), Q4);
          bcBottom  (f1_soa_h, f2_soa_h, param, (HX), (HX+LSIZEX), Q4 );
          COLLIDE(f1_soa_h, f1_soa_h, (HX), (HX+LSIZEX), (HY), (HY+hy+1), yoff, Q4);
        } else {
          PROPAGATECOLLIDE (f1_soa_h, f2_soa_h, (HX), (HX+LSIZEX), (HY), (HY+hy+1), yoff, Q4);
        }
        if ( mpi_rank_y == (n_mpi_y-1)) {
          propagate (f1_soa_h, f2_soa_h,        (HX), (HX+LSIZEX), (HY+LSIZEY-hy-1), (HY+LSIZEY), Q5);
          bcTop     (f1_soa_h, f2_soa_h, param, (HX), (HX+LSIZEX), Q5);
          COLLIDE(f1_soa_h, f1_soa_h, (HX), (HX+LSIZEX), (HY+LSIZEY-hy-1), (HY+LSIZEY), yoff, Q5);
        } else {
          PROPAGATECOLLIDE(f1_soa_h, f2_soa_h, (HX), (HX+LSIZEX), (HY+LSIZEY-hy-1), (HY+LSIZEY), yoff, Q5);
        }
        f_tmp_h  = f1_soa_h;
        f1_soa_h = f2_soa_h;
        f2_soa_h = f_tmp_h;
    }
    lbgen_fields(f2_soa_h, LSIZEX, LSIZEY, fields, fields + n, fields + 2 * n, fields + 3 * n, lb_par.ax, lb_par.ay);
    FILE *out = fopen(argv[5], "wb");
    if (!out || fwrite(fields, sizeof *fields, 4 * n, out) != 4 * n) return 6;
    fclose(out);
    return 0;
}
"""


def adapter_lines(text: str) -> list:
    """The code lines of the adapter file: not blank, not comments, not the include guard."""
    code = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    guard = ("#ifndef LBGEN_ADAPTER_H", "#define LBGEN_ADAPTER_H")
    lines = [ln.strip() for ln in code.splitlines() if ln.strip() and ln.strip() not in guard]
    assert lines[-1] == "#endif"              # the guard's end
    return lines[:-1]


def test_the_adapter_has_the_lines_the_docs_count():
    lines = adapter_lines(ADAPTER.read_text())
    assert len(lines) == ADAPTER_FILE_LINES, lines
    mapped = {name for name in ("PROPAGATECOLLIDE", "COLLIDE", "propagate", "bcBottom", "bcTop")
              if any(ln.startswith(f"#define {name}(") for ln in lines)}
    assert mapped == {"PROPAGATECOLLIDE", "COLLIDE", "propagate", "bcBottom", "bcTop"}
    docs = DOCS.read_text()
    assert f"**Adapter lines for the production code: {ADAPTER_LINES}**" in docs
    assert f"{ADAPTER_FILE_LINES} in `examples/production/lbgen_adapter.h`" in docs


def test_lbgens_population_order_is_the_production_codes():
    """The production code's own pack / unpack and AoStoSoA name populations by index: they
    stay valid because the emitted order is its order (its packunpack.h sketch: columns
    cx = 3 .. -3, each from cy = -c up)."""
    from lbgen.model.velocity_set import velocity_set
    hops = [tuple(int(c) for c in e) for e in velocity_set("d2q37").velocities]
    columns = {3: 3, 2: 5, 1: 7, 0: 7, -1: 7, -2: 5, -3: 3}
    production = [(cx, cy) for cx, k in columns.items() for cy in range(-(k // 2), k // 2 + 1)]
    assert hops == production


@pytest.fixture(scope="module")
def harness(tmp_path_factory):
    from lbgen.codegen.emit import emit
    from lbgen.codegen.spec import KernelSpec
    cc = shutil.which("gcc") or shutil.which("cc")
    if not cc:
        pytest.skip("a C compiler is needed to build the production code's step")
    folder = tmp_path_factory.mktemp("adapter")
    emit(KernelSpec(layout="soa", halo_y=16, walls=True, wall_scheme="reference", collision="regularized"), folder)
    (folder / "step.c").write_text(HARNESS)
    exe = folder / "step"
    proc = subprocess.run([cc, "-std=gnu11", "-O2", "-fopenmp", "-Wall", "-Werror", "-Wno-unused-parameter",
                           "-I", str(folder), "-I", str(ADAPTER.parent), str(folder / "step.c"),
                           str(folder / "lbgen_kernels.c"), "-lm", "-o", str(exe)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return folder, exe


def _initial_fields():
    x, y = np.meshgrid(np.arange(GLX), np.arange(GLY) + 0.5, indexing="ij")
    s = np.tanh((y - 0.5 * GLY + 2.0 * np.cos(2 * np.pi * x / GLX)) / 3.0)
    T = 1.0 - 0.05 * s
    return 1.0 / T, np.zeros_like(T), np.zeros_like(T), T


def test_the_production_step_on_the_adapter_agrees_with_lbgens_runner(harness):
    from lbgen.simulation.runner import Simulation, Walls
    folder, exe = harness
    start, end = folder / "start.bin", folder / "end.bin"
    np.stack(_initial_fields()).astype(np.float64).tofile(start)
    proc = subprocess.run([str(exe), str(GLX), str(GLY), str(STEPS), str(start), str(end)], capture_output=True,
                          text=True, env={"OMP_NUM_THREADS": "1", "OMP_WAIT_POLICY": "passive"}, timeout=300)
    assert proc.returncode == 0, proc.stderr
    got = np.fromfile(end, dtype=np.float64).reshape(4, GLX, GLY)
    gravity = -8.33e-5 / 32                  # the production code's GRAVITY (< 0: towards row 0)
    sim = Simulation(GLX, GLY, collision="regularized", C1=1e-3, C2=1e-3, C3=0.5, gravity=(0.0, gravity),
                     walls=Walls(T_bottom=1.05, T_top=0.95, adiabatic_bottom=True, adiabatic_top=True,
                                 scheme="reference"), layout="soa", threads=1, check_every=0)
    sim.set_fields(*_initial_fields())
    sim.step(STEPS)
    fields = sim.fields()
    want = np.stack([fields[k] for k in ("rho", "ux", "uy", "T")])
    assert np.abs(got - want).max() <= 1e-12, np.abs(got - want).max()
    assert np.abs(got[2]).max() > 1e-9        # the fluid moved: a comparison of something
    # each of the production code's choices matters on its own: lbgen's default wall scheme, or
    # fixed-temperature walls (the record's zero default), gives another flow
    for scheme, adiabatic in (("lbgen", True), ("reference", False)):
        other = Simulation(GLX, GLY, collision="regularized", C1=1e-3, C2=1e-3, C3=0.5, gravity=(0.0, gravity),
                           walls=Walls(T_bottom=1.05, T_top=0.95, adiabatic_bottom=adiabatic, adiabatic_top=adiabatic,
                                       scheme=scheme), layout="soa", threads=1, check_every=0)
        other.set_fields(*_initial_fields())
        other.step(STEPS)
        assert np.abs(other.fields()["uy"] - got[2]).max() > 1e-9, (scheme, adiabatic)
