"""The emitted C (and CUDA host code) as a user builds it: sizes it cannot hold are refused,
every name it defines carries the prefix, and C++ units link against it.

Each test compiles a small driver against emitted files with gcc / g++ and observes the
program's exit status and output."""
import re
import shutil
import subprocess

import pytest

from lbgen.codegen.emit import emit
from lbgen.codegen.kernel_api import SIZE_ERRORS
from lbgen.codegen.spec import KernelSpec

#: the sizes of the adversarial report: the padded buffer's byte count wraps around to 24
ATTACK = (1073741818, 2147483600)
#: PTRDIFF_MAX of every target lbgen builds for
PTRDIFF_MAX = 2 ** 63 - 1
OVERFLOW = SIZE_ERRORS.index("OVERFLOW") + 1
#: flags for quick builds: the tests check behaviour, not speed
CFLAGS = ["-O0", "-fopenmp", "-Wall", "-Werror"]

DRIVER = r"""
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include "lbgen_kernels.h"

/* ./driver lx ly: what the API says about an lx x ly lattice */
int main(int argc, char **argv)
{
    const int lx = (int)strtol(argv[1], NULL, 10), ly = (int)strtol(argv[2], NULL, 10);
    char why[300];
    const int code = lbgen_check(lx, ly, why, sizeof why);
    const size_t n = lbgen_buffer_size(lx, ly);
    printf("check %d\nbuffer_size %zu\nmessage %s\n", code, n, why);
    if (code == LBGEN_STATUS_OK) return 0;      /* no allocation of valid (possibly huge) sizes */
    errno = 0;
    lbgen_real *f = lbgen_alloc(lx, ly);
    printf("alloc %s\nerrno_einval %d\n", f ? "buffer" : "NULL", errno == EINVAL);
    lbgen_free(f);
    return 0;
}
"""

RUN = r"""
#include <stdio.h>
#include <stdlib.h>
#include "lbgen_kernels.h"

/* a uniform state at rest, 10 fused steps: the mass of an lx x ly lattice stays lx * ly */
int main(void)
{
    const int lx = 16, ly = 64;
    if (lbgen_check(lx, ly, NULL, 0) != LBGEN_STATUS_OK) return 3;
    const size_t n = (size_t)lx * ly;
    double *rho = malloc(n * sizeof *rho), *ux = calloc(n, sizeof *ux), *uy = calloc(n, sizeof *uy),
           *T = malloc(n * sizeof *T);
    lbgen_real *f = lbgen_alloc(lx, ly), *g = lbgen_alloc(lx, ly);
    if (!rho || !ux || !uy || !T || !f || !g) return 4;
    for (size_t i = 0; i < n; ++i) { rho[i] = 1.0; T[i] = 1.0; }
    lbgen_init_equilibrium(f, lx, ly, rho, ux, uy, T, 0.0, 0.0);
    for (int s = 0; s < 10; ++s) {
        lbgen_halo(f, lx, ly);
        { const lbgen_region all = lbgen_whole(lx, ly); lbgen_params par = {0}; par.tau = 0.8; lbgen_fused(f, g, lx, ly, &all, &par); }
        lbgen_real *t = f; f = g; g = t;
    }
    lbgen_fields(f, lx, ly, rho, ux, uy, T, 0.0, 0.0);
    double mass = 0;
    for (size_t i = 0; i < n; ++i) mass += rho[i];
    printf("buffer_size %zu\nmass %.12f\n", lbgen_buffer_size(lx, ly), mass);
    lbgen_free(f); lbgen_free(g); free(rho); free(ux); free(uy); free(T);
    return 0;
}
"""


def _need(*tools):
    for tool in tools:
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is needed to build the emitted C")


def _run(cmd, cwd):
    proc = subprocess.run([str(c) for c in cmd], cwd=cwd, capture_output=True, text=True)
    assert proc.returncode == 0, f"$ {' '.join(map(str, cmd))}\n{proc.stdout}{proc.stderr}"
    return proc.stdout


def _report(stdout):
    return dict(line.split(" ", 1) for line in stdout.splitlines())


