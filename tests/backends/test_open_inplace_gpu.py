"""Open faces in place on the GPU kernels (templates/gpu/inplace.j2: the AA pattern; the snapshot
of the planes next to the outlets, outflows and slips that aa_lid_rho takes behind the densities,
as the C kernels' snap_): on OpenCL and CUDA (the .cu through the host shim), 2D and 3D, the state
after an even and an odd count of steps equals the independent oracle (lbgen.reference.open:
Ladd's velocity bounce-back inlet, Krueger et al. 2017 eq. 5.53's anti-bounce-back outlet, the
zero-gradient outflow, specular free slip; on the thermal sets, hops of 3, the equilibrium inlet at
an inflow temperature, the face layer's and the mirror image's populations) to 1e-12."""
from __future__ import annotations

import numpy as np
import pytest

import test_open_faces as hop1
import test_open_thermal as hop3
from lbgen.codegen.spec import KernelSpec

#: (D, thermal, layout, vl): the hop-1 sets (D2Q9, D3Q19) and the thermal ones (D2Q37, D3Q39)
CASES = [(2, False, "caosoa", 4), (3, False, "caosoa", 4), (2, True, "soa", None), (3, True, "caosoa", 4)]
FAST = {(2, False), (3, False), (2, True)}


def _case(D, thermal, steps):
    """(set, lattice shape, initial state, set_boundaries keywords, the oracle's state after ``steps``)."""
    if thermal:
        return (hop3.NAMES[D], hop3.SHAPES[D], *hop3.case_inputs(D, "inlet-outflow", steps=steps))
    name, case = {2: ("d2q9", "inlet-outlet"), 3: ("d3q19", "mixed")}[D]
    return (name, hop1.SHAPES[D], *hop1.case_inputs(D, name, case, steps=steps))


@pytest.mark.parametrize("D, thermal, layout, vl", [
    pytest.param(*c, marks=() if c[:2] in FAST else (pytest.mark.slow,), id=f"{c[0]}d{'-thermal' if c[1] else ''}")
    for c in CASES])
@pytest.mark.parametrize("runtime", ["opencl", "cuda-shim"])
def test_gpu_inplace_open_faces_match_the_oracle(programs, runtime, D, thermal, layout, vl):
    from lbgen.backends import available
    ok, why = available(runtime)
    if not ok:
        pytest.skip(why)
    for steps in (2, 3):                    # an even count (natural after aa_odd), an odd one
        name, shape, f0, bc, want = _case(D, thermal, steps)
        spec = KernelSpec(backend="cuda" if runtime == "cuda-shim" else runtime, layout=layout, vl=vl,
                          velocity_set=name, collision="bgk", streaming="inplace", open_faces=thermal)
        prog = programs(spec, shape, runtime)
        prog.set_boundaries(**bc)
        a = prog.pack(f0)
        params = {"tau": hop1.TAU, **{k: 0.0 for k in ("ax", "ay", "az")[:D]}}
        before = prog.calls["aa_lid_rho"]
        for step in range(steps):
            if step % 2 == 0:
                prog.step_halo(a)
            prog.step_inplace(a, step % 2 == 1, params)
        if steps % 2:
            prog.aa_normalise(a)            # after an even step: the other parity's slots, made natural
        err = np.abs(prog.unpack(a) - want).max()
        assert err < 1e-12, f"{runtime} {name} in place, {steps} steps: max error {err:.3g}"
        assert prog.calls["aa_lid_rho"] - before == steps    # the densities and the snapshot before each step
