"""The MPI world of a run and the buffer-based exchanges of numpy arrays between its ranks.

A process started by an MPI launcher with more than one rank runs decomposed; mpi4py is imported
only then (importing it starts MPI, which a serial run has no use for). The launcher is recognised
by the world size it exports (Open MPI: OMPI_COMM_WORLD_SIZE; MPICH and Intel MPI: PMI_SIZE).
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np

SIZE_VARIABLES = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE")


def launched_ranks():
    """The number of ranks the MPI launcher started (1 without a launcher)."""
    for name in SIZE_VARIABLES:
        value = os.environ.get(name)
        if value:
            try:
                return int(value)
            except ValueError:
                continue
    return 1


def world():
    """MPI.COMM_WORLD when this process is one of several MPI ranks, else None."""
    if launched_ranks() <= 1:
        return None
    try:
        from mpi4py import MPI
    except ImportError as exc:
        raise ImportError("this process was started by an MPI launcher with more than one rank, which runs "
                          "graindem decomposed over the ranks and needs mpi4py: pip install 'graindem[mpi]'") from exc
    comm = MPI.COMM_WORLD
    return comm if comm.Get_size() > 1 else None


def launcher(ranks, env=None):
    """(argv prefix, environment) that start `ranks` ranks of a command with the MPI launcher of this
    Python environment (the mpiexec that `pip install 'graindem[mpi]'` puts next to the interpreter,
    else the one on PATH), or None when there is no launcher or no mpi4py. Open MPI is given
    --oversubscribe (more ranks than free cores is allowed: a laptop or a CI runner), is allowed to
    run as root (containers), and is told to pass graindem's and numba's variables to the ranks."""
    try:
        import mpi4py  # noqa: F401  (a launcher without mpi4py cannot run graindem decomposed)
    except ImportError:
        return None
    for exe in (Path(sys.executable).parent / "mpiexec", shutil.which("mpiexec"), shutil.which("mpirun")):
        if exe and Path(exe).exists():
            break
    else:
        return None
    try:
        version = subprocess.run([str(exe), "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    env = dict(os.environ if env is None else env)
    argv = [str(exe)]
    if "Open MPI" in version or "OpenRTE" in version or "prte" in version.lower():
        argv.append("--oversubscribe")
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
        for name in ("PYTHONPATH", "NUMBA_CACHE_DIR", "GRAINDEM_NUMBA_CACHE", "NUMBA_NUM_THREADS"):
            if name in env:
                argv += ["-x", name]
    return argv + ["-n", str(int(ranks))], env


def _mpi_type(dtype):
    from mpi4py.util.dtlib import from_numpy_dtype
    return from_numpy_dtype(dtype)


def _displacements(counts):
    d = np.zeros(len(counts), dtype=np.int64)
    np.cumsum(counts[:-1], out=d[1:])
    return d


def alltoallv(comm, parts, width=1):
    """Send parts[r] (a 2-D array of rows `width` wide, or 1-D) to rank r; returns the rows
    received from every rank, concatenated in rank order, and the row count from each rank."""
    parts = [np.ascontiguousarray(p).reshape(-1, width) for p in parts]
    dtype = parts[0].dtype
    send_rows = np.array([p.shape[0] for p in parts], dtype=np.int64)
    recv_rows = np.empty_like(send_rows)
    comm.Alltoall(send_rows, recv_rows)
    send = np.concatenate(parts, axis=0)
    recv = np.empty((int(recv_rows.sum()), width), dtype=dtype)
    t = _mpi_type(dtype)
    sc = (send_rows * width).astype(np.int32)
    rc = (recv_rows * width).astype(np.int32)
    comm.Alltoallv([send, (sc, _displacements(sc).astype(np.int32)), t],
                   [recv, (rc, _displacements(rc).astype(np.int32)), t])
    return recv, recv_rows


def alltoallv_rows(comm, float_parts, int_parts):
    """alltoallv of rows made of a float64 part (float_parts[r], 2-D) and an int64 part
    (int_parts[r], 2-D, as many rows), in one exchange: the int64 words travel as float64 words
    (a view, so their bits arrive unchanged). Returns the floats and the ints received, each
    concatenated in rank order."""
    nf = float_parts[0].shape[1]
    parts = [np.concatenate([np.asarray(f, dtype=np.float64),
                             np.ascontiguousarray(i, dtype=np.int64).view(np.float64)], axis=1)
             for f, i in zip(float_parts, int_parts)]
    rows, _ = alltoallv(comm, parts, parts[0].shape[1])
    return np.ascontiguousarray(rows[:, :nf]), np.ascontiguousarray(rows[:, nf:]).view(np.int64)


def allgatherv(comm, rows, width=1):
    """Every rank's `rows` (2-D, `width` wide), concatenated in rank order, on every rank; and the
    row count of each rank."""
    rows = np.ascontiguousarray(rows).reshape(-1, width)
    counts = np.empty(comm.Get_size(), dtype=np.int64)
    comm.Allgather(np.array([rows.shape[0]], dtype=np.int64), counts)
    out = np.empty((int(counts.sum()), width), dtype=rows.dtype)
    c = (counts * width).astype(np.int32)
    comm.Allgatherv(rows, [out, (c, _displacements(c).astype(np.int32)), _mpi_type(rows.dtype)])
    return out, counts


class HaloUpdate:
    """The per-step refresh of the ghosts: each rank sends the listed rows of some per-body arrays
    of its owned bodies to the ranks that hold them as ghosts and writes what it receives into its
    ghosts' rows. send[r] and recv[r]: local row indices, in the same (global id) order on both
    sides, so no indices travel; the counts are fixed until the next neighbour rebuild."""

    def __init__(self, comm, send, recv, width):
        self.comm = comm
        self.send_idx = np.concatenate([np.asarray(s, dtype=np.int64) for s in send])
        self.recv_idx = np.concatenate([np.asarray(r, dtype=np.int64) for r in recv])
        sc = np.array([len(s) * width for s in send], dtype=np.int32)
        rc = np.array([len(r) * width for r in recv], dtype=np.int32)
        self.width = width
        self.send_spec = (sc, _displacements(sc).astype(np.int32))
        self.recv_spec = (rc, _displacements(rc).astype(np.int32))
        self.recv_buf = np.empty((self.recv_idx.size, width))
        self.type = _mpi_type(np.dtype(np.float64))

    def __call__(self, *arrays):
        """Refresh the ghost rows of `arrays` (float64, (n, k) each, k summing to width)."""
        s = self.send_idx
        send = np.concatenate([a[s] for a in arrays], axis=1) if s.size else np.empty((0, self.width))
        self.comm.Alltoallv([send, self.send_spec, self.type], [self.recv_buf, self.recv_spec, self.type])
        r = self.recv_idx
        k = 0
        for a in arrays:
            w = a.shape[1]
            a[r] = self.recv_buf[:, k:k + w]
            k += w
