"""Hertz contact with the local curvature for convex level-set grains: validation and cost.

    python benchmarks/shaped_hertz.py --json results/bench/shaped_hertz.json [--quick]

Writes {"cases": {NAME: {"error", "tolerance", "reference"}}, "cost_ratio_vs_area": ..., ...}.

Cases (each against an independent reference):
- curvature_*: principal curvatures from the level set's spline Hessian at the contact point against
  closed forms (sphere 1/R; ellipsoid at the end of its x axis a/b^2, a/c^2), relative error, with
  the convergence in h reported beside.
- sphere_*: a level-set sphere (grid and nodes, h = R/12) against the sphere contact (SingleContact,
  same R, E, nu, mu; overlap, normal and contact point in closed form) along a random 3D movement
  history (relative translation, overlap in [2, 8] 1e-3 R, the pair rolling 0.03 rad per step,
  so the contact point wanders over the grid): max |dN|/N and max |dT|/(mu N) per law; the
  grain-sphere and grain-plane pairs for jaeger; the convergence of the jaeger errors in h.
- ellipsoid_plane_ratio*, crossed_ellipsoids_*: normal force against Hertz's elliptical solution
  (Johnson §4.2, `shape_references.hertz_elliptic`, scipy's elliptic integrals) for principal-radius
  ratios 1 to 4 and crossing angles 0-90 degrees, with the exact geometric overlap; max relative
  error over overlaps 1e-3..1e-2 of the smaller radius, with the default rule ("elliptic"); the
  departures of the "gauss" and "mean" rules on the same contacts are reported beside.
- objectivity_rotating_pair: two touching ellipsoids, loaded in shear, then turned rigidly together
  through 1.5 rad in 50 steps: max relative change of |F|, |N| and |T|.
cost_ratio_vs_area: time per contact-step of the curvature law (warm-started geometry + effective
radius + jaeger) over the time of the area law's node pass for the same pair (both directions,
every node taken into the other grain's frame and probed with the trilinear phi and gradient,
`core.grid.trilinear`; the area law's force accumulation comes on top), ellipsoids
(1, 0.8, 0.6) with 300 nodes each overlapping by 2 % of the semi-axis as in benchmarks/lsdem.py;
single pair microbenchmark, both timed in one process, interleaved, medians of CPU time.
"""

import argparse
import json
import math
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np
from scipy.spatial.transform import Rotation

from graindem._jit import njit
from graindem.contact import shape_geometry as G
from graindem.contact import state as S
from graindem.contact.frames import frame_init, frame_update, to_frame
from graindem.contact.laws import JAEGER, TANGENTIAL_LAWS, contact_step
from graindem.core.grid import trilinear
from graindem.contact.shape_hertz import RADIUS_ELLIPTIC, effective_radius
from graindem.contact.shape_references import ellipsoid_grain, hertz_elliptic
from graindem.contact.shaped_single import ShapedBody, ShapedContact, material_displacement, rotation_vector
from graindem.contact.single import SingleContact
from graindem.contact.store import HistoryStore
from graindem.particles import LevelSetGrain

E, NU, MU = 70e9, 0.25, 0.4
ESTAR = E / (2.0 * (1.0 - NU * NU))
R = 1e-3

FULL = dict(sphere_steps=300, sphere_cells=(6, 12, 24), ell_cells=12, deltas=(1e-3, 3e-3, 1e-2), ratios=(1.0, 2.0, 4.0),
            reps=4000, rounds=7)
QUICK = dict(sphere_steps=120, sphere_cells=(12,), ell_cells=12, deltas=(1e-3, 1e-2), ratios=(1.0, 2.0, 4.0), reps=1000,
             rounds=3)


def _case(error, tolerance, reference, **extra):
    return {"error": float(error), "tolerance": float(tolerance), "reference": reference, **extra}


# ---------------------------------------------------------------- curvature


