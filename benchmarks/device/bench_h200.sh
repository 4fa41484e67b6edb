#!/usr/bin/env bash
# Run `rooflib bench` on a lent H200 machine (device tool). Usage, from the repository root there:
#   bash benchmarks/device/bench_h200.sh MODE   MODE: quick | full | overlap | one (1-GPU machine) | holdout
#                                                  | overlap (2 GPUs: overlap + tp families, a quick smoke first;
#                                                    the full sweeps run only if every smoke point verified)
# Needs the pydantic wheels for the machine's Python in .wheels/ (carried; the machine has no network).
# Writes $OUT/<name>.tar.gz (results folders) and prints the summary tables last.
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
mode=${1:-quick}
out=${OUT:-/tmp/out}
python3 -m pip install -q --no-index --find-links .wheels pydantic >/dev/null 2>&1 || echo "pydantic install failed"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv
nvidia-smi topo -m | head -5
rc=0
run() {  # name, then bench arguments; the limit is BENCH_LIMIT_S seconds (default 520)
  local name=$1; shift
  local start=$SECONDS
  timeout -s INT "${BENCH_LIMIT_S:-520}" python3 -m rooflib bench "$@" --out "runs/$name" --keep-going > "runs/$name.log" 2>&1
  rc=$?
  echo "== $name: exit $rc in $((SECONDS - start)) s"
  tar -czf "$out/$name.tar.gz" "runs/$name" "runs/$name.log"
}
mkdir -p runs
if [ "$mode" = quick ]; then
  run x2-quick all --quick
  CUDA_VISIBLE_DEVICES=0 run x1-quick all --quick
  tail -n 40 runs/x2-quick.log; tail -n 15 runs/x1-quick.log
elif [ "$mode" = overlap ]; then
  BENCH_LIMIT_S=${SMOKE_LIMIT_S:-200} run x2-overlap-quick overlap tp --quick
  tail -n 30 runs/x2-overlap-quick.log
  exe=$(ls -t "${XDG_CACHE_HOME:-$HOME/.cache}"/rooflib/kernels/overlap-* 2>/dev/null | head -1)
  if [ -n "$exe" ] && command -v cuobjdump >/dev/null; then
    sass=$(cuobjdump --dump-sass "$exe")
    echo "overlap SASS: HMMA $(grep -c HMMA <<<"$sass")  UBLKCP $(grep -c UBLKCP <<<"$sass")  SYNCS $(grep -c SYNCS <<<"$sass")  LDL/STL $(grep -cE 'LDL|STL' <<<"$sass")"
  fi
  if [ $rc -ne 0 ] || grep -q '"verified": false' runs/x2-overlap-quick/raw/*.jsonl; then
    echo "== smoke failed (exit $rc or an unverified point): no full sweep"
    grep -h '"verified": false' runs/x2-overlap-quick/raw/*.jsonl | head -5
    tail -n 20 runs/x2-overlap-quick/raw/*.stderr.log
  else
    BENCH_LIMIT_S=${FULL_LIMIT_S:-330} run x2-overlap overlap tp
    tail -n 30 runs/x2-overlap.log
  fi
elif [ "$mode" = one ]; then   # a one-GPU machine (kind nvidia-h200): every family that needs one GPU
  run x1 all
  tail -n 30 runs/x1.log
elif [ "$mode" = holdout ]; then   # a second two-GPU machine: p2p and NCCL again, to test the profile out of sample
  run x2-holdout p2p nccl
  tail -n 30 runs/x2-holdout.log
else
  run x2 all
  tail -n 60 runs/x2.log
fi
