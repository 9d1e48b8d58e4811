"""`lbgen emit --prefix P` for any valid P: every size and index macro of every backend and
dimension compiles and gives the layout's numbers, the C kernels and example compile, and
prefixes that cannot name C symbols are refused with the rule.

The prefixes are the words the macros themselves are written in (VL, NRP, NX, LY, Q, R, K):
a prefix must never be rewritten by the formulas it is printed into (issue 34: ``--prefix vl``
wrote ``(8_NRP(LY)*37*8)`` into ``VL_IDX``)."""
import re
import shutil
import subprocess

import pytest

from helpers import require
from lbgen.backends.build import BackendUnavailable
from lbgen.codegen.emit import emit
from lbgen.codegen.layouts import make_layout
from lbgen.codegen.spec import PREFIX_RULE, KernelSpec, SpecError
from lbgen.model.velocity_set import velocity_set

PREFIXES = ["vl", "nrp", "r", "nx", "ly", "lz", "q", "k", "lbgen", "Vl_2"]

#: (backend, velocity set, layout, VL): the clustered layouts put every stride name in a formula
TARGETS = [("c", "d2q37", "caosoa", 8), ("c", "d2q37", "csoa", 4), ("c", "d3q19", "caosoa", 8),
           ("opencl", "d2q37", "caosoa", 32), ("opencl", "d3q19", "csoa", 8),
           ("cuda", "d2q37", "caosoa", 32), ("cuda", "d3q19", "caosoa", 8)]

#: a define (backslash-continued lines joined) of a function-like or object-like macro
DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(\w+)(\([^)]*\))?((?:[^\n]*\\\n)*[^\n]*)", re.M)
#: the macros of sizes and indices: expressions of integers, usable in any C unit
SIZE_MACROS = ("NR", "NX", "NY", "NRP", "BUFFER_FITS", "BUFFER_SIZE", "IDX", "SITE", "HALO_THREADS",
               "HALO_PLANES_THREADS", "HALO_THREADS_3D", "HALO_PLANES_THREADS_3D", "Q", "VL", "HALO", "HALO_Y", "D")


def _need(*tools):
    for tool in tools:
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is needed to compile the emitted macros")


#: the constants a GPU kernel file declares for its own macros (templates/gpu/kernels.j2, 3D)
LOCAL_ENUM = re.compile(r"^enum \{ Q = \d+, HALO = \d+, VL = \d+", re.M)


def _size_macros(written, G):
    """({name: (params, body)} of the size/index macros of the emitted files, the constants
    their files declare for them); a macro defined in several files must have one text."""
    found, local = {}, []
    for path in written.values():
        if path.suffix not in (".h", ".cuh", ".cl", ".c", ".cu"):
            continue
        text = path.read_text()
        enum = LOCAL_ENUM.search(text)
        if enum:
            local.append(enum.group(0) + " };")
        for m in DEFINE.finditer(text):
            name = m.group(1)
            if not name.startswith(G + "_") or name[len(G) + 1:] not in SIZE_MACROS:
                continue
            macro = (m.group(2) or "", m.group(3))
            assert found.setdefault(name, macro) == macro, f"{name} has two texts"
    return found, sorted(set(local))


def _printer(macros, local, G, dim, sizes, points):
    """A C program printing BUFFER_SIZE and IDX at the points ((p, x, [y,] r, k) tuples)."""
    lines = ["#include <stddef.h>", "#include <stdint.h>", "#include <stdio.h>", *local]
    lines += [f"#define {name}{params}{body}" for name, (params, body) in macros.items()]
    args = ", ".join(map(str, sizes))
    lines += ["int main(void)", "{"]
    if f"{G}_BUFFER_SIZE" in macros:
        lines.append(f'    printf("%zu\\n", (size_t){G}_BUFFER_SIZE({args}));')
    for pt in points:
        lines.append(f'    printf("%td\\n", (ptrdiff_t){G}_IDX({", ".join(map(str, pt))}, {args}));')
    for name, (params, _) in macros.items():       # every other macro expands to an expression
        n = len([a for a in params.strip("()").split(",") if a.strip()])
        if n and name not in (f"{G}_IDX", f"{G}_BUFFER_SIZE"):
            call = ", ".join(map(str, (list(sizes) * 3)[:n])) if name != f"{G}_SITE" else \
                ", ".join(["1"] * (dim + 1) + list(map(str, sizes)))
            lines.append(f'    printf("%lld\\n", (long long)({name}({call})));')
    lines += ["    return 0;", "}"]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("backend, vset, layout, vl", TARGETS, ids=[f"{t[0]}-{t[1]}-{t[2]}" for t in TARGETS])
