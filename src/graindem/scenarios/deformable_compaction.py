"""Scenario `deformable_compaction`: n_side³ deformable spheres compressed by six walls, by a
stress-controlled lid (an oedometer) or by the stress servo of a periodic cell (`graindem run`).

    graindem run examples/deformable_compaction.toml --out DIR [--steps N]
    graindem run --restart DIR/checkpoint.h5 --out DIR2 [--steps N]

The grains are the seed's Table 2 sphere (radius 10 voxel units, `deform.scenes.compaction_sphere`)
with one compaction mode (a graindem mode file, or the analytic stand-in when none is given), the
Appendix B response and tangent modal damping, on a cubic lattice with small random offsets, in a
box of six frictional walls moving inward at a constant speed (loading.boundary = "walls"), in a
box of five fixed walls and a lid (the +z wall) whose servo presses the grains with loading.stress
over the box's face, moving at most loading.wall_speed ("oedometer"; boundaries.walls, the wall
servo: its gain loading.wall_servo_gain, or 0.1 / (k dt) with k the lid's contact stiffness at the
target estimated from the grains' flat-patch law), or in a periodic cell of the lattice's size whose three axes the stress servo drives to the mean stress
loading.stress ("servo"). Units are the seed's voxel units (density 1). Outputs: series.csv (every
output_interval steps), checkpoint.h5 (every checkpoint_interval steps and at the end), summary.json
(n_particles, kinds, steps_per_s, the wall force, ε, the mean Love–Weber stress), VTK of the deformed
surfaces if asked. A restart continues bit for bit.

The file has its own schema (below): every key optional except simulation.scenario; unknown keys and
values out of range are refused before any work starts.
"""

import json
import math
import tomllib
import uuid
from pathlib import Path

import numpy as np

from ..boundaries.walls import WALL_TARGET

SCENARIO = "deformable_compaction"
EXTRA_KEY = "deformable_compaction"
BOUNDARIES = ("walls", "oedometer", "servo")
LID = 4   # box_walls' +z wall
# section -> key -> (type, default, check, allowed range in words)
SCHEMA = {
    "simulation": {
        "scenario": (str, SCENARIO, lambda v: v == SCENARIO, f"'{SCENARIO}'"),
        "steps": (int, 20000, lambda v: v >= 1, ">= 1"),
        "output_interval": (int, 500, lambda v: v >= 1, ">= 1"),
        "checkpoint_interval": (int, 0, lambda v: v >= 0, ">= 0 (0: at the end only)"),
        "dt_fraction": (float, 0.3, lambda v: 0 < v <= 1, "in (0, 1]"),
        "seed": (int, 0, lambda v: v >= 0, ">= 0"),
    },
    "grains": {
        "n_side": (int, 3, lambda v: 2 <= v <= 10, "in [2, 10]"),
        "nodes": (int, 400, lambda v: 6 <= v <= 20000, "in [6, 20000]"),
        "mode_file": (str, "", lambda v: True, "a path or empty (the analytic stand-in mode)"),
        "modal_mass": (float, 1e5, lambda v: 0 < v < math.inf, "> 0"),
        "damping_ratio": (float, 0.2, lambda v: 0 <= v <= 1, "in [0, 1]"),
        "friction": (float, 0.3, lambda v: 0 <= v <= 10, "in [0, 10]"),
        "jitter": (float, 0.2, lambda v: 0 <= v <= 1, "in [0, 1] (voxel units)"),
    },
    "contact": {
        "stiffness": (float, 1e5, lambda v: 0 < v < math.inf, "> 0"),
        "damping": (float, -1.0, lambda v: v == -1.0 or 0 <= v < math.inf, ">= 0 (omit: about critical)"),
        "pullback": (str, "point", lambda v: v in ("point", "corners"), "'point' or 'corners'"),
        "inverse_iterations": (int, 1, lambda v: 0 <= v <= 10, "in [0, 10]"),
    },
    "loading": {
        "boundary": (str, "walls", lambda v: v in BOUNDARIES, f"one of {BOUNDARIES}"),
        "wall_speed": (float, 0.01, lambda v: 0 < v < math.inf, "> 0 (voxel units per time unit)"),
        "stress": (float, 1.0, lambda v: 0 < v < math.inf, "> 0 (the servo's target mean stress)"),
        "servo_gain": (float, 1e-3, lambda v: 0 < v < math.inf, "> 0 (strain rate per relative stress error)"),
        "max_strain_rate": (float, 2e-3, lambda v: 0 < v < math.inf, "> 0 (the servo's limit, per time unit)"),
        "wall_servo_gain": (float, 0.0, lambda v: 0 <= v < math.inf,
                            ">= 0 (the oedometer lid's speed per unit force error; 0: 0.1 / (k dt))"),
    },
    "output": {
        "vtk": (bool, False, lambda v: True, "true or false"),
    },
}


