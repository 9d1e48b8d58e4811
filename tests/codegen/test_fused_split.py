"""The emitted 2D `fused` honours the per-side wall switches (par.wall_bottom, par.wall_top), as
collide and fused_walls do: a lattice split in Y into two parts (the lower holding the bottom
wall, the upper the top wall, the inner sides switched off and their halo rows traded), stepped
with fused, ends with the same populations as the unsplit lattice stepped with fused (both walls
held).  Before, fused relaxed rows 0-2 and LY-3..LY-1 of every part with tau = 1, so the rows next
to the cut differed (tens of percent)."""
from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest

from lbgen.codegen.emit import emit
from lbgen.codegen.spec import KernelSpec

DRIVER = r"""
#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include "lbgen_kernels.h"

enum { LX = 8, LY = 64, LH = 32, STEPS = 12 };

/* the halo rows of part `to` on side `side` (0: below row 0, 1: above row LH-1) from the
   rows of part `from` they continue (corners included: both parts' X halos are fresh) */
static void trade(lbgen_real *to, const lbgen_real *from, int side, double *buf)
{
    const int H = LBGEN_HALO;
    lbgen_region src = {-H, LX + H, side ? 0 : LH - H, side ? H : LH};
    lbgen_region dst = {-H, LX + H, side ? LH : -H, side ? LH + H : 0};
    lbgen_get_region(from, buf, LX, LH, &src);
    lbgen_put_region(to, buf, LX, LH, &dst);
}

int main(int argc, char **argv)
{
    const int split = argc > 1 && argv[1][0] == 's', periodic = argc > 1 && argv[1][0] == 'p';
    const size_t n = (size_t)LX * LY, nq = (size_t)LBGEN_Q * n;
    double *rho = malloc(n * sizeof *rho), *ux = malloc(n * sizeof *ux), *uy = malloc(n * sizeof *uy),
           *T = malloc(n * sizeof *T), *plain = malloc(nq * sizeof *plain), *part = malloc(nq / 2 * sizeof *part),
           *buf = malloc((size_t)LBGEN_Q * (LX + 2*LBGEN_HALO) * LBGEN_HALO * sizeof *buf);
    for (int x = 0; x < LX; ++x)
        for (int y = 0; y < LY; ++y) {
            const size_t i = (size_t)x*LY + y;
            rho[i] = 1 + 0.01 * cos(2 * M_PI * y / LY + x);
            ux[i] = 0.02 * sin(2 * M_PI * y / LY);
            uy[i] = 0.03 * sin(2 * M_PI * x / LX) * cos(2 * M_PI * y / LY);
            T[i] = 1 + 0.01 * sin(2 * M_PI * (x + 2 * y) / LY);
        }
    lbgen_params par = {0};
    par.tau = 0.7; par.ay = -1e-4; par.T_bottom = 1; par.T_top = 1;
    lbgen_real *f = lbgen_alloc(LX, LY), *g = lbgen_alloc(LX, LY);
    lbgen_init_equilibrium(f, LX, LY, rho, ux, uy, T, par.ax, par.ay);
    if (!split) {
        lbgen_region all = lbgen_whole(LX, LY);
        par.wall_bottom = !periodic; par.wall_top = !periodic;   /* "periodic": no wall rows at all */
        for (int s = 0; s < STEPS; ++s) {
            lbgen_halo(f, LX, LY);
            lbgen_fused(f, g, LX, LY, &all, &par);
            lbgen_real *t = f; f = g; g = t;
        }
        lbgen_unpack(f, plain, LX, LY);
    } else {
        lbgen_unpack(f, plain, LX, LY);
        lbgen_real *a[2], *b[2];
        for (int h = 0; h < 2; ++h) {
            a[h] = lbgen_alloc(LX, LH); b[h] = lbgen_alloc(LX, LH);
            for (size_t px = 0; px < (size_t)LBGEN_Q * LX; ++px)
                for (int y = 0; y < LH; ++y) part[px*LH + y] = plain[px*LY + h*LH + y];
            lbgen_pack(a[h], part, LX, LH);
        }
        lbgen_region all = lbgen_whole(LX, LH);
        lbgen_params lo = par, hi = par;
        lo.wall_bottom = 1; lo.wall_top = 0;      /* the lower part holds the bottom wall only */
        hi.wall_bottom = 0; hi.wall_top = 1;
        for (int s = 0; s < STEPS; ++s) {
            lbgen_halo(a[0], LX, LH); lbgen_halo(a[1], LX, LH);
            trade(a[0], a[1], 1, buf); trade(a[1], a[0], 0, buf);   /* the cut */
            trade(a[0], a[1], 0, buf); trade(a[1], a[0], 1, buf);   /* Y periodic, as halo does unsplit */
            lbgen_fused(a[0], b[0], LX, LH, &all, &lo);
            lbgen_fused(a[1], b[1], LX, LH, &all, &hi);
            for (int h = 0; h < 2; ++h) { lbgen_real *t = a[h]; a[h] = b[h]; b[h] = t; }
        }
        for (int h = 0; h < 2; ++h) {
            lbgen_unpack(a[h], part, LX, LH);
            for (size_t px = 0; px < (size_t)LBGEN_Q * LX; ++px)
                for (int y = 0; y < LH; ++y) plain[px*LY + h*LH + y] = part[px*LH + y];
        }
    }
    fwrite(plain, sizeof *plain, nq, stdout);
    return 0;
}
"""


@pytest.fixture(scope="module")
def driver(tmp_path_factory):
    if shutil.which("gcc") is None:
        pytest.skip("gcc is needed to build the emitted C")
    folder = tmp_path_factory.mktemp("split")
    emit(KernelSpec(layout="caosoa", vl=4, walls=True), folder)
    (folder / "driver.c").write_text(DRIVER)
    exe = folder / "driver"
    subprocess.run(["gcc", "-std=gnu11", "-O1", "-fopenmp", "-o", str(exe), "driver.c", "lbgen_kernels.c", "-lm"],
                   cwd=folder, check=True, capture_output=True)
    return exe


def _populations(exe, mode):
    out = subprocess.run([str(exe), mode], capture_output=True, check=True, timeout=120,
                         env={"OMP_NUM_THREADS": "1"}).stdout
    return np.frombuffer(out, dtype=np.float64)


def test_fused_on_a_lattice_split_in_y_equals_the_unsplit_lattice(driver):
    whole, split = _populations(driver, "whole"), _populations(driver, "split")
    assert whole.size == split.size > 0 and np.all(np.isfinite(whole))
    assert np.abs(split - whole).max() <= 1e-13 * np.abs(whole).max()
    # the switches matter: with neither wall held the rows next to y = 0 and LY-1 end elsewhere
    periodic = _populations(driver, "periodic")
    assert np.abs(periodic - whole).max() > 1e-4 * np.abs(whole).max()
