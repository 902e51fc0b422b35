"""The engine's own frame update (contact.rows.turn_frame, one square root fewer than
contact.frames.frame_update; with one_product_fewer also one quaternion product fewer): the same
rotation to round-off in both forms, the same second-order objectivity against the exact rigid
rotation (scipy), unit length kept without the full normalisation."""

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from graindem.contact import frames as F
from graindem.contact.rows import turn_frame

FORMS = pytest.mark.parametrize("fewer", [False, True], ids=["product", "one-product-fewer"])


def _unit(v):
    v = np.asarray(v, dtype=float)
    return v / np.linalg.norm(v)


def _engine_update(fewer):
    return lambda cq, c, *args: turn_frame(cq, c, *args, fewer)


def _tumble(update, steps_per_turn, turns, omega, n0):
    omega = np.asarray(omega, dtype=float)
    dt = 2.0 * np.pi / np.linalg.norm(omega) / steps_per_turn
    cq = np.zeros((1, 4))
    F.frame_init(cq, 0, *n0)
    local = np.array([2.0, -1.0, 0.0])
    g0 = np.array(F.from_frame(cq, 0, *local))
    nsteps = steps_per_turn * turns
    for k in range(1, nsteps + 1):
        n = Rotation.from_rotvec(omega * dt * k).apply(n0)
        update(cq, 0, *n, *omega, dt)
    ref = Rotation.from_rotvec(omega * dt * nsteps).apply(g0)
    g = np.array(F.from_frame(cq, 0, *local))
    return np.linalg.norm(g - ref) / np.linalg.norm(g0), cq, n


@FORMS
def test_engine_frame_update_is_objective_to_second_order_like_the_reference_update(fewer):
    omega = (1.0, 2.0, 0.5)  # tumbling and twirling at once
    n0 = _unit((0.3, -0.5, 0.8))
    err400, cq, n = _tumble(_engine_update(fewer), 400, 10, omega, n0)
    err800, _, _ = _tumble(_engine_update(fewer), 800, 10, omega, n0)
    ref400, cq_ref, _ = _tumble(F.frame_update, 400, 10, omega, n0)
    # the same bound and order as contact.frames (tests/test_frames.py): 2e-4 after 10 turns, error ~ dt^2
    assert err400 < 2e-4
    assert 3.5 < err400 / err800 < 4.5
    # and the same rotation: after 4000 updates the two frames agree to round-off
    assert abs(err400 - ref400) < 1e-12
    np.testing.assert_allclose(cq[0], cq_ref[0], atol=1e-12)
    # the Newton step keeps unit length as well as the full normalisation does
    assert abs(np.linalg.norm(cq[0]) - 1.0) < 1e-14
    np.testing.assert_allclose(np.array(F.quat_normal(*cq[0])), n, atol=1e-13)


@FORMS
def test_engine_frame_update_of_random_steps_matches_the_reference_step(fewer):
    rng = np.random.default_rng(11)
    for _ in range(300):
        n_old = _unit(rng.normal(size=3))
        cq = np.zeros((2, 4))
        F.frame_init(cq, 0, *n_old)
        F.frame_update(cq, 0, *n_old, *(n_old * rng.normal()), 1.0)   # a generic twist about n
        cq[1] = cq[0]
        # up to 0.3 rad of tilt and a spin turning the pair by up to ~0.1 rad: the Taylor and the
        # cos/sin branches both run
        n_new = _unit(n_old + 0.15 * rng.normal(size=3))
        spin = rng.normal(size=3) * 10.0 ** rng.uniform(-3, 1)
        dt = 0.01
        w = turn_frame(cq, 0, *n_new, *spin, dt, fewer)
        F.frame_update(cq, 1, *n_new, *spin, dt)
        # exact algebra, different rounding: a few ulps
        np.testing.assert_allclose(cq[0], cq[1], atol=4e-15)
        np.testing.assert_array_equal(np.array(w), cq[0])


@FORMS
def test_engine_frame_update_starts_afresh_when_the_normal_flips(fewer):
    cq = np.zeros((1, 4))
    n = _unit((0.2, 0.1, -0.9))
    F.frame_init(cq, 0, *n)
    w = turn_frame(cq, 0, *(-n), 0.0, 0.0, 0.0, 1e-7, fewer)
    np.testing.assert_allclose(np.array(F.quat_normal(*w)), -n, atol=1e-15)
