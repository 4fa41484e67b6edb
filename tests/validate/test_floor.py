import numpy as np
import pytest

from rooflib.validate.floor import separable_floor


def _grid(noise: dict[tuple[int, int], float] | None = None) -> tuple[list[float], list[str], list[str]]:
    run_f = {"a": 0.6, "b": 1.0, "c": 1.7}
    item_f = {f"p{i}": 0.5 + 0.3 * i for i in range(6)}
    ratio, runs, items = [], [], []
    for ri, (run, fr) in enumerate(run_f.items()):
        for ii, (item, fi) in enumerate(item_f.items()):
            ratio.append(fr * fi * (noise or {}).get((ri, ii), 1.0))
            runs.append(run)
            items.append(item)
    return ratio, runs, items


def test_a_product_of_run_and_item_factors_leaves_nothing() -> None:
    dev = separable_floor(*_grid())
    assert np.max(np.abs(dev)) < 1e-9


def test_one_disturbed_point_keeps_its_disturbance_and_the_others_stay_clean() -> None:
    dev = separable_floor(*_grid({(1, 2): 1.5}))
    disturbed = 1 * 6 + 2
    assert dev[disturbed] == pytest.approx(0.5, rel=1e-6)
    others = np.delete(dev, disturbed)
    assert np.max(np.abs(others)) < 1e-9


def test_interaction_noise_is_what_remains() -> None:
    rng = np.random.default_rng(3)
    noise = {(r, i): float(np.exp(rng.normal(0.0, 0.2))) for r in range(3) for i in range(6)}
    dev = separable_floor(*_grid(noise))
    raw = np.array(list(noise.values())) - 1.0
    assert 0.0 < np.median(np.abs(dev)) <= np.median(np.abs(raw)) + 1e-12


def test_bad_input_is_refused() -> None:
    with pytest.raises(ValueError, match="one each per point"):
        separable_floor([1.0, 2.0], ["a"], ["x", "y"])
    with pytest.raises(ValueError, match="positive and finite"):
        separable_floor([1.0, 0.0], ["a", "a"], ["x", "y"])
