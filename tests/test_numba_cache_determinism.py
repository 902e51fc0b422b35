"""A run gives the same bits whether numba compiled the kernels afresh or loaded them from its cache.

Why this is a test: a restart continues in a new process, which loads the cached kernels, while the
interrupted run may have compiled them itself. With fastmath, numba's fresh and cached machine code
can round differently (a process that compiles afresh may run each callee's own library, one that
loads from the cache the caller's copy, optimised apart; graindem._jit gives every library its own
internal copies), and then a run and its restart part after some thousand steps although every
in-process restart test passes. Here a child process compiles into an empty cache directory and a
second child loads from it; both run the same mixed sequence (servo compression with jaeger
histories, then a sheared cell, then spheres sliding on walls, then a box with a moving lid, many
rebuilds and sorting) and print state hashes along the way, which must agree exactly.
"""

import os

import pytest

from fresh_cache_runs import RESULT_FILE_ENV, FreshAndCachedRuns, read_result_file


@pytest.mark.slow
def test_fresh_compile_and_cached_kernels_give_identical_runs(request, tmp_path):
    # tests/conftest.py starts the runs when the suite starts (in this process, or in pytest-xdist's
    # controlling process, which names the result file in the environment)
    if os.environ.get(RESULT_FILE_ENV):
        fresh, filled, cached = read_result_file(os.environ[RESULT_FILE_ENV])
    else:
        runs = getattr(request.config, "fresh_and_cached_runs", None) or FreshAndCachedRuns(tmp_path)
        fresh, filled, cached = runs.wait()
    assert filled, "the first run should have filled the numba cache"
    lines = [line for line in fresh if line]
    assert len(lines) == 9
    # the walled stages must keep wall contacts (else they test no wall pass), the lid's stage must
    # rebuild (sorting the particles) on the way
    assert all(int(line.split()[2]) > 0 for line in lines if line.startswith(("walls", "lid")))
    assert all(int(line.split()[3]) > 10 for line in lines if line.startswith("lid"))
    assert fresh == cached
