"""Debug builds of the emitted C (-DLBGEN_DEBUG), 2D and 3D alike, refuse a bad argument before
any work: NULL buffers, region or parameter record, source == destination, a region or sizes
outside the lattice, a relaxation time or C outside its range, a non-finite force, a wall
switch that is not 0/1, a non-positive wall temperature, a wall-row relaxation time tau_wall
other than 0 (the default 1) or > 1/2 where a wall is held, a lid bit on a periodic axis, a lid
velocity normal to its face, a pressure outlet on a thermal set (hops of 3: outflows and slips run).  Each refusal prints one line naming the kernel and the argument
and aborts; the driver's SIGABRT handler then compares both lattice buffers with their
snapshot and exits 42 when they are unchanged (43 when the kernel wrote before refusing).
Calls with good arguments, and calls a kernel allows (collide in place, bc with no collision
parameters, fused with a zero wall temperature), return normally (exit 0)."""
from __future__ import annotations

import shutil
import subprocess

import pytest

from lbgen.codegen.emit import emit
from lbgen.codegen.spec import KernelSpec

UNCHANGED = 42          # the driver's exit status: aborted, both buffers as before the call

HARNESS = r"""
#define _POSIX_C_SOURCE 200809L
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <unistd.h>
#include "lbgen_kernels.h"

static lbgen_real *F, *G;
static unsigned char *snap_f, *snap_g;
static size_t bytes_;

static void on_abort(int sig)
{
    (void)sig;
    const int same = memcmp(F, snap_f, bytes_) == 0 && memcmp(G, snap_g, bytes_) == 0;
    _exit(same ? 42 : 43);
}

static void arm(size_t n)
{
    bytes_ = n * sizeof(lbgen_real);
    for (size_t i = 0; i < n; ++i) { F[i] = (lbgen_real)(0.01 * (double)(i % 97)); G[i] = (lbgen_real)-1.0; }
    snap_f = malloc(bytes_); snap_g = malloc(bytes_);
    if (!snap_f || !snap_g) exit(4);
    memcpy(snap_f, F, bytes_); memcpy(snap_g, G, bytes_);
    signal(SIGABRT, on_abort);
}
"""

