"""Kinematics and joint-space inertia of a standard-DH :class:`~linkdyn.model.Robot`.

The one forward kinematics of the project: the URDF import checks its DH construction with it,
excitation design (Cartesian limits on link origins) and the trajectory tools (inverse
kinematics, virtual forward dynamics) use it.

Frames and conventions (the per-node algorithm of docs/architecture.md): the world frame is the
robot's reference frame;
``robot.base`` is the pose of DH frame 0 in it; DH frame ``i`` (``i = 1..n``) is attached to link
``i`` with its origin on the axis of joint ``i + 1``, and ``T^{i-1}_i = Rz(q_i + offset_i)
Tz(d_i) Tx(a_i) Rx(alpha_i)``; the tool frame is ``frames[n] @ robot.tool``. Joint ``i`` turns
about ``z_{i-1}``, the z axis of DH frame ``i - 1``, through that frame's origin.

Every function takes joint angles of shape ``(..., n)`` (rad) and broadcasts over the leading
batch dimensions. Units: m, rad, kg, kg·m^2, s.

Velocities are *geometric*: a 6-vector ``(v, omega)`` holds the linear velocity of a point
(m/s) and the angular velocity of the body (rad/s), both in world axes -- the same as
Pinocchio's ``LOCAL_WORLD_ALIGNED`` convention (linear part first).
"""

from __future__ import annotations

import numpy as np

from .robot import Robot

__all__ = [
    "link_transforms", "link_frames", "link_origins", "tool_pose", "forward_kinematics",
    "jacobian",
    "jacobian_dot_qd", "joint_space_inertia", "rotation_error", "pose_error",
]


# Levi-Civita symbol: cross(a, b)_i = eps_ijk a_j b_k (einsum is several times faster than
# numpy.cross on the small arrays of a control loop).
_EPS = np.zeros((3, 3, 3))
_EPS[0, 1, 2] = _EPS[1, 2, 0] = _EPS[2, 0, 1] = 1.0
_EPS[0, 2, 1] = _EPS[2, 1, 0] = _EPS[1, 0, 2] = -1.0


def _cross(a, b):
    return np.einsum("ijk,...j,...k->...i", _EPS, a, b)


class _Constants:
    """Per-robot arrays used at every call (a Robot is immutable, so they never change)."""

    def __init__(self, robot):
        dh = robot.dh
        self.a, self.d, self.offset = dh[:, 0], dh[:, 1], dh[:, 3]
        self.ca, self.sa = np.cos(dh[:, 2]), np.sin(dh[:, 2])
        self.mass = np.array([link.mass for link in robot.links])
        self.com = np.stack([link.com for link in robot.links])
        self.inertia = np.stack([link.inertia for link in robot.links])
        self.upper = np.triu(np.ones((robot.n, robot.n), dtype=bool))
        self.prismatic = np.array([link.joint_type == "prismatic" for link in robot.links])
        self.mounts = (np.stack([_dh_transform(*link.mount) for link in robot.links])
                       if any(link.has_mount for link in robot.links) else None)


_CACHE = {}


def _constants(robot):
    entry = _CACHE.get(id(robot))
    if entry is None or entry[0] is not robot:
        if len(_CACHE) > 64:
            _CACHE.clear()
        entry = (robot, _Constants(robot))
        _CACHE[id(robot)] = entry
    return entry[1]


def _joint_angles(robot, q):
    if not isinstance(robot, Robot):
        raise TypeError(f"robot must be a Robot, not {type(robot).__name__}")
    q = np.asarray(q, dtype=float)
    if q.ndim == 0 or q.shape[-1] != robot.n:
        raise ValueError(f"q must have shape (..., {robot.n}) for robot {robot.name!r}, "
                         f"not {q.shape}")
    return q


