"""State files: the CSV layout of joint states that every command line reads.

A header row, then one state per row: ``[t,] q1..qn, qd1..qdn, qdd1..qddn`` (s, rad, rad/s,
rad/s^2). ``python -m linkdyn.model torques``, ``linkdyn torques`` and the trajectory tools read
it with :func:`read_states`; the trajectory export writes it.
"""

from __future__ import annotations

import csv
import math

import numpy as np

__all__ = ["StateFileError", "state_columns", "read_states"]


class StateFileError(ValueError):
    """A state file cannot be read or does not hold valid states (the message says where)."""


def state_columns(n):
    """Return the column names of a state CSV for ``n`` joints, without ``t``."""
    return ([f"q{i}" for i in range(1, n + 1)] + [f"qd{i}" for i in range(1, n + 1)]
            + [f"qdd{i}" for i in range(1, n + 1)])


def read_states(path, n):
    """Read a state CSV file.

    Parameters
    ----------
    path : str
        The CSV file: header ``[t,] q1..qn, qd1..qdn, qdd1..qddn``.
    n : int
        Number of joints of the robot.

    Returns
    -------
    t : numpy.ndarray, shape (m,) or None
        Time column, s, if the file has one.
    q, qd, qdd : numpy.ndarray, shape (m, n)
        Joint positions (rad), velocities (rad/s) and accelerations (rad/s^2).

    Raises
    ------
    StateFileError
        If the file is missing or unreadable, the header does not match ``n`` joints, a row has
        the wrong number of fields, or a value is not a finite number (the message names the
        file, line and column).
    """
    expected = state_columns(n)
    try:
        with open(path, newline="", encoding="utf-8") as file:
            rows = list(csv.reader(file))
    except FileNotFoundError:
        raise StateFileError(f"input file {path!r} does not exist") from None
    except (OSError, UnicodeDecodeError, csv.Error) as error:
        raise StateFileError(f"cannot read input file {path!r}: {error}") from None
    lines = [k + 1 for k, row in enumerate(rows) if any(cell.strip() for cell in row)]
    rows = [row for row in rows if any(cell.strip() for cell in row)]
    if not rows:
        raise StateFileError(f"input file {path!r} is empty; it needs a header row "
                           f"{','.join(['t'] + expected)}")
    header = [cell.strip() for cell in rows[0]]
    has_t = bool(header) and header[0] == "t"
    names = header[1:] if has_t else header
    if names != expected:
        if len(names) != 3 * n:
            raise StateFileError(
                f"input file {path!r} has {len(names)} state columns "
                f"{'after t ' if has_t else ''}but the robot has {n} joints: expected {3 * n} "
                f"columns {','.join(expected)} (optionally after a first column t)")
        raise StateFileError(
            f"input file {path!r} header {','.join(header)!r} does not match "
            f"{','.join(['t'] + expected)!r} (t optional)")
    values = np.empty((len(rows) - 1, len(header)))
    for r, row in enumerate(rows[1:]):
        line = lines[r + 1]
        if len(row) != len(header):
            raise StateFileError(f"input file {path!r} line {line} has {len(row)} fields, the "
                               f"header {len(header)}")
        for c, cell in enumerate(row):
            try:
                value = float(cell)
            except ValueError:
                raise StateFileError(f"input file {path!r} line {line} column {header[c]!r}: "
                                   f"{cell!r} is not a number") from None
            if not math.isfinite(value):
                raise StateFileError(f"input file {path!r} line {line} column {header[c]!r}: "
                                   f"{cell!r} is not finite")
            values[r, c] = value
    t = values[:, 0] if has_t else None
    states = values[:, 1:] if has_t else values
    return t, states[:, :n], states[:, n:2 * n], states[:, 2 * n:]
