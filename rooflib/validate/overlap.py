"""The overlap microbenchmark (``family == "overlap"``) against the schedule model.

The two parts are taken from the benchmark's own stand-alone runs, as a user would measure them before fusing:
compute from the ``compute_only`` fit (``compute_rate`` records: time per trip, per-tile overhead, launch), the
send path from ``comm_only`` (the copy engine, and TMA on 1..S SMs, interpolated log-log between the measured
SM counts, as ``Stage.send_time``). Everything else is
the schedule model of :mod:`rooflib.schedule.model`: the comparison tests how it composes the two and picks
the schedule and the SM split.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from functools import partial
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from rooflib.compute.cost import ComputeCost
from rooflib.schedule import Comm, Stage, schedule_time
from rooflib.specs.figures import Duration
from rooflib.specs.resolve import System
from rooflib.transfer import Mechanism, transfer_time

__all__ = ["overlap_table", "schedule_choice_summary"]


class _Point(NamedTuple):
    schedule: str
    comm_sms: Any
    iters: Any
    flops_per_tile: Any
    time_s: Any
    ce_chunk: Any = None


def _loop(
    trip_s: float, overhead_s: float, iters: int, flops_per_tile: float, tiles: int, total_sms: int, sms: int | None
) -> ComputeCost:
    """The benchmark's compute on ``sms`` SMs: its tiles in waves, each ``iters`` trips plus the tile overhead."""
    k = total_sms if sms is None else sms
    t = math.ceil(tiles / k) * (iters * trip_s + overhead_s)
    return ComputeCost(
        flops=flops_per_tile * tiles,
        hbm_bytes=0.0,
        compute_s=t,
        memory_s=0.0,
        time_s=t,
        unit="tensor",
        dtype="bf16",
        peak_flops_per_s=flops_per_tile * tiles / t if t > 0 else 1.0,
        peak_bytes_per_s=1.0,
        sms=k,
    )


def _send_path(system: System, pts: pd.DataFrame, egress: float) -> Callable[[str, int, float], float]:
    """Measured stand-alone send time by mechanism and SM count (copy engine: its one whole-buffer measurement),
    interpolated log-log between the measured SM counts; other byte counts (an intra-SM kernel moving its inputs
    ``reuse`` times) scale it by the calibrated transfer model's ratio, so fixed costs are not multiplied."""
    comm = pts[pts["schedule"] == "comm_only"]
    if "send_path" in comm:
        comm = comm[comm["send_path"].isin(["copy_engine", "tma"])]
    ce = float(comm[comm["comm_sms"].fillna(0) == 0]["time_s"].median())
    tma = comm[comm["comm_sms"].fillna(0) > 0].groupby("comm_sms")["time_s"].median()
    xs, ys = np.log(tma.index.to_numpy(dtype=float)), np.log(tma.to_numpy(dtype=float))

    def send(mech: str, sms: int, nbytes: float) -> float:
        model: Mechanism = "copy_engine" if mech == "copy_engine" else "tma"
        base = ce if model == "copy_engine" else float(np.exp(np.interp(np.log(max(sms, 1)), xs, ys)))
        if nbytes == egress:
            return base
        used = max(sms, 1)
        ratio = float(transfer_time(system, model, nbytes, used)) / float(transfer_time(system, model, egress, used))
        return base * ratio

    return send


def _ce_pieces(pts: pd.DataFrame) -> dict[Any, float]:
    """Stand-alone time of the copy engine moving the inputs in pieces with a flag after each, per piece size."""
    if "send_path" not in pts or "ce_chunk" not in pts:
        return {}
    alone = pts[(pts["schedule"] == "comm_only") & (pts["send_path"] == "copy_engine_chunks")]
    if "ce_issue" in alone:
        alone = alone[alone["ce_issue"] == "stream"]
    return {k: float(v) for k, v in alone.groupby("ce_chunk")["time_s"].median().items()}


