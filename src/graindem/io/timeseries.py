"""Append-only time series (one row per output interval) written as CSV and JSON Lines.

Interface:

    series = TimeSeriesWriter("results/series", ["step", "time", "stress_zz", "contacts"])
    series.append({"step": 1000, "time": 1e-4, "stress_zz": 1.2e5, "contacts": 8600})
    series.append([2000, 2e-4, 1.3e5, 8610])            # or a sequence in column order
    series.close()                                      # also writes series.json (columnar)
    read_timeseries("results/series.csv") -> {column: numpy array}   (.csv, .jsonl or .json)

Files, from the path stem: `<stem>.csv` (header line then rows) and `<stem>.jsonl` (one JSON
object per row). Each row is flushed to the operating system as soon as it is appended, so a
crash of the run loses no row already appended (fsync=True also survives an OS crash, at a cost
per row). On close, `<stem>.json` = {"columns": [...], "data": {column: [values]}} is written
atomically for tools that want one JSON document.

Values: numbers (Python or numpy scalars) and strings. Floats are written with repr, the
shortest text that reads back to the same float, so CSV values are exact. JSON has no NaN or
infinity: non-finite floats are written as null in .jsonl/.json (read_timeseries turns them back
into nan) and as nan/inf in the CSV.

Restarts: resume_after=(column, value) keeps the rows of existing files whose `column` is
<= value (the rows written before the checkpoint the run restarts from) and appends after them;
the columns must match. A last line without its newline (a row torn by a killed writer) is
dropped. The kept rows are written to temporary files that replace the old ones atomically, so a
resume killed at any moment leaves either the old files or the new ones. Without resume_after,
existing files are replaced.
"""

import csv
import io
import json
import math
import os
from pathlib import Path

import numpy as np

from .outputs import replacing

__all__ = ["TimeSeriesWriter", "read_timeseries"]


def _plain(column, value):
    """A Python int/float/str for a cell value; bad types raise ValueError naming the column."""
    if isinstance(value, (bool, np.bool_)):
        return int(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value)
    if isinstance(value, str):
        return value
    if isinstance(value, np.ndarray) and value.ndim == 0:
        return _plain(column, value.item())
    raise ValueError(f"time series column {column!r} takes a number or string per row; got {type(value).__name__}")


def _json_cell(value):
    return None if isinstance(value, float) and not math.isfinite(value) else value


def _csv_cell(value):
    return repr(value) if isinstance(value, float) else value


def _parse_csv_cell(text):
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


class TimeSeriesWriter:
    """Append-only CSV + JSON Lines writer with fixed columns (see the module docstring)."""

    def __init__(self, stem, columns, *, resume_after=None, fsync=False):
        columns = list(columns)
        if not columns or not all(isinstance(c, str) and c for c in columns):
            raise ValueError(f"columns must be a non-empty list of non-empty strings; got {columns!r}")
        if len(set(columns)) != len(columns):
            raise ValueError(f"columns must be distinct; got {columns!r}")
        if any(any(ch in c for ch in ',"\n\r') for c in columns):
            raise ValueError(f"column names must not contain commas, quotes or newlines; got {columns!r}")
        self.columns = columns
        stem = Path(stem)
        if stem.suffix in (".csv", ".jsonl", ".json"):
            stem = stem.with_suffix("")
        self.csv_path = stem.with_suffix(".csv")
        self.jsonl_path = stem.with_suffix(".jsonl")
        self.json_path = stem.with_suffix(".json")
        self.fsync = fsync
        self.rows = 0
        self._data = {c: [] for c in columns}
        stem.parent.mkdir(parents=True, exist_ok=True)

        kept = []
        if resume_after is not None:
            column, value = resume_after
            if column not in columns:
                raise ValueError(f"resume_after column must be one of {columns}; got {column!r}")
            if self.csv_path.exists():
                old = _read_csv_text(self.csv_path, _complete_lines(self.csv_path))
                if list(old) != columns:
                    raise ValueError(f"cannot resume {str(self.csv_path)!r}: its columns {list(old)} differ from {columns}")
                n_old = len(old[columns[0]])
                kept = [[old[c][r] for c in columns] for r in range(n_old) if old[column][r] <= value]
            # the kept rows go to temporaries that replace the files whole (see the module docstring)
            with replacing(self.csv_path) as csv_tmp, replacing(self.jsonl_path) as jsonl_tmp:
                with open(csv_tmp, "w", newline="", encoding="utf-8") as self._csv, \
                        open(jsonl_tmp, "w", encoding="utf-8") as self._jsonl:
                    self._writer = csv.writer(self._csv, lineterminator="\n")
                    self._writer.writerow(columns)
                    for row in kept:
                        self._write(row)
            self._csv = open(self.csv_path, "a", newline="", encoding="utf-8")
            self._jsonl = open(self.jsonl_path, "a", encoding="utf-8")
            self._writer = csv.writer(self._csv, lineterminator="\n")
            return
        self._csv = open(self.csv_path, "w", newline="", encoding="utf-8")
        self._jsonl = open(self.jsonl_path, "w", encoding="utf-8")
        self._writer = csv.writer(self._csv, lineterminator="\n")
        self._writer.writerow(columns)
        self._flush()

    def append(self, row):
        """Append one row: a dict with exactly the columns, or a sequence in column order."""
        if self._csv is None:
            raise ValueError("append() called on a closed TimeSeriesWriter")
        if isinstance(row, dict):
            missing = [c for c in self.columns if c not in row]
            extra = [k for k in row if k not in self.columns]
            if missing or extra:
                raise ValueError(f"time series row must have exactly the columns {self.columns}; missing {missing}, unknown {extra}")
            values = [row[c] for c in self.columns]
        else:
            values = list(row)
            if len(values) != len(self.columns):
                raise ValueError(f"time series row must have {len(self.columns)} values ({self.columns}); got {len(values)}")
        self._write([_plain(c, v) for c, v in zip(self.columns, values)])
        self._flush()

    def _write(self, values):
        self._writer.writerow([_csv_cell(v) for v in values])
        self._jsonl.write(json.dumps({c: _json_cell(v) for c, v in zip(self.columns, values)}, allow_nan=False) + "\n")
        for c, v in zip(self.columns, values):
            self._data[c].append(v)
        self.rows += 1

    def _flush(self):
        for handle in (self._csv, self._jsonl):
            handle.flush()
            if self.fsync:
                os.fsync(handle.fileno())

    def close(self):
        """Close the files and write the columnar .json."""
        if self._csv is None:
            return
        self._csv.close()
        self._jsonl.close()
        self._csv = self._jsonl = None
        doc = {"columns": self.columns, "data": {c: [_json_cell(v) for v in vs] for c, vs in self._data.items()}}
        with replacing(self.json_path) as tmp:
            with open(tmp, "w", encoding="utf-8") as handle:
                json.dump(doc, handle, allow_nan=False)

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        self.close()
        return False


