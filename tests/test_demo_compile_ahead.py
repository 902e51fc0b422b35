"""graindem.demo.compile_ahead: the second process that compiles the biaxial part's kernels for `graindem demo`."""

import json
import time

from graindem.demo import compile_ahead


def test_failure_of_the_second_process_is_one_line_and_no_error():
    proc = compile_ahead.spawn(["-c", "print('some output'); raise SystemExit('no kernels today')"])
    said = []
    compile_ahead.wait(proc, said.append)
    assert proc.returncode == 1
    assert len(said) in (1, 3)  # "waiting ..." and "... done" only if it had not ended yet
    assert "exit code 1" in said[-1] and "no kernels today" in said[-1] and "compiling here instead" in said[-1]


def test_success_says_nothing_once_done():
    proc = compile_ahead.spawn(["-c", "pass"])
    proc.wait()
    said = []
    compile_ahead.wait(proc, said.append)
    assert said == [] and proc.log.closed


def test_stop_ends_a_running_second_process():
    proc = compile_ahead.spawn(["-c", "import time; time.sleep(60)"])
    t0 = time.perf_counter()
    compile_ahead.stop(proc)
    assert proc.returncode is not None and time.perf_counter() - t0 < 10
    compile_ahead.stop(None)  # nothing started (one core, or --skip-biaxial)


def test_small_run_writes_every_output_of_the_biaxial_part(tmp_path):
    """The small run goes through the demo's whole biaxial part (preparation to the end of the test,
    outputs included), so it compiles every kernel that part runs."""
    summary = compile_ahead.compile_biaxial(tmp_path)
    for name in ("packing.h5", "checkpoint.h5", "particles.pvd", "contacts.pvd", "series.csv", "stress_strain.png",
                 "summary.json"):
        assert (tmp_path / name).stat().st_size > 0, name
    assert summary["n_particles"] == compile_ahead.SPHERES and summary["steps"] == compile_ahead.STEPS
    assert json.loads((tmp_path / "summary.json").read_text())["peak_stress_ratio"] > 1.0
