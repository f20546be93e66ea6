"""Time-optimal parameterisation of a joint path ``q(s)`` under velocity, acceleration and torque
limits (seed 002, chapter 1), solved twice: with toppra and with an independent linear program.

Along the path, ``qd = q' sd``, ``qdd = q' sdd + q'' sd^2`` and (seed 002 eqs. 1.13-1.14)::

    tau = a(s) sdd + b(s) sd^2 + c(s) + tau_F(q' sd)

with ``a = M q'``, ``b = M q'' + C(q, q') q'``, ``c`` the gravity torque, all taken from our
:func:`linkdyn.model.rnea` (``a = rnea(q, 0, q') - c``, ``b = rnea(q, q', q'') - c``, friction
off), and ``tau_F`` the friction of eq. (20) of the source paper (``F_c atan(k qd) + F_v qd +
F_o``). Friction is not linear in ``sd^2``: it is bounded from above and below by lines in
``sd^2`` (a tangent and a chord of a concave function, :func:`_torque_rows`), so the limits hold
for the true torque; the tangent point follows the solution until the duration settles (one
pass without friction).

With ``x = sd^2`` and ``u = sdd`` on a grid ``s_0 < ... < s_N`` every limit is linear in
``(u_i, x_i)`` and ``u_i = (x_{i+1} - x_i) / (2 (s_{i+1} - s_i))`` (constant ``sdd`` between
grid points). Two solvers:

* :func:`time_optimal` -- **toppra** (Pham and Pham, TOPP-RA, reachability analysis; the
  ``toppra`` package) with its joint velocity and acceleration constraints and a torque
  constraint built from the coefficients above; the "interpolation" discretisation (limits
  enforced at both ends of every segment).
* :func:`time_optimal_lp` -- an independent linear program on the ``x`` grid
  (:func:`scipy.optimize.linprog`, HiGHS): maximise ``sum x_i`` subject to the same limits
  (collocation by default). The time-optimal profile is the largest admissible ``x(s)`` at
  every ``s`` (seed 002 Sect. 1.3.3: it follows the upper limit of the admissible region), so
  maximising the sum finds it.

Both return a :class:`TimeLaw`; :func:`sample` turns one into ``q, qd, qdd`` at a fixed rate.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from linkdyn.model import Robot, rnea

from .joint_path import JointPath

__all__ = [
    "Limits", "TimingError", "TimeLaw", "PathDynamics", "path_dynamics", "time_optimal",
    "time_optimal_lp", "sample", "JointTrajectory",
]


class TimingError(RuntimeError):
    """No admissible time law was found (limits too tight, or a solver failed)."""


def _vector(value, n, what):
    if value is None:
        return np.full(n, np.inf)
    array = np.broadcast_to(np.asarray(value, dtype=float), (n,)).copy()
    array[np.isnan(array)] = np.inf
    if np.any(array <= 0):
        raise ValueError(f"{what} limits must be positive, not {array.tolist()!r}")
    return array


@dataclass(frozen=True)
class Limits:
    """Symmetric joint limits; ``inf`` means unlimited. SI units.

    Attributes
    ----------
    velocity : numpy.ndarray, shape (n,)
        ``|qd| <= velocity``, rad/s.
    acceleration : numpy.ndarray, shape (n,)
        ``|qdd| <= acceleration``, rad/s^2.
    torque : numpy.ndarray, shape (n,)
        ``|tau| <= torque`` (with friction), N·m.
    jerk : numpy.ndarray, shape (n,)
        ``|qddd| <= jerk``, rad/s^3 (only the jerk-limited method uses it).
    """

    velocity: np.ndarray
    acceleration: np.ndarray
    torque: np.ndarray
    jerk: np.ndarray

    def __post_init__(self):
        n = len(np.atleast_1d(self.velocity))
        for name in ("velocity", "acceleration", "torque", "jerk"):
            object.__setattr__(self, name, _vector(getattr(self, name), n, name))

    @property
    def n(self):
        """int: number of joints."""
        return len(self.velocity)

    @classmethod
    def from_robot(cls, robot, *, velocity=None, acceleration=None, torque=None, jerk=None):
        """Return the robot's joint limits, each overridable (a scalar applies to every joint).

        Parameters
        ----------
        robot : Robot
            Its links' ``limits.qd_max``, ``qdd_max``, ``tau_max`` are the defaults (``None``
            means unlimited); there is no jerk limit in a robot description.
        velocity, acceleration, torque, jerk : float or array_like, optional
            Overrides, rad/s, rad/s^2, N·m, rad/s^3.
        """
        if not isinstance(robot, Robot):
            raise TypeError(f"robot must be a Robot, not {type(robot).__name__}")

        def pick(override, attr):
            if override is not None:
                return override
            return [np.inf if getattr(l.limits, attr) is None else getattr(l.limits, attr)
                    for l in robot.links]

        return cls(_vector(pick(velocity, "qd_max"), robot.n, "velocity"),
                   _vector(pick(acceleration, "qdd_max"), robot.n, "acceleration"),
                   _vector(pick(torque, "tau_max"), robot.n, "torque"),
                   _vector(jerk, robot.n, "jerk"))

    def scaled(self, factor):
        """Return the limits multiplied by ``factor`` (a safety margin, ``0 < factor <= 1``)."""
        factor = float(factor)
        if not 0 < factor <= 1:
            raise ValueError(f"factor must be in (0, 1], not {factor!r}")
        return Limits(self.velocity * factor, self.acceleration * factor, self.torque * factor,
                      self.jerk * factor)

    def as_dict(self):
        """Return the limits as JSON-ready lists (``None`` for unlimited)."""
        def listed(a):
            return [None if not math.isfinite(v) else float(v) for v in a]
        return {"velocity_rad_s": listed(self.velocity),
                "acceleration_rad_s2": listed(self.acceleration),
                "torque_Nm": listed(self.torque), "jerk_rad_s3": listed(self.jerk)}


@dataclass(frozen=True)
class PathDynamics:
    """Coefficients of the limits along a path at grid points ``s`` (seed 002 eq. 1.14).

    Attributes
    ----------
    s : numpy.ndarray, shape (N,)
    q, dq, ddq, dddq : numpy.ndarray, shape (N, n)
        ``q`` and its first three derivatives in ``s``.
    a, b, c : numpy.ndarray, shape (N, n)
        ``tau = a sdd + b sd^2 + c + tau_F`` without friction ``tau_F``, N·m.
    coulomb, viscous, offset, steepness : numpy.ndarray, shape (n,)
        Friction parameters (eq. 20).
    """

    s: np.ndarray
    q: np.ndarray
    dq: np.ndarray
    ddq: np.ndarray
    dddq: np.ndarray
    a: np.ndarray
    b: np.ndarray
    c: np.ndarray
    coulomb: np.ndarray
    viscous: np.ndarray
    offset: np.ndarray
    steepness: np.ndarray

    def friction(self, sd, index=slice(None)):
        """Return the friction torque at path speed ``sd`` (shape (N,) or scalar), N·m."""
        qd = self.dq[index] * np.asarray(sd)[..., None]
        return self.coulomb * np.arctan(self.steepness * qd) + self.viscous * qd + self.offset


def path_dynamics(robot, path, s):
    """Return the :class:`PathDynamics` of ``path`` at ``s`` from our inverse dynamics.

    Parameters
    ----------
    robot : Robot
        The robot (``n = path.dof`` joints).
    path : JointPath
        The path.
    s : array_like, shape (N,)
        Path coordinates.

    Returns
    -------
    PathDynamics
    """
    if not isinstance(robot, Robot):
        raise TypeError(f"robot must be a Robot, not {type(robot).__name__}")
    if not isinstance(path, JointPath):
        raise TypeError(f"path must be a JointPath, not {type(path).__name__}")
    if path.dof != robot.n:
        raise ValueError(f"path has {path.dof} joints but robot {robot.name!r} has {robot.n}")
    s = np.asarray(s, dtype=float)
    q, dq, ddq, dddq = (path(s, k) for k in range(4))
    rigid = robot.without_friction()
    zero = np.zeros_like(q)
    c = rnea(rigid, q, zero, zero)
    a = rnea(rigid, q, zero, dq) - c
    b = rnea(rigid, q, dq, ddq) - c
    friction = [link.friction for link in robot.links]
    return PathDynamics(s, q, dq, ddq, dddq, a, b, c,
                        np.array([f.coulomb for f in friction]),
                        np.array([f.viscous for f in friction]),
                        np.array([f.offset for f in friction]),
                        np.array([f.steepness for f in friction]))


@dataclass(frozen=True)
class TimeLaw:
    """A path velocity profile on a grid, constant ``sdd`` between grid points.

    Attributes
    ----------
    s : numpy.ndarray, shape (N + 1,)
        Grid points.
    sd : numpy.ndarray, shape (N + 1,)
        Path speed at the grid points (``>= 0``), 1/s in units of ``s``.
    method : str
        Which solver produced it.
    iterations : int
        Friction fixed-point passes used.
    """

    s: np.ndarray
    sd: np.ndarray
    method: str
    iterations: int = 1

    @property
    def sdd(self):
        """numpy.ndarray, shape (N,): constant path acceleration of every segment."""
        return np.diff(self.sd ** 2) / (2 * np.diff(self.s))

    @property
    def segment_times(self):
        """numpy.ndarray, shape (N,): time spent on every segment, s."""
        return 2 * np.diff(self.s) / (self.sd[:-1] + self.sd[1:])

    @property
    def duration(self):
        """float: total time, s."""
        return float(np.sum(self.segment_times))

    def evaluate(self, t):
        """Return ``(s, sd, sdd)`` at times ``t`` (clipped to ``[0, duration]``)."""
        times = np.concatenate([[0.0], np.cumsum(self.segment_times)])
        t = np.clip(np.asarray(t, dtype=float), 0.0, times[-1])
        i = np.clip(np.searchsorted(times, t, side="right") - 1, 0, len(self.s) - 2)
        tau = t - times[i]
        sdd = self.sdd[i]
        s = np.minimum(self.s[i] + self.sd[i] * tau + 0.5 * sdd * tau ** 2, self.s[-1])
        sd = np.maximum(self.sd[i] + sdd * tau, 0.0)
        return s, sd, sdd


@dataclass(frozen=True)
class JointTrajectory:
    """A joint trajectory sampled at a fixed rate.

    Attributes
    ----------
    t : numpy.ndarray, shape (N,)
        Times, s.
    q, qd, qdd : numpy.ndarray, shape (N, n)
        rad, rad/s, rad/s^2.
    s : numpy.ndarray, shape (N,), optional
        Path coordinate of every sample.
    """

    t: np.ndarray
    q: np.ndarray
    qd: np.ndarray
    qdd: np.ndarray
    s: np.ndarray | None = None

    @property
    def duration(self):
        """float: time of the last sample, s."""
        return float(self.t[-1])


def sample(path, time_law, rate=1000.0):
    """Return ``q, qd, qdd`` of a path traversed with a time law, at ``rate`` Hz.

    Parameters
    ----------
    path : JointPath
        The geometric path.
    time_law : TimeLaw or object with ``duration`` and ``evaluate(t) -> (s, sd, sdd)``
        The time law (also the result of
        :func:`linkdyn.host.trajectory.jerk.jerk_limited`).
    rate : float
        Sample rate, Hz. The last sample is at the end of the path (the time law's duration
        rounded up to a whole sample, at rest).

    Returns
    -------
    JointTrajectory
    """
    rate = float(rate)
    if not rate > 0:
        raise ValueError(f"rate must be positive, not {rate!r}")
    count = int(math.ceil(time_law.duration * rate - 1e-9)) + 1
    t = np.arange(count) / rate
    s, sd, sdd = time_law.evaluate(t)[:3]
    dq, ddq = path(s, 1), path(s, 2)
    return JointTrajectory(t, path(s), dq * sd[:, None],
                           dq * sdd[:, None] + ddq * (sd ** 2)[:, None], s)


# ----------------------------------------------------------------------------------------------
# Shared set-up
# ----------------------------------------------------------------------------------------------

def _grid(path, gridpoints):
    if np.ndim(gridpoints) == 0:
        count = int(gridpoints)
        if count < 2:
            raise ValueError(f"gridpoints must be >= 2, not {count}")
        return np.linspace(path.s_start, path.s_end, count + 1)
    grid = np.asarray(gridpoints, dtype=float)
    if grid.ndim != 1 or len(grid) < 3 or np.any(np.diff(grid) <= 0):
        raise ValueError("gridpoints must be a count or a strictly increasing array")
    return grid


def _check(robot, path, limits):
    if not isinstance(robot, Robot):
        raise TypeError(f"robot must be a Robot, not {type(robot).__name__}")
    if not isinstance(path, JointPath):
        raise TypeError(f"path must be a JointPath, not {type(path).__name__}")
    if not isinstance(limits, Limits):
        raise TypeError(f"limits must be a Limits, not {type(limits).__name__}")
    if path.dof != robot.n or limits.n != robot.n:
        raise ValueError(f"robot {robot.name!r} has {robot.n} joints; path {path.dof}, "
                         f"limits {limits.n}")
    if not np.all(np.isfinite(limits.velocity)) and not np.any(
            np.isfinite(np.concatenate([limits.acceleration, limits.torque]))):
        raise ValueError("at least a velocity, acceleration or torque limit is needed for a "
                         "finite duration")


def _velocity_bound(dynamics, limits):
    """Largest admissible x = sd^2 at every grid point from the velocity limits."""
    with np.errstate(divide="ignore"):
        ratio = np.where(np.abs(dynamics.dq) > 1e-12,
                         (limits.velocity / np.abs(dynamics.dq)) ** 2, np.inf)
    return np.min(ratio, axis=1)


@dataclass(frozen=True)
class _TorqueRows:
    """Linear torque rows ``a u + b x + c`` bounding the true torque from above and below."""

    a: np.ndarray
    b_upper: np.ndarray
    c_upper: np.ndarray
    b_lower: np.ndarray
    c_lower: np.ndarray


def _torque_rows(dynamics, x_reference, x_max):
    """Bound the friction torque by lines in ``x = sd^2`` (exact for the rigid-body part).

    Along the path (``sd >= 0``) friction is ``sign(q') g(x) + F_o`` with
    ``g(x) = F_c atan(k |q'| sqrt(x)) + F_v |q'| sqrt(x)`` concave and increasing. A tangent of
    ``g`` (at ``x_reference``) lies above it, the chord from 0 to ``x_max`` (the velocity
    limit) below it on ``[0, x_max]``; so ``tau_upper(u, x) >= tau >= tau_lower(u, x)`` and
    limits imposed on these lines hold for the true torque. The tangent is exact at
    ``x_reference``; iterating it to the solution makes the bound tight where it matters.
    """
    magnitude = np.abs(dynamics.dq)
    sign = np.sign(dynamics.dq)
    k, coulomb, viscous = dynamics.steepness, dynamics.coulomb, dynamics.viscous

    def g(x):
        root = np.sqrt(x)[:, None]
        return coulomb * np.arctan(k * magnitude * root) + viscous * magnitude * root

    x_r = np.maximum(x_reference, 1e-10)
    root = np.sqrt(x_r)[:, None]
    slope_tangent = (coulomb * k * magnitude / (1 + (k * magnitude * root) ** 2)
                     + viscous * magnitude) / (2 * root)
    const_tangent = g(x_r) - slope_tangent * x_r[:, None]
    finite = np.isfinite(x_max) & (x_max > 0)
    x_m = np.where(finite, x_max, 1.0)
    slope_chord = np.where(finite[:, None], g(x_m) / x_m[:, None], 0.0)
    positive = sign > 0
    negative = sign < 0
    slope_up = np.where(positive, slope_tangent, np.where(negative, -slope_chord, 0.0))
    const_up = np.where(positive, const_tangent, 0.0)
    slope_lo = np.where(positive, slope_chord, np.where(negative, -slope_tangent, 0.0))
    const_lo = np.where(negative, -const_tangent, 0.0)
    c = dynamics.c + dynamics.offset
    return _TorqueRows(dynamics.a, dynamics.b + slope_up, c + const_up,
                       dynamics.b + slope_lo, c + const_lo)


def _has_friction(dynamics):
    return bool(np.any(dynamics.coulomb != 0) or np.any(dynamics.viscous != 0))


def _iterate_friction(solve, dynamics, limits, tolerance, max_iterations):
    """Solve with friction bounds, moving the tangent point to the last solution.

    ``solve(rows) -> sd``. Without friction one pass suffices. Every pass's solution satisfies
    the true limits at the grid points (the bounds are conservative); the passes stop when the
    duration changes by less than ``tolerance`` (relative).
    """
    x_max = _velocity_bound(dynamics, limits)
    if not _has_friction(dynamics):
        return solve(_torque_rows(dynamics, np.ones(len(dynamics.s)), x_max)), 1
    # Start the tangents at the solution without friction torque (a fast, optimistic guess).
    rigid = replace(dynamics, coulomb=np.zeros_like(dynamics.coulomb),
                    viscous=np.zeros_like(dynamics.viscous))
    sd = solve(_torque_rows(rigid, np.ones(len(dynamics.s)), x_max))
    previous = None
    for iteration in range(1, max_iterations + 1):
        sd = solve(_torque_rows(dynamics, sd ** 2, x_max))
        duration = _duration(dynamics.s, sd)
        if previous is not None and abs(duration - previous) <= tolerance * duration:
            return sd, iteration
        previous = duration
    return sd, max_iterations


def _duration(s, sd):
    with np.errstate(divide="ignore"):
        return float(np.sum(2 * np.diff(s) / (sd[:-1] + sd[1:])))


# ----------------------------------------------------------------------------------------------
# toppra
# ----------------------------------------------------------------------------------------------

def _toppra_path(path):
    from toppra.interpolator import AbstractGeometricPath

    class _Path(AbstractGeometricPath):
        def __call__(self, path_positions, order=0):
            return path(path_positions, order)

        @property
        def dof(self):
            return path.dof

        @property
        def path_interval(self):
            return np.array([path.s_start, path.s_end])

    return _Path()


def _toppra_torque(rows, limits, grid, scheme):
    from toppra.constraint import DiscretizationType, LinearConstraint
    from toppra.constraint.linear_constraint import canlinear_colloc_to_interpolate

    finite = np.isfinite(limits.torque)
    count = int(np.count_nonzero(finite))

    class _Torque(LinearConstraint):
        """tau_upper <= torque and tau_lower >= -torque at the grid points (precomputed)."""

        def __init__(self):
            super().__init__()
            self.identical = True
            self.set_discretization_type(scheme)
            self.dof = limits.n

        def compute_constraint_params(self, path, gridpoints, *args, **kwargs):
            if len(gridpoints) != len(grid) or not np.allclose(gridpoints, grid):
                raise ValueError("toppra asked for a grid other than the one prepared")
            a = np.concatenate([rows.a[:, finite], rows.a[:, finite]], axis=1)
            b = np.concatenate([rows.b_upper[:, finite], rows.b_lower[:, finite]], axis=1)
            c = np.concatenate([rows.c_upper[:, finite], rows.c_lower[:, finite]], axis=1)
            f_matrix = np.zeros((2 * count, 2 * count))
            f_matrix[:count, :count] = np.eye(count)
            f_matrix[count:, count:] = -np.eye(count)
            g = np.concatenate([limits.torque[finite], limits.torque[finite]])
            if scheme == DiscretizationType.Collocation:
                return a, b, c, f_matrix, g, None, None
            return canlinear_colloc_to_interpolate(a, b, c, f_matrix, g, None, None,
                                                   gridpoints, identical=True)

    return _Torque()


def time_optimal(robot, path, limits, *, gridpoints=1000, scheme="interpolation",
                 friction_tolerance=1e-6, max_friction_iterations=30):
    """Return the time-optimal time law of ``path`` under ``limits``, solved with toppra.

    The path starts and ends at rest. Jerk limits are ignored (see
    :func:`linkdyn.host.trajectory.jerk.jerk_limited`).

    Parameters
    ----------
    robot : Robot
        The robot (torques from :func:`linkdyn.model.rnea`, friction included).
    path : JointPath
        The geometric path.
    limits : Limits
        Velocity, acceleration and torque limits.
    gridpoints : int or array_like
        Number of grid segments (uniform in ``s``) or the grid itself.
    scheme : {"interpolation", "collocation"}
        toppra's discretisation: limits at both ends of every segment, or at its start only.
    friction_tolerance : float
        Relative change of the duration that ends the friction passes.
    max_friction_iterations : int
        Limit of friction passes.

    Returns
    -------
    TimeLaw

    Raises
    ------
    TimingError
        If toppra finds no admissible parameterisation.
    """
    import toppra
    import toppra.algorithm
    from toppra.constraint import DiscretizationType

    _check(robot, path, limits)
    if scheme not in ("interpolation", "collocation"):
        raise ValueError(f"scheme must be 'interpolation' or 'collocation', not {scheme!r}")
    kind = (DiscretizationType.Interpolation if scheme == "interpolation"
            else DiscretizationType.Collocation)
    grid = _grid(path, gridpoints)
    dynamics = path_dynamics(robot, path, grid)
    toppra_path = _toppra_path(path)
    big = 1e12   # toppra wants finite numbers; "unlimited" joints get a bound never reached
    base = []
    velocity = np.where(np.isfinite(limits.velocity), limits.velocity, big)
    base.append(toppra.constraint.JointVelocityConstraint(np.stack([-velocity, velocity], 1)))
    if np.any(np.isfinite(limits.acceleration)):
        acceleration = np.where(np.isfinite(limits.acceleration), limits.acceleration, big)
        base.append(toppra.constraint.JointAccelerationConstraint(
            np.stack([-acceleration, acceleration], 1), discretization_scheme=kind))

    def solve(rows):
        constraints = list(base)
        if np.any(np.isfinite(limits.torque)):
            constraints.append(_toppra_torque(rows, limits, grid, kind))
        instance = toppra.algorithm.TOPPRA(constraints, toppra_path, gridpoints=grid,
                                           solver_wrapper="seidel")
        result = instance.compute_parameterization(0.0, 0.0)
        sd = result[1]
        if sd is None or np.any(~np.isfinite(sd)):
            raise TimingError("toppra found no admissible parameterisation "
                              f"({instance.problem_data.return_code})")
        return np.maximum(sd, 0.0)

    sd, iterations = _iterate_friction(solve, dynamics, limits, friction_tolerance,
                                       max_friction_iterations)
    return TimeLaw(grid, sd, "toppra", iterations)


# ----------------------------------------------------------------------------------------------
# Independent linear program
# ----------------------------------------------------------------------------------------------

def time_optimal_lp(robot, path, limits, *, gridpoints=1000, scheme="collocation",
                    friction_tolerance=1e-6, max_friction_iterations=30):
    """Return the time-optimal time law from a linear program on the ``x = sd^2`` grid.

    Variables ``x_0..x_N``; ``u_i = (x_{i+1} - x_i) / (2 Delta_i)``; constraints
    ``x_0 = x_N = 0``, ``0 <= x_i <= (qd_max / |q'|)^2``, and the acceleration and torque limits
    on ``(u_i, x_i)`` for ``i < N`` (``"collocation"``), plus on ``(u_i, x_{i+1})`` at
    ``s_{i+1}`` (``"interpolation"``). Objective: maximise ``sum x_i``. Solved by
    :func:`scipy.optimize.linprog` (HiGHS). Written independently of toppra (only
    :func:`path_dynamics` and the friction bounds are shared) to cross-check it.

    Parameters
    ----------
    robot, path, limits, gridpoints, friction_tolerance, max_friction_iterations
        As :func:`time_optimal`.
    scheme : {"collocation", "interpolation"}
        Where the acceleration and torque limits are enforced.

    Returns
    -------
    TimeLaw

    Raises
    ------
    TimingError
        If the linear program is infeasible or fails.
    """
    from scipy import sparse
    from scipy.optimize import linprog

    _check(robot, path, limits)
    if scheme not in ("interpolation", "collocation"):
        raise ValueError(f"scheme must be 'interpolation' or 'collocation', not {scheme!r}")
    grid = _grid(path, gridpoints)
    dynamics = path_dynamics(robot, path, grid)
    count = len(grid)
    delta = np.diff(grid)
    upper = _velocity_bound(dynamics, limits)
    bounds = [(0.0, float(x) if np.isfinite(x) else None) for x in upper]
    bounds[0] = bounds[-1] = (0.0, 0.0)
    segments = np.arange(count - 1)

    def rows(coefficient_u, coefficient_x, constant, limit, at_next, sign):
        """Rows ``sign * (coefficient_u u_i + coefficient_x x_p + constant) <= limit``."""
        finite = np.isfinite(limit)
        if not np.any(finite):
            return None
        point = segments + 1 if at_next else segments
        cu = coefficient_u[point][:, finite] / (2 * delta[:, None])   # (N, m)
        cx = coefficient_x[point][:, finite]
        const = constant[point][:, finite]
        m = cu.shape[1]
        r = np.arange((count - 1) * m)
        seg = np.repeat(segments, m)
        # u_i = (x_{i+1} - x_i) / (2 delta): coefficient cu on x_{i+1}, -cu on x_i.
        data = sign * np.concatenate([cu.ravel(), -cu.ravel(), cx.ravel()])
        row = np.concatenate([r, r, r])
        col = np.concatenate([seg + 1, seg, np.repeat(point, m)])
        matrix = sparse.csr_matrix((data, (row, col)), shape=(len(r), count))
        return matrix, np.tile(limit[finite], count - 1) - sign * const.ravel()

    def solve(torque):
        blocks, rhs = [], []
        zero = np.zeros_like(dynamics.dq)
        for at_next in ([False] if scheme == "collocation" else [False, True]):
            for cu, cx, const, limit, sign in (
                    (dynamics.dq, dynamics.ddq, zero, limits.acceleration, 1.0),
                    (dynamics.dq, dynamics.ddq, zero, limits.acceleration, -1.0),
                    (torque.a, torque.b_upper, torque.c_upper, limits.torque, 1.0),
                    (torque.a, torque.b_lower, torque.c_lower, limits.torque, -1.0)):
                built = rows(cu, cx, const, limit, at_next, sign)
                if built is not None:
                    blocks.append(built[0])
                    rhs.append(built[1])
        objective = -np.ones(count)
        if blocks:
            result = linprog(objective, A_ub=sparse.vstack(blocks).tocsr(),
                             b_ub=np.concatenate(rhs), bounds=bounds, method="highs")
        else:
            result = linprog(objective, bounds=bounds, method="highs")
        if result.status != 0:
            raise TimingError(f"the time-optimal linear program failed: {result.message}")
        return np.sqrt(np.maximum(result.x, 0.0))

    sd, iterations = _iterate_friction(solve, dynamics, limits, friction_tolerance,
                                       max_friction_iterations)
    return TimeLaw(grid, sd, f"lp-{scheme}", iterations)
