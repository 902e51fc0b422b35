"""LS-DEM throughput: node-to-level-set queries per second, steps per second against grain count and
node count, and memory per grain.

    python benchmarks/lsdem.py --json results/bench/lsdem.json [--quick]

Queries: the numba kernel `query_points` (trilinear phi + gradient) on random points in the band
|phi| < 2 h around an ellipsoid, in random order (cache-unfriendly, as contact nodes are).
Steps: aligned ellipsoids (1, 0.8, 0.6) in a simple cubic lattice, each overlapping its 6 neighbours by
2 % of the semi-axis, no gravity, area law with friction (mu = 0.5): every step does the full
broad phase, 2 x n_nodes node queries per contact pair, forces and the rigid-body update. Figures are
medians of the CPU time of `rounds` timed blocks after an untimed warm-up (which also compiles the
kernels).
Convergence (not a speed figure, reported for the README): sphere (R = 1) on a plane at overlap 0.1 R,
force / (pi k R delta^2) (the exact continuum value of the area law) for both laws, refining the grid
(nodes ~ area/h^2) and refining the nodes at a fixed grid.
Periodic cell against walls: the YADE lattice (216 grains, both sizes) in a periodic cell whose faces
the lattice crosses with the same overlaps, and in a box of six walls; timed blocks interleaved; the
ratio of the times per step.
YADE: the same lattice of n_side^3 grains (216 full, 27 quick) in YADE's level-set DEM, one thread
(benchmarks/yade_levelset.py, which says how the two scenes correspond), under "yade"; null with the
reason under "yade_reason" when the `yade` executable is not installed (Debian package `yade`).
Memory per grain: the per-grain arrays of the engine (pose, velocities, forces, inertia, ...) plus the
per-node shear history (40 B per node), and the template (grid + nodes), which grains of one shape share.
"""

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from graindem.contact.levelset_contact import query_points
from graindem.bodies.levelset import GC_NCP, GC_NPAIRS
from graindem.engine import Simulation
from graindem.particles import LevelSetGrain
from yade_levelset import FULL as YADE_FULL, QUICK as YADE_QUICK, yade_steps_per_s
from provenance import provenance

FULL = dict(queries=2_000_000, grains=(8, 64, 216, 512), nodes=(100, 300, 1000, 3000), node_grains=64,
            steps=100, rounds=5, spacing=0.1, conv_spacings=(1 / 6, 1 / 9, 1 / 12, 1 / 18, 1 / 24),
            conv_nodes=(250, 500, 1000, 2000, 4000))
QUICK = dict(queries=200_000, grains=(8, 27, 64), nodes=(100, 300, 1000), node_grains=27, steps=50, rounds=3,
             spacing=0.12, conv_spacings=(1 / 6, 1 / 12), conv_nodes=(500, 2000))
AXES = (1.0, 0.8, 0.6)


def median_time(fn, rounds):
    """Median CPU time of fn() (the kernels are single-threaded; CPU time ignores other load)."""
    times = []
    for _ in range(rounds):
        t = time.process_time()
        fn()
        times.append(time.process_time() - t)
    return statistics.median(times)


def bench_queries(cfg, rng):
    g = LevelSetGrain.ellipsoid(*AXES, spacing=cfg["spacing"], n_nodes=300)
    h = g.spacing
    # random points in the band |phi| < 2h: surface nodes pushed along their normals
    idx = rng.integers(0, g.n_nodes, cfg["queries"])
    pts = g.nodes[idx] + g.normals[idx] * rng.uniform(-2 * h, 2 * h, (cfg["queries"], 1))
    pts += rng.normal(scale=0.3 * h, size=pts.shape)
    out = np.empty((len(pts), 4))
    args = (g.phi_grid.ravel(), 0, *g.grid_shape, *g.grid_origin, h)
    query_points(*args, pts[:10], out[:10])  # compile / load
    t = median_time(lambda: query_points(*args, pts, out), cfg["rounds"])
    # reference value for the same points through numpy (the public phi method)
    t_np = median_time(lambda: g.phi_and_gradient(pts), 1)
    return {"points": len(pts), "numba_queries_per_s": len(pts) / t, "numpy_queries_per_s": len(pts) / t_np,
            "grid": [int(v) for v in g.grid_shape]}


def lattice_sim(template, n_side):
    a = np.array(AXES)
    step = 2 * a - 0.02 * a
    sim = Simulation(mu=0.5, density=1.0, dt=1e-3, allow_unstable_dt=True)
    sim.set_box(-2 * a, (n_side + 1) * step)
    sim.set_grain_contact(1e3, law="area", damping_ratio=0.1)
    grid = np.stack(np.meshgrid(*[np.arange(n_side)] * 3, indexing="ij"), axis=-1).reshape(-1, 3)
    sim.add_grains(template, grid * step)
    sim.setup()
    return sim


