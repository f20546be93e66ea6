"""Trajectory files: ``q, qd, qdd`` as CSV, with a JSON summary beside it.

CSV format (SI units, one row per sample, ``%.17g`` so that finite differences of the file are
exact to double precision)::

    t,q1,...,qn,qd1,...,qdn,qdd1,...,qddn

The summary ``FILE.json`` next to ``FILE.csv`` holds what produced the file and what it
achieved (duration, tracking error, limits used); see :func:`write_summary`.
"""

from __future__ import annotations

import csv
import json
import math
import os
from pathlib import Path

import numpy as np

__all__ = ["write_csv", "read_csv", "write_summary", "summary_path",
           "TrajectoryFileError", "csv_header"]


class TrajectoryFileError(ValueError):
    """A trajectory CSV file that cannot be read: the message names the file and the problem."""


def csv_header(n):
    """Return the CSV column names for ``n`` joints."""
    return (["t"] + [f"q{i}" for i in range(1, n + 1)] + [f"qd{i}" for i in range(1, n + 1)]
            + [f"qdd{i}" for i in range(1, n + 1)])


def summary_path(csv_path):
    """Return the path of the JSON summary beside ``csv_path`` (same name, ``.json``)."""
    return Path(csv_path).with_suffix(".json")


def write_csv(path, t, q, qd, qdd):
    """Write a trajectory CSV.

    Parameters
    ----------
    path : str or os.PathLike
        Output file; its folder is created if needed.
    t : array_like, shape (N,)
        Times, s.
    q, qd, qdd : array_like, shape (N, n)
        rad, rad/s, rad/s^2.

    Returns
    -------
    pathlib.Path

    Raises
    ------
    ValueError
        If the shapes disagree or a value is not finite.
    """
    t = np.asarray(t, dtype=float)
    q, qd, qdd = (np.asarray(x, dtype=float) for x in (q, qd, qdd))
    if q.ndim != 2 or q.shape != qd.shape or q.shape != qdd.shape or t.shape != (len(q),):
        raise ValueError(f"t must be (N,) and q, qd, qdd (N, n); got {t.shape}, {q.shape}, "
                         f"{qd.shape}, {qdd.shape}")
    data = np.column_stack([t, q, qd, qdd])
    if not np.all(np.isfinite(data)):
        raise ValueError("the trajectory holds non-finite values")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as handle:
        handle.write(",".join(csv_header(q.shape[1])) + "\n")
        np.savetxt(handle, data, delimiter=",", fmt="%.17g")
    return path


def read_csv(path, n=None):
    """Read a trajectory CSV written by :func:`write_csv` (or any file with that header).

    Parameters
    ----------
    path : str or os.PathLike
        The file.
    n : int, optional
        Expected number of joints.

    Returns
    -------
    tuple of numpy.ndarray
        ``(t, q, qd, qdd)``, shapes (N,), (N, n), (N, n), (N, n).

    Raises
    ------
    FileNotFoundError
        If the file does not exist.
    TrajectoryFileError
        If the header is not ``t, q1..qn, qd1..qdn, qdd1..qddn``, the joint count differs from
        ``n``, a value is not a finite number, there are fewer than 2 rows, or the times are not
        strictly increasing.
    """
    from linkdyn.model.statefile import StateFileError, read_states
    path = Path(path)
    name = os.fspath(path)
    if not path.is_file():
        raise FileNotFoundError(f"trajectory file {name!r} does not exist")
    try:
        with open(path, newline="", encoding="utf-8") as handle:
            header = [cell.strip() for cell in next(csv.reader(handle), [])]
    except (OSError, UnicodeDecodeError, csv.Error) as error:
        raise TrajectoryFileError(f"cannot read trajectory file {name!r}: {error}") from None
    columns = len(header)
    joints = (columns - 1) // 3
    if columns < 4 or (columns - 1) % 3 or header != csv_header(joints):
        raise TrajectoryFileError(
            f"trajectory file {name!r} must have the header "
            f"'t,q1..qn,qd1..qdn,qdd1..qddn', not {','.join(header)[:120]!r}")
    if n is not None and joints != n:
        raise TrajectoryFileError(f"trajectory file {name!r} has {joints} joints, "
                                  f"the robot has {n}")
    try:
        t, q, qd, qdd = read_states(name, joints)
    except StateFileError as error:
        raise TrajectoryFileError(str(error)) from None
    if len(t) < 2:
        raise TrajectoryFileError(f"trajectory file {name!r} needs at least 2 rows")
    if np.any(np.diff(t) <= 0):
        row = int(np.nonzero(np.diff(t) <= 0)[0][0]) + 2
        raise TrajectoryFileError(f"trajectory file {name!r}: times must be strictly "
                                  f"increasing (data row {row})")
    return t, q, qd, qdd


def _jsonable(value):
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return _jsonable(value.tolist())
    if isinstance(value, (np.bool_, bool)):
        return bool(value)
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        value = float(value)
        return value if math.isfinite(value) else None
    if isinstance(value, Path):
        return os.fspath(value)
    return value


def write_summary(csv_path, summary):
    """Write the JSON summary beside a trajectory CSV; return its path.

    Numpy values become JSON numbers, non-finite numbers ``null``.
    """
    path = summary_path(csv_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(_jsonable(summary), indent=2) + "\n")
    return path
