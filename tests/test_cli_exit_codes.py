"""Every command's exit codes: 0 success, 1 failure outside the input, 2 bad input, 3 divergence,
130 interrupt; one line on stderr, the traceback only with --debug."""

import errno
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from graindem import cli
from graindem.cli import main


def _one_line(capsys):
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    return err


def test_version(capsys):
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0
    assert capsys.readouterr().out.strip() == f"graindem {cli.version()}"
    from graindem import __version__
    assert cli.version() == __version__  # the installed metadata and the package agree


@pytest.mark.parametrize("argv,message", [
    (["pile", "--grains", "0"], "n_grains must be an integer >= 1"),
    (["run", "missing.toml", "--out", "{tmp}/o"], "does not exist"),
    (["run", "--restart", "{tmp}/none.h5", "--out", "{tmp}/o"], "does not exist"),
    (["modes", "extract", "{tmp}/none.toml", "--out", "{tmp}/m.h5"], "does not exist"),
    (["demo", "--out", "{tmp}/file"], "--out must be a folder"),
    (["modes", "extract", "{tmp}/none.toml", "--out", "{tmp}"], "--out must be a file name"),
])
def test_bad_input_exits_2_with_one_line(tmp_path, capsys, argv, message):
    (tmp_path / "file").write_text("x")
    assert main([a.replace("{tmp}", str(tmp_path)) for a in argv]) == 2
    assert message in _one_line(capsys)


@pytest.mark.parametrize("exc,status,message", [
    (KeyboardInterrupt(), 130, "interrupted"),
    (MemoryError(), 1, "out of memory"),
    (OSError(errno.ENOSPC, "No space left on device", "/x/series.csv"), 1, "disk full (/x/series.csv)"),
    (PermissionError(errno.EACCES, "Permission denied", "/x/y"), 2, "Permission denied (/x/y)"),
    (KeyError("law"), 2, "missing entry 'law'"),
    (RuntimeError("boom"), 1, "boom"),
])
def test_failures_map_to_exit_codes(monkeypatch, capsys, tmp_path, exc, status, message):
    def fail(args):
        raise exc
    monkeypatch.setattr("graindem.demo.run", fail)
    assert main(["demo", "--out", str(tmp_path / "d")]) == status
    assert message in _one_line(capsys)


def test_divergence_exits_3(monkeypatch, capsys, tmp_path):
    from graindem.engine.simulation import Diverged

    def fail(args):
        raise Diverged("run diverged at step 7")
    monkeypatch.setattr("graindem.demo.run", fail)
    assert main(["demo", "--out", str(tmp_path / "d")]) == 3
    assert "run diverged at step 7" in _one_line(capsys)


def test_debug_shows_the_traceback(capsys):
    assert main(["--debug", "pile", "--grains", "0"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" in err and "n_grains must be an integer >= 1" in err
    assert main(["pile", "--grains", "0", "--debug"]) == 2
    assert "Traceback" in capsys.readouterr().err


def test_argument_errors_exit_2():
    r = subprocess.run([sys.executable, "-m", "graindem.cli", "run", "--steps", "x", "--out", "o"],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "invalid int value" in r.stderr


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_interrupted_command_exits_130(tmp_path, signum):
    """`graindem demo` (no simulation driver of its own) stopped by Ctrl-C or a scheduler's SIGTERM."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[1] / "src") + os.pathsep + env.get("PYTHONPATH", "")
    # SIG_DFL in the child: a suite started in the background of a shell inherits SIGINT ignored, and
    # Python then keeps ignoring it instead of raising KeyboardInterrupt
    proc = subprocess.Popen([sys.executable, "-m", "graindem.cli", "demo", "--skip-biaxial", "--out",
                             str(tmp_path / "d")], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    proc.stdout.readline()  # "graindem demo: results go to ...": the command is running
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
