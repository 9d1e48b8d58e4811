"""nvcc without a GPU: compile emitted ``.cu`` text and read ptxas' resource report.

``compile_cu`` runs ``nvcc -cubin`` (or ``-ptx``) with ``-Xptxas -v`` and parses, per
kernel, the registers, stack frame and spill stores/loads that ptxas prints.  Results
(report, log, and the cubin/ptx bytes) are cached on disk under ``<cache>/nvcc/`` keyed
by the source text, the flags and nvcc's version, so warm runs cost nothing.  A missing
nvcc raises ``BackendUnavailable``; a failed compile raises ``CompileError`` with the
log and the path of the source that failed.
"""
from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Dict, Iterable, Optional, Sequence, Tuple, Union

from lbgen.system.cache import cached_pickle, digest
from lbgen.backends.build import BackendUnavailable, CompileError, build_library

STRICT_FLAGS = ("--fmad=false",)


def find_nvcc() -> str:
    """Path of nvcc: $NVCC, then PATH, then /usr/local/cuda*/bin (newest first)."""
    env = os.environ.get("NVCC")
    if env:
        if shutil.which(env):
            return shutil.which(env)
        raise BackendUnavailable(f"CUDA: NVCC={env!r} is not an executable")
    found = shutil.which("nvcc")
    if found:
        return found
    cuda_home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    candidates = [os.path.join(cuda_home, "bin", "nvcc")] if cuda_home else []
    candidates += sorted(glob.glob("/usr/local/cuda*/bin/nvcc"), reverse=True)
    for c in candidates:
        if os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    raise BackendUnavailable("CUDA: nvcc not found (not on PATH, $NVCC, $CUDA_HOME or /usr/local/cuda*/bin); "
                             "install the CUDA toolkit to compile .cu kernels")


@lru_cache(maxsize=None)
def nvcc_version(nvcc: str) -> str:
    out = subprocess.run([nvcc, "--version"], capture_output=True, text=True)
    lines = [l for l in out.stdout.splitlines() if l.strip()]
    return lines[-1] if lines else nvcc


def available() -> Tuple[bool, str]:
    try:
        nvcc = find_nvcc()
    except BackendUnavailable as e:
        return False, str(e)
    return True, f"nvcc {nvcc} ({nvcc_version(nvcc)})"


@dataclass
class KernelResources:
    """What ptxas reports for one kernel on one architecture."""
    registers: int = 0
    stack: int = 0             # bytes of stack frame
    spill_stores: int = 0      # bytes
    spill_loads: int = 0       # bytes
    shared: int = 0            # bytes of static shared memory

    def as_dict(self) -> dict:
        return {"registers": self.registers, "stack": self.stack, "spill_stores": self.spill_stores,
                "spill_loads": self.spill_loads, "shared": self.shared}


@dataclass
class CompileResult:
    arch: str
    strict: bool
    output: str                                     # "cubin" or "ptx"
    kernels: Dict[str, KernelResources] = field(default_factory=dict)
    log: str = ""
    binary: bytes = b""                             # the cubin or ptx text (bytes)
    source_path: str = ""                           # the cached .cu that was compiled

    def report(self) -> Dict[str, dict]:
        return {name: res.as_dict() for name, res in self.kernels.items()}


_ENTRY = re.compile(r"Compiling entry function '([^']+)' for '([^']+)'")
_PROPS = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers")
_SMEM = re.compile(r"(\d+) bytes smem")


def parse_ptxas(log: str) -> Dict[str, Dict[str, KernelResources]]:
    """{arch: {kernel: KernelResources}} from the text of `ptxas -v` (as relayed by nvcc)."""
    out: Dict[str, Dict[str, KernelResources]] = {}
    current: Optional[KernelResources] = None
    for line in log.splitlines():
        m = _ENTRY.search(line)
        if m:
            current = out.setdefault(m.group(2), {}).setdefault(m.group(1), KernelResources())
            continue
        if current is None:
            continue
        m = _PROPS.search(line)
        if m:
            current.stack, current.spill_stores, current.spill_loads = map(int, m.groups())
            continue
        m = _USED.search(line)
        if m:
            current.registers = int(m.group(1))
            s = _SMEM.search(line)
            if s:
                current.shared = int(s.group(1))
    return out


def _source_files(source) -> Tuple[Dict[str, str], str]:
    """({file name: text}, name of the .cu) from .cu text or a CUDA KernelSource (whose
    ``.cu`` includes its ``.cuh``)."""
    if isinstance(source, str):
        return {"kernels.cu": source}, "kernels.cu"
    if getattr(source, "spec", None) is not None and source.spec.backend != "cuda":
        raise ValueError(f"nvcc compiles CUDA sources, not {source.spec.backend!r}")
    return dict(source.files), source.main_file


