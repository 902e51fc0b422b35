"""Contact frames: quaternion algebra, rigid tumbling and twirling, and contact-point kinematics.

References are independent of the code under test: scipy's Rotation (exact rotations of the
rigid pair) and hand algebra (a rigid body has zero relative velocity at any material point).
"""

import math

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from graindem.contact import frames as F
from graindem.contact import state as S
from graindem.contact.hertz import contact_params
from graindem.contact.laws import LAW_IDS, contact_step
from graindem.contact.store import HistoryStore

RNG = np.random.default_rng(7)


def _unit(v):
    v = np.asarray(v, float)
    return v / np.linalg.norm(v)


@pytest.mark.parametrize("n", [(0, 0, 1), (0, 0, -1), (1, 0, 0), (0.3, -0.5, 0.8), (1e-9, 0, -1)])
def test_frame_from_normal_is_orthonormal_with_z_on_the_normal(n):
    n = _unit(n)
    cq = np.zeros((1, 4))
    F.frame_init(cq, 0, *n)
    assert abs(np.linalg.norm(cq[0]) - 1.0) < 1e-14
    ez = np.array(F.from_frame(cq, 0, 0.0, 0.0, 1.0))
    ex = np.array(F.from_frame(cq, 0, 1.0, 0.0, 0.0))
    ey = np.array(F.from_frame(cq, 0, 0.0, 1.0, 0.0))
    np.testing.assert_allclose(ez, n, atol=1e-14)
    np.testing.assert_allclose(np.array(F.quat_normal(*cq[0])), n, atol=1e-14)
    # right-handed orthonormal triad
    np.testing.assert_allclose(np.cross(ex, ey), ez, atol=1e-14)
    assert abs(ex @ ey) < 1e-14 and abs(ex @ ez) < 1e-14


def test_to_frame_inverts_from_frame_and_matches_scipy():
    for _ in range(20):
        q = _unit(RNG.normal(size=4))
        cq = q.reshape(1, 4).copy()
        v = RNG.normal(size=3)
        g = np.array(F.from_frame(cq, 0, *v))
        ref = Rotation.from_quat([q[1], q[2], q[3], q[0]]).apply(v)  # scipy stores (x, y, z, w)
        np.testing.assert_allclose(g, ref, atol=1e-13)
        np.testing.assert_allclose(np.array(F.to_frame(cq, 0, *g)), v, atol=1e-13)


def _tumble(steps_per_turn, turns, omega, n0):
    """Turn a contact frame with the exact rigid motion n(t) = R(t) n0 and spin omega."""
    omega = np.asarray(omega, float)
    dt = 2.0 * math.pi / np.linalg.norm(omega) / steps_per_turn
    cq = np.zeros((1, 4))
    F.frame_init(cq, 0, *n0)
    local = np.array([2.0, -1.0, 0.0])
    g0 = np.array(F.from_frame(cq, 0, *local))
    nsteps = steps_per_turn * turns
    for k in range(1, nsteps + 1):
        n = Rotation.from_rotvec(omega * dt * k).apply(n0)
        F.frame_update(cq, 0, *n, *omega, dt)
    ref = Rotation.from_rotvec(omega * dt * nsteps).apply(g0)
    g = np.array(F.from_frame(cq, 0, *local))
    return np.linalg.norm(g - ref) / np.linalg.norm(g0), cq, n


def test_frame_follows_rigid_rotation_over_many_turns_to_second_order():
    # omega has components along and across the normal: the pair tumbles and twirls at once.
    omega = (1.0, 2.0, 0.5)
    n0 = _unit((0.3, -0.5, 0.8))
    err400, cq, n = _tumble(400, 10, omega, n0)
    err800, _, _ = _tumble(800, 10, omega, n0)
    # The tilt + twirl split of a finite rotation is exact to second order per unit time:
    # after 10 turns at 400 steps per turn the frame is 1e-4 off (tolerance 2e-4), and halving
    # the step divides the error by ~4.
    assert err400 < 2e-4
    assert 3.5 < err400 / err800 < 4.5
    # the frame's normal is the pair's normal to round-off, however long the run
    np.testing.assert_allclose(np.array(F.quat_normal(*cq[0])), n, atol=1e-13)
    assert abs(np.linalg.norm(cq[0]) - 1.0) < 1e-14


