#!/usr/bin/env bash
# The HBM rate a number of SMs can stream (ceilings' tma_stream on 1..all SMs, one block of one thread per SM
# keeping bulk loads in flight), and the full-GPU HBM ceilings beside it: the per-SM rate a memory-bound kernel
# that shares the GPU with communication SMs gets (rooflib.program.regions, memory-bound fused regions).
# From the repository root on the device (the pydantic wheels as .wheels):
#   bash benchmarks/device/sm_stream.sh        # writes $OUT/sm_stream.jsonl and $OUT/sm_stream.log
set -euo pipefail
. "$(dirname "$0")/env.sh"  # multicast off, $out, pydantic from .wheels, PYTHONPATH
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw,power.limit,temperature.gpu --format=csv | tee "$out/sm_stream.log"
bin=$(python3 -c "from rooflib.bench.build import build; print(build('ceilings'))")
"$bin" --tests hbm_read,hbm_copy,tma_stream --stage-bytes 32K,64K --depths 3,6 \
  --tma-blocks 1,2,4,8,12,16,20,24,32,40,48,64,80,96,112,all > "$out/sm_stream.jsonl" 2>> "$out/sm_stream.log"
grep -c verified "$out/sm_stream.jsonl" | sed 's/^/points: /'
grep "tma_stream hbm" "$out/sm_stream.log" | tail -40