@pytest.fixture(scope="module")
def kernels(tmp_path_factory):
    """The default emit (D2Q37, caosoa, VL 8, double, run-time sizes) with its kernels compiled by gcc."""
    _need("gcc")
    folder = tmp_path_factory.mktemp("emitted")
    emit(KernelSpec(backend="c", layout="caosoa", vl=8), folder)
    _run(["gcc", *CFLAGS, "-std=gnu11", "-c", "lbgen_kernels.c", "-o", "lbgen_kernels.o"], folder)
    return folder


def _driver(folder):
    (folder / "driver.c").write_text(DRIVER)
    _run(["gcc", *CFLAGS, "-std=gnu11", "-o", "driver", "driver.c", "lbgen_kernels.o", "-lm"], folder)
    return lambda lx, ly: _report(_run(["./driver", lx, ly], folder))


def _buffer_elements(lx, ly, Q=37, vl=8, halo=3):
    return Q * (lx + 2 * halo) * (ly // vl + 2 * halo) * vl


def test_sizes_whose_buffer_overflows_are_refused_with_no_wrapped_size_and_no_buffer(kernels):
    ask = _driver(kernels)
    lx, ly = ATTACK
    assert _buffer_elements(lx, ly) * 8 % 2 ** 64 < 64, "the report's sizes wrap size_t around"
    got = ask(lx, ly)
    assert int(got["check"]) == OVERFLOW
    assert got["message"].startswith(f"lattice {lx} x {ly} is too large")
    assert got["buffer_size"] == "0"
    assert got["alloc"] == "NULL" and got["errno_einval"] == "1"
    # both sizes at their int maximum (LY rounded to a multiple of VL)
    got = ask(2 ** 31 - 1, 2 ** 31 - 8)
    assert (int(got["check"]), got["buffer_size"], got["alloc"]) == (OVERFLOW, "0", "NULL")


def test_the_largest_size_that_fits_passes_and_the_next_is_refused(kernels):
    """The rule is exact: the buffer in bytes, rounded up to 64, may reach PTRDIFF_MAX."""
    ask = _driver(kernels)
    ly = ATTACK[1]
    lx = (PTRDIFF_MAX - 63) // (37 * 8 * 8) // (ly // 8 + 6) - 6     # the largest LX for this LY
    elements = _buffer_elements(lx, ly)
    assert elements * 8 + 63 <= PTRDIFF_MAX < _buffer_elements(lx + 1, ly) * 8 + 63
    got = ask(lx, ly)
    assert got["check"] == "0" and int(got["buffer_size"]) == elements
    got = ask(lx + 1, ly)
    assert (int(got["check"]), got["buffer_size"], got["alloc"]) == (OVERFLOW, "0", "NULL")


def test_other_refused_sizes_give_buffer_size_zero_and_no_buffer(kernels):
    ask = _driver(kernels)
    for (lx, ly), code in [((0, 64), "SIZE"), ((16, 60), "VL"), ((16, 16), "HALO")]:
        got = ask(lx, ly)
        assert int(got["check"]) == SIZE_ERRORS.index(code) + 1
        assert (got["buffer_size"], got["alloc"], got["errno_einval"]) == ("0", "NULL", "1")


def test_a_normal_size_passes_and_runs(kernels):
    (kernels / "run.c").write_text(RUN)
    _run(["gcc", *CFLAGS, "-std=gnu11", "-o", "run", "run.c", "lbgen_kernels.o", "-lm"], kernels)
    got = _report(_run(["./run"], kernels))
    assert int(got["buffer_size"]) == _buffer_elements(16, 64)
    assert abs(float(got["mass"]) - 16 * 64) < 1e-9


CPP = r"""
#include <cstdio>
#include <vector>
#include "lbgen_kernels.h"

int main()
{
    const int lx = 16, ly = 64;
    if (lbgen_check(lx, ly, nullptr, 0) != LBGEN_STATUS_OK) return 3;
    std::vector<double> rho(lx * ly, 1.0), ux(lx * ly, 0.0), uy(lx * ly, 0.0), T(lx * ly, 1.0);
    lbgen_real *f = lbgen_alloc(lx, ly), *g = lbgen_alloc(lx, ly);
    if (!f || !g) return 4;
    lbgen_init_equilibrium(f, lx, ly, rho.data(), ux.data(), uy.data(), T.data(), 0.0, 0.0);
    lbgen_halo(f, lx, ly);
    { const lbgen_region all = lbgen_whole(lx, ly); lbgen_params par = {0}; par.tau = 0.8; lbgen_fused(f, g, lx, ly, &all, &par); }
    lbgen_fields(g, lx, ly, rho.data(), ux.data(), uy.data(), T.data(), 0.0, 0.0);
    double mass = 0;
    for (double r : rho) mass += r;
    std::printf("Q %d mass %.12f\n", LBGEN_Q, mass);
    lbgen_free(f);
    lbgen_free(g);
    return 0;
}
"""


def test_a_cpp_unit_including_the_header_links_against_the_c_kernels(kernels):
    _need("g++")
    (kernels / "user.cpp").write_text(CPP)
    _run(["g++", "-O0", "-Wall", "-Werror", "-std=c++11", "-c", "user.cpp", "-o", "user.o"], kernels)
    _run(["g++", "-fopenmp", "-o", "user", "user.o", "lbgen_kernels.o", "-lm"], kernels)
    out = _run(["./user"], kernels)
    q, mass = re.fullmatch(r"Q (\d+) mass (\S+)\n", out).groups()
    assert q == "37" and abs(float(mass) - 16 * 64) < 1e-9


# --- every name carries the prefix --------------------------------------------------------

UNISTD = r"""
#include <stdio.h>
#include <unistd.h>
#include "r_kernels.h"

int main(void)
{
    /* <unistd.h>'s R_OK keeps its value and meaning next to the r_ kernels */
    printf("R_OK %d access %d check %d ok %d\n", R_OK, access(".", R_OK), r_check(16, 64, NULL, 0),
           R_STATUS_OK);
    return 0;
}
"""


@pytest.mark.parametrize("backend", ["c", "cuda", "opencl"])
def test_every_define_of_the_emitted_files_starts_with_the_prefix(tmp_path, backend):
    written = emit(KernelSpec(backend=backend, prefix="r", walls=True), tmp_path)
    defined = {m.group(2): name for name, path in written.items()
               for m in re.finditer(r"^\s*#\s*(define|undef)\s+(\w+)", path.read_text(), re.M)}
    assert defined, "no macros found: the pattern is wrong"
    outside = {macro: name for macro, name in defined.items() if not macro.startswith("R_")}
    assert not outside, f"macros outside the prefix R_: {outside}"


def test_prefix_r_kernels_compile_beside_unistd_and_export_only_prefixed_symbols(tmp_path):
    _need("gcc", "nm")
    emit(KernelSpec(backend="c", prefix="r", walls=True), tmp_path)
    (tmp_path / "user.c").write_text(UNISTD)
    # the kernels themselves built with <unistd.h> included first, too: no macro clashes either way
    _run(["gcc", *CFLAGS, "-std=gnu11", "-include", "unistd.h", "-c", "r_kernels.c", "-o", "r_kernels.o"],
         tmp_path)
    _run(["gcc", *CFLAGS, "-std=gnu11", "-o", "user", "user.c", "r_kernels.o", "-lm"], tmp_path)
    assert _run(["./user"], tmp_path) == "R_OK 4 access 0 check 0 ok 0\n"
    symbols = _run(["nm", "-g", "--defined-only", "r_kernels.o"], tmp_path).split()[2::3]
    assert symbols and all(s.startswith("r_") for s in symbols), symbols


# --- the CUDA host helpers: the same size rules, on the CPU through the host shim ---------

CUDA_DRIVER = r"""
#include <stdio.h>
#include <stdlib.h>
#include "r_kernels.cuh"

int main(int argc, char **argv)
{
    const int lx = (int)strtol(argv[1], NULL, 10), ly = (int)strtol(argv[2], NULL, 10);
    r_real *f = NULL;
    const int code = r_check(lx, ly, NULL, 0);
    /* allocate refused sizes (nothing may be allocated) and small ones, never huge valid ones */
    const cudaError_t err = (code || (long long)lx * ly < 1000000) ? r_alloc(&f, lx, ly) : cudaSuccess;
    printf("check %d buffer_size %zu alloc %d null %d\n", code, r_buffer_size(lx, ly), (int)err, f == NULL);
    if (f) r_free(f);
    return 0;
}
"""


def test_cuda_host_helpers_refuse_what_they_cannot_hold(tmp_path):
    from lbgen.backends.cuda import shim
    if not shim.available()[0]:
        pytest.skip("g++ is needed for the CUDA host shim")
    emit(KernelSpec(backend="cuda", layout="caosoa", vl=32, prefix="r", velocity_set="d2q9"), tmp_path)
    (tmp_path / "driver.cu").write_text(CUDA_DRIVER)
    exe = shim.build_host_program(tmp_path, ["driver.cu", "r_kernels.cu"], "driver", flags=("-O0",))

    def ask(lx, ly):
        return _run([exe, lx, ly], tmp_path).split()[1::2]

    # D2Q9: halo 1, VL 32, 8-byte values; LY the multiple of 32 below the report's
    assert ask(ATTACK[0], 2147483584) == [str(OVERFLOW), "0", "1", "1"]      # 1: cudaErrorInvalidValue
    elements = 9 * (16 + 2) * (96 // 32 + 2) * 32
    assert ask(16, 96) == ["0", str(elements), "0", "0"]
    # a buffer that fits but a launch grid that would not: LX*LY threads in blocks of 128 need
    # more than 2^31 - 1 blocks (the wrappers' unsigned block count would wrap)
    lx = 2 ** 31 - 1
    assert ask(lx, 128)[:2] == ["0", str(9 * (lx + 2) * (128 // 32 + 2) * 32)]      # exactly 2^31 - 1 blocks
    assert ask(lx, 160) == [str(SIZE_ERRORS.index("GRID") + 1), "0", "1", "1"]


@pytest.mark.parametrize("velocity_set", ["d2q9", "d3q27"])
def test_the_cumulant_limiters_fabs_is_declared(tmp_path, velocity_set):
    """The cumulant limiter's absolute values print as fabs: the emitted C includes <math.h> for
    them (it did for sqrt only; gcc 12 warned of an implicit declaration, C99 and gcc 14 refuse it)."""
    _need("gcc")
    emit(KernelSpec(backend="c", collision="cumulant", velocity_set=velocity_set), tmp_path)
    source = (tmp_path / "lbgen_kernels.c").read_text()
    assert "fabs(" in source
    out = subprocess.run(["gcc", "-fsyntax-only", "-std=gnu11", "-fopenmp", "-Wall",
                          "-Werror=implicit-function-declaration", str(tmp_path / "lbgen_kernels.c")],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]


@pytest.mark.parametrize("spec", [KernelSpec(backend="c", layout="caosoa", vl=8),
                                  KernelSpec(backend="c", layout="soa", velocity_set="d3q39", walls=True),
                                  KernelSpec(backend="c", layout="soa", velocity_set="d3q19", prefix="r")],
                         ids=["d2q37", "d3q39-walls", "d3q19-prefix-r"])
def test_the_kernels_compile_without_a_warning_with_the_site_inlined_or_compiled_once(tmp_path, spec):
    """The site functions' linkage macro (<PREFIX>_SITE_LINKAGE: inlined, or called once with
    -D<PREFIX>_SITE_ONCE as the suite's -O1 builds take it) names nothing the header defines: a
    first version was <PREFIX>_SITE, the header's site-index macro, redefined with a warning only.
    gcc's default warnings (macro redefinitions among them) are errors here, both ways."""
    _need("gcc")
    emit(spec, tmp_path)
    for once in ([], [f"-D{spec.prefix.upper()}_SITE_ONCE"]):
        out = subprocess.run(["gcc", "-fsyntax-only", "-std=gnu11", "-fopenmp", "-Werror", *once,
                              str(tmp_path / f"{spec.prefix}_kernels.c")], capture_output=True, text=True)
        assert out.returncode == 0, out.stderr[-2000:]
