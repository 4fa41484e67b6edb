"""Speed of rooflib itself (not timed tests): run ``python benchmarks/run.py [--json out.json]``.

Measures, on the current machine and one core:
- predictions per second when vectorised over message sizes (collective and transfer models);
- ``import rooflib`` time (fresh interpreter, median of 5);
- CLI latency of ``rooflib collective ... --json`` (fresh process, median of 5);
- building the 576-GPU NVLink pod's topology and its networkx graph;
- predicting an all-reduce on a 16,384-GPU cluster from a cold start;
- workload predictions (bound, baseline, every schedule, mechanism and SM split): one gemm_rs on 8 H100s, and a
  what-if sweep of gemm_rs over 5 systems x 16 values of K.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable

import numpy as np


def _best_of(fn: Callable[[], object], repeat: int = 5) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def _median_subprocess(cmd: list[str], repeat: int = 5) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _trace(results: dict[str, float], system: object) -> None:
    """Tracing and predicting a transformer-layer program (3 layers, 39 ops) on 8 GPUs, after a first trace
    (the first trace in a process imports torch's fake-tensor machinery, ~1.6 s, reported separately)."""
    try:
        import torch  # noqa: F401
    except ImportError:
        return
    import importlib.util
    from pathlib import Path

    import rooflib
    from rooflib.trace import trace_program

    path = Path(__file__).resolve().parents[1] / "tests" / "trace" / "programs" / "block.py"
    spec = importlib.util.spec_from_file_location("block", path)
    assert spec is not None and spec.loader is not None
    block = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(block)

    def run() -> int:
        program = trace_program(block.layers, block.inputs, world=8, params={"n_layers": 3})
        rooflib.predict_program(program, system)  # type: ignore[arg-type]
        return len(program.ops)

    t0 = time.perf_counter()
    ops = run()
    results["trace_first_in_process_s"] = time.perf_counter() - t0
    results["trace_and_predict_ops"] = float(ops)
    results["trace_and_predict_8_gpus_s"] = _best_of(run, repeat=5)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--json", help="write results to this file")
    args = parser.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")

    import rooflib
    from rooflib.transfer import transfer_time

    results: dict[str, float] = {}
    h100 = rooflib.load_system("hgx-h100")
    sizes = np.logspace(2, 10, 1_000_000)
    rooflib.predict_collective("all_reduce", h100, nbytes=[1.0])  # build and cache the plans
    t = _best_of(lambda: rooflib.predict_collective("all_reduce", h100, nbytes=sizes, algorithm="ring"))
    results["collective_predictions_per_s_one_algorithm"] = sizes.size / t
    t = _best_of(lambda: rooflib.predict_collective("all_reduce", h100, nbytes=sizes))
    results["collective_predictions_per_s_auto_6_algorithms"] = sizes.size / t
    t = _best_of(lambda: transfer_time(h100, "tma", sizes, 16))
    results["transfer_predictions_per_s"] = sizes.size / t

    py = sys.executable
    results["import_rooflib_s"] = _median_subprocess([py, "-c", "import rooflib"])
    results["import_python_baseline_s"] = _median_subprocess([py, "-c", "pass"])
    cli = shutil.which("rooflib")
    cmd = [cli] if cli else [py, "-m", "rooflib"]
    cmd += ["collective", "all_reduce", "--system", "hgx-h100", "--gpus", "8", "--bytes", "1GiB", "--json"]
    results["cli_collective_s"] = _median_subprocess(cmd)

    def build_576() -> None:
        topo = rooflib.Topology(rooflib.load_system("nvl576"))
        topo.graph  # noqa: B018 - building the networkx graph is what is timed

    results["nvl576_topology_and_graph_s"] = _best_of(build_576, repeat=3)

    def cold_16k() -> None:
        pod = rooflib.load_system("dgx-h100-superpod", gpus=16384)
        rooflib.predict_collective("all_reduce", pod, nbytes=2.0 ** np.arange(10, 34))

    results["superpod_16384_all_reduce_cold_s"] = _best_of(cold_16k, repeat=3)

    from rooflib.workloads import predict_workload

    params = {"m": 32768, "n": 32768, "k": 8 * 4096}
    predict_workload("gemm_rs", h100, gpus=8, params=params)  # warm the collective plans
    results["workload_prediction_gemm_rs_8xh100_s"] = _best_of(
        lambda: predict_workload("gemm_rs", h100, gpus=8, params=params), repeat=10
    )
    systems = [rooflib.load_system(n) for n in ("hgx-a100", "hgx-h100", "hgx-b200", "gb200-nvl72", "nvl576")]

    def sweep() -> None:
        for system in systems:
            for k in 2 ** np.arange(9, 25, dtype=np.int64)[:16]:
                predict_workload("gemm_rs", system, gpus=8, params={"m": 32768, "n": 32768, "k": int(k)})

    results["whatif_gemm_rs_5_systems_16_sizes_s"] = _best_of(sweep, repeat=3)
    _trace(results, h100)
    meta = {"python": platform.python_version(), "machine": platform.machine(), "cpu": platform.processor()}
    width = max(len(k) for k in results)
    for key, value in results.items():
        print(f"{key:<{width}}  {value:.4g}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"meta": meta, "results": results}, fh, indent=2)


if __name__ == "__main__":
    main()
