"""Independent check of a sampled joint trajectory against its limits.

The checker uses only the joint positions ``q`` of the samples (e.g. read back from the exported
CSV), finite differences and our inverse dynamics :func:`linkdyn.model.rnea` (friction
included); it shares no code with the generators in :mod:`~linkdyn.host.trajectory.ik`,
:mod:`~linkdyn.host.trajectory.timing` and :mod:`~linkdyn.host.trajectory.jerk`. With a
uniform sample period ``dt``:

* velocity ``(q[k+1] - q[k-1]) / (2 dt)`` and acceleration ``(q[k+1] - 2 q[k] + q[k-1]) / dt^2``
  at the inner samples,
* jerk ``(q[k+2] - 3 q[k+1] + 3 q[k] - q[k-1]) / dt^3`` between samples,
* torque ``rnea(q[k], velocity, acceleration)``,
* positions against the robot's joint range.

Finite differences average the derivative over one or two sample periods, so a bound that holds
at every instant holds for them too; their truncation error is ``O(dt^2)`` times the next
derivatives. The exported ``qd``/``qdd`` columns, when given, are compared with the differences
as a consistency figure (not as a limit).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from linkdyn.model import Robot, rnea

from .export import read_csv

__all__ = ["QuantityCheck", "CheckReport", "check_trajectory", "check_csv"]


@dataclass(frozen=True)
class QuantityCheck:
    """One quantity's worst case.

    Attributes
    ----------
    name : str
        ``"position"``, ``"velocity"``, ``"acceleration"``, ``"jerk"`` or ``"torque"``.
    peak : numpy.ndarray, shape (n,)
        Largest magnitude per joint (for ``"position"``: largest excursion beyond the range,
        0 inside).
    limit : numpy.ndarray, shape (n,)
        The limit per joint (``inf``: none).
    ratio : float
        ``max(peak / limit)`` over limited joints, ``nan`` if no joint is limited (for
        ``"position"``: 0 if inside, else ``1 + excursion``).
    sample : int
        Index of the sample where the ratio is reached.
    tolerance : float
        Relative tolerance of :attr:`ok`.
    """

    name: str
    peak: np.ndarray
    limit: np.ndarray
    ratio: float
    sample: int
    tolerance: float = 1e-6

    @property
    def ok(self):
        """bool: whether the limit holds (``ratio <= 1 + tolerance``; no limit: ``True``)."""
        return bool(math.isnan(self.ratio) or self.ratio <= 1 + self.tolerance)


@dataclass(frozen=True)
class CheckReport:
    """All quantities checked, and the consistency of the exported derivatives.

    Attributes
    ----------
    checks : dict of str to QuantityCheck
    consistency : dict of str to float
        ``"qd"``/``"qdd"``: largest difference between the exported columns and the finite
        differences (rad/s, rad/s^2), when the columns were given.
    dt : float
        Sample period, s.
    """

    checks: dict
    consistency: dict = field(default_factory=dict)
    dt: float = 0.0

    @property
    def ok(self):
        """bool: whether every checked limit holds."""
        return all(check.ok for check in self.checks.values())

    def as_dict(self):
        """Return a JSON-ready summary."""
        return {"ok": self.ok, "sample_period_s": self.dt,
                "ratios": {name: (None if math.isnan(c.ratio) else c.ratio)
                           for name, c in self.checks.items()},
                "worst_samples": {name: c.sample for name, c in self.checks.items()},
                "consistency": dict(self.consistency)}


def _limit(value, n):
    if value is None:
        return None
    array = np.broadcast_to(np.asarray(value, dtype=float), (n,)).astype(float)
    return np.where(np.isnan(array), np.inf, array)


def _quantity(name, values, limit, offset, tolerance):
    peak = np.max(np.abs(values), axis=0)
    finite = np.isfinite(limit)
    if not np.any(finite):
        return QuantityCheck(name, peak, limit, math.nan, 0, tolerance)
    ratios = np.abs(values[:, finite]) / limit[finite]
    worst = np.unravel_index(int(np.argmax(ratios)), ratios.shape)[0]
    return QuantityCheck(name, peak, limit, float(np.max(ratios)), int(worst) + offset,
                         tolerance)


def check_trajectory(robot, t, q, *, velocity=None, acceleration=None, jerk=None, torque=None,
                     position=True, qd=None, qdd=None, tolerance=1e-6):
    """Check sampled joint positions against limits by finite differences and rnea.

    Parameters
    ----------
    robot : Robot
        The robot (torques by :func:`linkdyn.model.rnea`, friction included; joint range from
        its links).
    t : array_like, shape (N,)
        Uniformly spaced times, s (N >= 4).
    q : array_like, shape (N, n)
        Joint positions, rad.
    velocity, acceleration, jerk, torque : float or array_like, shape (n,), optional
        Limits to check (rad/s, rad/s^2, rad/s^3, N·m); ``None`` skips the quantity, ``inf``
        entries skip a joint.
    position : bool
        Check the joint range of the robot.
    qd, qdd : array_like, shape (N, n), optional
        Exported derivatives, for the consistency figures.
    tolerance : float
        Relative tolerance of every check.

    Returns
    -------
    CheckReport

    Raises
    ------
    ValueError
        If the times are not uniform, there are fewer than 4 samples, or shapes disagree.
    """
    if not isinstance(robot, Robot):
        raise TypeError(f"robot must be a Robot, not {type(robot).__name__}")
    t = np.asarray(t, dtype=float)
    q = np.asarray(q, dtype=float)
    n = robot.n
    if q.ndim != 2 or q.shape[1] != n or t.shape != (len(q),) or len(q) < 4:
        raise ValueError(f"need t (N,) and q (N, {n}) with N >= 4; got {t.shape}, {q.shape}")
    steps = np.diff(t)
    dt = float(np.mean(steps))
    if not dt > 0 or np.max(np.abs(steps - dt)) > 1e-9 * max(1.0, float(t[-1])):
        raise ValueError("the samples must be uniformly spaced in time")
    v = (q[2:] - q[:-2]) / (2 * dt)
    a = (q[2:] - 2 * q[1:-1] + q[:-2]) / dt ** 2
    checks = {}
    if position:
        low, high = robot.q_limits(default=math.inf)
        excess = np.maximum(np.maximum(low - q, q - high), 0.0)
        worst = int(np.argmax(np.max(excess, axis=1)))
        peak = np.max(excess, axis=0)
        ratio = 0.0 if not np.any(peak > 0) else 1.0 + float(np.max(peak))
        checks["position"] = QuantityCheck("position", peak, np.full(n, np.nan), ratio, worst,
                                           tolerance)
    limit = _limit(velocity, n)
    if limit is not None:
        checks["velocity"] = _quantity("velocity", v, limit, 1, tolerance)
    limit = _limit(acceleration, n)
    if limit is not None:
        checks["acceleration"] = _quantity("acceleration", a, limit, 1, tolerance)
    limit = _limit(jerk, n)
    if limit is not None:
        j = (q[3:] - 3 * q[2:-1] + 3 * q[1:-2] - q[:-3]) / dt ** 3
        checks["jerk"] = _quantity("jerk", j, limit, 1, tolerance)
    limit = _limit(torque, n)
    if limit is not None:
        tau = rnea(robot, q[1:-1], v, a)
        checks["torque"] = _quantity("torque", tau, limit, 1, tolerance)
    consistency = {}
    if qd is not None:
        consistency["qd"] = float(np.max(np.abs(np.asarray(qd)[1:-1] - v)))
    if qdd is not None:
        consistency["qdd"] = float(np.max(np.abs(np.asarray(qdd)[1:-1] - a)))
    return CheckReport(checks, consistency, dt)


def check_csv(robot, csv_path, **limits):
    """Read a trajectory CSV and :func:`check_trajectory` it (same keyword arguments)."""
    t, q, qd, qdd = read_csv(csv_path, n=robot.n)
    return check_trajectory(robot, t, q, qd=qd, qdd=qdd, **limits)