def _with_launch(system: System, launch: float) -> System:
    """``system`` with this program's launch cost, and no copy-engine restart or piece cost on top of the
    measured send times (which include them)."""
    src = "measured: overlap compute_only fit"
    zero = Duration(value=0.0, source=src)
    ce = system.device.transfer.copy_engine.model_copy(update={"fixed_cost": zero, "piece_cost": zero})
    transfer = system.device.transfer.model_copy(update={"copy_engine": ce})
    device = system.device.model_copy(
        update={"kernel_launch": Duration(value=launch, source=src), "transfer": transfer}
    )
    return dataclasses.replace(system, device=device)


_SCHEDULE = {  # measured schedule -> (model schedule, mechanism)
    "sequential": ("sequential", "copy_engine"),
    "intra_sm": ("intra_sm", "tma"),
    "inter_sm": ("inter_sm", "tma"),
    "inter_ce": ("inter_sm", "copy_engine"),
}


def _job_points(system: System, job: str, r: dict[str, Any], pts: pd.DataFrame) -> list[dict[str, Any]]:
    gather = bool("direction" in pts and (pts["direction"] == "gather").any())
    tiles, block = int(r["tiles"]), float(r["tile_bytes"])
    reuse = float(pts["reuse"].dropna().iloc[0]) if gather and "reuse" in pts else 1.0
    egress = tiles / reuse * block  # gather: each input block arrives once; scatter: each output tile leaves once
    waves = math.ceil(tiles / int(system.device.sms))
    launch = max(0.0, float(r["intercept_s"]) - waves * float(r["tile_overhead_s"]))
    sys_ = _with_launch(system, launch)
    send = _send_path(system, pts, egress)
    if "ce_issue" in pts:  # the copy-engine-pieces variants: keep the one a kernel would use (on-stream pieces)
        pts = pts[pts["ce_issue"].isna() | (pts["ce_issue"] == "stream")]
    out = []
    pieces = _ce_pieces(pts)
    for p in (_Point._make(rec.get(k) for k in _Point._fields) for rec in pts.to_dict("records")):
        if p.schedule not in _SCHEDULE:
            continue
        schedule, mech = _SCHEDULE[p.schedule]
        compute = partial(
            _loop,
            float(r["trip_s"]),
            float(r["tile_overhead_s"]),
            int(p.iters),
            float(p.flops_per_tile),
            tiles,
            int(system.device.sms),
        )
        comm = Comm("send_recv", egress, "none", before_compute=gather)
        hook = send
        if p.schedule == "inter_ce" and p.ce_chunk in pieces:  # the same pieces measured alone, flags included

            def hook(mech: str, sms: int, nbytes: float, alone: float = pieces[p.ce_chunk]) -> float:
                return alone if mech == "copy_engine" else send(mech, sms, nbytes)

        stage = Stage("overlap", compute, comm, tiles, block, intra_reuse=reuse, send_time=hook)
        sms = int(p.comm_sms) if p.comm_sms == p.comm_sms else 0  # NaN where not applicable
        pred = schedule_time(sys_, (0, 1), stage, schedule, mech, sms)  # type: ignore[arg-type]
        out.append(
            {
                "job": job,
                "direction": "gather" if gather else "scatter",
                "tiles": tiles,
                "tile_bytes": block,
                "iters": int(p.iters),
                "schedule": p.schedule,
                "comm_sms": sms,
                "measured_s": float(p.time_s),
                "predicted_s": pred,
            }
        )
    return out


def overlap_table(frame: pd.DataFrame, system: System) -> pd.DataFrame:
    """Measured and predicted time of every overlap point (sequential, intra-SM, inter-SM at each S)."""
    rows = frame[(frame["family"] == "overlap") & frame["verified"]]
    if rows.empty or "record" not in rows:
        return pd.DataFrame()
    records = []
    for job, grp in rows.groupby("job"):
        rate = grp[grp["record"] == "compute_rate"]
        pts = grp[grp["record"] == "point"]
        if rate.empty or pts.empty:
            continue
        r: dict[str, Any] = {str(k): v for k, v in rate.iloc[0].items()}
        records += _job_points(system, str(job), r, pts)
    table = pd.DataFrame.from_records(records)
    if not table.empty:
        table["err_pct"] = (table["predicted_s"] / table["measured_s"] - 1) * 100
    return table


