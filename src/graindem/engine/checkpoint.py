"""Checkpoints of a `Simulation`: every array that influences the next step, exactly.

save(sim, path, extra=None) writes the state through `graindem.io.checkpoint` (HDF5, checksummed,
atomic); load(path) returns a Simulation that continues bit for bit as the saved one would have.
`extra` (JSON-able) is kept in the metadata under "extra" (e.g. a scenario's own progress).

A state saved right after the kernel reported divergence holds a half-finished step (metadata
"diverged": true, as in the diverged.h5 a failing run writes): it can be loaded for inspection,
but load(path, for_restart=True) refuses it.

Under several MPI ranks (graindem.parallel) every rank holds the whole state between runs and rank
0 writes it: the file is the serial format, and load() on any number of ranks continues it.
"""

from pathlib import Path

from ..io.checkpoint import load_checkpoint, save_checkpoint
from ..core import layout as K
from ..parallel.world import world
from .simulation import Simulation


def save(sim, path, extra=None):
    arrays, meta = sim.state_dict()
    meta = dict(meta)
    meta["kind"] = "graindem.engine.Simulation"
    meta["extra"] = extra
    out = getattr(sim, "out", None)
    meta["diverged"] = bool(out is not None and int(out[K.OUT_STATUS]) == K.STATUS_DIVERGED)
    comm = world()
    if comm is None:
        return save_checkpoint(path, arrays, meta)
    # under MPI every rank holds the whole state (gathered after each run): rank 0 writes it
    if comm.Get_rank() == 0:
        save_checkpoint(path, arrays, meta)
    comm.Barrier()
    return path


def load(path, verbose=False, for_restart=False):
    """(Simulation, extra) from a checkpoint written by `save`. for_restart=True refuses the state
    of a diverged step (see the module docstring)."""
    arrays, meta = load_checkpoint(path)
    if meta.get("kind") != "graindem.engine.Simulation":
        raise ValueError(f"{path} is not a graindem engine checkpoint (kind {meta.get('kind')!r})")
    if for_restart and (meta.get("diverged") or Path(path).name == "diverged.h5"):
        raise ValueError(f"{path} holds the state of a step that diverged (half-finished): it is for inspection, "
                         "not for --restart; restart from the run's checkpoint.h5 (its last good state) with a "
                         "smaller time step")
    return Simulation.from_state(arrays, meta, verbose=verbose), meta.get("extra")


def holds_extra(path, tag):
    """True if `path` is a readable checkpoint whose extra metadata has the entry `tag` (the
    scenario that wrote it)."""
    try:
        _, meta = load_checkpoint(path)
    except (OSError, ValueError):
        return False
    extra = meta.get("extra")
    return isinstance(extra, dict) and tag in extra


def load_if_same(path, tag, key):
    """The Simulation saved in `path` whose extra[tag] equals `key` (a prepared packing's settings),
    or None when there is no such file or it was saved for other settings."""
    if path is None or not Path(path).exists():
        return None
    sim, extra = load(path)
    return sim if extra and extra.get(tag) == key else None
