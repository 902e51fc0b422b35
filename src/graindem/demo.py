"""`graindem demo`: the default demonstration.

For now it runs the contact-law demonstration (`graindem.demo_contact`): plots of the four tangential
laws against the Mindlin–Deresiewicz closed forms and a `summary.json`, written into `--out`.
"""

from pathlib import Path


def add_arguments(parser):
    parser.add_argument("--out", default="results/demo", help="results folder (default: results/demo)")


def run(args):
    from .demo_contact import run_demo

    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out must be a folder (it may not exist yet), got the file {str(out)!r}")
    print(f"graindem demo: contact-law demonstration into {out}/", flush=True)
    summary = run_demo(out, announce=lambda msg: print(msg, flush=True))
    print(f"done in {summary['runtime_s']:.1f} s", flush=True)
    return 0
