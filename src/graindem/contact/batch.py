"""A batch of contacts advanced together by the batched kernel, sharing one history store."""

import numpy as np

from . import state as S
from .hertz import contact_params
from .laws import advance_contacts, law_id, tangential_energies
from .store import HistoryStore


class ContactBatch:
    """n contacts of one law and one parameter record, stepped together."""

    def __init__(self, law, n, prm=None, store=None, **material):
        self.law_name = law
        self.law = law_id(law)
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
            raise ValueError(f"n must be an integer >= 0 (number of contacts), got {n!r}")
        if prm is not None:
            prm = np.ascontiguousarray(prm, dtype=np.float64)
            if prm.shape != (S.N_PARAM,) or not np.all(np.isfinite(prm)):
                raise ValueError(f"prm must be a finite parameter record of shape ({S.N_PARAM},) from contact_params")
        self.prm = prm if prm is not None else contact_params(**material)
        self.n = int(n)
        self.fs = np.zeros((self.n, S.N_FSTATE))
        self.ist = np.zeros((self.n, S.N_ISTATE), dtype=np.int64)
        self.ist[:, S.I_HEAD] = -1
        self.store = store if store is not None else HistoryStore(max(64, 4 * self.n))

    def step(self, delta, ds):
        """Advance every contact by one movement: total overlaps `delta` (n,), shift increments `ds` (n, 2)."""
        delta = np.ascontiguousarray(delta, dtype=np.float64)
        ds = np.ascontiguousarray(ds, dtype=np.float64)
        if delta.shape != (self.n,) or ds.shape != (self.n, 2):
            raise ValueError(f"delta must have shape ({self.n},) and ds ({self.n}, 2); got {delta.shape}, {ds.shape}")
        if not np.isfinite(delta).all():
            raise ValueError("delta must be finite (total overlaps; a value <= 0 marks a separated contact)")
        if not np.isfinite(ds).all():
            raise ValueError("ds must be finite (shift increments in the contact frame)")
        start = 0
        while start < self.n:
            self.store.ensure_free(self.n - start)
            st = self.store
            start = advance_contacts(self.law, self.prm, self.fs, self.ist, delta, ds,
                                     st.pts, st.nxt, st.meta, start)
        return self.fs[:, S.F_N], self.fs[:, S.F_TX:S.F_TY + 1]

    @property
    def normal_force(self):
        return self.fs[:, S.F_N]

    @property
    def tangential_force(self):
        return self.fs[:, S.F_TX:S.F_TY + 1]

    def history_lengths(self):
        return self.ist[:, S.I_LEN].copy()

    def tangential_energy(self):
        """Stored tangential elastic energy of each contact (n,), J (see `graindem.contact.energy`)."""
        out = np.zeros(self.n)
        st = self.store
        tangential_energies(self.law, self.prm, self.fs, self.ist, st.pts, st.nxt, out)
        return out

    def elastic_energy(self):
        """Stored elastic energy of each contact, normal (2/5 N delta) + tangential (n,), J."""
        delta = np.maximum(self.fs[:, S.F_DELTA], 0.0)
        return 0.4 * self.fs[:, S.F_N] * delta + self.tangential_energy()

    @property
    def dissipation(self):
        """Cumulative frictional dissipation of each contact (n,), J."""
        return self.fs[:, S.F_DISS]

    @property
    def tangential_work(self):
        """Cumulative tangential work of each contact (n,), J."""
        return self.fs[:, S.F_WORK]
