"""Measurement data for identification: reading, resampling, zero-phase filtering, derivatives.

A :class:`Measurements` holds one recorded run: times ``t`` (s), joint positions ``q`` (rad),
velocities ``qd`` (rad/s), optionally accelerations ``qdd`` (rad/s^2) and the measured joint
torques ``tau`` (N·m), and optionally the commanded ``trajectory`` (any object with
``evaluate(t) -> (q, qd, qdd)`` on the same time base), from which accelerations are taken
analytically (source paper Sect. 2.5: "analytical differentiation of (23)").

CSV layout (:func:`read_csv`, :func:`write_csv`): a header row naming the columns, then one row
per sample::

    t, q1..qn, qd1..qdn[, qdd1..qddn], tau1..taun

Other layouts: :func:`load_measurements` also reads a folder in the layout of the
``panda-gaz2019`` data set (:mod:`linkdyn.host.identification.panda_gaz2019`), or a data-set name
resolved by :func:`dataset_path`.
"""

from __future__ import annotations

import csv
import math
import os
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import scipy.signal

__all__ = [
    "DataError", "Measurements", "read_csv", "write_csv", "load_measurements", "dataset_path",
    "repository_root", "resample_uniform", "lowpass", "differentiate", "filtered",
    "with_accelerations", "decimate",
]

#: Environment variable naming the folder that holds the data sets.
DATASETS_VARIABLE = "LINKDYN_DATASETS"


class DataError(ValueError):
    """Invalid or missing measurement data; the message names the file and the problem."""


def _array(value, what, ndim):
    array = np.array(value, dtype=float)
    if array.ndim != ndim:
        raise DataError(f"{what} must have {ndim} dimension(s), not shape {array.shape}")
    if not np.all(np.isfinite(array)):
        raise DataError(f"{what} must be finite (it holds NaN or infinity)")
    array.setflags(write=False)
    return array


@dataclass(frozen=True)
class Measurements:
    """One recorded run.

    Parameters
    ----------
    t : array_like, shape (N,)
        Sample times, s, strictly increasing.
    q, qd, tau : array_like, shape (N, n)
        Joint positions (rad), velocities (rad/s), measured joint torques (N·m).
    qdd : array_like, shape (N, n), optional
        Joint accelerations, rad/s^2.
    name : str
        Where the data came from (a path or a data-set name).
    trajectory : object, optional
        The commanded trajectory, with ``evaluate(t) -> (q, qd, qdd)`` in the same time base.
    acceleration_source : str
        How ``qdd`` was obtained (``"measured"``, ``"trajectory"``, ``"differentiated"``, or
        ``""`` when there is none).

    Raises
    ------
    DataError
        If shapes disagree, a value is not finite, there are fewer than 2 samples or ``t`` is
        not strictly increasing.
    """

    t: np.ndarray
    q: np.ndarray
    qd: np.ndarray
    tau: np.ndarray
    qdd: np.ndarray | None = None
    name: str = ""
    trajectory: object = None
    acceleration_source: str = ""

    def __post_init__(self):
        t = _array(self.t, "t", 1)
        if t.shape[0] < 2:
            raise DataError(f"measurements {self.name!r} need at least 2 samples, not "
                            f"{t.shape[0]}")
        if np.any(np.diff(t) <= 0):
            raise DataError(f"measurements {self.name!r}: times must be strictly increasing")
        object.__setattr__(self, "t", t)
        shape = None
        for field_name in ("q", "qd", "tau", "qdd"):
            value = getattr(self, field_name)
            if value is None:
                continue
            array = _array(value, field_name, 2)
            if array.shape[0] != t.shape[0]:
                raise DataError(f"measurements {self.name!r}: {field_name} has "
                                f"{array.shape[0]} samples, t has {t.shape[0]}")
            if shape is not None and array.shape != shape:
                raise DataError(f"measurements {self.name!r}: {field_name} has shape "
                                f"{array.shape}, q has {shape}")
            shape = array.shape
            object.__setattr__(self, field_name, array)
        if self.qdd is not None and not self.acceleration_source:
            object.__setattr__(self, "acceleration_source", "measured")

    @property
    def n(self):
        """int: number of joints."""
        return self.q.shape[1]

    @property
    def count(self):
        """int: number of samples."""
        return self.t.shape[0]

    @property
    def duration(self):
        """float: ``t[-1] - t[0]``, s."""
        return float(self.t[-1] - self.t[0])

    @property
    def sample_rate(self):
        """float: median sample rate, Hz."""
        return float(1.0 / np.median(np.diff(self.t)))

    @property
    def is_uniform(self):
        """bool: whether the sample times are equidistant (within 1e-6 relative)."""
        dt = np.diff(self.t)
        return bool(np.all(np.abs(dt - dt.mean()) <= 1e-6 * dt.mean()))

    def slice(self, start, stop):
        """Return samples ``start:stop`` (Python slice indices)."""
        part = slice(start, stop)
        return replace(self, t=self.t[part], q=self.q[part], qd=self.qd[part],
                       tau=self.tau[part], qdd=None if self.qdd is None else self.qdd[part])

    def split(self, fraction):
        """Split in time: the first ``fraction`` of the samples and the rest.

        Raises
        ------
        ValueError
            If ``fraction`` is not in (0, 1) or a part would have fewer than 2 samples.
        """
        fraction = float(fraction)
        if not 0 < fraction < 1:
            raise ValueError(f"fraction must be in (0, 1), not {fraction!r}")
        cut = int(round(fraction * self.count))
        if cut < 2 or self.count - cut < 2:
            raise ValueError(f"splitting {self.count} samples at {fraction} leaves a part with "
                             f"fewer than 2 samples")
        return self.slice(0, cut), self.slice(cut, None)


