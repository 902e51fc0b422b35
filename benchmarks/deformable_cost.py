"""Cost of a step of deformable grains against rigid grains of the same shape, in `Simulation`.

    python benchmarks/deformable_cost.py [--quick] [--mode-file modes.h5] [--json results/bench/deformable_cost.json]

Scenes (each run through `graindem.engine.Simulation`, `add_deformable_grains`):
- ``assembly27_validation``: the 27-sphere cubic packing as the validation runs it (graindem's FEM
  compaction mode, extracted here unless --mode-file is given; 402 surface nodes per sphere, k_s = 1e5,
  tangent modal damping, frozen rotations, the lower index the slave), walls pressed in to u_w = 3
  (ε = 0.1) so that every contact is active with a flattened patch;
- ``beam``: the three-point-bending beam (grain–obstacle contacts only, no pull-back).
The rigid variant is the same template with no modes (`modes=[]`): the same level set, nodes, contacts
and loop, plain trilinear φ0 queries. Deformable variants: the master's pull-back point-wise
(``point_*``: the query point inverted, as the validation) or corner-wise (``corners_*``, with the
per-step corner cache), by the seed's first order or one Newton step. Timing: wall-clock per step; the
variants run interleaved (round robin, best of ``repeats``) after a warm-up run that also compiles,
each from the same state, so that the load of a shared machine affects all of them alike.
"""

import argparse
import json
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from graindem.deform.response import LinearResponse
from graindem.deform.scenes import SPHERE_RADIUS, bending_beam, compaction_sphere
from graindem.deform.validation import (appendix_b_response, box_walls, deformable_simulation,
                                        fem_compaction_mode_file, modal_damping_for)
from provenance import provenance

VARIANTS = {"rigid": dict(modes=[]),
            "point_first_order": dict(pullback="point", inverse_iterations=0),
            "point_newton1": dict(pullback="point", inverse_iterations=1, inverse_method="newton"),
            "corners_newton1_cached": dict(pullback="corners", inverse_iterations=1, inverse_method="newton",
                                           pullback_cache=True)}


def assembly_scene(template, **variant):
    """The 27-sphere validation's settings (`graindem.deform.validation.assembly27`) at u_w = 3, the
    spheres compacted to the matching ε (ε = u_w / 3R, centres moved in)."""
    r = SPHERE_RADIUS
    response = appendix_b_response(r)
    grid = np.array([-2 * r, 0.0, 2 * r])
    u_w = 3.0
    eps = u_w / (3 * r)
    positions = np.array([[x, y, z] for x in grid for y in grid for z in grid]) * (1.0 - eps)
    walls = [(p, n, 0.012 * v) for p, n, v in box_walls(3 * r - u_w)]
    ks = 1e5
    rigid = variant.get("modes") is not None
    return deformable_simulation(
        template, positions, [[1e5]], response, planes=walls, dt=0.003, contact_stiffness=ks,
        contact_damping=2.0 * np.sqrt(ks * template.volume / (np.pi * (0.5 * r) ** 2)), contact="one",
        tangent_damping=0.0 if rigid else modal_damping_for(response, 1e5, 0.2, "tangent")[1],
        dofs=[True, True, True, False, False, False], eps=None if rigid else [eps], **variant)


def beam_scene(template, **variant):
    variant = {k: v for k, v in variant.items() if k == "modes"}
    axis = (0.0, 1.0, 0.0)
    cylinders = [((-80.0, 0.0, -4.0), axis, 2.0, (0, 0, 0)), ((80.0, 0.0, -4.0), axis, 2.0, (0, 0, 0)),
                 ((0.0, 0.0, 3.9), axis, 2.0, (0.0, 0.0, -0.01))]
    rigid = variant.get("modes") is not None
    return deformable_simulation(template, [[0.0, 0.0, 0.0]], [[1e4]], LinearResponse([[1e4]]), cylinders=cylinders,
                                 dt=0.003, modal_damping=None if rigid else [[2e4]], contact_stiffness=1e6,
                                 contact_damping=2e4, **variant)


def time_scene(build, template, n_steps, repeats, variants):
    for name in variants:
        build(template, **VARIANTS[name]).run(10)        # compile + warm up
    best = {name: np.inf for name in variants}
    for _ in range(repeats):
        for name in variants:
            sim = build(template, **VARIANTS[name])
            t0 = time.process_time()
            sim.run(n_steps)
            best[name] = min(best[name], time.process_time() - t0)
    out = {f"{name}_seconds_per_step": best[name] / n_steps for name in variants}
    for name in variants:
        if name != "rigid":
            out[f"ratio_{name}"] = best[name] / best["rigid"]
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--mode-file", default=None)
    parser.add_argument("--json", default="results/bench/deformable_cost.json")
    args = parser.parse_args(argv)
    started = provenance(__file__, argv)
    n_steps, repeats = (300, 3) if args.quick else (1500, 5)
    mode_file = args.mode_file
    if mode_file is None:
        mode_file = str(Path(tempfile.mkdtemp()) / "compaction_mode.h5")
        fem_compaction_mode_file(mode_file, mesh_size=1.0)
    fem_sphere = compaction_sphere(mode_file, n_nodes=400)
    beam = bending_beam()
    result = {
        "provenance": started,
        "assembly27_validation": time_scene(assembly_scene, fem_sphere, n_steps, repeats, list(VARIANTS)),
        "beam": time_scene(beam_scene, beam, n_steps * 5, repeats, ["rigid", "point_first_order"]),
        "n_steps": n_steps, "repeats": repeats, "sphere_nodes": int(len(fem_sphere.nodes)),
        "beam_nodes": int(len(beam.nodes)), "machine": platform.platform(), "python": platform.python_version(),
        "note": "CPU seconds of this process per step through Simulation (best of repeats, variants interleaved) and ratios to the rigid "
                "grains of the same shape in the same scene (the template without modes); the validation runs "
                "point_newton1; the machine may have been shared: compare ratios, not seconds",
    }
    path = Path(args.json)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
