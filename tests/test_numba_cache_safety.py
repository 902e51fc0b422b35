"""graindem's numba cache never removes a folder it did not create.

The base folder of the cache may be shared (GRAINDEM_NUMBA_CACHE=~/.cache): a stale-cache sweep
that removed every old sub-folder would delete other programs' data. Only folders carrying
graindem's marker file are candidates.
"""

import os
import subprocess
import sys
import time
from pathlib import Path

from graindem import _jit


def _age(path, seconds):
    t = time.time() - seconds
    os.utime(path, (t, t))


def test_prune_removes_only_marked_stale_siblings(tmp_path):
    base = tmp_path / "shared-cache"
    other = base / "other-program"          # another program's old folder: must stay
    other.mkdir(parents=True)
    (other / "data.bin").write_bytes(b"precious")
    fake = base / "looks-like-ours"          # marker present but as a folder, not a file: not ours
    (fake / _jit.MARKER).mkdir(parents=True)
    link_target = tmp_path / "outside"
    (link_target / _jit.MARKER).parent.mkdir(parents=True)
    (link_target / _jit.MARKER).write_text("x")
    os.symlink(link_target, base / "a-link")  # a link to a marked folder: never followed
    old = _jit.prepare_cache_folder(base, "0123456789abcdef")
    fresh = _jit.prepare_cache_folder(base, "fedcba9876543210")
    current = _jit.prepare_cache_folder(base, "aaaaaaaaaaaaaaaa")
    for p in (other, fake, base / "a-link", old):
        _age(p, 2 * _jit.STALE_AFTER_S)
    _age(current, 2 * _jit.STALE_AFTER_S)
    removed = _jit.prune_stale_caches(base, current.name)
    assert removed == [str(old)]
    assert not old.exists()
    assert (other / "data.bin").read_bytes() == b"precious"
    assert fake.is_dir() and (base / "a-link").is_symlink() and (link_target / _jit.MARKER).is_file()
    assert fresh.is_dir() and current.is_dir()  # too young / the one in use


def test_import_with_shared_base_keeps_other_programs_folders(tmp_path):
    """A real import of graindem with GRAINDEM_NUMBA_CACHE pointing at a folder other programs use."""
    base = tmp_path / "dot-cache"
    other = base / "pip"
    other.mkdir(parents=True)
    (other / "wheel.whl").write_bytes(b"1")
    _age(other, 10 * _jit.STALE_AFTER_S)
    _age(base, 10 * _jit.STALE_AFTER_S)
    env = dict(os.environ)
    env.pop("NUMBA_CACHE_DIR", None)
    env["GRAINDEM_NUMBA_CACHE"] = str(base)
    code = "import numba, graindem._jit; print(numba.config.CACHE_DIR)"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    cache_dir = Path(out.stdout.strip())
    assert cache_dir.parent == base and (cache_dir / _jit.MARKER).is_file()
    assert (other / "wheel.whl").read_bytes() == b"1"


def test_unwritable_base_falls_back(tmp_path):
    """A base that cannot be created (under a regular file: refused even to root) falls back to a
    marked per-user folder in the temporary directory."""
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    env = dict(os.environ)
    env.pop("NUMBA_CACHE_DIR", None)
    env["GRAINDEM_NUMBA_CACHE"] = str(blocker / "cache")
    code = "import numba, graindem._jit; print(numba.config.CACHE_DIR)"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    cache_dir = Path(out.stdout.strip())
    assert blocker not in cache_dir.parents and (cache_dir / _jit.MARKER).is_file()
    assert blocker.read_text() == "not a folder"


def test_default_base_is_the_users_cache_directory():
    from platformdirs import user_cache_dir
    assert _jit.default_cache_base() == Path(user_cache_dir("graindem", appauthor=False)) / "numba"


def test_numba_cache_dir_is_used_as_given(tmp_path):
    env = dict(os.environ)
    env["NUMBA_CACHE_DIR"] = str(tmp_path / "mine")
    code = "import numba, graindem._jit; print(numba.config.CACHE_DIR)"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == str(tmp_path / "mine")
    assert not (tmp_path / "mine" / _jit.MARKER).exists()