DRIVER2D = HARNESS + r"""
int main(int argc, char **argv)
{
    const int lx = 8, ly = 32;
    const char *c = argv[1];
    F = lbgen_alloc(lx, ly); G = lbgen_alloc(lx, ly);
    double *cells = calloc((size_t)LBGEN_Q * lx * ly, sizeof *cells);
    if (!F || !G || !cells) return 4;
    arm(lbgen_buffer_size(lx, ly));
    lbgen_region all = lbgen_whole(lx, ly);
    lbgen_params par;
    memset(&par, 0, sizeof par);
#ifdef BGK
    par.tau = 0.8;
#else
    par.C1 = 1e-3; par.C2 = 1e-3; par.C3 = 0.5;
#endif
    par.wall_bottom = 1; par.wall_top = 1; par.T_bottom = 1; par.T_top = 1;
    if (!strcmp(c, "ok")) { lbgen_fused(F, G, lx, ly, &all, &par); lbgen_fused_walls(F, G, lx, ly, &all, &par); }
    if (!strcmp(c, "collide-in-place")) lbgen_collide(F, F, lx, ly, &all, &par);
    if (!strcmp(c, "null-prv")) lbgen_fused(NULL, G, lx, ly, &all, &par);
    if (!strcmp(c, "null-nxt")) lbgen_fused_walls(F, NULL, lx, ly, &all, &par);
    if (!strcmp(c, "null-region")) lbgen_fused(F, G, lx, ly, NULL, &par);
    if (!strcmp(c, "null-par")) lbgen_collide(F, G, lx, ly, &all, NULL);
    if (!strcmp(c, "null-propagate")) lbgen_propagate(F, G, lx, ly, NULL, &par);
    if (!strcmp(c, "null-halo")) lbgen_halo(NULL, lx, ly);
    if (!strcmp(c, "null-fields")) lbgen_fields(F, lx, ly, cells, NULL, cells, cells, 0, 0);
    if (!strcmp(c, "null-get-region")) lbgen_get_region(F, NULL, lx, ly, &all);
    if (!strcmp(c, "same-fused")) lbgen_fused(F, F, lx, ly, &all, &par);
    if (!strcmp(c, "same-bc")) lbgen_bc(F, F, lx, ly, &all, &par);
    if (!strcmp(c, "same-tb")) lbgen_fused_tb(F, F, lx, ly, 2, &par);
    if (!strcmp(c, "region")) { all.y1 = ly + 1; lbgen_collide(F, G, lx, ly, &all, &par); }
    if (!strcmp(c, "sizes")) lbgen_fused(F, G, lx, 0, &all, &par);
#ifdef BGK
    if (!strcmp(c, "tau-zero")) { par.tau = 0; lbgen_fused(F, G, lx, ly, &all, &par); }
    if (!strcmp(c, "tau-half")) { par.tau = 0.5; lbgen_collide(F, G, lx, ly, &all, &par); }
    if (!strcmp(c, "tau-nan")) { par.tau = NAN; lbgen_fused_walls(F, G, lx, ly, &all, &par); }
    if (!strcmp(c, "tau-tb")) { par.tau = 0.25; lbgen_fused_tb(F, G, lx, ly, 2, &par); }
    if (!strcmp(c, "bc-no-tau")) { par.tau = 0; lbgen_bc(F, G, lx, ly, &all, &par); }
#else
    if (!strcmp(c, "C1-zero")) { par.C1 = 0; lbgen_fused(F, G, lx, ly, &all, &par); }
    if (!strcmp(c, "C3-negative")) { par.C3 = -0.1; lbgen_collide(F, G, lx, ly, &all, &par); }
#endif
    if (!strcmp(c, "ay-inf")) { par.ay = INFINITY; lbgen_fused(F, G, lx, ly, &all, &par); }
    if (!strcmp(c, "wall-two")) { par.wall_top = 2; lbgen_fused(F, G, lx, ly, &all, &par); }
    if (!strcmp(c, "T-zero")) { par.T_bottom = 0; lbgen_fused_walls(F, G, lx, ly, &all, &par); }
    if (!strcmp(c, "T-zero-fused")) { par.T_bottom = 0; lbgen_fused(F, G, lx, ly, &all, &par); }
    if (!strcmp(c, "T-zero-adiabatic")) { par.T_bottom = 0; par.adiabatic_bottom = 1; lbgen_fused_walls(F, G, lx, ly, &all, &par); }
    if (!strcmp(c, "tau-wall-half")) { par.tau_wall = 0.5; lbgen_fused_walls(F, G, lx, ly, &all, &par); }
    if (!strcmp(c, "tau-wall-nan")) { par.tau_wall = NAN; lbgen_collide(F, G, lx, ly, &all, &par); }
    if (!strcmp(c, "tau-wall-tb")) { par.tau_wall = -1; lbgen_fused_tb(F, G, lx, ly, 2, &par); }
    if (!strcmp(c, "tau-wall-ok")) { par.tau_wall = 0.7; lbgen_fused(F, G, lx, ly, &all, &par); lbgen_fused_walls(F, G, lx, ly, &all, &par); }
    if (!strcmp(c, "tau-wall-no-wall")) { par.tau_wall = 0.3; par.wall_bottom = par.wall_top = 0; lbgen_fused(F, G, lx, ly, &all, &par); }
    if (!strcmp(c, "bc-no-tau-wall")) { par.tau_wall = 0.3; lbgen_bc(F, G, lx, ly, &all, &par); }
    return 0;
}
"""

