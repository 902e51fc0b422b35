"""Cost of a deformable LS-DEM step against the rigid step on the same scene (issue 5, "Cost").

    python benchmarks/deformable_cost.py [--quick] [--mode-file modes.h5] [--json results/bench/deformable_cost.json]

Scenes:
- ``assembly27_validation``: the 27-sphere cubic packing as the validation runs it (graindem's FEM
  compaction mode, extracted here unless --mode-file is given; 402 surface nodes per sphere as --quick,
  k_s = 1e5, tangent modal damping, frozen rotations), walls pressed in to u_w = 3 (ε ≈ 0.1) so that
  every contact is active with a flattened patch;
- ``assembly27``: the earlier cost scene (1298-node spheres, analytic stand-in mode, walls 0.3 in);
- ``beam``: the three-point-bending beam (grain–obstacle contacts only, no pull-back).
The rigid run is the same engine loop with the modes switched off and plain trilinear φ0 queries.
Deformable variants: the pull-back of the neighbour's level set as the seed's first order (eq. 47), with
n fixed-point iterations (``iter<n>``) or n Newton steps (``newton<n>``), each with or without the
per-step lazy corner cache (``_cached``); ``point_*``: the point-wise pull-back (the query point itself
is inverted, φ = φ0(X), normal by the chain rule only for nodes in contact; no cache). Timing:
wall-clock per step; the variants run interleaved (round robin, best of ``repeats``) after a warm-up
run that also compiles, every run from the same state, so that the load of a shared machine affects
all of them alike.
"""

import argparse
import json
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from graindem.deform.engine import DeformableScene, Obstacle
from graindem.deform.response import LinearResponse
from graindem.deform.scenes import SPHERE_RADIUS, bending_beam, compaction_sphere
from graindem.deform.validation import _modal_damping, appendix_b_response, fem_compaction_mode_file

VARIANTS = {"rigid": dict(deformable=False),
            "first_order": dict(),
            "first_order_cached": dict(pullback_cache=True),
            "iter4": dict(inverse_iterations=4),
            "iter4_cached": dict(inverse_iterations=4, pullback_cache=True),
            "newton1": dict(inverse_iterations=1, inverse_method="newton"),
            "newton2": dict(inverse_iterations=2, inverse_method="newton"),
            "newton1_cached": dict(inverse_iterations=1, inverse_method="newton", pullback_cache=True),
            "newton2_cached": dict(inverse_iterations=2, inverse_method="newton", pullback_cache=True),
            "point_first_order": dict(pullback="point"),
            "point_newton1": dict(inverse_iterations=1, inverse_method="newton", pullback="point"),
            "point_newton2": dict(inverse_iterations=2, inverse_method="newton", pullback="point")}


def _cubic_packing(r):
    grid = np.array([-2 * r, 0.0, 2 * r])
    positions = np.array([[x, y, z] for x in grid for y in grid for z in grid])
    pairs = [(i, j) for i, p in enumerate(positions) for j, q in enumerate(positions)
             if j > i and abs(np.linalg.norm(q - p) - 2 * r) < 1e-9]
    return positions, pairs


def _walls(r, pressed, speed):
    walls = []
    for axis in range(3):
        for sign in (1.0, -1.0):
            point = np.zeros(3)
            point[axis] = sign * (3 * r - pressed)
            normal = np.zeros(3)
            normal[axis] = -sign
            walls.append(Obstacle.plane(point, normal, velocity=normal * speed))
    return walls


def assembly_scene(template, **variant):
    r = SPHERE_RADIUS
    positions, pairs = _cubic_packing(r)
    # already pressed in: every contact is active
    return DeformableScene(template, positions, [[1e5]], appendix_b_response(r), modal_damping=[[1e4]],
                           contact_stiffness=2e4, contact_damping=100.0, obstacles=_walls(r, 0.3, 0.01),
                           pairs=pairs, both_ways=False, **variant)