def link_transforms(robot, q):
    """Return the DH transforms ``T^{i-1}_i`` of every link.

    Parameters
    ----------
    robot : Robot
        The robot (``n`` revolute joints).
    q : array_like, shape (..., n)
        Joint angles, rad.

    Returns
    -------
    numpy.ndarray, shape (..., n, 4, 4)
        Entry ``i - 1`` maps DH frame ``i`` coordinates to the coordinates of the DH frame of
        link ``i``'s parent (frame ``i - 1`` in a chain), the link's mount included; a
        prismatic joint moves ``d`` (``q`` in m).

    Raises
    ------
    TypeError
        If ``robot`` is not a :class:`~linkdyn.model.Robot`.
    ValueError
        If ``q`` does not end in ``n``.
    """
    q = _joint_angles(robot, q)
    const = _constants(robot)
    if const.prismatic.any():
        # Prismatic joints: theta = offset, d = q + d (the robot module docstring).
        theta = np.where(const.prismatic, const.offset, q + const.offset)
        d = np.where(const.prismatic, q + const.d, const.d)
    else:
        theta, d = q + const.offset, const.d
    ct, st = np.cos(theta), np.sin(theta)
    ca, sa, a = const.ca, const.sa, const.a
    transforms = np.zeros(q.shape + (4, 4))
    transforms[..., 0, 0] = ct
    transforms[..., 0, 1] = -st * ca
    transforms[..., 0, 2] = st * sa
    transforms[..., 0, 3] = a * ct
    transforms[..., 1, 0] = st
    transforms[..., 1, 1] = ct * ca
    transforms[..., 1, 2] = -ct * sa
    transforms[..., 1, 3] = a * st
    transforms[..., 2, 1] = sa
    transforms[..., 2, 2] = ca
    transforms[..., 2, 3] = d
    transforms[..., 3, 3] = 1.0
    if const.mounts is not None:
        transforms = const.mounts @ transforms
    return transforms


def _dh_transform(a, d, alpha, theta):
    """``Rz(theta) Tz(d) Tx(a) Rx(alpha)``, shape (4, 4)."""
    ct, st, ca, sa = np.cos(theta), np.sin(theta), np.cos(alpha), np.sin(alpha)
    return np.array([[ct, -st * ca, st * sa, a * ct], [st, ct * ca, -ct * sa, a * st],
                     [0.0, sa, ca, d], [0.0, 0.0, 0.0, 1.0]])


def _require_chain(robot, what):
    """Refuse a tree or a prismatic joint where only serial revolute chains are implemented."""
    if not robot.is_chain or robot.has_prismatic or any(l.has_mount for l in robot.links):
        raise NotImplementedError(
            f"{what} is implemented for serial chains of revolute joints only; robot "
            f"{robot.name!r} is a tree or has a prismatic joint or a mount")


def link_frames(robot, q):
    """Return the world poses of the DH frames ``0..n``.

    Parameters
    ----------
    robot : Robot
        The robot.
    q : array_like, shape (..., n)
        Joint angles, rad.

    Returns
    -------
    numpy.ndarray, shape (..., n + 1, 4, 4)
        Entry ``i`` maps DH frame ``i`` coordinates to world coordinates; entry 0 is
        ``robot.base``. On a tree, frame ``i`` follows from its parent's frame
        (``robot.parents``).
    """
    steps = link_transforms(robot, q)
    frames = np.empty(steps.shape[:-3] + (robot.n + 1, 4, 4))
    frames[..., 0, :, :] = robot.base
    for i, parent in enumerate(robot.parents):
        frames[..., i + 1, :, :] = frames[..., parent + 1, :, :] @ steps[..., i, :, :]
    return frames


def link_origins(robot, q):
    """Return the world positions of the origins of DH frames ``0..n``.

    Parameters
    ----------
    robot : Robot
        The robot.
    q : array_like, shape (..., n)
        Joint angles, rad.

    Returns
    -------
    numpy.ndarray, shape (..., n + 1, 3)
        Entry ``i`` is the origin of DH frame ``i`` (on the axis of joint ``i + 1``), m.
    """
    return link_frames(robot, q)[..., :3, 3]


def tool_pose(robot, q):
    """Return the world pose of the tool frame, shape (..., 4, 4).

    ``tool_pose(robot, q) = link_frames(robot, q)[..., n, :, :] @ robot.tool``.
    """
    return link_frames(robot, q)[..., -1, :, :] @ robot.tool