def _within_one_step(pred: int, meas: int, steps: list[int]) -> bool:
    if pred == meas:
        return True
    if pred not in steps or meas not in steps:
        return False
    return abs(steps.index(pred) - steps.index(meas)) <= 1


def _job_iters(key: Any) -> tuple[str, int]:
    return str(key[0]), int(key[1])


TIE_PCT = 1.0
"""Measured times closer than this (per cent) count as a tie: the 90th percentile of the run-to-run difference
of the overlap points measured twice (docs/validation/h200/runs/x2-overlap/repeat: 0.9 %)."""


def schedule_choice_summary(table: pd.DataFrame, tie_pct: float = TIE_PCT) -> pd.DataFrame:
    """Per (job, iters): the measured and predicted winner (intra vs inter-SM), best S, and the chosen time's error.

    Strict columns (``winner_ok``, ``best_s_ok``, ``choice_ok``) compare with the single fastest measurement.
    ``regret_pct`` is what following the prediction costs: the measured time of the predicted (schedule, S)
    over the fastest measured one. The ``*_tie`` columns accept any measured best within ``tie_pct`` (runs that
    the measurement's repeatability cannot tell apart): the winner when its best run is within ``tie_pct`` of
    the other's, S when it is within one step of an S whose run is within ``tie_pct`` of the best S.
    """
    out = []
    tol = 1.0 + tie_pct / 100.0
    for key, grp in table.groupby(["job", "iters"]):
        job, iters = _job_iters(key)
        intra = grp[grp["schedule"] == "intra_sm"]
        inter = grp[grp["schedule"] == "inter_sm"]
        if intra.empty or inter.empty:
            continue
        steps = sorted(int(s) for s in inter["comm_sms"])
        m_inter = inter.iloc[int(inter["measured_s"].to_numpy().argmin())]
        p_inter = inter.iloc[int(inter["predicted_s"].to_numpy().argmin())]
        t_intra, t_inter = float(intra["measured_s"].iloc[0]), float(m_inter["measured_s"])
        m_best = "intra_sm" if t_intra <= t_inter else "inter_sm"
        p_best = "intra_sm" if float(intra["predicted_s"].iloc[0]) <= float(p_inter["predicted_s"]) else "inter_sm"
        chosen = intra.iloc[0] if p_best == "intra_sm" else p_inter
        near = [int(s) for s, t in zip(inter["comm_sms"], inter["measured_s"], strict=True) if t <= t_inter * tol]
        pred_s = int(p_inter["comm_sms"])
        out.append(
            {
                "job": job,
                "iters": int(iters),
                "measured_winner": m_best,
                "predicted_winner": p_best,
                "winner_ok": m_best == p_best,
                "measured_best_s": int(m_inter["comm_sms"]),
                "predicted_best_s": pred_s,
                "best_s_ok": _within_one_step(pred_s, int(m_inter["comm_sms"]), steps),
                "chosen_err_pct": float((chosen["predicted_s"] / chosen["measured_s"] - 1) * 100),
                "margin_pct": float(abs(t_intra / t_inter - 1) * 100),
                "regret_pct": float((float(chosen["measured_s"]) / min(t_intra, t_inter) - 1) * 100),
                "winner_ok_tie": (t_intra if p_best == "intra_sm" else t_inter) <= min(t_intra, t_inter) * tol,
                "best_s_ok_tie": any(_within_one_step(pred_s, s, steps) for s in near),
            }
        )
    summary = pd.DataFrame.from_records(out)
    if not summary.empty:
        summary["choice_ok"] = summary["winner_ok"] & summary["best_s_ok"]
        summary["choice_ok_tie"] = summary["winner_ok_tie"] & summary["best_s_ok_tie"]
    return summary
