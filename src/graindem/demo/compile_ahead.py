"""The biaxial part's numba kernels compiled in a second process while the contact-law part runs.

On a fresh machine most of `graindem demo` is numba compiling kernels, and numba compiles one
kernel at a time in one process. The demo's two parts use different kernels (the contact-law part
the single-contact and batched contact kernels, the biaxial part the sphere engine's), so a second
process compiles the engine's on the second core while the first runs the contact-law part. numba's
on-disk cache is what hands them over: every kernel is written there when compiled (by an atomic
rename, so two processes may write it at once) and the first process loads it from there when the
biaxial part starts.

The second process compiles by running the biaxial part itself (`scenarios.biaxial.run_demo`) at
a small size into a temporary folder: the same functions with the same argument types, so the same
kernels and signatures, whatever they are; the size sets only how long the run after compilation
takes (a second or two). When the cache already holds the kernels it finishes in seconds.

A failure of the second process costs only time: the first process then compiles what is missing
itself when the biaxial part starts.
"""

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numba

# The small run: enough spheres for a periodic packing to settle under the servo, and enough steps
# for every output of the full run (series rows, VTK frames, checkpoint, plots) to be written.
SPHERES = 64
STEPS = 200


def start():
    """Start the second process; returns it, or None on a machine with one core (where it would only
    compete with the first process for that core)."""
    if (os.cpu_count() or 1) < 2:
        return None
    import graindem
    env = dict(os.environ)
    # the sources this process runs and the cache folder it chose (graindem._jit), whatever the
    # working directory and the environment of the second process would give
    src = str(Path(graindem.__file__).resolve().parents[1])
    env["PYTHONPATH"] = src + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    if numba.config.CACHE_DIR:
        env["NUMBA_CACHE_DIR"] = numba.config.CACHE_DIR
    return spawn(["-m", __name__], env)


def spawn(args, env=None):
    """`python args...` in a new process, its output kept in a temporary file (proc.log) for `wait`."""
    log = tempfile.TemporaryFile(mode="w+")
    proc = subprocess.Popen([sys.executable, *args], env=env, stdin=subprocess.DEVNULL, stdout=log,
                            stderr=subprocess.STDOUT)
    proc.log = log
    return proc


def wait(proc, say):
    """Wait for the second process to finish, saying so when it is not done yet; a failure is reported
    in one line (the first process then compiles what is missing itself)."""
    if proc is None:
        return
    if proc.poll() is None:
        say("   waiting for the second process to finish compiling the sphere engine ...")
        t0 = time.perf_counter()
        proc.wait()
        say(f"   ... done after {time.perf_counter() - t0:.0f} s more")
    if proc.returncode != 0:
        proc.log.seek(0)
        lines = proc.log.read().strip().splitlines()
        say(f"   (the second process stopped with exit code {proc.returncode}: "
            f"{lines[-1] if lines else 'no message'}; compiling here instead)")
    proc.log.close()


def stop(proc):
    """End the second process if it still runs (the demo stopped or failed before waiting for it)."""
    if proc is None:
        return
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    proc.log.close()


def compile_biaxial(out=None):
    """Run the demo's biaxial part at the small size into `out` (default: a temporary folder, removed
    after); returns its summary. This is what the second process does."""
    from ..scenarios.biaxial import run_demo
    if out is not None:
        return run_demo(out, n=SPHERES, steps=STEPS, announce=None)
    with tempfile.TemporaryDirectory(prefix="graindem-compile-") as tmp:
        return run_demo(tmp, n=SPHERES, steps=STEPS, announce=None)


if __name__ == "__main__":
    compile_biaxial()