DRIVER3D = HARNESS + r"""
int main(int argc, char **argv)
{
    const int lx = 6, ly = 6, lz = 8;
    const char *c = argv[1];
    F = lbgen_alloc(lx, ly, lz); G = lbgen_alloc(lx, ly, lz);
    const size_t n = (size_t)lx * ly * lz;
    double *a = calloc(n, sizeof *a);
    if (!F || !G || !a) return 4;
    arm(lbgen_buffer_size(lx, ly, lz));
    lbgen_params par, zero;
    memset(&par, 0, sizeof par);
    par.tau = 0.8;
    zero = par;                                                  /* a periodic box */
    par.walls = 3 << 2; par.lids = 1 << 3; par.lid[3][0] = 0.01;  /* y walls, the y-high face moving along x */
    const lbgen_region all = lbgen_whole(lx, ly, lz);
    lbgen_region part = all;
    if (!strcmp(c, "ok")) { lbgen_fused(F, G, lx, ly, lz, &all, &par); lbgen_fused(F, G, lx, ly, lz, &all, &zero); }
    if (!strcmp(c, "one-face")) { par.walls = 1 << 2; par.lids = 0; lbgen_fused(F, G, lx, ly, lz, &all, &par); }
    if (!strcmp(c, "collide-in-place")) lbgen_collide(F, F, lx, ly, lz, &all, &par);
    if (!strcmp(c, "null-prv")) lbgen_fused(NULL, G, lx, ly, lz, &all, &par);
    if (!strcmp(c, "null-nxt")) lbgen_fused(F, NULL, lx, ly, lz, &all, &par);
    if (!strcmp(c, "null-collide")) lbgen_collide(NULL, G, lx, ly, lz, &all, &par);
    if (!strcmp(c, "null-region")) lbgen_fused(F, G, lx, ly, lz, NULL, &par);
    if (!strcmp(c, "null-par")) lbgen_propagate(F, G, lx, ly, lz, &all, NULL);
    if (!strcmp(c, "null-halo")) lbgen_halo(NULL, lx, ly, lz);
    if (!strcmp(c, "null-fields")) lbgen_fields(F, lx, ly, lz, a, NULL, a, a, a, 0, 0, 0);
    if (!strcmp(c, "null-get-region")) lbgen_get_region(F, NULL, lx, ly, lz, &all);
    if (!strcmp(c, "same-fused")) lbgen_fused(F, F, lx, ly, lz, &all, &par);
    if (!strcmp(c, "same-propagate")) lbgen_propagate(F, F, lx, ly, lz, &all, &par);
    if (!strcmp(c, "same-tb")) lbgen_fused_tb(F, F, lx, ly, lz, 2, &par);
    if (!strcmp(c, "sizes")) lbgen_fused(F, G, lx, ly, 0, &all, &par);
    if (!strcmp(c, "region")) { part.x1 = lx + 1; lbgen_collide(F, G, lx, ly, lz, &part, &par); }
    if (!strcmp(c, "region-z")) { part.z0 = 1; lbgen_fused(F, G, lx, ly, lz, &part, &par); }
    if (!strcmp(c, "cells")) { part.z1 = lz + 2; lbgen_put_region(F, a, lx, ly, lz, &part); }
    if (!strcmp(c, "tau-zero")) { par.tau = 0.0; lbgen_fused(F, G, lx, ly, lz, &all, &par); }
    if (!strcmp(c, "tau-half-collide")) { zero.tau = 0.5; lbgen_collide(F, G, lx, ly, lz, &all, &zero); }
    if (!strcmp(c, "tau-tb")) { par.tau = -1.0; lbgen_fused_tb(F, G, lx, ly, lz, 2, &par); }
    if (!strcmp(c, "az-nan")) { par.az = NAN; lbgen_fused(F, G, lx, ly, lz, &all, &par); }
    if (!strcmp(c, "lid-periodic")) { par.lids |= 1 << 4; par.lid[4][0] = 0.01; lbgen_fused(F, G, lx, ly, lz, &all, &par); }
    if (!strcmp(c, "lid-normal")) { par.lid[3][1] = 0.01; lbgen_fused(F, G, lx, ly, lz, &all, &par); }
    if (!strcmp(c, "lid-normal-propagate")) { par.lid[3][1] = -0.01; lbgen_propagate(F, G, lx, ly, lz, &all, &par); }
    if (!strcmp(c, "lid-inf")) { par.lid[3][2] = INFINITY; lbgen_fused(F, G, lx, ly, lz, &all, &par); }
    if (!strcmp(c, "walls-bits")) { par.walls = 64; lbgen_fused(F, G, lx, ly, lz, &all, &par); }
    if (!strcmp(c, "open-two-kinds")) { par.walls |= 1; par.outflows = 1; lbgen_fused(F, G, lx, ly, lz, &all, &par); }
    if (!strcmp(c, "inlet-no-inflow")) { par.inlets = 1; par.outflows = 2; lbgen_propagate(F, G, lx, ly, lz, &all, &par); }
    return 0;
}
"""

