"""Inverse dynamics in the source paper's per-link form: recursive Newton-Euler and its regressor.

The recursion is written link by link exactly as a LinkDyn node computes it (paper Sect. 2,
eqs. 5-18; DESIGN.md Sect. 3), so that the float model, the regressor and the fixed-point golden
model share one structure:

forward, node ``i`` (inputs from node ``i-1``, all in frame ``i``)::

    omega_i     = R^T (omega_{i-1} + qd_i z)
    omega_dot_i = R^T (omega_dot_{i-1} + qdd_i z + qd_i omega_{i-1} x z)
    p_ddot_i    = R^T p_ddot_{i-1} + omega_dot_i x r + omega_i x (omega_i x r)

backward, node ``i`` (input: the wrench of node ``i+1``, already rotated into frame ``i``)::

    (f_i, mu_i) = W_i pi_i + T (f'_{i+1}, mu'_{i+1}) + (f_ext_i, mu_ext_i)      eq. (9)
    tau_i       = mu_i . (R^T z) + tau_F(qd_i)                                   eqs. (7), (20)
    (f'_i, mu'_i) = (R f_i, R mu_i)          sent to node i-1

with ``R = Rz(q_i + offset_i) Rx(alpha_i)``, ``z = (0, 0, 1)``, ``r = (a, d sin alpha,
d cos alpha)`` and ``T (f, mu) = (f, r x f + mu)``. ``f_i`` is the force and ``mu_i`` the moment
about the origin of frame ``i-1`` that link ``i-1`` exerts on link ``i``, both in frame ``i``.
Gravity enters as the base acceleration ``p_ddot_0 = -g``.

All functions broadcast over any number of leading batch dimensions.
"""

from __future__ import annotations

import numpy as np

from .robot import Robot

__all__ = [
    "rnea", "regressor", "forward_recursion", "link_regressor", "friction_regressor",
    "joint_rotation", "link_offset_vector", "rotate", "rotate_transpose", "skew",
]


def skew(v):
    """Return the cross-product matrix ``S(v)`` of eq. (13), shape (..., 3, 3)."""
    v = np.asarray(v)
    zero = np.zeros_like(v[..., 0])
    return np.stack([
        np.stack([zero, -v[..., 2], v[..., 1]], axis=-1),
        np.stack([v[..., 2], zero, -v[..., 0]], axis=-1),
        np.stack([-v[..., 1], v[..., 0], zero], axis=-1),
    ], axis=-2)


def _inertia_operator(w):
    """Return ``L(w)`` of eq. (14), shape (..., 3, 6): ``I w = L(w) (Ixx Ixy Ixz Iyy Iyz Izz)``."""
    zero = np.zeros_like(w[..., 0])
    x, y, z = w[..., 0], w[..., 1], w[..., 2]
    return np.stack([
        np.stack([x, y, z, zero, zero, zero], axis=-1),
        np.stack([zero, x, zero, y, z, zero], axis=-1),
        np.stack([zero, zero, x, zero, y, z], axis=-1),
    ], axis=-2)


def joint_rotation(theta, alpha):
    """Return the sines and cosines that define ``R^{i-1}_i = Rz(theta) Rx(alpha)``.

    Parameters
    ----------
    theta : array_like, shape (...)
        Joint angle ``q + offset``, rad.
    alpha : float
        DH twist, rad.

    Returns
    -------
    tuple of numpy.ndarray
        ``(cos theta, sin theta, cos alpha, sin alpha)``, broadcastable.
    """
    return np.cos(theta), np.sin(theta), np.cos(alpha), np.sin(alpha)


def rotate_transpose(rotation, v):
    """Return ``R^T v`` for ``R = Rz(theta) Rx(alpha)`` given as ``(ct, st, ca, sa)``.

    ``v`` has shape (..., 3); the result is ``v`` expressed in frame ``i`` when ``v`` is in frame
    ``i-1``.
    """
    ct, st, ca, sa = rotation
    x, y, z = v[..., 0], v[..., 1], v[..., 2]
    u = ct * x + st * y
    return np.stack([u, ca * (ct * y - st * x) + sa * z, -sa * (ct * y - st * x) + ca * z],
                    axis=-1)