def curvature_cases(cells):
    out = {}
    conv = []
    for n in cells:
        g = LevelSetGrain.sphere(R, spacing=R / n)
        body = ShapedBody.levelset(g)
        c = ShapedContact(body, ShapedBody.plane())
        rot = Rotation.random(random_state=n).as_matrix()
        err = 0.0
        for k in range(8):
            d = Rotation.random(random_state=100 + k).apply([0, 0, 1.0])  # plane normal into the domain
            # plane through the point of the sphere's surface in direction -d, moved 5e-3 R inwards
            p = -d * (R - 5e-3 * R)
            frame = Rotation.align_vectors([d], [[0, 0, 1.0]])[0].as_matrix()
            geom = c.geometry(np.zeros(3), rot, p, frame)
            err = max(err, abs(geom[G.G_KA1] * R - 1), abs(geom[G.G_KA2] * R - 1))
        conv.append({"cells_per_radius": n, "error": err})
    out["curvature_sphere"] = _case(conv[-1]["error"] if len(cells) == 1 else
                                    [r for r in conv if r["cells_per_radius"] == 12][0]["error"], 5e-3,
                                    "1/R of the sphere; level set sampled from the exact distance, h = R/12",
                                    convergence=conv)
    a, b, cc = 1.0, 2.0, 1.0
    conv = []
    for n in cells:
        g, centre = ellipsoid_grain(a * R, b * R, cc * R, spacing=cc * R / n)
        c = ShapedContact(ShapedBody.levelset(g), ShapedBody.plane())
        rot = Rotation.random(random_state=7 + n).as_matrix()
        err = 0.0
        for sgn in (1.0, -1.0):
            tip_body = centre + np.array([sgn * a * R, 0.0, 0.0])
            d = -rot @ np.array([sgn, 0.0, 0.0])  # wall normal into the domain (towards the centre)
            p = rot @ tip_body + d * 2e-3 * R
            frame = Rotation.align_vectors([d], [[0, 0, 1.0]])[0].as_matrix()
            geom = c.geometry(np.zeros(3), rot, p, frame)
            k1, k2 = sorted((geom[G.G_KA1], geom[G.G_KA2]))
            err = max(err, abs(k1 / (a / b**2 / R) - 1), abs(k2 / (a / cc**2 / R) - 1))
        conv.append({"cells_per_radius": n, "error": err})
    out["curvature_ellipsoid"] = _case([r for r in conv if r["cells_per_radius"] == 12][0]["error"], 5e-3,
                                       "a/b^2 and a/c^2 at the end of the x axis of the ellipsoid (1, 2, 1); "
                                       "h = c/12", convergence=conv)
    return out


# ---------------------------------------------------------------- level-set sphere against the sphere contact


def random_history(n_steps, seed, r_b, kind_b):
    """Poses of A (centre, rotation) and B along a random 3D movement history: the overlap walks in
    [2, 8] 1e-3 R, the tangential relative translation takes random steps of up to 0.8 mu kappa delta,
    the pair rolls by 0.03 rad per step about a random axis in the contact plane (a plane partner
    stays put while A turns: rolling with slip), and both bodies spin by 2e-4 rad about random axes."""
    rng = np.random.default_rng(seed)
    kappa = (2.0 - NU) / (2.0 * (1.0 - NU))
    rotA = Rotation.random(random_state=seed).as_matrix()
    rotB = Rotation.random(random_state=seed + 1).as_matrix()
    u = rng.normal(size=3)
    u /= np.linalg.norm(u)
    posA = rng.normal(size=3) * R
    delta = 4e-3 * R
    poses = []
    for k in range(n_steps):
        t = rng.normal(size=3)
        t -= (t @ u) * u
        t /= max(np.linalg.norm(t), 1e-300)
        lat = t * rng.uniform(0.0, 0.8) * MU * kappa * delta
        delta = float(np.clip(delta + rng.normal() * 1e-3 * R, 2e-3 * R, 8e-3 * R))
        roll = np.cross(u, t) * 0.03  # rolling: A and B turn oppositely about an axis in the contact plane
        spin = 2e-4 / math.sqrt(3)
        rotA = Rotation.from_rotvec(roll + rng.normal(size=3) * spin).as_matrix() @ rotA
        rotB = Rotation.from_rotvec(-roll + rng.normal(size=3) * spin).as_matrix() @ rotB
        # the tangential step moves B's centre; the line of centres turns with it
        cB = posA + u * (R + r_b - delta) + lat
        u = (cB - posA) / np.linalg.norm(cB - posA)
        if kind_b == "plane":
            frame = Rotation.align_vectors([-u], [[0, 0, 1.0]])[0].as_matrix()
            poses.append((posA.copy(), rotA.copy(), posA + u * (R - delta), frame))
        else:
            poses.append((posA.copy(), rotA.copy(), posA + u * (R + r_b - delta), rotB.copy()))
    return poses


