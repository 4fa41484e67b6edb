"""The family registry: every family declares every part (or says why not), the schemas hold on the committed
runs, and the runner, ``rooflib validate`` and its report find families only through the registry."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import rooflib
from rooflib.bench import plan
from rooflib.calibrate.data import load_results
from rooflib.errors import RooflibError
from rooflib.families import PARTS, Absent, Family, Figure, Job, Ref, Schema, registry
from rooflib.validate.predict import BACK_TO_BACK_SOURCES, predict_frame

ROOT = Path(__file__).resolve().parents[2]
RUNS = sorted(p.parent for p in (ROOT / "docs" / "validation").glob("**/runs/*/results.csv"))


def _kind_ok(part: str, value: Any) -> bool:
    if part == "schema":
        return isinstance(value, Schema) and bool(value.required)
    if part == "reference":
        return isinstance(value, tuple) and isinstance(value[0], str) and callable(value[1])
    if part == "fit":
        return bool(value) and all(isinstance(r, Ref) and callable(r.resolve()) for r in value)
    if part == "display":
        return bool(value) and all(isinstance(f, Figure) and callable(f.draw) for f in value)
    return callable(value)


@pytest.mark.parametrize("fam", registry.FAMILIES, ids=lambda f: f.name)
def test_every_family_declares_every_part(fam: Family) -> None:
    assert set(PARTS) == {f.name for f in dataclasses.fields(Family)} - {"names", "doc", "run"}
    assert fam.doc.strip() and fam.names
    for part, value in fam.parts().items():
        assert value is not None, f"{fam.name}.{part} is None: declare it or say Absent(why)"
        if isinstance(value, Absent):
            assert part != "schema", f"{fam.name} has no record schema"
            assert value.why.strip()
        else:
            assert _kind_ok(part, value), f"{fam.name}.{part} = {value!r}"
    # parts that only make sense together
    assert isinstance(fam.tables, Absent) == isinstance(fam.section, Absent), fam.name
    if fam.run in ("all", "name"):
        assert not isinstance(fam.plan, Absent), f"{fam.name} is run by rooflib bench but plans no jobs"
    else:
        assert isinstance(fam.plan, Absent), f"{fam.name} ({fam.run}) must not be planned by rooflib bench"


def test_absent_parts_say_why() -> None:
    with pytest.raises(ValueError, match="say why"):
        Absent(" ")


def test_names_figures_and_importers_are_consistent() -> None:
    names = [n for fam in registry.FAMILIES for n in fam.names]
    assert len(names) == len(set(names))
    files = [f.file for fam in registry.with_part("display") for f in fam.display]  # type: ignore[union-attr]
    assert len(files) == len(set(files))
    assert [f.file for f in registry.figures()] == [
        "p2p_sizes.png",
        "p2p_sms.png",
        "nccl_stream.png",
        "nccl_graph.png",
        "gemm.png",
    ]
    for imp in registry.IMPORTERS:
        assert callable(imp.run.resolve()) and imp.doc
        assert all(registry.family(f) for f in imp.families)
        assert set(imp.excluded_from_fit) <= set(imp.families)
        assert isinstance(imp.fit, Absent) or all(callable(r.resolve()) for r in imp.fit)
    assert registry.importer("nccl-tests").source == "nccl-tests"
    assert BACK_TO_BACK_SOURCES == ("nccl-tests", "aiconfigurator")
    with pytest.raises(RooflibError, match="unknown measurement family 'p2q'"):
        registry.family("p2q")


def test_bench_families_come_from_the_registry() -> None:
    assert plan.FAMILIES == ("p2p", "latency", "ceilings", "gemm", "nccl", "overlap", "tp")
    assert plan.SINGLE_GPU_FAMILIES == ("compute", "compute-holdout", "host", "programs")
    for name in (*plan.FAMILIES, *plan.SINGLE_GPU_FAMILIES):
        for gpus in (1, 2):
            for job in plan.plan_jobs([name], gpus, quick=True):
                assert job.family == name and job.key.startswith(name + "/"), job
    for name in ("pkb", "framework_allreduce"):  # in the registry, but not run by `rooflib bench`
        with pytest.raises(RooflibError, match="unknown benchmark family"):
            plan.plan_jobs([name], 2)


@pytest.mark.parametrize("run", RUNS, ids=lambda p: str(p.relative_to(ROOT / "docs" / "validation")))
def test_schemas_hold_on_the_committed_runs(run: Path) -> None:
    frame = load_results(run)
    for name, rows in frame.groupby("family"):
        fam = registry.family(str(name))  # every measured family is registered
        assert fam.schema.missing(rows) == [], f"{run.name}: {name} rows lack {fam.schema.missing(rows)}"


_DISPATCH_MODULES = (
    "rooflib/bench/runner.py",
    "rooflib/bench/plan.py",
    "rooflib/validate/predict.py",
    "rooflib/validate/report.py",
    "rooflib/validate/write.py",
    "rooflib/validate/inputs.py",
)


@pytest.mark.parametrize("path", _DISPATCH_MODULES)
def test_dispatchers_name_no_family(path: str) -> None:
    """No family name compared, looked up or used as a key in the modules that dispatch: only the registry."""
    names = {n for fam in registry.FAMILIES for n in fam.names}
    tree = ast.parse((ROOT / path).read_text())
    found = []
    for node in ast.walk(tree):
        consts: list[ast.expr] = []
        if isinstance(node, ast.Compare):
            consts = [node.left, *node.comparators]
        elif isinstance(node, ast.Dict):  # a table keyed by family names (a record's "nccl" version key is fine)
            keys = [k for k in node.keys if isinstance(k, ast.Constant) and k.value in names]
            consts = keys if len(keys) > 1 else []
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "isin":
            consts = [e for a in node.args if isinstance(a, ast.List | ast.Tuple) for e in a.elts]
        found += [c.value for c in consts if isinstance(c, ast.Constant) and c.value in names]
    assert found == [], f"{path} dispatches on family names {found}: look them up in rooflib.families.registry"


def _fake_family(seen: list[str]) -> Family:
    def predict(system: Any, rows: pd.DataFrame) -> pd.Series:
        return pd.Series(1.0, index=rows.index)

    def draw(v: Any, path: Path) -> str:
        seen.append(path.name)
        return path.name

    def section(v: Any, out: Path, plots: bool) -> list[str]:
        return ["## fake section", ""]

    return Family(
        names=("fake",),
        doc="a family made up for the test",
        run="name",
        plan=lambda name, gpus, quick: [Job(name, f"{name}/all", "module", "fake.worker", ())],
        schema=Schema(required=("name", "time_s")),
        predict=predict,
        checks=Absent("none"),
        reference=Absent("none"),
        tables=lambda frame, system: {"fake": pd.DataFrame({"a": [1]})},
        section=section,
        fit=Absent("none"),
        display=(Figure("fake.png", draw, rank=5),),
    )


def test_runner_and_validate_dispatch_through_the_registry(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A family added to the registry alone is planned, predicted, compared, drawn and written."""
    seen: list[str] = []
    fake = _fake_family(seen)
    monkeypatch.setattr(registry, "FAMILIES", (*registry.FAMILIES, fake))
    monkeypatch.setattr(registry, "_BY_NAME", {**registry._BY_NAME, "fake": fake})
    assert [j.key for j in plan.plan_jobs(["fake"], 1)] == ["fake/all"]

    system = rooflib.load_system("hgx-h200", gpus=2)
    frame = pd.DataFrame(
        {"family": ["fake", "p2p"], "name": ["x", "not_a_mechanism"], "variant": ["", "one_way"], "peer": [True] * 2}
        | {"bytes": [1.0, 1.0], "sms": [1.0, 1.0], "time_s": [2.0, 2.0], "gpus": [1, 2], "verified": [True] * 2}
    )
    pred = predict_frame(system, frame)
    assert pred.iloc[0] == 1.0 and np.isnan(pred.iloc[1])

    from rooflib.validate.report import Validation, _schedule_tables
    from rooflib.validate.write import write_report

    tables = _schedule_tables(frame, "hgx-h200", 2, None)
    assert list(tables) == ["fake"]
    frame["pred_datasheet"] = pred
    v = Validation(frame, pd.DataFrame(), ("datasheet",), tables)
    text = write_report(v, tmp_path, system="hgx-h200", results=tmp_path, profile=None).read_text()
    assert seen == ["fake.png"] and text.index("![fake.png]") < text.index("## fake section")
    assert (tmp_path / "fake.csv").is_file()
