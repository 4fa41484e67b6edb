#!/usr/bin/env bash
# Both passes of the SM-count HBM sweep in one call (docs/validation/h200/runs/x1-sm-stream/README.md): the
# first (32 and 64 KiB loads, 3 and 6 in flight) fits rooflib.compute.memory.sm_stream_share's two figures, the
# second (48, 64 and 96 KiB loads, 2 to 4 in flight) checks them. From the repository root on the device:
#   bash benchmarks/device/sm_stream_both.sh     # $OUT/sm_stream.jsonl, sm_stream_2.jsonl and their logs
set -euo pipefail
bash "$(dirname "$0")/sm_stream.sh"
. "$(dirname "$0")/env.sh"
bin=$(python3 -c "from rooflib.bench.build import build; print(build('ceilings'))")
"$bin" --tests tma_stream --stage-bytes 48K,64K,96K --depths 2,3,4 \
  --tma-blocks 1,2,4,8,12,16,20,24,32,40,48,64,80,96,112,all > "$out/sm_stream_2.jsonl" 2> "$out/sm_stream_2.log"
grep "tma_stream hbm" "$out/sm_stream_2.log" | grep "stage= 65536 depth=3"
