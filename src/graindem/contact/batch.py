"""A batch of contacts advanced together by the batched kernel, sharing one history store."""

import numpy as np

from . import state as S
from .hertz import contact_params
from .laws import advance_contacts, law_id
from .store import HistoryStore


class ContactBatch:
    """n contacts of one law and one parameter record, stepped together."""

    def __init__(self, law, n, prm=None, store=None, **material):
        self.law_name = law
        self.law = law_id(law)
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
