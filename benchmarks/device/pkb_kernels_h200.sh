#!/usr/bin/env bash
# ParallelKernelBench single-GPU parts, kernel by kernel, on one lent H200 (the device tool), in ONE call:
# rooflib.bench.pkb_worker --mode kernels (torch.profiler with CUDA activity: every kernel each op launched, timed
# on the device by CUPTI), PKB's inputs and input groups, per size and world, one JSON Lines file per size
# (pkb-kernels-<size>.jsonl). What `rooflib trace --pkb`'s per-op device times are checked against.
# From the repository root there (PKB carried as .pkb, the pydantic wheels as .wheels):
#   bash benchmarks/device/pkb_kernels_h200.sh .pkb
# PLAN="SIZE:WORLDS ..." (default "1024x1024:8,4,2 8192x8192:8"), PROBLEMS (default all), LIMIT_S (the call).
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
for item in ${PLAN:-1024x1024:8,4,2 8192x8192:8}; do
  size=${item%%:*} worlds=${item#*:}
  name=pkb-kernels-$size
  for attempt in 1 2 3 4; do  # a problem that kills the process (device-side assert) is skipped on the next attempt
    left=$((limit - SECONDS - 15))
    [ "$left" -gt 20 ] || break
    start=$SECONDS
    timeout -s INT "$((left + 10))" python3 -m rooflib.bench.pkb_worker --pkb "$pkb" --mode kernels --size "$size" \
      --worlds "$worlds" --problems "${PROBLEMS:-all}" --warmup "${WARMUP:-5}" --iters "${ITERS:-10}" \
      --max-seconds "$left" --problem-seconds "${PROBLEM_S:-60}" --out "$out/$name.jsonl" >> "$out/$name.log" 2>&1
    echo "== $name: exit $? in $((SECONDS - start)) s, $(grep -c '"record": "point"' "$out/$name.jsonl") points"
    grep -q '"end": true' "$out/$name.jsonl" && break
  done
done
for f in "$out"/pkb-kernels-*.jsonl; do echo "$f: $(grep -c '"record": "skipped"' "$f") skipped"; done
grep -hv "return func\|Warning\|USDT" "$out"/pkb-kernels-*.log | tail -n 20
