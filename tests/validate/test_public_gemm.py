"""Published Blackwell GEMMs: the rows, the fit/held-out split and the efficiency fit."""

from __future__ import annotations

import numpy as np
import pytest

from rooflib.specs import default_catalog
from rooflib.specs.figures import Fraction
from rooflib.validate.public_gemm import (
    AO_B200_GEMM,
    AZURE_GB200_GEMM,
    PUBLIC_GEMM,
    PublicGemm,
    fit_efficiency,
    gemm_table,
)


def test_rows_turn_tflops_into_seconds_and_split_by_size() -> None:
    r = PublicGemm("gb200", "fp8", 8192, 8192, 8192, 2876.6, "azure-nd-gb200-v6", "x")
    assert r.time_s == pytest.approx(2 * 8192**3 / 2876.6e12)
    assert r.large and not PublicGemm("gb200", "fp8", 802816, 192, 768, 1459.5, "x", "x").large
    t = gemm_table(AZURE_GB200_GEMM)
    assert len(t) == len(AZURE_GB200_GEMM) and np.isfinite(t["predicted_s"]).all()
    assert set(t[t["role"] == "fit"]["dtype"]) == {"fp8", "fp4"}
    both = gemm_table(PUBLIC_GEMM)
    assert set(both["device"]) == {"gb200", "b200"}
    assert set(both[both["role"] == "fit"]["dtype"]) == {"fp8", "fp4", "bf16"}
    b200 = both[both["device"] == "b200"]
    assert sorted(b200[b200["role"] == "fit"]["m"]) == [4096, 6144, 8192]  # the large B200 bf16 rows fit


def test_b200_bf16_rows_are_the_published_kernel_times() -> None:
    """pytorch/ao PR 2427 prints 7.74E-04 s and 1.42E+15 FLOP/s for 8192 cubed: the row gives back both."""
    last = AO_B200_GEMM[-1]
    assert (last.device, last.dtype, last.m, last.n, last.k) == ("b200", "bf16", 8192, 8192, 8192)
    assert last.time_s == pytest.approx(7.74e-4) and last.tflops == pytest.approx(1420, rel=2e-3)
    assert [r.m for r in AO_B200_GEMM if r.large] == [4096, 6144, 8192]
    b200 = default_catalog().device("b200")
    share = fit_efficiency(b200, AO_B200_GEMM, "bf16")
    assert share == pytest.approx(b200.dtype_efficiency["bf16"].value, abs=1e-3)  # the catalog's is this fit
    assert share < 0.8  # below the Hopper tables' share (0.85): the B200 reaches less of its datasheet peak


def test_efficiency_fit_recovers_the_share_that_made_the_times() -> None:
    """Times the model itself makes at an fp8 share of 0.55: the fit finds 0.55."""
    device = default_catalog().device("gb200")
    made = device.model_copy(
        update={"dtype_efficiency": dict(device.dtype_efficiency) | {"fp8": Fraction(value=0.55, source="x")}}
    )
    shapes = [(4096, 4096, 4096), (8192, 8192, 8192), (6144, 12288, 12288)]
    t = gemm_table([PublicGemm("gb200", "fp8", m, n, k, 1.0, "x", "x") for m, n, k in shapes], made)
    rows = [
        PublicGemm("gb200", "fp8", m, n, k, 2 * m * n * k / s / 1e12, "x", "x")
        for (m, n, k), s in zip(shapes, t["predicted_s"], strict=True)
    ]
    assert fit_efficiency(device, rows, "fp8") == pytest.approx(0.55, rel=1e-3)
    with pytest.raises(ValueError, match="no large fp4 rows"):
        fit_efficiency(device, rows, "fp4")


def test_catalog_blackwell_shares_come_from_the_public_runs() -> None:
    for name in ("gb200", "b200"):
        effs = default_catalog().device(name).dtype_efficiency
        assert "azure-nd-gb200-v6" in effs["fp8"].source and "azure-nd-gb200-v6" in effs["fp4"].source
        assert "pytorch-ao-2427" in effs["bf16"].source