def test_contact_point_velocity_vanishes_for_rigid_motion():
    for _ in range(20):
        ri, rj = RNG.uniform(0.5e-3, 2e-3, 2)
        delta = 0.01 * min(ri, rj)
        n = _unit(RNG.normal(size=3))
        xi = RNG.normal(size=3) * 1e-3
        xj = xi + (ri + rj - delta) * n
        V = RNG.normal(size=3)
        W = RNG.normal(size=3) * 100.0
        vi = V + np.cross(W, xi)
        vj = V + np.cross(W, xj)
        rel = np.array(F.contact_point_velocity(*vi, *W, *vj, *W, *n, ri, rj, delta))
        assert np.linalg.norm(rel) < 1e-12 * (np.linalg.norm(vi) + np.linalg.norm(W) * ri)
        # a relative translation across the normal shows up unchanged
        u = np.cross(n, _unit(RNG.normal(size=3)))
        rel2 = np.array(F.contact_point_velocity(*vi, *W, *(vj + u), *W, *n, ri, rj, delta))
        np.testing.assert_allclose(rel2, u, atol=1e-12)


@pytest.mark.parametrize("law", ["mindlin", "jaeger"])
def test_loaded_contact_keeps_its_force_while_the_pair_tumbles_and_twirls(law):
    """Load a contact tangentially, then carry the pair through five rigid turns: the law sees
    zero shift (kinematics) in a frame that turns with the pair, so |T| stays exactly and T stays
    fixed relative to the pair to the frame's second-order accuracy."""
    R = 1e-3
    prm = contact_params(R, R, 70e9, 0.25, 0.5)
    fs = np.zeros((1, S.N_FSTATE))
    ist = np.zeros((1, S.N_ISTATE), dtype=np.int64)
    ist[0, S.I_HEAD] = -1
    store = HistoryStore(4096)
    lid = LAW_IDS[law]
    delta = 2e-6
    n0 = _unit((0.2, 0.9, -0.4))
    cq = np.zeros((1, 4))
    F.frame_init(cq, 0, *n0)
    for k in range(20):  # tangential loading along a global direction in the contact plane
        store.ensure_free(1)
        ds = np.array(F.to_frame(cq, 0, *(np.cross(n0, (1.0, 0.0, 0.0)) * 1.5e-8)))
        contact_step(lid, prm, fs, ist, 0, delta, ds[0], ds[1], store.pts, store.nxt, store.meta)
    T0_local = fs[0, S.F_TX:S.F_TY + 1].copy()
    assert np.linalg.norm(T0_local) > 0.2 * 0.5 * fs[0, S.F_N]
    T0 = np.array(F.from_frame(cq, 0, T0_local[0], T0_local[1], 0.0))
    omega = np.array([300.0, -150.0, 500.0])
    spt = 500
    dt = 2.0 * math.pi / np.linalg.norm(omega) / spt
    ri = rj = R
    for k in range(1, 5 * spt + 1):
        rot = Rotation.from_rotvec(omega * dt * k)
        n = rot.apply(n0)
        xj = (ri + rj - delta) * n
        vi = np.zeros(3)
        vj = np.cross(omega, xj)
        F.frame_update(cq, 0, *n, *omega, dt)
        rel = np.array(F.contact_point_velocity(*vi, *omega, *vj, *omega, *n, ri, rj, delta))
        ds = np.array(F.to_frame(cq, 0, *(rel * dt)))
        store.ensure_free(1)
        contact_step(lid, prm, fs, ist, 0, delta, ds[0], ds[1], store.pts, store.nxt, store.meta)
    T_local = fs[0, S.F_TX:S.F_TY + 1]
    np.testing.assert_allclose(np.linalg.norm(T_local), np.linalg.norm(T0_local), rtol=1e-9)
    T = np.array(F.from_frame(cq, 0, T_local[0], T_local[1], 0.0))
    ref = rot.apply(T0)
    assert np.linalg.norm(T - ref) < 2e-4 * np.linalg.norm(T0)