def forward_kinematics(robot, q):
    """Return the DH frames and the tool pose.

    Parameters
    ----------
    robot : Robot
        The robot.
    q : array_like, shape (..., n)
        Joint angles, rad.

    Returns
    -------
    frames : numpy.ndarray, shape (..., n + 1, 4, 4)
        World poses of DH frames ``0..n`` (see :func:`link_frames`).
    tool : numpy.ndarray, shape (..., 4, 4)
        World pose of the tool frame.
    """
    frames = link_frames(robot, q)
    return frames, frames[..., -1, :, :] @ robot.tool


def _point_of(robot, frames, link):
    """World position of the Jacobian's point and the number of joints that move it."""
    if link is None:
        tool = frames[..., -1, :, :] @ robot.tool
        return tool[..., :3, 3], robot.n
    if isinstance(link, str):
        names = [l.name for l in robot.links]
        if link not in names:
            raise ValueError(f"robot {robot.name!r} has no link {link!r}; its links are "
                             f"{names!r}")
        link = names.index(link) + 1
    if isinstance(link, bool) or not isinstance(link, (int, np.integer)):
        raise TypeError(f"link must be None, a link name or an int, not {link!r}")
    if not 0 <= link <= robot.n:
        raise ValueError(f"link must be in 0..{robot.n} for robot {robot.name!r}, not {link}")
    return frames[..., link, :3, 3], int(link)


def jacobian(robot, q, link=None, *, frames=None):
    """Return the geometric Jacobian in world axes.

    ``(v, omega) = J(q) qd``: ``v`` is the linear velocity (m/s) of the tool-frame origin (or of
    the origin of DH frame ``link``), ``omega`` the angular velocity (rad/s) of the body that
    carries it, both in world axes (Pinocchio's ``LOCAL_WORLD_ALIGNED``).

    Parameters
    ----------
    robot : Robot
        The robot.
    q : array_like, shape (..., n)
        Joint angles, rad.
    link : None, int or str, optional
        ``None`` (default): the tool frame. An int ``i`` in ``0..n``: the origin of DH frame
        ``i`` (attached to link ``i``; only joints ``1..i`` move it, the other columns are zero).
        A str: the link of that name (same as its 1-based index).
    frames : numpy.ndarray, shape (..., n + 1, 4, 4), optional
        :func:`link_frames` of ``q`` if already computed.

    Returns
    -------
    numpy.ndarray, shape (..., 6, n)
        Rows ``(v_x, v_y, v_z, omega_x, omega_y, omega_z)``, columns joints ``1..n``; m/rad in
        the upper rows, dimensionless in the lower ones.

    Raises
    ------
    ValueError
        If ``q`` has the wrong shape or ``link`` names no link.
    """
    _require_chain(robot, "jacobian")
    if frames is None:
        frames = link_frames(robot, q)
    point, moving = _point_of(robot, frames, link)
    z = frames[..., :-1, :3, 2]                     # (..., n, 3): axis of joint i is z_{i-1}
    origin = frames[..., :-1, :3, 3]
    jac = np.zeros(frames.shape[:-3] + (6, robot.n))
    linear = _cross(z, point[..., None, :] - origin)
    jac[..., :3, :moving] = np.swapaxes(linear, -1, -2)[..., :moving]
    jac[..., 3:, :moving] = np.swapaxes(z, -1, -2)[..., :moving]
    return jac


