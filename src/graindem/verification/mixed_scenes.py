"""Scenes of spheres and level-set grains in one run, and the references they are checked against:
the verification of runs that mix both kinds (tests/test_mixed_kinds.py,
test_mixed_cell_and_hertz.py and benchmarks/mixed_checks.py build the same scenes from here).

- `free_collision`, `momenta`: a sphere thrown at a spinning ellipsoid grain, no gravity or walls;
  linear momentum and angular momentum about a fixed point are conserved by equal and opposite forces.
- `pressed_sphere`, `continuum_area_force`: a sphere pressed into a fixed level-set sphere grain, and
  the area law's force on it as an integral over the grain's surface (quadrature, independent of
  the nodes).
- `settling_bed`: spheres settled in the pockets of a fixed bed of ellipsoids inside walls (statics:
  the bed and walls carry the spheres' weight).
- `walled_box`: ellipsoids and spheres thrown about in a walled box under gravity, with friction and
  dampers, area law (a lid moving down) or the "hertz_curvature" law (energy balance).
- `sphere_on_ellipsoid_tip`: a sphere pressed on the tip of a fixed ellipsoid grain with the
  "hertz_curvature" law, and Johnson's elliptical Hertz force of that contact.
- `oblique_collision`, `force_on_small`: a sphere thrown obliquely at a heavy spinning body, a sphere
  particle or a level-set sphere grain (the sphere engine's contact as the grain-sphere law's reference).
- `sheared_pair`, `sheared_cell`: a grain-sphere pair, and a few of each kind, in a periodic cell
  sheared in xy and compressed (translation invariance, Love-Weber stress, the cell's work), with
  the grains' area law or "hertz_curvature" law (`set_grain_law`).
"""

import math

import numpy as np
from scipy.integrate import quad

from graindem.contact.shape_references import ellipsoid_grain, hertz_elliptic
from graindem.engine import Simulation

__all__ = ["free_collision", "momenta", "pressed_sphere", "continuum_area_force", "settling_bed", "walled_box",
           "sphere_on_ellipsoid_tip", "oblique_collision", "force_on_small", "set_grain_law", "sheared_pair", "sheared_cell",
           "balance_tolerance", "CELL_SIZE", "SHEARED_ORIENTATION"]

# the sheared cell's heights must exceed two cutoffs at the largest tilt
CELL_SIZE = 7.0
SHEARED_ORIENTATION = np.array([math.cos(0.4), 0.0, math.sin(0.4) * 0.6, math.sin(0.4) * 0.8])
SHEARED_OFFSET = 1.15 * np.array([0.3, 1.0, 0.1]) / np.linalg.norm([0.3, 1.0, 0.1])
WALLS = (((-3.0, 0, 0), (1, 0, 0)), ((3.0, 0, 0), (-1, 0, 0)), ((0, -2.1, 0), (0, 1, 0)),
         ((0, 2.1, 0), (0, -1, 0)), ((0, 0, 0), (0, 0, 1)))


def momenta(sim, about):
    """Total linear momentum and angular momentum about `about` of both kinds."""
    g = sim.grains
    p = g.momentum() + (sim.mass[:, None] * sim.vel).sum(axis=0)
    L = (g.angular_momentum(about) + np.cross(sim.pos - about, sim.mass[:, None] * sim.vel).sum(axis=0)
         + (sim.inertia[:, None] * sim.omega).sum(axis=0))
    return p, L


def free_collision(ellipsoid, **kw):
    """A sphere (R = 0.5) thrown at a spinning, moving ellipsoid grain; friction and damping, no gravity."""
    sim = Simulation(mu=0.4, density=1.0, E=1e5, nu=0.3, dt=1e-3, **kw)
    sim.set_box((-6, -6, -6), (6, 6, 6))
    sim.set_grain_contact(1e3, law="area", damping_ratio=0.1)
    sim.add_grains(ellipsoid, [(0.0, 0.0, 0.0)], orientations=[(math.cos(0.3), 0.2, 0.5, 0.1)],
                   angular_velocities=[(0.0, 0.3, 0.1)], velocities=[(0.05, 0.0, -0.02)])
    sim.add_particles([(1.9, 0.35, 0.25)], 0.5, velocities=[(-0.6, 0.0, 0.05)], angular_velocities=[(0.0, 0.0, 2.0)])
    return sim