def _column_names(n, with_qdd):
    names = ["t"] + [f"q{i}" for i in range(1, n + 1)] + [f"qd{i}" for i in range(1, n + 1)]
    if with_qdd:
        names += [f"qdd{i}" for i in range(1, n + 1)]
    return names + [f"tau{i}" for i in range(1, n + 1)]


def read_csv(path, n=None):
    """Read a measurement CSV file (layout in the module docstring).

    Parameters
    ----------
    path : str or os.PathLike
    n : int, optional
        Expected number of joints; default: deduced from the header.

    Returns
    -------
    Measurements

    Raises
    ------
    DataError
        If the file is missing, the header is not ``t, q1..qn, qd1..qdn[, qdd1..qddn],
        tau1..taun`` (case and spaces ignored), a value is not a number, or the joint count is
        not ``n``.
    """
    path = Path(path)
    if not path.is_file():
        raise DataError(f"data file {os.fspath(path)!r} does not exist")
    with path.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.reader(handle))
    rows = [row for row in rows if row and any(cell.strip() for cell in row)]
    if not rows:
        raise DataError(f"data file {os.fspath(path)!r} is empty")
    header = [cell.strip().lower() for cell in rows[0]]
    columns = len(header)
    with_qdd = (columns - 1) % 4 == 0 and any(name.startswith("qdd") for name in header)
    joints = (columns - 1) // (4 if with_qdd else 3)
    if joints < 1 or header != _column_names(joints, with_qdd):
        raise DataError(
            f"data file {os.fspath(path)!r}: the header must be 't, q1..qn, qd1..qdn[, "
            f"qdd1..qddn], tau1..taun', not {', '.join(rows[0])!r}")
    if n is not None and joints != n:
        raise DataError(f"data file {os.fspath(path)!r} has {joints} joints, the robot has {n}")
    values = np.empty((len(rows) - 1, columns))
    for k, row in enumerate(rows[1:]):
        if len(row) != columns:
            raise DataError(f"data file {os.fspath(path)!r} line {k + 2}: {len(row)} values, "
                            f"the header names {columns}")
        try:
            values[k] = [float(cell) for cell in row]
        except ValueError:
            raise DataError(f"data file {os.fspath(path)!r} line {k + 2}: not a number in "
                            f"{row!r}") from None
    blocks = np.split(values[:, 1:], 4 if with_qdd else 3, axis=1)
    q, qd = blocks[0], blocks[1]
    qdd = blocks[2] if with_qdd else None
    tau = blocks[-1]
    try:
        return Measurements(values[:, 0], q, qd, tau, qdd, name=os.fspath(path))
    except DataError as error:
        raise DataError(f"data file {os.fspath(path)!r}: {error}") from None


def write_csv(path, t, q, qd, qdd=None, tau=None):
    """Write samples in the CSV layout of :func:`read_csv` (``tau`` may be left out, as in an
    excitation trajectory to be run on the robot). Numbers use Python's shortest round-trip
    representation."""
    t = np.asarray(t, dtype=float)
    blocks = [np.asarray(b, dtype=float) for b in (q, qd, qdd, tau) if b is not None]
    n = blocks[0].shape[1]
    header = ["t"] + [f"q{i}" for i in range(1, n + 1)] + [f"qd{i}" for i in range(1, n + 1)]
    if qdd is not None:
        header += [f"qdd{i}" for i in range(1, n + 1)]
    if tau is not None:
        header += [f"tau{i}" for i in range(1, n + 1)]
    table = np.column_stack([t] + blocks)
    path = Path(path)
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        for row in table:
            writer.writerow([repr(float(v)) for v in row])
    return path


