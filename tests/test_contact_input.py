"""Bad input to SingleContact and ContactBatch raises ValueError naming the parameter, before any
work is done (the state is left untouched). Reference: the allowed ranges of the API docs and of
shared/notes/contact-mechanics.md (R > 0, E > 0, -1 < nu < 0.5, mu >= 0, xi >= 0, finite numbers).
"""

import math

import numpy as np
import pytest

from graindem.contact import ContactBatch, SingleContact
from graindem.contact import state as S

GOOD = dict(R1=1e-3, R2=2e-3, E=70e9, nu=0.25, mu=0.4, xi=0.0, kt_linear=0.0)
NAN = math.nan

BAD_MATERIAL = [
    ("R1", 0.0), ("R1", -1e-3), ("R1", NAN), ("R1", math.inf),
    ("R2", 0.0), ("R2", -1e-3), ("R2", NAN), ("R2", -math.inf),
    ("E", 0.0), ("E", -70e9), ("E", NAN), ("E", math.inf),
    ("nu", -1.0), ("nu", 0.5), ("nu", 0.7), ("nu", -3.0), ("nu", NAN),
    ("mu", -0.1), ("mu", NAN), ("mu", math.inf),
    ("xi", -0.5), ("xi", NAN),
    ("kt_linear", -1.0), ("kt_linear", NAN),
]


@pytest.mark.parametrize("name, value", BAD_MATERIAL)
def test_single_contact_rejects_bad_material(name, value):
    with pytest.raises(ValueError, match=rf"\b{name}\b"):
        SingleContact("mindlin", **{**GOOD, name: value})


@pytest.mark.parametrize("name, value", BAD_MATERIAL)
def test_contact_batch_rejects_bad_material(name, value):
    with pytest.raises(ValueError, match=rf"\b{name}\b"):
        ContactBatch("mindlin", 3, **{**GOOD, name: value})


def test_allowed_edges_are_accepted():
    """The open/closed ends of the ranges: mu = 0, xi = 0, nu just inside (-1, 0.5), a plane R2 = inf."""
    SingleContact("linear", **{**GOOD, "mu": 0.0, "nu": 0.4999, "R2": math.inf})
    SingleContact("linear", **{**GOOD, "nu": -0.9999})


@pytest.mark.parametrize("law", ["frictionless", "", None, "Mindlin", 2])
def test_unknown_law_names(law):
    with pytest.raises(ValueError, match=r"\blaw\b"):
        SingleContact(law, **GOOD)
    with pytest.raises(ValueError, match=r"\blaw\b"):
        ContactBatch(law, 2, **GOOD)


@pytest.mark.parametrize("shift", [[1e-9], [1e-9, 0.0, 0.0], [[1e-9, 0.0]], 1e-9, np.zeros((2, 2))])
def test_shift_must_be_2_vector(shift):
    c = SingleContact("mindlin", **GOOD)
    with pytest.raises(ValueError, match=r"\bshift\b"):
        c.step(1e-6, shift)


@pytest.mark.parametrize("shift", [[NAN, 0.0], [0.0, math.inf]])
def test_shift_must_be_finite(shift):
    c = SingleContact("mindlin", **GOOD)
    with pytest.raises(ValueError, match=r"\bshift\b"):
        c.step(1e-6, shift)


@pytest.mark.parametrize("overlap", [NAN, math.inf, -math.inf])
def test_overlap_must_be_finite(overlap):
    c = SingleContact("md_incremental", **GOOD)
    c.step(1e-6, [1e-8, 0.0])
    before = c.fs.copy()
    with pytest.raises(ValueError, match=r"\boverlap\b"):
        c.step(overlap, [2e-8, 0.0])
    np.testing.assert_array_equal(c.fs, before)  # rejected before any work


@pytest.mark.parametrize("n", [-1, 2.5, "3", True])
def test_batch_size_must_be_non_negative_integer(n):
    with pytest.raises(ValueError, match=r"\bn\b"):
        ContactBatch("linear", n, **GOOD)


def test_batch_prm_record_checked():
    with pytest.raises(ValueError, match=r"\bprm\b"):
        ContactBatch("linear", 2, prm=np.zeros(3))
    bad = SingleContact("linear", **GOOD).prm.copy()
    bad[S.P_MU] = NAN
    with pytest.raises(ValueError, match=r"\bprm\b"):
        ContactBatch("linear", 2, prm=bad)


@pytest.mark.parametrize("delta, ds, name", [
    (np.array([1e-6, NAN]), np.zeros((2, 2)), "delta"),
    (np.array([1e-6, math.inf]), np.zeros((2, 2)), "delta"),
    (np.array([1e-6, 1e-6]), np.array([[0.0, NAN], [0.0, 0.0]]), "ds"),
    (np.array([1e-6, 1e-6]), np.array([[0.0, 0.0], [-math.inf, 0.0]]), "ds"),
    (np.array([1e-6, 1e-6, 1e-6]), np.zeros((2, 2)), "delta"),
    (np.array([1e-6, 1e-6]), np.zeros((2, 3)), "ds"),
    (np.array([1e-6, 1e-6]), np.zeros(4), "ds"),
])
def test_batch_step_rejects_bad_movement(delta, ds, name):
    b = ContactBatch("mindlin", 2, **GOOD)
    b.step(np.full(2, 1e-6), np.full((2, 2), 1e-8))
    before = b.fs.copy()
    with pytest.raises(ValueError, match=rf"\b{name}\b"):
        b.step(delta, ds)
    np.testing.assert_array_equal(b.fs, before)