def rotate(rotation, v):
    """Return ``R v`` for ``R = Rz(theta) Rx(alpha)`` given as ``(ct, st, ca, sa)``.

    ``v`` has shape (..., 3) in frame ``i``; the result is in frame ``i-1``.
    """
    ct, st, ca, sa = rotation
    x, y, z = v[..., 0], v[..., 1], v[..., 2]
    w = ca * y - sa * z
    return np.stack([ct * x - st * w, st * x + ct * w, sa * y + ca * z], axis=-1)


def link_offset_vector(link):
    """Return ``r^i_{i-1,i} = (a, d sin alpha, d cos alpha)``, shape (3,), m, in frame ``i``."""
    return np.array([link.a, link.d * np.sin(link.alpha), link.d * np.cos(link.alpha)])


def forward_recursion(robot, q, qd, qdd, base_motion=None):
    """Run the forward recursion of every node.

    Parameters
    ----------
    robot : Robot
        The robot (n links).
    q, qd, qdd : array_like, shape (..., n)
        Joint positions (rad), velocities (rad/s) and accelerations (rad/s^2).
    base_motion : tuple of array_like, optional
        ``(omega_0, omega_dot_0, p_ddot_0)`` of DH frame 0, each shape (..., 3), in frame 0
        (rad/s, rad/s^2, m/s^2). ``p_ddot_0`` must include ``-g``. Default: a fixed base,
        ``(0, 0, -robot.gravity_base)``.

    Returns
    -------
    list of tuple
        Per node ``i``: ``(rotation, omega_i, omega_dot_i, p_ddot_i)``, the vectors with shape
        (..., 3) in frame ``i``; ``rotation`` as for :func:`rotate`.
    """
    q, qd, qdd = _joint_arrays(robot, q, qd, qdd)
    batch = q.shape[:-1]
    if base_motion is None:
        omega = np.zeros(batch + (3,))
        omega_dot = np.zeros(batch + (3,))
        p_ddot = np.broadcast_to(-robot.gravity_base, batch + (3,))
    else:
        omega, omega_dot, p_ddot = (np.broadcast_to(np.asarray(v, dtype=float), batch + (3,))
                                    for v in base_motion)
    nodes = []
    for i, link in enumerate(robot.links):
        rotation = joint_rotation(q[..., i] + link.offset, link.alpha)
        r = link_offset_vector(link)
        qd_i, qdd_i = qd[..., i], qdd[..., i]
        # omega_{i-1} + qd z and omega_dot_{i-1} + qdd z + qd (omega_{i-1} x z), in frame i-1
        w = omega.copy()
        w[..., 2] += qd_i
        wd = omega_dot.copy()
        wd[..., 0] += qd_i * omega[..., 1]
        wd[..., 1] -= qd_i * omega[..., 0]
        wd[..., 2] += qdd_i
        omega = rotate_transpose(rotation, w)
        omega_dot = rotate_transpose(rotation, wd)
        p_ddot = (rotate_transpose(rotation, p_ddot) + np.cross(omega_dot, r)
                  + np.cross(omega, np.cross(omega, r)))
        nodes.append((rotation, omega, omega_dot, p_ddot))
    return nodes


def link_regressor(omega, omega_dot, p_ddot, r):
    """Return the paper's ``W_i`` (eq. 12): the wrench of one link, linear in its parameters.

    Parameters
    ----------
    omega, omega_dot, p_ddot : array_like, shape (..., 3)
        Angular velocity (rad/s), angular acceleration (rad/s^2) and linear acceleration of the
        origin of frame ``i`` including ``-g`` (m/s^2), in frame ``i``.
    r : array_like, shape (3,)
        ``r^i_{i-1,i}``, m, in frame ``i``.

    Returns
    -------
    numpy.ndarray, shape (..., 6, 10)
        ``(f_i, mu_i) = W_i pi_i`` for the parameters of eq. (11); ``mu_i`` is the moment about
        the origin of frame ``i-1``.
    """
    batch = np.broadcast_shapes(omega.shape, omega_dot.shape, p_ddot.shape)[:-1]
    s_r = skew(np.broadcast_to(r, batch + (3,)))
    s_w = skew(omega)
    k = skew(omega_dot) + s_w @ s_w
    w = np.zeros(batch + (6, 10))
    w[..., 0:3, 0] = p_ddot
    w[..., 0:3, 1:4] = k
    w[..., 3:6, 0] = np.einsum("...ij,...j->...i", s_r, p_ddot)
    w[..., 3:6, 1:4] = s_r @ k - skew(p_ddot)
    w[..., 3:6, 4:10] = _inertia_operator(omega_dot) + s_w @ _inertia_operator(omega)
    return w


