"""Progress of long host work: a tqdm bar on a terminal, a plain line now and then elsewhere.

Every progress bar of the host package comes from :func:`progress_bar`. On a terminal it is a
:class:`tqdm.tqdm` bar. When the output is not a terminal (``make demo > log``, a CI log, a
pipe) a bar's carriage-return redraws would become thousands of lines; there the same calls
print one plain line every :data:`LOG_INTERVAL` seconds of work and one when the work ends (none
for work shorter than that)::

    bar = progress_bar(total=len(states), desc="board", unit="state")
    for state in states:
        ...
        bar.update(1)
    bar.close()
"""

from __future__ import annotations

import sys
import time

__all__ = ["progress_bar", "LogProgress", "LOG_INTERVAL"]

#: Seconds between the plain progress lines written when the output is not a terminal.
LOG_INTERVAL = 30.0


def progress_bar(total, *, desc, unit, file=None, terminal_only=False, leave=False,
                 postfix_format=None, **tqdm_options):
    """Return a progress bar for ``total`` steps of work.

    Parameters
    ----------
    total : int or float
        The amount of work (steps, or a path length).
    desc : str
        What the work is (the bar's label).
    unit : str
        Unit of ``total`` (``"state"``, ``"rad"``, ...).
    file : file-like, optional
        Where to write (default ``sys.stderr``).
    terminal_only : bool
        Show nothing (return ``None``) unless ``file`` is a terminal.
    leave : bool
        Keep the tqdm bar on the terminal when closed.
    postfix_format : str, optional
        ``str.format`` pattern of the count in the plain lines (default ``"{:g}"``).
    **tqdm_options
        More arguments of :class:`tqdm.tqdm` (``mininterval``, ``bar_format``), used on a
        terminal only.

    Returns
    -------
    tqdm.tqdm or LogProgress or None
        An object with ``update(n)``, ``set_postfix(**values)``, ``close()``, ``n`` and
        ``total``; ``None`` if ``terminal_only`` and the output is not a terminal.
    """
    file = sys.stderr if file is None else file
    isatty = getattr(file, "isatty", None)
    terminal = bool(isatty()) if callable(isatty) else False
    if terminal:
        from tqdm import tqdm
        return tqdm(total=total, desc=desc, unit=unit, file=file, leave=leave, **tqdm_options)
    if terminal_only:
        return None
    return LogProgress(total, desc=desc, unit=unit, file=file, count_format=postfix_format)


class LogProgress:
    """A progress report for a file or a log: one line every :data:`LOG_INTERVAL` seconds and
    one at the end (if any was written), never a carriage return.

    Parameters
    ----------
    total : int or float
        The amount of work.
    desc, unit : str
        Label and unit of the lines.
    file : file-like
        Where the lines go.
    count_format : str, optional
        ``str.format`` pattern of the count (default ``"{:g}"``).
    interval : float, optional
        Seconds between lines (default :data:`LOG_INTERVAL`).
    """

    def __init__(self, total, *, desc, unit, file, count_format=None, interval=None):
        self.total = total
        self.n = 0
        self.desc = desc
        self.unit = unit
        self.file = file
        self.count_format = count_format or "{:g}"
        self.interval = LOG_INTERVAL if interval is None else float(interval)
        self.lines = 0
        self._postfix = ""
        self._start = self._last = time.monotonic()
        self._closed = False

    def update(self, n=1):
        """Add ``n`` to the count; write a line if :attr:`interval` has passed since the last."""
        self.n += n
        now = time.monotonic()
        if now - self._last >= self.interval:
            self._write(now)

    def set_postfix(self, **values):
        """Show ``name=value`` pairs after the count in the next lines."""
        self._postfix = ", ".join(f"{name}={value}" for name, value in values.items())

    def close(self):
        """Write the last line (only if a line was written before); safe to call twice."""
        if self._closed:
            return
        self._closed = True
        if self.lines:
            self._write(time.monotonic(), done=True)

    def _write(self, now, done=False):
        count = self.count_format.format(self.n)
        total = self.count_format.format(self.total)
        share = f" ({100 * self.n / self.total:.0f} %)" if self.total else ""
        postfix = f", {self._postfix}" if self._postfix else ""
        state = "done" if done else "at"
        print(f"{self.desc}: {state} {count}/{total} {self.unit}{share}, "
              f"{now - self._start:.0f} s{postfix}", file=self.file, flush=True)
        self._last = now
        self.lines += 1

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
