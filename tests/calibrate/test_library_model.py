"""The model a library table fit evaluates: the routed plans a fit groups NCCL rows with."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

from rooflib.calibrate.library_model import _groups
from rooflib.specs import load_system
from rooflib.specs.figures import Fraction


def test_the_switch_engine_stays_apart_from_the_shares_a_fit_divides_out() -> None:
    """An 8-GPU NVLS all-reduce is bound by NVSwitch's reduction engine, which no library share scales: the fit's
    routed phases (link beta times the catalog's shares, and the engine's beta) are the same whatever shares the
    catalog held, so a refit does not depend on the figures it rewrites."""
    system = load_system("hgx-h100")
    rows = pd.DataFrame({"op": ["all_reduce"], "gpus": [8], "bytes": [float(1 << 30)], "time_s": [1e-3]})
    lib = system.library.model_copy(update={"nvls_efficiency": Fraction(value=0.5, source="test")})
    routed = []
    for s in (system, replace(system, library=lib)):
        (group,) = _groups([(s, rows)])
        nvls = next(a for a in group.algs if a.nvls)
        routed.append([(beta * nvls.base0, engine) for beta, _, _, engine in nvls.phases])
    assert any(engine > 0 for _, engine in routed[0])
    assert np.allclose(routed[0], routed[1], rtol=1e-9)


def test_the_routed_plans_do_not_follow_the_link_share_the_system_was_routed_with() -> None:
    """The catalog's NVLink share is divided out of every routed phase (``beta * base0`` stays): a fit of the same
    rows starts from the same model whatever share the catalog held."""
    system = load_system("hgx-h100")
    rows = pd.DataFrame({"op": ["all_gather"] * 2, "gpus": [4, 4], "bytes": [1e4, 1e8], "time_s": [1e-5, 1e-3]})
    lib = system.library
    share = lib.link_efficiency["nvlink"]
    other = lib.model_copy(
        update={"link_efficiency": {**lib.link_efficiency, "nvlink": share.model_copy(update={"value": 0.5})}}
    )
    plans = []
    for s in (system, replace(system, library=other)):
        (group,) = _groups([(s, rows)])
        plans.append({a.name: [beta * a.base0 for beta, _, _, _ in a.phases] for a in group.algs})
    assert plans[0].keys() == plans[1].keys() and plans[0]
    for name in plans[0]:
        assert np.allclose(plans[0][name], plans[1][name], rtol=1e-9)


def test_the_pull_toward_the_start_costs_nothing_there_and_grows_away_from_it() -> None:
    from rooflib.calibrate.library_model import PRIOR_WEIGHT, _Model

    system = load_system("hgx-h100")
    rows = pd.DataFrame({"op": ["all_gather"] * 2, "gpus": [4, 4], "bytes": [1e4, 1e8], "time_s": [1e-5, 1e-3]})
    groups = _groups([(system, rows)])
    bare, pulled = _Model(groups, ranks=False, prior=0.0), _Model(groups, ranks=False)
    extra = len(pulled.residuals(pulled.x0)) - len(bare.residuals(bare.x0))
    assert PRIOR_WEIGHT > 0 and extra > 0  # one residual per free figure with a positive lower bound
    assert np.allclose(pulled.residuals(pulled.x0)[-extra:], 0.0)
    moved = pulled.x0.copy()
    moved[9] *= 1.2  # LL's bandwidth share, 20 % off its start
    assert np.isclose(np.abs(pulled.residuals(moved)[-extra:]).max(), PRIOR_WEIGHT * np.log(1.2))
