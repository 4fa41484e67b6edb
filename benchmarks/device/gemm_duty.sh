#!/usr/bin/env bash
# One GPU (device tool), one call: how long and how hard the GPU has been busy sets a large GEMM's clock. The
# graph-timed GEMM grid (rooflib/bench/gemm_graph_worker.py, 63 shapes x bf16, fp8) three times, with the SM clock
# and power sampled every 100 ms: as NVIDIA's tables time it (burst: 3 warm-up, 15 timed replays), 10x as long
# (sustained: 40, 150), 40x in bf16 (sustained-long: 100, 600); then benchmarks/device/gemm_ramp.py (large GEMMs
# back to back for 4 s from idle, timed in batches: the ramp from the burst clock to the power-limited one).
# From the repository root there (the pydantic wheels as .wheels):
#   bash benchmarks/device/gemm_duty.sh
# Writes $OUT/{burst,sustained,sustained-long}.jsonl, ramp.jsonl, logs.tgz (their logs), clocks.csv and phases.txt (epoch
# seconds at each phase's start). Nothing here uses NVLink multicast (one GPU; NCCL_NVLS_ENABLE=0 set anyway).
set -uo pipefail
. "$(dirname "$0")/env.sh"  # multicast off, $out, pydantic from .wheels, PYTHONPATH
nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.max.sm,power.limit,temperature.gpu --format=csv
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu --format=csv,noheader -lms 100 \
  > "$out/clocks.csv" &
smi=$!
phase() { echo "$1 $(date +%s.%N)" >> "$out/phases.txt"; }
w=rooflib.bench.gemm_graph_worker
phase burst_start
python3 -m $w --modes graph --max-seconds 60 --out "$out/burst.jsonl" > "$out/burst.log" 2>&1
phase sustained_start
python3 -m $w --modes graph --warmup 40 --iters 150 --max-seconds 200 --out "$out/sustained.jsonl" \
  > "$out/sustained.log" 2>&1
phase long_start
python3 -m $w --modes graph --dtypes bf16 --warmup 100 --iters 600 --max-seconds 170 \
  --out "$out/sustained-long.jsonl" > "$out/sustained-long.log" 2>&1
phase ramp_start
python3 benchmarks/device/gemm_ramp.py --out "$out/ramp.jsonl" 2> "$out/ramp.log"
phase end
kill $smi
echo "== done in $SECONDS s"
cat "$out/ramp.log"
(cd "$out" && tar czf logs.tgz ./*.log && rm -f ./*.log)  # the device tool returns at most 8 files
python3 - "$out" <<'PY'
import json, statistics, sys
d = sys.argv[1]
def load(f):
    try:
        rows = [json.loads(x) for x in open(f"{d}/{f}")]
    except OSError:
        return {}
    return {(r["dtype"], r["m"], r["n"], r["k"]): r for r in rows if r.get("record") == "gemm"}
b, s, sl = load("burst.jsonl"), load("sustained.jsonl"), load("sustained-long.jsonl")
allr = list(b.values()) + list(s.values()) + list(sl.values())
print(f"{len(allr)} records, {sum(not r['verified'] for r in allr)} not verified")
for name, other in (("sustained", s), ("sustained-long", sl)):
    for dtype in ("bf16", "fp8"):
        for big in (False, True):
            rs = [other[k]["time_s"] / b[k]["time_s"] for k in b if k in other and k[0] == dtype
                  and (k[1] * k[2] * k[3] >= 2**36) == big]
            if len(rs) >= 4:
                q = statistics.quantiles(rs, n=4)
                print(f"{name:14s} {dtype} {'mnk>=2^36' if big else 'smaller  '} n={len(rs):3d} over burst "
                      f"quartiles {q[0]:.3f} / {q[1]:.3f} / {q[2]:.3f}")
PY