def _complete_lines(path):
    """The text of `path` without a last line that lacks its newline (a torn row)."""
    with open(path, encoding="utf-8", errors="replace", newline="") as handle:
        text = handle.read()
    if text and not text.endswith("\n"):
        text = text[:text.rfind("\n") + 1]
    return text


def _read_csv_text(path, text):
    try:
        reader = csv.reader(io.StringIO(text, newline=""))
        columns = next(reader)
        rows = [[_parse_csv_cell(x) for x in row] for row in reader if row]
    except (StopIteration, csv.Error) as exc:
        raise ValueError(f"time series file {str(path)!r} cannot be read: {exc!r}") from None
    bad = [k + 2 for k, row in enumerate(rows) if len(row) != len(columns)]
    if bad:
        raise ValueError(f"time series file {str(path)!r}: line {bad[0]} does not have {len(columns)} fields")
    return _columnar(columns, rows)


def _columnar(columns, rows):
    return {c: [row[k] for row in rows] for k, c in enumerate(columns)}


def _to_array(values):
    values = [math.nan if v is None else v for v in values]
    if all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        return np.array(values, dtype=np.int64)
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        return np.array(values, dtype=np.float64)
    return np.array(values, dtype=object)


def read_timeseries(path, *, as_arrays=True):
    """Read a .csv, .jsonl or .json time series into {column: values} (numpy arrays by default).

    A column of integers gives int64, of numbers float64 (null -> nan), anything else an object
    array. A missing or unreadable file raises FileNotFoundError / ValueError naming the path.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"time series file {str(path)!r} does not exist")
    try:
        if path.suffix == ".csv":
            with open(path, newline="", encoding="utf-8") as handle:
                data = _read_csv_text(path, handle.read())
        elif path.suffix == ".jsonl":
            with open(path, encoding="utf-8") as handle:
                rows = [json.loads(line) for line in handle if line.strip()]
            columns = list(rows[0]) if rows else []
            data = {c: [r[c] for r in rows] for c in columns}
        elif path.suffix == ".json":
            with open(path, encoding="utf-8") as handle:
                doc = json.load(handle)
            data = {c: doc["data"][c] for c in doc["columns"]}
        else:
            raise ValueError(f"time series file {str(path)!r} must end in .csv, .jsonl or .json")
    except (StopIteration, json.JSONDecodeError, KeyError, UnicodeDecodeError, csv.Error) as exc:
        raise ValueError(f"time series file {str(path)!r} cannot be read: {exc!r}") from None
    if not as_arrays:
        return data
    return {c: _to_array(v) for c, v in data.items()}
