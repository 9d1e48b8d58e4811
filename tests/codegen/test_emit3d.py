"""`lbgen emit` of 3D kernels: the header's size rules, index macros, model tables and
parameter record; the example built with plain gcc (its Makefile) reproduces the oracle
(lbgen.reference.bulk3d) in a periodic box and under a lid; walls and compile-time sizes refused in words (the GPU
backends' 3D emits: test_emit3d_gpu.py)."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from helpers import make_example
from lbgen.cli.main import main
from lbgen.codegen.emit import default_output_dir, emit
from lbgen.codegen.spec import KernelSpec
from lbgen.reference import bulk3d as oracle

R = np.sqrt(3.0)


def test_emit_3d_writes_the_header_with_size_rules_macros_tables_and_boundaries(tmp_path):
    result = CliRunner().invoke(main, ["emit", "--velocity-set", "d3q19", "--layout", "caosoa", "--vl", "8",
                                       "-o", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["Makefile", "README.md", "example.c", "lbgen_kernels.c",
                                                          "lbgen_kernels.h"]
    header = (tmp_path / "lbgen_kernels.h").read_text()
    for needle in ("#define LBGEN_NX(LX)", "#define LBGEN_NY(LY)", "#define LBGEN_NRP(LZ)", "#define LBGEN_NR(LZ)",
                   "#define LBGEN_BUFFER_SIZE(LX, LY, LZ)", "#define LBGEN_IDX(p, x, y, r, k, LX, LY, LZ)",
                   "#define LBGEN_SITE(p, x, y, z, LX, LY, LZ)", "#define LBGEN_BUFFER_FITS(LX, LY, LZ)",
                   "LBGEN_ERR_VL (2): LZ a multiple of VL = 8", "LBGEN_ERR_HALO (3): LZ/VL >= 1",
                   "extern const int lbgen_cx[19];", "extern const int lbgen_cy[19];", "extern const int lbgen_cz[19];",
                   "extern const double lbgen_w[19];", "extern const int lbgen_opposite[19];",
                   "} lbgen_params;", "} lbgen_region;", "const uint8_t *solid;", "double lid[6][3];",
                   "#define LBGEN_API_VERSION 4", "#define LBGEN_D    3",
                   "void lbgen_fused(const lbgen_real *prv, lbgen_real *nxt, int lx, int ly, int lz, "
                   "const lbgen_region *region, const lbgen_params *par);",
                   "lbgen emit --backend c --layout caosoa --vl 8 --precision double --collision bgk "
                   "--velocity-set d3q19", "model       D3Q19 (3D)", "u_H = u - a/2"):
        assert needle in header, needle
    text = (tmp_path / "lbgen_kernels.c").read_text()
    assert "const double lbgen_w[19] = { 0.027777777777777776," in text      # 1/36 first: hop (1, -1, 0)
    assert default_output_dir(KernelSpec(velocity_set="d3q19")) == Path("generated/c/caosoa-vl8-d3q19")


def _example_reference(lx, ly, lz, steps, collision, lid):
    """What example.c computes, by the oracle (lattice units; the example's are model units)."""
    x, y, z = np.meshgrid(np.arange(lx), np.arange(ly), np.arange(lz), indexing="ij")
    rho = 1.0 + 0.01 * np.cos(2 * np.pi * z / lz)
    u = np.stack([0.05 * np.sin(2 * np.pi * z / lz), 0.02 * np.sin(2 * np.pi * x / lx),
                  0.01 * np.cos(2 * np.pi * y / ly)]) / R
    a = np.array([1e-5, 0.0, -2e-5]) / R
    lat = oracle.lattice("d3q19")
    f = oracle.physical_equilibrium(rho, u, a, lat)
    b = oracle.Boundaries((lx, ly, lz), lat, walls=("z",), lids={("z", "high"): (0.05 / R, 0, 0)}) if lid else None
    params = {"tau": 0.8} if collision == "bgk" else {"C1": 0.05}
    f = oracle.run(f, steps, collision, lat, b, force=a, **params)
    rho, u = oracle.physical_fields(f, a, lat)
    return rho, *(R * u)


@pytest.mark.parametrize("spec, size", [
    pytest.param(KernelSpec(velocity_set="d3q19", layout="caosoa", vl=8), (8, 6, 16), id="caosoa-vl8-bgk"),
    pytest.param(KernelSpec(velocity_set="d3q19", layout="soa", collision="regularized"), (5, 4, 12),
                 id="soa-regularized", marks=pytest.mark.slow),
])
def test_emitted_3d_example_builds_with_plain_gcc_and_reproduces_the_oracle(tmp_path, spec, size):
    if shutil.which("make") is None or shutil.which("gcc") is None:
        pytest.skip("make and gcc are needed to build the emitted example")
    emit(spec, tmp_path)
    make_example(tmp_path, spec)
    steps = 12
    for lid in (False, True):
        args = ["./example", str(steps), *map(str, size)] + (["lid"] if lid else [])
        out = subprocess.run(args, cwd=tmp_path, check=True, capture_output=True, text=True).stdout
        assert f"{steps} steps on {size[0]} x {size[1]} x {size[2]}{' under a lid' if lid else ''}: mass" in out
        data = np.loadtxt(tmp_path / "example_fields.txt")
        assert data.shape == (np.prod(size), 8)
        want = _example_reference(*size, steps, spec.collision, lid)
        for column, field in zip(range(3, 7), want):
            got = data[:, column].reshape(size)
            assert np.abs(got - field).max() <= 1e-12 * max(1.0, np.abs(field).max()), (lid, column)
        assert np.all(data[:, 7] == 1.0)
    bad = subprocess.run(["./example", "1", "8", "6", "12"], cwd=tmp_path, capture_output=True, text=True)
    if spec.layout == "caosoa":
        assert bad.returncode == 2 and "lz=12 is not a multiple of VL=8" in bad.stderr


def test_emit_3d_refuses_walls_and_compile_time_sizes(tmp_path):
    for extra, message in ((["--walls"], "adds the thermal walls' bc kernel"),
                           (["--lx", "8", "--ly", "8"], "compile-time sizes")):
        result = CliRunner().invoke(main, ["emit", "--velocity-set", "d3q27", *extra, "-o", str(tmp_path / "o")])
        assert result.exit_code == 2 and message in " ".join(result.output.split()), result.output
        assert "Traceback" not in result.output and not (tmp_path / "o").exists()
