"""Validation: predicted against measured for every family, several models side by side."""

from rooflib.validate.predict import predict_frame
from rooflib.validate.report import Validation, error_table, validate

__all__ = ["Validation", "error_table", "predict_frame", "validate"]
