"""graindem.demo.compile_ahead: the second process that compiles the biaxial part's kernels for `graindem demo`."""

import inspect
import time

from graindem.demo import compile_ahead


def test_failure_of_the_second_process_is_one_line_and_no_error():
    proc = compile_ahead.spawn(["-c", "print('some output'); raise SystemExit('no kernels today')"])
    said = []
    compile_ahead.wait(proc, said.append)
    assert proc.returncode == 1
    assert len(said) in (1, 3)  # "waiting ..." and "... done" only if it had not ended yet
    assert "exit code 1" in said[-1] and "no kernels today" in said[-1] and "its part is done here instead" in said[-1]


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


def test_words_pass_both_ways_and_the_report_is_kept():
    """The second process waits for two words on its input, says READY on its output, and what it
    prints on its log is what the demo prints after the biaxial test."""
    script = ("import sys; first = sys.stdin.readline(); second = sys.stdin.readline(); "
              f"print({compile_ahead.READY!r}, flush=True); "
              "print('report', first.strip(), second.strip(), file=sys.stderr)")
    proc = compile_ahead.spawn(["-c", script], words=True)
    compile_ahead.tell(proc)
    compile_ahead.tell(proc)
    said = []
    assert compile_ahead.wait_ready(proc, said.append)
    assert compile_ahead.wait(proc, said.append)
    assert proc.printed.strip() == "report cached cached"
    assert all("stopped" not in line for line in said)
    compile_ahead.stop(proc)


def test_a_second_process_that_ends_without_ready_is_reported():
    proc = compile_ahead.spawn(["-c", "import sys; sys.stdin.readline(); raise SystemExit('no kernels today')"],
                               words=True)
    compile_ahead.tell(proc)
    said = []
    assert not compile_ahead.wait_ready(proc, said.append)
    assert not compile_ahead.wait(proc, said.append)
    assert "exit code 1" in said[-1] and "no kernels today" in said[-1]
    compile_ahead.tell(proc)  # a word to a process that has ended is no error
    compile_ahead.stop(proc)


def _parameters(kernel):
    return list(inspect.signature(kernel.py_func).parameters)


def test_kernels_compiled_ahead_have_the_types_the_time_loop_gives_them():
    """The pair and wall passes and their parts are compiled ahead for the argument types run_steps and
    pair_forces call them with (else a process would compile them again): every argument they take
    from the time loop's own arguments has the type the loop has for it, and the parts compiled on
    their own gain no second signature when the pair pass is compiled around them."""
    from graindem.boundaries.servo import servo
    from graindem.boundaries.walls import servo_walls, wall_forces
    from graindem.engine import pair_pass as pp
    from graindem.engine.history import compact_on_schedule
    from graindem.engine.integration import advance_particles
    from graindem.engine.loop import run_steps
    from graindem.engine.rolling_pass import rolling_pass

    sim = compile_ahead.small_packing(gas=False)
    compile_ahead.compile_jaeger_force_pass(sim)
    compile_ahead.compile_pair_parts(sim)
    parts = (pp.pair_force_pass_jaeger, pp.pair_force_pass_mindlin, pp.pair_force_pass_md_incremental,
             pp.pair_force_pass_linear, pp._pair_kinematics_orthogonal, pp._pair_kinematics_sheared)
    signatures = {part: set(part.signatures) for part in parts}
    assert compile_ahead.compile_pair_pass(sim)
    for part in parts:
        assert set(part.signatures) == signatures[part], part.py_func.__name__
    sim = compile_ahead.small_packing()
    compile_ahead.compile_moves(sim)
    compile_ahead.compile_loop_parts(sim)
    assert compile_ahead.compile_walls(sim)
    kernels = (pp.pair_forces, wall_forces, advance_particles, compact_on_schedule, rolling_pass, servo, servo_walls)
    ahead = {kernel: kernel.signatures[-1] for kernel in kernels}
    sim.run(2)  # run_steps, compiled or loaded: its signature is then known
    loop = dict(zip(_parameters(run_steps), run_steps.signatures[-1]))
    for kernel, signature in ahead.items():
        shared = [(name, ty) for name, ty in zip(_parameters(kernel), signature) if name in loop]
        # all but the time loop's own scratch arrays (prm, sc, act, live; the stress sum's `want`)
        assert len(shared) >= len(signature) - 5, kernel
        for name, ty in shared:
            assert ty == loop[name], (kernel.py_func.__name__, name, ty, loop[name])
