#!/usr/bin/env bash
# The GPU checks (issue 14, target 7; issue 20's CUDA kernels on a device): on a machine with
# an NVIDIA GPU, CuPy and nvcc, from the repository root, with lbgen installed:
#
#   bash benchmarks/gpu_check.sh [OUTDIR]        (default: $OUT, else gpu-check/)
#
# 1. the GPU runtime's tests (2D and 3D kernels on the GPU against the NumPy oracle to 1e-12,
#    strict builds bit-identical to the host shim and to the C backend, Simulation3D on the GPU;
#    CuPy and pycuda bit-identical, tests/backends/test_cuda_runtimes.py), and where pycuda is
#    installed the same tests again with LBGEN_CUDA_RUNTIME=pycuda;
# 2. lbgen bench on the GPU against its own device-to-device copy: 2D D2Q37 (4096 x 4096) and
#    3D D3Q19 (256^3), propagate and fused, every layout at the GPU's VL 32;
# 3. lbgen verify on the GPU (2D thermal D2Q37 with walls, 3D D3Q19 with walls, lid and mask), strict;
# 4. a 3D run through the CLI (Taylor-Green vortex, 128^3) with its outputs;
# 5. OpenCL on the NVIDIA driver, where pyopencl finds it: the 3D OpenCL tests.
# Each stage has its own time limit and writes its log as it goes; a failed stage does not stop
# the next.  Nothing here is a CI test (CI has no GPU).
set -u
out=${1:-${OUT:-gpu-check}}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
status=0
. "$(dirname "$0")/gpu_stage.sh"      # stage NAME SECONDS COMMAND...
{
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv
    python3 -c "import lbgen.backends as b; print(b.available('cuda')); print(b.available('opencl'))"
} >"$out/device.log" 2>&1
cat "$out/device.log"

jobs=$(nproc)
stage tests 240 python3 -m pytest -q -rs -p no:cacheprovider -n "$jobs" tests/backends \
    -k "(cuda or gpu) and not shim and not nvcc and not opencl"
if python3 -c "import pycuda.driver" 2>/dev/null; then     # the other CUDA runtime: the same tests through pycuda
    stage tests-pycuda 240 env LBGEN_CUDA_RUNTIME=pycuda python3 -m pytest -q -rs -p no:cacheprovider -n "$jobs" \
        tests/backends -k "(cuda or gpu) and not shim and not nvcc and not opencl"
fi
stage bench 180 bash -c "lbgen bench --backends cuda --layouts soa,caosoa-vl32 --kernels propagate,fused \
    --lx 4096 --ly 4096 --repeat 10 --warmup 3 -o '$out/bench2d.json' && \
    lbgen bench --backends cuda --velocity-set d3q19 --layouts aos,soa,csoa-vl32,caosoa-vl32 --kernels propagate,fused \
    --lx 256 --ly 256 --lz 256 --repeat 10 --warmup 3 -o '$out/bench3d.json'"
stage verify 300 bash -c "lbgen verify --backends c,cuda --layouts aos,caosoa-vl32 --walls --strict --steps 20 && \
    lbgen verify --velocity-set d3q19 --backends c,cuda --layouts caosoa-vl32 --walls --strict --lz 96"
stage run3d 90 lbgen run taylor-green --lx 128 --ly 128 --lz 128 --steps 500 --backend cuda --no-progress \
    --out "$(mktemp -d)/tg3d"
if python3 -c "import lbgen.backends as b; ok, why = b.available('opencl'); raise SystemExit(not (ok and 'NVIDIA' in why))"
then
    stage opencl 90 python3 -m pytest -q -rs -p no:cacheprovider -n "$jobs" tests/backends/test_gpu3d.py -k opencl
fi
exit $status
