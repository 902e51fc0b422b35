"""Scenario `pile`: level-set grains (ellipsoids of a few shapes, or a mesh) poured into a box and settled.

    python -m graindem.scenarios.pile --grains 200 --out results/pile [--mesh grain.stl] [--vtk-every 2000]

Grains start on a loose lattice above the floor with random orientations and small random velocities,
fall under gravity into a square box (floor + four walls) and settle. The run stops when the kinetic
energy per grain falls below `settle_energy` x (m g d) of a mean grain (d its mean diameter) and the
net force on every grain is below `equilibrium_tol` x its weight (static equilibrium), or at
`max_time`. Contact law: area-weighted (Feldfogel) with k_s chosen so that a grain at the bottom of
the settled pile penetrates about `overlap` of its size and the falling grains at most 5 x `overlap`;
time step 0.1 of sqrt(m / K) at that deepest penetration. Few nodes per contact patch (small
penetrations, coarse nodes) make the contact forces jumpy; 200-300 nodes per grain settle cleanly.
Prints dt / dt_crit, steps/s and contact counts; writes VTK surfaces and contact points if asked.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import numpy as np

from ..bodies.levelset import GC_NCP
from ..engine import Simulation
from ..core.rotations import random_quaternions
from ..particles import LevelSetGrain

SHAPES = ((1.0, 0.7, 0.55), (1.0, 0.85, 0.5), (1.0, 0.6, 0.6))  # ellipsoid semi-axes / size


def run_pile(n_grains=200, *, size=1e-3, density=2500.0, mu=0.5, damping_ratio=0.3, overlap=0.01,
             n_nodes=300, mesh=None, max_time=0.5, settle_energy=1e-5, equilibrium_tol=0.02, out=None,
             vtk_every=0, seed=0, report_every=2000, quiet=False):
    """Run the pile; returns a summary dict (also written to out/summary.json when `out` is given)."""
    if int(n_grains) != n_grains or n_grains < 1:
        raise ValueError(f"n_grains must be an integer >= 1, got {n_grains!r}")
    for name, v in (("size", size), ("density", density), ("max_time", max_time), ("overlap", overlap)):
        if not math.isfinite(v) or v <= 0:
            raise ValueError(f"{name} must be a finite number > 0, got {v!r}")
    for name, v in (("vtk_every", vtk_every), ("report_every", report_every)):
        if int(v) != v or v < (0 if name == "vtk_every" else 1):
            raise ValueError(f"{name} must be an integer >= {0 if name == 'vtk_every' else 1}, got {v!r}")
    if not 0 < overlap < 0.1:
        raise ValueError(f"overlap must lie in (0, 0.1), got {overlap!r}")
    rng = np.random.default_rng(seed)
    if mesh is not None:
        t = LevelSetGrain.from_mesh(mesh, n_nodes=n_nodes)
        scale = size / (0.5 * np.ptp(t.nodes, axis=0).max())
        t = LevelSetGrain.from_mesh(mesh, n_nodes=n_nodes, scale=scale)
        templates = [t]
    else:
        templates = [LevelSetGrain.ellipsoid(*(size * np.array(ax)), spacing=size * min(ax) / 5, n_nodes=n_nodes)
                     for ax in SHAPES]
    r_max = max(t.bounding_radius for t in templates)
    vol = np.mean([t.volume for t in templates])
    m = density * vol
    g0 = 9.81
    # box and lattice: the box holds ~ n_side^2 grains per layer
    n_side = max(2, int(math.ceil(math.sqrt(n_grains / 4.0))))
    pitch = 2.2 * r_max
    box = n_side * pitch
    n_layers = int(math.ceil(n_grains / n_side**2))
    # k_s from two limits, the stiffer wins: (1) the pressure at the bottom of the settled pile (height ~
    # n_layers x size x 0.6 packing) over ~4 contact patches gives a penetration of `overlap` x size;
    # (2) the top layer, falling from the lattice, stops within 5 `overlap` x size: for a sphere-like patch
    # the contact energy is pi ks R d^3 / 3, so ks = 3 m v^2 / (2 pi R d^3).
    depth = max(1, n_layers) * 2 * size * 0.6
    ks_static = density * g0 * depth / (overlap * size) * 4.0
    v_impact = math.sqrt(2 * g0 * n_layers * pitch)
    d_impact = 5 * overlap * size
    ks_impact = 3 * m * v_impact**2 / (2 * math.pi * size * d_impact**3)
    ks = max(ks_static, ks_impact)
    K = 2 * math.pi * ks * size * d_impact  # contact stiffness at the deepest expected penetration
    dt_crit = math.sqrt(m / K)
    dt = 0.1 * dt_crit
    sim = Simulation(mu=mu, density=density, gravity=(0, 0, -g0), dt=dt, allow_unstable_dt=True)
    sim.set_box((0, 0, 0), (box, box, box * max(2, n_layers + 1)))
    sim.set_grain_contact(ks, law="area", damping_ratio=damping_ratio)
    sim.add_wall((0, 0, 0), (0, 0, 1))
    sim.add_wall((0, 0, 0), (1, 0, 0))
    sim.add_wall((box, 0, 0), (-1, 0, 0))
    sim.add_wall((0, 0, 0), (0, 1, 0))
    sim.add_wall((0, box, 0), (0, -1, 0))
    quats = random_quaternions(rng, n_grains)
    for n in range(n_grains):
        layer, rest = divmod(n, n_side**2)
        i, j = divmod(rest, n_side)
        pos = np.array([(i + 0.5) * pitch, (j + 0.5) * pitch, (layer + 0.6) * pitch])
        pos[:2] += rng.uniform(-0.05, 0.05, 2) * pitch
        sim.add_grains(templates[n % len(templates)], [pos], orientations=quats[n],
                       velocities=rng.normal(scale=0.05, size=3) * math.sqrt(g0 * size))
    sim.setup()
    g = sim.grains
    e_settle = settle_energy * m * g0 * 2 * size * n_grains
    if not quiet:
        print(f"pile: {n_grains} grains, {len(templates)} shape(s), {templates[0].n_nodes} nodes/grain, box "
              f"{box:.4g} m, k_s = {ks:.3g} Pa/m, dt = {dt:.3g} s = {dt / dt_crit:.2f} dt_crit", flush=True)
    if out is not None:
        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    frames = 0
    block = report_every if not vtk_every else math.gcd(report_every, vtk_every)
    history = []
    while sim.time < max_time:
        sim.run(block)
        ke = g.kinetic_energy()
        history.append((sim.time, ke, int(g.gctl[GC_NCP])))
        if out is not None and vtk_every and sim.step_count % vtk_every == 0:
            g.write_vtk(str(out / f"pile_{frames:05d}"))
            frames += 1
        if not quiet and sim.step_count % report_every == 0:
            el = time.perf_counter() - t0
            print(f"  t = {sim.time:.4g} s  KE = {ke:.3g} J  contact nodes = {g.gctl[GC_NCP]}  "
                  f"{sim.step_count / el:.0f} steps/s", flush=True)
        net = float((np.linalg.norm(g.force, axis=1) / (g.mass * g0)).max())
        if ke < e_settle and net < equilibrium_tol and sim.time > 0.05 * max_time:
            break
    wall = time.perf_counter() - t0
    top = (g.pos[:, 2]).max() + r_max
    heights = g.pos[:, 2]
    solid = n_grains * vol
    bulk = box * box * (np.percentile(heights, 90) + 0.5 * r_max)
    summary = {
        "grains": n_grains, "shapes": len(templates), "nodes_per_grain": templates[0].n_nodes, "box": box,
        "stiffness": ks, "dt": dt, "dt_over_dt_crit": dt / dt_crit, "steps": sim.step_count, "time": sim.time,
        "settled": bool(history[-1][1] < e_settle and net < equilibrium_tol), "kinetic_energy": history[-1][1],
        "contact_nodes": history[-1][2], "wall_time_s": wall, "steps_per_s": sim.step_count / wall,
        "pile_top": float(top),
        # static equilibrium: net force (gravity + contacts) on each grain relative to its weight
        "max_net_force_over_weight": net,
        # grain volume over the box up to the 90th percentile of the centre heights (+ half a grain)
        "packing_fraction_estimate": float(solid / bulk),
        "all_inside_box": bool(np.all((g.pos[:, :2] > 0) & (g.pos[:, :2] < box)) and np.all(g.pos[:, 2] > 0)),
    }
    if out is not None:
        g.write_vtk(str(out / "pile_final"))
        (out / "summary.json").write_text(json.dumps(summary, indent=2))
        np.savetxt(out / "energy.csv", np.array(history), delimiter=",", header="time,kinetic_energy,contact_nodes",
                   comments="")
    if not quiet:
        print(json.dumps(summary, indent=2))
    return summary


def add_arguments(p):
    """Options of the `pile` command (graindem.cli convention: add_arguments + run)."""
    p.add_argument("--grains", type=int, default=200)
    p.add_argument("--nodes", type=int, default=300, help="surface nodes per grain")
    p.add_argument("--mesh", help="STL/OBJ grain shape instead of ellipsoids")
    p.add_argument("--max-time", type=float, default=0.5, help="simulated time limit [s]")
    p.add_argument("--out", help="output folder (VTK, summary.json, energy.csv)")
    p.add_argument("--vtk-every", type=int, default=0, help="write VTK every N steps (0: final only)")
    p.add_argument("--seed", type=int, default=0)


def run(args):
    run_pile(args.grains, n_nodes=args.nodes, mesh=args.mesh, max_time=args.max_time, out=args.out,
             vtk_every=args.vtk_every, seed=args.seed)
    return 0


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_arguments(p)
    return run(p.parse_args(argv))


if __name__ == "__main__":
    main()
