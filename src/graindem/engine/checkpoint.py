"""Checkpoints of a `Simulation`: every array that influences the next step, exactly.

save(sim, path, extra=None) writes the state through `graindem.io.checkpoint` (HDF5, checksummed,
atomic); load(path) returns a Simulation that continues bit for bit as the saved one would have.
`extra` (JSON-able) is kept in the metadata under "extra" (e.g. a scenario's own progress).
"""

from ..io.checkpoint import load_checkpoint, save_checkpoint
from .simulation import Simulation


def save(sim, path, extra=None):
    arrays, meta = sim.state_dict()
    meta = dict(meta)
    meta["kind"] = "graindem.engine.Simulation"
    meta["extra"] = extra
    return save_checkpoint(path, arrays, meta)


def load(path, verbose=False):
    """(Simulation, extra) from a checkpoint written by `save`."""
    arrays, meta = load_checkpoint(path)
    if meta.get("kind") != "graindem.engine.Simulation":
        raise ValueError(f"{path} is not a graindem engine checkpoint (kind {meta.get('kind')!r})")
    return Simulation.from_state(arrays, meta, verbose=verbose), meta.get("extra")
