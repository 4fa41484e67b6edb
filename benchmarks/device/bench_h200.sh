#!/usr/bin/env bash
# Run `rooflib bench` on a lent H200 machine (device tool). Usage, from the repository root there:
#   bash benchmarks/device/bench_h200.sh MODE   MODE: quick | full | overlap | one (1-GPU machine) | holdout
#                                                  | overlap (2 GPUs: overlap + tp families, a quick smoke first;
#                                                    the full sweeps run only if every smoke point verified)
#                                                  | gather (2 GPUs: the overlap/gather job alone, smoke first, then
#                                                    the sweep, a repeat and C = 1, 32; a failing smoke is diagnosed
#                                                    schedule by schedule, the sweep runs with those that passed)
#                                                  | compute (1 GPU: the compute, host and programs families into
#                                                    runs/x1-compute; 132 s on an H200) | compute-quick (the same
#                                                    --quick into runs/x1-compute-quick; 50 s)
#                                                  | compute-holdout (1 GPU: the second grid and host again into
#                                                    runs/x1-compute-holdout, for out-of-sample checks; 97 s)
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
elif [ "$mode" = gather ]; then
  only() {  # name, quick(True/False): the overlap/gather job alone through the runner
    local start=$SECONDS
    timeout -s INT "${BENCH_LIMIT_S:-200}" python3 -c "from rooflib.bench.runner import run_bench; \
run_bench(['overlap'], 'runs/$1', quick=$2, only=['overlap/gather'], progress=False)" > "runs/$1.log" 2>&1
    rc=$?
    echo "== $1: exit $rc in $((SECONDS - start)) s"
    tail -n 5 "runs/$1.log"
  }
  BENCH_LIMIT_S=90 only x2-gather-quick True
  tar -czf "$out/x2-gather-quick.tar.gz" runs/x2-gather-quick runs/x2-gather-quick.log
  tail -n 30 runs/x2-gather-quick/raw/overlap.stderr.log
  exe=$(ls -t "${XDG_CACHE_HOME:-$HOME/.cache}"/rooflib/kernels/overlap-* 2>/dev/null | head -1)
  if [ -n "$exe" ] && command -v cuobjdump >/dev/null; then
    sass=$(cuobjdump --dump-sass "$exe" 2>/dev/null | awk '/Function :/{f = /gather_tiles/} f')
    echo "gather_tiles SASS: HMMA $(grep -c HMMA <<<"$sass")  UBLKCP $(grep -c UBLKCP <<<"$sass")  SYNCS $(grep -c SYNCS <<<"$sass")  LDL/STL $(grep -cE 'LDL|STL' <<<"$sass")"
  fi
  if [ $rc -eq 0 ] && ! grep -q '"verified": false' runs/x2-gather-quick/raw/overlap.jsonl; then
    BENCH_LIMIT_S=150 only x2-gather False
    if [ $SECONDS -lt 200 ]; then BENCH_LIMIT_S=120 only x2-gather-repeat False; fi
  elif [ -n "$exe" ]; then
    echo "== smoke failed (exit $rc or an unverified point): schedule by schedule"
    ok=""
    for s in compute_only comm_only sequential intra_sm inter_sm inter_ce; do
      timeout 25 "$exe" --direction gather --tiles 64 --reuse 4 --iters 1,64 --comm-sms 1,8 --iters-timing 3 \
        --warmup 1 --schedule $s > "runs/diag-$s.jsonl" 2> "runs/diag-$s.log"
      r=$?
      if [ $r -eq 0 ] && ! grep -q '"verified":false' "runs/diag-$s.jsonl"; then ok="$ok${ok:+,}$s"; fi
      echo "diag $s: exit $r"; tail -n 3 "runs/diag-$s.log"
    done
    tar -czf "$out/diag.tar.gz" runs/diag-*
    if [ -n "$ok" ]; then
      mkdir -p runs/x2-gather/raw
      echo "== sweep with schedules $ok"
      timeout 150 "$exe" --direction gather --tiles 256 --reuse 8 --tile-bytes 32K \
        --iters 1,2,4,8,16,24,32,48,64,96,128,192,256,384,512,1024 --comm-sms 1,2,4,8,12,16,24,32 \
        --iters-timing 30 --schedule "$ok" 2> runs/x2-gather/raw/overlap.stderr.log | python3 -c "
