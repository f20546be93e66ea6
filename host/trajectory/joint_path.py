"""Geometric joint paths ``q(s)`` for time parameterisation.

A :class:`JointPath` is a quintic B-spline ``q(s)``, ``s in [0, L]``, so ``q'``, ``q''`` and
``q'''`` (needed by the jerk-limited method) are continuous. It is built either through a few
waypoints or from a densely sampled joint trajectory (e.g. the CSV of an inverse kinematics run),
in which case ``s`` is the joint-space arc length (rad, Euclidean norm over the joints) and the
time law of the samples is discarded: only the geometry is kept.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.interpolate import BSpline, make_interp_spline

__all__ = ["JointPath"]


class JointPath:
    """A geometric joint path ``q(s)`` (quintic B-spline).

    Parameters
    ----------
    spline : scipy.interpolate.BSpline
        Vector-valued spline of degree >= 3, ``s -> q`` (rad).

    Raises
    ------
    TypeError
        If ``spline`` is not a :class:`scipy.interpolate.BSpline`.
    ValueError
        If its degree is below 3 or it is not vector-valued.
    """

    def __init__(self, spline):
        if not isinstance(spline, BSpline):
            raise TypeError(f"spline must be a scipy BSpline, not {type(spline).__name__}")
        if spline.k < 3:
            raise ValueError(f"the spline degree must be >= 3 (q''' is needed), not {spline.k}")
        if np.ndim(spline.c) != 2:
            raise ValueError("the spline must be vector-valued: coefficients of shape (m, n)")
        self._splines = [spline] + [spline.derivative(k) for k in (1, 2, 3)]
        self._start = float(spline.t[spline.k])
        self._end = float(spline.t[-spline.k - 1])

    @property
    def dof(self):
        """int: number of joints ``n``."""
        return self._splines[0].c.shape[1]

    @property
    def s_start(self):
        """float: first path coordinate."""
        return self._start

    @property
    def s_end(self):
        """float: last path coordinate."""
        return self._end

    @property
    def length(self):
        """float: ``s_end - s_start``."""
        return self._end - self._start

    def __call__(self, s, order=0):
        """Return ``d^order q / ds^order`` at ``s``.

        Parameters
        ----------
        s : float or array_like, shape (...)
            Path coordinates, clipped to ``[s_start, s_end]``.
        order : {0, 1, 2, 3}
            Derivative order.

        Returns
        -------
        numpy.ndarray, shape (..., n)
        """
        if order not in (0, 1, 2, 3):
            raise ValueError(f"order must be 0, 1, 2 or 3, not {order!r}")
        s = np.clip(np.asarray(s, dtype=float), self._start, self._end)
        return self._splines[order](s)

    @classmethod
    def from_waypoints(cls, q, s=None):
        """Return the quintic interpolating spline through joint waypoints.

        Parameters
        ----------
        q : array_like, shape (K, n)
            Waypoints, rad; ``K >= 2`` (with ``K < 6`` the spline is built through extra points
            on the chord-length parametrised linear interpolation, i.e. a straight line).
        s : array_like, shape (K,), optional
            Path coordinates of the waypoints (strictly increasing); default: cumulative chord
            length.

        Returns
        -------
        JointPath

        Raises
        ------
        ValueError
            On bad shapes, repeated waypoints or non-increasing ``s``.
        """
        q = np.asarray(q, dtype=float)
        if q.ndim != 2 or len(q) < 2 or not np.all(np.isfinite(q)):
            raise ValueError(f"q must be a finite array of shape (K, n), K >= 2, not {q.shape}")
        if s is None:
            steps = np.linalg.norm(np.diff(q, axis=0), axis=1)
            if np.any(steps == 0):
                raise ValueError("consecutive waypoints must differ")
            s = np.concatenate([[0.0], np.cumsum(steps)])
        s = np.asarray(s, dtype=float)
        if s.shape != (len(q),) or np.any(np.diff(s) <= 0):
            raise ValueError("s must be strictly increasing with one entry per waypoint")
        if len(q) < 6:
            dense = np.linspace(s[0], s[-1], 6)
            q = np.stack([np.interp(dense, s, q[:, j]) for j in range(q.shape[1])], axis=1)
            s = dense
        return cls(make_interp_spline(s, q, k=5))

    @classmethod
    def from_samples(cls, q, t=None, *, spacing=0.005, max_knots=20000):
        """Return the geometric path of a densely sampled joint trajectory.

        The samples are interpolated in their own parameter ``t`` (a quintic spline
        ``Q(t)``, e.g. the sample times), the joint-space arc length of ``Q`` is measured on a
        10 times finer grid, and points of ``Q`` spaced ``spacing`` apart in arc length become
        the knots of the returned quintic spline ``q(s)``. So ``s`` is the arc length (rad,
        Euclidean norm over the joints) to a good approximation, ``|q'| ~ 1``, the knots lie on
        the interpolated curve (no chords), and the original time law is discarded.

        Parameters
        ----------
        q : array_like, shape (N, n)
            Samples, rad, in path order (e.g. 1 kHz samples of an IK run), ``N >= 6``.
        t : array_like, shape (N,), optional
            Their parameter (strictly increasing); default ``0..N-1``.
        spacing : float
            Distance between spline knots along the path, rad.
        max_knots : int
            Upper bound of the number of knots (the spacing grows on long paths).

        Returns
        -------
        JointPath

        Raises
        ------
        ValueError
            If there are fewer than 6 samples, the samples do not move, ``t`` is not strictly
            increasing or ``spacing`` is not positive.
        """
        q = np.asarray(q, dtype=float)
        if q.ndim != 2 or len(q) < 6 or not np.all(np.isfinite(q)):
            raise ValueError(f"q must be a finite array of shape (N, n) with N >= 6, not "
                             f"{q.shape}")
        t = np.arange(len(q), dtype=float) if t is None else np.asarray(t, dtype=float)
        if t.shape != (len(q),) or np.any(np.diff(t) <= 0):
            raise ValueError("t must be strictly increasing with one entry per sample")
        spacing = float(spacing)
        if not spacing > 0:
            raise ValueError(f"spacing must be positive, not {spacing!r}")
        curve = make_interp_spline(t, q, k=5)
        fine = np.linspace(t[0], t[-1], 10 * (len(q) - 1) + 1)
        points = curve(fine)
        arc = np.concatenate([[0.0], np.cumsum(np.linalg.norm(np.diff(points, axis=0),
                                                              axis=1))])
        if arc[-1] <= 1e-9:
            raise ValueError("the samples do not move")
        moving = np.concatenate([[True], np.diff(arc) > 0])
        count = int(min(max(6, math.ceil(arc[-1] / spacing) + 1), max_knots))
        s = np.linspace(0.0, arc[-1], count)
        knots = curve(np.interp(s, arc[moving], fine[moving]))
        return cls(make_interp_spline(s, knots, k=5))
