#!/usr/bin/env bash
# ParallelKernelBench single-GPU parts and the host costs that predict them, in ONE call on one lent H200 (the
# device tool): a lent host's speed differs between leases (up to 3x), so the host figures the prediction uses
# are measured on the same machine, minutes before the problems, each step in a fresh process:
#   1. host.jsonl:      rooflib.bench.host_worker --part local  (per-op host costs by kind, the timed loop, sync)
#   2. host-c10d.jsonl: rooflib.bench.host_worker --part c10d   (torch.distributed calls on the fake group, allocs)
#   3. pkb-local.jsonl: rooflib.bench.pkb_worker --mode local   (every problem at world 8, 4, 2; PKB's timing, the
#      host time of a call with the GPU held busy, outputs checked on the host)
#   4. pkb-repeat.jsonl (REPEAT_S > 0 seconds kept for it): the problems again at REPEAT_WORLDS (default 8), how far
#      a rerun on the same lease moves a measured time
#   5. pkb-profile.jsonl (PROFILE_S > 0 seconds kept for it): rooflib.bench.pkb_worker --mode profile, every
#      problem's host time op by op under torch.profiler (last: the profiler slows later launches)
# From the repository root there (PKB carried as .pkb, the pydantic wheels as .wheels):
#   bash benchmarks/device/pkb_lease_h200.sh .pkb
# SIZE=MxN (default 1024x1024) sets PKB's base shape, CHECK_S the seconds kept for each problem's host check
# (large sizes: past them a point is timed, not checked), HELD_CALLS the calls issued with the GPU held (their
# host time and, all queued, their device time; HELD_FIRST=1 times them again on the first input groups, as runs
# before session 15 did), HOST=0 leaves out the host family (steps 1 and 2).
# PIN=CPU runs every step on that one CPU (taskset; the meta records' `cpu.usable` says 1): whether pinning the
# host's one busy thread narrows how far a rerun moves (the lent host's speed moves within one call).
# Nothing here uses NVLink multicast (one GPU; NCCL_NVLS_ENABLE=0 and friends set anyway).
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
pkb=${1:?PKB_ROOT}
out=${OUT:-/tmp/out}
limit=${LIMIT_S:-570}  # the whole call: the problems stop starting when it nears
mkdir -p "$out"
python3 -m pip install -q --no-index --find-links .wheels pydantic >/dev/null 2>&1 || echo "pydantic install failed"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv
step() {  # name, seconds, then worker arguments
  local name=$1 secs=$2; shift 2
  local start=$SECONDS
  timeout -s INT "$secs" ${PIN:+taskset -c "$PIN"} python3 -m "$@" --out "$out/$name.jsonl" >> "$out/$name.log" 2>&1
  echo "== $name: exit $? in $((SECONDS - start)) s, $(grep -c '"record": "point"' "$out/$name.jsonl") points"
}
if [ "${HOST:-1}" = 1 ]; then  # HOST=0: no host family (a lease of device-bound sizes)
  step host 120 rooflib.bench.host_worker --part local --calls "${HOST_CALLS:-1000}"
  step host-c10d 90 rooflib.bench.host_worker --part c10d --worlds 2,4,8 --calls "${HOST_CALLS:-1000}"
fi
sized=(--size "${SIZE:-1024x1024}" --check-seconds "${CHECK_S:-0}" --host-calls "${HELD_CALLS:-10}" ${HELD_FIRST:+--held-first})
profile_s=${PROFILE_S:-0}  # > 0: the last step profiles every problem's host time (pkb-profile.jsonl)
repeat_s=${REPEAT_S:-0}  # > 0: seconds kept for pkb-repeat.jsonl, the problems again at REPEAT_WORLDS (default 8)
for attempt in 1 2 3 4; do  # a problem that kills the process (device-side assert) is skipped on the next attempt
  left=$((limit - profile_s - repeat_s - SECONDS - 15))
  [ "$left" -gt 20 ] || break
  step pkb-local "$((left + 10))" rooflib.bench.pkb_worker --pkb "$pkb" --mode local --worlds "${WORLDS:-8,4,2}" \
    --problems "${PROBLEMS:-all}" --warmup "${WARMUP:-10}" --iters "${ITERS:-30}" --max-seconds "$left" --problem-seconds "${PROBLEM_S:-120}" "${sized[@]}"
  grep -q '"end": true' "$out/pkb-local.jsonl" && break
done
if [ "$repeat_s" -gt 0 ]; then  # the same problems once more in the same lease: how far a rerun moves
  for attempt in 1 2 3; do
    left=$((limit - profile_s - SECONDS - 10))
    [ "$left" -gt 20 ] || break
    step pkb-repeat "$((left + 5))" rooflib.bench.pkb_worker --pkb "$pkb" --mode local --worlds "${REPEAT_WORLDS:-8}" \
      --problems "${PROBLEMS:-all}" --warmup "${WARMUP:-10}" --iters "${ITERS:-30}" --max-seconds "$left" --problem-seconds "${PROBLEM_S:-120}" "${sized[@]}"
    grep -q '"end": true' "$out/pkb-repeat.jsonl" && break
  done
fi
if [ "$profile_s" -gt 0 ]; then  # last: the profiler slows every later launch in its process
  for attempt in 1 2 3; do
    left=$((limit - SECONDS - 10))
    [ "$left" -gt 20 ] || break
    step pkb-profile "$((left + 5))" rooflib.bench.pkb_worker --pkb "$pkb" --mode profile --worlds "${PROFILE_WORLDS:-8}" \
      --problems "${PROBLEMS:-all}" --warmup 5 --iters "${PROFILE_ITERS:-10}" --max-seconds "$left" --problem-seconds 60
    grep -q '"end": true' "$out/pkb-profile.jsonl" && break
  done
fi
grep -c '"record": "skipped"' "$out/pkb-local.jsonl"
grep -v "return func\|Warning" "$out/pkb-local.log" | tail -n 40