def validation_assembly_scene(template, **variant):
    """The 27-sphere validation's engine settings (`graindem.deform.validation.assembly27`), at
    u_w = 3 with the spheres compacted to the matching ε (each sphere ε = u_w / 3R, centres moved in)."""
    r = SPHERE_RADIUS
    response = appendix_b_response(r)
    _, beta_t = _modal_damping(response, 1e5, 0.2, "tangent")
    positions, pairs = _cubic_packing(r)
    u_w = 3.0
    eps = u_w / (3 * r)
    positions = positions * (1.0 - eps)
    mass = template.volume
    ks = 1e5
    scene = DeformableScene(template, positions, [[1e5]], response, contact_stiffness=ks,
                            contact_damping=2.0 * np.sqrt(ks * mass / (np.pi * (0.5 * r) ** 2)),
                            obstacles=_walls(r, u_w, 0.012), pairs=pairs, both_ways=False, tangent_damping=beta_t,
                            free_dofs=[True, True, True, False, False, False], **variant)
    scene.eps[:] = eps
    return scene


def beam_scene(template, **variant):
    variant = {k: v for k, v in variant.items() if k == "deformable"}
    axis = (0.0, 1.0, 0.0)
    obstacles = [Obstacle.cylinder((-80.0, 0.0, -4.0), axis, 2.0), Obstacle.cylinder((80.0, 0.0, -4.0), axis, 2.0),
                 Obstacle.cylinder((0.0, 0.0, 3.9), axis, 2.0, velocity=(0.0, 0.0, -0.01))]
    return DeformableScene(template, [[0.0, 0.0, 0.0]], [[1e4]], LinearResponse([[1e4]]), modal_damping=[[2e4]],
                           contact_stiffness=1e6, contact_damping=2e4, obstacles=obstacles, **variant)


def time_scene(build, template, n_steps, repeats, variants, dt=0.003):
    for name in variants:
        build(template, **VARIANTS[name]).run(10, dt, record_every=10)        # compile + warm up
    best = {name: np.inf for name in variants}
    for _ in range(repeats):
        for name in variants:
            s = build(template, **VARIANTS[name])
            t0 = time.perf_counter()
            s.run(n_steps, dt, record_every=n_steps)
            best[name] = min(best[name], time.perf_counter() - t0)
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
    n_steps, repeats = (300, 3) if args.quick else (1500, 5)
    mode_file = args.mode_file
    if mode_file is None:
        mode_file = str(Path(tempfile.mkdtemp()) / "compaction_mode.h5")
        fem_compaction_mode_file(mode_file, mesh_size=1.0)
    fem_sphere = compaction_sphere(mode_file, n_nodes=400)
    sphere = compaction_sphere(n_nodes=None)
    beam = bending_beam()
    all_variants = list(VARIANTS)
    result = {
        "assembly27_validation": time_scene(validation_assembly_scene, fem_sphere, n_steps, repeats, all_variants),
        "assembly27": time_scene(assembly_scene, sphere, n_steps, repeats,
                                 ["rigid", "first_order", "first_order_cached", "iter4", "newton1_cached",
                                  "newton2_cached", "point_first_order", "point_newton1", "point_newton2"]),
        "beam": time_scene(beam_scene, beam, n_steps * 5, repeats, ["rigid", "first_order"]),
        "n_steps": n_steps, "repeats": repeats, "sphere_nodes_validation": int(len(fem_sphere.nodes)),
        "sphere_nodes": int(len(sphere.nodes)), "beam_nodes": int(len(beam.nodes)),
        "machine": platform.platform(), "python": platform.python_version(),
        "note": "seconds per step (best of repeats, variants interleaved) and ratios to the rigid step of the "
                "same scene; rigid = same engine loop without modes, plain trilinear φ0 queries; first_order = "
                "the seed's pull-back X = x − u(x); iter4 = 4 fixed-point refinements; newton<n> = n Newton "
                "steps; _cached = per-step lazy cache of the pulled-back corner values; point_* = point-wise pull-back "
                "of the query point (one inversion per query)",
    }
    path = Path(args.json)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
