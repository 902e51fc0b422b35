"""Suite-wide set-up: long child runs start at collection so they overlap with the other tests."""

import shutil
import tempfile

import pytest


@pytest.hookimpl(trylast=True)  # after -k / -m have deselected what will not run
def pytest_collection_modifyitems(config, items):
    wanted = [item for item in items if item.name.startswith("test_fresh_compile_and_cached_kernels")]
    if not wanted or config.option.collectonly:
        return
    cache_dir = tempfile.mkdtemp(prefix="graindem-fresh-cache-")
    config.fresh_cache_dir = cache_dir
    config.fresh_and_cached_runs = wanted[0].module.FreshAndCachedRuns(cache_dir)


def pytest_unconfigure(config):
    runs = getattr(config, "fresh_and_cached_runs", None)
    if runs is not None:
        runs.stop()
        shutil.rmtree(config.fresh_cache_dir, ignore_errors=True)
