"""Command line interface: `graindem demo`, `graindem run`, `graindem modes extract`."""

import argparse
import sys


def main(argv=None):
    parser = argparse.ArgumentParser(prog="graindem", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="run the default demonstration and write results to a folder")
    demo.add_argument("--out", default="results/demo", help="results folder (default: results/demo)")
    args = parser.parse_args(argv)
    if args.command == "demo":
        from .demo import run_demo
        return run_demo(args.out)
    return 2


if __name__ == "__main__":
    sys.exit(main())
