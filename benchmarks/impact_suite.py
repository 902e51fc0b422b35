"""The engine against the classic particle-impact benchmarks, each case set up through `Simulation`
as a user would (add_particles, add_wall, add_material, set_box, run, contact_arrays,
wall_contact_arrays) and compared with its own independent reference:

- Chung & Ooi (2011, Granular Matter 13: 643-656), tests 1-4, with the paper's materials (as YADE's
  scripts of these tests give them):
  1 elastic normal impact of two identical spheres (glass, limestone; R = 10 mm), 2 of a sphere on a
  plane (aluminium alloy, magnesium alloy; R = 0.1 m): contact duration, peak force and peak
  overlap against Hertz's closed forms; 3 normal impact with damping (alumina, cast iron;
  R = 2.5 mm): restitution achieved against the one set (`restitution=`), several speeds; 4 oblique
  impact of an alumina and an aluminium-alloy sphere (R = 2.5 mm, 3.9 m/s, mu = 0.092) on a plane
  from 5 to 85 degrees: tangential restitution, rebound spin and contact-point rebound angle against
  the Cattaneo-Mindlin-Deresiewicz reference of graindem.verification.oblique_impact, and against
  the rigid-body gross-sliding closed forms where the sphere slides throughout.
  The "rigid" plane is a wall of a material 1000 times stiffer than the sphere (as in YADE's
  scripts of these tests); the references use the E* and kappa of that pair.
- Impacts whose incident tangential velocity comes from spin alone (a sphere spinning onto the
  plane, two spheres spinning in the same sense, two counter-rotating spheres), against the same
  reference: the engine's contact-point kinematics and torques.
- Maw, Barber & Fawcett (1976): normalised rebound angle psi2 against psi1 for a sphere on an
  elastic plane of its own material and for two identical spheres, all four tangential laws, against
  the same reference; the time-step convergence of each law.
- Rolling and twisting resistance (contact.rolling), every tangential law: a sphere rolling on a
  plane under gravity, braked by Ai et al.'s rolling spring at its limiting moment mu_r R N, and a
  sphere spinning about the plane's normal, braked by Marshall's twisting spring at 2/3 mu a N:
  their constant decelerations against the closed forms (rolling_decay, twisting_decay below).

    python benchmarks/impact_suite.py --json FILE [--quick] [--out DIR]

writes {"cases": {NAME: {"error", "tolerance", "reference", ...}}} and PNGs (impact_*.png) in DIR.
impact_co123_spin.png (tests 1-3 and the spin cases, every row against its tolerance) is drawn from the
JSON by benchmarks/check_plots.py --impact FILE.
Every error is the largest over the case's speeds or angles; relative for Hertz quantities.
"""

import argparse
import json
import math
import os
import sys
import time

import numpy as np

from graindem.engine.simulation import Simulation
from graindem.verification import oblique_impact as ref

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # provenance.py beside this script, also when loaded by path
from provenance import provenance

LAWS = ("linear", "mindlin", "md_incremental", "jaeger")
WALL_STIFFNESS = 1000.0  # the "rigid" plane's Young's modulus over the sphere's

# Chung & Ooi (2011)'s input data (E Pa, nu, density kg/m^3) as YADE's scripts of these tests give them
MATERIALS = {
    "glass": (4.8e10, 0.20, 2800.0),
    "limestone": (2.0e10, 0.25, 2500.0),
    "aluminium_alloy": (7.0e10, 0.30, 2699.0),
    "magnesium_alloy": (4.0e10, 0.35, 1800.0),
    "alumina": (3.8e11, 0.23, 4000.0),
    "cast_iron": (1.0e11, 0.25, 7000.0),
    "aluminium_alloy_test4": (7.0e10, 0.33, 2700.0),
}
# Maw et al.'s normalised curves: any elastic sphere; this one has nu = 0.3 (chi = 1.441). The
# theory neglects the overlap against the radius (levers R, a fixed normal); the engine's levers
# are R - delta (wall) and R - delta/2 (pair) and a pair's normal turns as the spheres slide past
# each other, which moves psi2 by O(delta_max/R) (maw_finite_overlap below): at 0.02 m/s,
# delta_max/R = 1e-4.
MAW_MATERIAL = (7.0e10, 0.30, 2500.0)
MAW_RADIUS = 5e-3
MAW_SPEED = 0.02
MAW_MU = 0.3


# ----------------------------------------------------------------------------- running one impact
def _sphere_wall(law, material, radius, v_n, v_t=0.0, mu=0.0, wall_factor=WALL_STIFFNESS, dt=None,
                 restitution=None, spin=0.0):
    """A sphere approaching the wall y = 0 (normal +y) at (v_t, -v_n); the wall is of a material
    wall_factor times stiffer (1: the sphere's own material, an elastic plane)."""
    E, nu, rho = material
    sim = Simulation(law=law, E=E, nu=nu, mu=mu, density=rho, dt=dt, restitution=restitution)
    wall_mat = sim.add_material(E * wall_factor, nu, mu, rho) if wall_factor != 1.0 else 0
    size = 20.0 * radius
    sim.set_box((-size, -size, -size), (size, size, size))
    gap = 0.5 * v_n * dt
    sim.add_particles([[0.0, radius + gap, 0.0]], radius, velocities=[[v_t, -v_n, 0.0]],
                      angular_velocities=[[0.0, 0.0, spin]])
    sim.add_wall((0.0, 0.0, 0.0), (0.0, 1.0, 0.0), material=wall_mat)
    sim.setup()
    return sim


