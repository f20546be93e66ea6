"""Parameter estimation: least squares on the base regressor and a physically consistent SDP.

With the stacked base regressor ``Phi_bar`` (eq. 21, base columns) and the stacked measured
torques ``tau_msr`` (eq. 22), the source paper's eq. (25) is the least-squares problem

    beta_hat = argmin (tau_msr - Phi_bar beta)^T W (tau_msr - Phi_bar beta),

solved here as

* :func:`ordinary_least_squares`: ``W = 1``;
* :func:`weighted_least_squares`: ``W`` = one weight ``1 / sigma_j^2`` per joint, ``sigma_j`` the
  joint's residual standard deviation of the ordinary fit (Gautier & Poignet 2001);
* :func:`physically_consistent_least_squares`: the same weighted objective over the *standard*
  parameters ``pi`` (so that ``beta = E pi``), subject to every link's 4x4 pseudo-inertia
  ``J_i`` being positive semi-definite (Wensing, Kim & Slotine 2017: the density-realisability
  condition, which implies positive mass, positive definite inertia and the triangle
  inequalities), optionally Coulomb and viscous friction non-negative, with an optional small
  regularisation towards nominal parameters that only acts on the directions the torques leave
  undetermined. It is a semidefinite program solved with cvxpy (paper: "subject to the physical
  consistency constraints"); the data enter only through the triangular factor ``R``
  (``b x b``, ``R^T R = Phi_bar^T W Phi_bar``), so its size does not grow with the samples.

The friction steepness ``k`` of eq. (20) is fixed by the user or found by :func:`select_steepness`,
a 1-D search on the least-squares residual.

Shapes: ``N`` samples, ``n`` joints, ``b`` base parameters, ``p = 13 n`` standard parameters.
Torques in N·m.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
import scipy.linalg
import scipy.optimize

__all__ = [
    "Estimate", "ordinary_least_squares", "weighted_least_squares",
    "physically_consistent_least_squares", "pseudo_inertia", "pseudo_inertia_eigenvalues",
    "is_physically_consistent", "joint_noise", "noise_weights", "select_steepness",
    "SteepnessSearch",
]


@dataclass(frozen=True)
class Estimate:
    """One estimate.

    Attributes
    ----------
    method : str
        ``"ols"``, ``"wls"`` or ``"sdp"``.
    base : numpy.ndarray, shape (b,)
        Estimated base parameters ``beta``.
    parameters : numpy.ndarray, shape (p,) or None
        Estimated standard parameters (physically consistent estimate only).
    weights : numpy.ndarray, shape (n,)
        Per-joint weights used (the residual of joint ``j`` is multiplied by ``weights[j]``).
    residual_rms : numpy.ndarray, shape (n,)
        RMS torque residual per joint on the fitted data, N·m.
    base_std : numpy.ndarray, shape (b,) or None
        Standard deviations of ``beta`` from the residual variance (least squares only).
    seconds : float
        Wall time of the estimation.
    status : str
        Solver status (``"optimal"`` for least squares).
    """

    method: str
    base: np.ndarray
    parameters: np.ndarray | None
    weights: np.ndarray
    residual_rms: np.ndarray
    base_std: np.ndarray | None
    seconds: float
    status: str = "optimal"

    @property
    def relative_std(self):
        """numpy.ndarray, shape (b,): ``base_std / |base|`` (inf where the estimate is 0)."""
        if self.base_std is None:
            return None
        with np.errstate(divide="ignore"):
            return self.base_std / np.abs(self.base)


def _check_system(y, tau):
    y = np.asarray(y, dtype=float)
    tau = np.asarray(tau, dtype=float)
    if y.ndim != 3:
        raise ValueError(f"the regressor must have shape (N, n, columns), not {y.shape}")
    if tau.shape != y.shape[:2]:
        raise ValueError(f"tau must have shape {y.shape[:2]} to match the regressor, not "
                         f"{tau.shape}")
    if y.shape[0] * y.shape[1] < y.shape[2]:
        raise ValueError(f"{y.shape[0]} samples of {y.shape[1]} joints give fewer equations "
                         f"than the {y.shape[2]} parameters")
    return y, tau


def _weights(weights, n):
    if weights is None:
        return np.ones(n)
    weights = np.asarray(weights, dtype=float)
    if weights.shape != (n,) or not np.all(np.isfinite(weights)) or np.any(weights <= 0):
        raise ValueError(f"weights must be {n} positive numbers, not {weights!r}")
    return weights


def _normal_solve(a, rhs, refinements=2):
    """Solve ``min |a x - rhs|`` through the column-scaled normal equations.

    Returns ``(x, r)`` with ``r`` upper triangular and ``r^T r = a^T a`` (so ``r`` is the ``R`` of
    a QR factorisation of ``a``, up to row signs). The Gram matrix is one BLAS-3 product, far
    faster than a Householder QR of a tall matrix (and unaffected by BLAS thread contention);
    iterative refinement on the residual restores the accuracy of a QR solution as long as the
    scaled ``a`` has a condition number well below 1e8.

    Raises
    ------
    numpy.linalg.LinAlgError
        If ``a`` is (numerically) rank deficient.
    """
    scale = np.linalg.norm(a, axis=0)
    if np.any(scale == 0):
        raise np.linalg.LinAlgError(
            f"columns {np.flatnonzero(scale == 0).tolist()} of the regressor are zero: the data "
            f"do not excite every base parameter")
    scaled = a / scale
    gram = scaled.T @ scaled
    try:
        factor = scipy.linalg.cho_factor(gram, lower=False)
    except np.linalg.LinAlgError:
        raise np.linalg.LinAlgError("the regressor is rank deficient: the data do not excite "
                                    "every base parameter") from None
    if np.linalg.cond(gram) > 1e15:
        raise np.linalg.LinAlgError("the regressor is rank deficient: the data do not excite "
                                    "every base parameter")
    x = scipy.linalg.cho_solve(factor, scaled.T @ rhs)
    for _ in range(refinements):
        x = x + scipy.linalg.cho_solve(factor, scaled.T @ (rhs - scaled @ x))
    r = np.triu(factor[0]) * scale[None, :]
    return x / scale, r


def _least_squares(y, tau, weights, method):
    start = time.perf_counter()
    count, n, b = y.shape
    a = (y * weights[None, :, None]).reshape(-1, b)
    rhs = (tau * weights[None, :]).reshape(-1)
    beta, r = _normal_solve(a, rhs)
    residual = tau - y @ beta
    rms = np.sqrt(np.mean(residual ** 2, axis=0))
    # Covariance of beta: sigma^2 (A^T A)^-1 = sigma^2 R^-1 R^-T with A the weighted regressor.
    dof = max(a.shape[0] - b, 1)
    sigma2 = float(np.sum((rhs - a @ beta) ** 2)) / dof
    r_inv = scipy.linalg.solve_triangular(r, np.eye(b))
    std = np.sqrt(sigma2 * np.sum(r_inv ** 2, axis=1))
    return Estimate(method, beta, None, weights, rms, std, time.perf_counter() - start)


def ordinary_least_squares(y, tau):
    """Ordinary least squares on the base regressor (paper eq. 25 without constraints).

    Parameters
    ----------
    y : array_like, shape (N, n, b)
        Base regressor of every sample.
    tau : array_like, shape (N, n)
        Measured torques, N·m.

    Returns
    -------
    Estimate

    Raises
    ------
    ValueError
        If the shapes disagree or there are fewer equations than parameters.
    numpy.linalg.LinAlgError
        If the regressor is rank deficient (poor excitation).
    """
    y, tau = _check_system(y, tau)
    return _least_squares(y, tau, np.ones(y.shape[1]), "ols")


def joint_noise(residual, parameter_count):
    """Return the per-joint residual standard deviations ``sigma_j``, shape (n,), N·m.

    ``sigma_j^2 = |rho_j|^2 / (N - b / n)``: the residual ``rho_j`` of joint ``j`` over ``N``
    samples, the ``b`` parameters shared out over the ``n`` joints.
    """
    residual = np.asarray(residual, dtype=float)
    count, n = residual.shape
    dof = max(count - parameter_count / n, 1.0)
    sigma = np.sqrt(np.sum(residual ** 2, axis=0) / dof)
    return np.maximum(sigma, 1e-12 * max(float(sigma.max()), 1e-300))


def noise_weights(y, tau, floor=1e-3):
    """Return per-joint weights ``1 / sigma_j`` from the ordinary least-squares residuals.

    ``sigma_j`` (:func:`joint_noise`) is kept above ``floor`` times the joint's RMS torque, so
    that noise-free (simulated) data still give finite, well-scaled weights.
    """
    y, tau = _check_system(y, tau)
    beta, _ = _normal_solve(y.reshape(-1, y.shape[2]), tau.reshape(-1))
    sigma = joint_noise(tau - y @ beta, y.shape[2])
    rms = np.sqrt(np.mean(tau ** 2, axis=0))
    floor = floor * np.maximum(rms, float(rms.max()) * 1e-3 + 1e-300)
    return 1.0 / np.maximum(sigma, floor)


def weighted_least_squares(y, tau, weights=None):
    """Weighted least squares with one weight per joint.

    Parameters
    ----------
    y : array_like, shape (N, n, b)
    tau : array_like, shape (N, n)
    weights : array_like, shape (n,), optional
        Per-joint weights (residuals are multiplied by them). Default ``1 / sigma_j`` from the
        ordinary least-squares residuals (:func:`noise_weights`).

    Returns
    -------
    Estimate
    """
    y, tau = _check_system(y, tau)
    if weights is None:
        weights = noise_weights(y, tau)
    weights = _weights(weights, y.shape[1])
    return _least_squares(y, tau, weights, "wls")


def pseudo_inertia(parameters):
    """Return the 4x4 pseudo-inertia of a link from its 10 parameters (eq. 11).

    ``J = [[Sigma, h], [h^T, m]]`` with ``h = m c`` and ``Sigma = tr(I)/2 E - I`` the second
    moment of the mass about the frame origin (``I`` the inertia about the origin). ``J`` is
    positive semi-definite exactly when some non-negative mass density has these parameters.

    Parameters
    ----------
    parameters : array_like, shape (..., 10)

    Returns
    -------
    numpy.ndarray, shape (..., 4, 4)
    """
    pi = np.asarray(parameters, dtype=float)
    m, hx, hy, hz, ixx, ixy, ixz, iyy, iyz, izz = np.moveaxis(pi, -1, 0)
    half = (ixx + iyy + izz) / 2
    j = np.empty(pi.shape[:-1] + (4, 4))
    j[..., 0, 0], j[..., 1, 1], j[..., 2, 2] = half - ixx, half - iyy, half - izz
    j[..., 0, 1] = j[..., 1, 0] = -ixy
    j[..., 0, 2] = j[..., 2, 0] = -ixz
    j[..., 1, 2] = j[..., 2, 1] = -iyz
    j[..., 0, 3] = j[..., 3, 0] = hx
    j[..., 1, 3] = j[..., 3, 1] = hy
    j[..., 2, 3] = j[..., 3, 2] = hz
    j[..., 3, 3] = m
    return j


def pseudo_inertia_eigenvalues(parameters, n):
    """Return the smallest eigenvalue of every link's pseudo-inertia, shape (n,).

    ``parameters`` is a standard vector (``10 n`` or ``13 n`` values, links first).
    """
    pi = np.asarray(parameters, dtype=float)[:10 * n].reshape(n, 10)
    return np.linalg.eigvalsh(pseudo_inertia(pi))[:, 0]


def is_physically_consistent(parameters, n, tolerance=1e-8):
    """Return whether every link's pseudo-inertia has eigenvalues ``>= -tolerance``."""
    return bool(np.all(pseudo_inertia_eigenvalues(parameters, n) >= -tolerance))