def sphere_reference(law, poses, r_b, kind_b):
    """Forces of the sphere contact (SingleContact) along the poses, with the overlap, normal and
    contact point in closed form and the frame and shift by the same rule as the shaped contact."""
    if kind_b == "plane":
        ref = SingleContact(law, R, math.inf, E, NU, MU)
    else:
        ref = SingleContact(law, R, r_b, E, NU, MU)
    cq = np.zeros((1, 4))
    s = np.zeros(2)
    out = []
    prev = None
    for posA, rotA, posB, rotB in poses:
        if kind_b == "plane":
            n = -rotB[:, 2]
            delta = R - (posA - posB) @ rotB[:, 2]
            x = posA + (R - 0.5 * delta) * n
        else:
            d = posB - posA
            n = d / np.linalg.norm(d)
            delta = R + r_b - np.linalg.norm(d)
            x = posA + (R - 0.5 * delta) * n
        if prev is None:
            frame_init(cq, 0, *n)
        else:
            pA, rA, pB, rB, xp = prev
            spin = 0.5 * (rotation_vector(rotA, rA) + rotation_vector(rotB, rB))
            frame_update(cq, 0, n[0], n[1], n[2], spin[0], spin[1], spin[2], 1.0)
            du = material_displacement(xp, pB, rB, posB, rotB) - material_displacement(xp, pA, rA, posA, rotA)
            du -= (du @ n) * n
            dsx, dsy, _ = to_frame(cq, 0, *du)
            s = s + np.array([dsx, dsy])
        N, T = ref.step(delta, s)
        out.append((N, T.copy()))
        prev = (posA, rotA, posB, rotB, x)
    return out


def sphere_errors(law, cells, n_steps, kind_b="grain", seed=3, grain=None):
    g = grain if grain is not None else LevelSetGrain.sphere(R, spacing=R / cells)
    body_a = ShapedBody.levelset(g)
    body_b = {"grain": body_a, "sphere": ShapedBody.sphere(R), "plane": ShapedBody.plane()}[kind_b]
    r_b = R
    poses = random_history(n_steps, seed, r_b, kind_b)
    ref = sphere_reference(law, poses, r_b, kind_b)
    sc = ShapedContact(body_a, body_b, law=law, E=E, nu=NU, mu=MU)
    en = et = 0.0
    slips = 0
    for (posA, rotA, posB, rotB), (N0, T0) in zip(poses, ref):
        N, T = sc.step(posA, rotA, posB, rotB)
        en = max(en, abs(N / N0 - 1.0))
        et = max(et, float(np.linalg.norm(T - T0)) / (MU * N0))
        slips += int(sc.fs[0, S.F_KIND] >= S.KIND_PARTIAL_SLIP)
    return en, et, slips, sc.cold_starts


def sphere_cases(cfg):
    out = {}
    g12 = LevelSetGrain.sphere(R, spacing=R / 12)
    for law in TANGENTIAL_LAWS:
        en, et, slips, cold = sphere_errors(law, 12, cfg["sphere_steps"], grain=g12)
        ref = (f"SingleContact('{law}') of two spheres R, same path; level-set grain pair at h = R/12; "
               f"{cfg['sphere_steps']} movements ({slips} with slip)")
        out[f"sphere_grain_grain_{law}_normal"] = _case(en, 0.01, ref)
        out[f"sphere_grain_grain_{law}_tangential"] = _case(et, 0.01, ref + "; error / (mu N)")
    for kind in ("sphere", "plane"):
        en, et, slips, cold = sphere_errors("jaeger", 12, cfg["sphere_steps"], kind_b=kind, grain=g12)
        ref = f"SingleContact('jaeger') of sphere R and {'sphere R' if kind == 'sphere' else 'a plane'}; h = R/12"
        out[f"sphere_grain_{kind}_jaeger_normal"] = _case(en, 0.01, ref)
        out[f"sphere_grain_{kind}_jaeger_tangential"] = _case(et, 0.01, ref + "; error / (mu N)")
    conv = []
    for n in cfg["sphere_cells"]:
        g = g12 if n == 12 else None
        en, et, _, _ = sphere_errors("jaeger", n, cfg["sphere_steps"], grain=g)
        conv.append({"cells_per_radius": n, "normal": en, "tangential": et})
    return out, conv


# ---------------------------------------------------------------- ellipsoids against Hertz's elliptical contact