def _two_spheres(law, material, radius, v_n, w_t=0.0, mu=0.0, dt=None, spins=(0.0, 0.0)):
    """Two identical spheres on the x axis approaching at relative speed v_n, with relative
    tangential velocity w_t (along y) of their centres and spins (about z) `spins`."""
    E, nu, rho = material
    sim = Simulation(law=law, E=E, nu=nu, mu=mu, density=rho, dt=dt)
    size = 20.0 * radius
    sim.set_box((-size, -size, -size), (size, size, size))
    gap = 0.25 * v_n * dt
    sim.add_particles([[-radius - gap, 0.0, 0.0], [radius + gap, 0.0, 0.0]], radius,
                      velocities=[[0.5 * v_n, 0.5 * w_t, 0.0], [-0.5 * v_n, -0.5 * w_t, 0.0]],
                      angular_velocities=[[0.0, 0.0, spins[0]], [0.0, 0.0, spins[1]]])
    sim.setup()
    return sim


def _run_through_contact(sim, overlap_now, normal_force_now, max_steps):
    """Step until the contact has opened again; returns (overlaps before each step, normal force
    of each step) as arrays: the force of step k is computed at the positions of overlap k."""
    overlaps, forces = [], []
    touched = False
    for _ in range(max_steps):
        d = overlap_now(sim)
        sim.run(1)
        overlaps.append(d)
        forces.append(normal_force_now(sim))
        if d > 0.0:
            touched = True
        elif touched:
            return np.array(overlaps), np.array(forces)
    raise RuntimeError(f"the contact did not open within {max_steps} steps")


def _wall_overlap(sim):
    return float(sim.radius[0] - sim.pos[0, 1])


def _wall_normal_force(sim):
    c = sim.wall_contact_arrays()
    return float(c["N"].sum())


def _pair_overlap(sim):
    return float(sim.radius[0] + sim.radius[1] - np.linalg.norm(sim.pos[1] - sim.pos[0]))


def _pair_normal_force(sim):
    c = sim.contact_arrays()
    return float(c["N"].sum())


def _contact_duration(overlaps, dt):
    """Time between the zero crossings of the overlap, each located by linear interpolation."""
    inside = np.flatnonzero(overlaps > 0.0)
    a, b = inside[0], inside[-1]
    t_in = (a - overlaps[a] / (overlaps[a] - overlaps[a - 1])) * dt
    t_out = (b + overlaps[b] / (overlaps[b] - overlaps[b + 1])) * dt
    return t_out - t_in


# ----------------------------------------------------------------------------- Chung & Ooi 1-3
def hertz_case(pair, material_name, radius, speeds, steps_per_contact):
    """Elastic normal impact: duration, peak force and peak overlap against Hertz's closed forms."""
    E, nu, rho = MATERIALS[material_name]
    m = rho * 4.0 / 3.0 * math.pi * radius ** 3
    if pair:
        estar, _, _ = ref.effective_moduli(E, nu, E, nu)
        m_eff, rstar = 0.5 * m, 0.5 * radius
    else:
        estar, _, _ = ref.effective_moduli(E, nu, WALL_STIFFNESS * E, nu)
        m_eff, rstar = m, radius
    rows = []
    for v in speeds:
        h = ref.hertz_impact(m_eff, estar, rstar, v)
        dt = h["duration"] / steps_per_contact
        if pair:
            sim = _two_spheres("mindlin", MATERIALS[material_name], radius, v, dt=dt)
            d, N = _run_through_contact(sim, _pair_overlap, _pair_normal_force, 4 * steps_per_contact)
        else:
            sim = _sphere_wall("mindlin", MATERIALS[material_name], radius, v, dt=dt)
            d, N = _run_through_contact(sim, _wall_overlap, _wall_normal_force, 4 * steps_per_contact)
        got = {"duration": _contact_duration(d, dt), "peak_force": float(N.max()), "peak_overlap": float(d.max())}
        rows.append({"speed": v, **{k: got[k] for k in got}, **{"hertz_" + k: h[k] for k in h},
                     **{"rel_error_" + k: abs(got[k] / h[k] - 1.0) for k in got}})
    return rows


def restitution_case(material_name, radius, restitutions, speeds, steps_per_contact):
    """Damped normal impact on the plane: restitution achieved against the one set."""
    E, nu, rho = MATERIALS[material_name]
    m = rho * 4.0 / 3.0 * math.pi * radius ** 3
    estar, _, _ = ref.effective_moduli(E, nu, WALL_STIFFNESS * E, nu)
    rows = []
    for e in restitutions:
        for v in speeds:
            dt = ref.hertz_impact(m, estar, radius, v)["duration"] / steps_per_contact
            sim = _sphere_wall("mindlin", MATERIALS[material_name], radius, v, dt=dt,
                               restitution=None if e == 1.0 else e)
            _run_through_contact(sim, _wall_overlap, _wall_normal_force, 4 * steps_per_contact)
            got = float(sim.vel[0, 1]) / v
            rows.append({"restitution_set": e, "speed": v, "restitution": got, "error": abs(got - e)})
    return rows


