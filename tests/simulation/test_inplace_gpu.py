"""In-place streaming on the GPU kernels (templates/gpu/inplace.j2: the AA pattern of Bailey, Myre,
Walsh, Lilja & Pasaoglu, ICPP 2009, as the C kernels run it): on OpenCL (every installed platform:
Intel's CPU runtime, PoCL) and CUDA (the .cu text through the host shim), 2D and 3D, the state after
1..5 steps, even and odd counts, is the pull kernels' state bit for bit in strict builds, periodic
and with bounce-back walls, a moving lid and a solid block; a Simulation allocates one population
buffer on the device and steps to the C pull run's bits; every layout, precision and the 16-bit
storage formats run in the slow cases.  One compiled program per runtime and dimension (the
``programs`` fixture) carries the fast checks."""
from __future__ import annotations

import numpy as np
import pytest

import lbgen
from helpers import bounce_boundaries
from lbgen.codegen.spec import KernelSpec


def _opencl_devices():
    """'P:0' of the first device of every OpenCL platform that is installed (none: no OpenCL)."""
    try:
        from lbgen.backends.opencl import devices
        found = devices()
    except Exception:                       # no pyopencl or no platform: the CUDA shim runs alone
        return []
    seen = {}
    for p, d, platform, _ in found:
        seen.setdefault(p, (f"{p}:{d}", platform.name.strip()))
    return list(seen.values())


#: (runtime, OpenCL device or None, id)
RUNTIMES = [("opencl", dev, f"opencl-{name.split()[0]}") for dev, name in _opencl_devices()] + [
    ("cuda-shim", None, "cuda-shim")]
#: the fast cases: one program per runtime and dimension
FAST = {2: ("d2q9", "caosoa", 4, "double", (10, 16), None), 3: ("d3q19", "caosoa", 4, "double", (8, 6, 16), None)}
#: the slow ones: every layout, single precision and the 16-bit storages (OpenCL; CUDA stores the precision's own)
SLOW = [("d2q9", "soa", None, "single", (10, 16), None), ("d2q9", "aos", None, "double", (10, 16), None),
        ("d2q9", "csoa", 8, "single", (10, 16), "fp16c"), ("d3q19", "aos", None, "single", (6, 5, 16), None),
        ("d3q19", "soa", None, "single", (6, 5, 16), "fp16s"), ("d3q19", "csoa", 4, "double", (6, 5, 16), "fp32"),
        ("d3q19", "caosoa", 8, "single", (6, 5, 16), None)]


def _program(programs, runtime, device, vs, layout, vl, precision, shape, storage):
    spec = KernelSpec(backend="cuda" if runtime == "cuda-shim" else runtime, layout=layout, vl=vl,
                      velocity_set=vs, precision=precision, storage=storage, streaming="inplace")
    return programs(spec, shape, runtime, strict=True, **({"device": device} if device else {}))


def _check_bits(prog, shape):
    """Five pull steps (fused, two buffers) beside five in-place steps (one buffer, the step-parity
    contract: a whole halo before an even step); after each, the in-place state read back natural
    (a copy through aa_normalise after an even step) is the pull state bit for bit."""
    rng = np.random.default_rng(3)
    rho = 1 + 0.02 * rng.random(shape)
    u = [0.03 * rng.standard_normal(shape) for _ in shape]
    params = {n: 0.0 for n in prog.parameter_names} | {"tau": 0.7, "ax": 2e-5}
    for bounds in ({}, bounce_boundaries(shape)):
        prog.set_boundaries(**bounds)
        f, g, a = prog.allocate(), prog.allocate(), prog.allocate()
        prog.init_equilibrium(f, rho, *u, 1.0)
        prog.init_equilibrium(a, rho, *u, 1.0)
        for step in range(5):
            prog.halo(f)
            f, g = prog.step(f, g, params)
            if step % 2 == 0:
                prog.step_halo(a)
            prog.step_inplace(a, step % 2 == 1, params)
            seen = prog.upload(prog.download(a))
            if step % 2 == 0:
                prog.aa_normalise(seen)           # a copy: the run goes on from the odd-parity buffer
            pulled, inplace = (prog.layout.unpack(prog.download(b)) for b in (f, seen))
            if "solid" in bounds and step % 2:      # natural after aa_odd: solid cells keep bounced values
                fluid = bounds["solid"] == 0
                assert np.array_equal(pulled[:, fluid], inplace[:, fluid]), (bool(bounds), step + 1)
            else:                                   # aa_normalise zeroes them, as the pull leaves them
                assert np.array_equal(pulled, inplace), (bool(bounds), step + 1)
            assert np.isfinite(prog.codec.decode(pulled)).all()
        assert not np.array_equal(prog.download(a), prog.download(f))    # the odd parity's slots differ
    assert prog.calls["aa_even"] == 6 and prog.calls["aa_odd"] == 4 and prog.calls["aa_fold"] == 6
    assert prog.calls["aa_lid_rho"] == 5                                # only with the lid


@pytest.mark.parametrize("D", [2, 3])
@pytest.mark.parametrize("runtime, device", [r[:2] for r in RUNTIMES], ids=[r[2] for r in RUNTIMES])
def test_gpu_inplace_kernels_give_the_pull_state_bit_for_bit(programs, runtime, device, D):
    _check_bits(_program(programs, runtime, device, *FAST[D]), FAST[D][4])


