"""lbgen: a JIT code generator for lattice Boltzmann kernels (C/OpenMP, OpenCL, CUDA).

The layers are sub-packages (docs/architecture.md): ``model`` (the physics, symbolic),
``codegen`` (specs, layouts, templates -> source text), ``lbgen.backends`` (runtimes that
compile and run it), ``simulation`` (a lattice on one or more backends), ``perf`` (timing,
tuning, performance models), ``parallel`` (MPI), ``run`` (run descriptions, set-ups, the
driver), ``output`` (files, pictures, movies), ``reference`` (the NumPy oracle) and ``cli``.

The names most scripts need are importable from here (loaded on first use, so that
``import lbgen`` stays light): ``Simulation`` (any D: ``Simulation(lx, ly)``,
``Simulation(lx, ly, lz)``), ``Walls``, ``Simulation3D`` (the same class's former 3D name, kept
for one release), ``RunConfig``, ``Run`` (2D and 3D runs).
"""
__version__ = "0.1.0"

_LAZY = {"Simulation": "lbgen.simulation.runner", "Walls": "lbgen.simulation.runner",
         "Simulation3D": "lbgen.simulation.runner",
         "RunConfig": "lbgen.run.config", "Run": "lbgen.run.driver"}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'lbgen' has no attribute {name!r}")