# ----------------------------------------------------------------------------- oblique impacts
def _sphere_wall_rebound(law, material, radius, v_n, v_t, mu, wall_factor, steps_per_contact, spin=0.0):
    """Run one oblique sphere-wall impact; returns (v_n2, v_t2, R omega2, w2)."""
    E, nu, rho = material
    m = rho * 4.0 / 3.0 * math.pi * radius ** 3
    estar, _, _ = ref.effective_moduli(E, nu, wall_factor * E, nu)
    dt = ref.hertz_impact(m, estar, radius, v_n)["duration"] / steps_per_contact
    sim = _sphere_wall(law, material, radius, v_n, v_t=v_t, mu=mu, wall_factor=wall_factor, dt=dt, spin=spin)
    _run_through_contact(sim, _wall_overlap, _wall_normal_force, 4 * steps_per_contact)
    v_t2 = float(sim.vel[0, 0])
    r_omega = radius * float(sim.omega[0, 2])
    # the contact point's velocity relative to the wall: v + omega x (-R e_y), x component v_x + R omega_z
    return float(sim.vel[0, 1]), v_t2, r_omega, v_t2 + r_omega


def _two_sphere_rebound(law, material, radius, v_n, w_t, mu, steps_per_contact, spins=(0.0, 0.0), full=False):
    """Run one impact of two spheres; returns (v_n2, w2), or with `full` also the final velocities
    and spins (2, 3) arrays."""
    E, nu, rho = material
    m = rho * 4.0 / 3.0 * math.pi * radius ** 3
    estar, _, _ = ref.effective_moduli(E, nu, E, nu)
    dt = ref.hertz_impact(0.5 * m, estar, 0.5 * radius, v_n)["duration"] / steps_per_contact
    sim = _two_spheres(law, material, radius, v_n, w_t=w_t, mu=mu, dt=dt, spins=spins)
    _run_through_contact(sim, _pair_overlap, _pair_normal_force, 4 * steps_per_contact)
    v, w = sim.vel, sim.omega
    v_n2 = float(v[1, 0] - v[0, 0])
    # contact point of sphere 0 at +R e_x, of sphere 1 at -R e_x: y velocities v_y + R omega_z, v_y - R omega_z
    w2 = float(v[0, 1] + radius * w[0, 2] - (v[1, 1] - radius * w[1, 2]))
    return (v_n2, w2, v.copy(), w.copy()) if full else (v_n2, w2)


def spin_cases(psi1s, steps_per_contact, law="jaeger"):
    """Impacts whose incident tangential velocity comes from spin alone: a sphere spinning onto the
    plane (omega1 R = psi1 mu kappa v_n), two spheres spinning in the same sense (w1 = 2 R omega1),
    and two counter-rotating spheres (w1 = 0: no tangential force at all). Alumina, R = 2.5 mm,
    v_n = 1 m/s, mu = 0.092. Returns rows of errors over v_n (velocities, R times spins)."""
    material = MATERIALS["alumina"]
    radius, v_n, mu = 2.5e-3, 1.0, 0.092
    E, nu, _ = material
    k2 = ref.SOLID_SPHERE_K2
    rows = {"sphere_plane": [], "two_spheres": [], "counter_rotating": []}
    _, _, kappa_w = ref.effective_moduli(E, nu, WALL_STIFFNESS * E, nu)
    _, _, kappa_p = ref.effective_moduli(E, nu, E, nu)
    for p in psi1s:
        # sphere on the plane: w = v_t + R omega; dv_t = dw/(1 + 1/k2), R d omega = dw/(1 + k2)
        r_om1 = p * mu * kappa_w * v_n
        v_n2, v_t2, r_om2, _ = _sphere_wall_rebound(law, material, radius, v_n, 0.0, mu, WALL_STIFFNESS,
                                                    steps_per_contact, spin=r_om1 / radius)
        r = ref.sphere_rebound(p, ref.chi_of(kappa_w), v_n, mu, kappa_w)
        rows["sphere_plane"].append({"psi1": p, "error": max(abs(v_t2 - r["dv_t"]),
                                                             abs(r_om2 - r_om1 - r["R_domega"])) / v_n})
        # two spheres, both spinning at omega: w1 = 2 R omega; J/m = dw/(2 (1 + 1/k2)) on sphere 0,
        # R d omega = dw/(2 (1 + k2)) on each
        om = p * mu * kappa_p * v_n / (2.0 * radius)
        v_n2, w2, v, w = _two_sphere_rebound(law, material, radius, v_n, 0.0, mu, steps_per_contact,
                                             spins=(om, om), full=True)
        psi2 = ref.converged_psi2(p, ref.chi_of(kappa_p))[0]
        dw = mu * kappa_p * v_n * (psi2 - p)
        err = max(abs(v[0, 1] - dw / (2.0 * (1.0 + 1.0 / k2))), abs(v[1, 1] + dw / (2.0 * (1.0 + 1.0 / k2))),
                  max(abs(radius * (w[i, 2] - om) - dw / (2.0 * (1.0 + k2))) for i in (0, 1))) / v_n
        rows["two_spheres"].append({"psi1": p, "error": float(err)})
        # counter-rotating: the contact points move together, nothing tangential may happen
        v_n2, w2, v, w = _two_sphere_rebound(law, material, radius, v_n, 0.0, mu, steps_per_contact,
                                             spins=(om, -om), full=True)
        err = max(float(np.max(np.abs(v[:, 1:]))), radius * float(np.max(np.abs(w - [[0, 0, om], [0, 0, -om]])))) / v_n
        rows["counter_rotating"].append({"omega": om, "error": err})
    return rows


