"""Debug builds of the emitted C (-DLBGEN_DEBUG) stop a sweep whose source and destination are
the same buffer, or whose region leaves the lattice, before it runs (abort: SIGABRT); release
builds carry no check (the call runs).  collide may work in place in both."""
from __future__ import annotations

import shutil
import signal
import subprocess

import pytest

from lbgen.codegen.emit import emit
from lbgen.codegen.spec import KernelSpec

DRIVER = r"""
#include <stdlib.h>
#include <string.h>
#include "lbgen_kernels.h"

#if LBGEN_API_VERSION != 4          /* the calling convention this driver is written for */
#error "lbgen API version"
#endif

int main(int argc, char **argv)
{
    const int lx = 8, ly = 32;
    lbgen_real *f = lbgen_alloc(lx, ly), *g = lbgen_alloc(lx, ly);
    double *cells = calloc((size_t)LBGEN_Q * 64 * 64, sizeof *cells);
    if (!f || !g || !cells) return 4;
    lbgen_region all = lbgen_whole(lx, ly);
    lbgen_params par = {0};
    par.tau = 0.8; par.wall_bottom = 1; par.wall_top = 1; par.T_bottom = 1; par.T_top = 1;
    const char *c = argv[1];
    if (!strcmp(c, "ok")) { lbgen_fused_walls(f, g, lx, ly, &all, &par); lbgen_collide(g, g, lx, ly, &all, &par); }
    if (!strcmp(c, "same")) lbgen_fused_walls(f, f, lx, ly, &all, &par);
    if (!strcmp(c, "same-propagate")) lbgen_propagate(f, f, lx, ly, &all, &par);
    if (!strcmp(c, "region")) { all.x1 = lx + 1; lbgen_fused(f, g, lx, ly, &all, &par); }
    if (!strcmp(c, "cells")) { lbgen_region r = {-LBGEN_HALO - 1, 0, 0, ly}; lbgen_get_region(f, cells, lx, ly, &r); }
    return 0;
}
"""


@pytest.fixture(scope="module")
def builds(tmp_path_factory):
    if shutil.which("gcc") is None:
        pytest.skip("gcc is needed to build the emitted C")
    folder = tmp_path_factory.mktemp("debug")
    emit(KernelSpec(layout="caosoa", vl=4, walls=True), folder)
    (folder / "driver.c").write_text(DRIVER)
    out = {}
    for name, flags in (("debug", ["-DLBGEN_DEBUG"]), ("release", [])):
        exe = folder / name
        subprocess.run(["gcc", "-std=gnu11", "-O0", "-fopenmp", *flags, "-o", str(exe), "driver.c", "lbgen_kernels.c",
                        "-lm"], cwd=folder, check=True, capture_output=True)
        out[name] = exe
    return out


@pytest.mark.parametrize("case", ["same", "same-propagate", "region", "cells"])
def test_a_debug_build_aborts_before_a_bad_sweep(builds, case):
    assert subprocess.run([str(builds["debug"]), case], capture_output=True).returncode == -signal.SIGABRT
    assert subprocess.run([str(builds["debug"]), "ok"], capture_output=True).returncode == 0


def test_a_release_build_has_no_check(builds):
    assert subprocess.run([str(builds["release"]), "same"], capture_output=True).returncode == 0
