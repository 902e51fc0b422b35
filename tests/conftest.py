"""Suite-wide set-up: long child runs start at collection so they overlap with the other tests."""

import shutil
import tempfile


def pytest_collection_finish(session):
    wanted = [item for item in session.items if item.name.startswith("test_fresh_compile_and_cached_kernels")]
    if not wanted or session.config.option.collectonly:
        return
    cache_dir = tempfile.mkdtemp(prefix="graindem-fresh-cache-")
    session.config.fresh_cache_dir = cache_dir
    session.config.fresh_and_cached_runs = wanted[0].module.FreshAndCachedRuns(cache_dir)


def pytest_unconfigure(config):
    runs = getattr(config, "fresh_and_cached_runs", None)
    if runs is not None:
        runs.stop()
        shutil.rmtree(config.fresh_cache_dir, ignore_errors=True)
