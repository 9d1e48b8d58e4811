"""2D bounce-back boundaries (walls on any face, lids, solid cells) on every layout, VL and
operator against the NumPy oracle lbgen.reference.bounce (written from the textbook rule, not
from the templates); the run path (the 2D lid-driven cavity from the command line) and the
refusals."""
from __future__ import annotations

import re

import numpy as np
import pytest

import lbgen
from lbgen.model.velocity_set import velocity_set
from lbgen.reference import bounce, bulk
from lbgen.simulation.parameters import SimulationError
from tests.helpers import LAYOUT_CONFIGS, cli, layout_params, refused

LX, LY = 12, 32
LID = {"y-high": (0.04, 0.0), "x-low": (0.0, -0.02)}


def _mask():
    m = np.zeros((LX, LY), bool)
    m[5:7, 10:14] = True
    m[0, 20] = True                # a solid cell on the x-low wall's column
    return m


def _start(vs, seed=1):
    rng = np.random.default_rng(seed)
    rho = 1 + 0.01 * rng.random((LX, LY))
    ux, uy = 0.01 * rng.random((LX, LY)), 0.01 * rng.random((LX, LY))
    T = np.ones((LX, LY)) if vs.isothermal else 1 + 0.01 * rng.random((LX, LY))
    return bulk.physical_equilibrium(rho, ux, uy, T, vs=vs)


def _compare(velocity_set_name, collision, layout, vl, walls, lid, mask, steps=6, fused=True, precision="double"):
    vs = velocity_set(velocity_set_name)
    params = {"tau": 0.8} if collision == "bgk" else {"C1": 0.2, "C2": 0.1, "C3": 0.5}
    g = (1e-5, -2e-5)
    sim = lbgen.Simulation(LX, LY, velocity_set=velocity_set_name, collision=collision, layout=layout, vl=vl,
                           walls=walls, lid=lid, mask=mask, gravity=g, fused=fused, strict=True,
                           precision=precision, **params)
    f0 = _start(vs)
    sim.set_populations(f0)
    ref = np.where(mask[None], 0.0, f0) if mask is not None else f0
    force = tuple(c / vs.r for c in g)
    for _ in range(steps):
        ref = bounce.step_bounce(ref, collision, walls=tuple(walls), lid=lid, solid=mask, vs=vs, force=force,
                                 **params)
    sim.step(steps)
    return sim, np.abs(sim.populations() - ref).max()


@pytest.mark.parametrize("layout, vl", layout_params(LAYOUT_CONFIGS))
def test_walls_lids_and_mask_match_the_oracle_on_every_layout(layout, vl):
    """D2Q9 BGK, walls on all four faces, two moving (the corner links take the x lid), a mask."""
    _, err = _compare("d2q9", "bgk", layout, vl, "xy", LID, _mask())
    assert err < 1e-12


@pytest.mark.parametrize("vs, collision, walls, lid, mask", [
    ("d2q37", "regularized", "xy", {"y-low": (0.03, 0.0)}, True),      # hops of 3 across the walls
    ("d2q37", "bgk", "x", None, False),                               # a channel along y
    pytest.param("d2v17", "bgk", "y", {"y-high": (0.05, 0.0)}, False, marks=pytest.mark.slow),
    pytest.param("d2q9", "regularized", "", None, True, marks=pytest.mark.slow),   # a mask alone
])
def test_other_sets_and_operators_match_the_oracle(vs, collision, walls, lid, mask):
    _, err = _compare(vs, collision, "caosoa", 8, walls, lid, _mask() if mask else None)
    assert err < 1e-12


def test_propagate_bounce_collide_is_fused_bit_for_bit():
    a, _ = _compare("d2q9", "bgk", "caosoa", 8, "xy", LID, _mask(), fused=True)
    b, _ = _compare("d2q9", "bgk", "caosoa", 8, "xy", LID, _mask(), fused=False)
    assert np.array_equal(a.state(), b.state())
    # unfused: propagate (the boundaries applied by the kernel itself), collide; fused: neither
    assert b.program.calls["propagate"] == 6 and a.program.calls["propagate"] == 0
    assert b.program.calls["fused"] == 0 and a.program.calls["fused"] == 6