def is_scenario_file(path):
    """True if the TOML file at `path` names this scenario (simulation.scenario)."""
    try:
        with open(path, "rb") as fh:
            data = tomllib.load(fh)
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
        return False
    sim = data.get("simulation")
    return isinstance(sim, dict) and sim.get("scenario") == SCENARIO


def validate(data, base_dir="."):
    """The full config (defaults filled in) of a parsed scenario file; ValueError names the key."""
    if not isinstance(data, dict):
        raise ValueError("the scenario must be a table of sections")
    config = {}
    for section in data:
        if section not in SCHEMA:
            raise ValueError(f"unknown section [{section}]; allowed: {sorted(SCHEMA)}")
    for section, keys in SCHEMA.items():
        given = data.get(section, {})
        if not isinstance(given, dict):
            raise ValueError(f"[{section}] must be a table")
        for key in given:
            if key not in keys:
                raise ValueError(f"unknown key {section}.{key}; allowed: {sorted(keys)}")
        config[section] = {}
        for key, (kind, default, check, words) in keys.items():
            value = given.get(key, default)
            if kind is float and isinstance(value, int) and not isinstance(value, bool):
                value = float(value)
            if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)) or not check(value):
                raise ValueError(f"{section}.{key} must be {kind.__name__} {words}, got {value!r}")
            config[section][key] = value
    if config["loading"]["boundary"] == "servo" and config["grains"]["n_side"] < 3:
        # a periodic axis must exceed twice the neighbour cutoff, about 2.5 grain diameters
        raise ValueError(f"grains.n_side must be >= 3 with loading.boundary = 'servo' (a periodic cell), got "
                         f"{config['grains']['n_side']}")
    mode_file = config["grains"]["mode_file"]
    if mode_file:
        p = Path(mode_file)
        p = p if p.is_absolute() else Path(base_dir) / p
        if not p.is_file():
            raise ValueError(f"grains.mode_file {mode_file!r} does not exist")
        config["grains"]["mode_file"] = str(p.resolve())
    return config


def load(path):
    with open(path, "rb") as fh:
        data = tomllib.load(fh)
    try:
        return validate(data, Path(path).resolve().parent)
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from None


def build(config):
    """The set-up Simulation of a validated config."""
    from ..deform.scenes import SPHERE_RADIUS, compaction_sphere
    from ..deform.validation import appendix_b_response, box_walls, deformable_simulation, modal_damping_for

    g, c = config["grains"], config["contact"]
    tpl = compaction_sphere(g["mode_file"] or None, n_nodes=g["nodes"])
    r = SPHERE_RADIUS
    n = g["n_side"]
    rng = np.random.default_rng(config["simulation"]["seed"])
    lattice = (np.arange(n) - 0.5 * (n - 1)) * 2.0 * (r + g["jitter"])
    positions = np.array([[x, y, z] for x in lattice for y in lattice for z in lattice])
    positions += rng.uniform(-0.5 * g["jitter"], 0.5 * g["jitter"], positions.shape)
    half = n * (r + g["jitter"])
    servo = config["loading"]["boundary"] == "servo"
    oedometer = config["loading"]["boundary"] == "oedometer"
    speed = 0.0 if oedometer else config["loading"]["wall_speed"]
    walls = [] if servo else [(p, nrm, speed * v) for p, nrm, v in box_walls(half)]
    response = appendix_b_response(r)
    beta = modal_damping_for(response, g["modal_mass"], g["damping_ratio"], "tangent")[1]
    damping = c["damping"]
    if damping < 0:
        # about critical for a grain's translation against one flat contact of radius R/2
        damping = 2.0 * math.sqrt(c["stiffness"] * tpl.volume / (math.pi * (0.5 * r) ** 2))
    sim = deformable_simulation(tpl, positions, [[g["modal_mass"]]], response, planes=walls,
                                beta=config["simulation"]["dt_fraction"], tangent_damping=beta,
                                contact_stiffness=c["stiffness"], contact_damping=damping, contact="one",
                                pullback=c["pullback"], inverse_iterations=c["inverse_iterations"],
                                inverse_method="newton", contact_area=math.pi * (0.5 * r) ** 2, mu=g["friction"],
                                periodic_cell=((-half,) * 3, (half,) * 3) if servo else None)
    load = config["loading"]
    if servo:
        for axis in range(3):
            sim.control_axis(axis, stress=load["stress"], gain=load["servo_gain"], max_rate=load["max_strain_rate"])
    if oedometer:
        area = (2.0 * half) ** 2
        gain = load["wall_servo_gain"] or lid_gain(load["stress"] * area, n * n, c["stiffness"], r, sim.dt)
        sim.control_wall(LID, stress=load["stress"], area=area, servo_gain=gain, max_speed=load["wall_speed"])
    return sim


