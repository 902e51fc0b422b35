"""A progress line for long runs: steps/s, ETA and the caller's own fields (stress, contacts, ...).

Interface:

    with Progress(total_steps, desc="biaxial", quiet=False) as progress:
        for ...:
            progress.update(n_steps_done_since_last_call, stress=1.2e5, contacts=8600)
    progress.rate      # mean steps per second over the whole run (also in quiet mode)
    progress.elapsed   # seconds since the start

On a terminal this is a tqdm bar redrawn in place. Without a terminal (CI logs, pipes, files) it
prints a plain, newline-terminated line at most every `log_interval` seconds (and at the end),
so logs are not flooded with carriage returns. quiet=True prints nothing but still counts.
total=None: a task whose length is not known in advance (a packing compressed until it settles):
the count and rate are shown, without percentage or ETA.
`interactive()`: whether a person is watching (stderr is a terminal); work that is only sometimes
long (building a level-set template) shows its bar then and stays silent in logs and tests.
Field values are shown with 4 significant digits (floats) or as given (ints, strings).
The progress line only reads the values it is given.
"""

import sys
import time

from tqdm import tqdm

__all__ = ["PreparationProgress", "Progress", "interactive"]


def _format_fields(fields):
    parts = []
    for name, value in fields.items():
        if isinstance(value, float):
            parts.append(f"{name}={value:.4g}")
        else:
            parts.append(f"{name}={value}")
    return ", ".join(parts)


def interactive(file=None):
    """True if `file` (default stderr) is a terminal."""
    isatty = getattr(sys.stderr if file is None else file, "isatty", None)
    return bool(isatty and isatty())


class Progress:
    """Progress of a run of `total` steps (see the module docstring)."""

    def __init__(self, total, *, desc="", quiet=False, file=None, log_interval=10.0, unit="step"):
        if total is not None and (isinstance(total, bool) or not isinstance(total, int) or total < 0):
            raise ValueError(f"total must be an integer >= 0 (number of steps) or None (unknown); got {total!r}")
        if not log_interval > 0:
            raise ValueError(f"log_interval must be > 0 seconds; got {log_interval!r}")
        self.total = total
        self.desc = desc
        self.quiet = quiet
        self.unit = unit
        self.n = 0
        self.fields = {}
        self.log_interval = float(log_interval)
        self._file = sys.stderr if file is None else file
        self._start = time.perf_counter()
        self._last_log = self._start
        self._closed = False
        self._printed_n = None
        self._tty = interactive(self._file)
        self._bar = None
        if not quiet and self._tty:
            self._bar = tqdm(total=total, desc=desc or None, unit=unit, unit_scale=True, file=self._file,
                             dynamic_ncols=True, smoothing=0.1)

    @property
    def elapsed(self):
        return time.perf_counter() - self._start

    @property
    def rate(self):
        """Mean steps per second since the start (0 before any time has passed)."""
        elapsed = self.elapsed
        return self.n / elapsed if elapsed > 0 else 0.0

    def line(self):
        """The current progress text (what the non-terminal mode prints)."""
        elapsed = self.elapsed
        text = tqdm.format_meter(self.n, self.total, elapsed, ncols=0, prefix=self.desc, unit=self.unit,
                                 unit_scale=True, rate=self.n / elapsed if elapsed > 0 else None,
                                 postfix=_format_fields(self.fields) or None)
        return text

    def update(self, n=1, **fields):
        """Count n more steps done and set the displayed fields (kept until changed)."""
        if self._closed:
            raise ValueError("update() called on a closed Progress")
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise ValueError(f"n must be an integer >= 0 (steps done since the last update); got {n!r}")
        self.n += n
        self.fields.update(fields)
        if self.quiet:
            return
        if self._bar is not None:
            if fields:
                self._bar.set_postfix_str(_format_fields(self.fields), refresh=False)
            self._bar.update(n)
            return
        now = time.perf_counter()
        if now - self._last_log >= self.log_interval:
            self._last_log = now
            self._print()

    def _print(self):
        self._printed_n = self.n
        print(self.line(), file=self._file, flush=True)

    def close(self):
        if self._closed:
            return
        self._closed = True
        if self.quiet:
            return
        if self._bar is not None:
            self._bar.set_postfix_str(_format_fields(self.fields), refresh=False)
            self._bar.close()
        elif self._printed_n != self.n:
            self._print()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        self.close()
        return False


class PreparationProgress:
    """The progress line of an isotropic compression that runs until the packing settles (its length is
    not known in advance): steps, steps/s, the pressure over its target and the unbalanced force ratio.
    `callback(sim, m)` is what `prepare_packing` and the grain preparation call after each check."""

    def __init__(self, pressure, quiet=False, start=0, desc="preparing the packing"):
        self.pressure = pressure
        self.last = int(start)
        self.bar = Progress(None, desc=desc, quiet=quiet)

    def callback(self, sim, m):
        self.bar.update(int(sim.step_count - self.last), p_over_target=float(m["pressure"] / self.pressure),
                        unbalanced=float(m["unbalanced_force_ratio"]))
        self.last = int(sim.step_count)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.bar.close()
        return False
