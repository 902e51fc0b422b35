"""Command line interface of graindem.

Each subcommand lives in its own module, which provides `add_arguments(parser)` and `run(args)`
(returning an exit code); this file lists them and turns failures into exit codes:

    0  success
    1  the run failed for a reason outside its input (disk full, out of memory, an internal error)
    2  bad input (arguments, scenario, checkpoint, mode file, an unwritable output folder)
    3  the simulation diverged (a checkpoint of the failing state is written where possible)
    130 interrupted (Ctrl-C or SIGTERM; `graindem run` writes a checkpoint first)

A failure prints one line to stderr; `--debug` prints the traceback as well.
"""

import argparse
import importlib
import signal
import sys
import threading
import traceback
from .parallel.world import world

COMMANDS = {
    "modes": ("graindem.fem.cli", "extract deformation modes of a grain by FEM and write a mode file"),
    "demo": ("graindem.demo", "run the default demonstration and write its results to a folder"),
    "run": ("graindem.engine.cli", "run a scenario file (TOML) or continue from a checkpoint"),
    "pile": ("graindem.scenarios.pile", "pour level-set grains into a box and settle them under gravity"),
    "sweep": ("graindem.sweep", "run a parameter study of a scenario as independent runs on Dask"),
}

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_BAD_INPUT = 2
EXIT_DIVERGED = 3
EXIT_INTERRUPTED = 130

# Commands that run compiled kernels: a line says so when numba starts compiling one the cache lacks.
COMPILES = ("run", "pile")

# What --out is for each command: checked writable before any work starts.
OUT_IS = {"run": "folder", "demo": "folder", "pile": "folder", "modes": "file"}


def version():
    """The installed distribution's version (the package's own when not installed)."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as dist_version
    try:
        return dist_version("graindem")
    except PackageNotFoundError:
        from . import __version__
        return __version__


def exit_code(exc):
    """(exit status, one-line message) for an exception that ended a command."""
    from .engine.simulation import Diverged
    if isinstance(exc, Diverged):
        return EXIT_DIVERGED, str(exc)
    if isinstance(exc, KeyboardInterrupt):
        return EXIT_INTERRUPTED, str(exc) or "interrupted"
    if isinstance(exc, MemoryError):
        return EXIT_FAILED, f"out of memory{': ' + str(exc) if str(exc) else ''}"
    if isinstance(exc, OSError):
        from .io.outputs import is_disk_full
        where = f" ({exc.filename})" if getattr(exc, "filename", None) else ""
        if is_disk_full(exc):
            return EXIT_FAILED, f"disk full{where}: {exc.strerror}"
        if isinstance(exc, (FileNotFoundError, PermissionError, IsADirectoryError, NotADirectoryError)):
            return EXIT_BAD_INPUT, f"{exc.strerror or exc}{where}"
        return EXIT_FAILED, f"{exc.strerror or exc}{where}"
    if isinstance(exc, KeyError):
        return EXIT_BAD_INPUT, f"missing entry {exc.args[0]!r}" if exc.args else "missing entry"
    if isinstance(exc, (ValueError, TypeError)):
        return EXIT_BAD_INPUT, str(exc)
    if isinstance(exc, RuntimeError) and str(exc):
        return EXIT_FAILED, str(exc)
    return EXIT_FAILED, f"{type(exc).__name__}: {exc}"


def _check_out(command, args):
    out = getattr(args, "out", None)
    if out is None or command not in OUT_IS:
        return
    from pathlib import Path
    from .io.outputs import check_output_folder
    path = Path(out)
    if OUT_IS[command] == "file":
        if path.is_dir():
            raise ValueError(f"--out must be a file name, {str(path)!r} is a folder")
        check_output_folder(path.parent if str(path.parent) else Path("."), what="--out (its folder)")
    else:
        check_output_folder(path, what="--out")


def main(argv=None):
    parser = argparse.ArgumentParser(prog="graindem", description="Discrete element simulation of granular matter.")
    parser.add_argument("--version", action="version", version=f"graindem {version()}")
    parser.add_argument("--debug", action="store_true", help="show the traceback of a failure")
    sub = parser.add_subparsers(dest="command", required=True)
    modules = {}
    for name, (module_name, help_text) in COMMANDS.items():
        module = importlib.import_module(module_name)
        p = sub.add_parser(name, help=help_text)
        p.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help="show the traceback of a failure")
        module.add_arguments(p)
        modules[name] = module
    args = parser.parse_args(argv)
    # SIGTERM (what a scheduler sends) ends a command as Ctrl-C does; a running simulation turns
    # both into a stop at the end of a step (engine.interrupts)
    previous = None
    if threading.current_thread() is threading.main_thread():
        previous = signal.signal(signal.SIGTERM, _terminate_as_interrupt)
    try:
        comm = world()
        if comm is not None and args.command != "run":
            raise ValueError(f"graindem {args.command} does not run over several MPI ranks (graindem run does): run "
                             "it on one rank")
        if comm is None or comm.Get_rank() == 0:
            _check_out(args.command, args)
        if comm is not None:
            return _run_on_ranks(comm, modules[args.command], args)
        quiet = getattr(args, "quiet", False) or getattr(args, "dry_run", False)
        if args.command in COMPILES and not quiet:
            from ._jit import announce_first_compilation
            announce_first_compilation(lambda text: print(text, flush=True))
        return int(modules[args.command].run(args) or 0)
    except (Exception, KeyboardInterrupt) as exc:
        if args.debug:
            traceback.print_exc()
        status, message = exit_code(exc)
        print(f"graindem {args.command}: {message}", file=sys.stderr)
        return status
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _run_on_ranks(comm, module, args):
    """`graindem run` on several MPI ranks: every rank runs it (the Simulation runs decomposed), rank 0
    writes the results folder and prints (parallel.rank_outputs)."""
    from pathlib import Path
    from .parallel.rank_outputs import rank_folder
    out = Path(args.out)
    with rank_folder(comm, out) as folder:
        if comm.Get_rank() > 0:
            args.quiet = True
            restart = getattr(args, "restart", None)
            if restart is not None and Path(restart).resolve().parent == out.resolve():
                args.restart = str(folder / Path(restart).name)  # the private copy: rank 0 replaces the file
        args.out = str(folder)
        return int(module.run(args) or 0)


def _terminate_as_interrupt(signum, frame):
    raise KeyboardInterrupt("SIGTERM received")


if __name__ == "__main__":
    sys.exit(main())
