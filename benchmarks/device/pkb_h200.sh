#!/usr/bin/env bash
# ParallelKernelBench on a lent H200 (device tool), one call. From the repository root there:
#   bash benchmarks/device/pkb_h200.sh PKB_ROOT
# 1. the single-GPU part of every problem at the rank-0 shapes of world 8, then of world 2 (one GPU, the fake
#    process group: collectives move nothing), PKB's timing, outputs checked on the host;
# 2. a smoke test of the distributed runner under torchrun on this machine's GPUs (a few problems; DIST=0 skips it).
# C10D=1 first runs the host family's c10d part (torch.distributed calls through the fake process group, and
# allocations: what the local runs' collectives and buffers cost the host) into $OUT/host-c10d.jsonl.
# Needs the pydantic wheels in .wheels/ (carried). Writes $OUT/pkb-local.jsonl, $OUT/pkb-dist.rank*.jsonl, logs.
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
pkb=${1:?PKB_ROOT}
out=${OUT:-/tmp/out}
python3 -m pip install -q --no-index --find-links .wheels pydantic >/dev/null 2>&1 || echo "pydantic install failed"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)" || true
if [ "${C10D:-0}" = 1 ]; then
  start=$SECONDS
  PYTHONUNBUFFERED=1 timeout -s INT 120 python3 -m rooflib.bench.host_worker --part c10d --worlds 2,4,8 \
    --out "$out/host-c10d.jsonl" 2> "$out/host-c10d.stderr.log"
  echo "== c10d: exit $? in $((SECONDS - start)) s"; grep -c '"record": "point"' "$out/host-c10d.jsonl"
fi
start=$SECONDS
timeout -s INT "${LOCAL_LIMIT_S:-480}" python3 -m rooflib.bench.pkb_worker --pkb "$pkb" --out "$out/pkb-local.jsonl" \
  --mode local --worlds "${WORLDS:-8,2}" --problems "${PROBLEMS:-all}" --warmup "${WARMUP:-20}" --iters "${ITERS:-50}" --max-seconds "${LOCAL_BUDGET_S:-420}" \
  > "$out/pkb-local.log" 2>&1
echo "== local: exit $? in $((SECONDS - start)) s"
grep -c '"record": "point"' "$out/pkb-local.jsonl"; grep -c '"record": "skipped"' "$out/pkb-local.jsonl"
if [ "${DIST:-1}" = 1 ]; then
  gpus=$(nvidia-smi -L | wc -l)
  start=$SECONDS
  timeout -s INT "${DIST_LIMIT_S:-90}" torchrun --nproc-per-node "$gpus" -m rooflib.bench.pkb_worker --pkb "$pkb" \
    --out "$out/pkb-dist.jsonl" --mode dist --problems 1,7,13,16,54 --warmup 10 --iters 20 > "$out/pkb-dist.log" 2>&1
  echo "== dist ($gpus GPU): exit $? in $((SECONDS - start)) s"
  tail -n 8 "$out/pkb-dist.log"
fi
grep -v "return func\|Warning" "$out/pkb-local.log" | tail -n 200
