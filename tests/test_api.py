"""The public API: exactly these names, each importable, results convertible to pandas."""

from __future__ import annotations

import pandas as pd

import rooflib

PUBLIC = {
    "ALGORITHMS",
    "MECHANISMS",
    "OPS",
    "Catalog",
    "Program",
    "ProgramBuilder",
    "GroupError",
    "RooflibError",
    "SpecError",
    "System",
    "Topology",
    "UnitError",
    "UnknownNameError",
    "__version__",
    "best_mechanism",
    "bus_factor",
    "default_catalog",
    "load_system",
    "parse_quantity",
    "parse_size",
    "predict_collective",
    "predict_program",
    "predict_transfer",
    "predict_workload",
    "roofline",
    "roofs",
    "transfer_time",
}


def test_public_names() -> None:
    assert set(rooflib.__all__) == PUBLIC
    for name in PUBLIC:
        assert getattr(rooflib, name) is not None


def test_results_to_frame() -> None:
    h100 = rooflib.load_system("hgx-h100")
    c = rooflib.predict_collective("all_reduce", h100, nbytes=[1 << 20, 1 << 30]).to_frame()
    assert isinstance(c, pd.DataFrame) and len(c) == 2
    assert {"bytes", "algorithm", "time_s", "busbw_bytes_per_s", "time_s[ring]"} <= set(c.columns)
    t = rooflib.predict_transfer(h100, 1 << 20).to_frame()
    assert t["best"].sum() == 1 and (t["time_s"] > 0).all()
    w = rooflib.predict_workload("gemm_rs", h100, gpus=8).to_frame()
    assert (w["time_s"] >= w["bound_time_s"]).all() and "library" in set(w["mechanism"])
