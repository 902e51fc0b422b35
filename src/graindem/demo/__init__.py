"""`graindem demo`: the default demonstration, written into one folder.

1. DIR/contact/ — the contact laws against the Mindlin–Deresiewicz closed forms (constant-N loops,
   the §17 proportional sequence, ξ history lengths) and the Jäger traction distributions;
2. DIR/ — the default scenario, a small biaxial test (Kuhn §4.2 at reduced size) with the Jäger law:
   VTK files for ParaView, CSV/JSON time series, PNG plots and `summary.json`.

On two cores or more the kernels are compiled by two processes and the contact-law part runs in the
second one while this one runs the biaxial test (demo.compile_ahead); its report follows the
biaxial test's.
"""

import time
from pathlib import Path


def add_arguments(parser):
    parser.add_argument("--out", default="results/demo", help="results folder (default: results/demo)")
    parser.add_argument("--skip-biaxial", action="store_true", help="only the contact-law part (seconds)")


def run(args):
    from . import compile_ahead
    from .contact import run_demo as contact_demo
    from .traction import write_traction_demo

    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out must be a folder (it may not exist yet), got the file {str(out)!r}")
    t0 = time.perf_counter()
    say = lambda msg: print(msg, flush=True)  # noqa: E731

    def contact_part():
        say("== contact laws against the closed forms (seconds after compilation) ==")
        contact_demo(out / "contact", announce=say)
        write_traction_demo(out / "contact", announce=say)

    say(f"graindem demo: results go to {out.resolve()}/")
    say("The first run compiles numba kernels, on both cores, before the parts start (about 3 minutes of it on 2")
    say("cores); later runs load them from the cache and take seconds.")
    ahead = None if args.skip_biaxial else compile_ahead.start(out / "contact")
    try:
        if ahead is None:
            contact_part()
        else:
            say("== compiling the kernels on two cores; the contact-law part then runs on the second one ==")
            compile_ahead.compile_contact_law()
            compile_ahead.tell(ahead)
            compile_ahead.compile_jaeger_force_pass()
            compile_ahead.tell(ahead)
            compile_ahead.wait_ready(ahead, say)
        if not args.skip_biaxial:
            from ..scenarios.biaxial import run_demo as biaxial_demo
            say("== default scenario: biaxial compression of a 512-sphere packing, Jäger law ==")
            say("   (the packing is first compressed isotropically to the confining stress, then compressed biaxially "
                "to 4 % axial strain)")
            biaxial_demo(out, announce=say)
        if ahead is not None:
            if compile_ahead.wait(ahead, say):
                say("== contact laws against the closed forms (run on the second core) ==")
                say(ahead.printed.rstrip("\n"))
            else:
                contact_part()
    finally:
        compile_ahead.stop(ahead)
    say(f"done in {time.perf_counter() - t0:.1f} s; results in {out.resolve()}/")
    return 0