@pytest.mark.slow
@pytest.mark.parametrize("runtime, case", [(r, c) for r in ("opencl", "cuda-shim") for c in SLOW
                                           if r == "opencl" or c[5] is None],
                         ids=lambda v: v if isinstance(v, str) else "-".join(str(x) for x in v if x is not None and
                                                                             not isinstance(x, tuple)))
def test_every_layout_precision_and_storage_in_place(programs, runtime, case):
    if runtime == "opencl" and not _opencl_devices():
        pytest.skip("no OpenCL platform")
    _check_bits(_program(programs, runtime, None, *case), case[4])


@pytest.mark.parametrize("runtime, device", [r[:2] for r in RUNTIMES], ids=[r[2] for r in RUNTIMES])
def test_one_device_buffer_and_the_pull_bits_through_the_simulation(runtime, device, monkeypatch):
    """The Simulation of the fast 3D case (its kernels built once, with the kernel test's): every
    lattice-sized buffer it puts on the device is counted, one; its state after odd and even counts
    is the C pull run's, bit for bit (strict builds)."""
    from lbgen.backends.gpu import GPUProgram
    from lbgen.backends.opencl import OpenCLProgram
    lattice_bytes = []
    if runtime == "opencl":
        to_device = OpenCLProgram._to_device

        def counted(self, host):
            if np.asarray(host).nbytes >= self.layout.size * np.dtype(self.dtype).itemsize:
                lattice_bytes.append(np.asarray(host).nbytes)
            return to_device(self, host)
        monkeypatch.setattr(OpenCLProgram, "_to_device", counted)
    else:                                   # the shim's device is the host: its buffers are allocate()'s
        allocate = GPUProgram.allocate

        def counted(self):
            out = allocate(self)
            lattice_bytes.append(out.nbytes)
            return out
        monkeypatch.setattr(GPUProgram, "allocate", counted)
    shape = FAST[3][4]
    kw = dict(layout="caosoa", vl=4, strict=True, tau=0.7, walls="z", lid={"z-high": (0.03, 0.0, 0.0)},
              mask=np.pad(np.ones((2, 2, 2), bool), ((3, 3), (2, 2), (5, 9))))
    pull = lbgen.Simulation(*shape, streaming="pull", **kw)
    inplace = lbgen.Simulation(*shape, streaming="inplace", backend=runtime, **kw,
                               **({"device": device} if device else {}))
    for sim in (pull, inplace):
        sim.set_fields(1.0, u=(0.01, 0.0, 0.0))
    for n in (3, 2, 1):        # odd, odd, even step counts: read back at the odd parity at 3 and 5
        pull.step(n)
        inplace.step(n)
        assert np.array_equal(pull.state(), inplace.state()), n
    fp, fi = pull.fields(), inplace.fields()
    assert all(np.array_equal(fp[k], fi[k]) for k in fp)
    assert lattice_bytes == [inplace.layout.size * 8]       # one D3Q19 double buffer, never a second
    assert [r.g for r in inplace.regions] == [None]


@pytest.mark.parametrize("backend", ["opencl", "cuda"])
def test_the_emitted_gpu_kernels_state_the_step_parity_contract(tmp_path, backend):
    from lbgen.codegen.emit import emit
    emit(KernelSpec(backend=backend, layout="soa", streaming="inplace"), tmp_path)
    kernels = (tmp_path / f"lbgen_kernels.{'cl' if backend == 'opencl' else 'cu'}").read_text()
    readme = (tmp_path / "README.md").read_text()
    assert "step-parity contract" in kernels and "step-parity contract" in readme
    for name in ("aa_even", "aa_fold", "aa_odd", "aa_normalise", "aa_lid_rho"):
        assert f"lbgen_{name}(" in kernels and f"lbgen_{name}(" in readme


@pytest.mark.slow
@pytest.mark.parametrize("vs, args", [("d2q9", ("5",)), ("d3q19", ("5", "8", "8", "8", "lid"))])
@pytest.mark.parametrize("backend", ["opencl", "cuda"])
def test_the_emitted_gpu_example_in_place_writes_the_pull_fields(tmp_path, backend, vs, args):
    """The emitted example (OpenCL: example.py on the first platform; CUDA: example.cu built through
    the host shim) steps one buffer in place (an odd count, read back through aa_normalise; the 3D
    one under a lid) and writes the pull example's fields."""
    import os
    import subprocess
    import sys
    from lbgen.backends.cuda import shim
    from lbgen.codegen.emit import emit
    if backend == "opencl" and not _opencl_devices():
        pytest.skip("no OpenCL platform")
    fields = {}
    for streaming in ("pull", "inplace"):
        folder = tmp_path / streaming
        emit(KernelSpec(backend=backend, layout="soa", velocity_set=vs, streaming=streaming), folder)
        example = (folder / ("example.py" if backend == "opencl" else "example.cu")).read_text()
        assert ("aa_even" in example) == (streaming == "inplace")
        if backend == "opencl":
            assert ("b = cl.Buffer" in example) == (streaming == "pull")         # in place: one buffer
            command = [sys.executable, "example.py"]
        else:
            command = [str(shim.build_host_program(folder, ["example.cu"] + (["lbgen_kernels.cu"] if vs == "d2q9"
                                                                                else [])))]
        subprocess.run([*command, *args], cwd=folder, check=True, capture_output=True,
                       env={**os.environ, "PYOPENCL_CTX": (_opencl_devices() or [("0", "")])[0][0]})
        fields[streaming] = (folder / "example_fields.txt").read_text()
    assert fields["pull"] == fields["inplace"] and len(fields["pull"].splitlines()) >= 512