def friction_regressor(qd, steepness):
    """Return the friction regressor of eq. (20), shape (..., n, 3): ``(atan(k qd), qd, 1)``.

    Parameters
    ----------
    qd : array_like, shape (..., n)
        Joint velocities, rad/s.
    steepness : array_like, shape (n,)
        ``atan`` steepness ``k`` per joint, s/rad.
    """
    qd = np.asarray(qd, dtype=float)
    return np.stack([np.arctan(steepness * qd), qd, np.ones_like(qd)], axis=-1)


def _joint_arrays(robot, q, qd, qdd):
    if not isinstance(robot, Robot):
        raise TypeError(f"robot must be a Robot, not {type(robot).__name__}")
    arrays = []
    for name, value in (("q", q), ("qd", qd), ("qdd", qdd)):
        array = np.asarray(value, dtype=float)
        if array.ndim == 0 or array.shape[-1] != robot.n:
            raise ValueError(f"{name} must have shape (..., {robot.n}) for robot "
                             f"{robot.name!r}, not {array.shape}")
        arrays.append(array)
    shape = np.broadcast_shapes(*(a.shape for a in arrays))
    return tuple(np.broadcast_to(a, shape) for a in arrays)


def _external_wrench(robot, f_ext, batch):
    if f_ext is None:
        return None
    f_ext = np.asarray(f_ext, dtype=float)
    if f_ext.shape[-2:] != (robot.n, 6):
        raise ValueError(f"f_ext must have shape (..., {robot.n}, 6), not {f_ext.shape}")
    return np.broadcast_to(f_ext, batch + (robot.n, 6))


def rnea(robot, q, qd, qdd, gravity=None, f_ext=None):
    """Compute the inverse dynamics ``tau = f(q, qd, qdd)`` by the per-link recursion.

    Parameters
    ----------
    robot : Robot
        The robot (n revolute joints).
    q, qd, qdd : array_like, shape (..., n)
        Joint positions (rad), velocities (rad/s), accelerations (rad/s^2); leading dimensions
        are a batch and broadcast against each other.
    gravity : array_like, shape (3,), optional
        Gravity in the world frame, m/s^2; default ``robot.gravity``.
    f_ext : array_like, shape (..., n, 6), optional
        External wrench on every link: ``(f, mu)``, the force (N) and the moment about the
        origin of DH frame ``i`` (N·m) that link ``i`` *exerts on its environment*, in frame
        ``i``. A payload of mass ``m_p`` at ``c`` held still is ``(-m_p g, c x (-m_p g))`` with
        ``g`` in frame ``i``. It enters eq. (9) like one more distal body.

    Returns
    -------
    numpy.ndarray, shape (..., n)
        Joint torques, N·m, including friction (eq. 20) when the robot has it.

    Raises
    ------
    TypeError
        If ``robot`` is not a :class:`Robot`.
    ValueError
        If an array has the wrong trailing dimension.
    """
    if gravity is not None:
        robot = _with_gravity(robot, gravity)
    nodes = forward_recursion(robot, q, qd, qdd)
    q, qd, qdd = _joint_arrays(robot, q, qd, qdd)
    batch = q.shape[:-1]
    f_ext = _external_wrench(robot, f_ext, batch)
    tau = np.empty(batch + (robot.n,))
    wrench = np.zeros(batch + (6,))  # (f', mu') from the distal neighbour, in frame i
    for i in reversed(range(robot.n)):
        link = robot.links[i]
        rotation, omega, omega_dot, p_ddot = nodes[i]
        r = link_offset_vector(link)
        w_i = link_regressor(omega, omega_dot, p_ddot, r)
        own = np.einsum("...jk,k->...j", w_i, link.parameters())
        f = own[..., :3] + wrench[..., :3]
        mu = own[..., 3:] + np.cross(r, wrench[..., :3]) + wrench[..., 3:]
        if f_ext is not None:
            f = f + f_ext[..., i, :3]
            mu = mu + np.cross(r, f_ext[..., i, :3]) + f_ext[..., i, 3:]
        ct, st, ca, sa = rotation
        tau[..., i] = sa * mu[..., 1] + ca * mu[..., 2]
        wrench = np.concatenate([rotate(rotation, f), rotate(rotation, mu)], axis=-1)
    if robot.has_friction:
        fr = np.stack([link.friction.parameters for link in robot.links])
        tau = tau + np.einsum("...ij,ij->...i", friction_regressor(qd, robot.steepness), fr)
    return tau