def continuum_area_force(k_s, R_grain, R_sphere, d):
    """F = k_s * integral over the grain sphere's surface inside the other sphere of the depth
    R_s - |x - c| times the normal's component along the line of centres (axisymmetric quadrature)."""
    D = R_grain + R_sphere - d  # distance between the centres

    def integrand(theta):  # theta: polar angle on the grain sphere from the line of centres
        x = R_grain * math.sin(theta)
        z = R_grain * math.cos(theta)
        rho = math.hypot(x, D - z)
        depth = R_sphere - rho
        if depth <= 0.0:
            return 0.0
        n_along = (D - z) / rho  # the sphere's gradient at the node, towards the grain's centre
        return k_s * depth * n_along * 2.0 * math.pi * R_grain ** 2 * math.sin(theta)
    # the cap: cos(theta_max) from |x - c| = R_sphere
    cmax = (R_grain ** 2 + D ** 2 - R_sphere ** 2) / (2.0 * R_grain * D)
    return quad(integrand, 0.0, math.acos(min(1.0, cmax)), limit=200)[0]


def pressed_sphere(grain, d, k_s=1e4, R_sphere=0.8):
    """A sphere of radius R_sphere placed at overlap d on a fixed level-set sphere grain of radius 1 at
    the origin, along an oblique direction; returns (Simulation after setup, unit direction)."""
    sim = Simulation(density=1.0, E=1e6, nu=0.3, mu=0.0, dt=1e-4, allow_unstable_dt=True)
    sim.set_box((-4, -4, -4), (4, 4, 4))
    sim.set_grain_contact(k_s, law="area")
    sim.add_grains(grain, [(0.0, 0.0, 0.0)], motion="fixed")
    e = np.array([0.3, -0.5, 0.8]) / np.linalg.norm([0.3, -0.5, 0.8])
    sim.add_particles([(1.0 + R_sphere - d) * e], R_sphere)
    sim.setup()
    return sim, e


def settling_bed(ellipsoid):
    """Four spheres dropped on a fixed 3 x 3 bed of lying ellipsoids (top at z = 1) inside four
    side walls and a floor, over the pockets where four ellipsoids meet (narrower than a sphere)."""
    sim = Simulation(mu=0.5, density=1.0, E=1e6, nu=0.3, gravity=(0.0, 0.0, -9.81), local_damping=0.3,
                     restitution=0.3)
    sim.set_box((-3.2, -2.3, -1.0), (3.2, 2.3, 4.0))
    for point, normal in WALLS:
        sim.add_wall(point, normal)
    sim.set_grain_contact(1e4, law="area", damping_ratio=0.3)
    bed = [(x, y, 0.5) for x in (-2.0, 0.0, 2.0) for y in (-1.4, 0.0, 1.4)]
    sim.add_grains(ellipsoid, bed, motion="fixed")
    sim.add_particles([(-1.05, -0.68, 1.5), (0.97, 0.72, 1.6), (1.02, -0.7, 1.7), (-0.96, 0.71, 1.8)], 0.4)
    return sim


BALANCE_TERMS = ("kinetic_energy", "elastic_normal_energy", "tangential_energy", "frictional_dissipation",
                 "viscous_dissipation", "gravity_work", "boundary_work")


def balance_tolerance(m, rel=3e-3):
    """The energy-balance tolerance of a mixed run's measure() `m`: `rel` times its largest term
    (the tolerance of grains alone, tests/test_levelset_cell)."""
    return rel * max(abs(m[k]) for k in BALANCE_TERMS)


