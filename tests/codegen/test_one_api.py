"""One emitted API for 2D and 3D (issue 34, build item 3): the entry points of the emitted 2D
and 3D C headers, and the CUDA kernels, differ in their sizes and axes only; the 3D sweeps honour a region (its
sites written, no other) and get_region / put_region move blocks of cells, halo included;
the emitted 3D example agrees with ``lbgen.Simulation`` to 1e-12."""
from __future__ import annotations

import re
import shutil
import subprocess

import numpy as np
import pytest

from helpers import make_example
from lbgen.backends import compile as compile_program
from lbgen.codegen.emit import emit
from lbgen.codegen.render import emit_files, generate
from lbgen.codegen.spec import KernelSpec

#: one declaration of the API block: return type and name, then the arguments
DECLARATION = re.compile(r"^([\w ]+?\**)\s*(\w+)\(([^)]*)\);", re.M)
#: the arguments of the extra axis: its size, its velocity in and out, its force component
EXTRA_AXIS = {"int lz", "const double *uz_in", "double *uz_o", "double az"}


def _entry_points(header: str, prefix: str) -> dict:
    """{name: [normalised argument, ...]} of the declarations between BEGIN API and END API, in
    order: the prefix written P, the sizes one `sizes`, the extra axis' arguments dropped."""
    api = header[header.index("BEGIN API"):header.index("END API")]
    out = {}
    for _, name, args in DECLARATION.findall(api):
        if not name.startswith(prefix + "_"):
            continue
        kinds = []
        for a in (" ".join(a.split()) for a in args.replace(prefix + "_", "P_").split(",")):
            if a in EXTRA_AXIS:
                continue
            if a in ("int lx", "int ly"):
                a = "sizes"
                if kinds and kinds[-1] == "sizes":
                    continue
            kinds.append(a)
        out[name[len(prefix) + 1:]] = kinds
    return out


@pytest.mark.parametrize("prefix, layout, vl", [("lbgen", "caosoa", 8), ("nx", "soa", None)])
def test_2d_and_3d_headers_differ_in_sizes_and_axes_only(prefix, layout, vl):
    two = _entry_points(emit_files(KernelSpec(layout=layout, vl=vl, prefix=prefix))[f"{prefix}_kernels.h"], prefix)
    three = _entry_points(emit_files(KernelSpec(velocity_set="d3q19", layout=layout, vl=vl, prefix=prefix))
                          [f"{prefix}_kernels.h"], prefix)
    assert list(two) == list(three)                      # every entry point in both, in one order
    for name in two:
        assert three[name] == two[name], name
    assert two["fused"] == ["const P_real *prv", "P_real *nxt", "sizes", "const P_region *region",
                            "const P_params *par"]
    assert two["fused_tb"] == ["const P_real *prv", "P_real *nxt", "sizes", "int depth", "const P_params *par"]


def test_2d_and_3d_thermal_walls_headers_differ_in_sizes_and_axes_only():
    """With the thermal walls (2D D2Q37 across y, 3D D3Q39 across z): the same entry points, bc and
    fused_walls (propagate + bc + collide in one sweep) among them, with the same arguments."""
    two, three = (_entry_points(emit_files(KernelSpec(velocity_set=vs, layout="soa", walls=True))["lbgen_kernels.h"],
                                "lbgen") for vs in ("d2q37", "d3q39"))
    assert list(two) == list(three) and {"bc", "fused_walls"} <= set(three)
    for name in two:
        assert three[name] == two[name], name
    assert three["fused_walls"] == ["const P_real *prv", "P_real *nxt", "sizes", "const P_region *region",
                                    "const P_params *par"]
    from lbgen.backends.cuda.shim import kernels_of      # the CUDA kernel: one argument list but the extra axis
    two, three = ({name: [n for _, n in params if n not in CUDA_EXTRA_AXIS] for name, params in
                   kernels_of(emit_files(KernelSpec(backend="cuda", velocity_set=vs, walls=True))["lbgen_kernels.cu"])}
                  for vs in ("d2q37", "d3q39"))
    assert three["lbgen_fused_walls"] == two["lbgen_fused_walls"]
    assert two["lbgen_fused_walls"][-7:] == ["tau_wall", "T_bottom", "T_top", "adiabatic_bottom", "adiabatic_top",
                                             "wall_bottom", "wall_top"]


#: the CUDA kernels' arguments of the extra axis
CUDA_EXTRA_AXIS = {"lz", "z0", "z1", "uz_in", "uz_o", "az"}


def test_2d_and_3d_cuda_kernels_differ_in_sizes_and_axes_only():
    """The CUDA kernels (below the one C-level API): the same kernels with the same arguments
    (types and names) but for the extra axis, and one known difference, pinned here so that no
    other one creeps in: 3D refreshes its halo planes with a kernel of its own.  The sweeps of
    both take the record's boundary fields last and bounce back themselves (no kernel of its own)."""
    from lbgen.backends.cuda.shim import kernels_of
    two, three = ({name: [(t, n) for t, n in params if n not in CUDA_EXTRA_AXIS]
                   for name, params in kernels_of(emit_files(spec)["lbgen_kernels.cu"])}
                  for spec in (KernelSpec(backend="cuda"), KernelSpec(backend="cuda", velocity_set="d3q19")))
    assert set(three) - set(two) == {"lbgen_halo_planes"}          # the 3D step's halo refresh
    assert set(two) == set(three) - {"lbgen_halo_planes"}
    for name in two:
        assert two[name] == three[name], name
    for sweep in ("propagate", "collide", "fused"):                # after the parameters
        assert [n for _, n in two[f"lbgen_{sweep}"]][-6:] == ["walls", "lids", "lid", "solid", "opens", "openv"]


