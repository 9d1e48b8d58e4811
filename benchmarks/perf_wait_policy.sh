#!/bin/bash
# Run from the repository root.  Interleaved: busy (one competing python spinner) or quiet, policy default (libgomp: GOMP_SPINCOUNT=300000) vs passive, threads 0 vs 1
run() { # $1 policy $2 threads
  if [ "$1" = default ]; then env -u OMP_WAIT_POLICY GOMP_SPINCOUNT=300000 python benchmarks/perf_wait_policy.py $2; else env -u GOMP_SPINCOUNT OMP_WAIT_POLICY=$1 python benchmarks/perf_wait_policy.py $2; fi
}
for round in 1 2; do
  for busy in quiet busy; do
    if [ $busy = busy ]; then python3 -c 'while 1: pass' & SP=$!; fi
    for pol in default passive; do for th in 0 1; do
      echo "$round $busy policy=$pol threads=$th $(run $pol $th 2>/dev/null | tail -1)"
    done; done
    if [ $busy = busy ]; then kill $SP; fi
  done
done