def repository_root(start=None):
    """Return the folder holding ``pyproject.toml`` above ``start`` (default: this file).

    Raises
    ------
    DataError
        If there is none.
    """
    here = Path(start or __file__).resolve()
    for folder in [here, *here.parents]:
        if (folder / "pyproject.toml").is_file():
            return folder
    raise DataError(f"no pyproject.toml above {os.fspath(here)!r}")


def dataset_path(name):
    """Return the folder of a named data set (e.g. ``"panda-gaz2019"``).

    The data sets live outside the project: in ``$LINKDYN_DATASETS/<name>`` when that variable is
    set, else in ``<repository>/../shared/datasets/<name>``.

    Raises
    ------
    DataError
        If the folder does not exist (the message says where it was looked for).
    """
    root = os.environ.get(DATASETS_VARIABLE)
    if root:
        folder = Path(root) / name
    else:
        folder = repository_root().parent / "shared" / "datasets" / name
    if not folder.is_dir():
        raise DataError(f"data set {name!r} not found at {os.fspath(folder)!r} (set "
                        f"{DATASETS_VARIABLE} to the folder holding the data sets)")
    return folder


def load_measurements(source, n=None):
    """Load measurements from a CSV file, a ``panda-gaz2019``-layout folder or a data-set name.

    Parameters
    ----------
    source : str or os.PathLike
        A ``.csv`` file; a folder holding ``exciting_traj_time.txt`` and its siblings; or the
        name of a data set under :func:`dataset_path`.
    n : int, optional
        Expected number of joints.

    Raises
    ------
    DataError
        If nothing usable is found (the message says what was expected).
    """
    path = Path(source)
    if path.is_dir():
        from .panda_gaz2019 import is_gaz2019_folder, read_gaz2019
        if is_gaz2019_folder(path):
            measurements = read_gaz2019(path)
            if n is not None and measurements.n != n:
                raise DataError(f"data {os.fspath(path)!r} has {measurements.n} joints, the "
                                f"robot has {n}")
            return measurements
        raise DataError(f"folder {os.fspath(path)!r} holds no known data layout (expected the "
                        f"panda-gaz2019 files, e.g. exciting_traj_time.txt)")
    if path.suffix.lower() == ".csv":
        return read_csv(path, n)
    if not path.exists() and os.sep not in os.fspath(source) and "/" not in os.fspath(source):
        return load_measurements(dataset_path(os.fspath(source)), n)
    if not path.exists():
        raise DataError(f"data {os.fspath(path)!r} does not exist")
    raise DataError(f"data {os.fspath(path)!r} is neither a .csv file nor a data-set folder")


def resample_uniform(measurements, rate=None):
    """Return the measurements linearly interpolated onto equidistant times.

    Parameters
    ----------
    measurements : Measurements
    rate : float, optional
        Sample rate, Hz; default the median rate rounded to the nearest Hz.

    Zero-phase filtering and differentiation need equidistant samples; real logs jitter (the
    ``panda-gaz2019`` run has steps from 0.7 ms to 8.8 ms).
    """
    if rate is None:
        rate = float(round(measurements.sample_rate))
    rate = float(rate)
    if not math.isfinite(rate) or rate <= 0:
        raise ValueError(f"rate must be a positive sample rate in Hz, not {rate!r}")
    t0, t1 = measurements.t[0], measurements.t[-1]
    count = int(math.floor((t1 - t0) * rate + 1e-9)) + 1
    t = t0 + np.arange(count) / rate

    def interpolate(x):
        if x is None:
            return None
        return np.column_stack([np.interp(t, measurements.t, x[:, j]) for j in range(x.shape[1])])

    return replace(measurements, t=t, q=interpolate(measurements.q),
                   qd=interpolate(measurements.qd), tau=interpolate(measurements.tau),
                   qdd=interpolate(measurements.qdd))