def test_both_headers_state_one_api_version_and_their_dimension():
    for spec, d in ((KernelSpec(), 2), (KernelSpec(velocity_set="d3q19"), 3)):
        header = emit_files(spec)["lbgen_kernels.h"]
        assert "#define LBGEN_API_VERSION 4\n" in header and f"#define LBGEN_D    {d}   /* dimension */" in header
        assert "lbgen_boundaries" not in header


def _program(runtime):
    from lbgen.backends import available, spec_backend
    ok, why = available(runtime)
    if not ok:
        pytest.skip(why)
    spec = KernelSpec(backend=spec_backend(runtime), velocity_set="d3q19", layout="caosoa", vl=4)
    return compile_program(runtime, generate(spec), (6, 5, 8))


@pytest.fixture(scope="module")
def program():
    return _program("c")


def _state(program, seed=1):
    rng = np.random.default_rng(seed)
    plain = 0.05 + rng.random((program.vs.Q, program.lx, program.ly, program.lz)) * 0.01
    return program.pack(plain)


@pytest.mark.parametrize("runtime", ["c", pytest.param("opencl", marks=pytest.mark.slow),
                                     pytest.param("cuda-shim", marks=pytest.mark.slow)])
@pytest.mark.parametrize("kernel", ["propagate", "collide", "fused"])
def test_a_3d_sweep_writes_its_region_and_no_other_site(runtime, kernel):
    program = _program(runtime)
    params = {"tau": 0.8, "ax": 1e-5, "ay": 0.0, "az": -2e-5}
    lid = np.zeros((6, 3))
    lid[3] = (0.02, 0, 0.01)                      # face y-high: bit 2a + s = 3
    program.set_boundaries(walls=0b1100, lids=0b1000, lid=lid)
    f = _state(program)
    whole = program.allocate()
    kw = {} if kernel == "propagate" else params
    getattr(program, kernel)(f, whole, **kw)
    part = _state(program, seed=2)
    before = program.unpack(part)
    getattr(program, kernel)(f, part, region=(1, 4, 2, 5), **kw)
    got, want = program.unpack(part), program.unpack(whole)
    inside = np.zeros(got.shape[1:], bool)
    inside[1:4, 2:5, :] = True
    assert np.array_equal(got[:, inside], want[:, inside])          # the region: the whole sweep's bits
    assert np.array_equal(got[:, ~inside], before[:, ~inside])      # elsewhere: untouched
    with pytest.raises(ValueError, match="outside the lattice"):
        getattr(program, kernel)(f, part, region=(0, 7, 0, 5), **kw)


def test_get_and_put_region_move_blocks_of_cells_with_their_halo(program):
    f = _state(program)
    program.halo(f)
    plain = program.unpack(f)
    h = program.vs.max_hop
    block = program.get_region(f, (-h, 2, 0, program.ly, -h, program.lz + h))
    want = plain[:, np.arange(-h, 2) % program.lx][:, :, :, np.arange(-h, program.lz + h) % program.lz]
    assert np.array_equal(block, want)                               # halo cells: the periodic images
    g = program.allocate()
    program.put_region(g, (-h, program.lx + h, -h, program.ly + h, -h, program.lz + h),
                       program.get_region(f, (-h, program.lx + h, -h, program.ly + h, -h, program.lz + h)))
    assert np.array_equal(program.download(g), program.download(f))  # every stored copy written
    with pytest.raises(ValueError, match="outside the padded lattice"):
        program.get_region(f, (0, 1, 0, 1, 0, program.lz + h + 1))


@pytest.mark.slow
def test_emitted_3d_example_agrees_with_simulation(tmp_path):
    if shutil.which("make") is None or shutil.which("gcc") is None:
        pytest.skip("make and gcc are needed to build the emitted example")
    import lbgen
    spec = KernelSpec(velocity_set="d3q19", layout="caosoa", vl=8)
    emit(spec, tmp_path)
    make_example(tmp_path, spec)
    lx, ly, lz, steps = 8, 6, 16, 12
    x, y, z = np.meshgrid(np.arange(lx), np.arange(ly), np.arange(lz), indexing="ij")
    for lid in (False, True):
        subprocess.run(["./example", str(steps), str(lx), str(ly), str(lz)] + (["lid"] if lid else []),
                       cwd=tmp_path, check=True, capture_output=True)
        data = np.loadtxt(tmp_path / "example_fields.txt")
        sim = lbgen.Simulation(lx, ly, lz, velocity_set="d3q19", layout="caosoa", vl=8, tau=0.8,
                               gravity=tuple(np.array([1e-5, 0.0, -2e-5]) * np.sqrt(3.0)),
                               walls="z" if lid else None, lid={"z-high": (0.05, 0, 0)} if lid else None)
        sim.set_fields(1.0 + 0.01 * np.cos(2 * np.pi * z / lz), 0.05 * np.sin(2 * np.pi * z / lz),
                       0.02 * np.sin(2 * np.pi * x / lx), 0.01 * np.cos(2 * np.pi * y / ly))
        sim.run(steps)
        fields = sim.fields()
        for column, name in zip(range(3, 7), ("rho", "ux", "uy", "uz")):
            got = data[:, column].reshape(lx, ly, lz)
            assert np.abs(got - fields[name]).max() <= 1e-12 * max(1.0, np.abs(fields[name]).max()), (lid, name)
