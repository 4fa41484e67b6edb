#!/usr/bin/env bash
# One GPU (device tool), one call, about 5 minutes: the Triton program-slot floor across block size and warps
# (benchmarks/device/triton_programs.py), the tiny-k GEMMs whose output store sets their time (the graph worker's
# --shapes tinyk, graph and queued eager, bf16 and fp8) and, on an H200, the duty ramp (gemm_ramp.py).
# From the repository root there (the pydantic wheels as .wheels):
#   bash benchmarks/device/triton_tinyk.sh          # TRITON_S=170 TINYK_S=60: each part's time limit, seconds
# Writes $OUT/triton.jsonl, tinyk.jsonl, ramp.jsonl (H200 only) and logs.tgz. One GPU; no NVLink, no multicast.
set -uo pipefail
. "$(dirname "$0")/env.sh"  # multicast off, $out, pydantic from .wheels, PYTHONPATH
nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.max.sm,power.limit,temperature.gpu --format=csv
python3 benchmarks/device/triton_programs.py --out "$out/triton.jsonl" --max-seconds "${TRITON_S:-170}" > "$out/triton.log" 2>&1
echo "== triton done at $SECONDS s: $(grep -c '"point"' "$out/triton.jsonl") points"
python3 -m rooflib.bench.gemm_graph_worker --shapes tinyk --modes graph,eager --max-seconds "${TINYK_S:-60}" \
  --out "$out/tinyk.jsonl" > "$out/tinyk.log" 2>&1
echo "== tinyk done at $SECONDS s"
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  python3 benchmarks/device/gemm_ramp.py --out "$out/ramp.jsonl" 2> "$out/ramp.log"
  echo "== ramp done at $SECONDS s"
fi
tail -5 "$out/triton.log"; cat "$out/tinyk.log" | tail -90; cat "$out/ramp.log" 2>/dev/null | tail -8
(cd "$out" && tar czf logs.tgz ./*.log && rm -f ./*.log)
