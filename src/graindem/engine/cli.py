"""`graindem run`: run a scenario file, or continue a run from its checkpoint.

    graindem run SCENARIO.toml --out DIR [--steps N]
    graindem run --restart DIR/checkpoint.h5 --out DIR [--steps N]

The results folder gets series.csv/.jsonl/.json, VTK files (particles.pvd, contacts.pvd), PNG
plots, checkpoint.h5 (everything needed to continue bit for bit) and summary.json. The prepared
packing is kept as DIR/packing.h5 and reused by later runs into the same folder with the same
particle settings. A run that goes unstable writes DIR/diverged.h5 and exits with status 3.
"""

import json
import sys
import time
from pathlib import Path


def add_arguments(parser):
    parser.add_argument("scenario", nargs="?", help="scenario file (TOML); see README for the format")
    parser.add_argument("--out", required=True, help="results folder")
    parser.add_argument("--steps", type=int, default=None, help="time steps to run (default: the scenario's)")
    parser.add_argument("--restart", default=None, help="continue from this checkpoint instead of a scenario")
    parser.add_argument("--quiet", action="store_true", help="no progress line")


def _announce(quiet):
    return None if quiet else (lambda msg: print(msg, flush=True))


def run_scenario(config, out, steps=None, quiet=False):
    """Run a validated scenario config (io.scenario) into folder `out`; returns the summary dict."""
    from ..io.timeseries import read_timeseries
    from ..scenarios import biaxial as B
    sim_cfg = config["simulation"]
    if sim_cfg["scenario"] != "biaxial":
        raise ValueError(f"simulation.scenario = {sim_cfg['scenario']!r} is not run by `graindem run` "
                         "(it runs 'biaxial'); use that scenario's own command")
    if config["boundary"]["kind"] != "periodic":
        raise ValueError("boundary.kind must be 'periodic' for the biaxial scenario (walls are not supported there yet)")
    if config["particles"].get("file"):
        raise ValueError("particles.file is not supported by the biaxial scenario yet: give particles.n, "
                         "particles.radius_mean and particles.radius_spread")
    load = config["loading"]
    if load["kind"] == "none":
        raise ValueError("loading.kind = 'none' has nothing to run in the biaxial scenario; use 'biaxial' or 'isotropic'")
    mat = config["material"]
    part = config["particles"]
    announce = _announce(quiet)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    material = {"E": mat["E"], "nu": mat["nu"], "density": mat["density"], "mu": mat["mu"]}
    sim = B.prepared_packing(part["n"], seed=sim_cfg["seed"], pressure=load["confining_stress"],
                             cache=out / "packing.h5", radius=part["radius_mean"], spread=part["radius_spread"],
                             material=material, mu_prep=load["preparation_mu"], announce=announce,
                             dt_fraction=sim_cfg["dt_fraction"] or 0.2, dt=sim_cfg["dt"],
                             allow_unstable_dt=sim_cfg["allow_dt_above_critical"],
                             restitution=mat["restitution"] if mat["restitution"] < 1.0 else None)
    nsteps = sim_cfg["steps"]  # the test's length (sets the strain rate); `steps` is how far to run now
    run_steps = nsteps if steps is None else int(steps)
    if load["kind"] == "isotropic":
        summary = {"law": config["contact"]["law"], "n_particles": sim.n, "steps": sim.step_count,
                   **{k: v for k, v in sim.measure().items() if k in ("pressure", "void_ratio", "coordination",
                                                                        "n_contacts")}}
        (out / "summary.json").write_text(json.dumps(summary, indent=2))
        return summary
    total_strain = load["total_strain"]
    if load["strain_rate"] is not None:
        total_strain = 1.0 - __import__("math").exp(-load["strain_rate"] * nsteps * sim.dt)
    test = B.start_test(sim, config["contact"]["law"], xi=config["contact"]["xi"], steps=nsteps,
                        total_strain=total_strain, axis=load["axis"], stress_axis=load["stress_axis"],
                        pressure=load["confining_stress"], local_damping=mat["damping"])
    test["config"] = config
    if announce:
        announce(B.dt_line(sim))
        announce(f"biaxial test, law {test['law']}: {sim.n} spheres, {nsteps} steps to "
                 f"{100 * total_strain:.2f} % axial strain")
    rows, rate = B.run_test(sim, test, out=out, steps=run_steps, output_interval=sim_cfg["output_interval"],
                            vtk_interval=(sim_cfg["vtk_interval"] or sim_cfg["output_interval"]) if config["output"]["vtk"] else 0,
                            quiet=quiet)
    return _finish(sim, test, out, rate, t0, announce, config)


def _finish(sim, test, out, rate, t0, announce, config):
    from ..io.timeseries import read_timeseries
    from ..scenarios import biaxial as B
    series = read_timeseries(out / "series.csv")
    rows = [dict(zip(series.keys(), vals)) for vals in zip(*series.values())]
    if config is None or config["output"]["plots"]:
        B.plot_results(series, out, test["law"], announce=announce)
    summary = B.summarize(rows, test["law"], sim.n, sim.step_count - test["start_step"], rate)
    summary["runtime_s"] = time.perf_counter() - t0
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    if announce:
        announce(f"peak stress ratio {summary['peak_stress_ratio']:.3f}; {summary['mean_contacts']:.0f} contacts; "
                 f"{rate:.0f} steps/s; wrote {out / 'summary.json'}")
    return summary


def restart(checkpoint_path, out, steps=None, quiet=False):
    """Continue the biaxial run saved in `checkpoint_path` for `steps` more steps (default: to its end)."""
    from ..engine import checkpoint
    from ..scenarios import biaxial as B
    announce = _announce(quiet)
    t0 = time.perf_counter()
    sim, extra = checkpoint.load(checkpoint_path)
    if not extra or "biaxial" not in extra:
        raise ValueError(f"{checkpoint_path} holds no biaxial run to continue (a prepared packing? run a scenario)")
    test = extra["biaxial"]
    config = test.get("config")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    resume = (Path(out) / "series.csv").exists()
    vtk_interval = 0
    output_interval = 1000
    if config is not None:
        output_interval = config["simulation"]["output_interval"]
        if config["output"]["vtk"]:
            vtk_interval = config["simulation"]["vtk_interval"] or output_interval
    if announce:
        announce(f"restarting from {checkpoint_path} at step {sim.step_count - test['start_step']} of the test")
    rows, rate = B.run_test(sim, test, out=out, steps=steps, output_interval=output_interval,
                            vtk_interval=vtk_interval, quiet=quiet, resume=resume)
    return _finish(sim, test, out, rate, t0, announce, config)


def run(args):
    from ..engine.simulation import Diverged
    from ..io.scenario import apply_overrides, load_scenario
    if (args.scenario is None) == (args.restart is None):
        print("graindem run: give a scenario file or --restart CHECKPOINT (one of them)", file=sys.stderr)
        return 2
    if args.steps is not None and args.steps < 0:
        print(f"graindem run: --steps must be >= 0, got {args.steps}", file=sys.stderr)
        return 2
    try:
        if args.restart is not None:
            restart(args.restart, args.out, steps=args.steps, quiet=args.quiet)
        else:
            config = load_scenario(args.scenario)
            run_scenario(config, args.out, steps=args.steps, quiet=args.quiet)
    except Diverged as exc:
        print(f"graindem run: {exc}", file=sys.stderr)
        return 3
    except (ValueError, FileNotFoundError) as exc:
        print(f"graindem run: {exc}", file=sys.stderr)
        return 2
    return 0
