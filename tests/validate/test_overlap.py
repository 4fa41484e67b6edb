from __future__ import annotations

import pandas as pd
import pytest

from rooflib.validate.overlap import schedule_choice_summary


def _table(intra: float, inter: dict[int, float], pred_intra: float, pred_inter: dict[int, float]) -> pd.DataFrame:
    rows = [{"job": "j", "iters": 1, "schedule": "intra_sm", "comm_sms": 0, "measured_s": intra,
             "predicted_s": pred_intra}]
    rows += [{"job": "j", "iters": 1, "schedule": "inter_sm", "comm_sms": s, "measured_s": inter[s],
              "predicted_s": pred_inter[s]} for s in inter]
    return pd.DataFrame(rows)


def test_strict_choice_and_regret() -> None:
    # measured: inter-SM with S = 16 wins by 5 %; predicted: intra-SM
    t = _table(105.0, {8: 120.0, 16: 100.0, 32: 101.0}, 99.0, {8: 130.0, 16: 110.0, 32: 100.0})
    row = schedule_choice_summary(t).iloc[0]
    assert row["measured_winner"] == "inter_sm" and row["predicted_winner"] == "intra_sm"
    assert not row["winner_ok"] and not row["winner_ok_tie"]
    assert row["regret_pct"] == pytest.approx(5.0)
    assert row["predicted_best_s"] == 32 and row["best_s_ok"]  # one step from 16


def test_ties_within_the_tolerance_count_either_way() -> None:
    # intra-SM measured 0.5 % slower than inter-SM at S = 32: a tie at 1 %, a miss strictly
    t = _table(100.5, {4: 130.0, 8: 100.6, 16: 110.0, 32: 100.0}, 99.0, {4: 120.0, 8: 130.0, 16: 125.0, 32: 101.0})
    row = schedule_choice_summary(t, tie_pct=1.0).iloc[0]
    assert not row["winner_ok"] and row["winner_ok_tie"]
    assert row["regret_pct"] == pytest.approx(0.5)
    # predicted S = 32 is the measured best; S = 8 is within the tie too
    assert row["best_s_ok"] and row["best_s_ok_tie"]
    strict = schedule_choice_summary(t, tie_pct=0.1).iloc[0]
    assert not strict["winner_ok_tie"] and not strict["choice_ok_tie"]


def test_s_two_steps_off_is_right_only_when_the_nearer_s_ties() -> None:
    pred = {1: 9.0, 2: 9.0, 4: 9.0, 8: 1.0}  # predicted S = 8
    far = _table(50.0, {1: 10.0, 2: 11.0, 4: 12.0, 8: 13.0}, 99.0, pred)
    assert not schedule_choice_summary(far).iloc[0]["best_s_ok_tie"]
    near = _table(50.0, {1: 10.0, 2: 11.0, 4: 10.05, 8: 13.0}, 99.0, pred)
    row = schedule_choice_summary(near).iloc[0]
    assert not row["best_s_ok"] and row["best_s_ok_tie"]
