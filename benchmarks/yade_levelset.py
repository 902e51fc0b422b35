"""YADE's level-set DEM on the lattice scene `benchmarks/lsdem.py` times, for a steps-per-second comparison.

    python benchmarks/yade_levelset.py [--quick] [--steps N] [--json FILE]     # runs YADE, prints its figures
    yade -n -x -j1 benchmarks/yade_levelset.py --inside-yade [--n-side 6 ...]   # the scene script itself

From Python (lsdem.py):

    from yade_levelset import yade_steps_per_s
    yade, reason = yade_steps_per_s(cfg["steps"], quick=args.quick)   # (dict, None) or (None, "why")

The same file is both the YADE scene script (run by the `yade` executable, which provides `O`,
`levelSetBody` and the engine classes as globals, selected by `--inside-yade`) and the plain-Python
driver `yade_steps_per_s`, which runs that script in a subprocess with one OpenMP thread (`yade -j1`)
and parses the JSON line it prints. YADE comes from the Debian package `yade` (2023.02a, which has the
LS_DEM feature); when the executable is missing, fails or times out, the driver returns None and the
reason instead of raising, so a benchmark can record `"yade": null` with `"yade_reason"`.

Scene correspondence (graindem's side: `lattice_sim` and the FULL/QUICK configurations of lsdem.py)
  same in both
  - grains: n_side^3 aligned ellipsoids of semi-axes (1, 0.8, 0.6) (6^3 = 216 in the full run, 3^3 = 27
    in the quick one) on a simple cubic lattice of step 2 a - 0.02 a per axis, so each grain overlaps its
    face neighbours by 2 % of the semi-axis along that axis (0.02, 0.016, 0.012); no walls, no
    gravity, every grain starts at rest;
  - the level set: a distance field on a regular grid of spacing h = 0.1 (0.12 quick), trilinear;
    YADE builds it by fast marching on the superellipsoid with epsilons (1, 1) (an exact ellipsoid),
    graindem as the exact distance to a fine triangulation of the ellipsoid;
  - 300 surface nodes per grain; density 1; time step dt = 1e-3; Coulomb friction mu = 0.5
    (YADE: frictionAngle = atan 0.5); tangential / normal stiffness 2/7;
  - one thread; the figure is the median over `rounds` timed blocks of `n_steps` steps of the process's
    CPU time, after an untimed warm-up of 2 steps (graindem's warm-up also compiles its kernels).
  different (the models do not allow the same)
  - contact law: YADE's Ig2_LevelSet_LevelSet_ScGeom reduces a pair to ONE contact point: it queries
    only the nodes of the smaller grain (for equal volumes, the second one) that lie in the overlap of
    the two bounding boxes, in the other grain's level set, and keeps the most penetrating one, with a
    linear spring F_n = k_n u_n (Law2_ScGeom_FrictPhys_CundallStrack: incremental shear spring, Coulomb
    cap); the pair stays an interaction until the bounding boxes separate. graindem's "area" law queries
    the nodes of both grains in the other's level set and sums a traction k_s * depth over every
    penetrating node, weighted by the node's surface area (half weight each way), with a shear history
    per node.
  - stiffness: graindem's k_s = 1e3 Pa/m is a traction per unit depth; YADE's k_n is a pair stiffness in
    N/m. The continuum area law gives the same force, F = k_s pi sqrt(R1 R2) delta^2 / 2 ~ 0.30, at all
    three lattice overlaps (R1, R2 the relative radii of curvature at the touching tips), i.e. a secant
    pair stiffness F / delta of 15, 19 and 25 N/m along x, y and z; YADE uses k_n = 20 N/m (mid-range),
    k_s = 2/7 k_n. Both time steps are far below critical (2 sqrt(m / k) ~ 0.6 for m = 2.01).
  - damping: graindem damps each contact as a linear oscillator (damping ratio 0.1); FrictPhys has no
    viscous term, so YADE uses NewtonIntegrator's global non-viscous (Cundall) damping 0.1 instead.
  - broad phase: YADE's InsertionSortCollider on the axis-aligned boxes of the level-set grids with
    verletDist = 0 (YADE level sets have no Verlet skin); graindem's engine its own neighbour search.
  - grids: YADE's grid spans the shape plus about one cell (23 x 19 x 15 points at h = 0.1), graindem's
    the shape plus a wider band (31 x 27 x 23); node placement differs (YADE: nodesPath = 2, rays from
    the centre along a spiral); each YADE body keeps its own copy of grid and distance field (computed
    once here and passed to every body), graindem's grains share one template.
So the work per step is of the same kind (node queries of candidate pairs in a trilinear grid), but
YADE queries at most one grain's nodes per pair, pruned to the box overlap, and computes one force,
where graindem queries both grains' nodes and sums a force per penetrating node; the forces, hence
the trajectories, differ. Only the cost per step is compared; the result carries each code's own
contact count (YADE: real interactions at the end of the run) for context.
"""

