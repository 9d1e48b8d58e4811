"""The OpenCL platform side of the backend: the ICD set-up of pip-installed runtimes, the
devices and the choice among them (``select_device``), one context and queue per device, and
the builds of a source (``build``: cached in this process per context, source digest and
options; the source written under ``<cache>/opencl/<key>/`` so that a failure names it)."""
from __future__ import annotations

import contextlib
import os
import threading
import time
import warnings
from typing import Dict, Optional, Tuple

from lbgen.backends.build import UNCONTRACTED_LEVELS, BackendUnavailable, CompileError, optimisation, record_build
from lbgen.system.cache import (DamagedEntry, atomic_write_bytes, cache_dir, digest, read_checked, warn_rebuilt,
                                write_checked)

STRICT_OPTIONS = ("-DLBGEN_STRICT",)
#: options this backend refuses: they change results (contraction, relaxed math)
FORBIDDEN_OPTIONS = ("-cl-mad-enable", "-cl-fast-relaxed-math", "-cl-unsafe-math-optimizations")

_lock = threading.Lock()
_contexts: Dict[int, tuple] = {}          # device int_ptr -> (context, queue)
_programs: Dict[tuple, object] = {}       # (device int_ptr, source digest, options) -> cl.Program


def _installed_icds() -> list:
    """(file name, library path) of the OpenCL runtimes installed as Python packages.

    pyopencl's wheel bundles pocl (its loader finds that by itself); the Intel CPU runtime
    (``pip install intel-opencl-rt intel-cmplr-lib-rt``) puts ``libintelocl.so`` into
    ``<prefix>/lib`` with an .icd file whose path is a build-time placeholder, so the ICD
    loader never finds it on its own.
    """
    import glob
    import sys
    found = []
    intel = os.path.join(sys.prefix, "lib", "libintelocl.so")
    if os.path.exists(intel):
        found.append(("00-intel-cpu.icd", intel))
    for icd in sorted(glob.glob("/etc/OpenCL/vendors/*.icd")):
        found.append((f"90-{os.path.basename(icd)}", open(icd).read().strip()))
    return found


def _setup_icd_vendors() -> None:
    """Make pip-installed OpenCL runtimes visible to the ICD loader (before it starts).

    Only when ``OCL_ICD_VENDORS`` is unset and the Intel CPU runtime is installed in this
    environment: then a vendors folder under the lbgen cache lists it next to the system
    ICDs (pyopencl's bundled pocl is found by its loader regardless).  (pocl 3.0 cannot
    build for CPUs its LLVM 14 does not know, e.g. AMD Zen 5: "unknown target CPU".)
    """
    if os.environ.get("OCL_ICD_VENDORS"):
        return
    icds = _installed_icds()
    if not any(name.startswith("00-intel") for name, _ in icds):
        return
    folder = cache_dir("opencl") / "vendors"
    folder.mkdir(parents=True, exist_ok=True)
    for name, lib in icds:
        path = folder / name
        if not path.exists() or path.read_text().strip() != lib:
            atomic_write_bytes(path, (lib + "\n").encode())
    os.environ["OCL_ICD_VENDORS"] = str(folder)


def pyopencl():
    if "pyopencl" not in __import__("sys").modules:
        _setup_icd_vendors()
    try:
        import pyopencl as cl
    except ImportError as e:
        raise BackendUnavailable(
            f"OpenCL backend: pyopencl is not importable ({e}); install it with "
            f"`pip install 'lbgen[opencl]'` (for OpenCL on an x86 CPU add intel-opencl-rt "
            f"intel-cmplr-lib-rt, or use pyopencl's bundled pocl where its LLVM knows the CPU)") from None
    return cl


def _platforms():
    cl = pyopencl()
    try:
        platforms = cl.get_platforms()
    except cl.Error as e:
        platforms = []
        reason = str(e)
    else:
        reason = "no OpenCL platform (ICD) found"
    if not platforms:
        raise BackendUnavailable(
            f"OpenCL backend: {reason}; install a driver or `pip install pocl-binary-distribution`")
    return platforms


def devices() -> list:
    """[(platform index, device index, platform, device)] for every device of every platform."""
    out = []
    for pi, platform in enumerate(_platforms()):
        try:
            devs = platform.get_devices()
        except Exception:          # a platform without devices raises DEVICE_NOT_FOUND
            devs = []
        for di, dev in enumerate(devs):
            out.append((pi, di, platform, dev))
    if not out:
        raise BackendUnavailable("OpenCL backend: OpenCL platforms found, but none has a device")
    return out


@contextlib.contextmanager
def quiet_build():
    """pyopencl warns on any non-empty build log (and on log access before a build); the
    log of a failed build goes into CompileError instead.  PYOPENCL_COMPILER_OUTPUT=1
    still shows everything."""
    with warnings.catch_warnings():
        if not os.environ.get("PYOPENCL_COMPILER_OUTPUT"):
            warnings.simplefilter("ignore", pyopencl().CompilerWarning)
            warnings.filterwarnings("ignore", message="Pre-build attribute access")
        yield