def _against_elliptic(sc, N, A, B, delta, worst):
    """|N/P - 1| with P Hertz's elliptical force at the exact overlap delta, and the signed errors of
    the three radius rules on the same geometry record, kept in `worst` where larger."""
    P = hertz_elliptic(A, B, ESTAR, delta)["P"]
    geom = sc.geom
    for name, rule in (("mean", 0), ("gauss", 1), ("elliptic", 2)):
        Rr, _ = effective_radius(rule, geom[G.G_LAM1], geom[G.G_LAM2], sc.r_limit)
        e = 4.0 / 3.0 * ESTAR * math.sqrt(Rr) * geom[G.G_DELTA] ** 1.5 / P - 1.0
        if abs(e) > abs(worst[name]):
            worst[name] = e
    return abs(N / P - 1.0)


def ellipsoid_plane_cases(cfg):
    out = {}
    c_ax = R
    for ratio in cfg["ratios"]:
        a, b, c = c_ax, c_ax * math.sqrt(ratio), c_ax  # principal radii at the x tip: b^2/a, c^2/a
        if ratio == 1.0:
            a = 0.8 * c_ax
        g, centre = ellipsoid_grain(a, b, c, spacing=min(b * b / a, c * c / a) / cfg["ell_cells"])
        rot = Rotation.random(random_state=int(10 * ratio)).as_matrix()
        A, B = a / (2 * b * b), a / (2 * c * c)
        Rsmall = min(b * b / a, c * c / a)
        worst = {"mean": 0.0, "gauss": 0.0, "elliptic": 0.0}
        err = 0.0
        for dd in cfg["deltas"]:
            delta = dd * Rsmall
            sc = ShapedContact(ShapedBody.levelset(g), ShapedBody.plane(), law="jaeger", E=E, nu=NU, mu=MU)
            d = -rot[:, 0]
            p = rot @ (centre + np.array([a, 0, 0])) + d * delta
            frame = Rotation.align_vectors([d], [[0, 0, 1.0]])[0].as_matrix()
            N, _ = sc.step(np.zeros(3), rot, p, frame)
            err = max(err, _against_elliptic(sc, N, A, B, delta, worst))
        out[f"ellipsoid_plane_ratio{int(ratio)}"] = _case(
            err, 0.03, f"Hertz elliptical contact (Johnson §4.2, scipy) for the ellipsoid ({a / R:g}, {b / R:g}, "
            f"{c / R:g}) mm on a plane, principal radii ratio {ratio:g}, h = R''/{cfg['ell_cells']}; "
            f"overlaps {list(cfg['deltas'])} R''", rules_signed_error=worst)
    return out


def crossed_cases(cfg):
    out = {}
    a, b, c = R, 2 * R, R  # principal radii at the x tip: 4R and R
    g, centre = ellipsoid_grain(a, b, c, spacing=R / cfg["ell_cells"])
    body = ShapedBody.levelset(g)
    Q = Rotation.random(random_state=5).as_matrix()
    KA = np.diag([a / b**2, a / c**2])
    for ang in (0, 30, 60, 90):
        w = math.radians(ang)
        Rw = np.array([[math.cos(w), -math.sin(w)], [math.sin(w), math.cos(w)]])
        lam = np.linalg.eigvalsh(KA + Rw @ KA @ Rw.T)
        A, B = lam[0] / 2, lam[1] / 2
        # B's x axis along -x, twisted by w about x
        rotB_local = Rotation.from_euler("x", w).as_matrix() @ Rotation.from_euler("z", math.pi).as_matrix()
        worst = {"mean": 0.0, "gauss": 0.0, "elliptic": 0.0}
        err = 0.0
        for dd in cfg["deltas"]:
            delta = dd * R
            sc = ShapedContact(body, body, law="jaeger", E=E, nu=NU, mu=MU)
            rotA = Q
            rotB = Q @ rotB_local
            # tips face each other on the world line Q e_x; centres 2a - delta apart (centre offsets in body frames)
            tipA = rotA @ (centre + np.array([a, 0, 0]))
            posB = tipA - rotB @ (centre + np.array([a, 0, 0])) - Q[:, 0] * delta
            N, _ = sc.step(np.zeros(3), rotA, posB, rotB)
            err = max(err, _against_elliptic(sc, N, A, B, delta, worst))
        out[f"crossed_ellipsoids_{ang}deg"] = _case(
            err, 0.03, f"Hertz elliptical contact (Johnson §4.2, scipy): two ellipsoids (1, 2, 1) mm tip to tip, "
            f"crossed at {ang} deg (B/A = {B / A:.3g}); h = R/{cfg['ell_cells']}", rules_signed_error=worst)
    return out