def regressor(robot, q, qd, qdd, gravity=None):
    """Compute the regressor ``Y`` with ``rnea(robot, q, qd, qdd) == Y @ robot.parameters()``.

    Built from the same per-link code as :func:`rnea` (paper eqs. 8, 12-18, 20): every link's
    ``W_j`` is carried towards the base through ``T`` and projected on the joint axes.

    Parameters
    ----------
    robot : Robot
        The robot (n revolute joints); only its kinematics and friction steepness are used.
    q, qd, qdd : array_like, shape (..., n)
        Joint positions (rad), velocities (rad/s), accelerations (rad/s^2).
    gravity : array_like, shape (3,), optional
        Gravity in the world frame, m/s^2; default ``robot.gravity``.

    Returns
    -------
    numpy.ndarray, shape (..., n, 13 n)
        Columns ordered as :meth:`Robot.parameters`: 10 inertial parameters per link, then
        ``(F_c, F_v, F_o)`` per joint.
    """
    if gravity is not None:
        robot = _with_gravity(robot, gravity)
    n = robot.n
    nodes = forward_recursion(robot, q, qd, qdd)
    q, qd, qdd = _joint_arrays(robot, q, qd, qdd)
    batch = q.shape[:-1]
    y = np.zeros(batch + (n, 13 * n))
    # Wrench of node i+1 as a function of the parameters of links i+1..n, rotated into frame i.
    carried = np.zeros(batch + (6, 10 * n))
    for i in reversed(range(n)):
        link = robot.links[i]
        rotation, omega, omega_dot, p_ddot = nodes[i]
        r = link_offset_vector(link)
        wrench = carried.copy()
        # T: the distal force's moment about the origin of frame i-1.
        wrench[..., 3:6, :] += np.cross(r, carried[..., 0:3, :], axisa=0, axisb=-2, axisc=-2)
        wrench[..., :, 10 * i:10 * i + 10] += link_regressor(omega, omega_dot, p_ddot, r)
        ct, st, ca, sa = rotation
        y[..., i, :10 * n] = sa[..., None] * wrench[..., 4, :] + ca * wrench[..., 5, :]
        # (R f, R mu): rotate both 3-row blocks, column by column.
        f = np.swapaxes(wrench[..., 0:3, :], -1, -2)
        mu = np.swapaxes(wrench[..., 3:6, :], -1, -2)
        expand = tuple(np.asarray(c)[..., None] for c in rotation)
        carried = np.concatenate([np.swapaxes(rotate(expand, f), -1, -2),
                                  np.swapaxes(rotate(expand, mu), -1, -2)], axis=-2)
    fr = friction_regressor(qd, robot.steepness)
    for i in range(n):
        y[..., i, 10 * n + 3 * i:10 * n + 3 * i + 3] = fr[..., i, :]
    return y


def _with_gravity(robot, gravity):
    from dataclasses import replace
    return replace(robot, gravity=np.asarray(gravity, dtype=float))
