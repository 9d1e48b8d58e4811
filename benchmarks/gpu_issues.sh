#!/usr/bin/env bash
# The GPU checks of issues 36-39 (a benchmark, not a CI test): on a machine with an NVIDIA GPU, CuPy
# and nvcc, from the repository root, with lbgen installed:
#
#   bash benchmarks/gpu_issues.sh [OUTDIR] [STAGES]     (default: $OUT, else gpu-issues/; every stage)
#
#   tests   the GPU runtime's tests (every kernel on the GPU against the oracles, strict builds
#           bit-identical to C, 16-bit and fp32 storage bit-identical to C, in-place streaming)
#   bytes   issue 38: D3Q19 256^3 per storage and streaming pattern against the device copy and
#           FluidX3D's published figures (benchmarks/gpu_bytes.py)
#   dfg3d   issue 36: DFG 3D-1Z (Schaefer & Turek 1996) at 20 cells per diameter to steady state,
#           and a periodic box of the same lattice and operator for the MLUPS ratio
#   dfg2d   issue 36: DFG 2D-1 at 40 cells per diameter to steady state
#   rb      issue 39: D3Q39 between thermal walls, 96^3 (MLUPS), Rayleigh-Benard
# Each stage has its own time limit and writes its log as it goes; a failed stage does not stop
# the next.
set -u
out=${1:-${OUT:-gpu-issues}}
stages=${2:-tests,bytes,dfg3d,dfg2d,rb}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
runs=$(mktemp -d)
status=0
stage() {   # stage NAME SECONDS COMMAND...: run with a limit, log to $out/NAME.log, remember failures
    local name=$1 limit=$2
    shift 2
    case ",$stages," in *",$name,"*) ;; *) return ;; esac
    echo "=== $name: $* ($(date -u +%H:%M:%S))"
    timeout "$limit" "$@" >>"$out/$name.log" 2>&1
    local rc=$?
    tail -n 30 "$out/$name.log"
    echo "=== $name: exit $rc ($(date -u +%H:%M:%S))"
    [ $rc -eq 0 ] || status=1
}
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv
python3 -c "import lbgen.backends as b; print(b.available('cuda'))"

stage bytes 100 python3 benchmarks/gpu_bytes.py --size 256 --repeat 3 --json "$out/bytes.json"
# 3D-1Z: 500 x 82 x 82 (H = 4.1 D = 82 sites exactly), TRT, Bouzidi, to steady state
stage dfg3d 150 bash -c "lbgen run cylinder3d --cells-per-diameter 20 --backend cuda --steps 20000 --steady 2e-4 \
    --series-every 25 --pictures none --no-progress --out $runs/dfg3d && \
    lbgen run shear-wave --velocity-set d3q19 --collision trt --lx 500 --ly 82 --lz 82 --backend cuda --steps 2000 \
    --pictures none --no-progress --out $runs/box"
stage tests 150 python3 -m pytest -q -rs -p no:cacheprovider -n "$(nproc)" --slow tests/backends tests/simulation \
    tests/codegen/test_emit3d_gpu.py tests/run/test_inplace_run.py tests/parallel/test_halo_paths.py \
    -k "(cuda or gpu or runtime) and not shim and not nvcc and not opencl"
stage dfg2d 80 lbgen run cylinder --re 20 --cells-per-diameter 40 --backend cuda --steps 120000 --steady 2e-5 \
    --series-every 50 --pictures none --no-progress --out "$runs/dfg2d"
stage rb 60 lbgen run rayleigh-benard --velocity-set d3q39 --lx 96 --ly 96 --lz 96 --backend cuda --steps 1000 \
    --pictures none --no-progress --out "$runs/rb"
exit $status