def boundary_sim(template, n_side, boundary):
    """The lattice of lattice_sim bounded two ways: "periodic", a cell of n_side lattice steps per axis,
    so that every grain touches its 6 neighbours, across the faces too; "walls", six walls that
    overlap the outer grains by half the grains' mutual overlap."""
    a = np.array(AXES)
    step = 2 * a - 0.02 * a
    sim = Simulation(mu=0.5, density=1.0, dt=1e-3, allow_unstable_dt=True)
    if boundary == "periodic":
        sim.set_box(-0.5 * step, (n_side - 0.5) * step, periodic=(True, True, True))
    else:
        sim.set_box(-2 * a, (n_side + 1) * step)
        for d in range(3):
            normal = np.eye(3)[d]
            sim.add_wall(-0.99 * a[d] * normal, normal)
            sim.add_wall(((n_side - 1) * step[d] + 0.99 * a[d]) * normal, -normal)
    sim.set_grain_contact(1e3, law="area", damping_ratio=0.1)
    grid = np.stack(np.meshgrid(*[np.arange(n_side)] * 3, indexing="ij"), axis=-1).reshape(-1, 3)
    sim.add_grains(template, grid * step)
    sim.setup()
    return sim


def bench_boundaries(template, cfg):
    """Steps per second of the YADE lattice (6^3 grains) in a periodic cell and between walls, timed
    blocks interleaved (one process, so both see the same machine load); the ratio periodic / walls
    of the time per step."""
    n_side = YADE_FULL["n_side"]
    sims = {b: boundary_sim(template, n_side, b) for b in ("walls", "periodic")}
    times = {b: [] for b in sims}
    for sim in sims.values():
        sim.run(2)  # compile / warm up
    for _ in range(cfg["rounds"]):
        for b, sim in sims.items():
            t = time.process_time()
            sim.run(cfg["steps"])
            times[b].append(time.process_time() - t)
    out = {"grains": n_side**3}
    for b, sim in sims.items():
        out[b] = {"steps_per_s": cfg["steps"] / statistics.median(times[b]),
                  "contact_nodes": int(sim.grains.gctl[GC_NCP])}
    out["periodic_over_walls_time"] = out["walls"]["steps_per_s"] / out["periodic"]["steps_per_s"]
    return out


def bench_steps(template, n_grains, cfg):
    n_side = round(n_grains ** (1 / 3))
    sim = lattice_sim(template, n_side)
    sim.run(2)  # compile / warm up
    t = median_time(lambda: sim.run(cfg["steps"]), cfg["rounds"])
    n_pairs = int(sim.grains.gctl[GC_NPAIRS])
    return {
        "grains": n_side**3,
        "nodes_per_grain": template.n_nodes,
        "candidate_pairs": n_pairs,
        "contact_nodes": int(sim.grains.gctl[GC_NCP]),
        "steps_per_s": cfg["steps"] / t,
        "grain_steps_per_s": cfg["steps"] * n_side**3 / t,
        "node_queries_per_step_upper": 2 * n_pairs * template.n_nodes,
        "node_queries_per_s_in_step": 2 * n_pairs * template.n_nodes * cfg["steps"] / t,
    }


def memory_per_grain(template):
    g = lattice_sim(template, 2).grains
    G = g.n
    per_grain = sum(getattr(g, name).nbytes for name in (
        "tmpl", "pos", "vel", "quat", "rot", "angmom", "omega", "mass", "inertia", "motion", "radius", "force",
        "torque", "hist_off")) / G
    history = (g.shear.nbytes + g.partner.nbytes + g.last_step.nbytes) / G
    return {"state_bytes": per_grain, "history_bytes": history, "history_bytes_per_node": history / template.n_nodes,
            "template_bytes": template.memory_bytes(), "grid_points": int(np.prod(template.grid_shape)),
            "nodes": template.n_nodes}


def sphere_plane_force(grain, law, delta=0.1):
    sim = Simulation(density=1.0, dt=1.0, allow_unstable_dt=True)
    sim.set_box((-3, -3, -3), (3, 3, 3))
    sim.set_grain_contact(1.0, law=law)
    q = np.array([0.3, 0.2, 0.5, 0.1])
    sim.add_grains(grain, [(0, 0, 1.0 - delta)], orientations=q / np.linalg.norm(q))
    sim.add_wall((0, 0, 0), (0, 0, 1))
    sim.setup()
    return float(sim.grains.force[0, 2] / (np.pi * delta**2))