import argparse
import json
import math
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

AXES = (1.0, 0.8, 0.6)
NODES = 300
DT = 1e-3
DENSITY = 1.0
MU = 0.5
KN = 20.0  # N/m: the continuum area law's secant pair stiffness at the lattice overlaps (see the docstring)
KT_RATIO = 2.0 / 7.0
NEWTON_DAMPING = 0.1
FULL = dict(n_side=6, spacing=0.1, rounds=5)
QUICK = dict(n_side=3, spacing=0.12, rounds=3)
WARMUP_STEPS = 2
JSON_MARKER = "YADE_LEVELSET_RESULT "


def scene_arguments(argv):
    p = argparse.ArgumentParser(description="YADE side of the level-set lattice benchmark (run by `yade`)")
    p.add_argument("--inside-yade", action="store_true", help="marks a run by the yade executable")
    p.add_argument("--n-side", type=int, default=FULL["n_side"], help="grains per lattice edge, >= 1")
    p.add_argument("--spacing", type=float, default=FULL["spacing"], help="level-set grid spacing, in (0, 0.5]")
    p.add_argument("--nodes", type=int, default=NODES, help="surface nodes per grain, >= 10")
    p.add_argument("--steps", type=int, default=100, help="steps per timed block, >= 1")
    p.add_argument("--rounds", type=int, default=FULL["rounds"], help="timed blocks, >= 1")
    args = p.parse_args(argv)
    for name, low in (("n_side", 1), ("nodes", 10), ("steps", 1), ("rounds", 1)):
        if getattr(args, name) < low:
            p.error(f"--{name.replace('_', '-')} must be >= {low}, got {getattr(args, name)}")
    if not 0 < args.spacing <= 0.5:
        p.error(f"--spacing must lie in (0, 0.5], got {args.spacing}")
    return args


def run_scene_in_yade(yade_globals, args):
    """Build the lattice in YADE, time it and print one JSON line (YADE's classes come as globals)."""
    g = yade_globals
    O = g["O"]
    O.reset()
    mat = O.materials.append(g["FrictMat"](density=DENSITY, frictionAngle=math.atan(MU), label="grains"))
    t0 = time.perf_counter()
    # the distance field is computed once (fast marching) and handed to every body, as YADE's own
    # discharge example does; each body still stores its own copy and traces its own nodes
    first = g["levelSetBody"]("superellipsoid", extents=AXES, epsilons=(1, 1), spacing=args.spacing,
                              nSurfNodes=args.nodes, material=mat)
    grid, dist = first.shape.lsGrid, first.shape.distField
    step = [2 * a - 0.02 * a for a in AXES]
    for i in range(args.n_side):
        for j in range(args.n_side):
            for k in range(args.n_side):
                O.bodies.append(g["levelSetBody"](center=(i * step[0], j * step[1], k * step[2]), grid=grid,
                                                  distField=dist, nSurfNodes=args.nodes, material=mat))
    setup_s = time.perf_counter() - t0
    MatchMaker = g["MatchMaker"]
    O.engines = [
        g["ForceResetter"](),
        # level-set bounds have to match the grids: no Verlet distance
        g["InsertionSortCollider"]([g["Bo1_LevelSet_Aabb"]()], verletDist=0),
        g["InteractionLoop"](
            [g["Ig2_LevelSet_LevelSet_ScGeom"]()],
            [g["Ip2_FrictMat_FrictMat_FrictPhys"](kn=MatchMaker(algo="val", val=KN),
                                                   ks=MatchMaker(algo="val", val=KT_RATIO * KN))],
            [g["Law2_ScGeom_FrictPhys_CundallStrack"](sphericalBodies=False)]),
        g["NewtonIntegrator"](damping=NEWTON_DAMPING, gravity=(0, 0, 0)),
    ]
    O.dt = DT
    O.run(WARMUP_STEPS, True)
    cpu, wall = [], []
    for _ in range(args.rounds):
        tc, tw = time.process_time(), time.perf_counter()
        O.run(args.steps, True)
        cpu.append(time.process_time() - tc)
        wall.append(time.perf_counter() - tw)
    real = [i for i in O.interactions if i.isReal]
    b = O.bodies[0]
    result = {
        "steps_per_s": args.steps / statistics.median(cpu),
        "steps_per_s_wall": args.steps / statistics.median(wall),
        "n_bodies": len(O.bodies),
        "nodes_per_body": len(b.shape.surfNodes),
        "grid_points": [int(n) for n in b.shape.lsGrid.nGP],
        "contacts": len(real),
        "bound_pairs": len(O.interactions),
        "steps": args.steps,
        "rounds": args.rounds,
        "spacing": args.spacing,
        "setup_s": setup_s,
        "threads": int(O.numThreads),
        "version": str(g["version"]),
        "model": {"kn": KN, "ks": KT_RATIO * KN, "mu": MU, "newton_damping": NEWTON_DAMPING, "dt": DT,
                  "density": DENSITY, "contact": "Ig2_LevelSet_LevelSet_ScGeom (one point per pair)"},
    }
    print(JSON_MARKER + json.dumps(result), flush=True)