def chung_ooi_oblique(material_name, angles_deg, steps_per_contact, law="jaeger"):
    """Chung & Ooi test 4: alumina or aluminium alloy sphere, R = 2.5 mm, 3.9 m/s, mu = 0.092."""
    material = MATERIALS[material_name]
    radius, speed, mu = 2.5e-3, 3.9, 0.092
    E, nu, _ = material
    _, _, kappa = ref.effective_moduli(E, nu, WALL_STIFFNESS * E, nu)
    chi = ref.chi_of(kappa)
    rows = []
    for a in angles_deg:
        th = math.radians(a)
        v_n, v_t = speed * math.cos(th), speed * math.sin(th)
        v_n2, v_t2, r_om, w2 = _sphere_wall_rebound(law, material, radius, v_n, v_t, mu, WALL_STIFFNESS,
                                                     steps_per_contact)
        psi1 = v_t / (mu * kappa * v_n)
        r = ref.sphere_rebound(psi1, chi, v_n, mu, kappa)
        ref_vt2, ref_rom = v_t + r["dv_t"], r["R_domega"]
        ref_w2 = ref_vt2 + ref_rom
        row = {"angle_deg": a, "psi1": psi1,
               "tangential_restitution": v_t2 / v_t, "ref_tangential_restitution": ref_vt2 / v_t,
               "spin": r_om / radius, "ref_spin": ref_rom / radius,
               "rebound_angle_deg": math.degrees(math.atan2(w2, v_n2)),
               "ref_rebound_angle_deg": math.degrees(math.atan2(ref_w2, v_n)),
               "normal_restitution": v_n2 / v_n}
        if psi1 >= 4.0 * chi - 1.0:
            # rigid body sliding throughout: tangential impulse mu (1 + e) m v_n with e = 1
            row["rigid_tangential_restitution"] = 1.0 - 2.0 * mu * v_n / v_t
            row["rigid_spin"] = -2.0 * mu * v_n / (ref.SOLID_SPHERE_K2 * radius)
        rows.append(row)
    return rows, chi


def maw_curve(law, geometry, psi1s, steps_per_contact, speed=MAW_SPEED):
    """psi2 of the engine (law, geometry 'wall' or 'pair') at each psi1, normal speed `speed`."""
    E, nu, _ = MAW_MATERIAL
    _, _, kappa = ref.effective_moduli(E, nu, E, nu)
    out = []
    for p in psi1s:
        w1 = p * MAW_MU * kappa * speed
        if geometry == "wall":
            v_n2, _, _, w2 = _sphere_wall_rebound(law, MAW_MATERIAL, MAW_RADIUS, speed, w1, MAW_MU, 1.0,
                                                  steps_per_contact)
        else:
            v_n2, w2 = _two_sphere_rebound(law, MAW_MATERIAL, MAW_RADIUS, speed, w1, MAW_MU, steps_per_contact)
        out.append(w2 / (MAW_MU * kappa * v_n2))
    return np.array(out)


def maw_reference(psi1s):
    E, nu, _ = MAW_MATERIAL
    chi = ref.chi_of(ref.effective_moduli(E, nu, E, nu)[2])
    vals = [ref.converged_psi2(p, chi) for p in psi1s]
    return np.array([v for v, _ in vals]), max(e for _, e in vals), chi


# ----------------------------------------------------------------------------- the suite
TOL = {
    "hertz": 2e-4,          # relative, 200 steps per contact (the integrator's error is ~3e-5 there)
    "restitution": 3e-3,    # absolute
    "oblique_et": 0.01,     # tangential restitution, absolute
    "oblique_spin": 0.01,   # R omega2 / v, absolute
    "oblique_angle": 0.5,   # degrees
    "rigid": 0.01,
    "spin": 2e-3,           # velocity and R omega changes over v_n, absolute
    "spin_none": 1e-12,
    # psi2 of the law that implements CMD exactly; a pair's normal turns while the spheres slide past
    # each other, which the theory neglects (its deviation grows with psi1, see maw_finite_overlap)
    "psi2_sphere_plane_jaeger": 3e-3,
    # fitted deceleration over the closed form's, relative (measured ~1e-5: the lever R - delta
    # against R, the normal force's residual oscillation)
    "rolling_decay": 1e-3,
    "psi2_two_spheres_jaeger": 0.02,
    "dt_convergence_jaeger": 2e-3,
    "dt_convergence_jaeger_low_speed": 2e-4,
}
# The laws that do not implement CMD do not reproduce the reference; their bounds (1.25 times the
# errors measured over the full psi1 range at 200 steps per contact: linear 0.576, mindlin 0.430,
# md_incremental 0.150) guard against a change that moves them further away.
TOL_APPROXIMATE_LAWS = {"linear": 0.72, "mindlin": 0.54, "md_incremental": 0.19}


# ----------------------------------------------------------------------------- rolling resistance
ROLL_MATERIAL = (7.0e10, 0.30, 2500.0)
ROLL_RADIUS = 1e-3
ROLL_G = 9.81


def _resting_sphere(law, velocity, spin, mu, mu_r, twisting):
    """A sphere resting on the plane y = 0 under gravity (-y), at its static Hertz overlap, with
    rolling or twisting resistance; returns (sim, N, E*)."""
    E, nu, rho = ROLL_MATERIAL
    sim = Simulation(law=law, E=E, nu=nu, mu=mu, density=rho, gravity=(0.0, -ROLL_G, 0.0), restitution=0.3,
                     rolling={"mu_r": mu_r} if mu_r else None, twisting=twisting)
    size = 20.0 * ROLL_RADIUS
    sim.set_box((-size, -size, -size), (size, size, size))
    m = rho * 4.0 / 3.0 * math.pi * ROLL_RADIUS ** 3
    N = m * ROLL_G
    estar = ref.effective_moduli(E, nu, E, nu)[0]
    delta = (N / (4.0 / 3.0 * estar * math.sqrt(ROLL_RADIUS))) ** (2.0 / 3.0)
    sim.add_particles([[0.0, ROLL_RADIUS - delta, 0.0]], ROLL_RADIUS, velocities=[velocity],
                      angular_velocities=[spin])
    sim.add_wall((0.0, 0.0, 0.0), (0.0, 1.0, 0.0))
    sim.setup()
    return sim, N, estar


