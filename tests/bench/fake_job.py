"""A stand-in for a benchmark program or torch worker, so the runner can be tested without a GPU.

    python fake_job.py [--out FILE] [--points N] [--exit CODE] [--partial] [--bad-line] [--nan]
                       [--sleep S] [--child-pid-file F] [--ignore-term]

Writes JSON Lines to ``--out`` (a worker) or stdout (a program): a meta record with an NCCL version, then
``--points`` point records (each with the NCCL_NVLS_ENABLE it saw), then the requested damage; ``--sleep``
keeps it running (with a ``sleep`` child whose pid goes to ``--child-pid-file``).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--out")
    p.add_argument("--points", type=int, default=3)
    p.add_argument("--exit", type=int, default=0)
    p.add_argument("--partial", action="store_true")
    p.add_argument("--bad-line", action="store_true")
    p.add_argument("--nan", action="store_true")
    p.add_argument("--sleep", type=float, default=0.0)
    p.add_argument("--child-pid-file")
    p.add_argument("--ignore-term", action="store_true")
    p.add_argument("--tag", default="")
    a = p.parse_args()
    sink = open(a.out, "a") if a.out else sys.stdout
    sink.write("not a record: programs may print other text\n" if not a.out else "")
    sink.write(json.dumps({"record": "meta", "program": "fake", "nccl": "2.99.1"}) + "\n")
    for i in range(a.points):
        rec = {
            "record": "point",
            "program": "fake",
            "test": "t",
            "bytes": 1024 * (i + 1),
            "time_s_median": 1e-6 * (i + 1),
            "verified": True,
            "tag": a.tag,
            "seen_nvls": os.environ.get("NCCL_NVLS_ENABLE"),
            "seen_symm": os.environ.get("TORCH_SYMM_MEM_DISABLE_MULTICAST"),
        }
        if a.nan:
            rec["bytes_per_s"] = float("nan")
        sink.write(json.dumps(rec) + "\n")
    if a.bad_line:
        sink.write('{"record": "point", "time_s_median": nan}\n')  # what a C printf of NaN gives
    sink.flush()
    if a.ignore_term:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if a.sleep:
        child = subprocess.Popen(["sleep", str(a.sleep)])  # same process group: must die with the job
        if a.child_pid_file:
            with open(a.child_pid_file + ".tmp", "w") as fh:
                fh.write(f"{os.getpid()} {child.pid}\n")
            os.replace(a.child_pid_file + ".tmp", a.child_pid_file)
        time.sleep(a.sleep)
    if a.partial:
        sink.write('{"record": "point", "program": "fake", "te')
        sink.flush()
    sys.exit(a.exit)


if __name__ == "__main__":
    main()