def _pseudo_inertia_basis():
    """Constant symmetric matrices B_k with J = sum_k pi_k B_k, shape (10, 4, 4)."""
    return pseudo_inertia(np.eye(10))


def physically_consistent_least_squares(y, tau, projection, n, *, weights=None, nominal=None,
                                        regularisation=1e-4, margin=1e-6,
                                        friction_nonnegative=True, solver=None):
    """Physically consistent weighted least squares: a semidefinite program (cvxpy).

    Over the standard parameters ``pi`` (``p = 13 n``)::

        minimise    |W (Y_b E pi - tau)|^2                      (eq. 25, weighted)
        subject to  J_i(pi_i) - margin * E_4  is PSD           for every link i
                    F_c,i >= 0, F_v,i >= 0                      if friction_nonnegative

    ``E`` is the base projection (``beta = E pi``). Since
    ``|W (Y_b beta - tau)|^2 = |R (beta - beta_wls)|^2 + const`` (``R`` the triangular factor
    of the weighted base regressor, ``beta_wls`` the weighted least-squares estimate), the
    problem solved is::

        minimise  |R (E pi - beta_wls)| / |W tau|  +  regularisation * |P_N (pi - nominal)|^2

    with the same constraints. The first term has the same minimisers as eq. (25) and, being a
    norm rather than its square, is an exact penalty: the least-squares base parameters are
    kept whenever some consistent ``pi`` reproduces them. ``P_N`` projects onto the null space
    of ``E``: the regularisation only picks, among the parameter vectors with the same torques,
    the one nearest to ``nominal``.

    Parameters
    ----------
    y : array_like, shape (N, n, b)
        Base regressor (:meth:`BaseParameters.base_regressor`).
    tau : array_like, shape (N, n)
        Measured torques, N·m.
    projection : array_like, shape (b, 13 n)
        ``E`` (:attr:`BaseParameters.projection`).
    n : int
        Number of links.
    weights : array_like, shape (n,), optional
        Per-joint residual weights; default :func:`noise_weights` (``1 / sigma_j``).
    nominal : array_like, shape (13 n,), optional
        Parameters the regularisation pulls the undetermined directions towards (SI units);
        default zero.
    regularisation : float
        Weight of that pull, ``>= 0`` (per squared SI unit; the data term is a relative
        residual, of order 1e-2 for a good fit).
    margin : float
        Smallest eigenvalue demanded of every pseudo-inertia (kg·m^2, kg), ``>= 0``: keeps the
        result strictly realisable after solver rounding, so that it loads as a robot.
    friction_nonnegative : bool
        Demand non-negative Coulomb and viscous coefficients.
    solver : str, optional
        A cvxpy solver name; default CLARABEL, falling back to SCS.

    Returns
    -------
    Estimate
        ``parameters`` holds the standard vector, ``base = E parameters``.

    Raises
    ------
    ValueError
        If shapes or options are invalid.
    RuntimeError
        If the solver fails (the message carries its status).
    """
    import cvxpy as cp

    y, tau = _check_system(y, tau)
    p = 13 * n
    projection = np.asarray(projection, dtype=float)
    if y.shape[1] != n or projection.shape != (y.shape[2], p):
        raise ValueError(f"for {n} links the regressor must have shape (N, {n}, b) and the "
                         f"projection (b, {p}); got {y.shape} and {projection.shape}")
    if not (math.isfinite(regularisation) and regularisation >= 0):
        raise ValueError(f"regularisation must be >= 0, not {regularisation!r}")
    if not (math.isfinite(margin) and margin >= 0):
        raise ValueError(f"margin must be >= 0, not {margin!r}")
    if nominal is None:
        nominal = np.zeros(p)
    nominal = np.asarray(nominal, dtype=float)
    if nominal.shape != (p,):
        raise ValueError(f"nominal must have {p} values, not {nominal.shape}")
    start = time.perf_counter()
    if weights is None:
        weights = noise_weights(y, tau)
    weights = _weights(weights, n)
    # |W (Y_b beta - tau)|^2 = |R (beta - beta_wls)|^2 + |W rho_wls|^2, so the weighted least
    # squares over the consistent set minimise |R (E pi - beta_wls)|. Its norm (not its square),
    # relative to |W tau|, is the data term: an exact penalty, which keeps the least-squares base
    # parameters whenever they are consistent, and is well scaled for the solver.
    a = (y * weights[None, :, None]).reshape(-1, y.shape[2])
    rhs = (tau * weights[None, :]).reshape(-1)
    beta_wls, r = _normal_solve(a, rhs)
    scale = 1.0 / max(float(np.linalg.norm(rhs)), 1e-300)
    pi = cp.Variable(p)
    objective = cp.norm(scale * r @ (projection @ pi - beta_wls))
    if regularisation > 0:
        # Orthonormal basis of the null space of E: the undetermined directions.
        _, singular, vt = np.linalg.svd(projection)
        rank = int(np.sum(singular > 1e-10 * singular[0]))
        null = vt[rank:]
        if null.shape[0]:
            objective = objective + regularisation * cp.sum_squares(null @ (pi - nominal))
    basis = _pseudo_inertia_basis()
    constraints = []
    for i in range(n):
        x = cp.Variable((4, 4), PSD=True)
        j = sum(pi[10 * i + k] * basis[k] for k in range(10))
        constraints.append(x + margin * np.eye(4) == j)
    if friction_nonnegative:
        index = 10 * n + 3 * np.arange(n)
        constraints += [pi[index] >= 0, pi[index + 1] >= 0]
    problem = cp.Problem(cp.Minimize(objective), constraints)
    solvers = [solver] if solver else ["CLARABEL", "SCS"]
    status = "no solver available"
    for name in solvers:
        if name not in cp.installed_solvers():
            status = f"solver {name!r} is not installed"
            continue
        try:
            problem.solve(solver=name)
        except cp.error.SolverError as error:
            status = f"{name}: {error}"
            continue
        status = problem.status
        if status == cp.OPTIMAL:
            break
    if pi.value is None or status not in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE):
        raise RuntimeError(f"the physically consistent estimation failed: solver status "
                           f"{status!r}")
    parameters = np.asarray(pi.value, dtype=float)
    beta = projection @ parameters
    residual = tau - y @ beta
    rms = np.sqrt(np.mean(residual ** 2, axis=0))
    return Estimate("sdp", beta, parameters, weights, rms, None, time.perf_counter() - start,
                    str(status))