def _describe(entry) -> str:
    pi, di, platform, dev = entry
    return f"{pi}:{di} {dev.name.strip()} ({platform.name.strip()}, {dev.version.strip()})"


def select_device(device: Optional[str] = None):
    """The cl.Device chosen by ``device``, else ``$PYOPENCL_CTX``, else the first one.

    Raises BackendUnavailable (listing the devices there are) when nothing matches.
    """
    found = devices()
    origin = "device"
    choice = device
    if choice is None or str(choice).strip() == "":
        choice = os.environ.get("PYOPENCL_CTX") or None
        origin = "PYOPENCL_CTX"
    if choice is None:
        return _first_working_device(found)
    text = str(choice).strip()
    listing = "; ".join(_describe(e) for e in found)
    parts = text.split(":")
    if all(p.strip().isdigit() for p in parts if p.strip() != "") and 1 <= len(parts) <= 2 and parts[0].strip():
        pi = int(parts[0])
        di = int(parts[1]) if len(parts) == 2 and parts[1].strip() else 0
        for e in found:
            if e[0] == pi and e[1] == di:
                return e[3]
        raise BackendUnavailable(f"OpenCL backend: no device {pi}:{di} ({origin}={text!r}); devices here: {listing}")
    matches = [e for e in found if text.lower() in e[3].name.lower()]
    if not matches:
        raise BackendUnavailable(f"OpenCL backend: no device whose name contains {text!r} ({origin}={text!r}); "
                                 f"devices here: {listing}")
    return matches[0][3]


_working: Dict[int, Optional[str]] = {}   # device int_ptr -> None (builds) or why not


def _probe(dev) -> Optional[str]:
    """None when the device builds a trivial kernel, else the build error (cached)."""
    cl = pyopencl()
    key = dev.int_ptr
    if key not in _working:
        try:
            ctx, _ = context_of(dev)
            with quiet_build():
                cl.Program(ctx, "__kernel void lbgen_probe(__global float *a) { a[0] = 1.0f; }").build(devices=[dev])
            _working[key] = None
        except cl.Error as e:
            _working[key] = " ".join(str(e).split())[:300]
    return _working[key]


def _first_working_device(found):
    """The first device that can build kernels (a device whose compiler fails is passed over)."""
    failures = []
    for entry in found:
        why = _probe(entry[3])
        if why is None:
            return entry[3]
        failures.append(f"{_describe(entry)}: {why}")
    raise BackendUnavailable("OpenCL backend: no device can build kernels here: " + "; ".join(failures))


def available() -> Tuple[bool, str]:
    found = devices()
    return True, "OpenCL via pyopencl: " + "; ".join(_describe(e) for e in found)


def context_of(dev):
    cl = pyopencl()
    key = dev.int_ptr
    with _lock:
        if key not in _contexts:
            ctx = cl.Context([dev])
            _contexts[key] = (ctx, cl.CommandQueue(ctx, dev))
        return _contexts[key]


#: the kernels' index arithmetic runs in 32 bits (``-DLBGEN_INDEX32``) when the lattice buffer's
#: elements plus one work-group (a launch rounded up) stay below this
INDEX32_LIMIT = 2 ** 31


#: the option of a build below -O2 ($LBGEN_OPT_LEVEL, as the test suite sets it): the runtime's
#: optimiser off.  Intel's CPU runtime compiles the D2Q37 kernels in 1 s instead of 11 s, and
#: runs them 1.3-2x slower.  A strict build has the same bits either way
#: (tests/backends/test_opencl.py); a default one may differ in the last bits (contraction)
UNOPTIMISED = "-cl-opt-disable"


def build_options(strict: bool = False, single: bool = False, dev=None, elements: Optional[int] = None) -> tuple:
    """The build options of a program: ``-cl-opt-disable`` where ``$LBGEN_OPT_LEVEL`` is below
    -O2 (the test suite's correctness builds; runs keep the runtime's optimiser); ``-DLBGEN_STRICT`` (and correctly rounded single
    division and sqrt where the device offers them) when ``strict``; ``-DLBGEN_INDEX32`` when
    the lattice buffer holds ``elements`` with room for a launch rounded up to the device's
    largest work-group below INDEX32_LIMIT (the same results: indices only; on Intel's CPU
    runtime, which runs the work-items of a group in SIMD lanes, 16 gathers per instruction
    instead of 8; docs/performance.md, "OpenCL on CPU runtimes")."""
    opts = list(STRICT_OPTIONS) if strict else []
    if optimisation("-O3") in UNCONTRACTED_LEVELS:
        opts.append(UNOPTIMISED)
    if elements is not None and dev is not None and int(elements) + int(dev.max_work_group_size) < INDEX32_LIMIT:
        opts.append("-DLBGEN_INDEX32")
    if strict and single and dev is not None:
        cl = pyopencl()
        if dev.single_fp_config & cl.device_fp_config.CORRECTLY_ROUNDED_DIVIDE_SQRT:
            opts.append("-cl-fp32-correctly-rounded-divide-sqrt")
    return tuple(opts)