def jacobian_dot_qd(robot, q, qd, *, frames=None):
    """Return ``Jdot(q, qd) qd`` at the tool: the tool acceleration at zero joint acceleration.

    With ``(v, omega) = J qd`` of :func:`jacobian`, ``d/dt (v, omega) = J qdd + Jdot qd``; this
    function returns the second term: the classical (not spatial) linear acceleration of the
    tool-frame origin (m/s^2) and the angular acceleration (rad/s^2) when ``qdd = 0``, in world
    axes.

    Parameters
    ----------
    robot : Robot
        The robot.
    q, qd : array_like, shape (..., n)
        Joint angles (rad) and velocities (rad/s).
    frames : numpy.ndarray, optional
        :func:`link_frames` of ``q`` if already computed.

    Returns
    -------
    numpy.ndarray, shape (..., 6)
    """
    q = _joint_angles(robot, q)
    _require_chain(robot, "jacobian_dot_qd")
    qd = np.asarray(qd, dtype=float)
    if frames is None:
        frames = link_frames(robot, q)
    tool = frames[..., -1, :, :] @ robot.tool
    p = tool[..., :3, 3]
    z = frames[..., :-1, :3, 2]
    o = frames[..., :-1, :3, 3]
    w = qd[..., :, None] * z                           # qd_k z_k
    omega_before = np.cumsum(w, axis=-2) - w           # angular velocity of frame k-1
    w_cross_o = _cross(w, o)
    # velocity of o_k: sum_{m<k} qd_m z_m x (o_k - o_m)
    o_dot = _cross(omega_before, o) - (np.cumsum(w_cross_o, axis=-2) - w_cross_o)
    omega = np.sum(w, axis=-2)
    p_dot = _cross(omega, p) - np.sum(w_cross_o, axis=-2)
    z_dot = _cross(omega_before, z)
    linear = (_cross(z_dot, p[..., None, :] - o)
              + _cross(z, p_dot[..., None, :] - o_dot))
    result = np.empty(q.shape[:-1] + (6,))
    result[..., :3] = np.sum(qd[..., :, None] * linear, axis=-2)
    result[..., 3:] = np.sum(qd[..., :, None] * z_dot, axis=-2)
    return result


def joint_space_inertia(robot, q, *, frames=None):
    """Return the joint-space inertia matrix ``H(q)`` by the composite rigid body algorithm.

    ``H`` is the matrix of the kinetic energy ``T = qd^T H qd / 2`` of the robot's links
    (mass, centre of mass and inertia of every :class:`~linkdyn.model.Link`; friction and
    gravity play no part). Composite body ``j`` is links ``j..n`` (everything joint ``j``
    moves); with ``M_j``, its first moment ``h_j`` and inertia ``I_{O,j}`` about the world
    origin, ``H_ij`` (``i <= j``) is the component along joint ``i``'s axis of composite
    ``j``'s angular momentum, about a point of that axis, when joint ``j`` turns at 1 rad/s
    (Featherstone's ``H_ij = S_i^T I^c_j S_j``, written in world coordinates).

    Any :class:`~linkdyn.model.Robot` works, including a *virtual* model with made-up masses
    (:func:`linkdyn.host.trajectory.ik.virtual_robot`).

    Parameters
    ----------
    robot : Robot
        The robot (its links' inertial parameters are used).
    q : array_like, shape (..., n)
        Joint angles, rad.
    frames : numpy.ndarray, optional
        :func:`link_frames` of ``q`` if already computed.

    Returns
    -------
    numpy.ndarray, shape (..., n, n)
        Symmetric positive semi-definite, kg·m^2.
    """
    q = _joint_angles(robot, q)
    _require_chain(robot, "joint_space_inertia")
    if frames is None:
        frames = link_frames(robot, q)
    const = _constants(robot)
    rotation = frames[..., 1:, :3, :3]                # link i's frame, (..., n, 3, 3)
    origin = frames[..., 1:, :3, 3]
    mass, com_local, inertia_local = const.mass, const.com, const.inertia
    com = origin + np.einsum("...ij,...j->...i", rotation, com_local)
    inertia_com = rotation @ inertia_local @ np.swapaxes(rotation, -1, -2)
    first = mass[:, None] * com
    # Inertia about the world origin: I_c + m (|c|^2 E - c c^T).
    eye = np.eye(3)
    inertia_o = (inertia_com + mass[:, None, None]
                 * (np.sum(com * com, axis=-1)[..., None, None] * eye
                    - com[..., :, None] * com[..., None, :]))

    # Suffix sums over links j..n (composite bodies).
    big_m = np.cumsum(np.broadcast_to(mass, q.shape)[..., ::-1], axis=-1)[..., ::-1]
    big_h = np.cumsum(first[..., ::-1, :], axis=-2)[..., ::-1, :]
    big_i = np.cumsum(inertia_o[..., ::-1, :, :], axis=-3)[..., ::-1, :, :]

    z = frames[..., :-1, :3, 2]           # axis of joint j
    o = frames[..., :-1, :3, 3]           # a point of that axis
    # Angular momentum about the world origin of composite j turning about axis j at 1 rad/s:
    # L_O = I_O z_j + h_j x ... written with v(x) = z_j x (x - o_j):
    #   L_O = sum m x x (z_j x (x - o_j)) + sum I_c z_j = I_O z_j - h_j x (z_j x o_j)
    # Linear momentum: p = z_j x (h_j - M_j o_j). About a point a: L_a = L_O - a x p.
    iz = np.einsum("...ij,...j->...i", big_i, z)
    zxo = _cross(z, o)
    l_origin = iz - _cross(big_h, zxo)                            # (..., n_j, 3)
    momentum = _cross(z, big_h - big_m[..., None] * o)            # (..., n_j, 3)
    # H_ij = z_i . (L_O,j - o_i x p_j) = z_i . L_O,j - (z_i x o_i) . p_j   for i <= j.
    h = (np.einsum("...ik,...jk->...ij", z, l_origin)
         - np.einsum("...ik,...jk->...ij", zxo, momentum))
    return np.where(const.upper, h, np.swapaxes(h, -1, -2))


