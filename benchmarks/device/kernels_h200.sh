#!/usr/bin/env bash
# One H200 (device tool), one call: the compute family's `kernels` part (the op classes programs launch besides
# GEMMs, attention and the streaming ops: launch-bound sizes, gathers, scatters, sorts, transposes, strided
# elementwise, cumsum, FFTs; rooflib/bench/kernel_cases.py), then, where PLAN is given, ParallelKernelBench's
# single-GPU parts kernel by kernel (benchmarks/device/pkb_kernels_h200.sh with that PLAN and PROBLEMS). Writes
# $OUT/kernels.jsonl (runs/x1-kernels/raw/compute.jsonl) and its log. From the repository root there (PKB carried
# as .pkb, the pydantic wheels as .wheels):
#   bash benchmarks/device/kernels_h200.sh [.pkb]
# KERNELS_S (the kernels part's budget, default 240), LIMIT_S (the whole call, default 570), OPS (only these ops).
# Nothing here uses NVLink multicast (one GPU; NCCL_NVLS_ENABLE=0 and friends set anyway).
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
out=${OUT:-/tmp/out}
limit=${LIMIT_S:-570}
mkdir -p "$out"
python3 -m pip install -q --no-index --find-links .wheels pydantic >/dev/null 2>&1 || echo "pydantic install failed"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv
ks=${KERNELS_S:-240}
timeout -s INT "$((ks + 40))" python3 -m rooflib.bench.compute_worker --part kernels --max-seconds "$ks" --ops "${OPS:-}" \
  --out "$out/kernels.jsonl" 2> "$out/kernels.stderr.log"
echo "== kernels: exit $? in $SECONDS s, $(grep -c '"record": "point"' "$out/kernels.jsonl") points," \
  "$(grep -c '"verified": false' "$out/kernels.jsonl") not verified"
if [ -n "${PLAN:-}" ] && [ -n "${1:-}" ]; then
  LIMIT_S=$((limit - SECONDS)) bash "$(dirname "$0")/pkb_kernels_h200.sh" "$1"
fi
python3 - "$out/kernels.jsonl" <<'PY'
import json, sys, collections
rows = [json.loads(l) for l in open(sys.argv[1]) if '"point"' in l]
by = collections.defaultdict(list)
for r in rows:
    by[(r["op"], r["mode"], r["dtype"])].append(r)
for k, v in sorted(by.items()):
    v.sort(key=lambda r: r["tensor_bytes"])
    print(*k, " ".join(f"{r['tensor_bytes']}:{r['time_s'] * 1e6:.2f}" for r in v))
PY