def convergence(cfg):
    rows = []
    for h in cfg["conv_spacings"]:
        g = LevelSetGrain.sphere(1.0, spacing=h)
        rows.append({"spacing": h, "nodes": g.n_nodes, "area_law_ratio": sphere_plane_force(g, "area"),
                     "node_law_ratio": sphere_plane_force(g, "node")})
    for n in cfg["conv_nodes"]:
        g = LevelSetGrain.sphere(1.0, spacing=1 / 12, n_nodes=n)
        rows.append({"spacing": 1 / 12, "nodes": n, "area_law_ratio": sphere_plane_force(g, "area"),
                     "node_law_ratio": sphere_plane_force(g, "node")})
    return rows


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--json", metavar="FILE", help="write the results as JSON to FILE")
    p.add_argument("--quick", action="store_true", help="small sizes (under a minute after compilation)")
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args(argv)
    started = provenance(__file__, argv)
    cfg = dict(QUICK if args.quick else FULL)
    rng = np.random.default_rng(args.seed)
    t0 = time.perf_counter()
    result = {"provenance": started, "benchmark": "lsdem", "quick": args.quick, "config": cfg,
              "machine": {"python": sys.version.split()[0], "platform": platform.platform(),
                          "cpus": os.cpu_count()}}
    result["queries"] = bench_queries(cfg, rng)
    print(f"node queries/s (numba): {result['queries']['numba_queries_per_s']:.3g}", flush=True)
    template = LevelSetGrain.ellipsoid(*AXES, spacing=cfg["spacing"], n_nodes=300)
    result["steps_vs_grains"] = []
    for n in cfg["grains"]:
        r = bench_steps(template, n, cfg)
        result["steps_vs_grains"].append(r)
        print(f"grains {r['grains']:5d}  nodes {r['nodes_per_grain']:5d}  steps/s {r['steps_per_s']:9.1f}  "
              f"grain-steps/s {r['grain_steps_per_s']:9.3g}", flush=True)
    # the same lattice in YADE's level-set DEM (one thread), when the `yade` executable is installed
    n_shared = (YADE_QUICK if args.quick else YADE_FULL)["n_side"] ** 3
    shared = next(r for r in result["steps_vs_grains"] if r["grains"] == n_shared)
    result["graindem"] = {"steps_per_s": shared["steps_per_s"], "grains": n_shared}
    result["yade"], result["yade_reason"] = yade_steps_per_s(cfg["steps"], quick=args.quick)
    result["graindem_over_yade"] = (shared["steps_per_s"] / result["yade"]["steps_per_s"]
                                    if result["yade"] else None)
    if result["yade"]:
        print(f"YADE, the same {n_shared} grains: {result['yade']['steps_per_s']:.1f} steps/s; graindem / YADE "
              f"{result['graindem_over_yade']:.2f}", flush=True)
    else:
        print(f"YADE not compared: {result['yade_reason']}", flush=True)
    result["periodic_vs_walls"] = bench_boundaries(template, cfg)
    pw = result["periodic_vs_walls"]
    print(f"{pw['grains']} grains: walls {pw['walls']['steps_per_s']:.1f} steps/s, periodic cell "
          f"{pw['periodic']['steps_per_s']:.1f} steps/s; time per step periodic / walls "
          f"{pw['periodic_over_walls_time']:.3f}", flush=True)
    result["steps_vs_nodes"] = []
    for n_nodes in cfg["nodes"]:
        t = LevelSetGrain.ellipsoid(*AXES, spacing=cfg["spacing"], n_nodes=n_nodes)
        r = bench_steps(t, cfg["node_grains"], cfg)
        result["steps_vs_nodes"].append(r)
        print(f"grains {r['grains']:5d}  nodes {r['nodes_per_grain']:5d}  steps/s {r['steps_per_s']:9.1f}  "
              f"in-step node queries/s {r['node_queries_per_s_in_step']:9.3g}", flush=True)
    result["convergence_sphere_plane"] = convergence(cfg)
    for r in result["convergence_sphere_plane"]:
        print(f"h = {r['spacing']:.4f}  nodes {r['nodes']:5d}  F/F_continuum: area law {r['area_law_ratio']:.4f}"
              f"  per-node law (k_n = 1) {r['node_law_ratio']:.4g}", flush=True)
    result["memory_per_grain"] = memory_per_grain(template)
    print(f"memory per grain: {result['memory_per_grain']}", flush=True)
    result["wall_time_s"] = time.perf_counter() - t0
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main()
