"""The session's compiled programs: one cache for every test that compiles a kernel.

``PROGRAMS(spec, shape, runtime=None, *, strict=False, **options)`` compiles ``spec`` for a lattice
``shape`` ((LX, LY) or (LX, LY, LZ)) on a runtime (``c``, ``opencl``, ``cuda``, ``cuda-shim``;
default the spec's backend) once per session and hands the same program out again for the same
key (the spec, the shape, the runtime, strictness, every compile option: ``flags``,
``threads``, ``block_size``, ``device``, and the build level ``$LBGEN_OPT_LEVEL``).  On every hand-out the program's state is made clean
again: its kernel-call log ``calls`` is emptied, and a C program's OpenMP thread count and its
library's streaming-store switch (process-wide settings that another program or test may have
changed) are set back to the ones it was compiled with, and its boundaries cleared (periodic).  Buffers are the caller's (``allocate``, ``upload``): a program holds no lattice
state.  The ``programs`` fixture of tests/conftest.py hands out this cache; helpers that are
not fixtures (support3d, wall_support) use it directly.  ``compiles`` counts the programs made.
"""
from __future__ import annotations

import os
from typing import Optional

from lbgen.codegen.spec import KernelSpec


def _frozen(value):
    return tuple(value) if isinstance(value, (list, tuple)) else value


class ProgramCache:
    def __init__(self):
        self._memo: dict = {}
        self.compiles = 0

    def __call__(self, spec: KernelSpec, shape, runtime: Optional[str] = None, *, strict: bool = False, **options):
        from lbgen.backends import spec_backend
        runtime = runtime or spec.backend
        if spec_backend(runtime) != spec.backend:
            raise ValueError(f"the {runtime} runtime runs {spec_backend(runtime)} sources, not {spec.backend!r}")
        shape = tuple(int(n) for n in shape)
        key = (spec, shape, runtime, bool(strict), tuple(sorted((k, _frozen(v)) for k, v in options.items())),
               os.environ.get("LBGEN_OPT_LEVEL"))     # the build level (tests/conftest.py quick_build)
        prog = self._memo.get(key)
        if prog is None:
            prog = self._memo[key] = _compile(spec, shape, runtime, strict, options)
            self.compiles += 1
        if runtime == "c":          # the library's process-wide switches, as this program set them
            from lbgen.system.limits import omp_env_threads
            prog.threads = prog._fn("set_threads")(options.get("threads") or omp_env_threads() or 1)
            prog._fn("set_streaming_stores")(int(prog.streaming_stores))
        if prog.bounds is not None:  # a periodic lattice again (set_boundaries)
            prog.set_boundaries()
        prog.calls.clear()          # last: the switches above are calls too
        return prog

    def of(self, runtime: str, shape, strict: bool = False, options: Optional[dict] = None, **spec_fields):
        """The program of ``KernelSpec(backend=<the runtime's source>, **spec_fields)``."""
        from lbgen.backends import spec_backend
        return self(KernelSpec(backend=spec_backend(runtime), **spec_fields), shape, runtime, strict=strict,
                    **(options or {}))


def _compile(spec, shape, runtime, strict, options):
    from lbgen.backends import compile as compile_program
    from lbgen.codegen.render import generate
    return compile_program(runtime, generate(spec), shape, strict=strict, **options)


#: the one cache of the session
PROGRAMS = ProgramCache()
