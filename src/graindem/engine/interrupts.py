"""Stop requests (SIGINT, SIGTERM) honoured at the end of a step, never in the middle of one.

A numba kernel cannot be interrupted, and Python's default KeyboardInterrupt may strike between any
two bytecodes of the bookkeeping around it (while the pair arrays grow, say), leaving a state that
cannot be saved. So `Simulation.run` runs the kernel in bounded chunks (CHUNK_SECONDS of work at
most, measured on the previous chunk) inside a `StopRequests` context: SIGINT and SIGTERM only set a
flag, and `after_chunk` raises RunStopped (a KeyboardInterrupt) when the chunk is complete, so the
caller can write a checkpoint that continues exactly. A second signal of the same kind raises
KeyboardInterrupt at once (an escape for a run that does not reach a chunk end).

Nested contexts share one flag: a driver that wraps several runs (graindem run) installs the
handlers once, and the runs inside see its requests. Outside the main thread signals cannot be
caught; the context then does nothing. Chunk boundaries do not change a trajectory: the kernel's
state lives entirely in the arrays it is passed.
"""

import signal
import threading
import time

__all__ = ["RunStopped", "StopRequests", "CHUNK_SECONDS", "MAX_CHUNK_STEPS"]

# a stop request is honoured within about this much wall time
CHUNK_SECONDS = 0.25
MAX_CHUNK_STEPS = 100000

_active = []  # the open StopRequests contexts, outermost first


class RunStopped(KeyboardInterrupt):
    """A run stopped at the end of a step because SIGINT or SIGTERM arrived (its `signal`)."""

    def __init__(self, signum, step, message=None):
        name = signal.Signals(signum).name if signum else "a stop request"
        super().__init__(message or f"{name} received: stopped at the end of step {step}")
        self.signal = signum
        self.step = step


class StopRequests:
    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self, max_chunk_steps=None):
        self.requested = None
        self.max_chunk_steps = max_chunk_steps
        self._saved = {}
        self._owner = None
        self._seconds_per_step = None

    def _handler(self, signum, frame):
        if self.requested == signum:
            raise KeyboardInterrupt(f"second {signal.Signals(signum).name}")
        self.requested = signum

    def __enter__(self):
        if _active:
            self._owner = _active[0]  # share the outermost context's flag and handlers
        elif threading.current_thread() is threading.main_thread():
            for s in self.SIGNALS:
                try:
                    self._saved[s] = signal.signal(s, self._handler)
                except (ValueError, OSError):
                    pass
        _active.append(self)
        return self

    def __exit__(self, *exc):
        _active.remove(self)
        for s, old in self._saved.items():
            signal.signal(s, old)
        self._saved = {}
        return False

    @property
    def flag(self):
        return (self._owner or self).requested

    def chunk_limit(self):
        """Steps the next kernel call may run (from the time per step of the last chunk)."""
        if self.max_chunk_steps is not None:
            return self.max_chunk_steps
        per_step = (self._owner or self)._seconds_per_step
        if per_step is None:
            return 1  # the first chunk measures the cost of a step
        return max(1, min(MAX_CHUNK_STEPS, int(CHUNK_SECONDS / max(per_step, 1e-9))))

    def start_chunk(self):
        self._t0 = time.perf_counter()

    def after_chunk(self, steps_done, step):
        """Record the chunk's cost; raise RunStopped if a stop was requested."""
        if steps_done > 0:
            (self._owner or self)._seconds_per_step = (time.perf_counter() - self._t0) / steps_done
        if self.flag is not None:
            raise RunStopped(self.flag, step)

    def request(self, signum=signal.SIGINT):
        """Ask for a stop as a signal would (for callers that stop a run from code)."""
        (self._owner or self).requested = signum