def device_identity(dev) -> tuple:
    """What a program binary depends on besides its source and options: the runtime (platform
    name and version) and the device (name, OpenCL version, driver version).  One CPU is a
    device of several runtimes under the same name (pocl, Intel's), each with binaries of its own."""
    platform = dev.platform
    return (platform.name.strip(), platform.version.strip(), dev.name.strip(), dev.version.strip(),
            dev.driver_version.strip())


#: the built program's binary in its cache entry (``write_checked``: with its SHA-256)
BINARY = "program.bin"


def _from_binary(cl, ctx, dev, path, options: tuple):
    """The program built from the cached binary at ``path``, or None where there is none or the
    runtime refuses it (a damaged entry is also warned about): the caller builds from source."""
    try:
        binary = read_checked(path)
    except DamagedEntry as e:
        warn_rebuilt("opencl", path, e.reason)
        return None
    if binary is None:
        return None
    try:
        with quiet_build():
            return cl.Program(ctx, [dev], [binary]).build(options=list(options), devices=[dev])
    except (cl.Error, RuntimeError) as e:     # a binary this runtime no longer takes: a source build
        warn_rebuilt("opencl", path, f"was refused by the runtime ({' '.join(str(e).split())[:120]})")
        return None


def build(source, dev, options: tuple):
    """The built cl.Program for a source on a device: cached in this process, and on disk as
    the runtime's binary under ``<cache>/opencl/<key>/`` (key: the source digest, the options
    and ``device_identity``), so that another process loads it instead of compiling; a file
    lock makes concurrent processes (xdist workers, MPI ranks) compile it once.  A binary the
    runtime refuses is replaced by a source build.  Only source builds go into the build log."""
    from filelock import FileLock
    cl = pyopencl()
    if source.spec.backend != "opencl":
        raise ValueError(f"the OpenCL backend compiles OpenCL sources, not {source.spec.backend!r}")
    bad = [o for o in options if o in FORBIDDEN_OPTIONS]
    if bad:
        raise ValueError(f"OpenCL backend: build options {bad} change results and are not allowed")
    ctx, _ = context_of(dev)
    key = (dev.int_ptr, source.digest, options)
    with _lock:
        if key in _programs:
            return _programs[key]
    directory = cache_dir("opencl") / digest(source.digest, options, device_identity(dev))
    directory.mkdir(parents=True, exist_ok=True)
    with FileLock(str(directory) + ".lock"):
        program = _from_binary(cl, ctx, dev, directory / BINARY, options)
        if program is None:
            program = _from_source(cl, ctx, dev, source, options, directory)
    with _lock:
        _programs[key] = program
    return program


def _from_source(cl, ctx, dev, source, options: tuple, directory):
    """Compile ``source`` (pyopencl's own binary cache left out: this backend keeps its own)
    and store the binary; CompileError with the runtime's log on failure."""
    cl_file = directory / source.main_file
    if not cl_file.exists():
        for name, text in source.files.items():
            atomic_write_bytes(directory / name, text.encode())
    program = cl.Program(ctx, source.text)
    started = time.perf_counter()
    try:
        with quiet_build():
            program.build(options=list(options), devices=[dev], cache_dir=False)
        record_build("opencl", directory.name, source.main_file, f"OpenCL ({dev.name.strip()})",
                     time.perf_counter() - started)
    except cl.Error as e:
        try:
            with quiet_build():
                log = program.get_build_info(dev, cl.program_build_info.LOG)
        except Exception:
            log = ""
        log = log or str(e)
        atomic_write_bytes(directory / "build.log", log.encode())
        raise CompileError(f"OpenCL failed to build the generated file {cl_file} for {dev.name.strip()}\n"
                           f"(options: {' '.join(options) or '(none)'}; log also in {directory / 'build.log'})\n"
                           f"{log}") from None
    binaries = program.binaries
    if binaries and binaries[0]:
        write_checked(directory / BINARY, bytes(binaries[0]))
    return program


def is_cpu_device(device=None) -> bool:
    """Whether the device ``device`` selects is a CPU (its runtime runs work-items on the host's cores)."""
    return bool(int(select_device(device).type) & int(pyopencl().device_type.CPU))


def describe(device=None) -> str:
    """The OpenCL device a run would use, with its platform (one CPU may be a device of several
    runtimes, each with kernels of its own speed: ``lbgen tune`` keeps a choice per device)."""
    dev = select_device(device)
    return f"{dev.name.strip()} ({dev.platform.name.strip()})"
