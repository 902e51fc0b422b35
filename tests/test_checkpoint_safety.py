"""Checkpoint files against damage and crafted content: whole-file checksum (metadata included),
schema policy, declared sizes refused before reading, atomic replacement under a full disk, and
removal of the temporaries a killed writer leaves (only ours)."""

import errno
import json
import os

import h5py
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from graindem.io import checkpoint as C
from graindem.io.outputs import remove_stale_temp_files

ARRAYS = {"pos": np.arange(12.0).reshape(4, 3), "ictl": np.array([3, 1, 4], dtype=np.int64),
          "store/nxt": np.array([-2, 0, 2], dtype=np.int32)}
META = {"dt_crit": 1e-7, "box_hi": [1.0, 2.0, 3.0], "target": [1e5, 0.0, 1e5]}


def _same(a, b):
    return set(a) == set(b) and all(a[k].dtype == b[k].dtype and np.array_equal(a[k], b[k]) for k in a)


def test_metadata_is_covered_by_the_checksum(tmp_path):
    path = C.save_checkpoint(tmp_path / "c.h5", ARRAYS, META)
    with h5py.File(path, "r+") as f:
        f.attrs["metadata"] = json.dumps({**META, "dt_crit": 1e-3}, sort_keys=True)
    with pytest.raises(ValueError, match="whole-file checksum"):
        C.load_checkpoint(path)


def test_array_table_is_covered_by_the_checksum(tmp_path):
    """An array and its own checksum replaced together (recomputable) are still caught."""
    path = C.save_checkpoint(tmp_path / "c.h5", ARRAYS, META)
    with h5py.File(path, "r+") as f:
        del f["ictl"]
        value = np.array([3, 1, 5], dtype=np.int64)
        f.create_dataset("ictl", data=value).attrs["sha256"] = C.array_sha256(value)
    with pytest.raises(ValueError, match="whole-file checksum"):
        C.load_checkpoint(path)


def _bare_file(path, schema=C.SCHEMA_VERSION):
    f = h5py.File(path, "w")
    f.attrs["format"] = C.FORMAT
    f.attrs["schema"] = schema
    f.attrs["graindem_version"] = "0"
    f.attrs["metadata"] = "{}"
    return f


def test_huge_declared_dataset_is_refused_before_reading(tmp_path):
    path = tmp_path / "crafted.h5"
    with _bare_file(path) as f:
        f.create_dataset("pos", shape=(1 << 33,), dtype=np.float64)  # 64 GiB declared, nothing stored
    assert os.path.getsize(path) < 100_000
    with pytest.raises(ValueError, match="declares .* bytes"):
        C.load_checkpoint(path)


def test_max_bytes_caps_the_total(tmp_path):
    path = C.save_checkpoint(tmp_path / "c.h5", {"a": np.zeros(1000)}, {})
    with pytest.raises(ValueError, match="max_bytes"):
        C.load_checkpoint(path, max_bytes=7999)
    assert C.load_checkpoint(path, max_bytes=8000)[0]["a"].shape == (1000,)


def test_compressed_or_chunked_dataset_is_refused(tmp_path):
    path = tmp_path / "c.h5"
    with _bare_file(path, schema=1) as f:
        f.create_dataset("a", data=np.zeros(100), compression="gzip")
    with pytest.raises(ValueError, match="contiguous, uncompressed"):
        C.load_checkpoint(path)


def test_schema_policy(tmp_path):
    newer = tmp_path / "newer.h5"
    with _bare_file(newer, schema=C.SCHEMA_VERSION + 1):
        pass
    with pytest.raises(ValueError, match="newer than this graindem"):
        C.load_checkpoint(newer)
    zero = tmp_path / "zero.h5"
    with _bare_file(zero, schema=0):
        pass
    with pytest.raises(ValueError, match="reads schemas 1"):
        C.load_checkpoint(zero)
    # schema 1 (no whole-file checksum): converted on load, its arrays' checksums still checked
    old = C.save_checkpoint(tmp_path / "old.h5", ARRAYS, META, schema=1)
    arrays, meta = C.load_checkpoint(old)
    assert _same(arrays, ARRAYS) and meta == META
    with h5py.File(old, "r+") as f:
        f["pos"][0, 0] = 99.0
    with pytest.raises(ValueError, match="fails its checksum"):
        C.load_checkpoint(old)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(flips=st.lists(st.tuples(st.integers(0, 1 << 20), st.integers(1, 255)), min_size=1, max_size=4),
       truncate=st.one_of(st.none(), st.integers(0, 1 << 20)))
def test_damaged_file_is_refused_or_identical(tmp_path, flips, truncate):
    """Whatever bytes are flipped or cut, a load either gives back exactly what was saved or raises
    ValueError naming the file (never another exception, never different data)."""
    path = tmp_path / "fuzz.h5"
    C.save_checkpoint(path, ARRAYS, META)
    data = bytearray(path.read_bytes())
    for where, xor in flips:
        data[where % len(data)] ^= xor
    if truncate is not None:
        data = data[:truncate % len(data)]
    path.write_bytes(bytes(data))
    try:
        arrays, meta = C.load_checkpoint(path)
    except ValueError as exc:
        assert "fuzz.h5" in str(exc)
    else:
        assert _same(arrays, ARRAYS) and meta == META


def test_disk_full_leaves_the_old_checkpoint(tmp_path, monkeypatch):
    path = C.save_checkpoint(tmp_path / "checkpoint.h5", ARRAYS, META)
    before = path.read_bytes()

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(C.os, "fsync", full)
    with pytest.raises(OSError) as info:
        C.save_checkpoint(path, {"pos": np.ones(3)}, {})
    assert info.value.errno == errno.ENOSPC
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint.h5"]  # no temporary left


def test_stale_temporaries_removed_only_by_pattern(tmp_path):
    ours = [".checkpoint.h5.ab_cd123.tmp", ".series.json.x1y2z3w4.tmp"]
    others = [".checkpoint.h5.tmp", ".checkpoint.h5.abc.tmp", ".notes.txt.abcdefgh.tmp", "checkpoint.h5",
              "x.checkpoint.h5.abcdefgh.tmp"]
    for name in ours + others:
        (tmp_path / name).write_text("x")
    (tmp_path / ".series.json.folder00.tmp").mkdir()  # a folder with our pattern: not a file we wrote
    removed = remove_stale_temp_files(tmp_path, ["checkpoint.h5", "series.json"])
    assert sorted(os.path.basename(p) for p in removed) == sorted(ours)
    assert all((tmp_path / n).exists() for n in others) and (tmp_path / ".series.json.folder00.tmp").is_dir()