def test_solid_cells_hold_nothing_and_mass_is_conserved():
    m = _mask()
    sim = lbgen.Simulation(LX, LY, velocity_set="d2q9", tau=0.7, walls="xy", lid={"y-high": (0.05, 0)}, mask=m)
    sim.set_fields(1.0, 0.0, 0.0, 1.0)
    assert not sim.state()[:, m].any()
    mass = sim.diagnostics()["mass"]
    sim.run(200)
    d = sim.diagnostics()
    assert d["nonfinite"] == 0 and d["min_rho"] > 0
    assert abs(d["mass"] - mass) < 1e-10 * mass and mass == pytest.approx((~m).sum())
    f = sim.fields()
    assert not f["rho"][m].any() and not f["ux"][m].any()
    assert f["ux"][LX // 2, -1] > 0.01            # the lid drags the fluid along


@pytest.mark.parametrize("kwargs, words", [
    (dict(walls="z"), ["walls='z'", "must be 'x' or 'y' in 2D"]),
    (dict(walls="x", lid={"y-high": (0.1, 0)}), ["lid on the y-high face", "needs walls"]),
    (dict(walls="y", lid={"y-high": (0.1, 0, 0)}), ["two velocity components", "got 3"]),
    (dict(walls="y", lid={"y-high": (0, 0.1)}), ["normal to the face", "uy = 0.1"]),
    (dict(walls="y", lid={"y-high": (0.9, 0)}), ["at most at Mach 0.5"]),
    (dict(mask=np.zeros((LX, LY + 1), bool)), ["mask: shape", "(LX, LY)"]),
    (dict(walls="y", time_block=2), ["time_block=2", "time_block=1"]),
    (dict(walls="y", device_backend="opencl", host_columns=4), ["host + device"]),
])
def test_bad_boundaries_are_refused_in_words(kwargs, words):
    with pytest.raises(SimulationError) as e:
        lbgen.Simulation(LX, LY, velocity_set="d2q9", tau=0.8, **kwargs)
    for w in words:
        assert w in str(e.value), (w, str(e.value))


def test_cavity_runs_from_the_command_line_and_writes_its_outputs(tmp_path):
    out = tmp_path / "cavity"
    r = cli("run", "lid-driven-cavity", "--velocity-set", "d2q9", "--lx", 24, "--ly", 24, "--steps", 300,
            "--tau", 0.7, "--out", out)
    assert r.exit_code == 0, r.output
    assert "walls xy, lid y-high (0.1, 0)" in r.output
    assert "L = 24 sites" in r.output and "Re = 20.78 (= U L/nu)" in r.output      # (0.1/sqrt 3) 24 / (0.2/3)
    from lbgen.output import read_field_file
    fields = read_field_file(out / "fields" / "step-000000300.h5")
    ux = fields["ux"]
    assert ux.shape == (24, 24) and ux[12, -1] > 0.03 and ux[12, 4] < 0      # the lid's vortex
    assert (out / "series.csv").exists() and any((out / "pictures").iterdir())


def test_cavity_options_are_refused_beside_the_thermal_walls(tmp_path):
    refused(cli("run", "lid-driven-cavity", "--velocity-set", "d2q9", "--walls", "--steps", 1), "--walls")


@pytest.mark.parametrize("kwargs, message", [
    (dict(walls="xy", time_block=2), "time_block=2: the time-blocked sweep (fused_tb) does not take bounce-back"),
    (dict(walls="y", lid={"y-high": (0.05, 0)}, device_backend="opencl"), "run on one backend: a host + device run"),
    (dict(mask=np.zeros((LX, LY + 1), bool)), "mask: shape"),
    (dict(walls="y", lid={"x-high": (0, 0.05)}), "lid on the x-high face"),
])
def test_mpi_refuses_what_bounce_back_cannot_run_before_any_work(kwargs, message):
    """lbgen.parallel's 2D lattice runs bounce-back walls, lids and masks (tests/parallel/
    test_bounce2d_mpi.py) but not time-blocked nor on host + device ranks, and checks them as one
    process does: each refused on every rank together before any communication."""
    import types
    from lbgen.parallel.simulation import DistributedSimulation
    comm = types.SimpleNamespace(rank=0, size=2)
    with pytest.raises(SimulationError, match=re.escape(message)) as e:
        DistributedSimulation(comm, LX, LY, velocity_set="d2q9", tau=0.8, **kwargs)
    assert getattr(e.value, "collective", False)


@pytest.mark.parametrize("runtime", ["c", "opencl", "cuda-shim"])
def test_the_diagnostics_kernel_skips_the_solid_cells_of_the_mask(runtime):
    """2D diagnostics takes the mask (as 3D): its rows are those of the fields with the solid
    cells skipped (the host reduction the runner used before), and without the mask the empty
    solid cells count as non-finite."""
    from lbgen.codegen.diagnostics import ROW_QUANTITIES, rows_of_fields
    bad = [name for name, _ in ROW_QUANTITIES].index("nonfinite")
    vs, mask = velocity_set("d2q9"), _mask()
    prog = _runtime_program(runtime, "caosoa", 8)
    f = prog.upload(prog.layout.pack(np.where(mask[None], 0.0, _start(vs))))
    bare = prog.diagnostics(f, force=(1e-5, 0.0))
    assert np.array_equal(bare[:, bad], mask.sum(0).astype(float))      # nonfinite: the solid cells
    prog.set_boundaries(walls=15, solid=mask)
    rows = prog.diagnostics(f, force=(1e-5, 0.0))
    fields = {k: np.where(mask, 0.0, v) for k, v in prog.fields(f, force=(1e-5, 0.0)).items()}
    want = rows_of_fields(fields, solid=mask)
    assert not rows[:, bad].any()
    assert np.allclose(rows, want, rtol=1e-13, atol=1e-13)


def _runtime_program(runtime, layout, vl, precision="double"):
    from lbgen.backends import load
    from lbgen.codegen.render import generate
    from lbgen.codegen.spec import KernelSpec
    spec = KernelSpec(backend="cuda" if runtime == "cuda-shim" else runtime, layout=layout, vl=vl,
                      velocity_set="d2q9", collision="bgk", precision=precision).validate()
    if runtime == "cuda-shim":
        from lbgen.backends.cuda import shim as module
    else:
        module = load(runtime)
    ok, why = module.available()
    if not ok:
        pytest.skip(why)
    return module.compile(generate(spec), LX, LY, strict=True)


@pytest.mark.parametrize("runtime", ["c", "opencl", "cuda-shim"])
@pytest.mark.parametrize("layout, vl", layout_params([("soa", None), ("csoa", 4), ("caosoa", 8), ("aos", None)]))
def test_every_runtime_matches_the_oracle_fused_and_not(runtime, layout, vl):
    """The program API of each 2D runtime (set_boundaries; fused, and propagate (the boundaries
    included) + collide) against the oracle; the runtimes agree bit for bit (strict builds)."""
    vs = velocity_set("d2q9")
    lid = np.zeros((4, 2))
    lid[3], lid[0] = LID["y-high"], LID["x-low"]
    mask = _mask()
    f0 = np.where(mask[None], 0.0, _start(vs))
    ref = f0
    for _ in range(6):
        ref = bounce.step_bounce(ref, "bgk", walls=("x", "y"), lid=LID, solid=mask, vs=vs, tau=0.8, force=(1e-5, 0.0))
    for fused in (True, False):
        prog = _runtime_program(runtime, layout, vl)
        prog.set_boundaries(walls=15, lids=9, lid=lid, solid=mask)
        f, g = prog.upload(prog.layout.pack(f0)), prog.allocate()
        for _ in range(6):
            prog.halo(f)
            f, g = prog.step(f, g, {"tau": 0.8, "ax": 1e-5, "ay": 0.0}, fused=fused)
        got = prog.layout.unpack(prog.download(f))
        assert np.abs(got - ref).max() < 1e-12, (fused, np.abs(got - ref).max())
        if runtime == "c" or layout == "soa":
            continue
        c = _runtime_program("c", layout, vl)
        c.set_boundaries(walls=15, lids=9, lid=lid, solid=mask)
        cf, cg = c.upload(c.layout.pack(f0)), c.allocate()
        for _ in range(6):
            c.halo(cf)
            cf, cg = c.step(cf, cg, {"tau": 0.8, "ax": 1e-5, "ay": 0.0}, fused=fused)
        assert np.array_equal(c.layout.unpack(c.download(cf)), got)


DEBUG_DRIVER = r"""
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "lbgen_kernels.h"

int main(int argc, char **argv)
{
    const int lx = 8, ly = 32;
    lbgen_real *f = lbgen_alloc(lx, ly), *g = lbgen_alloc(lx, ly);
    if (!f || !g) return 4;
    lbgen_region all = lbgen_whole(lx, ly);
    lbgen_params par = {0};
    par.tau = 0.8;
    par.walls = 15; par.lids = 8; par.lid[3][0] = 0.05;          /* a closed box, the y-high face moving */
    const char *c = argv[1];
    if (!strcmp(c, "bits")) par.walls = 16;
    if (!strcmp(c, "lid-off-wall")) { par.walls = 3; }
    if (!strcmp(c, "normal")) par.lid[3][1] = 0.01;
    if (!strcmp(c, "nan")) par.lid[3][0] = NAN;
    lbgen_fused(f, g, lx, ly, &all, &par);
    lbgen_propagate(f, g, lx, ly, &all, &par);
    lbgen_collide(g, g, lx, ly, &all, &par);
    return 0;
}
"""


@pytest.mark.parametrize("case, words", [("bits", "par->walls = 16"), ("lid-off-wall", "par->lids bit 3 (the y-high face)"),
                                         ("normal", "is normal to its face"), ("nan", "need a finite velocity")])
def test_debug_builds_check_the_boundary_fields(tmp_path, case, words):
    import shutil
    import signal
    import subprocess
    from lbgen.codegen.emit import emit
    from lbgen.codegen.spec import KernelSpec
    if shutil.which("gcc") is None:
        pytest.skip("gcc is needed to build the emitted C")
    emit(KernelSpec(layout="caosoa", vl=4, velocity_set="d2q9"), tmp_path)
    (tmp_path / "driver.c").write_text(DEBUG_DRIVER)
    subprocess.run(["gcc", "-std=gnu11", "-O0", "-fopenmp", "-DLBGEN_DEBUG", "-o", "debug", "driver.c", "lbgen_kernels.c",
                    "-lm"], cwd=tmp_path, check=True, capture_output=True)
    ok = subprocess.run([str(tmp_path / "debug"), "ok"], capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    bad = subprocess.run([str(tmp_path / "debug"), case], capture_output=True, text=True)
    assert bad.returncode == -signal.SIGABRT and words in bad.stderr and "lbgen_fused" in bad.stderr, bad.stderr
