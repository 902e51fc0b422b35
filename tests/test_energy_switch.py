"""The energy-accounting switch prm[P_ENERGY] of laws.contact_step.

Reference: the default run (P_ENERGY = 1) on the same movements. Skipping the bookkeeping must
leave the mechanics untouched (forces, law state, histories bit for bit, since the law kernels are
the same code on the same inputs) and must leave the counters F_WORK, F_DISS at exactly 0; a
parameter record too short to hold the slot (an older checkpoint) must count as before.
"""

import numpy as np
import pytest

from graindem.contact import ContactBatch
from graindem.contact import state as S
from graindem.contact.hertz import contact_params
from graindem.contact.laws import LAW_IDS, TANGENTIAL_LAWS, advance_contacts
from graindem.contact.store import HistoryStore
from graindem.demo.contact import MATERIAL, DemLikeMovements

N_CONTACTS = 300
STEPS = 150
MECHANICS = [k for k in range(S.N_FSTATE) if k not in (S.F_WORK, S.F_DISS)]


def _movements(prm):
    moves = DemLikeMovements(N_CONTACTS, prm[S.P_RSTAR], prm[S.P_MU], prm[S.P_KAPPA], seed=5)
    return [moves.next_step() for _ in range(STEPS)]


@pytest.mark.parametrize("law", TANGENTIAL_LAWS)
def test_skipping_energy_keeps_mechanics_and_counts_nothing(law):
    on = ContactBatch(law, N_CONTACTS, **MATERIAL)
    off = ContactBatch(law, N_CONTACTS, **MATERIAL, energy=False)
    assert on.prm[S.P_ENERGY] == 1.0 and off.prm[S.P_ENERGY] == 0.0
    for delta, ds in _movements(on.prm):
        on.step(delta, ds)
        off.step(delta, ds)
    np.testing.assert_array_equal(off.fs[:, MECHANICS], on.fs[:, MECHANICS])
    np.testing.assert_array_equal(off.ist, on.ist)
    assert np.all(off.fs[:, S.F_WORK] == 0.0) and np.all(off.fs[:, S.F_DISS] == 0.0)
    # the default run did count something (else the comparison above proves little)
    assert np.any(on.fs[:, S.F_WORK] != 0.0)
    if law == "jaeger":
        assert on.ist[:, S.I_LEN].max() > 2
        live = on.ist[:, S.I_HEAD] >= 0
        np.testing.assert_array_equal(on.ist[live, S.I_HEAD], off.ist[live, S.I_HEAD])


def test_short_parameter_record_counts_energy():
    """A record without the P_ENERGY slot (written before it existed) gives the default behaviour."""
    full = ContactBatch("jaeger", N_CONTACTS, **MATERIAL)
    short_prm = full.prm[:S.P_ENERGY].copy()
    fs = np.zeros((N_CONTACTS, S.N_FSTATE))
    ist = np.zeros((N_CONTACTS, S.N_ISTATE), dtype=np.int64)
    ist[:, S.I_HEAD] = -1
    store = HistoryStore(4 * N_CONTACTS)
    for delta, ds in _movements(full.prm):
        full.step(delta, ds)
        start = 0
        while start < N_CONTACTS:
            store.ensure_free(N_CONTACTS - start)
            start = advance_contacts(LAW_IDS["jaeger"], short_prm, fs, ist, delta, ds,
                                     store.pts, store.nxt, store.meta, start)
    np.testing.assert_array_equal(fs, full.fs)


@pytest.mark.parametrize("bad", [2, -1, 0.5, "yes", None])
def test_energy_flag_must_be_boolean(bad):
    with pytest.raises(ValueError, match="energy"):
        contact_params(1e-3, 1e-3, 70e9, 0.25, 0.5, energy=bad)