def test_every_size_and_index_macro_compiles_and_agrees_with_the_layout_for_any_prefix(tmp_path, backend, vset,
                                                                                       layout, vl):
    _need("gcc")
    vs = velocity_set(vset)
    dim = len(vs.velocities[0])
    sizes = (5, 128) if dim == 2 else (3, 4, 16)
    if dim == 2:
        L = make_layout(layout, vs.Q, sizes, vl, halo=vs.max_hop)
        points = [(p, x, r, k) for p in (0, vs.Q - 1) for x in (-L.halo, 0, 4) for r in (-L.HY, 0, L.NR)
                  for k in (0, L.VL - 1)]
        expected = [L.index(*pt) for pt in points]
    else:
        L = make_layout(layout, vs.Q, sizes, vl, halo=vs.max_hop)
        points = [(p, x, y, r, k) for p in (0, vs.Q - 1) for x in (-1, 2) for y in (-1, 3) for r in (-1, 0, L.NR)
                  for k in (0, L.VL - 1)]
        expected = [L.index(*pt) for pt in points]
    for prefix in PREFIXES:
        G = prefix.upper()
        out = tmp_path / prefix
        written = emit(KernelSpec(backend=backend, layout=layout, vl=vl, velocity_set=vset, prefix=prefix), out)
        macros, local = _size_macros(written, G)
        # the OpenCL kernels define only their launch sizes; C and CUDA headers also the buffer's
        wanted = {f"{G}_HALO_THREADS"} if backend == "opencl" else {f"{G}_BUFFER_SIZE", f"{G}_IDX", f"{G}_SITE"}
        assert wanted <= set(macros), f"--prefix {prefix}: missing {wanted - set(macros)}"
        points_here, expected_here = (points, expected) if f"{G}_IDX" in macros else ([], [])
        (out / "macros.c").write_text(_printer(macros, local, G, dim, sizes, points_here))
        proc = subprocess.run(["gcc", "-std=c11", "-Wall", "-Werror", "-o", "macros", "macros.c"], cwd=out,
                              capture_output=True, text=True)
        assert proc.returncode == 0, f"--prefix {prefix}: the emitted macros do not compile:\n{proc.stderr}"
        values = subprocess.run(["./macros"], cwd=out, capture_output=True, text=True, check=True).stdout.split()
        if f"{G}_BUFFER_SIZE" in macros:
            assert int(values.pop(0)) == L.size, f"--prefix {prefix}: {G}_BUFFER_SIZE"
        assert [int(v) for v in values[:len(points_here)]] == expected_here, f"--prefix {prefix}: {G}_IDX"


@pytest.mark.parametrize("vset", ["d2q37", "d3q19"])
def test_the_c_kernels_and_example_compile_for_any_prefix_and_define_only_prefixed_names(tmp_path, vset):
    _need("gcc")
    for prefix in PREFIXES:
        out = tmp_path / prefix
        written = emit(KernelSpec(backend="c", layout="caosoa", vl=8, velocity_set=vset, prefix=prefix), out)
        assert f"{prefix}_kernels.c" in written and f"{prefix}_kernels.h" in written
        for source in (f"{prefix}_kernels.c", "example.c"):
            proc = subprocess.run(["gcc", "-std=gnu11", "-fopenmp", "-Wall", "-Werror", "-fsyntax-only", source],
                                  cwd=out, capture_output=True, text=True)
            assert proc.returncode == 0, f"--prefix {prefix}: {source} does not compile:\n{proc.stderr}"
        header = (out / f"{prefix}_kernels.h").read_text()
        defined = set(re.findall(r"^\s*#\s*define\s+(\w+)", header, re.M))
        assert defined and all(d.startswith(prefix.upper() + "_") for d in defined), defined


@pytest.mark.parametrize("prefix", ["2d", "_lb", "lb_", "lb__q", "int", "class", "é", "lb-q", "", "lb q"])
def test_prefixes_that_cannot_prefix_c_symbols_are_refused_naming_the_rule(prefix):
    with pytest.raises(SpecError) as err:
        KernelSpec(prefix=prefix).validate()
    assert repr(prefix) in str(err.value) and PREFIX_RULE in str(err.value)


#: a host unit of a CUDA user: the header's size and index macros in host code
CUDA_USER = r"""
#include <stdio.h>
#include "{p}_kernels.cuh"
int main(void)
{{
    printf("%zu %td\n", (size_t){G}_BUFFER_SIZE({sizes}), (ptrdiff_t){G}_SITE(1, 2, {site}{sizes}));
    return 0;
}}
"""


@pytest.mark.slow                  # nvcc: 5-20 s a build
@pytest.mark.parametrize("vset", ["d2q37", "d3q19"])
def test_the_cuda_kernels_example_and_a_user_unit_build_with_nvcc_for_prefix_vl(tmp_path, vset):
    from lbgen.backends.cuda import nvcc
    require(*nvcc.available(), "nvcc")
    three = vset == "d3q19"
    emit(KernelSpec(backend="cuda", layout="caosoa", vl=8, velocity_set=vset, prefix="vl"), tmp_path)
    sizes = "3, 4, 16" if three else "5, 128"
    (tmp_path / "user.cu").write_text(CUDA_USER.format(p="vl", G="VL", sizes=sizes, site="3, 5, " if three else "3, "))
    proc = subprocess.run(["make", "-s", "ARCH=sm_90", f"NVCC={nvcc.find_nvcc()}"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    proc = subprocess.run([nvcc.find_nvcc(), "-arch=sm_90", "-c", "-o", "user.o", "user.cu"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize("vset", ["d2q37", "d3q19"])
def test_the_opencl_kernels_build_for_prefixes_that_are_words_of_the_macros(tmp_path, vset):
    try:
        import pyopencl as cl
        from lbgen.backends import opencl
        device = opencl.select_device()
    except (BackendUnavailable, ImportError) as e:
        require(False, f"OpenCL unavailable: {e}", "OpenCL")
    ctx = cl.Context([device])
    for prefix in ("vl", "nrp"):
        written = emit(KernelSpec(backend="opencl", layout="caosoa", vl=8, velocity_set=vset, prefix=prefix),
                       tmp_path / prefix)
        cl.Program(ctx, written[f"{prefix}_kernels.cl"].read_text()).build()
