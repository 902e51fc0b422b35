"""`graindem run` under interrupts and faults: SIGINT/SIGTERM stop at a step end with a checkpoint
that continues bit for bit, SIGKILL at random moments (the quick engine soak), a full disk and an
exhausted history store mid-run, an unwritable folder before any work, diverged.h5 and foreign
checkpoints refused, a torn series row resumed; engine checkpoints validated before use.

Reference for "bit for bit": the same scenario run uninterrupted to the same step from the same
prepared packing (every state array and every history equal; the series rows equal).
"""

import errno
import importlib.util
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from graindem.cli import main
from graindem.contact import state as S
from graindem.engine import checkpoint
from graindem.core import layout as K
from graindem.engine.cli import run_scenario
from graindem.engine.interrupts import RunStopped
from graindem.io.checkpoint import load_checkpoint
from graindem.io.checkpoint_check import validate_engine_state
from graindem.io.scenario import scenario_to_toml, validate_scenario
from graindem.io.timeseries import read_timeseries

REPO = Path(__file__).resolve().parents[1]
CONFIG = {
    "simulation": {"scenario": "biaxial", "steps": 3000, "output_interval": 50, "checkpoint_interval": 100,
                   "seed": 4},
    "contact": {"law": "jaeger"},
    "particles": {"n": 100, "radius_mean": 1.5e-4},
    "loading": {"kind": "biaxial", "total_strain": 0.015, "preparation_mu": 0.1},
    "material": {"damping": 0.1},
    "output": {"vtk": False, "plots": False},
}
TOML = scenario_to_toml(validate_scenario(CONFIG))
STATE = ("pos", "vel", "omega", "quat", "cell", "ctl", "ictl", "acc", "pos_build", "pstart", "walls")


def _same_state(a, b):
    assert a.step_count == b.step_count
    for name in STATE:
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    m = int(a.ictl[K.ICTL_NPAIRS])
    for name in ("pi", "pj", "pfs", "pcq"):
        assert np.array_equal(getattr(a, name)[:m], getattr(b, name)[:m]), name
    assert [a.store.points(a.pist[c, S.I_HEAD]) for c in range(m)] == \
        [b.store.points(b.pist[c, S.I_HEAD]) for c in range(m)]


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    """A prepared packing and a run to step 200 of the test (checkpoint, series, run.json)."""
    out = tmp_path_factory.mktemp("base")
    run_scenario(validate_scenario(CONFIG), out, steps=200, quiet=True)
    return out


@pytest.fixture(scope="module")
def reference(base, tmp_path_factory):
    """The uninterrupted run to step 600 from the same packing."""
    out = tmp_path_factory.mktemp("reference")
    shutil.copy(base / "packing.h5", out / "packing.h5")
    run_scenario(validate_scenario(CONFIG), out, steps=600, quiet=True)
    return out


def _folder_with_packing(base, path):
    path.mkdir(parents=True, exist_ok=True)
    shutil.copy(base / "packing.h5", path / "packing.h5")
    (path / "run.toml").write_text(TOML)
    return path


def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO / "src") + os.pathsep + env.get("PYTHONPATH", "")
    return env


# ---------------------------------------------------------------- chunks and in-process interrupts
def test_kernel_chunking_does_not_change_the_trajectory(base):
    runs = []
    for chunk in (1, 7, None):
        sim, _ = checkpoint.load(base / "checkpoint.h5")
        sim.max_chunk_steps = chunk
        sim.run(120)
        runs.append(sim)
    _same_state(runs[0], runs[2])
    _same_state(runs[1], runs[2])


def test_run_without_callback_stops_at_a_step_end_on_sigint(base, tmp_path):
    sim, _ = checkpoint.load(base / "checkpoint.h5")
    start = sim.step_count
    handler = signal.getsignal(signal.SIGINT)
    timer = threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    with pytest.raises(RunStopped) as info:
        sim.run(10**8)
    timer.join()
    reached = sim.step_count
    assert info.value.signal == signal.SIGINT and start < reached < start + 10**8
    arrays, meta = sim.state_dict()
    validate_engine_state(arrays, meta)  # a complete state
    checkpoint.save(sim, tmp_path / "stopped.h5")
    ref, _ = checkpoint.load(base / "checkpoint.h5")
    ref.run(reached - start)
    _same_state(checkpoint.load(tmp_path / "stopped.h5")[0], ref)
    assert signal.getsignal(signal.SIGINT) is handler  # the handler restored


