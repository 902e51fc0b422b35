"""The YADE comparison driver of benchmarks/yade_levelset.py: a missing executable gives None and a reason;
with YADE installed, a small lattice runs and reports its own figures."""

import importlib
import shutil
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.fixture
def driver(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    return importlib.import_module("yade_levelset")


def test_missing_yade_gives_none_and_reason(driver, monkeypatch):
    monkeypatch.setattr(driver.shutil, "which", lambda name: None)
    result, reason = driver.yade_steps_per_s(10, quick=True)
    assert result is None
    assert "yade" in reason and "not found" in reason


def test_bad_step_count_is_rejected(driver):
    with pytest.raises(ValueError, match="n_steps"):
        driver.yade_steps_per_s(0, quick=True)


@pytest.mark.skipif(shutil.which("yade") is None, reason="YADE (Debian package yade) is not installed")
def test_small_lattice_runs_in_yade(driver):
    result, reason = driver.yade_steps_per_s(5, quick=True, n_side=2, rounds=1, timeout=120)
    assert reason is None, reason
    assert result["steps_per_s"] > 0
    assert result["n_bodies"] == 8
    assert result["nodes_per_body"] == driver.NODES
    assert result["threads"] == 1
    # the 2 x 2 x 2 lattice starts with its 12 face-neighbour pairs overlapping; 5 + 2 steps at
    # dt = 1e-3 cannot separate them (the overlaps relax over a quarter period, ~0.35 s)
    assert result["contacts"] == 12
    assert result["version"].startswith("2023")
