#!/usr/bin/env bash
# One H200 (device tool), one call: the graph-timed GEMM grid (rooflib/bench/gemm_graph_worker.py, 63 shapes x
# bf16 and fp8) timed twice per shape: replayed in a CUDA graph (as NVIDIA's aiconfigurator tables time GEMMs)
# and launched eagerly back to back, queued behind a sleep kernel (as a PyTorch program that keeps the device
# busy sees them, ParallelKernelBench's timing among them). Weight copies cycled over twice the L2 in both, every
# output checked against an fp32 product. From the repository root there (the pydantic wheels as .wheels):
#   bash benchmarks/device/gemm_modes_h200.sh
# MAX_S (start no new shape after this, default 420). Writes $OUT/gemm-modes.jsonl and its log.
# Nothing here uses NVLink multicast (one GPU; NCCL_NVLS_ENABLE=0 and friends set anyway).
set -uo pipefail
. "$(dirname "$0")/env.sh"  # multicast off, $out, pydantic from .wheels, PYTHONPATH
nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.max.sm,power.limit,temperature.gpu --format=csv
python3 -m rooflib.bench.gemm_graph_worker --modes graph,eager --max-seconds "${MAX_S:-420}" \
  --out "$out/gemm-modes.jsonl" > "$out/gemm-modes.log" 2>&1
echo "== exit $? in $SECONDS s"
nvidia-smi --query-gpu=index,clocks.sm,temperature.gpu,power.draw --format=csv
python3 - "$out/gemm-modes.jsonl" <<'PY'
import json, statistics, sys
rows = [r for r in map(json.loads, open(sys.argv[1])) if r.get("record") == "gemm"]
by = {(r["dtype"], r["m"], r["n"], r["k"], r["mode"]): r for r in rows}
print(f"{len(rows)} records, {sum(not r['verified'] for r in rows)} not verified")
for dtype in ("bf16", "fp8"):
    ratios = [by[(d, m, n, k, "eager")]["time_s"] / by[(d, m, n, k, "graph")]["time_s"]
              for (d, m, n, k, mode) in by if d == dtype and mode == "graph" and (d, m, n, k, "eager") in by]
    if ratios:
        q = statistics.quantiles(ratios, n=4)
        print(f"{dtype}: eager / graph over {len(ratios)} shapes, quartiles {q[0]:.3f} / {q[1]:.3f} / {q[2]:.3f}")
print("dtype mode      m     n     k   time_us  TFLOP/s")
for (d, m, n, k, mode), r in sorted(by.items()):
    if m in (1, 129, 8192) and n == 8192:
        print(f"{d:5s} {mode:5s} {m:5d} {n:5d} {k:5d} {r['time_s']*1e6:9.1f} {r['flops_per_s']/1e12:8.1f}")
PY
