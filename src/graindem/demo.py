"""`graindem demo`: the default demonstration (placeholder until the contact demo is written)."""


def add_arguments(parser):
    parser.add_argument("--out", default="results/demo", help="results folder (default: results/demo)")


def run(args):
    raise SystemExit("graindem demo: not implemented yet")
