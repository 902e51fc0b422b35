"""Contact mechanics: Hertz normal force and the tangential laws, history store and contact frames."""

from .batch import ContactBatch
from .hertz import contact_params
from .laws import TANGENTIAL_LAWS
from .single import SingleContact
from .store import HistoryStore

__all__ = ["SingleContact", "TANGENTIAL_LAWS", "ContactBatch", "HistoryStore", "contact_params"]