def objectivity_case():
    g, centre = ellipsoid_grain(1.2 * R, 0.8 * R, 0.7 * R, spacing=0.7 * R / 8)
    body = ShapedBody.levelset(g)
    sc = ShapedContact(body, body, law="jaeger", E=E, nu=NU, mu=MU)
    rotA = Rotation.random(random_state=11).as_matrix()
    rotB = Rotation.random(random_state=12).as_matrix()
    # place B touching A along a generic direction: back B off along u until just touching, then press
    u = np.array([0.3, 0.8, 0.5])
    u /= np.linalg.norm(u)
    lo, hi = 0.0, 4 * R
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        d = sc.geometry(np.zeros(3), rotA, u * mid, rotB)[G.G_DELTA]
        lo, hi = (mid, hi) if d > 0 else (lo, mid)
    base = u * (lo - 5e-3 * R)
    sc.step(np.zeros(3), rotA, base, rotB)
    t = np.cross(u, [0, 0, 1.0])
    t /= np.linalg.norm(t)
    posB = base
    for k in range(5):  # shear to about 0.6 mu N with partial slip
        posB = base + t * (k + 1) * 1.5e-4 * R
        sc.step(np.zeros(3), rotA, posB, rotB)
    f0 = np.linalg.norm(sc.force_on_b())
    N0 = sc.N
    T0 = np.linalg.norm(sc.T)
    axis = np.array([0.2, -0.5, 0.84])
    axis /= np.linalg.norm(axis)
    pivot = np.array([0.3, 0.1, -0.2]) * R
    worst = 0.0
    for k in range(1, 51):
        Qr = Rotation.from_rotvec(axis * 0.03 * k).as_matrix()
        pa = pivot + Qr @ (np.zeros(3) - pivot)
        pb = pivot + Qr @ (posB - pivot)
        sc.step(pa, Qr @ rotA, pb, Qr @ rotB)
        f = np.linalg.norm(sc.force_on_b())
        worst = max(worst, abs(f / f0 - 1), abs(sc.N / N0 - 1), abs(np.linalg.norm(sc.T) / T0 - 1))
    return {"objectivity_rotating_pair": _case(
        worst, 1e-6, f"|F|, N, |T| at the start of a rigid rotation of the pair (1.5 rad in 50 steps); "
        f"|T|/(mu N) = {T0 / (MU * N0):.3f}")}


# ---------------------------------------------------------------- cost


@njit
def _curvature_law_loop(reps, cA, oA, hA, posA, rotA, cB, oB, hB, posB, rotB, x0, tol, step_max, geom, r_limit,
                        r_ref, prm, fs, ist, pts, nxt, meta):
    acc = 0.0
    for r in range(reps):
        G.contact_geometry(cA, oA, hA, posA, rotA, G.BODY_LEVELSET, cB, oB, hB, posB, rotB, 0.0, x0, tol,
                           step_max, 30, geom)
        Rr, lim = effective_radius(RADIUS_ELLIPTIC, geom[G.G_LAM1], geom[G.G_LAM2], r_limit)
        s = 1e-9 if r % 2 == 0 else -1e-9  # back and forth: the history changes every call
        contact_step(JAEGER, prm, fs, ist, 0, geom[G.G_DELTA], s, 0.5 * s, pts, nxt, meta)
        acc += math.sqrt(Rr / r_ref) * fs[0, S.F_N]
    return acc


@njit
def _node_pass_loop(reps, phi, nx, ny, nz, ox, oy, oz, h, nodesA, posA, rotA, nodesB, posB, rotB):
    acc = 0.0
    for r in range(reps):
        for side in range(2):
            nodes = nodesA if side == 0 else nodesB
            po = posA if side == 0 else posB
            ro = rotA if side == 0 else rotB
            pp = posB if side == 0 else posA
            rp = rotB if side == 0 else rotA
            for k in range(nodes.shape[0]):
                b0, b1, b2 = nodes[k, 0], nodes[k, 1], nodes[k, 2]
                x0 = po[0] + ro[0, 0] * b0 + ro[0, 1] * b1 + ro[0, 2] * b2 - pp[0]
                x1 = po[1] + ro[1, 0] * b0 + ro[1, 1] * b1 + ro[1, 2] * b2 - pp[1]
                x2 = po[2] + ro[2, 0] * b0 + ro[2, 1] * b1 + ro[2, 2] * b2 - pp[2]
                q0 = rp[0, 0] * x0 + rp[1, 0] * x1 + rp[2, 0] * x2
                q1 = rp[0, 1] * x0 + rp[1, 1] * x1 + rp[2, 1] * x2
                q2 = rp[0, 2] * x0 + rp[1, 2] * x1 + rp[2, 2] * x2
                v, gx, gy, gz, ok = trilinear(phi, 0, nx, ny, nz, ox, oy, oz, h, q0, q1, q2)
                if ok and v < 0.0:
                    acc += v * gx
    return acc


