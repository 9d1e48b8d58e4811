"""Storage apart from the arithmetic (lbgen.codegen.storage) on the GPU dialects, OpenCL and CUDA
(the host shim here; CuPy on a GPU, where one is present): the kernels of templates/gpu/kernels.j2
hold fp32 (double arithmetic), FluidX3D's FP16S (as the half's 16 bits, converted by P_dec16s /
P_enc16s with IEEE's rounding to nearest even; Lehmann et al., Phys. Rev. E 106, 015308 (2022))
and fp16c (the C kernels' P_dec16c / P_enc16c), and convert on every load and store as the C
kernels do: strict builds of both give the same stored bits after a channel with a velocity
inlet, an outflow, walls and a Bouzidi body (the C runs are the fp64-checked ones of
test_storage_boundaries.py), and the same force on the body (single arithmetic: within float's
rounding, the GPU kernels sum the links' momentum in float)."""
from __future__ import annotations

import numpy as np
import pytest

from helpers import require_runtime
from lbgen.geometry import Bodies, Sphere
from lbgen.simulation.runner import Simulation


U_IN = 0.03


def channel(backend, shape, precision, storage, layout):
    D = len(shape)
    sim = Simulation(*shape, velocity_set="d2q9" if D == 2 else "d3q19", backend=backend, strict=True,
                     layout=layout, vl=4 if layout in ("csoa", "caosoa") else None, tau=0.7, threads=1,
                     precision=precision, storage=storage, inlet={"x-low": U_IN}, outflow="x-high", walls="y",
                     bodies=Bodies(shape, [Sphere(tuple(s // 2 for s in shape), 2.2)]), body_bc="bouzidi")
    sim.set_fields(1.0, U_IN, *[0.0] * (D - 1), 1.0)
    sim.step(20)
    return sim


#: every (compute precision, storage) pair; 2D takes them all in two layouts, 3D shares them out
#: between two layouts (eight compiles a case: two such 3D cases took a minute each)
PAIRS = (("double", "fp16s"), ("double", "fp16c"), ("double", "fp32"), ("single", "fp16s"))


@pytest.mark.parametrize("runtime", ["opencl", "cuda-shim", "cuda"])
@pytest.mark.parametrize("shape, layout, pairs", [((16, 8), "soa", PAIRS),
                                                  pytest.param((16, 8), "caosoa", PAIRS, marks=pytest.mark.slow),
                                                  pytest.param((12, 8, 8), "aos", PAIRS[0::2], marks=pytest.mark.slow),
                                                  pytest.param((12, 8, 8), "csoa", PAIRS[1::2], marks=pytest.mark.slow)])
def test_gpu_storage_is_the_c_storage_bit_for_bit(runtime, shape, layout, pairs):
    require_runtime(runtime)
    for precision, storage in pairs:
        c, cl = channel("c", shape, precision, storage, layout), channel(runtime, shape, precision, storage, layout)
        a, b = c.state(), cl.state()
        assert a.dtype == b.dtype == {"fp16s": np.float16, "fp16c": np.uint16, "fp32": np.float32}[storage]
        assert np.isfinite(c.program.codec.decode(a)).all()
        np.testing.assert_array_equal(a.view(np.uint8), b.view(np.uint8), err_msg=f"{precision} {storage}")
        fa, fb = c.forces()["body1"], cl.forces()["body1"]
        assert np.abs(fa).max() > 1e-2
        if precision == "double":
            np.testing.assert_array_equal(fa, fb)
        else:
            np.testing.assert_allclose(fb, fa, rtol=0, atol=1e-6 * np.abs(fa).max())
        if precision == "double":           # unpack (decode) and fields in the same arithmetic: the same numbers
            for k, v in c.fields().items():
                np.testing.assert_array_equal(v, cl.fields()[k], err_msg=k)