def _fitted_rate(sim, read, t_stop, samples=60, start=0.3):
    """Run to 0.8 t_stop sampling read(sim); the slope of a line fitted from `start` t_stop on
    (after the spring's elastic loading), and the samples (t, y)."""
    steps = int(0.8 * t_stop / sim.dt)
    every = max(1, steps // samples)
    t, y = [], []

    def sample(s):
        t.append(s.time)
        y.append(read(s))
    sim.run(steps, callback=sample, every=every)
    t, y = np.array(t), np.array(y)
    keep = t > start * t_stop
    return float(np.polyfit(t[keep], y[keep], 1)[0]), t, y


def rolling_decay(law, mu_r=0.2, v0=0.02, mu=0.5):
    """A sphere rolling without slip at v0 along x. With the rolling spring at its limit the moment
    mu_r R N (N = m g, rolling radius R* = R) opposes the spin, friction F keeps the contact point
    at rest: m dv/dt = F, I dw/dt = -R F - mu_r R N with v = R w, so (I + m R^2) dw/dt = -mu_r R m g
    and dv/dt = -mu_r g m R^2/(I + m R^2) = -5/7 mu_r g (I = 2/5 m R^2): a constant deceleration
    until the sphere stops at t = 7 v0/(5 mu_r g), while |F|/N = 2/7 mu_r stays below mu."""
    sim, _, _ = _resting_sphere(law, (v0, 0.0, 0.0), (0.0, 0.0, -v0 / ROLL_RADIUS), mu, mu_r, None)
    decel = 5.0 / 7.0 * mu_r * ROLL_G
    rate, t, v = _fitted_rate(sim, lambda s: float(s.vel[0, 0]), v0 / decel)
    return {"law": law, "mu_r": mu_r, "start": v0, "deceleration": -rate, "ref_deceleration": decel,
            "error": abs(-rate / decel - 1.0), "t": t.tolist(), "y": v.tolist(), "ref_y": (v0 - decel * t).tolist(),
            "rolling_dissipation": sim.measure()["rolling_dissipation"]}


def twisting_decay(law, w0=0.2, mu=0.5):
    """A sphere spinning at w0 about the plane's normal. With the twisting spring at its limit the
    moment 2/3 mu a N (Hertz: a = (3 N R/(4 E*))^(1/3), N = m g) brakes the spin alone:
    I dw/dt = -2/3 mu a N, a constant rate until the spin stops at t = I w0/(2/3 mu a N). Before,
    the spring loads elastically for t1 = asin(W theta_lim/w0)/W (W^2 = k_tw/I, theta_lim =
    2/3 mu a N/k_tw, k_tw = 4 G* a^3): 0.18 of that time here, so the fit starts at 0.3 of it."""
    sim, N, estar = _resting_sphere(law, (0.0, 0.0, 0.0), (0.0, w0, 0.0), mu, 0.0, True)
    a = (3.0 * N * ROLL_RADIUS / (4.0 * estar)) ** (1.0 / 3.0)
    inertia = float(sim.inertia[0])
    alpha = 2.0 / 3.0 * mu * a * N / inertia
    rate, t, w = _fitted_rate(sim, lambda s: float(s.omega[0, 1]), w0 / alpha)
    E, nu, _ = ROLL_MATERIAL
    k_tw = 4.0 * ref.effective_moduli(E, nu, E, nu)[1] * a ** 3
    W = math.sqrt(k_tw / inertia)
    t1 = math.asin(W * alpha * inertia / k_tw / w0) / W
    w_ref = np.where(t < t1, w0 * np.cos(W * t), w0 * math.cos(W * t1) - alpha * (t - t1))
    return {"law": law, "start": w0, "deceleration": -rate, "ref_deceleration": alpha, "error": abs(-rate / alpha - 1.0),
            "t": t.tolist(), "y": w.tolist(), "ref_y": w_ref.tolist(), "elastic_phase_s": t1,
            "rolling_dissipation": sim.measure()["rolling_dissipation"]}


def _case(error, tolerance, reference, **extra):
    return {"error": float(error), "tolerance": float(tolerance), "reference": reference, **extra}


def run_suite(quick=False, out_dir=None, log=print):
    t0 = time.perf_counter()
    cases = {}
    figures = {}
    spc = 200  # steps per Hertz contact duration
    # --- Chung & Ooi 1 and 2
    for test, pair, names, radius, speeds in (
            ("co1_two_spheres", True, ("glass", "limestone"), 0.010, (10.0,) if quick else (1.0, 3.0, 10.0)),
            ("co2_sphere_plane", False, ("aluminium_alloy", "magnesium_alloy"), 0.10,
             (0.2,) if quick else (0.05, 0.2, 1.0))):
        for name in names:
            rows = hertz_case(pair, name, radius, [2.0 * s for s in speeds] if pair else speeds, spc)
            for q in ("duration", "peak_force", "peak_overlap"):
                cases[f"{test}_{name}_{q}"] = _case(
                    max(r["rel_error_" + q] for r in rows), TOL["hertz"],
                    f"Hertz closed form ({q}), relative error, {spc} steps per contact", rows=rows)
            log(f"{test} {name}: " + ", ".join(f"{q} {max(r['rel_error_' + q] for r in rows):.2e}"
                                               for q in ("duration", "peak_force", "peak_overlap")))
    # --- Chung & Ooi 3
    es = (0.5, 0.9) if quick else (0.2, 0.4, 0.6, 0.8, 1.0)
    speeds = (3.9,) if quick else (0.5, 3.9, 10.0)
    for name in ("alumina", "cast_iron"):
        rows = restitution_case(name, 2.5e-3, es, speeds, spc)
        cases[f"co3_restitution_{name}"] = _case(max(r["error"] for r in rows), TOL["restitution"],
                                                 "the restitution set (Simulation(restitution=e))", rows=rows)
        figures[f"co3_{name}"] = rows
        log(f"co3 {name}: max |e - e_set| {cases[f'co3_restitution_{name}']['error']:.2e}")
    # --- Chung & Ooi 4
    angles = (10.0, 45.0, 80.0) if quick else tuple(range(5, 90, 5))
    for name in ("alumina", "aluminium_alloy_test4"):
        rows, chi = chung_ooi_oblique(name, angles, spc)
        label = name.replace("_test4", "")
        figures[f"co4_{label}"] = rows
        ref_name = "Cattaneo-Mindlin-Deresiewicz reference (verification.oblique_impact, MDR)"
        cases[f"co4_oblique_{label}_tangential_restitution"] = _case(
            max(abs(r["tangential_restitution"] - r["ref_tangential_restitution"]) for r in rows),
            TOL["oblique_et"], ref_name + ", absolute", rows=rows)
        cases[f"co4_oblique_{label}_spin"] = _case(
            max(abs(r["spin"] - r["ref_spin"]) * 2.5e-3 / 3.9 for r in rows), TOL["oblique_spin"],
            ref_name + ", |omega2 - ref| R / v, absolute")
        cases[f"co4_oblique_{label}_rebound_angle"] = _case(
            max(abs(r["rebound_angle_deg"] - r["ref_rebound_angle_deg"]) for r in rows), TOL["oblique_angle"],
            ref_name + ", contact-point rebound angle, degrees")
        slide = [r for r in rows if "rigid_tangential_restitution" in r]
        if slide:
            err = max(max(abs(r["tangential_restitution"] - r["rigid_tangential_restitution"]),
                          abs(r["spin"] - r["rigid_spin"]) * 2.5e-3 / 3.9) for r in slide)
            cases[f"co4_oblique_{label}_gross_sliding"] = _case(
                err, TOL["rigid"], "rigid-body sliding closed forms e_t = 1 - 2 mu/tan(theta), "
                "R omega2 = -5 mu v_n (angles with psi1 >= 4 chi - 1)")
        log(f"co4 {label} (chi {chi:.3f}): " + ", ".join(
            f"{k.split(label + '_')[1]} {cases[k]['error']:.3g}" for k in cases if k.startswith(f"co4_oblique_{label}")))
    # --- spin: the incident tangential velocity from the particles' spin alone
    spin_psi1 = (-3.0, 1.0) if quick else (-6.0, -3.0, -1.0, 1.0, 3.0, 6.0)
    spin = spin_cases(spin_psi1, spc)
    for key, rows in spin.items():
        err = max(r["error"] for r in rows)
        cases[f"spin_{key}"] = _case(
            err, TOL["spin_none" if key == "counter_rotating" else "spin"],
            "no tangential impulse (w1 = 0), |change| over v_n" if key == "counter_rotating" else
            "CMD reference (MDR): velocity and R x spin changes, absolute over v_n", rows=rows)
        log(f"spin {key}: {err:.3g}")
    # --- Maw et al.
    psi1s = np.array([0.5, 2.0, 4.0, 7.0]) if quick else np.concatenate([np.arange(0.25, 8.0, 0.25), [9.0, 10.0]])
    ref_psi2, ref_err, chi = maw_reference(psi1s)
    maw = {"psi1": psi1s.tolist(), "reference": ref_psi2.tolist(), "chi": chi, "reference_resolution_error": ref_err}
    geometries = ("wall",) if quick else ("wall", "pair")
    for geometry in geometries:
        for law in LAWS:
            got = maw_curve(law, geometry, psi1s, spc)
            err = float(np.max(np.abs(got - ref_psi2)))
            maw[f"{geometry}_{law}"] = got.tolist()
            gname = "sphere_plane" if geometry == "wall" else "two_spheres"
            tol = TOL[f"psi2_{gname}_jaeger"] if law == "jaeger" else TOL_APPROXIMATE_LAWS[law]
            cases[f"maw_{gname}_{law}"] = _case(
                err, tol,
                "Maw et al. psi2(psi1), MDR reference; max |psi2 - ref|",
                matches_reference=law == "jaeger")
            log(f"maw {geometry} {law}: max |psi2 - ref| = {err:.3g}")
    figures["maw"] = maw
    # --- time-step convergence of the engine (sphere on plane)
    conv_psi1 = np.array([1.0, 3.0])
    conv_ref = np.array([ref.converged_psi2(p, chi)[0] for p in conv_psi1])
    spcs = (50, 100, 200) if quick else (50, 100, 200, 400, 800)
    conv = {"steps_per_contact": list(spcs), "psi1": conv_psi1.tolist()}
    for law in LAWS if not quick else ("jaeger",):
        vals = np.array([maw_curve(law, "wall", conv_psi1, n) for n in spcs])
        errs = np.max(np.abs(vals - conv_ref), axis=1)
        changes = np.max(np.abs(np.diff(vals, axis=0)), axis=1)
        conv[law] = {"error": errs.tolist(), "change": changes.tolist(), "psi2": vals.tolist()}
        log(f"dt convergence {law}: error vs reference {['%.2e' % e for e in errs]}, "
            f"change between dt and dt/2 {['%.2e' % c for c in changes]}")
    cases["maw_jaeger_dt_convergence"] = _case(
        conv["jaeger"]["error"][-1], TOL["dt_convergence_jaeger"],
        f"MDR reference at psi1 = 1, 3; error at {spcs[-1]} steps per contact", convergence=conv)
    if not quick:
        # both limits at once: at 0.002 m/s (delta_max/R = 1.6e-5) and 3200 steps per contact
        low = {"speed": 0.002, "steps_per_contact": [200, 800, 3200]}
        low["error"] = [float(np.max(np.abs(maw_curve("jaeger", "wall", conv_psi1, n, speed=low["speed"]) - conv_ref)))
                        for n in low["steps_per_contact"]]
        conv["jaeger_low_speed"] = low
        log(f"dt convergence jaeger at {low['speed']} m/s: error vs reference {['%.2e' % e for e in low['error']]}")
        cases["maw_jaeger_dt_convergence_low_speed"] = _case(
            low["error"][-1], TOL["dt_convergence_jaeger_low_speed"],
            "MDR reference at psi1 = 1, 3; 0.002 m/s, 3200 steps per contact", convergence=low)
    figures["convergence"] = conv
    # --- the theory's small-overlap assumption: jaeger's deviation against delta_max/R
    finite = None
    if not quick:
        E, nu, rho = MAW_MATERIAL
        m = rho * 4.0 / 3.0 * math.pi * MAW_RADIUS ** 3
        estar = ref.effective_moduli(E, nu, E, nu)[0]
        fo_psi1 = np.array([1.0, 3.0, 7.0])
        fo_ref = np.array([ref.converged_psi2(p, chi)[0] for p in fo_psi1])
        finite = {"psi1": fo_psi1.tolist(), "rows": []}
        for v in (1.0, 0.1, 0.02):
            for geometry in ("wall", "pair"):
                got = maw_curve("jaeger", geometry, fo_psi1, spc, speed=v)
                m_eff, rstar = (m, MAW_RADIUS) if geometry == "wall" else (0.5 * m, 0.5 * MAW_RADIUS)
                dmax = ref.hertz_impact(m_eff, estar, rstar, v)["peak_overlap"]
                finite["rows"].append({"speed": v, "geometry": geometry, "delta_max_over_R": dmax / MAW_RADIUS,
                                       "psi2_minus_ref": (got - fo_ref).tolist()})
                log(f"finite overlap: v {v} {geometry} delta_max/R {dmax / MAW_RADIUS:.2e}: psi2 - ref "
                    f"{np.round(got - fo_ref, 5).tolist()}")
    # --- rolling and twisting resistance: a sphere rolling and a sphere spinning on a plane
    roll = {"rolling": [], "twisting": []}
    for law in LAWS:
        for kind, fn, form in (("rolling", rolling_decay, "dv/dt = -5/7 mu_r g (Ai et al. type C at its limit)"),
                               ("twisting", twisting_decay, "I dw/dt = -2/3 mu a N (Marshall at its limit)")):
            r = fn(law)
            roll[kind].append(r)
            cases[f"{kind}_decay_{law}"] = _case(r["error"], TOL["rolling_decay"],
                                                 f"closed form {form}; |fitted deceleration / closed form - 1|",
                                                 **{k: v for k, v in r.items() if k not in ("error", "t", "y", "ref_y")})
            log(f"{kind} decay {law}: deceleration {r['deceleration']:.6g} against {r['ref_deceleration']:.6g} "
                f"(error {r['error']:.2e})")
    figures["rolling"] = roll
    elapsed = time.perf_counter() - t0
    if out_dir:
        _plots(figures, out_dir)
    return {"cases": cases, "quick": quick, "elapsed_s": elapsed, "maw": maw, "maw_finite_overlap": finite,
            "materials": {k: {"E": v[0], "nu": v[1], "density": v[2]} for k, v in MATERIALS.items()},
            "wall_stiffness_factor": WALL_STIFFNESS, "steps_per_contact": spc}


def _plots(fig, out_dir):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    os.makedirs(out_dir, exist_ok=True)
    maw = fig["maw"]
    p1 = np.array(maw["psi1"])
    fine = np.linspace(0.0, max(p1), 161)
    ref_fine = [ref.oblique_impact(p, maw["chi"], 2000, 1000)["psi2"] for p in fine]
    f, ax = plt.subplots(figsize=(6.4, 4.6))
    ax.plot(fine, ref_fine, "k-", lw=2, label="CMD reference (MDR)")
    ax.plot(fine, fine - 4.0 * maw["chi"], "k:", lw=1, label=r"gross sliding $\psi_1 - 4\chi$")
    for law, mk in zip(LAWS, "sv^o"):
        ax.plot(p1, maw[f"wall_{law}"], mk, ms=5, mfc="none" if law != "jaeger" else None, label=law)
        if f"pair_{law}" in maw:
            ax.plot(p1, maw[f"pair_{law}"], mk, ms=2, color=ax.lines[-1].get_color())
    ax.set_xlabel(r"$\psi_1$ (normalised incident angle)")
    ax.set_ylabel(r"$\psi_2$ (normalised rebound angle)")
    ax.set_ylim(min(ref_fine) - 0.5, max(p1) - 4.0 * maw["chi"] + 0.5)
    ax.axhline(0.0, color="0.8", lw=0.8)
    ax.set_title(rf"Oblique impact (Maw et al. 1976), $\chi$ = {maw['chi']:.3f}; large: sphere-plane, small: two spheres",
                 fontsize=9)
    ax.legend(fontsize=8)
    f.tight_layout()
    f.savefig(os.path.join(out_dir, "impact_psi.png"), dpi=120)
    plt.close(f)
    for key in [k for k in fig if k.startswith("co4_")]:
        rows = fig[key]
        a = [r["angle_deg"] for r in rows]
        f, axs = plt.subplots(1, 3, figsize=(11, 3.4))
        for axx, q, lab in zip(axs, ("tangential_restitution", "spin", "rebound_angle_deg"),
                               ("tangential restitution", "rebound spin (rad/s)", "contact-point rebound angle (deg)")):
            axx.plot(a, [r["ref_" + q] for r in rows], "k-", label="CMD reference")
            axx.plot(a, [r[q] for r in rows], "o", mfc="none", label="graindem (jaeger)")
            axx.set_xlabel("incident angle (deg)")
            axx.set_title(lab, fontsize=9)
        axs[0].legend(fontsize=8)
        f.suptitle(f"Chung & Ooi test 4, {key[4:].replace('_', ' ')}", fontsize=10)
        f.tight_layout()
        f.savefig(os.path.join(out_dir, f"impact_{key}.png"), dpi=110)
        plt.close(f)
    plot_rolling(fig["rolling"], out_dir)
    conv = fig["convergence"]
    f, ax = plt.subplots(figsize=(8.6, 4.6))
    n = conv["steps_per_contact"]
    for law, mk in zip(LAWS, "sv^o"):
        if law in conv:
            ax.loglog(n, conv[law]["error"], mk + "-", label=f"{law}: vs reference")
            ax.loglog(n[1:], conv[law]["change"], mk + "--", mfc="none", color=ax.lines[-1].get_color(),
                      label=f"{law}: change from dt to dt/2")
    if "jaeger_low_speed" in conv:
        low = conv["jaeger_low_speed"]
        ax.loglog(low["steps_per_contact"], low["error"], "o:", color="k",
                  label=f"jaeger at {low['speed']} m/s: vs reference")
        n = sorted(set(n) | set(low["steps_per_contact"]))
    ax.set_xticks(n)
    ax.set_xticklabels([str(k) for k in n])
    ax.minorticks_off()
    ax.set_xlabel("steps per contact duration")
    ax.set_ylabel(r"max $|\psi_2 - \psi_2^{ref}|$ at $\psi_1$ = 1, 3")
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.02, 0.5))
    f.tight_layout()
    f.savefig(os.path.join(out_dir, "impact_dt_convergence.png"), dpi=110)
    plt.close(f)


