"""A CSV of numbers given by a user (a packing, a sieve curve): rows of floats, one header line allowed.

    data, header_lines = read_numeric_csv(path, key="particles.file", columns="x,y,z,r")

Errors (ValueError) name the scenario key and the file: a missing file, a row that is not numbers.
"""

from pathlib import Path

import numpy as np

__all__ = ["read_numeric_csv"]


def read_numeric_csv(path, key, columns):
    """(data (rows, columns) float64, number of header lines skipped: 0 or 1)."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"{key} {str(path)!r} does not exist")
    with open(path, encoding="utf-8", errors="replace") as handle:
        first = handle.readline()
    try:
        [float(v) for v in first.split(",")]
        skip = 0
    except ValueError:
        skip = 1  # a header such as "x,y,z,r"
    try:
        data = np.loadtxt(path, delimiter=",", skiprows=skip, ndmin=2, dtype=np.float64)
    except ValueError as exc:
        raise ValueError(f"{key} {str(path)!r} is not a CSV of numbers {columns}: {exc}") from None
    return data, skip