def _build(files: Dict[str, str], name: str, arch: str, strict: bool, output: str, flags: Tuple[str, ...],
           nvcc: str, key: str) -> CompileResult:
    """nvcc through the one compile cache (hash-keyed folder, file lock, atomic rename)."""
    target_name = f"kernels.{output}"
    target = build_library(
        "nvcc", (key,), files,
        lambda folder, out: [nvcc, f"-{output}", f"-arch={arch}", "-Xptxas", "-v", *flags, "-o", out, folder / name],
        name, f"nvcc ({arch})", library=target_name)
    log = (target.parent / "build.log").read_text()
    kernels = parse_ptxas(log).get(arch, {})
    if output == "cubin" and not kernels:
        raise CompileError(f"nvcc compiled {target.parent / name} for {arch} but ptxas reported no kernels\n{log}")
    return CompileResult(arch=arch, strict=strict, output=output, kernels=kernels, log=log,
                         binary=target.read_bytes(), source_path=str(target.parent / name))


def compile_cu(source: Union[str, object], arch: str = "sm_90", strict: bool = False, output: str = "cubin",
               flags: Sequence[str] = ("-O3",)) -> CompileResult:
    """Compile .cu text (or a CUDA KernelSource) with nvcc for one architecture.

    output="cubin" runs ptxas and fills ``result.kernels`` (registers, spills per kernel);
    output="ptx" stops at PTX (no ptxas, so no resource figures).  strict adds
    --fmad=false (no FMA contraction).  Cached on disk.
    """
    if output not in ("cubin", "ptx"):
        raise ValueError(f"output must be 'cubin' or 'ptx', not {output!r}")
    if not re.fullmatch(r"(sm|compute)_\d+[a-z]?", arch):
        raise ValueError(f"arch {arch!r} is not like 'sm_90'")
    files, name = _source_files(source)
    nvcc = find_nvcc()
    all_flags = tuple(flags) + (STRICT_FLAGS if strict else ())
    key = digest(sorted(files.items()), arch, output, all_flags, nvcc_version(nvcc))
    return cached_pickle("nvcc-results", key,
                         lambda: _build(files, name, arch, strict, output, all_flags, nvcc, key))


def compile_many(jobs: Iterable[Tuple], strict: bool = False, workers: Optional[int] = None):
    """compile_cu over (source, arch) pairs, or (source, arch, strict) triples, in parallel processes
    (nvcc is a subprocess, so threads suffice); returns the results in order."""
    jobs = [tuple(j) + (strict,) * (3 - len(j)) for j in jobs]
    workers = workers or max(1, min(len(jobs), os.cpu_count() or 1))
    with ThreadPoolExecutor(workers) as pool:
        return list(pool.map(lambda j: compile_cu(j[0], j[1], strict=j[2]), jobs))


def ptxas_report(source, archs: Sequence[str] = ("sm_80", "sm_90"), strict: bool = False) -> Dict[str, Dict[str, dict]]:
    """Per-architecture, per-kernel ptxas figures of a CUDA source.

    Returns ``{arch: {kernel_name: {"registers": int, "stack": int, "spill_stores": int,
    "spill_loads": int, "shared": int}}}`` (sizes in bytes), archs in the given order and
    kernels in source order.  Raises BackendUnavailable without nvcc, CompileError on failure.
    """
    files, name = _source_files(source)
    text = files[name]
    order = re.findall(r"__global__\s+void\s+(?:__launch_bounds__\([^)]*\)\s+)?(\w+)\s*\(", text)
    results = compile_many([(source, a) for a in archs], strict=strict)
    report = {}
    for arch, res in zip(archs, results):
        rep = res.report()
        report[arch] = {k: rep[k] for k in order if k in rep}
        report[arch].update({k: v for k, v in rep.items() if k not in report[arch]})
    return report


def format_report(report: Dict[str, Dict[str, dict]]) -> str:
    """Plain-text table of a ptxas_report result (for the CLI)."""
    lines = [f"{'arch':7} {'kernel':28} {'regs':>5} {'stack':>6} {'spill st':>9} {'spill ld':>9}"]
    for arch, kernels in report.items():
        for name, r in kernels.items():
            lines.append(f"{arch:7} {name:28} {r['registers']:5d} {r['stack']:6d} "
                         f"{r['spill_stores']:9d} {r['spill_loads']:9d}")
    return "\n".join(lines)