#: a thermal set without the thermal walls (D2Q37, hops of 3): with --open-faces open faces but no pressure
#: outlets; without it no open faces at all
DRIVER2D_OPEN = HARNESS + r"""
int main(int argc, char **argv)
{
    const int lx = 8, ly = 12;
    const char *c = argv[1];
    F = lbgen_alloc(lx, ly); G = lbgen_alloc(lx, ly);
    if (!F || !G) return 4;
    arm(lbgen_buffer_size(lx, ly));
    lbgen_region all = lbgen_whole(lx, ly);
    lbgen_params par;
    memset(&par, 0, sizeof par);
    par.tau = 0.8;
    if (!strcmp(c, "outflows")) { par.outflows = 3; par.slips = 12; lbgen_fused(F, G, lx, ly, &all, &par); }
    if (!strcmp(c, "outlet-thermal")) { par.outlets = 2; par.outflows = 1; lbgen_fused(F, G, lx, ly, &all, &par); }
    return 0;
}
"""


def _build(folder, spec, driver, defines=()):
    emit(spec, folder)
    (folder / "driver.c").write_text(driver)
    exe = folder / "debug"
    subprocess.run(["gcc", "-std=c11", "-O0", "-fopenmp", "-DLBGEN_DEBUG", *defines, "-o", str(exe), "driver.c",
                    "lbgen_kernels.c", "-lm"], cwd=folder, check=True, capture_output=True)
    return exe


@pytest.fixture(scope="module")
def builds(tmp_path_factory):
    if shutil.which("gcc") is None:
        pytest.skip("gcc is needed to build the emitted C")
    return {
        "2d": _build(tmp_path_factory.mktemp("dbg2"), KernelSpec(layout="caosoa", vl=4, walls=True), DRIVER2D,
                     ["-DBGK"]),
        "2d-reg": _build(tmp_path_factory.mktemp("dbg2r"),
                         KernelSpec(layout="soa", collision="regularized", walls=True), DRIVER2D),
        "3d": _build(tmp_path_factory.mktemp("dbg3"), KernelSpec(velocity_set="d3q19", layout="caosoa", vl=4),
                     DRIVER3D),
        "2d-open": _build(tmp_path_factory.mktemp("dbg2o"), KernelSpec(layout="soa", open_faces=True), DRIVER2D_OPEN),
        # the same set without --open-faces: its kernels carry no open faces' rules and refuse the bits
        "2d-closed": _build(tmp_path_factory.mktemp("dbg2c"), KernelSpec(layout="soa"), DRIVER2D_OPEN),
    }


def _run(exe, case):
    return subprocess.run([str(exe), case], capture_output=True, text=True, timeout=60)


