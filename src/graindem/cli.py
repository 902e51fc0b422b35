"""Command line interface of graindem.

Each subcommand lives in its own module, which provides `add_arguments(parser)` and `run(args)`
(returning an exit code); this file only lists them.
"""

import argparse
import importlib
import sys

COMMANDS = {
    "modes": ("graindem.fem.cli", "extract deformation modes of a grain by FEM and write a mode file"),
    "demo": ("graindem.demo", "run the default demonstration and write its results to a folder"),
    "run": ("graindem.engine.cli", "run a scenario file (TOML) or continue from a checkpoint"),
    "pile": ("graindem.scenarios.pile", "pour level-set grains into a box and settle them under gravity"),
    "sweep": ("graindem.sweep", "run a parameter study of a scenario as independent runs on Dask"),
}


def main(argv=None):
    parser = argparse.ArgumentParser(prog="graindem", description="Discrete element simulation of granular matter.")
    sub = parser.add_subparsers(dest="command", required=True)
    modules = {}
    for name, (module_name, help_text) in COMMANDS.items():
        module = importlib.import_module(module_name)
        module.add_arguments(sub.add_parser(name, help=help_text))
        modules[name] = module
    args = parser.parse_args(argv)
    return int(modules[args.command].run(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
