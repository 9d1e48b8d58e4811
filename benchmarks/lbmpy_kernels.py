"""lbmpy's generated stream-collide kernels, timed by both lbmpy comparisons
(``benchmarks/lbmpy_compare.py`` in 2D, ``benchmarks/bench3d.py --lbmpy`` in 3D): the one
home of how lbmpy's kernel is built, so the two scripts import it and not each other.

Needs lbmpy (pip install lbmpy); imported lazily, so importing this module does not.
"""
from __future__ import annotations

import numpy as np


def _srt_any_moments(stencil, omega: float):
    from collections import OrderedDict

    import sympy as sp
    from lbmpy.methods.creationfunctions import create_with_continuous_maxwellian_equilibrium
    from lbmpy.moments import MOMENT_SYMBOLS
    x, y = MOMENT_SYMBOLS[:2]
    chosen, rows = [], []
    for degree in range(13):
        for a in range(degree + 1):
            row = [float(cx ** a * cy ** (degree - a)) for cx, cy in stencil]
            if np.linalg.matrix_rank(np.array(rows + [row])) > len(rows):
                rows.append(row)
                chosen.append(x ** a * y ** (degree - a) if degree else sp.Integer(1))
        if len(chosen) == stencil.Q:
            break
    rates = OrderedDict((m, omega) for m in chosen)
    return create_with_continuous_maxwellian_equilibrium(stencil, rates, compressible=True, equilibrium_order=2)


#: lbmpy's counterpart of an lbgen operator (lbgen name -> lbmpy Method name, extra LBMConfig keywords):
#: BGK -> SRT; cumulant -> CUMULANT, lbmpy's polynomial cumulants (Geier et al. 2015's combinations:
#: the trace and the deviators of the second order relaxed apart, as lbgen's cumulant does; MONOMIAL_CUMULANT
#: relaxes the monomial cumulants one by one), with Geier's Galilean correction of the second order as lbgen's
#: (``galilean=False`` in ``lbmpy_kernel`` drops it: lbmpy's default, less work)
LBMPY_METHODS = {"bgk": ("SRT", {}), "cumulant": ("CUMULANT", {"galilean_correction": True})}


#: lbmpy's rate groups of its D3Q27 cumulant method (shear, bulk, the three third-order groups, the five
#: of orders 4 to 6), as lbgen's cumulant parameters name them
CUMULANT_RATE_GROUPS = ("omega_shear", "omega_bulk") + ("omega3",) * 3 + ("omega4",) * 5


def lbmpy_kernel(stencil_name: str, shape, threads: int, tau: float, cse: bool = False, operator: str = "bgk",
                 galilean: bool = True, runtime_rates: bool = False):
    """(kernel call, description) for lbmpy's stream-collide kernel of one stencil on a
    lattice of ``shape`` (2 or 3 sizes); ``cse``: lbmpy's global and population common
    subexpression elimination (LBMOptimisation cse_global, cse_pdfs); ``operator``: the lbgen
    operator whose lbmpy counterpart (``LBMPY_METHODS``) is built, shear rate 1/tau, lbmpy's
    defaults (1, folded in as constants) for the other rates; ``runtime_rates``: every rate a
    kernel argument instead (as lbgen's kernels take them: nothing folded; shear 1/tau, the
    others 1)."""
    import pystencils as ps
    from lbmpy import LBMConfig, LBMOptimisation, LBStencil, Method, Stencil, create_lb_method, create_lb_function
    from pystencils.codegen.config import CpuOptions, OpenMpOptions, VectorizationOptions

    stencil = LBStencil(getattr(Stencil, stencil_name))
    q = stencil.Q
    reach = max(max(abs(c) for c in v) for v in stencil)
    dim = len(shape)
    src_f, dst_f = ps.fields(f"src({q}), dst({q}): double[{dim}D]", layout="fzyx")
    if operator not in LBMPY_METHODS:
        raise ValueError(f"no lbmpy counterpart of lbgen's {operator!r} here; one of {sorted(LBMPY_METHODS)}")
    method_name, extra = LBMPY_METHODS[operator]
    extra = {k: v for k, v in extra.items() if galilean or k != "galilean_correction"}
    rates = {"relaxation_rate": 1.0 / tau}
    arguments = {}
    if runtime_rates:
        import sympy as sp
        names = CUMULANT_RATE_GROUPS if operator == "cumulant" else ("omega_shear",)
        arguments = {n: (1.0 / tau if n == "omega_shear" else 1.0) for n in names}
        symbols = [sp.Symbol(n) for n in names]
        rates = {"relaxation_rates": symbols} if len(symbols) > 1 else {"relaxation_rate": symbols[0]}
    lbm_config = LBMConfig(stencil=stencil, method=getattr(Method, method_name), compressible=True, **rates,
                           **extra)
    try:
        method = create_lb_method(lbm_config=lbm_config)
    except NotImplementedError:
        # lbmpy has no default moment set for D2V37: SRT relaxes every moment alike, so any
        # 37 independent monomials do; second-order (isothermal) continuous Maxwellian equilibrium
        method = _srt_any_moments(stencil, 1.0 / tau)
        lbm_config = LBMConfig(stencil=stencil, lb_method=method, compressible=True)
    tried = []
    kernel = None
    targets = [t for t in ("CurrentCPU", "X86_AVX512", "X86_AVX") if hasattr(ps.Target, t)] + ["GenericCPU"]
    for target in targets:
        vectorize = target != "GenericCPU"
        cpu = CpuOptions(openmp=OpenMpOptions(enable=True, num_threads=threads))
        if vectorize:
            cpu = CpuOptions(openmp=OpenMpOptions(enable=True, num_threads=threads),
                             vectorize=VectorizationOptions(enable=True, assume_inner_stride_one=True,
                                                            use_nontemporal_stores=True))
        config = ps.CreateKernelConfig(target=getattr(ps.Target, target), ghost_layers=reach, cpu=cpu)
        try:
            kernel = create_lb_function(lbm_config=lbm_config,
                                        lbm_optimisation=LBMOptimisation(symbolic_field=src_f,
                                                                         symbolic_temporary_field=dst_f,
                                                                         cse_global=cse, cse_pdfs=cse),
                                        config=config)
            tried.append(f"{target}: ok")
            break
        except Exception as e:   # noqa: BLE001 - report and fall back to the scalar kernel
            tried.append(f"{target}: {type(e).__name__}: {str(e).splitlines()[0][:100]}")
    if kernel is None:
        raise RuntimeError("lbmpy could not build a kernel: " + "; ".join(tried))
    padded = [n + 2 * reach for n in shape]
    weights = np.array([float(w) for w in method.weights])
    zero_centred = bool(getattr(method, "zero_centered_pdfs", False))
    arrays = []
    for _ in range(2):
        a = np.empty((q,) + tuple(reversed(padded)))
        # a fluid at rest: f = w, stored as f - w = 0 by lbmpy's zero-centred (well-conditioned) methods
        a[...] = 0.0 if zero_centred else weights.reshape((q,) + (1,) * dim)
        arrays.append(a.transpose(tuple(range(dim, -1, -1))))   # index (x, y[, z], f), x fastest: fzyx
    state = {"i": 0}

    def call():
        a, b = arrays[state["i"]], arrays[1 - state["i"]]
        kernel(src=a, dst=b, **arguments)
        state["i"] ^= 1

    label = method_name + (" galilean" if extra.get("galilean_correction") else "") + \
        (" runtime rates" if runtime_rates else "")
    return call, f"lbmpy {label} {stencil_name}{' cse' if cse else ''} ({'; '.join(tried)})"
