"""Checks of user input that name the parameter and the allowed range (raise ValueError)."""

import math

import numpy as np


def vec3(name, v):
    """`v` as 3 finite float64 numbers."""
    a = np.asarray(v, dtype=np.float64).reshape(-1)
    if a.shape != (3,) or not np.all(np.isfinite(a)):
        raise ValueError(f"{name} must be 3 finite numbers, got {v!r}")
    return a


def positive_finite(name, value, allow_zero=False):
    """`value` as a finite float > 0 (>= 0 with allow_zero)."""
    value = float(value)
    if not math.isfinite(value) or value < 0.0 or (value == 0.0 and not allow_zero):
        raise ValueError(f"{name} must be a finite number {'>=' if allow_zero else '>'} 0, got {value!r}")
    return value