def yade_steps_per_s(n_steps, quick=False, *, n_side=None, rounds=None, timeout=3600.0):
    """Run the lattice scene in YADE on one thread; returns (result dict, None) or (None, reason).

    n_steps : steps per timed block (lsdem.py's cfg["steps"]); quick : the 27-grain scene at h = 0.12
    (lsdem.py's QUICK sizes) instead of 216 grains at h = 0.1; n_side, rounds override the size.
    """
    if int(n_steps) < 1:
        raise ValueError(f"n_steps must be an integer >= 1, got {n_steps!r}")
    if timeout <= 0:
        raise ValueError(f"timeout must be > 0 seconds, got {timeout!r}")
    exe = shutil.which("yade")
    if exe is None:
        return None, "yade executable not found on PATH (Debian: apt-get install yade)"
    cfg = dict(QUICK if quick else FULL)
    cfg["n_side"] = cfg["n_side"] if n_side is None else int(n_side)
    cfg["rounds"] = cfg["rounds"] if rounds is None else int(rounds)
    cmd = [exe, "-n", "-x", "-j1", str(Path(__file__).resolve()), "--inside-yade", "--n-side", str(cfg["n_side"]),
           "--spacing", repr(cfg["spacing"]), "--steps", str(int(n_steps)), "--rounds", str(cfg["rounds"])]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return None, f"yade did not finish within {timeout:g} s: {' '.join(cmd)}"
    except OSError as exc:
        return None, f"yade could not be started: {exc}"
    for line in proc.stdout.splitlines():
        if line.startswith(JSON_MARKER):
            return json.loads(line[len(JSON_MARKER):]), None
    tail = (proc.stderr.strip() or proc.stdout.strip())[-600:]
    return None, f"yade exited with code {proc.returncode} without a result: {tail}"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="27 grains at h = 0.12 instead of 216 at h = 0.1")
    p.add_argument("--steps", type=int, default=100, help="steps per timed block, >= 1")
    p.add_argument("--json", metavar="FILE", help="write the result as JSON to FILE")
    args = p.parse_args(argv)
    from provenance import provenance  # here, not at the top: YADE's own Python runs this file as its scene script

    started = provenance(__file__, argv)
    result, reason = yade_steps_per_s(args.steps, quick=args.quick)
    out = {"provenance": started, "yade": result, "yade_reason": reason}
    print(json.dumps(out, indent=2))
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(out, indent=2))
    return out


if __name__ == "__main__":
    if "--inside-yade" in sys.argv:
        run_scene_in_yade(globals(), scene_arguments(sys.argv[1:]))
    else:
        main()
