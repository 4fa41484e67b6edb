#!/usr/bin/env bash
# One H200 (device tool), one call: the points the model still lacks. The compute family's `kernels` part for the
# int8 casts (fp32 to int8, int8 to fp32: rooflib/bench/cast_cases.py; held out, they test the cast_up curve on
# other dtypes) and the row scatter with an expanded index (scatter_add_rows: the MoE combine's kernel,
# rooflib/bench/index_cases.py), then the memory part's `short_rows` grid (rmsnorm, layernorm, softmax, sum over
# rows of 16-512, 16 KiB-1 GiB); between them the host family's sparse-dense products (`host_worker --part ops`).
# Writes $OUT/kernels/raw/compute.jsonl (runs/x1-kernels-7), $OUT/host-sparse/raw/host.jsonl (runs/x1-host-sparse)
# and $OUT/short-rows/raw/compute.jsonl (runs/x1-short-rows), each with its stderr log. From the repository root
# there (the pydantic wheels carried as .wheels):
#   bash benchmarks/device/gaps_h200.sh
# CAST_S and ROWS_S: the two parts' budgets in seconds (default 120 and 270); an interrupted part resumes.
# Nothing here uses NVLink multicast (one GPU; NCCL_NVLS_ENABLE=0 and friends set by env.sh anyway).
set -uo pipefail
. "$(dirname "$0")/env.sh"
mkdir -p "$out/kernels/raw" "$out/short-rows/raw"
nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv
cs=${CAST_S:-120}
timeout -s INT "$((cs + 40))" python3 -m rooflib.bench.compute_worker --part kernels --ops cast_to_i8,cast_from_i8,scatter_add_rows \
  --max-seconds "$cs" --out "$out/kernels/raw/compute.jsonl" 2> "$out/kernels/stderr.log"
echo "== kernels: exit $? at $SECONDS s"
# the host family's sparse-dense products alone (PKB 62 and 66 call them; their host figures in the catalog), with
# the six elementwise cases (the ``kernel`` figure they are judged against) and nonzero (a known wait) beside
mkdir -p "$out/host-sparse/raw"
timeout 100 python3 -m rooflib.bench.host_worker --part ops \
  --cases add,mul_scalar,gelu,silu,tanh,div,nonzero,sparse_mm,sparse_bmm \
  --out "$out/host-sparse/raw/host.jsonl" 2> "$out/host-sparse/stderr.log"
echo "== host sparse: exit $? at $SECONDS s"
rs=${ROWS_S:-270}
timeout -s INT "$((rs + 60))" python3 -m rooflib.bench.compute_worker --part memory --grid short_rows \
  --max-seconds "$rs" --out "$out/short-rows/raw/compute.jsonl" 2> "$out/short-rows/stderr.log"
echo "== short rows: exit $? at $SECONDS s"
nvidia-smi --query-gpu=index,clocks.sm,temperature.gpu,power.draw --format=csv,noheader
python3 - "$out/host-sparse/raw/host.jsonl" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r.get("name") == "op":
        print("host", r["op"], f"{r['host_s'] * 1e6:.1f} us host, {r['time_s'] * 1e6:.1f} us wall")
PY
python3 - "$out/kernels/raw/compute.jsonl" "$out/short-rows/raw/compute.jsonl" <<'PY'
import collections, json, os, sys
for path in sys.argv[1:]:
    rows = [json.loads(l) for l in open(path) if '"point"' in l] if os.path.exists(path) else []
    bad = sum(not r.get("verified") for r in rows)
    print(f"{path}: {len(rows)} points, {bad} not verified")
    by = collections.defaultdict(list)
    for r in rows:
        by[(r["op"], r.get("cols") or "", r["dtype"])].append(r)
    for k, v in sorted(by.items(), key=str):
        v.sort(key=lambda r: r["tensor_bytes"])
        print(*k, " ".join(f"{r['tensor_bytes'] >> 10}K:{r['time_s'] * 1e6:.1f}" for r in v))
PY