def lid_gain(force, n_grains, stiffness, radius, dt, alpha=0.1):
    """alpha / (k dt): the wall servo's gain for a lid on n_grains grains sharing `force`, k their
    summed contact stiffness there by the flat-patch estimate of the node penalty law (a sphere of
    `radius` on a plane: F = pi k_s R d^2, so dF/dd = 2 sqrt(pi k_s R F))."""
    k = n_grains * 2.0 * math.sqrt(math.pi * stiffness * radius * force / n_grains)
    return alpha / (k * dt)


SERIES = ("step", "time", "wall_force", "wall_travel", "eps_mean", "eps_max", "kinetic", "strain", "contact_nodes",
          "stress")


def _row(sim, half0):
    from ..bodies.levelset import GC_NCP

    d = sim.deformable
    n_walls = len(sim.walls)
    force = travel = math.nan   # no walls: the periodic cell under the servo
    if n_walls:
        force = float(-np.einsum("ij,ij->i", d.o_force[:n_walls], d.o_dir[:n_walls]).mean())
        travel = float(half0 - np.abs(np.einsum("ij,ij->i", sim.walls[:, 0:3], sim.walls[:, 3:6])).mean())
    kin, strain = d.kinetic_energy(), d.modal_energies()[1]
    return [sim.step_count, sim.time, force, travel, float(d.eps.mean()), float(d.eps.max()), kin, strain,
            int(d.gctl[GC_NCP]), float(np.trace(sim.stress())) / 3.0]


def _drive(sim, state, out, steps, quiet):
    """Run `steps` steps with rows, checkpoints and VTK; then the final checkpoint and summary."""
    from ..engine.cli import run_with_series
    from ..io.outputs import atomic_write_text

    config = state["config"]
    out = Path(out)
    half0 = state["half0"]
    start = state["start_step"]

    def vtk(s, done):
        if config["output"]["vtk"]:
            s.deformable.write_vtk(str(out / f"grains_{done:08d}"))

    seconds = run_with_series(sim, state, out, steps, quiet, EXTRA_KEY, SERIES, lambda s: _row(s, half0),
                              "deformable compaction", shown=("wall_force", "stress", "eps_mean"),
                              on_output=vtk)
    d = sim.deformable
    # no walls (the servo's periodic cell): their force and travel are null in the JSON
    row = {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in zip(SERIES, _row(sim, half0))}
    summary = {"scenario": SCENARIO, "n_particles": int(d.n), "kinds": {"deformable": int(d.n)},
               "steps": sim.step_count - start, "steps_this_run": int(steps),
               "steps_per_s": steps / seconds if seconds > 0 else None, "dt": sim.dt, "dt_crit": sim.dt_crit,
               "wall_force": row["wall_force"], "wall_travel": row["wall_travel"], "eps_mean": row["eps_mean"],
               "eps_max": row["eps_max"], "stress": row["stress"], "box_lengths": sim.box_lengths.tolist(),
               "energies": sim.deformable_energies(), "run_id": state["run_id"]}
    if config["loading"]["boundary"] == "oedometer":
        # the lid's force and the target it is driven to (the wall servo's P and P*)
        summary["lid_force"] = float(-d.o_force[LID] @ d.o_dir[LID])
        summary["lid_target"] = float(sim.walls[LID, WALL_TARGET])
    atomic_write_text(out / "summary.json", json.dumps(summary, indent=2, default=float))
    if not quiet:
        print(f"{d.n} deformable grains, {summary['steps']} steps, {summary['steps_per_s'] or 0:.0f} steps/s, "
              f"mean wall force {math.nan if row['wall_force'] is None else row['wall_force']:.4g}, mean stress {row['stress']:.4g}, mean eps "
              f"{row['eps_mean']:.4g}; wrote {out / 'summary.json'}",
              flush=True)
    return summary


def run_file(path, out, steps=None, quiet=False):
    """`graindem run FILE` for this scenario: validate, build, run `steps` (default: the file's)."""
    from ..engine.cli import prepare_output_folder

    config = load(path)
    out = prepare_output_folder(out)
    sim = build(config)
    sim.verbose = not quiet
    if not quiet:
        print(sim.last_message, flush=True)
    half0 = float(np.abs(np.einsum("ij,ij->i", sim.walls[:, 0:3], sim.walls[:, 3:6])).mean()) if len(sim.walls) else 0.0
    state = {"config": config, "run_id": uuid.uuid4().hex, "start_step": 0, "half0": half0}
    n = config["simulation"]["steps"] if steps is None else int(steps)
    return _drive(sim, state, out, n, quiet)


def restart(checkpoint_path, out, steps=None, quiet=False):
    """Continue a run of this scenario from its checkpoint for `steps` more steps (default: to its end)."""
    from ..engine.cli import resume_scenario

    sim, state, out, n = resume_scenario(checkpoint_path, out, EXTRA_KEY, steps, quiet)
    return _drive(sim, state, out, n, quiet)


def is_checkpoint(path):
    """True if the checkpoint at `path` holds a run of this scenario."""
    from ..engine.checkpoint import holds_extra

    return holds_extra(path, EXTRA_KEY)
