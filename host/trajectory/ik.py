"""Inverse kinematics along Cartesian paths: four mappings from Cartesian to joint space.

The mappings are those compared in seed 001 (Scherzinger et al., "Virtual Forward Dynamics
Models for Cartesian Robot Control", Fig. 5 (a)); each turns a Cartesian 6-vector into joint
accelerations, ``qdd = M(q) a``:

``"jinv"``  Jacobian inverse, ``M = J^-1`` (the pseudo-inverse ``J^+`` when ``n != 6``), eq. (4).
``"jt"``    Jacobian transpose, ``M = k J^T`` (Wolovich and Elliott, seed eq. (6)).
``"dls"``   Damped least squares, ``M = (J^T J + alpha E)^-1 J^T``, eq. (8).
``"fd"``    Virtual forward dynamics, ``M = H_v(q)^-1 J^T Lambda_e``, eqs. (10)-(14): ``H_v`` is
            the joint-space inertia (composite rigid body algorithm) of a *virtual* robot with
            the real kinematics, an end-effector of mass ``m_e`` and rotational inertia
            ``ip_e E`` at the tool-frame origin, and every link ``1..n`` a point-like body of
            mass ``m_e / gamma`` and inertia ``(ip_e / gamma) E`` at its DH-frame origin
            (:func:`virtual_robot`); ``Lambda_e = diag(m_e E, ip_e E)`` turns the Cartesian
            acceleration command into the wrench ``f_c`` on the virtual end-effector. Gravity,
            Coriolis and centrifugal terms of the virtual model are dropped (eq. 10). As
            ``gamma`` grows, ``J M -> E``: the virtual robot behaves like the unit mass at the
            tool and the mapping approaches ``J^-1``, while ``H_v`` stays positive definite, so
            ``M`` stays bounded at singular configurations.

:func:`track` closes a Cartesian loop around any of them at the path's sample rate::

    a_c  = a_d - Jdot qd + K_d (v_d - J qd) + K_p e(x_d, x(q))
    qdd  = M(q) a_c                     (then joint limits, see below)
    q   += qd T + qdd T^2 / 2,   qd += qdd T

so ``q, qd, qdd`` of every sample are consistent with piecewise-constant accelerations. ``e`` is
the pose error of :func:`linkdyn.model.kinematics.pose_error` (position, rotation
vector), all Cartesian quantities are in world axes.

Joint limits (``respect_limits=True``): the acceleration vector is scaled down uniformly to
``qdd_max``; each joint's next velocity is clipped to ``+-qd_max`` and to the speed from which
it can still stop before its position limit with 90 % of the braking acceleration (``qdd_max``,
else ``braking``), then to the velocities ``qdd_max`` can reach in one step; ``qdd`` is
recomputed from the clipped velocity, so the acceleration limit always holds. A position that
would still cross a limit is clamped there (velocity zeroed) and counted in
``TrackingResult.clamped``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from linkdyn.model import Link, Robot

from linkdyn.model.kinematics import (jacobian, jacobian_dot_qd, joint_space_inertia, link_frames,
                         pose_error, tool_pose)
from .paths import CartesianPath

__all__ = [
    "METHODS", "virtual_robot", "mapping_matrix", "TrackingGains", "TrackingResult", "track",
    "solve_pose", "well_conditioned_configuration", "IKError",
]

#: The four mappings, by their command-line names.
METHODS = ("fd", "dls", "jinv", "jt")

#: Seed 001, eq. (14): end-effector mass (kg) and polar moment of inertia (kg·m^2).
END_EFFECTOR_MASS = 1.0
END_EFFECTOR_INERTIA = 1.0


class IKError(RuntimeError):
    """Inverse kinematics failed (no convergence to a pose)."""


def _check_robot(robot):
    if not isinstance(robot, Robot):
        raise TypeError(f"robot must be a Robot, not {type(robot).__name__}")


def _positive(value, what):
    value = float(value)
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{what} must be a positive number, not {value!r}")
    return value


def virtual_robot(robot, gamma, *, end_effector_mass=END_EFFECTOR_MASS,
                  end_effector_inertia=END_EFFECTOR_INERTIA):
    """Return the virtual model of seed 001, eqs. (13)-(14), with the kinematics of ``robot``.

    Parameters
    ----------
    robot : Robot
        The real robot: only its DH parameters, base, tool and joint limits are used.
    gamma : float
        Mass ratio ``gamma = m_e / m_l = ip_e / ip_l`` (eq. 13), ``> 0``.
    end_effector_mass : float
        ``m_e``, kg (eq. 14: 1 kg).
    end_effector_inertia : float
        ``ip_e``, kg·m^2 (eq. 14: 1).

    Returns
    -------
    Robot
        Link ``i`` (``1..n``) holds a body of mass ``m_e / gamma`` at the origin of DH frame
        ``i`` with rotational inertia ``(ip_e / gamma) E``; link ``n`` also holds the
        end-effector, mass ``m_e`` and inertia ``ip_e E`` about the tool-frame origin. No
        gravity, no friction.

    Raises
    ------
    ValueError
        If ``gamma`` or a mass or inertia is not positive.
    """
    _check_robot(robot)
    gamma = _positive(gamma, "gamma")
    m_e = _positive(end_effector_mass, "end_effector_mass")
    ip_e = _positive(end_effector_inertia, "end_effector_inertia")
    m_l, ip_l = m_e / gamma, ip_e / gamma
    eye = np.eye(3)
    links = []
    for i, link in enumerate(robot.links):
        mass, com, inertia = m_l, np.zeros(3), ip_l * eye
        if i == robot.n - 1:
            tool = robot.tool[:3, 3]
            mass = m_l + m_e
            com = m_e * tool / mass
            # Both bodies' inertia about the joint com: parallel-axis theorem.
            inertia = (ip_l + ip_e) * eye
            for m, c in ((m_l, np.zeros(3)), (m_e, tool)):
                r = c - com
                inertia = inertia + m * (float(r @ r) * eye - np.outer(r, r))
        links.append(Link(link.name, a=link.a, d=link.d, alpha=link.alpha, offset=link.offset,
                          mass=mass, com=com, inertia=inertia, limits=link.limits))
    return Robot(f"{robot.name}-virtual-gamma{gamma:g}", tuple(links), gravity=np.zeros(3),
                 base=robot.base, tool=robot.tool)


def _end_effector_weights(m_e, ip_e):
    return np.array([m_e, m_e, m_e, ip_e, ip_e, ip_e])


def mapping_matrix(robot, q, method, *, gamma=1000.0, alpha=0.01, jt_gain=1.0, virtual=None,
                   end_effector_mass=END_EFFECTOR_MASS, end_effector_inertia=END_EFFECTOR_INERTIA,
                   frames=None, jac=None):
    """Return the mapping matrix ``M(q)``, ``qdd = M a``, of seed 001 Fig. 5 (a).

    Parameters
    ----------
    robot : Robot
        The robot.
    q : array_like, shape (..., n)
        Joint angles, rad.
    method : {"fd", "dls", "jinv", "jt"}
        The mapping (see the module documentation).
    gamma : float
        ``"fd"``: mass ratio of the virtual model (ignored when ``virtual`` is given).
    alpha : float
        ``"dls"``: damping ``alpha`` of eq. (8), same units as ``J^T J`` (``>= 0``).
    jt_gain : float
        ``"jt"``: gain ``k`` of ``M = k J^T``.
    virtual : Robot, optional
        ``"fd"``: the virtual model (default :func:`virtual_robot` of ``robot``, ``gamma`` and
        the end-effector mass and inertia).
    end_effector_mass, end_effector_inertia : float
        ``"fd"``: ``m_e`` (kg) and ``ip_e`` (kg·m^2) of ``Lambda_e`` (and of the default
        virtual model).
    frames, jac : numpy.ndarray, optional
        :func:`~linkdyn.model.kinematics.link_frames` and the tool Jacobian of ``q``
        if already computed.

    Returns
    -------
    numpy.ndarray, shape (..., n, 6)
        Columns act on ``(a_x, a_y, a_z, omegadot_x, omegadot_y, omegadot_z)`` in world axes.
        For ``"jinv"`` at an exactly singular ``J`` the pseudo-inverse is used.

    Raises
    ------
    ValueError
        On an unknown method or a negative ``alpha``.
    """
    _check_robot(robot)
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, not {method!r}")
    if frames is None:
        frames = link_frames(robot, q)
    if jac is None:
        jac = jacobian(robot, q, frames=frames)
    jt = np.swapaxes(jac, -1, -2)
    n = robot.n
    if method == "jinv":
        if n == 6:
            try:
                return np.linalg.inv(jac)
            except np.linalg.LinAlgError:
                pass
        return np.linalg.pinv(jac)
    if method == "jt":
        return jt_gain * jt
    if method == "dls":
        alpha = float(alpha)
        if not alpha >= 0:
            raise ValueError(f"alpha must be >= 0, not {alpha!r}")
        return np.linalg.solve(jt @ jac + alpha * np.eye(n), jt)
    if virtual is None:
        virtual = virtual_robot(robot, gamma, end_effector_mass=end_effector_mass,
                                end_effector_inertia=end_effector_inertia)
    inertia = joint_space_inertia(virtual, q, frames=frames)
    weights = _end_effector_weights(end_effector_mass, end_effector_inertia)
    return np.linalg.solve(inertia, jt) * weights


@dataclass(frozen=True)
class TrackingGains:
    """Gains of the Cartesian loop of :func:`track` (same for position and orientation).

    Attributes
    ----------
    stiffness : float
        ``K_p``, 1/s^2 (default 400: natural frequency 20 rad/s).
    damping : float
        ``K_d``, 1/s (default 40: critically damped).
    """

    stiffness: float = 400.0
    damping: float = 40.0

    def __post_init__(self):
        for name in ("stiffness", "damping"):
            value = float(getattr(self, name))
            if not math.isfinite(value) or value < 0:
                raise ValueError(f"{name} must be a finite number >= 0, not {value!r}")
            object.__setattr__(self, name, value)


@dataclass
class TrackingResult:
    """Joint trajectory produced by :func:`track`, with the Cartesian tracking error.

    Attributes
    ----------
    method : str
        The mapping used.
    parameters : dict
        ``gamma``/``alpha``/gains and limit settings used.
    t : numpy.ndarray, shape (N,)
        Sample times, s.
    q, qd, qdd : numpy.ndarray, shape (N, n)
        Joint angles (rad), velocities (rad/s), accelerations (rad/s^2); ``qdd[k]`` acts over
        ``[t_k, t_k+1)``.
    reference : CartesianPath
        The path that was tracked (first ``N`` samples).
    position : numpy.ndarray, shape (N, 3)
        Reached tool positions, m.
    position_error : numpy.ndarray, shape (N,)
        ``|p_d - p|``, m.
    orientation_error : numpy.ndarray, shape (N,)
        Angle of ``R_d R^T``, rad.
    limited : numpy.ndarray, shape (N,)
        Number of joints whose velocity or acceleration the limits changed at each sample.
    clamped : int
        Samples at which a position had to be clamped at a joint limit.
    diverged : bool
        Whether the run stopped early because the state became non-finite (only possible with
        ``respect_limits=False``, e.g. ``"jinv"`` at a singularity); the arrays end there.
    """

    method: str
    parameters: dict
    t: np.ndarray
    q: np.ndarray
    qd: np.ndarray
    qdd: np.ndarray
    reference: CartesianPath
    position: np.ndarray
    position_error: np.ndarray
    orientation_error: np.ndarray
    limited: np.ndarray
    clamped: int = 0
    diverged: bool = False

    @property
    def max_position_error(self):
        """float: largest tool position error, m."""
        return float(np.max(self.position_error))

    @property
    def max_orientation_error(self):
        """float: largest tool orientation error, rad."""
        return float(np.max(self.orientation_error))


def solve_pose(robot, pose, q_guess, *, tolerance=1e-12, max_iterations=500):
    """Return joint angles that put the tool at ``pose`` (damped Newton, from ``q_guess``).

    Parameters
    ----------
    robot : Robot
        The robot.
    pose : array_like, shape (4, 4)
        Desired tool pose in the world frame.
    q_guess : array_like, shape (n,)
        Start of the iteration, rad; the solution is the one in its basin.
    tolerance : float
        Stop when the pose error norm (m and rad mixed) is below this.
    max_iterations : int
        Iteration limit.

    Returns
    -------
    numpy.ndarray, shape (n,)

    Raises
    ------
    IKError
        If the iteration does not converge (pose out of reach, or a bad guess).
    """
    _check_robot(robot)
    q = np.array(q_guess, dtype=float)
    pose = np.asarray(pose, dtype=float)
    damping = 1e-3
    error = pose_error(pose, tool_pose(robot, q))
    norm = float(np.linalg.norm(error))
    for _ in range(max_iterations):
        if norm < tolerance:
            return q
        jac = jacobian(robot, q)
        step = jac.T @ np.linalg.solve(jac @ jac.T + damping * np.eye(6), error)
        trial = q + step
        trial_error = pose_error(pose, tool_pose(robot, trial))
        trial_norm = float(np.linalg.norm(trial_error))
        if trial_norm < norm:
            q, error, norm = trial, trial_error, trial_norm
            damping = max(damping / 10, 1e-12)
        else:
            damping *= 10
            if damping > 1e6:
                break
    if norm < max(tolerance, 1e-9):
        return q
    raise IKError(f"inverse kinematics of robot {robot.name!r} did not converge: pose error "
                  f"{norm:.3g} after {max_iterations} iterations (pose out of reach?)")


def well_conditioned_configuration(robot, *, samples=4000, seed=0):
    """Return a configuration far from singularities, for a default start of a path.

    Random configurations in the central 70 % of every joint range (each range limited to
    ``[-pi, pi]``) with the tool no lower than the base origin are drawn with a fixed seed; the
    one with the largest smallest singular value of the tool Jacobian is returned.

    Parameters
    ----------
    robot : Robot
        The robot.
    samples : int
        Number of random configurations.
    seed : int
        Seed of :func:`numpy.random.default_rng`.

    Returns
    -------
    numpy.ndarray, shape (n,)
    """
    _check_robot(robot)
    rng = np.random.default_rng(seed)
    low, high = robot.q_limits(default=math.pi)
    low, high = np.maximum(low, -math.pi), np.minimum(high, math.pi)
    # Keep away from the joint limits: the central 70 % of every range.
    middle, half = (low + high) / 2, 0.35 * (high - low)
    q = rng.uniform(middle - half, middle + half, (samples, robot.n))
    frames = link_frames(robot, q)
    jac = jacobian(robot, q, frames=frames)
    height = (frames[:, -1] @ robot.tool)[:, 2, 3] - robot.base[2, 3]
    sigma_min = np.linalg.svd(jac, compute_uv=False)[:, -1]
    score = np.where(height >= 0, sigma_min, -np.inf)
    return q[int(np.argmax(score))]


def _limit_arrays(robot, qdd_max):
    low, high = robot.q_limits(default=np.inf)
    qd_max = np.array([np.inf if l.limits.qd_max is None else l.limits.qd_max
                       for l in robot.links])
    if qdd_max is None:
        qdd = np.array([np.inf if l.limits.qdd_max is None else l.limits.qdd_max
                        for l in robot.links])
    else:
        qdd = np.broadcast_to(np.asarray(qdd_max, dtype=float), (robot.n,)).copy()
    return low, high, qd_max, qdd


def _apply_limits(q, qd, qdd, dt, low, high, qd_max, qdd_max, braking):
    """Limit one step's acceleration; return ``(qdd, number of joints changed)``.

    Order: scale the acceleration vector uniformly to ``qdd_max``; clip each next velocity to
    ``+-qd_max`` and to the largest speed from which the joint can still stop before its
    position limit (discrete braking curve, ``b``: 90 % of the braking acceleration); clip it
    again to what ``qdd_max`` can reach in one step, so the acceleration limit always holds.
    """
    peak = np.max(np.abs(qdd) / qdd_max)
    changed = 0
    if peak > 1.0:
        qdd = qdd / peak
        changed = int(np.count_nonzero(np.abs(qdd) / qdd_max > 1 - 1e-12))
    nxt = qd + qdd * dt
    brake = 0.9 * braking
    # Largest next speed v with q + (qd + v) dt / 2 + v^2 / (2 brake) + v dt / 2 <= limit:
    # after this step's trapezoidal update, steps of deceleration `brake` stop before the limit
    # (the last term covers the last, partial braking step).
    margin = brake * dt
    room_high = np.maximum(high - q - 0.5 * qd * dt, 0.0)
    room_low = np.maximum(q - low + 0.5 * qd * dt, 0.0)
    hi = np.minimum(qd_max, np.sqrt(margin ** 2 + 2 * brake * room_high) - margin)
    lo = np.maximum(-qd_max, margin - np.sqrt(margin ** 2 + 2 * brake * room_low))
    clipped = np.clip(nxt, lo, np.maximum(hi, lo))
    clipped = np.clip(clipped, qd - qdd_max * dt, qd + qdd_max * dt)
    moved = clipped != nxt
    if np.any(moved):
        changed = max(changed, int(np.count_nonzero(moved)))
        qdd = (clipped - qd) / dt
    return qdd, changed


def track(robot, path, method="fd", *, gamma=1000.0, alpha=0.01, jt_gain=1.0, gains=None,
          q0=None, q_guess=None, respect_limits=True, qdd_max=None, braking=10.0,
          progress=False):
    """Track a Cartesian path with one of the four mappings; return the joint trajectory.

    Parameters
    ----------
    robot : Robot
        The robot; its tool frame follows the path.
    path : CartesianPath
        The path, sampled at the control rate (its sample period is the integration step).
    method : {"fd", "dls", "jinv", "jt"}
        The mapping (module documentation).
    gamma, alpha, jt_gain : float
        Parameters of the ``"fd"``, ``"dls"`` and ``"jt"`` mappings (:func:`mapping_matrix`).
    gains : TrackingGains, optional
        Cartesian loop gains; default ``TrackingGains()``.
    q0 : array_like, shape (n,), optional
        Start configuration. Default: :func:`solve_pose` of the first pose from ``q_guess``.
    q_guess : array_like, shape (n,), optional
        Start of that solve; default :func:`well_conditioned_configuration`.
    respect_limits : bool
        Apply the joint limits (module documentation). ``False`` shows the raw mapping.
    qdd_max : float or array_like, shape (n,), optional
        Joint acceleration limits, rad/s^2, overriding the robot's (which may be ``None``).
    braking : float
        Braking acceleration, rad/s^2, for the position limits of joints without ``qdd_max``.
    progress : bool
        Show a progress bar on stderr (:func:`linkdyn.host.progress.progress_bar`).

    Returns
    -------
    TrackingResult

    Raises
    ------
    TypeError
        If ``path`` is not a :class:`~linkdyn.host.trajectory.paths.CartesianPath`.
    ValueError
        On an unknown method or bad parameters.
    IKError
        If the start pose cannot be reached.
    """
    _check_robot(robot)
    if not isinstance(path, CartesianPath):
        raise TypeError(f"path must be a CartesianPath, not {type(path).__name__}")
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, not {method!r}")
    gains = TrackingGains() if gains is None else gains
    if not isinstance(gains, TrackingGains):
        raise TypeError(f"gains must be a TrackingGains, not {type(gains).__name__}")
    braking = _positive(braking, "braking")
    n = robot.n
    dt = 1.0 / path.rate
    reference = path.pose
    if q0 is None:
        guess = well_conditioned_configuration(robot) if q_guess is None else q_guess
        q0 = solve_pose(robot, reference[0], guess)
    q = np.array(q0, dtype=float)
    if q.shape != (n,):
        raise ValueError(f"q0 must have shape ({n},), not {q.shape}")
    qd = np.zeros(n)
    virtual = virtual_robot(robot, gamma) if method == "fd" else None
    if method == "fd":
        weights = _end_effector_weights(END_EFFECTOR_MASS, END_EFFECTOR_INERTIA)
    if method == "dls":
        alpha = float(alpha)
        if not alpha >= 0:
            raise ValueError(f"alpha must be >= 0, not {alpha!r}")
    low, high, qd_max, qdd_limit = _limit_arrays(robot, qdd_max)
    brake = np.where(np.isfinite(qdd_limit), qdd_limit, braking)

    count = len(path)
    out_q, out_qd, out_qdd = (np.zeros((count, n)) for _ in range(3))
    out_p = np.zeros((count, 3))
    out_ep, out_eo = np.zeros(count), np.zeros(count)
    out_limited = np.zeros(count, dtype=int)
    clamped = 0
    diverged = False
    kp, kd = gains.stiffness, gains.damping
    eye = np.eye(n)
    bar = None
    if progress:
        from ..progress import progress_bar
        bar = progress_bar(count, desc=f"tracking ({method})", unit="sample", mininterval=0.5)
    last = count
    # A diverging mapping (e.g. J^-1 at a singularity) overflows: detected below, not warned.
    with np.errstate(over="ignore", invalid="ignore"):
        for k in range(count):
            frames = link_frames(robot, q)
            tool = frames[-1] @ robot.tool
            jac = jacobian(robot, q, frames=frames)
            error = pose_error(reference[k], tool)
            command = (path.acceleration[k] - jacobian_dot_qd(robot, q, qd, frames=frames)
                       + kd * (path.velocity[k] - jac @ qd) + kp * error)
            if method == "fd":
                inertia = joint_space_inertia(virtual, q, frames=frames)
                qdd = np.linalg.solve(inertia, jac.T @ (weights * command))
            elif method == "dls":
                qdd = np.linalg.solve(jac.T @ jac + alpha * eye, jac.T @ command)
            elif method == "jt":
                qdd = jt_gain * (jac.T @ command)
            else:
                try:
                    qdd = (np.linalg.solve(jac, command) if n == 6
                           else np.linalg.pinv(jac) @ command)
                except np.linalg.LinAlgError:
                    qdd = np.linalg.pinv(jac) @ command
            limited = 0
            if respect_limits:
                qdd, limited = _apply_limits(q, qd, qdd, dt, low, high, qd_max, qdd_limit, brake)
            if not (np.all(np.isfinite(qdd)) and np.all(np.isfinite(q))):
                diverged, last = True, k
                break
            out_q[k], out_qd[k], out_qdd[k] = q, qd, qdd
            out_p[k] = tool[:3, 3]
            out_ep[k] = math.sqrt(float(error[:3] @ error[:3]))
            out_eo[k] = math.sqrt(float(error[3:] @ error[3:]))
            out_limited[k] = limited
            q = q + qd * dt + 0.5 * dt * dt * qdd
            qd = qd + qdd * dt
            if respect_limits:
                # Rounding may cross a limit by ~1e-16 rad: clip silently. A real crossing (the
                # braking curve could not hold) also stops the joint and is counted.
                outside = (q < low - 1e-12) | (q > high + 1e-12)
                q = np.clip(q, low, high)
                if np.any(outside):
                    clamped += 1
                    qd = np.where(outside, 0.0, qd)
            if bar is not None:
                bar.update()
    if bar is not None:
        bar.close()
    s = slice(0, last)
    reference_path = CartesianPath(path.name, path.t[s], path.position[s], path.rotation[s],
                                   path.velocity[s], path.acceleration[s])
    parameters = {"method": method, "stiffness": kp, "damping": kd,
                  "respect_limits": bool(respect_limits)}
    if method == "fd":
        parameters.update(gamma=float(gamma), end_effector_mass=END_EFFECTOR_MASS,
                          end_effector_inertia=END_EFFECTOR_INERTIA)
    elif method == "dls":
        parameters["alpha"] = alpha
    elif method == "jt":
        parameters["jt_gain"] = float(jt_gain)
    return TrackingResult(method, parameters, path.t[s].copy(), out_q[s], out_qd[s],
                          out_qdd[s], reference_path, out_p[s], out_ep[s], out_eo[s],
                          out_limited[s], clamped, diverged)
