"""Conditioning of the Cartesian-to-joint mappings: seed 001's experiments, Figs. 7-12.

Seed 001 (Scherzinger et al.) compares the mapping matrices of
:mod:`linkdyn.host.trajectory.ik` on the UR10's kinematics:

* Fig. 7 -- the median condition number ``kappa = sigma_max / sigma_min`` of the Cartesian
  mapping ``J M`` (Fig. 5 (b)) over random configurations ``q_i ~ U[-pi, pi]``, against
  ``gamma`` (virtual forward dynamics) and ``alpha`` (damped least squares):
  :func:`condition_sweep`;
* Figs. 8-10 -- ``sigma_min`` and ``sigma_max`` of the joint mappings ``M`` (Fig. 5 (a))
  along a joint motion that passes through singular configurations: :func:`singular_sweep`;
* Figs. 11-12 -- at singular configurations (found by minimising ``det J``, the seed used
  particle swarm optimisation), the mean of ``sigma_min(M) / sigma_min(J^-1)`` (relative
  manipulability) and of ``sigma_max(M) / sigma_max(J^T)`` (relative instability):
  :func:`singular_configurations`, :func:`relative_singular_values`.

The virtual model's inertia is linear in its masses, so ``H_v(gamma) = H_e + H_l / gamma``
with ``H_e`` the end-effector's and ``H_l`` the unit links' (:func:`virtual_inertia_parts`):
one composite-rigid-body pass serves every ``gamma``. Plots: :mod:`linkdyn.host.trajectory.plots`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
from scipy.optimize import least_squares

from linkdyn.model import Robot

from .ik import END_EFFECTOR_INERTIA, END_EFFECTOR_MASS, virtual_robot
from linkdyn.model.kinematics import jacobian, joint_space_inertia, link_frames

__all__ = [
    "random_configurations", "virtual_inertia_parts", "condition_sweep", "ConditionSweep",
    "singular_sweep", "SingularSweep", "singular_configurations", "relative_singular_values",
    "RelativeSingularValues", "UR10_SWEEP",
]

#: Joint motion of :func:`singular_sweep` for the UR10 (rad): a straight line in joint space
#: from the first to the second row. ``q_3`` crosses 0 and pi (elbow singularities), ``q_5``
#: crosses 0 and pi (wrist singularities); the first two crossings are close together, as in
#: seed 001's Figs. 8-10.
UR10_SWEEP = np.array([[-0.3, -1.4, -0.25, -1.2, -0.55, 0.2],
                       [0.6, -0.7, 3.55, -0.4, 3.45, 1.0]])


def _check_robot(robot):
    if not isinstance(robot, Robot):
        raise TypeError(f"robot must be a Robot, not {type(robot).__name__}")


def random_configurations(robot, count, *, seed=0):
    """Return ``count`` configurations with every ``q_i ~ U[-pi, pi]`` (seed 001, Fig. 6).

    Returns
    -------
    numpy.ndarray, shape (count, n)
    """
    _check_robot(robot)
    return np.random.default_rng(seed).uniform(-math.pi, math.pi, (int(count), robot.n))


def virtual_inertia_parts(robot, q, *, end_effector_mass=END_EFFECTOR_MASS,
                          end_effector_inertia=END_EFFECTOR_INERTIA):
    """Return ``(H_e, H_l)`` with ``H_v(gamma) = H_e + H_l / gamma`` for the virtual model.

    ``H_e`` is the joint-space inertia of the end-effector alone (mass ``m_e``, inertia
    ``ip_e E`` at the tool origin), ``H_l`` that of the links with ``m_l = m_e`` and
    ``ip_l = ip_e`` (:func:`~linkdyn.host.trajectory.ik.virtual_robot`).

    Parameters
    ----------
    robot : Robot
        The real robot (kinematics only).
    q : array_like, shape (..., n)
        Joint angles, rad.

    Returns
    -------
    tuple of numpy.ndarray, each shape (..., n, n)
    """
    _check_robot(robot)
    model = virtual_robot(robot, 1.0, end_effector_mass=end_effector_mass,
                          end_effector_inertia=end_effector_inertia)
    frames = link_frames(robot, q)
    total = joint_space_inertia(model, q, frames=frames)
    # The same model without the end-effector: link n back to a plain point body.
    last = model.links[-1]
    plain = replace(last, mass=model.links[0].mass, com=np.zeros(3),
                    inertia=model.links[0].inertia)
    links_only = replace(model, links=model.links[:-1] + (plain,))
    h_l = joint_space_inertia(links_only, q, frames=frames)
    return total - h_l, h_l


def _weights(m_e, ip_e):
    return np.array([m_e, m_e, m_e, ip_e, ip_e, ip_e])


def _singular_values(matrix):
    return np.linalg.svd(matrix, compute_uv=False)


@dataclass(frozen=True)
class ConditionSweep:
    """Median condition numbers of ``J M`` over random configurations (seed 001, Fig. 7).

    Attributes
    ----------
    gammas, alphas : numpy.ndarray
        Parameter values.
    fd : numpy.ndarray, shape (len(gammas),)
        Median ``kappa(J H_v^-1 J^T Lambda_e)``.
    dls : numpy.ndarray, shape (len(alphas),)
        Median ``kappa(J (J^T J + alpha E)^-1 J^T)``.
    jt : float
        Median ``kappa(J J^T)``.
    fd_quartiles, dls_quartiles : numpy.ndarray, shape (len, 2)
        First and third quartiles.
    samples : int
        Number of configurations.
    """

    gammas: np.ndarray
    alphas: np.ndarray
    fd: np.ndarray
    dls: np.ndarray
    jt: float
    fd_quartiles: np.ndarray
    dls_quartiles: np.ndarray
    samples: int


def _kappa(matrix):
    s = _singular_values(matrix)
    with np.errstate(divide="ignore"):
        return s[..., 0] / s[..., -1]


def condition_sweep(robot, q, gammas, alphas):
    """Return the median condition numbers of the Cartesian mappings ``J M`` (Fig. 7).

    Parameters
    ----------
    robot : Robot
        The robot (6 joints for the seed's setting).
    q : array_like, shape (N, n)
        Configurations (e.g. :func:`random_configurations`).
    gammas : array_like
        Mass ratios for ``"fd"``.
    alphas : array_like
        Damping values for ``"dls"``.

    Returns
    -------
    ConditionSweep
    """
    _check_robot(robot)
    q = np.asarray(q, dtype=float)
    gammas = np.asarray(gammas, dtype=float)
    alphas = np.asarray(alphas, dtype=float)
    jac = jacobian(robot, q)
    jt = np.swapaxes(jac, -1, -2)
    h_e, h_l = virtual_inertia_parts(robot, q)
    weights = _weights(END_EFFECTOR_MASS, END_EFFECTOR_INERTIA)
    fd, fd_q, dls, dls_q = [], [], [], []
    for gamma in gammas:
        kappa = _kappa(jac @ np.linalg.solve(h_e + h_l / gamma, jt) * weights)
        fd.append(np.median(kappa))
        fd_q.append(np.percentile(kappa, [25, 75]))
    eye = np.eye(robot.n)
    for alpha in alphas:
        kappa = _kappa(jac @ np.linalg.solve(jt @ jac + alpha * eye, jt))
        dls.append(np.median(kappa))
        dls_q.append(np.percentile(kappa, [25, 75]))
    return ConditionSweep(gammas, alphas, np.array(fd), np.array(dls),
                          float(np.median(_kappa(jac @ jt))), np.array(fd_q), np.array(dls_q),
                          len(q))


@dataclass(frozen=True)
class SingularSweep:
    """Singular values of the joint mappings along a joint motion (seed 001, Figs. 8-10).

    Attributes
    ----------
    q : numpy.ndarray, shape (steps, n)
        The configurations.
    singular_steps : numpy.ndarray
        Indices of the local minima of ``sigma_min(J)`` below ``1e-2`` (the singular
        configurations passed).
    sigma_min, sigma_max : dict of str to numpy.ndarray, shape (steps,)
        Keys ``"J^-1"``, ``"J^T"``, ``"DLS alpha=..."``, ``"FD gamma=..."``.
    jacobian_sigma_min : numpy.ndarray, shape (steps,)
        ``sigma_min(J)``.
    """

    q: np.ndarray
    singular_steps: np.ndarray
    sigma_min: dict
    sigma_max: dict
    jacobian_sigma_min: np.ndarray


def singular_sweep(robot, q_start, q_end, *, steps=1000, gammas=(25, 250, 500, 1000),
                   alphas=(0.1,)):
    """Return ``sigma_min`` and ``sigma_max`` of every mapping ``M`` along a joint line.

    Parameters
    ----------
    robot : Robot
        The robot.
    q_start, q_end : array_like, shape (n,)
        Ends of the straight joint-space motion, rad (e.g. :data:`UR10_SWEEP`).
    steps : int
        Number of configurations.
    gammas, alphas : sequence of float
        Parameters of the ``"fd"`` and ``"dls"`` curves.

    Returns
    -------
    SingularSweep
        ``J^-1``'s singular values are ``1 / sigma(J)`` (infinite where ``J`` is singular).
    """
    _check_robot(robot)
    fraction = np.linspace(0.0, 1.0, int(steps))[:, None]
    q = np.asarray(q_start, dtype=float) + fraction * (np.asarray(q_end) - np.asarray(q_start))
    jac = jacobian(robot, q)
    jt = np.swapaxes(jac, -1, -2)
    s_j = _singular_values(jac)
    sigma_min, sigma_max = {}, {}
    with np.errstate(divide="ignore"):
        sigma_min["J^-1"] = 1.0 / s_j[:, 0]
        sigma_max["J^-1"] = 1.0 / s_j[:, -1]
    sigma_min["J^T"], sigma_max["J^T"] = s_j[:, -1], s_j[:, 0]
    eye = np.eye(robot.n)
    for alpha in alphas:
        s = _singular_values(np.linalg.solve(jt @ jac + alpha * eye, jt))
        sigma_min[f"DLS alpha={alpha:g}"], sigma_max[f"DLS alpha={alpha:g}"] = s[:, -1], s[:, 0]
    h_e, h_l = virtual_inertia_parts(robot, q)
    weights = _weights(END_EFFECTOR_MASS, END_EFFECTOR_INERTIA)
    for gamma in gammas:
        s = _singular_values(np.linalg.solve(h_e + h_l / gamma, jt) * weights)
        sigma_min[f"FD gamma={gamma:g}"], sigma_max[f"FD gamma={gamma:g}"] = s[:, -1], s[:, 0]
    smin = s_j[:, -1]
    interior = (smin[1:-1] <= smin[:-2]) & (smin[1:-1] <= smin[2:]) & (smin[1:-1] < 1e-2)
    return SingularSweep(q, np.flatnonzero(interior) + 1, sigma_min, sigma_max, smin)


def singular_configurations(robot, count, *, sigma_min=0.0, seed=0, tolerance=1e-9):
    """Return ``count`` singular (or nearly singular) configurations of a 6-joint robot.

    From random starts ``q ~ U[-pi, pi]^6`` (fixed seed), :func:`scipy.optimize.least_squares`
    solves ``det J(q) = 0`` (``sigma_min = 0``; seed 001 used particle swarm optimisation on
    ``|det J|``, Yoshikawa's measure) or ``sigma_min(J(q)) = sigma_min`` (``> 0``). Starts
    that do not converge are dropped and replaced.

    At an exactly singular ``J`` every mapping with ``J^T`` as its right factor (``"jt"``,
    ``"dls"``, ``"fd"``) has ``sigma_min(M) = 0``; nearly singular configurations
    (``sigma_min > 0``) are what make seed 001's relative manipulability (Fig. 11) non-trivial.

    Parameters
    ----------
    robot : Robot
        The robot, ``n = 6``.
    count : int
        Number of configurations wanted.
    sigma_min : float
        Target smallest singular value of ``J`` (m/rad and 1 rows mixed, as in the seed).
    seed : int
        Seed of the random starts.
    tolerance : float
        Accepted error of ``sigma_min(J)`` (absolute).

    Returns
    -------
    numpy.ndarray, shape (count, 6)

    Raises
    ------
    ValueError
        If the robot does not have 6 joints or ``sigma_min < 0``.
    RuntimeError
        If fewer than ``count`` configurations are found from ``20 count`` starts.
    """
    _check_robot(robot)
    if robot.n != 6:
        raise ValueError(f"singular_configurations needs a 6-joint robot, not {robot.n} joints")
    sigma_min = float(sigma_min)
    if not sigma_min >= 0:
        raise ValueError(f"sigma_min must be >= 0, not {sigma_min!r}")
    rng = np.random.default_rng(seed)

    if sigma_min == 0:
        def residual(q):
            return [np.linalg.det(jacobian(robot, q))]
    else:
        def residual(q):
            return [_singular_values(jacobian(robot, q))[-1] / sigma_min - 1.0]

    found = []
    for _ in range(20 * int(count)):
        start = rng.uniform(-math.pi, math.pi, 6)
        q = least_squares(residual, start, xtol=1e-15, ftol=1e-15, gtol=1e-15,
                          max_nfev=200).x
        if abs(_singular_values(jacobian(robot, q))[-1] - sigma_min) < tolerance:
            found.append(q)
            if len(found) == count:
                return np.array(found)
    raise RuntimeError(f"found only {len(found)} of {count} singular configurations")


@dataclass(frozen=True)
class RelativeSingularValues:
    """Means over singular configurations (seed 001, Figs. 11-12).

    Attributes
    ----------
    gammas, alphas : numpy.ndarray
        Parameter values.
    fd_manipulability, dls_manipulability : numpy.ndarray
        Mean ``sigma_min(M) / sigma_min(J^-1)``.
    fd_instability, dls_instability : numpy.ndarray
        Mean ``sigma_max(M) / sigma_max(J^T)``.
    samples : int
        Number of singular configurations.
    """

    gammas: np.ndarray
    alphas: np.ndarray
    fd_manipulability: np.ndarray
    dls_manipulability: np.ndarray
    fd_instability: np.ndarray
    dls_instability: np.ndarray
    samples: int


def relative_singular_values(robot, q_singular, gammas, alphas):
    """Return seed 001's relative manipulability and instability at singular configurations.

    ``sigma_min(J^-1) = 1 / sigma_max(J)`` and ``sigma_max(J^T) = sigma_max(J)`` are finite at
    a singular configuration, so both ratios are defined there (but see
    :func:`singular_configurations` on ``sigma_min(M) = 0`` at exact singularities).

    Parameters
    ----------
    robot : Robot
        The robot.
    q_singular : array_like, shape (N, n)
        Singular configurations (:func:`singular_configurations`).
    gammas, alphas : array_like
        Parameters of ``"fd"`` and ``"dls"``.

    Returns
    -------
    RelativeSingularValues
    """
    _check_robot(robot)
    q = np.asarray(q_singular, dtype=float)
    gammas = np.asarray(gammas, dtype=float)
    alphas = np.asarray(alphas, dtype=float)
    jac = jacobian(robot, q)
    jt = np.swapaxes(jac, -1, -2)
    s_max_j = _singular_values(jac)[:, 0]
    reference_min = 1.0 / s_max_j            # sigma_min(J^-1)
    reference_max = s_max_j                  # sigma_max(J^T)
    h_e, h_l = virtual_inertia_parts(robot, q)
    weights = _weights(END_EFFECTOR_MASS, END_EFFECTOR_INERTIA)
    fd_m, fd_i, dls_m, dls_i = [], [], [], []
    for gamma in gammas:
        s = _singular_values(np.linalg.solve(h_e + h_l / gamma, jt) * weights)
        fd_m.append(np.mean(s[:, -1] / reference_min))
        fd_i.append(np.mean(s[:, 0] / reference_max))
    eye = np.eye(robot.n)
    for alpha in alphas:
        s = _singular_values(np.linalg.solve(jt @ jac + alpha * eye, jt))
        dls_m.append(np.mean(s[:, -1] / reference_min))
        dls_i.append(np.mean(s[:, 0] / reference_max))
    return RelativeSingularValues(gammas, alphas, np.array(fd_m), np.array(dls_m),
                                  np.array(fd_i), np.array(dls_i), len(q))