# ---------------------------------------------------------------- signals to `graindem run`
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_signal_writes_a_checkpoint_that_continues_bit_for_bit(base, reference, tmp_path, signum):
    out = _folder_with_packing(base, tmp_path / "run")
    proc = subprocess.Popen([sys.executable, "-m", "graindem.cli", "run", str(out / "run.toml"), "--out", str(out),
                             "--quiet"], env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    series = out / "series.csv"
    deadline = time.time() + 120
    while time.time() < deadline and proc.poll() is None:
        if series.exists() and series.read_text().count("\n") >= 3:  # header + rows: the test is running
            break
        time.sleep(0.05)
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert "checkpoint written to" in err and "--restart" in err
    sim, extra = checkpoint.load(out / "checkpoint.h5")
    k = sim.step_count - extra["biaxial"]["start_step"]
    assert 0 < k < 600, k
    assert main(["run", "--restart", str(out / "checkpoint.h5"), "--out", str(out), "--steps", str(600 - k),
                 "--quiet"]) == 0
    _same_state(checkpoint.load(out / "checkpoint.h5")[0], checkpoint.load(reference / "checkpoint.h5")[0])
    a, b = read_timeseries(out / "series.csv"), read_timeseries(reference / "series.csv")
    for key in b:
        np.testing.assert_array_equal(a[key], b[key], err_msg=key)


def test_sigkill_at_random_moment_quick_engine_soak(base, tmp_path):
    """The engine soak of benchmarks/soak.py at its smallest (one SIGKILL; the full soak kills 20
    times): the run continued from what the killed process left ends as the uninterrupted one."""
    spec = importlib.util.spec_from_file_location("soak", REPO / "benchmarks" / "soak.py")
    soak = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(soak)
    old = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = str(REPO / "src") + (os.pathsep + old if old else "")
    try:
        result = soak.engine_soak(kills=1, steps=400, seed=1, workdir=tmp_path, packing=base / "packing.h5")
    finally:
        if old is None:
            os.environ.pop("PYTHONPATH")
        else:
            os.environ["PYTHONPATH"] = old
    assert result["kills"] == 1
    assert result["identical"], result


# ---------------------------------------------------------------- faults mid-run
def test_disk_full_mid_run_keeps_the_last_good_checkpoint(base, tmp_path, monkeypatch, capsys):
    from graindem.io import timeseries
    out = _folder_with_packing(base, tmp_path / "run")
    append = timeseries.TimeSeriesWriter.append

    def append_until_full(self, row):
        if isinstance(row, dict) and row.get("step", 0) >= 250:
            raise OSError(errno.ENOSPC, "No space left on device", str(self.csv_path))
        return append(self, row)
    monkeypatch.setattr(timeseries.TimeSeriesWriter, "append", append_until_full)
    assert main(["run", str(out / "run.toml"), "--out", str(out), "--steps", "400", "--quiet"]) == 1
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "disk full" in err and "last good checkpoint" in err
    sim, extra = checkpoint.load(out / "checkpoint.h5")
    assert sim.step_count - extra["biaxial"]["start_step"] == 200  # the periodic one before the fault
    assert not [p for p in out.iterdir() if p.name.endswith(".tmp")]
    monkeypatch.undo()
    # space freed: the run continues from it and its series has every row once
    assert main(["run", "--restart", str(out / "checkpoint.h5"), "--out", str(out), "--steps", "100",
                 "--quiet"]) == 0
    assert read_timeseries(out / "series.csv")["step"].tolist() == list(range(0, 301, 50))


def test_history_store_exhaustion_stops_with_a_checkpoint(base, tmp_path, monkeypatch, capsys):
    from graindem.contact.store import HistoryStore
    out = _folder_with_packing(base, tmp_path / "run")
    ensure = HistoryStore.ensure_free
    calls = {"n": 0}

    def ensure_until_exhausted(self, n):
        calls["n"] += 1
        if calls["n"] > 40:
            raise MemoryError("history store would exceed 2^30 points")
        return ensure(self, n)
    monkeypatch.setattr(HistoryStore, "ensure_free", ensure_until_exhausted)
    monkeypatch.setattr("graindem.engine.simulation.Simulation.max_chunk_steps", 5)
    assert main(["run", str(out / "run.toml"), "--out", str(out), "--steps", "1000", "--quiet"]) == 1
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "2^30" in err and "checkpoint of step" in err
    sim, extra = checkpoint.load(out / "checkpoint.h5")
    assert 0 < sim.step_count - extra["biaxial"]["start_step"] < 1000


def test_unwritable_output_refused_before_any_work(tmp_path, capsys):
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    (tmp_path / "run.toml").write_text(TOML)
    t0 = time.perf_counter()
    assert main(["run", str(tmp_path / "run.toml"), "--out", str(blocker / "out"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "--out folder" in err and "cannot be written" in err and len(err.strip().splitlines()) == 1
    assert time.perf_counter() - t0 < 30 and not list(tmp_path.rglob("packing.h5"))


# ---------------------------------------------------------------- refused restarts, torn rows
def test_diverged_state_refused_for_restart(base, tmp_path, capsys):
    sim, extra = checkpoint.load(base / "checkpoint.h5")
    sim.out[K.OUT_STATUS] = K.STATUS_DIVERGED  # as the kernel leaves it after a diverged step
    checkpoint.save(sim, tmp_path / "state.h5", extra=extra)
    assert main(["run", "--restart", str(tmp_path / "state.h5"), "--out", str(tmp_path / "o"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "diverged (half-finished)" in err and len(err.strip().splitlines()) == 1
    checkpoint.load(tmp_path / "state.h5")  # still readable for inspection


def test_foreign_checkpoint_refused_into_another_runs_folder(base, tmp_path, capsys):
    out = tmp_path / "run"
    shutil.copytree(base, out)
    sim, extra = checkpoint.load(base / "checkpoint.h5")
    extra["biaxial"]["run_id"] = "another-run"
    checkpoint.save(sim, tmp_path / "foreign.h5", extra=extra)
    before = (out / "series.csv").read_bytes()
    assert main(["run", "--restart", str(tmp_path / "foreign.h5"), "--out", str(out), "--quiet"]) == 2
    assert "holds the series of another run" in capsys.readouterr().err
    assert (out / "series.csv").read_bytes() == before


def test_torn_last_series_row_does_not_block_a_resume(base, reference, tmp_path):
    out = tmp_path / "run"
    shutil.copytree(base, out)
    with open(out / "series.csv", "a") as handle:
        handle.write("250,1.2")  # a row cut by a killed writer (no newline)
    (out / ".checkpoint.h5.abcd1234.tmp").write_bytes(b"left by a killed writer")
    assert main(["run", "--restart", str(out / "checkpoint.h5"), "--out", str(out), "--steps", "400", "--quiet"]) == 0
    a, b = read_timeseries(out / "series.csv"), read_timeseries(reference / "series.csv")
    for key in b:
        np.testing.assert_array_equal(a[key], b[key], err_msg=key)
    assert not (out / ".checkpoint.h5.abcd1234.tmp").exists()


# ---------------------------------------------------------------- engine checkpoint validation
@pytest.fixture(scope="module")
def state(base):
    return load_checkpoint(base / "checkpoint.h5")


def test_valid_state_passes(state):
    validate_engine_state(*state)


def _corruptions(arrays):
    n = int(arrays["ictl"][K.ICTL_N])
    npairs = int(arrays["ictl"][K.ICTL_NPAIRS])
    cap = arrays["store_nxt"].shape[0]
    finite = ["pos", "vel", "omega", "quat", "force", "torque", "radius", "mass", "inertia", "cell", "ctl", "walls",
              "acc", "L0", "pos_build", "materials", "store_pts"]
    finite = [name for name in finite if arrays[name].size]  # walls is empty without walls
    return st.one_of(
        st.tuples(st.just("nonfinite"), st.sampled_from(finite), st.integers(0, 10**6),
                  st.sampled_from([np.nan, np.inf, -np.inf])),
        st.tuples(st.just("pair"), st.sampled_from(["pi", "pj"]), st.integers(0, max(npairs - 1, 0)),
                  st.sampled_from([-1, n, 2**31 - 1])),
        st.tuples(st.just("link"), st.just("store_nxt"), st.integers(0, cap - 1),
                  st.sampled_from([(cap + 3) << 1, -8, (cap << 1) | 1])),
        st.tuples(st.just("meta"), st.just("store_meta"), st.sampled_from([1, 2]), st.sampled_from([-1, 1, 10**9])),
        st.tuples(st.just("pmat"), st.just("pmat"), st.integers(0, n - 1), st.sampled_from([-1, 99])),
        st.tuples(st.just("shape"), st.sampled_from(["pos", "radius", "pfs", "pist", "store_pts"]), st.just(0),
                  st.just(0)),
        st.tuples(st.just("count"), st.just("ictl"), st.sampled_from([K.ICTL_N, K.ICTL_NPAIRS, K.ICTL_NWCAND]),
                  st.sampled_from([-1, 10**7])),
        st.tuples(st.just("metadata"), st.sampled_from(["dt_crit", "E", "box_hi", "skin", "periodic"]), st.just(0),
                  st.sampled_from([float("nan"), -1.0, "x", None])),
    )


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_corrupted_states_are_refused_by_name(state, data):
    arrays, meta = state
    kind, name, index, value = data.draw(_corruptions(arrays))
    arrays = dict(arrays)
    meta = dict(meta)
    if kind == "metadata":
        meta[name] = value
    elif kind == "shape":
        arrays[name] = arrays[name][:-1]
    elif kind == "meta":
        a = arrays[name].copy()
        a[index] += value
        arrays[name] = a
    else:
        a = arrays[name].copy()
        flat = a.reshape(-1)
        flat[index % flat.size] = value
        arrays[name] = a
    with pytest.raises(ValueError) as info:
        validate_engine_state(arrays, meta)
    assert "checkpoint" in str(info.value)


def test_divergence_report_survives_a_failed_diverged_h5(base, tmp_path, monkeypatch):
    from graindem.engine.cli import drive_test
    from graindem.engine.simulation import Diverged
    sim, extra = checkpoint.load(base / "checkpoint.h5")

    def diverge_then_fail_to_write(sim, test, out=None, **kwargs):
        sim.out[K.OUT_STATUS] = K.STATUS_DIVERGED  # the kernel's report, then on_diverge's write fails
        raise OSError(errno.ENOSPC, "No space left on device", str(out / "diverged.h5"))
    monkeypatch.setattr("graindem.scenarios.biaxial.run_test", diverge_then_fail_to_write)
    with pytest.raises(Diverged, match=r"run diverged at step 200 .*diverged.h5 failed \(disk full\)"):
        drive_test(sim, extra["biaxial"], tmp_path)