def walled_box(ellipsoid, dt, law="area"):
    """Three ellipsoids and spheres thrown about in a walled box under gravity, with friction and
    contact dampers: every kind pair and the walls touch. law "area": six spheres with the default
    sphere law and a lid moving down onto them; law "hertz_curvature": five spheres, Jäger's law for
    the sphere pairs."""
    hertz = law == "hertz_curvature"
    sim = Simulation(mu=0.5, density=1.0, E=1e6, nu=0.3, gravity=(0.0, 0.0, -9.81), restitution=0.5,
                     energy_accounting=True, dt=dt, **({"law": "jaeger"} if hertz else {}))
    sim.set_box((-3.2, -2.3, -0.5), (3.2, 2.3, 4.0))
    for point, normal in WALLS:
        sim.add_wall(point, normal)
    if hertz:
        sim.set_grain_contact(law="hertz_curvature", damping_ratio=0.2)
    else:
        lid = sim.add_wall((0, 0, 3.3), (0, 0, -1))
        sim.set_wall_velocity(lid, (0, 0, -1.2))
        sim.set_grain_contact(1e4, law="area", damping_ratio=0.2)
    sim.add_grains(ellipsoid, [(-1.6, -0.8, 0.6), (0.2, 0.9, 0.7), (1.7, -0.6, 0.8)],
                   orientations=[(1, 0, 0, 0), (math.cos(0.4), 0, 0, math.sin(0.4)),
                                 (math.cos(0.2), math.sin(0.2), 0, 0)],
                   velocities=[(0.5, 0.2, 0), (-0.3, -0.2, 0.0), (-0.4, 0.3, 0.1)],
                   angular_velocities=[(0, 0, 1.0), (0.5, 0, 0), (0, 0.5, 0)])
    centres = [(-1.5, -0.7, 1.6), (-0.6, 0.8, 1.9), (0.4, 0.8, 1.7), (1.6, -0.5, 1.8), (0.5, -1.2, 2.3)]
    velocities = [(0.3, 0, 0), (0.2, -0.4, 0), (0, 0.3, -0.5), (-0.5, 0, 0), (0.3, 0.6, 0)]
    if not hertz:
        centres.append((-1.0, 0.2, 2.6))
        velocities.append((-0.2, -0.1, 0))
    sim.add_particles(centres, 0.4, velocities=velocities)
    return sim


def sphere_on_ellipsoid_tip(delta, E=1e5, nu=0.3, axes=(1.0, 2.0, 1.0), r_s=2.0):
    """A sphere of radius r_s pressed by delta on the x tip of a fixed ellipsoid grain (exact signed
    distance, h = a/12) with the "hertz_curvature" law. Returns (Simulation after setup, Johnson's
    elliptical Hertz force P of the contact: relative curvatures the tip's plus 1/r_s in both
    directions)."""
    a, b, c = axes
    grain, centre = ellipsoid_grain(a, b, c, spacing=a / 12)
    A, B = 0.5 * (a / (b * b) + 1.0 / r_s), 0.5 * (a / (c * c) + 1.0 / r_s)
    e_star = E / (2.0 * (1.0 - nu * nu))
    sim = Simulation(mu=0.3, density=1.0, E=E, nu=nu, law="jaeger", dt=1e-5)
    sim.set_box((-6, -6, -6), (6, 6, 6))
    sim.set_grain_contact(law="hertz_curvature")
    sim.add_grains(grain, [(0.0, 0.0, 0.0)], motion="fixed")
    tip = centre + (a, 0.0, 0.0)
    sim.add_particles([tip + (r_s - delta, 0.0, 0.0)], r_s)
    sim.setup()
    return sim, hertz_elliptic(A, B, e_star, delta)["P"]


def oblique_collision(big, R_big, R_small, E=1e5, nu=0.3):
    """A sphere of radius R_small thrown obliquely, spinning, at a heavy spinning body (a sphere
    particle when big is None, else the level-set grain `big` of radius R_big); returns the Simulation."""
    sim = Simulation(mu=0.3, density=1.0, E=E, nu=nu, law="jaeger", dt=2e-5)
    heavy = sim.add_material(E, nu, 0.3, 200.0)
    sim.set_box((-4, -4, -4), (4, 4, 4))
    e = np.array([0.6, 0.3, -0.2]) / np.linalg.norm([0.6, 0.3, -0.2])
    kw = dict(velocities=[(0.02, 0.0, -0.01)], angular_velocities=[(0.1, -0.3, 0.2)], material=heavy)
    if big is None:
        sim.add_particles([(0.0, 0.0, 0.0)], R_big, **kw)
    else:
        sim.set_grain_contact(law="hertz_curvature")
        sim.add_grains(big, [(0.0, 0.0, 0.0)], **kw)
    start = (R_big + R_small + 0.01) * e
    sim.add_particles([start], R_small, velocities=[-0.6 * e + (0.0, 0.25, 0.1)], angular_velocities=[(3.0, 1.0, -2.0)])
    sim.setup()
    return sim


