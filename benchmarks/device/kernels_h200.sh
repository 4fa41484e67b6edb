#!/usr/bin/env bash
# One H200 (device tool), one call: the compute family's `kernels` part (the op classes programs launch besides
# GEMMs, attention and the streaming ops: launch-bound sizes, gathers, scatters, sorts, transposes, strided
# elementwise, cumsum, FFTs; rooflib/bench/kernel_cases.py), then ParallelKernelBench's single-GPU parts kernel by
# kernel (pkb_worker --mode kernels) for PLAN. Writes $OUT/kernels.jsonl, pkb-kernels-<size>.jsonl and their logs.
# From the repository root there (PKB carried as .pkb, the pydantic wheels as .wheels):
#   bash benchmarks/device/kernels_h200.sh .pkb
# KERNELS_S (the kernels part's budget, default 240), PLAN="SIZE:WORLDS:PROBLEMS ..." (default
# "1024x1024:8:all"), LIMIT_S (the whole call, default 570).
# Nothing here uses NVLink multicast (one GPU; NCCL_NVLS_ENABLE=0 and friends set anyway).
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
pkb=${1:?PKB_ROOT}
out=${OUT:-/tmp/out}
limit=${LIMIT_S:-570}
mkdir -p "$out"
python3 -m pip install -q --no-index --find-links .wheels pydantic >/dev/null 2>&1 || echo "pydantic install failed"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv
ks=${KERNELS_S:-240}
start=$SECONDS
timeout -s INT "$((ks + 40))" python3 -m rooflib.bench.compute_worker --part kernels --max-seconds "$ks" \
  --out "$out/kernels.jsonl" 2> "$out/kernels.stderr.log"
echo "== kernels: exit $? in $((SECONDS - start)) s, $(grep -c '"record": "point"' "$out/kernels.jsonl") points," \
  "$(grep -c '"verified": false' "$out/kernels.jsonl") not verified"
for item in ${PLAN:-1024x1024:8:all}; do
  IFS=: read -r size worlds problems <<< "$item"
  name=pkb-kernels-$size
  for attempt in 1 2 3; do  # a problem that kills the process (device-side assert) is skipped on the next attempt
    left=$((limit - SECONDS - 15))
    [ "$left" -gt 20 ] || break
    start=$SECONDS
    timeout -s INT "$((left + 10))" python3 -m rooflib.bench.pkb_worker --pkb "$pkb" --mode kernels --size "$size" \
      --worlds "$worlds" --problems "$problems" --warmup "${WARMUP:-5}" --iters "${ITERS:-10}" \
      --max-seconds "$left" --problem-seconds "${PROBLEM_S:-30}" --out "$out/$name.jsonl" >> "$out/$name.log" 2>&1
    echo "== $name: exit $? in $((SECONDS - start)) s, $(grep -c '"record": "point"' "$out/$name.jsonl") points"
    grep -q '"end": true' "$out/$name.jsonl" && break
  done
done
grep -hv "return func\|Warning\|USDT" "$out"/*.log "$out"/*.stderr.log | grep -i "error\|skipped" | tail -n 15
python3 - "$out/kernels.jsonl" <<'EOF'
import json, sys, collections
rows = [json.loads(l) for l in open(sys.argv[1]) if '"point"' in l]
by = collections.defaultdict(list)
for r in rows:
    by[(r["op"], r["mode"], r["dtype"])].append(r)
for k, v in sorted(by.items()):
    v.sort(key=lambda r: r["tensor_bytes"])
    print(*k, " ".join(f"{r['tensor_bytes']}:{r['time_s'] * 1e6:.2f}" for r in v))
EOF