def cost_case(cfg):
    axes = np.array([1.0, 0.8, 0.6])
    g = LevelSetGrain.ellipsoid(*axes, spacing=0.1, n_nodes=300)
    body = ShapedBody.levelset(g)
    rotA = np.eye(3)
    rotB = np.eye(3)
    posA = np.zeros(3)
    posB = np.array([2 * axes[0] - 0.02 * axes[0], 0.0, 0.0])
    sc = ShapedContact(body, body, law="jaeger", E=E, nu=NU, mu=MU)
    sc.step(posA, rotA, posB, rotB)
    geom = sc.geom.copy()
    # a warm start 1e-3 h off the solution (a DEM step carries the point much closer than that)
    x0 = geom[G.G_X:G.G_X + 3].copy() + 1e-3 * g.spacing
    st = sc.store
    st.ensure_free(cfg["reps"] + 8)
    phi = g.phi_grid.ravel()
    args_c = (body.coef, body.coef_origin, body.spacing, posA, rotA, body.coef, body.coef_origin, body.spacing,
              posB, rotB, x0, sc.tol, sc.step_max, geom, sc.r_limit, sc.r_ref, sc.prm, sc.fs, sc.ist, st.pts,
              st.nxt, st.meta)
    args_a = (phi, *[int(v) for v in g.grid_shape], *g.grid_origin, g.spacing, g.nodes, posA, rotA, g.nodes, posB,
              rotB)
    _curvature_law_loop(2, *args_c)
    _node_pass_loop(2, *args_a)
    n_pen = 0
    tc, ta = [], []
    for _ in range(cfg["rounds"]):
        t = time.process_time()
        _curvature_law_loop(cfg["reps"], *args_c)
        tc.append(time.process_time() - t)
        t = time.process_time()
        _node_pass_loop(cfg["reps"], *args_a)
        ta.append(time.process_time() - t)
    for nodes, po, pp in ((g.nodes, posA, posB), (g.nodes, posB, posA)):
        n_pen += int(np.sum(g.phi(nodes + po - pp) < 0))
    c = statistics.median(tc) / cfg["reps"]
    a = statistics.median(ta) / cfg["reps"]
    return c / a, {"curvature_law_s_per_contact_step": c, "area_node_pass_s_per_pair_step": a,
                   "nodes_per_grain": int(g.n_nodes), "penetrating_nodes": n_pen,
                   "newton_iterations_warm": int(geom[G.G_ITER]),
                   "method": "single pair microbenchmark, same process, interleaved, median CPU time; "
                             "area side = node pass only (transform + trilinear phi/grad for 2 x 300 nodes)"}


# ---------------------------------------------------------------- main


def run(quick=False):
    cfg = dict(QUICK if quick else FULL)
    cases = {}
    cases.update(curvature_cases(cfg["sphere_cells"] if not quick else (12,)))
    sph, conv = sphere_cases(cfg)
    cases.update(sph)
    cases.update(ellipsoid_plane_cases(cfg))
    cases.update(crossed_cases(cfg))
    cases.update(objectivity_case())
    ratio, cost = cost_case(cfg)
    return {"cases": cases, "cost_ratio_vs_area": ratio, "cost": cost, "sphere_convergence_jaeger": conv,
            "config": cfg, "quick": quick}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--json", metavar="FILE", help="write the results as JSON to FILE")
    p.add_argument("--quick", action="store_true", help="reduced sizes (the form tests use)")
    args = p.parse_args(argv)
    t0 = time.perf_counter()
    result = run(args.quick)
    result["machine"] = {"python": sys.version.split()[0], "platform": platform.platform(), "cpus": os.cpu_count()}
    result["wall_time_s"] = time.perf_counter() - t0
    for name, c in result["cases"].items():
        flag = "ok" if c["error"] <= c["tolerance"] else "FAIL"
        print(f"{name:45s} error {c['error']:.3e}  tol {c['tolerance']:.0e}  {flag}", flush=True)
    print(f"cost ratio vs area node pass: {result['cost_ratio_vs_area']:.3f}", flush=True)
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(result, indent=2, default=float))
    return result


if __name__ == "__main__":
    main()