def lowpass(x, rate, cutoff, order=4):
    """Zero-phase Butterworth low-pass filter along axis 0 (``scipy.signal.filtfilt``).

    Parameters
    ----------
    x : array_like, shape (N, ...)
        Equidistant samples.
    rate : float
        Sample rate, Hz.
    cutoff : float
        Cut-off frequency, Hz (``0 < cutoff < rate / 2``).
    order : int
        Filter order (applied twice, forward and backward: zero phase, squared magnitude).
    """
    x = np.asarray(x, dtype=float)
    if not 0 < cutoff < rate / 2:
        raise ValueError(f"cutoff must be in (0, {rate / 2:g}) Hz for a {rate:g} Hz rate, not "
                         f"{cutoff!r}")
    b, a = scipy.signal.butter(order, cutoff / (rate / 2))
    padlen = min(3 * max(len(a), len(b)), x.shape[0] - 1)
    return scipy.signal.filtfilt(b, a, x, axis=0, padlen=padlen)


def differentiate(x, rate, cutoff=None, order=4):
    """Return ``dx/dt`` of equidistant samples: zero-phase low-pass (if ``cutoff``), then central
    differences (``numpy.gradient``). Shape (N, ...)."""
    x = np.asarray(x, dtype=float)
    if cutoff is not None:
        x = lowpass(x, rate, cutoff, order)
    return np.gradient(x, 1.0 / rate, axis=0)


def filtered(measurements, cutoff, order=4):
    """Return the measurements with ``q``, ``qd``, ``tau`` (and measured ``qdd``) low-passed by
    :func:`lowpass` (zero phase). The samples must be equidistant (:func:`resample_uniform`)."""
    if not measurements.is_uniform:
        raise DataError(f"measurements {measurements.name!r} are not equidistant; resample "
                        f"them first")
    rate = 1.0 / float(np.mean(np.diff(measurements.t)))
    qdd = measurements.qdd
    if qdd is not None and measurements.acceleration_source == "measured":
        qdd = lowpass(qdd, rate, cutoff, order)
    return replace(measurements, q=lowpass(measurements.q, rate, cutoff, order),
                   qd=lowpass(measurements.qd, rate, cutoff, order),
                   tau=lowpass(measurements.tau, rate, cutoff, order), qdd=qdd)


def with_accelerations(measurements, method="auto", cutoff=None):
    """Return the measurements with accelerations ``qdd``.

    Parameters
    ----------
    measurements : Measurements
    method : {"auto", "trajectory", "differentiate", "measured"}
        ``"trajectory"``: the analytic acceleration of the commanded trajectory at the sample
        times (needs ``measurements.trajectory``). ``"differentiate"``: :func:`differentiate` of
        the velocities (equidistant samples). ``"measured"``: keep the recorded ``qdd``.
        ``"auto"``: measured if recorded, else trajectory if known, else differentiate.
    cutoff : float, optional
        Low-pass cut-off (Hz) before differentiating.

    Raises
    ------
    DataError
        If the chosen source is not available.
    """
    if method == "auto":
        if measurements.qdd is not None and measurements.acceleration_source == "measured":
            return measurements
        method = "trajectory" if measurements.trajectory is not None else "differentiate"
    if method == "measured":
        if measurements.qdd is None:
            raise DataError(f"measurements {measurements.name!r} have no recorded accelerations")
        return measurements
    if method == "trajectory":
        if measurements.trajectory is None:
            raise DataError(f"measurements {measurements.name!r} have no known trajectory for "
                            f"analytic accelerations")
        _, _, qdd = measurements.trajectory.evaluate(measurements.t)
        return replace(measurements, qdd=qdd, acceleration_source="trajectory")
    if method == "differentiate":
        if not measurements.is_uniform:
            raise DataError(f"measurements {measurements.name!r} are not equidistant; resample "
                            f"them before differentiating")
        rate = 1.0 / float(np.mean(np.diff(measurements.t)))
        qdd = differentiate(measurements.qd, rate, cutoff)
        return replace(measurements, qdd=qdd, acceleration_source="differentiated")
    raise ValueError(f"method must be 'auto', 'trajectory', 'differentiate' or 'measured', not "
                     f"{method!r}")


def decimate(measurements, factor):
    """Keep every ``factor``-th sample. Low-pass the data below the new Nyquist frequency first
    (:func:`filtered`); this function does no filtering itself."""
    if isinstance(factor, bool) or not isinstance(factor, int) or factor < 1:
        raise ValueError(f"factor must be a positive integer, not {factor!r}")
    if factor == 1:
        return measurements
    part = slice(None, None, factor)
    return replace(measurements, t=measurements.t[part], q=measurements.q[part],
                   qd=measurements.qd[part], tau=measurements.tau[part],
                   qdd=None if measurements.qdd is None else measurements.qdd[part])
