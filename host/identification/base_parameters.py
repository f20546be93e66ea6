"""Base parameters: the identifiable linear combinations of the standard dynamic parameters.

Not every standard parameter (10 per link, eq. 11, plus 3 friction parameters per joint, eq. 20)
affects the joint torques, and some only act in fixed linear combinations (source paper Sect. 2.5,
4.1: 60 parameters reduced to 36 for a 6-DOF arm). The reduction is done numerically: the
regressor ``Y`` (eq. 8) is stacked over random states into ``Phi`` (eq. 21) and factorised by QR
with column pivoting, ``Phi P = Q R``. The first ``b = rank`` pivot columns are the *independent*
parameters ``pi_b``; the others, ``pi_d``, satisfy ``Phi_d = Phi_b K_d`` with
``K_d = R_11^{-1} R_12``. Hence

    tau = Y pi = Y_b beta,   beta = pi_b + K_d pi_d = E pi,

where ``Y_b = Y[..., independent]`` is the base regressor (``Phi_bar`` of eq. 24) and ``E`` the
``(b, p)`` projection matrix (Gautier 1990; Gautier & Khalil 1990). The pivots are either the
largest remaining columns (Businger-Golub) or, by default, taken in a prescribed preference order
that yields the classical regrouped parameters (:func:`base_parameters`); ``K_d`` is computed by
least squares on the unscaled columns (equal to ``R_11^{-1} R_12`` up to rounding).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg

from linkdyn.model import Robot, regressor

__all__ = ["BaseParameters", "base_parameters", "random_states", "PREFERENCE"]


@dataclass(frozen=True)
class BaseParameters:
    """The result of :func:`base_parameters`.

    Attributes
    ----------
    standard_names : tuple of str
        Names of the ``p`` standard parameters (:meth:`Robot.parameter_names`).
    independent : numpy.ndarray of int, shape (b,)
        Indices of ``pi_b`` in the standard vector, in pivot order.
    dependent : numpy.ndarray of int, shape (p - b,)
        Indices of ``pi_d`` (parameters that are regrouped or have no effect).
    regrouping : numpy.ndarray, shape (b, p - b)
        ``K_d``: ``beta = pi_b + K_d pi_d``; entries below the tolerance are exact zeros.
    projection : numpy.ndarray, shape (b, p)
        ``E`` with ``beta = E pi``.
    names : tuple of str
        One expression per base parameter, e.g. ``"I_zz_2 + 0.1 m_3 - 0.425 mc_x_3"``.
    rank_tolerance : float
        Relative tolerance on ``|R_ii| / |R_00|`` that decided the rank.
    """

    standard_names: tuple
    independent: np.ndarray
    dependent: np.ndarray
    regrouping: np.ndarray
    projection: np.ndarray
    names: tuple
    rank_tolerance: float

    @property
    def count(self):
        """int: number of base parameters ``b``."""
        return int(self.independent.shape[0])

    @property
    def unidentifiable(self):
        """tuple of str: standard parameters with no effect on any torque (zero in ``E``)."""
        unused = ~np.any(self.projection != 0, axis=0)
        return tuple(name for name, u in zip(self.standard_names, unused) if u)

    def base_regressor(self, y):
        """Return the base regressor ``Y_b = Y[..., independent]``, shape (..., b)."""
        return np.asarray(y)[..., self.independent]

    def from_standard(self, parameters):
        """Return ``beta = E pi`` for standard parameters ``pi``, shape (..., p) -> (..., b)."""
        return np.asarray(parameters, dtype=float) @ self.projection.T

    def to_standard(self, beta):
        """Return the standard vector with ``pi_b = beta`` and ``pi_d = 0`` (one solution of
        ``E pi = beta``; not physically consistent in general)."""
        beta = np.asarray(beta, dtype=float)
        pi = np.zeros(beta.shape[:-1] + (len(self.standard_names),))
        pi[..., self.independent] = beta
        return pi


def _expression(base_name, coefficients, names, digits=6):
    text = base_name
    for value, name in zip(coefficients, names):
        if value == 0:
            continue
        magnitude = f"{abs(value):.{digits}g}"
        term = name if magnitude == "1" else f"{magnitude} {name}"
        text += f" {'-' if value < 0 else '+'} {term}"
    return text


def random_states(robot, count, rng, *, qd_max=2.0, qdd_max=5.0):
    """Return ``count`` random states inside the joint position limits.

    Parameters
    ----------
    robot : Robot
    count : int
        Number of states.
    rng : numpy.random.Generator
    qd_max, qdd_max : float
        Default velocity (rad/s) and acceleration (rad/s^2) ranges for joints without limits.

    Returns
    -------
    q, qd, qdd : numpy.ndarray, shape (count, n)
        ``q`` uniform in ``robot.q_limits()`` (``±pi`` where unlimited), ``qd`` and ``qdd``
        uniform in ``±qd_max`` (the joint's own limit where given) and ``±qdd_max``.
    """
    low, high = robot.q_limits()
    vmax = np.array([l.limits.qd_max or qd_max for l in robot.links])
    amax = np.array([l.limits.qdd_max or qdd_max for l in robot.links])
    q = rng.uniform(low, high, (count, robot.n))
    qd = rng.uniform(-vmax, vmax, (count, robot.n))
    qdd = rng.uniform(-amax, amax, (count, robot.n))
    return q, qd, qdd


#: Preference order of a link's 10 parameters (indices into eq. 11) for ``method="preference"``:
#: second moments first, then first moments, then the mass, so that distal masses and first
#: moments are regrouped into proximal inertias and first moments, as in the classical symbolic
#: regrouping rules (Khalil & Dombre).
PREFERENCE = (4, 5, 6, 7, 8, 9, 1, 2, 3, 0)


def _preferred_columns(a, order, tolerance):
    """Return the columns of ``a`` (unit norm or zero) that are not in the span of the ones
    accepted before them, visiting them in ``order``: QR (modified Gram-Schmidt, twice) with a
    prescribed column order; a column is accepted when ``|R_jj| > tolerance``."""
    basis = np.zeros((a.shape[0], 0))
    accepted = []
    for j in order:
        v = a[:, j].copy()
        for _ in range(2):
            v -= basis @ (basis.T @ v)
        norm = np.linalg.norm(v)
        if norm > tolerance:
            basis = np.column_stack([basis, v / norm])
            accepted.append(j)
    return np.array(accepted, dtype=int)


def base_parameters(robot, *, samples=None, seed=0, tolerance=1e-9, zero_tolerance=1e-10,
                    method="preference"):
    """Find the base parameters of a robot numerically (QR with column pivoting).

    Parameters
    ----------
    robot : Robot
        Kinematics and friction steepness define the regressor; the inertial values are unused.
    samples : int, optional
        Number of random states stacked; default ``max(100, 4 p / n)`` with ``p = 13 n``.
    seed : int
        Seed of the random states (the result is structural; the seed only matters if the
        states were degenerate).
    tolerance : float
        Rank tolerance on the unit-norm columns: a pivot ``|R_jj|`` at or below
        ``tolerance * |R_00|`` is zero. Columns whose norm is below ``tolerance`` times the
        largest column norm are rounding noise (parameters with no effect) and set to zero first.
    zero_tolerance : float
        Entries of ``K_d`` below this are set to exactly zero (rounding noise of structural
        zeros).
    method : {"preference", "norm"}
        How the independent columns are chosen among the equivalent sets. ``"norm"``:
        Businger-Golub pivoting (largest remaining column first, ``scipy.linalg.qr``).
        ``"preference"`` (default): the pivot order is prescribed, links from the base to the tip
        and within a link :data:`PREFERENCE`, then friction, which gives the familiar regrouped
        names (``"mc_x_2 - 0.425 m_2 - 0.425 m_3 ..."``). Both give the same rank (tested).

    Returns
    -------
    BaseParameters

    Raises
    ------
    TypeError
        If ``robot`` is not a :class:`Robot`.
    ValueError
        If a tolerance is not in (0, 1), ``method`` is unknown or ``samples`` is too small for
        the parameter count.
    """
    if not isinstance(robot, Robot):
        raise TypeError(f"robot must be a Robot, not {type(robot).__name__}")
    for name, value in (("tolerance", tolerance), ("zero_tolerance", zero_tolerance)):
        if not 0 < value < 1:
            raise ValueError(f"{name} must be in (0, 1), not {value!r}")
    if method not in ("preference", "norm"):
        raise ValueError(f"method must be 'preference' or 'norm', not {method!r}")
    p = 13 * robot.n
    if samples is None:
        samples = max(100, 4 * p // robot.n)
    if samples * robot.n < p:
        raise ValueError(f"samples must give at least {p} rows ({-(-p // robot.n)} states), "
                         f"not {samples}")
    rng = np.random.default_rng(seed)
    q, qd, qdd = random_states(robot, samples, rng)
    phi = regressor(robot, q, qd, qdd).reshape(-1, p)
    # Columns that are rounding noise (parameters with no effect) are zeroed first; then column
    # scaling makes the pivoting and the rank decision independent of units.
    scale = np.linalg.norm(phi, axis=0)
    noise = scale <= tolerance * scale.max()
    phi[:, noise] = 0.0
    scale[noise] = 1.0
    unit = phi / scale
    if method == "norm":
        _, r, perm = scipy.linalg.qr(unit, mode="economic", pivoting=True)
        diagonal = np.abs(np.diag(r))
        rank = int(np.sum(diagonal > tolerance * diagonal[0]))
        chosen = perm[:rank]
    else:
        # |R_00| of Businger-Golub pivoting is the largest column norm: 1 for unit columns.
        order = [10 * i + k for i in range(robot.n) for k in PREFERENCE]
        order += list(range(10 * robot.n, p))
        chosen = _preferred_columns(unit, order, tolerance)
        rank = chosen.shape[0]
    independent = np.sort(chosen)
    dependent = np.setdiff1d(np.arange(p), independent)
    # Regroup on the unscaled columns: Phi_d = Phi_b K_d (exact up to rounding).
    k_d, *_ = np.linalg.lstsq(phi[:, independent], phi[:, dependent], rcond=None)
    k_d[np.abs(k_d) < zero_tolerance] = 0.0
    projection = np.zeros((rank, p))
    projection[np.arange(rank), independent] = 1.0
    projection[:, dependent] = k_d
    names = robot.parameter_names()
    dependent_names = [names[j] for j in dependent]
    expressions = tuple(_expression(names[j], k_d[row], dependent_names)
                        for row, j in enumerate(independent))
    for array in (independent, dependent, k_d, projection):
        array.setflags(write=False)
    return BaseParameters(tuple(names), independent, dependent, k_d, projection, expressions,
                          float(tolerance))
