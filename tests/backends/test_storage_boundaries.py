"""Storage apart from the arithmetic (lbgen.codegen.storage) meets the open faces
(lbgen.simulation.open_faces) and the bodies (lbgen.simulation.bodies): every boundary rule and
the body link kernels read and write populations through the storage's conversion (a stored value
is f - w_p, scaled for fp16s: a rule that read it raw, or encoded with the wrong w_p, gives NaN or
a force off by O(w_p)).  A sweep over storage x boundary kinds, one lattice per D, each storage one
compiled program for both channels: a channel with a velocity inlet (Ladd's velocity bounce-back),
a zero-gradient outflow or an anti-bounce-back pressure outlet, bounce-back and free-slip walls and
a disc/sphere of interpolated (Bouzidi, Firdaouss & Lallemand 2001) or half-way bounce-back,
against the fp64 run of the same flow: fp32 storage of double arithmetic within ~1e-9, the 16-bit
formats within their rounding (FluidX3D's FP16S: Lehmann et al., Phys. Rev. E 106, 015308 (2022),
where the deviations are kept to 2^-11 relative), the momentum-exchange force (Ladd 1994) on the
body finite and within the same relative bounds."""
from __future__ import annotations

import numpy as np
import pytest

from lbgen.geometry import Bodies, Sphere
from lbgen.simulation.runner import Simulation

U_IN = 0.03
#: per D: the lattice, the set, the layout of each storage (every layout meets a narrow storage), steps
CASES = {2: ((40, 20), "d2q9", 160), 3: ((20, 12, 12), "d3q19", 60)}
STORAGES = (("double", None, "soa"), ("mixed", None, "aos"), ("double", "fp16s", "caosoa"),
            ("single", "fp16s", "soa"), ("double", "fp16c", "csoa"))
#: the largest difference from the fp64 run: |u|, |rho - rho_fp64| and the force, relative to the fp64 force
BOUND = {"fp32": (2e-8, 2e-8, 1e-6), "fp16s": (2e-4, 2e-4, 3e-3), "fp16c": (2e-4, 2e-4, 3e-3)}


def channel(D, kind, precision, storage, layout):
    """The channel of ``kind`` ("outflow": Bouzidi body, outflow; "outlet": half-way body, pressure
    outlet, slip walls) after its steps: fields and forces."""
    shape, vs, steps = CASES[D]
    centre = tuple(s // 3 if a == 0 else s // 2 for a, s in enumerate(shape))
    bodies = Bodies(shape, [Sphere(centre, 3.2)])
    walls = "y" if D == 2 else "yz"
    kw = dict(outflow="x-high", walls=walls, body_bc="bouzidi") if kind == "outflow" else \
        dict(outlet={"x-high": 1.0}, slip=walls, body_bc="halfway")
    sim = Simulation(*shape, velocity_set=vs, layout=layout, vl=4 if layout in ("csoa", "caosoa") else None,
                     tau=0.7, threads=1, precision=precision, storage=storage, inlet={"x-low": U_IN},
                     bodies=bodies, **kw)
    sim.set_fields(1.0, U_IN, *[0.0] * (D - 1), 1.0)
    sim.step(steps)
    return sim.fields(), sim.forces()["body1"], sim


@pytest.mark.parametrize("D", [2, 3])
def test_every_storage_keeps_the_open_faces_and_the_bodies(D):
    """Both channels in each storage against fp64 (measured, 2D / 3D: fp32 storage 4.6e-9 / 2.8e-9 in u
    of an inlet at 0.03, fp16s 4.0e-5 / 2.1e-5, fp16c 1.9e-5 / 1.0e-5; forces 1.1e-7 / 2.1e-9,
    1.3e-3 / 2.1e-4, 1.4e-4 / 1.1e-4 relative); kernels that skipped the conversion (the bug this
    guards: the outflow and slip sources and the link kernels read stored values raw) gave NaN."""
    for kind in ("outflow", "outlet"):
        ref, f_ref, _ = channel(D, kind, *STORAGES[0])
        assert np.abs(ref["ux"]).max() > U_IN / 2 and np.abs(f_ref[0]) > 1e-4, kind     # a flow, a drag
        for precision, storage, layout in STORAGES[1:]:
            got, force, sim = channel(D, kind, precision, storage, layout)
            name = sim.program.codec.format.name
            b_u, b_rho, b_f = BOUND[name]
            fluid = ref["rho"] != 0
            d_u = max(float(np.abs(got[c] - ref[c])[fluid].max()) for c in ("ux", "uy", "uz")[:D])
            d_rho = float(np.abs(got["rho"] - ref["rho"])[fluid].max())
            d_f = float(np.abs(force - f_ref).max() / np.abs(f_ref).max())
            assert np.isfinite(force).all() and np.isfinite(got["ux"]).all(), (kind, name)
            assert d_u < b_u and d_rho < b_rho and d_f < b_f, (kind, precision, name, layout, d_u, d_rho, d_f)


def test_a_16bit_channel_with_a_body_resumes_bit_for_bit():
    """fp16c storage, inlet, outflow and a Bouzidi disc (the sweep's compiled program): a run restored
    from state() (the uint16 codes) at step 9 continues with the populations and the force of the
    run that never stopped."""
    _, _, a = channel(2, "outflow", "double", "fp16c", "csoa")       # stepped CASES[2] steps
    saved, t = a.state(), a.time_step
    assert saved.dtype == np.uint16
    a.step(9)
    _, _, b = channel(2, "outflow", "double", "fp16c", "csoa")
    b.step(5)            # elsewhere first: restore must replace the populations, not add to them
    b.restore(saved, t)
    b.step(9)
    np.testing.assert_array_equal(a.state(), b.state())
    np.testing.assert_array_equal(a.forces()["body1"], b.forces()["body1"])
    assert np.abs(a.forces()["body1"]).max() > 1e-4
