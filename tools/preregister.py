"""Write the model's predictions for runs not made yet (4 and 8 H200s), before any measurement exists.

    python tools/preregister.py docs/validation/h200/preregistered

For each GPU count, NCCL op (the library's own algorithms) and launch mode: predicted time and busbw from 1 KiB to
1 GiB with the profile calibrated on two GPUs (``h200-x2``), and the datasheet-only catalog. Comparing these with
the 4- and 8-GPU runs of issue 5, once such machines are lent, tests the profile out of sample.
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


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    sizes = 2.0 ** np.arange(10, 31)
    for gpus in (4, 8):
        record: dict[str, object] = {
            "date": datetime.date.today().isoformat(),
            "system": "hgx-h200",
            "gpus": gpus,
            "note": "predicted before any 4- or 8-GPU measurement; profile h200-x2 was fitted on two GPUs",
            "predictions": [],
        }
        for model, profile in (("calibrated", "h200-x2"), ("datasheet", None)):
            # as the machines run: NCCL_NVLS_ENABLE=0 (the calibrated profile already records it)
            system = without_multicast(rooflib.load_system("hgx-h200", gpus=gpus, profile=profile))
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


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "docs/validation/h200/preregistered"))
