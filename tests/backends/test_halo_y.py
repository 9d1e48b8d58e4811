"""A wider Y halo (`--halo-y`, KernelSpec.halo_y): padding only.  Kernels generated with 16 halo
rows (the production code's HY) step to the same bits as those with the set's hop, with
walls, by fused_walls, the three sweeps and fused_tb, and report the same fields and
diagnostics; the buffer is the layout's (NumPy pack/unpack from the same strides)."""
from __future__ import annotations

import numpy as np
import pytest

from programs import PROGRAMS
from wall_support import FORCE, T_BOTTOM, T_TOP, wall_state  # noqa: F401

LX, LY = 4, 24
PARAMS = dict(C1=0.2, C2=0.1, C3=0.5, ax=FORCE[0], ay=FORCE[1])
STEPS = 4


class _Walls:
    T_bottom, T_top, adiabatic_bottom, adiabatic_top = T_BOTTOM, T_TOP, False, True


def _program(layout, vl, halo_y):
    return PROGRAMS.of("c", (LX, LY), True, {"threads": 2}, layout=layout, vl=vl, collision="regularized", walls=True,
                       halo_y=halo_y)


def _run(prog, state, how):
    f, g = prog.pack(state), prog.allocate()
    if how == "fused_tb":
        prog.halo(f)
        prog.fused_tb(f, g, STEPS, walls=_Walls, **PARAMS)
        return prog, g
    for _ in range(STEPS):
        prog.halo(f)
        f, g = prog.step(f, g, PARAMS, _Walls, fused=how == "fused_walls")
    return prog, f


@pytest.mark.parametrize("layout,vl", [("soa", None), ("caosoa", 2)], ids=["soa", "caosoa-vl2"])
def test_halo_y_16_steps_to_the_bits_of_the_default_halo(wall_state, layout, vl):  # noqa: F811
    narrow, wide = _program(layout, vl, None), _program(layout, vl, 16)
    assert wide.layout.NRP == wide.layout.NR + 32 and narrow.layout.NRP == narrow.layout.NR + 6
    for how in ("fused_walls", "three-sweeps", "fused_tb"):
        (pa, a), (pb, b) = _run(narrow, wall_state, how), _run(wide, wall_state, how)
        want, got = pa.unpack(a), pb.unpack(b)
        assert np.all(np.isfinite(want))
        assert np.array_equal(got, want), f"{layout} {how}: {np.count_nonzero(got != want)} values differ"
        for fa, fb in zip(pa.fields(a, force=FORCE[:2]).values(), pb.fields(b, force=FORCE[:2]).values()):
            assert np.array_equal(fa, fb)
        assert np.array_equal(pa.diagnostics(a, force=FORCE), pb.diagnostics(b, force=FORCE))


def test_the_halo_kernel_fills_all_16_rows_periodically(wall_state):  # noqa: F811
    prog = _program("caosoa", 2, 16)
    buf = prog.pack(wall_state)
    want = prog.layout.fill_halo(prog.download(buf).copy())
    lay = prog.layout
    interior = lay.site_index(*np.ix_(np.arange(lay.Q), *(np.arange(n) for n in lay.shape)))
    buf[:] = 0
    buf[interior] = want[interior]
    prog.halo(buf)
    assert np.array_equal(prog.download(buf), want)


def test_emit_halo_y_16_writes_the_padded_layout(tmp_path):
    from click.testing import CliRunner
    from lbgen.cli.main import main
    out = CliRunner().invoke(main, ["emit", "--layout", "soa", "--walls", "--halo-y", "16", "-o", str(tmp_path)])
    assert out.exit_code == 0, out.output
    header = (tmp_path / "lbgen_kernels.h").read_text()
    assert "#define LBGEN_HALO_Y 16" in header and "--halo-y 16" in header
    refused = CliRunner().invoke(main, ["emit", "--layout", "soa", "--halo-y", "2", "-o", str(tmp_path / "x")])
    assert refused.exit_code != 0 and not (tmp_path / "x").exists()
