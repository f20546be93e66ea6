"""Cartesian paths for the tool: a Lissajous figure-eight, straight lines and waypoints.

Every constructor returns a :class:`CartesianPath` sampled at the control rate (default 1 kHz):
the tool pose, its twist and the time derivative of the twist at ``t_k = k / rate``, all in
world axes, SI units. Velocities follow :mod:`linkdyn.model.kinematics`: ``(v, omega)``
is the linear velocity of the tool-frame origin and the angular velocity, and the acceleration
is its time derivative (classical, not spatial, acceleration).

Every path starts and ends at rest with zero acceleration (smooth time laws whose velocity,
acceleration and jerk are continuous), so that it can be tracked from standstill.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.interpolate import make_interp_spline
from scipy.spatial.transform import Rotation

__all__ = ["CartesianPath", "figure_eight", "line", "waypoints", "smoothstep"]


@dataclass(frozen=True)
class CartesianPath:
    """A tool path sampled at a fixed rate.

    Attributes
    ----------
    name : str
        What the path is (e.g. ``"figure-eight"``).
    t : numpy.ndarray, shape (N,)
        Sample times, s, ``t[k] = k / rate``.
    position : numpy.ndarray, shape (N, 3)
        Tool-frame origin in the world frame, m.
    rotation : numpy.ndarray, shape (N, 3, 3)
        Tool orientation (world <- tool).
    velocity : numpy.ndarray, shape (N, 6)
        ``(v, omega)``: m/s and rad/s, world axes.
    acceleration : numpy.ndarray, shape (N, 6)
        Time derivative of ``velocity``: m/s^2 and rad/s^2.
    """

    name: str
    t: np.ndarray
    position: np.ndarray
    rotation: np.ndarray
    velocity: np.ndarray
    acceleration: np.ndarray

    @property
    def rate(self):
        """float: sample rate, Hz."""
        return 1.0 / (self.t[1] - self.t[0])

    @property
    def duration(self):
        """float: time of the last sample, s."""
        return float(self.t[-1])

    @property
    def pose(self):
        """numpy.ndarray, shape (N, 4, 4): homogeneous tool poses (world <- tool)."""
        pose = np.zeros((len(self.t), 4, 4))
        pose[:, :3, :3] = self.rotation
        pose[:, :3, 3] = self.position
        pose[:, 3, 3] = 1.0
        return pose

    def __len__(self):
        return len(self.t)


def smoothstep(x):
    """Return the quintic smooth step and its first three derivatives.

    ``sigma(x) = 10 x^3 - 15 x^4 + 6 x^5`` on ``[0, 1]`` (0 before, 1 after): its first and
    second derivatives vanish at both ends, so a velocity shaped by it has continuous
    acceleration and jerk.

    Parameters
    ----------
    x : array_like
        Normalised time.

    Returns
    -------
    tuple of numpy.ndarray
        ``(sigma, sigma', sigma'', integral of sigma from 0)``.
    """
    x = np.clip(np.asarray(x, dtype=float), 0.0, 1.0)
    value = x ** 3 * (10 - 15 * x + 6 * x ** 2)
    first = 30 * x ** 2 * (1 - x) ** 2
    second = 60 * x * (1 - x) * (1 - 2 * x)
    integral = x ** 4 * (2.5 - 3 * x + x ** 2)
    return value, first, second, integral


def _check_rate(rate):
    rate = float(rate)
    if not math.isfinite(rate) or rate <= 0:
        raise ValueError(f"rate must be a positive number of Hz, not {rate!r}")
    return rate


def _check_positive(value, what, unit):
    value = float(value)
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{what} must be a positive number of {unit}, not {value!r}")
    return value


def _check_rotation(rotation, what="orientation"):
    rotation = np.asarray(rotation, dtype=float)
    if (rotation.shape != (3, 3) or not np.allclose(rotation @ rotation.T, np.eye(3), atol=1e-9)
            or not np.isclose(np.linalg.det(rotation), 1.0, atol=1e-9)):
        raise ValueError(f"{what} must be a 3x3 rotation matrix, not {rotation.tolist()!r}")
    return rotation


def _check_point(point, what):
    point = np.asarray(point, dtype=float)
    if point.shape != (3,) or not np.all(np.isfinite(point)):
        raise ValueError(f"{what} must be 3 finite coordinates in m, not {point!r}")
    return point


def _times(duration, rate):
    count = int(math.floor(duration * rate + 1e-9)) + 1
    return np.arange(count) / rate


def figure_eight(centre, orientation=None, *, size=0.3, period=4.0, cycles=1, ramp=None,
                 rate=1000.0):
    """Return a Lissajous figure-eight, as tracked in the source paper's Sect. 4.4.

    In the x-y plane of ``orientation`` (whose z axis is the plane normal)::

        p(phi) = centre + (size / 2) sin(phi) x_o + (size / 4) sin(2 phi) y_o

    The tool keeps the constant orientation ``orientation``. The phase ``phi(t)`` accelerates
    from rest over ``ramp`` seconds (velocity shaped by :func:`smoothstep`), runs at
    ``2 pi / period`` and slows down to rest over ``ramp`` seconds, so that the eight is drawn
    exactly ``cycles`` times, starting and ending at ``centre``.

    Parameters
    ----------
    centre : array_like, shape (3,)
        Crossing point of the eight, world frame, m.
    orientation : array_like, shape (3, 3), optional
        Tool orientation and plane of the eight (world <- tool). Default identity.
    size : float
        Width of the eight along ``x_o``, m (its height along ``y_o`` is half of it).
    period : float
        Period of one eight at full speed, s.
    cycles : int
        Number of eights, ``>= 1``.
    ramp : float, optional
        Fade-in and fade-out time, s; default one period (as in the source paper). At most
        ``cycles * period``.
    rate : float
        Sample rate, Hz.

    Returns
    -------
    CartesianPath
        Duration ``cycles * period + ramp``.

    Raises
    ------
    ValueError
        On a non-positive size, period or rate, ``cycles < 1``, a ramp out of range, or an
        orientation that is not a rotation matrix.
    """
    centre = _check_point(centre, "centre")
    orientation = _check_rotation(np.eye(3) if orientation is None else orientation)
    size = _check_positive(size, "size", "m")
    period = _check_positive(period, "period", "s")
    rate = _check_rate(rate)
    if isinstance(cycles, bool) or not isinstance(cycles, (int, np.integer)) or cycles < 1:
        raise ValueError(f"cycles must be an int >= 1, not {cycles!r}")
    ramp = period if ramp is None else _check_positive(ramp, "ramp", "s")
    if ramp > cycles * period + 1e-12:
        raise ValueError(f"ramp ({ramp} s) must not exceed cycles * period "
                         f"({cycles * period} s)")
    omega = 2 * math.pi / period
    cruise = cycles * period - ramp
    duration = cycles * period + ramp
    t = _times(duration, rate)

    # Phase and its derivatives: ramp up, cruise, ramp down (mirror image of the ramp up).
    up, up_d, up_dd, up_int = smoothstep(t / ramp)
    down_x = (duration - t) / ramp
    down, down_d, down_dd, down_int = smoothstep(down_x)
    total_phase = 2 * math.pi * cycles
    phase = np.where(t <= ramp, omega * ramp * up_int,
                     np.where(t <= ramp + cruise, omega * ramp * 0.5 + omega * (t - ramp),
                              total_phase - omega * ramp * down_int))
    phase_d = np.where(t <= ramp, omega * up, np.where(t <= ramp + cruise, omega, omega * down))
    phase_dd = np.where(t <= ramp, omega * up_d / ramp,
                        np.where(t <= ramp + cruise, 0.0, -omega * down_d / ramp))

    half = size / 2
    x_axis, y_axis = orientation[:, 0], orientation[:, 1]
    s1, c1, s2, c2 = np.sin(phase), np.cos(phase), np.sin(2 * phase), np.cos(2 * phase)
    p = centre + half * s1[:, None] * x_axis + 0.5 * half * s2[:, None] * y_axis
    dp = half * c1[:, None] * x_axis + half * c2[:, None] * y_axis
    ddp = -half * s1[:, None] * x_axis - 2 * half * s2[:, None] * y_axis
    velocity = np.zeros((len(t), 6))
    acceleration = np.zeros((len(t), 6))
    velocity[:, :3] = dp * phase_d[:, None]
    acceleration[:, :3] = ddp * phase_d[:, None] ** 2 + dp * phase_dd[:, None]
    rotation = np.broadcast_to(orientation, (len(t), 3, 3)).copy()
    return CartesianPath("figure-eight", t, p, rotation, velocity, acceleration)


def line(start, end, duration, orientation=None, end_orientation=None, *, rate=1000.0):
    """Return a straight line from ``start`` to ``end`` with a smooth rest-to-rest time law.

    The path coordinate follows ``sigma(t / duration)`` of :func:`smoothstep`, so velocity,
    acceleration and jerk are continuous and zero at both ends. The orientation turns at a
    constant axis from ``orientation`` to ``end_orientation`` with the same time law
    (``R(t) = R_0 exp(sigma(t) log(R_0^T R_1))``).

    Parameters
    ----------
    start, end : array_like, shape (3,)
        Tool positions, world frame, m.
    duration : float
        Travel time, s.
    orientation : array_like, shape (3, 3), optional
        Start orientation; default identity.
    end_orientation : array_like, shape (3, 3), optional
        End orientation; default ``orientation``.
    rate : float
        Sample rate, Hz.

    Returns
    -------
    CartesianPath
    """
    start = _check_point(start, "start")
    end = _check_point(end, "end")
    duration = _check_positive(duration, "duration", "s")
    rate = _check_rate(rate)
    r0 = _check_rotation(np.eye(3) if orientation is None else orientation)
    r1 = r0 if end_orientation is None else _check_rotation(end_orientation, "end_orientation")
    t = _times(duration, rate)
    x = t / duration
    sigma, sigma_d, sigma_dd, _ = smoothstep(x)
    sigma_d = sigma_d / duration
    sigma_dd = sigma_dd / duration ** 2
    delta = end - start
    position = start + sigma[:, None] * delta
    rotvec = Rotation.from_matrix(r0.T @ r1).as_rotvec()   # body-frame axis * angle
    rotation = r0 @ Rotation.from_rotvec(sigma[:, None] * rotvec).as_matrix()
    world_axis = r0 @ rotvec                                # constant in world axes too
    velocity = np.zeros((len(t), 6))
    acceleration = np.zeros((len(t), 6))
    velocity[:, :3] = sigma_d[:, None] * delta
    velocity[:, 3:] = sigma_d[:, None] * world_axis
    acceleration[:, :3] = sigma_dd[:, None] * delta
    acceleration[:, 3:] = sigma_dd[:, None] * world_axis
    return CartesianPath("line", t, position, rotation, velocity, acceleration)


def _left_jacobian(r):
    """Left Jacobian of SO(3): ``omega_world = R_0 J_l(r) rdot`` for ``R = R_0 exp(S(r))``."""
    angle = np.linalg.norm(r, axis=-1)[..., None, None]
    s = np.zeros(r.shape + (3,))
    s[..., 0, 1], s[..., 0, 2], s[..., 1, 2] = -r[..., 2], r[..., 1], -r[..., 0]
    s[..., 1, 0], s[..., 2, 0], s[..., 2, 1] = r[..., 2], -r[..., 1], r[..., 0]
    small = angle < 1e-4
    safe = np.where(small, 1.0, angle)
    c1 = np.where(small, 0.5 - angle ** 2 / 24, (1 - np.cos(safe)) / safe ** 2)
    c2 = np.where(small, 1 / 6 - angle ** 2 / 120, (safe - np.sin(safe)) / safe ** 3)
    return np.eye(3) + c1 * s + c2 * (s @ s)


def waypoints(positions, times, orientations=None, *, rate=1000.0):
    """Return a smooth path through waypoints, at rest at the first and the last one.

    Positions, and the rotation vectors ``r_k = log(R_0^T R_k)`` of the orientations relative
    to the first one, are interpolated by quintic splines through every waypoint at its time
    with zero velocity and acceleration at both ends; ``R(t) = R_0 exp(S(r(t)))``. The angular
    velocity is ``R_0 J_l(r) rdot`` (left Jacobian of SO(3)), the angular acceleration
    ``R_0 (J_l rddot + Jdot_l rdot)`` with ``Jdot_l`` a central difference along ``rdot``.

    Parameters
    ----------
    positions : array_like, shape (K, 3)
        Tool positions, world frame, m; ``K >= 2``.
    times : array_like, shape (K,)
        Strictly increasing times, s, starting at 0.
    orientations : array_like, shape (K, 3, 3), optional
        Tool orientations; default: all identity. Every one must be less than pi rad away from
        the first (the rotation vectors are not unwrapped).
    rate : float
        Sample rate, Hz.

    Returns
    -------
    CartesianPath

    Raises
    ------
    ValueError
        On wrong shapes, times not strictly increasing or not starting at 0, or an orientation
        pi rad or more away from the first.
    """
    positions = np.asarray(positions, dtype=float)
    times = np.asarray(times, dtype=float)
    rate = _check_rate(rate)
    if positions.ndim != 2 or positions.shape[1] != 3 or len(positions) < 2:
        raise ValueError(f"positions must have shape (K, 3) with K >= 2, not {positions.shape}")
    if not np.all(np.isfinite(positions)):
        raise ValueError("positions must be finite")
    if times.shape != (len(positions),) or times[0] != 0 or np.any(np.diff(times) <= 0):
        raise ValueError("times must be strictly increasing, start at 0 and have one entry per "
                         f"waypoint, not {times.tolist()!r}")
    if orientations is None:
        orientations = np.broadcast_to(np.eye(3), (len(positions), 3, 3))
    orientations = np.asarray(orientations, dtype=float)
    if orientations.shape != (len(positions), 3, 3):
        raise ValueError(f"orientations must have shape ({len(positions)}, 3, 3), not "
                         f"{orientations.shape}")
    for k, r in enumerate(orientations):
        _check_rotation(r, f"orientation {k}")
    r0 = orientations[0]
    rotvecs = Rotation.from_matrix(r0.T @ orientations).as_rotvec()
    if np.any(np.linalg.norm(rotvecs, axis=1) > math.pi - 1e-6):
        raise ValueError("every orientation must be less than pi rad away from the first")
    rest = ([(1, np.zeros(6)), (2, np.zeros(6))], [(1, np.zeros(6)), (2, np.zeros(6))])
    if len(times) < 3:
        # A quintic through two points with both ends clamped needs no interior knot.
        times_fit = np.linspace(times[0], times[-1], 3)
        data = np.concatenate([positions, rotvecs], axis=1)
        values = data[0] + np.outer(smoothstep(times_fit / times[-1])[0], data[1] - data[0])
        spline = make_interp_spline(times_fit, values, k=5, bc_type=rest)
    else:
        spline = make_interp_spline(times, np.concatenate([positions, rotvecs], axis=1), k=5,
                                    bc_type=rest)
    t = _times(times[-1], rate)

    values, rates, accels = spline(t), spline(t, 1), spline(t, 2)
    r, r_d, r_dd = values[:, 3:], rates[:, 3:], accels[:, 3:]
    velocity = np.zeros((len(t), 6))
    acceleration = np.zeros((len(t), 6))
    velocity[:, :3] = rates[:, :3]
    acceleration[:, :3] = accels[:, :3]
    jl = _left_jacobian(r)
    # d/dt J_l(r) = directional derivative of J_l along rdot (central difference, step 1e-6).
    h = 1e-6
    jl_dot = (_left_jacobian(r + h * r_d) - _left_jacobian(r - h * r_d)) / (2 * h)
    velocity[:, 3:] = np.einsum("ij,njk,nk->ni", r0, jl, r_d)
    acceleration[:, 3:] = np.einsum("ij,njk,nk->ni", r0, jl, r_dd) + np.einsum(
        "ij,njk,nk->ni", r0, jl_dot, r_d)
    rotation = r0 @ Rotation.from_rotvec(values[:, 3:]).as_matrix()
    return CartesianPath("waypoints", t, values[:, :3], rotation, velocity, acceleration)