import json, sys
for line in sys.stdin:
    if line.startswith('{'):
        rec = json.loads(line); rec.setdefault('family', 'overlap'); rec['job'] = 'overlap/gather'
        print(json.dumps(rec), flush=True)" > runs/x2-gather/raw/overlap.jsonl
      echo "== sweep: exit ${PIPESTATUS[0]}"
    fi
  fi
  # the reuse factor: C = 1 (intra_sm reads each block once, like inter_sm) and C = 32, T = 256 blocks
  if [ -n "$exe" ] && [ -d runs/x2-gather ] && [ $SECONDS -lt 300 ]; then
    mkdir -p runs/x2-gather/extra
    for c in 1 32; do
      timeout 60 "$exe" --direction gather --tiles 256 --reuse $c --tile-bytes 32K --iters 1,16,64,256,1024 \
        --iters-timing 20 --schedule compute_only,comm_only,intra_sm,inter_sm,inter_ce --comm-sms 4,8,16 \
        --ce-chunk 32 --ce-issue stream,preissued > "runs/x2-gather/extra/reuse-$c.jsonl" \
        2>> runs/x2-gather/extra/reuse.stderr.log
      echo "== reuse $c: exit $?"
    done
  fi
  for d in x2-gather x2-gather-repeat; do
    [ -d "runs/$d" ] && tar -czf "$out/$d.tar.gz" "runs/$d" $(ls runs/$d.log 2>/dev/null)
  done
  grep -hE "capture|comm_only|inter_ce .*K=   1 |inter_ce .*K= 256 " runs/x2-gather/raw/overlap.stderr.log 2>/dev/null
  grep -hE "error|intra_sm|K= 256" runs/x2-gather/extra/reuse.stderr.log 2>/dev/null | tail -n 16
elif [ "$mode" = compute ] || [ "$mode" = compute-quick ] || [ "$mode" = compute-holdout ]; then   # one GPU
  name=x1-compute; quick=""; families="compute host programs"
  if [ "$mode" = compute-quick ]; then name=x1-compute-quick; quick=--quick; fi
  if [ "$mode" = compute-holdout ]; then name=x1-compute-holdout; families="compute-holdout host"; fi
  nvidia-smi --query-gpu=clocks.sm,clocks.max.sm,clocks.mem,power.limit,clocks_event_reasons.active --format=csv
  BENCH_LIMIT_S=${BENCH_LIMIT_S:-470} run $name $families $quick
  nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv
  tail -n 12 runs/$name/raw/compute*.stderr.log runs/$name/raw/programs.stderr.log 2>/dev/null | cut -c1-160
  python3 - "runs/$name" <<'PY'
import collections, json, pathlib, sys
rows = collections.defaultdict(list)
for f in sorted(pathlib.Path(sys.argv[1], "raw").glob("*.jsonl")):
    for line in f.read_text().splitlines():
        r = json.loads(line)
        if r.get("record") in ("point", "skipped"):
            rows[(r["family"], r.get("op") or r.get("name"), r.get("mode", ""), r.get("dtype", ""))].append(r)
print(f"{'family':9s} {'op':18s} {'mode':6s} {'dtype':5s} {'pts':>4s} {'ok':>4s} {'skip':>4s}  best")
for (fam, op, mode, dt), rs in sorted(rows.items()):
    pts = [r for r in rs if r["record"] == "point"]
    ok = sum(bool(r.get("verified")) for r in pts)
    best = ""
    if pts and any(r.get("flops") for r in pts):
        best = f"{max(r['flops'] / r['time_s'] for r in pts) / 1e12:.0f} TFLOP/s"
    elif pts and any(r.get("bytes_moved") for r in pts):
        best = f"{max(r['bytes_moved'] / r['time_s'] for r in pts) / 1e12:.2f} TB/s"
    elif pts and fam == "host":
        best = f"host {min(r['host_s'] for r in pts) * 1e6:.2f} us/call"
    elif pts:
        best = f"{min(r['time_s'] for r in pts) * 1e6:.0f}-{max(r['time_s'] for r in pts) * 1e6:.0f} us"
    print(f"{fam:9s} {str(op):18s} {mode:6s} {dt:5s} {len(pts):4d} {ok:4d} {len(rs) - len(pts):4d}  {best}")
PY
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
