"""Calibration: fit the model's figures to measurements and write a profile."""

from rooflib.calibrate.data import Fit, load_meta, load_results
from rooflib.calibrate.profile import calibrate

__all__ = ["Fit", "calibrate", "load_meta", "load_results"]
