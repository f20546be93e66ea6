"""Forward kinematics of the standard DH frames, for Cartesian limits on link origins.

Frame 0 is ``robot.base`` in the world frame; frame ``i`` follows from frame ``i-1`` by
``A_i = Rz(q_i + offset_i) Tz(d_i) Tx(a_i) Rx(alpha_i)`` (DESIGN.md Sect. 3, the convention of
:mod:`linkdyn.model.robot`). Units: m, rad. All functions broadcast over leading batch axes.
"""

from __future__ import annotations

import numpy as np

from linkdyn.model import Robot

__all__ = ["dh_frames", "link_origins", "origin_jacobian"]


def _joint_positions(robot, q):
    if not isinstance(robot, Robot):
        raise TypeError(f"robot must be a Robot, not {type(robot).__name__}")
    q = np.asarray(q, dtype=float)
    if q.ndim == 0 or q.shape[-1] != robot.n:
        raise ValueError(f"q must have shape (..., {robot.n}), not {q.shape}")
    return q


def dh_frames(robot, q):
    """Return the world poses of DH frames ``0..n``.

    Parameters
    ----------
    robot : Robot
    q : array_like, shape (..., n)
        Joint positions, rad.

    Returns
    -------
    numpy.ndarray, shape (..., n + 1, 4, 4)
        Homogeneous transforms from frame ``i`` to the world frame.
    """
    q = _joint_positions(robot, q)
    batch = q.shape[:-1]
    frames = np.empty(batch + (robot.n + 1, 4, 4))
    frames[..., 0, :, :] = robot.base
    current = np.broadcast_to(robot.base, batch + (4, 4))
    for i, link in enumerate(robot.links):
        theta = q[..., i] + link.offset
        ct, st = np.cos(theta), np.sin(theta)
        ca, sa = np.cos(link.alpha), np.sin(link.alpha)
        a = np.zeros(batch + (4, 4))
        a[..., 0, 0], a[..., 0, 1], a[..., 0, 2], a[..., 0, 3] = ct, -st * ca, st * sa, link.a * ct
        a[..., 1, 0], a[..., 1, 1], a[..., 1, 2], a[..., 1, 3] = st, ct * ca, -ct * sa, link.a * st
        a[..., 2, 1], a[..., 2, 2], a[..., 2, 3] = sa, ca, link.d
        a[..., 3, 3] = 1.0
        current = current @ a
        frames[..., i + 1, :, :] = current
    return frames


def link_origins(robot, q):
    """Return the world positions of the origins of DH frames ``0..n``, shape (..., n + 1, 3), m."""
    return dh_frames(robot, q)[..., :3, 3]


def origin_jacobian(robot, q, frame):
    """Return ``d p_frame / d q``: the position Jacobian of the origin of DH frame ``frame``.

    Parameters
    ----------
    robot : Robot
    q : array_like, shape (..., n)
        Joint positions, rad.
    frame : int
        DH frame index ``0..n`` (0 is the base, which does not move).

    Returns
    -------
    position : numpy.ndarray, shape (..., 3)
        World position of the origin, m.
    jacobian : numpy.ndarray, shape (..., 3, n)
        Column ``i`` is ``z_i x (p - o_i)`` for joints ``i < frame`` (joint ``i+1`` turns about
        ``z_i``), zero otherwise; m/rad.
    """
    if not 0 <= int(frame) <= robot.n:
        raise ValueError(f"frame must be in 0..{robot.n}, not {frame!r}")
    frames = dh_frames(robot, q)
    p = frames[..., frame, :3, 3]
    jacobian = np.zeros(p.shape[:-1] + (3, robot.n))
    for i in range(int(frame)):
        z = frames[..., i, :3, 2]
        o = frames[..., i, :3, 3]
        jacobian[..., :, i] = np.cross(z, p - o)
    return p, jacobian
