"""Suite-wide set-up: long child runs start when the suite starts so they overlap with the other tests.

`make test` runs the suite on two pytest-xdist workers (one file's tests stay on one worker, so module
fixtures are built once). Every worker collects every test, so the fresh-and-cached numba runs of
tests/test_numba_cache_determinism.py are started by the controlling process instead, which tells
the workers where their result will be.
"""

import os
import pathlib
import shutil
import tempfile

import pytest

from fresh_cache_runs import RESULT_FILE_ENV, FreshAndCachedRuns

FRESH_TEST_FILE = "test_numba_cache_determinism"

# The order in which pytest-xdist hands out the test files (`make test`: --dist loadfile
# --no-loadscope-reorder; each worker takes the next file when its own are nearly done). Most of a
# first run is numba compiling kernels, which the workers share through numba's cache, so two workers
# that compile the same kernel at once do the same minutes twice. Nearly every sphere test needs the
# contact laws' kernels (contact.laws: the Jäger law with its energy integrators, minutes to compile),
# so one worker starts with them (test_jaeger.py) while the other starts with the deformable grains'
# and the finite elements' kernels, which need none of them, and then the rigid level-set kernels.
# The files not named here follow, those with more tests first (pytest-xdist's own order).
LEAD_FILES = ("test_jaeger.py", "test_deform_validation.py", "test_deform_engine.py", "test_deform_pullback.py",
              "test_fem_hertz.py", "test_deform_scenario.py", "test_fem_compaction.py", "test_deform_dynamics.py",
              "test_deform_levelset.py", "test_deform_modes.py", "test_fem_modes.py", "test_levelset_run.py",
              "test_mixed_cell_and_hertz.py")


def _xdist_role(config):
    if hasattr(config, "workerinput"):
        return "worker"
    if getattr(config.option, "numprocesses", None) and getattr(config.option, "dist", "no") != "no":
        return "controller"
    return None


def _runs_the_fresh_test(config):
    """Whether a run with pytest-xdist will include the fresh-and-cached test, judged from the command
    line (the controlling process does not collect): no -k/-m filter and either no paths or a path
    that names its file or a folder holding it."""
    if config.option.keyword or config.option.markexpr or config.option.collectonly:
        return False
    paths = [a.split("::")[0] for a in config.args]
    here = pathlib.Path(__file__).parent.resolve()
    for p in paths or [str(here)]:
        target = pathlib.Path(p).resolve()
        if target == here or here.is_relative_to(target) or FRESH_TEST_FILE in target.name:
            return True
    return False


def _start(config, result_file=None):
    cache_dir = tempfile.mkdtemp(prefix="graindem-fresh-cache-")
    config.fresh_cache_dir = cache_dir
    config.fresh_and_cached_runs = FreshAndCachedRuns(cache_dir, result_file)


def pytest_configure(config):
    if _xdist_role(config) == "controller" and _runs_the_fresh_test(config):
        result_file = pathlib.Path(tempfile.mkdtemp(prefix="graindem-fresh-result-")) / "result.json"
        config.fresh_result_dir = str(result_file.parent)
        os.environ[RESULT_FILE_ENV] = str(result_file)  # the workers start after this and inherit it
        _start(config, result_file)


def _file_order(items):
    """items sorted by file as LEAD_FILES and then the test count say (stable within a file)."""
    count = {}
    for item in items:
        count[item.path.name] = count.get(item.path.name, 0) + 1
    lead = {name: k for k, name in enumerate(LEAD_FILES)}
    return sorted(items, key=lambda item: (lead.get(item.path.name, len(lead)), -count[item.path.name],
                                           item.path.name))


@pytest.hookimpl(trylast=True)  # after -k / -m have deselected what will not run
def pytest_collection_modifyitems(config, items):
    items[:] = _file_order(items)
    if _xdist_role(config) is not None or config.option.collectonly:
        return
    if any(item.name.startswith("test_fresh_compile_and_cached_kernels") for item in items):
        _start(config)


def pytest_unconfigure(config):
    runs = getattr(config, "fresh_and_cached_runs", None)
    if runs is not None:
        runs.stop()
        shutil.rmtree(config.fresh_cache_dir, ignore_errors=True)
    if getattr(config, "fresh_result_dir", None):
        shutil.rmtree(config.fresh_result_dir, ignore_errors=True)