@dataclass(frozen=True)
class SteepnessSearch:
    """Result of :func:`select_steepness`.

    Attributes
    ----------
    steepness : float
        The chosen ``k``, s/rad.
    grid : numpy.ndarray
        The ``k`` values of the coarse grid, s/rad.
    cost : numpy.ndarray
        Mean squared (weighted) residual of the least-squares fit at each grid value.
    best_cost : float
        The cost at ``steepness``.
    """

    steepness: float
    grid: np.ndarray
    cost: np.ndarray
    best_cost: float


def select_steepness(y_fixed, qd, tau, *, bounds=(1.0, 1e4), weights=None, grid_points=17):
    """Choose the friction steepness ``k`` of eq. (20) by a 1-D search.

    For a given ``k`` the Coulomb columns ``atan(k qd_j)`` join the other base columns and the
    least-squares residual is evaluated; ``k`` minimises it, first on a log-spaced grid, then
    by a bounded scalar minimisation (Brent) on ``log10 k`` around the best grid value. The
    fixed columns are projected out once, so each evaluation costs ``O(N n)``.

    Parameters
    ----------
    y_fixed : array_like, shape (N, n, b - n)
        The base regressor without the ``n`` Coulomb columns.
    qd : array_like, shape (N, n)
        Joint velocities, rad/s.
    tau : array_like, shape (N, n)
        Measured torques, N·m.
    bounds : tuple of float
        Search interval of ``k``, s/rad.
    weights : array_like, shape (n,), optional
        Per-joint residual weights.
    grid_points : int
        Points of the coarse grid.

    Returns
    -------
    SteepnessSearch
    """
    y_fixed, tau = _check_system(y_fixed, tau)
    count, n, m = y_fixed.shape
    qd = np.asarray(qd, dtype=float)
    if qd.shape != (count, n):
        raise ValueError(f"qd must have shape {(count, n)}, not {qd.shape}")
    low, high = (float(v) for v in bounds)
    if not 0 < low < high:
        raise ValueError(f"bounds must be 0 < low < high, not {bounds!r}")
    weights = _weights(weights, n)
    # Normal equations of [A, F(k)] by blocks: A^T A, A^T rhs once; F has one non-zero per row
    # (joint j's Coulomb column only acts on joint j's rows), so A^T F, F^T F, F^T rhs are cheap.
    a = y_fixed * weights[None, :, None]  # (N, n, m)
    rhs = tau * weights[None, :]  # (N, n)
    scale = np.linalg.norm(a.reshape(-1, m), axis=0)
    scale[scale == 0] = 1.0
    a = a / scale
    gram_aa = np.einsum("kjm,kjl->ml", a, a)
    a_rhs = np.einsum("kjm,kj->m", a, rhs)
    total = float(np.sum(rhs ** 2))
    rows = rhs.size

    def cost(log_k):
        f = np.arctan(10.0 ** log_k * qd) * weights[None, :]  # (N, n): column j on joint j
        norms = np.sqrt(np.sum(f ** 2, axis=0))
        norms[norms == 0] = 1.0
        f = f / norms
        gram = np.zeros((m + n, m + n))
        gram[:m, :m] = gram_aa
        gram[:m, m:] = np.einsum("kjm,kj->mj", a, f)
        gram[m:, :m] = gram[:m, m:].T
        gram[m:, m:] = np.diag(np.sum(f ** 2, axis=0))
        right = np.concatenate([a_rhs, np.sum(f * rhs, axis=0)])
        x = scipy.linalg.solve(gram, right, assume_a="pos")
        return max(total - float(x @ right), 0.0) / rows

    grid = np.linspace(math.log10(low), math.log10(high), grid_points)
    costs = np.array([cost(v) for v in grid])
    best = int(np.argmin(costs))
    lo, hi = grid[max(best - 1, 0)], grid[min(best + 1, grid_points - 1)]
    result = scipy.optimize.minimize_scalar(cost, bounds=(lo, hi), method="bounded",
                                            options={"xatol": 1e-3})
    log_k, best_cost = (result.x, result.fun) if result.fun <= costs[best] else \
        (grid[best], costs[best])
    return SteepnessSearch(float(10.0 ** log_k), 10.0 ** grid, costs, float(best_cost))
