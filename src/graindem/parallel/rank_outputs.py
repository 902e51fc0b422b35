"""The results folder of a command run on several MPI ranks: rank 0 writes it, the others write
into a private copy that is thrown away.

Every rank runs the command's whole code path, because a decomposed Simulation.run is collective
(each rank calls it with the same steps and callbacks, and between runs holds the whole state):
the outputs each rank would write are the same, so one copy is kept. A rank other than 0 starts
from a copy of the folder's files (a cached packing, the series and run identity a restart
continues), so that it takes the same decisions as rank 0 (load the cached packing rather than
prepare one, resume the series); rank 0 writes nothing before every rank has made its copy.
"""

import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def rank_folder(comm, out):
    """The folder this rank writes the outputs of `out` into (see the module docstring)."""
    if comm.Get_rank() == 0:
        comm.Barrier()
        yield Path(out)
        return
    private = Path(tempfile.mkdtemp(prefix=f"graindem-rank{comm.Get_rank()}-"))
    try:
        src = Path(out)
        if src.is_dir():
            for path in src.iterdir():
                if path.is_file():
                    shutil.copy2(path, private / path.name)
        comm.Barrier()
        yield private
    finally:
        shutil.rmtree(private, ignore_errors=True)
