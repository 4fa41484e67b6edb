#!/usr/bin/env bash
# Two H200s (device tool kind nvidia-h200-x2; issue 13): everything the 2-GPU measurements need, in one call, each
# step in fresh processes under torchrun: the host family's NCCL call cost through torch.distributed, the
# distributed programs (tensor-parallel MLP, sequence-parallel attention, MoE dispatch/combine) eager and as CUDA
# graphs, and every ParallelKernelBench problem at world 2 and sizes 1024, 4096, 8192 with PKB's timing and every
# output checked (needs PKB carried: pass its path). Writes $OUT/<step>.jsonl and logs; reruns resume.
#   bash benchmarks/device/two_gpu_h200.sh PKB_ROOT
# NVLink multicast stays off (the three variables below, and every worker forces them again).
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
out=${OUT:-/tmp/out}
pkb=${1:-}
mkdir -p "$out"
python3 -m pip install -q --no-index --find-links .wheels pydantic >/dev/null 2>&1 || echo "pydantic install failed"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv
nvidia-smi topo -m
run2() {  # name, seconds, then worker module and arguments
  local name=$1 limit=$2; shift 2
  local start=$SECONDS
  timeout -s INT "$limit" torchrun --standalone --nproc-per-node=2 -m "$@" --out "$out/$name.jsonl" \
    > "$out/$name.stdout.log" 2> "$out/$name.stderr.log"
  echo "== $name: exit $? in $((SECONDS - start)) s"
  tail -n 3 "$out/$name.stderr.log"
}
run2 host-nccl 120 rooflib.bench.host_worker --part nccl
run2 dist-programs 240 rooflib.bench.dist_programs_worker
if [ -n "$pkb" ]; then
  for size in 1024x1024 4096x4096 8192x8192; do
    run2 "pkb-w2-$size" 300 rooflib.bench.pkb_worker --pkb "$pkb" --mode dist --size "$size" --max-seconds 280
  done
fi
grep -c '"verified": false' "$out"/*.jsonl