def plot_rolling(roll, out_dir):
    """impact_rolling.png: the sampled decay of each law's rolling and spinning sphere against the
    closed forms (roll: run_suite's figures["rolling"])."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    f, axs = plt.subplots(1, 2, figsize=(10, 3.8))
    for axx, kind, lab in zip(axs, ("rolling", "twisting"), ("rolling: v / v0", "twisting: spin / spin0")):
        for r, mk in zip(roll[kind], "sv^o"):
            t_stop = r["start"] / r["ref_deceleration"]
            axx.plot(np.array(r["t"]) / t_stop, np.array(r["y"]) / r["start"], mk, ms=3, mfc="none", label=r["law"])
        r = roll[kind][0]
        t_stop = r["start"] / r["ref_deceleration"]
        axx.plot(np.array(r["t"]) / t_stop, np.array(r["ref_y"]) / r["start"], "k-", lw=1,
                 label="closed form (elastic phase, then the limit)")
        axx.set_xlabel("t / (spin or speed / deceleration at the limit)")
        axx.set_title(lab, fontsize=9)
    axs[0].legend(fontsize=8)
    f.suptitle("Rolling (Ai et al. type C) and twisting (Marshall) resistance: a sphere on a plane", fontsize=10)
    f.tight_layout()
    f.savefig(os.path.join(out_dir, "impact_rolling.png"), dpi=110)
    plt.close(f)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--json", required=True, help="output JSON file")
    ap.add_argument("--quick", action="store_true", help="a few speeds and angles (the test suite's size)")
    ap.add_argument("--out", default=None, help="folder for the PNGs (impact_*.png)")
    args = ap.parse_args(argv)
    started = provenance(__file__, argv)
    result = {"provenance": started,
              **run_suite(quick=args.quick, out_dir=args.out, log=lambda s: print(s, flush=True))}
    with open(args.json, "w") as fh:
        json.dump(result, fh, indent=1)
    bad = [k for k, c in result["cases"].items() if not c["error"] <= c["tolerance"]]
    print(f"{len(result['cases'])} cases, {len(bad)} above tolerance{': ' + ', '.join(bad) if bad else ''}; "
          f"{result['elapsed_s']:.0f} s")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
