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


def per_body_rows(name, value, m, width, default):
    """`value` as an (m, width) float64 array of finite numbers: None gives `default` in every row,
    `width` numbers (or one number when width is 1) are repeated for every body."""
    if value is None:
        a = np.tile(np.asarray(default, dtype=np.float64), (m, 1))
    else:
        a = np.asarray(value, dtype=np.float64)
        a = np.tile(a, (m, 1)) if a.shape == (width,) or (a.ndim == 0 and width == 1) else a.reshape(-1, width)
    if a.shape != (m, width) or not np.all(np.isfinite(a)):
        raise ValueError(f"{name} must be {width} finite numbers or an ({m}, {width}) array")
    return a