def force_on_small(sim):
    """The contact force on the small sphere of `oblique_collision`: (normal along the centres,
    tangential) vectors."""
    if sim.grains is None:
        c = sim.contact_arrays()
        if len(c["N"]) == 0:
            return np.zeros(3), np.zeros(3)
        # the force on j is N n - T (n from i to j; T in Mindlin's sign convention)
        sign = 1.0 if c["j"][0] == 1 else -1.0
        fn = sign * c["N"][0] * c["normal"][0]
        ft = -sign * c["T"][0]
    else:
        net = sim.grains.contact_network()
        if len(net["i"]) == 0:
            return np.zeros(3), np.zeros(3)
        f = -net["force"][0]  # the force on the grain, reversed
        n = sim.pos[0] - sim.grains.pos[0]
        n /= np.linalg.norm(n)
        fn = (f @ n) * n
        ft = f - fn
    return fn, ft


def set_grain_law(sim, law, stiffness, damping_ratio):
    """The grains' contact law: the area law of `stiffness`, or the "hertz_curvature" law (from the
    materials' E and nu) with Jäger's tangential law."""
    if law == "area":
        sim.set_grain_contact(stiffness, law="area", damping_ratio=damping_ratio)
    else:
        sim.set_grain_contact(law="hertz_curvature", tangential="jaeger", damping_ratio=damping_ratio)


def sheared_pair(grain, centre, law="area", shear=5.0, squeeze=-2.0):
    """One grain and one sphere in contact, no gravity, in a cell sheared in xy and compressed in z.
    The Hertz law's bodies are softer (E = 2e3, not 1e5) so that the pair stays in contact over the
    runs, as it does with the area law."""
    L = CELL_SIZE
    sim = Simulation(mu=0.4, density=1.0, E=1e5 if law == "area" else 2e3, nu=0.3, dt=1e-3, allow_unstable_dt=True)
    sim.set_box((0, 0, 0), (L, L, L), periodic=(True, True, True))
    set_grain_law(sim, law, 1e3, 0.2)
    c = np.asarray(centre, dtype=float)
    sim.add_grains(grain, [c], orientations=np.array([SHEARED_ORIENTATION]), velocities=[(0.05, 0.1, 0.0)],
                   angular_velocities=[(0.0, 0.0, 0.5)])
    sim.add_particles([c + SHEARED_OFFSET], 0.5, velocities=[(-0.05, -0.1, 0.02)],
                      angular_velocities=[(0.3, 0.0, 0.0)])
    sim.control_shear("xy", shear)
    sim.control_axis(2, strain_rate=squeeze)
    return sim


def sheared_cell(grain, dt, law="area"):
    """Three ellipsoids and six spheres colliding with friction and dampers in a fully periodic
    cell compressed along x and z and sheared in xy: every kind pair touches."""
    L = CELL_SIZE
    q = SHEARED_ORIENTATION
    sim = Simulation(mu=0.4, density=1.0, E=1e5, nu=0.3, dt=dt, allow_unstable_dt=True, energy_accounting=True,
                     restitution=0.5)
    sim.set_box((0, 0, 0), (L, L, L), periodic=(True, True, True))
    set_grain_law(sim, law, 2e3, 0.1)
    sim.add_grains(grain, [(1.5, 1.5, 1.5), (3.9, 1.5, 1.7), (2.0, 4.5, 5.0)], orientations=np.array([q, q, q]),
                   velocities=[(0.2, 0.0, -0.1), (-0.3, 0.0, 0.0), (0.0, -0.2, 0.3)])
    sim.add_particles([(1.5, 3.2, 1.5), (4.4, 3.0, 4.1), (2.2, 6.0, 5.0), (5.5, 5.5, 2.0), (6.2, 5.3, 3.2),
                       (3.5, 4.2, 2.6)], 0.6,
                      velocities=[(0.0, -0.3, 0.0), (0.0, -0.3, 0.0), (0.0, 0.3, 0.0), (0.2, 0.1, 0.3),
                                  (-0.2, 0.1, -0.2), (0.1, 0.0, 0.0)])
    sim.control_axis(0, strain_rate=-0.15)
    sim.control_axis(2, strain_rate=-0.2)
    sim.control_shear("xy", 0.4)
    return sim