# (build, case, the kernel and the argument its one line names)
REFUSED = [
    ("2d", "null-prv", "lbgen_fused:", "prv"),
    ("2d", "null-nxt", "lbgen_fused_walls:", "nxt"),
    ("2d", "null-region", "lbgen_fused:", "region"),
    ("2d", "null-par", "lbgen_collide:", "par"),
    ("2d", "null-propagate", "lbgen_propagate:", "region"),
    ("2d", "null-halo", "lbgen_halo:", "f"),
    ("2d", "null-fields", "lbgen_fields:", "ux_o"),
    ("2d", "null-get-region", "lbgen_get_region:", "buf"),
    ("2d", "same-fused", "lbgen_fused:", "prv and nxt"),
    ("2d", "same-bc", "lbgen_bc:", "prv and nxt"),
    ("2d", "same-tb", "lbgen_fused_tb:", "prv and nxt"),
    ("2d", "region", "lbgen_collide:", "region"),
    ("2d", "sizes", "lbgen_fused:", "sizes"),
    ("2d", "tau-zero", "lbgen_fused:", "par->tau"),
    ("2d", "tau-half", "lbgen_collide:", "par->tau"),
    ("2d", "tau-nan", "lbgen_fused_walls:", "par->tau"),
    ("2d", "tau-tb", "lbgen_fused_tb:", "par->tau"),
    ("2d", "ay-inf", "lbgen_fused:", "par->ay"),
    ("2d", "wall-two", "lbgen_fused:", "par->wall_top"),
    ("2d", "T-zero", "lbgen_fused_walls:", "par->T_bottom"),
    ("2d-reg", "C1-zero", "lbgen_fused:", "par->C1"),
    ("2d-reg", "C3-negative", "lbgen_collide:", "par->C3"),
    ("2d", "tau-wall-half", "lbgen_fused_walls:", "par->tau_wall"),
    ("2d-reg", "tau-wall-nan", "lbgen_collide:", "par->tau_wall"),
    ("2d", "tau-wall-tb", "lbgen_fused_tb:", "par->tau_wall"),
    ("3d", "null-prv", "lbgen_fused:", "prv"),
    ("3d", "null-nxt", "lbgen_fused:", "nxt"),
    ("3d", "null-collide", "lbgen_collide:", "in"),
    ("3d", "null-region", "lbgen_fused:", "region"),
    ("3d", "null-par", "lbgen_propagate:", "par"),
    ("3d", "null-halo", "lbgen_halo:", "f"),
    ("3d", "null-fields", "lbgen_fields:", "ux_o"),
    ("3d", "null-get-region", "lbgen_get_region:", "buf"),
    ("3d", "same-fused", "lbgen_fused:", "prv and nxt"),
    ("3d", "same-propagate", "lbgen_propagate:", "prv and nxt"),
    ("3d", "same-tb", "lbgen_fused_tb:", "prv and nxt"),
    ("3d", "sizes", "lbgen_fused:", "sizes"),
    ("3d", "region", "lbgen_collide:", "region x"),
    ("3d", "region-z", "lbgen_fused:", "region z"),
    ("3d", "cells", "lbgen_put_region:", "cells"),
    ("3d", "tau-zero", "lbgen_fused:", "par->tau"),
    ("3d", "tau-half-collide", "lbgen_collide:", "par->tau"),
    ("3d", "tau-tb", "lbgen_fused_tb:", "par->tau"),
    ("3d", "az-nan", "lbgen_fused:", "par->az"),
    ("3d", "lid-periodic", "lbgen_fused:", "par->lids bit 4"),
    ("3d", "lid-normal", "lbgen_fused:", "par->lid[3][1]"),
    ("3d", "lid-normal-propagate", "lbgen_propagate:", "par->lid[3][1]"),
    ("3d", "lid-inf", "lbgen_fused:", "par->lid[3][2]"),
    ("3d", "walls-bits", "lbgen_fused:", "par->walls"),
    ("3d", "open-two-kinds", "lbgen_fused:", "par->walls and par->outflows"),
    ("3d", "inlet-no-inflow", "lbgen_propagate:", "par->inflow"),
    ("2d-open", "outlet-thermal", "lbgen_fused:", "par->outlets"),
    ("2d-closed", "outflows", "lbgen_fused:", "par->outflows"),
]


@pytest.mark.parametrize("build, case, kernel, argument", REFUSED, ids=[f"{b}-{c}" for b, c, _, _ in REFUSED])
def test_a_debug_build_refuses_a_bad_argument_before_writing(builds, build, case, kernel, argument):
    out = _run(builds[build], case)
    assert out.returncode == UNCHANGED, (out.returncode, out.stderr)     # aborted, both buffers untouched
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(kernel) and argument in lines[0], out.stderr
    assert "need" in lines[0]                                            # and says what is allowed


@pytest.mark.parametrize("build, case", [
    ("2d", "ok"), ("2d", "collide-in-place"), ("2d", "bc-no-tau"), ("2d", "T-zero-fused"),
    ("2d", "T-zero-adiabatic"), ("2d-reg", "ok"), ("3d", "ok"), ("3d", "one-face"), ("3d", "collide-in-place"),
    ("2d", "tau-wall-ok"), ("2d-reg", "tau-wall-no-wall"), ("2d", "bc-no-tau-wall"), ("2d-open", "outflows")])
def test_a_debug_build_runs_the_calls_a_kernel_allows(builds, build, case):
    out = _run(builds[build], case)
    assert out.returncode == 0 and out.stderr == "", (out.returncode, out.stderr)
