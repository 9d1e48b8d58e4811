#!/usr/bin/env bash
# The GPU checks of issues 36-39 (a benchmark, not a CI test): on a machine with an NVIDIA GPU, CuPy
# and nvcc, from the repository root, with lbgen installed:
#
#   bash benchmarks/gpu_issues.sh [OUTDIR] [STAGES]     (default: $OUT, else gpu-issues/; every stage)
#
#   info    lbgen info on the GPU: the largest D3Q19 cube per storage and streaming (issue 38)
#   tests   the GPU runtime's tests (every kernel on the GPU against the oracles, strict builds
#           bit-identical to C, 16-bit and fp32 storage bit-identical to C, in-place streaming)
#   cli16   issue 38: lbgen run with 16-bit storage, in place, on the GPU (Taylor-Green 128^3)
#   bytes   issue 38: D3Q19 256^3 per storage and streaming pattern against the device copy and
#           FluidX3D's published figures (benchmarks/gpu_bytes.py)
#   dfg3d   issue 36: DFG 3D-1Z (Schaefer & Turek 1996) at $CELLS3D (20) cells per diameter to steady
#           state, and a periodic box of the same lattice and operator for the MLUPS ratio
#   profile issue 36: where the host's time goes in 1000 steps of that 3D-1Z run (cProfile)
#   dfg2d   issue 36: DFG 2D-1 at $CELLS2D (40) cells per diameter to steady state, inlet centre
#           speed $U2D (0.1 sites/step: 0.1732 model units)
#   dfg2d2  issue 36: DFG 2D-2 (Re = 100) at $CELLS2D cells per diameter, $STEPS2D2 (100000) steps
#   rb      issue 39: D3Q39 between thermal walls, 96^3 (MLUPS), Rayleigh-Benard
# Knobs (environment): CELLS3D, CELLS2D, CELLS2D2, U2D, STEPS3D, STEPS2D2, DFG3D_SECONDS, TEST_PATHS (the test
# files), BYTES_CONFIGS and BYTES_REPEAT (benchmarks/gpu_bytes.py --configs, --repeat).
# Each stage has its own time limit and writes its log as it goes; a failed stage does not stop
# the next.
set -u
out=${1:-${OUT:-gpu-issues}}
stages=${2:-info,tests,cli16,bytes,profile,dfg2d,dfg2d2,rb,dfg3d}
cells3d=${CELLS3D:-20}
cells2d=${CELLS2D:-40}
u2d=${U2D:-0.1732}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
runs=$(mktemp -d)
status=0
. "$(dirname "$0")/gpu_stage.sh"      # stage NAME SECONDS COMMAND...
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv
python3 -c "import lbgen.backends as b; print(b.available('cuda'))"

stage info 60 lbgen info --velocity-set d3q19
stage tests 150 python3 -m pytest -q -rs -p no:cacheprovider -n "$(nproc)" --slow ${TEST_PATHS:-tests/backends \
    tests/simulation tests/codegen/test_emit3d_gpu.py tests/run/test_inplace_run.py tests/parallel/test_halo_paths.py} \
    -k "(cuda or gpu or runtime) and not shim and not nvcc and not opencl"
stage cli16 60 lbgen run taylor-green --lx 128 --ly 128 --lz 128 --steps 400 --backend cuda --precision single \
    --storage fp16s --streaming inplace --pictures none --no-progress --out "$runs/tg16"
stage bytes 100 python3 benchmarks/gpu_bytes.py --size 256 --repeat "${BYTES_REPEAT:-3}" --json "$out/bytes.json" \
    ${BYTES_CONFIGS:+--configs "$BYTES_CONFIGS"}
lx3=$((cells3d * 25)) ly3=$(((cells3d * 41 + 5) / 10))   # 3D-1Z: 25 D x 4.1 D x 4.1 D (82 sites exactly at 20 cells)
stage profile 60 python3 -m cProfile -s tottime -m lbgen run cylinder3d --cells-per-diameter "$cells3d" --backend cuda \
    --steps 1000 --series-every 25 --pictures none --no-progress --out "$runs/profile"
stage dfg2d 80 lbgen run cylinder --re 20 --cells-per-diameter "$cells2d" --inlet-speed "$u2d" --backend cuda \
    --steps 400000 --steady 2e-5 --series-every 50 --pictures none --no-progress --out "$runs/dfg2d"
stage dfg2d2 60 lbgen run cylinder --re 100 --cells-per-diameter "${CELLS2D2:-$cells2d}" --backend cuda --steps "${STEPS2D2:-100000}" \
    --series-every 10 --pictures none --no-progress --out "$runs/dfg2d2"
stage rb 60 lbgen run rayleigh-benard --velocity-set d3q39 --lx 96 --ly 96 --lz 96 --backend cuda --steps 1000 \
    --pictures none --no-progress --out "$runs/rb"
# TRT, Bouzidi, to steady state (or STEPS3D), then a periodic box of the same lattice and operator
stage dfg3d "${DFG3D_SECONDS:-150}" bash -c "lbgen run cylinder3d --cells-per-diameter $cells3d --backend cuda \
    --steps ${STEPS3D:-40000} --steady 2e-4 --series-every 25 --pictures none --no-progress --out $runs/dfg3d && \
    lbgen run shear-wave --velocity-set d3q19 --collision trt --lx $lx3 --ly $ly3 --lz $ly3 --backend cuda --steps 2000 \
    --pictures none --no-progress --out $runs/box"
exit $status
