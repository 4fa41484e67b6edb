"""Write the model's predictions for runs not made yet (4 and 8 H200s), before any measurement exists.

    python tools/preregister.py docs/validation/h200/preregistered [nccl] [tp]

``nccl`` (``nccl_x4.json``, ``nccl_x8.json``): for each GPU count, NCCL op (the library's own algorithms) and
launch mode, predicted time and busbw from 1 KiB to 1 GiB. ``tp`` (``tp_x4.json``, ``tp_x8.json``): for gemm_rs,
ag_gemm and gemm_ar over the tensor-parallel worker's default shapes, the bound, the PyTorch + NCCL baseline,
the best (schedule, mechanism, SMs) and the inter-SM copy-engine schedule (what ``ce_pipeline`` measures). Both
with the profile calibrated on two GPUs (``h200-x2``) and the datasheet-only catalog, without multicast as the
machines run. Comparing these with the 4- and 8-GPU runs of issue 5, once such machines are lent, tests the
model out of sample. Default: both.
"""

from __future__ import annotations

import datetime
import json
import sys
from pathlib import Path

import numpy as np

import rooflib
from rooflib.conventions import OPS
from rooflib.specs import without_multicast


def _systems(gpus: int) -> list[tuple[str, rooflib.System]]:
    # as the machines run: NCCL_NVLS_ENABLE=0 (the calibrated profile already records it)
    return [
        (model, without_multicast(rooflib.load_system("hgx-h200", gpus=gpus, profile=profile)))
        for model, profile in (("calibrated", "h200-x2"), ("datasheet", None))
    ]


def tp(out: Path) -> None:
    from rooflib.workloads import predict_workload

    for gpus in (4, 8):
        rows = []
        for model, system in _systems(gpus):
            for workload in ("gemm_rs", "ag_gemm", "gemm_ar"):
                for m in (4096, 8192, 16384):
                    for k in (1024, 4096, 8192, 16384):
                        p = predict_workload(workload, system, gpus=gpus, params={"m": m, "n": 8192, "k": k})
                        ce = [c.time_s for c in p.schedules if (c.schedule, c.mechanism) == ("inter_sm", "copy_engine")]
                        rows.append(
                            {
                                "model": model,
                                "workload": workload,
                                "m": m,
                                "n": 8192,
                                "k": k,
                                "bound_s": p.bound_time_s,
                                "baseline_s": p.baseline_time_s,
                                "best": {
                                    "schedule": p.best.schedule,
                                    "mechanism": p.best.mechanism,
                                    "comm_sms": p.best.comm_sms,
                                    "time_s": p.best.time_s,
                                },
                                "copy_engine_inter_sm_s": min(ce) if ce else None,
                            }
                        )
        record = {
            "date": datetime.date.today().isoformat(),
            "system": "hgx-h200",
            "gpus": gpus,
            "note": "predicted before any 4- or 8-GPU measurement; profile h200-x2 was fitted on two GPUs",
            "predictions": rows,
        }
        (out / f"tp_x{gpus}.json").write_text(json.dumps(record, indent=1))
        print(f"wrote {out / f'tp_x{gpus}.json'}")


def nccl(out: Path) -> None:
    sizes = 2.0 ** np.arange(10, 31)
    for gpus in (4, 8):
        record: dict[str, object] = {
            "date": datetime.date.today().isoformat(),
            "system": "hgx-h200",
            "gpus": gpus,
            "note": "predicted before any 4- or 8-GPU measurement; profile h200-x2 was fitted on two GPUs",
            "predictions": [],
        }
        for model, system in _systems(gpus):
            for op in OPS:
                for launch in ("stream", "graph"):
                    r = rooflib.predict_collective(
                        op, system, gpus=gpus, nbytes=sizes, algorithm="library", launch=launch
                    )
                    record["predictions"].append(
                        {  # type: ignore[attr-defined]
                            "model": model,
                            "op": op,
                            "mode": launch,
                            "bytes": sizes.tolist(),
                            "time_s": r.time_s.tolist(),
                            "busbw_bytes_per_s": r.busbw.tolist(),
                            "algorithm": r.algorithm,
                        }
                    )
        (out / f"nccl_x{gpus}.json").write_text(json.dumps(record))
        print(f"wrote {out / f'nccl_x{gpus}.json'}")


def main(out: Path, what: list[str]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for name in what or ["nccl", "tp"]:
        if name not in ("nccl", "tp"):
            raise SystemExit(f"unknown set {name!r}: nccl, tp")
        (nccl if name == "nccl" else tp)(out)


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "docs/validation/h200/preregistered"), sys.argv[2:])
