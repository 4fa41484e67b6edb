#!/usr/bin/env bash
# smoke.sh: build every benchmark program with the machine's own nvcc and run a short sweep of each.
#
#   bash rooflib/bench/kernels/smoke.sh [OUTDIR]      (OUTDIR defaults to $OUT, else ./smoke-out)
#   SMOKE_PARTS=extra bash rooflib/bench/kernels/smoke.sh [OUTDIR]
#
# Default part (main): writes topology.txt, p2p.jsonl, latency.jsonl, ceilings.jsonl, multimem.jsonl (the
# expected refusal) and smoke.log to OUTDIR, and prints a summary table last.
# Part "extra": the one-GPU path (CUDA_VISIBLE_DEVICES=0: loopback, "peer": false) into onegpu_p2p.jsonl and
# onegpu_latency.jsonl, and compute-sanitizer memcheck over small peer transfers into sanitizer.log. NVLink multicast stays off: the multicast
# variables are exported below and multimem is only run to show that it refuses (never --allow-multicast).
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1

HERE=$(cd "$(dirname "$0")" && pwd)
DEST=${1:-${OUT:-./smoke-out}}
mkdir -p "$DEST"
BIN=$(mktemp -d)
LOG="$DEST/smoke.log"
: >"$LOG"
ARCH=${ARCH:-sm_90a}
NUM=${ARCH#sm_}

{
  date -u +%Y-%m-%dT%H:%M:%SZ
  nvidia-smi
  nvidia-smi topo -m
  nvidia-smi nvlink --status 2>/dev/null | head -60
  nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.draw,temperature.gpu \
    --format=csv
  nvcc --version | tail -2
} >"$DEST/topology.txt" 2>&1

echo "== build ($ARCH)" | tee -a "$LOG"
t0=$(date +%s)
pids=()
for k in p2p latency ceilings multimem; do
  nvcc -O3 -std=c++17 -lineinfo "-gencode=arch=compute_${NUM},code=sm_${NUM}" "-DRL_ARCH=\"$ARCH\"" \
    -I"$HERE" -o "$BIN/$k" "$HERE/$k.cu" >"$BIN/$k.build.log" 2>&1 &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || echo "BUILD FAILED (pid $p)" | tee -a "$LOG"; done
cat "$BIN"/*.build.log >>"$LOG"
echo "built in $(($(date +%s) - t0)) s" | tee -a "$LOG"
if command -v cuobjdump >/dev/null; then
  {
    echo "== SASS check"
    echo "ceilings HGMMA: $(cuobjdump --dump-sass "$BIN/ceilings" | grep -c HGMMA)  QGMMA: $(cuobjdump --dump-sass "$BIN/ceilings" | grep -c QGMMA)  HMMA: $(cuobjdump --dump-sass "$BIN/ceilings" | grep -c HMMA)"
    echo "p2p UBLKCP: $(cuobjdump --dump-sass "$BIN/p2p" | grep -c UBLKCP)  UBLKRED: $(cuobjdump --dump-sass "$BIN/p2p" | grep -c UBLKRED)  LDG.E.128: $(cuobjdump --dump-sass "$BIN/p2p" | grep -c 'LDG.E.128')  STG.E.128: $(cuobjdump --dump-sass "$BIN/p2p" | grep -c 'STG.E.128')  REDG: $(cuobjdump --dump-sass "$BIN/p2p" | grep -c 'RED')"
  } | tee -a "$LOG"
fi

run() {  # run NAME ARGS... : append stdout to NAME.jsonl, stderr to the log, time-limited
  local name=$1
  shift
  echo "== $name $*" >>"$LOG"
  timeout 150 "$BIN/$name" "$@" >>"$DEST/$name.jsonl" 2>>"$LOG"
  local rc=$?
  [ $rc -ne 0 ] && echo "!! $name $* exited $rc" | tee -a "$LOG"
  return 0
}

NGPU=$(nvidia-smi -L | wc -l)
PARTS=${SMOKE_PARTS:-main}

if [ "$PARTS" = extra ]; then
  echo "== one GPU visible (CUDA_VISIBLE_DEVICES=0)" | tee -a "$LOG"
  CUDA_VISIBLE_DEVICES=0 timeout 150 "$BIN/p2p" --mechanism copy_engine,tma,ldst_push,ldst_pull,tma_reduce,red \
    --bytes 64K,64M --sms 8,all --direction one_way,bidirectional --warmup 2 --iters 8 >"$DEST/onegpu_p2p.jsonl" 2>>"$LOG"
  echo "p2p exit $?" | tee -a "$LOG"
  CUDA_VISIBLE_DEVICES=0 timeout 150 "$BIN/latency" >"$DEST/onegpu_latency.jsonl" 2>>"$LOG"
  echo "latency exit $?" | tee -a "$LOG"
  if command -v compute-sanitizer >/dev/null; then
    echo "== compute-sanitizer memcheck, small peer transfers" | tee -a "$LOG"
    timeout 240 compute-sanitizer --tool memcheck "$BIN/p2p" --mechanism copy_engine,tma,ldst_push,ldst_pull,tma_reduce,red \
      --bytes 4K,1M --sms 4 --direction one_way,bidirectional --warmup 0 --iters 1 >"$DEST/sanitizer.log" 2>&1
    echo "memcheck exit $?" | tee -a "$LOG"
    timeout 120 compute-sanitizer --tool memcheck "$BIN/latency" --iters 200 --warmup 10 --repeats 1 >>"$DEST/sanitizer.log" 2>&1
    echo "memcheck latency exit $?" | tee -a "$LOG"
    grep -E "ERROR SUMMARY" "$DEST/sanitizer.log" | tee -a "$LOG"
    grep -c '"verified":true' "$DEST/sanitizer.log" | sed 's/^/verified points under memcheck: /' | tee -a "$LOG"
    grep -c '"verified":false' "$DEST/sanitizer.log" | sed 's/^/unverified points under memcheck: /' | tee -a "$LOG"
  fi
  python3 - "$DEST" <<'EOF' | tee -a "$LOG"
import json, sys, pathlib
d = pathlib.Path(sys.argv[1])
for name in ("onegpu_p2p.jsonl", "onegpu_latency.jsonl"):
    for line in (d / name).read_text().splitlines():
        r = json.loads(line)
        if r["record"] == "meta":
            print(name, "visible_gpus", r["visible_gpus"], "driver", r.get("driver_release"), "note:", r.get("note"))
        elif r["record"] == "point" and "mechanism" in r:
            print(f"  {r['mechanism']:<12}{r['direction']:<14}{r['bytes']:>10} sms={r['sms']:<4} peer={r['peer']} "
                  f"{r['bytes_per_s']/1e9:8.1f} GB/s verified={r['verified']}")
        elif r["record"] == "point":
            print(f"  {r['test']:<18}{r['scope']:<4} peer={r['peer']} {r['one_way_ns_median']:.1f} ns verified={r['verified']}")
        else:
            print(" ", r)
EOF
  rm -rf "$BIN"
  exit 0
fi
IT=(--warmup 2 --iters 8)
SWEEP_SMS=1,2,4,8,16,24,32,48,64,96,all
echo "== p2p ($NGPU GPUs)" | tee -a "$LOG"
# 1 GiB, every SM, every mechanism, one way and both ways
run p2p --mechanism copy_engine,tma,ldst_push,ldst_pull,tma_reduce,red --bytes 1G --sms all \
  --direction one_way,bidirectional "${IT[@]}"
run p2p --mechanism tma_reduce,red --dtype bf16 --bytes 1G --sms all "${IT[@]}"
run p2p --mechanism red --red-width 4 --bytes 256M --sms all "${IT[@]}"
# SMs needed to saturate, at 1 GiB
run p2p --mechanism tma,ldst_push,ldst_pull,tma_reduce,red --bytes 1G --sms $SWEEP_SMS --warmup 1 --iters 4
run p2p --mechanism tma --chunk 16K --stages 4 --bytes 1G --sms 4,8,16,32,all --warmup 1 --iters 4
run p2p --mechanism tma --chunk 64K --stages 3 --bytes 1G --sms 4,8,16,32,all --warmup 1 --iters 4
# message size sweep with every SM
run p2p --mechanism copy_engine,tma,ldst_push,ldst_pull --bytes 128,1K,4K,16K,64K,256K,1M,4M,16M,64M,256M \
  --sms all "${IT[@]}"
# loopback on GPU 0 (the one-GPU path)
run p2p --src 0 --dst 0 --mechanism copy_engine,tma,ldst_push,ldst_pull,tma_reduce,red --bytes 64K,256M \
  --sms all --direction one_way,bidirectional "${IT[@]}"

echo "== latency" | tee -a "$LOG"
run latency
[ "$NGPU" -ge 2 ] && run latency --tests peer_flag --src 0 --dst 0
echo "== ceilings" | tee -a "$LOG"
run ceilings
run ceilings --tests wgmma_bf16,wgmma_fp8 --warpgroups 1
run ceilings --tests wgmma_bf16,wgmma_fp8 --warpgroups 3
echo "== multimem (must refuse, exit 3)" | tee -a "$LOG"
"$BIN/multimem" >"$DEST/multimem.jsonl" 2>>"$LOG"
echo "multimem exit code $? (3 = refused, as intended)" | tee -a "$LOG"

python3 - "$DEST" <<'EOF' | tee -a "$LOG"
import json, sys, pathlib
d = pathlib.Path(sys.argv[1])
def load(name):
    p = d / name
    return [json.loads(l) for l in p.read_text().splitlines() if l.strip().startswith("{")] if p.exists() else []
p2p = [r for r in load("p2p.jsonl") if r.get("record") == "point"]
LINK = 450e9
print("\n== p2p at 1 GiB, all SMs (GB/s per direction; % of 450 GB/s NVLink4)")
for r in p2p:
    if r["bytes"] == 1 << 30 and r["peer"] and (r["sms"] in (0, max(x["sms"] for x in p2p)) ) and r.get("chunk_bytes", 32768) == 32768:
        extra = r.get("dtype", "") + (f" w{r['red_width_bytes']}" if "red_width_bytes" in r else "")
        print(f"  {r['mechanism']:<12}{extra:<9}{r['direction']:<14}sms={r['sms']:<4}{r['bytes_per_s']/1e9:8.1f}  {100*r['bytes_per_s']/LINK:5.1f}%  agg {r['aggregate_bytes_per_s']/1e9:7.1f}  verified={r['verified']}")
print("\n== SMs to reach 95% of the best, 1 GiB one way")
for mech in ("tma", "ldst_push", "ldst_pull", "tma_reduce", "red"):
    rs = sorted([r for r in p2p if r["mechanism"] == mech and r["bytes"] == 1 << 30 and r["direction"] == "one_way" and r["peer"] and r.get("chunk_bytes", 32768) == 32768 and r.get("dtype", "f32") == "f32" and r.get("red_width_bytes", 16) == 16], key=lambda r: r["sms"])
    if not rs: continue
    best = max(r["bytes_per_s"] for r in rs)
    need = next(r["sms"] for r in rs if r["bytes_per_s"] >= 0.95 * best)
    curve = " ".join(f"{r['sms']}:{r['bytes_per_s']/1e9:.0f}" for r in rs)
    print(f"  {mech:<11} best {best/1e9:6.1f} GB/s, 95% at {need} SMs   [{curve}]")
print("\n== size sweep, all SMs (GB/s)")
for mech in ("copy_engine", "tma", "ldst_push", "ldst_pull"):
    rs = sorted([r for r in p2p if r["mechanism"] == mech and r["direction"] == "one_way" and r["peer"] and r.get("chunk_bytes", 32768) == 32768 and r["sms"] in (0, 132)], key=lambda r: r["bytes"])
    print(f"  {mech:<11} " + " ".join(f"{r['bytes']}:{r['bytes_per_s']/1e9:.1f}" for r in rs))
bad = [r for r in p2p if not r["verified"]]
print(f"\n  p2p points: {len(p2p)}, unverified: {len(bad)}", [(r['mechanism'], r['bytes'], r['sms'], r['direction']) for r in bad][:8])
print("\n== latency (one-way ns, median)")
for r in load("latency.jsonl"):
    if r.get("record") == "point":
        print(f"  {r['test']:<18} {r['scope']:<4} peer={r['peer']!s:<6}{r['one_way_ns_median']:8.1f} ns  p10 {r['one_way_ns_p10']:.1f} p90 {r['one_way_ns_p90']:.1f}  {r['placement']}  verified={r['verified']}")
print("\n== ceilings")
for r in load("ceilings.jsonl"):
    if r.get("record") == "point":
        if "bytes_per_s" in r:
            print(f"  {r['test']:<14} {r['bytes_per_s']/1e9:9.1f} GB/s  verified={r['verified']}")
        else:
            print(f"  {r['test']:<14} {r['flop_per_s']/1e12:9.1f} TFLOP/s  wg={r.get('warpgroups_per_block','-')}  {r['instruction']}  verified={r['verified']}")
for name in ("p2p", "latency", "ceilings", "multimem"):
    for r in load(f"{name}.jsonl"):
        if r.get("record") in ("error", "refused", "skipped"):
            print(f"  {name}: {r}")
EOF
rm -rf "$BIN"
