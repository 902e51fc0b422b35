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


@pytest.hookimpl(trylast=True)  # after -k / -m have deselected what will not run
def pytest_collection_modifyitems(config, items):
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
