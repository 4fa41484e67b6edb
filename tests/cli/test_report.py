"""``rooflib report`` and ``rooflib plot``: files written, summary consistent with the library."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import rooflib
from rooflib.cli.report import COLLECTIVE_SIZES, PLOTS, REPORT_OPS, TRANSFER_SIZES, collective_groups

from .conftest import invoke

SYSTEMS = rooflib.default_catalog().names("system")


def _png(path: Path) -> bool:
    return path.is_file() and path.stat().st_size > 1000 and path.read_bytes()[:4] == b"\x89PNG"


def _png_size(path: Path) -> tuple[int, int]:
    """(width, height) in pixels, from the PNG header."""
    head = path.read_bytes()[16:24]
    return int.from_bytes(head[:4], "big"), int.from_bytes(head[4:], "big")


def test_report_writes_summary_and_plots(tmp_path: Path) -> None:
    out = tmp_path / "report"
    result = invoke("report", "--out", str(out), "--systems", "hgx-h100,dgx-h100-superpod")
    assert result.exit_code == 0, result.output
    assert "== hgx-h100" in result.stdout and "== dgx-h100-superpod" in result.stdout
    summary = json.loads((out / "summary.json").read_text())
    assert [s["name"] for s in summary["systems"]] == ["hgx-h100", "dgx-h100-superpod"]
    for s in summary["systems"]:
        assert set(s["plots"]) == set(PLOTS)
        for rel in s["plots"].values():
            assert _png(out / rel)
        assert [t["bytes"] for t in s["transfers"]] == list(TRANSFER_SIZES)
    h100, pod = summary["systems"]
    assert {c["gpus"] for c in h100["collectives"]} == {8}
    assert {c["gpus"] for c in pod["collectives"]} == {8, 64}  # the scale-up domain and one multi-node case
    assert len(pod["collectives"]) == 2 * len(REPORT_OPS) * len(COLLECTIVE_SIZES)
    # the cluster's collective plot has a second panel for the multi-node group: about twice as tall
    one, two = (_png_size(out / s["plots"]["collective"])[1] for s in summary["systems"])
    assert two > 1.7 * one
    big = next(c for c in h100["collectives"] if c["op"] == "all_reduce" and c["bytes"] == 2**30)
    expected = rooflib.predict_collective("all_reduce", rooflib.load_system("hgx-h100"), nbytes=2**30, gpus=8)
    assert big["time_s"] == pytest.approx(float(expected.time_s[0]))
    assert h100["roofs"]["compute_flops_per_s"] == pytest.approx(rooflib.roofs(rooflib.load_system("hgx-h100")).compute)


def test_report_covers_the_whole_catalog(tmp_path: Path) -> None:
    out = tmp_path / "all"
    result = invoke("report", "--out", str(out), "--no-plots", "--json")
    assert result.exit_code == 0, result.output
    printed = json.loads(result.stdout)
    assert printed == json.loads((out / "summary.json").read_text())
    assert [s["name"] for s in printed["systems"]] == SYSTEMS
    for s in printed["systems"]:
        assert "plots" not in s
        assert all(c["gpus"] <= s["gpus"] and c["time_s"] > 0 for c in s["collectives"])
        assert {t["best"] for t in s["transfers"]} <= set(rooflib.MECHANISMS)


def test_report_applies_a_profile_to_its_system_only(tmp_path: Path, profile_yaml: str) -> None:
    args = ("report", "--no-plots", "--json", "--systems", "hgx-h100,hgx-h200")
    base = json.loads(invoke(*args, "--out", str(tmp_path / "a")).stdout)["systems"]
    slow = json.loads(invoke(*args, "--out", str(tmp_path / "b"), "--profile", profile_yaml).stdout)["systems"]
    assert slow[0]["profile"] == "test" and slow[1]["profile"] is None
    assert slow[1]["collectives"] == base[1]["collectives"]
    assert sum(c["time_s"] for c in slow[0]["collectives"]) > sum(c["time_s"] for c in base[0]["collectives"])


@pytest.mark.parametrize(
    "args",
    [
        ("roofline", "--system", "dgx-h100-superpod", "--achievable", "--kernel", "g:1e12:1e9:1e8:1e7"),
        ("comm-roofline", "--system", "hgx-b200"),
        ("comm-roofline", "--system", "hgx-h100", "--kernel", "g:1e12:1e9:1e8"),
        ("collective", "--system", "hgx-h100", "--op", "all_gather", "--algorithms", "ring,direct"),
        ("collective", "--systems", "hgx-a100,hgx-h100,hgx-b200", "--gpus", "8"),
        ("collective", "--system", "dgx-h100-superpod", "--gpus", "64"),
        ("collective", "--system", "dgx-h100-superpod", "--gpus", "8,64"),
        ("mechanism-map", "--system", "hgx-h100", "--reduction", "peer"),
        ("mechanism-map", "--system", "hgx-a100", "--reduction", "peer"),
    ],
    ids=lambda a: "-".join(a[:2]),
)
def test_plot_commands_write_images(args: tuple[str, ...], tmp_path: Path) -> None:
    out = tmp_path / "plot.png"
    result = invoke("plot", *args, "--out", str(out))
    assert result.exit_code == 0, result.output
    assert _png(out) and f"wrote {out}" in result.stdout


def test_plot_with_profile(tmp_path: Path, profile_yaml: str) -> None:
    out = tmp_path / "p.png"
    result = invoke(
        "plot", "collective", "--systems", "hgx-h100,hgx-h200", "--profile", profile_yaml, "--out", str(out)
    )
    assert result.exit_code == 0, result.output
    assert _png(out)


def test_report_groups_of_every_cluster_span_domains() -> None:
    for name in SYSTEMS:
        system = rooflib.load_system(name)
        groups = collective_groups(system)
        assert groups[0] == system.domain_gpus
        if len(groups) > 1:  # the multi-node group leaves the NVLink domain
            assert groups[1] > system.domain_gpus and groups[1] % system.domain_gpus == 0


def test_report_collective_plot_of_a_cluster_shows_both_groups() -> None:
    from rooflib.plot import CollectiveGroupsDisplay

    pod = rooflib.load_system("dgx-h100-superpod")
    disp = CollectiveGroupsDisplay.from_system(pod, "all_reduce", collective_groups(pod), sizes=[2.0**20, 2.0**30])
    titles = [ax.get_title() for ax in disp.axes_]
    assert [f"on {n} GPUs" in t for n, t in zip(collective_groups(pod), titles, strict=True)] == [True, True]


@pytest.mark.parametrize("names", ["", " ", ",", " , "])
def test_report_refuses_an_empty_system_list(names: str, tmp_path: Path) -> None:
    result = invoke("report", "--out", str(tmp_path / "r"), "--systems", names, "--no-plots")
    assert result.exit_code == 2, result.output
    err = result.stderr.strip()
    assert err.startswith("error: --systems") and len(err.splitlines()) == 1
    assert "hgx-h100" in err  # the valid names
    assert not (tmp_path / "r").exists()


def test_report_unknown_system_lists_valid_systems(tmp_path: Path) -> None:
    result = invoke("report", "--out", str(tmp_path / "r"), "--systems", "hgx-h100,nosuch", "--no-plots")
    assert result.exit_code == 2
    err = result.stderr.strip()
    assert err.startswith("error: unknown system 'nosuch'") and len(err.splitlines()) == 1
    assert all(name in err for name in SYSTEMS)


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (("mechanism-map", "--system", "hgx-a100", "--reduction", "switch"), ["hgx-a100", "in-network reduction"]),
        (("roofline", "--system", "hgx-h100", "--kernel", "idle:0:1e9:1e8"), ["'idle' has no FLOPs"]),
        (("comm-roofline", "--system", "hgx-h100", "--kernel", "local:1e12:1e9:0"), ["no kernel with network bytes"]),
        (("collective", "--system", "hgx-h100", "--gpus", "1"), ["at least two GPUs"]),
        (("collective", "--system", "hgx-h100", "--algorithms", "hierarchical"), ["hierarchical"]),
        (("collective", "--system", "hgx-h100", "--gpus", "8,x"), ["--gpus"]),
        (("collective", "--systems", "hgx-h100,hgx-b200", "--gpus", "8,16"), ["--gpus"]),
    ],
    ids=lambda a: "-".join(a[:2]) if isinstance(a, tuple) else "",
)
def test_plots_that_would_be_blank_are_refused(args: tuple[str, ...], words: list[str], tmp_path: Path) -> None:
    out = tmp_path / "blank.png"
    result = invoke("plot", *args, "--out", str(out))
    assert result.exit_code == 2, result.output
    err = result.stderr.strip()
    assert err.startswith("error: ") and len(err.splitlines()) == 1, err
    assert all(w in err for w in words), err
    assert not out.exists()
