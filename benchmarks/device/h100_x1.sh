#!/usr/bin/env bash
# One lent H100 (device tool, kind nvidia-h100-x1), one call: a GPU no rooflib figure was fitted on, to test what
# the catalog predicts for a machine it has only datasheet figures and public tables for:
#   1. gemm/:   benchmarks/device/gemm_modes_h200.sh (63 shapes x bf16, fp8, graph and eager; every output checked)
#               against aiconfigurator's H100 table (fitted) and the catalog's hgx-h100 model;
#   2. pkb-4096/, pkb-1024/: ParallelKernelBench's single-GPU parts at world 8 (benchmarks/device/pkb_lease_h200.sh,
#               HOST=0), each held call's queued device time, predicted on hgx-h100: the H200's memory-op curves
#               carried to it (rooflib.specs.port), nothing fitted on an H100.
# From the repository root there (PKB carried as .pkb, the pydantic wheels as .wheels):
#   bash benchmarks/device/h100_x1.sh .pkb
# GEMM_S, PKB4096_S, PKB1024_S: seconds kept for each step (defaults 170, 190, 170).
# Nothing here uses NVLink multicast (one GPU; NCCL_NVLS_ENABLE=0 and friends set anyway).
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
pkb=${1:?PKB_ROOT}
out=${OUT:-/tmp/out}
here=$(dirname "$0")
mkdir -p "$out"
python3 -m pip install -q --no-index --find-links .wheels pydantic >/dev/null 2>&1 || echo "pydantic install failed"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.limit,temperature.gpu --format=csv
OUT=$out/gemm MAX_S=${GEMM_S:-170} bash "$here/gemm_modes_h200.sh" | tail -n 12  # bare GEMMs, graph and eager
OUT=$out/pkb-4096 SIZE=4096x4096 HOST=0 CHECK_S=10 WORLDS=8 LIMIT_S=${PKB4096_S:-190} bash "$here/pkb_lease_h200.sh" "$pkb" | tail -n 3
OUT=$out/pkb-1024 SIZE=1024x1024 HOST=0 CHECK_S=10 WORLDS=8 LIMIT_S=${PKB1024_S:-170} bash "$here/pkb_lease_h200.sh" "$pkb" | tail -n 3
nvidia-smi --query-gpu=index,clocks.sm,temperature.gpu,power.draw --format=csv
for f in "$out"/pkb-*/pkb-local.jsonl; do
  echo "$f: $(grep -c '"record": "point"' "$f") points, $(grep -c '"queued_s"' "$f") with queued device time"
done
