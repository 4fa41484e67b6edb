#!/usr/bin/env bash
# One H200 (device tool), one call: the op classes ParallelKernelBench's parts launch that the model had no curve
# for, each timed by the compute family (fresh inputs cycled past 3x the L2, every output checked):
#   1. elementwise ops with a broadcast tensor operand (`--part kernels --ops bcast_*`, every kernel timed by
#      CUPTI as well: `--profile`), rooflib/bench/broadcast_cases.py;
#   2. convolutions (`--part conv`, main and holdout grids; each point's kernels by CUPTI: cuDNN's layout
#      conversions, its implicit GEMM, ATen's depthwise kernel), rooflib/bench/conv_cases.py;
#   3. fp32 GEMMs on CUDA cores (`--part gemm --dtypes fp32`, TF32 off as PyTorch's default; main and holdout
#      grids up to 4e10 FLOP a call).
# Writes $OUT/{bcast,conv,conv-holdout,sgemm,sgemm-holdout}.jsonl and their logs. From the repository root there:
#   bash benchmarks/device/classes_h200.sh
# Budgets (seconds): BCAST_S 130, CONV_S 170, CONV_HOLD_S 60, SGEMM_S 100, SGEMM_HOLD_S 50.
# Nothing here uses NVLink multicast (one GPU; NCCL_NVLS_ENABLE=0 and friends set anyway).
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
out=${OUT:-/tmp/out}
mkdir -p "$out"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv
python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'cudnn', torch.backends.cudnn.version())"

run() {  # name budget args...
  local name=$1 budget=$2
  shift 2
  timeout -s INT "$((budget + 40))" python3 -m rooflib.bench.compute_worker --max-seconds "$budget" \
    --out "$out/$name.jsonl" "$@" 2> "$out/$name.stderr.log"
  echo "== $name: exit $? at $SECONDS s, $(grep -c '"record": "point"' "$out/$name.jsonl") points," \
    "$(grep -c '"verified": false' "$out/$name.jsonl") not verified, $(grep -c '"record": "skipped"' "$out/$name.jsonl") skipped"
}
run bcast "${BCAST_S:-130}" --part kernels --ops bcast_scalar,bcast_cast,bcast_col,bcast_row --profile
run conv "${CONV_S:-170}" --part conv
run conv-holdout "${CONV_HOLD_S:-60}" --part conv --grid holdout
run sgemm "${SGEMM_S:-100}" --part gemm --dtypes fp32
run sgemm-holdout "${SGEMM_HOLD_S:-50}" --part gemm --dtypes fp32 --grid holdout

python3 - "$out" <<'PY'
import json, sys, collections, pathlib
root = pathlib.Path(sys.argv[1])
rows = [json.loads(l) for f in sorted(root.glob("*.jsonl")) for l in open(f) if '"point"' in l]
by = collections.defaultdict(list)
for r in rows:
    if r["op"].startswith("bcast"):
        by[(r["op"], r["mode"], r["dtype"])].append(r)
for k, v in sorted(by.items()):
    v.sort(key=lambda r: r["tensor_bytes"])
    print(*k, " ".join(f"{r['tensor_bytes']}:{r['time_s'] * 1e6:.2f}" for r in v))
for r in rows:
    if r["op"].startswith("conv"):
        kern = " + ".join(f"{s * 1e6:.1f}" for _, s in (r.get("profile") or []))
        print(r["op"], r["grid"], r["n"], r["c"], r["k"], r["spatial"], r["kernel"], r["channels_last"],
              f"{r['time_s'] * 1e6:.1f} us", f"[{kern}]", "ok" if r["verified"] else "BAD")
sg = [r for r in rows if r["op"] == "gemm"]
print("sgemm points", len(sg), "median TFLOP/s", sorted(r["flops_per_s"] for r in sg)[len(sg) // 2] / 1e12 if sg else None)
PY