def _vee(m):
    return np.stack([m[..., 2, 1] - m[..., 1, 2], m[..., 0, 2] - m[..., 2, 0],
                     m[..., 1, 0] - m[..., 0, 1]], axis=-1)


def rotation_error(rotation_desired, rotation):
    """Return the rotation vector of ``R_d R^T`` (world axes), rad.

    ``exp(S(e)) R = R_d``: turning the current orientation about ``e / |e|`` by ``|e|`` gives
    the desired one. For small errors ``e`` is the orientation part of a world-frame pose error
    compatible with the angular velocity of :func:`jacobian`.

    Parameters
    ----------
    rotation_desired, rotation : array_like, shape (..., 3, 3)
        Rotation matrices.

    Returns
    -------
    numpy.ndarray, shape (..., 3)
        Rotation vector, ``|e|`` in ``[0, pi]``.
    """
    r = np.asarray(rotation_desired, dtype=float) @ np.swapaxes(np.asarray(rotation), -1, -2)
    cos = np.clip((np.trace(r, axis1=-2, axis2=-1) - 1.0) / 2.0, -1.0, 1.0)
    angle = np.arccos(cos)
    v = _vee(r)                                   # 2 sin(angle) * axis
    sin = np.sin(angle)
    small = sin < 1e-6
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = np.where(small, 0.5 + angle ** 2 / 12.0, angle / (2.0 * np.where(small, 1, sin)))
    result = scale[..., None] * v
    near_pi = small & (cos < 0)
    if np.any(near_pi):
        # Axis from the symmetric part: R = 2 a a^T - E at angle pi.
        sym = 0.5 * (r[near_pi] + np.swapaxes(r[near_pi], -1, -2)) + np.eye(3)
        column = np.argmax(np.einsum("...ii->...i", sym), axis=-1)
        axis = np.take_along_axis(sym, column[:, None, None], axis=-1)[..., 0]
        axis /= np.linalg.norm(axis, axis=-1, keepdims=True)
        sign = np.where(np.einsum("...i,...i->...", axis, v) < 0, -1.0, 1.0)
        result[near_pi] = (sign * angle[near_pi])[:, None] * axis
    return result


def pose_error(pose_desired, pose):
    """Return the 6-vector pose error ``(p_d - p, rotation_error(R_d, R))`` in world axes.

    Parameters
    ----------
    pose_desired, pose : array_like, shape (..., 4, 4)
        Homogeneous transforms (world <- frame).

    Returns
    -------
    numpy.ndarray, shape (..., 6)
        Position error (m) and rotation vector (rad).
    """
    pose_desired = np.asarray(pose_desired, dtype=float)
    pose = np.asarray(pose, dtype=float)
    error = np.empty(np.broadcast_shapes(pose_desired.shape, pose.shape)[:-2] + (6,))
    error[..., :3] = pose_desired[..., :3, 3] - pose[..., :3, 3]
    error[..., 3:] = rotation_error(pose_desired[..., :3, :3], pose[..., :3, :3])
    return error
