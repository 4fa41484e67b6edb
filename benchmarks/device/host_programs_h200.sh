#!/usr/bin/env bash
# One H200 (device tool): the host family (per-op host costs by kind), the small-op device grid
# (programs_worker --ops) and the programs family, each in a fresh process and in that order (no profiler session
# before any timing). Writes $OUT/host.jsonl, ops.jsonl, programs.jsonl and their stderr logs. Usage there:
#   bash benchmarks/device/host_programs_h200.sh
set -uo pipefail
. "$(dirname "$0")/env.sh"  # multicast off, $out, pydantic from .wheels, PYTHONPATH
nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv
step() {  # name, then worker arguments
  local name=$1; shift
  local start=$SECONDS
  timeout -s INT 200 python3 -m "$@" --out "$out/$name.jsonl" 2> "$out/$name.stderr.log"
  echo "== $name: exit $? in $((SECONDS - start)) s"
  tail -n 3 "$out/$name.stderr.log"
}
step host rooflib.bench.host_worker --part local --calls 2000
step ops rooflib.bench.programs_worker --ops
step programs rooflib.bench.programs_worker
grep -c '"verified": false' "$out"/*.jsonl
